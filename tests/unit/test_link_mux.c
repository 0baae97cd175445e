/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Several endpoints of one process on one link (link/link_mux.h): two
 * "processes" A and B, each one simulated link shared by two endpoints
 * (A0, A1 and B0, B1: job-wide ids 0, 2 and 1, 3, as the libfabric
 * provider numbers them), each endpoint with an engine of its own.  Pairs
 * A0-B0, A1-B1 and A0-B1 (A0 talks to both endpoints of B: the source
 * check must tell them apart by the index, since they share an address)
 * exchange verified messages of 1 B - 40 KiB, clean and under loss,
 * duplication and reordering.  Then: an endpoint that does not poll while
 * the other one does (its inbox fills; dropped frames counted and resent,
 * nothing lost), a frame for a slot with no endpoint (counted, dropped),
 * a frame from a stranger's address claiming a peer's index (refused as
 * drop_source), and closing the members (the base closes with the last).
 * Peer numbers above 16 bits (70,000 and 100,000) through two members,
 * and the refusal of a peer number the index's slot byte would overwrite
 * (2^24 and above).  First contact: handshake frames sent with tx_to
 * reach the member their destination endpoint index names, untouched, and
 * one for no member is dropped and counted.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/engine.h"
#include "link/link_mux.h"
#include "link/link_sim.h"
#include "proto/hs_wire.h"
#include "proto/wire.h"

/* ---- link_sim's links with their close counted: a mux must close its
 * base with its last member, not before ---- */
static const em_link_ops_t *sim_ops;
static em_link_ops_t counted_ops;
static em_link_t *counted[3];
static unsigned closes[3];

static void counted_close(em_link_t *l)
{
    for (unsigned i = 0; i < 3; i++)
        closes[i] += counted[i] == l;
    sim_ops->close(l);
}

static em_link_t *count_closes(em_link_t *l, unsigned i)
{
    sim_ops = l->ops;
    counted_ops = *sim_ops;
    counted_ops.close = counted_close;
    l->ops = &counted_ops;
    counted[i] = l;
    closes[i] = 0;
    return l;
}

/* ---- the world ---- */
#define NEP  4 /* endpoints: id 0 = A0, 1 = B0, 2 = A1, 3 = B1 */
#define MAXM 200

static em_sim_t *SIM;
static em_link_mux_t *MUX[3];
static em_link_t *L[NEP];
static em_engine_t *E[NEP];
static unsigned char polls[NEP] = { 1, 1, 1, 1 };

struct inbox {
    unsigned got[NEP]; /* messages received, by sender id */
    unsigned bad;
};
static struct inbox IN[NEP];
static unsigned done_ops;
static uint32_t window; /* 0: the protocol's default */

static uint8_t pattern(unsigned from, unsigned seq, size_t i)
{
    return (uint8_t)(from * 31 + seq * 7 + i);
}
static size_t size_of(unsigned seq) { return (size_t[]){ 1, 100, 1500, 9000, 40960 }[seq % 5]; }

static void on_recv(void *u, uint32_t peer, uint8_t tag, const void *d, size_t len)
{
    struct inbox *in = u;
    const uint8_t *b = d;
    unsigned seq = in->got[peer];
    if (len != size_of(seq) || tag != 7)
        in->bad++;
    else
        for (size_t i = 0; i < len; i++)
            if (b[i] != pattern(peer, seq, i)) {
                in->bad++;
                break;
            }
    in->got[peer]++;
}

static void on_complete(void *u, void *ctx, int status)
{
    (void)u, (void)ctx;
    assert_int_equal(status, 0);
    done_ops++;
}

/* one key per pair, both ways (as the provider mixes it) */
static uint64_t pair_key(unsigned a, unsigned b)
{
    return 0x1234567800000000ull + (a < b ? a * 16 + b : b * 16 + a);
}

