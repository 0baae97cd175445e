/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The engine's RMA reads and atomics (em_engine_get, em_engine_atomic;
 * src/engine/rma.c) between two engines over link_sim, clean and with
 * loss, duplication and reordering: each atomic applied exactly once (a
 * counter ends at the number of adds, and the fetched values are every
 * value once), gets of one and of many frames, refusals (bad key, bad id,
 * out of bounds, read-only, write-only with a fetch, misaligned) failing
 * at the initiator with -EM_EACCES and leaving the target untouched, a
 * forged get longer than one answer carries (refused, counted, answered),
 * the request budget, and completions when the peer fails or the engine
 * ends; em_engine_reset_peer: a get, an atomic and a send in flight end
 * with -EM_ECANCELED at once, a reset from their callbacks is refused, and
 * the pair, reset on both sides and keyed anew, talks again while the old
 * frames are refused by the key.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/engine.h"
#include "engine/engine_internal.h" /* em_rma_recv: a request no initiator of ours builds */
#include "link/link_sim.h"

#define NOPS 600 /* more than the budget: the initiator waits for room */

static em_sim_t *SIM;
static em_engine_t *E[2];

struct op {
    em_proto_op_t pop;
    int done;
    int status;
    uint64_t old;
};

static void on_recv(void *u, uint32_t peer, uint8_t tag, const void *d, size_t len)
{
    (void)u, (void)peer, (void)d, (void)len;
    fail_msg("the owner got a message with tag %u: the engine's RMA tag leaked", tag);
}

/* reset_peer: each completion tries a reset from inside the callback */
static int nested_reset = 1;

static void on_complete(void *u, void *ctx, int status)
{
    (void)u;
    if (nested_reset <= 0)
        nested_reset = em_engine_reset_peer(E[0], 1);
    struct op *o = ctx;
    assert_int_equal(o->done, 0); /* once */
    o->done = 1;
    o->status = status;
}

static void world(double loss, double dup, double reorder, uint32_t max_retries)
{
    em_sim_cfg_t sc;
    em_sim_cfg_default(&sc);
    sc.loss = loss;
    sc.dup = dup;
    sc.reorder = reorder;
    sc.seed = 7;
    SIM = em_sim_create(2, &sc);
    assert_non_null(SIM);
    for (unsigned n = 0; n < 2; n++) {
        em_proto_cfg_t pc;
        em_proto_cfg_default(&pc);
        pc.self = (uint32_t)n;
        pc.npeers = 2;
        pc.frame_max = sc.mtu;
        pc.max_msg = 64 * 1024;
        if (max_retries) {
            pc.max_retries = max_retries;
            pc.rto_max_ns = 2000000;
            pc.resend_after_ns = 0;
        }
        em_engine_ops_t ops = { .recv = on_recv, .complete = on_complete };
        int err;
        E[n] = em_engine_create(em_sim_link(SIM, n), &pc, &ops, NULL, &err);
        assert_non_null(E[n]);
    }
    for (unsigned n = 0; n < 2; n++)
        assert_int_equal(
            em_engine_set_peer(E[n], (uint32_t)(1 - n), &em_sim_link(SIM, 1 - n)->local), 0);
}

static void end_world(void)
{
    for (unsigned n = 0; n < 2; n++)
        em_engine_destroy(E[n]);
    em_sim_destroy(SIM);
}

static void round_(void)
{
    em_sim_set_now(SIM, em_now_ns());
    (void)em_engine_progress(E[0]);
    (void)em_engine_progress(E[1]);
}

static void wait_done(struct op *o)
{
    for (long i = 0; !o->done; i++) {
        assert_true(i < 50000000L);
        round_();
    }
}

/* NOPS fetch-and-adds of 1 (every third without the fetch) from engine 0
 * into a counter of engine 1, as fast as the budget lets them go. */
