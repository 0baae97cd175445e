/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The one file-writing step of every seed generator (gen_*_seeds.c): a
 * seed is DIR/NAME holding exactly the bytes given.  Header-only, used by
 * single-file generator programs; not thread-safe (no need).
 */
#ifndef EM_FUZZ_SEED_FILE_H
#define EM_FUZZ_SEED_FILE_H

#include <stddef.h>
#include <stdio.h>

/** Write @p n bytes at @p p to DIR/NAME (created or truncated).
 *  @return 0 on success; 1 when the path does not fit, the file cannot be
 *  opened, or the write or close fails (the reason printed with perror). */
static inline int em_seed_write(const char *dir, const char *name, const void *p, size_t n)
{
    char path[4096];
    int len = snprintf(path, sizeof path, "%s/%s", dir, name);
    if (len < 0 || (size_t)len >= sizeof path) {
        fprintf(stderr, "seed path too long: %s/%s\n", dir, name);
        return 1;
    }
    FILE *f = fopen(path, "wb");
    if (!f) {
        perror(path);
        return 1;
    }
    int bad = fwrite(p, 1, n, f) != n;
    if (fclose(f) != 0)
        bad = 1;
    if (bad)
        perror(path);
    return bad;
}

/** Write a seed that is @p prefix bytes of fuzzer input (receiver
 *  settings, flags) followed by a frame of @p frame_len bytes, padded with
 *  the zeros already in @p b to at least @p min_frame bytes the way a short
 *  Ethernet frame arrives.  @return as em_seed_write. */
static inline int em_seed_write_frame(const char *dir, const char *name, const void *b,
                                      size_t prefix, size_t frame_len, size_t min_frame)
{
    if (frame_len < min_frame)
        frame_len = min_frame;
    return em_seed_write(dir, name, b, prefix + frame_len);
}

#endif
