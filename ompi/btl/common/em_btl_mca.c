/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file em_btl_mca.c
 * The MCA parameters our BTL components share (btl_<name>_*), with their
 * defaults and help texts, in one place (as Open MPI's usnic keeps its in
 * btl_usnic_mca.c).  Each component registers its own link parameters.
 */
#include "em_btl.h"

#include "opal/mca/base/mca_base_var.h"

/* One read-only component parameter of level @p lvl (OPAL_INFO_LVL_n). */
static void reg(mca_base_component_t *c, const char *name, mca_base_var_type_t type, int lvl,
                void *storage, const char *help)
{
    (void)mca_base_component_var_register(c, name, help, type, NULL, 0, 0,
                                          (mca_base_var_info_lvl_t)(OPAL_INFO_LVL_1 + lvl - 1),
                                          MCA_BASE_VAR_SCOPE_READONLY, storage);
}

static void reg_int(mca_base_component_t *c, const char *name, int lvl, int *v, const char *help)
{
    reg(c, name, MCA_BASE_VAR_TYPE_INT, lvl, v, help);
}

static void reg_bool(mca_base_component_t *c, const char *name, int lvl, int *v, const char *help)
{
    reg(c, name, MCA_BASE_VAR_TYPE_BOOL, lvl, v, help);
}

static void reg_string(mca_base_component_t *c, const char *name, int lvl, char **v,
                       const char *help)
{
    reg(c, name, MCA_BASE_VAR_TYPE_STRING, lvl, v, help);
}

int em_btl_register_params(mca_base_component_t *c, em_btl_params_t *p)
{
    /* Defaults: docs/design.md "Defaults" (protocol) and "BTL defaults".
     * A component may set its own window first (rudp: 64, see "link_udp"). */
    if (p->window == 0 && p->window_kb <= 0)
        p->window = 32;
    p->recovery = "sr";
    p->cc = "loss"; /* not delay: docs/design.md "Congestion control", real links */
    p->rto_us = 1000;
    p->rto_min_us = 200;
    p->rto_max_us = 1000000;
    p->retries = 70;
    p->ack_delay_us = 20;
    p->same_node = 0;
    p->print_stats = 0;
    p->rx_mem_mb = 256;
    p->order_max_held = 16384;
    p->order_max_mb = 64;
    p->random_isn = 1;
    if (p->window_kb > 0)
        reg_int(c, "window_kb", 5, &p->window_kb,
                "With window 0: frames in flight per peer = this many KiB / the link's MTU, "
                "64 to 256 frames");
    reg_int(c, "window", 5, &p->window,
            "Packets in flight per peer before waiting for an ACK (1-256; 0 = sized by window_kb "
            "where the component has it; the congestion window, in bytes, decides how much of it "
            "is used)");
    reg_string(
        c, "recovery", 5, &p->recovery,
        "Loss recovery: 'sr' (selective repeat with SACK, default) or 'gbn' (Go-Back-N with NACK)");
    reg_string(
        c, "cc", 5, &p->cc,
        "Congestion control per peer: 'loss' (AIMD on loss, once per window of loss; default), "
        "'delay' (loss and round-trip delay, paced: the simulator's best, but a loaded host's "
        "scheduling delays read as queueing) or 'off' (fixed window)");
    reg_int(c, "rto_us", 5, &p->rto_us,
            "Retransmit timeout in microseconds before the first round-trip sample "
            "(doubled on each consecutive timeout)");
    reg_int(c, "rto_min_us", 5, &p->rto_min_us,
            "Smallest adaptive retransmit timeout in microseconds (the timeout follows the "
            "measured round-trip time: srtt + 4 rttvar)");
    reg_int(c, "rto_max_us", 5, &p->rto_max_us, "Largest retransmit timeout in microseconds");
    reg_int(c, "retries", 5, &p->retries,
            "Consecutive timeouts without progress before a peer is declared failed "
            "(the job then aborts instead of hanging)");
    reg_int(c, "ack_delay_us", 5, &p->ack_delay_us,
            "Longest delay of a standalone ACK when no reply carries it, in microseconds");
    reg_bool(
        c, "same_node", 5, &p->same_node,
        "Also carry traffic between ranks of the same node (normally vader's job; for testing)");
    reg_bool(c, "print_stats", 5, &p->print_stats,
             "Print protocol counters (retransmits, drops by reason, ...) at MPI_Finalize");
    reg_int(c, "rx_mem_mb", 5, &p->rx_mem_mb,
            "MiB of receive buffers (reassembly of multi-frame messages and out-of-order frames) "
            "over all peers of one link; a frame that needs more is dropped unacknowledged and "
            "sent again by its sender (counter drop_budget)");
    reg_int(c, "order_max_held", 5, &p->order_max_held,
            "Several links: messages from one peer kept while an earlier one is missing; a peer "
            "that needs more is failed (the job ends with a message)");
    reg_int(c, "order_max_mb", 5, &p->order_max_mb,
            "Several links: MiB of messages kept per peer while an earlier one is missing");
    reg_bool(c, "random_isn", 9, &p->random_isn,
             "Random initial sequence numbers (off: every flow starts at 0, as in protocol "
             "version 1; for debugging only)");
    return OPAL_SUCCESS;
}
