/**
 * @file emd_shm.h
 * The contract between `emd` (the per-node polling daemon) and its clients
 * (link_emd, inside MPI processes): the control messages on the daemon's
 * unix socket, the shared-memory region each client gets, and the shim
 * header the daemons put in front of every frame on the wire.  See
 * docs/daemon.md for the pictures.  Nothing here needs DPDK.
 *
 * Trust: the daemon and a client are different processes, so each side
 * validates everything it reads from the other before using it (the
 * emd_*_check functions below); a bad message or slot is counted and
 * dropped, never followed.  The region is host-local: fields are host order.
 *
 *   control socket (SOCK_SEQPACKET)                 client          emd
 *      ATTACH_REQ {magic, version, pid}              ----------------->
 *      ATTACH_OK  {instance, endpoint, size} + memfd <-----------------
 *      (or ATTACH_ERR {status, text})
 *      WAKE  (the daemon sleeps; new tx slots)       ----------------->
 *   closing the socket = detach: the daemon frees the endpoint at once,
 *   so a killed client's rings are reclaimed; a dead daemon shows up to the
 *   client as POLLHUP on the socket (or a stale heartbeat, if it hangs).
 *
 *   shared region (memfd, mapped by both):
 *      0      struct emd_shm_hdr    (EMD_SHM_HDR_SIZE bytes)
 *      rx_off rx_size bytes          daemon -> client: a byte ring of records
 *      tx_off tx_slots x slot_size   client -> daemon: fixed slots
 *   an rx record: struct emd_slot_hdr, the frame, padding to 64 bytes; a
 *   record never wraps: when one does not fit before the end of the ring,
 *   a header with len = EMD_REC_WRAP fills the rest and the record starts
 *   at offset 0.  (Records, not slots, so that small eager frames take
 *   little room even when the port carries jumbo frames.)
 *   a tx slot: struct emd_slot_hdr, then up to mtu bytes of frame.
 *
 * Each ring is single-producer single-consumer: the producer fills
 * [tail, head + capacity) and then publishes tail (release); the consumer
 * reads [head, tail) (acquire) and then publishes head.  head and tail are
 * free-running 32-bit counters (wrap-safe differences) of bytes (rx) or
 * slots (tx); rx_size and tx_slots are powers of 2.
 */
#ifndef EM_DAEMON_EMD_SHM_H
#define EM_DAEMON_EMD_SHM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define EMD_CTL_MAGIC   0x454D4443u   /* "EMDC" */
#define EMD_SHM_MAGIC   0x454D4453u   /* "EMDS" */
#define EMD_VERSION     1u

/* ------------------------------------------------------------ control -- */

enum emd_ctl_type {
    EMD_CTL_ATTACH_REQ = 1,
    EMD_CTL_ATTACH_OK = 2,
    EMD_CTL_ATTACH_ERR = 3,
    EMD_CTL_WAKE = 4,
};

/** One control message (fixed size; SOCK_SEQPACKET keeps the boundaries). */
struct emd_ctl_msg {
    uint32_t magic;        /**< EMD_CTL_MAGIC */
    uint16_t version;      /**< EMD_VERSION */
    uint16_t type;         /**< enum emd_ctl_type */
    uint32_t pid;          /**< ATTACH_REQ: the client's pid (diagnostics) */
    uint32_t status;       /**< ATTACH_ERR: an errno value */
    uint64_t instance;     /**< ATTACH_OK: random id of this daemon run */
    uint64_t shm_size;     /**< ATTACH_OK: bytes of the region (= the memfd's size) */
    uint16_t endpoint;     /**< ATTACH_OK: the client's endpoint id (1..65535) */
    uint16_t rsvd[3];
    char text[24];         /**< ATTACH_ERR: reason (NUL-terminated); else 0 */
};
_Static_assert(sizeof(struct emd_ctl_msg) == 64, "emd_ctl_msg is 64 bytes");

/* ------------------------------------------------------------- region -- */

