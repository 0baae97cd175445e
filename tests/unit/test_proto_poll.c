/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * em_proto_poll() looks at the peers that have something timed (the poll
 * set), not at the whole table: two protocols of 100,001 peers each, wired
 * back to back with a simulated clock, talk over their peer 7 only.
 *
 *  - 2,000 messages each way (delayed ACKs, retransmit timers, the idle
 *    release of the active part): every one delivered and completed, and
 *    poll_visits stays a few per poll, where scanning the table would
 *    have cost 100,001 per poll;
 *  - a peer only waited for (the liveness watch) is probed and failed
 *    after its retries although nothing else of its is timed, and then
 *    leaves the set;
 *  - a reset peer (em_proto_reset_peer) keeps one place in the set and
 *    talks again.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "proto/proto.h"

#define NPEERS 100001u
#define PEER   7u   /* the one pair that talks */
#define QUIET  123u /* watched, never answers */
#define QMAX   256

static em_proto_t *P[2];
static uint64_t NOW = 1000000000ull;
static uint8_t Q[2][QMAX][1600];
static size_t QL[2][QMAX];
static unsigned QN[2];
static unsigned got[2], done_ok, done_err, failed_peers[2];
static uint32_t failed_which;

static int emit(void *u, uint32_t peer, const void *h, size_t hl, const void *pl, size_t pll)
{
    int to = 1 - (int)(intptr_t)u;
    if (peer != PEER)
        return 0; /* to nobody (the watched peer): lost */
    if (QN[to] == QMAX)
        return -EM_EAGAIN;
    memcpy(Q[to][QN[to]], h, hl);
    if (pll)
        memcpy(Q[to][QN[to]] + hl, pl, pll);
    QL[to][QN[to]++] = hl + pll;
    return 0;
}

static void on_recv(void *u, uint32_t peer, uint8_t tag, const void *d, size_t len)
{
    int me = (int)(intptr_t)u;
    const uint8_t *b = d;
    uint8_t last = (uint8_t)(255 - tag);
    if (peer == PEER && len == 64 && b[0] == tag && b[63] == last)
        got[me]++;
}

static void on_complete(void *u, void *ctx, int status)
{
    (void)u, (void)ctx;
    if (status == 0)
        done_ok++;
    else
        done_err++;
}

static void on_failed(void *u, uint32_t peer)
{
    failed_peers[(int)(intptr_t)u]++;
    failed_which = peer;
}

static const em_proto_ops_t OPS = {
    .emit = emit, .recv = on_recv, .complete = on_complete, .peer_failed = on_failed
};

/* peer @p peer of both sides: key, ISNs crossed, and the receiver's
 * number for us is the same (PEER calls PEER PEER) */
static void pair(uint32_t peer, uint64_t key, uint32_t isn0, uint32_t isn1)
{
    for (int i = 0; i < 2; i++) {
        assert_int_equal(em_proto_set_peer(P[i], peer, key, i ? isn1 : isn0, i ? isn0 : isn1), 0);
        assert_int_equal(em_proto_set_peer_index(P[i], peer, peer), 0);
    }
}

static void make(void)
{
    memset(QN, 0, sizeof QN);
    memset(got, 0, sizeof got);
    memset(failed_peers, 0, sizeof failed_peers);
    done_ok = done_err = 0;
    for (int i = 0; i < 2; i++) {
        em_proto_cfg_t c;
        em_proto_cfg_default(&c);
        c.self = NPEERS - 1;
        c.npeers = NPEERS;
        c.peers_need_set = 1;
        c.live_idle_ns = 50000000ull; /* 50 ms */
        c.rto_max_ns = 20000000ull;   /* 20 ms */
        c.max_retries = 4;
        c.peer_idle_ns = 10000000ull; /* 10 ms */
        int err;
        P[i] = em_proto_create(&c, &OPS, (void *)(intptr_t)i, &err);
        assert_non_null(P[i]);
    }
    pair(PEER, 42, 100, 101);
    pair(QUIET, 43, 5, 5);
}

