/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file order.h
 * One message order per peer over several links.
 *
 * Each link has its own engine, with its own sequence space, so the
 * messages to one peer leave in the sender's order but may arrive in
 * another when they travel on different links.  This module restores the
 * sender's order.  Used by the BTL glue (ompi/btl/common/em_btl.c) because
 * Open MPI 4.1's convertor overflows on out-of-order fragments of
 * non-contiguous messages (docs/design.md, "Several links: one order").
 *
 * Wire: the message starts with a 4-byte big-endian order number, counted
 * per (sender, receiver) from 0 and wrapping at 2^32.  The receiver hands
 * messages on in number order.  A message that arrives early is copied and
 * kept, sorted, until every earlier one has arrived.  A message whose
 * number was already handed on, or is already kept, or which is too short
 * to hold a number, is dropped and counted.  A correct sender never
 * produces those; the engines below deliver each message exactly once.
 *
 * Pure C, no I/O; one thread at a time per em_order_t.
 */
#ifndef EM_ENGINE_ORDER_H
#define EM_ENGINE_ORDER_H

#include <stddef.h>
#include <stdint.h>

#define EM_ORDER_HDR 4u

typedef struct em_order_held em_order_held_t;

/** Order state for one peer (both directions). */
typedef struct em_order {
    uint32_t tx_next;      /**< number of the next message to the peer */
    uint32_t rx_next;      /**< number of the next message to hand on */
    em_order_held_t *held; /**< early messages, sorted by number */
    em_order_held_t *last; /**< the last of them (an honest peer's next early one goes after it) */
    uint32_t nheld;
    size_t bytes_held; /**< payload bytes of the early messages */
    /** Budget (0: none): more early messages or bytes than this and
     *  em_order_rx() says EM_ORDER_OVERFLOW; the caller fails the peer (the
     *  messages were acknowledged by the engine below: dropping one would
     *  lose it). */
    uint32_t max_held;
    size_t max_bytes;
    uint64_t kept;    /**< messages kept because they came early */
    uint64_t dropped; /**< messages dropped: too short, stale or kept twice */
} em_order_t;

/**
 * Hands one message on.  @p origin is what em_order_rx() was given with it
 * (the BTL passes the module it arrived on).  @return nonzero to stop
 * handing on kept messages (they stay kept, e.g. while finalizing).
 */
typedef int (*em_order_deliver_fn)(void *ctx, void *origin, uint8_t tag, const uint8_t *data,
                                   size_t len);

enum em_order_rc {
    EM_ORDER_DELIVERED = 0,
    EM_ORDER_KEPT = 1,
    EM_ORDER_DROPPED = 2,
    EM_ORDER_OVERFLOW = 3, /**< over max_held or max_bytes: not kept (counted in dropped) */
};

/** Write the next message's number into @p hdr (not yet counted). */
void em_order_stamp(const em_order_t *o, uint8_t hdr[EM_ORDER_HDR]);
/** The stamped message was taken by the link: count it. */
static inline void em_order_sent(em_order_t *o) { o->tx_next++; }

/**
 * One received message, @p len bytes at @p msg including its number.  If
 * its turn has come it is handed on (without the number), followed by every
 * kept message whose turn follows.  rx_next moves before each hand-on, so
 * a message sent or received from within @p fn sees the order already
 * moved.
 * @return EM_ORDER_DELIVERED, EM_ORDER_KEPT (copied; EM_ORDER_DROPPED
 *         when the copy cannot be made), EM_ORDER_DROPPED or
 *         EM_ORDER_OVERFLOW (the budget is exceeded).
 */
int em_order_rx(em_order_t *o, void *origin, uint8_t tag, const uint8_t *msg, size_t len,
                em_order_deliver_fn fn, void *ctx);

/** Free every kept message (the peer or the job is gone). */
void em_order_reset(em_order_t *o);

#endif
