/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file engine.h
 * An ethermpi endpoint: the protocol (src/proto) running over one link
 * (src/link), with the peer table, the progress function, memory
 * registration and put placement.  Both BTL components are thin glue over
 * this API.
 *
 * Threading: an engine is single-threaded and takes no lock: one thread at
 * a time calls it, and every callback happens on the thread inside the
 * call (progress, send, put, drain).  A front end whose callers have
 * several threads holds its own lock (engine/lock.h) around every call,
 * callbacks included (docs/design.md "Threads").  Callbacks may call
 * em_engine_send(), em_engine_put(), em_engine_get() and
 * em_engine_atomic(); em_engine_progress() called from a callback returns 0
 * at once (no recursion).
 *
 * RMA reads and remote atomics (em_engine_get, em_engine_atomic) are
 * request/answer messages on the engine's own tag EM_ENGINE_TAG_RMA, which
 * front ends must not use (docs/design.md "One-sided MPI").
 */
#ifndef EM_ENGINE_ENGINE_H
#define EM_ENGINE_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/atomic.h"
#include "engine/region.h"
#include "link/link.h"
#include "proto/proto.h"

struct em_conn_name; /* proto/conn.h */

typedef struct em_engine_ops {
    /** A message from @p peer; @p data is valid during the call only. */
    void (*recv)(void *uctx, uint32_t peer, uint8_t tag, const void *data, size_t len);
    /** A send or put finished: 0, -EM_EPEERFAIL, -EM_ECANCELED or -EM_EACCES
     *  (a put the peer refused). */
    void (*complete)(void *uctx, void *op_ctx, int status);
    /** @p peer was declared failed (optional). */
    void (*peer_failed)(void *uctx, uint32_t peer);
    /**
     * A frame claims to come from @p peer, which is not set (no keys) or
     * whose address is not the frame's source: set it now if it can be
     * (em_engine_set_peer() and em_engine_set_peer_keys(), e.g. from the
     * launcher's modex: Open MPI adds processes lazily).  Optional.
     */
    void (*resolve)(void *uctx, uint32_t peer);
    /* First contact (a peer that knows us while we know nothing of it, e.g.
     * the libfabric provider, which has no modex): during resolve,
     * em_engine_rx_frame() is the frame being judged, whose payload may
     * carry the peer's address, and em_engine_rx_source(), called after
     * em_engine_set_peer(), says whether the frame really came from that
     * address.  The engine only lends the frame; what the owner accepts,
     * and the budget for it, are the owner's rules. */
    /**
     * Optional.  The protocol has a frame (usually an ACK) for @p peer, whose
     * link address was never given with em_engine_set_peer(): a process
     * that only receives from a peer still owes it ACKs, and Open MPI tells
     * a BTL about a peer only when it first sends to it.  Look the address
     * up, give it with em_engine_set_peer() and return 0; or return
     * non-zero (no address known).  Asked once per peer: after a non-zero
     * answer frames to @p peer are dropped (counted in tx_no_addr) until
     * em_engine_set_peer() names it.  Without this callback such frames are
     * dropped and counted the same way.
     */
    int (*resolve_peer)(void *uctx, uint32_t peer);
    /**
     * Optional, both or neither: a message of several frames assembled in
     * the owner's buffer instead of delivered by recv (the protocol's
     * ops.place / ops.place_end, src/proto/proto.h, passed through: e.g.
     * the libfabric provider places an eager message straight into the
     * receive it matches).  Same rules: no engine call from inside them.
     */
    void *(*place)(void *uctx, uint32_t peer, uint8_t tag, const void *head, size_t head_len,
                   size_t msg_len, size_t *skip, void **ctx);
    void (*place_end)(void *uctx, uint32_t peer, void *ctx, int status);
    /**
     * Optional, first contact (engine/contact.h): @p peer's handshake
     * completed (one the owner inserted, or a stranger when strangers are
     * taken; em_engine_contact_name() names it), so operations may go to it.
     * @p again: it had completed before and the peer bound us anew (it
     * removed us and came back); our operations to it from before ended
     * with -EM_ECANCELED.
     */
    void (*contact)(void *uctx, uint32_t peer, bool again);
    /**
     * Optional, first contact with strangers taken: may the stranger named
     * @p name (its proven link address, endpoint index and nonce) bind?
     * proto/conn.h em_conn_ops_t::admit, passed through: no engine call
     * from inside it.  NULL: every stranger may.
     */
    bool (*admit)(void *uctx, const struct em_conn_name *name);
    /**
     * Optional, first contact: the engine's peer table grows to @p npeers
     * entries (engine/contact.h "Sizing"): a peer inserted, or a stranger
     * admitted, needs a number at or above the old size.  The owner makes
     * its own per-peer tables that large before returning; no number at or
     * above the old size reaches it before.  Runs inside
     * em_engine_contact_insert() or em_engine_progress() (a stranger's
     * handshake), outside every protocol call; no engine call from inside
     * it.  @return 0, or nonzero when out of memory: the engine keeps its
     * size and refuses the peer.  NULL: the table stays as created (the
     * BTLs size it to the job).
     */
    int (*grow)(void *uctx, uint32_t npeers);
} em_engine_ops_t;

