/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Protocol behaviour driven with crafted frames on one endpoint: we play
 * the peer by hand and check, frame by frame, what the protocol sends.
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

#define KEY 0x5EED1234u

struct fx {
    struct cap c;
    em_proto_t *p;
    em_proto_cfg_t cfg;
};

static em_proto_t *mk(struct fx *x, em_recovery_t mode, uint32_t isn)
{
    int err;
    memset(&x->c, 0, sizeof x->c);
    em_proto_cfg_default(&x->cfg);
    x->cfg.job_key = KEY;
    x->cfg.self = 0;
    x->cfg.npeers = 3;
    x->cfg.frame_max = EM_HDR_LEN + 1000; /* 1000 B of DATA payload */
    x->cfg.window = 4;
    x->cfg.recovery = mode;
    x->cfg.rto_ns = 1000;
    x->cfg.rto_min_ns = 500;
    x->cfg.rto_max_ns = 8000;
    x->cfg.max_retries = 3;
    x->cfg.resend_after_ns = 5000; /* 5 us against the 1 us RTO: data at the third timeout */
    x->cfg.ack_delay_ns = 100;
    x->cfg.isn = isn;
    x->p = em_proto_create(&x->cfg, &CAP_OPS, &x->c, &err);
    assert_non_null(x->p);
    return x->p;
}

/* Recreate x's protocol with x->cfg as the test changed it (counters and
 * captured frames cleared). */
static void remk(struct fx *x)
{
    int err;
    em_proto_destroy(x->p);
    memset(&x->c, 0, sizeof x->c);
    x->p = em_proto_create(&x->cfg, &CAP_OPS, &x->c, &err);
    assert_non_null(x->p);
}

/* Craft a frame from peer 1 and feed it in. */
static void feed(struct fx *x, em_hdr_t h, const void *payload, uint64_t now)
{
    uint8_t b[4096];
    em_proto_rx(x->p, b, cap_frame(h, KEY, payload, b, sizeof b), now);
}

static em_hdr_t data(uint32_t seq, uint32_t ack, const char *s)
{
    uint16_t n = (uint16_t)strlen(s);
    return (em_hdr_t){ .type = EM_PT_DATA,
                       .tag = 3,
                       .seq = seq,
                       .ack = ack,
                       .len = n,
                       .msg_len = n,
                       .frag_cnt = 1,
                       .msg_id = seq };
}

static em_hdr_t ack(uint32_t a, uint64_t sack)
{
    return (em_hdr_t){ .type = EM_PT_ACK, .ack = a, .sack = sack, .flags = sack ? EM_F_SACK : 0 };
}

/* ---- sending ---- */

static void test_send_small_emits_one_data_frame(void **st)
{
    struct fx x;
    em_proto_op_t op;
    int ctx;
    mk(&x, EM_RECOVERY_SR, 100);
    assert_int_equal(em_proto_send(x.p, &op, 1, 9, "hello", 5, &ctx, 0), 0);
    assert_int_equal(x.c.nf, 1);
    em_hdr_t *h = &x.c.f[0].h;
    assert_int_equal(h->type, EM_PT_DATA);
    assert_int_equal(h->seq, 100);
    assert_int_equal(h->ack, 100);
    assert_int_equal(h->index, 0); /* peer 1 calls us 0: the default, our own number */
    assert_int_equal(h->tag, 9);
    assert_int_equal(h->job_key, KEY);
    assert_int_equal(h->frag_cnt, 1);
    assert_int_equal(h->msg_len, 5);
    assert_memory_equal(x.c.f[0].payload, "hello", 5);
    assert_int_equal(x.c.ncomplete, 0); /* not before the ACK */
    feed(&x, ack(101, 0), NULL, 10);
    assert_int_equal(x.c.ncomplete, 1);
    assert_int_equal(x.c.last_status, 0);
    assert_ptr_equal(x.c.last_ctx, &ctx);
    assert_true(em_proto_idle(x.p));
    em_proto_destroy(x.p);
}

static void test_fragmentation_and_window(void **st)
{
    struct fx x;
    em_proto_op_t op;
    static uint8_t big[6500];
    for (unsigned i = 0; i < sizeof big; i++)
        big[i] = (uint8_t)(i * 7);
    mk(&x, EM_RECOVERY_SR, 0);
    assert_int_equal(em_proto_send(x.p, &op, 2, 1, big, sizeof big, NULL, 0), 0);
    /* 7 fragments of <= 1000 B, but only window = 4 go out */
    assert_int_equal(x.c.nf, 4);
    for (unsigned i = 0; i < 4; i++) {
        assert_int_equal(x.c.f[i].h.frag_no, i);
        assert_int_equal(x.c.f[i].h.frag_cnt, 7);
        assert_int_equal(x.c.f[i].h.msg_len, sizeof big);
        assert_int_equal(x.c.f[i].h.len, 1000);
        assert_int_equal(x.c.f[i].peer, 2);
        assert_memory_equal(x.c.f[i].payload, big + i * 1000, 1000);
    }
    em_hdr_t a = ack(2, 0);
    a.index = 2; /* peer 2 acks two frames */
    feed(&x, a, NULL, 5);
    assert_int_equal(x.c.nf, 6);
    assert_int_equal(x.c.f[5].h.seq, 5);
    a.ack = 7; /* acks a frame never sent */
    feed(&x, a, NULL, 6);
    assert_int_equal(em_proto_stats(x.p)->drop_window, 1);
    a.ack = 6;
    feed(&x, a, NULL, 6);
    assert_int_equal(x.c.nf, 7);
    assert_int_equal(x.c.f[6].h.len, 500); /* last fragment */
    assert_int_equal(x.c.ncomplete, 0);
    a.ack = 7;
    feed(&x, a, NULL, 7);
    assert_int_equal(x.c.ncomplete, 1);
    em_proto_destroy(x.p);
}

/* em_proto_op_rebase (the provider's injects): frames sent after it, and
 * resends of frames sent before it, read the new buffer; the old one may
 * change at once */
static void test_rebase_sends_later_frames_and_resends_from_the_copy(void **st)
{
    struct fx x;
    em_proto_op_t op;
    static uint8_t orig[6500], a[6500], b[6500];
    for (unsigned i = 0; i < sizeof orig; i++)
        orig[i] = (uint8_t)(i * 13 + 5);
    memcpy(a, orig, sizeof a);
    mk(&x, EM_RECOVERY_SR, 0);
    assert_int_equal(em_proto_send(x.p, &op, 1, 1, a, sizeof a, NULL, 0), 0);
    assert_int_equal(x.c.nf, 4); /* the window's 4 of 7 fragments, from a */
    memcpy(b, a, sizeof b);
    em_proto_op_rebase(&op, b);
    memset(a, 0xEE, sizeof a); /* the caller's again: it changes it */
    /* the peer got fragment 2 (SACK bit 1: ack + 2) and lost 0 and 1: they
     * are resent (and the SACK may let more leave); then it has four */
    feed(&x, ack(0, 0x2), NULL, 10);
    feed(&x, ack(4, 0), NULL, 11);
    unsigned resent = 0, seen = 0;
    for (unsigned i = 4; i < x.c.nf; i++) {
        unsigned fno = x.c.f[i].h.frag_no;
        assert_true(fno < 7);
        assert_memory_equal(x.c.f[i].payload, orig + fno * 1000, x.c.f[i].h.len);
        resent += fno < 2 && (x.c.f[i].h.flags & EM_F_RETX);
        seen |= 1u << fno;
    }
    assert_int_equal(resent, 2);
    assert_int_equal(seen, 0x73); /* 0 and 1 again, and 4, 5, 6 */
    feed(&x, ack(7, 0), NULL, 12);
    assert_int_equal(x.c.ncomplete, 1);
    em_proto_destroy(x.p);
}

/* EM_SEND_ACK_LAST: the last frame of the message, and only it, asks for an
 * immediate ACK; the receiver sends it in the poll that delivers the message
 * (a sender's application may wait on that ACK while the receiver's stops
 * driving progress once it has the message) */
