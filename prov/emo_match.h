/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file emo_match.h
 * Tag matching for the libfabric provider: a queue of posted receives and
 * a queue of unexpected messages, both FIFO, with libfabric's rules:
 *
 *   a receive (peer filter P, tag T, ignore I) matches a message from peer
 *   S with tag M when ((T ^ M) & ~I) == 0 and (P is any peer or P == S).
 *
 * A message matches the OLDEST posted receive that accepts it; a receive
 * matches the OLDEST unexpected message it accepts (MPI's non-overtaking
 * rule, given that the engine delivers each peer's messages in order).
 * Unexpected entries may be "claimed" (FI_PEEK | FI_CLAIM): a claimed
 * entry is skipped by every search and removed only by its owner.
 *
 * Pure C: no libfabric types, no allocation; entries are embedded in the
 * caller's structures (container_of).  Untagged (FI_MSG) traffic uses a
 * second pair of queues with tag 0 and ignore 0.
 *
 * Threading: one thread at a time (the domain's).
 */
#ifndef EMO_MATCH_H
#define EMO_MATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** Peer filter of a receive that accepts every source. */
#define EMO_ANY_PEER 0xFFFFFFFFu

typedef struct emo_qent {
    struct emo_qent *next;
    uint32_t peer;   /**< posted: filter (or EMO_ANY_PEER); unexpected: the source */
    uint8_t claimed; /**< unexpected only: claimed by FI_CLAIM, invisible to searches */
    uint64_t tag;
    uint64_t ignore; /**< posted only */
} emo_qent_t;

typedef struct emo_queue {
    emo_qent_t *head, *tail;
    size_t len;
} emo_queue_t;

/** Does a receive (@p peer_filter, @p tag, @p ignore) accept (@p src, @p msg_tag)? */
static inline bool emo_match(uint32_t peer_filter, uint64_t tag, uint64_t ignore, uint32_t src,
                             uint64_t msg_tag)
{
    return ((tag ^ msg_tag) & ~ignore) == 0 && (peer_filter == EMO_ANY_PEER || peer_filter == src);
}

void emo_queue_init(emo_queue_t *q);
/** Append @p e (its fields already set) at the tail. */
void emo_queue_push(emo_queue_t *q, emo_qent_t *e);
/** Remove @p e if it is queued.  @return true when it was. */
bool emo_queue_remove(emo_queue_t *q, emo_qent_t *e);

/**
 * A message from @p src with @p tag arrived: remove and return the oldest
 * posted receive of @p posted that accepts it, or NULL (the caller then
 * queues it as unexpected).
 */
emo_qent_t *emo_match_posted(emo_queue_t *posted, uint32_t src, uint64_t tag);
/** As emo_match_posted, but the receive stays queued (a multi-receive
 *  buffer stays posted, in its place, until it is full). */
emo_qent_t *emo_find_posted(emo_queue_t *posted, uint32_t src, uint64_t tag);

/**
 * A receive (@p peer_filter, @p tag, @p ignore) is posted (or probed):
 * return the oldest unclaimed unexpected message it accepts, removed from
 * @p unexp when @p remove, or NULL.
 */
emo_qent_t *emo_match_unexp(emo_queue_t *unexp, uint32_t peer_filter, uint64_t tag, uint64_t ignore,
                            bool remove);

#endif
