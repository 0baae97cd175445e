/* SPDX-License-Identifier: BSD-3-Clause */
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
 *      FLOW  {self, peer, keys, next seqs, frame_max} ----------------->
 *            (one per peer: the daemon may acknowledge that peer's
 *             in-order frames for the client; see struct emd_ctl_flow)
 *   closing the socket = detach: the daemon frees the endpoint at once,
 *   so a killed client's rings are reclaimed; a dead daemon shows up to the
 *   client as POLLHUP on the socket (or a stale heartbeat, if it hangs).
 *
 *   shared region (memfd, mapped by both):
 *      0      struct emd_shm_hdr    (EMD_SHM_HDR_SIZE bytes, incl. the own-queue
 *                                    block struct emd_rdv_info at 448)
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
/* 2: the region's header carries the own-queue ("rendezvous queue") block,
 *    the live receive-loss fraction, and put counters; rx_off moved to 768
 * 3: FLOW control messages; the daemon acknowledges only registered flows */
#define EMD_VERSION     3u

/* ------------------------------------------------------------ control -- */

enum emd_ctl_type {
    EMD_CTL_ATTACH_REQ = 1,
    EMD_CTL_ATTACH_OK = 2,
    EMD_CTL_ATTACH_ERR = 3,
    EMD_CTL_WAKE = 4,
    EMD_CTL_FLOW = 5,
    EMD_CTL_STATUS_REQ = 6,  /**< the first message of a connection: send the counters, close */
    EMD_CTL_STATUS = 7,      /**< the reply: a struct emd_ctl_status (not a struct emd_ctl_msg) */
};

/**
 * FLOW: the client's protocol endpoint @c self talks to @c peer; the daemon
 * may acknowledge @c peer's in-order sequenced frames to @c self once they
 * are in the client's rx ring, starting at @c rx_next, if they carry
 * @c rx_key and pass the protocol's stateless checks for @c frame_max; its
 * ACKs carry @c tx_key and @c tx_next.  Any values: the daemon assumes no
 * initial sequence number and no key format (keys up to 64 bits).  A second
 * FLOW for the same (self, peer) replaces the first.  What a client says
 * here only concerns frames sent to its own endpoint.
 */
struct emd_ctl_flow {
    uint64_t rx_key;       /**< key of the frames peer -> self */
    uint64_t tx_key;       /**< key of the frames self -> peer */
    uint32_t rx_next;      /**< next sequence number self expects from peer */
    uint32_t tx_next;      /**< self's next sequence number toward peer */
    uint32_t frame_max;    /**< self's largest frame, headers included */
    uint16_t self, peer;   /**< protocol endpoint ids (self != peer) */
    uint8_t rsvd[24];      /**< 0 */
};
_Static_assert(sizeof(struct emd_ctl_flow) == 56, "emd_ctl_flow is 56 bytes");

/** One control message (fixed size; SOCK_SEQPACKET keeps the boundaries). */
struct emd_ctl_msg {
    uint32_t magic;        /**< EMD_CTL_MAGIC */
    uint16_t version;      /**< EMD_VERSION */
    uint16_t type;         /**< enum emd_ctl_type */
    union {
        struct {
            uint32_t pid;          /**< ATTACH_REQ: the client's pid (diagnostics; the daemon
                                        uses SO_PEERCRED's) */
            uint32_t status;       /**< ATTACH_ERR: an errno value */
            uint64_t instance;     /**< ATTACH_OK: random id of this daemon run */
            uint64_t shm_size;     /**< ATTACH_OK: bytes of the region (= the memfd's size) */
            uint16_t endpoint;     /**< ATTACH_OK: the client's endpoint id (1..65535) */
            uint16_t rsvd[3];
            char text[24];         /**< ATTACH_ERR: reason (NUL-terminated); else 0 */
        };
        struct emd_ctl_flow flow;  /**< FLOW */
    };
};
_Static_assert(sizeof(struct emd_ctl_msg) == 64, "emd_ctl_msg is 64 bytes");

/**
 * STATUS (docs/daemon.md "Reading the counters"): a client the access rule
 * admits connects, sends a STATUS_REQ (a struct emd_ctl_msg whose fields
 * past the type the daemon ignores), and gets one struct emd_ctl_status;
 * then the daemon closes the connection.  The connection never takes a
 * client slot: it is a pending connection (EMD_PENDING, one second) until
 * its request is read.  Host byte order, like every control message (both
 * ends are on one host).  Counter @c i of @c v is EMD_STATUS_FIELDS' entry
 * @c i; @c count says how many the daemon filled (a newer daemon may add
 * entries at the end, never reorder them; a reader shows min(count, its
 * own) entries).  A change of meaning bumps @c layout.
 *
 * The counters: X(name, meaning).  Totals since the daemon started, except
 * those marked "now".
 */
