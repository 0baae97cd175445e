/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Several threads drive two engines (loopback UDP, one process) through
 * the front ends' lock (engine/lock.h), as MPI_THREAD_MULTIPLE does with a
 * BTL: every thread sends from A to B and progresses both sides with
 * em_lock_try(); B's receive callback answers every message at once with a
 * send of its own, re-entering B's lock on the same thread (ob1 answering a
 * rendezvous from inside btl progress).  Every message is checked
 * (sender thread, sequence number, length, contents) and every answer
 * counted.  Under ThreadSanitizer (tools/run-tests) a missing lock is a
 * reported race; without it, lost or corrupted messages fail the counts.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <cmocka.h>

#include "engine/engine.h"
#include "engine/lock.h"
#include "link/link_udp.h"

#define NTHREADS   4
#define PER_THREAD 300
#define INFLIGHT   8          /* ops a thread has in flight at most */
#define MSG_MAX    (6 * 1024) /* several frames of 1472 bytes */
#define NREPLY     (NTHREADS * INFLIGHT * 2)

struct side {
    em_engine_t *e;
    em_link_t *l;
    em_lock_t lock;
    /* B: answers in flight (a pool guarded by B's lock) */
    em_proto_op_t reply_op[NREPLY];
    uint32_t reply_body[NREPLY];
    int reply_busy[NREPLY];
    unsigned got[NTHREADS]; /* B: messages per sender thread, in order */
    unsigned bad;           /* B: wrong contents or order; A: bad answers */
    unsigned replies;       /* A: answers received */
    unsigned reply_full;    /* B: no free answer slot (counted, not fatal) */
};

static struct side A, B;

/* message bytes of (thread, seq): a header, then a pattern */
static size_t msg_len(unsigned t, unsigned seq) { return 8 + (seq * 977u + t * 131u) % MSG_MAX; }
static uint8_t msg_byte(unsigned t, unsigned seq, size_t i)
{
    return (uint8_t)(i * 31u + seq * 7u + t);
}

static void b_recv(void *u, uint32_t peer, uint8_t tag, const void *data, size_t len)
{
    (void)u;
    (void)peer;
    (void)tag;
    const uint8_t *d = data;
    uint32_t t, seq;
    memcpy(&t, d, 4);
    memcpy(&seq, d + 4, 4);
    if (t >= NTHREADS || len != msg_len(t, seq) || seq != B.got[t]) {
        B.bad++;
        return;
    }
    for (size_t i = 8; i < len; i++)
        if (d[i] != msg_byte(t, seq, i)) {
            B.bad++;
            return;
        }
    B.got[t]++;
    /* answer at once, from inside progress: the front end's send entry
     * point takes the lock this thread already holds */
    em_lock_take(&B.lock);
    int k = 0;
    while (k < NREPLY && B.reply_busy[k])
        k++;
    if (k == NREPLY) {
        B.reply_full++;
    } else {
        B.reply_busy[k] = 1;
        B.reply_body[k] = t << 24 | seq;
        if (em_engine_send(B.e, &B.reply_op[k], 0, 2, &B.reply_body[k], 4, &B.reply_busy[k]) != 0) {
            B.reply_busy[k] = 0;
            B.bad++;
        }
    }
    em_lock_drop(&B.lock);
}

static void b_complete(void *u, void *ctx, int status)
{
    (void)u;
    if (status != 0)
        B.bad++;
    *(int *)ctx = 0; /* the answer slot is free again */
}

static void a_recv(void *u, uint32_t peer, uint8_t tag, const void *data, size_t len)
{
    (void)u;
    (void)peer;
    if (tag != 2 || len != 4)
        A.bad++;
    A.replies++;
}

/* A's sends complete: ctx is the thread's in-flight counter */
static void a_complete(void *u, void *ctx, int status)
{
    (void)u;
    if (status != 0)
        A.bad++;
    (*(unsigned *)ctx)--;
}

static const em_engine_ops_t A_OPS = { .recv = a_recv, .complete = a_complete };
static const em_engine_ops_t B_OPS = { .recv = b_recv, .complete = b_complete };

/* progress one side unless another thread is at it (the BTL's rule) */
static void progress(struct side *s)
{
    if (em_lock_try(&s->lock)) {
        em_engine_progress(s->e);
        em_lock_drop(&s->lock);
    }
}

struct worker {
    unsigned t;
    pthread_t th;
    unsigned inflight; /* guarded by A's lock (a_complete runs under it) */
    int timed_out;
    em_proto_op_t op[INFLIGHT];
    uint8_t buf[INFLIGHT][MSG_MAX + 8];
    uint8_t busy[INFLIGHT];
};

