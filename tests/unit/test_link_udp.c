/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * link_udp's offloads on loopback (real networks: docs/design.md): runs of equal frames
 * leave as one UDP GSO send, coalesced (GRO) buffers are split back into
 * the same frames over as many rx_burst calls as it takes, sizes from the
 * kernel are checked, and a kernel that refuses GSO costs one fallback and
 * no frame; first contact (tx_to, rx_from) makes no peer state; a taken
 * receive port is reported by its reason code (-EM_EADDRINUSE).  Link
 * level only: no protocol, frames are checked byte by byte.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <sys/ioctl.h>
#include <dirent.h>
#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "link/link_udp.h"
#include "proto/proto.h"
#include "util/clock.h"
#include "link_test_util.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif

static em_link_t *open_link(int no_gso, int no_gro)
{
    char err[256];
    em_udp_cfg_t c = {
        .iface = "127.0.0.1", .mtu = 1472, .no_gso = no_gso, .no_gro = no_gro, .note = cb_record
    };
    em_link_t *l = em_link_udp_open(&c, err, sizeof err);
    if (!l)
        fail_msg("open: %s", err);
    return l;
}

static uint8_t pattern(unsigned frame, unsigned i) { return (uint8_t)(frame * 31u + i * 7u + 1u); }

/* frame @p f of a test burst: @p len bytes, half of them from an external
 * buffer when @p ext_buf is given (the gather path of the BTL) */
static em_pkt_t *make_frame(em_link_t *l, uint32_t peer, unsigned f, uint32_t len, uint8_t *ext_buf)
{
    em_pkt_t *p = em_link_tx_alloc(l);
    assert_non_null(p);
    uint32_t head = ext_buf ? len / 2 : len;
    for (uint32_t i = 0; i < head; i++)
        p->data[i] = pattern(f, i);
    p->len = head;
    if (ext_buf) {
        for (uint32_t i = head; i < len; i++)
            ext_buf[i - head] = pattern(f, i);
        p->ext = ext_buf;
        p->ext_len = len - head;
    }
    p->peer = peer;
    return p;
}

/* send @p n frames of @p len bytes to @p peer in one burst, numbered from
 * @p first (their pattern); their lengths go to @p lens for expect_frames */
static void send_burst(em_link_t *l, uint32_t peer, unsigned first, unsigned n, uint32_t len,
                       uint32_t *lens)
{
    em_pkt_t *pk[64];
    assert_true(n <= 64);
    for (unsigned f = 0; f < n; f++) {
        lens[f] = len;
        pk[f] = make_frame(l, peer, first + f, len, NULL);
    }
    assert_int_equal(em_link_tx_burst(l, pk, n), n);
}

/* receive @p n frames (at most @p max per burst) and check them against
 * the pattern of frames first..first+n-1 and lengths @p lens */
static void expect_frames(em_link_t *l, unsigned first, unsigned n, const uint32_t *lens,
                          unsigned max)
{
    unsigned got = 0;
    uint64_t t0 = em_clock_ns();
    while (got < n) {
        em_pkt_t *pk[64];
        unsigned k = em_link_rx_burst(l, pk, max);
        assert_true(k <= max);
        for (unsigned i = 0; i < k; i++) {
            assert_true(got < n);
            assert_int_equal(pk[i]->len, lens[got]);
            for (uint32_t j = 0; j < pk[i]->len; j++)
                if (pk[i]->data[j] != pattern(first + got, j))
                    fail_msg("frame %u byte %u: 0x%02x, expected 0x%02x", first + got, j,
                             pk[i]->data[j], pattern(first + got, j));
            got++;
        }
        em_link_rx_release(l, pk, k);
        if (em_clock_ns() - t0 > 3000000000ull)
            fail_msg("only %u of %u frames arrived", got, n);
    }
}

static void expect_quiet(em_link_t *l)
{
    em_pkt_t *pk[8];
    usleep(20000);
    assert_int_equal(em_link_rx_burst(l, pk, 8), 0);
}

/* 40 equal frames + a shorter last one to one peer: a few GSO sends, and
 * the receiver hands back exactly those frames, 7 at a time */