static void exactly_once(double loss, double dup, double reorder)
{
    world(loss, dup, reorder, 0);
    uint64_t *mem = aligned_alloc(64, 4096);
    memset(mem, 0, 4096);
    em_region_handle_t h;
    assert_int_equal(em_engine_register_ex(E[1], mem, 4096, EM_REGION_WRITE | EM_REGION_READ, &h),
                     0);
    struct op *ops = calloc(NOPS, sizeof *ops);
    uint64_t one = 1;
    em_atomic_desc_t d = { .op = EM_AOP_SUM, .type = EM_ATYPE_UINT64, .count = 1, .operand = &one };
    unsigned issued = 0, fetching = 0;
    while (issued < NOPS) {
        bool fetch = issued % 3 != 0;
        int rc = em_engine_atomic(E[0], &ops[issued].pop, 1, &h, 8, &d,
                                  fetch ? &ops[issued].old : NULL, &ops[issued]);
        if (rc == -EM_EAGAIN) {
            round_();
            continue;
        }
        assert_int_equal(rc, 0);
        fetching += fetch;
        issued++;
    }
    for (unsigned i = 0; i < NOPS; i++)
        wait_done(&ops[i]);
    assert_int_equal(mem[1], NOPS); /* each applied once: none lost, none twice */
    uint8_t *seen = calloc(NOPS, 1);
    uint64_t prev = 0;
    for (unsigned i = 0; i < NOPS; i++) {
        assert_int_equal(ops[i].status, 0);
        if (i % 3 == 0)
            continue;
        assert_true(ops[i].old < NOPS);
        assert_int_equal(seen[ops[i].old], 0);
        seen[ops[i].old] = 1;
        /* one peer's requests are applied in the order they were made */
        assert_true(i < 3 || ops[i].old > prev);
        prev = ops[i].old;
    }
    const em_engine_stats_t *st = em_engine_stats(E[1]);
    assert_int_equal(st->rma_atomics_applied, NOPS);
    assert_int_equal(st->rma_refused, 0);
    if (loss > 0)
        assert_true(em_engine_proto_stats(E[0])->retransmits +
                        em_engine_proto_stats(E[1])->retransmits >
                    0);
    if (dup > 0)
        assert_true(em_engine_proto_stats(E[1])->rx_dups > 0);
    free(seen);
    free(ops);
    end_world();
    free(mem);
}

static void once_clean(void **s)
{
    (void)s;
    exactly_once(0, 0, 0);
}
static void once_lossy(void **s)
{
    (void)s;
    exactly_once(0.05, 0.05, 0.1);
}
static void once_hostile(void **s)
{
    (void)s;
    exactly_once(0.2, 0.2, 0.3);
}

