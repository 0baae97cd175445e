/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file proto.h
 * The ethermpi reliable datagram protocol: reliable, ordered (per peer)
 * delivery of messages and puts over an unreliable datagram link.
 *
 * Pure C: no I/O, no clock of its own, and no allocation on the send path
 * of a peer that is active: the first send to a peer, or the first after
 * it was idle, takes its active part (see "Memory" below).
 * The caller (the engine, or a test) supplies:
 *   - the current time in nanoseconds on every call that needs it;
 *   - an @c emit callback that puts one frame on the wire;
 *   - frames received from the wire, through em_proto_rx().
 *
 * Memory (docs/design.md "Memory per peer"): em_proto_create() allocates
 * a small record per peer, em_proto_grow() more of them
 * (em_proto_peer_bytes_idle(), under 256 bytes
 * with the engine's own byte): keys, ISNs, both sequence numbers, the ACK
 * owed, failure, the liveness watch, the RTT estimate.  The rest, the send
 * ring, out-of-order and reassembly state, retransmit timer and congestion
 * window (em_proto_peer_bytes_active()), is taken on first use (a send; a
 * received frame that must be held out of order or reassembled) and
 * released by em_proto_poll() once the peer has had nothing queued,
 * unacknowledged, held or half reassembled for cfg.peer_idle_ns.  A send
 * that finds no memory for it fails with -EM_ENOMEM (nothing queued); a
 * received frame that finds none is dropped unacknowledged and comes again.
 * Sequence numbers continue across a release.
 *
 * Threading: an em_proto_t is single-threaded.  All functions must be called
 * from the thread that owns it.  Callbacks run inside em_proto_rx(),
 * em_proto_poll(), em_proto_send() or em_proto_put(); from a callback the
 * caller may call em_proto_send(), em_proto_put(), em_proto_watch(),
 * em_proto_unwatch() and the read-only accessors, but not em_proto_rx(),
 * em_proto_poll(), em_proto_grow() or em_proto_destroy().  em_proto_grow()
 * only between calls: it moves the peer table, so nothing of the caller's
 * may be inside any call of this protocol, a callback included.
 *
 * Delivery semantics: a cumulative ACK means "delivered": the message was
 * handed to the recv callback, or the put bytes were placed.  An operation
 * completes (complete callback, status 0) only when all its fragments are
 * cumulatively acknowledged.  A peer that stops answering is declared failed
 * after max_retries consecutive retransmit timeouts; every pending operation
 * to it then completes with EM_EPEERFAIL.
 *
 * Liveness watch (em_proto_watch()): a peer we only *wait* for (a posted
 * receive, a rendezvous answer) has nothing of ours in flight, so no
 * retransmit timer runs toward it.  While the layer above watches it and
 * it stays silent for live_idle_ns, probes go to it with the same back-off
 * as retransmissions, and it fails after max_retries unanswered ones:
 * docs/design.md "Peer failure".  Unwatched peers are never probed.
 */
#ifndef EM_PROTO_PROTO_H
#define EM_PROTO_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/wire.h"

/** Largest window (packets in flight per peer).  The SACK bitmap on the
 *  wire reports the EM_SACK_BITS frames after the cumulative ACK; a window
 *  may reach further (64 frames are only 94 KB at MTU 1500):
 *  frames beyond the bitmap are held by the receiver all the same and
 *  become visible to the sender as the cumulative ACK moves up
 *  (docs/design.md "Sequence numbers and the window"). */
#define EM_WINDOW_MAX 256u
/** Frames after the cumulative ACK that one SACK bitmap describes. */
#define EM_SACK_BITS 64u

/** Error values (returned negated, like errno). */
enum em_err {
    EM_OK = 0,
    EM_EINVAL = 1,     /**< bad argument (peer id out of range, message too long) */
    EM_EPEERFAIL = 2,  /**< the peer was declared failed; nothing more goes to it */
    EM_ENOMEM = 3,     /**< out of memory */
    EM_EAGAIN = 4,     /**< transient: no room now, try again */
    EM_ECANCELED = 5,  /**< the protocol was destroyed with the operation pending */
    EM_EACCES = 6,     /**< remote access error: the peer refused a put (region, key or
                            bounds), like IBV_WC_REM_ACCESS_ERR */
    EM_EADDRINUSE = 7, /**< a link's address is taken: another socket receives on the
                            UDP port asked for (em_udp_cfg_t::reason) */
};

/** em_proto_rx_from() source values that name no peer. */
#define EM_SRC_UNKNOWN 0xFFFFFFFFu /**< the link knows no peer at the frame's source address */
/** em_proto_peer_index() of a peer number out of range. */
#define EM_PEER_INDEX_NONE 0xFFFFFFFFu
/** cfg.self of a table of peers only (first contact, engine/contact.h): our
 *  own number lies above every entry the table can ever have, so every
 *  entry is a peer and em_proto_grow() never meets it.  Below 2^24, as
 *  every index a member of a shared link writes (link/link_mux.h). */
#define EM_PROTO_SELF_OUTSIDE 0x00FFFFFEu

/** Loss-recovery modes. */
typedef enum em_recovery {
    EM_RECOVERY_SR = 0,  /**< selective repeat + SACK bitmap (default) */
    EM_RECOVERY_GBN = 1, /**< Go-Back-N with timer + NACK (seed 001 baseline) */
} em_recovery_t;

/** Congestion control modes (src/proto/cc.h; docs/design.md "Congestion control"). */
typedef enum em_cc_mode {
    EM_CC_OFF = 0,   /**< fixed window of cfg.window frames, no pacing (as before cc) */
    EM_CC_LOSS = 1,  /**< AIMD on loss only: halve once per window of loss, +1 frame per RTT */
    EM_CC_DELAY = 2, /**< loss (proportional, once per window) + RTT target, paced (default) */
} em_cc_mode_t;

/** The mode named @p name as the components' cc parameter spells it:
 *  "loss" (also NULL), "delay" or "off".
 *  @return an em_cc_mode_t, or -1 for any other name. */
int em_cc_mode_parse(const char *name);

/** Configuration of one protocol instance (one endpoint talking to many peers). */
typedef struct em_proto_cfg {
    /** The key of every pair until em_proto_set_peer() gives the pair's own
     *  (tests use one key for all): frames from a peer that carry another
     *  key than the pair's are dropped (drop_job_key). */
    uint64_t job_key;
    uint32_t self;          /**< this endpoint's id: below npeers, or EM_PROTO_SELF_OUTSIDE */
    uint32_t npeers;        /**< endpoint ids are 0 .. npeers-1 (self included when below) */
    uint32_t frame_max;     /**< max bytes per frame, headers included (the link's payload size) */
    uint16_t window;        /**< packets in flight per peer, 1 .. EM_WINDOW_MAX */
    em_recovery_t recovery; /**< loss recovery mode */
    uint64_t rto_ns;        /**< retransmit timeout before the first RTT sample */
    uint64_t rto_min_ns;    /**< floor of the adaptive timeout (srtt + 4 rttvar) */
    uint64_t rto_max_ns;    /**< cap of the adaptive timeout and of the back-off */
    uint32_t max_retries;   /**< consecutive timeouts without progress before peer failure */
    /** A streak of retransmit timeouts toward a peer silent since it began
     *  resends data only once it has lasted this long (from its first
     *  timeout); probes go from the first timeout, and a peer heard from
     *  meanwhile gets data from the third.  A receiver process that is
     *  descheduled cannot acknowledge, and on shared cores that lasts
     *  milliseconds (docs/design.md "Retransmit timer": measured scheduling
     *  gaps).  0 = from the third timeout.  Not used with link_acks. */
    uint64_t resend_after_ns;
    uint64_t ack_delay_ns; /**< delay of a standalone ACK when there is no reverse data */
    uint32_t isn;          /**< initial sequence number of every peer (both directions)
                                 until em_proto_set_peer() gives the pair's own */
    /** 1: peers are unknown until em_proto_set_peer() (the BTL: keys and ISNs
     *  come from the modex); a frame from an unknown peer asks ops.resolve
     *  first and is dropped (drop_source) if the peer stays unknown. */
    uint8_t peers_need_set;
    /** 1: em_proto_rx_from()'s source must be the header's source peer
     *  (the link's address binding); otherwise drop_source. */
    uint8_t bind_source;
    /** Longest message (all fragments) accepted from a peer; larger ones are
     *  dropped unacknowledged (drop_budget).  0 = em_proto_max_msg().  Puts
     *  are placed frame by frame and are not limited by it. */
    uint32_t max_msg;
    /** Bytes of receive buffers (reassembly + out-of-order slots) over all
     *  peers; a frame that would need more is dropped unacknowledged
     *  (drop_budget) and comes again.  0 = unlimited. */
    uint64_t rx_mem_max;
    /* congestion control (src/proto/cc.h) */
    em_cc_mode_t cc;       /**< EM_CC_OFF, EM_CC_LOSS or EM_CC_DELAY */
    uint64_t cc_target_ns; /**< EM_CC_DELAY: queueing delay allowed above the lowest RTT seen */
    uint64_t
        cc_fs_range_ns; /**< EM_CC_DELAY: extra target at a window of one frame (flow scaling) */
    uint16_t cc_init_frames; /**< initial cwnd in full frames, 1 .. window */
    uint16_t
        cc_pace_burst; /**< frames that may leave back to back before pacing spaces them (>= 1) */
    uint16_t cc_pace_gain_pct; /**< pacing rate = gain% x cwnd / srtt (>= 100; 0 = no pacing) */
    /** pacing: a frame due within this many ns goes now instead of being
     *  held (the sender then runs at most this far ahead of the pacing
     *  clock); 0 = hold to the ns.  cc.h, em_cc_can_send(). */
    uint32_t cc_pace_slack_ns;
    uint16_t cc_beta_pct;   /**< EM_CC_DELAY: decrease per unit of relative excess delay, % */
    uint16_t cc_max_md_pct; /**< largest single decrease of cwnd, % (1 .. 90) */
    uint16_t
        cc_loss_gain_pct; /**< EM_CC_DELAY: decrease per unit of loss fraction in an episode, % */
    uint16_t cc_loss_qdelay_pct; /**< EM_CC_DELAY: a loss counts as congestion only when the last
                                      round's queueing reached this % of the allowance (0: always) */
    uint8_t cc_adapt_target; /**< EM_CC_DELAY: halve the queueing allowance on each loss decrease
                                    (for buffers shallower than the target; costs bandwidth
                                    under random loss: docs/design.md) */
    /** The link acknowledges in-order frames for us once they are in our
     *  receive ring (emd's eager ACKs).  Such a frame can never come again,
     *  so one that passed the stateless checks (key, endpoints, sizes) but
     *  cannot be consumed (its ACK field beyond what we sent, no memory for
     *  its reassembly) fails the peer, visibly, instead of being dropped:
     *  a silent drop would hang the flow for good. */
    bool link_acks;
    /** Liveness watch (em_proto_watch()): a watched peer silent this long
     *  is probed, then backed off like a retransmit timer from its RTO and
     *  failed after max_retries unanswered probes.  Equal to rto_max_ns
     *  (the default) the bound is a sender's (docs/design.md "Peer
     *  failure").  0 = never probe (watches are only counted).  Not used
     *  with link_acks (the link answers for the peer there). */
    uint64_t live_idle_ns;
    /** A peer with nothing queued, unacknowledged, held out of order or half
     *  reassembled for this long gives its active part back (send ring,
     *  receive and congestion state: em_proto_peer_bytes_active()); the
     *  next send or frame that needs it takes it again, with a fresh
     *  congestion window (as TCP restarts after idle) and the RTT estimate
     *  it had.  em_proto_poll() looks every peer_idle_ns / 4.  0 = never
     *  (an active part, once taken, stays until em_proto_reset_peer()). */
    uint64_t peer_idle_ns;
} em_proto_cfg_t;

/** Where one peer's flows stand (what a link that acknowledges for us must know). */
typedef struct em_proto_flow {
    uint64_t rx_key;    /**< key of the frames the peer sends us */
    uint64_t tx_key;    /**< key of the frames we send the peer */
    uint32_t rcv_nxt;   /**< next sequence number expected from the peer */
    uint32_t snd_nxt;   /**< our next sequence number toward the peer */
    uint32_t frame_max; /**< our largest frame, headers included */
    uint32_t self, peer;
    uint32_t remote_index; /**< what the peer calls us: our frames (and ACKs for us) carry it */
} em_proto_flow_t;

/** Fill @p cfg with the defaults (see docs/design.md for how they were chosen). */
void em_proto_cfg_default(em_proto_cfg_t *cfg);

/**
 * A window in bytes, as frames: about @p kib KiB in flight at frames of
 * @p frame_max bytes, never under 64 frames nor over EM_WINDOW_MAX (64
 * frames are 94 KB at MTU 1500, which bounded a peer's bandwidth there,
 * and 576 KB at 9000: docs/design.md "link_udp").  @p frame_max 0: 64.
 * What the rudp BTL's and the provider's window 0 mean.
 */
uint16_t em_proto_window_for(uint32_t kib, uint32_t frame_max);

/** Target of a put, as carried in the put extension header. */
typedef struct em_put_target {
    uint32_t region; /**< receiver's region id */
    uint64_t key;    /**< the region's key */
    uint64_t offset; /**< byte offset in the region */
} em_put_target_t;

/** Callbacks.  @c uctx is em_proto_create()'s @p uctx. */
typedef struct em_proto_ops {
    /**
     * Put one frame on the wire to @p peer: @p hdr (@p hlen bytes) followed by
     * @p payload (@p plen bytes).  @p hdr is the wire header, followed in the
     * frames of an em_proto_sendv() head by those head bytes: the frame is
     * the concatenation, and only its total length is bounded (frame_max).
     * Both buffers are only valid during the call.
     * @return 0 when the frame was taken, -EM_EAGAIN when the link has no room
     *         (the protocol retries on a later call).
     */
    int (*emit)(void *uctx, uint32_t peer, const void *hdr, size_t hlen, const void *payload,
                size_t plen);
    /**
     * A whole message from @p peer, in order.  @p data is valid only during
     * the call; for single-frame messages it points into the received frame
     * (no copy was made).
     */
    void (*recv)(void *uctx, uint32_t peer, uint8_t tag, const void *data, size_t len);
    /**
     * Place @p len bytes from @p peer at @p t.  Return 0 when placed; a
     * negative value rejects them (bad region, key or bounds): the frame is
     * still consumed (acknowledged) and counted as rejected.
     * Optional: when NULL every put is rejected.
     */
    int (*put)(void *uctx, uint32_t peer, const em_put_target_t *t, const void *data, size_t len);
    /** An operation finished: @p status is 0 or -EM_EPEERFAIL / -EM_ECANCELED,
     *  or -EM_EACCES for a put the peer refused (see EM_F_REMERR). */
    void (*complete)(void *uctx, void *op_ctx, int status);
    /** @p peer was declared failed (called once, after its operations completed). Optional. */
    void (*peer_failed)(void *uctx, uint32_t peer);
    /**
     * The frame being received claims to come from @p peer, but @p peer is
     * not set yet (cfg.peers_need_set) or the frame's source address is not
     * @p peer's.  The caller may set the peer now (em_proto_set_peer(),
     * em_proto_set_peer_index(), and the link's address) and return where
     * the frame's source address belongs now (a peer index or
     * EM_SRC_UNKNOWN).  Runs inside em_proto_rx_from(); may call those two
     * only.  @p peer is the frame's index field (wire.h): our own number
     * of the peer that claims to have sent it.  Optional:
     * when NULL the frame is judged as it came.
     */
    uint32_t (*resolve)(void *uctx, uint32_t peer);
    /**
     * Optional: place a message of several frames where its owner wants it.
     * Called when the first frame of a message of @p msg_len bytes from
     * @p peer is consumed; @p head is its first @p head_len bytes.  The
     * owner may return a buffer of at least @p msg_len - *@p skip bytes:
     * the message's bytes from offset *@p skip on are then copied there as
     * their frames arrive (no reassembly buffer, no copy at the end), and
     * the first *@p skip bytes (at most @p head_len; the owner's own header,
     * read from @p head) are not copied at all.  Such a message ends with
     * place_end(@p ctx = *@p ctx, status 0) instead of recv, or, when it is
     * cut short (a malformed frame, the peer failed, the protocol
     * destroyed), with place_end(status -EM_ECANCELED) and part of it in
     * the buffer.  NULL: it is reassembled and delivered by recv as without
     * this callback.  Both run inside receive processing: they must not
     * call into the protocol (no send), and rcv_nxt has not passed the
     * first frame when place runs.  Needs place_end.
     */
    void *(*place)(void *uctx, uint32_t peer, uint8_t tag, const void *head, size_t head_len,
                   size_t msg_len, size_t *skip, void **ctx);
    void (*place_end)(void *uctx, uint32_t peer, void *ctx, int status);
} em_proto_ops_t;

/**
 * A send or put operation.  The caller owns the memory (e.g. embedded in its
 * own descriptor) and must keep it, and the data buffer, unchanged until the
 * complete callback.  All fields are private to the protocol.
 */
typedef struct em_proto_op {
    struct em_proto_op *next;
    const uint8_t *head; /* em_proto_sendv(): the message is head, then buf */
    const uint8_t *buf;
    void *ctx;
    uint32_t len;
    uint32_t msg_id;
    uint16_t frag_cnt;
    uint16_t frags_sent;
    uint16_t frags_acked;
    uint8_t type;
    uint8_t tag;
    uint8_t head_len;
    uint8_t ack_last; /* EM_SEND_ACK_LAST */
    em_put_target_t target;
} em_proto_op_t;

/** Longest head em_proto_sendv() takes (it is copied behind the wire header). */
#define EM_PROTO_HEAD_MAX 64

/** Counters of one protocol instance (all monotonic). */
typedef struct em_proto_stats {
    uint64_t tx_frames;        /**< frames emitted, of any type */
    uint64_t tx_data_frames;   /**< DATA and PUT frames, first transmissions */
    uint64_t tx_payload_bytes; /**< payload bytes of first transmissions */
    uint64_t tx_acks;          /**< standalone ACK frames */
    uint64_t tx_nacks;         /**< NACK frames */
    uint64_t tx_eagain;        /**< emits refused by the link */
    uint64_t retransmits;      /**< frames sent again (all causes) */
    uint64_t timeouts;         /**< retransmit timer expiries */
    uint64_t fast_retransmits; /**< retransmits triggered by SACK, NACK or a probe's answer */
    uint64_t probes;           /**< timeouts answered with a probe instead of a retransmission */
    uint64_t rtt_samples; /**< round-trip samples taken (Karn: never from retransmitted frames) */
    uint64_t rx_frames;   /**< frames accepted by the decoder and the checks */
    uint64_t rx_payload_bytes; /**< payload bytes delivered in order */
    uint64_t rx_acks;          /**< standalone ACK frames received */
    uint64_t rx_nacks;         /**< NACK frames received */
    uint64_t rx_sacks;         /**< frames whose SACK bitmap was non-empty */
    uint64_t rx_dups;          /**< duplicate sequenced frames (already delivered or buffered) */
    uint64_t spurious_retx;    /**< of rx_dups: frames flagged EM_F_RETX that we already had
                                    (the sender's retransmission was not needed) */
    uint64_t rx_ooo;           /**< out-of-order frames buffered (selective repeat) */
    uint64_t msgs_sent;        /**< send operations completed successfully */
    uint64_t msgs_recv;        /**< messages delivered */
    uint64_t msgs_placed;      /**< of msgs_recv: assembled in their owner's buffer (ops.place) */
    uint64_t puts_done;        /**< put operations completed successfully */
    uint64_t puts_placed;      /**< put frames placed by the receiver callback */
    uint64_t puts_rejected;    /**< put frames the receiver callback refused */
    uint64_t drop_short;       /**< frames shorter than their headers */
    uint64_t drop_magic;       /**< frames with a foreign magic byte */
    uint64_t drop_version;     /**< frames of another protocol version */
    uint64_t drop_malformed;   /**< inconsistent fields */
    uint64_t drop_job_key;     /**< frames of another job */
    uint64_t drop_endpoint;    /**< the frame's index (our number of its sender) is out of
                                    range or our own */
    uint64_t drop_window;      /**< sequence or ACK outside the window */
    uint64_t drop_gbn_ooo;     /**< out-of-order frames discarded (Go-Back-N) */
    uint64_t drop_peer_failed; /**< frames from a peer already declared failed */
    uint64_t drop_nomem;       /**< frames dropped for lack of memory (will be retransmitted) */
    uint64_t rx_copy_bytes;    /**< payload copied inside the protocol: reassembly of
                                    multi-frame messages (into the owner's buffer too),
                                    out-of-order frames kept */
    uint64_t peer_failures;    /**< peers declared failed */
    /* refusals of hostile or stray input (docs/design.md "Threat model") */
    uint64_t drop_source; /**< source address is not the claimed peer's, or the peer is unknown */
    uint64_t drop_budget; /**< over max_msg or rx_mem_max: dropped unacknowledged */
    uint64_t puts_failed; /**< put operations completed with -EM_EACCES (peer refused) */
    uint64_t cc_loss_decreases;  /**< cwnd decreases for loss (at most one per window of loss) */
    uint64_t cc_delay_decreases; /**< cwnd decreases for delay above the target */
    uint64_t cc_cwnd_blocked;    /**< new frames held back by the congestion window */
    uint64_t cc_paced;           /**< new frames held back by pacing */
    uint64_t fail_refused_acked; /**< link_acks: peers failed because an in-order frame the link
                                      had acknowledged could not be consumed */
    uint64_t live_probes;        /**< liveness probes sent to watched, silent peers */
    uint64_t live_failures;      /**< of peer_failures: watched peers that answered no probe */
    uint64_t fail_by_owner; /**< of peer_failures: given up by the owner (em_proto_fail_peer) */
    uint64_t peer_resets;   /**< peers the owner returned to their start (em_proto_reset_peer) */
    /* a peer's active part (proto.h "Memory") */
    uint64_t peer_acquires;       /**< active parts taken (first use, or again after idle) */
    uint64_t peer_releases;       /**< active parts given back (idle for peer_idle_ns, or failed) */
    uint64_t peer_acquire_failed; /**< active parts that could not be allocated */
    /** peers em_proto_poll() looked at: those that had something timed
     *  (the poll set), not the whole table (test proto_poll) */
    uint64_t poll_visits;
} em_proto_stats_t;

typedef struct em_proto em_proto_t;

/**
 * Create a protocol instance.
 * @return NULL with *@p err set to EM_EINVAL (bad configuration) or EM_ENOMEM.
 */
em_proto_t *em_proto_create(const em_proto_cfg_t *cfg, const em_proto_ops_t *ops, void *uctx,
                            int *err);

/** Destroy; pending operations complete with -EM_ECANCELED. */
void em_proto_destroy(em_proto_t *p);

/**
 * Send @p len bytes to @p peer as one message with @p tag.  Fragments go out
 * at once as far as the window allows, the rest from later calls.
 * @return 0 (queued; complete callback follows), -EM_EINVAL (bad peer or too
 *         long: see em_proto_max_msg()), -EM_EPEERFAIL (peer failed),
 *         -EM_ENOMEM (the peer was idle and no memory for its active part:
 *         nothing was queued; proto.h "Memory").
 */
int em_proto_send(em_proto_t *p, em_proto_op_t *op, uint32_t peer, uint8_t tag, const void *buf,
                  size_t len, void *ctx, uint64_t now);

/**
 * Send one message made of two pieces: @p head_len (at most
 * EM_PROTO_HEAD_MAX) bytes at @p head, then @p len bytes at @p buf.  On the
 * wire and at the receiver it is the same as em_proto_send() of the two
 * pieces copied together; the sender makes no such copy: the head is copied
 * behind the wire header of the frames it falls in, and the rest of every
 * frame is taken from @p buf where it lies.  This lets an MPI message leave
 * from the user's buffer behind a header the MPI built elsewhere.  Both
 * pieces stay valid and unchanged until the complete callback.
 * @p flags: 0 or EM_SEND_ACK_LAST.
 * @return as em_proto_send(); -EM_EINVAL also for a head that is too long
 *         or an unknown flag.
 */
int em_proto_sendv(em_proto_t *p, em_proto_op_t *op, uint32_t peer, uint8_t tag, const void *head,
                   size_t head_len, const void *buf, size_t len, unsigned flags, void *ctx,
                   uint64_t now);

/**
 * em_proto_sendv() flag: the message's last frame asks the receiver to
 * acknowledge at once (EM_F_ACKNOW), in the poll that delivers it, rather
 * than after ack_delay_ns or on its next frame back.  For a sender whose
 * application waits on this completion while the receiver, once it has the
 * message, may stop driving progress (libfabric's fi_send under manual
 * progress: fi_pingpong's last pong waited forever for a delayed ACK).  It
 * costs the receiver a standalone ACK per message.
 */
#define EM_SEND_ACK_LAST 1u

/**
 * The bytes of @p op's message after its head now live at @p buf (same
 * length, same content): every frame emitted from now on, retransmissions
 * included, reads them there, and the old buffer is the caller's again.
 * For a sender that must give its buffer back at return (libfabric's
 * inject): it sends from the caller's buffer, which puts the frames the
 * window allows on the wire with no copy of ours before them, and then
 * copies the message for later frames and resends while the receiver is
 * already at work, off the round trip's path.  Only valid when nothing
 * still reads the old buffer: the protocol reads it in its emit callback
 * only, and the caller's emit must not keep it (the engine's links take or
 * flatten every frame before em_engine_sendv() returns).
 */
static inline void em_proto_op_rebase(em_proto_op_t *op, const void *buf)
{
    op->buf = (const uint8_t *)buf;
}

/**
 * Write @p len bytes into @p peer's region described by @p t.  Completion means
 * every byte was placed (or rejected: see em_proto_stats_t::puts_rejected).
 * @return as em_proto_send().
 */
int em_proto_put(em_proto_t *p, em_proto_op_t *op, uint32_t peer, const em_put_target_t *t,
                 const void *buf, size_t len, void *ctx, uint64_t now);

/**
 * Set what the pair with @p peer uses: @p key is the pair's key (every
 * frame between the two carries it, both ways: docs/design.md "Threat
 * model"), @p tx_isn our first sequence number to it and @p rx_isn its
 * first to us.  Call before any traffic with @p peer; calling again with
 * the same values is a no-op.
 * @return 0, -EM_EINVAL (bad peer, or traffic already started).
 */
int em_proto_set_peer(em_proto_t *p, uint32_t peer, uint64_t key, uint32_t tx_isn, uint32_t rx_isn);

/**
 * Set what @p peer calls us: the index in its own peer table that it gave
 * us (wire v3, wire.h).  Every frame we send it carries @p remote_index,
 * and the peer finds us with it.  Until this call it is cfg.self, which is
 * right for tables numbered alike on both sides (both BTLs index peers by
 * job rank; the tests); every front end still sets it for every peer, so
 * none depends on that default.  Call before any traffic with @p peer;
 * calling again with the same value is a no-op.
 * @return 0, -EM_EINVAL (bad peer, or traffic already started).
 */
int em_proto_set_peer_index(em_proto_t *p, uint32_t peer, uint32_t remote_index);

/** What @p peer calls us (em_proto_set_peer_index()), or EM_PEER_INDEX_NONE
 *  for a peer number out of range. */
uint32_t em_proto_peer_index(const em_proto_t *p, uint32_t peer);

/** What the pair with @p peer uses (for a daemon that acknowledges on our
 *  behalf: its ACKs carry @p key and expect @p rx_isn first).
 *  @return 0, or -EM_EINVAL when @p peer is out of range or not set. */
int em_proto_peer_params(const em_proto_t *p, uint32_t peer, uint64_t *key, uint32_t *tx_isn,
                         uint32_t *rx_isn);

/** Process one received frame (its buffer must stay valid during the call);
 *  the source address is not judged (tests, tools). */
void em_proto_rx(em_proto_t *p, const void *frame, size_t len, uint64_t now);

/**
 * Process one frame that came from the peer @p src (where the link found
 * its source address; EM_SRC_UNKNOWN: nobody we know).  With
 * cfg.bind_source a frame whose header names another source is dropped
 * (drop_source).
 */
void em_proto_rx_from(em_proto_t *p, const void *frame, size_t len, uint32_t src, uint64_t now);

/**
 * The layer above expects traffic from @p peer (a receive posted for it
 * alone, a rendezvous waiting for its answer): watch its liveness.  Watches
 * are counted; each needs one em_proto_unwatch().  While at least one is
 * held and nothing of ours is in flight to the peer (the retransmit timer
 * covers that case), a peer silent for cfg.live_idle_ns is probed (a
 * standalone ACK flagged EM_F_ACKNOW, which it answers with its ACK state
 * on its next poll), the probes back off from its RTO to rto_max_ns, and
 * after max_retries unanswered probes it is declared failed as a sender
 * would declare it (every op completes with -EM_EPEERFAIL, peer_failed,
 * em_proto_fail_reason()).  Any frame accepted from the peer restarts the
 * idle time, so a peer that answers probes is never failed; one that does
 * not run its protocol (a process that computes without progress) answers
 * nothing and fails after the bound, as it would toward a sender.
 * May be called from callbacks.
 * @return 0, -EM_EINVAL (bad peer, or not set yet: em_proto_set_peer()),
 *         -EM_EPEERFAIL (the peer failed already: nothing will come).
 */
int em_proto_watch(em_proto_t *p, uint32_t peer, uint64_t now);

/**
 * Drop one watch of @p peer (the receive matched, completed or was
 * canceled).  A failed peer's watches are gone already: no-op.
 * May be called from callbacks.
 * @return 0, or -EM_EINVAL (bad peer, or no watch held).
 */
int em_proto_unwatch(em_proto_t *p, uint32_t peer);

/** Watches held on @p peer (0 for a bad id). */
uint32_t em_proto_watchers(const em_proto_t *p, uint32_t peer);

/** Bytes of receive buffers held now (reassembly + out-of-order slots). */
uint64_t em_proto_rx_mem(const em_proto_t *p);

/**
 * Run timers: retransmissions, delayed ACKs, back-off, peer failure; and
 * send what the window now allows.
 */
void em_proto_poll(em_proto_t *p, uint64_t now);

/**
 * Earliest time at which em_proto_poll() has timer work (UINT64_MAX: none):
 * retransmit and ACK timers, and the pacing time of a peer whose next new
 * frame waits for it (the caller must poll then, or that frame waits).
 */
uint64_t em_proto_next_deadline(const em_proto_t *p);

/** True when nothing is queued, in flight, or owed (ACKs) to any peer. */
bool em_proto_idle(const em_proto_t *p);

/**
 * Before a close: every active peer with frames not yet acknowledged gets
 * its retransmit timeout at @p now, so the next em_proto_poll() probes it
 * (and resends by the usual policy, send.c em_on_timeout) instead of
 * waiting out a backed-off RTO.  A process that closes right after a send
 * whose last frame was lost (an MPI inject, then MPI_Finalize) would
 * otherwise wait up to rto_max_ns for the repair, or leave without it.
 */
void em_proto_flush(em_proto_t *p, uint64_t now);

/**
 * The last thing a closing endpoint sends: a standalone ACK to every active
 * peer that has sent us anything, owed or not.  If our last ACK to a peer
 * was lost and the peer only resends after we are gone, this one still
 * tells it that its data arrived (else it waits, at its own close, for an
 * answer that cannot come).
 */
void em_proto_ack_heard(em_proto_t *p);

/** Messages to @p peer not yet completed (queued, or sent and not yet
 *  acknowledged); 0 for a failed peer (its messages completed with an error). */
uint32_t em_proto_pending(const em_proto_t *p, uint32_t peer);

/**
 * How long after a peer's frame that peer may still retransmit it to us if
 * our ACK is lost: twice the largest current (backed-off) retransmit
 * timeout among active peers, our own estimate of the peer's, capped at
 * EM_PROTO_HORIZON_MAX_NS.  A closing process stays this long after the
 * last frame it heard (em_engine_drain), so such a resend is answered.
 */
uint64_t em_proto_retx_horizon(const em_proto_t *p);
#define EM_PROTO_HORIZON_MAX_NS 100000000ull /* 100 ms: a close never waits longer for it */

/**
 * Frames em_proto_send() to @p peer would put on the wire at once: the
 * window's free room, or 0 when something already waits for room, the link
 * refused a frame, the peer failed, or its retransmit timer is due at
 * @p now (it needs an em_proto_poll() first).  Lets a caller that will not
 * drive the protocol soon (an inline send that returns at once) decline
 * to queue.
 */
uint32_t em_proto_tx_room(const em_proto_t *p, uint32_t peer, uint64_t now);

/** Largest message (or put) em_proto_send() accepts with this frame size. */
size_t em_proto_max_msg(const em_proto_t *p);

/** Bytes em_proto_create() allocates per peer for @p cfg (up front, for all
 *  cfg->npeers): what a job of n processes asks for is about n times this,
 *  per endpoint; em_proto_peer_bytes_idle(). */
size_t em_proto_peer_bytes(const em_proto_cfg_t *cfg);

/** Bytes an idle peer holds: its record (proto.h "Memory"). */
size_t em_proto_peer_bytes_idle(const em_proto_cfg_t *cfg);

/** Bytes an active peer holds on top of em_proto_peer_bytes_idle(): its
 *  active part with the send ring of cfg->window slots rounded up to a
 *  power of two.  Receive buffers (out-of-order slots, reassembly) come on
 *  top while frames are held and count in em_proto_rx_mem(). */
size_t em_proto_peer_bytes_active(const em_proto_cfg_t *cfg);

/** Peers that hold their active part now. */
uint32_t em_proto_active_peers(const em_proto_t *p);

/** True when @p peer holds its active part now. */
bool em_proto_peer_active(const em_proto_t *p, uint32_t peer);

/** Tests: the next @p n allocations of an active part fail as if out of
 *  memory (counted in peer_acquire_failed); 0 ends it. */
void em_proto_fail_act_alloc(em_proto_t *p, uint32_t n);

/** Payload bytes per DATA frame. */
size_t em_proto_data_payload(const em_proto_t *p);

/** Current retransmit timeout towards @p peer before back-off (ns). */
uint64_t em_proto_rto(const em_proto_t *p, uint32_t peer);

/** Congestion window towards @p peer, bytes (0 for a bad peer id). */
uint64_t em_proto_cwnd(const em_proto_t *p, uint32_t peer);

/** Smoothed round-trip time towards @p peer (ns; 0 before the first sample). */
uint64_t em_proto_srtt(const em_proto_t *p, uint32_t peer);

/** True when @p peer was declared failed. */
bool em_proto_peer_failed(const em_proto_t *p, uint32_t peer);
/**
 * The owner gives up on @p peer: it broke a rule of the layer above (@p why,
 * a static sentence that em_proto_fail_reason() returns).  As for a peer
 * that stopped answering: its operations complete with -EM_EPEERFAIL, its
 * frames are dropped from now on, and peer_failed is called.  Not from a
 * callback of this protocol (the peer's receive state is freed): an owner
 * that decides inside one defers the call.  @return 0 (also when the peer
 * had failed already) or -EM_EINVAL.
 */
int em_proto_fail_peer(em_proto_t *p, uint32_t peer, const char *why);

/**
 * The owner forgets @p peer (libfabric's fi_av_remove): every operation to
 * it completes with -EM_ECANCELED, a message from it cut short in its
 * owner's buffer ends with place_end(-EM_ECANCELED), its receive buffers,
 * watches, timers, RTT and congestion state go, a failure is forgotten,
 * and the peer is as em_proto_create() made it: unset when
 * cfg.peers_need_set (its frames go to ops.resolve and are dropped,
 * drop_source, until em_proto_set_peer() sets it again, with new or the
 * same parameters), else set with cfg's job key and ISN.  Only the
 * owner's call does this: no frame, whatever it says, resets a peer.
 * Not from a callback of this protocol (the peer's receive state is
 * freed).  Counted in peer_resets.  @return 0 or -EM_EINVAL (bad peer).
 */
int em_proto_reset_peer(em_proto_t *p, uint32_t peer);

/**
 * Make room for @p npeers peers (more than now): peers 0 .. npeers-1 are
 * numbered as before and keep every bit of their state (sequence numbers,
 * queued operations, keys, timers, their place in the poll set); the new
 * ones are as em_proto_create() makes a peer.  A table whose self is
 * EM_PROTO_SELF_OUTSIDE grows to at most that many entries.  Only between
 * calls of this protocol (never from a callback): the table moves.  The
 * caller grows by doubling (each call copies the table).  @return 0,
 * -EM_EINVAL (@p npeers not above the table's size, or past its limit) or
 * -EM_ENOMEM (the table is as it was).
 */
int em_proto_grow(em_proto_t *p, uint32_t npeers);
/** Entries in the peer table (cfg.npeers, as grown). */
uint32_t em_proto_npeers(const em_proto_t *p);

/**
 * First contact: @p peer's keys are on their way (a handshake), so
 * operations to it are taken and queued, and none leaves until
 * em_proto_set_peer() and em_proto_release_peer().  For a peer not set
 * yet.  A peer that fails meanwhile ends them with -EM_EPEERFAIL; a reset
 * with -EM_ECANCELED.  @return 0, -EM_EPEERFAIL or -EM_EINVAL.
 */
int em_proto_hold_peer(em_proto_t *p, uint32_t peer);
/** The held @p peer's keys are set: its queued operations start.
 *  @return 0 or -EM_EINVAL (not set). */
int em_proto_release_peer(em_proto_t *p, uint32_t peer, uint64_t now);

/** When a frame of @p peer's was last accepted (the caller's clock; 0: never,
 *  or since em_proto_reset_peer()). */
uint64_t em_proto_heard_at(const em_proto_t *p, uint32_t peer);

/** Why @p peer was declared failed (a sentence), or NULL when it was not. */
const char *em_proto_fail_reason(const em_proto_t *p, uint32_t peer);

/** Where @p peer's flows stand now.  @return 0, or -EM_EINVAL (bad peer). */
int em_proto_flow(const em_proto_t *p, uint32_t peer, em_proto_flow_t *out);

/** Counters. */
const em_proto_stats_t *em_proto_stats(const em_proto_t *p);

/**
 * The frame counters of @p s as the BTLs' print_stats and the provider's
 * close-time log both give them: "tx N frames (N data, N acks, N
 * retransmits, N timeouts, N probes, N fast_retransmits), rx N frames (N
 * dups, N out-of-order, N spurious_retx)".  tools/compare.py reads the
 * spurious_retx count from it.  Always NUL-terminated (truncated to
 * @p len).  @return what snprintf returns.
 */
int em_proto_stats_frames(const em_proto_stats_t *s, char *buf, size_t len);
/**
 * The refusals of hostile or stray frames in @p s as the same stats lines
 * give them, name-value pairs (docs/design.md "Threat model"; the attack
 * tests read them by name): "drop_source N drop_job_key N drop_budget N
 * drop_endpoint N drop_version N drop_short N drop_peer_failed N".  Always
 * NUL-terminated.  @return what snprintf returns.
 */
int em_proto_stats_refused(const em_proto_stats_t *s, char *buf, size_t len);

/** Human-readable name of an em_err value (positive or negated). */
const char *em_strerror(int err);

#endif
