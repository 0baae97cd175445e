/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * em_bcast's DPDK backend on net_ring0 (its tx queue loops back to its rx
 * queue): the channel opens through link_dpdk under ethertype 0x88B6 with
 * the Ethernet broadcast address as destination; its own frames come back
 * and are recognised as its own; a frame of another member (built on the
 * same link) is delivered; a frame under the BTL's ethertype 0x88B5 is not
 * the channel's and never reaches it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_mbuf.h>

#include "bcast/bcast_wire.h"
#include "bcast/em_bcast.h"
#include "link/link_dpdk.h"

static double got[64];
static unsigned calls;
static uint16_t from;

static void apply(void *arg, uint16_t sender, uint32_t off, uint32_t count, const double *v)
{
    (void)arg;
    memcpy(got + off, v, count * sizeof *v);
    from = sender;
    calls++;
}

static unsigned drain(em_bcast_t *b)
{
    unsigned n = 0;
    for (int i = 0; i < 200; i++)
        n += em_bcast_poll(b, apply, NULL, 0);
    return n;
}

static void test_ring(void **st)
{
    (void)st;
    char err[512] = "";
    em_bcast_cfg_t c = { .kind = EM_BCAST_DPDK,
                         .key = 77,
                         .channel = 1,
                         .self = 0,
                         .members = 2,
                         .vec_len = 64,
                         .vdev = "net_ring0",
                         .eal_args = "--no-huge -m 128 --no-shconf",
                         .link_wait_ms = 2000 };
    em_bcast_t *b = em_bcast_open(&c, err, sizeof err);
    if (!b)
        fprintf(stderr, "open: %s\n", err);
    assert_non_null(b);
    assert_true(em_bcast_max_elems(b) >= (1500 - EM_BC_HDR_LEN) / 8);

    double v[3] = { 1.0, 2.0, 3.0 };
    assert_int_equal(em_bcast_send(b, 4, v, 3), 0);
    assert_int_equal(drain(b), 0); /* only our own frame came back */
    assert_int_equal(em_bcast_stats(b)->own, 1);

    /* the frame on the ring: broadcast destination, ethertype 0x88B6 */
    em_link_t *l = em_bcast_link(b);
    assert_int_equal(em_link_dpdk_stats(l)->rx_frames, 1);

    /* member 1's frame, built by hand on the same link */
    em_pkt_t *p = em_link_tx_alloc(l);
    assert_non_null(p);
    em_bc_hdr_t h = { .type = EM_BC_T_F64,
                      .key = 77,
                      .channel = 1,
                      .sender = 1,
                      .seq = 0,
                      .offset = 10,
                      .count = 2 };
    em_bc_encode_hdr(&h, p->data);
    em_bc_put_f64(p->data + EM_BC_HDR_LEN, -1.5);
    em_bc_put_f64(p->data + EM_BC_HDR_LEN + 8, 6.25);
    p->len = EM_BC_HDR_LEN + 16;
    p->peer = 0;
    assert_int_equal(em_link_tx_burst(l, &p, 1), 1);
    calls = 0;
    assert_int_equal(drain(b), 1);
    assert_int_equal(from, 1);
    assert_true(got[10] == -1.5 && got[11] == 6.25);

    /* a frame of the BTL's ethertype: link_dpdk drops it as foreign */
    struct rte_mempool *mp = rte_pktmbuf_pool_create("t_raw", 63, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
                                                     SOCKET_ID_ANY);
    assert_non_null(mp);
    struct rte_mbuf *m = rte_pktmbuf_alloc(mp);
    uint8_t f[14 + EM_BC_HDR_LEN + 16] = { 0 };
    memset(f, 0xff, 6);
    memset(f + 6, 0x02, 6);
    f[12] = 0x88;
    f[13] = 0xB5;
    h.seq = 1;
    em_bc_encode_hdr(&h, f + 14);
    if (!rte_pktmbuf_append(m, sizeof f))
        fail_msg("no room in the test mbuf");
    memcpy(rte_pktmbuf_mtod(m, void *), f, sizeof f);
    assert_int_equal(rte_eth_tx_burst(0, 0, &m, 1), 1);
    calls = 0;
    assert_int_equal(drain(b), 0);
    assert_int_equal(em_link_dpdk_stats(l)->rx_foreign, 1);
    assert_int_equal(em_bcast_stats(b)->received, 1);
    assert_int_equal(em_bcast_stats(b)->dropped, 0);
    rte_mempool_free(mp); /* before the close: it ends EAL */
    em_bcast_close(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = { cmocka_unit_test(test_ring) };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
