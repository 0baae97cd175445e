/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file proto_internal.h
 * Private state of the protocol: per-peer sender and receiver halves.
 * Shared by proto.c (instance, timers, failure), act.c (a peer's active
 * part: taken on first use, released when idle), send.c and recv.c.
 */
#ifndef EM_PROTO_INTERNAL_H
#define EM_PROTO_INTERNAL_H

#include "proto/cc.h"
#include "proto/proto.h"
#include "proto/seq.h"

#define EM_NEVER UINT64_MAX
/** How long the largest recent RTT sample keeps the RTO up (see rtt_sample()). */
#define EM_RTT_PEAK_WINDOW_NS 250000000ull
#define EM_SLOT_MASK          (EM_WINDOW_MAX - 1u)
/** Timeouts of a streak that send only a probe, no data (em_on_timeout). */
#define EM_PROBE_ONLY 2u
_Static_assert((EM_WINDOW_MAX & (EM_WINDOW_MAX - 1u)) == 0, "window max is a power of two");
_Static_assert(EM_WINDOW_MAX % 64 == 0, "the out-of-order bitmap is whole 64-bit words");
_Static_assert(EM_SACK_BITS == 64 && EM_SACK_BITS <= EM_WINDOW_MAX,
               "the wire's SACK field is 64 bits");

/** One packet in flight (sender side); indexed by seq & EM_SLOT_MASK. */
struct em_tx_slot {
    em_proto_op_t *op; /**< NULL when free */
    uint64_t stamp;    /**< transmission order: larger = sent later (RACK-style loss detection) */
    uint64_t tx_time;  /**< when it was last (re)transmitted */
    uint32_t bytes;    /**< frame length on the wire (header + payload), for cc */
    uint16_t frag_no;
    uint8_t sacked; /**< the receiver holds it out of order: do not resend */
    uint8_t retx;   /**< sent more than once: no RTT sample from it (Karn) */
};

/** One frame held out of order (receiver side, selective repeat). */
struct em_rx_slot {
    em_hdr_t hdr;
    uint8_t *payload; /**< frame_max bytes, allocated on first use */
};

enum em_peer_state { EM_PEER_ACTIVE = 0, EM_PEER_FAILED = 1 };

/**
 * What a peer holds only while traffic moves (docs/design.md "Memory per
 * peer"): its send ring, the receiver's reordering and reassembly state,
 * the retransmit timer and congestion control.  Allocated on first use (a
 * send, or a received frame that must be held or reassembled:
 * em_peer_act_get()), released by em_proto_poll() once the peer has been
 * quiet for cfg.peer_idle_ns (act.c, em_act_sweep()).  em_peer::a is NULL
 * while released, and then, always: nothing queued or unacknowledged
 * (q_head NULL, snd_una == snd_nxt), nothing held out of order, no message
 * half reassembled.
 */
struct em_peer_act {
    /* ---- sender half ---- */
    uint64_t stamp;        /**< last transmission stamp handed out */
    uint64_t rtt_peak;     /**< largest RTT sample in the current peak window */
    uint64_t rtt_peak_at;  /**< when that window began */
    uint64_t rto_cur;      /**< current (backed-off) retransmit timeout */
    uint64_t rto_deadline; /**< when the oldest unacked frame times out */
    uint32_t retries;      /**< consecutive timeouts without progress */
    uint32_t resends;      /**< timeouts of this streak that resent data */
    uint64_t streak_at;    /**< when this streak's first timeout expired */
    uint64_t answered_at;  /**< when the peer last answered a probe of ours */
    uint64_t probe_stamp;  /**< a probe is out: the last stamp sent before it (0: none) */
    uint64_t probe_at;     /**< when that probe was sent */
    uint64_t pace_at;      /**< pacing holds new frames until then (EM_NEVER: not paced) */
    em_cc_t cc;            /**< congestion window and pacing (cc.h) */
    uint8_t tx_blocked;    /**< the link refused a frame: retry on next poll */

