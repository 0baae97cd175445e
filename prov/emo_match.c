/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file emo_match.c
 * Posted and unexpected queues (see emo_match.h).  Linear searches: MPI
 * queues are short in the common case, and the order rules need the
 * oldest match, which a hash by tag cannot give when ignore bits differ.
 */
#include "emo_match.h"

void emo_queue_init(emo_queue_t *q)
{
    q->head = q->tail = NULL;
    q->len = 0;
}

void emo_queue_push(emo_queue_t *q, emo_qent_t *e)
{
    e->next = NULL;
    if (q->tail)
        q->tail->next = e;
    else
        q->head = e;
    q->tail = e;
    q->len++;
}

/* unlink @p e, whose predecessor is @p prev (NULL: head) */
static void unlink_ent(emo_queue_t *q, emo_qent_t *prev, emo_qent_t *e)
{
    if (prev)
        prev->next = e->next;
    else
        q->head = e->next;
    if (q->tail == e)
        q->tail = prev;
    e->next = NULL;
    q->len--;
}

bool emo_queue_remove(emo_queue_t *q, emo_qent_t *e)
{
    emo_qent_t *prev = NULL;
    for (emo_qent_t *c = q->head; c; prev = c, c = c->next) {
        if (c == e) {
            unlink_ent(q, prev, c);
            return true;
        }
    }
    return false;
}

emo_qent_t *emo_match_posted(emo_queue_t *posted, uint32_t src, uint64_t tag)
{
    emo_qent_t *prev = NULL;
    for (emo_qent_t *c = posted->head; c; prev = c, c = c->next) {
        if (emo_match(c->peer, c->tag, c->ignore, src, tag)) {
            unlink_ent(posted, prev, c);
            return c;
        }
    }
    return NULL;
}

emo_qent_t *emo_find_posted(emo_queue_t *posted, uint32_t src, uint64_t tag)
{
    for (emo_qent_t *c = posted->head; c; c = c->next)
        if (emo_match(c->peer, c->tag, c->ignore, src, tag))
            return c;
    return NULL;
}

emo_qent_t *emo_match_unexp(emo_queue_t *unexp, uint32_t peer_filter, uint64_t tag, uint64_t ignore,
                            bool remove)
{
    emo_qent_t *prev = NULL;
    for (emo_qent_t *c = unexp->head; c; prev = c, c = c->next) {
        if (!c->claimed && emo_match(peer_filter, tag, ignore, c->peer, c->tag)) {
            if (remove)
                unlink_ent(unexp, prev, c);
            return c;
        }
    }
    return NULL;
}
