/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file check_pattern.h
 * The bytes em-check-mpi and em-check-fi send: every byte depends on the
 * message size, the iteration and the sending rank, so a message that
 * arrives in the wrong place (another size's buffer, a stale iteration,
 * the receiver's own data) differs from what the receiver expects, not only
 * a flipped bit.  Also the debug knob that corrupts one sent byte on
 * purpose (EM_CHECK_FLIP), so a test can prove that a wrong byte fails the
 * check.
 */
#ifndef EM_CHECK_PATTERN_H
#define EM_CHECK_PATTERN_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline uint32_t chk_seed(size_t size, uint64_t iter, int rank)
{
    uint64_t s = (uint64_t)size * 0x9E3779B97F4A7C15ull ^ (iter + 1) * 0xC2B2AE3D27D4EB4Full ^
                 (uint64_t)(rank + 1) * 0x165667B19E3779F9ull;
    s ^= s >> 29;
    return (uint32_t)(s ^ (s >> 32));
}

/* byte i of the message: a 32-bit LCG step per byte, its top byte */
static inline void chk_fill(unsigned char *b, size_t size, uint64_t iter, int rank)
{
    uint32_t v = chk_seed(size, iter, rank);
    for (size_t i = 0; i < size; i++) {
        v = v * 1664525u + 1013904223u;
        b[i] = (unsigned char)(v >> 24);
    }
}

/* the first wrong offset, or -1 when all @p size bytes are right; *want,
 * *got: the bytes there */
static inline long chk_verify(const unsigned char *b, size_t size, uint64_t iter, int rank,
                              unsigned *want, unsigned *got)
{
    uint32_t v = chk_seed(size, iter, rank);
    for (size_t i = 0; i < size; i++) {
        v = v * 1664525u + 1013904223u;
        if (b[i] != (unsigned char)(v >> 24)) {
            *want = (unsigned char)(v >> 24);
            *got = b[i];
            return (long)i;
        }
    }
    return -1;
}

/* EM_CHECK_FLIP=SIZE (debug, testing the check): the sender flips one bit
 * of byte SIZE/2 of the first message of that size after filling it, as a
 * link that corrupted it would; the receiver must report that byte and the
 * program exit non-zero.  0 when unset. */
static inline size_t chk_flip_size(void)
{
    const char *e = getenv("EM_CHECK_FLIP");
    return e && *e ? (size_t)strtoull(e, NULL, 0) : 0;
}

/* "8,64,4k,1M" or a single size; k, M suffixes (powers of 2).  Fills
 * @p out (at most @p max), returns the count, 0 on a bad list. */
static inline int chk_parse_sizes(const char *s, size_t *out, int max)
{
    int n = 0;
    while (*s && n < max) {
        char *end;
        unsigned long long v = strtoull(s, &end, 10);
        if (end == s)
            return 0;
        if (*end == 'k' || *end == 'K')
            v <<= 10, end++;
        else if (*end == 'm' || *end == 'M')
            v <<= 20, end++;
        if (v < 1 || v > (1ull << 30) || (*end && *end != ','))
            return 0;
        out[n++] = (size_t)v;
        s = *end ? end + 1 : end;
    }
    return *s ? 0 : n;
}

/* 8 B .. 4 MiB in steps of x8 (8, 64, 512, 4 KiB, 32 KiB, 256 KiB,
 * 2 MiB) and 4 MiB */
static inline int chk_default_sizes(size_t *out)
{
    int n = 0;
    for (size_t s = 8; s <= (2u << 20); s *= 8)
        out[n++] = s;
    out[n++] = 4u << 20;
    return n;
}

static int chk_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static inline double chk_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, chk_cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* iterations of the ping-pong at @p size: 200 small, fewer large (at
 * least 10), about 64 MiB per repeat */
static inline int chk_iters(size_t size, int asked)
{
    if (asked > 0)
        return asked;
    size_t n = (64u << 20) / (2 * size);
    return n > 200 ? 200 : n < 10 ? 10 : (int)n;
}

/* messages per window of the bandwidth test: 16, fewer so that one window
 * stays within 32 MiB */
static inline int chk_window(size_t size, int asked)
{
    int w = asked > 0 ? asked : 64;
    while (w > 1 && (size_t)w * size > (32u << 20))
        w /= 2;
    return w;
}

#endif
