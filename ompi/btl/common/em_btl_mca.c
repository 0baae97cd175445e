/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file em_btl_mca.c
 * The MCA parameters our BTL components share (btl_<name>_*), with their
 * defaults and help texts, in one place (as Open MPI's usnic keeps its in
 * btl_usnic_mca.c).  Each component registers its own link parameters.
 */
#include "em_btl.h"

#include "opal/mca/base/mca_base_var.h"

void em_btl_register_vars(mca_base_component_t *c, const em_btl_var_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        (void)mca_base_component_var_register(c, v[i].name, v[i].help, v[i].type, NULL, 0, 0,
                                              v[i].level, MCA_BASE_VAR_SCOPE_READONLY,
                                              v[i].storage);
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
    p->inplace_min = 16 * 1024; /* docs/design.md "Sends from the application's buffer" */
    p->linger_ms = 5000;        /* as FI_ETHERMPI_LINGER_MS (docs/ofi.md) */
    /* read-only, in ompi_info's order; window_kb only where the component
     * sizes its window in bytes */
    const em_btl_var_t window_kb = {
        "window_kb", MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_5, &p->window_kb,
        "With window 0: frames in flight per peer = this many KiB / the link's MTU, "
        "64 to 256 frames"
    };
    const em_btl_var_t vars[] = {
        { "window", MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_5, &p->window,
          "Packets in flight per peer before waiting for an ACK (1-256; 0 = sized by window_kb "
          "where the component has it; the congestion window, in bytes, decides how much of it "
          "is used)" },
        { "recovery", MCA_BASE_VAR_TYPE_STRING, OPAL_INFO_LVL_5, &p->recovery,
          "Loss recovery: 'sr' (selective repeat with SACK, default) or 'gbn' (Go-Back-N with "
          "NACK)" },
        { "cc", MCA_BASE_VAR_TYPE_STRING, OPAL_INFO_LVL_5, &p->cc,
          "Congestion control per peer: 'loss' (AIMD on loss, once per window of loss; default), "
          "'delay' (loss and round-trip delay, paced: the simulator's best, but a loaded host's "
          "scheduling delays read as queueing) or 'off' (fixed window)" },
        { "rto_us", MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_5, &p->rto_us,
          "Retransmit timeout in microseconds before the first round-trip sample "
          "(doubled on each consecutive timeout)" },
        { "rto_min_us", MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_5, &p->rto_min_us,
          "Smallest adaptive retransmit timeout in microseconds (the timeout follows the "
          "measured round-trip time: srtt + 4 rttvar)" },
        { "rto_max_us", MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_5, &p->rto_max_us,
          "Largest retransmit timeout in microseconds" },
        { "retries", MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_5, &p->retries,
          "Consecutive timeouts without progress before a peer is declared failed "
          "(the job then aborts instead of hanging)" },
        { "ack_delay_us", MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_5, &p->ack_delay_us,
          "Longest delay of a standalone ACK when no reply carries it, in microseconds" },
        { "same_node", MCA_BASE_VAR_TYPE_BOOL, OPAL_INFO_LVL_5, &p->same_node,
          "Also carry traffic between ranks of the same node (normally vader's job; for testing)" },
        { "print_stats", MCA_BASE_VAR_TYPE_BOOL, OPAL_INFO_LVL_5, &p->print_stats,
          "Print protocol counters (retransmits, drops by reason, ...) at MPI_Finalize" },
        { "rx_mem_mb", MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_5, &p->rx_mem_mb,
          "MiB of receive buffers (reassembly of multi-frame messages and out-of-order frames) "
          "over all peers of one link; a frame that needs more is dropped unacknowledged and "
          "sent again by its sender (counter drop_budget)" },
        { "order_max_held", MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_5, &p->order_max_held,
          "Several links: messages from one peer kept while an earlier one is missing; a peer "
          "that needs more is failed (the job ends with a message)" },
        { "order_max_mb", MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_5, &p->order_max_mb,
          "Several links: MiB of messages kept per peer while an earlier one is missing" },
        { "inplace_min", MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_5, &p->inplace_min,
          "Contiguous messages of at least this many bytes are sent from the application's "
          "buffer, without a copy; such a send completes when the peer has acknowledged it. "
          "0 = copy every message" },
        { "linger_ms", MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_5, &p->linger_ms,
          "At MPI_Finalize, wait at most this many ms for what this process sent to be "
          "acknowledged (a lost last frame is resent meanwhile; peers' late resends are "
          "answered), and name the peers that did not acknowledge.  0 = one pass: what is "
          "queued leaves, nothing is waited for (unacknowledged messages may be lost)" },
        { "random_isn", MCA_BASE_VAR_TYPE_BOOL, OPAL_INFO_LVL_9, &p->random_isn,
          "Random initial sequence numbers (off: every flow starts at 0, as in protocol "
          "version 1; for debugging only)" },
    };
    if (p->window_kb > 0)
        em_btl_register_vars(c, &window_kb, 1);
    em_btl_register_vars(c, vars, sizeof vars / sizeof vars[0]);
    return OPAL_SUCCESS;
}
