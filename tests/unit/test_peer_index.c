/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Wire v3's index (wire.h): every frame names the receiver's index for its
 * sender.  Two endpoints whose tables number each other differently (A is
 * endpoint 0 of 8 and calls B 5; B is endpoint 3 of 4 and calls A 1) talk
 * only once each has told its protocol what the other calls it
 * (em_proto_set_peer_index); a frame naming another index is refused by
 * reason (drop_endpoint, drop_source, drop_job_key), never taken as from
 * someone else.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "proto_cap.h"

#define KEY_AB  0x5A5A0123456789A5ull
#define A_FOR_B 5u /* A's number of B */
#define B_FOR_A 1u /* B's number of A */

struct side {
    struct cap c;
    em_proto_t *p;
    unsigned taken; /* frames of c.f already carried to the other side */
};

static void make(struct side *s, uint32_t self, uint32_t npeers, uint32_t peer, uint32_t tx_isn,
                 uint32_t rx_isn)
{
    em_proto_cfg_t cfg;
    int err;
    memset(s, 0, sizeof *s);
    em_proto_cfg_default(&cfg);
    cfg.self = self;
    cfg.npeers = npeers;
    cfg.frame_max = EM_HDR_LEN + 1000;
    cfg.window = 8;
    cfg.peers_need_set = 1; /* as the front ends: nobody is a peer until set */
    cfg.ack_delay_ns = 100;
    s->p = em_proto_create(&cfg, &CAP_OPS, &s->c, &err);
    assert_non_null(s->p);
    assert_int_equal(em_proto_set_peer(s->p, peer, KEY_AB, tx_isn, rx_isn), 0);
}

/* The frame @p o (as @p from emitted it) in wire form into @p b. */
static size_t wire_of(const struct cap_out *o, uint8_t *b)
{
    size_t n = em_hdr_encode(&o->h, b);
    memcpy(b + n, o->payload, o->h.len);
    return n + o->h.len;
}

/* Carry every frame @p from emitted since the last call to @p to. */
static unsigned carry(struct side *from, struct side *to, uint64_t now)
{
    unsigned n = 0;
    for (; from->taken < from->c.nf; from->taken++, n++) {
        uint8_t b[4096];
        em_proto_rx(to->p, b, wire_of(&from->c.f[from->taken], b), now);
    }
    return n;
}

static void run(struct side *a, struct side *b)
{
    uint64_t now = 1000;
    for (int round = 0; round < 200; round++, now += 1000) {
        em_proto_poll(a->p, now);
        em_proto_poll(b->p, now);
        unsigned moved = carry(a, b, now) + carry(b, a, now);
        if (!moved && em_proto_idle(a->p) && em_proto_idle(b->p))
            return;
        if (a->c.nf >= CAP_MAXF - 16 || b->c.nf >= CAP_MAXF - 16)
            break;
    }
    fail_msg("the pair did not settle");
}

static void pair(struct side *a, struct side *b)
{
    make(a, 0, 8, A_FOR_B, 100, 900);
    make(b, 3, 4, B_FOR_A, 900, 100);
}