static void pair(unsigned a, unsigned b)
{
    for (int k = 0; k < 2; k++) {
        unsigned x = k ? b : a, y = k ? a : b;
        assert_int_equal(em_engine_set_peer(E[x], (uint32_t)y, &L[y]->local), 0);
        assert_int_equal(
            em_engine_set_peer_keys(E[x], (uint32_t)y, pair_key(x, y), 100 + x, 100 + y), 0);
        assert_int_equal(em_engine_set_peer_index(E[x], (uint32_t)y, x), 0);
    }
}

static void world(double loss, double dup, double reorder)
{
    em_sim_cfg_t sc;
    em_sim_cfg_default(&sc);
    sc.mtu = 9000;
    sc.loss = loss;
    sc.dup = dup;
    sc.reorder = reorder;
    sc.seed = 11;
    SIM = em_sim_create(3, &sc); /* node 2: a stranger */
    assert_non_null(SIM);
    for (unsigned n = 0; n < 2; n++) { /* node 2 has no mux */
        assert_non_null(em_link_mux_create(count_closes(em_sim_link(SIM, n), n), &MUX[n]));
        assert_non_null(MUX[n]);
    }
    char err[160];
    for (unsigned id = 0; id < NEP; id++) {
        L[id] = em_link_mux_join(MUX[id % 2], err, sizeof err);
        assert_non_null(L[id]);
        assert_true(em_link_is_mux(L[id]));
        assert_int_equal(L[id]->local.len, 2); /* node byte + slot byte */
        assert_int_equal(L[id]->local.bytes[1], id / 2);
        em_proto_cfg_t pc;
        em_proto_cfg_default(&pc);
        pc.self = (uint32_t)id;
        pc.npeers = NEP;
        pc.frame_max = sc.mtu;
        pc.max_msg = 64 * 1024;
        pc.peers_need_set = 1;
        pc.bind_source = 1;
        if (window) {
            pc.window = window;
            pc.cc = EM_CC_OFF; /* the whole window at once */
        }
        memset(&IN[id], 0, sizeof IN[id]);
        em_engine_ops_t ops = { .recv = on_recv, .complete = on_complete };
        int e;
        E[id] = em_engine_create(L[id], &pc, &ops, &IN[id], &e);
        assert_non_null(E[id]);
        polls[id] = 1;
    }
    pair(0, 1);
    pair(2, 3);
    pair(0, 3);
    done_ops = 0;
}

static void end_world(void)
{
    for (unsigned id = 0; id < NEP; id++) {
        em_engine_destroy(E[id]);
        em_link_close(L[id]);
        /* the base closes with the last member only */
        assert_int_equal(closes[id % 2], id >= 2);
    }
    assert_null(MUX[0]);
    assert_null(MUX[1]);
    em_sim_destroy(SIM);
}

static void round_(void)
{
    em_sim_set_now(SIM, em_now_ns());
    for (unsigned id = 0; id < NEP; id++)
        if (polls[id])
            (void)em_engine_progress(E[id]);
}

static uint8_t *BUF[NEP][MAXM];
static em_proto_op_t OPS[NEP][MAXM];
static unsigned sent_to[NEP][NEP];
static unsigned slots_used[NEP]; /* op and buffer slots, per sender (MAXM in flight at most) */

static void send_n(unsigned from, unsigned to, unsigned n)
{
    for (unsigned s = 0; s < n; s++) {
        unsigned seq = sent_to[from][to]++, k = slots_used[from]++ % MAXM;
        size_t len = size_of(seq);
        free(BUF[from][k]);
        BUF[from][k] = malloc(len);
        for (size_t i = 0; i < len; i++)
            BUF[from][k][i] = pattern(from, seq, i);
        int rc;
        while ((rc = em_engine_send(E[from], &OPS[from][k], (uint32_t)to, 7, BUF[from][k], len,
                                    NULL)) == -EM_EAGAIN)
            round_();
        assert_int_equal(rc, 0);
    }
}