typedef struct em_engine_stats {
    uint64_t progress_calls;
    uint64_t rx_frames;       /**< frames taken from the link */
    uint64_t tx_frames;       /**< frames the link accepted */
    uint64_t tx_backpressure; /**< times the link had no room (the protocol retries) */
    uint64_t tx_no_addr;     /**< frames dropped: the peer has no link address (see resolve_peer) */
    uint64_t peers_resolved; /**< peers whose address resolve_peer supplied */
    uint64_t puts_placed;    /**< put frames written into a region */
    uint64_t put_bad_region; /**< put frames naming no registered region */
    uint64_t put_bad_key;    /**< put frames with the wrong key */
    uint64_t put_out_of_bounds; /**< put frames outside their region */
    uint64_t put_no_access;     /**< put frames into a region peers may not write */
    uint64_t region_refused;    /**< em_engine_region_at() refusals (id, key, bounds or access) */
    /* Where payload bytes are copied by ethermpi's own code (docs/design.md
     * "Copies per byte"); the PMD's or kernel's copies are not counted. */
    uint64_t tx_copy_bytes;   /**< payload copied into a link frame */
    uint64_t tx_gather_bytes; /**< payload the link sent from the op's own buffer (no copy here) */
    uint64_t
        put_bytes; /**< put payload copied from the frame into its region (the one placement copy) */
    uint64_t recv_bytes; /**< message bytes handed to the receiver in place (the consumer copies) */
    /* RMA reads and atomics (em_engine_get, em_engine_atomic) */
    uint64_t rma_gets_served;     /**< get requests answered with data (target) */
    uint64_t rma_atomics_applied; /**< atomic requests applied (target) */
    uint64_t rma_refused;   /**< requests refused: region, key, bounds, access, alignment, or a get
                               longer than one answer carries (em_engine_get_max) */
    uint64_t rma_bad_msg;   /**< messages on the RMA tag the decoder refused */
    uint64_t rma_stale_rsp; /**< answers naming no outstanding request of that peer */
    uint64_t rma_no_mem;    /**< requests answered -EM_ENOMEM (no buffer for the answer) */
    /* first contact (engine/contact.h; the table's own counters: em_engine_contact_stats) */
    uint64_t hs_bad_source; /**< handshake frames whose link source is not the reply
                                 address they name (dropped before the table reads them) */
    uint64_t hs_tx_failed;  /**< handshake frames the link did not take (the handshake retries) */
    uint64_t hs_early;      /**< data frames from a peer that bound us before our handshake with
                                 it was done (dropped, drop_source; its frames come again) */
    uint64_t hs_no_memory;  /**< strangers forgotten again: no memory to grow the peer table
                                 (their handshake completed; their data is refused) */
} em_engine_stats_t;

