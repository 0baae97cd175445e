/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * em_pingpong -- request/reply ([dse-rudp]): every client rank 1..N-1 does -n
 * round trips (request of SIZE bytes, reply of SIZE bytes) with the server,
 * rank 0, which answers whoever asks.  Each client times every round trip;
 * rank 0 collects all samples and reports median and mean in us.
 * 2 ranks = pattern 1:1, 3 ranks = 2:1 (two clients share one server).
 */
#include "em_common.h"

#include <stdio.h>
#include <stdlib.h>

static const struct em_prog prog = EM_COUNTED_PROG(
    "pingpong", "request/reply: ranks 1..N-1 each do -n round trips with "
                "rank 0; median and mean us per round trip");

/* Rank 0 answers every client's round trips of this size. */
static void serve(struct em_bench *b, long total, int n)
{
    MPI_Status st;

    for (long i = 0; i < total; i++) {
        EM_CHECK(MPI_Recv(b->rbuf, n, MPI_BYTE, MPI_ANY_SOURCE, EM_TAG_DATA, MPI_COMM_WORLD, &st));
        EM_CHECK(MPI_Send(b->sbuf, n, MPI_BYTE, st.MPI_SOURCE, EM_TAG_DATA, MPI_COMM_WORLD));
    }
}

int main(int argc, char **argv)
{
    static const char *const metric[] = { "rtt_median", "rtt_mean" };
    static const char *const unit[] = { "us/rt", "us/rt" };
    struct em_bench b;
    const struct em_opts *o = &b.o;
    double *samples, *all = NULL;

    em_bench_begin(&b, &argc, &argv, &prog, NULL);
    if (o->count > (long)(1 << 30) / b.nranks)
        em_fail("-n %ld is too large", o->count);
    int clients = b.nranks - 1;
    samples = calloc((size_t)o->count, sizeof *samples);
    if (b.rank == 0)
        all = calloc((size_t)o->count * (size_t)b.nranks, sizeof *all);
    if (samples == NULL || (b.rank == 0 && all == NULL))
        em_fail("out of memory");
    em_bench_counted_header(&b, metric, unit, "server", "round trips per client");

    for (size_t k = 0; k < b.nsizes; k++) {
        size_t size = b.sizes[k];
        int n = (int)size;

        em_bench_verify_all(&b, size);
        EM_CHECK(MPI_Barrier(MPI_COMM_WORLD));

        if (b.rank == 0) {
            serve(&b, (o->count + o->count_warmup) * clients, n);
        } else {
            for (long i = 0; i < o->count_warmup + o->count; i++) {
                double t0 = MPI_Wtime();

                EM_CHECK(MPI_Send(b.sbuf, n, MPI_BYTE, 0, EM_TAG_DATA, MPI_COMM_WORLD));
                EM_CHECK(MPI_Recv(b.rbuf, n, MPI_BYTE, 0, EM_TAG_DATA, MPI_COMM_WORLD,
                                  MPI_STATUS_IGNORE));
                if (i >= o->count_warmup)
                    samples[i - o->count_warmup] = (MPI_Wtime() - t0) * 1e6;
            }
        }

        /* rank 0 contributes a dummy block, skipped below */
        EM_CHECK(MPI_Gather(samples, (int)o->count, MPI_DOUBLE, all, (int)o->count, MPI_DOUBLE, 0,
                            MPI_COMM_WORLD));
        if (b.rank == 0) {
            double *mine = all + o->count;
            size_t m = (size_t)o->count * (size_t)clients;
            double v[2];

            v[1] = em_mean(mine, m);
            v[0] = em_median(mine, m);
            em_print_row(size, 2, v);
        }
    }
    free(samples);
    free(all);
    em_bench_end(&b);
    return 0;
}
