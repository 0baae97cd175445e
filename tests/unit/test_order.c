/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of src/engine/order.c, the one-order-over-several-links layer
 * under the BTL glue: messages numbered by the sender are handed on in
 * number order exactly once, whatever order, duplication and link mix
 * they arrive in; early ones are kept as copies; malformed ones dropped.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/order.h"

#define MAXLEN 64

/* what the receiver handed on */
struct sink {
    uint32_t n;
    uint32_t cap;
    uint32_t *first_word; /* payload word 0: the sender's index of the message */
    void **origin;
    uint8_t *tag;
    int stop_after; /* return 1 once n reaches this (0: never) */
};

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static void wr32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static int sink_fn(void *ctx, void *origin, uint8_t tag, const uint8_t *data, size_t len)
{
    struct sink *s = ctx;
    assert_true(len >= 4);
    assert_true(s->n < s->cap);
    uint32_t idx = rd32(data);
    /* the payload is intact: byte i of message idx is (idx * 7 + i) & 0xff */
    for (size_t i = 4; i < len; i++)
        assert_int_equal(data[i], (uint8_t)(idx * 7u + i));
    s->first_word[s->n] = idx;
    s->origin[s->n] = origin;
    s->tag[s->n] = tag;
    s->n++;
    return s->stop_after && s->n >= (uint32_t)s->stop_after;
}

static void sink_init(struct sink *s, uint32_t cap)
{
    memset(s, 0, sizeof *s);
    s->cap = cap;
    s->first_word = calloc(cap, sizeof *s->first_word);
    s->origin = calloc(cap, sizeof *s->origin);
    s->tag = calloc(cap, 1);
    assert_non_null(s->first_word);
    assert_non_null(s->origin);
    assert_non_null(s->tag);
}

static void sink_fini(struct sink *s)
{
    free(s->first_word);
    free(s->origin);
    free(s->tag);
}

/* message idx as the sender builds it: number, then payload */
struct msg {
    uint8_t b[EM_ORDER_HDR + MAXLEN];
    size_t len;
    uint8_t tag;
    int link;
};

static void build(em_order_t *tx, struct msg *m, uint32_t idx, unsigned seed)
{
    size_t plen = 4 + (seed % (MAXLEN - 3));
    em_order_stamp(tx, m->b);
    em_order_sent(tx);
    wr32(m->b + EM_ORDER_HDR, idx);
    for (size_t i = 4; i < plen; i++)
        m->b[EM_ORDER_HDR + i] = (uint8_t)(idx * 7u + i);
    m->len = EM_ORDER_HDR + plen;
    m->tag = (uint8_t)(65 + idx % 9);
    m->link = (int)(seed % 2);
}

/* Messages n-1 .. 1 arrive before message 0: each one is kept. */
static void keep_all_but_first(em_order_t *rx, struct msg *m, struct sink *s, int n)
{
    for (int i = n - 1; i >= 1; i--)
        assert_int_equal(em_order_rx(rx, NULL, m[i].tag, m[i].b, m[i].len, sink_fn, s),
                         EM_ORDER_KEPT);
}

/* A sink for n messages and messages 0 .. n-1 numbered by tx (tag = i). */
static void prepare(em_order_t *tx, struct msg *m, struct sink *s, uint32_t n)
{
    sink_init(s, n);
    for (uint32_t i = 0; i < n; i++)
        build(tx, &m[i], i, i);
}

static void test_in_order_passes_through(void **state)
{
    (void)state;
    em_order_t tx = { 0 }, rx = { 0 };
    struct sink s;
    sink_init(&s, 100);
    int links[2];
    for (uint32_t i = 0; i < 100; i++) {
        struct msg m;
        build(&tx, &m, i, i * 13u);
        assert_int_equal(em_order_rx(&rx, &links[m.link], m.tag, m.b, m.len, sink_fn, &s),
                         EM_ORDER_DELIVERED);
        assert_int_equal(s.n, i + 1);
        assert_int_equal(s.first_word[i], i);
        assert_ptr_equal(s.origin[i], &links[m.link]);
        assert_int_equal(s.tag[i], m.tag);
    }
    assert_int_equal(rx.kept, 0);
    assert_int_equal(rx.dropped, 0);
    assert_int_equal(rx.nheld, 0);
    assert_int_equal(tx.tx_next, 100);
    assert_int_equal(rx.rx_next, 100);
    sink_fini(&s);
}

