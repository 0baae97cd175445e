/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * em_bcast over an in-memory hub link: every frame a member sends is copied
 * to every member's receive queue (itself included, as the kernel does for
 * UDP broadcast), optionally dropping chosen frames.  Checks values, own
 * frames, per-sender gap counting, every validation reason, send errors,
 * and the UDP backend's error for a missing interface.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "bcast/bcast_wire.h"
#include "bcast/em_bcast.h"

/* ------------------------------------------------------------- hub link -- */
#define HUB_MAX 4
#define QLEN    256
#define FRAME   1500

struct hub;
struct hub_link {
    em_link_t link;
    struct hub *hub;
    int id;
    em_pkt_t txp;
    uint8_t txbuf[FRAME];
    int tx_busy;
    uint8_t q[QLEN][FRAME];
    uint32_t qlen[QLEN];
    unsigned head, tail;
    em_pkt_t rxp[QLEN];
};
struct hub {
    struct hub_link *m[HUB_MAX];
    int n;
    uint64_t frames;    /* frames sent through the hub */
    uint64_t drop_mask; /* frame i (i < 64) is lost when bit i is set */
};

static em_pkt_t *h_alloc(em_link_t *l)
{
    struct hub_link *h = (struct hub_link *)l;
    if (h->tx_busy)
        return NULL;
    h->tx_busy = 1;
    h->txp.data = h->txbuf;
    h->txp.len = 0;
    return &h->txp;
}
static void h_free(em_link_t *l, em_pkt_t *p)
{
    (void)p;
    ((struct hub_link *)l)->tx_busy = 0;
}
static unsigned h_burst(em_link_t *l, em_pkt_t **p, unsigned n)
{
    struct hub_link *h = (struct hub_link *)l;
    for (unsigned k = 0; k < n; k++) {
        uint64_t f = h->hub->frames++;
        int lost = f < 64 && (h->hub->drop_mask >> f & 1);
        for (int i = 0; i < h->hub->n && !lost; i++) {
            struct hub_link *d = h->hub->m[i];
            if (d->tail - d->head < QLEN) {
                memcpy(d->q[d->tail % QLEN], p[k]->data, p[k]->len);
                d->qlen[d->tail % QLEN] = p[k]->len;
                d->tail++;
            }
        }
        h->tx_busy = 0;
    }
    return n;
}
static unsigned h_rx(em_link_t *l, em_pkt_t **p, unsigned max)
{
    struct hub_link *h = (struct hub_link *)l;
    unsigned n = 0;
    while (n < max && h->head != h->tail) {
        h->rxp[n].data = h->q[h->head % QLEN];
        h->rxp[n].len = h->qlen[h->head % QLEN];
        p[n] = &h->rxp[n];
        n++;
        h->head++;
    }
    return n;
}
static int h_set_peer(em_link_t *l, uint32_t peer, const em_link_addr_t *a)
{
    (void)l;
    (void)peer;
    (void)a;
    return 0;
}
static void h_close(em_link_t *l) { free(l); }
static const em_link_ops_t hub_ops = {
    .name = "hub",
    .tx_alloc = h_alloc,
    .tx_burst = h_burst,
    .tx_free = h_free,
    .rx_burst = h_rx,
    .rx_release = em_link_rx_release_none,
    .flush = em_link_flush_none,
    .set_peer = h_set_peer,
    .close = h_close,
};

static struct hub_link *hub_join(struct hub *hub)
{
    struct hub_link *h = calloc(1, sizeof *h);
    h->link.ops = &hub_ops;
    h->link.mtu = FRAME;
    h->hub = hub;
    h->id = hub->n;
    hub->m[hub->n++] = h;
    return h;
}

/* ---------------------------------------------------------------- helpers -- */
#define VLEN 1000
static double vec[HUB_MAX][VLEN];
static unsigned calls;

