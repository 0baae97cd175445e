/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * em_burst -- one-way burst ([dse-rudp]): every rank 1..N-1 sends -n messages
 * of one size to rank 0 back to back; rank 0 receives them all (any source)
 * and reports the time per message and the message rate.  The clock runs
 * at rank 0 from just before it releases the senders (a zero-byte "go" to
 * each) until the last message has arrived.
 * 2 ranks = pattern 1:1, 3 ranks = 2:1 (in general N-1:1).
 */
#include "em_common.h"

#include <stdio.h>
#include <stdlib.h>

static const struct em_prog prog = EM_COUNTED_PROG(
    "burst", "one-way burst: ranks 1..N-1 each send -n messages to rank 0; "
             "us per message and messages/s at rank 0");

/* Rank 0 takes n messages of size bytes from any sender. */
static void recv_any(struct em_bench *b, long n, int size)
{
    for (long i = 0; i < n; i++)
        EM_CHECK(MPI_Recv(b->rbuf, size, MPI_BYTE, MPI_ANY_SOURCE, EM_TAG_DATA, MPI_COMM_WORLD,
                          MPI_STATUS_IGNORE));
}

int main(int argc, char **argv)
{
    static const char *const metric[] = { "time_per_msg", "rate" };
    static const char *const unit[] = { "us/msg", "msg/s" };
    struct em_bench b;
    const struct em_opts *o = &b.o;

    em_bench_begin(&b, &argc, &argv, &prog, NULL);
    int senders = b.nranks - 1;
    em_bench_counted_header(&b, metric, unit, "receiver", "messages per sender");

    for (size_t k = 0; k < b.nsizes; k++) {
        size_t size = b.sizes[k];
        int n = (int)size;

        /* content check with every sender, one after the other */
        em_bench_verify_all(&b, size);

        if (b.rank == 0) {
            long total = o->count * senders;

            recv_any(&b, o->count_warmup * senders, n);
            /* The clock starts before any sender may begin: each sender
             * waits for a zero-byte "go" sent after t0.  (A barrier would
             * let a sender start while rank 0 is still descheduled between
             * the barrier and MPI_Wtime, and the burst would look faster.) */
            double t0 = MPI_Wtime();
            for (int s = 1; s < b.nranks; s++)
                EM_CHECK(MPI_Send(NULL, 0, MPI_BYTE, s, EM_TAG_ACK, MPI_COMM_WORLD));
            recv_any(&b, total, n);
            double t = MPI_Wtime() - t0;
            double v[2] = { t * 1e6 / (double)total, (double)total / t };
            em_print_row(size, 2, v);
        } else {
            for (long i = 0; i < o->count_warmup; i++)
                EM_CHECK(MPI_Send(b.sbuf, n, MPI_BYTE, 0, EM_TAG_DATA, MPI_COMM_WORLD));
            EM_CHECK(MPI_Recv(NULL, 0, MPI_BYTE, 0, EM_TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            for (long i = 0; i < o->count; i++)
                EM_CHECK(MPI_Send(b.sbuf, n, MPI_BYTE, 0, EM_TAG_DATA, MPI_COMM_WORLD));
        }
    }
    em_bench_end(&b);
    return 0;
}
