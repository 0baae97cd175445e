/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * onesided.c - MPI one-sided communication (RMA windows) over the transport
 * under test, on 2 or more ranks.  Every MPI implements it over whatever
 * the network offers (Open MPI's osc components, MPICH's active messages or
 * the network's RMA), so it must work whether or not the transport has RMA
 * of its own.
 *
 *   fence-put   every rank puts a pattern seeded by (origin, size) into its
 *               right neighbour's window, active target (MPI_Win_fence);
 *               8 B .. 1 MiB; the target checks every byte and that the
 *               bytes around the region are untouched
 *   fence-get   every rank gets its left neighbour's exposed pattern
 *   accumulate  every rank adds (rank + 1) * i to element i of rank 0's
 *               window (MPI_Accumulate, MPI_SUM) NACC times
 *   lock-put    passive target: MPI_Win_lock(EXCLUSIVE) + put + unlock
 *               into the right neighbour; a barrier, then the check
 *   fetch-op    MPI_Fetch_and_op(MPI_SUM, 1) on a counter at rank 0,
 *               NFOP times per rank under a shared lock: every fetched
 *               value is distinct and the counter ends at size * NFOP
 *
 * Run: mpirun -np 2 --map-by node ./onesided
 */
#include "emt_common.h"

#define MAXLEN (1u << 20)
#define GUARD  64
#define NACC   8
#define NACC_N 1024
#define NFOP   64

static const size_t sizes[] = { 8, 1000, 65536, MAXLEN };

static uint8_t *win_mem; /* GUARD | MAXLEN | GUARD, exposed as one window */
static MPI_Win win;

static void poison(void) { memset(win_mem, EMT_POISON, MAXLEN + 2 * GUARD); }

static void check_guards(const char *what)
{
    emt_verify_poison(win_mem, GUARD, what);
    emt_verify_poison(win_mem + GUARD + MAXLEN, GUARD, what);
}

static void fence_put(int right, int left)
{
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t len = sizes[k];
        uint8_t *src = emt_alloc(len);
        char what[64];
        poison();
        emt_fill(src, len, emt_seed(len, (uint64_t)emt.rank, 1, 0));
        emt_mpi(MPI_Win_fence(0, win), "MPI_Win_fence");
        emt_mpi(MPI_Put(src, (int)len, MPI_BYTE, right, GUARD, (int)len, MPI_BYTE, win), "MPI_Put");
        emt_mpi(MPI_Win_fence(0, win), "MPI_Win_fence");
        snprintf(what, sizeof what, "fence-put %zu B from rank %d", len, left);
        emt_verify(win_mem + GUARD, len, emt_seed(len, (uint64_t)left, 1, 0), what);
        emt_verify_poison(win_mem + GUARD + len, len < MAXLEN ? GUARD : 0, what);
        check_guards(what);
        free(src);
        emt_report("fence-put   %7zu B to the right neighbour", len);
    }
}

static void fence_get(int right, int left)
{
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t len = sizes[k];
        uint8_t *dst = emt_alloc(len + GUARD);
        char what[64];
        poison();
        emt_fill(win_mem + GUARD, len, emt_seed(len, (uint64_t)emt.rank, 2, 0));
        memset(dst, EMT_POISON, len + GUARD);
        emt_mpi(MPI_Win_fence(0, win), "MPI_Win_fence");
        emt_mpi(MPI_Get(dst, (int)len, MPI_BYTE, left, GUARD, (int)len, MPI_BYTE, win), "MPI_Get");
        emt_mpi(MPI_Win_fence(0, win), "MPI_Win_fence");
        snprintf(what, sizeof what, "fence-get %zu B from rank %d", len, left);
        emt_verify(dst, len, emt_seed(len, (uint64_t)left, 2, 0), what);
        emt_verify_poison(dst + len, GUARD, what);
        (void)right;
        free(dst);
        emt_report("fence-get   %7zu B from the left neighbour", len);
    }
}

static void accumulate(void)
{
    int32_t *acc = (int32_t *)(void *)(win_mem + GUARD);
    int32_t add[NACC_N];
    memset(acc, 0, NACC_N * sizeof *acc);
    for (int i = 0; i < NACC_N; i++)
        add[i] = (emt.rank + 1) * i;
    emt_mpi(MPI_Win_fence(0, win), "MPI_Win_fence");
    for (int n = 0; n < NACC; n++)
        emt_mpi(
            MPI_Accumulate(add, NACC_N, MPI_INT32_T, 0, GUARD, NACC_N, MPI_INT32_T, MPI_SUM, win),
            "MPI_Accumulate");
    emt_mpi(MPI_Win_fence(0, win), "MPI_Win_fence");
    if (emt.rank == 0) {
        /* sum over ranks r of (r + 1) * i, NACC times */
        int32_t f = (int32_t)(emt.size * (emt.size + 1) / 2) * NACC;
        for (int i = 0; i < NACC_N; i++)
            if (acc[i] != f * i) {
                emt_detail("accumulate: element %d is %d, expected %d", i, (int)acc[i],
                           (int)(f * i));
                break;
            }
    }
    emt_report("accumulate  %d x %d int32 sums into rank 0", NACC, NACC_N);
}

