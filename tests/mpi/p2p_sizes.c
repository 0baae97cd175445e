/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * p2p_sizes.c - point-to-point between two ranks on two nodes, every size
 * class of a BTL: zero bytes, tiny, around the usual eager limits (1 KiB,
 * 4 KiB, 8 KiB, 12/13 KiB, 64 KiB), rendezvous and pipelined large messages
 * up to 16 MiB.
 *
 * Sub-checks (one output line each):
 *   placement       the two ranks run on different hosts
 *   blocking S      MPI_Send/MPI_Recv of S bytes, 0->1 then 1->0, --iters
 *                   iterations (--big-iters for S >= 4 MiB)
 *   nonblocking S   MPI_Isend/MPI_Irecv of S bytes in both directions at
 *                   once; receives posted before the sends on even
 *                   iterations, after them on odd ones
 *   small-inflight  --small (1000) Isends of 8 B with distinct tags in both
 *                   directions, received in a permuted tag order; once with
 *                   the receives pre-posted, once unexpected
 *   sendrecv S      MPI_Sendrecv of S bytes both ways at once (large)
 *   sendrecv_replace S
 *
 * Every receive is posted for S + 64 bytes into a buffer whose tail is
 * poisoned: MPI_Get_count must say S, MPI_SOURCE/MPI_TAG must match, the
 * content must match a pattern seeded by (size, iteration, sender rank,
 * mode) and the 64 bytes after the message must be untouched.
 *
 * Run: mpirun -np 2 --map-by node ./p2p_sizes [--iters=3] [--big-iters=2]
 *      [--small=1000] [--max-size=16777216]
 */
#include "emt_common.h"

#define GUARD 64
#define BIG   (4u << 20)

enum { MODE_BLOCKING = 1, MODE_NONBLOCKING, MODE_SMALL, MODE_SENDRECV, MODE_REPLACE };

static const size_t sizes[] = {
    0,         1,     7,          64,       1023,      1024,      1025,
    4095,      4096,  8191,       8192,     12 * 1024, 13 * 1024, 26 * 1024,
    64 * 1024, 65537, 256 * 1024, 1u << 20, 4u << 20,  16u << 20,
};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static uint8_t *sbuf, *rbuf; /* max size (+ GUARD) each */

static void check_recv(const MPI_Status *st, const uint8_t *buf, size_t len, int src, int tag,
                       uint64_t seed, const char *what)
{
    int count = -1;

    MPI_Get_count(st, MPI_BYTE, &count);
    if (count != (int)len)
        emt_detail("%s: MPI_Get_count %d, want %zu", what, count, len);
    if (st->MPI_SOURCE != src || st->MPI_TAG != tag)
        emt_detail("%s: status source %d tag %d, want %d/%d", what, st->MPI_SOURCE, st->MPI_TAG,
                   src, tag);
    emt_verify(buf, len, seed, what);
    emt_verify_poison(buf + len, GUARD, what);
}

static void blocking(int peer, size_t len, int iters)
{
    char what[96];

    for (int it = 0; it < iters; it++) {
        for (int sender = 0; sender < 2; sender++) {
            uint64_t seed = emt_seed(len, (uint64_t)it, (uint64_t)sender, MODE_BLOCKING);
            int tag = 100 + it * 2 + sender;
            MPI_Status st;

            snprintf(what, sizeof(what), "blocking %zu B it %d %d->%d", len, it, sender,
                     1 - sender);
            if (emt.rank == sender) {
                emt_fill(sbuf, len, seed);
                emt_mpi(MPI_Send(sbuf, (int)len, MPI_BYTE, peer, tag, MPI_COMM_WORLD), "MPI_Send");
            } else {
                memset(rbuf, EMT_POISON, len + GUARD);
                if (emt_mpi(MPI_Recv(rbuf, (int)(len + GUARD), MPI_BYTE, peer, tag, MPI_COMM_WORLD,
                                     &st),
                            "MPI_Recv") == MPI_SUCCESS)
                    check_recv(&st, rbuf, len, peer, tag, seed, what);
            }
        }
    }
    emt_report("blocking       %9zu B x%d, 0->1 and 1->0", len, iters);
}

