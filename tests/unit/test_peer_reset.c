/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * em_proto_reset_peer: the owner forgets a peer (libfabric's fi_av_remove)
 * and may set it again later.  Two protocol instances, A (endpoint 0) and
 * B (endpoint 1), carried frame by frame:
 *  - a reset completes every operation to the peer with -EM_ECANCELED,
 *    at once, leaves the peer unset (sends refused, frames from it
 *    dropped as from nobody) and counts itself;
 *  - what the peer had delivered before stays delivered;
 *  - once both sides set each other again under the next incarnation's
 *    key, frames sent before the reset are refused by that key, counted,
 *    and not delivered, while a fresh exchange arrives whole;
 *  - a failed peer comes back as a live one; a message being placed in its
 *    owner's buffer ends with place_end(-EM_ECANCELED); no receive memory
 *    is left behind.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "proto_cap.h"

#define KEY_OLD 0x0123456789ABCDEFull
#define KEY_NEW 0x0FEDCBA987654321ull /* the next incarnation's key */

struct side {
    struct cap c;
    em_proto_t *p;
    unsigned taken; /* frames of c.f already carried (or thrown away) */
};

static void make(struct side *s, uint32_t self, uint32_t peer, const em_proto_ops_t *ops)
{
    em_proto_cfg_t cfg;
    int err;
    memset(s, 0, sizeof *s);
    em_proto_cfg_default(&cfg);
    cfg.self = self;
    cfg.npeers = 4;
    cfg.frame_max = EM_HDR_LEN + 1000;
    cfg.window = 8;
    cfg.peers_need_set = 1; /* as the provider: nobody is a peer until set */
    cfg.ack_delay_ns = 100;
    s->p = em_proto_create(&cfg, ops, &s->c, &err);
    assert_non_null(s->p);
    assert_int_equal(em_proto_set_peer(s->p, peer, KEY_OLD, self ? 900 : 100, self ? 100 : 900), 0);
}

static size_t wire_of(const struct cap_out *o, uint8_t *b)
{
    size_t n = em_hdr_encode(&o->h, b);
    memcpy(b + n, o->payload, o->h.len);
    return n + o->h.len;
}

/* Frames @p from emitted in [first, last) to @p to. */
static void carry_range(struct side *from, struct side *to, unsigned first, unsigned last,
                        uint64_t now)
{
    for (unsigned i = first; i < last; i++) {
        uint8_t b[4096];
        em_proto_rx(to->p, b, wire_of(&from->c.f[i], b), now);
    }
}

static unsigned carry(struct side *from, struct side *to, uint64_t now)
{
    unsigned n = from->c.nf - from->taken;
    carry_range(from, to, from->taken, from->c.nf, now);
    from->taken = from->c.nf;
    return n;
}

static void run(struct side *a, struct side *b, uint64_t *now)
{
    for (int round = 0; round < 200; round++, *now += 1000) {
        em_proto_poll(a->p, *now);
        em_proto_poll(b->p, *now);
        unsigned moved = carry(a, b, *now) + carry(b, a, *now);
        if (!moved && em_proto_idle(a->p) && em_proto_idle(b->p))
            return;
        assert_true(a->c.nf < CAP_MAXF - 16 && b->c.nf < CAP_MAXF - 16);
    }
    fail_msg("the pair did not settle");
}

static void fill(uint8_t *m, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        m[i] = (uint8_t)(i * 7 + seed);
}

static void test_reset_cancels_and_new_incarnation_talks(void **st)
{
    (void)st;
    struct side a, b;
    make(&a, 0, 1, &CAP_OPS);
    make(&b, 1, 0, &CAP_OPS);
    uint64_t now = 1000;
    em_proto_op_t o1, o2, o3, o4;
    assert_int_equal(em_proto_send(a.p, &o1, 1, 3, "first", 5, NULL, now), 0);
    run(&a, &b, &now);
    assert_int_equal(b.c.nrecv, 1);
    assert_int_equal(a.c.ncomplete, 1);

    /* in flight when A forgets B: a message of three frames, none carried
     * (kept to replay later as stale frames), and one of B's to A */
    static uint8_t old_msg[2500], new_msg[2500];
    fill(old_msg, sizeof old_msg, 1);
    fill(new_msg, sizeof new_msg, 99);
    unsigned stale_first = a.c.nf;
    assert_int_equal(em_proto_send(a.p, &o2, 1, 4, old_msg, sizeof old_msg, &o2, now), 0);
    unsigned stale_last = a.c.nf;
    assert_int_equal(stale_last - stale_first, 3);
    a.taken = a.c.nf;
    unsigned late_b = b.c.nf;
    assert_int_equal(em_proto_send(b.p, &o3, 0, 5, "late", 4, &o3, now), 0);
    b.taken = b.c.nf;

    assert_int_equal(em_proto_reset_peer(a.p, 1), 0);
    assert_int_equal(a.c.ncomplete, 2); /* at once, not at a timeout */
    assert_int_equal(a.c.last_status, -EM_ECANCELED);
    assert_ptr_equal(a.c.last_ctx, &o2);
    assert_int_equal(em_proto_pending(a.p, 1), 0);
    assert_int_equal(em_proto_stats(a.p)->peer_resets, 1);
    assert_true(em_proto_idle(a.p));
    /* unset: nothing goes to it, and its frames are dropped as from nobody */
    assert_int_equal(em_proto_send(a.p, &o4, 1, 3, "x", 1, NULL, now), -EM_EINVAL);
    assert_int_equal(em_proto_peer_params(a.p, 1, NULL, NULL, NULL), -EM_EINVAL);
    carry_range(&b, &a, late_b, b.c.nf, now);
    assert_int_equal(em_proto_stats(a.p)->drop_source, 1);
    assert_int_equal(a.c.nrecv, 0);
    /* ourselves, or no such peer */
    assert_int_equal(em_proto_reset_peer(a.p, 0), -EM_EINVAL);
    assert_int_equal(em_proto_reset_peer(a.p, 4), -EM_EINVAL);

    /* B forgets A too; both set the other again, the next incarnation's key */
    assert_int_equal(em_proto_reset_peer(b.p, 0), 0);
    assert_int_equal(b.c.last_status, -EM_ECANCELED);
    assert_ptr_equal(b.c.last_ctx, &o3);
    assert_int_equal(em_proto_set_peer(a.p, 1, KEY_NEW, 100, 900), 0);
    assert_int_equal(em_proto_set_peer(b.p, 0, KEY_NEW, 900, 100), 0);

    /* the frames from before: same sequence numbers as the new pair's
     * first ones, refused by the key, counted, not delivered */
    const em_proto_stats_t *sb = em_proto_stats(b.p);
    uint64_t key_drops = sb->drop_job_key;
    carry_range(&a, &b, stale_first, stale_last, now);
    assert_int_equal(sb->drop_job_key - key_drops, 3);
    assert_int_equal(b.c.nrecv, 1);

    /* a fresh exchange both ways, verified */
    assert_int_equal(em_proto_send(a.p, &o2, 1, 6, new_msg, sizeof new_msg, &o2, now), 0);
    assert_int_equal(em_proto_send(b.p, &o3, 0, 7, "pong", 4, &o3, now), 0);
    run(&a, &b, &now);
    assert_int_equal(b.c.nrecv, 2);
    assert_int_equal(b.c.last_tag, 6);
    assert_int_equal(b.c.last_len, sizeof new_msg);
    assert_memory_equal(b.c.last_data, new_msg, sizeof new_msg);
    assert_int_equal(a.c.nrecv, 1);
    assert_memory_equal(a.c.last_data, "pong", 4);
    assert_int_equal(a.c.last_status, 0);
    assert_int_equal(b.c.last_status, 0);
    assert_int_equal(em_proto_stats(a.p)->drop_job_key, 0);
    em_proto_destroy(a.p);
    em_proto_destroy(b.p);
}

static void test_reset_failed_and_placed(void **st)
{
    (void)st;
    struct side a, b;
    make(&a, 0, 1, &CAP_OPS);
    make(&b, 1, 0, &CAP_OPS_PLACE);
    static uint8_t dst[4096], msg[2500];
    fill(msg, sizeof msg, 5);
    b.c.place_buf = dst;
    uint64_t now = 1000;
    em_proto_op_t o;
    /* B takes the first frame of a three-frame message into its owner's
     * buffer, then forgets A: the placement ends, canceled */
    assert_int_equal(em_proto_send(a.p, &o, 1, 4, msg, sizeof msg, NULL, now), 0);
    carry_range(&a, &b, 0, 1, now);
    assert_int_equal(b.c.nplace, 1);
    assert_int_equal(b.c.nplace_end, 0);
    assert_int_equal(em_proto_reset_peer(b.p, 0), 0);
    assert_int_equal(b.c.nplace_end, 1);
    assert_int_equal(b.c.place_status, -EM_ECANCELED);
    assert_int_equal(em_proto_rx_mem(b.p), 0);

    /* a failed peer, reset, is a live one again */
    assert_int_equal(em_proto_fail_peer(a.p, 1, "test"), 0);
    assert_true(em_proto_peer_failed(a.p, 1));
    assert_int_equal(a.c.last_status, -EM_EPEERFAIL);
    assert_int_equal(em_proto_reset_peer(a.p, 1), 0);
    assert_false(em_proto_peer_failed(a.p, 1));
    assert_null(em_proto_fail_reason(a.p, 1));
    assert_int_equal(em_proto_set_peer(a.p, 1, KEY_NEW, 100, 900), 0);
    assert_int_equal(em_proto_set_peer(b.p, 0, KEY_NEW, 900, 100), 0);
    b.c.place_buf = NULL; /* reassembled and delivered by recv */
    a.taken = a.c.nf;
    b.taken = b.c.nf;
    assert_int_equal(em_proto_send(a.p, &o, 1, 8, msg, sizeof msg, NULL, now), 0);
    run(&a, &b, &now);
    assert_int_equal(b.c.nrecv, 1);
    assert_int_equal(b.c.last_len, sizeof msg);
    assert_memory_equal(b.c.last_data, msg, sizeof msg);
    assert_int_equal(a.c.last_status, 0);
    em_proto_destroy(a.p);
    em_proto_destroy(b.p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reset_cancels_and_new_incarnation_talks),
        cmocka_unit_test(test_reset_failed_and_placed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