static void apply(void *arg, uint16_t sender, uint32_t off, uint32_t count, const double *v)
{
    (void)sender;
    memcpy((double *)arg + off, v, count * sizeof *v);
    calls++;
}

static em_bcast_t *member(struct hub *hub, uint16_t self, uint16_t members)
{
    char err[256] = "";
    em_bcast_cfg_t c = {
        .key = 0xC0FFEE, .channel = 3, .self = self, .members = members, .vec_len = VLEN
    };
    em_bcast_t *b = em_bcast_open_link(&hub_join(hub)->link, 0, &c, err, sizeof err);
    if (!b)
        fprintf(stderr, "open: %s\n", err);
    assert_non_null(b);
    return b;
}

/* ------------------------------------------------------------------ tests -- */
static void test_values_reach_everyone(void **st)
{
    (void)st;
    struct hub hub = { 0 };
    em_bcast_t *b[3];
    for (int i = 0; i < 3; i++)
        b[i] = member(&hub, (uint16_t)i, 3);
    memset(vec, 0, sizeof vec);
    double v[5] = { 1.5, -2.25, 3e300, -0.0, 1e-310 };
    assert_int_equal(em_bcast_max_elems(b[0]), (FRAME - EM_BC_HDR_LEN) / 8);
    assert_int_equal(em_bcast_send(b[0], 10, v, 5), 0);
    assert_int_equal(em_bcast_send(b[2], VLEN - 1, v, 1), 0);
    for (int i = 0; i < 3; i++)
        em_bcast_poll(b[i], apply, vec[i], 0);
    /* member 1 got both, bit for bit; senders ignore their own */
    assert_memory_equal(&vec[1][10], v, sizeof v);
    assert_true(vec[1][VLEN - 1] == 1.5);
    assert_memory_equal(&vec[2][10], v, sizeof v);
    assert_true(vec[0][VLEN - 1] == 1.5);
    assert_true(vec[0][10] == 0); /* not its own */
    assert_int_equal(em_bcast_stats(b[1])->received, 2);
    assert_int_equal(em_bcast_stats(b[1])->elements, 6);
    assert_int_equal(em_bcast_stats(b[0])->own, 1);
    assert_int_equal(em_bcast_stats(b[0])->received, 1);
    assert_int_equal(em_bcast_stats(b[0])->sent, 1);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(em_bcast_stats(b[i])->dropped, 0);
        em_bcast_close(b[i]);
    }
}

static void test_gaps_counted_as_dropped(void **st)
{
    (void)st;
    struct hub hub = { .drop_mask = (1u << 2) | (1u << 3) | (1u << 7) };
    em_bcast_t *a = member(&hub, 0, 2), *r = member(&hub, 1, 2);
    double v = 7;
    for (int i = 0; i < 10; i++)
        assert_int_equal(em_bcast_send(a, (uint32_t)i, &v, 1), 0);
    calls = 0;
    em_bcast_poll(r, apply, vec[1], 0);
    const em_bcast_stats_t *s = em_bcast_stats(r);
    assert_int_equal(s->received, 7);
    assert_int_equal(calls, 7);
    assert_int_equal(s->gaps, 3);
    assert_int_equal(s->dropped, 3);
    assert_int_equal(s->rejected, 0);
    /* a trailing loss is only seen once a later frame arrives */
    hub.drop_mask = 1ull << 10;
    em_bcast_send(a, 0, &v, 1);
    em_bcast_send(a, 0, &v, 1);
    em_bcast_poll(r, NULL, NULL, 0);
    assert_int_equal(s->gaps, 4);
    assert_int_equal(s->received, 8);
    em_bcast_close(a);
    em_bcast_close(r);
}

