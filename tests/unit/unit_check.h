/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file unit_check.h
 * What the stand-alone unit tests (those without cmocka: the ones that run
 * in namespaces they create, fork, or need root) share: a CHECK() that
 * counts and reports a failure and carries on, so one run shows every
 * broken case, a monotonic clock in seconds, and a look for a line in a
 * file (a daemon's or a child's log).  Include once per test program (it
 * defines the failure counter); tests/unit/emd_harness.h includes it.
 */
#ifndef EM_TESTS_UNIT_CHECK_H
#define EM_TESTS_UNIT_CHECK_H

#include <stdio.h>
#include <string.h>
#include <time.h>

/** Failed CHECKs so far: main() returns non-zero when there were any. */
static int failures;

/** Report (file:line, the failed expression and the printf-style message)
 *  and count a failure. */
#define CHECK(x, ...)                                                                              \
    do {                                                                                           \
        if (!(x)) {                                                                                \
            failures++;                                                                            \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #x);                           \
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

/** Does one line of the file @p path hold @p a (and @p b, unless NULL)? */
static inline int file_has(const char *path, const char *a, const char *b)
{
    FILE *f = fopen(path, "r");
    char line[2048];
    int found = 0;
    while (f && !found && fgets(line, sizeof line, f))
        found = strstr(line, a) && (!b || strstr(line, b));
    if (f)
        fclose(f);
    return found;
}

#endif