static void test_reverse_is_kept_then_drained(void **state)
{
    (void)state;
    em_order_t tx = { 0 }, rx = { 0 };
    struct msg m[8];
    struct sink s;
    prepare(&tx, m, &s, 8);
    keep_all_but_first(&rx, m, &s, 8);
    assert_int_equal(s.n, 0);
    assert_int_equal(rx.nheld, 7);
    /* the kept copies do not depend on the sender's buffers */
    for (int i = 1; i < 8; i++)
        memset(m[i].b, 0xee, sizeof m[i].b);
    assert_int_equal(em_order_rx(&rx, NULL, m[0].tag, m[0].b, m[0].len, sink_fn, &s),
                     EM_ORDER_DELIVERED);
    assert_int_equal(s.n, 8);
    for (uint32_t i = 0; i < 8; i++)
        assert_int_equal(s.first_word[i], i);
    assert_int_equal(rx.nheld, 0);
    assert_int_equal(rx.kept, 7);
    sink_fini(&s);
}

static void test_malformed_and_stale_dropped(void **state)
{
    (void)state;
    em_order_t tx = { 0 }, rx = { 0 };
    struct sink s;
    sink_init(&s, 4);
    struct msg a, b;
    build(&tx, &a, 0, 1);
    build(&tx, &b, 1, 2);
    /* too short to hold a number */
    assert_int_equal(em_order_rx(&rx, NULL, 65, a.b, 3, sink_fn, &s), EM_ORDER_DROPPED);
    assert_int_equal(em_order_rx(&rx, NULL, 65, a.b, 0, sink_fn, &s), EM_ORDER_DROPPED);
    /* early, then the same number again while kept */
    assert_int_equal(em_order_rx(&rx, NULL, b.tag, b.b, b.len, sink_fn, &s), EM_ORDER_KEPT);
    assert_int_equal(em_order_rx(&rx, NULL, b.tag, b.b, b.len, sink_fn, &s), EM_ORDER_DROPPED);
    assert_int_equal(em_order_rx(&rx, NULL, a.tag, a.b, a.len, sink_fn, &s), EM_ORDER_DELIVERED);
    /* stale: already handed on */
    assert_int_equal(em_order_rx(&rx, NULL, a.tag, a.b, a.len, sink_fn, &s), EM_ORDER_DROPPED);
    assert_int_equal(em_order_rx(&rx, NULL, b.tag, b.b, b.len, sink_fn, &s), EM_ORDER_DROPPED);
    assert_int_equal(s.n, 2);
    assert_int_equal(rx.dropped, 5);
    assert_int_equal(rx.rx_next, 2);
    sink_fini(&s);
}

/* Two links, each in order (an engine delivers in order), interleaved at
 * random, with a sender that puts messages on either link: the receiver
 * hands everything on exactly once, in order.  Duplicates of delivered
 * messages (a misbehaving peer) are dropped and counted. */
static void run_two_links(uint32_t start, uint32_t n, unsigned seed, int dups)
{
    em_order_t tx = { .tx_next = start }, rx = { .rx_next = start };
    struct msg *m = calloc(n, sizeof *m);
    uint32_t *q[2], qn[2] = { 0, 0 }, qh[2] = { 0, 0 };
    q[0] = calloc(n, sizeof *q[0]);
    q[1] = calloc(n, sizeof *q[1]);
    assert_non_null(m);
    struct sink s;
    sink_init(&s, n);
    srand(seed);
    for (uint32_t i = 0; i < n; i++) {
        build(&tx, &m[i], i, (unsigned)rand());
        q[m[i].link][qn[m[i].link]++] = i;
    }
    uint64_t dropped = 0;
    int links[2];
    while (qh[0] < qn[0] || qh[1] < qn[1]) {
        /* one link runs ahead for a while (a retransmission on the other) */
        int l = qh[0] == qn[0] ? 1 : qh[1] == qn[1] ? 0 : rand() % 2;
        int burst = 1 + rand() % 6;
        while (burst-- && qh[l] < qn[l]) {
            struct msg *x = &m[q[l][qh[l]++]];
            em_order_rx(&rx, &links[l], x->tag, x->b, x->len, sink_fn, &s);
            if (dups && rand() % 10 == 0 && s.n > 0) {
                struct msg *d = &m[s.first_word[rand() % s.n]];
                assert_int_equal(
                    em_order_rx(&rx, &links[d->link], d->tag, d->b, d->len, sink_fn, &s),
                    EM_ORDER_DROPPED);
                dropped++;
            }
        }
    }
    assert_int_equal(s.n, n);
    for (uint32_t i = 0; i < n; i++) {
        assert_int_equal(s.first_word[i], i);
        assert_ptr_equal(s.origin[i], &links[m[i].link]);
        assert_int_equal(s.tag[i], m[i].tag);
    }
    assert_int_equal(rx.nheld, 0);
    assert_null(rx.held);
    assert_int_equal(rx.dropped, dropped);
    assert_int_equal(rx.rx_next, start + n);
    assert_true(rx.kept > 0);
    sink_fini(&s);
    free(q[0]);
    free(q[1]);
    free(m);
}

