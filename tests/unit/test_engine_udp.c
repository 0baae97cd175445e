/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The engine over the kernel UDP link, on loopback, two endpoints in one
 * process: messages of every size class, puts into registered regions, and
 * forged frames (wrong job key, bad region key, unknown region, out of
 * bounds) that must be dropped and counted without touching memory,
 * frames from an address that is not the peer's (hostile input), and the drain
 * before a close (em_engine_drain: a lost last frame still arrives, a
 * peer's late resend is still answered).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "engine/engine.h"
#include "link/link_udp.h"
#include "proto/wire.h"
#include "link_test_util.h"

struct side {
    em_engine_t *e;
    em_link_t *l;
    unsigned nrecv, ncomplete, nfail;
    int last_status;
    size_t last_len;
    uint8_t last_tag;
    uint32_t sum;
    const em_link_addr_t *resolve_to; /* what s_resolve hands out (NULL: no address) */
    unsigned nresolve;
};

static uint32_t checksum(const uint8_t *d, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ d[i]) * 16777619u;
    return h;
}

static void s_recv(void *u, uint32_t peer, uint8_t tag, const void *d, size_t len)
{
    struct side *s = u;
    s->nrecv++;
    s->last_len = len;
    s->last_tag = tag;
    s->sum = checksum(d, len);
}
static void s_complete(void *u, void *ctx, int status)
{
    struct side *s = u;
    if (status == 0)
        s->ncomplete++;
    else
        s->nfail++;
    s->last_status = status;
}
static const em_engine_ops_t OPS = { .recv = s_recv, .complete = s_complete };

static int s_resolve(void *u, uint32_t peer)
{
    struct side *s = u;
    s->nresolve++;
    return s->resolve_to ? em_engine_set_peer(s->e, peer, s->resolve_to) : -1;
}
static const em_engine_ops_t OPS_RESOLVE = { .recv = s_recv,
                                             .complete = s_complete,
                                             .resolve_peer = s_resolve };

/* Two loopback UDP links of 1472-byte frames, sides cleared. */
static void open_links(struct side *a, struct side *b, int sock_buf)
{
    char err[256];
    em_udp_cfg_t uc = { .iface = "127.0.0.1", .mtu = 1472, .sock_buf = sock_buf };
    memset(a, 0, sizeof *a);
    memset(b, 0, sizeof *b);
    a->l = em_link_udp_open(&uc, err, sizeof err);
    b->l = em_link_udp_open(&uc, err, sizeof err);
    assert_non_null(a->l);
    assert_non_null(b->l);
}

/* the protocol settings of every pair here: 2 peers, 1472-byte frames */
static void pair_cfg(em_proto_cfg_t *c, uint32_t key)
{
    em_proto_cfg_default(c);
    c->job_key = key;
    c->npeers = 2;
    c->frame_max = 1472;
}

/* a's engine over @p la (its UDP link or a wrapper of it), b's over its own
 * link, with settings @p c; each knows the other's address */
static void make_engines(struct side *a, struct side *b, em_link_t *la, em_proto_cfg_t *c)
{
    int e;
    c->self = 0;
    a->e = em_engine_create(la, c, &OPS, a, &e);
    c->self = 1;
    b->e = em_engine_create(b->l, c, &OPS, b, &e);
    assert_non_null(a->e);
    assert_non_null(b->e);
    assert_int_equal(em_engine_set_peer(a->e, 1, &b->l->local), 0);
    assert_int_equal(em_engine_set_peer(b->e, 0, &a->l->local), 0);
}

static void open_pair_buf(struct side *a, struct side *b, uint32_t key, int sock_buf)
{
    open_links(a, b, sock_buf);
    em_proto_cfg_t c;
    pair_cfg(&c, key);
    c.bind_source = 1; /* a frame counts only from its peer's address */
    make_engines(a, b, a->l, &c);
}

static void open_pair(struct side *a, struct side *b, uint32_t key) { open_pair_buf(a, b, key, 0); }

static void close_pair(struct side *a, struct side *b)
{
    em_engine_destroy(a->e);
    em_engine_destroy(b->e);
    em_link_close(a->l);
    em_link_close(b->l);
}

