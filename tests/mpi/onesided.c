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
 *   pscw        post/start/complete/wait: every rank exposes its window to
 *               its left neighbour and puts into its right one
 *
 * Then a second window from MPI_Win_allocate, every rank at every rank
 * (itself included) inside one MPI_Win_lock_all epoch per sub-check:
 *   all-fetch-op   NFOP2 (64 / size) x MPI_Fetch_and_op(SUM, 1), each followed by
 *                  MPI_Win_flush: per target the fetched values increase,
 *                  and over all ranks they are 0 .. size * NFOP2 - 1 once
 *   all-cas        NCAS (32 / size) increments of a counter by a compare-and-swap loop
 *                  (MPI_Compare_and_swap): the counter ends at size * NCAS
 *                  and the values swapped out are each taken once
 *   all-get-acc    NGA (32 / size) x MPI_Get_accumulate(SUM) of (1, 2, 3, 4), int64:
 *                  element j ends at size * NGA * (j + 1), and the fetched
 *                  values of element j are each multiple of (j + 1) once;
 *                  then MPI_Get_accumulate(MPI_NO_OP) reads the totals
 *   all-typed      MPI_Fetch_and_op(MAX) on an int32 and MPI_Accumulate
 *                  (SUM) of 0.5 on a double: the 32-bit and float paths
 *   all-flush      MPI_Put of a rank-seeded pattern to every rank, then
 *                  MPI_Win_flush and an MPI_Get of it back in the same
 *                  epoch (a flush completes the put at the target); the
 *                  targets check every byte after MPI_Win_unlock_all
 *
 * Run: mpirun -np 2 --map-by node ./onesided
 */
#include "emt_common.h"

#define MAXLEN (1u << 20)
#define GUARD  64
#define NACC   8
#define NACC_N 1024
#define NFOP   64
/* per rank and target: fewer with more ranks (each needs its target's
 * progress, and 4 ranks share the machine's cores) */
#define NFOP2  (64 / emt.size)
#define NCAS   (32 / emt.size)
#define NGA    (32 / emt.size)
#define PUTLEN 4096

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

static void pscw(int right, int left)
{
    size_t len = 10000;
    uint8_t *src = emt_alloc(len);
    MPI_Group world, to, from;
    char what[64];
    MPI_Barrier(MPI_COMM_WORLD);
    poison();
    emt_fill(src, len, emt_seed(len, (uint64_t)emt.rank, 4, 0));
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, 1, &left, &from); /* who accesses my window */
    MPI_Group_incl(world, 1, &right, &to);  /* whose window I access */
    MPI_Barrier(MPI_COMM_WORLD);            /* the poison is in place everywhere */
    emt_mpi(MPI_Win_post(from, 0, win), "MPI_Win_post");
    emt_mpi(MPI_Win_start(to, 0, win), "MPI_Win_start");
    emt_mpi(MPI_Put(src, (int)len, MPI_BYTE, right, GUARD, (int)len, MPI_BYTE, win), "MPI_Put");
    emt_mpi(MPI_Win_complete(win), "MPI_Win_complete");
    emt_mpi(MPI_Win_wait(win), "MPI_Win_wait");
    snprintf(what, sizeof what, "pscw %zu B from rank %d", len, left);
    emt_verify(win_mem + GUARD, len, emt_seed(len, (uint64_t)left, 4, 0), what);
    check_guards(what);
    MPI_Group_free(&from);
    MPI_Group_free(&to);
    MPI_Group_free(&world);
    free(src);
    emt_report("pscw        %7zu B, post/start/complete/wait", len);
}

/* ---- the MPI_Win_allocate window: every rank at every rank ---- */

/* Byte displacements in every rank's allocated window. */
enum { A_FOP = 0, A_CAS = 8, A_GACC = 16, A_I32 = 48, A_DBL = 56, A_PUT = 64 };

static MPI_Win awin;
static uint8_t *abase;

/* Check, over all ranks, that the values each rank fetched from target t
 * (vals[t][0..n-1], all ranks' together) are the multiples 0, step, ...,
 * (size * n - 1) * step, each once: their sum and the sum of their squares. */
