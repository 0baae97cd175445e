/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Liveness watch (src/proto/live.c) with an injected clock: two protocol
 * instances, A (id 0) and B (id 1), joined by a hand-driven wire that can
 * lose and duplicate frames.  A waits for B (em_proto_watch); B is either
 * dead (nothing relayed to it), alive (it polls and answers), or alive
 * but polling only now and then.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "proto/proto.h"

#define KEY   0x11FEu
#define QMAX  64
#define FRMAX 256

struct frame {
    uint8_t b[FRMAX];
    size_t len;
};

struct side {
    struct frame q[QMAX]; /* emitted, not yet relayed */
    unsigned n;
    unsigned probes_seen; /* frames emitted that are probes (ACK + ACKNOW) */
    unsigned relayed;     /* frames relay() took from q (numbers them for the loss patterns) */
    unsigned nfailed;
    unsigned ncomplete;
    int last_status;
};

static int c_emit(void *u, uint32_t peer, const void *hdr, size_t hlen, const void *pl, size_t plen)
{
    struct side *s = u;
    em_hdr_t h;
    assert_true(s->n < QMAX && hlen + plen <= FRMAX);
    memcpy(s->q[s->n].b, hdr, hlen);
    if (plen)
        memcpy(s->q[s->n].b + hlen, pl, plen);
    s->q[s->n].len = hlen + plen;
    assert_int_equal(em_hdr_decode(s->q[s->n].b, s->q[s->n].len, &h), EM_DEC_OK);
    if (h.type == EM_PT_ACK && (h.flags & EM_F_ACKNOW))
        s->probes_seen++;
    s->n++;
    return 0;
}

static void c_recv(void *u, uint32_t peer, uint8_t tag, const void *d, size_t len) {}

static void c_complete(void *u, void *ctx, int status)
{
    struct side *s = u;
    s->ncomplete++;
    s->last_status = status;
}

static void c_failed(void *u, uint32_t peer) { ((struct side *)u)->nfailed++; }

static const em_proto_ops_t OPS = {
    .emit = c_emit, .recv = c_recv, .complete = c_complete, .peer_failed = c_failed
};

struct fx {
    struct side a, b;
    em_proto_t *pa, *pb;
    em_proto_cfg_t cfg;
};

/* rto 1000, rto_max 8000, 3 retries, idle 8000 (= rto_max): the bound is
 * 8000 + 1000 + 2000 + 4000 = 15000 ns, a sender's 1000 + 2000 + 4000 + 8000 */
#define IDLE  8000u
#define BOUND 15000u

static void mk(struct fx *x)
{
    int err;
    memset(x, 0, sizeof *x);
    em_proto_cfg_default(&x->cfg);
    x->cfg.job_key = KEY;
    x->cfg.npeers = 3;
    x->cfg.frame_max = EM_HDR_LEN + 100;
    x->cfg.window = 4;
    x->cfg.rto_ns = 1000;
    x->cfg.rto_min_ns = 500;
    x->cfg.rto_max_ns = 8000;
    x->cfg.max_retries = 3;
    x->cfg.ack_delay_ns = 100;
    x->cfg.live_idle_ns = IDLE;
    x->cfg.self = 0;
    x->pa = em_proto_create(&x->cfg, &OPS, &x->a, &err);
    x->cfg.self = 1;
    x->pb = em_proto_create(&x->cfg, &OPS, &x->b, &err);
    assert_non_null(x->pa);
    assert_non_null(x->pb);
}

/* Rank 0's protocol again, from x->cfg as the caller changed it */
static void remk_a(struct fx *x)
{
    int err;
    em_proto_destroy(x->pa);
    x->cfg.self = 0;
    x->pa = em_proto_create(&x->cfg, &OPS, &x->a, &err);
    assert_non_null(x->pa);
}

/* Run rank 0's timers until @p until: it must send nothing and fail nobody */
static void poll_silent(struct fx *x, uint64_t until, uint64_t step)
{
    for (uint64_t t = 0; t < until; t += step)
        em_proto_poll(x->pa, t);
    assert_int_equal(x->a.n, 0);
    assert_false(em_proto_peer_failed(x->pa, 1));
}