#define EMD_STATUS_FIELDS(X) \
    X(clients, "clients attached now") \
    X(attaches, "attaches accepted") \
    X(detaches, "clients detached") \
    X(rx_frames, "frames received from the port") \
    X(rx_bad, "received frames refused (bad shim header)") \
    X(rx_no_endpoint, "received frames for no attached endpoint") \
    X(rx_loss_drops, "received frames dropped by --rx-loss (testing)") \
    X(rx_ring_full, "received frames dropped: the client's rx ring was full") \
    X(tx_frames, "frames sent to the port") \
    X(tx_port_full, "sends the port refused (tx queue full)") \
    X(local_frames, "frames carried between clients of this node") \
    X(eager_acks, "eager ACKs sent for the clients") \
    X(ack_refused, "in-order frames not acknowledged (checks failed)") \
    X(flows, "eager-ACK flows registered now") \
    X(flows_added, "flow registrations accepted") \
    X(flows_refused, "flow registrations refused") \
    X(refused_credentials, "connections refused by the access rule (--uid/--group)") \
    X(refused_limits, "attaches refused by limits (--max-clients, --max-per-uid, pending)") \
    X(refused_requests, "connections refused: malformed first request") \
    X(bad_control, "control messages refused from attached clients") \
    X(doomed_clients, "clients detached for bad rings or messages") \
    X(nodes, "nodes in the node table now") \
    X(nodes_full, "sends refused: node table full") \
    X(nodes_evicted, "node table entries aged out and reused") \
    X(tx_bad_mac, "sends to broadcast/multicast refused") \
    X(hello_bad, "memif hellos refused") \
    X(hello_conflict, "memif hellos with a conflicting layout") \
    X(hello_replies_skipped, "memif hello replies skipped (rate)") \
    X(rdv_slots, "own-queue slots configured") \
    X(rdv_slots_used, "own-queue slots in use now") \
    X(rdv_slots_held, "own-queue slots kept for a live detached holder") \
    X(put_frames, "put frames carried by the daemon") \
    X(put_bytes, "put bytes carried by the daemon") \
    X(ack_resyncs, "eager flows moved by the clients' own ACKs") \
    X(notes, "notes of own-queue ACKs") \
    X(status_requests, "STATUS requests answered (this one included)")

#define EMD_STATUS_ENUM_(name, text) EMD_ST_##name,
enum emd_status_index { EMD_STATUS_FIELDS(EMD_STATUS_ENUM_) EMD_ST_COUNT };
#undef EMD_STATUS_ENUM_

#define EMD_STATUS_LAYOUT 1u   /* meaning of v[]: bump when one changes */
#define EMD_STATUS_MAX    64u  /* room in the reply; EMD_ST_COUNT <= this */
_Static_assert(EMD_ST_COUNT <= EMD_STATUS_MAX, "more counters than the reply holds");

/** The STATUS reply (fixed size). */
struct emd_ctl_status {
    uint32_t magic;        /**< EMD_CTL_MAGIC */
    uint16_t version;      /**< EMD_VERSION */
    uint16_t type;         /**< EMD_CTL_STATUS */
    uint16_t layout;       /**< EMD_STATUS_LAYOUT */
    uint16_t count;        /**< counters filled in v (1..EMD_STATUS_MAX) */
    uint32_t rsvd;         /**< 0 */
    uint64_t instance;     /**< random id of this daemon run (as in ATTACH_OK) */
    uint64_t v[EMD_STATUS_MAX];  /**< the counters; unused entries 0 */
};
_Static_assert(sizeof(struct emd_ctl_status) == 536, "emd_ctl_status is 536 bytes");

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
    _Atomic uint64_t put_frames;     /**< put (rendezvous) frames the daemon carried for this
                                          client, both ways (0 when its own queue carries them) */
};

/*
 * Own queues (seed 000: rendezvous data on the MPI process's own queue).
 * On the memif wire the daemon is a hugepage-backed DPDK primary with
 * 1 + S*S queue pairs on its port (S = emd --rdv-slots): queue 0 is the
 * daemon's; queue emd_rdv_queue(S, s, r) carries put frames from local slot
 * s of one node to slot r of the other (memif queue i feeds queue i of the
 * other end).  A client with a slot runs as a DPDK secondary of the daemon
 * and owns the TX side of queues (S, my slot, *) and the RX side of queues
 * (S, *, my slot): no two processes touch one ring.  Frames on these queues
 * carry the same shim as the daemon's (emd_wire_hdr), so a receiver drops
 * what was meant for the previous owner of its slot.
 */