static void test_two_links_random(void **state)
{
    (void)state;
    for (unsigned seed = 1; seed <= 20; seed++)
        run_two_links(0, 5000, seed, 0);
}

static void test_two_links_with_duplicates(void **state)
{
    (void)state;
    for (unsigned seed = 1; seed <= 10; seed++)
        run_two_links(0, 3000, seed, 1);
}

static void test_number_wraps(void **state)
{
    (void)state;
    run_two_links(0xfffffff0u, 2000, 7, 1);
}

static void test_stop_keeps_the_rest(void **state)
{
    (void)state;
    em_order_t tx = { 0 }, rx = { 0 };
    struct msg m[5];
    struct sink s;
    prepare(&tx, m, &s, 5);
    keep_all_but_first(&rx, m, &s, 5);
    s.stop_after = 2; /* the receiver stops after two (finalizing) */
    assert_int_equal(em_order_rx(&rx, NULL, m[0].tag, m[0].b, m[0].len, sink_fn, &s),
                     EM_ORDER_DELIVERED);
    assert_int_equal(s.n, 2);
    assert_int_equal(rx.nheld, 3);
    /* the rest is freed by a reset (ASan: nothing leaks) */
    em_order_reset(&rx);
    assert_int_equal(rx.nheld, 0);
    assert_null(rx.held);
    sink_fini(&s);
}

/* A peer that keeps sending messages ahead of one that never comes (issue
 * 13, M2): kept up to max_held / max_bytes, then EM_ORDER_OVERFLOW (the BTL
 * fails the peer), and nothing grows past the budget. */
static void test_budget_overflows(void **state)
{
    (void)state;
    em_order_t tx = { 0 }, rx = { .max_held = 100, .max_bytes = 1 << 20 };
    struct sink s;
    sink_init(&s, 300);
    struct msg m;
    build(&tx, &m, 0, 0); /* number 0: never arrives */
    for (uint32_t i = 1; i <= 100; i++) {
        build(&tx, &m, i, i);
        assert_int_equal(em_order_rx(&rx, NULL, m.tag, m.b, m.len, sink_fn, &s), EM_ORDER_KEPT);
    }
    build(&tx, &m, 101, 101);
    assert_int_equal(em_order_rx(&rx, NULL, m.tag, m.b, m.len, sink_fn, &s), EM_ORDER_OVERFLOW);
    assert_int_equal(rx.nheld, 100);
    assert_int_equal(s.n, 0);
    /* by bytes: 2 messages of 60 payload bytes fit 150 bytes, the 3rd does not */
    em_order_t tx2 = { 0 }, rx2 = { .max_bytes = 150 };
    build(&tx2, &m, 0, 0);
    unsigned kept = 0, over = 0;
    for (uint32_t i = 1; i <= 10; i++) {
        build(&tx2, &m, i, 56); /* 4 + 56 = 60 payload bytes */
        int rc = em_order_rx(&rx2, NULL, m.tag, m.b, m.len, sink_fn, &s);
        kept += rc == EM_ORDER_KEPT;
        over += rc == EM_ORDER_OVERFLOW;
    }
    assert_int_equal(kept, 2);
    assert_int_equal(over, 8);
    assert_true(rx2.bytes_held <= 150);
    em_order_reset(&rx);
    em_order_reset(&rx2);
    assert_int_equal(rx.bytes_held, 0);
    sink_fini(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_in_order_passes_through),
        cmocka_unit_test(test_reverse_is_kept_then_drained),
        cmocka_unit_test(test_malformed_and_stale_dropped),
        cmocka_unit_test(test_two_links_random),
        cmocka_unit_test(test_two_links_with_duplicates),
        cmocka_unit_test(test_number_wraps),
        cmocka_unit_test(test_stop_keeps_the_rest),
        cmocka_unit_test(test_budget_overflows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