static void test_ack_last_frame_acked_in_the_same_poll(void **st)
{
    struct fx x;
    em_proto_op_t op;
    static uint8_t big[2500];
    static const uint8_t head[8] = "head....";
    mk(&x, EM_RECOVERY_SR, 0);
    x.cfg.cc = EM_CC_OFF; /* no congestion-control ACK requests in the way */
    remk(&x);
    assert_int_equal(em_proto_sendv(x.p, &op, 1, 0, head, sizeof head, big, sizeof big,
                                    EM_SEND_ACK_LAST, NULL, 0),
                     0);
    assert_int_equal(x.c.nf, 3);
    assert_false(x.c.f[0].h.flags & EM_F_ACKNOW);
    assert_false(x.c.f[1].h.flags & EM_F_ACKNOW);
    assert_true(x.c.f[2].h.flags & EM_F_ACKNOW);
    /* without the flag, no frame asks */
    struct fx y;
    em_proto_op_t op2;
    mk(&y, EM_RECOVERY_SR, 0);
    y.cfg.cc = EM_CC_OFF;
    remk(&y);
    assert_int_equal(
        em_proto_sendv(y.p, &op2, 1, 0, head, sizeof head, big, sizeof big, 0, NULL, 0), 0);
    assert_int_equal(y.c.nf, 3);
    for (unsigned i = 0; i < 3; i++)
        assert_false(y.c.f[i].h.flags & EM_F_ACKNOW);
    em_proto_destroy(y.p);

    /* the receiving side: two fragments, the last asking; its ACK goes out
     * in the same poll, not ack_delay_ns later */
    em_proto_destroy(x.p);
    mk(&x, EM_RECOVERY_SR, 0);
    em_hdr_t h = data(0, 0, "abc");
    h.msg_len = 6;
    h.frag_cnt = 2;
    h.index = 1;
    h.msg_id = 0;
    feed(&x, h, "abc", 0);
    em_hdr_t h2 = h;
    h2.seq = 1;
    h2.frag_no = 1;
    h2.flags = EM_F_ACKNOW;
    uint8_t b[4096];
    em_proto_rx(x.p, b, cap_frame(h2, KEY, "def", b, sizeof b), 10);
    assert_int_equal(x.c.nrecv, 1);
    assert_int_equal(x.c.last_len, 6);
    unsigned before = x.c.nf;
    em_proto_poll(x.p, 10); /* the same instant */
    assert_int_equal(x.c.nf, before + 1);
    assert_int_equal(x.c.f[before].h.type, EM_PT_ACK);
    assert_int_equal(x.c.f[before].h.ack, 2);
    em_proto_destroy(x.p);
}

static void test_refused_emit_is_retried_on_poll(void **st)
{
    struct fx x;
    em_proto_op_t op;
    mk(&x, EM_RECOVERY_SR, 0);
    x.c.refuse = 1;
    assert_int_equal(em_proto_send(x.p, &op, 1, 0, "x", 1, NULL, 0), 0);
    assert_int_equal(x.c.nf, 0);
    assert_int_equal(em_proto_stats(x.p)->tx_eagain, 1);
    assert_true(em_proto_next_deadline(x.p) <= 1);
    em_proto_poll(x.p, 1);
    assert_int_equal(x.c.nf, 1);
    assert_int_equal(x.c.f[0].h.seq, 0);
    em_proto_destroy(x.p);
}

/* ---- receiving and ACK policy ---- */

static void test_receive_delivers_from_frame_and_delays_ack(void **st)
{
    struct fx x;
    mk(&x, EM_RECOVERY_SR, 7);
    feed(&x, data(7, 7, "abc"), "abc", 0);
    assert_int_equal(x.c.nrecv, 1);
    assert_int_equal(x.c.last_tag, 3);
    assert_int_equal(x.c.last_len, 3);
    assert_memory_equal(x.c.last_data, "abc", 3);
    assert_int_equal(x.c.nf, 0); /* ACK is delayed */
    em_proto_poll(x.p, 50);
    assert_int_equal(x.c.nf, 0);
    em_proto_poll(x.p, 100);
    assert_int_equal(x.c.nf, 1);
    assert_int_equal(x.c.f[0].h.type, EM_PT_ACK);
    assert_int_equal(x.c.f[0].h.ack, 8);
    assert_int_equal(x.c.f[0].h.sack, 0);
    em_proto_destroy(x.p);
}

static void test_reply_piggybacks_ack(void **st)
{
    struct fx x;
    em_proto_op_t op;
    mk(&x, EM_RECOVERY_SR, 0);
    feed(&x, data(0, 0, "req"), "req", 0);
    assert_int_equal(em_proto_send(x.p, &op, 1, 0, "rep", 3, NULL, 1), 0);
    assert_int_equal(x.c.nf, 1);
    assert_int_equal(x.c.f[0].h.type, EM_PT_DATA);
    assert_int_equal(x.c.f[0].h.ack, 1); /* the request is acked */
    em_proto_poll(x.p, 1000);
    assert_int_equal(x.c.nf, 1); /* no standalone ACK needed */
    assert_int_equal(em_proto_stats(x.p)->tx_acks, 0);
    em_proto_destroy(x.p);
}

static void test_duplicate_acked_at_once_not_redelivered(void **st)
{
    struct fx x;
    mk(&x, EM_RECOVERY_SR, 0);
    feed(&x, data(0, 0, "a"), "a", 0);
    em_proto_poll(x.p, 100);
    assert_int_equal(x.c.nf, 1);
    feed(&x, data(0, 0, "a"), "a", 200);
    assert_int_equal(x.c.nrecv, 1);
    assert_int_equal(em_proto_stats(x.p)->rx_dups, 1);
    em_proto_poll(x.p, 200); /* no delay for a duplicate */
    assert_int_equal(x.c.nf, 2);
    assert_int_equal(x.c.f[1].h.ack, 1);
    /* not flagged as a retransmission: a duplicate, but not a spurious retransmit */
    assert_int_equal(em_proto_stats(x.p)->spurious_retx, 0);
    em_proto_destroy(x.p);
}

/* A retransmission of a frame the receiver already had is counted as
 * spurious, whether it was delivered or is held out of order; a
 * retransmission that fills a hole is not. */
static void test_spurious_retransmissions_counted(void **st)
{
    struct fx x;
    mk(&x, EM_RECOVERY_SR, 0);
    feed(&x, data(0, 0, "a"), "a", 0);
    em_hdr_t r = data(0, 0, "a");
    r.flags = EM_F_RETX;
    feed(&x, r, "a", 10); /* delivered already */
    assert_int_equal(em_proto_stats(x.p)->spurious_retx, 1);
    feed(&x, data(2, 0, "c"), "c", 20); /* held out of order */
    r = data(2, 0, "c");
    r.flags = EM_F_RETX;
    feed(&x, r, "c", 30);
    assert_int_equal(em_proto_stats(x.p)->spurious_retx, 2);
    r = data(1, 0, "b");
    r.flags = EM_F_RETX; /* fills the hole: needed */
    feed(&x, r, "b", 40);
    assert_int_equal(em_proto_stats(x.p)->spurious_retx, 2);
    assert_int_equal(em_proto_stats(x.p)->rx_dups, 2);
    assert_int_equal(x.c.nrecv, 3);
    em_proto_destroy(x.p);
}

static void test_sr_buffers_out_of_order_and_sacks(void **st)
{
    struct fx x;
    mk(&x, EM_RECOVERY_SR, 0);
    feed(&x, data(2, 0, "c"), "c", 0);
    feed(&x, data(1, 0, "b"), "b", 0);
    assert_int_equal(x.c.nrecv, 0);
    em_proto_poll(x.p, 0);
    assert_int_equal(x.c.nf, 1);
    assert_int_equal(x.c.f[0].h.ack, 0);
    assert_int_equal(x.c.f[0].h.sack, 0x3); /* 1 and 2 held */
    assert_true(x.c.f[0].h.flags & EM_F_SACK);
    feed(&x, data(0, 0, "a"), "a", 1);
    assert_int_equal(x.c.nrecv, 3);
    assert_memory_equal(x.c.last_data, "c", 1); /* in order: a, b, c */
    feed(&x, data(9, 0, "z"), "z", 2);          /* beyond the window (4) */
    assert_int_equal(em_proto_stats(x.p)->drop_window, 1);
    em_proto_destroy(x.p);
}

static void test_gbn_drops_out_of_order_and_nacks_once(void **st)
{
    struct fx x;
    mk(&x, EM_RECOVERY_GBN, 0);
    feed(&x, data(1, 0, "b"), "b", 0);
    feed(&x, data(2, 0, "c"), "c", 0);
    em_proto_poll(x.p, 0);
    assert_int_equal(x.c.nrecv, 0);
    assert_int_equal(em_proto_stats(x.p)->drop_gbn_ooo, 2);
    assert_int_equal(x.c.nf, 1);
    assert_int_equal(x.c.f[0].h.type, EM_PT_NACK);
    assert_int_equal(x.c.f[0].h.ack, 0);
    feed(&x, data(3, 0, "d"), "d", 1);
    em_proto_poll(x.p, 1);
    assert_int_equal(em_proto_stats(x.p)->tx_nacks, 1); /* one NACK per gap */
    feed(&x, data(0, 0, "a"), "a", 2);
    assert_int_equal(x.c.nrecv, 1);
    em_proto_destroy(x.p);
}

/* ---- loss recovery on the sending side ---- */

