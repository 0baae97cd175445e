/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Seed inputs for fuzz_ipudp: one flags byte, then a well-formed
 * Ethernet+IPv4+UDP frame (with and without a UDP checksum, padded).
 * Usage: gen_ipudp_seeds OUTDIR
 */
#include <stdio.h>
#include <string.h>

#include "link/ipudp.h"
#include "seed_file.h"

static int seed(const char *dir, const char *name, uint8_t flags, uint32_t plen, int csum,
                size_t pad_to)
{
    static uint8_t b[1 + EM_IPUDP_HDR_LEN + 2048];
    memset(b, 0, sizeof b);
    b[0] = flags;
    em_ipudp_path_t p = { .src_mac = { 2, 0xe7, 0, 0, 0, 1 },
                          .dst_mac = { 2, 0xe7, 0xfe, 0, 0, 1 },
                          .src_ip = 0x0A4D0001u,
                          .dst_ip = 0x0A4D0102u,
                          .src_port = EM_UDP_PORT,
                          .dst_port = EM_UDP_PORT };
    uint8_t *f = b + 1;
    em_ipudp_encode(&p, 1, plen, 0, f);
    for (uint32_t i = 0; i < plen; i++)
        f[EM_IPUDP_HDR_LEN + i] = (uint8_t)(i * 7 + 1);
    if (csum) {
        em_csum_piece_t pc = { f + EM_IPUDP_HDR_LEN, plen };
        em_ipudp_udp_csum_set(f, &pc, 1);
    }
    return em_seed_write_frame(dir, name, b, 1, EM_IPUDP_HDR_LEN + plen, pad_to);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gen_ipudp_seeds OUTDIR\n");
        return 2;
    }
    return seed(argv[1], "ipudp_csum.bin", 4, 301, 1, 0) |
           seed(argv[1], "ipudp_nocsum.bin", 0, 48, 0, 0) |
           seed(argv[1], "ipudp_padded.bin", 5, 3, 1, 60);
}