static void test_gso_run_and_gro_split(void **state)
{
    (void)state;
    em_link_t *a = open_link(0, 0), *b = open_link(0, 0);
    assert_int_equal(em_link_set_peer(a, 1, &b->local), 0);
    enum { N = 41 };
    static uint8_t ext[N][1472];
    em_pkt_t *pk[N];
    uint32_t lens[N];
    for (unsigned f = 0; f < N; f++) {
        lens[f] = f == N - 1 ? 300 : 1000;
        pk[f] = make_frame(a, 1, f, lens[f], f % 2 ? ext[f] : NULL);
    }
    assert_int_equal(em_link_tx_burst(a, pk, N), N);
    const em_udp_stats_t *sa = em_link_udp_stats(a);
    assert_int_equal(sa->tx_frames, N);
    assert_true(sa->tx_gso_sends >= 1);
    assert_true(sa->tx_dgrams < N); /* fewer sends than frames */
    assert_int_equal(sa->tx_gso_fallback, 0);
    expect_frames(b, 0, N, lens, 7);
    const em_udp_stats_t *sb = em_link_udp_stats(b);
    assert_int_equal(sb->rx_frames, N);
    assert_true(sb->rx_gro_dgrams >= 1); /* loopback hands the GSO send over whole */
    expect_quiet(b);
    em_link_close(a);
    em_link_close(b);
}

/* frames to two peers, of changing lengths: runs break at a new peer, a
 * longer frame and after a shorter one; every receiver gets its frames in order */
static void test_gso_runs_break_correctly(void **state)
{
    (void)state;
    em_link_t *a = open_link(0, 0), *b = open_link(0, 0), *c = open_link(0, 0);
    assert_int_equal(em_link_set_peer(a, 1, &b->local), 0);
    assert_int_equal(em_link_set_peer(a, 2, &c->local), 0);
    /* peer, length: B gets frames 0.., C gets frames 100.. */
    static const struct {
        uint32_t peer;
        uint32_t len;
    } plan[] = {
        { 1, 800 },  { 1, 800 },  { 1, 800 }, { 2, 800 }, { 2, 800 },
        { 1, 500 },  { 1, 900 },  { 1, 900 }, { 1, 200 }, { 1, 900 },
        { 2, 1472 }, { 2, 1472 }, { 2, 1 },   { 1, 0 },   { 1, 64 },
    };
    enum { N = sizeof plan / sizeof plan[0] };
    em_pkt_t *pk[N];
    uint32_t lb[N], lc[N];
    unsigned nb = 0, nc = 0;
    for (unsigned i = 0; i < N; i++) {
        unsigned f = plan[i].peer == 1 ? nb : 100 + nc;
        pk[i] = make_frame(a, plan[i].peer, f, plan[i].len, NULL);
        if (plan[i].peer == 1)
            lb[nb++] = plan[i].len;
        else
            lc[nc++] = plan[i].len;
    }
    assert_int_equal(em_link_tx_burst(a, pk, N), N);
    assert_int_equal(em_link_udp_stats(a)->tx_frames, N);
    expect_frames(b, 0, nb, lb, 64);
    expect_frames(c, 100, nc, lc, 3);
    expect_quiet(b);
    expect_quiet(c);
    em_link_close(a);
    em_link_close(b);
    em_link_close(c);
}

/* SO_NO_CHECK makes the kernel refuse GSO (EINVAL): one fallback, said
 * once, and every frame still arrives */
static void test_gso_fallback_loses_nothing(void **state)
{
    (void)state;
    em_link_t *a = open_link(0, 0), *b = open_link(0, 0);
    assert_int_equal(em_link_set_peer(a, 1, &b->local), 0);
    int one = 1;
    assert_int_equal(
        setsockopt(em_link_udp_send_fd(a, 1), SOL_SOCKET, SO_NO_CHECK, &one, sizeof one), 0);
    cb_calls = 0;
    enum { N = 12 };
    uint32_t lens[N];
    for (unsigned round = 0; round < 2; round++) {
        send_burst(a, 1, round * N, N, 1200, lens);
        expect_frames(b, round * N, N, lens, 64);
    }
    const em_udp_stats_t *s = em_link_udp_stats(a);
    assert_int_equal(s->tx_gso_fallback, 1);
    assert_int_equal(s->tx_gso_sends, 0);
    assert_int_equal(s->tx_frames, 2 * N);
    assert_int_equal(s->tx_errors, 0);
    em_udp_info_t info;
    em_link_udp_info(a, &info);
    assert_int_equal(info.gso, 0);
    assert_int_equal(cb_calls, 1);
    assert_non_null(strstr(cb_last, "GSO"));
    em_link_close(a);
    em_link_close(b);
}

