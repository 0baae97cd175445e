/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The op pools (prov/emo_op.c emo_op_new / emo_op_free): the copies of
 * injects are kept for the next send, in rooms of 32, 64, 128 and 256 KiB
 * of message (never over the inject size), up to EMO_OP_CACHE_BYTES per
 * endpoint.  IMB's Uniband has 256 injects of up to 256 KiB in flight: a
 * cache of 64 per size freed the rest to malloc, and glibc trimmed and
 * refaulted its heap on every window (docs/ofi.md "Send buffers are
 * reused").  And the small ops (every send's header) come from free lists.
 * No engine is needed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "emo_rdv.h"

static struct emo_ep ep;

static void fresh(size_t inject_max)
{
    emo_op_cache_drain(&ep); /* the last test's small-op chunks */
    memset(&ep, 0, sizeof ep);
    ep.inject_max = inject_max;
    emo_op_pools_init(&ep);
}

#define HDRS (EMO_HDR_LEN + EMO_ADDR_LEN)

static void test_rooms(void **state)
{
    (void)state;
    fresh(262144);
    assert_int_equal(ep.op_pool[0].cap, HDRS + 32768);
    assert_int_equal(ep.op_pool[3].cap, HDRS + 262144);
    /* the smallest room that holds the message */
    emo_op_t *a = emo_op_new(&ep, EMO_OP_EAGER, HDRS + 40000);
    emo_op_t *b = emo_op_new(&ep, EMO_OP_EAGER, HDRS + 131072);
    emo_op_t *c = emo_op_new(&ep, EMO_OP_EAGER, 100); /* small: a small pool's */
    assert_int_equal(a->msg_cap, HDRS + 65536);
    assert_int_equal(b->msg_cap, HDRS + 131072);
    assert_int_equal(c->msg_cap, EMO_OP_SMALL_ROOM);
    emo_op_free(a);
    emo_op_free(b);
    emo_op_free(c);
    assert_int_equal(ep.op_cached, 2 * HDRS + 65536 + 131072);
    emo_op_cache_drain(&ep);
    assert_int_equal(ep.op_cached, 0);
    /* an inject size under 32 KiB: one room, the inject size */
    fresh(8192);
    assert_int_equal(ep.op_pool[0].cap, HDRS + 8192);
    for (unsigned i = 1; i < EMO_OP_POOLS; i++)
        assert_int_equal(ep.op_pool[i].cap, 0);
}

/* 256 copies of 128 KiB in flight, freed, then 256 again: the pool keeps
 * all of the first window and hands all of them to the second (no malloc,
 * no fault); and it never holds more than its budget */
static void test_window_reused(void **state)
{
    (void)state;
    fresh(262144);
    enum { W = 256 };
    emo_op_t *w[W];
    for (int i = 0; i < W; i++)
        assert_non_null(w[i] = emo_op_new(&ep, EMO_OP_EAGER, HDRS + 131072));
    for (int i = 0; i < W; i++)
        emo_op_free(w[i]);
    assert_int_equal(ep.op_cached, (size_t)W * (HDRS + 131072)); /* all kept */
    emo_op_t *again[W];
    for (int i = 0; i < W; i++)
        assert_non_null(again[i] = emo_op_new(&ep, EMO_OP_EAGER, HDRS + 131072));
    assert_int_equal(ep.op_cached, 0); /* all of them from the pool */
    for (int i = 0; i < W; i++)
        emo_op_free(again[i]);
    /* over the budget: the rest go back to malloc */
    enum { N = (EMO_OP_CACHE_BYTES / (HDRS + 262144)) + 10 };
    static emo_op_t *big[N];
    for (int i = 0; i < N; i++)
        assert_non_null(big[i] = emo_op_new(&ep, EMO_OP_EAGER, HDRS + 262144));
    for (int i = 0; i < N; i++)
        emo_op_free(big[i]);
    assert_true(ep.op_cached <= EMO_OP_CACHE_BYTES);
    emo_op_cache_drain(&ep);
}

/* small ops (headers, control messages, small inject copies) come from
 * the endpoint's free lists: a freed one is the next one handed out (no
 * malloc per send), more than a chunk in flight grows the list, and the
 * send budget counts their message bytes as before */
static void test_small_reused(void **state)
{
    (void)state;
    fresh(262144);
    emo_op_t *h = emo_op_new(&ep, EMO_OP_CTRL, EMO_HDR_LEN);
    emo_op_t *s = emo_op_new(&ep, EMO_OP_EAGER, EMO_OP_LARGE - 1);
    assert_non_null(h);
    assert_non_null(s);
    assert_int_equal(h->msg_cap, EMO_OP_SMALL_ROOM);
    assert_int_equal(s->msg_cap, EMO_OP_LARGE - 1);
    assert_int_equal(ep.op_live, EMO_HDR_LEN + EMO_OP_LARGE - 1);
    memset(s->msg, 0xA5, s->msg_len); /* all of its room is its own */
    emo_op_free(h);
    emo_op_free(s);
    assert_int_equal(ep.op_live, 0);
    assert_ptr_equal(emo_op_new(&ep, EMO_OP_RRECV, 0), h); /* the same op again */
    emo_op_free(h);
    enum { N = 3 * EMO_OP_CHUNK + 5 };
    static emo_op_t *w[N];
    for (int i = 0; i < N; i++) {
        assert_non_null(w[i] = emo_op_new(&ep, EMO_OP_EAGER, EMO_HDR_LEN));
        for (int k = 0; k < i; k++)
            assert_ptr_not_equal(w[k], w[i]);
    }
    assert_int_equal(ep.op_live, (size_t)N * EMO_HDR_LEN);
    for (int i = 0; i < N; i++)
        emo_op_free(w[i]);
    assert_int_equal(ep.op_live, 0);
    assert_int_equal(ep.op_cached, 0); /* the large pools' count is theirs alone */
    emo_op_cache_drain(&ep);
    assert_null(ep.op_chunks);
}

int main(void)
{
    const struct CMUnitTest tests[] = { cmocka_unit_test(test_rooms),
                                        cmocka_unit_test(test_window_reused),
                                        cmocka_unit_test(test_small_reused) };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