static void test_sack_triggers_fast_retransmit_of_holes_only(void **st)
{
    struct fx x;
    em_proto_op_t op[4];
    mk(&x, EM_RECOVERY_SR, 0);
    for (int i = 0; i < 4; i++)
        em_proto_send(x.p, &op[i], 1, 0, "m", 1, NULL, 0);
    assert_int_equal(x.c.nf, 4);
    /* peer got 2 (bit 1 -> ack+2), lost 0 and 1; 3 still in flight */
    feed(&x, ack(0, 0x2), NULL, 10);
    assert_int_equal(x.c.nf, 6);
    assert_int_equal(x.c.f[4].h.seq, 0);
    assert_int_equal(x.c.f[5].h.seq, 1);
    assert_true(x.c.f[4].h.flags & EM_F_RETX);
    assert_int_equal(em_proto_stats(x.p)->fast_retransmits, 2);
    /* the same SACK again must not resend the holes once more */
    feed(&x, ack(0, 0x2), NULL, 11);
    assert_int_equal(x.c.nf, 6);
    feed(&x, ack(4, 0), NULL, 12);
    assert_int_equal(x.c.ncomplete, 4);
    em_proto_destroy(x.p);
}

static void test_gbn_nack_resends_everything_outstanding(void **st)
{
    struct fx x;
    em_proto_op_t op[3];
    mk(&x, EM_RECOVERY_GBN, 0);
    for (int i = 0; i < 3; i++)
        em_proto_send(x.p, &op[i], 1, 0, "m", 1, NULL, 0);
    em_hdr_t n = ack(1, 0);
    n.type = EM_PT_NACK;
    feed(&x, n, NULL, 5);
    assert_int_equal(x.c.ncomplete, 1);
    assert_int_equal(x.c.nf, 5);
    assert_int_equal(x.c.f[3].h.seq, 1);
    assert_int_equal(x.c.f[4].h.seq, 2);
    em_proto_destroy(x.p);
}

static void test_timeout_backoff_then_peer_failure(void **st)
{
    struct fx x;
    em_proto_op_t op[2];
    int a, b;
    mk(&x, EM_RECOVERY_SR, 0);
    em_proto_send(x.p, &op[0], 1, 0, "m", 1, &a, 0);
    em_proto_send(x.p, &op[1], 1, 0, "n", 1, &b, 0);
    assert_int_equal(x.c.nf, 2);
    assert_int_equal(em_proto_next_deadline(x.p), 1000);
    em_proto_poll(x.p, 999);
    assert_int_equal(x.c.nf, 2);
    em_proto_poll(x.p, 1000); /* timeout 1: a probe, no data */
    assert_int_equal(x.c.nf, 3);
    assert_int_equal(x.c.f[2].h.type, EM_PT_ACK);
    assert_true(x.c.f[2].h.flags & EM_F_ACKNOW);
    assert_int_equal(em_proto_stats(x.p)->probes, 1);
    assert_int_equal(em_proto_next_deadline(x.p), 3000); /* back-off: 2 us */
    em_proto_poll(x.p, 3000);                            /* timeout 2: a probe again */
    assert_int_equal(x.c.nf, 4);
    assert_int_equal(x.c.f[3].h.type, EM_PT_ACK);
    assert_int_equal(em_proto_next_deadline(x.p), 7000); /* 4 us */
    em_proto_poll(x.p, 7000);                            /* timeout 3: the oldest resent + probe */
    assert_int_equal(x.c.nf, 6);
    assert_true(x.c.f[4].h.flags & EM_F_RETX);
    assert_int_equal(x.c.f[4].h.seq, 0);
    assert_int_equal(x.c.f[5].h.type, EM_PT_ACK);
    assert_int_equal(em_proto_stats(x.p)->probes, 3);
    assert_int_equal(em_proto_next_deadline(x.p), 15000); /* capped at 8 us */
    assert_int_equal(x.c.ncomplete, 0);
    em_proto_poll(x.p, 15000); /* 4th > max_retries: failed */
    assert_int_equal(x.c.ncomplete, 2);
    assert_int_equal(x.c.last_status, -EM_EPEERFAIL);
    assert_int_equal(x.c.nfailed, 1);
    assert_true(em_proto_peer_failed(x.p, 1));
    assert_int_equal(em_proto_send(x.p, &op[0], 1, 0, "m", 1, NULL, 16000), -EM_EPEERFAIL);
    feed(&x, data(0, 0, "late"), "late", 16000);
    assert_int_equal(x.c.nrecv, 0);
    assert_int_equal(em_proto_stats(x.p)->drop_peer_failed, 1);
    /* other peers are unaffected */
    assert_int_equal(em_proto_send(x.p, &op[0], 2, 0, "m", 1, NULL, 16000), 0);
    em_proto_destroy(x.p);
}

/* A receiver that acknowledges late (descheduled) makes the RTO fire
 * although nothing was lost: a probe goes, no data, and the late answer
 * still gives an RTT sample, the probe's, so the RTO grows to the lateness
 * seen after the probe (before, the whole window was resent,
 * Karn left no sample, and the RTO never learned). */
static void test_late_ack_teaches_rto_without_resending_window(void **st)
{
    struct fx x;
    em_proto_op_t op[4];
    mk(&x, EM_RECOVERY_SR, 0);
    for (int i = 0; i < 4; i++) /* the fixture's window */
        em_proto_send(x.p, &op[i], 1, 0, "m", 1, NULL, 0);
    assert_int_equal(x.c.nf, 4);
    em_proto_poll(x.p, 1000);    /* spurious timeout */
    assert_int_equal(x.c.nf, 5); /* a probe, no duplicate */
    assert_int_equal(x.c.f[4].h.type, EM_PT_ACK);
    em_hdr_t a = ack(4, 0);
    a.flags |= EM_F_PROBED; /* the receiver woke up and answers */
    feed(&x, a, NULL, 2500);
    assert_int_equal(x.c.ncomplete, 4);
    assert_int_equal(x.c.nf, 5);
    assert_int_equal(em_proto_stats(x.p)->retransmits, 0);
    assert_int_equal(em_proto_stats(x.p)->rtt_samples, 1); /* from the probe, sent at 1 us */
    assert_int_equal(em_proto_srtt(x.p, 1), 1500);
    assert_true(em_proto_rto(x.p, 1) > 1500);
    em_proto_destroy(x.p);
}

/* RTT samples measure the path, never our own timeouts: an ACK lost on
 * the way makes the probe's answer the first ACK, and it measures the
 * probe's round trip, not the RTO it waited; an ACK that a resend let
 * past a hole measures the repair and gives no sample (Karn over the whole
 * ACK).  Samples that included the RTO fed the RTO's 250 ms peak with its
 * own timeouts (x 5/4 each time): at 5 % loss the simulated stream's RTO
 * climbed to milliseconds and its goodput fell 200-fold. */
static void test_rtt_samples_exclude_timeouts(void **st)
{
    struct fx x;
    em_proto_op_t op[3];
    mk(&x, EM_RECOVERY_SR, 0);
    em_proto_send(x.p, &op[0], 1, 0, "a", 1, NULL, 0);
    em_proto_poll(x.p, 1000); /* its ACK was lost: timeout, a probe */
    em_hdr_t a = ack(1, 0);
    a.flags |= EM_F_PROBED;
    feed(&x, a, NULL, 1100);
    assert_int_equal(em_proto_stats(x.p)->rtt_samples, 1);
    assert_int_equal(em_proto_srtt(x.p, 1), 100);         /* not 1100 */
    assert_int_equal(em_proto_rto(x.p, 1), 500);          /* rto_min, not 5/4 x 1100 */
    em_proto_send(x.p, &op[1], 1, 0, "b", 1, NULL, 2000); /* seq 1: lost */
    em_proto_send(x.p, &op[2], 1, 0, "c", 1, NULL, 2000); /* seq 2: arrives */
    feed(&x, ack(1, 1ull), NULL, 2100);                   /* 2 SACKed: 1 resent */
    assert_int_equal(em_proto_stats(x.p)->fast_retransmits, 1);
    feed(&x, ack(3, 0), NULL, 2300); /* covers the resent frame 1 */
    assert_int_equal(em_proto_stats(x.p)->rtt_samples, 1);
    assert_int_equal(x.c.ncomplete, 3);
    em_proto_destroy(x.p);
}

/* The answer to a probe tells loss from lateness: frames sent before the
 * probe that it does not cover were lost and go again at once, the others
 * not at all (docs/design.md "Retransmit timeouts: probe first"). */
