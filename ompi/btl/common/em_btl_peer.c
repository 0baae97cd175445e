/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file em_btl_peer.c
 * Engine callbacks of the BTL module (delivery to the PML, completions,
 * peer failure), modex entries and pair keys, and the order of messages
 * over several links (see em_btl.h, em_btl_internal.h).
 */
#include "em_btl_internal.h"
#include "util/pair_mix.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opal/mca/pmix/pmix.h"
#include "opal/util/proc.h"
#include "opal/util/show_help.h"

/* ------------------------------------------------------- engine callbacks */

/* hand one message to the PML */
static void deliver(em_btl_module_t *m, uint8_t tag, const void *data, size_t len)
{
    /* the tag comes from the wire: Open MPI's table has MCA_BTL_TAG_MAX
     * (255) entries, so tag 255 would read past it and call what follows */
    if (tag >= MCA_BTL_TAG_MAX) {
        m->drop_tag++;
        return;
    }
    mca_btl_active_message_callback_t *reg = mca_btl_base_active_message_trigger + tag;
    mca_btl_base_segment_t seg = { .seg_addr.pval = (void *)data, .seg_len = len };
    mca_btl_base_descriptor_t des;
    memset(&des, 0, sizeof des);
    des.des_segments = &seg;
    des.des_segment_count = 1;
    if (reg->cbfunc)
        reg->cbfunc(&m->super, tag, &des, reg->cbdata);
}

/* ------------------------------------------- one order over several links */

static int deliver_in_order(void *ctx, void *origin, uint8_t tag, const uint8_t *data, size_t len)
{
    em_btl_module_t *m = origin; /* the module it arrived on */
    (void)ctx;
    deliver(m, tag, data, len);
    return m->finalizing; /* the PML is gone: hand nothing more up */
}

void em_btl_order_free(struct em_btl_order *o, uint32_t npeers)
{
    if (!o)
        return;
    for (uint32_t i = 0; i < npeers; i++)
        em_order_reset(&o[i].o);
    free(o);
}

/* A process's modex entry, checked; NULL when it has none we can use. */
struct em_btl_modex *em_btl_read_modex(em_btl_module_t *m, const opal_process_name_t *name)
{
    struct em_btl_modex *mx = NULL;
    size_t sz = 0;
    int rc;
    OPAL_MODEX_RECV(rc, &m->super.btl_component->btl_version, name, (void **)&mx, &sz);
    /* another build's entry (its version comes first in every version):
     * its frames are of another wire version, which ours drop; say so
     * rather than leave the peer silently unreachable (show_help
     * aggregates the same message from many peers) */
    if (OPAL_SUCCESS == rc && mx && sz >= sizeof mx->version && mx->version != EM_BTL_MODEX_VERSION)
        opal_show_help(HELP_FILE, "modex-version", true, m->name, opal_process_info.nodename,
                       OPAL_NAME_PRINT(*name), (unsigned)mx->version,
                       (unsigned)EM_BTL_MODEX_VERSION);
    if (OPAL_SUCCESS != rc || !mx || sz != sizeof *mx || mx->version != EM_BTL_MODEX_VERSION ||
        mx->count < 1 || mx->count > EM_BTL_MAX_LINKS) {
        free(mx);
        return NULL;
    }
    return mx;
}

/* The order state of @p peer when its messages carry order numbers, else
 * NULL.  Known from add_procs normally; but Open MPI adds remote processes
 * on first use (mpi_add_procs_cutoff 0), so a peer's first message can
 * come before add_procs ran for it: then its modex entry decides, as ob1
 * itself reads it in the same callback. */
em_order_t *em_btl_numbered(em_btl_module_t *m, uint32_t peer)
{
    if (!m->order || peer >= m->npeers)
        return NULL;
    struct em_btl_order *o = &m->order[peer];
    if (o->on == EM_BTL_ORDER_UNKNOWN) {
        opal_process_name_t name = { .jobid = OPAL_PROC_MY_NAME.jobid, .vpid = peer };
        struct em_btl_modex *mx = em_btl_read_modex(m, &name);
        if (!mx)
            return NULL; /* no address: nothing of ours can come from it */
        o->on = mx->count >= 2 ? EM_BTL_ORDER_ON : EM_BTL_ORDER_OFF;
        free(mx);
    }
    return o->on == EM_BTL_ORDER_ON ? &o->o : NULL;
}

static void fail_peer_loudly(em_btl_module_t *m, uint32_t peer, const char *why);

