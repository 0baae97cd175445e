/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * em_proto_grow(): a table of peers only (cfg.self EM_PROTO_SELF_OUTSIDE,
 * as first contact makes it) grows between calls while its peers talk.
 * Two protocols wired back to back with a simulated clock; side 0 starts
 * with 2 entries and doubles to 64 while pair 1 has messages in flight,
 * some of their frames lost (so retransmit timers and ACKs owed sit in
 * the poll set across each growth):
 *
 *  - every message is delivered once, in order, and completes; the pair's
 *    sequence numbers and keys are what they were before each growth;
 *  - a peer beyond the old size is refused before the growth and talks
 *    after it (the test fails without growth);
 *  - a lost frame sent before a growth is recovered after it: the timer
 *    that resends it is in the moved poll set;
 *  - growth past the self number, or not upward, is refused.
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

#define QMAX 512
#define NMSG 64 /* messages of one burst, per side */

static em_proto_t *P[2];
static uint64_t NOW = 1000000000ull;
static uint8_t Q[2][QMAX][1600];
static size_t QL[2][QMAX];
static uint32_t QP[2][QMAX]; /* the receiver's number for the sender: the same here */
static unsigned QN[2];
static unsigned drop_every; /* lose every Nth frame (0: none) */
static unsigned emitted;
static unsigned done_ok, done_err;
/* per side and peer: the next message number expected (in order, once) */
static unsigned next_in[2][64], bad_in;

static int emit(void *u, uint32_t peer, const void *h, size_t hl, const void *pl, size_t pll)
{
    int to = 1 - (int)(intptr_t)u;
    if (QN[to] == QMAX)
        return -EM_EAGAIN;
    if (drop_every && ++emitted % drop_every == 0)
        return 0; /* lost on the wire */
    memcpy(Q[to][QN[to]], h, hl);
    if (pll)
        memcpy(Q[to][QN[to]] + hl, pl, pll);
    QP[to][QN[to]] = peer;
    QL[to][QN[to]++] = hl + pll;
    return 0;
}

static void on_recv(void *u, uint32_t peer, uint8_t tag, const void *d, size_t len)
{
    int me = (int)(intptr_t)u;
    unsigned n;
    (void)tag;
    if (peer >= 64 || len != 200) {
        bad_in++;
        return;
    }
    memcpy(&n, d, sizeof n);
    if (n != next_in[me][peer])
        bad_in++;
    next_in[me][peer] = n + 1;
}

static void on_complete(void *u, void *ctx, int status)
{
    (void)u, (void)ctx;
    if (status == 0)
        done_ok++;
    else
        done_err++;
}

static const em_proto_ops_t OPS = { .emit = emit, .recv = on_recv, .complete = on_complete };

static em_proto_t *make_one(int side, uint32_t npeers)
{
    em_proto_cfg_t c;
    em_proto_cfg_default(&c);
    c.self = EM_PROTO_SELF_OUTSIDE;
    c.npeers = npeers;
    c.peers_need_set = 1;
    c.window = 16;
    int err;
    em_proto_t *p = em_proto_create(&c, &OPS, (void *)(intptr_t)side, &err);
    assert_non_null(p);
    return p;
}

/* peer @p peer of both sides (each calls the other @p peer) */
static void pair(uint32_t peer, uint64_t key)
{
    for (int i = 0; i < 2; i++) {
        assert_int_equal(em_proto_set_peer(P[i], peer, key, 100u + (unsigned)i, 101u - (unsigned)i),
                         0);
        assert_int_equal(em_proto_set_peer_index(P[i], peer, peer), 0);
    }
}

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

static em_proto_op_t ops[2][64][NMSG];
static uint8_t bufs[2][64][NMSG][200];
static unsigned sent[2][64];

/* a burst of NMSG messages each way on @p peer, not waited for */
static void burst(uint32_t peer)
{
    for (unsigned k = 0; k < NMSG; k++)
        for (int s = 0; s < 2; s++) {
            unsigned n = sent[s][peer]++;
            memcpy(bufs[s][peer][k], &n, sizeof n);
            assert_int_equal(
                em_proto_send(P[s], &ops[s][peer][k], peer, 1, bufs[s][peer][k], 200, NULL, NOW),
                0);
        }
}

static void settle(unsigned want_ok)
{
    for (long i = 0; done_ok < want_ok; i++) {
        assert_true(i < 2000000);
        step();
    }
}

/* what a growth must keep of @p peer on side 0 */
static void flow_of(uint32_t peer, em_proto_flow_t *f, uint64_t *key)
{
    assert_int_equal(em_proto_flow(P[0], peer, f), 0);
    assert_int_equal(em_proto_peer_params(P[0], peer, key, NULL, NULL), 0);
}

