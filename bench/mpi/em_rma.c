/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * em_rma -- one-sided MPI from rank 0 to rank 1, passive target
 * (MPI_Win_lock_all on a window over rank 1's receive buffer): MPI_Put and
 * MPI_Get latency (one operation and its MPI_Win_flush), MPI_Put
 * bandwidth (a window of puts to the same place, then one flush), and the
 * latency of the two remote atomics osc/rdma builds its locks from:
 * MPI_Fetch_and_op (int64 MPI_SUM) and MPI_Compare_and_swap (int64), each
 * with its flush.  The atomics move 8 bytes whatever the row's size: their
 * columns repeat the same measurement at every size.  Rank 1
 * and any others wait in a barrier meanwhile, which drives their progress
 * (what an MPI over a manual-progress network needs to answer a get).
 * Written to measure what a provider's FI_RMA buys an MPI over its active
 * messages (docs/ofi.md "One-sided MPI"), and what the BTLs' remote atomics
 * cost (docs/design.md "One-sided MPI").
 */
#include "em_common.h"

#include <stdio.h>
#include <stdlib.h>

static const struct em_prog prog = {
    .prog = "em_rma",
    .bench = "rma",
    .summary = "MPI_Put / MPI_Get latency (+ flush, us), MPI_Put bandwidth (window, MB/s), "
               "MPI_Fetch_and_op / MPI_Compare_and_swap latency (+ flush, us), rank 0 to 1, "
               "passive target",
    .optmask = EM_OPT_SIZES | EM_OPT_ITERS | EM_OPT_WARMUP | EM_OPT_WINDOW,
    .normal = { .min_size = 1,
                .max_size = 4u << 20,
                .iters_small = 2000,
                .iters_large = 50,
                .warmup_small = 100,
                .warmup_large = 5,
                .window = 64 },
    .quick = { .min_size = 1,
               .max_size = 1u << 20,
               .iters_small = 100,
               .iters_large = 10,
               .warmup_small = 10,
               .warmup_large = 2,
               .window = 16 },
    .min_ranks = 2,
};

static MPI_Win win;

static void put_round(struct em_bench *b, size_t size, void *ctx)
{
    (void)ctx;
    EM_CHECK(MPI_Put(b->sbuf, (int)size, MPI_BYTE, 1, 0, (int)size, MPI_BYTE, win));
    EM_CHECK(MPI_Win_flush(1, win));
}

static void get_round(struct em_bench *b, size_t size, void *ctx)
{
    (void)ctx;
    EM_CHECK(MPI_Get(b->sbuf, (int)size, MPI_BYTE, 1, 0, (int)size, MPI_BYTE, win));
    EM_CHECK(MPI_Win_flush(1, win));
}

static int64_t amo_one = 1, amo_old, amo_cmp;

static void fop_round(struct em_bench *b, size_t size, void *ctx)
{
    (void)b, (void)size, (void)ctx;
    EM_CHECK(MPI_Fetch_and_op(&amo_one, &amo_old, MPI_INT64_T, 1, 0, MPI_SUM, win));
    EM_CHECK(MPI_Win_flush(1, win));
}

static void cas_round(struct em_bench *b, size_t size, void *ctx)
{
    (void)b, (void)size, (void)ctx;
    /* compares with the last value seen: about every other one swaps */
    EM_CHECK(MPI_Compare_and_swap(&amo_one, &amo_cmp, &amo_old, MPI_INT64_T, 1, 0, win));
    EM_CHECK(MPI_Win_flush(1, win));
    amo_cmp = amo_old;
}

static void put_window_round(struct em_bench *b, size_t size, void *ctx)
{
    (void)ctx;
    for (long i = 0; i < b->o.window; i++)
        EM_CHECK(MPI_Put(b->sbuf, (int)size, MPI_BYTE, 1, 0, (int)size, MPI_BYTE, win));
    EM_CHECK(MPI_Win_flush(1, win));
}

int main(int argc, char **argv)
{
    static const char *const metric[] = { "put", "get", "put_bw", "fop", "cas" };
    static const char *const unit[] = { "us", "us", "MB/s", "us", "us" };
    struct em_bench b;
    const struct em_opts *o = &b.o;

    em_bench_begin(&b, &argc, &argv, &prog, NULL);
    EM_CHECK(MPI_Win_create(b.rbuf, (MPI_Aint)o->max_size, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    EM_CHECK(MPI_Win_lock_all(0, win));
    em_bench_header(&b, 5, metric, unit,
                    "# em_rma: %d ranks (0 -> 1 measured), iterations %ld:%ld, warm-up %ld:%ld, "
                    "window %ld, large above %zu B%s\n",
                    b.nranks, o->iters_small, o->iters_large, o->warmup_small, o->warmup_large,
                    (long)o->window, EM_LARGE_THRESHOLD, o->quick ? ", quick" : "");
    /* the first size's rows took several times the next one's (memif,
     * MPICH: 5.5 against 1.2 us, with or without FI_RMA) after its own
     * warm-up: a start-up cost of the job, not of that size; paid here */
    if (b.rank == 0)
        (void)em_bench_time(&b, b.sizes[0], 0, 2 * em_iters(o, b.sizes[0]), put_round, NULL);
    for (size_t k = 0; k < b.nsizes; k++) {
        size_t size = b.sizes[k];
        long iters = em_iters(o, size), warm = em_warmup(o, size);
        if (b.rank == 0) {
            double v[5];
            v[0] = em_bench_time(&b, size, warm, iters, put_round, NULL) * 1e6 / (double)iters;
            v[1] = em_bench_time(&b, size, warm, iters, get_round, NULL) * 1e6 / (double)iters;
            double t = em_bench_time(&b, size, warm, iters, put_window_round, NULL);
            v[2] = (double)size * (double)o->window * (double)iters / t / 1e6;
            v[3] = em_bench_time(&b, size, warm, iters, fop_round, NULL) * 1e6 / (double)iters;
            v[4] = em_bench_time(&b, size, warm, iters, cas_round, NULL) * 1e6 / (double)iters;
            em_print_row(size, 5, v);
        }
        EM_CHECK(MPI_Barrier(MPI_COMM_WORLD)); /* the target progresses here */
    }
    EM_CHECK(MPI_Win_unlock_all(win));
    EM_CHECK(MPI_Win_free(&win));
    em_bench_end(&b);
    return 0;
}