    /* ---- receiver half ---- */
    uint32_t nooo;                    /**< bits set in ooo */
    uint64_t ooo[EM_WINDOW_MAX / 64]; /**< bit (seq & EM_SLOT_MASK): seq is buffered out of
                                   order (only seqs in rcv_nxt + 1 .. rcv_nxt + W - 1) */
    struct em_rx_slot *rx;            /**< em_proto::ring slots, allocated on first reorder */

    /* reassembly of a multi-fragment message (frames arrive in order) */
    uint8_t ra_active;
    uint8_t ra_tag;
    uint16_t ra_cnt;
    uint16_t ra_next;
    uint32_t ra_msg_id;
    uint32_t ra_len;
    uint32_t ra_got;
    uint8_t *ra_buf;
    size_t ra_cap;
    /* ... into the owner's buffer (ops.place) instead of ra_buf, when set:
     * message bytes from ra_skip on go to ra_dst + (offset - ra_skip) */
    uint8_t *ra_dst;
    uint32_t ra_skip;
    void *ra_ctx;

    /* ---- idle release (act_sweep) ---- */
    uint32_t seen_snd, seen_rcv; /**< snd_nxt and rcv_nxt at the last sweep */
    uint64_t quiet_since;        /**< quiet and unchanged since (EM_NEVER: not quiet) */

    struct em_tx_slot tx[]; /**< the send ring: em_proto::ring slots */
};

/**
 * A peer as every peer has it, idle or not: who it is, where both
 * sequence spaces stand (they continue across a release of the active
 * part), what we owe it (ACKs), its failure and its liveness watch, and
 * the path's RTT estimate (kept, as TCP keeps per-destination metrics, so
 * a peer that comes back starts with its own RTO).  Kept small: a job's
 * table of them is allocated up front, or grown by doubling
 * (em_proto_grow; em_proto_peer_bytes()).
 */
struct em_peer {
    uint8_t state;
    uint8_t set;             /**< keys and ISNs known (em_proto_set_peer, or cfg defaults) */
    uint8_t rem_err;         /**< it refused a put of ours: our puts complete with -EM_EACCES */
    uint8_t refused_put;     /**< we refused a put of its: our frames carry EM_F_REMERR */
    uint8_t nack_owed;       /**< Go-Back-N: a NACK must go out */
    uint8_t nack_sent;       /**< Go-Back-N: NACK already sent for this gap */
    uint8_t probed;          /**< a probe came: our next ACK state carries EM_F_PROBED */
    uint8_t held;            /**< operations queue, none leaves (em_proto_hold_peer) */
    uint8_t in_poll;         /**< in the poll set (em_poll_add) */
    uint32_t remote_index;   /**< what the peer calls us: our frames to it carry it
                                  (em_proto_set_peer_index; cfg.self until then) */
    uint64_t key;            /**< the pair's key: on every frame both ways */
    uint32_t tx_isn, rx_isn; /**< the pair's initial sequence numbers */
    const char *fail_reason; /**< why it failed (static sentence) */
    uint64_t heard_at;       /**< when a frame of its was last accepted (0: never) */

    uint32_t snd_una; /**< oldest sequence number not cumulatively acked */
    uint32_t snd_nxt; /**< next sequence number to use */
    uint32_t next_msg_id;
    uint32_t rcv_nxt;      /**< next sequence number expected (= cumulative ACK) */
    em_proto_op_t *q_head; /**< every incomplete op to this peer, FIFO */
    em_proto_op_t *q_tail;
    em_proto_op_t *q_send; /**< first op with fragments not yet sent */
    uint64_t srtt, rttvar; /**< smoothed RTT and its variation (RFC 6298), 0 = no sample */
    uint64_t rto_base;     /**< clamp(srtt + 4 rttvar, rto_min, rto_max), or cfg.rto_ns */
    uint32_t ack_owed;     /**< in-order frames delivered since our last ACK */
    uint64_t ack_deadline; /**< when a standalone ACK must go out */
    struct em_peer_act *a; /**< the active part, NULL while released */