static void test_probe_answer_resends_only_what_was_lost(void **st)
{
    struct fx x;
    em_proto_op_t op[4];
    mk(&x, EM_RECOVERY_SR, 0);
    for (int i = 0; i < 4; i++)
        em_proto_send(x.p, &op[i], 1, 0, "m", 1, NULL, 0);
    em_proto_poll(x.p, 1000); /* timeout: probe */
    assert_int_equal(x.c.nf, 5);
    feed(&x, ack(1, 0), NULL, 1200); /* a late ACK, not the answer */
    assert_int_equal(x.c.nf, 5);     /* nothing judged from it */
    em_hdr_t a = ack(2, 0);          /* holds 0 and 1: 2 (and 3?) lost */
    a.flags |= EM_F_PROBED;
    feed(&x, a, NULL, 1500);
    assert_int_equal(x.c.nf, 6); /* the oldest only: data may trail */
    assert_int_equal(x.c.f[5].h.seq, 2);
    assert_true(x.c.f[5].h.flags & EM_F_RETX);
    assert_int_equal(em_proto_stats(x.p)->fast_retransmits, 1);
    assert_int_equal(em_proto_stats(x.p)->timeouts, 1);
    feed(&x, a, NULL, 1600); /* a duplicate answer: judged once */
    assert_int_equal(x.c.nf, 6);
    em_proto_destroy(x.p);
}

/* The owner gives up on a peer (the provider: it overran the unexpected
 * budget): as a peer that stopped answering, with the owner's reason. */
static void test_owner_fails_peer(void **st)
{
    struct fx x;
    em_proto_op_t op;
    int a;
    static const char why[] = "it broke a rule of the layer above";
    mk(&x, EM_RECOVERY_SR, 0);
    assert_int_equal(em_proto_send(x.p, &op, 1, 0, "m", 1, &a, 0), 0);
    assert_int_equal(em_proto_fail_peer(x.p, 0, why), -EM_EINVAL); /* itself */
    assert_int_equal(em_proto_fail_peer(x.p, 3, why), -EM_EINVAL); /* no such peer */
    assert_int_equal(em_proto_fail_peer(x.p, 1, NULL), -EM_EINVAL);
    assert_false(em_proto_peer_failed(x.p, 1));
    assert_int_equal(em_proto_fail_peer(x.p, 1, why), 0);
    assert_true(em_proto_peer_failed(x.p, 1));
    assert_string_equal(em_proto_fail_reason(x.p, 1), why);
    assert_int_equal(x.c.ncomplete, 1);
    assert_int_equal(x.c.last_status, -EM_EPEERFAIL);
    assert_int_equal(x.c.nfailed, 1);
    assert_int_equal(em_proto_stats(x.p)->fail_by_owner, 1);
    assert_int_equal(em_proto_fail_peer(x.p, 1, why), 0); /* once */
    assert_int_equal(x.c.nfailed, 1);
    feed(&x, data(0, 0, "late"), "late", 10);
    assert_int_equal(x.c.nrecv, 0);
    assert_int_equal(em_proto_stats(x.p)->drop_peer_failed, 1);
    em_proto_destroy(x.p);
}

/* A close right after a send whose frame was lost (MPICH: an inject, then
 * fi_close): em_proto_flush makes the retransmit timeout due now, so the
 * repair starts at once instead of after a backed-off RTO; pending counts
 * the message until its ACK; the horizon follows the backed-off RTO. */
static void test_flush_probes_at_once(void **st)
{
    struct fx x;
    em_proto_op_t op;
    mk(&x, EM_RECOVERY_SR, 0);
    x.cfg.rto_ns = 4000;
    x.cfg.rto_max_ns = 1000000;
    remk(&x);
    assert_int_equal(em_proto_retx_horizon(x.p), 8000); /* 2 x the first RTO */
    assert_int_equal(em_proto_pending(x.p, 1), 0);
    assert_int_equal(em_proto_send(x.p, &op, 1, 0, "m", 1, NULL, 0), 0);
    assert_int_equal(x.c.nf, 1); /* the data frame: "lost" (never fed) */
    assert_int_equal(em_proto_pending(x.p, 1), 1);
    assert_int_equal(em_proto_pending(x.p, 2), 0);
    em_proto_poll(x.p, 100);
    assert_int_equal(x.c.nf, 1); /* the RTO (4 us) is not due */
    em_proto_flush(x.p, 100);
    em_proto_poll(x.p, 100);
    assert_int_equal(x.c.nf, 2); /* a probe, now */
    assert_int_equal(x.c.f[1].h.type, EM_PT_ACK);
    assert_true(x.c.f[1].h.flags & EM_F_ACKNOW);
    assert_int_equal(em_proto_retx_horizon(x.p), 16000); /* backed off to 8 us */
    em_hdr_t a = ack(0, 0); /* the answer does not hold frame 0: lost */
    a.flags |= EM_F_PROBED;
    feed(&x, a, NULL, 150);
    assert_int_equal(x.c.nf, 3);
    assert_int_equal(x.c.f[2].h.seq, 0);
    assert_true(x.c.f[2].h.flags & EM_F_RETX);
    feed(&x, ack(1, 0), NULL, 200);
    assert_int_equal(em_proto_pending(x.p, 1), 0);
    assert_int_equal(x.c.ncomplete, 1);
    assert_true(em_proto_idle(x.p));
    em_proto_flush(x.p, 300); /* nothing in flight: no probe */
    em_proto_poll(x.p, 300);
    assert_int_equal(x.c.nf, 3);
    /* the horizon is capped: a close never waits longer for late resends */
    x.cfg.rto_ns = x.cfg.rto_max_ns = 900000000;
    remk(&x);
    assert_int_equal(em_proto_retx_horizon(x.p), EM_PROTO_HORIZON_MAX_NS);
    em_proto_destroy(x.p);
}

/* The receiving side: a probe is answered at once with the ACK state,
 * flagged PROBED, and the answer itself is never answered (no ping-pong). */
static void test_probe_is_answered_once(void **st)
{
    struct fx x;
    mk(&x, EM_RECOVERY_SR, 0);
    feed(&x, data(0, 0, "a"), "a", 0);
    em_hdr_t pr = ack(0, 0);
    pr.flags |= EM_F_ACKNOW;
    feed(&x, pr, NULL, 10);
    em_proto_poll(x.p, 10); /* no ack_delay wait */
    assert_int_equal(x.c.nf, 1);
    assert_int_equal(x.c.f[0].h.type, EM_PT_ACK);
    assert_int_equal(x.c.f[0].h.ack, 1);
    assert_true(x.c.f[0].h.flags & EM_F_PROBED);
    assert_false(x.c.f[0].h.flags & EM_F_ACKNOW);
    em_hdr_t ans = ack(0, 0);
    ans.flags |= EM_F_PROBED;
    feed(&x, ans, NULL, 20);
    em_proto_poll(x.p, 1000000);
    assert_int_equal(x.c.nf, 1);
    em_proto_destroy(x.p);
}

/* A window wider than the SACK bitmap (real networks): the bitmap reports the 64
 * frames after the cumulative ACK, across the 64-bit words of the receiver's
 * map; frames further out are held, not reported, and delivered in order
 * once the gap fills. */
static void test_wide_window_sack_and_drain(void **st)
{
    struct fx x;
    mk(&x, EM_RECOVERY_SR, 60);
    x.cfg.window = 128;
    remk(&x);
    feed(&x, data(60, 0, "a"), "a", 0);                           /* rcv_nxt 61 */
    static const uint32_t held[] = { 63, 64, 70, 124, 130, 187 }; /* 187 = 61 + 126 */
    for (unsigned i = 0; i < 6; i++)
        feed(&x, data(held[i], 0, "h"), "h", 10);
    feed(&x, data(189, 0, "z"), "z", 10); /* 61 + 128: beyond the window */
    assert_int_equal(em_proto_stats(x.p)->drop_window, 1);
    em_proto_poll(x.p, 10);
    assert_int_equal(x.c.nf, 1);
    assert_int_equal(x.c.f[0].h.ack, 61);
    /* bit i = 62 + i: 63, 64, 70, 124; 130 and 187 are beyond the bitmap */
    uint64_t want = (1ull << 1) | (1ull << 2) | (1ull << 8) | (1ull << 62);
    assert_true(x.c.f[0].h.flags & EM_F_SACK);
    assert_int_equal(x.c.f[0].h.sack, want);
    assert_int_equal(x.c.nrecv, 1);
    feed(&x, data(61, 0, "b"), "b", 20);
    feed(&x, data(62, 0, "c"), "c", 20); /* drains 63, 64 */
    assert_int_equal(x.c.nrecv, 5);
    for (uint32_t q = 65; q < 190; q++) /* the rest, held ones again (dups) */
        feed(&x, data(q, 0, "r"), "r", 30);
    assert_int_equal(x.c.nrecv, 5 + 125); /* 65..189 delivered once each */
    assert_true(em_proto_stats(x.p)->rx_dups >= 4);
    em_proto_destroy(x.p);
}

/* A receiver that is only late (a descheduled process) answers no probe
 * until it runs again.  However many probes went unanswered, no data is
 * resent before the streak is resend_after_ns old; the late ACK then
 * finds nothing resent: no duplicate, and an RTT sample (Karn allows it). */
