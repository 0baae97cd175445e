/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * host_probe -- how far apart this machine's first two CPUs are: the round
 * trip of one cache line between two threads pinned to them (each waits
 * for the other's store, then stores), median of 5 rounds of 20,000.
 *
 * Why: on a VM with two vCPUs the latency of everything that crosses
 * shared memory (the memif cable, a DPDK ring, emd's queues) can be
 * bimodal from run to run, and the mode follows this round trip: short
 * when the host runs the two vCPUs on cores that share a cache, several
 * times longer when it does not (docs/benchmarks.md "Host placement").  tools/compare.py runs this before every benchmark
 * run and keeps the value beside the run's numbers (host_cl_rt_ns).
 *
 * Output: "cl_rt_ns N" (N an integer), or "cl_rt_ns unknown (reason)"
 * with exit 1 when fewer than two CPUs can be used.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define ROUND_TRIPS 20000
#define ROUNDS      5

static _Alignas(64) atomic_long flag;
static int cpu_b;

static int pin(int cpu)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    return pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}

static void *answer(void *arg)
{
    long base = *(long *)arg;
    (void)pin(cpu_b); /* unpinned, it still answers: the number is then only worse */
    for (long i = 0; i < ROUND_TRIPS; i++) {
        while (atomic_load_explicit(&flag, memory_order_acquire) != base + 2 * i + 1)
            ;
        atomic_store_explicit(&flag, base + 2 * i + 2, memory_order_release);
    }
    return NULL;
}

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(void)
{
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof allowed, &allowed) || CPU_COUNT(&allowed) < 2) {
        printf("cl_rt_ns unknown (fewer than two CPUs)\n");
        return 1;
    }
    int cpu_a = -1;
    for (int c = 0; c < CPU_SETSIZE && cpu_b <= 0; c++)
        if (CPU_ISSET(c, &allowed)) {
            if (cpu_a < 0)
                cpu_a = c;
            else
                cpu_b = c;
        }
    if (pin(cpu_a)) {
        printf("cl_rt_ns unknown (cannot pin to CPU %d)\n", cpu_a);
        return 1;
    }
    double rt[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        long base = atomic_load(&flag);
        pthread_t t;
        if (pthread_create(&t, NULL, answer, &base)) {
            printf("cl_rt_ns unknown (pthread_create failed)\n");
            return 1;
        }
        double t0 = now_ns();
        for (long i = 0; i < ROUND_TRIPS; i++) {
            atomic_store_explicit(&flag, base + 2 * i + 1, memory_order_release);
            while (atomic_load_explicit(&flag, memory_order_acquire) != base + 2 * i + 2)
                ;
        }
        rt[r] = (now_ns() - t0) / ROUND_TRIPS;
        pthread_join(t, NULL);
    }
    qsort(rt, ROUNDS, sizeof rt[0], cmp);
    printf("cl_rt_ns %.0f\n", rt[ROUNDS / 2]);
    return 0;
}
