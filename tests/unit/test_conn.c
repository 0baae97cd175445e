/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file test_conn.c
 * Wire v3's first contact (proto/conn.h): tables of several endpoints on a
 * simulated wire that loses, duplicates and reorders frames (seeded), so
 * every run is the same.  Both sides agree on each other's index, token and
 * ISN; simultaneous first contact, a restarted peer, an index reused after
 * removal; and the frames a stranger or a forger can send change nothing.
 * A node's address is one byte (its number); every frame names its
 * sender's reply address (hs_wire.h), so the wire here passes no source.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proto/conn.h"

#define NODES 8
#define QMAX  20000
#define MS    1000000ull

struct frame {
    uint8_t from, to; /* node addresses (1 byte) */
    uint64_t at;
    uint8_t b[EM_HS_LEN];
};

static struct {
    em_conn_t *t[NODES + 1]; /* node i's table; node NODES: the forger's address */
    uint64_t rng, now;
    double loss, dup;
    uint64_t reorder_ns;
    struct frame q[QMAX];
    unsigned nq;
    unsigned established[NODES + 1], failed[NODES + 1], again[NODES + 1];
    char last_why[NODES + 1][128];
    bool heard[NODES + 1];              /* may_replace: node i's peers are still heard (say no) */
    uint64_t admit_nonce[NODES + 1];    /* admit: node i takes only this stranger (0: any) */
    em_conn_name_t admitted[NODES + 1]; /* the last name node i was asked about */
    unsigned asked[NODES + 1];
    uint8_t last_sent[EM_HS_LEN]; /* the last frame any node emitted */
    uint8_t last_from, last_to;
} W;

static uint64_t xs(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}
static double unif(void) { return (double)(xs(&W.rng) >> 11) / 9007199254740992.0; }

static void enqueue(uint8_t from, uint8_t to, const void *f)
{
    if (W.nq >= QMAX)
        return;
    struct frame *q = &W.q[W.nq++];
    q->from = from;
    q->to = to;
    q->at = W.now + 1000 + (W.reorder_ns ? xs(&W.rng) % W.reorder_ns : 0);
    memcpy(q->b, f, EM_HS_LEN);
}

static void emit(void *u, const uint8_t *a, uint8_t alen, const void *f, size_t len)
{
    uint8_t self = (uint8_t)(uintptr_t)u;
    assert_int_equal(alen, 1);
    assert_int_equal(len, EM_HS_LEN);
    memcpy(W.last_sent, f, EM_HS_LEN);
    W.last_from = self;
    W.last_to = a[0];
    if (unif() < W.loss)
        return;
    enqueue(self, a[0], f);
    if (unif() < W.dup)
        enqueue(self, a[0], f);
}
static void on_est(void *u, uint32_t idx, bool again)
{
    (void)idx;
    W.established[(uintptr_t)u]++;
    W.again[(uintptr_t)u] += again;
}
static void on_fail(void *u, uint32_t idx, const char *why)
{
    (void)idx;
    W.failed[(uintptr_t)u]++;
    snprintf(W.last_why[(uintptr_t)u], sizeof W.last_why[0], "%s", why);
}
static uint64_t r64(void *u)
{
    (void)u;
    return xs(&W.rng);
}
static bool may_replace(void *u, uint32_t idx)
{
    (void)idx;
    W.asked[(uintptr_t)u]++;
    return !W.heard[(uintptr_t)u];
}
static bool admit(void *u, const em_conn_name_t *n)
{
    W.admitted[(uintptr_t)u] = *n;
    return !W.admit_nonce[(uintptr_t)u] || n->nonce == W.admit_nonce[(uintptr_t)u];
}
static const em_conn_ops_t OPS = { .emit = emit,
                                   .established = on_est,
                                   .failed = on_fail,
                                   .rand64 = r64,
                                   .may_replace = may_replace,
                                   .admit = admit };

static uint64_t nonce_of(unsigned n, unsigned incarnation)
{
    return 0x1000u + n * 16u + incarnation;
}

static void make(unsigned n, unsigned incarnation, bool strangers, uint32_t max_peers)
{
    em_conn_cfg_t cfg;
    em_conn_cfg_default(&cfg);
    cfg.ep = 7;
    cfg.addr_len = 1;
    cfg.addr[0] = (uint8_t)n;
    cfg.nonce = nonce_of(n, incarnation);
    cfg.accept_strangers = strangers;
    if (max_peers)
        cfg.max_peers = max_peers;
    for (unsigned i = 0; i < EM_CONN_SECRET_LEN; i++)
        cfg.secret[i] = (uint8_t)(n * 31 + i + incarnation);
    em_conn_destroy(W.t[n]);
    W.t[n] = em_conn_create(&cfg, &OPS, (void *)(uintptr_t)n);
    assert_non_null(W.t[n]);
}