static void test_timeout_streak_waits_before_resending(void **st)
{
    struct fx x;
    em_proto_op_t op;
    mk(&x, EM_RECOVERY_SR, 0);
    x.cfg.max_retries = 10;
    x.cfg.resend_after_ns = 20000;
    remk(&x);
    em_proto_send(x.p, &op, 1, 0, "m", 1, NULL, 0);
    /* timeouts at 1, 3, 7, 15 us (ages 0, 2, 6, 14 us): probes only */
    uint64_t t[] = { 1000, 3000, 7000, 15000 };
    for (unsigned i = 0; i < 4; i++) {
        assert_int_equal(em_proto_next_deadline(x.p), t[i]);
        em_proto_poll(x.p, t[i]);
    }
    assert_int_equal(em_proto_stats(x.p)->probes, 4);
    assert_int_equal(em_proto_stats(x.p)->retransmits, 0);
    em_hdr_t a = ack(1, 0);
    a.flags |= EM_F_PROBED;
    feed(&x, a, NULL, 25000); /* late, not lost */
    assert_int_equal(em_proto_stats(x.p)->retransmits, 0);
    assert_int_equal(em_proto_stats(x.p)->rtt_samples, 0); /* answers one of 4 probes */
    em_proto_poll(x.p, 23000); /* the old deadline: nothing outstanding, no probe */
    assert_int_equal(em_proto_stats(x.p)->probes, 4);

    /* against a silent peer: timeouts at 31, 33, 37, 45, 53 us (the RTO
     * back to 1 us, capped at 8); data goes at the first at which the
     * streak (from 31 us) is 20 us old: 53 us */
    em_proto_send(x.p, &op, 1, 0, "n", 1, NULL, 30000);
    uint64_t u[] = { 31000, 33000, 37000, 45000 };
    for (unsigned i = 0; i < 4; i++) {
        assert_int_equal(em_proto_next_deadline(x.p), u[i]);
        em_proto_poll(x.p, u[i]);
        assert_int_equal(em_proto_stats(x.p)->retransmits, 0);
    }
    assert_int_equal(em_proto_next_deadline(x.p), 53000);
    em_proto_poll(x.p, 53000);
    assert_int_equal(em_proto_stats(x.p)->retransmits, 1);
    assert_true(x.c.f[x.c.nf - 2].h.flags & EM_F_RETX);
    feed(&x, ack(2, 0), NULL, 54000);

    /* a peer that answered a probe of the streak reads its queue: a lossy
     * path, not a late process.  Its answer resends the frame it lacks;
     * that one is lost too, and the next data goes at the third timeout
     * (67 us), not 20 us into the streak */
    em_proto_send(x.p, &op, 1, 0, "o", 1, NULL, 60000);
    em_proto_poll(x.p, 61000); /* probe */
    em_hdr_t b = ack(2, 0);
    b.flags |= EM_F_PROBED;
    feed(&x, b, NULL, 62000); /* the answer lacks seq 2: resent at once */
    assert_int_equal(em_proto_stats(x.p)->fast_retransmits, 1);
    em_proto_poll(x.p, 63000); /* probe */
    assert_int_equal(em_proto_stats(x.p)->retransmits, 2);
    assert_int_equal(em_proto_next_deadline(x.p), 67000);
    em_proto_poll(x.p, 67000);
    assert_int_equal(em_proto_stats(x.p)->retransmits, 3);
    em_proto_destroy(x.p);
}

/* The frame counters' text is read by tools/compare.py (spurious_retx):
 * pinned word for word, and cut short by a small buffer. */
/* A window in bytes as frames (the rudp BTL's and the provider's window 0):
 * 384 KiB is 263 frames of 1500 B (capped at EM_WINDOW_MAX), 44 of 9000
 * (raised to the 64-frame floor), 116 of 3402 (AF_XDP's largest MTU). */
static void test_window_for_bytes(void **st)
{
    (void)st;
    assert_int_equal(em_proto_window_for(384, 1500), EM_WINDOW_MAX);
    assert_int_equal(em_proto_window_for(384, 9000), 64);
    assert_int_equal(em_proto_window_for(384, 3402), 116); /* 393216 / 3402 = 115.6: rounded up */
    assert_int_equal(em_proto_window_for(192, 1500), 132);
    assert_int_equal(em_proto_window_for(0, 1500), 64);
    assert_int_equal(em_proto_window_for(384, 0), 64);
    assert_int_equal(em_proto_window_for(UINT32_MAX, 1), EM_WINDOW_MAX); /* no overflow */
}

static void test_stats_frames_text(void **st)
{
    em_proto_stats_t s = { .tx_frames = 11,
                           .tx_data_frames = 7,
                           .tx_acks = 3,
                           .retransmits = 2,
                           .timeouts = 5,
                           .probes = 4,
                           .fast_retransmits = 1,
                           .rx_frames = 13,
                           .rx_dups = 6,
                           .rx_ooo = 9,
                           .spurious_retx = 8 };
    char b[256];
    const char *want = "tx 11 frames (7 data, 3 acks, 2 retransmits, 5 timeouts, 4 probes, "
                       "1 fast_retransmits), rx 13 frames (6 dups, 9 out-of-order, "
                       "8 spurious_retx)";
    assert_int_equal(em_proto_stats_frames(&s, b, sizeof b), (int)strlen(want));
    assert_string_equal(b, want);
    char small[8];
    em_proto_stats_frames(&s, small, sizeof small);
    assert_string_equal(small, "tx 11 f");
    /* the refusals, by name (the attack tests read them so) */
    em_proto_stats_t r = { .drop_source = 1,
                           .drop_job_key = 2,
                           .drop_budget = 3,
                           .drop_endpoint = 4,
                           .drop_version = 5,
                           .drop_short = 6,
                           .drop_peer_failed = 7 };
    want = "drop_source 1 drop_job_key 2 drop_budget 3 drop_endpoint 4 drop_version 5 "
           "drop_short 6 drop_peer_failed 7";
    assert_int_equal(em_proto_stats_refused(&r, b, sizeof b), (int)strlen(want));
    assert_string_equal(b, want);
}

static void test_progress_resets_backoff(void **st)
{
    struct fx x;
    em_proto_op_t op[2];
    mk(&x, EM_RECOVERY_SR, 0);
    em_proto_send(x.p, &op[0], 1, 0, "m", 1, NULL, 0);
    em_proto_send(x.p, &op[1], 1, 0, "n", 1, NULL, 0);
    em_proto_poll(x.p, 1000);                            /* probe */
    em_proto_poll(x.p, 3000);                            /* probe */
    em_proto_poll(x.p, 7000);                            /* probe + the oldest resent */
    feed(&x, ack(1, 0), NULL, 7500);                     /* covers a resent frame: no sample */
    assert_int_equal(em_proto_next_deadline(x.p), 8500); /* rto back to 1 us */
    em_proto_destroy(x.p);
}

static void test_adaptive_rto_follows_rtt_and_karn(void **st)
{
    struct fx x;
    em_proto_op_t op[3];
    mk(&x, EM_RECOVERY_SR, 0);
    assert_int_equal(em_proto_rto(x.p, 1), 1000); /* before any sample */
    em_proto_send(x.p, &op[0], 1, 0, "a", 1, NULL, 0);
    feed(&x, ack(1, 0), NULL, 2000); /* RTT 2 us */
    assert_int_equal(em_proto_srtt(x.p, 1), 2000);
    assert_int_equal(em_proto_rto(x.p, 1), 2000 + 4 * 1000); /* srtt + 4 rttvar */
    em_proto_send(x.p, &op[1], 1, 0, "b", 1, NULL, 3000);
    em_proto_poll(x.p, 3000); /* refreshes the bound */
    assert_int_equal(em_proto_next_deadline(x.p), 3000 + 6000);
    em_proto_poll(x.p, 9000);  /* times out: a probe */
    em_proto_poll(x.p, 21000); /* again (2 x 6 us): a probe */
    em_proto_poll(x.p, 45000); /* again (4 x 6 us): resent */
    assert_int_equal(em_proto_stats(x.p)->retransmits, 1);
    feed(&x, ack(2, 0), NULL, 45100);                      /* acks a resent frame */
    assert_int_equal(em_proto_stats(x.p)->rtt_samples, 1); /* Karn: no sample */
    em_proto_send(x.p, &op[2], 1, 0, "c", 1, NULL, 46000);
    feed(&x, ack(3, 0), NULL, 46100); /* RTT 100 ns */
    /* srtt = (7*2000 + 100)/8 = 1762, rttvar = (3*1000 + 1900)/4 = 1225 */
    assert_int_equal(em_proto_srtt(x.p, 1), 1762);
    assert_int_equal(em_proto_rto(x.p, 1), 1762 + 4900);
    em_proto_destroy(x.p);
}

/* ---- validation ---- */

