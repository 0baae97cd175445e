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
    .optmask = EM_OPT_SIZES | EM_OPT_ITERS | EM_OPT_WARMUP | EM_OPT_WINDOW |
               EM_OPT_BUDGET,
    .normal = { .min_size = 1, .max_size = 4u << 20,
                .iters_small = 100, .iters_large = 20,
                .warmup_small = 10, .warmup_large = 2,
                .window = 64, .budget = (size_t)128 << 20 },
    .quick = { .min_size = 1, .max_size = 256u << 10,
               .iters_small = 10, .iters_large = 4,
               .warmup_small = 2, .warmup_large = 1,
               .window = 64, .budget = (size_t)16 << 20 },
    .min_ranks = 2,
};

int main(int argc, char **argv)
{
    int rank, nranks;
    struct em_opts o = em_setup(&argc, &argv, &prog, &rank, &nranks);
    size_t sizes[64];
    size_t nsizes = em_sizes(&o, sizes, 64);
    size_t area;
    unsigned char *sbuf, *rbuf;
    MPI_Request *req;

    area = em_recv_area(&o);
    sbuf = em_alloc(o.max_size + 1);
    rbuf = em_alloc(area + 1);
    req = calloc((size_t)o.window, sizeof *req);
    if (req == NULL)
        em_fail("out of memory");

    if (rank == 0) {
        static const char *const metric[] = { "bandwidth" };
        static const char *const unit[] = { "MB/s" };

        printf("# em_bw: %d ranks (0 -> 1 measured), window %d, iterations "
               "%ld:%ld, warm-up %ld:%ld, large-size budget %zu B%s\n",
               nranks, o.window, o.iters_small, o.iters_large, o.warmup_small,
               o.warmup_large, o.budget, o.quick ? ", quick" : "");
        em_print_header(prog.bench, 1, metric, unit);
    }

    for (size_t k = 0; k < nsizes; k++) {
        size_t size = sizes[k];
        int n = (int)size;
        long iters = em_bw_iters(&o, size);
        long warm = em_bw_warmup(&o, size);
        size_t slots = size ? area / size : (size_t)o.window;
        double t0 = 0.0, t1;

        if (slots > (size_t)o.window)
            slots = (size_t)o.window;
        if (rank <= 1)
            em_verify_exchange(&o, rank, 0, 1, size, sbuf, rbuf);
        EM_CHECK(MPI_Barrier(MPI_COMM_WORLD));

        if (rank == 0) {
            for (long i = 0; i < warm + iters; i++) {
                if (i == warm)
                    t0 = MPI_Wtime();
                for (int w = 0; w < o.window; w++)
                    EM_CHECK(MPI_Isend(sbuf, n, MPI_BYTE, 1, EM_TAG_DATA,
                                       MPI_COMM_WORLD, &req[w]));
                EM_CHECK(MPI_Waitall(o.window, req, MPI_STATUSES_IGNORE));
                EM_CHECK(MPI_Recv(NULL, 0, MPI_BYTE, 1, EM_TAG_ACK,
                                  MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            }
            t1 = MPI_Wtime();
            double mbs = (double)size * (double)o.window * (double)iters /
                         (t1 - t0) / 1e6;
            em_print_row(size, 1, &mbs);
        } else if (rank == 1) {
            for (long i = 0; i < warm + iters; i++) {
                for (int w = 0; w < o.window; w++)
                    EM_CHECK(MPI_Irecv(rbuf + ((size_t)w % slots) * size, n,
                                       MPI_BYTE, 0, EM_TAG_DATA,
                                       MPI_COMM_WORLD, &req[w]));
                EM_CHECK(MPI_Waitall(o.window, req, MPI_STATUSES_IGNORE));
                EM_CHECK(MPI_Send(NULL, 0, MPI_BYTE, 0, EM_TAG_ACK,
                                  MPI_COMM_WORLD));
            }
        }
    }

    EM_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    free(req);
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