static void settle(unsigned expect_ops)
{
    for (long i = 0; done_ops < expect_ops; i++) {
        assert_true(i < 20000000L);
        round_();
    }
    for (int i = 0; i < 2000; i++)
        round_();
}

static void check_counts(void)
{
    for (unsigned r = 0; r < NEP; r++) {
        assert_int_equal(IN[r].bad, 0);
        for (unsigned s = 0; s < NEP; s++)
            assert_int_equal(IN[r].got[s], sent_to[s][r]);
    }
}

static void exchange(double loss, double dup, double reorder)
{
    memset(sent_to, 0, sizeof sent_to);
    memset(slots_used, 0, sizeof slots_used);
    world(loss, dup, reorder);
    const unsigned pairs[3][2] = { { 0, 1 }, { 2, 3 }, { 0, 3 } };
    unsigned total = 0;
    for (unsigned p = 0; p < 3; p++) {
        send_n(pairs[p][0], pairs[p][1], 20);
        send_n(pairs[p][1], pairs[p][0], 20);
        total += 40;
    }
    settle(total);
    check_counts();
    const em_link_mux_stats_t *st = em_link_mux_stats(L[0]);
    assert_non_null(st);
    assert_true(st->rx_own > 0);
    assert_true(st->rx_passed > 0); /* each polled frames of the other one */
    assert_int_equal(st->rx_no_member, 0);
    for (unsigned id = 0; id < NEP; id++) {
        const em_proto_stats_t *ps = em_engine_proto_stats(E[id]);
        assert_int_equal(ps->drop_source, 0);
        assert_int_equal(ps->drop_endpoint, 0);
        assert_int_equal(ps->drop_job_key, 0);
    }
    end_world();
}

static void clean(void **state)
{
    (void)state;
    exchange(0, 0, 0);
}

static void hostile_wire(void **state)
{
    (void)state;
    exchange(0.05, 0.05, 0.1);
}

/* A1 does not poll while A0 keeps polling and B1 sends to A1: A1's frames
 * wait in its inbox, which fills; the overflow is counted and dropped, the
 * protocol resends once A1 polls again, and nothing is lost. */
static void inbox_overflow(void **state)
{
    (void)state;
    memset(sent_to, 0, sizeof sent_to);
    memset(slots_used, 0, sizeof slots_used);
    /* a full window and its resends (A1 does not acknowledge): more than
     * A1's inbox holds */
    window = EM_WINDOW_MAX;
    world(0, 0, 0);
    window = 0;
    polls[2] = 0;
    send_n(3, 2, MAXM); /* about 400 frames */
    const em_link_mux_stats_t *st = em_link_mux_stats(L[0]);
    /* until B1's resends find the inbox full (its timeouts: real time) */
    for (uint64_t t0 = em_now_ns(); !st->rx_inbox_full && em_now_ns() - t0 < 5000000000ull;)
        round_();
    assert_true(st->rx_passed >= EM_MUX_INBOX);
    assert_true(st->rx_inbox_full > 0);
    assert_int_equal(IN[2].got[3], 0);
    polls[2] = 1;
    settle(MAXM);
    check_counts();
    end_world();
}

