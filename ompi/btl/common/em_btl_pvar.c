/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file em_btl_pvar.c
 * The BTLs' counters as MPI_T performance variables, as Open MPI's
 * btl/usnic exports its own: one read-only, continuous COUNTER per
 * counter, registered with the component (so Open MPI drops them when it
 * closes the component), its value read on demand by a callback that sums
 * the counter over the component's modules (one per link).  Names are
 * btl_<component>_<counter> (btl_rudp_frames_sent); docs/guide.md
 * "Counters" lists them.
 *
 * A module whose engine is gone (after btl_finalize) adds nothing: MPI_T
 * stays usable after MPI_Finalize, the counters then read 0.
 */
#include <stddef.h>
#include <string.h>

#include "em_btl_internal.h"

#include "opal/mca/base/mca_base_pvar.h"

enum em_pvar_src { SRC_PROTO, SRC_ENGINE, SRC_MODULE };

typedef struct em_pvar_def {
    const char *name;
    const char *help;
    unsigned char src; /* enum em_pvar_src: the struct that holds it */
    size_t off;        /* offset of its uint64_t there */
} em_pvar_def_t;

#define P(n, f, h)                                                                                 \
    {                                                                                              \
        n, h, SRC_PROTO, offsetof(em_proto_stats_t, f)                                             \
    }
#define E(n, f, h)                                                                                 \
    {                                                                                              \
        n, h, SRC_ENGINE, offsetof(em_engine_stats_t, f)                                           \
    }
#define M(n, f, h)                                                                                 \
    {                                                                                              \
        n, h, SRC_MODULE, offsetof(em_btl_module_t, f)                                             \
    }

static const em_pvar_def_t defs[] = {
    P("frames_sent", tx_frames,
      "Frames the protocol emitted, of any type (data, ACK, NACK, "
      "retransmissions)"),
    P("frames_received", rx_frames, "Frames accepted by the decoder and the protocol's checks"),
    P("data_frames_sent", tx_data_frames, "Data and put frames, first transmissions only"),
    P("bytes_sent", tx_payload_bytes, "Payload bytes of first transmissions"),
    P("bytes_received", rx_payload_bytes, "Payload bytes delivered in order"),
    P("messages_sent", msgs_sent, "Send operations completed (acknowledged by the peer)"),
    P("messages_received", msgs_recv, "Messages delivered to the PML"),
    P("acks_sent", tx_acks, "Standalone ACK frames sent"),
    P("nacks_sent", tx_nacks, "NACK frames sent"),
    P("retransmits", retransmits, "Frames sent again, for any cause"),
    P("timeouts", timeouts, "Retransmit timer expiries"),
    P("fast_retransmits", fast_retransmits,
      "Retransmissions triggered by SACK, NACK or a probe's answer"),
    P("spurious_retransmits", spurious_retx,
      "Retransmitted frames the receiver already had (the retransmission was not needed)"),
    P("duplicates_received", rx_dups, "Duplicate sequenced frames received"),
    P("out_of_order_received", rx_ooo, "Out-of-order frames kept (selective repeat)"),
    P("peer_failures", peer_failures, "Peers declared failed"),
    P("drops_short", drop_short, "Frames dropped: shorter than their headers"),
    P("drops_magic", drop_magic, "Frames dropped: foreign magic byte"),
    P("drops_version", drop_version, "Frames dropped: another protocol version"),
    P("drops_malformed", drop_malformed, "Frames dropped: inconsistent fields"),
    P("drops_job_key", drop_job_key, "Frames dropped: another job's (wrong pair key)"),
    P("drops_endpoint", drop_endpoint,
      "Frames dropped: source out of range or not addressed "
      "to this process"),
    P("drops_source", drop_source, "Frames dropped: source address is not the claimed peer's"),
    P("drops_window", drop_window, "Frames dropped: sequence or ACK outside the window"),
    P("drops_gbn_ooo", drop_gbn_ooo, "Frames dropped: out of order under Go-Back-N"),
    P("drops_peer_failed", drop_peer_failed, "Frames dropped: from a peer already declared failed"),
    P("drops_nomem", drop_nomem, "Frames dropped for lack of memory (retransmitted by the peer)"),
    P("drops_budget", drop_budget,
      "Frames dropped: over the message size or receive-memory "
      "budget"),
    P("puts_rejected", puts_rejected, "Put frames the receiver refused"),
    E("puts_placed", puts_placed, "Put frames written into a registered region"),
    E("puts_bad_region", put_bad_region, "Put frames refused: no such region"),
    E("puts_bad_key", put_bad_key, "Put frames refused: wrong region key"),
    E("puts_out_of_bounds", put_out_of_bounds, "Put frames refused: outside their region"),
    E("puts_no_access", put_no_access, "Put frames refused: region not writable by peers"),
    E("rma_gets_served", rma_gets_served, "Get requests answered with data (as the target)"),
    E("rma_atomics_applied", rma_atomics_applied, "Atomic requests applied (as the target)"),
    E("rma_refused", rma_refused,
      "Get and atomic requests refused: region, key, bounds, access, alignment or length"),
    E("rma_bad_msg", rma_bad_msg, "Messages on the engine's RMA tag the decoder refused"),
    E("rma_stale_rsp", rma_stale_rsp, "RMA answers naming no outstanding request of that peer"),
    E("rma_no_mem", rma_no_mem, "RMA requests answered without data or not at all: no memory"),
    E("tx_backpressure", tx_backpressure, "Times the link had no room for a frame (retried)"),
    E("drops_no_address", tx_no_addr, "Frames not sent: the peer has no link address"),
    M("drops_tag", drop_tag, "Messages dropped: tag outside Open MPI's table"),
};

