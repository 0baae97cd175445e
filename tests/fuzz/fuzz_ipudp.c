/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz target: the UDP/IPv4 framing decoder (src/link/ipudp.h).  The first
 * byte chooses the receiver's flags (NIC-verified checksums) and whether it
 * checks the destination address; the rest is the frame.  Properties
 * beyond "no crash": a reason is always one of the enum; an accepted
 * frame's payload lies inside the frame and ends where the IP length says,
 * it is addressed to our port, is no fragment and has no options, and
 * re-encoding its addresses with em_ipudp_encode (and, when the frame had a
 * UDP checksum, em_ipudp_udp_csum_set) gives back a frame the decoder
 * accepts with the same payload, and the per-peer template writes the same
 * header bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "link/ipudp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MY_IP 0x0A4D0102u /* 10.77.1.2 */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned flags = data[0] & 3u;
    uint32_t my_ip = (data[0] & 4u) ? MY_IP : 0;
    const uint8_t *f = data + 1;
    size_t len = size - 1;
    em_ipudp_rx_t rx;
    em_ipudp_err_t e = em_ipudp_decode(f, len, my_ip, EM_UDP_PORT, flags, &rx);
    if ((unsigned)e >= EM_IPUDP_NERR)
        abort();
    if (e != EM_IPUDP_OK)
        return 0;
    if (rx.payload != f + EM_IPUDP_HDR_LEN || EM_IPUDP_HDR_LEN + (size_t)rx.payload_len > len)
        abort();
    if (rx.dst_port != EM_UDP_PORT || (my_ip && rx.dst_ip != my_ip))
        abort();
    if ((f[14] & 0xF) != 5 || ((f[20] << 8 | f[21]) & 0x3FFF) != 0)
        abort();
    /* re-encode and decode again: same addresses, same payload */
    static uint8_t buf[EM_IPUDP_HDR_LEN + 65536];
    em_ipudp_path_t p = {
        .src_ip = rx.src_ip, .dst_ip = rx.dst_ip, .src_port = rx.src_port, .dst_port = rx.dst_port
    };
    memcpy(p.src_mac, rx.src_mac, 6);
    memcpy(p.dst_mac, f, 6);
    if (em_ipudp_encode(&p, 7, rx.payload_len, 0, buf) != 0)
        abort();
    memcpy(buf + EM_IPUDP_HDR_LEN, rx.payload, rx.payload_len);
    int had_csum = f[40] || f[41];
    if (had_csum) {
        /* two pieces, split anywhere: the odd-offset path of the sum */
        uint32_t cut = rx.payload_len ? data[0] % (rx.payload_len + 1) : 0;
        em_csum_piece_t pc[2] = { { rx.payload, cut }, { rx.payload + cut, rx.payload_len - cut } };
        em_ipudp_udp_csum_set(buf, pc, 2);
    }
    /* the per-peer template writes the same header bytes */
    em_ipudp_template_t t;
    em_ipudp_template_init(&t, &p, 0);
    uint8_t th[EM_IPUDP_HDR_LEN];
    em_csum_piece_t whole = { rx.payload, rx.payload_len };
    if (em_ipudp_template_write(&t, 7, rx.payload_len, &whole, 1, had_csum, th) != 0 ||
        memcmp(th, buf, EM_IPUDP_HDR_LEN) != 0)
        abort();
    em_ipudp_rx_t rx2;
    if (em_ipudp_decode(buf, EM_IPUDP_HDR_LEN + rx.payload_len, my_ip, EM_UDP_PORT, 0, &rx2) !=
        EM_IPUDP_OK)
        abort();
    if (rx2.payload_len != rx.payload_len || rx2.src_ip != rx.src_ip ||
        rx2.src_port != rx.src_port || memcmp(rx2.payload, rx.payload, rx.payload_len) != 0)
        abort();
    return 0;
}