/* Frames that name no endpoint, and frames from a stranger's address. */
static void strangers(void **state)
{
    (void)state;
    memset(sent_to, 0, sizeof sent_to);
    memset(slots_used, 0, sizeof slots_used);
    world(0, 0, 0);
    send_n(1, 0, 1);
    settle(1);
    /* B0 learns that A has an endpoint in slot 9: its frames go nowhere */
    em_link_addr_t ghost = L[0]->local;
    ghost.bytes[1] = 9;
    assert_int_equal(em_link_set_peer(L[1], 3, &ghost), 0); /* B0's link, peer 3 */
    em_pkt_t *p = em_link_tx_alloc(L[1]);
    assert_non_null(p);
    memset(p->data, 0, 48);
    p->data[0] = 0xE5;
    p->len = 48;
    p->peer = 3;
    assert_int_equal(em_link_tx_burst(L[1], &p, 1), 1);
    for (int i = 0; i < 100; i++)
        round_();
    assert_int_equal(em_link_mux_stats(L[0])->rx_no_member, 1);
    /* an address with a slot beyond the table is no member address */
    ghost.bytes[1] = EM_MUX_MEMBERS;
    assert_int_not_equal(em_link_set_peer(L[1], 3, &ghost), 0);
    /* node 2 (a stranger) sends a frame naming A0's index for B0 (1) with
     * the right key: its address is not B's, so A0 refuses it by source */
    em_link_t *x = em_sim_link(SIM, 2);
    em_link_addr_t a0 = { .len = 1, .bytes = { 0 } };
    assert_int_equal(em_link_set_peer(x, 0, &a0), 0);
    p = em_link_tx_alloc(x);
    assert_non_null(p);
    em_hdr_t h = { .type = EM_PT_ACK, .index = 1, .job_key = pair_key(1, 0), .ack = 1 };
    p->len = (uint32_t)em_hdr_encode(&h, p->data);
    p->peer = 0;
    assert_int_equal(em_link_tx_burst(x, &p, 1), 1);
    uint64_t before = em_engine_proto_stats(E[0])->drop_source;
    for (int i = 0; i < 100; i++)
        round_();
    assert_int_equal(em_engine_proto_stats(E[0])->drop_source, before + 1);
    check_counts();
    end_world();
}

/* All slots taken: the next join is refused with a sentence. */
static void full(void **state)
{
    (void)state;
    em_sim_cfg_t sc;
    em_sim_cfg_default(&sc);
    em_sim_t *s = em_sim_create(1, &sc);
    em_link_mux_t *m = NULL;
    assert_non_null(em_link_mux_create(count_closes(em_sim_link(s, 0), 0), &m));
    em_link_t *ls[EM_MUX_MEMBERS];
    char err[160];
    for (unsigned i = 0; i < EM_MUX_MEMBERS; i++)
        assert_non_null(ls[i] = em_link_mux_join(m, err, sizeof err));
    err[0] = 0;
    assert_null(em_link_mux_join(m, err, sizeof err));
    assert_non_null(strstr(err, "endpoints"));
    /* a freed slot is taken again */
    em_link_close(ls[3]);
    assert_non_null(ls[3] = em_link_mux_join(m, err, sizeof err));
    assert_int_equal(ls[3]->local.bytes[ls[3]->local.len - 1], 3);
    for (unsigned i = 0; i < EM_MUX_MEMBERS; i++) {
        assert_int_equal(closes[0], 0);
        em_link_close(ls[i]);
    }
    assert_int_equal(closes[0], 1);
    assert_null(m);
    em_sim_destroy(s);
}

/* Peer numbers above 16 bits through the mux: a member calls its peer
 * 70,000 and is called 100,000 there; the frame finds its way (link_sim
 * below numbers the base peers), and the receiving member's rx_peer names
 * the sender by its 32-bit number.  A peer number of 2^24 or above is
 * refused, and a frame whose index reaches the slot byte is not sent. */