static void nonblocking(int peer, size_t len, int iters)
{
    char what[96];

    for (int it = 0; it < iters; it++) {
        uint64_t sseed = emt_seed(len, (uint64_t)it, (uint64_t)emt.rank, MODE_NONBLOCKING);
        uint64_t rseed = emt_seed(len, (uint64_t)it, (uint64_t)peer, MODE_NONBLOCKING);
        int tag = 200 + it;
        MPI_Request rq[2];
        MPI_Status st[2];

        emt_fill(sbuf, len, sseed);
        memset(rbuf, EMT_POISON, len + GUARD);
        if (it % 2 == 0) { /* receive pre-posted */
            MPI_Irecv(rbuf, (int)(len + GUARD), MPI_BYTE, peer, tag, MPI_COMM_WORLD, &rq[0]);
            MPI_Isend(sbuf, (int)len, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &rq[1]);
        } else { /* send first: the peer's message may arrive unexpected */
            MPI_Isend(sbuf, (int)len, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &rq[1]);
            MPI_Irecv(rbuf, (int)(len + GUARD), MPI_BYTE, peer, tag, MPI_COMM_WORLD, &rq[0]);
        }
        if (emt_mpi(MPI_Waitall(2, rq, st), "MPI_Waitall") != MPI_SUCCESS)
            continue;
        snprintf(what, sizeof(what), "nonblocking %zu B it %d from %d", len, it, peer);
        check_recv(&st[0], rbuf, len, peer, tag, rseed, what);
    }
    emt_report("nonblocking    %9zu B x%d, both directions at once", len, iters);
}

