/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file fake_port.h
 * The daemon's port where emd_core runs without DPDK (test_emd_core,
 * fuzz_emd_daemon): a fixed pool of packets that the daemon borrows to
 * send and gives back, and a receive queue that the test fills with the
 * frames that "arrive".  What happens to a sent frame (recorded, checked,
 * refused) and to a peer's address is the test's own: its ops table names
 * its tx_burst and set_peer, and these functions for the rest.
 * Header-only and without cmocka (the fuzz target uses it); single-threaded.
 */
#ifndef EM_TESTS_FAKE_PORT_H
#define EM_TESTS_FAKE_PORT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "link/link.h"

#define FAKE_PORT_POOL 64u   /* packets at most */
#define FAKE_PORT_BUF  1100u /* bytes per packet at most: the port's MTU */
#define FAKE_PORT_RX   8u    /* arrived frames not yet read by the daemon */

typedef struct fake_port {
    em_link_t link; /**< first: the ops are called with &link */
    em_pkt_t pk[FAKE_PORT_POOL];
    uint8_t buf[FAKE_PORT_POOL][FAKE_PORT_BUF];
    em_pkt_t *free_[FAKE_PORT_POOL];
    unsigned nfree;
    em_pkt_t *rx[FAKE_PORT_RX];
    unsigned nrx;
} fake_port_t;

/** A port of @p npkts packets (<= FAKE_PORT_POOL) of @p mtu bytes
 *  (<= FAKE_PORT_BUF), all free, nothing arrived.  0, or -1 when a bound
 *  is exceeded. */
static inline int fake_port_init(fake_port_t *fp, const em_link_ops_t *ops, uint32_t mtu,
                                 unsigned npkts)
{
    if (npkts > FAKE_PORT_POOL || mtu > FAKE_PORT_BUF)
        return -1;
    memset(fp, 0, sizeof *fp);
    fp->link = (em_link_t){ .ops = ops, .mtu = mtu };
    for (unsigned i = 0; i < npkts; i++) {
        fp->pk[i].data = fp->buf[i];
        fp->free_[fp->nfree++] = &fp->pk[i];
    }
    return 0;
}

static inline fake_port_t *fake_port_of(em_link_t *l) { return (fake_port_t *)l; }

/** A free packet of the pool (length 0), or NULL when all are lent. */
static inline em_pkt_t *fake_port_tx_alloc(em_link_t *l)
{
    fake_port_t *fp = fake_port_of(l);
    if (!fp->nfree)
        return NULL;
    em_pkt_t *p = fp->free_[--fp->nfree];
    p->len = 0;
    return p;
}

static inline void fake_port_tx_free(em_link_t *l, em_pkt_t *p)
{
    fake_port_t *fp = fake_port_of(l);
    fp->free_[fp->nfree++] = p;
}

/** The frames that arrived since the last call (up to @p max; the rest are
 *  dropped, as a full receive queue would). */
static inline unsigned fake_port_rx_burst(em_link_t *l, em_pkt_t **p, unsigned max)
{
    fake_port_t *fp = fake_port_of(l);
    unsigned n = fp->nrx < max ? fp->nrx : max;
    memcpy(p, fp->rx, n * sizeof *p);
    fp->nrx = 0;
    return n;
}

static inline void fake_port_rx_release(em_link_t *l, em_pkt_t **p, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        fake_port_tx_free(l, p[i]);
}

static inline void fake_port_close(em_link_t *l) { (void)l; }

/** A packet for a frame to arrive, or NULL when the pool is empty or
 *  FAKE_PORT_RX frames wait already; fake_port_arrive() it once written. */
static inline em_pkt_t *fake_port_take(fake_port_t *fp)
{
    return fp->nrx < FAKE_PORT_RX ? fake_port_tx_alloc(&fp->link) : NULL;
}

/** @p p (from fake_port_take) arrives: the daemon reads it at its next poll. */
static inline void fake_port_arrive(fake_port_t *fp, em_pkt_t *p) { fp->rx[fp->nrx++] = p; }

#endif