#define EMD_RDV_SLOTS_MAX  15u          /* 1 + 15*15 = 226 queue pairs (memif: <= 255) */
#define EMD_RDV_NO_SLOT    0xFFFFu
#define EMD_RDV_NAME_LEN   64u
#define EMD_RDV_WHY_LEN    96u
/* The daemon creates two mempools per slot (em_link_dpdk_queue_pool), the
 * slot's DPDK secondary looks them up: the pool receiving the rx queues of
 * slot s on port p, and the pool the slot sends from (printf: port, slot). */
#define EMD_RDV_RX_POOL    "emq_rx_p%u_s%u"
#define EMD_RDV_TX_POOL    "emq_tx_p%u_s%u"
#define EMD_RDV_RX_MBUFS   1023u
#define EMD_RDV_TX_MBUFS   511u

/** The queue carrying put frames from slot @p from (sender's node) to slot @p to. */
static inline uint16_t emd_rdv_queue(uint16_t slots, uint16_t from, uint16_t to)
{
    return (uint16_t)(1u + (uint32_t)from * slots + to);
}

/** What the daemon tells a client about its own queues (constant). */
struct emd_rdv_info {
    uint16_t slots;                  /**< S; 0: no own queues on this daemon (see why) */
    uint16_t slot;                   /**< the client's slot, or EMD_RDV_NO_SLOT (see why) */
    uint16_t queues;                 /**< queue pairs of the port: 1 + S*S (0 when S = 0) */
    uint16_t rsvd0;
    uint32_t rsvd1[2];
    char prefix[EMD_RDV_NAME_LEN];   /**< the daemon's EAL --file-prefix (NUL-terminated) */
    char port[EMD_RDV_NAME_LEN];     /**< the DPDK port's name, e.g. "net_memif0" */
    char why[EMD_RDV_WHY_LEN];       /**< no own queue: the reason, for the user */
    uint8_t pad[16];
};
_Static_assert(sizeof(struct emd_rdv_info) == 256, "emd_rdv_info is 256 bytes");

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
    /** testing: the daemon's receive-loss fraction in parts per million
     *  (emd --rx-loss, emcluster emd loss); the client applies it to the
     *  frames of its own queues, which the daemon never sees */
    _Atomic uint32_t rx_loss_ppm;
    uint32_t rsvd_live;
    /** written by the client: CLOCK_MONOTONIC of its last own-queue
     *  traffic; the daemon keeps spinning (does not sleep) for spin-us after
     *  it, so the eager frames that interleave a rendezvous (CTS, FIN, ...)
     *  do not wait for a sleeping daemon */
    _Atomic uint64_t own_active_ns;
    uint8_t pad1[32];
    struct emd_client_stats st;      /**< 64 bytes */
    struct emd_ring_idx rx;          /**< daemon produces, client consumes */
    struct emd_ring_idx tx;          /**< client produces, daemon consumes */
    struct emd_rdv_info rdv;         /**< constant: the client's own queues (or why none) */
};
_Static_assert(offsetof(struct emd_shm_hdr, heartbeat_ns) == 64, "live part on its own line");
_Static_assert(offsetof(struct emd_shm_hdr, st) == 128, "stats at 128");
_Static_assert(offsetof(struct emd_shm_hdr, rx) == 192, "rx ring at 192");
_Static_assert(offsetof(struct emd_shm_hdr, rdv) == 448, "own-queue block at 448");
_Static_assert(sizeof(struct emd_shm_hdr) == 704, "emd_shm_hdr is 704 bytes");

#define EMD_SHM_HDR_SIZE 704u
/** where the rx ring starts (the header rounded up, plus a spare line) */
#define EMD_SHM_RX_OFF   768u

/** Each slot starts with this. */
struct emd_slot_hdr {
    uint32_t len;                    /**< frame bytes after this header */
    uint16_t endpoint;               /**< tx: destination; rx: source */
    uint8_t mac[6];                  /**< tx: destination node; rx: source node */
    uint32_t flags;                  /**< tx: enum emd_slot_flags; rx: 0 */
};