typedef struct em_engine em_engine_t;

/**
 * Create an engine over @p link (which it does not own).  @p cfg's
 * frame_max is lowered to the link's MTU if larger.
 * @return NULL with *@p err = EM_EINVAL or EM_ENOMEM.
 */
em_engine_t *em_engine_create(em_link_t *link, const em_proto_cfg_t *cfg,
                              const em_engine_ops_t *ops, void *uctx, int *err);
/** Destroy; pending operations complete with -EM_ECANCELED. */
void em_engine_destroy(em_engine_t *e);

/** Where peer @p peer is reached on the link (may be called again, also from
 *  the resolve_peer callback).  @return 0 or a negative errno.  On a link
 *  that acknowledges for us (EM_LINK_F_ACKS) this also tells it where the
 *  peer's flows stand (em_engine_sync_flow). */
int em_engine_set_peer(em_engine_t *e, uint32_t peer, const em_link_addr_t *addr);
/**
 * Tell the link where @p peer's flows stand now (keys, next sequence numbers
 * both ways, frame size), so that it may acknowledge the peer's in-order
 * frames for us.  Call it again after changing the protocol's state for the
 * peer (e.g. its initial sequence number or key): a link that believed an
 * older state would acknowledge the wrong frames.  No-op on other links.
 * @return 0, or a negative value (the link will not acknowledge for it).
 */
int em_engine_sync_flow(em_engine_t *e, uint32_t peer);

/** The pair's key and ISNs (em_proto_set_peer()): @p tx_isn ours, @p rx_isn
 *  the peer's; the link hears of them too (em_link_ops::set_flow).
 *  @return 0 or -EM_EINVAL. */
int em_engine_set_peer_keys(em_engine_t *e, uint32_t peer, uint64_t key, uint32_t tx_isn,
                            uint32_t rx_isn);

/** What @p peer calls us, the index in its own table that every frame to
 *  it carries (em_proto_set_peer_index(), wire v3); the link hears of it
 *  too (em_link_ops::set_flow).  Before traffic with the peer.
 *  @return 0 or -EM_EINVAL. */
int em_engine_set_peer_index(em_engine_t *e, uint32_t peer, uint32_t remote_index);

/** What the pair with @p peer uses (em_proto_peer_params()): for a daemon
 *  that acknowledges on this endpoint's behalf (emd's FLOW: rx_key = tx_key
 *  = @p key, rx_next = @p rx_isn, tx_next = @p tx_isn at the start).
 *  @return 0 or -EM_EINVAL. */
int em_engine_peer_params(const em_engine_t *e, uint32_t peer, uint64_t *key, uint32_t *tx_isn,
                          uint32_t *rx_isn);

/** Receive a burst, run the protocol's timers, push out queued frames.
 *  @return frames received + operations completed (0: nothing happened). */
int em_engine_progress(em_engine_t *e);

/** Send a message (see em_proto_send()); @p op and @p buf stay valid until completion.
 *  @p tag 0 .. 254 (EM_ENGINE_TAG_RMA is the engine's own: -EM_EINVAL). */
int em_engine_send(em_engine_t *e, em_proto_op_t *op, uint32_t peer, uint8_t tag, const void *buf,
                   size_t len, void *ctx);
/** Send @p head, then @p buf, as one message; @p flags 0 or EM_SEND_ACK_LAST
 *  (see em_proto_sendv()). */
int em_engine_sendv(em_engine_t *e, em_proto_op_t *op, uint32_t peer, uint8_t tag, const void *head,
                    size_t head_len, const void *buf, size_t len, unsigned flags, void *ctx);