static void lock_put(int right, int left)
{
    size_t len = 65536 + 3;
    uint8_t *src = emt_alloc(len);
    char what[64];
    emt_mpi(MPI_Win_fence(0, win), "MPI_Win_fence"); /* end the fence epochs */
    poison();
    MPI_Barrier(MPI_COMM_WORLD);
    emt_fill(src, len, emt_seed(len, (uint64_t)emt.rank, 3, 0));
    emt_mpi(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win), "MPI_Win_lock");
    emt_mpi(MPI_Put(src, (int)len, MPI_BYTE, right, GUARD, (int)len, MPI_BYTE, win), "MPI_Put");
    emt_mpi(MPI_Win_unlock(right, win), "MPI_Win_unlock");
    MPI_Barrier(MPI_COMM_WORLD);
    emt_mpi(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, emt.rank, 0, win), "MPI_Win_lock (self)");
    snprintf(what, sizeof what, "lock-put %zu B from rank %d", len, left);
    emt_verify(win_mem + GUARD, len, emt_seed(len, (uint64_t)left, 3, 0), what);
    check_guards(what);
    emt_mpi(MPI_Win_unlock(emt.rank, win), "MPI_Win_unlock (self)");
    free(src);
    emt_report("lock-put    %7zu B, passive target", len);
}

static void fetch_op(void)
{
    int64_t *ctr = (int64_t *)(void *)(win_mem + GUARD);
    int64_t got[NFOP], one = 1, total = 0;
    emt_mpi(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, emt.rank, 0, win), "MPI_Win_lock (self)");
    *ctr = 0;
    emt_mpi(MPI_Win_unlock(emt.rank, win), "MPI_Win_unlock (self)");
    MPI_Barrier(MPI_COMM_WORLD);
    emt_mpi(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win), "MPI_Win_lock");
    for (int n = 0; n < NFOP; n++) {
        emt_mpi(MPI_Fetch_and_op(&one, &got[n], MPI_INT64_T, 0, GUARD, MPI_SUM, win),
                "MPI_Fetch_and_op");
        emt_mpi(MPI_Win_flush(0, win), "MPI_Win_flush");
    }
    emt_mpi(MPI_Win_unlock(0, win), "MPI_Win_unlock");
    for (int n = 1; n < NFOP; n++)
        if (got[n] <= got[n - 1]) {
            emt_detail("fetch-op: fetched %lld after %lld (not increasing)", (long long)got[n],
                       (long long)got[n - 1]);
            break;
        }
    /* every value 0 .. size * NFOP - 1 fetched exactly once, over all ranks */
    int64_t sum = 0, want = (int64_t)emt.size * NFOP * ((int64_t)emt.size * NFOP - 1) / 2;
    for (int n = 0; n < NFOP; n++)
        sum += got[n];
    MPI_Allreduce(&sum, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (total != want)
        emt_detail("fetch-op: fetched values sum to %lld, expected %lld", (long long)total,
                   (long long)want);
    MPI_Barrier(MPI_COMM_WORLD);
    if (emt.rank == 0 && *ctr != (int64_t)emt.size * NFOP)
        emt_detail("fetch-op: counter is %lld, expected %lld", (long long)*ctr,
                   (long long)emt.size * NFOP);
    emt_report("fetch-op    %d x MPI_Fetch_and_op per rank on rank 0", NFOP);
}

int main(int argc, char **argv)
{
    emt_init(&argc, &argv, "onesided");
    emt_need_ranks(2, 0);
    int right = (emt.rank + 1) % emt.size, left = (emt.rank + emt.size - 1) % emt.size;
    win_mem = emt_alloc(MAXLEN + 2 * GUARD);
    if (emt_mpi(MPI_Win_create(win_mem, MAXLEN + 2 * GUARD, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win),
                "MPI_Win_create") != MPI_SUCCESS) {
        emt_report("window      MPI_Win_create");
        free(win_mem);
        return emt_finish();
    }
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    emt_report("window      MPI_Win_create of %u B", MAXLEN + 2 * GUARD);
    fence_put(right, left);
    fence_get(right, left);
    accumulate();
    lock_put(right, left);
    fetch_op();
    MPI_Win_free(&win);
    free(win_mem);
    return emt_finish();
}