static void rm(struct fx *x)
{
    em_proto_destroy(x->pa);
    em_proto_destroy(x->pb);
}

/* Deliver what @p from emitted into @p to: frame i is dropped when
 * (*lose)(i) and fed twice when @p dup.  @return frames delivered. */
static unsigned relay(struct side *from, em_proto_t *to, bool (*lose)(unsigned), bool dup,
                      uint64_t now)
{
    unsigned got = 0;
    for (unsigned i = 0; i < from->n; i++, from->relayed++) {
        if (lose && lose(from->relayed))
            continue;
        em_proto_rx(to, from->q[i].b, from->q[i].len, now);
        if (dup)
            em_proto_rx(to, from->q[i].b, from->q[i].len, now);
        got++;
    }
    from->n = 0;
    return got;
}

/* A watched peer that never answers fails exactly at the bound: not one
 * nanosecond before, with max_retries probes sent, the watch's counters,
 * reason and callback; a sender to a dead peer fails at the same time. */
static void test_watched_dead_peer_fails_within_bound(void **st)
{
    struct fx x;
    em_proto_op_t op;
    mk(&x);
    assert_int_equal(em_proto_watch(x.pa, 1, 0), 0);
    assert_int_equal(em_proto_send(x.pa, &op, 2, 0, "x", 1, NULL, 0), 0); /* a sender, to 2 */
    uint64_t now = 0, failed1 = 0, failed2 = 0;
    while (!failed1 || !failed2) {
        now = em_proto_next_deadline(x.pa);
        assert_true(now <= BOUND);
        em_proto_poll(x.pa, now);
        if (!failed1 && em_proto_peer_failed(x.pa, 1))
            failed1 = now;
        if (!failed2 && em_proto_peer_failed(x.pa, 2))
            failed2 = now;
    }
    assert_int_equal(failed1, BOUND);
    assert_int_equal(failed2, BOUND);
    const em_proto_stats_t *s = em_proto_stats(x.pa);
    assert_int_equal(s->live_probes, 3); /* max_retries */
    assert_int_equal(s->live_failures, 1);
    assert_int_equal(s->peer_failures, 2);
    assert_int_equal(x.a.nfailed, 2);
    assert_non_null(em_proto_fail_reason(x.pa, 1));
    assert_non_null(strstr(em_proto_fail_reason(x.pa, 1), "liveness"));
    assert_int_equal(x.a.last_status, -EM_EPEERFAIL); /* the op to 2 */
    /* the watch is gone with the peer; nothing more is timed */
    assert_int_equal(em_proto_watchers(x.pa, 1), 0);
    assert_int_equal(em_proto_unwatch(x.pa, 1), 0);
    assert_int_equal(em_proto_watch(x.pa, 1, now), -EM_EPEERFAIL);
    assert_int_equal(em_proto_next_deadline(x.pa), UINT64_MAX);
    rm(&x);
}

/* B runs its protocol (polls) and answers every probe: A never fails it,
 * however long it sends nothing else, and probes it once per idle time. */
static void test_answering_silent_peer_never_fails(void **st)
{
    struct fx x;
    mk(&x);
    assert_int_equal(em_proto_watch(x.pa, 1, 0), 0);
    uint64_t now = 0, end = 1000u * BOUND;
    while (now < end) {
        now = em_proto_next_deadline(x.pa);
        em_proto_poll(x.pa, now);
        relay(&x.a, x.pb, NULL, false, now + 100);
        em_proto_poll(x.pb, now + 100); /* B answers on its next poll */
        relay(&x.b, x.pa, NULL, false, now + 200);
    }
    assert_false(em_proto_peer_failed(x.pa, 1));
    const em_proto_stats_t *s = em_proto_stats(x.pa);
    /* one probe per IDLE + 200 ns of answer time, no back-off streaks */
    assert_true(s->live_probes >= end / (IDLE + 200) - 1);
    assert_true(s->live_probes <= end / IDLE + 1);
    assert_int_equal(s->retransmits, 0);
    assert_int_equal(x.b.nfailed, 0);
    rm(&x);
}