static void check_once(const int64_t *vals, int n, int64_t step, const char *what)
{
    int sz = emt.size;
    int64_t *mine = calloc(2 * (size_t)sz, sizeof *mine),
            *all = calloc(2 * (size_t)sz, sizeof *all);
    for (int t = 0; t < sz; t++)
        for (int k = 0; k < n; k++) {
            int64_t v = vals[(size_t)t * n + k];
            if (v % step != 0 || v < 0 || v / step >= (int64_t)sz * n)
                emt_detail("%s: fetched %lld from rank %d: not a multiple of %lld in range", what,
                           (long long)v, t, (long long)step);
            mine[2 * t] += v / step;
            mine[2 * t + 1] += (v / step) * (v / step);
        }
    MPI_Allreduce(mine, all, 2 * sz, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    int64_t m = (int64_t)sz * n, s1 = m * (m - 1) / 2, s2 = (m - 1) * m * (2 * m - 1) / 6;
    for (int t = 0; t < sz; t++)
        if (all[2 * t] != s1 || all[2 * t + 1] != s2)
            emt_detail("%s at rank %d: the fetched values are not each value once (sums %lld, "
                       "%lld; want %lld, %lld)",
                       what, t, (long long)all[2 * t], (long long)all[2 * t + 1], (long long)s1,
                       (long long)s2);
    free(mine);
    free(all);
}

static int64_t *aword(size_t disp) { return (int64_t *)(void *)(abase + disp); }

static void all_fetch_op(void)
{
    int64_t *got = calloc((size_t)emt.size * NFOP2, sizeof *got), one = 1;
    emt_mpi(MPI_Win_lock_all(0, awin), "MPI_Win_lock_all");
    for (int n = 0; n < NFOP2; n++)
        for (int t = 0; t < emt.size; t++) {
            int64_t *g = &got[(size_t)t * NFOP2 + n];
            emt_mpi(MPI_Fetch_and_op(&one, g, MPI_INT64_T, t, A_FOP, MPI_SUM, awin),
                    "MPI_Fetch_and_op");
            emt_mpi(MPI_Win_flush(t, awin), "MPI_Win_flush");
            if (n > 0 && *g <= g[-1])
                emt_detail("all-fetch-op: fetched %lld after %lld from rank %d", (long long)*g,
                           (long long)g[-1], t);
        }
    emt_mpi(MPI_Win_unlock_all(awin), "MPI_Win_unlock_all");
    check_once(got, NFOP2, 1, "all-fetch-op");
    MPI_Barrier(MPI_COMM_WORLD);
    if (*aword(A_FOP) != (int64_t)emt.size * NFOP2)
        emt_detail("all-fetch-op: counter %lld, expected %lld", (long long)*aword(A_FOP),
                   (long long)emt.size * NFOP2);
    free(got);
    emt_report("all-fetch-op %d x MPI_Fetch_and_op + flush, every rank at every rank", NFOP2);
}

static void all_cas(void)
{
    int64_t *won = calloc((size_t)emt.size * NCAS, sizeof *won), dummy = 0;
    emt_mpi(MPI_Win_lock_all(0, awin), "MPI_Win_lock_all");
    for (int t = 0; t < emt.size; t++)
        for (int n = 0; n < NCAS; n++) {
            int64_t cur, next, old;
            emt_mpi(MPI_Fetch_and_op(&dummy, &cur, MPI_INT64_T, t, A_CAS, MPI_NO_OP, awin),
                    "MPI_Fetch_and_op (NO_OP)");
            emt_mpi(MPI_Win_flush(t, awin), "MPI_Win_flush");
            for (int tries = 0;; tries++) {
                next = cur + 1;
                if (emt_mpi(MPI_Compare_and_swap(&next, &cur, &old, MPI_INT64_T, t, A_CAS, awin),
                            "MPI_Compare_and_swap") != MPI_SUCCESS ||
                    emt_mpi(MPI_Win_flush(t, awin), "MPI_Win_flush") != MPI_SUCCESS)
                    break;
                if (old == cur)
                    break; /* ours */
                if (old < cur || tries > 100000) {
                    emt_detail("all-cas at rank %d: counter went from %lld to %lld", t,
                               (long long)cur, (long long)old);
                    break;
                }
                cur = old;
            }
            won[(size_t)t * NCAS + n] = cur;
        }
    emt_mpi(MPI_Win_unlock_all(awin), "MPI_Win_unlock_all");
    check_once(won, NCAS, 1, "all-cas");
    MPI_Barrier(MPI_COMM_WORLD);
    if (*aword(A_CAS) != (int64_t)emt.size * NCAS)
        emt_detail("all-cas: counter %lld, expected %lld", (long long)*aword(A_CAS),
                   (long long)emt.size * NCAS);
    free(won);
    emt_report("all-cas     %d x MPI_Compare_and_swap increments, every rank at every rank", NCAS);
}

static void all_get_acc(void)
{
    const int64_t add[4] = { 1, 2, 3, 4 };
    size_t per = (size_t)emt.size * NGA;
    int64_t *got = calloc(4 * per, sizeof *got), tot[4];
    emt_mpi(MPI_Win_lock_all(0, awin), "MPI_Win_lock_all");
    for (int n = 0; n < NGA; n++)
        for (int t = 0; t < emt.size; t++) {
            int64_t res[4];
            emt_mpi(MPI_Get_accumulate(add, 4, MPI_INT64_T, res, 4, MPI_INT64_T, t, A_GACC, 4,
                                       MPI_INT64_T, MPI_SUM, awin),
                    "MPI_Get_accumulate");
            emt_mpi(MPI_Win_flush(t, awin), "MPI_Win_flush");
            for (int j = 0; j < 4; j++)
                got[(size_t)j * per + (size_t)t * NGA + n] = res[j];
        }
    emt_mpi(MPI_Win_unlock_all(awin), "MPI_Win_unlock_all");
    for (int j = 0; j < 4; j++) {
        char what[32];
        snprintf(what, sizeof what, "all-get-acc element %d", j);
        check_once(got + (size_t)j * per, NGA, j + 1, what);
    }
    MPI_Barrier(MPI_COMM_WORLD); /* every rank's sums are in */
    int right = (emt.rank + 1) % emt.size;
    emt_mpi(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, awin), "MPI_Win_lock");
    emt_mpi(MPI_Get_accumulate(NULL, 0, MPI_INT64_T, tot, 4, MPI_INT64_T, right, A_GACC, 4,
                               MPI_INT64_T, MPI_NO_OP, awin),
            "MPI_Get_accumulate (NO_OP)");
    emt_mpi(MPI_Win_unlock(right, awin), "MPI_Win_unlock");
    for (int j = 0; j < 4; j++)
        if (tot[j] != (int64_t)emt.size * NGA * (j + 1))
            emt_detail("all-get-acc: rank %d's element %d is %lld, expected %lld", right, j,
                       (long long)tot[j], (long long)emt.size * NGA * (j + 1));
    free(got);
    emt_report("all-get-acc %d x MPI_Get_accumulate of 4 int64, every rank at every rank", NGA);
}