static void test_send_errors(void **st)
{
    (void)st;
    struct hub hub = { 0 };
    em_bcast_t *a = member(&hub, 0, 2);
    double v[200] = { 0 };
    assert_int_equal(em_bcast_send(a, 0, v, 0), -EMSGSIZE);
    assert_int_equal(em_bcast_send(a, 0, v, em_bcast_max_elems(a) + 1), -EMSGSIZE);
    assert_int_equal(em_bcast_send(a, VLEN - 1, v, 2), -ERANGE);
    assert_int_equal(em_bcast_send(a, UINT32_MAX, v, 1), -ERANGE);
    assert_int_equal(em_bcast_stats(a)->sent, 0);
    em_bcast_close(a);
}

static void test_bad_config(void **st)
{
    (void)st;
    struct hub hub = { 0 };
    char err[256] = "";
    em_bcast_cfg_t c = { .self = 2, .members = 2, .vec_len = 10 };
    assert_null(em_bcast_open_link(&hub_join(&hub)->link, 0, &c, err, sizeof err));
    assert_non_null(strstr(err, "member 2 of 2"));
    em_bcast_cfg_t u = {
        .kind = EM_BCAST_UDP, .self = 0, .members = 2, .vec_len = 10, .iface = "nosuchif7"
    };
    assert_null(em_bcast_open(&u, err, sizeof err));
    assert_non_null(strstr(err, "nosuchif7"));
    em_bcast_cfg_t k = { .kind = (em_bcast_kind_t)9, .members = 1, .vec_len = 1 };
    assert_null(em_bcast_open(&k, err, sizeof err));
    assert_non_null(strstr(err, "unknown backend"));
}

/* a crafted frame injected straight into member r's queue */
static void inject(struct hub_link *h, const uint8_t *f, uint32_t len)
{
    memcpy(h->q[h->tail % QLEN], f, len);
    h->qlen[h->tail % QLEN] = len;
    h->tail++;
}

static uint32_t good_frame(uint8_t *f, uint16_t count)
{
    em_bc_hdr_t h = { .type = EM_BC_T_F64,
                      .key = 0xC0FFEE,
                      .channel = 3,
                      .sender = 0,
                      .seq = 0,
                      .offset = 5,
                      .count = count };
    em_bc_encode_hdr(&h, f);
    for (uint16_t i = 0; i < count; i++)
        em_bc_put_f64(f + EM_BC_HDR_LEN + 8u * i, 42.0 + i);
    return EM_BC_HDR_LEN + 8u * count;
}

static void test_every_rejection_counted(void **st)
{
    (void)st;
    struct hub hub = { 0 };
    em_bcast_t *r = member(&hub, 1, 2);
    struct hub_link *h = hub.m[0];
    uint8_t f[FRAME];
    uint32_t n;
    struct {
        int reason;
        int byte;
        uint8_t val;
        int len_delta;
    } cases[] = {
        { EM_BC_EMAGIC, 0, 0xEA, 0 },   { EM_BC_EVERSION, 1, 2, 0 }, { EM_BC_ETYPE, 2, 2, 0 },
        { EM_BC_ERSVD, 3, 1, 0 },       { EM_BC_ERSVD, 23, 1, 0 },   { EM_BC_EKEY, 7, 0xEF, 0 },
        { EM_BC_ECHANNEL, 9, 4, 0 },    { EM_BC_ESENDER, 11, 2, 0 }, { EM_BC_ECOUNT, 21, 0, 0 },
        { EM_BC_ELEN, -1, 0, -1 },      { EM_BC_ELEN, -1, 0, +8 },   { EM_BC_ERANGE, 16, 0x7f, 0 },
        { EM_BC_ESHORT, -1, 0, -1000 },
    };
    size_t nc = sizeof cases / sizeof cases[0];
    for (size_t i = 0; i < nc; i++) {
        n = good_frame(f, 20);
        if (cases[i].byte >= 0)
            f[cases[i].byte] = cases[i].val;
        int64_t len = (int64_t)n + cases[i].len_delta;
        if (len < 0)
            len = 10;
        if (cases[i].reason == EM_BC_ECOUNT) { /* count 0 with a matching length */
            f[20] = 0;
            len = EM_BC_HDR_LEN;
        }
        inject(h, f, (uint32_t)len);
    }
    calls = 0;
    em_bcast_poll(r, apply, vec[1], 0);
    const em_bcast_stats_t *s = em_bcast_stats(r);
    assert_int_equal(calls, 0);
    assert_int_equal(s->rejected, nc);
    assert_int_equal(s->dropped, nc);
    for (size_t i = 0; i < nc; i++)
        assert_true(s->rejected_by[cases[i].reason] >= 1);
    assert_int_equal(s->rejected_by[EM_BC_ELEN], 2);
    assert_int_equal(s->rejected_by[EM_BC_ERSVD], 2);
    /* Ethernet padding: a 1-element frame (32 B) padded to 46 B is fine,
     * to 47 B it is not */
    n = good_frame(f, 1);
    memset(f + n, 0, 20);
    inject(h, f, EM_BC_MIN_FRAME);
    em_bcast_poll(r, apply, vec[1], 0);
    assert_int_equal(calls, 1);
    assert_true(vec[1][5] == 42.0);
    f[15] = 1; /* next sequence number, so no gap */
    inject(h, f, EM_BC_MIN_FRAME + 1);
    em_bcast_poll(r, apply, vec[1], 0);
    assert_int_equal(calls, 1);
    assert_int_equal(s->rejected_by[EM_BC_ELEN], 3);
    em_bcast_close(r);
}