static uint64_t module_value(const em_btl_module_t *m, const em_pvar_def_t *d)
{
    const void *base = NULL;
    if (d->src == SRC_MODULE)
        base = m;
    else if (!m->engine)
        return 0;
    else if (d->src == SRC_PROTO)
        base = em_engine_proto_stats(m->engine);
    else
        base = em_engine_stats(m->engine);
    uint64_t v;
    memcpy(&v, (const char *)base + d->off, sizeof v);
    return v;
}

/* the registration's ctx: the counter and whose modules */
typedef struct em_pvar_ctx {
    const em_pvar_def_t *def;
    const em_btl_module_t *head;
} em_pvar_ctx_t;

static int read_counter(const struct mca_base_pvar_t *pvar, void *value, void *obj)
{
    (void)obj;
    const em_pvar_ctx_t *c = pvar->ctx;
    unsigned long long sum = 0;
    if (c->head->engine) /* the first module has an engine once the component is in use */
        for (const em_btl_module_t *m = c->head; m; m = m->next)
            sum += module_value(m, c->def);
    *(unsigned long long *)value = sum;
    return OPAL_SUCCESS;
}

#define NDEFS (sizeof defs / sizeof defs[0])

int em_btl_register_pvars(mca_base_component_t *comp, em_btl_module_t *head)
{
    /* one context set per component (rudp, dpdk): each passes its module */
    static em_pvar_ctx_t ctx[2][NDEFS];
    static const em_btl_module_t *owner[2];
    unsigned slot = 0;
    while (slot < 2 && owner[slot] && owner[slot] != head)
        slot++;
    if (slot == 2)
        return OPAL_ERROR;
    owner[slot] = head;
    for (size_t i = 0; i < NDEFS; i++) {
        ctx[slot][i] = (em_pvar_ctx_t){ .def = &defs[i], .head = head };
        int rc = mca_base_component_pvar_register(
            comp, defs[i].name, defs[i].help, OPAL_INFO_LVL_4, MCA_BASE_PVAR_CLASS_COUNTER,
            MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, NULL, MCA_BASE_VAR_BIND_NO_OBJECT,
            MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS, read_counter, NULL, NULL,
            &ctx[slot][i]);
        if (rc < 0)
            return rc;
    }
    return OPAL_SUCCESS;
}