/* progress both until cond or ~5 s */
#define SPIN_UNTIL(a, b, cond)                                                                     \
    do {                                                                                           \
        uint64_t t0 = em_now_ns();                                                                 \
        while (!(cond) && em_now_ns() - t0 < 5000000000ull) {                                      \
            em_engine_progress((a)->e);                                                            \
            em_engine_progress((b)->e);                                                            \
        }                                                                                          \
        assert_true(cond);                                                                         \
    } while (0)

static void test_messages_every_size_class(void **st)
{
    struct side a, b;
    open_pair(&a, &b, 11);
    static const size_t sizes[] = { 0, 1, 1427, 1428, 1429, 9000, 65536, 1 << 20, 4 << 20 };
    for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        uint8_t *buf = malloc(sizes[i] + 1);
        for (size_t k = 0; k < sizes[i]; k++)
            buf[k] = (uint8_t)(k * 31 + i);
        em_proto_op_t op;
        unsigned want = b.nrecv + 1;
        assert_int_equal(em_engine_send(a.e, &op, 1, (uint8_t)i, buf, sizes[i], NULL), 0);
        SPIN_UNTIL(&a, &b, b.nrecv == want && a.ncomplete == want);
        assert_int_equal(b.last_len, sizes[i]);
        assert_int_equal(b.last_tag, i);
        assert_int_equal(b.sum, checksum(buf, sizes[i]));
        free(buf);
    }
    close_pair(&a, &b);
}

/* A link that refuses most of every burst: takes at most one frame per
 * call, and none on every other call.  Wraps a real UDP link. */
struct choppy {
    em_test_wrap_t w; /* inner: the real UDP link */
    unsigned calls, violations;
    em_pkt_t *refused[256];
    unsigned nrefused;
};
static unsigned ch_burst(em_link_t *l, em_pkt_t **p, unsigned n)
{
    struct choppy *c = (struct choppy *)l;
    /* the contract: a frame that had to wait carries no external payload */
    for (unsigned i = 0; i < n; i++)
        for (unsigned k = 0; k < c->nrefused; k++)
            if (c->refused[k] == p[i] && p[i]->ext_len)
                c->violations++;
    unsigned take = (c->calls++ % 2 == 0 || n == 0) ? 0 : 1;
    if (take)
        take = em_link_tx_burst(c->w.inner, p, 1);
    c->nrefused = 0;
    for (unsigned i = take; i < n && c->nrefused < 256; i++)
        c->refused[c->nrefused++] = p[i];
    return take;
}
static int ch_peer(em_link_t *l, uint32_t i, const em_link_addr_t *a)
{
    return em_link_set_peer(em_test_inner(l), i, a);
}
static void ch_close(em_link_t *l) { em_link_close(em_test_inner(l)); }
static const em_link_ops_t CHOPPY = {
    .name = "choppy",
    .tx_alloc = em_test_wrap_tx_alloc,
    .tx_burst = ch_burst,
    .tx_free = em_test_wrap_tx_free,
    .rx_burst = em_test_wrap_rx_burst,
    .rx_release = em_test_wrap_rx_release,
    .flush = em_test_wrap_flush,
    .set_peer = ch_peer,
    .close = ch_close,
};

static void test_refused_gathered_frames_are_flattened(void **st)
{
    struct side a, b;
    open_pair(&a, &b, 14);
    /* rebuild a's engine over the choppy wrapper of its UDP link */
    em_engine_destroy(a.e);
    struct choppy ch = { .w = { .link = *a.l, .inner = a.l } };
    ch.w.link.ops = &CHOPPY;
    assert_true(ch.w.link.flags & EM_LINK_F_GATHER);
    em_proto_cfg_t c;
    pair_cfg(&c, 14);
    c.self = 0;
    int e;
    a.e = em_engine_create(&ch.w.link, &c, &OPS, &a, &e);
    assert_non_null(a.e);
    assert_int_equal(em_engine_set_peer(a.e, 1, &b.l->local), 0);

    size_t n = 300000;
    uint8_t *buf = malloc(n);
    for (size_t k = 0; k < n; k++)
        buf[k] = (uint8_t)(k * 7 + (k >> 11));
    em_proto_op_t op[3];
    for (int i = 0; i < 3; i++)
        assert_int_equal(em_engine_send(a.e, &op[i], 1, 9, buf, n, NULL), 0);
    SPIN_UNTIL(&a, &b, b.nrecv == 3 && a.ncomplete == 3);
    assert_int_equal(b.last_len, n);
    assert_int_equal(b.sum, checksum(buf, n));
    assert_true(em_engine_stats(a.e)->tx_backpressure > 0); /* the path ran */
    assert_int_equal(ch.violations, 0);
    close_pair(&a, &b);
    free(buf);
}

