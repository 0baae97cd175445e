/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file pkt_pool.h
 * The fixed pool of transmit packets a link lends from tx_alloc and takes
 * back in tx_burst / tx_free: a stack of free em_pkt_t pointers over
 * packets (and buffers) the link allocated once.  One place for what every
 * link with its own tx buffers wrote out: take one, reset what the caller
 * must set, give it back.  Header-only; one pool per link, used from the
 * link's thread.
 */
#ifndef EM_LINK_PKT_POOL_H
#define EM_LINK_PKT_POOL_H

#include "link/link.h"

typedef struct em_pkt_pool {
    em_pkt_t **free; /**< stack of free packets, cap entries */
    unsigned n;      /**< packets on the stack */
    unsigned cap;    /**< packets the pool owns */
} em_pkt_pool_t;

/** An empty pool over @p stack (room for @p cap pointers); em_pkt_pool_put the packets. */
static inline void em_pkt_pool_init(em_pkt_pool_t *pp, em_pkt_t **stack, unsigned cap)
{
    pp->free = stack;
    pp->n = 0;
    pp->cap = cap;
}

/** A free packet with len, ext and ext_len cleared, or NULL when all are lent. */
static inline em_pkt_t *em_pkt_pool_get(em_pkt_pool_t *pp)
{
    if (!pp->n)
        return NULL;
    em_pkt_t *p = pp->free[--pp->n];
    p->len = 0;
    p->ext = NULL;
    p->ext_len = 0;
    return p;
}

/** Give a packet of this pool back (sent, dropped or never used). */
static inline void em_pkt_pool_put(em_pkt_pool_t *pp, em_pkt_t *p)
{
    if (pp->n < pp->cap)
        pp->free[pp->n++] = p;
}

/** Put @p count packets @p pkts on the pool, packet i's data at
 *  @p mem + i * @p stride (the link's one tx buffer, @p count * @p stride
 *  bytes); @p count must not exceed the pool's cap. */
static inline void em_pkt_pool_fill(em_pkt_pool_t *pp, em_pkt_t *pkts, uint8_t *mem, unsigned count,
                                    size_t stride)
{
    for (unsigned i = 0; i < count; i++) {
        pkts[i].data = mem + (size_t)i * stride;
        em_pkt_pool_put(pp, &pkts[i]);
    }
}

#endif