/* n tiny messages each way, tag i, received in a permuted order */
static void small_inflight(int peer, int n, int unexpected)
{
    uint8_t *out = emt_alloc((size_t)n * 8), *in = emt_alloc((size_t)n * 8);
    MPI_Request *rq = emt_alloc((size_t)n * 2 * sizeof(*rq));
    MPI_Status *st = emt_alloc((size_t)n * 2 * sizeof(*st));
    int *rtag = emt_alloc((size_t)n * sizeof(int)); /* tag of receive slot j */

    for (int i = 0; i < n; i++)
        emt_fill(out + (size_t)i * 8, 8,
                 emt_seed((uint64_t)i, (uint64_t)unexpected, (uint64_t)emt.rank, MODE_SMALL));
    memset(in, EMT_POISON, (size_t)n * 8);
    for (int j = 0; j < n; j++) /* 7919 is prime, so this is a permutation */
        rtag[j] = (int)(((long)j * 7919 + 13) % n);

    if (!unexpected) {
        for (int j = 0; j < n; j++)
            MPI_Irecv(in + (size_t)j * 8, 8, MPI_BYTE, peer, rtag[j], MPI_COMM_WORLD, &rq[n + j]);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    for (int i = 0; i < n; i++)
        MPI_Isend(out + (size_t)i * 8, 8, MPI_BYTE, peer, i, MPI_COMM_WORLD, &rq[i]);
    if (unexpected) {
        MPI_Barrier(MPI_COMM_WORLD);
        for (int j = 0; j < n; j++)
            MPI_Irecv(in + (size_t)j * 8, 8, MPI_BYTE, peer, rtag[j], MPI_COMM_WORLD, &rq[n + j]);
    }
    if (emt_mpi(MPI_Waitall(2 * n, rq, st), "MPI_Waitall") == MPI_SUCCESS) {
        for (int j = 0; j < n; j++) {
            char what[64];
            int count = -1;

            MPI_Get_count(&st[n + j], MPI_BYTE, &count);
            if (count != 8 || st[n + j].MPI_TAG != rtag[j] || st[n + j].MPI_SOURCE != peer)
                emt_detail("small tag %d: count %d source %d tag %d", rtag[j], count,
                           st[n + j].MPI_SOURCE, st[n + j].MPI_TAG);
            snprintf(what, sizeof(what), "small tag %d", rtag[j]);
            emt_verify(
                in + (size_t)j * 8, 8,
                emt_seed((uint64_t)rtag[j], (uint64_t)unexpected, (uint64_t)peer, MODE_SMALL),
                what);
        }
    }
    emt_report("small-inflight %d x 8 B each way, tags received permuted, %s", n,
               unexpected ? "unexpected" : "pre-posted");
    free(out);
    free(in);
    free(rq);
    free(st);
    free(rtag);
}

static void sendrecv(int peer, size_t len, int iters)
{
    char what[96];

    for (int it = 0; it < iters; it++) {
        uint64_t sseed = emt_seed(len, (uint64_t)it, (uint64_t)emt.rank, MODE_SENDRECV);
        uint64_t rseed = emt_seed(len, (uint64_t)it, (uint64_t)peer, MODE_SENDRECV);
        MPI_Status st;

        emt_fill(sbuf, len, sseed);
        memset(rbuf, EMT_POISON, len + GUARD);
        if (emt_mpi(MPI_Sendrecv(sbuf, (int)len, MPI_BYTE, peer, 300 + it, rbuf, (int)(len + GUARD),
                                 MPI_BYTE, peer, 300 + it, MPI_COMM_WORLD, &st),
                    "MPI_Sendrecv") != MPI_SUCCESS)
            continue;
        snprintf(what, sizeof(what), "sendrecv %zu B it %d", len, it);
        check_recv(&st, rbuf, len, peer, 300 + it, rseed, what);
    }
    emt_report("sendrecv       %9zu B x%d, both directions at once", len, iters);

    for (int it = 0; it < iters; it++) {
        MPI_Status st;

        emt_fill(rbuf, len, emt_seed(len, (uint64_t)it, (uint64_t)emt.rank, MODE_REPLACE));
        if (emt_mpi(MPI_Sendrecv_replace(rbuf, (int)len, MPI_BYTE, peer, 400 + it, peer, 400 + it,
                                         MPI_COMM_WORLD, &st),
                    "MPI_Sendrecv_replace") != MPI_SUCCESS)
            continue;
        snprintf(what, sizeof(what), "sendrecv_replace %zu B it %d", len, it);
        emt_verify(rbuf, len, emt_seed(len, (uint64_t)it, (uint64_t)peer, MODE_REPLACE), what);
    }
    emt_report("sendrecv_repl  %9zu B x%d, both directions at once", len, iters);
}

int main(int argc, char **argv)
{
    int iters, big_iters, nsmall, peer;
    size_t max_size;

    emt_init(&argc, &argv, "p2p_sizes");
    iters = (int)emt_arg(argc, argv, "--iters", 3);
    big_iters = (int)emt_arg(argc, argv, "--big-iters", 2);
    nsmall = (int)emt_arg(argc, argv, "--small", 1000);
    max_size = (size_t)emt_arg(argc, argv, "--max-size", 16l << 20);
    emt_need_ranks(2, 2);
    peer = 1 - emt.rank;
    sbuf = emt_alloc(max_size + GUARD);
    rbuf = emt_alloc(max_size + GUARD);

    emt_require_spread(2, 0, 1);
    for (size_t i = 0; i < NSIZES && sizes[i] <= max_size; i++)
        blocking(peer, sizes[i], sizes[i] >= BIG ? big_iters : iters);
    for (size_t i = 0; i < NSIZES && sizes[i] <= max_size; i++)
        nonblocking(peer, sizes[i], sizes[i] >= BIG ? big_iters : iters);
    small_inflight(peer, nsmall, 0);
    small_inflight(peer, nsmall, 1);
    sendrecv(peer, 1u << 20 <= max_size ? 1u << 20 : max_size, iters);
    sendrecv(peer, 8u << 20 <= max_size ? 8u << 20 : max_size, big_iters);

    free(sbuf);
    free(rbuf);
    return emt_finish();
}