/* A link that loses chosen frames: the first @c drop frames of type
 * @c type that the engine hands it are taken and freed, never sent (as a
 * lossy wire would).  Wraps a real UDP link. */
struct lossy {
    em_test_wrap_t w;
    uint8_t type; /* em_wire_type of the frames to lose */
    unsigned drop, dropped;
};
static unsigned lossy_burst(em_link_t *l, em_pkt_t **p, unsigned n)
{
    struct lossy *c = (struct lossy *)l;
    for (unsigned i = 0; i < n; i++) {
        if (c->dropped < c->drop && p[i]->len >= EM_HDR_LEN &&
            em_wire_type(p[i]->data) == c->type) {
            c->dropped++;
            em_link_tx_free(c->w.inner, p[i]);
        } else if (em_link_tx_burst(c->w.inner, &p[i], 1) != 1) {
            return i; /* the rest waits, as the inner link refused it */
        }
    }
    return n;
}
static uint32_t lossy_rx_peer(em_link_t *l, const em_pkt_t *pkt)
{
    em_link_t *in = em_test_inner(l);
    return in->ops->rx_peer(in, pkt);
}
static const em_link_ops_t LOSSY = {
    .name = "lossy",
    .tx_alloc = em_test_wrap_tx_alloc,
    .tx_burst = lossy_burst,
    .tx_free = em_test_wrap_tx_free,
    .rx_burst = em_test_wrap_rx_burst,
    .rx_release = em_test_wrap_rx_release,
    .flush = em_test_wrap_flush,
    .set_peer = ch_peer,
    .rx_peer = lossy_rx_peer,
    .close = ch_close,
};

/* a's engine rebuilt over a lossy wrapper of its UDP link, with an RTO of
 * @p rto_ns for both sides (b's engine rebuilt too) */
static void lossy_pair(struct side *a, struct side *b, struct lossy *ls, uint64_t rto_ns)
{
    open_pair(a, b, 15);
    em_engine_destroy(a->e);
    em_engine_destroy(b->e);
    ls->w = (em_test_wrap_t){ .link = *a->l, .inner = a->l };
    ls->w.link.ops = &LOSSY;
    em_proto_cfg_t c;
    pair_cfg(&c, 15);
    c.bind_source = 1;
    c.rto_ns = rto_ns;
    c.rto_max_ns = 4 * rto_ns;
    make_engines(a, b, &ls->w.link, &c);
}

/* b's side of a drain test, in a thread: b keeps progressing (as a peer
 * process would) until the main thread says stop */
struct runner {
    struct side *b;
    volatile int stop;
    pthread_t t;
};
static void *run_b(void *u)
{
    struct runner *r = u;
    uint64_t t0 = em_now_ns();
    while (!r->stop && em_now_ns() - t0 < 10000000000ull)
        em_engine_progress(r->b->e);
    return NULL;
}

/* A message whose only frame was lost, then a close (an MPI inject, then
 * MPICH's fi_close): the drain must resend it before its RTO (500 ms)
 * would, within a 100 ms bound; a drain that only waited for the RTO
 * would give up with the message pending. */
static void test_drain_delivers_a_lost_last_frame(void **st)
{
    struct side a, b;
    struct lossy ls = { .type = EM_PT_DATA, .drop = 1 };
    lossy_pair(&a, &b, &ls, 500000000);
    struct runner r = { .b = &b };
    assert_int_equal(pthread_create(&r.t, NULL, run_b, &r), 0);
    em_proto_op_t op;
    assert_int_equal(em_engine_send(a.e, &op, 1, 7, "last words", 10, NULL), 0);
    assert_int_equal(ls.dropped, 1);
    assert_int_equal(em_engine_pending(a.e, 1), 1);
    size_t left = em_engine_drain(a.e, 100000000);
    r.stop = 1;
    pthread_join(r.t, NULL);
    assert_int_equal(left, 0);
    assert_int_equal(em_engine_pending(a.e, 1), 0);
    assert_int_equal(a.ncomplete, 1);
    assert_int_equal(b.nrecv, 1);
    assert_int_equal(b.last_len, 10);
    close_pair(&a, &b);
}

