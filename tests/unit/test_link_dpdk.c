/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * link_dpdk on a virtual device with no wire: net_ring0 loops every frame
 * sent on its tx queue back to its rx queue.  EAL starts once per process,
 * so the program has three modes, each its own meson test:
 *   (no argument)  framing and contents through the loopback; a frame of
 *                  another ethertype, injected with raw DPDK calls, is
 *                  dropped and counted; first contact (tx_to to a MAC
 *                  no peer has, rx_from by source MAC)
 *   --loss         seeded 50 % receive loss drops about half, counted
 *   --bad-device   an af_xdp port on a missing interface fails with a
 *                  message naming it
 *   --extra-queues, --extra-queues-fail
 *                  extra queue pairs with the caller's pools; a caller
 *                  without a pool fails the open and undoes
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_mbuf.h>

#include "link/link_dpdk.h"
#include "link_test_util.h"

static em_link_t *L;

/** A second user's ethertype on the shared port (em_bcast's, 0x88B6). */
#define SECOND_ETHERTYPE 0x88B6u

static int open_ring(double loss)
{
    char err[512] = "";
    em_dpdk_cfg_t c = { .vdev = "net_ring0",
                        .eal_args = "--no-huge -m 128 --no-shconf",
                        .nb_mbufs = 2047,
                        .rx_loss = loss,
                        .loss_seed = 5,
                        .link_wait_ms = 2000 };
    L = em_link_dpdk_open(&c, err, sizeof err);
    if (!L)
        fprintf(stderr, "cannot open net_ring0: %s\n", err);
    return L ? 0 : -1;
}

static void send_frame(uint32_t peer, const char *s) { em_test_send_str(L, peer, s); }

/* receive up to max frames (copies, NUL-terminated) */
static unsigned drain(char (*out)[64], unsigned max)
{
    em_pkt_t *pk[32];
    unsigned got = 0;
    for (int tries = 0; tries < 2000 && got < max; tries++) {
        unsigned n = em_link_rx_burst(L, pk, 32);
        for (unsigned i = 0; i < n && got < max; i++, got++) {
            unsigned l = pk[i]->len < 63 ? pk[i]->len : 63;
            memcpy(out[got], pk[i]->data, l);
            out[got][l] = 0;
        }
        em_link_rx_release(L, pk, n);
    }
    return got;
}

static void test_loopback_frames(void **st)
{
    em_link_addr_t self = L->local;
    assert_int_equal(self.len, 8);
    assert_int_equal(em_link_set_peer(L, 3, &self), 0);
    assert_true(L->mtu >= 1500);
    send_frame(3, "hello");
    send_frame(3, "world!");
    char got[4][64];
    assert_int_equal(drain(got, 4), 2);
    assert_string_equal(got[0], "hello");
    assert_string_equal(got[1], "world!");
    assert_int_equal(em_link_dpdk_stats(L)->rx_frames, 2);
    em_link_addr_t bad = { .len = 6 };
    assert_int_not_equal(em_link_set_peer(L, 4, &bad), 0);
}

/* A payload sent from the caller's memory (EM_LINK_F_GATHER: an external
 * mbuf chained behind the header) arrives whole and byte-identical: the
 * ring PMD passes the chain through, and the receive side linearises it. */
static void test_gather_payload(void **st)
{
    if (!(L->flags & EM_LINK_F_GATHER)) {
        skip();
        return;
    }
    em_link_addr_t self = L->local;
    assert_int_equal(em_link_set_peer(L, 0, &self), 0);
    static uint8_t payload[1200];
    for (size_t i = 0; i < sizeof payload; i++)
        payload[i] = (uint8_t)(i * 7 + 3);
    em_test_send(L, 0, "HDR:", 4, payload, sizeof payload);
    assert_int_equal(em_link_dpdk_stats(L)->tx_extbuf, 1);
    em_pkt_t *pk[4];
    unsigned n = 0;
    for (int tries = 0; tries < 2000 && n == 0; tries++)
        n = em_link_rx_burst(L, pk, 4);
    assert_int_equal(n, 1);
    assert_int_equal(pk[0]->len, 4 + sizeof payload);
    assert_memory_equal(pk[0]->data, "HDR:", 4);
    assert_memory_equal(pk[0]->data + 4, payload, sizeof payload);
    em_link_rx_release(L, pk, n);
}