/* B polls only now and then: it answers the last probe of each streak,
 * just inside the bound.  Alive is alive: never failed. */
static void test_peer_polling_rarely_stays_alive(void **st)
{
    struct fx x;
    mk(&x);
    assert_int_equal(em_proto_watch(x.pa, 1, 0), 0);
    uint64_t now = 0;
    unsigned answered = 0;
    for (int round = 0; round < 200; round++) {
        now = em_proto_next_deadline(x.pa);
        em_proto_poll(x.pa, now);
        if (em_proto_stats(x.pa)->live_probes % 3 != 0) {
            x.a.n = 0; /* B is computing: the probe waits in its socket */
            continue;
        }
        relay(&x.a, x.pb, NULL, false, now + 10);
        em_proto_poll(x.pb, now + 10);
        relay(&x.b, x.pa, NULL, false, now + 20);
        answered++;
    }
    assert_true(answered > 50);
    assert_false(em_proto_peer_failed(x.pa, 1));
    rm(&x);
}

/* Nobody asked: no probe, no timer, whatever the time; a watch that was
 * dropped again leaves nothing behind; live_idle_ns = 0 turns probing off. */
static void test_unwatched_peer_is_never_probed(void **st)
{
    struct fx x;
    mk(&x);
    for (uint64_t t = 0; t < 100u * BOUND; t += 777)
        em_proto_poll(x.pa, t);
    assert_int_equal(x.a.n, 0);
    assert_int_equal(em_proto_next_deadline(x.pa), UINT64_MAX);
    assert_int_equal(em_proto_watch(x.pa, 1, 0), 0);
    assert_int_equal(em_proto_watch(x.pa, 1, 0), 0);
    assert_int_equal(em_proto_watchers(x.pa, 1), 2);
    assert_int_equal(em_proto_unwatch(x.pa, 1), 0);
    assert_int_equal(em_proto_unwatch(x.pa, 1), 0);
    assert_int_equal(em_proto_unwatch(x.pa, 1), -EM_EINVAL); /* none held */
    poll_silent(&x, 100u * BOUND, 777);
    assert_int_equal(em_proto_stats(x.pa)->live_probes, 0);
    rm(&x);

    mk(&x);
    x.cfg.live_idle_ns = 0;
    remk_a(&x);
    assert_int_equal(em_proto_watch(x.pa, 1, 0), 0);
    poll_silent(&x, 100u * BOUND, 777);
    rm(&x);
}

static bool lose_odd(unsigned i) { return i % 2 == 1; }
static bool lose_2_of_3(unsigned i) { return i % 3 != 2; }

/* Lost probes, lost answers and duplicated frames: the back-off sends the
 * probe again, a duplicate counts once as "heard"; no false failure while
 * an answer gets through within max_retries probes. */
static void test_probes_under_loss_and_duplication(void **st)
{
    struct fx x;
    bool (*lose[2])(unsigned) = { lose_odd, lose_2_of_3 };
    for (int k = 0; k < 2; k++) {
        mk(&x);
        assert_int_equal(em_proto_watch(x.pa, 1, 0), 0);
        uint64_t now = 0;
        for (int round = 0; round < 3000 && em_proto_stats(x.pa)->live_probes < 300; round++) {
            now = em_proto_next_deadline(x.pa);
            em_proto_poll(x.pa, now);
            relay(&x.a, x.pb, lose[k], k == 1, now + 50); /* probes lost (and duplicated) */
            em_proto_poll(x.pb, now + 50);
            relay(&x.b, x.pa, NULL, k == 0, now + 60); /* answers duplicated */
        }
        assert_false(em_proto_peer_failed(x.pa, 1));
        const em_proto_stats_t *s = em_proto_stats(x.pa);
        assert_true(s->live_probes >= 300);
        assert_true(x.a.relayed >= 300);
        assert_true(s->rx_acks >= (k == 0 ? 300u : 100u)); /* answers: all doubled / a third */
        assert_int_equal(s->peer_failures, 0);
        rm(&x);
    }
    /* every answer lost: the peer is as good as dead, and fails in the bound */
    mk(&x);
    assert_int_equal(em_proto_watch(x.pa, 1, 0), 0);
    uint64_t now = 0;
    while (!em_proto_peer_failed(x.pa, 1)) {
        now = em_proto_next_deadline(x.pa);
        em_proto_poll(x.pa, now);
        relay(&x.a, x.pb, NULL, false, now + 50);
        em_proto_poll(x.pb, now + 50);
        x.b.n = 0; /* the answers are lost */
    }
    assert_int_equal(now, BOUND);
    assert_int_equal(x.b.probes_seen, 0); /* B's answers are plain ACKs: no ping-pong */
    rm(&x);
}