/** Write @p len bytes at @p offset of the peer's region @p h. */
int em_engine_put(em_engine_t *e, em_proto_op_t *op, uint32_t peer, const em_region_handle_t *h,
                  uint64_t offset, const void *buf, size_t len, void *ctx);

/**
 * The engine's own message tag: RMA read and atomic requests and their
 * answers (rma.c) travel as messages with this tag, and the engine never
 * hands them to ops.recv or ops.place.  Front ends cannot send with it
 * (em_engine_send() and em_engine_sendv() refuse it with -EM_EINVAL, so a
 * misuse is an error at the sender, never a message lost at the receiver):
 * owners have the tags 0 .. 254.  Open MPI's BTL tags stay below MCA_BTL_TAG_MAX (255), the libfabric
 * provider's are its emo_type values (1 .. 7, prov/emo_wire.h).
 */
#define EM_ENGINE_TAG_RMA 0xFFu
/** Requests (gets and atomics) one engine has outstanding at a time. */
#define EM_ENGINE_RMA_BUDGET 256u
/** Longest em_engine_get(): the target copies the bytes into its answer
 *  (a region may be deregistered while the answer is resent). */
#define EM_ENGINE_GET_MAX (4u << 20)

/**
 * RMA read: copy @p len bytes at @p offset of @p peer's region @p remote
 * into @p buf.  The target checks the region as a put is checked, with
 * read access (EM_REGION_READ).  ops.complete(@p ctx, status) follows,
 * with @p buf written before it when status is 0: 0, -EM_EACCES (refused:
 * id, key, bounds or access), -EM_EPEERFAIL, -EM_ECANCELED (engine
 * destroyed), -EM_EINVAL (the target did not understand it).  @p op, like
 * a send's, and @p buf stay the caller's until then.  Exactly once: the
 * request is a message of the protocol.
 * @return 0; -EM_EINVAL (len above em_engine_get_max()); -EM_EAGAIN
 * (EM_ENGINE_RMA_BUDGET requests outstanding: complete some, retry);
 * -EM_EPEERFAIL; -EM_ENOMEM.  No completion follows an error return.
 */
int em_engine_get(em_engine_t *e, em_proto_op_t *op, uint32_t peer,
                  const em_region_handle_t *remote, uint64_t offset, void *buf, size_t len,
                  void *ctx);
/** Longest get: EM_ENGINE_GET_MAX, or less when the engine accepts shorter
 *  messages (cfg.max_msg, minus the answer's 8-byte header). */
size_t em_engine_get_max(const em_engine_t *e);
/**
 * Remote atomic: apply @p d (atomic.h: op, type, count elements, operands
 * and compare values, which are read during this call only) at @p offset
 * of @p peer's region @p remote, each element with a CPU atomic at the
 * target.  @p result (count elements, or NULL) receives the values before
 * the operation: a fetching atomic.  The target checks region, key and
 * bounds as for a put, natural alignment of the target address, and
 * access: EM_REGION_WRITE for every op but READ, EM_REGION_READ for READ
 * and for any fetching op (a refusal answers -EM_EACCES and applies
 * nothing).  ops.complete(@p ctx, status) follows when the target has
 * applied it (remote completion, fetching or not), @p result written
 * before; statuses as em_engine_get().  Applied exactly once however the
 * link loses, duplicates or reorders frames.
 * @return 0, -EM_EINVAL (op/type/count invalid), -EM_EAGAIN (budget
 * full), -EM_EPEERFAIL or -EM_ENOMEM; no completion follows an error.
 */
int em_engine_atomic(em_engine_t *e, em_proto_op_t *op, uint32_t peer,
                     const em_region_handle_t *remote, uint64_t offset, const em_atomic_desc_t *d,
                     void *result, void *ctx);

