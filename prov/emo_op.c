/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file emo_op.c
 * The provider's operations (emo_op_t): allocated with room for what the
 * engine sends (header, address, and an eager copy), kept in per-size
 * pools for the next send (EMO_OP_CACHE_BYTES), and counted against the
 * endpoint's send budget (EMO_TX_BYTES) while they live.  Split from
 * emo_rdv.c, which drives them.
 *
 * Threading: the domain's thread, inside an fi_* call or a callback of
 * em_engine_progress(); emo_tx_room() drives progress itself, which is a
 * no-op from inside it.
 */
#include "emo_rdv.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

void emo_op_pools_init(struct emo_ep *ep)
{
    /* rooms of 32, 64, 128, 256 KiB of message, none over the inject size
     * (the copies the pools keep are injects'; larger eager sends leave
     * from the caller's buffer), the last one the inject size; only ops of
     * EMO_OP_LARGE bytes or more come from a pool, so a room below that
     * would only hoard small ops */
    size_t prev = 0;
    for (unsigned i = 0; i < EMO_OP_POOLS; i++) {
        size_t m = (size_t)EMO_OP_CACHE_MSG << i;
        if (i == EMO_OP_POOLS - 1 || m > ep->inject_max)
            m = ep->inject_max;
        size_t room = EMO_HDR_LEN + EMO_ADDR_LEN + m;
        ep->op_pool[i] = (struct emo_op_pool){ 0 };
        if (m > prev && room >= EMO_OP_LARGE)
            ep->op_pool[i].cap = room;
        prev = m > prev ? m : prev;
    }
}

/* The small pools' rooms (msg[] bytes), smaller first. */
static const size_t small_room[EMO_OP_SMALL_POOLS] = { EMO_OP_SMALL_ROOM, EMO_OP_LARGE - 1 };

/* One chunk: its link, then EMO_OP_CHUNK ops of one small room. */
struct op_chunk {
    struct op_chunk *next;
    _Alignas(max_align_t) unsigned char ops[];
};

/* bytes of one op of @p room in a chunk (the next op aligned as malloc's) */
static size_t slot_bytes(size_t room)
{
    size_t b = sizeof(emo_op_t) + room, a = _Alignof(max_align_t);
    return (b + a - 1) / a * a;
}

/* a free op of small pool @p k: from its list, else from a new chunk */
static emo_op_t *small_take(struct emo_ep *ep, unsigned k)
{
    struct emo_op_pool *p = &ep->op_small[k];
    if (!p->head) {
        size_t sb = slot_bytes(small_room[k]);
        struct op_chunk *c = malloc(sizeof *c + EMO_OP_CHUNK * sb);
        if (!c)
            return NULL;
        c->next = ep->op_chunks;
        ep->op_chunks = c;
        for (unsigned i = EMO_OP_CHUNK; i-- > 0;) {
            emo_op_t *op = (emo_op_t *)(void *)(c->ops + i * sb);
            op->cache_next = p->head;
            p->head = op;
        }
    }
    emo_op_t *op = p->head;
    p->head = op->cache_next;
    return op;
}

/* msg[] is left unset: every caller writes all msg_len bytes of it
 * (header, address, payload). */
emo_op_t *emo_op_new(struct emo_ep *ep, int kind, size_t msg_len)
{
    size_t cap = msg_len;
    emo_op_t *op = NULL;
    unsigned small = 0;
    if (msg_len < EMO_OP_LARGE) {
        small = msg_len <= small_room[0] ? 1 : 2;
        cap = small_room[small - 1];
        if (!(op = small_take(ep, small - 1)))
            return NULL;
    }
    for (unsigned i = 0; msg_len >= EMO_OP_LARGE && i < EMO_OP_POOLS; i++) {
        struct emo_op_pool *p = &ep->op_pool[i];
        if (msg_len <= p->cap) { /* the smallest room that holds it */
            cap = p->cap;
            if ((op = p->head) != NULL) {
                p->head = op->cache_next;
                ep->op_cached -= cap;
            }
            break;
        }
    }
    if (!op && !(op = malloc(sizeof *op + cap)))
        return NULL;
    memset(op, 0, sizeof *op);
    /* the send budget counts a small op's message, a large one's room
     * (what it holds of the pools' memory), as before the small pools */
    op->held = small ? msg_len : cap;
    ep->op_live += op->held;
    op->ep = ep;
    op->kind = kind;
    op->small = (uint8_t)small;
    op->msg_len = msg_len;
    op->msg_cap = cap;
    return op;
}

void emo_op_free(emo_op_t *op)
{
    if (!op)
        return;
    free(op->puts);
    struct emo_ep *ep = op->ep;
    ep->op_live -= op->held;
    if (op->small) { /* back on its list: its chunk goes at close */
        struct emo_op_pool *p = &ep->op_small[op->small - 1];
        op->cache_next = p->head;
        p->head = op;
        return;
    }
    for (unsigned i = 0; i < EMO_OP_POOLS; i++) {
        struct emo_op_pool *p = &ep->op_pool[i];
        if (p->cap && op->msg_cap == p->cap && ep->op_cached + p->cap <= EMO_OP_CACHE_BYTES) {
            op->cache_next = p->head;
            p->head = op;
            ep->op_cached += p->cap;
            return;
        }
    }
    free(op);
}

bool emo_tx_fits(const struct emo_ep *ep, size_t msg_len)
{
    return ep->op_live == 0 || ep->op_live + msg_len <= EMO_TX_BYTES;
}

bool emo_tx_room(struct emo_ep *ep, size_t msg_len)
{
    if (emo_tx_fits(ep, msg_len))
        return true;
    ep->st.tx_budget_waits++;
    (void)emo_ep_progress(ep); /* a no-op from inside progress (a callback's send) */
    return emo_tx_fits(ep, msg_len);
}

void emo_op_cache_drain(struct emo_ep *ep)
{
    for (unsigned i = 0; i < EMO_OP_POOLS; i++)
        while (ep->op_pool[i].head) {
            emo_op_t *op = ep->op_pool[i].head;
            ep->op_pool[i].head = op->cache_next;
            free(op);
        }
    ep->op_cached = 0;
    /* the small ops: every one is free by now (close), their chunks go */
    while (ep->op_chunks) {
        struct op_chunk *c = ep->op_chunks;
        ep->op_chunks = c->next;
        free(c);
    }
    for (unsigned k = 0; k < EMO_OP_SMALL_POOLS; k++)
        ep->op_small[k].head = NULL;
}