/* CSWAP, SWAP, READ, MIN from both sides at once, and gets of one frame and of many */
static void ops_and_gets(void **s)
{
    (void)s;
    world(0.05, 0.05, 0.1, 0);
    uint8_t *mem[2];
    em_region_handle_t h[2];
    for (unsigned n = 0; n < 2; n++) {
        mem[n] = aligned_alloc(64, 65536);
        for (unsigned i = 0; i < 65536; i++)
            mem[n][i] = (uint8_t)(i * 7 + n);
        assert_int_equal(
            em_engine_register_ex(E[n], mem[n], 65536, EM_REGION_WRITE | EM_REGION_READ, &h[n]), 0);
    }
    assert_true(em_engine_get_max(E[0]) >= 60000 && em_engine_get_max(E[0]) < 64 * 1024);
    uint8_t *buf[2] = { malloc(60000), malloc(60000) };
    struct op g[2] = { 0 }, g1[2] = { 0 };
    for (unsigned n = 0; n < 2; n++) {
        assert_int_equal(
            em_engine_get(E[n], &g[n].pop, (uint32_t)(1 - n), &h[1 - n], 100, buf[n], 60000, &g[n]),
            0);
        assert_int_equal(
            em_engine_get(E[n], &g1[n].pop, (uint32_t)(1 - n), &h[1 - n], 3, &g1[n].old, 8, &g1[n]),
            0);
    }
    for (unsigned n = 0; n < 2; n++) {
        wait_done(&g[n]);
        wait_done(&g1[n]);
        assert_int_equal(g[n].status, 0);
        assert_int_equal(g1[n].status, 0);
        assert_memory_equal(buf[n], mem[1 - n] + 100, 60000);
        assert_memory_equal(&g1[n].old, mem[1 - n] + 3, 8);
    }
    /* engine 0 on engine 1's words: CSWAP that succeeds, one that fails,
     * a 32-bit swap, a READ and a MIN of doubles */
    uint64_t *w = (uint64_t *)mem[1];
    w[0] = 10;
    w[1] = 20;
    ((uint32_t *)w)[4] = 5;
    ((double *)w)[3] = 2.5;
    uint64_t newv = 11, cmp_ok = 10, cmp_bad = 99;
    uint32_t s32 = 77;
    double dmin = -1.5;
    struct op o[5] = { 0 };
    em_atomic_desc_t d[5] = {
        { .op = EM_AOP_CSWAP,
          .type = EM_ATYPE_UINT64,
          .count = 1,
          .operand = &newv,
          .compare = &cmp_ok },
        { .op = EM_AOP_CSWAP,
          .type = EM_ATYPE_UINT64,
          .count = 1,
          .operand = &newv,
          .compare = &cmp_bad },
        { .op = EM_AOP_WRITE, .type = EM_ATYPE_UINT32, .count = 1, .operand = &s32 },
        { .op = EM_AOP_READ, .type = EM_ATYPE_INT64, .count = 1 },
        { .op = EM_AOP_MIN, .type = EM_ATYPE_DOUBLE, .count = 1, .operand = &dmin },
    };
    uint64_t off[5] = { 0, 8, 16, 8, 24 };
    for (unsigned i = 0; i < 5; i++)
        assert_int_equal(
            em_engine_atomic(E[0], &o[i].pop, 1, &h[1], off[i], &d[i], &o[i].old, &o[i]), 0);
    for (unsigned i = 0; i < 5; i++) {
        wait_done(&o[i]);
        assert_int_equal(o[i].status, 0);
    }
    assert_int_equal(o[0].old, 10);
    assert_int_equal(o[1].old, 20);
    assert_int_equal((uint32_t)o[2].old, 5);
    assert_int_equal(o[3].old, 20);
    double was;
    memcpy(&was, &o[4].old, 8);
    assert_true(was == 2.5);
    assert_int_equal(w[0], 11);
    assert_int_equal(w[1], 20);
    assert_int_equal(((uint32_t *)w)[4], 77);
    assert_true(((double *)w)[3] == -1.5);
    free(buf[0]);
    free(buf[1]);
    end_world();
    free(mem[0]);
    free(mem[1]);
}

/* Every refusal reaches the initiator as -EM_EACCES, and the target's
 * memory is as it was. */