static void test_asymmetric_tables_talk(void **st)
{
    (void)st;
    struct side a, b;
    pair(&a, &b);
    /* the default is our own number: right only for tables numbered alike */
    assert_int_equal(em_proto_peer_index(a.p, A_FOR_B), 0);
    assert_int_equal(em_proto_set_peer_index(a.p, A_FOR_B, B_FOR_A), 0);
    assert_int_equal(em_proto_set_peer_index(b.p, B_FOR_A, A_FOR_B), 0);
    assert_int_equal(em_proto_peer_index(a.p, A_FOR_B), B_FOR_A);
    assert_int_equal(em_proto_peer_index(b.p, B_FOR_A), A_FOR_B);
    assert_int_equal(em_proto_peer_index(b.p, 4), EM_PEER_INDEX_NONE);

    static uint8_t big[2500];
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (uint8_t)(i * 13 + 1);
    em_proto_op_t op1, op2;
    assert_int_equal(em_proto_send(a.p, &op1, A_FOR_B, 4, big, sizeof big, NULL, 0), 0);
    assert_int_equal(em_proto_send(b.p, &op2, B_FOR_A, 6, "pong", 4, NULL, 0), 0);
    /* on the wire: the receiver's index for the sender, not the sender's own */
    assert_int_equal(a.c.f[0].h.index, B_FOR_A);
    assert_int_equal(b.c.f[0].h.index, A_FOR_B);
    run(&a, &b);
    assert_int_equal(b.c.nrecv, 1);
    assert_int_equal(b.c.last_peer, B_FOR_A); /* found by the index it carried */
    assert_int_equal(b.c.last_tag, 4);
    assert_int_equal(b.c.last_len, sizeof big);
    assert_memory_equal(b.c.last_data, big, sizeof big);
    assert_int_equal(a.c.nrecv, 1);
    assert_int_equal(a.c.last_peer, A_FOR_B);
    assert_memory_equal(a.c.last_data, "pong", 4);
    assert_int_equal(a.c.ncomplete, 1);
    assert_int_equal(b.c.ncomplete, 1);
    assert_int_equal(a.c.last_status, 0);
    for (unsigned i = 0; i < a.c.nf; i++) /* ACKs too */
        assert_int_equal(a.c.f[i].h.index, B_FOR_A);

    /* traffic started: the index is fixed (a change would strand the peer) */
    assert_int_equal(em_proto_set_peer_index(a.p, A_FOR_B, 2), -EM_EINVAL);
    assert_int_equal(em_proto_set_peer_index(a.p, A_FOR_B, B_FOR_A), 0); /* same: no-op */
    assert_int_equal(em_proto_set_peer_index(a.p, 0, 1), -EM_EINVAL);    /* ourselves */
    assert_int_equal(em_proto_set_peer_index(a.p, 8, 1), -EM_EINVAL);    /* out of range */
    const em_proto_stats_t *sb = em_proto_stats(b.p);
    assert_int_equal(sb->drop_endpoint + sb->drop_source + sb->drop_job_key, 0);
    em_proto_destroy(a.p);
    em_proto_destroy(b.p);
}

/* A's frame to B, its index field rewritten to @p index, fed to B. */
static void feed_as(struct side *a, struct side *b, uint32_t index)
{
    uint8_t f[4096];
    struct cap_out o = a->c.f[0];
    o.h.index = index;
    em_proto_rx(b->p, f, wire_of(&o, f), 10);
}

static void test_other_indexes_refused_by_reason(void **st)
{
    (void)st;
    struct side a, b;
    pair(&a, &b);
    /* A never said what B calls it: its frames name 0, A's own number */
    em_proto_op_t op;
    assert_int_equal(em_proto_send(a.p, &op, A_FOR_B, 4, "hi", 2, NULL, 0), 0);
    assert_int_equal(a.c.f[0].h.index, 0);
    carry(&a, &b, 10);
    const em_proto_stats_t *s = em_proto_stats(b.p);
    assert_int_equal(s->drop_source, 1); /* B's slot 0: nobody set there */
    feed_as(&a, &b, 3);                  /* B's own number */
    assert_int_equal(s->drop_endpoint, 1);
    feed_as(&a, &b, 4); /* past B's table */
    assert_int_equal(s->drop_endpoint, 2);
    feed_as(&a, &b, 0x10000u + B_FOR_A); /* B_FOR_A, were the field cut to 16 bits */
    assert_int_equal(s->drop_endpoint, 3);
    feed_as(&a, &b, UINT32_MAX);
    assert_int_equal(s->drop_endpoint, 4);
    assert_int_equal(b.c.nrecv, 0);

    /* a slot that is set, but to another peer: that pair's key refuses it */
    assert_int_equal(em_proto_set_peer(b.p, 2, KEY_AB ^ 1, 7, 7), 0);
    feed_as(&a, &b, 2);
    assert_int_equal(s->drop_job_key, 1);
    assert_int_equal(b.c.nrecv, 0);
    /* the right index: taken */
    feed_as(&a, &b, B_FOR_A);
    assert_int_equal(b.c.nrecv, 1);
    assert_memory_equal(b.c.last_data, "hi", 2);
    em_proto_destroy(a.p);
    em_proto_destroy(b.p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_asymmetric_tables_talk),
        cmocka_unit_test(test_other_indexes_refused_by_reason),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