/* A channel whose frames are smaller than the link's (cfg.mtu) gets a valid
 * frame with more elements than it holds (a member configured with a larger
 * mtu, or a forger): refused and counted, never copied past its element
 * buffer (ASan would catch an overflow: the buffer holds exactly max_elems). */
static void test_count_beyond_own_frames_refused(void **st)
{
    (void)st;
    struct hub hub = { 0 };
    char err[256] = "";
    em_bcast_cfg_t c = {
        .key = 0xC0FFEE, .channel = 3, .self = 1, .members = 2, .vec_len = VLEN, .mtu = 200
    };
    em_bcast_t *r = em_bcast_open_link(&hub_join(&hub)->link, 0, &c, err, sizeof err);
    assert_non_null(r);
    uint32_t max = em_bcast_max_elems(r);
    assert_int_equal(max, (200 - EM_BC_HDR_LEN) / EM_BC_ELEM_SIZE);
    struct hub_link *h = hub.m[0];
    uint8_t f[FRAME];
    inject(h, f, good_frame(f, (uint16_t)(max + 1))); /* one too many */
    inject(h, f, good_frame(f, 180));                 /* far too many */
    calls = 0;
    em_bcast_poll(r, apply, vec[1], 0);
    const em_bcast_stats_t *s = em_bcast_stats(r);
    assert_int_equal(calls, 0);
    assert_int_equal(s->rejected, 2);
    assert_int_equal(s->rejected_by[EM_BC_ELEN], 2);
    /* exactly max elements still arrive */
    uint32_t n = good_frame(f, (uint16_t)max);
    inject(h, f, n);
    em_bcast_poll(r, apply, vec[1], 0);
    assert_int_equal(calls, 1);
    assert_true(vec[1][5 + max - 1] == 42.0 + (max - 1));
    em_bcast_close(r);
}

static void test_decode_names(void **st)
{
    (void)st;
    assert_string_equal(em_bc_dec_name(EM_BC_OK), "ok");
    assert_string_equal(em_bc_dec_name(EM_BC_ERANGE), "range");
    assert_string_equal(em_bc_dec_name(99), "?");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values_reach_everyone),
        cmocka_unit_test(test_gaps_counted_as_dropped),
        cmocka_unit_test(test_send_errors),
        cmocka_unit_test(test_bad_config),
        cmocka_unit_test(test_every_rejection_counted),
        cmocka_unit_test(test_count_beyond_own_frames_refused),
        cmocka_unit_test(test_decode_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
