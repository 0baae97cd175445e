/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file order.c
 * One message order per peer over several links (see order.h).
 */
#include "engine/order.h"
#include "util/seq.h"

#include <endian.h>
#include <stdlib.h>
#include <string.h>

struct em_order_held {
    em_order_held_t *next;
    void *origin;
    uint32_t num;
    uint8_t tag;
    size_t len;
    uint8_t data[];
};

void em_order_stamp(const em_order_t *o, uint8_t hdr[EM_ORDER_HDR])
{
    uint32_t be = htobe32(o->tx_next);
    memcpy(hdr, &be, EM_ORDER_HDR);
}

/* Message numbers wrap: every comparison goes through util/seq.h. */

/* Keep an early message; the list stays sorted.  -1: already kept, or no memory. */
static int keep(em_order_t *o, void *origin, uint32_t num, uint8_t tag, const uint8_t *data,
                size_t len)
{
    em_order_held_t **pp = &o->held;
    if (o->last && em_seq_lt(o->last->num, num))
        pp = &o->last->next; /* the usual case: after every kept one */
    while (*pp && em_seq_lt((*pp)->num, num))
        pp = &(*pp)->next;
    if (*pp && (*pp)->num == num)
        return -1;
    em_order_held_t *h = malloc(sizeof *h + len);
    if (!h)
        return -1;
    h->origin = origin;
    h->num = num;
    h->tag = tag;
    h->len = len;
    if (len)
        memcpy(h->data, data, len);
    h->next = *pp;
    *pp = h;
    if (!h->next)
        o->last = h;
    o->nheld++;
    o->bytes_held += len;
    o->kept++;
    return 0;
}

/* Hand on the kept messages whose turn has come. */
static void drain(em_order_t *o, em_order_deliver_fn fn, void *ctx)
{
    while (o->held && o->held->num == o->rx_next) {
        em_order_held_t *h = o->held;
        o->held = h->next;
        if (!o->held)
            o->last = NULL;
        o->nheld--;
        o->bytes_held -= h->len;
        o->rx_next++;
        int stop = fn(ctx, h->origin, h->tag, h->data, h->len);
        free(h);
        if (stop)
            return;
    }
}

int em_order_rx(em_order_t *o, void *origin, uint8_t tag, const uint8_t *msg, size_t len,
                em_order_deliver_fn fn, void *ctx)
{
    if (len < EM_ORDER_HDR) {
        o->dropped++;
        return EM_ORDER_DROPPED;
    }
    uint32_t num;
    memcpy(&num, msg, EM_ORDER_HDR);
    num = be32toh(num);
    int32_t ahead = em_seq_diff(num, o->rx_next);
    if (ahead < 0) {
        o->dropped++;
        return EM_ORDER_DROPPED;
    }
    if (ahead > 0) {
        if ((o->max_held && o->nheld >= o->max_held) ||
            (o->max_bytes && len - EM_ORDER_HDR > o->max_bytes - o->bytes_held)) {
            o->dropped++;
            return EM_ORDER_OVERFLOW;
        }
        if (keep(o, origin, num, tag, msg + EM_ORDER_HDR, len - EM_ORDER_HDR) != 0) {
            o->dropped++;
            return EM_ORDER_DROPPED;
        }
        drain(o, fn, ctx); /* only does something after a stopped hand-on */
        return EM_ORDER_KEPT;
    }
    o->rx_next++;
    if (fn(ctx, origin, tag, msg + EM_ORDER_HDR, len - EM_ORDER_HDR) == 0)
        drain(o, fn, ctx);
    return EM_ORDER_DELIVERED;
}

void em_order_reset(em_order_t *o)
{
    while (o->held) {
        em_order_held_t *h = o->held;
        o->held = h->next;
        free(h);
    }
    o->last = NULL;
    o->nheld = 0;
    o->bytes_held = 0;
}