enum emd_slot_flags {
    /** a copy of an ACK the client sent on its own queue: the daemon moves
     *  its eager-ACK state by it and sends nothing */
    EMD_SLOT_F_NOTE = 0x1,
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

/*
 * The daemons of a memif cable check at start that their ports have the
 * same number of queue pairs (memif pairs queue i with queue i; a server
 * with more queues than its client reads ring 0 through the extra ones).
 * Each sends a hello to the broadcast address, with the shim's destination
 * EMD_EP_CONTROL (an endpoint never given to a client), and answers one.
 */
#define EMD_EP_CONTROL 0xFFFFu
#define EMD_HELLO_MAGIC "EMDH"
enum emd_hello_kind { EMD_HELLO = 1, EMD_HELLO_REPLY = 2 };

/** The hello body after the shim (big-endian fields). */
struct emd_hello {
    uint8_t magic[4];                /**< "EMDH" */
    uint8_t version;                 /**< EMD_VERSION */
    uint8_t kind;                    /**< enum emd_hello_kind */
    uint8_t slots_be[2];             /**< --rdv-slots in effect (0: no own queues) */
    uint8_t queues_be[2];            /**< queue pairs of the port */
    uint8_t rsvd[6];                 /**< 0 */
};
_Static_assert(sizeof(struct emd_hello) == 16, "emd_hello is 16 bytes");

void emd_hello_encode(uint8_t *p, uint8_t kind, uint16_t slots, uint16_t queues);
/** @return 0 with the fields, or -1 (not a hello of this version, or inconsistent). */
int emd_hello_decode(const uint8_t *p, size_t len, uint8_t *kind, uint16_t *slots, uint16_t *queues);

/* ----------------------------------------------------------- address -- */
/*
 * A client's address in the modex (em_link_addr_t): node MAC (6), endpoint
 * (2, big-endian) and, when it has its own queues, 4 more bytes: the
 * format EMD_ADDR_RDV_V1, its slot, S, 0.  8 bytes: no own queue (puts to
 * it go through the daemons).
 */
#define EMD_ADDR_LEN       8u
#define EMD_ADDR_LEN_RDV   12u
#define EMD_ADDR_RDV_V1    1u

/** Fill @p out (>= EMD_ADDR_LEN_RDV bytes); slots 0: no own queue. @return the length. */
uint8_t emd_addr_encode(uint8_t *out, const uint8_t mac[6], uint16_t ep, uint16_t slots, uint16_t slot);
/**
 * Decode a peer's address: endpoint != 0; for 12 bytes the format, S in
 * 1..EMD_RDV_SLOTS_MAX, slot < S, the last byte 0.  @p slots = 0 for an
 * 8-byte address.  @return 0, or -1 (not a daemon-mode address).
 */
int emd_addr_decode(const uint8_t *a, size_t len, uint8_t mac[6], uint16_t *ep, uint16_t *slots,
                    uint16_t *slot);

/* ----------------------------------------------------------- functions -- */

/** Fill a control message of @p type (all other fields 0). */
void emd_ctl_init(struct emd_ctl_msg *m, uint16_t type);
/**
 * Validate a received control message of @p len bytes (FLOW: self != peer,
 * frame_max from 64 to EMD_MTU_MAX, reserved bytes 0).
 * @return 0, or -1 with the reason in @p why (a static string).
 */
int emd_ctl_check(const void *buf, size_t len, struct emd_ctl_msg *out, const char **why);

/**
 * Validate a received STATUS reply of @p len bytes (size, magic, version,
 * type, layout, 1 <= count <= EMD_STATUS_MAX).
 * @return 0, or -1 with the reason in @p why (a static string).
 */
int emd_status_check(const void *buf, size_t len, struct emd_ctl_status *out, const char **why);

/** Bytes of a region with these ring sizes and slot size (0: impossible). */
uint64_t emd_shm_size(uint32_t mtu, uint32_t rx_size, uint32_t tx_slots, uint32_t *slot_size);
/** Daemon side: lay out a zeroed region of @p size bytes. */
void emd_shm_init(struct emd_shm_hdr *h, uint64_t size, uint32_t mtu, uint32_t rx_size,
                  uint32_t tx_slots, uint64_t instance, uint16_t endpoint, const uint8_t mac[6]);
/**
 * Check an own-queue block (client side, part of emd_shm_check): S within
 * limits, queues = 1 + S*S, the slot below S (or none), names non-empty,
 * terminated and made of [A-Za-z0-9_.-] (they become EAL arguments), the
 * reason terminated.  @return 0, or -1 with the reason in @p why.
 */
int emd_rdv_check(const struct emd_rdv_info *r, const char **why);
/**
 * Client side: check a region of @p size bytes against what ATTACH_OK said
 * (and its own-queue block, emd_rdv_check).
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
