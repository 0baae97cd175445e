/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Writes seed scripts for fuzz_order into DIR: messages in order, two
 * links interleaved (early ones kept), and a script with raw messages and
 * a start number about to wrap.
 */
#include <stdio.h>
#include <string.h>

#include "seed_file.h"

int main(int argc, char **argv)
{
    unsigned char inorder[4 + 100], mixed[4 + 100], raw[64];
    if (argc != 2)
        return 2;
    memset(inorder, 0, sizeof inorder); /* start 0, always the next message */
    memset(mixed, 0, 4);
    for (size_t i = 4; i < sizeof mixed; i++) /* 1, 2, 0, 1, 2, 0, ...: ahead, ahead, turn */
        mixed[i] = (unsigned char)((i % 3 + 1) % 3);
    size_t n = 0;
    raw[n++] = 0xff;
    raw[n++] = 0xff;
    raw[n++] = 0xff;
    raw[n++] = 0xfe; /* start 2^32 - 2 */
    raw[n++] = 0x01; /* message 1 (kept) */
    raw[n++] = 0xc6; /* raw, 6 bytes: the turn's number + 2 bytes */
    raw[n++] = 0xff;
    raw[n++] = 0xff;
    raw[n++] = 0xff;
    raw[n++] = 0xfe;
    raw[n++] = 'h';
    raw[n++] = 'i';
    raw[n++] = 0xc2;
    raw[n++] = 0x00;
    raw[n++] = 0x01; /* raw, too short */
    raw[n++] = 0x00;
    raw[n++] = 0x00;
    raw[n++] = 0x00; /* the sender's next ones */
    return em_seed_write(argv[1], "order_inorder.bin", inorder, sizeof inorder) |
           em_seed_write(argv[1], "order_mixed.bin", mixed, sizeof mixed) |
           em_seed_write(argv[1], "order_raw.bin", raw, n);
}