static void wide_peers(void **state)
{
    (void)state;
    em_sim_cfg_t sc;
    em_sim_cfg_default(&sc);
    em_sim_t *s = em_sim_create(2, &sc);
    assert_non_null(s);
    em_link_mux_t *m[2] = { NULL, NULL };
    em_link_t *l[2];
    char err[160];
    for (unsigned n = 0; n < 2; n++) {
        assert_non_null(em_link_mux_create(em_sim_link(s, n), &m[n]));
        assert_non_null(l[n] = em_link_mux_join(m[n], err, sizeof err));
    }
    assert_int_equal(em_link_set_peer(l[0], 1u << EM_MUX_INDEX_BITS, &l[1]->local), -EINVAL);
    assert_int_equal(em_link_set_peer(l[0], EM_LINK_PEER_UNKNOWN, &l[1]->local), -EINVAL);
    assert_int_equal(em_link_set_peer(l[0], 70000, &l[1]->local), 0);
    assert_int_equal(em_link_set_peer(l[1], 100000, &l[0]->local), 0);
    em_hdr_t h = { .type = EM_PT_ACK, .index = 100000, .job_key = 5, .ack = 1 };
    em_pkt_t *p = em_link_tx_alloc(l[0]);
    assert_non_null(p);
    p->len = (uint32_t)em_hdr_encode(&h, p->data);
    p->peer = 70000;
    assert_int_equal(em_link_tx_burst(l[0], &p, 1), 1);
    assert_int_equal(em_link_flush(l[0]), 0);
    em_pkt_t *rx[4];
    unsigned k = 0;
    for (int i = 0; i < 1000 && !k; i++) {
        em_sim_set_now(s, em_sim_now(s) + 1000000);
        k = em_link_rx_burst(l[1], rx, 4);
    }
    assert_int_equal(k, 1);
    em_hdr_t g;
    assert_int_equal(em_hdr_decode(rx[0]->data, rx[0]->len, &g), EM_DEC_OK);
    assert_int_equal(g.index, 100000);
    assert_int_equal(l[1]->ops->rx_peer(l[1], rx[0]), 100000);
    em_link_rx_release(l[1], rx, k);
    /* what peer 70,000 calls us must stay below 2^24 too */
    h.index = 1u << EM_MUX_INDEX_BITS;
    p = em_link_tx_alloc(l[0]);
    assert_non_null(p);
    p->len = (uint32_t)em_hdr_encode(&h, p->data);
    p->peer = 70000;
    assert_int_equal(em_link_tx_burst(l[0], &p, 1), 0);
    em_link_tx_free(l[0], p);
    for (unsigned n = 0; n < 2; n++) {
        em_link_close(l[n]);
        assert_null(m[n]);
    }
    em_sim_destroy(s);
}

/* ---- first contact (link_mux.h): handshake frames routed by their
 * destination endpoint index, sent untouched, judged by the base ---- */

/* a handshake frame of type INIT from endpoint @p src_ep to @p dst_ep
 * naming reply address @p reply, the other bytes a pattern of @p seed */
static void hs_frame(uint8_t *f, uint32_t src_ep, uint32_t dst_ep, const em_link_addr_t *reply,
                     unsigned seed)
{
    for (unsigned i = 0; i < EM_HS_LEN; i++)
        f[i] = (uint8_t)(seed * 13 + i);
    f[0] = EM_HS_MAGIC, f[1] = EM_HS_VERSION, f[2] = EM_HS_INIT, f[3] = 0;
    for (unsigned i = 0; i < 4; i++) {
        f[4 + i] = (uint8_t)(src_ep >> (24 - 8 * i));
        f[8 + i] = (uint8_t)(dst_ep >> (24 - 8 * i));
    }
    memset(f + 64, 0, EM_HS_LEN - 64);
    f[64] = reply->len;
    memcpy(f + 65, reply->bytes, reply->len);
}

/* tx_to frame @p f from @p l to @p a: the link's answer */
static int send_to(em_link_t *l, const uint8_t *f, uint32_t len, const em_link_addr_t *a)
{
    em_pkt_t *p = em_link_tx_alloc(l);
    assert_non_null(p);
    memcpy(p->data, f, len);
    p->len = len;
    p->peer = 424242; /* no peer: tx_to reads the address only */
    int rc = l->ops->tx_to(l, p, a);
    if (rc != 0)
        em_link_tx_free(l, p);
    return rc;
}

/* what @p l receives within a simulated second (at most one frame) */
static em_pkt_t *recv_within(em_sim_t *s, em_link_t *l)
{
    em_pkt_t *rx[2];
    unsigned k = 0;
    for (int i = 0; i < 1000 && !k; i++) {
        em_sim_set_now(s, em_sim_now(s) + 1000000);
        k = em_link_rx_burst(l, rx, 2);
    }
    assert_true(k <= 1);
    return k ? rx[0] : NULL;
}

