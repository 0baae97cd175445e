/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file unit_check.h
 * What the stand-alone unit tests (those without cmocka: the ones that run
 * in namespaces they create, fork, or need root) share: a CHECK() that
 * counts and reports a failure and carries on, so one run shows every
 * broken case, and a monotonic clock in seconds.  Include once per test
 * program (it defines the failure counter).
 */
#ifndef EM_TESTS_UNIT_CHECK_H
#define EM_TESTS_UNIT_CHECK_H

#include <stdio.h>
#include <time.h>

/** Failed CHECKs so far: main() returns non-zero when there were any. */
static int failures;

/** Report (file:line and the printf-style message) and count a failure. */
#define CHECK(x, ...)                                                                              \
    do {                                                                                           \
        if (!(x)) {                                                                                \
            failures++;                                                                            \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
        }                                                                                          \
    } while (0)

/** CLOCK_MONOTONIC in seconds. */
static inline double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

#endif