/* The peer gone: the drain gives up at its bound and says what is left. */
static void test_drain_gives_up_at_its_bound(void **st)
{
    struct side a, b;
    struct lossy ls = { .type = EM_PT_DATA, .drop = 1 };
    lossy_pair(&a, &b, &ls, 1000000);
    em_proto_op_t op[2];
    assert_int_equal(em_engine_send(a.e, &op[0], 1, 7, "x", 1, NULL), 0);
    assert_int_equal(em_engine_send(a.e, &op[1], 1, 7, "y", 1, NULL), 0);
    /* b never progresses: nothing is acknowledged */
    uint64_t t0 = em_now_ns();
    assert_int_equal(em_engine_drain(a.e, 30000000), 2);
    assert_true(em_now_ns() - t0 >= 30000000);
    assert_int_equal(em_engine_pending(a.e, 1), 2);
    assert_int_equal(a.ncomplete, 0);
    close_pair(&a, &b);
}

/* The other side of a close: a received b's message, but its ACK was lost.
 * b resends after its RTO (50 ms); a, closing, must still be there to
 * answer (the drain stays a retransmit horizon after the last frame it
 * heard), or b never learns that its message arrived.  A drain that
 * ended as soon as nothing was owed left b retrying (em_proto's retry
 * limit, ~a minute with the defaults). */
/* b's message reached a, and a's ACK of it was lost (b's RTO: 50 ms) */
static void lost_ack_pair(struct side *a, struct side *b, struct lossy *ls, em_proto_op_t *op)
{
    *ls = (struct lossy){ .type = EM_PT_ACK, .drop = 1 };
    lossy_pair(a, b, ls, 50000000);
    assert_int_equal(em_engine_send(b->e, op, 0, 7, "hello", 5, NULL), 0);
    SPIN_UNTIL(a, b, a->nrecv == 1 && ls->dropped == 1);
    assert_int_equal(b->ncomplete, 0);
}

/* a drains and goes; b stays */
static void drain_and_leave(struct side *a)
{
    assert_int_equal(em_engine_drain(a->e, 1000000000), 0);
    em_engine_destroy(a->e);
    a->e = NULL;
}

static void close_b_after_a(struct side *a, struct side *b)
{
    em_engine_destroy(b->e);
    em_link_close(a->l);
    em_link_close(b->l);
}

static void test_drain_answers_a_late_resend(void **st)
{
    struct side a, b;
    struct lossy ls;
    em_proto_op_t op;
    lost_ack_pair(&a, &b, &ls, &op);
    struct runner r = { .b = &b };
    assert_int_equal(pthread_create(&r.t, NULL, run_b, &r), 0);
    drain_and_leave(&a); /* a is gone: nothing answers b any more */
    r.stop = 1;
    pthread_join(r.t, NULL);
    assert_int_equal(b.ncomplete, 1);
    assert_int_equal(a.nrecv, 1); /* the resend was a duplicate, not delivered twice */
    close_b_after_a(&a, &b);
}

/* The same lost ACK, but b is busy (not progressing) for a's whole drain:
 * only the ACK state a leaves behind at the end of its drain
 * (em_proto_ack_heard), waiting in b's socket, tells b its message
 * arrived.  Without it b would probe a peer that is gone. */
static void test_drain_leaves_its_ack_state_behind(void **st)
{
    struct side a, b;
    struct lossy ls;
    em_proto_op_t op;
    lost_ack_pair(&a, &b, &ls, &op);
    drain_and_leave(&a);
    uint64_t t0 = em_now_ns();                              /* b wakes up; a is gone */
    while (b.ncomplete == 0 && em_now_ns() - t0 < 20000000) /* < b's RTO (50 ms) */
        em_engine_progress(b.e);
    assert_int_equal(b.ncomplete, 1);
    close_b_after_a(&a, &b);
}

