/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file link_test_util.h
 * Small steps the link tests (test_link_dpdk, test_link_dpdk_udp,
 * test_ipudp, test_link_udp, test_link_emd) share: record the link's
 * messages, send one frame, and put a correct IPv4 header checksum back
 * after a test rewrote a header field; and a link that wraps another
 * (test_engine_udp's choppy link, test_emd_fwd's daemon port).  Header-only,
 * for cmocka test programs (the send asserts); include after cmocka.h.
 */
#ifndef EM_TESTS_LINK_TEST_UTIL_H
#define EM_TESTS_LINK_TEST_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "link/ipudp.h"
#include "link/link.h"

/* What the link said through its message callback (em_udp_cfg_t.note,
 * em_emd_cfg_t.dead_cb): how often, and the last message.  One recorder
 * per test program (a header-only static); the test zeroes cb_calls. */
static unsigned cb_calls;
static char cb_last[256];

static inline void cb_record(void *ctx, const char *msg)
{
    (void)ctx;
    cb_calls++;
    snprintf(cb_last, sizeof cb_last, "%s", msg);
}

/** Send one frame to @p peer: @p hdr_len bytes of @p hdr copied into the
 *  packet, then @p ext_len bytes at @p ext gathered behind them (ext NULL:
 *  none).  Asserts that the link lent a packet and took the burst. */
static inline void em_test_send(em_link_t *l, uint32_t peer, const void *hdr, uint32_t hdr_len,
                                const void *ext, uint32_t ext_len)
{
    em_pkt_t *p = em_link_tx_alloc(l);
    assert_non_null(p);
    memcpy(p->data, hdr, hdr_len);
    p->len = hdr_len;
    p->ext = ext;
    p->ext_len = ext_len;
    p->peer = peer;
    assert_int_equal(em_link_tx_burst(l, &p, 1), 1);
}

/** Send the bytes of @p s (no NUL) to @p peer as one frame. */
static inline void em_test_send_str(em_link_t *l, uint32_t peer, const char *s)
{
    em_test_send(l, peer, s, (uint32_t)strlen(s), NULL, 0);
}

/** First contact (link.h tx_to): one frame of @p s's bytes to address
 *  @p a, named by no peer.  @return the link's answer; a frame it did not
 *  take is given back. */
static inline int em_test_tx_to_str(em_link_t *l, const em_link_addr_t *a, const char *s)
{
    em_pkt_t *p = em_link_tx_alloc(l);
    assert_non_null(p);
    p->len = (uint32_t)strlen(s);
    memcpy(p->data, s, p->len);
    p->peer = 0xFFFFFFF0u; /* no peer: tx_to reads the address only */
    int rc = l->ops->tx_to(l, p, a);
    if (rc != 0)
        em_link_tx_free(l, p);
    return rc;
}

/**
 * A link wrapped around another by a test (to refuse frames, to map
 * addresses): the first member of the test's own link struct.  The
 * em_test_wrap_* functions pass their call on to @c inner unchanged; the
 * test's ops table names them for every call it does not change.
 */
typedef struct em_test_wrap {
    em_link_t link; /**< ops: the test's table */
    em_link_t *inner;
} em_test_wrap_t;

static inline em_link_t *em_test_inner(em_link_t *l) { return ((em_test_wrap_t *)l)->inner; }
static inline em_pkt_t *em_test_wrap_tx_alloc(em_link_t *l)
{
    return em_link_tx_alloc(em_test_inner(l));
}
static inline void em_test_wrap_tx_free(em_link_t *l, em_pkt_t *p)
{
    em_link_tx_free(em_test_inner(l), p);
}
static inline unsigned em_test_wrap_rx_burst(em_link_t *l, em_pkt_t **p, unsigned max)
{
    return em_link_rx_burst(em_test_inner(l), p, max);
}
static inline void em_test_wrap_rx_release(em_link_t *l, em_pkt_t **p, unsigned n)
{
    em_link_rx_release(em_test_inner(l), p, n);
}
static inline int em_test_wrap_flush(em_link_t *l) { return em_link_flush(em_test_inner(l)); }

/** Recompute the IPv4 header checksum of the Ethernet + IPv4 frame @p f
 *  (20-byte IP header at 14, checksum at 24), computed here from RFC 1071
 *  sums rather than by the encoder under test. */
static inline void em_test_ip_csum_fix(uint8_t *f)
{
    f[24] = f[25] = 0;
    em_csum_t c = { 0, 0 };
    em_csum_add(&c, f + 14, 20);
    uint16_t v = (uint16_t)~em_csum_fold(&c);
    f[24] = (uint8_t)(v >> 8);
    f[25] = (uint8_t)v;
}

#endif
