/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Seed inputs for fuzz_bcast_decode: 4 bytes of receiver expectations
 * (members, vector length) followed by a well-formed frame.
 * Usage: gen_bcast_seeds OUTDIR
 */
#include <stdio.h>
#include <string.h>

#include "bcast/bcast_wire.h"
#include "seed_file.h"

static int seed(const char *dir, const char *name, uint16_t count, uint32_t offset, size_t pad_to)
{
    uint8_t b[4 + 2048];
    memset(b, 0, sizeof b);
    b[0] = 4; /* 4 members */
    b[1] = 0;
    b[2] = 0x10;
    b[3] = 0; /* vector of 4096 */
    em_bc_hdr_t h = { .type = EM_BC_T_F64,
                      .key = 0xC0FFEEu,
                      .channel = 3,
                      .sender = 1,
                      .seq = 77,
                      .offset = offset,
                      .count = count };
    em_bc_encode_hdr(&h, b + 4);
    for (uint16_t i = 0; i < count; i++)
        em_bc_put_f64(b + 4 + EM_BC_HDR_LEN + 8u * i, 0.5 * i - 3);
    return em_seed_write_frame(dir, name, b, 4, EM_BC_HDR_LEN + 8u * count, pad_to);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gen_bcast_seeds OUTDIR\n");
        return 2;
    }
    return seed(argv[1], "bcast_one.bin", 1, 4095, 0) |
           seed(argv[1], "bcast_padded.bin", 1, 0, EM_BC_MIN_FRAME) |
           seed(argv[1], "bcast_many.bin", 184, 100, 0);
}
