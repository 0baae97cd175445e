/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A peer's active part (proto.h "Memory"): taken on first use, released
 * when the peer has been quiet for peer_idle_ns.
 *
 *  - many peers over link_sim go active, idle (released), and active again,
 *    round after round, at 0 % and 5 % loss with duplication and
 *    reordering; messages of one frame and of several, sequence numbers
 *    wrapping meanwhile: every message arrives once, in order per pair,
 *    byte-identical, and the counters show every release and reacquire;
 *  - by hand between two endpoints: a released peer continues its
 *    sequence, a duplicate of a frame delivered before the release is
 *    recognized (and takes no active part), a peer holding a frame out of
 *    order is never released, and an allocation failure fails the send
 *    with -EM_ENOMEM (nothing queued) or drops the received frame
 *    unacknowledged until it comes again.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sim/simnet.h"

#define NODES  12
#define ROUNDS 4
#define PERMSG 4              /* messages per ordered pair and round */
#define IDLE   5000000ull     /* peer_idle_ns of these runs: 5 ms */
#define LIMIT  60000000000ull /* of any one phase: 60 s simulated */

static const size_t SIZES[] = { 0, 100, 1400, 5000, 20000 };

struct msg {
    em_proto_op_t op;
    uint8_t *buf;
};

struct run {
    em_simnet_t *net;
    unsigned sent[NODES][NODES]; /* [from][to] messages submitted */
    unsigned got[NODES][NODES];  /* [to][from] delivered, in order */
    unsigned completed, failed, errors;
    unsigned want; /* completions expected so far */
};

static uint8_t byte_at(unsigned s, unsigned d, unsigned i, size_t k)
{
    uint32_t x = (uint32_t)(s * 2654435761u) ^ (uint32_t)(d * 97u) ^ (uint32_t)(i * 40503u) ^
                 (uint32_t)(k * 2246822519u);
    x ^= x >> 15;
    return (uint8_t)(x * 0x2c1b3c6du >> 24);
}

static size_t size_of(unsigned s, unsigned d, unsigned i)
{
    return SIZES[(s + d + i) % (sizeof SIZES / sizeof SIZES[0])];
}

static void on_recv(void *u, unsigned node, uint32_t from, uint8_t tag, const void *d, size_t len)
{
    struct run *r = u;
    const uint8_t *b = d;
    unsigned i = r->got[node][from]++;
    if (tag != (uint8_t)i || len != size_of(from, node, i)) {
        r->errors++;
        return;
    }
    for (size_t k = 0; k < len; k++)
        if (b[k] != byte_at(from, node, i, k)) {
            r->errors++;
            return;
        }
}

static void on_complete(void *u, unsigned node, void *ctx, int status)
{
    struct run *r = u;
    struct msg *m = ctx;
    (void)node;
    if (status == 0)
        r->completed++;
    else
        r->failed++;
    free(m->buf);
    free(m);
}

static bool all_done(void *u)
{
    struct run *r = u;
    return r->completed + r->failed >= r->want;
}

static void send_round(struct run *r)
{
    uint64_t now = em_simnet_now(r->net);
    for (unsigned s = 0; s < NODES; s++)
        for (unsigned d = 0; d < NODES; d++)
            for (unsigned k = 0; d != s && k < PERMSG; k++) {
                unsigned i = r->sent[s][d]++;
                struct msg *m = calloc(1, sizeof *m);
                size_t len = size_of(s, d, i);
                m->buf = malloc(len ? len : 1);
                for (size_t b = 0; b < len; b++)
                    m->buf[b] = byte_at(s, d, i, b);
                assert_int_equal(em_proto_send(em_simnet_proto(r->net, s), &m->op, d, (uint8_t)i,
                                               m->buf, len, m, now),
                                 0);
                r->want++;
            }
}

static uint32_t active_total(struct run *r)
{
    uint32_t n = 0;
    for (unsigned i = 0; i < NODES; i++)
        n += em_proto_active_peers(em_simnet_proto(r->net, i));
    return n;
}