static void destroy(void)
{
    for (int i = 0; i < 2; i++) {
        em_proto_destroy(P[i]);
        P[i] = NULL;
    }
}

/* one step of the simulated world: 10 us pass, queued frames arrive, both poll */
static void step(void)
{
    NOW += 10000;
    for (int i = 0; i < 2; i++) {
        unsigned n = QN[i];
        QN[i] = 0;
        for (unsigned j = 0; j < n; j++)
            (void)em_proto_rx(P[i], Q[i][j], QL[i][j], NOW);
        em_proto_poll(P[i], NOW);
    }
}

static void exchange(unsigned msgs)
{
    static uint8_t buf[2][64];
    static em_proto_op_t op[2];
    unsigned want = done_ok + 2 * msgs;
    for (unsigned k = 0; k < msgs; k++) {
        for (int s = 0; s < 2; s++) {
            uint8_t tag = (uint8_t)(k * 2 + (unsigned)s);
            memset(buf[s], 0, sizeof buf[s]);
            buf[s][0] = tag;
            buf[s][63] = (uint8_t)(255 - tag);
            assert_int_equal(em_proto_send(P[s], &op[s], PEER, tag, buf[s], 64, NULL, NOW), 0);
        }
        unsigned target = done_ok + 2;
        for (long i = 0; done_ok < target; i++) {
            assert_true(i < 100000);
            step();
        }
    }
    assert_int_equal(done_ok, want);
}

static void test_busy_peers_only(void **st)
{
    (void)st;
    make();
    exchange(2000);
    assert_int_equal(got[0], 2000);
    assert_int_equal(got[1], 2000);
    assert_int_equal(done_err, 0);
    /* quiet long enough for the active parts to be released */
    for (int i = 0; i < 5000; i++)
        step();
    for (int i = 0; i < 2; i++) {
        const em_proto_stats_t *s = em_proto_stats(P[i]);
        assert_true(s->peer_releases >= 1);
        /* each poll that ran looked at the peer that talks (and for a
         * moment none); the table's scan would be 100,001 per poll */
        assert_true(s->poll_visits > 0);
        assert_true(s->poll_visits < 50000); /* ~9,000 steps + 2,000 messages */
    }
    /* and it talks again after the release */
    exchange(10);
    assert_int_equal(got[0], 2010);
    destroy();
}

static void test_watched_peer_fails(void **st)
{
    (void)st;
    make();
    assert_int_equal(em_proto_watch(P[0], QUIET, NOW), 0);
    for (long i = 0; failed_peers[0] == 0; i++) {
        assert_true(i < 200000); /* 50 ms + 4 probes at <= 20 ms: well under 2 s */
        step();
    }
    assert_int_equal(failed_which, QUIET);
    assert_true(em_proto_stats(P[0])->live_probes >= 4);
    assert_true(em_proto_peer_failed(P[0], QUIET));
    /* nothing timed is left: the polls that follow look at nobody */
    uint64_t v = em_proto_stats(P[0])->poll_visits;
    for (int i = 0; i < 1000; i++)
        step();
    assert_true(em_proto_stats(P[0])->poll_visits - v < 10);
    destroy();
}

static void test_reset_keeps_place(void **st)
{
    (void)st;
    make();
    exchange(5);
    /* both sides forget the pair while it may still be timed, then set it again */
    for (int i = 0; i < 2; i++)
        assert_int_equal(em_proto_reset_peer(P[i], PEER), 0);
    pair(PEER, 44, 900, 901);
    memset(QN, 0, sizeof QN); /* frames of the old pair: gone */
    for (int r = 0; r < 20; r++) {
        exchange(5);
        for (int i = 0; i < 2; i++)
            assert_int_equal(em_proto_reset_peer(P[i], PEER), 0);
        pair(PEER, 45u + (unsigned)r, 7, 8);
        QN[0] = QN[1] = 0;
    }
    assert_int_equal(done_err, 0);
    assert_int_equal(got[0], 105);
    destroy();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_busy_peers_only),
        cmocka_unit_test(test_watched_peer_fails),
        cmocka_unit_test(test_reset_keeps_place),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
