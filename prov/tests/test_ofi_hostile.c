/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Hostile or stray rendezvous control messages reach the provider's
 * dispatcher (emo_handle_msg) of an endpoint with operations in its cookie
 * table: a CTS or FIN naming another peer's operation, a stale generation,
 * an index out of the table, the wrong kind, a length beyond what was
 * asked, and undecodable bytes.  Each must be refused and counted, leave
 * the operation in place, and write nothing.  The same for RMA's RDONE
 * (another peer, the wrong kind, a length that is not the read's), and
 * WDATA to an endpoint without FI_RMA.  And a peer flooding
 * unexpected messages past the budget (FI_ETHERMPI_UNEXP_MB).  No engine
 * is needed: every refusal happens before one would be used.
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

/* an endpoint with empty queues and nothing else */
static void fresh_ep(void)
{
    memset(&ep, 0, sizeof ep);
    emo_queue_init(&ep.posted_tag);
    emo_queue_init(&ep.unexp_tag);
    emo_queue_init(&ep.posted_msg);
    emo_queue_init(&ep.unexp_msg);
}

static void send_hdr(uint32_t peer, const emo_hdr_t *h)
{
    uint8_t b[EMO_HDR_LEN];
    emo_hdr_encode(h, b);
    emo_handle_msg(&ep, peer, h->type, b, sizeof b);
}

static void test_refused(void **state)
{
    (void)state;
    fresh_ep();
    emo_op_t *rts = emo_op_new(&ep, EMO_OP_RTS, 0), *rr = emo_op_new(&ep, EMO_OP_RRECV, 0);
    assert_non_null(rts);
    assert_non_null(rr);
    rts->peer = 3;
    rts->len = 1000;
    rr->peer = 3;
    rr->len = 500;
    assert_int_equal(emo_cookie_add(&ep, rts), 0);
    assert_int_equal(emo_cookie_add(&ep, rr), 0);
    assert_int_not_equal(rts->cookie, rr->cookie);

    /* CTS from another peer, for the right cookie */
    emo_hdr_t cts = { .type = EMO_T_CTS,
                      .len = 100,
                      .s_cookie = rts->cookie,
                      .r_cookie = 77,
                      .region = 1,
                      .key = 5 };
    send_hdr(4, &cts);
    assert_int_equal(ep.st.bad_cookie, 1);
    /* stale generation, index beyond the table, the receive's cookie */
    cts.s_cookie = rts->cookie + (1u << 20);
    send_hdr(3, &cts);
    cts.s_cookie = 9999;
    send_hdr(3, &cts);
    cts.s_cookie = rr->cookie;
    send_hdr(3, &cts);
    assert_int_equal(ep.st.bad_cookie, 4);
    /* a grant beyond the message */
    cts.s_cookie = rts->cookie;
    cts.len = 1001;
    send_hdr(3, &cts);
    assert_int_equal(ep.st.bad_len, 1);
    /* FIN for the send's cookie, or from another peer */
    emo_hdr_t fin = { .type = EMO_T_FIN, .len = 500, .r_cookie = rts->cookie };
    send_hdr(3, &fin);
    fin.r_cookie = rr->cookie;
    send_hdr(5, &fin);
    assert_int_equal(ep.st.bad_cookie, 6);
    /* undecodable: short, wrong type for the engine tag */
    uint8_t junk[10] = { 0 };
    emo_handle_msg(&ep, 3, EMO_T_CTS, junk, sizeof junk);
    assert_int_equal(ep.st.dec_err[EMO_DEC_SHORT], 1);
    uint8_t b[EMO_HDR_LEN];
    emo_hdr_encode(&fin, b);
    emo_handle_msg(&ep, 3, EMO_T_CTS, b, sizeof b);
    assert_int_equal(ep.st.dec_err[EMO_DEC_TYPE], 1);
    /* RMA: an RDONE for a read from another peer, for a send, or with a
     * length the read did not ask; WDATA to an endpoint without FI_RMA */
    emo_op_t *rd = emo_op_new(&ep, EMO_OP_READ, 0);
    assert_non_null(rd);
    rd->peer = 3;
    rd->len = 64;
    assert_int_equal(emo_cookie_add(&ep, rd), 0);
    emo_hdr_t done = { .type = EMO_T_RDONE, .len = 64, .r_cookie = rd->cookie };
    send_hdr(4, &done);
    done.r_cookie = rts->cookie;
    send_hdr(3, &done);
    assert_int_equal(ep.st.bad_cookie, 8);
    done.r_cookie = rd->cookie;
    done.len = 65;
    send_hdr(3, &done);
    assert_int_equal(ep.st.bad_len, 2);
    ep.info = fi_allocinfo();
    assert_non_null(ep.info);
    ep.info->caps = FI_TAGGED | FI_MSG;
    emo_hdr_t wd = { .type = EMO_T_WDATA, .flags = EMO_F_DATA, .len = 8, .data = 1 };
    send_hdr(3, &wd);
    assert_int_equal(ep.st.wdata_refused, 1);
    fi_freeinfo(ep.info);
    ep.info = NULL;
    /* the operations are still where they were */
    assert_ptr_equal(emo_cookie_get(&ep, rts->cookie, 3, EMO_OP_RTS), rts);
    assert_ptr_equal(emo_cookie_get(&ep, rr->cookie, 3, EMO_OP_RRECV), rr);
    assert_ptr_equal(emo_cookie_get(&ep, rd->cookie, 3, EMO_OP_READ), rd);
    /* a removed operation's cookie names nothing, and the slot's next
     * tenant gets another generation */
    uint32_t old = rts->cookie;
    emo_cookie_del(&ep, rts);
    assert_null(emo_cookie_get(&ep, old, 3, EMO_OP_RTS));
    emo_op_t *again = emo_op_new(&ep, EMO_OP_RTS, 0);
    again->peer = 3;
    assert_int_equal(emo_cookie_add(&ep, again), 0);
    assert_int_not_equal(again->cookie, old);
    /* the free slot is taken again (a free list, no scan), generation moved on */
    assert_int_equal(again->cookie & 0xFFFFFu, old & 0xFFFFFu);
    assert_null(emo_cookie_get(&ep, old, 3, EMO_OP_RTS));
    emo_op_free(rts);   /* before the pools go (emo_data_fini drains them) */
    emo_data_fini(&ep); /* frees the table's operations */
    free(ep.ops);
    free(ep.op_gen);
    free(ep.op_next);
}

/* an eager tagged message of @p n bytes from @p peer, as the engine hands it up */
static void send_eager(uint32_t peer, uint64_t tag, size_t n)
{
    static uint8_t b[EMO_HDR_LEN + 65536];
    emo_hdr_t h = { .type = EMO_T_EAGER, .flags = EMO_F_TAGGED, .tag = tag, .len = n };
    emo_hdr_encode(&h, b);
    memset(b + EMO_HDR_LEN, (int)peer, n);
    emo_handle_msg(&ep, peer, EMO_T_EAGER, b, EMO_HDR_LEN + n);
}

static size_t held_from(uint32_t peer)
{
    size_t n = 0;
    for (emo_qent_t *c = ep.unexp_tag.head; c; c = c->next)
        n += c->peer == peer;
    return n;
}

/* The unexpected queues have a budget (FI_ETHERMPI_UNEXP_MB): a peer that
 * floods messages nobody receives cannot take the node's memory.  Over the
 * budget, the peer holding the most is marked to fail and its held
 * messages go at once; an innocent peer's messages stay, and a message
 * that fits after the purge is kept. */
/* The regions of a rendezvous receive and of a read live in the domain's
 * table, which the endpoint's close does not take down: they must go with
 * their operations, or they stay open for the domain's other endpoints
 * (and fill the 65535 ids FI_RMA keys have room for). */
static void test_close_deregisters(void **state)
{
    (void)state;
    fresh_ep();
    struct emo_domain dom;
    memset(&dom, 0, sizeof dom);
    em_regions_init(&dom.regions);
    ep.dom = &dom;
    static uint8_t a[64], b[64], mine[64];
    emo_op_t *rr = emo_op_new(&ep, EMO_OP_RRECV, 0), *rd = emo_op_new(&ep, EMO_OP_READ, 0);
    assert_non_null(rr);
    assert_non_null(rd);
    assert_int_equal(em_regions_add(&dom.regions, a, sizeof a, &rr->reg), 0);
    assert_int_equal(em_regions_add(&dom.regions, b, sizeof b, &rd->reg), 0);
    assert_int_equal(emo_cookie_add(&ep, rr), 0);
    assert_int_equal(emo_cookie_add(&ep, rd), 0);
    em_region_handle_t app; /* a registration of the application's: it stays */
    assert_int_equal(em_regions_add(&dom.regions, mine, sizeof mine, &app), 0);
    assert_int_equal(dom.regions.used, 3);
    emo_data_fini(&ep);
    assert_int_equal(dom.regions.used, 1);
    uint8_t *at;
    assert_int_equal(em_regions_check(&dom.regions, app.id, app.key, 0, 1, &at), EM_REGION_OK);
    em_regions_fini(&dom.regions);
    free(ep.ops);
    free(ep.op_gen);
    free(ep.op_next);
}

static void test_unexpected_budget(void **state)
{
    (void)state;
    fresh_ep();
    ep.npeers = 8;
    ep.self.id = 0;
    ep.unexp_held = calloc(ep.npeers, sizeof *ep.unexp_held);
    ep.fail_pending = calloc(ep.npeers, 1);
    ep.unexp_budget = 64 * 1024;
    send_eager(4, 1, 100); /* an innocent peer's message, waiting */
    for (int i = 0; i < 40; i++)
        send_eager(3, 2, 4000); /* the flood: 160 KB against a 64 KiB budget */
    assert_true(ep.fail_pending[3]);
    assert_int_equal(ep.nfail_pending, 1);
    assert_int_equal(ep.st.unexp_overflow, 1);
    assert_true(ep.st.unexp_refused >= 40 - 16); /* everything after the overflow */
    assert_int_equal(held_from(3), 0);           /* purged */
    assert_int_equal(held_from(4), 1);
    assert_int_equal(ep.unexp_held[3], 0);
    assert_true(ep.unexp_bytes <= ep.unexp_budget);
    assert_int_equal(ep.unexp_bytes, ep.unexp_held[4]);
    /* the budget is whole again for the others; now peer 4 holds the most
     * and peer 5's message would overflow: peer 4 goes, peer 5's stays */
    for (int i = 0; i < 10; i++)
        send_eager(4, 3, 4000);
    send_eager(5, 4, 30000);
    assert_true(ep.fail_pending[4]);
    assert_false(ep.fail_pending[5]);
    assert_int_equal(held_from(4), 0);
    assert_int_equal(held_from(5), 1);
    assert_int_equal(ep.unexp_bytes, ep.unexp_held[5]);
    assert_int_equal(ep.nfail_pending, 2);
    /* unbounded (0): nothing is refused */
    ep.unexp_budget = 0;
    uint64_t refused = ep.st.unexp_refused;
    for (int i = 0; i < 40; i++)
        send_eager(6, 5, 4000);
    assert_int_equal(held_from(6), 40);
    assert_int_equal(ep.st.unexp_refused, refused);
    emo_data_fini(&ep);
    assert_int_equal(ep.unexp_bytes, 0);
    free(ep.unexp_held);
    free(ep.fail_pending);
    free(ep.ops);
    free(ep.op_gen);
    free(ep.op_next);
}

int main(void)
{
    const struct CMUnitTest tests[] = { cmocka_unit_test(test_refused),
                                        cmocka_unit_test(test_close_deregisters),
                                        cmocka_unit_test(test_unexpected_budget) };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