static void cb_recv(void *u, uint32_t peer, uint8_t tag, const void *data, size_t len)
{
    em_btl_module_t *m = u;
    if (m->finalizing) /* the PML may already be gone (and unloaded) */
        return;
    /* named links: the engine's number is ours, the order is per process;
     * every number that can deliver was named by add_procs or by its
     * handshake (cb_contact runs before its first frame), so none is
     * expected here, counted if it comes */
    uint32_t vpid = em_btl_vpid_of(m, peer);
    if (vpid == EM_BTL_NO_VPID) {
        m->drop_unnamed++;
        return;
    }
    em_order_t *o = em_btl_numbered(m, vpid);
    if (!o)
        deliver(m, tag, data, len);
    else if (em_order_rx(o, m, tag, data, len, deliver_in_order, NULL) == EM_ORDER_OVERFLOW) {
        /* acknowledged below us, so it cannot be dropped and fetched again:
         * a peer this far ahead of a missing message is broken or hostile */
        char why[256];
        snprintf(why, sizeof why,
                 "it sent %u messages (%zu bytes) ahead of one that never came, "
                 "more than btl_%s_order_max_held / btl_%s_order_max_mb allow",
                 o->nheld, o->bytes_held, m->name, m->name);
        m->order_overflow++;
        fail_peer_loudly(m, vpid, why);
    }
}

static void cb_complete(void *u, void *ctx, int status)
{
    em_btl_module_t *m = u;
    /* a refused put is a remote access error (IB: IBV_WC_REM_ACCESS_ERR):
     * ob1 sees a failed RDMA completion, tells the receiver (FIN with an
     * error) and sends that range by copy in/out instead */
    int rc = em_btl_opal_status(status);
    if (m->finalizing) /* ops drained or cancelled by finalize: no upcalls */
        return;
    if (*(int *)ctx == EM_BTL_OP_SEND) {
        em_btl_frag_t *f = container_of(ctx, em_btl_frag_t, kind);
        uint32_t flags = f->base.des_flags;
        if (f->base.des_cbfunc)
            f->base.des_cbfunc(&m->super, f->ep, &f->base, rc);
        if (flags & MCA_BTL_DES_FLAGS_BTL_OWNERSHIP)
            em_btl_frag_put(m, f);
    } else {
        em_btl_rdma_t *r = container_of(ctx, em_btl_rdma_t, kind);
        mca_btl_base_rdma_completion_fn_t fn = r->cbfunc;
        struct mca_btl_base_endpoint_t *ep = r->ep;
        void *la = r->local_address, *cx = r->cbcontext, *cd = r->cbdata;
        mca_btl_base_registration_handle_t *lh = r->local_handle;
        em_btl_rdma_put(m, r);
        fn(&m->super, ep, la, lh, cx, cd, rc);
    }
}

/* The Open MPI process of @p vpid: add_procs' endpoint, or, for a peer known
 * only by its frames (resolved from the modex or named by its handshake,
 * never added), looked up by name, so that its failure is reported all the
 * same (a receive-only rank must not hang silently).  NULL if Open MPI does
 * not know it. */
static opal_proc_t *peer_proc(em_btl_module_t *m, uint32_t vpid)
{
    struct mca_btl_base_endpoint_t *ep = vpid < m->npeers ? &m->eps[vpid] : NULL;
    if (!ep)
        return NULL;
    if (ep->proc)
        return ep->proc;
    opal_process_name_t name = { .jobid = OPAL_PROC_MY_NAME.jobid, .vpid = vpid };
    return opal_proc_for_name ? opal_proc_for_name(name) : NULL;
}

static void cb_peer_failed(void *u, uint32_t peer)
{
    em_btl_module_t *m = u;
    uint32_t vpid = em_btl_vpid_of(m, peer);
    struct mca_btl_base_endpoint_t *ep = vpid < m->npeers ? &m->eps[vpid] : NULL;
    opal_proc_t *proc = m->finalizing ? NULL : peer_proc(m, vpid);
    if (!ep || !proc)
        return;
    ep->failed = 1;
    /* Rendered here and written to stderr rather than opal_show_help(): the
     * latter is forwarded to mpirun through the PMIx log, and Open MPI 4.1.4's
     * mpirun crashed (orte_rml_oob_send_buffer_nb from pmix_server_log_fn)
     * when that log raced with the abort that follows. */
    if (em_engine_proto_stats(m->engine)->fail_refused_acked) {
        /* not a silence: a frame the emd daemon acknowledged could not be
         * taken (the help text below is about silent peers) */
        fprintf(stderr, "[%s] ethermpi %s: peer %s failed: %s\n", opal_process_info.nodename,
                m->name, OPAL_NAME_PRINT(proc->proc_name), em_engine_fail_reason(m->engine, peer));
        fflush(stderr);
    }
    char *msg = opal_show_help_string(HELP_FILE, "peer-failed", true, m->name,
                                      opal_process_info.nodename, OPAL_NAME_PRINT(proc->proc_name),
                                      m->params->s.retries);
    if (msg) {
        fputs(msg, stderr);
        fflush(stderr);
        free(msg);
    }
    if (m->error_cb)
        m->error_cb(&m->super, MCA_BTL_ERROR_FLAGS_FATAL, proc, "ethermpi: peer stopped answering");
}

