/* SPDX-License-Identifier: BSD-3-Clause */
/* Wire format: byte layout, round trip, and every refusal of the decoder. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "util/seq.h"
#include "proto/hs_wire.h"
#include "proto/wire.h"

static em_hdr_t sample(uint8_t type)
{
    em_hdr_t h = {
        .type = type,
        .flags = EM_F_SACK,
        .tag = 7,
        .job_key = 0xA1B2C3D4E5F60718ull,
        .index = 0x01020304u,
        .len = 5,
        .seq = 0x11223344u,
        .ack = 0x55667788u,
        .sack = 0x8000000000000001ull,
        .msg_id = 42,
        .msg_len = 5,
        .frag_no = 0,
        .frag_cnt = 1,
    };
    if (type == EM_PT_PUT) {
        h.tag = 0;
        h.region = 9;
        h.key = 0x0102030405060708ull;
        h.offset = 4096;
    }
    return h;
}

static void test_layout_is_big_endian(void **st)
{
    uint8_t b[EM_HDR_LEN + EM_PUT_EXT_LEN];
    em_hdr_t h = sample(EM_PT_PUT);
    assert_int_equal(em_hdr_encode(&h, b), EM_HDR_LEN + EM_PUT_EXT_LEN);
    /* version 3: one 32-bit index at offset 4, the 64-bit pair key at
     * offset 8 (wire.h's diagram) */
    static const uint8_t want[] = {
        0xE5, 0x03, 0x02, 0x02, 0x01, 0x02, 0x03, 0x04, 0xA1, 0xB2, 0xC3, 0xD4, 0xE5, 0xF6, 0x07,
        0x18, 0x00, 0x05, 0x00, 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x80, 0,
        0,    0,    0,    0,    0,    0x01, 0,    0,    0,    42,   0,    0,    0,    5,    0,
        0,    0,    1,    0,    0,    0,    9,    0,    0,    0,    0,    1,    2,    3,    4,
        5,    6,    7,    8,    0,    0,    0,    0,    0,    0,    0x10, 0,
    };
    assert_int_equal(sizeof want, sizeof b);
    assert_memory_equal(b, want, sizeof want);
}

static void assert_hdr_equal(const em_hdr_t *a, const em_hdr_t *b)
{
    assert_int_equal(a->type, b->type);
    assert_int_equal(a->flags, b->flags);
    assert_int_equal(a->tag, b->tag);
    assert_int_equal(a->job_key, b->job_key);
    assert_int_equal(a->index, b->index);
    assert_int_equal(a->len, b->len);
    assert_int_equal(a->seq, b->seq);
    assert_int_equal(a->ack, b->ack);
    assert_int_equal(a->sack, b->sack);
    assert_int_equal(a->msg_id, b->msg_id);
    assert_int_equal(a->msg_len, b->msg_len);
    assert_int_equal(a->frag_no, b->frag_no);
    assert_int_equal(a->frag_cnt, b->frag_cnt);
    if (a->type == EM_PT_PUT) {
        assert_int_equal(a->region, b->region);
        assert_int_equal(a->key, b->key);
        assert_int_equal(a->offset, b->offset);
    }
}

static void test_round_trip(void **st)
{
    for (uint8_t t = EM_PT_DATA; t <= EM_PT_PUT; t++) {
        uint8_t b[128] = { 0 };
        em_hdr_t h = sample(t), d;
        size_t n = em_hdr_encode(&h, b);
        assert_int_equal(em_hdr_decode(b, n + h.len, &d), EM_DEC_OK);
        assert_hdr_equal(&h, &d);
    }
}

/* Decode a sample frame of @p type, its header first changed by @p mut
 * (if any), then byte @p poke_at of its encoding set to @p poke (if
 * poke_at >= 0). */
static em_decode_err_t decode_poke_mut(uint8_t type, size_t frame_len, void (*mut)(em_hdr_t *),
                                       int poke_at, uint8_t poke)
{
    uint8_t b[256] = { 0 };
    em_hdr_t h = sample(type), d;
    if (type == EM_PT_ACK || type == EM_PT_NACK)
        h.len = h.msg_len = h.frag_cnt = h.msg_id = h.tag = 0;
    if (mut)
        mut(&h);
    em_hdr_encode(&h, b);
    if (poke_at >= 0)
        b[poke_at] = poke;
    return em_hdr_decode(b, frame_len, &d);
}
static em_decode_err_t decode_mut(uint8_t type, size_t frame_len, void (*mut)(em_hdr_t *))
{
    return decode_poke_mut(type, frame_len, mut, -1, 0);
}
static em_decode_err_t decode_poke(uint8_t type, size_t frame_len, int at, uint8_t val)
{
    return decode_poke_mut(type, frame_len, NULL, at, val);
}

