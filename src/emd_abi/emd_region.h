/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file emd_region.h
 * The daemon contract's shared region (emd_abi.h): the memfd the daemon
 * makes for each client and sends with ATTACH_OK (emd_ctl_msg.h), mapped by
 * both.  Host order (one host).  docs/daemon.md has the pictures.
 *
 *      0      struct emd_shm_hdr    (EMD_SHM_HDR_SIZE bytes, incl. the
 *                                    bulk-queue block struct emd_bulkq_info at 448)
 *      rx_off rx_size bytes          daemon -> client: a byte ring of records
 *      tx_off tx_slots x slot_size   client -> daemon: fixed slots
 *   an rx record: struct emd_slot_hdr, the frame, padding to 64 bytes; a
 *   record never wraps: when one does not fit before the end of the ring,
 *   a header with len = EMD_REC_WRAP fills the rest and the record starts
 *   at offset 0.  (Records, not slots, so that small eager frames take
 *   little room even when the port carries jumbo frames.)
 *   a tx slot: struct emd_slot_hdr, then up to mtu bytes of frame.
 *
 * Both rings are single-producer single-consumer and are only ever touched
 * through emd_ring.h (no index arithmetic anywhere else).
 *
 * Trust: the region is writable by both processes.  The client validates
 * the constant header once (emd_shm_check); the daemon never reads the
 * geometry back (it keeps its own copy) and reads each client-written index
 * and slot header once per use, bounded (emd_ring.h).
 */
#ifndef EM_EMD_ABI_EMD_REGION_H
#define EM_EMD_ABI_EMD_REGION_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "emd_abi/emd_abi.h"

#define EMD_SHM_MAGIC 0x454D4453u /* "EMDS" */

/** One ring's indices, each on its own cache line. */
struct emd_ring_idx {
    _Atomic uint32_t head; /**< written by the consumer */
    uint8_t pad0[60];
    _Atomic uint32_t tail; /**< written by the producer */
    uint8_t pad1[60];
};
_Static_assert(sizeof(struct emd_ring_idx) == 128, "emd_ring_idx is two cache lines");

enum emd_state { EMD_STATE_RUNNING = 1, EMD_STATE_STOPPED = 2 };

enum emd_shm_flags {
    /** The daemon acknowledges sequenced frames once they are in the rx
     *  ring (so the client must never drop a frame it was handed). */
    EMD_SHM_F_DAEMON_ACKS = 0x1,
    /** The daemon runs udp framing (emd --framing udp, emd_wire.h "Node
     *  ids"): mac is the node's IPv4 + UDP port, and the client publishes
     *  a udp address (emd_addr_encode_udp).  A client whose job asked for
     *  the other framing refuses to attach, naming both. */
    EMD_SHM_F_UDP = 0x2,
};

/** Counters the daemon keeps per client (the client only reads them). */
struct emd_client_stats {
    _Atomic uint64_t rx_delivered; /**< frames put into the rx ring */
    _Atomic uint64_t rx_ring_full; /**< frames dropped: the rx ring was full (client not polling) */
    _Atomic uint64_t tx_sent;      /**< tx slots sent (or delivered on this node) */
    _Atomic uint64_t tx_bad;       /**< tx slots refused (bad length/endpoint) */
    _Atomic uint64_t port_rx_loss; /**< node total: frames dropped by the daemon's loss injection */
    _Atomic uint64_t acks_sent;    /**< ACKs the daemon sent on this client's behalf */
    _Atomic uint64_t rx_dups;      /**< already-acknowledged frames the daemon dropped */
    _Atomic uint64_t put_frames;   /**< bulk (put) frames the daemon carried for this
                                          client, both ways (0 when its bulk queue carries them) */
};

/** What the daemon tells a client about its bulk queue (constant). */
struct emd_bulkq_info {
    uint16_t slots;  /**< S; 0: no bulk queues on this daemon (see why) */
    uint16_t slot;   /**< the client's slot, or EMD_BULKQ_NO_SLOT (see why) */
    uint16_t queues; /**< queue pairs of the port: 1 + S*S (0 when S = 0) */
    uint16_t rsvd0;
    uint32_t rsvd1[2];
    char prefix[EMD_BULKQ_NAME_LEN]; /**< the daemon's EAL --file-prefix (NUL-terminated) */
    char port[EMD_BULKQ_NAME_LEN];   /**< the DPDK port's name, e.g. "net_memif0" */
    char why[EMD_BULKQ_WHY_LEN];     /**< no bulk queue: the reason, for the user */
    uint8_t pad[16];
};
_Static_assert(sizeof(struct emd_bulkq_info) == 256, "emd_bulkq_info is 256 bytes");