/* a plain socket that sends with UDP_SEGMENT, as any host may */
static void raw_gso_send(const em_link_t *to, uint16_t gso, const uint8_t *buf, size_t len)
{
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in sa = { .sin_family = AF_INET };
    memcpy(&sa.sin_addr.s_addr, to->local.bytes, 4);
    memcpy(&sa.sin_port, to->local.bytes + 4, 2);
    int g = gso; /* the socket option is an int, the cmsg a u16 */
    if (gso)
        assert_int_equal(setsockopt(fd, SOL_UDP, UDP_SEGMENT, &g, sizeof g), 0);
    assert_int_equal(sendto(fd, buf, len, 0, (struct sockaddr *)&sa, sizeof sa), (ssize_t)len);
    close(fd);
}

/* coalesced segments larger than a frame are refused and counted; so is a
 * single datagram larger than a frame; a good datagram after them passes */
static void test_gro_sizes_checked(void **state)
{
    (void)state;
    em_link_t *b = open_link(0, 0);
    em_udp_info_t info;
    em_link_udp_info(b, &info);
    assert_int_equal(info.gro, 1);
    static uint8_t buf[8000];
    for (unsigned i = 0; i < sizeof buf; i++)
        buf[i] = pattern(i / 2000, i % 2000);
    raw_gso_send(b, 2000, buf, 4000); /* 2 x 2000 > frame size 1472 */
    raw_gso_send(b, 0, buf, 3000);    /* one datagram > frame size */
    for (unsigned i = 0; i < 5 * 700 + 100; i++)
        buf[i] = pattern(i / 700, i % 700);
    raw_gso_send(b, 700, buf, 5 * 700 + 100);
    uint32_t lens[] = { 700, 700, 700, 700, 700, 100 };
    expect_frames(b, 0, 6, lens, 4);
    const em_udp_stats_t *s = em_link_udp_stats(b);
    assert_int_equal(s->rx_bad_gro, 1);
    assert_int_equal(s->rx_truncated, 1);
    assert_int_equal(s->rx_frames, 6);
    em_link_close(b);
}

/* After an empty poll the link asks for one datagram, then for the whole
 * batch, and sets up again only the slots the kernel wrote or the
 * compaction moved.  A refused datagram inside a batch (the compaction
 * moves the slots after it), then a second round through the same slots:
 * every frame comes back intact and in order.  (Guards the bookkeeping of
 * rx_want/rx_dirty; the code before it, which set up every slot on every
 * poll, passes too.) */
static void test_slots_after_idle_and_refusal(void **state)
{
    (void)state;
    em_link_t *b = open_link(0, 1); /* no GRO: one datagram per frame */
    enum { N = 40 };
    static uint8_t big[3000], buf[1472];
    uint32_t lens[N];
    for (unsigned round = 0; round < 2; round++) {
        expect_quiet(b); /* an empty poll */
        for (unsigned f = 0; f < N; f++) {
            if (f == 5)
                raw_gso_send(b, 0, big, sizeof big); /* larger than a frame */
            lens[f] = 100 + 30 * f;
            for (unsigned j = 0; j < lens[f]; j++)
                buf[j] = pattern(round * N + f, j);
            raw_gso_send(b, 0, buf, lens[f]);
        }
        expect_frames(b, round * N, N, lens, 64);
    }
    const em_udp_stats_t *s = em_link_udp_stats(b);
    assert_int_equal(s->rx_truncated, 2);
    assert_int_equal(s->rx_frames, 2 * N);
    assert_int_equal(s->rx_dgrams, 2 * N + 2);
    em_link_close(b);
}

/* test frames for cfg.frame_len: bytes 0-1 state the frame's length (big-endian) */
static uint32_t stated_len(const void *frame, size_t avail)
{
    const uint8_t *b = frame;
    if (avail < 2)
        return 0;
    uint32_t n = (uint32_t)b[0] << 8 | b[1];
    return n >= 2 && n <= avail ? n : 0;
}

