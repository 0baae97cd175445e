/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * em_bibw -- windowed bi-directional bandwidth between ranks 0 and 1.
 *
 * Each iteration both ranks post a window of non-blocking receives and a
 * window of non-blocking sends to each other and wait for all of them.
 * Reported: total bytes moved in both directions per second (10^6 B/s).
 */
#include "em_common.h"

#include <stdio.h>
#include <stdlib.h>

static const struct em_prog prog = {
    .prog = "em_bibw",
    .bench = "bibw",
    .summary = "windowed bi-directional bandwidth 0 <-> 1, MB/s (10^6 B/s, "
               "both directions summed)",
    .optmask = EM_WINDOWED_OPTS,
    .normal = EM_WINDOWED_NORMAL,
    .quick = EM_WINDOWED_QUICK,
    .min_ranks = 2,
};

int main(int argc, char **argv)
{
    static const char *const metric[] = { "bandwidth" };
    static const char *const unit[] = { "MB/s" };
    struct em_bench b;
    const struct em_opts *o = &b.o;

    em_bench_begin(&b, &argc, &argv, &prog, em_recv_area);
    size_t area = em_recv_area(o);
    MPI_Request *req = calloc(2 * (size_t)o->window, sizeof *req);
    if (req == NULL)
        em_fail("out of memory");
    em_bench_header(&b, 1, metric, unit,
                    "# em_bibw: %d ranks (0 <-> 1 measured), window %d each way, "
                    "iterations %ld:%ld, warm-up %ld:%ld, large-size budget %zu B%s\n",
                    b.nranks, o->window, o->iters_small, o->iters_large, o->warmup_small,
                    o->warmup_large, o->budget, o->quick ? ", quick" : "");

    for (size_t k = 0; k < b.nsizes; k++) {
        size_t size = b.sizes[k];
        long iters = em_bw_iters(o, size);
        long warm = em_bw_warmup(o, size);
        size_t slots = em_recv_slots(o, area, size);
        int peer = 1 - b.rank;
        double t0 = 0.0;

        em_bench_verify_pair(&b, size);
        if (b.rank > 1)
            continue;
        for (long i = 0; i < warm + iters; i++) {
            if (i == warm)
                t0 = MPI_Wtime();
            em_post_window_recvs(o, b.rbuf, slots, size, peer, req);
            for (int w = 0; w < o->window; w++)
                EM_CHECK(MPI_Isend(b.sbuf, (int)size, MPI_BYTE, peer, EM_TAG_DATA,
                                   MPI_COMM_WORLD, &req[o->window + w]));
            EM_CHECK(MPI_Waitall(2 * o->window, req, MPI_STATUSES_IGNORE));
        }
        double t1 = MPI_Wtime();
        if (b.rank == 0) {
            double mbs = 2.0 * (double)size * (double)o->window * (double)iters / (t1 - t0) / 1e6;
            em_print_row(size, 1, &mbs);
        }
    }
    free(req);
    em_bench_end(&b);
    return 0;
}