/* With our frames in flight the retransmit timer watches the peer: the
 * watch sends no probes of its own, and the peer fails once, at the
 * sender's bound. */
static void test_watch_defers_to_retransmit_timer(void **st)
{
    struct fx x;
    em_proto_op_t op;
    mk(&x);
    assert_int_equal(em_proto_watch(x.pa, 1, 0), 0);
    assert_int_equal(em_proto_send(x.pa, &op, 1, 0, "y", 1, NULL, 0), 0);
    uint64_t now = 0;
    while (!em_proto_peer_failed(x.pa, 1)) {
        now = em_proto_next_deadline(x.pa);
        assert_true(now <= BOUND);
        em_proto_poll(x.pa, now);
    }
    const em_proto_stats_t *s = em_proto_stats(x.pa);
    assert_int_equal(s->live_probes, 0);
    assert_int_equal(s->live_failures, 0);
    assert_int_equal(s->peer_failures, 1);
    assert_int_equal(x.a.last_status, -EM_EPEERFAIL);
    rm(&x);
}

static void test_watch_arguments(void **st)
{
    struct fx x;
    mk(&x);
    assert_int_equal(em_proto_watch(x.pa, 0, 0), -EM_EINVAL); /* self */
    assert_int_equal(em_proto_watch(x.pa, 3, 0), -EM_EINVAL); /* out of range */
    assert_int_equal(em_proto_unwatch(x.pa, 3), -EM_EINVAL);
    assert_int_equal(em_proto_watchers(x.pa, 3), 0);
    rm(&x);
    /* peers that need em_proto_set_peer: no watch before (no key to probe with) */
    mk(&x);
    x.cfg.peers_need_set = 1;
    remk_a(&x);
    assert_int_equal(em_proto_watch(x.pa, 1, 0), -EM_EINVAL);
    assert_int_equal(em_proto_set_peer(x.pa, 1, KEY, 0, 0), 0);
    assert_int_equal(em_proto_watch(x.pa, 1, 0), 0);
    rm(&x);
    /* a link that acknowledges data for us (the node daemon's): the watch
     * still probes, since a probe reaches the peer's process or dies with
     * it, so a dead peer that is only waited for fails at the same bound */
    mk(&x);
    x.cfg.link_acks = true;
    remk_a(&x);
    assert_int_equal(em_proto_watch(x.pa, 1, 0), 0);
    uint64_t t = 0;
    while (!em_proto_peer_failed(x.pa, 1)) {
        t = em_proto_next_deadline(x.pa);
        assert_true(t <= BOUND);
        em_proto_poll(x.pa, t);
    }
    assert_int_equal(t, BOUND);
    assert_int_equal(em_proto_stats(x.pa)->live_probes, 3);
    rm(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_watched_dead_peer_fails_within_bound),
        cmocka_unit_test(test_answering_silent_peer_never_fails),
        cmocka_unit_test(test_peer_polling_rarely_stays_alive),
        cmocka_unit_test(test_unwatched_peer_is_never_probed),
        cmocka_unit_test(test_probes_under_loss_and_duplication),
        cmocka_unit_test(test_watch_defers_to_retransmit_timer),
        cmocka_unit_test(test_watch_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
