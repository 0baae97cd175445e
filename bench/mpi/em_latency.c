/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * em_latency -- ping-pong between ranks 0 and 1; one-way latency = RTT / 2.
 * Ranks beyond 1 only take part in the barriers.
 *
 * Iterations as osu_latency's (10000 up to 8 KiB, 1000 above; it warms up
 * with 100 and 10), but a large size's count is cut so that it moves about
 * -B bytes each way (default 256 MiB: all 1000 round trips up to 256 KiB,
 * 64 at 4 MiB, where a round trip takes milliseconds anyway), so a default
 * run costs about what one with 100 iterations did (make demo runs every
 * transport three times; 1000 uncut would make 4 MiB alone take seconds).
 * At 100 iterations one descheduling of a rank for a millisecond can move
 * a 16 KiB mean by tens of percent.
 */
#include "em_common.h"

#include <stdio.h>
#include <stdlib.h>

static const struct em_prog prog = {
    .prog = "em_latency",
    .bench = "latency",
    .summary = "ping-pong between ranks 0 and 1, one-way latency (RTT/2) in us",
    .optmask = EM_OPT_SIZES | EM_OPT_ITERS | EM_OPT_WARMUP | EM_OPT_BUDGET,
    .normal = { .min_size = 0,
                .max_size = 4u << 20,
                .iters_small = 10000,
                .iters_large = 1000,
                .warmup_small = 1000,
                .warmup_large = 10,
                .window = 1, /* one message per round trip, for the budget's cut */
                .budget = (size_t)256 << 20 },
    .quick = { .min_size = 0,
               .max_size = 1u << 20,
               .iters_small = 200,
               .iters_large = 20,
               .warmup_small = 20,
               .warmup_large = 2,
               .window = 1,
               .budget = (size_t)64 << 20 },
    .min_ranks = 2,
};

/* Rank 0's round: send, then take the reply. */
static void ping(struct em_bench *b, size_t size, void *ctx)
{
    (void)ctx;
    EM_CHECK(MPI_Send(b->sbuf, (int)size, MPI_BYTE, 1, EM_TAG_DATA, MPI_COMM_WORLD));
    EM_CHECK(
        MPI_Recv(b->rbuf, (int)size, MPI_BYTE, 1, EM_TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
}

/* Rank 1's round: take, then reply. */
static void pong(struct em_bench *b, size_t size, void *ctx)
{
    (void)ctx;
    EM_CHECK(
        MPI_Recv(b->rbuf, (int)size, MPI_BYTE, 0, EM_TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    EM_CHECK(MPI_Send(b->sbuf, (int)size, MPI_BYTE, 0, EM_TAG_DATA, MPI_COMM_WORLD));
}

int main(int argc, char **argv)
{
    static const char *const metric[] = { "latency" };
    static const char *const unit[] = { "us" };
    struct em_bench b;
    const struct em_opts *o = &b.o;

    em_bench_begin(&b, &argc, &argv, &prog, NULL);
    em_bench_header(&b, 1, metric, unit,
                    "# em_latency: %d ranks (0 <-> 1 measured), iterations %ld:%ld, "
                    "warm-up %ld:%ld, large above %zu B, large-size budget %zu B%s\n",
                    b.nranks, o->iters_small, o->iters_large, o->warmup_small, o->warmup_large,
                    EM_LARGE_THRESHOLD, o->budget, o->quick ? ", quick" : "");

    for (size_t k = 0; k < b.nsizes; k++) {
        size_t size = b.sizes[k];
        long iters = em_budget_iters(o, size);

        em_bench_verify_pair(&b, size);
        if (b.rank > 1)
            continue;
        double t = em_bench_time(&b, size, em_budget_warmup(o, size), iters, b.rank ? pong : ping,
                                 NULL);
        if (b.rank == 0) {
            double lat = t * 1e6 / (2.0 * (double)iters);
            em_print_row(size, 1, &lat);
        }
    }
    em_bench_end(&b);
    return 0;
}