static void m_frag_no(em_hdr_t *h)
{
    h->frag_no = 3;
    h->frag_cnt = 3;
    h->msg_len = 100;
}
static void m_frag_cnt0(em_hdr_t *h) { h->frag_cnt = 0; }
static void m_len_gt_msg(em_hdr_t *h)
{
    h->frag_cnt = 2;
    h->msg_len = 4;
}
static void m_single_len(em_hdr_t *h) { h->msg_len = 6; }
static void m_remerr(em_hdr_t *h) { h->flags |= EM_F_REMERR; }
static void m_ack_len(em_hdr_t *h) { h->len = 1; }
static void m_put_ovf(em_hdr_t *h) { h->offset = UINT64_MAX - 2; }
static void m_index_max(em_hdr_t *h) { h->index = UINT32_MAX; }

static void test_refusals(void **st)
{
    size_t data = EM_HDR_LEN + 5, put = EM_HDR_LEN + EM_PUT_EXT_LEN + 5;
    assert_int_equal(decode_mut(EM_PT_DATA, data, NULL), EM_DEC_OK);
    assert_int_equal(decode_mut(EM_PT_DATA, data + 10, NULL), EM_DEC_OK); /* Ethernet padding */
    assert_int_equal(decode_mut(EM_PT_DATA, 1, NULL), EM_DEC_SHORT);
    assert_int_equal(decode_mut(EM_PT_DATA, EM_HDR_LEN - 1, NULL), EM_DEC_SHORT);
    assert_int_equal(decode_mut(EM_PT_DATA, data - 1, NULL), EM_DEC_SHORT);
    assert_int_equal(decode_mut(EM_PT_PUT, put - 1, NULL), EM_DEC_SHORT);
    assert_int_equal(decode_poke(EM_PT_DATA, data, 0, 0x45), EM_DEC_MAGIC); /* magic */
    assert_int_equal(decode_poke(EM_PT_DATA, data, 1, 1), EM_DEC_VERSION);  /* v1: 32-bit key */
    assert_int_equal(decode_poke(EM_PT_DATA, data, 1, 2), EM_DEC_VERSION);  /* v2: 16-bit ids */
    /* a handshake frame (hs_wire.h, same version) is told apart before this decoder */
    assert_int_equal(decode_poke(EM_PT_DATA, data, 2, 16), EM_DEC_MALFORMED);
    assert_int_equal(decode_mut(EM_PT_DATA, data, m_index_max),
                     EM_DEC_OK); /* the protocol judges */
    assert_int_equal(decode_mut(EM_PT_DATA, data, m_frag_no), EM_DEC_MALFORMED);
    assert_int_equal(decode_mut(EM_PT_DATA, data, m_frag_cnt0), EM_DEC_MALFORMED);
    assert_int_equal(decode_mut(EM_PT_DATA, data, m_len_gt_msg), EM_DEC_MALFORMED);
    assert_int_equal(decode_mut(EM_PT_DATA, data, m_single_len), EM_DEC_MALFORMED);
    assert_int_equal(decode_poke(EM_PT_DATA, data, 3, 0x80), EM_DEC_MALFORMED); /* unknown flag */
    assert_int_equal(decode_poke(EM_PT_DATA, data, 19, 1), EM_DEC_MALFORMED);   /* reserved byte */
    assert_int_equal(decode_poke(EM_PT_DATA, data, 2, 9), EM_DEC_MALFORMED);    /* unknown type */
    assert_int_equal(decode_mut(EM_PT_ACK, EM_HDR_LEN, NULL), EM_DEC_OK);
    assert_int_equal(decode_mut(EM_PT_ACK, EM_HDR_LEN, m_remerr), EM_DEC_OK);
    assert_int_equal(decode_mut(EM_PT_DATA, data, m_remerr), EM_DEC_OK);
    assert_int_equal(decode_mut(EM_PT_ACK, EM_HDR_LEN, m_ack_len), EM_DEC_MALFORMED);
    assert_int_equal(decode_mut(EM_PT_NACK, EM_HDR_LEN, NULL), EM_DEC_OK);
    assert_int_equal(decode_mut(EM_PT_PUT, put, NULL), EM_DEC_OK);
    assert_int_equal(decode_poke(EM_PT_PUT, put, EM_HDR_LEN + 4, 1),
                     EM_DEC_MALFORMED); /* put rsvd */
    assert_int_equal(decode_mut(EM_PT_PUT, put, m_put_ovf), EM_DEC_MALFORMED);
}

