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

static const struct em_prog prog = EM_WINDOWED_PROG(
    "bibw", "windowed bi-directional bandwidth 0 <-> 1, MB/s (10^6 B/s, "
            "both directions summed)");

/* Both ranks' round: a window of receives and a window of sends. */
static void exchange_window(struct em_bench *b, size_t size, void *ctx)
{
    struct em_window *w = ctx;
    int peer = 1 - b->rank;

    em_post_window_recvs(&b->o, b->rbuf, w->slots, size, peer, w->req);
    for (int i = 0; i < b->o.window; i++)
        EM_CHECK(MPI_Isend(b->sbuf, (int)size, MPI_BYTE, peer, EM_TAG_DATA, MPI_COMM_WORLD,
                           &w->req[b->o.window + i]));
    EM_CHECK(MPI_Waitall(2 * b->o.window, w->req, MPI_STATUSES_IGNORE));
}

int main(int argc, char **argv)
{
    static const struct em_windowed w = {
        .prog = &prog,
        .per_window = 2,
        .directions = 2,
        .pair = "0 <-> 1",
        .note = " each way",
        .round0 = exchange_window,
        .round1 = exchange_window,
    };
    return em_windowed_main(argc, argv, &w);
}