/* A handshake frame sent with tx_to to slot 1's address reaches member 1
 * (through member 0's poll and member 1's inbox, and in place), intact:
 * the slot byte is written into no handshake frame.  A frame for an empty
 * slot or an endpoint index of 16 or more is dropped and counted, one
 * whose source endpoint's top byte names another slot goes by its
 * destination.  rx_from judges the base address; tx_to makes no peer;
 * addresses that name no member, frames that are not handshake frames and
 * a destination endpoint that is not the address's slot are refused. */
static void first_contact(void **state)
{
    (void)state;
    em_sim_cfg_t sc;
    em_sim_cfg_default(&sc);
    em_sim_t *s = em_sim_create(3, &sc); /* node 2: no mux */
    assert_non_null(s);
    em_link_mux_t *m[2] = { NULL, NULL };
    char err[160];
    for (unsigned n = 0; n < 2; n++)
        assert_non_null(em_link_mux_create(em_sim_link(s, n), &m[n]));
    em_link_t *a0 = em_link_mux_join(m[0], err, sizeof err);
    em_link_t *b0 = em_link_mux_join(m[1], err, sizeof err);
    em_link_t *b1 = em_link_mux_join(m[1], err, sizeof err);
    em_link_t *x = em_sim_link(s, 2);
    assert_true(a0 && b0 && b1 && em_link_has_contact(a0) && em_link_has_contact(b1));
    const em_link_mux_stats_t *st = em_link_mux_stats(b0);
    uint8_t f[EM_HS_LEN];
    em_link_addr_t xa = { .len = 2, .bytes = { 2, 0 } }; /* node 2 as a member address */

    /* to B1, sorted by B0's poll into B1's inbox */
    hs_frame(f, 0, 1, &a0->local, 1);
    assert_int_equal(send_to(a0, f, EM_HS_LEN, &b1->local), 0);
    assert_null(recv_within(s, b0));
    assert_int_equal(st->rx_passed, 1);
    em_pkt_t *r = recv_within(s, b1);
    assert_non_null(r);
    assert_int_equal(r->len, EM_HS_LEN);
    assert_memory_equal(r->data, f, EM_HS_LEN);
    assert_true(b1->ops->rx_from(b1, r, &a0->local));
    assert_false(b1->ops->rx_from(b1, r, &xa));
    assert_false(b1->ops->rx_from(b1, r, &b0->local));
    assert_int_equal(b1->ops->rx_peer(b1, r), EM_LINK_PEER_UNKNOWN);
    em_link_rx_release(b1, &r, 1);
    /* ... and in place, B1 polling */
    hs_frame(f, 0, 1, &a0->local, 2);
    assert_int_equal(send_to(a0, f, EM_HS_LEN, &b1->local), 0);
    assert_non_null(r = recv_within(s, b1));
    assert_memory_equal(r->data, f, EM_HS_LEN);
    assert_true(b1->ops->rx_from(b1, r, &a0->local));
    assert_false(b1->ops->rx_from(b1, r, &xa));
    em_link_addr_t node0 = { .len = 1, .bytes = { 0 } }; /* no member address */
    assert_false(b1->ops->rx_from(b1, r, &node0));
    em_link_rx_release(b1, &r, 1);
    assert_int_equal(st->rx_hs, 2);
    /* the answer: A0 made no peer of B's address */
    hs_frame(f, 1, 0, &b1->local, 3);
    assert_int_equal(send_to(b1, f, EM_HS_LEN, &a0->local), 0);
    assert_non_null(r = recv_within(s, a0));
    assert_int_equal(a0->ops->rx_peer(a0, r), EM_LINK_PEER_UNKNOWN);
    assert_true(a0->ops->rx_from(a0, r, &b1->local));
    em_link_rx_release(a0, &r, 1);

    /* an empty slot (5): sent, dropped and counted on arrival */
    em_link_addr_t b5 = b0->local;
    b5.bytes[1] = 5;
    hs_frame(f, 0, 5, &a0->local, 4);
    uint64_t none = st->rx_no_member;
    assert_int_equal(send_to(a0, f, EM_HS_LEN, &b5), 0);
    assert_null(recv_within(s, b0));
    assert_null(recv_within(s, b1));
    assert_int_equal(st->rx_no_member, none + 1);
    /* from node 2 (no mux): endpoint 16 names no member; a source
     * endpoint whose top byte is 1 does not send the frame to slot 1 */
    em_link_addr_t node1 = { .len = 1, .bytes = { 1 } };
    hs_frame(f, 0, EM_MUX_MEMBERS, &xa, 5);
    em_pkt_t *p = em_link_tx_alloc(x);
    assert_non_null(p);
    memcpy(p->data, f, EM_HS_LEN);
    p->len = EM_HS_LEN;
    assert_int_equal(x->ops->tx_to(x, p, &node1), 0);
    assert_null(recv_within(s, b0));
    assert_int_equal(st->rx_no_member, none + 2);
    hs_frame(f, 0x01000000u, 0, &xa, 6);
    assert_non_null(p = em_link_tx_alloc(x));
    memcpy(p->data, f, EM_HS_LEN);
    p->len = EM_HS_LEN;
    assert_int_equal(x->ops->tx_to(x, p, &node1), 0);
    assert_null(recv_within(s, b1));
    assert_non_null(r = recv_within(s, b0));
    assert_memory_equal(r->data, f, EM_HS_LEN);
    assert_true(b0->ops->rx_from(b0, r, &xa));
    assert_false(b0->ops->rx_from(b0, r, &a0->local));
    em_link_rx_release(b0, &r, 1);

    /* a handshake frame through tx_burst to a peer: untouched too */
    assert_int_equal(em_link_set_peer(a0, 7, &b1->local), 0);
    hs_frame(f, 0, 1, &a0->local, 7);
    assert_non_null(p = em_link_tx_alloc(a0));
    memcpy(p->data, f, EM_HS_LEN);
    p->len = EM_HS_LEN;
    p->peer = 7;
    assert_int_equal(em_link_tx_burst(a0, &p, 1), 1);
    assert_non_null(r = recv_within(s, b1));
    assert_memory_equal(r->data, f, EM_HS_LEN);
    em_link_rx_release(b1, &r, 1);

    /* refused, the frame still the caller's: no member address, a slot
     * that is not the frame's destination, a data frame */
    hs_frame(f, 0, 1, &a0->local, 8);
    em_link_addr_t bad = b1->local;
    bad.len = 1;
    assert_int_equal(send_to(a0, f, EM_HS_LEN, &bad), -EINVAL);
    bad = b1->local;
    bad.bytes[1] = EM_MUX_MEMBERS;
    assert_int_equal(send_to(a0, f, EM_HS_LEN, &bad), -EINVAL);
    assert_int_equal(send_to(a0, f, EM_HS_LEN, &b0->local), -EINVAL);
    em_hdr_t h = { .type = EM_PT_ACK, .index = 1, .job_key = 5, .ack = 1 };
    uint8_t d[EM_HDR_LEN];
    assert_int_equal(em_hdr_encode(&h, d), EM_HDR_LEN);
    assert_int_equal(send_to(a0, d, EM_HDR_LEN, &b1->local), -EINVAL);
    assert_null(recv_within(s, b1));
    em_link_close(a0);
    em_link_close(b0);
    em_link_close(b1);
    em_sim_destroy(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(clean),          cmocka_unit_test(hostile_wire),
        cmocka_unit_test(inbox_overflow), cmocka_unit_test(strangers),
        cmocka_unit_test(full),           cmocka_unit_test(wide_peers),
        cmocka_unit_test(first_contact),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    for (unsigned a = 0; a < NEP; a++)
        for (unsigned k = 0; k < MAXM; k++)
            free(BUF[a][k]);
    return rc;
}