static em_conn_name_t name(unsigned n, uint64_t nonce)
{
    return (em_conn_name_t){ .addr_len = 1, .addr = { (uint8_t)n }, .ep = 7, .nonce = nonce };
}

static void world(uint64_t seed, double loss, double dup, uint64_t reorder_ns)
{
    for (unsigned i = 0; i <= NODES; i++)
        em_conn_destroy(W.t[i]);
    memset(&W, 0, sizeof W);
    W.rng = seed;
    W.now = 1000 * MS;
    W.loss = loss;
    W.dup = dup;
    W.reorder_ns = reorder_ns;
}

/* deliver what is due, poll every table; until nothing moves or @p until */
static void run(uint64_t until)
{
    while (W.now < until) {
        unsigned moved = 0;
        for (unsigned i = 0; i < W.nq;) {
            if (W.q[i].at > W.now) {
                i++;
                continue;
            }
            struct frame f = W.q[i];
            W.q[i] = W.q[--W.nq];
            if (f.to < NODES && W.t[f.to])
                (void)em_conn_rx(W.t[f.to], f.b, sizeof f.b, W.now);
            moved++;
        }
        for (unsigned n = 0; n < NODES; n++)
            if (W.t[n])
                (void)em_conn_poll(W.t[n], W.now);
        if (!moved && !W.nq) {
            uint64_t next = UINT64_MAX;
            for (unsigned n = 0; n < NODES; n++)
                if (W.t[n]) {
                    uint64_t d = em_conn_poll(W.t[n], W.now);
                    next = d < next ? d : next;
                }
            if (next == UINT64_MAX)
                return;
            W.now = next > W.now ? next : W.now + 1;
            continue;
        }
        W.now += 100000; /* 0.1 ms steps */
    }
}

/* a and b know each other as ia (in a's table) and ib (in b's): consistent? */
static void assert_pair(unsigned a, uint32_t ia, unsigned b, uint32_t ib)
{
    em_conn_peer_t pa, pb;
    assert_int_equal(em_conn_state(W.t[a], ia), EM_CONN_ESTABLISHED);
    assert_int_equal(em_conn_state(W.t[b], ib), EM_CONN_ESTABLISHED);
    assert_int_equal(em_conn_peer(W.t[a], ia, &pa), 0);
    assert_int_equal(em_conn_peer(W.t[b], ib, &pb), 0);
    assert_int_equal(pa.remote_index, ib);
    assert_int_equal(pb.remote_index, ia);
    assert_true(pa.tx_token == pb.rx_token && pb.tx_token == pa.rx_token);
    assert_int_equal(pa.tx_isn, pb.rx_isn);
    assert_int_equal(pb.tx_isn, pa.rx_isn);
    /* and the data path takes the frames each sends the other */
    uint8_t sa = (uint8_t)a, sb = (uint8_t)b;
    assert_int_equal(em_conn_check(W.t[b], pa.remote_index, &sa, 1, pa.tx_token), EM_CONN_CHK_OK);
    assert_int_equal(em_conn_check(W.t[a], pb.remote_index, &sb, 1, pb.tx_token), EM_CONN_CHK_OK);
}

static uint32_t insert(unsigned at, unsigned peer, uint64_t nonce)
{
    em_conn_name_t n = name(peer, nonce);
    uint32_t idx;
    assert_int_equal(em_conn_insert(W.t[at], &n, &idx), 0);
    return idx;
}

static void test_one_side_starts(void **st)
{
    (void)st;
    world(1, 0, 0, 0);
    make(0, 0, false, 0);
    make(1, 0, false, 0);
    uint32_t i01 = insert(0, 1, nonce_of(1, 0)), i10 = insert(1, 0, nonce_of(0, 0));
    assert_int_equal(em_conn_connect(W.t[0], i01, W.now), 0);
    run(W.now + 1000 * MS);
    assert_pair(0, i01, 1, i10);
    assert_int_equal(W.established[0] + W.established[1], 2);
    /* four frames: INIT, CHALLENGE, CONFIRM, ACCEPT */
    const em_conn_stats_t *s0 = em_conn_stats(W.t[0]), *s1 = em_conn_stats(W.t[1]);
    assert_int_equal(s0->hs_tx[0] + s0->hs_tx[2] + s1->hs_tx[1] + s1->hs_tx[3], 4);
}