static void test_foreign_frames_dropped_and_counted(void **st)
{
    struct fx x;
    mk(&x, EM_RECOVERY_SR, 0);
    em_hdr_t h = data(0, 0, "x");
    h.job_key = 0xBAD;
    feed(&x, h, "x", 0);
    h = data(0, 0, "x");
    h.index = 0x10001; /* no such peer (peer 1, were it cut to 16 bits) */
    feed(&x, h, "x", 0);
    h = data(0, 0, "x");
    h.index = 7; /* no such peer */
    feed(&x, h, "x", 0);
    h = data(0, 0, "x");
    h.index = 0; /* "from ourselves" */
    h.job_key = KEY;
    {
        uint8_t b[128];
        size_t n = em_hdr_encode(&h, b);
        b[n] = 'x';
        em_proto_rx(x.p, b, n + 1, 0);
    }
    h = data(0, 5, "x"); /* acks what we never sent */
    feed(&x, h, "x", 0);
    uint8_t junk[60] = { 0x45, 0x00 };
    em_proto_rx(x.p, junk, sizeof junk, 0);
    junk[0] = 0xE5;
    junk[1] = 9;
    em_proto_rx(x.p, junk, sizeof junk, 0);
    em_proto_rx(x.p, junk, 1, 0);
    const em_proto_stats_t *s = em_proto_stats(x.p);
    assert_int_equal(s->drop_job_key, 1);
    assert_int_equal(s->drop_endpoint, 3);
    assert_int_equal(s->drop_window, 1);
    assert_int_equal(s->drop_magic, 1);
    assert_int_equal(s->drop_version, 1);
    assert_int_equal(s->drop_short, 1);
    assert_int_equal(x.c.nrecv, 0);
    em_proto_destroy(x.p);
}

static void test_reassembly_rejects_inconsistent_fragments(void **st)
{
    struct fx x;
    mk(&x, EM_RECOVERY_SR, 0);
    char p[1000];
    memset(p, 'q', sizeof p);
    em_hdr_t h = { .type = EM_PT_DATA,
                   .seq = 0,
                   .len = 1000,
                   .msg_len = 1500,
                   .frag_no = 0,
                   .frag_cnt = 2,
                   .msg_id = 1 };
    feed(&x, h, p, 0);
    h.seq = 1;
    h.frag_no = 1;
    h.msg_id = 2;
    h.len = 500; /* other message id */
    feed(&x, h, p, 0);
    assert_int_equal(x.c.nrecv, 0);
    assert_int_equal(em_proto_stats(x.p)->drop_malformed, 1);
    /* a message longer than its fragments can carry is refused up front */
    em_hdr_t g = { .type = EM_PT_DATA,
                   .seq = 2,
                   .len = 10,
                   .msg_len = 5000,
                   .frag_no = 0,
                   .frag_cnt = 2,
                   .msg_id = 3 };
    feed(&x, g, p, 0);
    assert_int_equal(em_proto_stats(x.p)->drop_malformed, 2);
    /* a proper two-fragment message is still reassembled afterwards */
    h = (em_hdr_t){ .type = EM_PT_DATA,
                    .seq = 2,
                    .len = 1000,
                    .msg_len = 1200,
                    .frag_no = 0,
                    .frag_cnt = 2,
                    .msg_id = 4,
                    .tag = 5 };
    feed(&x, h, p, 1);
    h.seq = 3;
    h.frag_no = 1;
    h.len = 200;
    feed(&x, h, p, 1);
    assert_int_equal(x.c.nrecv, 1);
    assert_int_equal(x.c.last_len, 1200);
    assert_int_equal(x.c.last_tag, 5);
    em_proto_destroy(x.p);
}

static void test_frame_larger_than_ours_is_malformed(void **st)
{
    /* found by fuzz_proto_rx: an out-of-order frame carrying more than
     * frame_max overflowed the out-of-order slot */
    struct fx x;
    mk(&x, EM_RECOVERY_SR, 0);
    static char big[1200];
    memset(big, 'b', sizeof big);
    /* first of 2 fragments: message length plausible (<= 2 x 1000), but
     * this frame alone carries 1100 B: 48 + 1100 > frame_max 1048 */
    em_hdr_t h = {
        .type = EM_PT_DATA, .seq = 1, .len = 1100, .msg_len = 1100, .frag_no = 0, .frag_cnt = 2
    };
    feed(&x, h, big, 0);
    assert_int_equal(em_proto_stats(x.p)->drop_malformed, 1);
    assert_int_equal(em_proto_stats(x.p)->rx_ooo, 0);
    em_proto_destroy(x.p);
}

static void test_empty_multi_fragment_message(void **st)
{
    /* found by fuzz_proto_rx: fragments of a 0-byte message, no buffer yet */
    struct fx x;
    mk(&x, EM_RECOVERY_SR, 0);
    em_hdr_t h = { .type = EM_PT_DATA,
                   .seq = 0,
                   .len = 0,
                   .msg_len = 0,
                   .frag_no = 0,
                   .frag_cnt = 2,
                   .msg_id = 1 };
    feed(&x, h, NULL, 0);
    h.seq = 1;
    h.frag_no = 1;
    feed(&x, h, NULL, 0);
    assert_int_equal(x.c.nrecv, 1);
    assert_int_equal(x.c.last_len, 0);
    em_proto_destroy(x.p);
}

/* A message of several frames placed in its owner's buffer (ops.place):
 * the bytes from skip on land there, nothing is delivered by recv, and it
 * ends once with place_end(0).  Cut short by the next message's first
 * frame, or by the peer's failure, it ends with place_end(-EM_ECANCELED);
 * a skip beyond the first frame is handed back and the message goes by
 * recv. */
static void test_placed_in_owner_buffer(void **st)
{
    struct fx x;
    int err;
    memset(&x.c, 0, sizeof x.c);
    em_proto_cfg_default(&x.cfg);
    x.cfg.job_key = KEY;
    x.cfg.npeers = 3;
    x.cfg.frame_max = EM_HDR_LEN + 1000;
    x.cfg.isn = 0;
    x.p = em_proto_create(&x.cfg, &CAP_OPS_PLACE, &x.c, &err);
    assert_non_null(x.p);
    static uint8_t dst[4000], p[1000];
    for (unsigned i = 0; i < sizeof p; i++)
        p[i] = (uint8_t)i;
    memset(dst, 0xEE, sizeof dst);
    x.c.place_buf = dst;
    x.c.place_skip = 56;
    em_hdr_t h = { .type = EM_PT_DATA,
                   .seq = 0,
                   .len = 1000,
                   .msg_len = 2500,
                   .frag_no = 0,
                   .frag_cnt = 3,
                   .msg_id = 1,
                   .tag = 9 };
    feed(&x, h, p, 0);
    assert_int_equal(x.c.nplace, 1);
    assert_int_equal(x.c.place_head_len, 1000);
    assert_int_equal(x.c.place_msg_len, 2500);
    h.seq = 1, h.frag_no = 1;
    feed(&x, h, p, 0);
    h.seq = 2, h.frag_no = 2, h.len = 500;
    feed(&x, h, p, 0);
    assert_int_equal(x.c.nplace_end, 1);
    assert_int_equal(x.c.place_status, 0);
    assert_int_equal(x.c.nrecv, 0);
    assert_int_equal(em_proto_stats(x.p)->msgs_placed, 1);
    assert_int_equal(em_proto_stats(x.p)->msgs_recv, 1);
    assert_memory_equal(dst, p + 56, 1000 - 56); /* frame 0 after the skip */
    assert_memory_equal(dst + 944, p, 1000);     /* frame 1 */
    assert_memory_equal(dst + 1944, p, 500);     /* frame 2 */
    assert_int_equal(dst[2444], 0xEE);           /* nothing beyond */
    /* cut short by the next message's first frame */
    h = (em_hdr_t){
        .type = EM_PT_DATA, .seq = 3, .len = 1000, .msg_len = 1500, .frag_cnt = 2, .msg_id = 2
    };
    feed(&x, h, p, 0);
    assert_int_equal(x.c.nplace, 2);
    h.seq = 4, h.msg_id = 3; /* a new first frame: the placed one is cut */
    feed(&x, h, p, 0);
    assert_int_equal(x.c.nplace_end, 2);
    assert_int_equal(x.c.place_status, -EM_ECANCELED);
    assert_int_equal(x.c.nplace, 3);
    /* cut short by the peer's failure */
    assert_int_equal(em_proto_fail_peer(x.p, 1, "test"), 0);
    assert_int_equal(x.c.nplace_end, 3);
    assert_int_equal(x.c.place_status, -EM_ECANCELED);
    assert_int_equal(x.c.nrecv, 0);
    /* a skip beyond the first frame: handed back, delivered by recv */
    em_proto_destroy(x.p);
    memset(&x.c, 0, sizeof x.c);
    x.p = em_proto_create(&x.cfg, &CAP_OPS_PLACE, &x.c, &err);
    x.c.place_buf = dst;
    x.c.place_skip = 1001;
    h = (em_hdr_t){ .type = EM_PT_DATA,
                    .seq = 0,
                    .len = 1000,
                    .msg_len = 1500,
                    .frag_cnt = 2,
                    .msg_id = 1,
                    .tag = 4 };
    feed(&x, h, p, 0);
    assert_int_equal(x.c.nplace_end, 1);
    assert_int_equal(x.c.place_status, -EM_EINVAL);
    h.seq = 1, h.frag_no = 1, h.len = 500;
    feed(&x, h, p, 0);
    assert_int_equal(x.c.nrecv, 1);
    assert_int_equal(x.c.last_len, 1500);
    assert_int_equal(em_proto_stats(x.p)->msgs_placed, 0);
    /* no buffer given: recv, as without the callback; and one in flight
     * when the protocol goes is ended too */
    x.c.place_buf = NULL;
    h = (em_hdr_t){ .type = EM_PT_DATA,
                    .seq = 2,
                    .len = 1000,
                    .msg_len = 1500,
                    .frag_cnt = 2,
                    .msg_id = 2,
                    .tag = 4 };
    feed(&x, h, p, 0);
    h.seq = 3, h.frag_no = 1, h.len = 500;
    feed(&x, h, p, 0);
    assert_int_equal(x.c.nrecv, 2);
    x.c.place_buf = dst;
    x.c.place_skip = 0;
    h = (em_hdr_t){ .type = EM_PT_DATA,
                    .seq = 4,
                    .len = 1000,
                    .msg_len = 1500,
                    .frag_cnt = 2,
                    .msg_id = 3,
                    .tag = 4 };
    feed(&x, h, p, 0);
    unsigned ends = x.c.nplace_end;
    em_proto_destroy(x.p);
    assert_int_equal(x.c.nplace_end, ends + 1);
    assert_int_equal(x.c.place_status, -EM_ECANCELED);
}

