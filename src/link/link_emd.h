/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file link_emd.h
 * The burst interface over the node daemon `emd` (daemon mode of the dpdk
 * BTL): the process attaches to the daemon through its control socket and
 * gets a shared-memory region with an rx ring (frames the daemon received
 * for it) and a tx ring (frames it wants sent).  No DPDK in the process;
 * the daemon owns the port.  Layout and checks: src/emd_abi/,
 * docs/daemon.md.
 *
 * Address blob: 6 bytes node MAC + 2 bytes endpoint id (big-endian), the
 * same shape as link_dpdk's (MAC + queue); the daemon demultiplexes
 * received frames on the endpoint.  Endpoint 0 is never given out (it is a
 * direct-mode address): set_peer refuses it.  A process with a bulk
 * queue adds 4 bytes (format, slot, S, 0: emd_addr_encode).
 *
 * Bulk queue (the rank's own queue for rendezvous data, [dpdk-btl] in
 * docs/references.md; emd_abi/emd_abi.h): when the daemon offers a slot and
 * cfg->bulk_open opens it (link_bulkq: this process as the daemon's DPDK
 * secondary), bulk (put) frames and ACKs to a peer on another node whose
 * address has a slot of the same layout go on our bulk queue toward its
 * slot, chosen by the frame class (em_pkt_t::cls), never by reading the
 * frame; everything else goes through the daemon.  rx_burst polls the
 * daemon's ring and the bulk queues in turn.  This file stays DPDK-free:
 * the bulk-queue link is an em_link_t given by the opener.
 *
 * First contact (link.h tx_to, rx_from; wire v3's handshake,
 * docs/daemon.md "First contact"): tx_to writes a frame into a tx slot
 * addressed to the blob's (node, endpoint), always through the daemon,
 * never on the bulk queue (the bulk-queue link offers neither op), and
 * touches no peer entry.  rx_from compares the blob's (node, endpoint) with
 * the received frame's source as the daemon wrote it in the ring record:
 * for a frame from this node, the daemon's node id and the sending client's
 * endpoint (a tx slot names only where a frame goes, so a rank cannot claim
 * another's source); for one from the port, the shim's, written by the
 * other node's daemon.  That source is read once per record with the rest
 * of its header (emd_abi/emd_ring.h, bounded like every ring read) into
 * this link's own memory; a frame from the bulk queues matches no address.
 * The daemons carry handshake frames untouched (src/daemon/emd_core.h
 * "Handshakes"); once a handshake completes, the engine registers the
 * pair's flow with the keys it derived (set_flow, EMD_CTL_FLOW), as after
 * the modex on the numbered path.  So em_link_has_contact() is true here,
 * and the front ends name their endpoints on this link as on the others.
 *
 * Threading: one thread at a time, like every link.
 */
#ifndef EM_LINK_EMD_H
#define EM_LINK_EMD_H

#include <stddef.h>
#include <stdint.h>

#include "link/link.h"

/** What the daemon offers for the bulk queues (from the region's header). */
typedef struct em_emd_bulkq {
    const char *file_prefix, *port; /**< the daemon's EAL prefix and port name */
    uint16_t slots, slot, endpoint;
    uint8_t mac[6];
    uint32_t mtu;
    const volatile uint32_t *loss_ppm; /**< live: the daemon's receive-loss fraction (testing) */
} em_emd_bulkq_t;

enum em_emd_bulkq_mode { EM_EMD_BULKQ_AUTO = 0, EM_EMD_BULKQ_ON = 1, EM_EMD_BULKQ_OFF = 2 };

struct em_emd_stats;
typedef struct em_emd_cfg {
    const char *socket_path; /**< the daemon's control socket */
    double rx_loss;          /**< seeded drop probability on receive (testing) */
    uint64_t loss_seed;
    uint32_t
        heartbeat_timeout_ms; /**< daemon declared dead after this long without a heartbeat; 0 = 3000 */
    uint32_t attach_timeout_ms; /**< how long to wait for ATTACH_OK; 0 = 5000 */
    /** Called once, from rx_burst, when the daemon is found dead (socket
     *  closed, stopped, or heartbeat stale); may not return (abort the job).
     *  NULL: a line on stderr.  Afterwards the link sends and receives nothing. */
    void (*dead_cb)(void *ctx, const char *why);
    void *dead_ctx;
    /** enum emd_framing the job asked for (btl_dpdk_framing): the daemon
     *  must run the same (emd --framing), else the open fails naming both */
    int framing;
    /** bulk queues: AUTO (use them when the daemon offers a slot and
     *  bulk_open succeeds, else say why through note_cb), ON (fail the open
     *  with the reason when not possible), OFF (puts through the daemon) */
    int bulk_mode;
    /** the bulk-mode setting as the user names it, for errors
     *  ("FI_ETHERMPI_BULK_QUEUE"; NULL: "btl_dpdk_bulk_queue") */
    const char *bulk_setting;
    /** opens the bulk-queue link (NULL: never) */
    em_link_t *(*bulk_open)(void *ctx, const em_emd_bulkq_t *info, char *err, size_t errlen);
    void *ctx; /**< for bulk_open, note_cb and close_cb */
    /** AUTO without bulk queues: called once with the reason (NULL: silent) */
    void (*note_cb)(void *ctx, const char *msg);
    /** called by close with the final counters (NULL: none) */
    void (*close_cb)(void *ctx, const struct em_emd_stats *st);
} em_emd_cfg_t;

typedef struct em_emd_stats {
    uint64_t rx_frames, rx_dropped_loss, rx_bad, tx_frames, tx_bad, tx_ring_full, wakes_sent;
    /* the daemon's counters for this endpoint */
    uint64_t daemon_rx_ring_full, daemon_tx_bad, daemon_port_rx_loss, daemon_put_frames;
    /* put (rendezvous) frames and their bytes, by path */
    uint64_t put_tx_bulk, put_tx_bulk_bytes, put_tx_daemon, put_tx_daemon_bytes;
    uint64_t put_rx_bulk, put_rx_bulk_bytes, put_rx_daemon, put_rx_daemon_bytes;
    uint64_t bulk_tx_fallback; /**< put frames the bulk queue refused, sent via the daemon */
    uint64_t bulk_tx_dropped;  /**< ... and neither path had room for (retransmitted) */
    uint64_t ack_tx_bulk;      /**< standalone ACKs/NACKs sent on the bulk queue */
    uint64_t flows_sent;       /**< peers registered with the daemon for its eager ACKs */
    int bulk_queue;            /**< 1: this process has its bulk queues */
    uint16_t slot, slots;
} em_emd_stats_t;

/**
 * Attach to the daemon at cfg->socket_path.  On failure returns NULL with a
 * sentence a user can act on in @p err ("daemon not running", version
 * mismatch, ...).
 */
em_link_t *em_link_emd_open(const em_emd_cfg_t *cfg, char *err, size_t errlen);
/**
 * Tests and fuzzing: a link over a region that is already mapped (no
 * daemon, no socket; the caller keeps the region).  The region is checked
 * as em_link_emd_open checks the daemon's.
 */
em_link_t *em_link_emd_from_region(void *region, uint64_t size, uint64_t instance,
                                   uint16_t endpoint, const em_emd_cfg_t *cfg, char *err,
                                   size_t errlen);
void em_link_emd_stats(const em_link_t *l, em_emd_stats_t *out);
/** 1 while the daemon is alive (as far as this link has seen). */
int em_link_emd_alive(const em_link_t *l);

#endif