/* frame @p f of @p len bytes: its stated length, then the pattern */
static void put_frame(uint8_t *at, unsigned f, uint32_t len, uint32_t stated)
{
    at[0] = (uint8_t)(stated >> 8);
    at[1] = (uint8_t)stated;
    for (uint32_t j = 2; j < len; j++)
        at[j] = pattern(f, j);
}

/* poll until one burst returns frames; check they are frames first.. of
 * lengths @p lens (n of them), stated lengths aside */
static void expect_stated(em_link_t *l, unsigned first, unsigned n, const uint32_t *lens)
{
    unsigned got = 0;
    uint64_t t0 = em_clock_ns();
    while (got < n) {
        em_pkt_t *pk[64];
        unsigned k = em_link_rx_burst(l, pk, 64);
        for (unsigned i = 0; i < k; i++, got++) {
            assert_true(got < n);
            assert_int_equal(pk[i]->len, lens[got]);
            for (uint32_t j = 2; j < pk[i]->len; j++)
                if (pk[i]->data[j] != pattern(first + got, j))
                    fail_msg("frame %u byte %u differs", first + got, j);
        }
        em_link_rx_release(l, pk, k);
        if (em_clock_ns() - t0 > 3000000000ull)
            fail_msg("only %u of %u frames arrived", got, n);
    }
}

/* The poll of an idle link is one recvfrom (cfg.frame_len given): with
 * GRO it gets no segment size, so a coalesced datagram is split at the
 * length its first frame states.  Each case starts from an idle link (an
 * empty poll first): a GSO train of 5 x 700 + 100 comes back as its six
 * frames; a lone frame as itself; a train whose first frame states more
 * than a frame, or more than the datagram holds, is refused and counted
 * (nothing of it delivered); a good train after them still passes. */
static void test_idle_poll_splits_at_stated_length(void **state)
{
    (void)state;
    char err[256];
    em_udp_cfg_t c = { .iface = "127.0.0.1", .mtu = 1472, .frame_len = stated_len };
    em_link_t *b = em_link_udp_open(&c, err, sizeof err);
    if (!b)
        fail_msg("open: %s", err);
    em_udp_info_t info;
    em_link_udp_info(b, &info);
    assert_int_equal(info.gro, 1);
    static uint8_t buf[8000];
    uint32_t lens[6] = { 700, 700, 700, 700, 700, 100 };

    expect_quiet(b);
    for (unsigned f = 0; f < 6; f++)
        put_frame(buf + f * 700, f, lens[f], lens[f]);
    raw_gso_send(b, 700, buf, 5 * 700 + 100);
    expect_stated(b, 0, 6, lens);
    const em_udp_stats_t *s = em_link_udp_stats(b);
    assert_int_equal(s->rx_gro_dgrams, 1);
    assert_int_equal(s->rx_dgrams, 1);

    expect_quiet(b);
    put_frame(buf, 6, 900, 900);
    raw_gso_send(b, 0, buf, 900);
    uint32_t one[1] = { 900 };
    expect_stated(b, 6, 1, one);
    assert_int_equal(s->rx_gro_dgrams, 1);

    expect_quiet(b);
    for (unsigned f = 0; f < 2; f++)
        put_frame(buf + f * 2000, f, 2000, 2000);
    raw_gso_send(b, 2000, buf, 4000); /* segments larger than a frame */
    expect_quiet(b);
    assert_int_equal(s->rx_bad_gro, 1);
    expect_quiet(b); /* idle again: the refusal above was a datagram */
    for (unsigned f = 0; f < 3; f++)
        put_frame(buf + f * 1000, f, 1000, 5000);
    raw_gso_send(b, 1000, buf, 3000); /* states more than the datagram */
    expect_quiet(b);
    assert_int_equal(s->rx_bad_gro, 2);

    expect_quiet(b);
    for (unsigned f = 0; f < 6; f++)
        put_frame(buf + f * 700, 10 + f, lens[f], lens[f]);
    raw_gso_send(b, 700, buf, 5 * 700 + 100);
    expect_stated(b, 10, 6, lens);
    assert_int_equal(s->rx_frames, 13);
    assert_int_equal(s->rx_truncated, 0);
    em_link_close(b);
}

