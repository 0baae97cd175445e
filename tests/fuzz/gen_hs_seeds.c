/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Seed inputs for fuzz_hs (its header says what a record is): a stranger's
 * INIT then its CONFIRM (op bit 0: with the cookie it was given), the same
 * after the cookie aged, and answers to the table's own contact of peer 1
 * (the table's nonce and index 0 are fixed in the target).
 * Usage: gen_hs_seeds OUTDIR
 */
#include <string.h>

#include "proto/hs_wire.h"
#include "seed_file.h"

#define REC (2 + EM_HS_LEN)

static size_t rec(uint8_t *b, size_t off, uint8_t op, uint8_t addr, const em_hs_t *h)
{
    b[off] = op;
    b[off + 1] = addr;
    em_hs_t named = *h; /* the reply address the record names */
    named.addr_len = 1;
    named.addr[0] = addr;
    em_hs_encode(&named, b + off + 2);
    return off + REC;
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    static uint8_t b[16 * REC];
    const uint64_t table_nonce = 0x5eed5eed5eed5eedull;
    em_hs_t init = { .type = EM_HS_INIT,
                     .src_ep = 7,
                     .dst_ep = 7,
                     .src_nonce = 0x77,
                     .dst_nonce = table_nonce,
                     .src_index = 4,
                     .dst_index = EM_HS_NO_INDEX,
                     .isn = 9,
                     .token = 0xabc };
    size_t n = rec(b, 0, 0, 9, &init);
    n = rec(b, n, 1, 9, &init); /* its CONFIRM */
    int bad = em_seed_write(argv[1], "hs_stranger.bin", b, n);
    n = rec(b, 0, 0, 9, &init);
    n = rec(b, n, 3, 9, &init); /* CONFIRM after 1 s... */
    n = rec(b, n, 7, 9, &init); /* ... and 2 s, with polls */
    bad |= em_seed_write(argv[1], "hs_aged.bin", b, n);
    /* peer 1 (nonce 0x1111) answers the table's INIT to index 0 */
    em_hs_t ch = { .type = EM_HS_CHALLENGE,
                   .src_ep = 7,
                   .dst_ep = 7,
                   .src_nonce = 0x1111,
                   .dst_nonce = table_nonce,
                   .src_index = EM_HS_NO_INDEX,
                   .dst_index = 0,
                   .cookie_ms = 1000,
                   .cookie = 0x5555 };
    em_hs_t acc = { .type = EM_HS_ACCEPT,
                    .src_ep = 7,
                    .dst_ep = 7,
                    .src_nonce = 0x1111,
                    .dst_nonce = table_nonce,
                    .src_index = 3,
                    .dst_index = 0,
                    .isn = 5,
                    .token = 0x999 };
    n = rec(b, 0, 0, 1, &ch);
    n = rec(b, n, 4, 1, &acc);
    em_hs_t restart = init;
    restart.src_nonce = 0x2222; /* peer 1 again, another incarnation */
    n = rec(b, n, 0, 1, &restart);
    n = rec(b, n, 1, 1, &restart);
    bad |= em_seed_write(argv[1], "hs_answers.bin", b, n);
    return bad;
}