static void test_put_lands_in_region(void **st)
{
    struct side a, b;
    open_pair(&a, &b, 12);
    size_t n = 300000;
    uint8_t *dst = calloc(1, n + 64), *src = malloc(n);
    for (size_t k = 0; k < n; k++)
        src[k] = (uint8_t)(k ^ (k >> 8));
    em_region_handle_t h;
    assert_int_equal(em_engine_register(b.e, dst, n + 64, &h), 0);
    em_proto_op_t op;
    assert_int_equal(em_engine_put(a.e, &op, 1, &h, 32, src, n, NULL), 0);
    SPIN_UNTIL(&a, &b, a.ncomplete == 1);
    /* completion means placed: no further progress on b needed */
    assert_memory_equal(dst + 32, src, n);
    for (int k = 0; k < 32; k++)
        assert_int_equal(dst[k], 0);
    assert_int_equal(em_engine_deregister(b.e, &h), 0);
    assert_int_equal(em_engine_deregister(b.e, &h), -EM_EINVAL);
    close_pair(&a, &b);
    free(dst);
    free(src);
}

/* Send the frame @p h (+ @p len payload bytes) to b: from a plain socket
 * (a stranger's address) when @p via is NULL, else through @p via's link
 * (the peer itself misbehaving: its own address). */
static void send_frame(struct side *b, struct side *via, const em_hdr_t *h, const void *pl,
                       size_t len)
{
    uint8_t f[EM_HDR_LEN + EM_PUT_EXT_LEN + 64];
    size_t n = em_hdr_encode(h, f);
    memcpy(f + n, pl, len);
    if (via) {
        em_pkt_t *p = em_link_tx_alloc(via->l);
        assert_non_null(p);
        memcpy(p->data, f, n + len);
        p->len = (uint32_t)(n + len);
        p->peer = 1;
        p->ext = NULL;
        p->ext_len = 0;
        assert_int_equal(em_link_tx_burst(via->l, &p, 1), 1);
        em_link_flush(via->l);
        return;
    }
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET };
    memcpy(&sa.sin_addr.s_addr, b->l->local.bytes, 4);
    memcpy(&sa.sin_port, b->l->local.bytes + 4, 2);
    assert_int_equal(sendto(fd, f, n + len, 0, (struct sockaddr *)&sa, sizeof sa),
                     (ssize_t)(n + len));
    close(fd);
}

/* A hostile peer (a's own address) sends b a put frame. */
static void forge(struct side *a, struct side *b, uint32_t job_key, uint32_t region, uint64_t key,
                  uint64_t off)
{
    em_hdr_t h = { .type = EM_PT_PUT,
                   .job_key = job_key,
                   .index = 0, /* b's number of a */
                   .len = 8,
                   .msg_len = 8,
                   .frag_cnt = 1,
                   .region = region,
                   .key = key,
                   .offset = off,
                   .seq = (uint32_t)em_engine_proto_stats(b->e)->rx_frames };
    send_frame(b, a, &h, "FORGED!!", 8);
}

static void test_forged_frames_dropped_and_counted(void **st)
{
    struct side a, b;
    open_pair(&a, &b, 13);
    uint8_t region[64];
    memset(region, 0xAA, sizeof region);
    em_region_handle_t h;
    assert_int_equal(em_engine_register(b.e, region, sizeof region, &h), 0);

    forge(&a, &b, 0xDEAD, h.id, h.key, 0); /* another job */
    SPIN_UNTIL(&a, &b, em_engine_proto_stats(b.e)->drop_job_key == 1);
    forge(&a, &b, 13, h.id, h.key ^ 1, 0); /* bad region key */
    SPIN_UNTIL(&a, &b, em_engine_stats(b.e)->put_bad_key == 1);
    forge(&a, &b, 13, h.id, h.key, 60); /* 8 bytes at 60 of 64 */
    SPIN_UNTIL(&a, &b, em_engine_stats(b.e)->put_out_of_bounds == 1);
    forge(&a, &b, 13, h.id + 7, h.key, 0); /* no such region */
    SPIN_UNTIL(&a, &b, em_engine_stats(b.e)->put_bad_region == 1);
    for (size_t k = 0; k < sizeof region; k++)
        assert_int_equal(region[k], 0xAA);
    assert_int_equal(em_engine_stats(b.e)->puts_placed, 0);
    assert_int_equal(em_engine_proto_stats(b.e)->puts_rejected, 3);
    close_pair(&a, &b);
}

/* The right key, in window, claiming to be a, from another address:
 * dropped (drop_source) whatever it is (security review C2). */