/** One ring's indices, each on its own cache line. */
struct emd_ring_idx {
    _Atomic uint32_t head;           /**< written by the consumer */
    uint8_t pad0[60];
    _Atomic uint32_t tail;           /**< written by the producer */
    uint8_t pad1[60];
};
_Static_assert(sizeof(struct emd_ring_idx) == 128, "emd_ring_idx is two cache lines");

enum emd_state { EMD_STATE_RUNNING = 1, EMD_STATE_STOPPED = 2 };

enum emd_shm_flags {
    /** The daemon acknowledges sequenced frames once they are in the rx
     *  ring (so the client must never drop a frame it was handed). */
    EMD_SHM_F_DAEMON_ACKS = 0x1,
};

/** Counters the daemon keeps per client (the client only reads them). */
struct emd_client_stats {
    _Atomic uint64_t rx_delivered;   /**< frames put into the rx ring */
    _Atomic uint64_t rx_ring_full;   /**< frames dropped: the rx ring was full (client not polling) */
    _Atomic uint64_t tx_sent;        /**< tx slots sent (or delivered on this node) */
    _Atomic uint64_t tx_bad;         /**< tx slots refused (bad length/endpoint) */
    _Atomic uint64_t port_rx_loss;   /**< node total: frames dropped by the daemon's loss injection */
    _Atomic uint64_t acks_sent;      /**< ACKs the daemon sent on this client's behalf */
    _Atomic uint64_t rx_dups;        /**< already-acknowledged frames the daemon dropped */
    uint64_t rsvd;
};

/** The region's header, written by the daemon before the memfd is sent. */
struct emd_shm_hdr {
    /* constant after ATTACH_OK (the client validates them once) */
    uint32_t magic;                  /**< EMD_SHM_MAGIC */
    uint32_t version;                /**< EMD_VERSION */
    uint32_t hdr_size;               /**< sizeof(struct emd_shm_hdr) */
    uint32_t slot_size;              /**< bytes per slot (header + mtu, 64-aligned) */
    uint32_t rx_size;                /**< bytes of the rx ring, power of 2 */
    uint32_t tx_slots;               /**< power of 2 */
    uint32_t rx_off, tx_off;         /**< byte offsets of the slot arrays */
    uint64_t total_size;             /**< bytes of the region */
    uint64_t instance;               /**< = ATTACH_OK's instance */
    uint32_t mtu;                    /**< largest frame a client may send/receive */
    uint16_t endpoint;               /**< = ATTACH_OK's endpoint */
    uint8_t mac[6];                  /**< the node's MAC (the port's) */
    uint32_t flags;                  /**< enum emd_shm_flags */
    /* live, written by the daemon */
    _Atomic uint64_t heartbeat_ns;   /**< CLOCK_MONOTONIC of the daemon's last loop */
    _Atomic uint32_t state;          /**< enum emd_state */
    _Atomic uint32_t daemon_sleeping; /**< 1: the daemon sleeps; send WAKE after adding tx slots */
    uint8_t pad1[48];
    struct emd_client_stats st;      /**< 64 bytes */
    struct emd_ring_idx rx;          /**< daemon produces, client consumes */
    struct emd_ring_idx tx;          /**< client produces, daemon consumes */
};
_Static_assert(offsetof(struct emd_shm_hdr, heartbeat_ns) == 64, "live part on its own line");
_Static_assert(offsetof(struct emd_shm_hdr, st) == 128, "stats at 128");
_Static_assert(offsetof(struct emd_shm_hdr, rx) == 192, "rx ring at 192");
_Static_assert(sizeof(struct emd_shm_hdr) == 448, "emd_shm_hdr is 448 bytes");

#define EMD_SHM_HDR_SIZE 448u

/** Each slot starts with this. */
struct emd_slot_hdr {
    uint32_t len;                    /**< frame bytes after this header */
    uint16_t endpoint;               /**< tx: destination; rx: source */
    uint8_t mac[6];                  /**< tx: destination node; rx: source node */
    uint32_t rsvd;
};
_Static_assert(sizeof(struct emd_slot_hdr) == 16, "emd_slot_hdr is 16 bytes");