static void test_nonce_learned_from_address_and_index(void **st)
{
    (void)st;
    world(2, 0, 0, 0);
    make(0, 0, false, 0);
    make(1, 0, true, 0); /* 1 takes strangers: 0 is not inserted there */
    uint32_t i01 = insert(0, 1, 0);
    em_conn_connect(W.t[0], i01, W.now);
    run(W.now + 1000 * MS);
    em_conn_name_t n;
    assert_int_equal(em_conn_name(W.t[0], i01, &n), 0);
    assert_true(n.nonce == nonce_of(1, 0));
    assert_int_equal(em_conn_count(W.t[1]), 1);
    assert_int_equal(em_conn_state(W.t[0], i01), EM_CONN_ESTABLISHED);
}

/* every node starts toward every other at once, on a bad wire */
static void all_to_all(uint64_t seed, double loss, double dup, uint64_t reorder)
{
    world(seed, loss, dup, reorder);
    uint32_t idx[NODES][NODES];
    for (unsigned a = 0; a < NODES; a++)
        make(a, 0, false, 0);
    for (unsigned a = 0; a < NODES; a++)
        for (unsigned b = 0; b < NODES; b++)
            if (a != b)
                idx[a][b] = insert(a, b, nonce_of(b, 0));
    for (unsigned a = 0; a < NODES; a++)
        for (unsigned b = 0; b < NODES; b++)
            if (a != b)
                em_conn_connect(W.t[a], idx[a][b], W.now);
    run(W.now + 20000 * MS);
    for (unsigned a = 0; a < NODES; a++) {
        for (unsigned b = a + 1; b < NODES; b++)
            assert_pair(a, idx[a][b], b, idx[b][a]);
        assert_int_equal(W.failed[a], 0);
        assert_int_equal(W.established[a], NODES - 1); /* once each: duplicates change nothing */
        assert_int_equal(em_conn_stats(W.t[a])->hs_rebinds, 0);
    }
}

static void test_simultaneous_clean_wire(void **st)
{
    (void)st;
    all_to_all(3, 0, 0, 0);
}

static void test_loss_duplication_reordering(void **st)
{
    (void)st;
    for (uint64_t seed = 10; seed < 16; seed++)
        all_to_all(seed, 0.3, 0.2, 3 * MS);
}

static void test_restarted_peer_is_a_new_peer(void **st)
{
    (void)st;
    world(4, 0, 0, 0);
    make(0, 0, true, 0);
    make(1, 0, false, 0);
    uint32_t i10 = insert(1, 0, nonce_of(0, 0));
    em_conn_connect(W.t[1], i10, W.now);
    run(W.now + 1000 * MS);
    assert_int_equal(em_conn_count(W.t[0]), 1);
    uint32_t old = 0;
    for (uint32_t k = 0; k < 4; k++) /* node 0's index for node 1: slot 0, generation 0 */
        if (em_conn_state(W.t[0], k) == EM_CONN_ESTABLISHED)
            old = k;
    /* node 1 restarts (new nonce, same address and endpoint) and comes back;
     * while node 0 still hears the old incarnation, it keeps its place */
    make(1, 1, false, 0);
    i10 = insert(1, 0, nonce_of(0, 0));
    em_conn_connect(W.t[1], i10, W.now);
    W.heard[0] = true;
    run(W.now + 200 * MS);
    assert_int_equal(W.failed[0], 0);
    assert_true(em_conn_stats(W.t[0])->hs_replace_refused >= 1);
    assert_int_equal(em_conn_state(W.t[0], old), EM_CONN_ESTABLISHED);
    /* the old one falls quiet: the new one's retries get through */
    W.heard[0] = false;
    run(W.now + 5000 * MS);
    assert_int_equal(W.failed[0], 1);
    assert_non_null(strstr(W.last_why[0], "restarted"));
    assert_int_equal(em_conn_stats(W.t[0])->hs_restarts, 1);
    /* node 1 was a stranger to node 0: its old slot is freed at once (a
     * restart cannot use up the table), and the old index names nothing */
    assert_int_equal(em_conn_state(W.t[0], old), EM_CONN_FREE);
    assert_int_equal(em_conn_count(W.t[0]), 1);
    uint8_t a1 = 1;
    assert_int_equal(em_conn_check(W.t[0], old, &a1, 1, 0), EM_CONN_CHK_INDEX);
    assert_int_equal(em_conn_state(W.t[1], i10), EM_CONN_ESTABLISHED);
}

static int forge_as(unsigned to, uint8_t reply, em_hs_t h);

/* a restart of a peer the owner inserted: the failed entry stays (the
 * owner removes it), the new incarnation is another entry */
