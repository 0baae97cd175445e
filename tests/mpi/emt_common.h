/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * emt_common.h - helpers shared by the ethermpi MPI integration checks
 * (the .c files in this directory).  Header-only: every function is static inline, so each
 * check is a single translation unit (mpicc -O2 -std=c11 x.c).
 *
 * Conventions of every check program:
 *  - every rank runs every sub-check; a rank that finds a problem counts it
 *    and carries on (no MPI_Abort), so that all ranks stay in step;
 *  - emt_report() sums the error counts of all ranks and rank 0 prints one
 *    line per sub-check: "  ok    NAME" or "  FAIL  NAME (N errors)";
 *  - details of a mismatch go to stderr of the rank that saw it (at most a
 *    few lines per sub-check);
 *  - emt_finish() prints "PROG: N sub-checks, M failed", finalizes and
 *    returns the exit status (0 only if nothing failed on any rank).
 *
 * Data patterns depend on a seed made from (size, iteration, rank, ...) and
 * on the byte offset, so misplaced, stale, truncated or cross-wired data is
 * caught, not just corrupted bytes.
 */
#ifndef EMT_COMMON_H
#define EMT_COMMON_H

#include <mpi.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EMT_MAX_DETAIL 4 /* mismatch lines printed per sub-check and rank */
#define EMT_HOST_LEN   64
#define EMT_POISON     0xa5u

struct emt_state {
    const char *prog;
    int rank;
    int size;
    int subchecks;
    int failed;       /* sub-checks that failed (same value on every rank) */
    int local_errors; /* errors seen by this rank in the current sub-check */
    int details;      /* detail lines printed in the current sub-check */
};

static struct emt_state emt;

static inline void emt_init(int *argc, char ***argv, const char *prog)
{
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &emt.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &emt.size);
    emt.prog = prog;
    /* errors are counted and reported, not fatal */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    setvbuf(stdout, NULL, _IOLBF, 0);
}

/* exits with status 2 (the driver's "wrong rank count"), saying so on rank
 * 0, unless the job has min..max ranks (max 0: no upper bound) */
static inline void emt_need_ranks(int min, int max)
{
    if (emt.size >= min && (max == 0 || emt.size <= max))
        return;
    if (emt.rank == 0) {
        if (max == 0)
            fprintf(stderr, "%s: needs at least %d ranks, got %d\n", emt.prog, min, emt.size);
        else if (min == max)
            fprintf(stderr, "%s: needs exactly %d ranks, got %d\n", emt.prog, min, emt.size);
        else
            fprintf(stderr, "%s: needs %d..%d ranks, got %d\n", emt.prog, min, max, emt.size);
    }
    MPI_Finalize();
    exit(2);
}

/* one detail line about a problem on this rank (rate limited) */
static inline void emt_detail(const char *fmt, ...)
{
    va_list ap;

    emt.local_errors++;
    if (emt.details++ >= EMT_MAX_DETAIL)
        return;
    fprintf(stderr, "%s: rank %d: ", emt.prog, emt.rank);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
}

/* an MPI call's return code; non-success counts as an error */
static inline int emt_mpi(int rc, const char *what)
{
    if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;

        MPI_Error_string(rc, msg, &len);
        emt_detail("%s failed: %s", what, msg);
    }
    return rc;
}

/*
 * End of a sub-check: all ranks combine their error counts; rank 0 prints
 * the line.  Collective over MPI_COMM_WORLD.  Returns the global count.
 */
static inline int emt_report(const char *fmt, ...)
{
    char name[256];
    va_list ap;
    int total = 0;

    va_start(ap, fmt);
    vsnprintf(name, sizeof(name), fmt, ap);
    va_end(ap);
    if (MPI_Allreduce(&emt.local_errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD) !=
        MPI_SUCCESS)
        total = emt.local_errors > 0 ? emt.local_errors : 1;
    emt.subchecks++;
    if (total > 0)
        emt.failed++;
    if (emt.rank == 0) {
        if (total > 0)
            printf("  FAIL  %s (%d errors)\n", name, total);
        else
            printf("  ok    %s\n", name);
        fflush(stdout);
    }
    emt.local_errors = 0;
    emt.details = 0;
    return total;
}

static inline int emt_finish(void)
{
    if (emt.rank == 0) {
        printf("%s: %d sub-checks, %d failed\n", emt.prog, emt.subchecks, emt.failed);
        fflush(stdout);
    }
    MPI_Finalize();
    return emt.failed > 0 ? 1 : 0;
}

/* ---------------------------------------------------------- patterns -- */