static void test_foreign_ethertype_dropped(void **st)
{
    struct rte_mempool *mp = rte_pktmbuf_pool_create("test_raw", 63, 0, 0,
                                                     RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
    assert_non_null(mp);
    struct rte_mbuf *m = rte_pktmbuf_alloc(mp);
    char *d = rte_pktmbuf_append(m, 60);
    memset(d, 0, 60);
    struct rte_ether_hdr *eh = (struct rte_ether_hdr *)d;
    memcpy(eh->dst_addr.addr_bytes, L->local.bytes, 6);
    eh->ether_type = rte_cpu_to_be_16(0x0800); /* IPv4, not ours */
    assert_int_equal(rte_eth_tx_burst(0, 0, &m, 1), 1);
    send_frame(3, "after");
    char got[4][64];
    assert_int_equal(drain(got, 4), 1); /* only ours */
    assert_string_equal(got[0], "after");
    assert_int_equal(em_link_dpdk_stats(L)->rx_foreign, 1);
    rte_mempool_free(mp);
}

/* one received frame, or NULL after 2000 polls (more than one: a failure) */
static em_pkt_t *recv_one(em_link_t *l)
{
    em_pkt_t *pk[4];
    unsigned n = 0;
    for (int tries = 0; tries < 2000 && n == 0; tries++)
        n = em_link_rx_burst(l, pk, 4);
    assert_true(n <= 1);
    return n ? pk[0] : NULL;
}

/* First contact: tx_to a MAC no peer has (the ring loops it back: its
 * source is ours, its bytes intact, its destination that MAC); a frame
 * from that MAC is still no peer's (tx_to made no entry) and rx_from
 * tells the two sources apart; addresses of other lengths are refused. */
static void test_tx_to_rx_from(void **st)
{
    (void)st;
    assert_true(em_link_has_contact(L));
    const em_link_addr_t x = { .len = EM_DPDK_ADDR_L2, .bytes = { 0x02, 0, 0, 0, 0, 0x99 } };
    uint64_t sent = em_link_dpdk_stats(L)->tx_frames;
    assert_int_equal(em_test_tx_to_str(L, &x, "first contact"), 0);
    assert_int_equal(em_link_dpdk_stats(L)->tx_frames, sent + 1);
    em_pkt_t *r = recv_one(L);
    assert_non_null(r);
    assert_int_equal(r->len, 13);
    assert_memory_equal(r->data, "first contact", 13);
    const struct rte_ether_hdr *eh = rte_pktmbuf_mtod((struct rte_mbuf *)r->priv, void *);
    assert_memory_equal(eh->dst_addr.addr_bytes, x.bytes, 6);
    assert_true(L->ops->rx_from(L, r, &L->local));
    assert_false(L->ops->rx_from(L, r, &x));
    em_link_addr_t self12 = L->local; /* the form with an IPv4 address */
    self12.len = EM_DPDK_ADDR_L2_IP;
    assert_true(L->ops->rx_from(L, r, &self12));
    self12.len = EM_DPDK_ADDR_UDP;
    assert_false(L->ops->rx_from(L, r, &self12));
    em_link_rx_release(L, &r, 1);
    /* a frame from x's MAC */
    struct rte_mempool *mp = rte_pktmbuf_pool_create("test_raw_fc", 63, 0, 0,
                                                     RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
    assert_non_null(mp);
    struct rte_mbuf *m = rte_pktmbuf_alloc(mp);
    uint8_t f[60];
    memset(f, 'y', sizeof f);
    memcpy(f, L->local.bytes, 6);
    memcpy(f + 6, x.bytes, 6);
    f[12] = EM_ETHERTYPE >> 8, f[13] = EM_ETHERTYPE & 0xff;
    char *d = rte_pktmbuf_append(m, sizeof f);
    assert_non_null(d);
    memcpy(d, f, sizeof f);
    assert_int_equal(rte_eth_tx_burst(0, 0, &m, 1), 1);
    assert_non_null(r = recv_one(L));
    assert_int_equal(L->ops->rx_peer(L, r), EM_LINK_PEER_UNKNOWN);
    assert_true(L->ops->rx_from(L, r, &x));
    assert_false(L->ops->rx_from(L, r, &L->local));
    em_link_rx_release(L, &r, 1);
    rte_mempool_free(mp);
    const uint8_t bad[] = { 0, 6, 7, 9, EM_DPDK_ADDR_UDP };
    for (unsigned i = 0; i < sizeof bad; i++) {
        em_link_addr_t b = x;
        b.len = bad[i];
        assert_int_equal(em_test_tx_to_str(L, &b, "refused"), -EINVAL);
    }
    assert_null(recv_one(L));
}

static int loss_mode(void)
{
    if (open_ring(0.5) != 0)
        return 1;
    em_link_set_peer(L, 1, &L->local);
    int sent = 0;
    for (int i = 0; i < 1000; i++) {
        em_pkt_t *p = em_link_tx_alloc(L);
        if (!p)
            break;
        p->len = 1;
        p->data[0] = 'z';
        p->peer = 1;
        sent += (int)em_link_tx_burst(L, &p, 1);
        if (i % 100 == 99) { /* keep the ring from filling */
            char got[128][64];
            drain(got, 128);
        }
    }
    char got[128][64];
    drain(got, 128);
    const em_dpdk_stats_t *s = em_link_dpdk_stats(L);
    printf("sent %d: received %llu, dropped by injected loss %llu\n", sent,
           (unsigned long long)s->rx_frames, (unsigned long long)s->rx_dropped_loss);
    int ok = sent == 1000 && s->rx_frames + s->rx_dropped_loss == 1000 &&
             s->rx_dropped_loss > 400 && s->rx_dropped_loss < 600;
    em_link_close(L);
    return ok ? 0 : 1;
}

static int bad_device_mode(void)
{
    char err[512] = "";
    em_dpdk_cfg_t c = { .vdev = "net_af_xdp0,iface=nosuchif0",
                        .eal_args = "--no-huge -m 64 --no-shconf" };
    em_link_t *l = em_link_dpdk_open(&c, err, sizeof err);
    printf("error message: %s\n", err);
    return l == NULL && strstr(err, "nosuchif0") ? 0 : 1;
}

/* Extra queue pairs for another user of the port (the daemon's own
 * queues): the link asks for each extra rx queue's pool in queue order,
 * with the port's mbuf geometry, and uses none of them itself. */
static struct {
    struct rte_mempool *pool[4];
    unsigned calls, undos, fail_at;
    em_dpdk_queue_info_t last;
} X;

static struct rte_mempool *extra_pool(void *ctx, const em_dpdk_queue_info_t *qi, char *err,
                                      size_t errlen)
{
    assert_ptr_equal(ctx, &X);
    X.calls++;
    X.last = *qi;
    if (qi->queue != X.calls || qi->queue >= 4 || qi->queue == X.fail_at)
        return NULL; /* out of order, or told to fail */
    char name[32];
    snprintf(name, sizeof name, "test_extra_%u", qi->queue);
    X.pool[qi->queue] = em_link_dpdk_queue_pool(qi, name, 63, err, errlen);
    return X.pool[qi->queue];
}

static void extra_undo(void *ctx)
{
    (void)ctx;
    X.undos++;
    for (unsigned q = 0; q < 4; q++) {
        em_link_dpdk_pool_free(X.pool[q]);
        X.pool[q] = NULL;
    }
}

static em_link_t *open_with_extra(unsigned fail_at, char *err, size_t errlen)
{
    X.fail_at = fail_at;
    em_dpdk_cfg_t c = { .vdev = "net_ring0",
                        .eal_args = "--no-huge -m 128 --no-shconf",
                        .nb_mbufs = 1023,
                        .link_wait_ms = 2000,
                        .extra = { .n = 3, .rx_pool = extra_pool, .undo = extra_undo, .ctx = &X } };
    return em_link_dpdk_open(&c, err, errlen);
}

/* --extra-queues: three extra queues, their pools made with
 * em_link_dpdk_queue_pool; a pool whose user died holding mbufs is whole
 * again after em_link_dpdk_pool_reset; queue 0 still carries our frames. */
static int extra_queues_mode(void)
{
    char err[512] = "";
    L = open_with_extra(0, err, sizeof err);
    if (!L) {
        fprintf(stderr, "open with extra queues: %s\n", err);
        return 1;
    }
    int ok = X.calls == 3 && X.undos == 0 && X.last.queue == 3 &&
             X.last.priv_size >= sizeof(em_pkt_t) && X.last.data_room >= L->mtu + 14u;
    struct rte_mempool *mp = X.pool[2];
    struct rte_mbuf *held[10];
    ok = ok && rte_pktmbuf_alloc_bulk(mp, held, 10) == 0 && rte_mempool_avail_count(mp) == 53;
    ok = ok && em_link_dpdk_pool_reset(mp) == 0 && rte_mempool_avail_count(mp) == 63;
    char got[4][64];
    em_link_set_peer(L, 0, &L->local);
    send_frame(0, "q0");
    ok = ok && drain(got, 4) >= 1 && strcmp(got[0], "q0") == 0;
    printf("extra queues: %u pool calls, last queue %u, priv %u, room %u: %s\n", X.calls,
           X.last.queue, X.last.priv_size, X.last.data_room, ok ? "ok" : "FAILED");
    em_link_close(L);
    return ok ? 0 : 1;
}

/* --extra-queues-fail: the caller has no pool for queue 2: the open fails
 * with its sentence and the caller's undo runs (once). */
static int extra_queues_fail_mode(void)
{
    char err[512] = "";
    L = open_with_extra(2, err, sizeof err);
    printf("error message: %s\n", err);
    return L == NULL && X.calls == 2 && X.undos == 1 && X.pool[1] == NULL &&
                   strstr(err, "extra queue 2")
               ? 0
               : 1;
}

/* Two users of one port in one process, told apart by ethertype (the
 * dpdk BTL and an em_bcast channel): the second open of the same device
 * shares the port, and whoever polls it passes the other's frames on. */
static const em_dpdk_cfg_t second_user = { .vdev = "net_ring0",
                                           .eal_args = "--no-huge -m 128 --no-shconf",
                                           .nb_mbufs = 2047,
                                           .link_wait_ms = 2000,
                                           .ethertype = SECOND_ETHERTYPE };

/* the same device again under SECOND_ETHERTYPE: a sharer of L's port */
static em_link_t *open_second_user(void)
{
    char err[512] = "";
    em_link_t *B = em_link_dpdk_open(&second_user, err, sizeof err);
    if (!B)
        fail_msg("second user could not share the port: %s", err);
    return B;
}

static void test_shared_port(void **st)
{
    char err[512] = "";
    em_link_t *B = open_second_user();
    assert_memory_equal(B->local.bytes, L->local.bytes, 6); /* same port, same MAC */
    /* a second user with the same ethertype is refused */
    em_link_t *C = em_link_dpdk_open(&second_user, err, sizeof err);
    assert_null(C);
    assert_non_null(strstr(err, "already used"));

    em_link_addr_t self = L->local;
    assert_int_equal(em_link_set_peer(L, 0, &self), 0);
    assert_int_equal(em_link_set_peer(B, 0, &self), 0);
    /* B sends; A polls first (takes the frame off the port, passes it on) */
    em_pkt_t *p = em_link_tx_alloc(B);
    assert_non_null(p);
    memcpy(p->data, "to-B", 4);
    p->len = 4;
    p->peer = 0;
    assert_int_equal(em_link_tx_burst(B, &p, 1), 1);
    p = em_link_tx_alloc(L);
    assert_non_null(p);
    memcpy(p->data, "to-A", 4);
    p->len = 4;
    p->peer = 0;
    assert_int_equal(em_link_tx_burst(L, &p, 1), 1);
    char a[4][64], b[4][64];
    unsigned na = 0, nb = 0;
    em_pkt_t *pk[8];
    for (int tries = 0; tries < 2000 && (na < 1 || nb < 1); tries++) {
        unsigned n = em_link_rx_burst(L, pk, 8);
        for (unsigned i = 0; i < n && na < 4; i++, na++) {
            memcpy(a[na], pk[i]->data, 4);
            a[na][4] = 0;
        }
        em_link_rx_release(L, pk, n);
        n = em_link_rx_burst(B, pk, 8);
        for (unsigned i = 0; i < n && nb < 4; i++, nb++) {
            memcpy(b[nb], pk[i]->data, 4);
            b[nb][4] = 0;
        }
        em_link_rx_release(B, pk, n);
    }
    assert_int_equal(na, 1);
    assert_int_equal(nb, 1);
    assert_string_equal(a[0], "to-A");
    assert_string_equal(b[0], "to-B");
    em_link_close(B);
}

/* The user that polls a shared port passes the other's frames on to its
 * ring; when that ring is full they are lost and counted as rx_share_full
 * (not as rx_foreign: they were somebody's). */
static void test_shared_ring_full(void **st)
{
    em_link_t *B = open_second_user();
    em_link_addr_t self = L->local;
    assert_int_equal(em_link_set_peer(L, 0, &self), 0);
    uint64_t foreign = em_link_dpdk_stats(B)->rx_foreign;
    em_pkt_t *pk[32];
    /* L sends, only B polls: L's frames pile up in L's ring (1023 places) */
    for (int round = 0; round < 48 && em_link_dpdk_stats(B)->rx_share_full == 0; round++) {
        for (unsigned i = 0; i < 32; i++) {
            pk[i] = em_link_tx_alloc(L);
            assert_non_null(pk[i]);
            memcpy(pk[i]->data, "to-A", 4);
            pk[i]->len = 4;
            pk[i]->peer = 0;
        }
        unsigned sent = em_link_tx_burst(L, pk, 32);
        for (unsigned i = sent; i < 32; i++)
            em_link_tx_free(L, pk[i]);
        for (int k = 0; k < 4; k++)
            assert_int_equal(em_link_rx_burst(B, pk, 32), 0); /* none of them is B's */
    }
    assert_true(em_link_dpdk_stats(B)->rx_share_full > 0);
    assert_int_equal(em_link_dpdk_stats(B)->rx_foreign, foreign);
    /* L gets what its ring held */
    unsigned got = 0, n;
    while ((n = em_link_rx_burst(L, pk, 32)) > 0) {
        got += n;
        em_link_rx_release(L, pk, n);
    }
    assert_true(got >= 1000);
    em_link_close(B);
}

/* A second user whose device list is spelled otherwise (its own devargs,
 * as a channel's spec expands %j differently from the BTL's) still shares
 * the port EAL already probed; a device EAL never probed is refused with
 * the devices it has and the fix. */
static void test_shared_port_other_list(void **st)
{
    char err[512] = "";
    em_dpdk_cfg_t c = second_user;
    c.vdev = "net_ring0,nodeaction=r0:0:ATTACH";
    em_link_t *B = em_link_dpdk_open(&c, err, sizeof err);
    if (!B)
        fail_msg("a differently spelled list of the same device was refused: %s", err);
    assert_memory_equal(B->local.bytes, L->local.bytes, 6);
    em_link_close(B);
    c.vdev = "net_null7";
    assert_null(em_link_dpdk_open(&c, err, sizeof err));
    assert_non_null(strstr(err, "net_null7"));
    assert_non_null(strstr(err, "net_ring0"));
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--bad-device") == 0)
        return bad_device_mode();
    if (argc > 1 && strcmp(argv[1], "--loss") == 0)
        return loss_mode();
    if (argc > 1 && strcmp(argv[1], "--extra-queues") == 0)
        return extra_queues_mode();
    if (argc > 1 && strcmp(argv[1], "--extra-queues-fail") == 0)
        return extra_queues_fail_mode();
    if (open_ring(0) != 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loopback_frames),  cmocka_unit_test(test_foreign_ethertype_dropped),
        cmocka_unit_test(test_gather_payload),   cmocka_unit_test(test_shared_port),
        cmocka_unit_test(test_shared_ring_full), cmocka_unit_test(test_shared_port_other_list),
        cmocka_unit_test(test_tx_to_rx_from),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    em_link_close(L);
    return rc;
}