/* em_wire_frame_len: headers + stated payload for each type; 0 for a
 * foreign or older frame, a short buffer, or a length past the buffer */
static void test_frame_len(void **st)
{
    (void)st;
    uint8_t b[128] = { 0 };
    em_hdr_t h = sample(EM_PT_DATA);
    em_hdr_encode(&h, b);
    assert_int_equal(em_wire_frame_len(b, sizeof b), EM_HDR_LEN + 5);
    assert_int_equal(em_wire_frame_len(b, EM_HDR_LEN + 5), EM_HDR_LEN + 5);
    assert_int_equal(em_wire_frame_len(b, EM_HDR_LEN + 4), 0); /* states more than there is */
    assert_int_equal(em_wire_frame_len(b, EM_HDR_LEN - 1), 0);
    h = sample(EM_PT_PUT);
    em_hdr_encode(&h, b);
    assert_int_equal(em_wire_frame_len(b, sizeof b), EM_HDR_LEN + EM_PUT_EXT_LEN + 5);
    h = sample(EM_PT_ACK);
    h.len = 0;
    em_hdr_encode(&h, b);
    assert_int_equal(em_wire_frame_len(b, sizeof b), EM_HDR_LEN);
    h = sample(EM_PT_DATA);
    h.len = 0xFFFF;
    em_hdr_encode(&h, b);
    assert_int_equal(em_wire_frame_len(b, sizeof b), 0);
    b[0] = 0;
    assert_int_equal(em_wire_frame_len(b, sizeof b), 0); /* magic */
    em_hdr_encode(&h, b);
    b[1] = EM_WIRE_VERSION - 1;
    assert_int_equal(em_wire_frame_len(b, sizeof b), 0); /* version */
    /* a handshake frame is EM_HS_LEN bytes whatever its index says: where a
     * data header states its length it carries an index (a small one read
     * as a length cut it into pieces), and two coalesced split at 96 */
    for (uint32_t idx = 0; idx < 70000; idx += 997) {
        em_hs_t hs = { .type = EM_HS_CONFIRM,
                       .src_ep = 0,
                       .dst_ep = 0,
                       .src_nonce = 7,
                       .dst_nonce = 9,
                       .src_index = idx,
                       .dst_index = idx / 2,
                       .isn = 1,
                       .token = 2,
                       .cookie_ms = 3,
                       .cookie = 4,
                       .addr_len = 6,
                       .addr = { 10, 0, 0, 1, 1, 2 } };
        uint8_t two[2 * EM_HS_LEN];
        em_hs_encode(&hs, two);
        em_hs_encode(&hs, two + EM_HS_LEN);
        assert_true(em_hs_is(two, sizeof two));
        assert_int_equal(em_wire_frame_len(two, sizeof two), EM_HS_LEN);
        assert_int_equal(em_wire_frame_len(two, EM_HS_LEN), EM_HS_LEN);
        assert_int_equal(em_wire_frame_len(two, EM_HS_LEN - 1), 0);
    }
}

static void test_seq_wrap(void **st)
{
    assert_true(em_seq_lt(0xFFFFFFFFu, 0));
    assert_true(em_seq_gt(0, 0xFFFFFFFFu));
    assert_true(em_seq_lt(0x7FFFFFF0u, 0x80000010u));
    assert_true(em_seq_le(5, 5) && em_seq_ge(5, 5) && !em_seq_lt(5, 5));
    assert_int_equal(em_seq_diff(2, 0xFFFFFFFEu), 4);
    assert_int_equal(em_seq_diff(0xFFFFFFFEu, 2), -4);
    assert_true(em_seq_in(1, 0xFFFFFFFFu, 3));
    assert_false(em_seq_in(2, 0xFFFFFFFFu, 3));
    assert_false(em_seq_in(0xFFFFFFFEu, 0xFFFFFFFFu, 3));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout_is_big_endian),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_seq_wrap),
        cmocka_unit_test(test_frame_len),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