static void all_typed(void)
{
    int32_t mine = emt.rank * 3 + 1, was;
    double half = 0.5;
    emt_mpi(MPI_Win_lock_all(0, awin), "MPI_Win_lock_all");
    for (int t = 0; t < emt.size; t++) {
        emt_mpi(MPI_Fetch_and_op(&mine, &was, MPI_INT32_T, t, A_I32, MPI_MAX, awin),
                "MPI_Fetch_and_op (int32 MAX)");
        for (int n = 0; n < 4; n++)
            emt_mpi(MPI_Accumulate(&half, 1, MPI_DOUBLE, t, A_DBL, 1, MPI_DOUBLE, MPI_SUM, awin),
                    "MPI_Accumulate (double SUM)");
        emt_mpi(MPI_Win_flush(t, awin), "MPI_Win_flush");
        if (was < 0 || was > (emt.size - 1) * 3 + 1 || (was != 0 && was % 3 != 1))
            emt_detail("all-typed: int32 MAX fetched %d from rank %d", (int)was, t);
    }
    emt_mpi(MPI_Win_unlock_all(awin), "MPI_Win_unlock_all");
    MPI_Barrier(MPI_COMM_WORLD);
    int32_t i32;
    double d;
    memcpy(&i32, abase + A_I32, sizeof i32);
    memcpy(&d, abase + A_DBL, sizeof d);
    if (i32 != (emt.size - 1) * 3 + 1)
        emt_detail("all-typed: int32 MAX is %d, expected %d", (int)i32, (emt.size - 1) * 3 + 1);
    if (d != 2.0 * emt.size)
        emt_detail("all-typed: double sum is %g, expected %g", d, 2.0 * emt.size);
    emt_report("all-typed   int32 MPI_MAX fetch-and-op, double MPI_SUM accumulate");
}