static void refusals(void **s)
{
    (void)s;
    world(0, 0, 0, 0);
    uint64_t *mem = aligned_alloc(64, 256), *ro = aligned_alloc(64, 256),
             *wo = aligned_alloc(64, 256);
    memset(mem, 0, 256);
    memset(ro, 0, 256);
    memset(wo, 0, 256);
    em_region_handle_t h, hro, hwo;
    assert_int_equal(em_engine_register_ex(E[1], mem, 256, EM_REGION_WRITE | EM_REGION_READ, &h),
                     0);
    assert_int_equal(em_engine_register_ex(E[1], ro, 256, EM_REGION_READ, &hro), 0);
    assert_int_equal(em_engine_register_ex(E[1], wo, 256, EM_REGION_WRITE, &hwo), 0);
    em_region_handle_t badkey = h, badid = h;
    badkey.key ^= 1;
    badid.id += 7;
    uint64_t one = 1, res;
    em_atomic_desc_t add = {
        .op = EM_AOP_SUM, .type = EM_ATYPE_UINT64, .count = 1, .operand = &one
    };
    em_atomic_desc_t add4 = add;
    add4.count = 4;
    uint64_t four[4] = { 1, 1, 1, 1 };
    add4.operand = four;
    struct {
        const em_region_handle_t *h;
        uint64_t off;
        const em_atomic_desc_t *d;
        uint64_t *res;
    } bad[] = {
        { &badkey, 0, &add, &res },         /* bad key */
        { &badid, 0, &add, &res },          /* no such region */
        { &h, 256, &add, &res },            /* just past the end */
        { &h, 232, &add4, &res },           /* 32 bytes from 232: crosses the end */
        { &h, UINT64_MAX - 3, &add, NULL }, /* offset wraps */
        { &hro, 0, &add, NULL },            /* read-only region, a write */
        { &hwo, 0, &add, &res },            /* write-only region, a fetch */
        { &h, 4, &add, NULL },              /* misaligned 8-byte element */
    };
    unsigned nb = sizeof bad / sizeof bad[0];
    struct op o[16] = { 0 };
    for (unsigned i = 0; i < nb; i++)
        assert_int_equal(
            em_engine_atomic(E[0], &o[i].pop, 1, bad[i].h, bad[i].off, bad[i].d, bad[i].res, &o[i]),
            0);
    /* a get out of bounds and one from a write-only region */
    uint8_t gb[64];
    assert_int_equal(em_engine_get(E[0], &o[nb].pop, 1, &h, 200, gb, 64, &o[nb]), 0);
    assert_int_equal(em_engine_get(E[0], &o[nb + 1].pop, 1, &hwo, 0, gb, 8, &o[nb + 1]), 0);
    for (unsigned i = 0; i < nb + 2; i++) {
        wait_done(&o[i]);
        assert_int_equal(o[i].status, -EM_EACCES);
    }
    assert_int_equal(em_engine_stats(E[1])->rma_refused, nb + 2);
    uint64_t zero[32] = { 0 };
    assert_memory_equal(mem, zero, 256);
    assert_memory_equal(ro, zero, 256);
    assert_memory_equal(wo, zero, 256);
    /* what the regions allow still works: a READ of the read-only one, an
     * add without a fetch into the write-only one */
    struct op ok[2] = { 0 };
    em_atomic_desc_t rd = { .op = EM_AOP_READ, .type = EM_ATYPE_UINT64, .count = 1 };
    assert_int_equal(em_engine_atomic(E[0], &ok[0].pop, 1, &hro, 8, &rd, &ok[0].old, &ok[0]), 0);
    assert_int_equal(em_engine_atomic(E[0], &ok[1].pop, 1, &hwo, 8, &add, NULL, &ok[1]), 0);
    wait_done(&ok[0]);
    wait_done(&ok[1]);
    assert_int_equal(ok[0].status, 0);
    assert_int_equal(ok[1].status, 0);
    assert_int_equal(wo[1], 1);
    /* refused before anything is sent: bad op/type pairs, count, get size */
    em_atomic_desc_t inv = {
        .op = EM_AOP_BOR, .type = EM_ATYPE_DOUBLE, .count = 1, .operand = &one
    };
    assert_int_equal(em_engine_atomic(E[0], &o[15].pop, 1, &h, 0, &inv, NULL, &o[15]), -EM_EINVAL);
    inv = add;
    inv.count = EM_ATOMIC_COUNT_MAX + 1;
    assert_int_equal(em_engine_atomic(E[0], &o[15].pop, 1, &h, 0, &inv, NULL, &o[15]), -EM_EINVAL);
    assert_int_equal(
        em_engine_get(E[0], &o[15].pop, 1, &h, 0, gb, em_engine_get_max(E[0]) + 1, &o[15]),
        -EM_EINVAL);
    end_world();
    free(mem);
    free(ro);
    free(wo);
}

