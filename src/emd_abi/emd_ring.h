/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file emd_ring.h
 * The one single-producer/single-consumer ring of the daemon contract
 * (emd_abi.h), in the style of DPDK's rte_ring: the role is in the name
 * (`_sp_` producer, `_sc_` consumer), and nobody else does index
 * arithmetic on the region's rings.  Two shapes over one mechanism:
 *
 *   slots    fixed-size slots (the tx ring: the client produces, the
 *            daemon consumes); capacity in slots
 *   records  variable-size records of struct emd_slot_hdr + frame, 64-byte
 *            aligned, never wrapping (a filler record pads to the end); the
 *            rx ring: the daemon produces, the client consumes; capacity
 *            in bytes
 *
 * Protocol: head and tail are free-running 32-bit counters (differences are
 * wrap-safe) in struct emd_ring_idx, each written by one side only.  The
 * producer fills [tail, head + capacity) and then publishes tail
 * (release); the consumer reads [head, tail) (acquire) and then publishes
 * head (release).  Each side keeps its own index in the handle and never
 * reads it back from shared memory; the other side's index is loaded once
 * per call and bounded: an impossible value is EMD_RING_CORRUPT, never
 * followed.  The holder fills the handle's geometry from its own copy
 * (the daemon: what it laid out; the client: the checked header).
 *
 * Threading: a handle is used by one thread; the two sides of one ring are
 * in two processes.
 */
#ifndef EM_EMD_ABI_EMD_RING_H
#define EM_EMD_ABI_EMD_RING_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "emd_abi/emd_region.h"

/** Results of the ring calls (negative values are the reasons). */
enum emd_ring_err {
    EMD_RING_OK = 0,
    EMD_RING_FULL = -1,     /**< no room now (not an error of the other side) */
    EMD_RING_CORRUPT = -2,  /**< the other side's index is impossible */
    EMD_RING_BAD_WRAP = -3, /**< a filler record that does not reach the end */
    EMD_RING_BAD_LEN = -4,  /**< a record of length 0, beyond the mtu or the data */
};

/** One side's handle on one ring. */
typedef struct emd_ring {
    struct emd_ring_idx *idx; /**< the shared indices */
    uint8_t *base;            /**< first byte of the ring's storage */
    uint32_t cap;             /**< slots, or bytes; a power of 2 */
    uint32_t slot_size;       /**< slots: bytes per slot; records: 0 */
    uint32_t mine; /**< this side's index (producer: tail, consumer: head), as published */
    uint32_t pend; /**< producer: written, not published; consumer: taken, not released */
} emd_ring_t;

/** A sentence for an enum emd_ring_err. */
static inline const char *emd_ring_strerror(int err)
{
    switch (err) {
    case EMD_RING_OK: return "ok";
    case EMD_RING_FULL: return "ring full";
    case EMD_RING_CORRUPT: return "corrupt ring index";
    case EMD_RING_BAD_WRAP: return "ring holds a bad wrap record";
    case EMD_RING_BAD_LEN: return "ring holds a record of a bad length";
    default: return "unknown ring error";
    }
}

/**
 * Set up a handle on the ring @p idx / @p base with @p cap slots of
 * @p slot_size bytes (records: @p slot_size 0, @p cap bytes), this side's
 * index starting at @p start (the daemon: 0, it laid the region out and
 * reads nothing back).
 */
static inline void emd_ring_init(emd_ring_t *r, struct emd_ring_idx *idx, uint8_t *base,
                                 uint32_t cap, uint32_t slot_size, uint32_t start)
{
    r->idx = idx;
    r->base = base;
    r->cap = cap;
    r->slot_size = slot_size;
    r->mine = start;
    r->pend = 0;
}

/** Client side: the rx ring of region @p h (a checked header), as its consumer. */
static inline void emd_ring_init_rx(emd_ring_t *r, struct emd_shm_hdr *h)
{
    emd_ring_init(r, &h->rx, (uint8_t *)h + h->rx_off, h->rx_size, 0,
                  atomic_load_explicit(&h->rx.head, memory_order_acquire));
}

/** Client side: the tx ring of region @p h (a checked header), as its producer. */
static inline void emd_ring_init_tx(emd_ring_t *r, struct emd_shm_hdr *h)
{
    emd_ring_init(r, &h->tx, (uint8_t *)h + h->tx_off, h->tx_slots, h->slot_size,
                  atomic_load_explicit(&h->tx.tail, memory_order_acquire));
}

/* ---------------------------------------------------------------- slots -- */

/**
 * Producer: how many slots may be filled now (past those already filled
 * and not yet enqueued).  An impossible head counts as no room.
 */
static inline uint32_t emd_slots_sp_room(const emd_ring_t *r)
{
    uint32_t head = atomic_load_explicit(&r->idx->head, memory_order_acquire);
    uint32_t used = r->mine - head;
    if (used > r->cap || r->pend > r->cap - used)
        return 0;
    return r->cap - used - r->pend;
}

/** Producer: the next free slot (call only when emd_slots_sp_room() > 0); counts it as filled. */
static inline uint8_t *emd_slots_sp_next(emd_ring_t *r)
{
    uint32_t i = r->mine + r->pend++;
    return r->base + (size_t)(i & (r->cap - 1)) * r->slot_size;
}

/**
 * Producer: publish the slots filled since the last call.  A sequentially
 * consistent store: a caller that then loads the consumer's "sleeping"
 * flag pairs with a consumer that sets it and then looks again (no lost
 * wake-up).  @return how many were published.
 */
static inline uint32_t emd_slots_sp_enqueue(emd_ring_t *r)
{
    uint32_t n = r->pend;
    if (n) {
        r->mine += n;
        r->pend = 0;
        atomic_store(&r->idx->tail, r->mine);
    }
    return n;
}