/** The region's header, written by the daemon before the memfd is sent. */
struct emd_shm_hdr {
    /* constant after ATTACH_OK (the client validates them once) */
    uint32_t magic;          /**< EMD_SHM_MAGIC */
    uint32_t version;        /**< EMD_VERSION */
    uint32_t hdr_size;       /**< sizeof(struct emd_shm_hdr) */
    uint32_t slot_size;      /**< bytes per slot (header + mtu, 64-aligned) */
    uint32_t rx_size;        /**< bytes of the rx ring, power of 2 */
    uint32_t tx_slots;       /**< power of 2 */
    uint32_t rx_off, tx_off; /**< byte offsets of the slot arrays */
    uint64_t total_size;     /**< bytes of the region */
    uint64_t instance;       /**< = ATTACH_OK's instance */
    uint32_t mtu;            /**< largest frame a client may send/receive */
    uint16_t endpoint;       /**< = ATTACH_OK's endpoint */
    uint8_t mac[6];          /**< the node's MAC (the port's) */
    uint32_t flags;          /**< enum emd_shm_flags */
    /* live, written by the daemon */
    _Atomic uint64_t heartbeat_ns;    /**< CLOCK_MONOTONIC of the daemon's last loop */
    _Atomic uint32_t state;           /**< enum emd_state */
    _Atomic uint32_t daemon_sleeping; /**< 1: the daemon sleeps; send WAKE after adding tx slots */
    /** testing: the daemon's receive-loss fraction in parts per million
     *  (emd --rx-loss, emcluster emd loss); the client applies it to the
     *  frames of its bulk queue, which the daemon never sees */
    _Atomic uint32_t rx_loss_ppm;
    uint32_t rsvd_live;
    /** written by the client: CLOCK_MONOTONIC of its last bulk-queue
     *  traffic; the daemon keeps spinning (does not sleep) for spin-us after
     *  it, so the eager frames that interleave a rendezvous (CTS, FIN, ...)
     *  do not wait for a sleeping daemon */
    _Atomic uint64_t bulk_active_ns;
    uint8_t pad1[32];
    struct emd_client_stats st;  /**< 64 bytes */
    struct emd_ring_idx rx;      /**< daemon produces, client consumes */
    struct emd_ring_idx tx;      /**< client produces, daemon consumes */
    struct emd_bulkq_info bulkq; /**< constant: the client's bulk queue (or why none) */
};
_Static_assert(offsetof(struct emd_shm_hdr, heartbeat_ns) == 64, "live part on its own line");
_Static_assert(offsetof(struct emd_shm_hdr, st) == 128, "stats at 128");
_Static_assert(offsetof(struct emd_shm_hdr, rx) == 192, "rx ring at 192");
_Static_assert(offsetof(struct emd_shm_hdr, bulkq) == 448, "bulk-queue block at 448");
_Static_assert(sizeof(struct emd_shm_hdr) == 704, "emd_shm_hdr is 704 bytes");

#define EMD_SHM_HDR_SIZE 704u
/** where the rx ring starts (the header rounded up, plus a spare line) */
#define EMD_SHM_RX_OFF 768u

/** Each tx slot and rx record starts with this. */
struct emd_slot_hdr {
    uint32_t len;      /**< frame bytes after this header (rx: EMD_REC_WRAP = filler) */
    uint16_t endpoint; /**< tx: destination; rx: source */
    uint8_t mac[6];    /**< tx: destination node; rx: source node */
    uint8_t flags;     /**< tx: enum emd_slot_flags; rx: 0 */
    uint8_t cls;       /**< the frame's class (enum emd_cls, emd_wire.h) */
    uint16_t rsvd;     /**< 0 */
};
_Static_assert(sizeof(struct emd_slot_hdr) == 16, "emd_slot_hdr is 16 bytes");
_Static_assert(offsetof(struct emd_slot_hdr, flags) == 12, "flags at 12");

enum emd_slot_flags {
    /** a copy of an ACK the client sent on its bulk queue: the daemon moves
     *  its eager-ACK state by it and sends nothing */
    EMD_SLOT_F_NOTE = 0x1,
};

/* limits the daemon offers and the client accepts */
#define EMD_MTU_MAX     9000u
#define EMD_SLOTS_MIN   16u
#define EMD_SLOTS_MAX   65536u
#define EMD_RX_SIZE_MIN (64u << 10)
#define EMD_RX_SIZE_MAX (512u << 20)
#define EMD_REGION_MAX  (1ull << 30)
/** rx record header len of the filler before the ring's end */
#define EMD_REC_WRAP 0xFFFFFFFFu
/** rx records start on this boundary */
#define EMD_REC_ALIGN 64u

/** Bytes a record of a @p len-byte frame takes in the rx ring. */
static inline uint32_t emd_rec_size(uint32_t len)
{
    return (uint32_t)((sizeof(struct emd_slot_hdr) + len + EMD_REC_ALIGN - 1) &
                      ~(EMD_REC_ALIGN - 1));
}

/** Bytes of a region with these ring sizes and slot size (0: impossible). */
uint64_t emd_shm_size(uint32_t mtu, uint32_t rx_size, uint32_t tx_slots, uint32_t *slot_size);
/** Daemon side: lay out a zeroed region of @p size bytes. */
void emd_shm_init(struct emd_shm_hdr *h, uint64_t size, uint32_t mtu, uint32_t rx_size,
                  uint32_t tx_slots, uint64_t instance, uint16_t endpoint, const uint8_t mac[6]);
/**
 * Check a bulk-queue block (client side, part of emd_shm_check): S within
 * limits, queues = 1 + S*S, the slot below S (or none), names non-empty,
 * terminated and made of [A-Za-z0-9_.-] (they become EAL arguments), the
 * reason terminated.  @return 0, or -1 with the reason in @p why.
 */
int emd_bulkq_check(const struct emd_bulkq_info *r, const char **why);
/**
 * Client side: check a region of @p size bytes against what ATTACH_OK said
 * (and its bulk-queue block, emd_bulkq_check).
 * @return 0, or -1 with the reason in @p why.
 */
int emd_shm_check(const struct emd_shm_hdr *h, uint64_t size, uint64_t instance, uint16_t endpoint,
                  const char **why);

#endif