static void test_restart_of_an_inserted_peer(void **st)
{
    (void)st;
    world(13, 0, 0, 0);
    make(0, 0, true, 0);
    make(1, 0, false, 0);
    uint32_t i01 = insert(0, 1, 0), i10 = insert(1, 0, nonce_of(0, 0));
    em_conn_connect(W.t[1], i10, W.now);
    run(W.now + 1000 * MS);
    assert_int_equal(em_conn_state(W.t[0], i01), EM_CONN_ESTABLISHED);
    make(1, 1, false, 0);
    i10 = insert(1, 0, nonce_of(0, 0));
    em_conn_connect(W.t[1], i10, W.now);
    run(W.now + 1000 * MS);
    assert_int_equal(em_conn_state(W.t[0], i01), EM_CONN_FAILED);
    assert_int_equal(em_conn_count(W.t[0]), 2);
    assert_int_equal(em_conn_state(W.t[1], i10), EM_CONN_ESTABLISHED);
    assert_int_equal(em_conn_remove(W.t[0], i01), 0);
    assert_int_equal(em_conn_count(W.t[0]), 1);
}

/* restarts of a stranger, again and again, take one slot */
/* the owner's admit decides which strangers bind (the BTL: names its job
 * published): one it refuses gets no entry and gives up; the one it names
 * binds, and admit saw its proven name */
static void test_admit_picks_strangers(void **st)
{
    (void)st;
    world(15, 0, 0, 0);
    make(0, 0, true, 0);
    make(1, 0, false, 0);
    W.admit_nonce[0] = nonce_of(1, 1); /* node 0 expects node 1's next incarnation */
    uint32_t i10 = insert(1, 0, nonce_of(0, 0));
    em_conn_connect(W.t[1], i10, W.now);
    run(W.now + 60000 * MS);
    assert_int_equal(em_conn_count(W.t[0]), 0);
    assert_true(em_conn_stats(W.t[0])->hs_stranger >= 1);
    assert_int_equal(em_conn_state(W.t[1], i10), EM_CONN_FAILED);
    assert_int_equal(W.admitted[0].addr[0], 1);
    assert_true(W.admitted[0].nonce == nonce_of(1, 0));
    make(1, 1, false, 0);
    i10 = insert(1, 0, nonce_of(0, 0));
    em_conn_connect(W.t[1], i10, W.now);
    run(W.now + 1000 * MS);
    assert_int_equal(em_conn_count(W.t[0]), 1);
    assert_int_equal(em_conn_state(W.t[1], i10), EM_CONN_ESTABLISHED);
    assert_int_equal(W.admitted[0].ep, 7);
}

static void test_stranger_restarts_keep_one_slot(void **st)
{
    (void)st;
    world(14, 0, 0, 0);
    make(0, 0, true, 4);
    for (unsigned k = 0; k < 10; k++) {
        make(1, k, false, 0);
        uint32_t i = insert(1, 0, nonce_of(0, 0));
        em_conn_connect(W.t[1], i, W.now);
        run(W.now + 1000 * MS);
        assert_int_equal(em_conn_state(W.t[1], i), EM_CONN_ESTABLISHED);
    }
    assert_int_equal(em_conn_count(W.t[0]), 1);
    assert_int_equal(em_conn_stats(W.t[0])->hs_restarts, 9);
    assert_int_equal(em_conn_stats(W.t[0])->hs_full, 0);
}

/* an ACCEPT naming other values for an established peer binds nothing */
static void test_accept_cannot_rebind(void **st)
{
    (void)st;
    world(15, 0, 0, 0);
    make(0, 0, false, 0);
    make(1, 0, false, 0);
    uint32_t i01 = insert(0, 1, nonce_of(1, 0)), i10 = insert(1, 0, nonce_of(0, 0));
    em_conn_connect(W.t[0], i01, W.now);
    run(W.now + 1000 * MS);
    em_conn_peer_t before;
    em_conn_peer(W.t[0], i01, &before);
    em_hs_t acc = { .type = EM_HS_ACCEPT,
                    .src_ep = 7,
                    .dst_ep = 7,
                    .src_nonce = nonce_of(1, 0),
                    .dst_nonce = nonce_of(0, 0),
                    .src_index = i10 + 1,
                    .dst_index = i01,
                    .isn = 77,
                    .token = 66 };
    assert_int_not_equal(forge_as(0, 1, acc), 0);
    em_conn_peer_t after;
    em_conn_peer(W.t[0], i01, &after);
    assert_true(before.remote_index == after.remote_index && before.tx_token == after.tx_token);
    assert_int_equal(W.again[0], 0);
}