static inline uint64_t emt_mix(uint64_t x)
{ /* splitmix64 finaliser */
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* seed from up to four small numbers (size, iteration, rank, ...) */
static inline uint64_t emt_seed(uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
    return emt_mix(emt_mix(emt_mix(emt_mix(a) ^ b) ^ c) ^ d);
}

static inline uint8_t emt_byte(uint64_t seed, size_t i)
{
    uint64_t x = (seed + i) * 0x9e3779b97f4a7c15ull;

    x ^= x >> 29;
    return (uint8_t)(x >> 32);
}

static inline void emt_fill(void *buf, size_t n, uint64_t seed)
{
    uint8_t *p = buf;

    for (size_t i = 0; i < n; i++)
        p[i] = emt_byte(seed, i);
}

/* returns the number of wrong bytes; reports the first one */
static inline size_t emt_verify(const void *buf, size_t n, uint64_t seed, const char *what)
{
    const uint8_t *p = buf;
    size_t bad = 0, first = 0;

    for (size_t i = 0; i < n; i++) {
        if (p[i] != emt_byte(seed, i)) {
            if (bad++ == 0)
                first = i;
        }
    }
    if (bad)
        emt_detail("%s: %zu of %zu bytes wrong, first at offset %zu (got 0x%02x, want 0x%02x)",
                   what, bad, n, first, p[first], emt_byte(seed, first));
    return bad;
}

/* bytes that must still hold EMT_POISON (guard areas, holes of a datatype) */
static inline size_t emt_verify_poison(const void *buf, size_t n, const char *what)
{
    const uint8_t *p = buf;
    size_t bad = 0, first = 0;

    for (size_t i = 0; i < n; i++) {
        if (p[i] != EMT_POISON) {
            if (bad++ == 0)
                first = i;
        }
    }
    if (bad)
        emt_detail("%s: %zu of %zu guard bytes overwritten, first at offset %zu (0x%02x)", what,
                   bad, n, first, p[first]);
    return bad;
}

static inline void *emt_alloc(size_t n)
{
    void *p = malloc(n ? n : 1);

    if (!p) {
        fprintf(stderr, "%s: rank %d: out of memory (%zu bytes)\n", emt.prog, emt.rank, n);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

/* ------------------------------------------------------------- hosts -- */

/*
 * Rank 0 prints the host of every rank once ("  host  rank R: NAME").
 * hosts_out (optional, emt.size * EMT_HOST_LEN bytes) receives all names on
 * every rank.  Returns the number of distinct hosts (on every rank).
 */
static inline int emt_hosts(char *hosts_out)
{
    char me[EMT_HOST_LEN] = { 0 };
    char *all = emt_alloc((size_t)emt.size * EMT_HOST_LEN);
    int len = 0, distinct = 0;
    char full[MPI_MAX_PROCESSOR_NAME];

    MPI_Get_processor_name(full, &len);
    memcpy(me, full, (size_t)len < sizeof(me) - 1 ? (size_t)len : sizeof(me) - 1);
    MPI_Allgather(me, EMT_HOST_LEN, MPI_CHAR, all, EMT_HOST_LEN, MPI_CHAR, MPI_COMM_WORLD);
    for (int r = 0; r < emt.size; r++) {
        int seen = 0;

        for (int q = 0; q < r; q++)
            if (strcmp(all + (size_t)q * EMT_HOST_LEN, all + (size_t)r * EMT_HOST_LEN) == 0)
                seen = 1;
        distinct += !seen;
        if (emt.rank == 0)
            printf("  host  rank %d: %s\n", r, all + (size_t)r * EMT_HOST_LEN);
    }
    if (hosts_out)
        memcpy(hosts_out, all, (size_t)emt.size * EMT_HOST_LEN);
    free(all);
    return distinct;
}

/* sub-check: the job spans at least min_hosts hosts and ranks a and b are
 * on different hosts (so their traffic crosses the emulated link) */
static inline void emt_require_spread(int min_hosts, int a, int b)
{
    char *all = emt_alloc((size_t)emt.size * EMT_HOST_LEN);
    int distinct = emt_hosts(all);

    if (emt.rank == 0) {
        if (distinct < min_hosts)
            emt_detail("ranks run on %d host(s), need %d", distinct, min_hosts);
        if (a >= 0 && b >= 0 && a < emt.size && b < emt.size &&
            strcmp(all + (size_t)a * EMT_HOST_LEN, all + (size_t)b * EMT_HOST_LEN) == 0)
            emt_detail("ranks %d and %d are on the same host", a, b);
    }
    free(all);
    emt_report("placement: %d ranks on %d hosts", emt.size, distinct);
}

/* argv helper: value of "--name=V" or default */
static inline long emt_arg(int argc, char **argv, const char *name, long def)
{
    size_t n = strlen(name);

    for (int i = 1; i < argc; i++)
        if (strncmp(argv[i], name, n) == 0 && argv[i][n] == '=')
            return strtol(argv[i] + n + 1, NULL, 0);
    return def;
}

#endif /* EMT_COMMON_H */
