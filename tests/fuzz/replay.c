/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A driver for the fuzz targets without libFuzzer (gcc builds, the plain
 * test suite): runs the target on every file given on the command line,
 * then on N pseudo-random inputs (seeded, reproducible) built by mutating
 * those files, so the parsers are exercised in every build, not only in
 * the clang fuzz build.
 * Usage: fuzz_X_replay [-n N] [-s SEED] FILE...
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/loss.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static em_loss_t rng; /* only its stream is used (the seeded xorshift64) */
static uint64_t next(void) { return em_loss_next(&rng); }

int main(int argc, char **argv)
{
    long n = 20000;
    em_loss_init(&rng, 0, 88172645463325252ull);
    int a = 1;
    for (; a < argc && argv[a][0] == '-'; a += 2) {
        if (a + 1 >= argc)
            return 2;
        if (!strcmp(argv[a], "-n"))
            n = atol(argv[a + 1]);
        else if (!strcmp(argv[a], "-s"))
            em_loss_init(&rng, 0, strtoull(argv[a + 1], NULL, 0) | 1);
        else
            return 2;
    }
    static uint8_t seeds[64][2048];
    size_t seedlen[64];
    int ns = 0;
    for (; a < argc && ns < 64; a++) {
        FILE *f = fopen(argv[a], "rb");
        if (!f) {
            perror(argv[a]);
            return 1;
        }
        seedlen[ns] = fread(seeds[ns], 1, sizeof seeds[ns], f);
        fclose(f);
        LLVMFuzzerTestOneInput(seeds[ns], seedlen[ns]);
        ns++;
    }
    static uint8_t buf[2048];
    for (long i = 0; i < n; i++) {
        size_t len;
        if (ns && (next() & 3)) {
            int s = (int)(next() % (uint64_t)ns);
            len = seedlen[s];
            memcpy(buf, seeds[s], len);
            for (int m = (int)(next() % 8); m >= 0 && len; m--)
                buf[next() % len] ^= (uint8_t)(1u << (next() % 8));
            if ((next() & 7) == 0 && len)
                len = next() % len;
        } else {
            len = next() % sizeof buf;
            for (size_t k = 0; k < len; k++)
                buf[k] = (uint8_t)next();
        }
        LLVMFuzzerTestOneInput(buf, len);
    }
    printf("ran %d seed files and %ld generated inputs\n", ns, n);
    return 0;
}
