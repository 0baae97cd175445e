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

static void test_refusals(void **state)
{
    (void)state;
    size_t n;
    em_ipudp_counters_t cnt;
    memset(&cnt, 0, sizeof cnt);

    n = build(64, 1);
    assert_int_equal(dec(41), EM_IPUDP_SHORT);
    frame[12] = 0x88;
    frame[13] = 0xB5;
    assert_int_equal(dec(n), EM_IPUDP_NOT_IPV4);
    em_ipudp_count(&cnt, EM_IPUDP_NOT_IPV4);
    n = build(64, 1);
    frame[14] = 0x65;
    fix_ip_csum();
    assert_int_equal(dec(n), EM_IPUDP_VERSION);
    n = build(64, 1);
    frame[14] = 0x46;
    fix_ip_csum();
    assert_int_equal(dec(n), EM_IPUDP_OPTIONS);
    n = build(64, 1);
    frame[20] = 0x20;
    fix_ip_csum(); /* MF */
    assert_int_equal(dec(n), EM_IPUDP_FRAGMENT);
    n = build(64, 1);
    frame[20] = 0x40;
    frame[21] = 0x01;
    fix_ip_csum(); /* DF + offset 8 */
    assert_int_equal(dec(n), EM_IPUDP_FRAGMENT);
    n = build(64, 1);
    frame[23] = 6;
    fix_ip_csum();
    assert_int_equal(dec(n), EM_IPUDP_NOT_UDP);
    n = build(64, 1);
    frame[17] = (uint8_t)(frame[17] + 1);
    fix_ip_csum(); /* beyond the frame */
    assert_int_equal(dec(n), EM_IPUDP_IP_LEN);
    n = build(64, 1);
    frame[16] = 0;
    frame[17] = 27;
    fix_ip_csum();
    assert_int_equal(dec(n), EM_IPUDP_IP_LEN);
    n = build(64, 1);
    frame[22] = 63; /* TTL changed, checksum not */
    assert_int_equal(dec(n), EM_IPUDP_IP_CSUM);
    em_ipudp_rx_t rx; /* unless the NIC checked it */
    assert_int_equal(
        em_ipudp_decode(frame, n, path.dst_ip, EM_UDP_PORT, EM_IPUDP_RX_IP_CSUM_OK, &rx),
        EM_IPUDP_OK);
    n = build(64, 1);
    frame[39] = (uint8_t)(frame[39] - 1);
    assert_int_equal(dec(n), EM_IPUDP_UDP_LEN);
    n = build(64, 1);
    frame[33] = 9;
    fix_ip_csum();
    assert_int_equal(dec(n), EM_IPUDP_ADDR);
    n = build(64, 1);
    frame[37] = (uint8_t)(frame[37] + 1);
    assert_int_equal(dec(n), EM_IPUDP_PORT);
    n = build(64, 1);
    frame[42 + 10] ^= 0x40; /* payload bit flip */
    assert_int_equal(dec(n), EM_IPUDP_UDP_CSUM);
    em_ipudp_count(&cnt, EM_IPUDP_UDP_CSUM);
    frame[40] = frame[41] = 0; /* no checksum: accepted (RFC 768) */
    assert_int_equal(dec(n), EM_IPUDP_OK);
    assert_int_equal(cnt.refused[EM_IPUDP_NOT_IPV4], 1);
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