/* ---- puts ---- */

static void test_put_frames_carry_target_and_complete_on_ack(void **st)
{
    struct fx x;
    em_proto_op_t op;
    static uint8_t buf[2500];
    for (unsigned i = 0; i < sizeof buf; i++)
        buf[i] = (uint8_t)i;
    mk(&x, EM_RECOVERY_SR, 0);
    em_put_target_t t = { .region = 4, .key = 0xABCDEF, .offset = 100 };
    assert_int_equal(em_proto_put(x.p, &op, 1, &t, buf, sizeof buf, NULL, 0), 0);
    assert_int_equal(x.c.nf, 3); /* 976 B per PUT frame */
    for (unsigned i = 0; i < 3; i++) {
        assert_int_equal(x.c.f[i].h.type, EM_PT_PUT);
        assert_int_equal(x.c.f[i].h.region, 4);
        assert_int_equal(x.c.f[i].h.key, 0xABCDEF);
        assert_int_equal(x.c.f[i].h.offset, 100 + i * 976);
    }
    assert_false(x.c.f[1].h.flags & EM_F_ACKNOW);
    assert_true(x.c.f[2].h.flags & EM_F_ACKNOW); /* last frame: ack at once */
    feed(&x, ack(3, 0), NULL, 1);
    assert_int_equal(x.c.ncomplete, 1);
    assert_int_equal(em_proto_stats(x.p)->puts_done, 1);
    em_proto_destroy(x.p);
}

static void test_put_received_is_placed_or_rejected(void **st)
{
    struct fx x;
    mk(&x, EM_RECOVERY_SR, 0);
    em_hdr_t h = { .type = EM_PT_PUT,
                   .seq = 0,
                   .len = 4,
                   .msg_len = 4,
                   .frag_cnt = 1,
                   .region = 2,
                   .key = 77,
                   .offset = 8 };
    feed(&x, h, "DATA", 0);
    assert_int_equal(x.c.nput, 1);
    em_proto_poll(x.p, 0); /* no ACKNOW: ACK is delayed */
    assert_int_equal(x.c.nf, 0);
    assert_int_equal(x.c.last_put.region, 2);
    assert_int_equal(x.c.last_put.key, 77);
    assert_int_equal(x.c.last_put.offset, 8);
    assert_memory_equal(x.c.last_data, "DATA", 4);
    x.c.put_rc = -1;
    h.seq = 1;
    h.flags = EM_F_ACKNOW;
    feed(&x, h, "DATA", 0);
    em_proto_poll(x.p, 0); /* ACKNOW: ACK without delay */
    assert_int_equal(x.c.nf, 1);
    assert_int_equal(x.c.f[0].h.ack, 2);
    assert_int_equal(em_proto_stats(x.p)->puts_placed, 1);
    assert_int_equal(em_proto_stats(x.p)->puts_rejected, 1);
    /* a rejected frame is still consumed: no retransmission storm */
    em_proto_poll(x.p, 1000);
    assert_int_equal(x.c.f[x.c.nf - 1].h.ack, 2);
    em_proto_destroy(x.p);
}

/* ---- wrap-around ---- */

/* With a link that acknowledges for us (emd), an in-order frame we cannot
 * take fails the peer with a reason instead of vanishing (the sender was
 * told it arrived); a frame that is not in order is dropped as before.
 * em_proto_flow reports where the flows stand, whatever the ISN. */
static void test_link_acks_refusal_fails_peer(void **st)
{
    struct fx x;
    em_proto_flow_t f;
    mk(&x, EM_RECOVERY_SR, 0x7ffffffeu);
    feed(&x, data(0x7ffffffeu, 0x7fffffffu, "x"), "x", 0); /* acks what we never sent */
    assert_int_equal(x.c.nfailed, 0);                      /* no link ACKs: dropped */
    assert_int_equal(em_proto_stats(x.p)->drop_window, 1);
    assert_null(em_proto_fail_reason(x.p, 1));

    x.cfg.link_acks = true;
    remk(&x);
    assert_int_equal(em_proto_flow(x.p, 1, &f), 0);
    assert_int_equal(f.rcv_nxt, 0x7ffffffeu);
    assert_int_equal(f.snd_nxt, 0x7ffffffeu);
    assert_true(f.rx_key == KEY && f.tx_key == KEY && f.self == 0 && f.peer == 1);
    assert_int_equal(f.frame_max, EM_HDR_LEN + 1000);
    assert_int_equal(em_proto_flow(x.p, 0, &f), -EM_EINVAL);
    feed(&x, data(0x7ffffffeu, 0x7ffffffeu, "a"), "a", 0); /* fine */
    assert_int_equal(x.c.nrecv, 1);
    assert_int_equal(em_proto_flow(x.p, 1, &f), 0);
    assert_int_equal(f.rcv_nxt, 0x7fffffffu);
    feed(&x, data(0x80000001u, 0x80000000u, "b"), "b", 1); /* not in order: dropped */
    assert_int_equal(x.c.nfailed, 0);
    feed(&x, data(0x7fffffffu, 0x80000000u, "c"), "c", 2); /* in order, bad ACK */
    assert_int_equal(x.c.nfailed, 1);
    assert_int_equal(em_proto_stats(x.p)->fail_refused_acked, 1);
    assert_non_null(em_proto_fail_reason(x.p, 1));
    assert_non_null(strstr(em_proto_fail_reason(x.p, 1), "emd"));
    assert_null(em_proto_fail_reason(x.p, 2));
    em_proto_destroy(x.p);
}

/* Daemon-ACK mode (link_acks): two more in-order frames the rank cannot
 * take after emd acknowledged them must fail the peer visibly, not hang
 * the flow or complete a refused put at the initiator. */
static void test_link_acks_budget_and_refused_put_fail_peer(void **st)
{
    struct fx x;
    mk(&x, EM_RECOVERY_SR, 10);
    x.cfg.link_acks = true;
    x.cfg.max_msg = 2000; /* this rank accepts 2000 B messages */
    remk(&x);
    /* first fragment of a 5000 B message, in order: over the budget */
    em_hdr_t h = { .type = EM_PT_DATA,
                   .tag = 1,
                   .seq = 10,
                   .ack = 10,
                   .len = 1000,
                   .msg_len = 5000,
                   .frag_cnt = 5,
                   .msg_id = 1 };
    static uint8_t pl[1000];
    feed(&x, h, pl, 0);
    assert_int_equal(em_proto_stats(x.p)->drop_budget, 1);
    assert_int_equal(x.c.nfailed, 1);
    assert_non_null(strstr(em_proto_fail_reason(x.p, 1), "max_send_size"));

    /* from peer 2: a put into a region the callback refuses */
    x.c.put_rc = -1;
    em_hdr_t put = { .type = EM_PT_PUT,
                     .index = 2,
                     .seq = 10,
                     .ack = 10,
                     .len = 8,
                     .msg_len = 8,
                     .frag_cnt = 1,
                     .region = 7,
                     .key = 99 };
    feed(&x, put, "abcdefgh", 1);
    assert_int_equal(em_proto_stats(x.p)->puts_rejected, 1);
    assert_int_equal(x.c.nfailed, 2);
    assert_non_null(strstr(em_proto_fail_reason(x.p, 2), "put"));
    em_proto_destroy(x.p);

    /* without link_acks both are only refused: the sender retransmits, or
     * learns of the refusal through EM_F_REMERR */
    mk(&x, EM_RECOVERY_SR, 10);
    x.c.put_rc = -1;
    feed(&x, put, "abcdefgh", 1);
    assert_int_equal(x.c.nfailed, 0);
    em_proto_destroy(x.p);
}

