/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * em_bw -- windowed uni-directional bandwidth, rank 0 -> rank 1.
 *
 * Each iteration rank 0 starts a window of non-blocking sends, rank 1 a
 * window of non-blocking receives; after both complete rank 1 returns a
 * zero-byte acknowledgement.  MB/s = 10^6 bytes per second.
 */
#include "em_common.h"

#include <stdio.h>
#include <stdlib.h>

static const struct em_prog prog = {
    .prog = "em_bw",
    .bench = "bw",
    .summary = "windowed uni-directional bandwidth rank 0 -> 1, MB/s (10^6 B/s)",
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
    MPI_Request *req = calloc((size_t)o->window, sizeof *req);
    if (req == NULL)
        em_fail("out of memory");
    em_bench_header(&b, 1, metric, unit,
                    "# em_bw: %d ranks (0 -> 1 measured), window %d, iterations %ld:%ld, "
                    "warm-up %ld:%ld, large-size budget %zu B%s\n", b.nranks, o->window,
                    o->iters_small, o->iters_large, o->warmup_small, o->warmup_large,
                    o->budget, o->quick ? ", quick" : "");

    for (size_t k = 0; k < b.nsizes; k++) {
        size_t size = b.sizes[k];
        long iters = em_bw_iters(o, size);
        long warm = em_bw_warmup(o, size);
        size_t slots = em_recv_slots(o, area, size);
        double t0 = 0.0;

        em_bench_verify_pair(&b, size);
        if (b.rank == 0) {
            for (long i = 0; i < warm + iters; i++) {
                if (i == warm)
                    t0 = MPI_Wtime();
                for (int w = 0; w < o->window; w++)
                    EM_CHECK(MPI_Isend(b.sbuf, (int)size, MPI_BYTE, 1, EM_TAG_DATA,
                                       MPI_COMM_WORLD, &req[w]));
                EM_CHECK(MPI_Waitall(o->window, req, MPI_STATUSES_IGNORE));
                EM_CHECK(MPI_Recv(NULL, 0, MPI_BYTE, 1, EM_TAG_ACK, MPI_COMM_WORLD,
                                  MPI_STATUS_IGNORE));
            }
            double mbs = (double)size * (double)o->window * (double)iters /
                         (MPI_Wtime() - t0) / 1e6;
            em_print_row(size, 1, &mbs);
        } else if (b.rank == 1) {
            for (long i = 0; i < warm + iters; i++) {
                em_post_window_recvs(o, b.rbuf, slots, size, 0, req);
                EM_CHECK(MPI_Waitall(o->window, req, MPI_STATUSES_IGNORE));
                EM_CHECK(MPI_Send(NULL, 0, MPI_BYTE, 0, EM_TAG_ACK, MPI_COMM_WORLD));
            }
        }
    }
    free(req);
    em_bench_end(&b);
    return 0;
}