/* Frames leave from the send port a link publishes (bytes 6-7 of its
 * address), through a socket connected to the peer, and are the peer's by
 * that source: the receiver maps them to the sender's index; a datagram
 * from the sender's *receive* port is nobody's.  Re-addressing a peer
 * closes the socket connected to its old address: frames then reach the
 * new one.  A burst to two peers goes through the shared send socket,
 * from the same port.  A stranger's datagram to the send port is kept by
 * no socket. */
static void test_sends_from_the_published_send_port(void **state)
{
    (void)state;
    em_link_t *a = open_link(0, 0), *b = open_link(0, 0), *c = open_link(0, 0);
    assert_int_equal(a->local.len, 8);
    assert_true(memcmp(a->local.bytes + 4, a->local.bytes + 6, 2) != 0);
    assert_int_equal(em_link_set_peer(a, 1, &b->local), 0);
    assert_int_equal(em_link_set_peer(b, 7, &a->local), 0);
    uint32_t lens[4];
    send_burst(a, 1, 0, 3, 500, lens);
    em_pkt_t *pk[8];
    unsigned k = 0;
    for (uint64_t t0 = em_clock_ns(); k == 0 && em_clock_ns() - t0 < 3000000000ull;)
        k = em_link_rx_burst(b, pk, 8);
    assert_true(k >= 1);
    for (unsigned i = 0; i < k; i++)
        assert_int_equal(b->ops->rx_peer(b, pk[i]), 7);
    em_link_rx_release(b, pk, k);
    while (em_link_rx_burst(b, pk, 8))
        ;
    /* the same bytes from a's receive port: not a's */
    uint8_t f[100] = { 0 };
    struct sockaddr_in to = { .sin_family = AF_INET };
    memcpy(&to.sin_addr.s_addr, b->local.bytes, 4);
    memcpy(&to.sin_port, b->local.bytes + 4, 2);
    assert_int_equal(sendto(em_link_udp_fd(a), f, sizeof f, 0, (struct sockaddr *)&to, sizeof to),
                     (ssize_t)sizeof f);
    k = 0;
    for (uint64_t t0 = em_clock_ns(); k == 0 && em_clock_ns() - t0 < 3000000000ull;)
        k = em_link_rx_burst(b, pk, 8);
    assert_int_equal(k, 1);
    assert_int_equal(b->ops->rx_peer(b, pk[0]), EM_LINK_PEER_UNKNOWN);
    em_link_rx_release(b, pk, k);
    /* peer 1 moves to c: the next frames reach c */
    assert_int_equal(em_link_set_peer(a, 1, &c->local), 0);
    send_burst(a, 1, 10, 2, 700, lens);
    expect_frames(c, 10, 2, lens, 8);
    expect_quiet(b);
    /* one burst to two peers (b as peer 2, c as peer 1): both get theirs */
    assert_int_equal(em_link_set_peer(a, 2, &b->local), 0);
    em_pkt_t *two[2] = { make_frame(a, 1, 20, 300, NULL), make_frame(a, 2, 21, 300, NULL) };
    assert_int_equal(em_link_tx_burst(a, two, 2), 2);
    uint32_t l300[1] = { 300 };
    expect_frames(c, 20, 1, l300, 8);
    expect_frames(b, 21, 1, l300, 8);
    assert_int_equal(em_link_udp_stats(a)->tx_errors, 0);
    /* a stranger's datagram to a's send port is kept nowhere (the drop-all
     * filter): the shared send socket holds no byte of it */
    struct sockaddr_in sp = { .sin_family = AF_INET };
    memcpy(&sp.sin_addr.s_addr, a->local.bytes, 4);
    memcpy(&sp.sin_port, a->local.bytes + 6, 2);
    int stranger = socket(AF_INET, SOCK_DGRAM, 0);
    assert_true(stranger >= 0);
    assert_int_equal(sendto(stranger, f, sizeof f, 0, (struct sockaddr *)&sp, sizeof sp),
                     (ssize_t)sizeof f);
    close(stranger);
    usleep(20000);
    int queued = -1;
    assert_int_equal(ioctl(em_link_udp_send_fd(a, 99), FIONREAD, &queued), 0);
    assert_int_equal(queued, 0);
    expect_quiet(a);
    em_link_close(a);
    em_link_close(b);
    em_link_close(c);
}

