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

static const struct em_prog prog = EM_WINDOWED_PROG(
    "bw", "windowed uni-directional bandwidth rank 0 -> 1, MB/s (10^6 B/s)");

/* Rank 0's round: a window of sends, then the zero-byte acknowledgement. */
static void send_window(struct em_bench *b, size_t size, void *ctx)
{
    struct em_window *w = ctx;

    for (int i = 0; i < b->o.window; i++)
        EM_CHECK(
            MPI_Isend(b->sbuf, (int)size, MPI_BYTE, 1, EM_TAG_DATA, MPI_COMM_WORLD, &w->req[i]));
    EM_CHECK(MPI_Waitall(b->o.window, w->req, MPI_STATUSES_IGNORE));
    EM_CHECK(MPI_Recv(NULL, 0, MPI_BYTE, 1, EM_TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
}

/* Rank 1's round: a window of receives, then the acknowledgement. */
static void recv_window(struct em_bench *b, size_t size, void *ctx)
{
    struct em_window *w = ctx;

    em_post_window_recvs(&b->o, b->rbuf, w->slots, size, 0, w->req);
    EM_CHECK(MPI_Waitall(b->o.window, w->req, MPI_STATUSES_IGNORE));
    EM_CHECK(MPI_Send(NULL, 0, MPI_BYTE, 0, EM_TAG_ACK, MPI_COMM_WORLD));
}

int main(int argc, char **argv)
{
    static const struct em_windowed w = {
        .prog = &prog,
        .per_window = 1,
        .directions = 1,
        .pair = "0 -> 1",
        .note = "",
        .round0 = send_window,
        .round1 = recv_window,
    };
    return em_windowed_main(argc, argv, &w);
}