    /* liveness watch (live.c) */
    uint32_t watchers;      /**< em_proto_watch() holds */
    uint32_t live_retries;  /**< liveness probes unanswered in a row */
    uint64_t live_rto;      /**< interval to the next liveness probe (backed off) */
    uint64_t live_deadline; /**< next liveness probe or failure (EM_NEVER: none) */
};

struct em_proto {
    em_proto_cfg_t cfg;
    em_proto_ops_t ops;
    void *uctx;
    struct em_peer *peers;
    uint32_t data_payload;  /**< payload bytes per DATA frame */
    uint32_t put_payload;   /**< payload bytes per PUT frame */
    uint32_t ack_every;     /**< ACK at once after this many in-order frames */
    uint32_t ring;          /**< slots per peer and direction: cfg.window rounded up to 2^k */
    uint32_t nactive;       /**< peers holding their active part */
    uint32_t act_fail;      /**< em_proto_fail_act_alloc(): allocations left to fail */
    uint64_t sweep_at;      /**< next look for idle peers to release (act_sweep) */
    em_cc_t cc0;            /**< a fresh peer's congestion state (em_cc_init) */
    uint64_t next_deadline; /**< lower bound of every peer's deadlines */
    /* the poll set: every peer that may have a deadline (an active part,
     * an ACK or NACK owed, a liveness deadline), so that em_proto_poll()
     * costs the peers that are busy, not the table (em_poll_add) */
    uint32_t *poll; /**< peer numbers, poll_n used; room for cfg.npeers */
    uint32_t poll_n;
    uint32_t max_msg; /**< receiver side: longest message accepted */
    uint64_t rx_mem;  /**< bytes of reassembly buffers and out-of-order slots held */
    em_proto_stats_t st;
};

/** The tx (or rx) slot of @p seq in a ring of @p p->ring. */
/** The next timeout after one that expired: doubled, capped at rto_max.
 *  The retransmit timer and the liveness watch back off alike through it,
 *  which is what makes the watch's bound a sender's, term for term. */
static inline uint64_t em_rto_backoff(const struct em_proto *p, uint64_t rto)
{
    return rto * 2 > p->cfg.rto_max_ns ? p->cfg.rto_max_ns : rto * 2;
}

static inline uint32_t em_slot(const struct em_proto *p, uint32_t seq)
{
    return seq & (p->ring - 1u);
}

/** Is @p seq held out of order? */
static inline bool em_ooo_has(const struct em_peer_act *a, uint32_t seq)
{
    uint32_t b = seq & EM_SLOT_MASK;
    return (a->ooo[b / 64] >> (b % 64)) & 1u;
}

static inline void em_ooo_set(struct em_peer_act *a, uint32_t seq)
{
    uint32_t b = seq & EM_SLOT_MASK;
    a->ooo[b / 64] |= (uint64_t)1 << (b % 64);
    a->nooo++;
}

static inline void em_ooo_clear(struct em_peer_act *a, uint32_t seq)
{
    uint32_t b = seq & EM_SLOT_MASK;
    a->ooo[b / 64] &= ~((uint64_t)1 << (b % 64));
    a->nooo--;
}

/** The wire's SACK bitmap: bit i = rcv_nxt + 1 + i is held (none while
 *  the peer's active part is released: nothing is held then). */
static inline uint64_t em_sack_bits(const struct em_peer *pe)
{
    const struct em_peer_act *a = pe->a;
    if (!a || !a->nooo)
        return 0;
    uint32_t b = (pe->rcv_nxt + 1u) & EM_SLOT_MASK, w = b / 64, off = b % 64;
    uint64_t lo = a->ooo[w] >> off;
    uint64_t hi = off ? a->ooo[(w + 1) % (EM_WINDOW_MAX / 64)] << (64 - off) : 0;
    return lo | hi;
}