static void test_stranger_frames_dropped(void **st)
{
    struct side a, b;
    open_pair(&a, &b, 15);
    em_hdr_t d = {
        .type = EM_PT_DATA, .job_key = 15, .index = 0, .len = 5, .msg_len = 5, .frag_cnt = 1
    };
    send_frame(&b, NULL, &d, "evil!", 5);
    SPIN_UNTIL(&a, &b, em_engine_proto_stats(b.e)->drop_source == 1);
    assert_int_equal(b.nrecv, 0);

    /* a forged ACK does not complete a's send: b never ran while it was sent */
    em_proto_op_t op;
    assert_int_equal(em_engine_send(a.e, &op, 1, 1, "hello", 5, NULL), 0);
    em_hdr_t k = { .type = EM_PT_ACK, .job_key = 15, .index = 1, .ack = 1 };
    send_frame(&a, NULL, &k, "", 0);
    uint64_t t1 = em_now_ns();
    while (em_engine_proto_stats(a.e)->drop_source == 0 && em_now_ns() - t1 < 5000000000ull)
        em_engine_progress(a.e);
    assert_int_equal(em_engine_proto_stats(a.e)->drop_source, 1);
    assert_int_equal(a.ncomplete, 0);

    /* a reassembly cut from a stranger's address fails: the message arrives whole */
    size_t n = 20000;
    uint8_t *buf = malloc(n);
    for (size_t i = 0; i < n; i++)
        buf[i] = (uint8_t)(i * 13);
    em_proto_op_t big;
    assert_int_equal(em_engine_send(a.e, &big, 1, 2, buf, n, NULL), 0);
    for (uint32_t s = 0; s < 32; s++) { /* single-frame "messages" at every seq */
        d.seq = s;
        send_frame(&b, NULL, &d, "evil!", 5);
    }
    SPIN_UNTIL(&a, &b, a.ncomplete == 2 && b.nrecv == 2);
    assert_int_equal(b.last_len, n);
    assert_int_equal(b.sum, checksum(buf, n));
    SPIN_UNTIL(&a, &b, em_engine_proto_stats(b.e)->drop_source == 33);
    assert_int_equal(em_engine_proto_stats(b.e)->drop_malformed, 0);
    free(buf);
    close_pair(&a, &b);
}

/* A put into a region deregistered meanwhile: the initiator's put fails
 * with a remote access error (security review M3), it does not "succeed". */
static void test_put_into_deregistered_region_fails(void **st)
{
    struct side a, b;
    open_pair(&a, &b, 16);
    uint8_t region[4096];
    em_region_handle_t h;
    assert_int_equal(em_engine_register(b.e, region, sizeof region, &h), 0);
    assert_int_equal(em_engine_deregister(b.e, &h), 0);
    em_proto_op_t op;
    assert_int_equal(em_engine_put(a.e, &op, 1, &h, 0, "abcdefgh", 8, NULL), 0);
    SPIN_UNTIL(&a, &b, a.nfail == 1);
    assert_int_equal(a.last_status, -EM_EACCES);
    assert_int_equal(a.ncomplete, 0);
    assert_int_equal(em_engine_proto_stats(a.e)->puts_failed, 1);
    assert_int_equal(em_engine_stats(b.e)->put_bad_region + em_engine_stats(b.e)->put_bad_key, 1);
    close_pair(&a, &b);
}

/* b never learns a's address up front (Open MPI adds a peer only when it
 * first sends to it): its ACKs for a's one-way stream need resolve_peer.
 * Without it they were dropped, and a stalled after one window (real networks). */
static unsigned one_way_to_unnamed_peer(struct side *a, struct side *b, bool resolver,
                                        unsigned nmsg)
{
    open_links(a, b, 0);
    em_proto_cfg_t c;
    em_proto_cfg_default(&c);
    c.job_key = 15;
    c.frame_max = 1472;
    int e;
    c.self = 0;
    a->e = em_engine_create(a->l, &c, &OPS, a, &e);
    c.self = 1;
    b->e = em_engine_create(b->l, &c, resolver ? &OPS_RESOLVE : &OPS, b, &e);
    assert_non_null(a->e);
    assert_non_null(b->e);
    b->resolve_to = &a->l->local;
    assert_int_equal(em_engine_set_peer(a->e, 1, &b->l->local), 0); /* a -> b only */

    em_proto_op_t *op = calloc(nmsg, sizeof *op);
    uint8_t msg[64] = { 1 };
    uint64_t t0 = em_now_ns();
    unsigned sent = 0;
    /* one message, then let both sides run a little: sparse one-way traffic */
    while (em_now_ns() - t0 < 2000000000ull && a->ncomplete < nmsg) {
        if (sent < nmsg && sent - a->ncomplete < 2 * c.window)
            assert_int_equal(em_engine_send(a->e, &op[sent++], 1, 3, msg, sizeof msg, NULL), 0);
        for (int k = 0; k < 50; k++) {
            em_engine_progress(a->e);
            em_engine_progress(b->e);
        }
    }
    unsigned done = a->ncomplete;
    close_pair(a, b);
    free(op);
    return done;
}