/* A get request longer than one answer carries, inside a region large
 * enough to hold it, as only a hostile peer sends it (em_engine_get()
 * refuses such a length before sending): the target refuses it before
 * copying anything, counts it in rma_refused and answers, so the answer
 * reaches engine 0 (which has no such request: rma_stale_rsp).  Before the
 * target checked the length, it copied the bytes, counted the get as
 * served, and the protocol refused the over-long answer: no answer came.
 * A get of exactly em_engine_get_max() bytes is still served. */
static void oversized_get(void **s)
{
    (void)s;
    world(0, 0, 0, 0);
    size_t max = em_engine_get_max(E[1]), rlen = 4 * max;
    uint8_t *mem = malloc(rlen), *got = malloc(max);
    assert_non_null(mem);
    assert_non_null(got);
    for (size_t i = 0; i < rlen; i++)
        mem[i] = (uint8_t)(i * 7);
    em_region_handle_t h;
    assert_int_equal(em_engine_register_ex(E[1], mem, rlen, EM_REGION_WRITE | EM_REGION_READ, &h),
                     0);
    uint8_t req[EM_RMA_GET_REQ_LEN];
    size_t n = em_rma_encode_req(req, 0x7777u, h.id, h.key, 0, NULL, false, (uint32_t)max + 1);
    assert_int_equal(n, EM_RMA_GET_REQ_LEN);
    em_rma_recv(E[1], 0, req, n);
    for (long i = 0; em_engine_stats(E[0])->rma_stale_rsp == 0; i++) {
        assert_true(i < 2000000L); /* the answer must come */
        round_();
    }
    assert_int_equal(em_engine_stats(E[1])->rma_refused, 1);
    assert_int_equal(em_engine_stats(E[1])->rma_gets_served, 0);
    struct op o = { 0 };
    assert_int_equal(em_engine_get(E[0], &o.pop, 1, &h, rlen - max, got, max, &o), 0);
    wait_done(&o);
    assert_int_equal(o.status, 0);
    assert_memory_equal(got, mem + rlen - max, max);
    assert_int_equal(em_engine_stats(E[1])->rma_gets_served, 1);
    end_world();
    free(mem);
    free(got);
}

/* The budget, then: requests to a peer that died complete with
 * -EM_EPEERFAIL, and those still waiting when the engine ends with
 * -EM_ECANCELED. */
static void budget_failure_destroy(void **s)
{
    (void)s;
    world(0, 0, 0, 3);
    uint64_t *mem = aligned_alloc(64, 64);
    memset(mem, 0, 64);
    em_region_handle_t h;
    assert_int_equal(em_engine_register_ex(E[1], mem, 64, EM_REGION_WRITE | EM_REGION_READ, &h), 0);
    em_sim_set_dead(SIM, 1, true);
    struct op *o = calloc(EM_ENGINE_RMA_BUDGET + 1, sizeof *o);
    uint64_t one = 1;
    em_atomic_desc_t add = {
        .op = EM_AOP_SUM, .type = EM_ATYPE_UINT64, .count = 1, .operand = &one
    };
    for (unsigned i = 0; i < EM_ENGINE_RMA_BUDGET; i++)
        assert_int_equal(em_engine_atomic(E[0], &o[i].pop, 1, &h, 0, &add, NULL, &o[i]), 0);
    assert_int_equal(em_engine_atomic(E[0], &o[EM_ENGINE_RMA_BUDGET].pop, 1, &h, 0, &add, NULL,
                                      &o[EM_ENGINE_RMA_BUDGET]),
                     -EM_EAGAIN);
    for (unsigned i = 0; i < EM_ENGINE_RMA_BUDGET; i++) {
        wait_done(&o[i]);
        assert_int_equal(o[i].status, -EM_EPEERFAIL);
    }
    assert_int_equal(em_engine_atomic(E[0], &o[0].pop, 1, &h, 0, &add, NULL, &o[0]), -EM_EPEERFAIL);
    end_world();

    /* the peer is alive but never progressed: the engine ends first */
    world(0, 0, 0, 0);
    struct op g = { 0 }, a = { 0 };
    uint64_t v;
    assert_int_equal(em_engine_get(E[0], &g.pop, 1, &h, 0, &v, 8, &g), 0);
    assert_int_equal(em_engine_atomic(E[0], &a.pop, 1, &h, 0, &add, &v, &a), 0);
    em_engine_destroy(E[0]);
    assert_int_equal(g.done, 1);
    assert_int_equal(a.done, 1);
    assert_int_equal(g.status, -EM_ECANCELED);
    assert_int_equal(a.status, -EM_ECANCELED);
    E[0] = NULL;
    end_world();
    free(o);
    free(mem);
}