/* without GRO on the receiver the kernel cuts the GSO send itself */
static void test_no_gro_receiver(void **state)
{
    (void)state;
    em_link_t *a = open_link(0, 0), *b = open_link(0, 1);
    em_udp_info_t info;
    em_link_udp_info(b, &info);
    assert_int_equal(info.gro, 0);
    assert_int_equal(em_link_set_peer(a, 1, &b->local), 0);
    enum { N = 20 };
    uint32_t lens[N];
    send_burst(a, 1, 0, N, 1472, lens);
    assert_true(em_link_udp_stats(a)->tx_gso_sends >= 1);
    expect_frames(b, 0, N, lens, 64);
    assert_int_equal(em_link_udp_stats(b)->rx_gro_dgrams, 0);
    assert_int_equal(em_link_udp_stats(b)->rx_dgrams, N);
    em_link_close(a);
    em_link_close(b);
}

/* the same burst with GSO off: one datagram per frame */
static void test_no_gso(void **state)
{
    (void)state;
    em_link_t *a = open_link(1, 0), *b = open_link(0, 0);
    assert_int_equal(em_link_set_peer(a, 1, &b->local), 0);
    enum { N = 10 };
    uint32_t lens[N];
    send_burst(a, 1, 0, N, 1000, lens);
    assert_int_equal(em_link_udp_stats(a)->tx_gso_sends, 0);
    assert_int_equal(em_link_udp_stats(a)->tx_dgrams, N);
    expect_frames(b, 0, N, lens, 64);
    assert_int_equal(em_link_udp_stats(b)->rx_gro_dgrams, 0);
    char w[256];
    if (geteuid() == 0)
        assert_int_equal(em_link_udp_buf_warning(a, w, sizeof w), 0); /* FORCE works */
    em_link_close(a);
    em_link_close(b);
}

/* descriptors this process has open (a connected send socket is one) */
static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    assert_non_null(d);
    int n = 0;
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

/* one frame, waited for (3 s) */
static em_pkt_t *recv_one(em_link_t *l)
{
    em_pkt_t *pk[8];
    unsigned k = 0;
    for (uint64_t t0 = em_clock_ns(); k == 0 && em_clock_ns() - t0 < 3000000000ull;)
        k = em_link_rx_burst(l, pk, 1);
    if (k != 1)
        fail_msg("no frame arrived");
    return pk[0];
}

/* First contact: a frame sent with tx_to to a link that has no peer entry
 * for the sender arrives intact, from the sender's send port (rx_from
 * true for its published address, false for another port or IPv4 or the
 * 6-byte form naming its receive port); the sender makes no peer state
 * (no descriptor opened, no source mapping: the answer, sent back with
 * tx_to, is still no peer's); a bad address is refused, the frame kept. */
