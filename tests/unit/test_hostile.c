/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Hostile input at the protocol: frames whose source address is
 * not the peer they claim, peers not set yet (lazy add), pair keys and
 * ISNs per peer, receive budgets against forged size claims, and the
 * error a refused put carries back.  One endpoint, frames crafted by hand,
 * the frame's "source address" given as em_proto_rx_from()'s src.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "proto/proto.h"
#include "proto_cap.h"

#define KEY 0x5EED1234ABCDull

struct fx {
    struct cap c;
    em_proto_t *p;
};

/* ops.resolve for the lazy-add tests: the answer, and whether to set the
 * claimed peer first (key KEY, ISNs 700 ours / 500 its).  mk resets both. */
static struct {
    em_proto_t *p;
    int sets;
    uint32_t src;
} resolve;

static uint32_t on_resolve(struct cap *c, uint32_t peer)
{
    (void)c;
    if (resolve.sets)
        assert_int_equal(em_proto_set_peer(resolve.p, peer, KEY, 700, 500), 0);
    return resolve.src;
}

static em_proto_t *mk(struct fx *x, uint32_t npeers, int need_set)
{
    int err;
    em_proto_cfg_t cfg;
    memset(&x->c, 0, sizeof x->c);
    em_proto_cfg_default(&cfg);
    cfg.job_key = KEY;
    cfg.self = 0;
    cfg.npeers = npeers;
    cfg.frame_max = EM_HDR_LEN + 1000;
    cfg.window = 8;
    cfg.bind_source = 1;
    cfg.peers_need_set = (uint8_t)need_set;
    x->p = em_proto_create(&cfg, &CAP_OPS, &x->c, &err);
    assert_non_null(x->p);
    x->c.on_resolve = on_resolve;
    resolve.p = x->p;
    resolve.sets = 0;
    resolve.src = EM_SRC_UNKNOWN;
    return x->p;
}

/* A frame claiming to come from h.index (default 1), arriving from @p from. */
static void feed(struct fx *x, em_hdr_t h, uint32_t from, uint64_t now)
{
    static uint8_t b[EM_HDR_LEN + EM_PUT_EXT_LEN + 1000];
    em_proto_rx_from(x->p, b, cap_frame(h, KEY, NULL, b, sizeof b), from, now);
}

static em_hdr_t data(uint32_t seq, uint16_t len, uint32_t msg_len, uint16_t no, uint16_t cnt)
{
    return (em_hdr_t){ .type = EM_PT_DATA,
                       .seq = seq,
                       .len = len,
                       .msg_len = msg_len,
                       .frag_no = no,
                       .frag_cnt = cnt,
                       .msg_id = 1 };
}

static const em_proto_stats_t *st(struct fx *x) { return em_proto_stats(x->p); }

/* ---- the source address binds the claimed peer ---- */

static void test_correct_key_from_other_address_is_dropped(void **s)
{
    struct fx x;
    mk(&x, 3, 0);
    feed(&x, data(0, 5, 5, 0, 1), 2, 0);              /* claims 1, comes from 2's address */
    feed(&x, data(0, 5, 5, 0, 1), EM_SRC_UNKNOWN, 0); /* from nobody we know */
    assert_int_equal(x.c.nrecv, 0);
    assert_int_equal(st(&x)->drop_source, 2);
    assert_int_equal(x.c.nresolve, 2);   /* asked once per frame, no more */
    feed(&x, data(0, 5, 5, 0, 1), 1, 0); /* the real one */
    assert_int_equal(x.c.nrecv, 1);
    assert_int_equal(st(&x)->drop_source, 2);
    /* em_proto_rx() (tools, tests) does not judge addresses */
    uint8_t b[EM_HDR_LEN + 5] = { 0 };
    em_hdr_t h = data(1, 5, 5, 0, 1);
    h.job_key = KEY;
    h.index = 1;
    em_hdr_encode(&h, b);
    em_proto_rx(x.p, b, sizeof b, 0);
    assert_int_equal(x.c.nrecv, 2);
    em_proto_destroy(x.p);
}

static void test_forged_ack_from_other_address_completes_nothing(void **s)
{
    struct fx x;
    em_proto_op_t op;
    mk(&x, 3, 0);
    assert_int_equal(em_proto_send(x.p, &op, 1, 0, "hello", 5, NULL, 0), 0);
    em_hdr_t a = { .type = EM_PT_ACK, .ack = 1 };
    feed(&x, a, 2, 1); /* in window, right key, wrong address */
    assert_int_equal(x.c.ncomplete, 0);
    assert_int_equal(st(&x)->drop_source, 1);
    assert_false(em_proto_idle(x.p));
    feed(&x, a, 1, 2);
    assert_int_equal(x.c.ncomplete, 1);
    assert_int_equal(x.c.last_status, 0);
    em_proto_destroy(x.p);
}