static void test_receive_only_peer_acks_via_resolve(void **st)
{
    struct side a, b;
    assert_int_equal(one_way_to_unnamed_peer(&a, &b, true, 200), 200);
    assert_int_equal(b.nrecv, 200);
    assert_int_equal(b.nresolve, 1); /* asked once, then known */
}

static void test_receive_only_peer_without_resolver_stalls(void **st)
{
    struct side a, b;
    /* the old behaviour: ACKs have nowhere to go, a completes nothing */
    assert_int_equal(one_way_to_unnamed_peer(&a, &b, false, 200), 0);
    assert_true(b.nrecv > 0);
}

/* em_engine_send_ready: no room once the window is full, and none while a
 * retransmit timer is overdue (an inline send must not queue then). */
static void test_send_ready_follows_window_and_timer(void **st)
{
    struct side a, b;
    open_pair(&a, &b, 16);
    uint8_t msg[64] = { 0 };
    em_proto_op_t op[40];
    assert_true(em_engine_send_ready(a.e, 1, sizeof msg));
    for (int i = 0; i < 32; i++) /* default window: 32 frames */
        assert_int_equal(em_engine_send(a.e, &op[i], 1, 1, msg, sizeof msg, NULL), 0);
    assert_false(em_engine_send_ready(a.e, 1, sizeof msg));
    SPIN_UNTIL(&a, &b, a.ncomplete == 32);
    assert_true(em_engine_send_ready(a.e, 1, sizeof msg));
    assert_false(em_engine_send_ready(a.e, 1, 40 * 1500)); /* more frames than the window */
    assert_int_equal(em_engine_send(a.e, &op[32], 1, 1, msg, sizeof msg, NULL), 0);
    /* nobody polls: once the RTO (at most rto_max, 1 s) is overdue, no room */
    for (int ms = 0; ms < 1200 && em_engine_send_ready(a.e, 1, sizeof msg); ms++)
        usleep(1000);
    assert_false(em_engine_send_ready(a.e, 1, sizeof msg));
    SPIN_UNTIL(&a, &b, a.ncomplete == 33);
    assert_true(em_engine_send_ready(a.e, 1, sizeof msg));
    close_pair(&a, &b);
}

static void test_unknown_interface_is_a_clear_error(void **st)
{
    char err[256] = "";
    em_udp_cfg_t uc = { .iface = "nosuchif0" };
    assert_null(em_link_udp_open(&uc, err, sizeof err));
    assert_non_null(strstr(err, "nosuchif0"));
    assert_non_null(strstr(err, "lo")); /* lists what exists */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_messages_every_size_class),
        cmocka_unit_test(test_refused_gathered_frames_are_flattened),
        cmocka_unit_test(test_drain_delivers_a_lost_last_frame),
        cmocka_unit_test(test_drain_gives_up_at_its_bound),
        cmocka_unit_test(test_drain_answers_a_late_resend),
        cmocka_unit_test(test_drain_leaves_its_ack_state_behind),
        cmocka_unit_test(test_put_lands_in_region),
        cmocka_unit_test(test_forged_frames_dropped_and_counted),
        cmocka_unit_test(test_stranger_frames_dropped),
        cmocka_unit_test(test_put_into_deregistered_region_fails),
        cmocka_unit_test(test_receive_only_peer_acks_via_resolve),
        cmocka_unit_test(test_receive_only_peer_without_resolver_stalls),
        cmocka_unit_test(test_send_ready_follows_window_and_timer),
        cmocka_unit_test(test_unknown_interface_is_a_clear_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