static void all_flush(void)
{
    uint8_t *src = emt_alloc(PUTLEN), *back = emt_alloc(PUTLEN);
    char what[64];
    emt_fill(src, PUTLEN, emt_seed(PUTLEN, (uint64_t)emt.rank, 5, 0));
    emt_mpi(MPI_Win_lock_all(0, awin), "MPI_Win_lock_all");
    for (int t = 0; t < emt.size; t++) {
        MPI_Aint at = A_PUT + (MPI_Aint)emt.rank * PUTLEN;
        emt_mpi(MPI_Put(src, PUTLEN, MPI_BYTE, t, at, PUTLEN, MPI_BYTE, awin), "MPI_Put");
        emt_mpi(MPI_Win_flush(t, awin), "MPI_Win_flush");
        memset(back, 0, PUTLEN);
        emt_mpi(MPI_Get(back, PUTLEN, MPI_BYTE, t, at, PUTLEN, MPI_BYTE, awin), "MPI_Get");
        emt_mpi(MPI_Win_flush(t, awin), "MPI_Win_flush");
        snprintf(what, sizeof what, "all-flush: read back from rank %d", t);
        emt_verify(back, PUTLEN, emt_seed(PUTLEN, (uint64_t)emt.rank, 5, 0), what);
    }
    emt_mpi(MPI_Win_unlock_all(awin), "MPI_Win_unlock_all");
    MPI_Barrier(MPI_COMM_WORLD);
    for (int r = 0; r < emt.size; r++) {
        snprintf(what, sizeof what, "all-flush: from rank %d", r);
        emt_verify(abase + A_PUT + (size_t)r * PUTLEN, PUTLEN, emt_seed(PUTLEN, (uint64_t)r, 5, 0),
                   what);
    }
    free(src);
    free(back);
    emt_report("all-flush   %d B put + flush + get back, every rank at every rank", PUTLEN);
}

static void allocated_window(void)
{
    MPI_Aint len = A_PUT + (MPI_Aint)emt.size * PUTLEN;
    if (emt_mpi(MPI_Win_allocate(len, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &abase, &awin),
                "MPI_Win_allocate") != MPI_SUCCESS) {
        emt_report("allocate    MPI_Win_allocate");
        return;
    }
    MPI_Win_set_errhandler(awin, MPI_ERRORS_RETURN);
    /* zero it under an exclusive lock of our own (the window's memory is
     * the MPI library's) before anyone touches it */
    emt_mpi(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, emt.rank, 0, awin), "MPI_Win_lock (self)");
    memset(abase, 0, (size_t)len);
    emt_mpi(MPI_Win_unlock(emt.rank, awin), "MPI_Win_unlock (self)");
    MPI_Barrier(MPI_COMM_WORLD);
    emt_report("allocate    MPI_Win_allocate of %ld B per rank", (long)len);
    all_fetch_op();
    all_cas();
    all_get_acc();
    all_typed();
    all_flush();
    MPI_Win_free(&awin);
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
    pscw(right, left);
    MPI_Win_free(&win);
    free(win_mem);
    allocated_window();
    return emt_finish();
}
