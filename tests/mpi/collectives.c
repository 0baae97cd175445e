/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * collectives.c - collectives on 4 ranks, 2 per node (shared memory inside a
 * node, the BTL under test between the nodes), every result checked against
 * a value computed independently on each rank.
 *
 *   placement        prints every rank's host once; needs >= 2 hosts with
 *                    rank 0 and the last rank on different ones
 *   barrier          50 barriers; then twice a late rank (on the other node
 *                    and on rank 0's node) enters 0.2 s after the others,
 *                    and no rank may leave before it entered (wall-clock
 *                    times, compared on rank 0)
 *   bcast            10 ints and 1 MiB from rank 0 and from the last rank
 *   allreduce        sum of doubles (exactly representable, so the expected
 *                    sum is exact) and of ints, 1000 and 262144 elements
 *                    (2 MiB of doubles), MPI_MAX/MPI_MIN, MPI_IN_PLACE
 *   reduce           sum of ints to the last rank
 *   alltoall         4 ints and 16384 ints (64 KiB) per pair
 *   allgather        3 ints and 65536 ints (256 KiB) per rank
 *   gather/scatter   to/from the last rank
 *
 * Run: mpirun -np 4 ./collectives   (with 2 slots per node)
 */
#include "emt_common.h"

#include <time.h>

/* wall clock; the nodes of the emulated cluster share the machine's clock */
static double now_utc(void)
{
    struct timespec ts;

    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void barrier(void)
{
    for (int i = 0; i < 50; i++)
        emt_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
    emt_report("barrier     x50");

    /*
	 * Nobody may leave a barrier before the last rank has entered it.  The
	 * late rank enters DELAY s after the others; every rank's exit time is
	 * compared with its entry time on the wall clock (shared by the nodes
	 * of the emulated cluster; SKEW allows for clocks of real hosts).
	 * Exit times of the preceding barrier differ legitimately (under loss
	 * by a retransmission timeout), so elapsed-time checks would be flaky.
	 */
    const double DELAY = 0.2, SKEW = 0.05;
    for (int late = emt.size - 1; late >= 1; late -= emt.size - 2) {
        double t, t_in = 0, t_out, *outs = emt_alloc((size_t)emt.size * sizeof(double));

        MPI_Barrier(MPI_COMM_WORLD);
        if (emt.rank == late) {
            t = MPI_Wtime();
            while (MPI_Wtime() - t < DELAY)
                ; /* busy wait: C11 has no portable sleep */
            t_in = now_utc();
        }
        emt_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
        t_out = now_utc();
        MPI_Bcast(&t_in, 1, MPI_DOUBLE, late, MPI_COMM_WORLD);
        MPI_Gather(&t_out, 1, MPI_DOUBLE, outs, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        if (emt.rank == 0)
            for (int r = 0; r < emt.size; r++)
                if (r != late && outs[r] < t_in - SKEW)
                    emt_detail("rank %d left the barrier %.3f s before the late rank %d entered it",
                               r, t_in - outs[r], late);
        free(outs);
        emt_report("barrier     nobody leaves before late rank %d enters (%.1f s late)", late,
                   DELAY);
        if (emt.size <= 2)
            break;
    }
}

static void bcast(void)
{
    const size_t big = 1u << 20;
    uint8_t *buf = emt_alloc(big);
    int small[10];

    for (int root = 0; root < emt.size; root += emt.size - 1) {
        for (int i = 0; i < 10; i++)
            small[i] = emt.rank == root ? root * 100 + i * 7 : -1;
        emt_mpi(MPI_Bcast(small, 10, MPI_INT, root, MPI_COMM_WORLD), "MPI_Bcast");
        for (int i = 0; i < 10; i++)
            if (small[i] != root * 100 + i * 7) {
                emt_detail("bcast small root %d: [%d] = %d, want %d", root, i, small[i],
                           root * 100 + i * 7);
                break;
            }
        emt_report("bcast       10 ints from root %d", root);

        if (emt.rank == root)
            emt_fill(buf, big, emt_seed(big, (uint64_t)root, 0, 1));
        else
            memset(buf, EMT_POISON, big);
        emt_mpi(MPI_Bcast(buf, (int)big, MPI_BYTE, root, MPI_COMM_WORLD), "MPI_Bcast");
        emt_verify(buf, big, emt_seed(big, (uint64_t)root, 0, 1), "bcast 1 MiB");
        emt_report("bcast       1 MiB from root %d", root);
    }
    free(buf);
}

static void allreduce(int n)
{
    double *d = emt_alloc((size_t)n * sizeof(double)), *dr = emt_alloc((size_t)n * sizeof(double));
    int *x = emt_alloc((size_t)n * sizeof(int)), *xr = emt_alloc((size_t)n * sizeof(int));
    int p = emt.size, bad;

    /* doubles: (rank + 1) / 2 + i, every partial sum exact */
    for (int i = 0; i < n; i++) {
        d[i] = (emt.rank + 1) * 0.5 + i;
        dr[i] = -1;
    }
    emt_mpi(MPI_Allreduce(d, dr, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
    bad = 0;
    for (int i = 0; i < n; i++) {
        double want = 0.5 * p * (p + 1) / 2 + (double)p * i;

        if (dr[i] != want && bad++ == 0)
            emt_detail("allreduce sum double [%d] = %.17g, want %.17g", i, dr[i], want);
    }
    emt_report("allreduce   MPI_SUM   %7d doubles", n);

    for (int i = 0; i < n; i++) {
        x[i] = emt.rank * 1000 + i % 100000;
        xr[i] = -1;
    }
    emt_mpi(MPI_Allreduce(x, xr, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
    bad = 0;
    for (int i = 0; i < n; i++) {
        int want = 1000 * p * (p - 1) / 2 + p * (i % 100000);

        if (xr[i] != want && bad++ == 0)
            emt_detail("allreduce sum int [%d] = %d, want %d", i, xr[i], want);
    }
    emt_report("allreduce   MPI_SUM   %7d ints", n);

    /* max/min: rank-dependent maxima at different positions */
    for (int i = 0; i < n; i++)
        x[i] = (i % p == emt.rank) ? 1000000 + i : -i - emt.rank;
    emt_mpi(MPI_Allreduce(x, xr, n, MPI_INT, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
    bad = 0;
    for (int i = 0; i < n; i++)
        if (xr[i] != 1000000 + i && bad++ == 0)
            emt_detail("allreduce max [%d] = %d, want %d", i, xr[i], 1000000 + i);
    emt_mpi(MPI_Allreduce(x, xr, n, MPI_INT, MPI_MIN, MPI_COMM_WORLD), "MPI_Allreduce");
    for (int i = 0; i < n; i++) {
        /* min over ranks r != i % p of (-i - r) */
        int want = -i - (p - 1 == i % p ? p - 2 : p - 1);

        if (xr[i] != want && bad++ == 0)
            emt_detail("allreduce min [%d] = %d, want %d", i, xr[i], want);
    }
    emt_report("allreduce   MPI_MAX/MPI_MIN %7d ints", n);

    for (int i = 0; i < n; i++)
        d[i] = (emt.rank + 1) * 0.25 - i;
    emt_mpi(MPI_Allreduce(MPI_IN_PLACE, d, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD),
            "MPI_Allreduce");
    bad = 0;
    for (int i = 0; i < n; i++) {
        double want = 0.25 * p * (p + 1) / 2 - (double)p * i;

        if (d[i] != want && bad++ == 0)
            emt_detail("allreduce in-place [%d] = %.17g, want %.17g", i, d[i], want);
    }
    emt_report("allreduce   MPI_IN_PLACE MPI_SUM %7d doubles", n);
    free(d);
    free(dr);
    free(x);
    free(xr);
}

static void reduce_gather_scatter(void)
{
    int root = emt.size - 1, p = emt.size, n = 5000;
    int *x = emt_alloc((size_t)n * sizeof(int)),
        *all = emt_alloc((size_t)n * (size_t)p * sizeof(int));

    for (int i = 0; i < n; i++)
        x[i] = emt.rank * 3 + i;
    emt_mpi(MPI_Reduce(x, all, n, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD), "MPI_Reduce");
    if (emt.rank == root)
        for (int i = 0; i < n; i++)
            if (all[i] != 3 * p * (p - 1) / 2 + p * i) {
                emt_detail("reduce [%d] = %d", i, all[i]);
                break;
            }
    emt_report("reduce      MPI_SUM %d ints to root %d", n, root);

    for (int i = 0; i < n; i++)
        x[i] = emt.rank * 100000 + i;
    memset(all, 0xff, (size_t)n * (size_t)p * sizeof(int));
    emt_mpi(MPI_Gather(x, n, MPI_INT, all, n, MPI_INT, root, MPI_COMM_WORLD), "MPI_Gather");
    if (emt.rank == root)
        for (int i = 0; i < n * p; i++)
            if (all[i] != (i / n) * 100000 + i % n) {
                emt_detail("gather [%d] = %d", i, all[i]);
                break;
            }
    emt_report("gather      %d ints per rank to root %d", n, root);

    if (emt.rank == root)
        for (int i = 0; i < n * p; i++)
            all[i] = (i / n) * 7 + i % n + 11;
    memset(x, 0xff, (size_t)n * sizeof(int));
    emt_mpi(MPI_Scatter(all, n, MPI_INT, x, n, MPI_INT, root, MPI_COMM_WORLD), "MPI_Scatter");
    for (int i = 0; i < n; i++)
        if (x[i] != emt.rank * 7 + i + 11) {
            emt_detail("scatter [%d] = %d", i, x[i]);
            break;
        }
    emt_report("scatter     %d ints per rank from root %d", n, root);
    free(x);
    free(all);
}

/* r holds one block of m ints from every rank; int j of rank src's block
 * must be src * per_src + base + j.  The first wrong one is reported. */
static void check_blocks(const char *what, const int *r, int m, int per_src, int base)
{
    for (int src = 0; src < emt.size; src++)
        for (int j = 0; j < m; j++)
            if (r[src * m + j] != src * per_src + base + j) {
                emt_detail("%s block of %d [%d] = %d", what, src, j, r[src * m + j]);
                return;
            }
}

static void alltoall(int m)
{
    int p = emt.size;
    int *s = emt_alloc((size_t)m * (size_t)p * sizeof(int)),
        *r = emt_alloc((size_t)m * (size_t)p * sizeof(int));

    for (int d = 0; d < p; d++)
        for (int j = 0; j < m; j++)
            s[d * m + j] = emt.rank * 100000000 + d * 1000000 + j;
    memset(r, 0xff, (size_t)m * (size_t)p * sizeof(int));
    emt_mpi(MPI_Alltoall(s, m, MPI_INT, r, m, MPI_INT, MPI_COMM_WORLD), "MPI_Alltoall");
    check_blocks("alltoall", r, m, 100000000, emt.rank * 1000000);
    emt_report("alltoall    %6d ints per pair", m);
    free(s);
    free(r);
}

static void allgather(int m)
{
    int p = emt.size;
    int *s = emt_alloc((size_t)m * sizeof(int)),
        *r = emt_alloc((size_t)m * (size_t)p * sizeof(int));

    for (int j = 0; j < m; j++)
        s[j] = emt.rank * 1000000 + j;
    memset(r, 0xff, (size_t)m * (size_t)p * sizeof(int));
    emt_mpi(MPI_Allgather(s, m, MPI_INT, r, m, MPI_INT, MPI_COMM_WORLD), "MPI_Allgather");
    check_blocks("allgather", r, m, 1000000, 0);
    emt_report("allgather   %6d ints per rank", m);
    free(s);
    free(r);
}

int main(int argc, char **argv)
{
    emt_init(&argc, &argv, "collectives");
    emt_need_ranks(2, 0);
    emt_require_spread(2, 0, emt.size - 1);
    barrier();
    bcast();
    allreduce(1000);
    allreduce(262144);
    reduce_gather_scatter();
    alltoall(4);
    alltoall(16384);
    allgather(3);
    allgather(65536);
    return emt_finish();
}