/** Lower the instance-wide deadline to @p t. */
void em_poll_add_slow(struct em_proto *p, struct em_peer *pe);
/** @p pe may have a deadline from now on: em_proto_poll() looks at it
 *  until it has none (called wherever a deadline is set or an active part
 *  taken). */
static inline void em_poll_add(struct em_proto *p, struct em_peer *pe)
{
    if (!pe->in_poll)
        em_poll_add_slow(p, pe);
}

static inline void em_arm(struct em_proto *p, uint64_t t)
{
    if (t < p->next_deadline)
        p->next_deadline = t;
}

/* The functions below are the protocol's own: hidden, so libethermpi.so
 * (whose version script exports em_*) does not offer them as API. */
#pragma GCC visibility push(hidden)

/* send.c */
int em_send_frag(struct em_proto *p, uint32_t peer, uint32_t seq, uint8_t flags, uint64_t now);
void em_pump(struct em_proto *p, uint32_t peer, uint64_t now);
bool em_on_ack(struct em_proto *p, uint32_t peer, const em_hdr_t *h, uint64_t now);
void em_on_nack(struct em_proto *p, uint32_t peer, uint64_t now);
void em_on_timeout(struct em_proto *p, uint32_t peer, uint64_t now);

/* recv.c */
void em_on_sequenced(struct em_proto *p, uint32_t peer, const em_hdr_t *h, const uint8_t *payload,
                     uint64_t now);
int em_send_ack(struct em_proto *p, uint32_t peer, uint8_t type);
/** A standalone frame of @p type with our ACK state and the extra @p flags. */
int em_send_ctl(struct em_proto *p, uint32_t peer, uint8_t type, uint8_t flags);
/** A probe arrived from @p peer: answer it on the next poll. */
void em_on_probe(struct em_proto *p, uint32_t peer, uint64_t now);
void em_reassembly_reset(struct em_proto *p, struct em_peer *pe);
/** Free @p pe's receive buffers (out-of-order slots, reassembly buffer);
 *  its active part stays, emptied of them. */
void em_rx_free(struct em_proto *p, struct em_peer *pe);
/** Room for @p n more bytes of receive buffers? (counts drop_budget when not) */
bool em_rx_mem_take(struct em_proto *p, uint64_t n);

/* live.c */
/** A frame from @p peer was accepted: it is alive (restart its watch). */
static inline void em_live_heard(struct em_proto *p, struct em_peer *pe, uint64_t now)
{
    if (pe->watchers && p->cfg.live_idle_ns) {
        pe->live_retries = 0;
        pe->live_rto = pe->rto_base;
        pe->live_deadline = now + p->cfg.live_idle_ns;
        /* later than before: poll recomputes the instance deadline */
    }
}
/** The watch's deadline of @p peer passed: probe it, or fail it. */
void em_live_timeout(struct em_proto *p, uint32_t peer, uint64_t now);

/* act.c */
/** @p pe's active part, allocated now if it has none (first use).
 *  @return NULL when out of memory (counted in peer_acquire_failed). */
struct em_peer_act *em_peer_act_get(struct em_proto *p, struct em_peer *pe, uint64_t now);
/** Free @p pe's active part (and its receive buffers), if it has one. */
void em_peer_act_put(struct em_proto *p, struct em_peer *pe);
/** em_proto_poll(): release the active parts of peers quiet for peer_idle_ns. */
void em_act_sweep(struct em_proto *p, uint64_t now);

/* proto.c */
void em_fail_peer(struct em_proto *p, uint32_t peer);
/** link_acks: an in-order frame the link acknowledged cannot be consumed. */
void em_fail_acked(struct em_proto *p, uint32_t peer, const char *why);

#pragma GCC visibility pop

#endif