static void rounds_at(double loss, uint64_t seed)
{
    struct run r = { 0 };
    em_proto_cfg_t pc;
    em_sim_cfg_t sc;
    em_proto_cfg_default(&pc);
    pc.job_key = 41;
    pc.window = 16;
    pc.rto_ns = 200000;
    pc.rto_min_ns = 50000;
    pc.rto_max_ns = 2000000;
    pc.max_retries = 40;
    pc.isn = 0xFFFFFFE0u; /* both sequence spaces wrap in the second or third round */
    pc.peer_idle_ns = IDLE;
    em_sim_cfg_default(&sc);
    sc.loss = loss;
    sc.dup = 0.03;
    sc.reorder = 0.05;
    sc.seed = seed;
    em_simnet_cb_t cb = { .recv = on_recv, .complete = on_complete };
    r.net = em_simnet_create(NODES, &pc, &sc, &cb, &r);
    assert_non_null(r.net);
    uint64_t acq_before[NODES] = { 0 };
    for (unsigned round = 0; round < ROUNDS; round++) {
        send_round(&r);
        /* every node sent to every other: each holds all its peers' windows */
        for (unsigned i = 0; i < NODES; i++)
            assert_int_equal(em_proto_active_peers(em_simnet_proto(r.net, i)), NODES - 1);
        assert_true(em_simnet_run(r.net, all_done, &r, em_simnet_now(r.net) + LIMIT));
        /* quiet: after 1.5 x the idle time every active part is gone (late
         * duplicates still arrive meanwhile, and must take none) */
        uint64_t until = em_simnet_now(r.net) + IDLE * 2;
        while (em_simnet_step(r.net, until))
            ;
        assert_int_equal(active_total(&r), 0);
        for (unsigned i = 0; i < NODES; i++) {
            const em_proto_stats_t *st = em_proto_stats(em_simnet_proto(r.net, i));
            /* one reacquire per peer and round (more when a late frame
             * needed one) and as many releases: none is kept */
            assert_true(st->peer_acquires - acq_before[i] >= NODES - 1);
            assert_int_equal(st->peer_acquires, st->peer_releases);
            assert_int_equal(st->peer_acquire_failed, 0);
            acq_before[i] = st->peer_acquires;
        }
    }
    uint64_t dups = 0, acquires = 0;
    for (unsigned i = 0; i < NODES; i++) {
        const em_proto_stats_t *st = em_proto_stats(em_simnet_proto(r.net, i));
        dups += st->rx_dups;
        acquires += st->peer_acquires;
        assert_int_equal(st->peer_failures, 0);
        assert_true(em_proto_idle(em_simnet_proto(r.net, i)));
    }
    const em_sim_stats_t *ss = em_sim_stats(em_simnet_sim(r.net));
    print_message("  loss %.0f%%: %u messages, %llu acquires (= releases), lost %llu, "
                  "duplicated %llu, reordered %llu, rx_dups %llu\n",
                  loss * 100, r.completed, (unsigned long long)acquires,
                  (unsigned long long)ss->lost, (unsigned long long)ss->duplicated,
                  (unsigned long long)ss->reordered, (unsigned long long)dups);
    assert_int_equal(r.errors, 0);
    assert_int_equal(r.failed, 0);
    assert_int_equal(r.completed, ROUNDS * NODES * (NODES - 1) * PERMSG);
    for (unsigned s = 0; s < NODES; s++)
        for (unsigned d = 0; d < NODES; d++)
            assert_int_equal(r.got[d][s], r.sent[s][d]);
    assert_true(acquires >= (uint64_t)ROUNDS * NODES * (NODES - 1));
    assert_true(ss->duplicated > 0 && ss->reordered > 0 && dups > 0);
    if (loss > 0)
        assert_true(ss->lost > 0);
    em_simnet_destroy(r.net);
}

static void test_rounds_clean(void **st)
{
    (void)st;
    rounds_at(0.0, 11);
}

static void test_rounds_lossy(void **st)
{
    (void)st;
    rounds_at(0.05, 12);
}

/* ------------------------------------------------ by hand, two endpoints -- */

#define QMAX 64
struct q {
    uint8_t f[QMAX][2048];
    size_t len[QMAX];
    unsigned n;
    unsigned nrecv, ncomplete;
    int last_status;
    size_t last_len;
};

static int q_emit(void *u, uint32_t peer, const void *h, size_t hl, const void *p, size_t pl)
{
    struct q *q = u;
    (void)peer;
    assert_true(q->n < QMAX && hl + pl <= sizeof q->f[0]);
    memcpy(q->f[q->n], h, hl);
    if (pl)
        memcpy(q->f[q->n] + hl, p, pl);
    q->len[q->n++] = hl + pl;
    return 0;
}
static void q_recv(void *u, uint32_t peer, uint8_t tag, const void *d, size_t len)
{
    struct q *q = u;
    (void)peer, (void)tag, (void)d;
    q->nrecv++;
    q->last_len = len;
}
static void q_complete(void *u, void *ctx, int status)
{
    struct q *q = u;
    (void)ctx;
    q->ncomplete++;
    q->last_status = status;
}