/* Fail @p vpid for a protocol violation (not silence): say why, then let
 * Open MPI end the job as for a failed peer. */
static void fail_peer_loudly(em_btl_module_t *m, uint32_t vpid, const char *why)
{
    struct mca_btl_base_endpoint_t *ep = vpid < m->npeers ? &m->eps[vpid] : NULL;
    fprintf(stderr, "ethermpi btl_%s on %s: peer vpid %u is failed: %s\n", m->name,
            opal_process_info.nodename, (unsigned)vpid, why);
    fflush(stderr);
    opal_proc_t *proc = m->finalizing ? NULL : peer_proc(m, vpid);
    if (!ep || !proc)
        return;
    ep->failed = 1;
    if (m->error_cb)
        m->error_cb(&m->super, MCA_BTL_ERROR_FLAGS_FATAL, proc,
                    "ethermpi: peer broke the protocol");
}

/* The pair key of this process and a peer: both sides compute the same
 * value from the two published secrets (ordered by vpid); the mixer and
 * why it is non-linear: src/util/pair_mix.h. */
static uint64_t pair_key(uint64_t a, uint32_t va, uint64_t b, uint32_t vb)
{
    return em_pair_mix(a, va, b, vb, EM_PAIR_MIX_BTL);
}

/* The link address and the pair's keys of @p vpid from its modex entry
 * @p mx.  @return 0, or -1 when the entry does not fit this module. */
int em_btl_set_peer_from(em_btl_module_t *m, uint32_t vpid, const struct em_btl_modex *mx)
{
    if (m->index >= mx->count || mx->link[m->index].frame_max < m->link->mtu ||
        mx->link[m->index].addr.len > sizeof mx->link[m->index].addr.bytes)
        return -1;
    if (em_engine_set_peer(m->engine, vpid, &mx->link[m->index].addr) != 0)
        return -1;
    uint64_t key = pair_key(m->secret, OPAL_PROC_MY_NAME.vpid, mx->secret, vpid);
    if (em_engine_set_peer_keys(m->engine, vpid, key, m->isn, mx->isn) != 0)
        return -1;
    /* wire v3: every frame names the receiver's index for its sender; both
     * sides index peers by job rank, so the peer's index for us is our rank */
    return em_engine_set_peer_index(m->engine, vpid, OPAL_PROC_MY_NAME.vpid) == 0 ? 0 : -1;
}

/* Take @p peer's address and the pair's keys from its modex entry now, as
 * add_procs will: Open MPI 4.1 adds a remote peer on first send only
 * (mpi_add_procs_cutoff 0), so a peer may be unknown when its first frame
 * arrives, or when we owe it an ACK without ever having sent to it
 * (docs/design.md "Peers known only by their frames").  The endpoint itself
 * stays add_procs' business.  @return 0 when the peer is now set. */
static int resolve_from_modex(em_btl_module_t *m, uint32_t peer)
{
    /* named links: addresses come with the names, keys with the handshake */
    if (m->named || peer >= m->npeers || peer == OPAL_PROC_MY_NAME.vpid)
        return -1;
    if (m->eps[peer].resolved)
        return 0;
    opal_process_name_t name = { .jobid = OPAL_PROC_MY_NAME.jobid, .vpid = peer };
    struct em_btl_modex *mx = em_btl_read_modex(m, &name);
    if (mx && em_btl_set_peer_from(m, peer, mx) == 0)
        m->eps[peer].resolved = 1;
    free(mx);
    return m->eps[peer].resolved ? 0 : -1;
}

/* A frame claims to come from @p peer, which is not set yet: resolve it;
 * the engine then checks the frame's source against its address. */
static void cb_resolve(void *u, uint32_t peer) { (void)resolve_from_modex(u, peer); }

/* The engine has a frame (an ACK, typically) for @p peer, whose address was
 * never set: a rank that only receives from a peer still owes it ACKs. */
static int cb_resolve_peer(void *u, uint32_t peer) { return resolve_from_modex(u, peer); }

const em_engine_ops_t em_btl_engine_ops = {
    .recv = cb_recv,
    .complete = cb_complete,
    .peer_failed = cb_peer_failed,
    .resolve = cb_resolve,
    .resolve_peer = cb_resolve_peer,
    .contact = em_btl_cb_contact, /* named links (em_btl_name.c) */
    .admit = em_btl_cb_admit,
};