static void test_index_reused_after_remove(void **st)
{
    (void)st;
    world(5, 0, 0, 0);
    make(0, 0, false, 0);
    make(1, 0, false, 0);
    uint32_t i01 = insert(0, 1, nonce_of(1, 0)), i10 = insert(1, 0, nonce_of(0, 0));
    em_conn_connect(W.t[0], i01, W.now);
    run(W.now + 1000 * MS);
    em_conn_peer_t p10;
    assert_int_equal(em_conn_peer(W.t[1], i10, &p10), 0);
    assert_int_equal(em_conn_remove(W.t[0], i01), 0);
    uint8_t a1 = 1;
    /* node 1's frames to the removed index are refused */
    assert_int_equal(em_conn_check(W.t[0], p10.remote_index, &a1, 1, p10.tx_token),
                     EM_CONN_CHK_INDEX);
    uint32_t again = insert(0, 1, nonce_of(1, 0));
    assert_int_equal(again & 0xFFFFFFu, i01 & 0xFFFFFFu); /* the same slot */
    assert_int_not_equal(again, i01);                     /* another generation */
    assert_int_equal(em_conn_check(W.t[0], i01, &a1, 1, p10.tx_token), EM_CONN_CHK_INDEX);
    em_conn_connect(W.t[0], again, W.now);
    run(W.now + 1000 * MS);
    assert_pair(0, again, 1, i10);
    assert_int_equal(W.again[1], 1); /* node 1 was told: its pair with 0 starts anew */
}

static void test_gives_up_on_silence(void **st)
{
    (void)st;
    world(6, 0, 0, 0);
    make(0, 0, false, 0);
    uint32_t i = insert(0, 5, 0); /* nobody at node 5 */
    em_conn_connect(W.t[0], i, W.now);
    run(W.now + 60000 * MS);
    assert_int_equal(W.failed[0], 1);
    assert_int_equal(em_conn_state(W.t[0], i), EM_CONN_FAILED);
    const em_conn_stats_t *s = em_conn_stats(W.t[0]);
    assert_int_equal(s->hs_gave_up, 1);
    assert_int_equal(s->hs_tx[0], 12); /* hs_tries INITs */
}

/* a frame the forger writes to @p to, naming reply address @p reply */
static int forge_as(unsigned to, uint8_t reply, em_hs_t h)
{
    uint8_t f[EM_HS_LEN];
    h.addr_len = 1;
    h.addr[0] = reply;
    em_hs_encode(&h, f);
    return em_conn_rx(W.t[to], f, sizeof f, W.now);
}
/* ... naming its own address (node NODES) */
static int forge(unsigned to, const em_hs_t *h) { return forge_as(to, NODES, *h); }