static void *work(void *u)
{
    struct worker *w = u;
    unsigned seq = 0;
    uint64_t t0 = em_now_ns();
    /* one slot per message in order: slot seq % INFLIGHT is reused only
     * after every earlier message completed, which in-order completion
     * per peer gives once inflight < INFLIGHT */
    while (seq < PER_THREAD) {
        if (em_now_ns() - t0 > 60000000000ull) {
            w->timed_out = 1;
            return NULL;
        }
        em_lock_take(&A.lock);
        if (w->inflight < INFLIGHT / 2) { /* half: slots are surely done */
            unsigned k = seq % INFLIGHT;
            size_t len = msg_len(w->t, seq);
            uint32_t t32 = w->t;
            memcpy(w->buf[k], &t32, 4);
            memcpy(w->buf[k] + 4, &seq, 4);
            for (size_t i = 8; i < len; i++)
                w->buf[k][i] = msg_byte(w->t, seq, i);
            w->inflight++;
            if (em_engine_send(A.e, &w->op[k], 1, 1, w->buf[k], len, &w->inflight) != 0) {
                w->inflight--;
                A.bad++;
            }
            seq++;
        }
        em_lock_drop(&A.lock);
        progress(&A);
        progress(&B);
    }
    for (;;) { /* until our messages are acknowledged */
        em_lock_take(&A.lock);
        unsigned left = w->inflight;
        em_lock_drop(&A.lock);
        if (!left)
            break;
        if (em_now_ns() - t0 > 60000000000ull) {
            w->timed_out = 1;
            return NULL;
        }
        progress(&A);
        progress(&B);
    }
    return NULL;
}

static void open_side(struct side *s, uint32_t self, const em_engine_ops_t *ops)
{
    char err[256];
    em_udp_cfg_t uc = { .iface = "127.0.0.1", .mtu = 1472, .sock_buf = 4 << 20 };
    s->l = em_link_udp_open(&uc, err, sizeof err);
    assert_non_null(s->l);
    em_proto_cfg_t c;
    em_proto_cfg_default(&c);
    c.job_key = 0x7e57;
    c.npeers = 2;
    c.frame_max = 1472;
    c.self = self;
    int e;
    s->e = em_engine_create(s->l, &c, ops, s, &e);
    assert_non_null(s->e);
    assert_int_equal(em_lock_init(&s->lock, true), 0);
}

static void test_threads_through_the_lock(void **st)
{
    (void)st;
    static struct worker w[NTHREADS];
    memset(&A, 0, sizeof A);
    memset(&B, 0, sizeof B);
    open_side(&A, 0, &A_OPS);
    open_side(&B, 1, &B_OPS);
    assert_int_equal(em_engine_set_peer(A.e, 1, &B.l->local), 0);
    assert_int_equal(em_engine_set_peer(B.e, 0, &A.l->local), 0);

    for (unsigned i = 0; i < NTHREADS; i++) {
        memset(&w[i], 0, sizeof w[i]);
        w[i].t = i;
        assert_int_equal(pthread_create(&w[i].th, NULL, work, &w[i]), 0);
    }
    for (unsigned i = 0; i < NTHREADS; i++)
        pthread_join(w[i].th, NULL);
    /* the last answers: one thread now */
    uint64_t t0 = em_now_ns();
    while (A.replies + B.reply_full < NTHREADS * PER_THREAD && em_now_ns() - t0 < 10000000000ull) {
        progress(&A);
        progress(&B);
    }
    for (unsigned i = 0; i < NTHREADS; i++) {
        assert_false(w[i].timed_out);
        assert_int_equal(B.got[i], PER_THREAD);
    }
    assert_int_equal(A.bad, 0);
    assert_int_equal(B.bad, 0);
    assert_int_equal(A.replies + B.reply_full, NTHREADS * PER_THREAD);
    assert_true(A.replies > 0);

    em_engine_destroy(A.e);
    em_engine_destroy(B.e);
    em_link_close(A.l);
    em_link_close(B.l);
    em_lock_fini(&A.lock);
    em_lock_fini(&B.lock);
}

/* off: no mutex, every call succeeds at once (the single-threaded job) */
static void test_lock_off_is_free(void **st)
{
    (void)st;
    em_lock_t l;
    assert_int_equal(em_lock_init(&l, false), 0);
    assert_false(l.on);
    em_lock_take(&l);
    assert_true(em_lock_try(&l));
    em_lock_drop(&l);
    em_lock_drop(&l);
    em_lock_fini(&l);
}

/* on: recursive for the owner, busy for another thread */
static void *try_other(void *u)
{
    bool got = em_lock_try(u);
    if (got)
        em_lock_drop(u);
    return (void *)(uintptr_t)got;
}
static void test_lock_on_recursive_and_exclusive(void **st)
{
    (void)st;
    em_lock_t l;
    assert_int_equal(em_lock_init(&l, true), 0);
    em_lock_take(&l);
    assert_true(em_lock_try(&l)); /* same thread: recursive */
    pthread_t th;
    void *got;
    assert_int_equal(pthread_create(&th, NULL, try_other, &l), 0);
    pthread_join(th, &got);
    assert_int_equal((uintptr_t)got, 0); /* another thread: busy */
    em_lock_drop(&l);
    em_lock_drop(&l);
    assert_int_equal(pthread_create(&th, NULL, try_other, &l), 0);
    pthread_join(th, &got);
    assert_int_equal((uintptr_t)got, 1); /* free now */
    em_lock_fini(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lock_off_is_free),
        cmocka_unit_test(test_lock_on_recursive_and_exclusive),
        cmocka_unit_test(test_threads_through_the_lock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
