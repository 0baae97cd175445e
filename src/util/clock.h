/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file clock.h
 * The one clock of ethermpi's run-time code: CLOCK_MONOTONIC in
 * nanoseconds.  The protocol core never reads a clock (its `now` is passed
 * in); the layers that drive it (engine, daemon, links, benchmarks) read it
 * here.  Header-only, no state: safe from any thread.
 */
#ifndef EM_UTIL_CLOCK_H
#define EM_UTIL_CLOCK_H

#include <stdint.h>
#include <time.h>

/** Monotonic time in nanoseconds (arbitrary origin, never goes back). */
static inline uint64_t em_clock_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

#endif
