/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file link_bulkq.h
 * The MPI process's bulk queue: its own queues on the node daemon's port,
 * for rendezvous (put) data ([dpdk-btl]'s rendezvous path,
 * docs/references.md: the process itself polls the queue its rendezvous data arrives on).  Once
 * called "own queue", "rdv" or "emq"; one name now.  The process becomes
 * a DPDK secondary of `emd` (the daemon must be a hugepage-backed primary,
 * i.e. not --in-memory) and, as slot `slot` of the daemon's bulk-queue
 * layout (emd_abi/emd_abi.h, emd_bulkq_queue), sends on the TX side of queues (S, slot, r) and receives on the RX side of queues
 * (S, s, slot).  Frames carry the emd wire shim; received frames whose
 * destination endpoint is not ours (the previous owner of the slot's) are
 * dropped and counted.
 *
 * Used only by link_emd (through em_emd_cfg_t::bulk_open), which sends the
 * put frames (and their ACKs) here, by frame class, and everything else
 * through the daemon.  Peer addresses
 * are link_emd's 12-byte ones (emd_addr_decode) with the same S.
 *
 * Memif only: secondaries cannot rx/tx on af_xdp.
 */
#ifndef EM_LINK_BULKQ_H
#define EM_LINK_BULKQ_H

#include <stddef.h>
#include <stdint.h>

#include "link/link.h"

typedef struct em_bulkq_cfg {
    const char *file_prefix; /**< the daemon's EAL --file-prefix */
    const char *port;        /**< the daemon's port name ("net_memif0") */
    uint16_t slots, slot;    /**< the layout S and our slot */
    uint16_t endpoint;       /**< our endpoint id (the shim's source) */
    uint8_t mac[6];          /**< the node's MAC (the port's) */
    uint32_t mtu;            /**< protocol frame bytes (the daemon's client MTU) */
    /** testing: live receive-loss fraction in ppm (the daemon's region); NULL = none */
    const volatile uint32_t *loss_ppm;
    uint64_t loss_seed;
} em_bulkq_cfg_t;

typedef struct em_bulkq_stats {
    uint64_t tx_frames, tx_bytes, tx_full;
    uint64_t rx_frames, rx_bytes, rx_stale, rx_bad, rx_dropped_loss;
} em_bulkq_stats_t;

/** Start EAL as the daemon's secondary and take the slot's queues.  NULL with a sentence. */
em_link_t *em_link_bulkq_open(const em_bulkq_cfg_t *cfg, char *err, size_t errlen);
void em_link_bulkq_stats(const em_link_t *l, em_bulkq_stats_t *out);

#endif