/**
 * Consumer: how many slots wait (loads the producer's tail once).
 * @return the count, or EMD_RING_CORRUPT (more than the ring holds).
 */
static inline int64_t emd_slots_sc_avail(const emd_ring_t *r)
{
    uint32_t tail = atomic_load_explicit(&r->idx->tail, memory_order_acquire);
    uint32_t avail = tail - r->mine;
    return avail > r->cap ? EMD_RING_CORRUPT : (int64_t)avail;
}

/** Consumer: slot @p k past the head (k < the count emd_slots_sc_avail gave). */
static inline const uint8_t *emd_slots_sc_at(const emd_ring_t *r, uint32_t k)
{
    return r->base + (size_t)((r->mine + k) & (r->cap - 1)) * r->slot_size;
}

/** Consumer: give back the first @p n waiting slots (publishes head). */
static inline void emd_slots_sc_dequeue(emd_ring_t *r, uint32_t n)
{
    r->mine += n;
    atomic_store_explicit(&r->idx->head, r->mine, memory_order_release);
}

/**
 * Consumer: anything waiting?  A sequentially consistent load: a consumer
 * that sets its "sleeping" flag and then looks here pairs with
 * emd_slots_sp_enqueue (no lost wake-up).  For idle decisions only.
 */
static inline int emd_slots_sc_pending(const emd_ring_t *r)
{
    return atomic_load(&r->idx->tail) != r->mine;
}

/* -------------------------------------------------------------- records -- */

/**
 * Producer: append one record, @p sh (its len set to @p len) followed by
 * the @p len bytes at @p data; not visible until emd_recs_sp_publish.
 * Loads the consumer's head once.
 * @return EMD_RING_OK, EMD_RING_FULL, or EMD_RING_CORRUPT (the head is
 *         impossible: beyond the tail, or not on a record boundary).
 */
static inline int emd_recs_sp_put(emd_ring_t *r, struct emd_slot_hdr sh, const void *data,
                                  uint32_t len)
{
    uint32_t head = atomic_load_explicit(&r->idx->head, memory_order_acquire); /* once */
    uint32_t tail = r->mine + r->pend;
    uint32_t used = tail - head;
    if (used > r->cap || (head & (EMD_REC_ALIGN - 1)))
        return EMD_RING_CORRUPT;
    uint32_t need = emd_rec_size(len);
    uint32_t to_end = r->cap - (tail & (r->cap - 1));
    uint32_t pad = need > to_end ? to_end : 0; /* the record starts over at 0 */
    if (r->cap - used < pad + need)
        return EMD_RING_FULL;
    if (pad) {
        struct emd_slot_hdr w = { .len = EMD_REC_WRAP };
        memcpy(r->base + (tail & (r->cap - 1)), &w, sizeof w);
        tail += pad;
    }
    uint8_t *s = r->base + (tail & (r->cap - 1));
    sh.len = len;
    memcpy(s, &sh, sizeof sh);
    memcpy(s + sizeof sh, data, len);
    r->pend += pad + need;
    return EMD_RING_OK;
}

/** Producer: publish the records put since the last call (release).  @return 1 if any. */
static inline int emd_recs_sp_publish(emd_ring_t *r)
{
    if (!r->pend)
        return 0;
    r->mine += r->pend;
    r->pend = 0;
    atomic_store_explicit(&r->idx->tail, r->mine, memory_order_release);
    return 1;
}

/**
 * Consumer: bytes of records waiting past those already taken (loads the
 * producer's tail once).  @return the count, or EMD_RING_CORRUPT.
 */
static inline int64_t emd_recs_sc_avail(const emd_ring_t *r)
{
    uint32_t tail = atomic_load_explicit(&r->idx->tail, memory_order_acquire);
    uint32_t avail = tail - r->mine;
    if (avail > r->cap || (avail & (EMD_REC_ALIGN - 1)) || r->pend > avail)
        return EMD_RING_CORRUPT;
    return (int64_t)(avail - r->pend);
}

/**
 * Consumer: take the next record out of @p *avail bytes (from
 * emd_recs_sc_avail, decremented here), skipping fillers; the header is
 * read once into @p sh, the frame stays in the ring at @p *frame until
 * emd_recs_sc_release.  Records longer than @p mtu are refused.
 * @return 1 (a record), 0 (none left), or a negative enum emd_ring_err.
 */
static inline int emd_recs_sc_take(emd_ring_t *r, uint32_t *avail, uint32_t mtu,
                                   struct emd_slot_hdr *sh, uint8_t **frame)
{
    while (*avail) {
        uint32_t pos = r->mine + r->pend;
        uint32_t to_end = r->cap - (pos & (r->cap - 1));
        uint8_t *s = r->base + (pos & (r->cap - 1));
        memcpy(sh, s, sizeof *sh);     /* one read; the checks use this copy */
        if (sh->len == EMD_REC_WRAP) { /* filler up to the ring's end */
            if (to_end > *avail)
                return EMD_RING_BAD_WRAP;
            r->pend += to_end;
            *avail -= to_end;
            continue;
        }
        uint32_t need = sh->len <= mtu ? emd_rec_size(sh->len) : 0;
        if (sh->len == 0 || need == 0 || need > to_end || need > *avail)
            return EMD_RING_BAD_LEN; /* a record we cannot step over safely */
        r->pend += need;
        *avail -= need;
        *frame = s + sizeof *sh;
        return 1;
    }
    return 0;
}

/** Consumer: give back every record taken since the last call (publishes head). */
static inline void emd_recs_sc_release(emd_ring_t *r)
{
    if (!r->pend)
        return;
    r->mine += r->pend;
    r->pend = 0;
    atomic_store_explicit(&r->idx->head, r->mine, memory_order_release);
}

#endif