static void test_reassembly_cut_from_other_address_fails(void **s)
{
    struct fx x;
    mk(&x, 3, 0);
    feed(&x, data(0, 1000, 1500, 0, 2), 1, 0); /* first half of a message */
    feed(&x, data(1, 5, 5, 0, 1), 2, 0);       /* a forged one-frame message at its place */
    assert_int_equal(st(&x)->drop_source, 1);
    em_hdr_t h = data(1, 500, 1500, 1, 2);
    feed(&x, h, 1, 0); /* the real second half */
    assert_int_equal(x.c.nrecv, 1);
    assert_int_equal(x.c.last_len, 1500);
    assert_int_equal(st(&x)->drop_malformed, 0);
    em_proto_destroy(x.p);
}

/* ---- pair keys, ISNs, lazily added peers ---- */

static void test_unset_peer_is_resolved_once_or_dropped(void **s)
{
    struct fx x;
    em_proto_op_t op;
    mk(&x, 3, 1);
    /* nobody can send to an unset peer */
    assert_int_equal(em_proto_send(x.p, &op, 1, 0, "x", 1, NULL, 0), -EM_EINVAL);
    /* resolve cannot set it: dropped */
    feed(&x, data(500, 5, 5, 0, 1), 1, 0);
    assert_int_equal(st(&x)->drop_source, 1);
    assert_int_equal(x.c.nrecv, 0);
    /* resolve sets it (key KEY, ours 700, its 500) and the address is its */
    resolve.sets = 1;
    resolve.src = 1;
    feed(&x, data(500, 5, 5, 0, 1), EM_SRC_UNKNOWN, 0);
    assert_int_equal(x.c.nrecv, 1);
    uint64_t k;
    uint32_t tx, rx;
    assert_int_equal(em_proto_peer_params(x.p, 1, &k, &tx, &rx), 0);
    assert_true(k == KEY && tx == 700 && rx == 500);
    /* traffic started: the ISNs cannot change any more, the same values can be set again */
    assert_int_equal(em_proto_set_peer(x.p, 1, KEY, 700, 500), 0);
    assert_int_equal(em_proto_set_peer(x.p, 1, KEY, 1, 500), -EM_EINVAL);
    assert_int_equal(em_proto_peer_params(x.p, 2, &k, &tx, &rx), -EM_EINVAL);
    em_proto_destroy(x.p);
}

static void test_pair_key_and_isn_per_peer(void **s)
{
    struct fx x;
    em_proto_op_t op;
    mk(&x, 3, 1);
    assert_int_equal(em_proto_set_peer(x.p, 1, 0x1111, 0xFFFFFFF0u, 77), 0);
    assert_int_equal(em_proto_set_peer(x.p, 2, 0x2222, 5, 9), 0);
    assert_int_equal(em_proto_send(x.p, &op, 1, 0, "hi", 2, NULL, 0), 0);
    assert_true(cap_last(&x.c)->h.job_key == 0x1111);     /* the pair's key, both ways */
    assert_int_equal(cap_last(&x.c)->h.seq, 0xFFFFFFF0u); /* our ISN towards 1 */
    assert_int_equal(cap_last(&x.c)->h.ack, 77);          /* its ISN towards us */
    em_hdr_t h = data(77, 5, 5, 0, 1);
    h.ack = 0xFFFFFFF0u; /* acknowledges nothing of ours yet */
    h.job_key = 0x2222;  /* peer 2's key on a frame from 1 */
    feed(&x, h, 1, 0);
    assert_int_equal(st(&x)->drop_job_key, 1);
    h.job_key = 0x1111;
    h.seq = 77 + 100; /* a guess beyond the window */
    feed(&x, h, 1, 0);
    assert_int_equal(st(&x)->drop_window, 1);
    h.seq = 77;
    feed(&x, h, 1, 0);
    assert_int_equal(x.c.nrecv, 1);
    em_proto_destroy(x.p);
}

/* ---- budgets (M1) ---- */

/* The budget tests' configuration: 1000-byte payloads, npeers, rx_mem_max;
 * the test adjusts it, then budget_start() creates the protocol. */
static void budget_cfg(struct fx *x, em_proto_cfg_t *cfg, uint32_t npeers, uint64_t rx_mem_max)
{
    memset(&x->c, 0, sizeof x->c);
    em_proto_cfg_default(cfg);
    cfg->job_key = KEY;
    cfg->npeers = npeers;
    cfg->frame_max = EM_HDR_LEN + 1000;
    cfg->rx_mem_max = rx_mem_max;
}

static void budget_start(struct fx *x, const em_proto_cfg_t *cfg)
{
    int err;
    x->p = em_proto_create(cfg, &CAP_OPS, &x->c, &err);
    assert_non_null(x->p);
}