/* limits the daemon offers and the client accepts */
#define EMD_MTU_MAX        9000u
#define EMD_SLOTS_MIN      16u
#define EMD_SLOTS_MAX      65536u
#define EMD_RX_SIZE_MIN    (64u << 10)
#define EMD_RX_SIZE_MAX    (512u << 20)
#define EMD_REGION_MAX     (1ull << 30)
/** rx record header len of the filler before the ring's end */
#define EMD_REC_WRAP       0xFFFFFFFFu

/** Bytes a record of a @p len-byte frame takes in the rx ring. */
static inline uint32_t emd_rec_size(uint32_t len)
{
    return (uint32_t)((16u + len + 63u) & ~63u);
}

/* ---------------------------------------------------------------- wire -- */

/** What the daemons put after the Ethernet header (big-endian fields). */
struct emd_wire_hdr {
    uint8_t magic;                   /**< EMD_WIRE_MAGIC (not EM_WIRE_MAGIC 0xE5: direct-mode
                                          receivers drop it as foreign) */
    uint8_t version;                 /**< EMD_VERSION */
    uint8_t len_be[2];               /**< frame bytes that follow */
    uint8_t dst_be[2];               /**< destination endpoint */
    uint8_t src_be[2];               /**< source endpoint */
    uint8_t src_mac[6];              /**< source node (where ACKs go back to) */
};
_Static_assert(sizeof(struct emd_wire_hdr) == 14, "emd_wire_hdr is 14 bytes");
#define EMD_WIRE_MAGIC 0xEDu
#define EMD_WIRE_HDR_LEN 14u

/* ----------------------------------------------------------- functions -- */

/** Fill a control message of @p type (all other fields 0). */
void emd_ctl_init(struct emd_ctl_msg *m, uint16_t type);
/**
 * Validate a received control message of @p len bytes.
 * @return 0, or -1 with the reason in @p why (a static string).
 */
int emd_ctl_check(const void *buf, size_t len, struct emd_ctl_msg *out, const char **why);

/** Bytes of a region with these ring sizes and slot size (0: impossible). */
uint64_t emd_shm_size(uint32_t mtu, uint32_t rx_size, uint32_t tx_slots, uint32_t *slot_size);
/** Daemon side: lay out a zeroed region of @p size bytes. */
void emd_shm_init(struct emd_shm_hdr *h, uint64_t size, uint32_t mtu, uint32_t rx_size,
                  uint32_t tx_slots, uint64_t instance, uint16_t endpoint, const uint8_t mac[6]);
/**
 * Client side: check a region of @p size bytes against what ATTACH_OK said.
 * @return 0, or -1 with the reason in @p why.
 */
int emd_shm_check(const struct emd_shm_hdr *h, uint64_t size, uint64_t instance,
                  uint16_t endpoint, const char **why);

/** tx slot @p i (a free-running index). */
static inline uint8_t *emd_tx_slot(const struct emd_shm_hdr *h, uint32_t i)
{
    return (uint8_t *)h + h->tx_off + (size_t)(i & (h->tx_slots - 1)) * h->slot_size;
}

/** The rx ring's byte at free-running position @p pos. */
static inline uint8_t *emd_rx_at(const struct emd_shm_hdr *h, uint32_t pos)
{
    return (uint8_t *)h + h->rx_off + (pos & (h->rx_size - 1));
}

/** Encode / decode the wire shim; decode returns -1 on a bad magic, version or length. */
void emd_wire_encode(uint8_t *p, uint16_t len, uint16_t dst, uint16_t src, const uint8_t src_mac[6]);
int emd_wire_decode(const uint8_t *p, size_t frame_len, uint16_t *len, uint16_t *dst, uint16_t *src,
                    uint8_t src_mac[6]);

#endif
