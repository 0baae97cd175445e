/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * em_allreduce / em_alltoall -- one collective over every rank, latency per
 * call (as osu_allreduce / osu_alltoall measure it): for each size, a
 * checked call first, then warm-up and timed calls; the table has the mean
 * over the ranks of each rank's average time per call, and the slowest
 * rank's.  Built twice from this file (meson: -DEM_COLL_ALLTOALL for the
 * second).  Sizes are bytes per rank: the reduced vector (floats, summed)
 * for allreduce, each rank's block to every other rank for alltoall.
 *
 * The check: allreduce sums float(rank + 1 + i % 7) over the ranks and
 * compares every element with its exact sum (small integers: no rounding);
 * alltoall sends each destination a block filled from (source,
 * destination) and checks every block received.  -C corrupts one value of
 * the check on rank 0, which must then fail with a content mismatch.
 */
#include "em_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef EM_COLL_ALLTOALL
#define EM_COLL_NAME "alltoall"
#define EM_COLL_WHAT "MPI_Alltoall, each rank a block of size bytes to every rank"
#else
#define EM_COLL_NAME "allreduce"
#define EM_COLL_WHAT "MPI_Allreduce of size bytes of floats (sum)"
#endif

static const struct em_prog prog = {
    .prog = "em_" EM_COLL_NAME,
    .bench = EM_COLL_NAME,
    .summary = EM_COLL_WHAT ", latency per call in us (mean over the ranks, slowest rank)",
    .optmask = EM_OPT_SIZES | EM_OPT_ITERS | EM_OPT_WARMUP,
    .normal = { .min_size = 4,
                .max_size = 1u << 20,
                .iters_small = 1000,
                .iters_large = 100,
                .warmup_small = 100,
                .warmup_large = 10 },
    .quick = { .min_size = 4,
               .max_size = 64u << 10,
               .iters_small = 50,
               .iters_large = 10,
               .warmup_small = 5,
               .warmup_large = 2 },
    .min_ranks = 2,
};

struct coll {
    struct em_bench b;
    unsigned char *s, *r; /* send and receive areas (nranks blocks for alltoall) */
};

static void call(struct em_bench *b, size_t size, void *ctx)
{
    struct coll *c = ctx;
    (void)b;
#ifdef EM_COLL_ALLTOALL
    EM_CHECK(MPI_Alltoall(c->s, (int)size, MPI_BYTE, c->r, (int)size, MPI_BYTE, MPI_COMM_WORLD));
#else
    EM_CHECK(
        MPI_Allreduce(c->s, c->r, (int)(size / sizeof(float)), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
#endif
}

#ifdef EM_COLL_ALLTOALL
/* byte k of the block from rank src to rank dst */
static unsigned char block_byte(int src, int dst, size_t k)
{
    return (unsigned char)(k * 131u + (unsigned)src * 17u + (unsigned)dst * 5u + 1u);
}
#endif

/* one checked call of @p size; exits with a content mismatch on error */
static void check(struct coll *c, size_t size)
{
    int me = c->b.rank, n = c->b.nranks;
    size_t bad = 0, at = 0;
#ifdef EM_COLL_ALLTOALL
    for (int d = 0; d < n; d++)
        for (size_t k = 0; k < size; k++)
            c->s[(size_t)d * size + k] = block_byte(me, d, k);
    memset(c->r, 0xEE, (size_t)n * size);
    call(&c->b, size, c);
    if (c->b.o.corrupt && me == 0 && size)
        c->r[size / 2] ^= 0x40;
    for (int src = 0; src < n && !bad; src++)
        for (size_t k = 0; k < size; k++)
            if (c->r[(size_t)src * size + k] != block_byte(src, me, k)) {
                bad = 1, at = (size_t)src * size + k;
                break;
            }
#else
    float *s = (float *)(void *)c->s, *r = (float *)(void *)c->r;
    size_t count = size / sizeof(float);
    for (size_t i = 0; i < count; i++)
        s[i] = (float)(me + 1 + (int)(i % 7));
    memset(r, 0, size);
    call(&c->b, size, c);
    if (c->b.o.corrupt && me == 0 && count)
        r[count / 2] += 1.0f;
    for (size_t i = 0; i < count; i++) {
        /* sum over ranks of (rank + 1 + i % 7): exact in float */
        float want = (float)(n * (n + 1) / 2 + n * (int)(i % 7));
        if (r[i] != want) {
            bad = 1, at = i;
            break;
        }
    }
#endif
    if (bad) {
        fprintf(stderr, "%s: rank %d: content mismatch at %zu bytes (element %zu)\n", prog.prog, me,
                size, at);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
}

static size_t rbuf_bytes(const struct em_opts *o)
{
    (void)o;
    return 0; /* the areas are allocated in main (nranks blocks) */
}

int main(int argc, char **argv)
{
    static const char *const metric[] = { "latency", "max_latency" };
    static const char *const unit[] = { "us", "us" };
    struct coll c;
    const struct em_opts *o = &c.b.o;

    em_bench_begin(&c.b, &argc, &argv, &prog, rbuf_bytes);
#ifdef EM_COLL_ALLTOALL
    size_t area = (size_t)c.b.nranks * o->max_size;
#else
    size_t area = o->max_size;
#endif
    c.s = malloc(area + 1);
    c.r = malloc(area + 1);
    if (!c.s || !c.r) {
        fprintf(stderr, "%s: out of memory for %zu bytes\n", prog.prog, area);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    memset(c.s, 1, area + 1);
    memset(c.r, 0, area + 1);
    em_bench_header(&c.b, 2, metric, unit,
                    "# em_%s: %d ranks, %s; iterations %ld:%ld, warm-up %ld:%ld, large above "
                    "%zu B%s\n",
                    EM_COLL_NAME, c.b.nranks, EM_COLL_WHAT, o->iters_small, o->iters_large,
                    o->warmup_small, o->warmup_large, EM_LARGE_THRESHOLD,
                    o->quick ? ", quick" : "");

    for (size_t k = 0; k < c.b.nsizes; k++) {
        size_t size = c.b.sizes[k];
#ifndef EM_COLL_ALLTOALL
        if (size < sizeof(float) || size % sizeof(float))
            continue; /* a vector of whole floats */
#endif
        check(&c, size);
        EM_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        long iters = em_iters(o, size);
        double t = em_bench_time(&c.b, size, em_warmup(o, size), iters, call, &c);
        double per = t * 1e6 / (double)iters, sum = 0, max = 0;
        EM_CHECK(MPI_Reduce(&per, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD));
        EM_CHECK(MPI_Reduce(&per, &max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD));
        if (c.b.rank == 0) {
            double v[2] = { sum / c.b.nranks, max };
            em_print_row(size, 2, v);
        }
    }
    free(c.s);
    free(c.r);
    em_bench_end(&c.b);
    return 0;
}
