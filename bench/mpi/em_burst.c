/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * em_burst -- one-way burst (seed 001): every rank 1..N-1 sends -n messages
 * of one size to rank 0 back to back; rank 0 receives them all (any source)
 * and reports the time per message and the message rate.  The clock runs
 * at rank 0 from just before it releases the senders (a zero-byte "go" to
 * each) until the last message has arrived.
 * 2 ranks = pattern 1:1, 3 ranks = 2:1 (in general N-1:1).
 */
#include "em_common.h"

#include <stdio.h>
#include <stdlib.h>

static const struct em_prog prog = {
    .prog = "em_burst",
    .bench = "burst",
    .summary = "one-way burst: ranks 1..N-1 each send -n messages to rank 0; "
               "us per message and messages/s at rank 0",
    .optmask = EM_OPT_SIZES | EM_OPT_COUNT,
    .normal = { .min_size = 0, .max_size = 16u << 10,
                .count = 10000, .count_warmup = 1000 },
    .quick = { .min_size = 0, .max_size = 4u << 10,
               .count = 1000, .count_warmup = 100 },
    .min_ranks = 2,
};

int main(int argc, char **argv)
{
    int rank, nranks;
    struct em_opts o = em_setup(&argc, &argv, &prog, &rank, &nranks);
    size_t sizes[64];
    size_t nsizes = em_sizes(&o, sizes, 64);
    unsigned char *sbuf, *rbuf;
    int senders;

    senders = nranks - 1;
    sbuf = em_alloc(o.max_size + 1);
    rbuf = em_alloc(o.max_size + 1);

    if (rank == 0) {
        static const char *const metric[] = { "time_per_msg", "rate" };
        static const char *const unit[] = { "us/msg", "msg/s" };

        printf("# em_burst: pattern %d:1 (%d ranks, receiver rank 0), "
               "%ld messages per sender per size (+%ld warm-up)%s\n",
               senders, nranks, o.count, o.count_warmup,
               o.quick ? ", quick" : "");
        em_print_header(prog.bench, 2, metric, unit);
    }

    for (size_t k = 0; k < nsizes; k++) {
        size_t size = sizes[k];
        int n = (int)size;
        double t0, t1;

        /* content check with every sender, one after the other */
        for (int s = 1; s < nranks; s++)
            if (rank == 0 || rank == s)
                em_verify_exchange(&o, rank, s, 0, size, sbuf, rbuf);

        if (rank == 0) {
            long total_warm = o.count_warmup * senders;
            long total = o.count * senders;

            for (long i = 0; i < total_warm; i++)
                EM_CHECK(MPI_Recv(rbuf, n, MPI_BYTE, MPI_ANY_SOURCE,
                                  EM_TAG_DATA, MPI_COMM_WORLD,
                                  MPI_STATUS_IGNORE));
            /* The clock starts before any sender may begin: each sender
             * waits for a zero-byte "go" sent after t0.  (A barrier would
             * let a sender start while rank 0 is still descheduled between
             * the barrier and MPI_Wtime, and the burst would look faster.) */
            t0 = MPI_Wtime();
            for (int s = 1; s < nranks; s++)
                EM_CHECK(MPI_Send(NULL, 0, MPI_BYTE, s, EM_TAG_ACK,
                                  MPI_COMM_WORLD));
            for (long i = 0; i < total; i++)
                EM_CHECK(MPI_Recv(rbuf, n, MPI_BYTE, MPI_ANY_SOURCE,
                                  EM_TAG_DATA, MPI_COMM_WORLD,
                                  MPI_STATUS_IGNORE));
            t1 = MPI_Wtime();
            double v[2];
            v[0] = (t1 - t0) * 1e6 / (double)total;
            v[1] = (double)total / (t1 - t0);
            em_print_row(size, 2, v);
        } else {
            for (long i = 0; i < o.count_warmup; i++)
                EM_CHECK(MPI_Send(sbuf, n, MPI_BYTE, 0, EM_TAG_DATA,
                                  MPI_COMM_WORLD));
            EM_CHECK(MPI_Recv(NULL, 0, MPI_BYTE, 0, EM_TAG_ACK,
                              MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            for (long i = 0; i < o.count; i++)
                EM_CHECK(MPI_Send(sbuf, n, MPI_BYTE, 0, EM_TAG_DATA,
                                  MPI_COMM_WORLD));
        }
    }

    EM_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
