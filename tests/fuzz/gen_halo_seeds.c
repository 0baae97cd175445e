/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Writes seed descriptions for fuzz_halo_desc into DIR: the seed's
 * 10-item two-way table, a one-way table, and a single large item.
 */
#include <stdio.h>

#include "halo/halo_table.h"
#include "seed_file.h"

static int write_seed(const char *dir, const char *name, const struct em_halo_sizes *t)
{
    unsigned char buf[EM_HALO_DESC_LEN(16, 16)];
    size_t len = em_halo_desc_encode(t, buf, sizeof(buf));

    if (len == 0) {
        fprintf(stderr, "%s: description does not encode\n", name);
        return 1;
    }
    return em_seed_write(dir, name, buf, len);
}

int main(int argc, char **argv)
{
    static const uint64_t ten[10] = { 64, 128, 256, 512, 1024, 1500, 3000, 4500, 7500, 9000 };
    static const uint64_t big[1] = { 0x7fffffff };
    struct em_halo_sizes two = { 10, 10, ten, ten }, one = { 10, 0, ten, NULL };
    struct em_halo_sizes large = { 1, 1, big, ten };

    if (argc != 2)
        return 2;
    return write_seed(argv[1], "halo_twoway.bin", &two) |
           write_seed(argv[1], "halo_oneway.bin", &one) |
           write_seed(argv[1], "halo_large.bin", &large);
}