/* An inline send asks em_proto_tx_room() whether a whole message leaves at
 * once: the congestion window counts, not only the frame window. */
static void test_tx_room_counts_the_congestion_window(void **st)
{
    struct fx x;
    em_proto_op_t op;
    static uint8_t msg[2000];
    mk(&x, EM_RECOVERY_SR, 0);
    x.cfg.window = 64;
    x.cfg.cc = EM_CC_LOSS;
    x.cfg.cc_init_frames = 8;
    remk(&x);
    assert_int_equal(em_proto_tx_room(x.p, 1, 0), 8); /* cwnd, not the 64-frame window */
    assert_int_equal(em_proto_send(x.p, &op, 1, 1, msg, sizeof msg, NULL, 0), 0);
    assert_int_equal(em_proto_tx_room(x.p, 1, 0), 6);
    x.cfg.cc = EM_CC_OFF;
    remk(&x);
    assert_int_equal(em_proto_tx_room(x.p, 1, 0), 64);
    em_proto_destroy(x.p);
}

static void test_sequence_wraps(void **st)
{
    struct fx x;
    em_proto_op_t op[8];
    mk(&x, EM_RECOVERY_SR, 0xFFFFFFFEu);
    for (int i = 0; i < 4; i++)
        em_proto_send(x.p, &op[i], 1, 0, "w", 1, NULL, 0);
    assert_int_equal(x.c.f[3].h.seq, 1);
    feed(&x, ack(1, 0), NULL, 1); /* acks 0xFFFFFFFE .. 0 */
    assert_int_equal(x.c.ncomplete, 3);
    for (uint32_t s = 0xFFFFFFFEu, i = 0; i < 4; s++, i++)
        feed(&x, data(s, 2, "r"), "r", 2);
    assert_int_equal(x.c.nrecv, 4);
    assert_int_equal(x.c.ncomplete, 4);
    em_proto_destroy(x.p);
}

static void test_destroy_cancels_pending(void **st)
{
    struct fx x;
    em_proto_op_t op;
    mk(&x, EM_RECOVERY_SR, 0);
    em_proto_send(x.p, &op, 1, 0, "m", 1, NULL, 0);
    em_proto_destroy(x.p);
    assert_int_equal(x.c.ncomplete, 1);
    assert_int_equal(x.c.last_status, -EM_ECANCELED);
}

static void test_bad_config_and_arguments(void **st)
{
    em_proto_cfg_t c;
    int err;
    struct cap cp = { 0 };
    em_proto_cfg_default(&c);
    c.window = 0;
    assert_null(em_proto_create(&c, &CAP_OPS, &cp, &err));
    assert_int_equal(err, EM_EINVAL);
    c.window = EM_WINDOW_MAX + 1;
    assert_null(em_proto_create(&c, &CAP_OPS, &cp, &err));
    em_proto_cfg_default(&c);
    c.frame_max = 60;
    assert_null(em_proto_create(&c, &CAP_OPS, &cp, &err));
    em_proto_cfg_default(&c);
    c.self = 2;
    assert_null(em_proto_create(&c, &CAP_OPS, &cp, &err));

    struct fx x;
    em_proto_op_t op;
    mk(&x, EM_RECOVERY_SR, 0);
    assert_int_equal(em_proto_send(x.p, &op, 0, 0, "m", 1, NULL, 0), -EM_EINVAL); /* self */
    assert_int_equal(em_proto_send(x.p, &op, 3, 0, "m", 1, NULL, 0), -EM_EINVAL);
    assert_int_equal(em_proto_send(x.p, &op, 1, 0, "m", em_proto_max_msg(x.p) + 1, NULL, 0),
                     -EM_EINVAL);
    /* a head longer than EM_PROTO_HEAD_MAX, a missing one, head + body too long */
    static const uint8_t head[EM_PROTO_HEAD_MAX + 1];
    assert_int_equal(em_proto_sendv(x.p, &op, 1, 0, head, sizeof head, "m", 1, 0, NULL, 0),
                     -EM_EINVAL);
    assert_int_equal(em_proto_sendv(x.p, &op, 1, 0, NULL, 4, "m", 1, 0, NULL, 0), -EM_EINVAL);
    assert_int_equal(
        em_proto_sendv(x.p, &op, 1, 0, head, 2, "m", em_proto_max_msg(x.p) - 1, 0, NULL, 0),
        -EM_EINVAL);
    assert_int_equal(em_proto_sendv(x.p, &op, 1, 0, head, 2, "m", 1, 2u, NULL, 0), -EM_EINVAL);
    em_proto_destroy(x.p);
}

/* the cc parameter's names (the BTLs' and the provider's btl_*_cc) */
static void test_cc_mode_names(void **st)
{
    (void)st;
    assert_int_equal(em_cc_mode_parse("loss"), EM_CC_LOSS);
    assert_int_equal(em_cc_mode_parse(NULL), EM_CC_LOSS);
    assert_int_equal(em_cc_mode_parse("delay"), EM_CC_DELAY);
    assert_int_equal(em_cc_mode_parse("off"), EM_CC_OFF);
    assert_int_equal(em_cc_mode_parse("Loss"), -1);
    assert_int_equal(em_cc_mode_parse(""), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_send_small_emits_one_data_frame),
        cmocka_unit_test(test_fragmentation_and_window),
        cmocka_unit_test(test_rebase_sends_later_frames_and_resends_from_the_copy),
        cmocka_unit_test(test_ack_last_frame_acked_in_the_same_poll),
        cmocka_unit_test(test_refused_emit_is_retried_on_poll),
        cmocka_unit_test(test_receive_delivers_from_frame_and_delays_ack),
        cmocka_unit_test(test_reply_piggybacks_ack),
        cmocka_unit_test(test_duplicate_acked_at_once_not_redelivered),
        cmocka_unit_test(test_spurious_retransmissions_counted),
        cmocka_unit_test(test_sr_buffers_out_of_order_and_sacks),
        cmocka_unit_test(test_gbn_drops_out_of_order_and_nacks_once),
        cmocka_unit_test(test_sack_triggers_fast_retransmit_of_holes_only),
        cmocka_unit_test(test_gbn_nack_resends_everything_outstanding),
        cmocka_unit_test(test_timeout_backoff_then_peer_failure),
        cmocka_unit_test(test_late_ack_teaches_rto_without_resending_window),
        cmocka_unit_test(test_probe_answer_resends_only_what_was_lost),
        cmocka_unit_test(test_flush_probes_at_once),
        cmocka_unit_test(test_owner_fails_peer),
        cmocka_unit_test(test_probe_is_answered_once),
        cmocka_unit_test(test_wide_window_sack_and_drain),
        cmocka_unit_test(test_timeout_streak_waits_before_resending),
        cmocka_unit_test(test_rtt_samples_exclude_timeouts),
        cmocka_unit_test(test_stats_frames_text),
        cmocka_unit_test(test_window_for_bytes),
        cmocka_unit_test(test_progress_resets_backoff),
        cmocka_unit_test(test_adaptive_rto_follows_rtt_and_karn),
        cmocka_unit_test(test_foreign_frames_dropped_and_counted),
        cmocka_unit_test(test_link_acks_refusal_fails_peer),
        cmocka_unit_test(test_link_acks_budget_and_refused_put_fail_peer),
        cmocka_unit_test(test_tx_room_counts_the_congestion_window),
        cmocka_unit_test(test_reassembly_rejects_inconsistent_fragments),
        cmocka_unit_test(test_empty_multi_fragment_message),
        cmocka_unit_test(test_placed_in_owner_buffer),
        cmocka_unit_test(test_frame_larger_than_ours_is_malformed),
        cmocka_unit_test(test_put_frames_carry_target_and_complete_on_ack),
        cmocka_unit_test(test_put_received_is_placed_or_rejected),
        cmocka_unit_test(test_sequence_wraps),
        cmocka_unit_test(test_destroy_cancels_pending),
        cmocka_unit_test(test_bad_config_and_arguments),
        cmocka_unit_test(test_cc_mode_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