static void test_strangers_and_forgers_change_nothing(void **st)
{
    (void)st;
    world(7, 0, 0, 0);
    make(0, 0, false, 2); /* strangers off, room for 2 */
    make(1, 0, false, 0);
    uint32_t i01 = insert(0, 1, nonce_of(1, 0)), i10 = insert(1, 0, nonce_of(0, 0));
    em_conn_connect(W.t[0], i01, W.now);
    run(W.now + 1000 * MS);
    assert_pair(0, i01, 1, i10);
    em_conn_peer_t before;
    em_conn_peer(W.t[1], i10, &before);
    const em_conn_stats_t *s1 = em_conn_stats(W.t[1]);
    /* INIT from a stranger: a CHALLENGE, no state */
    em_hs_t init = { .type = EM_HS_INIT,
                     .src_ep = 7,
                     .dst_ep = 7,
                     .src_nonce = 99,
                     .src_index = 3,
                     .dst_index = EM_HS_NO_INDEX,
                     .isn = 1,
                     .token = 5 };
    uint32_t n1 = em_conn_count(W.t[1]);
    assert_int_equal(forge(1, &init), 0);
    assert_int_equal(em_conn_count(W.t[1]), n1);
    /* CONFIRM with a guessed cookie */
    em_hs_t conf = init;
    conf.type = EM_HS_CONFIRM;
    conf.dst_nonce = nonce_of(1, 0);
    conf.cookie_ms = (uint32_t)(W.now / MS);
    conf.cookie = 0x123456789abcdefull;
    assert_int_not_equal(forge(1, &conf), 0);
    assert_int_equal(s1->hs_cookie_bad, 1);
    /* node 0's cookie for its own address, claimed from the forger's: the
     * cookie covers the reply address */
    W.nq = 0;
    em_hs_t init0 = init;
    init0.src_nonce = nonce_of(0, 0);
    assert_int_equal(forge_as(1, 0, init0), 0); /* the CHALLENGE goes to node 0 ... */
    em_hs_t ch;
    assert_int_equal(em_hs_decode(W.last_sent, EM_HS_LEN, &ch), EM_HS_DEC_OK);
    assert_int_equal(ch.type, EM_HS_CHALLENGE);
    assert_int_equal(W.last_to, 0);
    em_hs_t steal = init0;
    steal.type = EM_HS_CONFIRM;
    steal.dst_nonce = nonce_of(1, 0);
    steal.cookie_ms = ch.cookie_ms;
    steal.cookie = ch.cookie;
    assert_int_not_equal(forge(1, &steal), 0);
    assert_int_equal(s1->hs_cookie_bad, 2);
    /* ... and a forger that read it off the wire and claims node 0's address
     * (its own parameters, and then a new incarnation): node 0 is still
     * heard, so its place is kept (may_replace) */
    W.heard[1] = true;
    assert_int_not_equal(forge_as(1, 0, steal), 0);
    steal.src_nonce = 4242;
    assert_int_not_equal(forge_as(1, 0, steal), 0);
    assert_int_equal(s1->hs_cookie_bad, 3); /* the cookie covers the nonce too */
    init0.src_nonce = 4242;
    assert_int_equal(forge_as(1, 0, init0), 0);
    assert_int_equal(em_hs_decode(W.last_sent, EM_HS_LEN, &ch), EM_HS_DEC_OK);
    steal.cookie_ms = ch.cookie_ms;
    steal.cookie = ch.cookie;
    assert_int_not_equal(forge_as(1, 0, steal), 0);
    assert_int_equal(s1->hs_replace_refused, 2);
    assert_int_equal(s1->hs_restarts, 0);
    assert_int_equal(W.asked[1], 2);
    W.heard[1] = false;
    /* a valid cookie of the forger's own address: a stranger, strangers off */
    assert_int_equal(forge(1, &init), 0);
    assert_int_equal(em_hs_decode(W.last_sent, EM_HS_LEN, &ch), EM_HS_DEC_OK);
    conf.cookie_ms = ch.cookie_ms;
    conf.cookie = ch.cookie;
    assert_int_not_equal(forge(1, &conf), 0);
    assert_int_equal(s1->hs_stranger, 1);
    /* ... and too late */
    W.now += 3000 * MS;
    assert_int_not_equal(forge(1, &conf), 0);
    assert_int_equal(s1->hs_cookie_old, 1);
    /* an ACCEPT for node 1's index for node 0 from the forger: wrong
     * address; with a wrong nonce: not for us */
    em_hs_t acc = { .type = EM_HS_ACCEPT,
                    .src_ep = 7,
                    .dst_ep = 7,
                    .src_nonce = nonce_of(0, 0),
                    .dst_nonce = nonce_of(1, 0),
                    .src_index = 9,
                    .dst_index = i10,
                    .isn = 77,
                    .token = 66 };
    assert_int_not_equal(forge(1, &acc), 0);
    assert_int_equal(s1->hs_unexpected, 1);
    acc.dst_nonce = 12345;
    assert_int_not_equal(forge(1, &acc), 0);
    assert_int_equal(s1->hs_not_us, 1);
    em_conn_peer_t after;
    em_conn_peer(W.t[1], i10, &after);
    assert_true(before.remote_index == after.remote_index && before.tx_token == after.tx_token &&
                before.rx_token == after.rx_token && before.tx_isn == after.tx_isn &&
                before.rx_isn == after.rx_isn);
    assert_int_equal(em_conn_count(W.t[1]), n1);
    /* the data path: another source, another token */
    uint8_t a2 = 2, a0 = 0;
    assert_int_equal(em_conn_check(W.t[1], i10, &a2, 1, before.rx_token), EM_CONN_CHK_SOURCE);
    assert_int_equal(em_conn_check(W.t[1], i10, &a0, 1, before.rx_token ^ 1), EM_CONN_CHK_TOKEN);
    assert_int_equal(em_conn_check(W.t[1], 0x00FFFFF0u, &a0, 1, before.rx_token),
                     EM_CONN_CHK_INDEX);
}

static void test_table_full_bounds_strangers(void **st)
{
    (void)st;
    world(8, 0, 0, 0);
    make(0, 0, true, 3);
    for (unsigned n = 1; n <= 5; n++) {
        make(n, 0, false, 0);
        uint32_t i = insert(n, 0, nonce_of(0, 0));
        em_conn_connect(W.t[n], i, W.now);
    }
    run(W.now + 60000 * MS);
    assert_int_equal(em_conn_count(W.t[0]), 3);
    assert_true(em_conn_stats(W.t[0])->hs_full >= 2);
    unsigned up = 0, down = 0;
    for (unsigned n = 1; n <= 5; n++) {
        up += W.established[n];
        down += W.failed[n];
    }
    assert_int_equal(up, 3);
    assert_int_equal(down, 2); /* the two refused gave up with a reason */
}