static void test_grow_under_traffic(void **st)
{
    (void)st;
    P[0] = make_one(0, 2);
    P[1] = make_one(1, 64);
    pair(1, 77);
    drop_every = 7;
    unsigned want = 0;
    em_proto_op_t probe;
    uint8_t one[200] = { 0 };
    for (uint32_t size = 2; size < 64; size *= 2) {
        /* a peer beyond the table: refused until it grows */
        assert_int_equal(em_proto_npeers(P[0]), size);
        assert_int_equal(em_proto_send(P[0], &probe, size, 1, one, 200, NULL, NOW), -EM_EINVAL);
        assert_int_equal(em_proto_set_peer(P[0], size, 5, 1, 1), -EM_EINVAL);
        burst(1);
        want += 2 * NMSG;
        /* some delivered, some lost and waiting on a timer, some queued */
        for (int i = 0; i < 100000 && em_proto_pending(P[0], 1) > NMSG / 2; i++)
            step();
        assert_true(done_ok < want); /* the growth meets traffic in flight */
        em_proto_flow_t before, after;
        uint64_t kb, ka;
        flow_of(1, &before, &kb);
        uint32_t queued = em_proto_pending(P[0], 1);
        assert_true(queued > 0);
        assert_int_equal(em_proto_grow(P[0], size * 2), 0);
        flow_of(1, &after, &ka);
        assert_int_equal(after.snd_nxt, before.snd_nxt);
        assert_int_equal(after.rcv_nxt, before.rcv_nxt);
        assert_int_equal(after.remote_index, before.remote_index);
        assert_true(ka == kb);
        assert_int_equal(em_proto_pending(P[0], 1), queued);
        /* the new peer at the old size's number talks now */
        pair(size, 1000u + size);
        burst(size);
        want += 2 * NMSG;
        settle(want);
    }
    drop_every = 0;
    settle(want);
    assert_int_equal(done_err, 0);
    assert_int_equal(bad_in, 0);
    assert_int_equal(next_in[0][1], sent[1][1]);
    assert_int_equal(next_in[1][1], sent[0][1]);
    for (uint32_t size = 2; size < 64; size *= 2) {
        assert_int_equal(next_in[0][size], sent[1][size]);
        assert_int_equal(next_in[1][size], sent[0][size]);
    }
    /* the losses were recovered by timers (or SACKs) across the growths */
    assert_true(em_proto_stats(P[0])->retransmits > 0);
    for (int i = 0; i < 2; i++) {
        em_proto_destroy(P[i]);
        P[i] = NULL;
    }
}

/* a frame lost just before a growth, nothing else in flight: only the
 * retransmit timer, kept in the poll set across the move, recovers it */
static void test_timer_survives_grow(void **st)
{
    (void)st;
    QN[0] = QN[1] = 0;
    done_ok = done_err = 0;
    memset(next_in, 0, sizeof next_in);
    memset(sent, 0, sizeof sent);
    P[0] = make_one(0, 4);
    P[1] = make_one(1, 4);
    pair(3, 9);
    drop_every = 0;
    unsigned n = 0;
    memcpy(bufs[0][3][0], &n, sizeof n);
    sent[0][3] = 1;
    assert_int_equal(em_proto_send(P[0], &ops[0][3][0], 3, 1, bufs[0][3][0], 200, NULL, NOW), 0);
    assert_int_equal(QN[1], 1);
    QN[1] = 0; /* lost */
    assert_int_equal(em_proto_grow(P[0], 1024), 0);
    settle(1);
    assert_int_equal(next_in[1][3], 1);
    assert_true(em_proto_stats(P[0])->timeouts >= 1);
    /* refused: not upward, or past the self number */
    assert_int_equal(em_proto_grow(P[0], 1024), -EM_EINVAL);
    assert_int_equal(em_proto_grow(P[0], 16), -EM_EINVAL);
    assert_int_equal(em_proto_grow(P[0], EM_PROTO_SELF_OUTSIDE + 1u), -EM_EINVAL);
    /* (a numbered table's self must be one of its entries at creation) */
    em_proto_cfg_t c;
    em_proto_cfg_default(&c);
    c.self = 5;
    c.npeers = 4;
    int err;
    assert_null(em_proto_create(&c, &OPS, NULL, &err));
    for (int i = 0; i < 2; i++) {
        em_proto_destroy(P[i]);
        P[i] = NULL;
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grow_under_traffic),
        cmocka_unit_test(test_timer_survives_grow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