static void reset_peer(void **s)
{
    (void)s;
    world(0, 0, 0, 0);
    uint64_t *mem = aligned_alloc(64, 64);
    for (unsigned i = 0; i < 8; i++)
        mem[i] = 0x1111111111111111ull * (i + 1);
    em_region_handle_t h;
    assert_int_equal(em_engine_register_ex(E[1], mem, 64, EM_REGION_WRITE | EM_REGION_READ, &h), 0);
    assert_int_equal(em_engine_reset_peer(E[0], 0), -EM_EINVAL); /* ourselves */
    assert_int_equal(em_engine_reset_peer(E[0], 2), -EM_EINVAL); /* no such peer */
    /* in flight to engine 1, which never progresses */
    struct op g = { 0 }, a = { 0 }, m = { 0 };
    uint64_t v = 0, one = 1;
    em_atomic_desc_t add = {
        .op = EM_AOP_SUM, .type = EM_ATYPE_UINT64, .count = 1, .operand = &one
    };
    assert_int_equal(em_engine_get(E[0], &g.pop, 1, &h, 0, &v, 8, &g), 0);
    assert_int_equal(em_engine_atomic(E[0], &a.pop, 1, &h, 8, &add, &v, &a), 0);
    assert_int_equal(em_engine_send(E[0], &m.pop, 1, 3, "old", 3, &m), 0);
    nested_reset = 0; /* the completions below try a reset of their own */
    assert_int_equal(em_engine_reset_peer(E[0], 1), 0);
    assert_int_equal(nested_reset, -EM_EINVAL);
    nested_reset = 1;
    assert_true(g.done && a.done && m.done); /* in the call: no progress needed */
    assert_int_equal(g.status, -EM_ECANCELED);
    assert_int_equal(a.status, -EM_ECANCELED);
    assert_int_equal(m.status, -EM_ECANCELED);
    assert_int_equal(em_engine_pending(E[0], 1), 0);
    assert_int_equal(em_engine_proto_stats(E[0])->peer_resets, 1);
    /* both sides forget each other and take the next incarnation's key and
     * the peer's address again; the old frames (still in the simulated
     * wire) are refused by the key, counted, and change nothing */
    assert_int_equal(em_engine_reset_peer(E[1], 0), 0);
    for (unsigned n = 0; n < 2; n++) {
        assert_int_equal(em_engine_set_peer_keys(E[n], (uint32_t)(1 - n), 0xC0FFEE, 0, 0), 0);
        assert_int_equal(
            em_engine_set_peer(E[n], (uint32_t)(1 - n), &em_sim_link(SIM, 1 - n)->local), 0);
    }
    struct op g2 = { 0 };
    uint64_t got = 0;
    assert_int_equal(em_engine_get(E[0], &g2.pop, 1, &h, 16, &got, 8, &g2), 0);
    wait_done(&g2);
    assert_int_equal(g2.status, 0);
    assert_true(got == mem[2]);
    assert_true(mem[1] == 0x2222222222222222ull); /* the canceled atomic never applied */
    assert_true(em_engine_proto_stats(E[1])->drop_job_key >= 3);
    end_world();
    free(mem);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(once_clean),
        cmocka_unit_test(once_lossy),
        cmocka_unit_test(once_hostile),
        cmocka_unit_test(ops_and_gets),
        cmocka_unit_test(refusals),
        cmocka_unit_test(oversized_get),
        cmocka_unit_test(budget_failure_destroy),
        cmocka_unit_test(reset_peer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