/* strangers that do receive at their addresses: at most max_strangers at
 * once however large the table; inserting one makes room */
static void test_strangers_bounded(void **st)
{
    (void)st;
    world(9, 0, 0, 0);
    make(0, 0, true, 0);
    em_conn_t *t0 = W.t[0];
    {
        /* rebuild node 0's table with the bound (make() knows no bound) */
        em_conn_cfg_t cfg;
        em_conn_cfg_default(&cfg);
        cfg.ep = 7;
        cfg.addr_len = 1;
        cfg.addr[0] = 0;
        cfg.nonce = nonce_of(0, 0);
        cfg.accept_strangers = true;
        cfg.max_strangers = 2;
        for (unsigned i = 0; i < EM_CONN_SECRET_LEN; i++)
            cfg.secret[i] = (uint8_t)(31 + i);
        em_conn_destroy(t0);
        W.t[0] = em_conn_create(&cfg, &OPS, (void *)(uintptr_t)0);
        assert_non_null(W.t[0]);
    }
    uint32_t idx[5];
    for (unsigned n = 1; n <= 4; n++) {
        make(n, 0, false, 0);
        idx[n] = insert(n, 0, nonce_of(0, 0));
        em_conn_connect(W.t[n], idx[n], W.now);
    }
    run(W.now + 1000 * MS);
    assert_int_equal(em_conn_count(W.t[0]), 2);
    assert_true(em_conn_stats(W.t[0])->hs_strangers_full >= 2);
    unsigned up = 0;
    for (unsigned n = 1; n <= 4; n++)
        up += em_conn_state(W.t[n], idx[n]) == EM_CONN_ESTABLISHED;
    assert_int_equal(up, 2);
    /* the owner inserts one of the two waiting: it is a peer now, and
     * its own retried CONFIRM binds it; a stranger's place stays full */
    unsigned waiting = 0;
    for (unsigned n = 1; n <= 4 && !waiting; n++)
        if (em_conn_state(W.t[n], idx[n]) != EM_CONN_ESTABLISHED)
            waiting = n;
    assert_true(waiting != 0);
    (void)insert(0, waiting, nonce_of(waiting, 0));
    run(W.now + 2000 * MS);
    assert_int_equal(em_conn_state(W.t[waiting], idx[waiting]), EM_CONN_ESTABLISHED);
    assert_int_equal(em_conn_count(W.t[0]), 3);
    up = 0;
    for (unsigned n = 1; n <= 4; n++)
        up += em_conn_state(W.t[n], idx[n]) == EM_CONN_ESTABLISHED;
    assert_int_equal(up, 3);
}