static void test_tx_to_and_rx_from(void **state)
{
    (void)state;
    em_link_t *a = open_link(0, 0), *b = open_link(0, 0), *c = open_link(0, 0);
    assert_non_null(a->ops->tx_to);
    assert_true(em_link_has_contact(a));
    int fds = open_fds();
    em_pkt_t *p = make_frame(a, 0, 30, 96, NULL);
    p->peer = 12345; /* no peer: tx_to reads only the address */
    assert_int_equal(a->ops->tx_to(a, p, &b->local), 0);
    assert_int_equal(open_fds(), fds);
    em_pkt_t *r = recv_one(b);
    assert_int_equal(r->len, 96);
    for (uint32_t j = 0; j < r->len; j++)
        assert_int_equal(r->data[j], pattern(30, j));
    assert_true(b->ops->rx_from(b, r, &a->local));
    em_link_addr_t other = a->local;
    other.bytes[7] ^= 1; /* another send port */
    assert_false(b->ops->rx_from(b, r, &other));
    other = a->local;
    other.bytes[3] ^= 1; /* another IPv4 address */
    assert_false(b->ops->rx_from(b, r, &other));
    assert_false(b->ops->rx_from(b, r, &c->local));
    other = a->local;
    other.len = 6; /* "sends from its receive port": not where it came from */
    assert_false(b->ops->rx_from(b, r, &other));
    memcpy(other.bytes + 4, a->local.bytes + 6, 2);
    assert_true(b->ops->rx_from(b, r, &other));
    const uint8_t bad_lens[] = { 0, 4, 7, 9, 14 };
    for (unsigned i = 0; i < sizeof bad_lens; i++) {
        other = a->local;
        other.len = bad_lens[i];
        assert_false(b->ops->rx_from(b, r, &other));
    }
    assert_int_equal(b->ops->rx_peer(b, r), EM_LINK_PEER_UNKNOWN);
    em_link_rx_release(b, &r, 1);
    /* the answer: no peer of a's, although a sent to b */
    p = make_frame(b, 0, 31, 64, NULL);
    assert_int_equal(b->ops->tx_to(b, p, &a->local), 0);
    r = recv_one(a);
    assert_int_equal(r->data[5], pattern(31, 5));
    assert_int_equal(a->ops->rx_peer(a, r), EM_LINK_PEER_UNKNOWN);
    assert_true(a->ops->rx_from(a, r, &b->local));
    em_link_rx_release(a, &r, 1);
    /* a peer entry made afterwards is judged as before */
    assert_int_equal(em_link_set_peer(b, 4, &a->local), 0);
    p = make_frame(a, 0, 32, 64, NULL);
    assert_int_equal(a->ops->tx_to(a, p, &b->local), 0);
    r = recv_one(b);
    assert_int_equal(b->ops->rx_peer(b, r), 4);
    em_link_rx_release(b, &r, 1);
    /* bad addresses: -EINVAL, the frame still ours */
    p = make_frame(a, 0, 33, 64, NULL);
    em_link_addr_t bad = b->local;
    for (unsigned i = 0; i < sizeof bad_lens; i++) {
        bad.len = bad_lens[i];
        assert_int_equal(a->ops->tx_to(a, p, &bad), -EINVAL);
    }
    bad = b->local;
    memset(bad.bytes + 4, 0, 2); /* port 0 */
    assert_int_equal(a->ops->tx_to(a, p, &bad), -EINVAL);
    em_link_tx_free(a, p);
    expect_quiet(b);
    assert_int_equal(em_link_udp_stats(a)->tx_errors, 0);
    assert_int_equal(em_link_udp_stats(a)->tx_shared_peers, 0);
    em_link_close(a);
    em_link_close(b);
    em_link_close(c);
}

/* A receive port another socket has: the open fails with the reason
 * -EM_EADDRINUSE (what a front end names the cause by, never the text);
 * a free port opens with the reason 0, and an interface that does not
 * exist fails with another reason (-EM_EINVAL): the code says which. */
static void test_taken_port_reason(void **state)
{
    (void)state;
    char err[256] = "";
    int taker = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    assert_true(taker >= 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t sl = sizeof sa;
    assert_int_equal(bind(taker, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(getsockname(taker, (struct sockaddr *)&sa, &sl), 0);

    int reason = 12345;
    em_udp_cfg_t c = { .iface = "127.0.0.1", .port = ntohs(sa.sin_port), .reason = &reason };
    assert_null(em_link_udp_open(&c, err, sizeof err));
    assert_int_equal(reason, -EM_EADDRINUSE);
    assert_non_null(strstr(err, "cannot bind UDP"));

    reason = 12345;
    c.port = 0; /* any free port */
    em_link_t *l = em_link_udp_open(&c, err, sizeof err);
    assert_non_null(l);
    assert_int_equal(reason, 0);
    em_link_close(l);

    reason = 12345;
    c.iface = "nosuchif0";
    assert_null(em_link_udp_open(&c, err, sizeof err));
    assert_int_equal(reason, -EM_EINVAL);
    close(taker);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gso_run_and_gro_split),
        cmocka_unit_test(test_gso_runs_break_correctly),
        cmocka_unit_test(test_gso_fallback_loses_nothing),
        cmocka_unit_test(test_gro_sizes_checked),
        cmocka_unit_test(test_no_gro_receiver),
        cmocka_unit_test(test_idle_poll_splits_at_stated_length),
        cmocka_unit_test(test_sends_from_the_published_send_port),
        cmocka_unit_test(test_no_gso),
        cmocka_unit_test(test_slots_after_idle_and_refusal),
        cmocka_unit_test(test_tx_to_and_rx_from),
        cmocka_unit_test(test_taken_port_reason),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
