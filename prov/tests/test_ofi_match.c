/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of the provider's pure parts: tag matching and the queues
 * (emo_match.c), the message header and address blob (emo_wire.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "emo_match.h"
#include "emo_wire.h"

static emo_qent_t ent(uint32_t peer, uint64_t tag, uint64_t ignore)
{
    return (emo_qent_t){ .peer = peer, .tag = tag, .ignore = ignore };
}

static void test_match_rule(void **state)
{
    (void)state;
    assert_true(emo_match(EMO_ANY_PEER, 0x10, 0, 3, 0x10));
    assert_false(emo_match(EMO_ANY_PEER, 0x10, 0, 3, 0x11));
    assert_true(emo_match(EMO_ANY_PEER, 0x10, 0x0F, 3, 0x1F));  /* ignored low bits */
    assert_false(emo_match(EMO_ANY_PEER, 0x10, 0x0F, 3, 0x20)); /* not ignored high bit */
    assert_true(emo_match(3, 0x10, 0, 3, 0x10));
    assert_false(emo_match(4, 0x10, 0, 3, 0x10));                     /* directed elsewhere */
    assert_true(emo_match(EMO_ANY_PEER, 0, ~0ull, 9, 0xDEADBEEFull)); /* any tag */
}

/* a message matches the OLDEST posted receive that accepts it */
static void test_posted_order(void **state)
{
    (void)state;
    emo_queue_t q;
    emo_queue_init(&q);
    emo_qent_t a = ent(EMO_ANY_PEER, 0x100, 0xFF), b = ent(2, 0x105, 0),
               c = ent(EMO_ANY_PEER, 0x105, 0);
    emo_queue_push(&q, &a);
    emo_queue_push(&q, &b);
    emo_queue_push(&q, &c);
    assert_int_equal(q.len, 3);
    assert_ptr_equal(emo_match_posted(&q, 2, 0x105), &a); /* a is older and accepts it */
    assert_ptr_equal(emo_match_posted(&q, 7, 0x105), &c); /* b wants peer 2 only */
    assert_null(emo_match_posted(&q, 7, 0x105));
    assert_ptr_equal(emo_match_posted(&q, 2, 0x105), &b);
    assert_int_equal(q.len, 0);
    assert_null(q.head);
    assert_null(q.tail);
}

/* a receive matches the OLDEST unexpected message; claimed ones are skipped */
static void test_unexp_order_claim(void **state)
{
    (void)state;
    emo_queue_t q;
    emo_queue_init(&q);
    emo_qent_t m1 = ent(1, 0x7, 0), m2 = ent(2, 0x7, 0), m3 = ent(1, 0x8, 0);
    emo_queue_push(&q, &m1);
    emo_queue_push(&q, &m2);
    emo_queue_push(&q, &m3);
    /* peek does not remove */
    assert_ptr_equal(emo_match_unexp(&q, EMO_ANY_PEER, 0x7, 0, false), &m1);
    assert_int_equal(q.len, 3);
    m1.claimed = 1;
    assert_ptr_equal(emo_match_unexp(&q, EMO_ANY_PEER, 0x7, 0, false), &m2);
    assert_ptr_equal(emo_match_unexp(&q, 1, 0x0, 0xF, true), &m3); /* m1 claimed */
    assert_ptr_equal(emo_match_unexp(&q, 2, 0x7, 0, true), &m2);
    assert_null(emo_match_unexp(&q, EMO_ANY_PEER, 0x7, 0, true));
    /* the claimed entry goes only by its owner */
    assert_true(emo_queue_remove(&q, &m1));
    assert_false(emo_queue_remove(&q, &m1));
    assert_int_equal(q.len, 0);
    /* the queue is usable again, tail included */
    emo_queue_push(&q, &m2);
    emo_queue_push(&q, &m3);
    assert_true(emo_queue_remove(&q, &m3));
    assert_ptr_equal(q.tail, &m2);
    emo_queue_push(&q, &m3);
    assert_ptr_equal(q.head->next, &m3);
}

static void test_hdr_roundtrip(void **state)
{
    (void)state;
    uint8_t buf[EMO_HDR_LEN + 5];
    emo_hdr_t h = { .type = EMO_T_EAGER,
                    .flags = EMO_F_TAGGED | EMO_F_DATA,
                    .tag = 0x0123456789ABCDEFull,
                    .data = 42,
                    .len = 5 },
              d;
    emo_hdr_encode(&h, buf);
    assert_int_equal(buf[0], EMO_MAGIC);
    assert_int_equal(buf[8], 0x01); /* big-endian tag */
    memcpy(buf + EMO_HDR_LEN, "hello", 5);
    assert_int_equal(emo_hdr_decode(EMO_T_EAGER, buf, sizeof buf, &d), EMO_DEC_OK);
    assert_true(d.tag == h.tag && d.data == 42 && d.len == 5 && d.flags == h.flags);
    /* the engine tag must be the type */
    assert_int_equal(emo_hdr_decode(EMO_T_RTS, buf, sizeof buf, &d), EMO_DEC_TYPE);
    /* the length field must be exactly the payload */
    assert_int_equal(emo_hdr_decode(EMO_T_EAGER, buf, sizeof buf - 1, &d), EMO_DEC_MALFORMED);
    assert_int_equal(emo_hdr_decode(EMO_T_EAGER, buf, EMO_HDR_LEN - 1, &d), EMO_DEC_SHORT);
    /* first contact: the address blob sits between header and payload */
    uint8_t hb[EMO_HDR_LEN + EMO_ADDR_LEN + 5] = { 0 };
    h.flags |= EMO_F_HELLO;
    emo_hdr_encode(&h, hb);
    memcpy(hb + EMO_HDR_LEN + EMO_ADDR_LEN, "hello", 5);
    assert_int_equal(emo_hdr_decode(EMO_T_EAGER, hb, sizeof hb, &d), EMO_DEC_OK);
    assert_true(d.off == EMO_HDR_LEN + EMO_ADDR_LEN && d.len == 5);
    assert_int_equal(emo_hdr_decode(EMO_T_EAGER, hb, EMO_HDR_LEN + 10, &d), EMO_DEC_MALFORMED);
    emo_hdr_t fin = { .type = EMO_T_FIN, .flags = EMO_F_HELLO, .r_cookie = 3 };
    emo_hdr_encode(&fin, hb); /* a reply never carries one */
    assert_int_equal(emo_hdr_decode(EMO_T_FIN, hb, EMO_HDR_LEN + EMO_ADDR_LEN, &d),
                     EMO_DEC_MALFORMED);
    buf[3] |= 0x80; /* unknown flag */
    assert_int_equal(emo_hdr_decode(EMO_T_EAGER, buf, sizeof buf, &d), EMO_DEC_MALFORMED);
    buf[3] &= 0x7F;
    buf[1] = 9; /* version */
    assert_int_equal(emo_hdr_decode(EMO_T_EAGER, buf, sizeof buf, &d), EMO_DEC_MAGIC);
}

static void test_hdr_type_rules(void **state)
{
    (void)state;
    uint8_t b[EMO_HDR_LEN];
    emo_hdr_t d;
    emo_hdr_t rts = {
        .type = EMO_T_RTS, .flags = EMO_F_TAGGED, .tag = 1, .len = 1 << 20, .s_cookie = 7
    };
    emo_hdr_encode(&rts, b);
    assert_int_equal(emo_hdr_decode(EMO_T_RTS, b, sizeof b, &d), EMO_DEC_OK);
    rts.s_cookie = 0; /* an RTS names its operation */
    emo_hdr_encode(&rts, b);
    assert_int_equal(emo_hdr_decode(EMO_T_RTS, b, sizeof b, &d), EMO_DEC_MALFORMED);
    emo_hdr_t cts = {
        .type = EMO_T_CTS, .len = 100, .s_cookie = 7, .r_cookie = 9, .region = 3, .key = 0xFEED
    };
    emo_hdr_encode(&cts, b);
    assert_int_equal(emo_hdr_decode(EMO_T_CTS, b, sizeof b, &d), EMO_DEC_OK);
    assert_true(d.region == 3 && d.key == 0xFEED && d.r_cookie == 9);
    cts.region = 0; /* a grant must name a region */
    emo_hdr_encode(&cts, b);
    assert_int_equal(emo_hdr_decode(EMO_T_CTS, b, sizeof b, &d), EMO_DEC_MALFORMED);
    cts.len = 0; /* ... unless it grants nothing */
    emo_hdr_encode(&cts, b);
    assert_int_equal(emo_hdr_decode(EMO_T_CTS, b, sizeof b, &d), EMO_DEC_OK);
    emo_hdr_t fin = { .type = EMO_T_FIN, .len = 100, .r_cookie = 9 };
    emo_hdr_encode(&fin, b);
    assert_int_equal(emo_hdr_decode(EMO_T_FIN, b, sizeof b, &d), EMO_DEC_OK);
    fin.key = 1; /* a FIN carries no key */
    emo_hdr_encode(&fin, b);
    assert_int_equal(emo_hdr_decode(EMO_T_FIN, b, sizeof b, &d), EMO_DEC_MALFORMED);
    b[2] = 77;
    assert_int_equal(emo_hdr_decode(77, b, sizeof b, &d), EMO_DEC_TYPE);
}

static void test_addr(void **state)
{
    (void)state;
    emo_addr_t a = { .id = 5,
                     .frame_max = 1472,
                     .secret = 0x1122334455667788ull,
                     .isn = 0xCAFEBABE,
                     .link = { .len = 6, .bytes = { 10, 77, 0, 1, 0x12, 0x34 } } },
               d;
    uint8_t b[EMO_ADDR_LEN];
    emo_addr_encode(&a, b);
    assert_int_equal(emo_addr_decode(b, sizeof b, &d), 0);
    assert_true(d.id == 5 && d.frame_max == 1472 && d.secret == a.secret && d.isn == a.isn);
    assert_int_equal(d.link.len, 6);
    assert_memory_equal(d.link.bytes, a.link.bytes, 6);
    assert_int_equal(emo_addr_decode(b, sizeof b - 1, &d), -1); /* wrong size */
    b[40] = 1;                                                  /* bytes past the link address */
    assert_int_equal(emo_addr_decode(b, sizeof b, &d), -1);
    b[40] = 0;
    b[24] = 32; /* link address too long */
    assert_int_equal(emo_addr_decode(b, sizeof b, &d), -1);
    emo_addr_encode(&a, b);
    b[1] = 1; /* a wire version 2 build's address */
    assert_int_equal(emo_addr_decode(b, sizeof b, &d), -1);
    /* an id above 16 bits: low half at 2..3, high half at 20..21 (an id
     * below 65536 leaves 20..21 zero, as before ids were 32 bits) */
    assert_int_equal(b[20] | b[21] | b[22] | b[23], 0);
    a.id = 100000; /* 0x000186A0 */
    emo_addr_encode(&a, b);
    assert_true(b[2] == 0x86 && b[3] == 0xA0 && b[20] == 0x00 && b[21] == 0x01);
    assert_int_equal(emo_addr_decode(b, sizeof b, &d), 0);
    assert_int_equal(d.id, 100000);
    b[22] = 1; /* still reserved */
    assert_int_equal(emo_addr_decode(b, sizeof b, &d), -1);
    a.id = EMO_NPEERS_MAX - 1;
    emo_addr_encode(&a, b);
    assert_int_equal(emo_addr_decode(b, sizeof b, &d), 0);
    assert_int_equal(d.id, EMO_NPEERS_MAX - 1);
    b[20] = 1; /* an id of 2^24 or above: no endpoint's */
    assert_int_equal(emo_addr_decode(b, sizeof b, &d), -1);
    /* the pair key is the same from both sides, and differs per pair */
    uint64_t k1 = emo_pair_key(111, 1, 222, 2), k2 = emo_pair_key(222, 2, 111, 1);
    assert_true(k1 == k2);
    assert_true(k1 != emo_pair_key(111, 1, 333, 2));
    /* the keys are on the wire: these values, taken from the provider's own
     * mixer before it moved to src/util/pair_mix.h, must never change */
    assert_true(emo_pair_key(111, 1, 222, 2) == 0x24EC7B3C5174CAF2ull);
    assert_true(emo_pair_key(0x0123456789ABCDEFull, 7, 0xFEDCBA9876543210ull, 3) ==
                0xB63273263CDD1146ull);
    assert_true(emo_pair_key(~0ull, 65535, 1, 0) == 0x33292AF9737515CEull);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_match_rule),        cmocka_unit_test(test_posted_order),
        cmocka_unit_test(test_unexp_order_claim), cmocka_unit_test(test_hdr_roundtrip),
        cmocka_unit_test(test_hdr_type_rules),    cmocka_unit_test(test_addr),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