struct pair {
    em_proto_t *a, *b; /* a is 0, b is 1 */
    struct q qa, qb;   /* what each emitted */
};

static void pair_mk(struct pair *x)
{
    memset(x, 0, sizeof *x);
    em_proto_cfg_t c;
    em_proto_cfg_default(&c);
    c.npeers = 2;
    c.job_key = 5;
    c.window = 8;
    c.peer_idle_ns = IDLE;
    c.ack_delay_ns = 1000;
    em_proto_ops_t ops = { .emit = q_emit, .recv = q_recv, .complete = q_complete };
    int e;
    c.self = 0;
    x->a = em_proto_create(&c, &ops, &x->qa, &e);
    c.self = 1;
    x->b = em_proto_create(&c, &ops, &x->qb, &e);
    assert_non_null(x->a);
    assert_non_null(x->b);
}

/** Deliver frame @p i of @p from to @p to. */
static void hand(struct q *from, unsigned i, em_proto_t *to, uint64_t now)
{
    em_proto_rx(to, from->f[i], from->len[i], now);
}

/** Deliver everything @p from emitted since frame @p first; @return the count. */
static unsigned hand_all(struct q *from, unsigned first, em_proto_t *to, uint64_t now)
{
    unsigned n = from->n;
    for (unsigned i = first; i < n; i++)
        hand(from, i, to, now);
    return n - first;
}

static uint32_t seq_of(const struct q *q, unsigned i)
{
    em_hdr_t h;
    assert_int_equal(em_hdr_decode(q->f[i], q->len[i], &h), EM_DEC_OK);
    return h.seq;
}

/** Poll both ends at their deadlines until @p t, handing ACKs across. */
static void quiet_until(struct pair *x, uint64_t t)
{
    for (;;) {
        uint64_t da = em_proto_next_deadline(x->a), db = em_proto_next_deadline(x->b);
        uint64_t d = da < db ? da : db;
        if (d > t)
            return;
        unsigned fa = x->qa.n, fb = x->qb.n;
        em_proto_poll(x->a, d);
        em_proto_poll(x->b, d);
        hand_all(&x->qa, fa, x->b, d);
        hand_all(&x->qb, fb, x->a, d);
    }
}

static void pair_rm(struct pair *x)
{
    em_proto_destroy(x->a);
    em_proto_destroy(x->b);
}

/* A released peer continues its sequence; an old duplicate is recognized
 * as one and takes no active part. */
static void test_release_keeps_sequence_and_dups(void **st)
{
    (void)st;
    struct pair x;
    pair_mk(&x);
    static uint8_t big[3000]; /* three frames: reassembly takes B's active part */
    em_proto_op_t op1, op2;
    assert_false(em_proto_peer_active(x.a, 1));
    assert_int_equal(em_proto_send(x.a, &op1, 1, 0, big, sizeof big, NULL, 0), 0);
    assert_true(em_proto_peer_active(x.a, 1));
    assert_int_equal(x.qa.n, 3);
    hand_all(&x.qa, 0, x.b, 10);
    assert_int_equal(x.qb.nrecv, 1);
    assert_true(em_proto_peer_active(x.b, 0));
    uint32_t last = seq_of(&x.qa, 2);
    quiet_until(&x, 10 + 2 * IDLE);
    assert_int_equal(x.qa.ncomplete, 1);
    assert_false(em_proto_peer_active(x.a, 1));
    assert_false(em_proto_peer_active(x.b, 0));
    assert_int_equal(em_proto_stats(x.a)->peer_releases, 1);
    assert_int_equal(em_proto_stats(x.b)->peer_releases, 1);
    assert_int_equal(em_proto_next_deadline(x.a), UINT64_MAX);

    /* an old frame again: below rcv_nxt, a duplicate; no delivery, and no
     * active part for it (an ACK goes back) */
    uint64_t dups = em_proto_stats(x.b)->rx_dups;
    unsigned fb = x.qb.n;
    hand(&x.qa, 1, x.b, 3 * IDLE);
    assert_int_equal(em_proto_stats(x.b)->rx_dups, dups + 1);
    assert_int_equal(x.qb.nrecv, 1);
    assert_false(em_proto_peer_active(x.b, 0));
    em_proto_poll(x.b, 3 * IDLE);
    assert_int_equal(x.qb.n, fb + 1); /* the ACK */

    /* the sequence goes on from where it stopped */
    unsigned fa = x.qa.n;
    assert_int_equal(em_proto_send(x.a, &op2, 1, 0, "again", 5, NULL, 3 * IDLE), 0);
    assert_int_equal(seq_of(&x.qa, fa), last + 1);
    assert_int_equal(em_proto_stats(x.a)->peer_acquires, 2);
    hand_all(&x.qa, fa, x.b, 3 * IDLE + 10);
    assert_int_equal(x.qb.nrecv, 2);
    assert_int_equal(x.qb.last_len, 5);
    /* a single in-order frame needs no active part at the receiver */
    assert_false(em_proto_peer_active(x.b, 0));
    quiet_until(&x, 6 * IDLE);
    assert_int_equal(x.qa.ncomplete, 2);
    assert_int_equal(x.qa.last_status, 0);
    assert_int_equal(em_proto_active_peers(x.a), 0);
    pair_rm(&x);
}

