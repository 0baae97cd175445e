/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * collloop.c - collectives in tight loops, every result checked
 * (a live peer was declared dead when 2 ranks per node looped over small
 * allreduces or bcasts on rudp).  Meant for 4 ranks, 2 per node (by-slot
 * mapping), and for 2 ranks, 1 per node, where a transport holds only one
 * rank per node.  In a bcast tree the leaves only receive from their
 * parent on the other node: that is the traffic that found the bug.
 *
 *   placement          rank 0 and the last rank on different hosts
 *   allreduce 1..64 B  ITERS bitwise xors of bytes per size (1, 2, 4 .. 64 B;
 *                      not a sum of unsigned chars: Open MPI 4.1.4's op/avx
 *                      saturates those from 16 B on)
 *   bcast 1..64 B      ITERS per size, the root rotating over all ranks
 *   alltoall 1..64 B   ITERS per block size
 *   barrier            ITERS * 7 barriers
 *   allreduce 64 KiB   ITERS / 10 sums of 16384 ints
 *   bcast 64 KiB       ITERS / 10, rotating root
 *   alltoall 64 KiB    ITERS / 10, 64 KiB per pair
 *
 *   --iters=N    ITERS (default 200, as in the issue)
 *   --repeat=R   run the whole sequence R times (default 1)
 *
 * Run: mpirun -np 4 ./collloop   (with 2 slots per node)
 */
#include "emt_common.h"

#define BIG (64 * 1024)

static uint8_t val(int iter, int rank, size_t i)
{
    return (uint8_t)(emt_seed((uint64_t)iter, (uint64_t)rank, i, 77) & 0xff);
}

static double t_phase;

/* "  info" line with the time of the phase just reported (rank 0) */
static void phase_time(const char *what)
{
    double t = MPI_Wtime();

    if (emt.rank == 0)
        printf("  info  %s: %.2f s\n", what, t - t_phase);
    t_phase = t;
}

static void allreduce_small(int iters)
{
    uint8_t in[64], out[64];

    for (size_t n = 1; n <= 64; n *= 2) {
        for (int it = 0; it < iters; it++) {
            for (size_t i = 0; i < n; i++)
                in[i] = val(it, emt.rank, i);
            if (emt_mpi(MPI_Allreduce(in, out, (int)n, MPI_BYTE, MPI_BXOR, MPI_COMM_WORLD),
                        "MPI_Allreduce") != MPI_SUCCESS)
                break;
            for (size_t i = 0; i < n; i++) {
                uint8_t want = 0;
                for (int r = 0; r < emt.size; r++)
                    want ^= val(it, r, i);
                if (out[i] != want) {
                    emt_detail("allreduce %zu B iteration %d: byte %zu is %u, want %u", n, it, i,
                               out[i], want);
                    break;
                }
            }
        }
    }
    emt_report("allreduce   1..64 B x%d per size", iters);
    phase_time("allreduce small");
}

static void bcast_loop(size_t lo, size_t hi, int iters, uint8_t *buf, const char *what)
{
    for (size_t n = lo; n <= hi; n *= 2) {
        for (int it = 0; it < iters; it++) {
            int root = it % emt.size;
            uint64_t seed = emt_seed(n, (uint64_t)it, (uint64_t)root, 5);
            if (emt.rank == root)
                emt_fill(buf, n, seed);
            else
                memset(buf, 0, n);
            if (emt_mpi(MPI_Bcast(buf, (int)n, MPI_BYTE, root, MPI_COMM_WORLD), "MPI_Bcast") !=
                MPI_SUCCESS)
                break;
            if (emt_verify(buf, n, seed, "bcast"))
                break;
        }
    }
    emt_report("bcast       %s x%d per size, rotating root", what, iters);
    phase_time("bcast");
}

static void alltoall_loop(size_t lo, size_t hi, int iters, uint8_t *sb, uint8_t *rb,
                          const char *what)
{
    for (size_t n = lo; n <= hi; n *= 2) {
        for (int it = 0; it < iters; it++) {
            for (int r = 0; r < emt.size; r++)
                emt_fill(sb + (size_t)r * n, n,
                         emt_seed(n, (uint64_t)it, (uint64_t)emt.rank, (uint64_t)r));
            memset(rb, 0, n * (size_t)emt.size);
            if (emt_mpi(MPI_Alltoall(sb, (int)n, MPI_BYTE, rb, (int)n, MPI_BYTE, MPI_COMM_WORLD),
                        "MPI_Alltoall") != MPI_SUCCESS)
                break;
            size_t bad = 0;
            for (int r = 0; r < emt.size && !bad; r++)
                bad = emt_verify(rb + (size_t)r * n, n,
                                 emt_seed(n, (uint64_t)it, (uint64_t)r, (uint64_t)emt.rank),
                                 "alltoall block");
            if (bad)
                break;
        }
    }
    emt_report("alltoall    %s x%d per block size", what, iters);
    phase_time("alltoall");
}

static void allreduce_big(int iters)
{
    int cnt = BIG / (int)sizeof(int);
    int *in = emt_alloc(BIG), *out = emt_alloc(BIG);

    for (int it = 0; it < iters; it++) {
        for (int i = 0; i < cnt; i++)
            in[i] = (emt.rank + 1) * (i + it);
        if (emt_mpi(MPI_Allreduce(in, out, cnt, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
                    "MPI_Allreduce") != MPI_SUCCESS)
            break;
        int tri = emt.size * (emt.size + 1) / 2;
        for (int i = 0; i < cnt; i++) {
            if (out[i] != tri * (i + it)) {
                emt_detail("allreduce 64 KiB iteration %d: element %d is %d, want %d", it, i,
                           out[i], tri * (i + it));
                break;
            }
        }
    }
    free(in);
    free(out);
    emt_report("allreduce   64 KiB x%d", iters);
    phase_time("allreduce 64 KiB");
}

int main(int argc, char **argv)
{
    emt_init(&argc, &argv, "collloop");
    int iters = (int)emt_arg(argc, argv, "--iters", 200);
    int repeat = (int)emt_arg(argc, argv, "--repeat", 1);
    int big_iters = iters / 10 > 0 ? iters / 10 : 1;
    uint8_t *sb = emt_alloc((size_t)BIG * (size_t)emt.size);
    uint8_t *rb = emt_alloc((size_t)BIG * (size_t)emt.size);

    emt_require_spread(2, 0, emt.size - 1);
    for (int r = 0; r < repeat; r++) {
        double t0 = MPI_Wtime();
        t_phase = t0;
        allreduce_small(iters);
        bcast_loop(1, 64, iters, sb, "1..64 B");
        alltoall_loop(1, 64, iters, sb, rb, "1..64 B");
        for (int i = 0; i < iters * 7; i++)
            if (emt_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier") != MPI_SUCCESS)
                break;
        emt_report("barrier     x%d", iters * 7);
        phase_time("barrier");
        allreduce_big(big_iters);
        bcast_loop(BIG, BIG, big_iters, sb, "64 KiB");
        alltoall_loop(BIG, BIG, big_iters, sb, rb, "64 KiB");
        if (emt.rank == 0)
            printf("  info  round %d of %d: %.2f s\n", r + 1, repeat, MPI_Wtime() - t0);
    }
    free(sb);
    free(rb);
    return emt_finish();
}
