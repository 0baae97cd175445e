/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * UDP/IPv4 framing (src/link/ipudp.h): the bytes em_ipudp_encode writes
 * (a reference IP checksum, the diagram's offsets), checksums over
 * scattered and odd-split payloads, and every refusal reason of the
 * decoder on a frame broken in exactly that way.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "link/ipudp.h"
#include "link_test_util.h"

static const em_ipudp_path_t path = {
    .src_mac = { 2, 0xe7, 0, 0, 0, 1 },
    .dst_mac = { 2, 0xe7, 0xfe, 0, 0, 1 },
    .src_ip = 0x0A4D0001u,
    .dst_ip = 0x0A4D0102u,
    .src_port = 40000,
    .dst_port = EM_UDP_PORT,
};

static uint8_t frame[EM_IPUDP_HDR_LEN + 2048];

static size_t build(uint32_t plen, int csum)
{
    assert_int_equal(em_ipudp_encode(&path, 0x1234, plen, 0, frame), 0);
    for (uint32_t i = 0; i < plen; i++)
        frame[EM_IPUDP_HDR_LEN + i] = (uint8_t)(i * 13 + 5);
    if (csum) {
        em_csum_piece_t p = { frame + EM_IPUDP_HDR_LEN, plen };
        em_ipudp_udp_csum_set(frame, &p, 1);
    }
    return EM_IPUDP_HDR_LEN + plen;
}

/* fix the IP checksum after a test changed an IP header field */
static void fix_ip_csum(void) { em_test_ip_csum_fix(frame); }

static void test_reference_ip_checksum(void **state)
{
    (void)state;
    /* the classic example: 192.168.0.1 -> 192.168.0.199, UDP, 115 bytes */
    const uint8_t h[20] = { 0x45, 0, 0,    0x73, 0, 0, 0x40, 0,    0x40, 0x11,
                            0,    0, 0xc0, 0xa8, 0, 1, 0xc0, 0xa8, 0,    0xc7 };
    em_csum_t c = { 0, 0 };
    em_csum_add(&c, h, sizeof h);
    assert_int_equal((uint16_t)~em_csum_fold(&c), 0xb861);
}

static void test_encode_layout(void **state)
{
    (void)state;
    size_t n = build(100, 1);
    assert_int_equal(n, 142);
    assert_memory_equal(frame, path.dst_mac, 6);
    assert_memory_equal(frame + 6, path.src_mac, 6);
    assert_int_equal(frame[12] << 8 | frame[13], 0x0800);
    assert_int_equal(frame[14], 0x45);
    assert_int_equal(frame[16] << 8 | frame[17], 128);    /* total length */
    assert_int_equal(frame[18] << 8 | frame[19], 0x1234); /* id */
    assert_int_equal(frame[20] << 8 | frame[21], 0x4000); /* DF */
    assert_int_equal(frame[22], 64);
    assert_int_equal(frame[23], 17);
    assert_int_equal(frame[26], 10);
    assert_int_equal(frame[29], 1);
    assert_int_equal(frame[33], 2);
    assert_int_equal(frame[34] << 8 | frame[35], 40000);
    assert_int_equal(frame[36] << 8 | frame[37], EM_UDP_PORT);
    assert_int_equal(frame[38] << 8 | frame[39], 108);
    assert_true(frame[40] || frame[41]);
    /* the IP header sums to 0xFFFF with its checksum */
    em_csum_t c = { 0, 0 };
    em_csum_add(&c, frame + 14, 20);
    assert_int_equal(em_csum_fold(&c), 0xFFFF);
    assert_int_equal(em_ipudp_encode(&path, 0, 65535 - 28 + 1, 0, frame), -1);
}

static void test_roundtrip(void **state)
{
    (void)state;
    for (uint32_t plen = 0; plen < 300; plen += 37) {
        for (int csum = 0; csum < 2; csum++) {
            size_t n = build(plen, csum);
            em_ipudp_rx_t rx;
            assert_int_equal(em_ipudp_decode(frame, n, path.dst_ip, EM_UDP_PORT, 0, &rx),
                             EM_IPUDP_OK);
            assert_int_equal(rx.payload_len, plen);
            assert_ptr_equal(rx.payload, frame + EM_IPUDP_HDR_LEN);
            assert_int_equal(rx.src_ip, path.src_ip);
            assert_int_equal(rx.src_port, path.src_port);
            assert_memory_equal(rx.src_mac, path.src_mac, 6);
        }
    }
    /* Ethernet padding after the datagram: the IP length is authoritative */
    size_t n = build(3, 1);
    memset(frame + n, 0xAA, 60 - n);
    em_ipudp_rx_t rx;
    assert_int_equal(em_ipudp_decode(frame, 60, 0, EM_UDP_PORT, 0, &rx), EM_IPUDP_OK);
    assert_int_equal(rx.payload_len, 3);
}

static void test_scattered_checksum(void **state)
{
    (void)state;
    size_t n = build(257, 1);
    uint8_t want[2] = { frame[40], frame[41] };
    /* every split point, including odd offsets: the same checksum */
    for (uint32_t cut = 0; cut <= 257; cut++) {
        frame[40] = frame[41] = 0;
        em_csum_piece_t p[3] = { { frame + 42, cut / 2 },
                                 { frame + 42 + cut / 2, cut - cut / 2 },
                                 { frame + 42 + cut, 257 - cut } };
        em_ipudp_udp_csum_set(frame, p, 3);
        assert_int_equal(frame[40], want[0]);
        assert_int_equal(frame[41], want[1]);
    }
    (void)n;
}

static void test_offload_pseudo_sum(void **state)
{
    (void)state;
    /* offloaded: IP checksum 0, UDP field = pseudo-header sum, so the NIC's
     * sum over UDP header + payload completes the checksum */
    assert_int_equal(
        em_ipudp_encode(&path, 1, 10, EM_IPUDP_TX_IP_CSUM_HW | EM_IPUDP_TX_UDP_CSUM_HW, frame), 0);
    assert_int_equal(frame[24] | frame[25], 0);
    uint8_t ph[12] = { 10, 77, 0, 1, 10, 77, 1, 2, 0, 17, 0, 18 };
    em_csum_t c = { 0, 0 };
    em_csum_add(&c, ph, 12);
    assert_int_equal(frame[40] << 8 | frame[41], em_csum_fold(&c));
}

/* the template writes exactly what encode + csum_set write */
static void test_template_same_bytes(void **state)
{
    (void)state;
    static uint8_t other[EM_IPUDP_HDR_LEN];
    for (int hw = 0; hw < 4; hw++) {
        em_ipudp_template_t t;
        em_ipudp_template_init(&t, &path, (unsigned)hw);
        for (uint32_t plen = 0; plen < 1400; plen += 173) {
            for (uint32_t i = 0; i < plen; i++)
                frame[EM_IPUDP_HDR_LEN + i] = (uint8_t)(i * 31 + plen);
            assert_int_equal(
                em_ipudp_encode(&path, (uint16_t)(plen * 7), plen, (unsigned)hw, frame), 0);
            em_csum_piece_t pc[2] = { { frame + EM_IPUDP_HDR_LEN, plen / 3 },
                                      { frame + EM_IPUDP_HDR_LEN + plen / 3, plen - plen / 3 } };
            if (!(hw & EM_IPUDP_TX_UDP_CSUM_HW))
                em_ipudp_udp_csum_set(frame, pc, 2);
            assert_int_equal(
                em_ipudp_template_write(&t, (uint16_t)(plen * 7), plen, pc, 2, 1, other), 0);
            assert_memory_equal(other, frame, EM_IPUDP_HDR_LEN);
        }
    }
    em_ipudp_template_t t;
    em_ipudp_template_init(&t, &path, 0);
    assert_int_equal(em_ipudp_template_write(&t, 1, 10, NULL, 0, 0, other), 0);
    assert_int_equal(other[40] | other[41], 0); /* no checksum asked */
    assert_int_equal(em_ipudp_template_write(&t, 1, 65535, NULL, 0, 0, other), -1);
}

static em_ipudp_err_t dec(size_t n)
{
    em_ipudp_rx_t rx;
    return em_ipudp_decode(frame, n, path.dst_ip, EM_UDP_PORT, 0, &rx);
}

/* One refused frame: a good one (build(64, 1)) with one header field
 * changed, the IPv4 checksum put right again where the test is not about
 * it, and the reason decode must give. */
enum edit { SET8, SET16, ADD8, XOR8 };
static const struct refusal {
    const char *what;
    unsigned off; /* byte in the frame: Ethernet 0, IPv4 14, UDP 34, payload 42 */
    enum edit op;
    unsigned v; /* ADD8 0xff: one less */
    int fix_csum;
    em_ipudp_err_t want;
} REFUSALS[] = {
    { "ethertype not IPv4", 12, SET16, 0x88B5, 0, EM_IPUDP_NOT_IPV4 },
    { "IP version 6", 14, SET8, 0x65, 1, EM_IPUDP_VERSION },
    { "IP options (IHL 6)", 14, SET8, 0x46, 1, EM_IPUDP_OPTIONS },
    { "more fragments", 20, SET8, 0x20, 1, EM_IPUDP_FRAGMENT },
    { "DF and offset 8", 20, SET16, 0x4001, 1, EM_IPUDP_FRAGMENT },
    { "protocol TCP", 23, SET8, 6, 1, EM_IPUDP_NOT_UDP },
    { "IP length beyond the frame", 17, ADD8, 1, 1, EM_IPUDP_IP_LEN },
    { "IP length shorter than IP + UDP", 16, SET16, 27, 1, EM_IPUDP_IP_LEN },
    { "TTL changed, checksum not", 22, SET8, 63, 0, EM_IPUDP_IP_CSUM },
    { "UDP length one short", 39, ADD8, 0xff, 0, EM_IPUDP_UDP_LEN },
    { "another destination address", 33, SET8, 9, 1, EM_IPUDP_ADDR },
    { "another destination port", 37, ADD8, 1, 0, EM_IPUDP_PORT },
    { "payload bit flip", 42 + 10, XOR8, 0x40, 0, EM_IPUDP_UDP_CSUM },
};

static size_t build_refused(const struct refusal *r)
{
    size_t n = build(64, 1);
    uint8_t *b = frame + r->off;
    switch (r->op) {
    case SET8: b[0] = (uint8_t)r->v; break;
    case SET16:
        b[0] = (uint8_t)(r->v >> 8);
        b[1] = (uint8_t)r->v;
        break;
    case ADD8: b[0] = (uint8_t)(b[0] + r->v); break;
    case XOR8: b[0] ^= (uint8_t)r->v; break;
    }
    if (r->fix_csum)
        fix_ip_csum();
    return n;
}

static const struct refusal *refusal_of(em_ipudp_err_t want)
{
    for (size_t i = 0; i < sizeof REFUSALS / sizeof REFUSALS[0]; i++)
        if (REFUSALS[i].want == want)
            return &REFUSALS[i];
    fail();
    return NULL;
}

static void test_refusals(void **state)
{
    (void)state;
    em_ipudp_counters_t cnt;
    memset(&cnt, 0, sizeof cnt);

    size_t n = build(64, 1);
    assert_int_equal(dec(41), EM_IPUDP_SHORT);
    for (size_t i = 0; i < sizeof REFUSALS / sizeof REFUSALS[0]; i++) {
        n = build_refused(&REFUSALS[i]);
        if (dec(n) != REFUSALS[i].want)
            fail_msg("%s: decode gave %s, not %s", REFUSALS[i].what, em_ipudp_err_name(dec(n)),
                     em_ipudp_err_name(REFUSALS[i].want));
        em_ipudp_count(&cnt, REFUSALS[i].want);
    }
    /* a bad IP checksum passes when the NIC checked it */
    em_ipudp_rx_t rx;
    n = build_refused(refusal_of(EM_IPUDP_IP_CSUM));
    assert_int_equal(
        em_ipudp_decode(frame, n, path.dst_ip, EM_UDP_PORT, EM_IPUDP_RX_IP_CSUM_OK, &rx),
        EM_IPUDP_OK);
    /* the payload bit flip again, with no UDP checksum: accepted (RFC 768) */
    n = build_refused(refusal_of(EM_IPUDP_UDP_CSUM));
    frame[40] = frame[41] = 0;
    assert_int_equal(dec(n), EM_IPUDP_OK);
    assert_int_equal(cnt.refused[EM_IPUDP_NOT_IPV4], 1);
    assert_int_equal(cnt.refused[EM_IPUDP_FRAGMENT], 2);
    assert_int_equal(cnt.refused[EM_IPUDP_UDP_CSUM], 1);
    em_ipudp_count(&cnt, EM_IPUDP_OK);
    em_ipudp_count(&cnt, EM_IPUDP_NERR);
    assert_string_equal(em_ipudp_err_name(EM_IPUDP_FRAGMENT), "fragment");
    char s[16];
    em_ipv4_str(path.dst_ip, s, sizeof s);
    assert_string_equal(s, "10.77.1.2");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reference_ip_checksum),
        cmocka_unit_test(test_encode_layout),
        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_scattered_checksum),
        cmocka_unit_test(test_offload_pseudo_sum),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_template_same_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