static void test_decoder_refusals_counted(void **st)
{
    (void)st;
    world(9, 0, 0, 0);
    make(0, 0, false, 0);
    uint8_t f[EM_HS_LEN];
    em_hs_t h = { .type = EM_HS_INIT,
                  .src_ep = 7,
                  .dst_ep = 7,
                  .src_nonce = 1,
                  .src_index = 0,
                  .dst_index = EM_HS_NO_INDEX,
                  .token = 1,
                  .addr_len = 1,
                  .addr = { 1 } };
    em_hs_encode(&h, f);
    assert_int_equal(em_conn_rx(W.t[0], f, 10, W.now), EM_HS_DEC_SHORT);
    f[1] = 2;
    assert_int_equal(em_conn_rx(W.t[0], f, sizeof f, W.now), EM_HS_DEC_VERSION);
    f[1] = 3;
    f[3] = 1; /* flags */
    assert_int_equal(em_conn_rx(W.t[0], f, sizeof f, W.now), EM_HS_DEC_MALFORMED);
    f[3] = 0;
    f[2] = 20;
    assert_int_equal(em_conn_rx(W.t[0], f, sizeof f, W.now), EM_HS_DEC_TYPE);
    h.src_nonce = 0;
    em_hs_encode(&h, f);
    assert_int_equal(em_conn_rx(W.t[0], f, sizeof f, W.now), EM_HS_DEC_MALFORMED);
    h.src_nonce = 1;
    h.type = EM_HS_CHALLENGE; /* must not carry an index of its own */
    h.dst_nonce = nonce_of(0, 0);
    h.dst_index = 0;
    em_hs_encode(&h, f);
    assert_int_equal(em_conn_rx(W.t[0], f, sizeof f, W.now), EM_HS_DEC_MALFORMED);
    /* the reply address: none, too long, padding after it not zero */
    h = (em_hs_t){ .type = EM_HS_INIT,
                   .src_ep = 7,
                   .dst_ep = 7,
                   .src_nonce = 1,
                   .src_index = 0,
                   .dst_index = EM_HS_NO_INDEX,
                   .token = 1,
                   .addr_len = 1,
                   .addr = { 1 } };
    em_hs_encode(&h, f);
    f[64] = 0;
    assert_int_equal(em_conn_rx(W.t[0], f, sizeof f, W.now), EM_HS_DEC_MALFORMED);
    f[64] = EM_HS_ADDR_MAX + 1;
    assert_int_equal(em_conn_rx(W.t[0], f, sizeof f, W.now), EM_HS_DEC_MALFORMED);
    f[64] = 1;
    f[EM_HS_LEN - 1] = 9;
    assert_int_equal(em_conn_rx(W.t[0], f, sizeof f, W.now), EM_HS_DEC_MALFORMED);
    f[EM_HS_LEN - 1] = 0;
    assert_int_equal(em_conn_rx(W.t[0], f, sizeof f, W.now), 0); /* the same, well formed */
    const em_conn_stats_t *s = em_conn_stats(W.t[0]);
    assert_int_equal(s->hs_dec[EM_HS_DEC_SHORT], 1);
    assert_int_equal(s->hs_dec[EM_HS_DEC_MALFORMED], 6);
    char line[1024];
    em_conn_stats_format(W.t[0], line, sizeof line);
    assert_non_null(strstr(line, "hs_malformed 6"));
}

/* a table with ep_max refuses names of endpoints above it: one address
 * cannot mint strangers beyond its endpoints */
static void test_endpoint_index_bounded(void **st)
{
    (void)st;
    world(12, 0, 0, 0);
    em_conn_cfg_t cfg;
    em_conn_cfg_default(&cfg);
    cfg.ep = 7;
    cfg.addr_len = 1;
    cfg.nonce = nonce_of(0, 0);
    cfg.accept_strangers = true;
    cfg.ep_max = 15;
    W.t[0] = em_conn_create(&cfg, &OPS, (void *)(uintptr_t)0);
    assert_non_null(W.t[0]);
    em_hs_t init = { .type = EM_HS_INIT,
                     .src_ep = 16,
                     .dst_ep = 7,
                     .src_nonce = 99,
                     .src_index = 3,
                     .dst_index = EM_HS_NO_INDEX,
                     .isn = 1,
                     .token = 5 };
    assert_int_not_equal(forge(0, &init), 0);
    assert_int_equal(em_conn_stats(W.t[0])->hs_bad_ep, 1);
    assert_int_equal(em_conn_stats(W.t[0])->hs_tx[1], 0); /* no CHALLENGE */
    init.src_ep = 15;
    assert_int_equal(forge(0, &init), 0);
    assert_int_equal(em_conn_stats(W.t[0])->hs_tx[1], 1);
}

static int teardown(void **st)
{
    (void)st;
    for (unsigned i = 0; i <= NODES; i++) {
        em_conn_destroy(W.t[i]);
        W.t[i] = NULL;
    }
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_one_side_starts, teardown),
        cmocka_unit_test_teardown(test_nonce_learned_from_address_and_index, teardown),
        cmocka_unit_test_teardown(test_simultaneous_clean_wire, teardown),
        cmocka_unit_test_teardown(test_loss_duplication_reordering, teardown),
        cmocka_unit_test_teardown(test_restarted_peer_is_a_new_peer, teardown),
        cmocka_unit_test_teardown(test_restart_of_an_inserted_peer, teardown),
        cmocka_unit_test_teardown(test_stranger_restarts_keep_one_slot, teardown),
        cmocka_unit_test_teardown(test_admit_picks_strangers, teardown),
        cmocka_unit_test_teardown(test_accept_cannot_rebind, teardown),
        cmocka_unit_test_teardown(test_index_reused_after_remove, teardown),
        cmocka_unit_test_teardown(test_gives_up_on_silence, teardown),
        cmocka_unit_test_teardown(test_strangers_and_forgers_change_nothing, teardown),
        cmocka_unit_test_teardown(test_table_full_bounds_strangers, teardown),
        cmocka_unit_test_teardown(test_strangers_bounded, teardown),
        cmocka_unit_test_teardown(test_decoder_refusals_counted, teardown),
        cmocka_unit_test_teardown(test_endpoint_index_bounded, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