static void test_thousands_of_reassemblies_stay_within_budget(void **s)
{
    struct fx x;
    em_proto_cfg_t cfg;
    budget_cfg(&x, &cfg, 4001, 1u << 20); /* 1 MiB */
    cfg.max_msg = 65536 + 132;
    budget_start(&x, &cfg);
    /* every peer opens a reassembly of the largest message allowed (a
     * spoofer cycling source ids, or 4000 hostile peers) */
    for (uint32_t src = 1; src <= 4000; src++) {
        em_hdr_t h = data(0, 1000, 65536, 0, 66);
        h.index = src;
        feed(&x, h, src, 0);
        assert_true(em_proto_rx_mem(x.p) <= cfg.rx_mem_max);
    }
    assert_int_equal(st(&x)->drop_budget, 4000 - 16); /* 16 x 64 KiB fit in 1 MiB */
    /* a refused frame was not consumed: no ACK covers it (it will come again) */
    unsigned before = x.c.nf;
    em_proto_poll(x.p, 1000000);
    assert_int_equal(x.c.nf - before, 16); /* ACKs to the 16 peers that fit only */
    assert_int_equal(cap_last(&x.c)->peer, 16);
    em_hdr_t h = data(0, 1000, 70000, 0, 71); /* longer than any message we accept */
    h.index = 3000;
    feed(&x, h, 3000, 0);
    assert_int_equal(st(&x)->drop_budget, 4000 - 16 + 1);
    assert_true(em_proto_rx_mem(x.p) <= cfg.rx_mem_max);
    em_proto_destroy(x.p);
}

static void test_out_of_order_slots_within_budget(void **s)
{
    struct fx x;
    em_proto_cfg_t cfg;
    budget_cfg(&x, &cfg, 2, 16384); /* the slot table and some frames */
    cfg.window = 32;
    budget_start(&x, &cfg);
    for (uint32_t seq = 1; seq < 32; seq++) /* seq 0 missing: all out of order */
        feed(&x, data(seq, 5, 5, 0, 1), 1, 0);
    assert_true(em_proto_rx_mem(x.p) <= cfg.rx_mem_max);
    assert_true(st(&x)->drop_budget > 0);
    assert_true(st(&x)->rx_ooo < 31);
    /* the missing one and the rest, sent again: all delivered, in order */
    for (uint32_t seq = 0; seq < 32; seq++)
        feed(&x, data(seq, 5, 5, 0, 1), 1, 0);
    assert_int_equal(x.c.nrecv, 32);
    em_proto_destroy(x.p);
}

/* ---- a refused put is a remote access error at the initiator (M3) ---- */

static void test_refused_put_flags_every_later_frame(void **s)
{
    struct fx x;
    mk(&x, 3, 0);
    x.c.put_rc = -1;
    em_hdr_t h = { .type = EM_PT_PUT,
                   .seq = 0,
                   .len = 8,
                   .msg_len = 8,
                   .frag_cnt = 1,
                   .region = 1,
                   .key = 2,
                   .flags = EM_F_ACKNOW };
    feed(&x, h, 1, 0);
    em_proto_poll(x.p, 1);
    assert_int_equal(cap_last(&x.c)->h.type, EM_PT_ACK);
    assert_int_equal(cap_last(&x.c)->h.ack, 1);
    assert_true(cap_last(&x.c)->h.flags & EM_F_REMERR);
    em_proto_op_t op;
    assert_int_equal(em_proto_send(x.p, &op, 1, 0, "a", 1, NULL, 2), 0);
    assert_true(cap_last(&x.c)->h.flags & EM_F_REMERR); /* sticky, also on DATA */
    em_proto_destroy(x.p);
}

static void test_put_acked_with_remerr_completes_with_eacces(void **s)
{
    struct fx x;
    em_proto_op_t op[2];
    em_put_target_t t = { .region = 1, .key = 2, .offset = 0 };
    mk(&x, 3, 0);
    assert_int_equal(em_proto_send(x.p, &op[0], 1, 0, "m", 1, NULL, 0), 0);
    assert_int_equal(em_proto_put(x.p, &op[1], 1, &t, "12345678", 8, NULL, 0), 0);
    em_hdr_t a = { .type = EM_PT_ACK, .ack = 1 };
    feed(&x, a, 1, 1);
    assert_int_equal(x.c.ncomplete, 1); /* the message: fine */
    assert_int_equal(x.c.last_status, 0);
    a.ack = 2;
    a.flags = EM_F_REMERR;
    feed(&x, a, 1, 2);
    assert_int_equal(x.c.ncomplete, 2);
    assert_int_equal(x.c.last_status, -EM_EACCES);
    assert_int_equal(st(&x)->puts_failed, 1);
    assert_int_equal(st(&x)->puts_done, 0);
    assert_non_null(strstr(em_strerror(-EM_EACCES), "remote access"));
    em_proto_destroy(x.p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_correct_key_from_other_address_is_dropped),
        cmocka_unit_test(test_forged_ack_from_other_address_completes_nothing),
        cmocka_unit_test(test_reassembly_cut_from_other_address_fails),
        cmocka_unit_test(test_unset_peer_is_resolved_once_or_dropped),
        cmocka_unit_test(test_pair_key_and_isn_per_peer),
        cmocka_unit_test(test_thousands_of_reassemblies_stay_within_budget),
        cmocka_unit_test(test_out_of_order_slots_within_budget),
        cmocka_unit_test(test_refused_put_flags_every_later_frame),
        cmocka_unit_test(test_put_acked_with_remerr_completes_with_eacces),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