/* A frame held out of order keeps its peer's active part, however long. */
static void test_held_frame_keeps_active(void **st)
{
    (void)st;
    struct pair x;
    pair_mk(&x);
    em_proto_op_t op[2];
    assert_int_equal(em_proto_send(x.a, &op[0], 1, 0, "one", 3, NULL, 0), 0);
    assert_int_equal(em_proto_send(x.a, &op[1], 1, 0, "two", 3, NULL, 0), 0);
    assert_int_equal(x.qa.n, 2);
    hand(&x.qa, 1, x.b, 10); /* the second only: held */
    assert_true(em_proto_peer_active(x.b, 0));
    for (uint64_t t = 20; t < 20 * IDLE; t += IDLE / 8)
        em_proto_poll(x.b, t);
    assert_true(em_proto_peer_active(x.b, 0));
    assert_int_equal(em_proto_stats(x.b)->peer_releases, 0);
    hand(&x.qa, 0, x.b, 20 * IDLE);
    assert_int_equal(x.qb.nrecv, 2);
    for (uint64_t t = 20 * IDLE; t < 23 * IDLE; t += IDLE / 8)
        em_proto_poll(x.b, t);
    assert_false(em_proto_peer_active(x.b, 0));
    assert_int_equal(em_proto_stats(x.b)->peer_releases, 1);
    pair_rm(&x);
}

/* No memory for the active part: the send fails at once, nothing queued
 * nor emitted; a received frame that needs it is dropped unacknowledged
 * and taken when it comes again. */
static void test_alloc_failure(void **st)
{
    (void)st;
    struct pair x;
    pair_mk(&x);
    em_proto_op_t op;
    em_proto_fail_act_alloc(x.a, 1);
    assert_int_equal(em_proto_send(x.a, &op, 1, 0, "x", 1, NULL, 0), -EM_ENOMEM);
    assert_int_equal(x.qa.n, 0);
    assert_int_equal(em_proto_pending(x.a, 1), 0);
    assert_false(em_proto_peer_active(x.a, 1));
    assert_int_equal(em_proto_stats(x.a)->peer_acquire_failed, 1);
    assert_true(em_proto_idle(x.a));

    static uint8_t big[3000];
    assert_int_equal(em_proto_send(x.a, &op, 1, 0, big, sizeof big, NULL, 0), 0);
    assert_int_equal(seq_of(&x.qa, 0), 0); /* the refused send took no sequence number */
    em_proto_fail_act_alloc(x.b, 1);
    hand(&x.qa, 0, x.b, 10); /* first of three: needs reassembly, no memory */
    em_proto_flow_t fl;
    assert_int_equal(em_proto_flow(x.b, 0, &fl), 0);
    assert_int_equal(fl.rcv_nxt, 0); /* not consumed */
    assert_int_equal(em_proto_stats(x.b)->drop_nomem, 1);
    assert_int_equal(em_proto_stats(x.b)->peer_acquire_failed, 1);
    hand(&x.qa, 0, x.b, 20); /* it comes again */
    hand(&x.qa, 1, x.b, 20);
    hand(&x.qa, 2, x.b, 20);
    assert_int_equal(x.qb.nrecv, 1);
    assert_int_equal(x.qb.last_len, sizeof big);
    quiet_until(&x, 3 * IDLE);
    assert_int_equal(x.qa.ncomplete, 1);
    assert_int_equal(x.qa.last_status, 0);
    pair_rm(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_release_keeps_sequence_and_dups),
        cmocka_unit_test(test_held_frame_keeps_active),
        cmocka_unit_test(test_alloc_failure),
        cmocka_unit_test(test_rounds_clean),
        cmocka_unit_test(test_rounds_lossy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
