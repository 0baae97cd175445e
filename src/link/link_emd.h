/**
 * @file link_emd.h
 * The burst interface over the node daemon `emd` (daemon mode of the dpdk
 * BTL): the process attaches to the daemon through its control socket and
 * gets a shared-memory region with an rx ring (frames the daemon received
 * for it) and a tx ring (frames it wants sent).  No DPDK in the process;
 * the daemon owns the port.  Layout and checks: daemon/emd_shm.h,
 * docs/daemon.md.
 *
 * Address blob: 6 bytes node MAC + 2 bytes endpoint id (big-endian), the
 * same shape as link_dpdk's (MAC + queue); the daemon demultiplexes
 * received frames on the endpoint.  Endpoint 0 is never given out (it is a
 * direct-mode address): set_peer refuses it.
 *
 * Threading: one thread at a time, like every link.
 */
#ifndef EM_LINK_EMD_H
#define EM_LINK_EMD_H

#include <stddef.h>
#include <stdint.h>

#include "link/link.h"

typedef struct em_emd_cfg {
    const char *socket_path;      /**< the daemon's control socket */
    double rx_loss;               /**< seeded drop probability on receive (testing) */
    uint64_t loss_seed;
    uint32_t heartbeat_timeout_ms; /**< daemon declared dead after this long without a heartbeat; 0 = 3000 */
    uint32_t attach_timeout_ms;   /**< how long to wait for ATTACH_OK; 0 = 5000 */
    /** Called once, from rx_burst, when the daemon is found dead (socket
     *  closed, stopped, or heartbeat stale); may not return (abort the job).
     *  NULL: a line on stderr.  Afterwards the link sends and receives nothing. */
    void (*dead_cb)(void *ctx, const char *why);
    void *dead_ctx;
} em_emd_cfg_t;

typedef struct em_emd_stats {
    uint64_t rx_frames, rx_dropped_loss, rx_bad, tx_frames, tx_bad, tx_ring_full, wakes_sent;
    /* the daemon's counters for this endpoint */
    uint64_t daemon_rx_ring_full, daemon_tx_bad, daemon_port_rx_loss;
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
em_link_t *em_link_emd_from_region(void *region, uint64_t size, uint64_t instance, uint16_t endpoint,
                                   const em_emd_cfg_t *cfg, char *err, size_t errlen);
void em_link_emd_stats(const em_link_t *l, em_emd_stats_t *out);
/** 1 while the daemon is alive (as far as this link has seen). */
int em_link_emd_alive(const em_link_t *l);

#endif