/**
 * Would em_engine_send() of @p len bytes to @p peer leave at once, with no
 * timer of that peer overdue?  A caller that returns to its application
 * without driving em_engine_progress() (an inline send) should send only
 * then: a message queued behind a full window, or behind a lost frame,
 * moves only when someone calls progress (docs/design.md "Peers known only
 * by their frames").
 */
bool em_engine_send_ready(const em_engine_t *e, uint32_t peer, size_t len);

/** The owner waits for traffic from @p peer: watch its liveness
 *  (em_proto_watch(); one em_engine_unwatch() per call).
 *  @return 0, -EM_EINVAL or -EM_EPEERFAIL. */
int em_engine_watch(em_engine_t *e, uint32_t peer);
/** Drop one watch (em_proto_unwatch()).  @return 0 or -EM_EINVAL. */
int em_engine_unwatch(em_engine_t *e, uint32_t peer);
/** The clock (em_now_ns()) as the last em_engine_progress() read it; 0
 *  before the first.  For callers that need a recent time, not an exact one. */
uint64_t em_engine_now(const em_engine_t *e);

/** Register [base, base+len) for puts from peers. @return 0, -EM_ENOMEM or
 *  -EM_EAGAIN (getrandom failed: no region key). */
int em_engine_register(em_engine_t *e, void *base, size_t len, em_region_handle_t *out);
/** em_engine_register() with em_regions_add_ex() @p flags (what peers may
 *  do: EM_REGION_WRITE, EM_REGION_READ; EM_REGION_KEY48). */
int em_engine_register_ex(em_engine_t *e, void *base, size_t len, unsigned flags,
                          em_region_handle_t *out);
/** @return 0 or -EM_EINVAL. */
int em_engine_deregister(em_engine_t *e, const em_region_handle_t *h);
/**
 * Use the owner's region table @p r instead of the engine's own, from now
 * on (before any registration): engines that share one table accept puts
 * into each other's regions, as a libfabric domain's registrations serve
 * all its endpoints (prov/emo_rma.c).  @p r outlives the engine, and the
 * engines sharing it are driven by one thread at a time (the domain's
 * lock, or the caller's FI_THREAD_DOMAIN promise).
 * @return 0, or -EM_EINVAL when the engine has registrations already.
 */
int em_engine_use_regions(em_engine_t *e, em_regions_t *r);
/**
 * The owner acts on a peer's behalf on its region (@p id, @p key): an RMA
 * read it answers with puts (@p access EM_REGION_READ), or an RMA write
 * or read of its own regions (to itself).  Checked as a put frame is, and
 * the region must allow @p access.
 * @return 0 with *@p at set to the first byte, or -EM_EACCES (counted in
 * region_refused).
 */
int em_engine_region_at(em_engine_t *e, uint32_t id, uint64_t key, uint64_t offset, size_t len,
                        unsigned access, uint8_t **at);

/** True when nothing is queued, in flight or owed. */
bool em_engine_idle(const em_engine_t *e);
/**
 * When em_engine_progress() next has timer work (em_proto_next_deadline():
 * retransmissions, delayed ACKs, pacing, liveness), on em_now_ns()'s clock;
 * 0 when frames wait in the engine for the link (progress is due now);
 * UINT64_MAX when nothing is timed.  For an owner that sleeps between
 * progress calls: it must call progress again by then.
 */
uint64_t em_engine_next_deadline(const em_engine_t *e);

/**
 * Before em_engine_destroy(): let what was sent arrive, and answer what
 * peers still resend.  Probes at once every peer with frames in flight
 * (em_proto_flush), then progresses until nothing is queued, in flight or
 * owed and no frame has come for em_proto_retx_horizon() (a peer resending
 * data whose ACK we lost gets the ACK again), or until @p bound_ns passed;
 * last, our ACK state to every peer we heard from (em_proto_ack_heard),
 * for a peer that resends only after we are gone.
 * @p bound_ns 0: one progress call, then the ACKs (nothing is waited for).
 * Sleeps 50 us between progress calls that found nothing to do (a close
 * must not take the core from the peer it waits for).  Callbacks run as in
 * em_engine_progress().
 * @return messages still not acknowledged (0: everything sent arrived, or
 * its peer failed); em_engine_pending() says to whom.
 */
size_t em_engine_drain(em_engine_t *e, uint64_t bound_ns);
/** Messages to @p peer not yet acknowledged (em_proto_pending()). */
uint32_t em_engine_pending(const em_engine_t *e, uint32_t peer);
/** Entries in the peer table (as created; grown by first contact, ops.grow). */
uint32_t em_engine_npeers(const em_engine_t *e);
size_t em_engine_max_msg(const em_engine_t *e);
/** Bytes em_engine_create() allocates per peer for @p cfg, up front for
 *  every peer: what an idle peer costs (the protocol's record,
 *  em_proto_peer_bytes_idle, and the engine's own). */
size_t em_engine_peer_bytes(const em_proto_cfg_t *cfg);
/** Bytes a peer holds on top of em_engine_peer_bytes() while it is active
 *  (em_proto_peer_bytes_active: the protocol's active part and send ring;
 *  the engine keeps nothing more per peer). */
size_t em_engine_peer_bytes_active(const em_proto_cfg_t *cfg);
/** Payload of one DATA frame: a message up to this size travels in one frame. */
size_t em_engine_frame_payload(const em_engine_t *e);
const em_engine_stats_t *em_engine_stats(const em_engine_t *e);
const em_proto_stats_t *em_engine_proto_stats(const em_engine_t *e);
/** Bytes of receive buffers the protocol holds (em_proto_rx_mem()). */
uint64_t em_engine_rx_mem(const em_engine_t *e);
em_link_t *em_engine_link(em_engine_t *e);
/** Give up on @p peer (em_proto_fail_peer(): @p why, a static sentence);
 *  not from an engine callback.  @return 0 or -EM_EINVAL. */
int em_engine_fail_peer(em_engine_t *e, uint32_t peer, const char *why);
/**
 * Forget @p peer (em_proto_reset_peer(): the owner removed it, e.g.
 * libfabric's fi_av_remove): its sends, puts, gets and atomics complete
 * with -EM_ECANCELED, a message from it placed in the owner's buffer ends
 * with place_end(-EM_ECANCELED), and the peer is unset (with
 * cfg.peers_need_set) with no link address: frames from it go to ops.resolve
 * until em_engine_set_peer() and em_engine_set_peer_keys() set it again.
 * Messages it already delivered are the owner's.  Only this call resets a
 * peer; no frame does.  Not from an engine callback.  The completions run
 * inside this call; a send to @p peer from one of them is refused
 * (-EM_EINVAL: unset).  On a link that acknowledges for us (emd) the link
 * hears of the peer's flows again when it is set again.
 * @return 0 or -EM_EINVAL (bad peer, ourselves, or from a callback).
 */
int em_engine_reset_peer(em_engine_t *e, uint32_t peer);
/** Why @p peer was declared failed (a sentence), or NULL (see em_proto_fail_reason). */
const char *em_engine_fail_reason(const em_engine_t *e, uint32_t peer);

/**
 * Inside ops.resolve only: the frame being judged, as the link delivered it
 * (protocol header first; read-only, valid until resolve returns), with
 * its length in *@p len.  NULL outside resolve.
 */
const void *em_engine_rx_frame(const em_engine_t *e, size_t *len);
/**
 * Inside ops.resolve only: the peer whose link address (em_engine_set_peer)
 * is the source address of the frame being judged, as the link's rx_peer
 * says; EM_SRC_UNKNOWN outside resolve or on a link that cannot tell.
 */
uint32_t em_engine_rx_source(em_engine_t *e);

/** Monotonic clock in nanoseconds (the engine's time base; util/clock.h em_clock_ns). */
uint64_t em_now_ns(void);

#endif
