/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * em_osc -- one-sided operation latency, passive target: rank 0 issues one
 * operation on rank 1's window (MPI_Win_allocate, MPI_Win_lock_all) and
 * completes it with MPI_Win_flush, again and again.  An argument names the
 * operation:
 *
 *   put  MPI_Put of the size                      (8 B - 64 KiB)
 *   get  MPI_Get of the size
 *   fop  MPI_Fetch_and_op, one int64, MPI_SUM     (size 8)
 *   cas  MPI_Compare_and_swap, one int64          (size 8)
 *
 * The time per operation is what an MPI_Win_flush-synchronised program
 * waits: the operation reached (or came back from) the target.  Rank 1
 * (and any others) wait in a barrier meanwhile, which drives their
 * progress, as an MPI over a network without remote-access hardware needs.
 *
 * Checked: before each size, one put/get's every byte (the target's
 * window is compared after a barrier), and after the timed loop of fop /
 * cas the target's counter holds exactly what the operations made of it
 * (an atomic lost or applied twice fails the run).
 */
#include "em_common.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum osc_op { OSC_PUT, OSC_GET, OSC_FOP, OSC_CAS };

static struct em_prog prog = {
    .prog = "em_osc",
    .bench = "osc", /* osc-<operation>, set in main */
    .summary = "one-sided latency (operation + MPI_Win_flush, us), rank 0 on rank 1's window; "
               "name the operation as an argument: put, get, fop or cas",
    .optmask = EM_OPT_SIZES | EM_OPT_ITERS | EM_OPT_WARMUP,
    .normal = { .min_size = 8,
                .max_size = 64u << 10,
                .iters_small = 2000,
                .iters_large = 200,
                .warmup_small = 100,
                .warmup_large = 10 },
    .quick = { .min_size = 8,
               .max_size = 4u << 10,
               .iters_small = 100,
               .iters_large = 20,
               .warmup_small = 10,
               .warmup_large = 2 },
    .min_ranks = 2,
};

static MPI_Win win;
static unsigned char *base; /* the window's memory, max_size bytes at every rank */
static int64_t cas_state;   /* what the target's word 1 holds now (rank 0's view) */

static void op_round(struct em_bench *b, size_t size, void *ctx)
{
    enum osc_op op = *(enum osc_op *)ctx;
    int64_t one = 1, got = 0, cmp = 0;
    switch (op) {
    case OSC_PUT:
        EM_CHECK(MPI_Put(b->sbuf, (int)size, MPI_BYTE, 1, 0, (int)size, MPI_BYTE, win));
        break;
    case OSC_GET:
        EM_CHECK(MPI_Get(b->rbuf, (int)size, MPI_BYTE, 1, 0, (int)size, MPI_BYTE, win));
        break;
    case OSC_FOP: EM_CHECK(MPI_Fetch_and_op(&one, &got, MPI_INT64_T, 1, 0, MPI_SUM, win)); break;
    case OSC_CAS:
        /* swaps 0 <-> 1: the compare value is what the last swap left, so
         * every swap must find it (checked below and at the end) */
        cmp = cas_state;
        one = 1 - cas_state;
        EM_CHECK(MPI_Compare_and_swap(&one, &cmp, &got, MPI_INT64_T, 1, 8, win));
        break;
    }
    EM_CHECK(MPI_Win_flush(1, win));
    if (op == OSC_CAS) {
        if (got != cas_state)
            em_fail("content mismatch: compare-and-swap found %lld, expected %lld", (long long)got,
                    (long long)cas_state);
        cas_state = 1 - cas_state;
    }
}

/* One put of the pattern, checked at the target; one get of it, checked
 * at the origin. */
static void check_size(struct em_bench *b, size_t size)
{
    if (b->rank == 0) {
        em_fill(b->sbuf, size, 0);
        EM_CHECK(MPI_Put(b->sbuf, (int)size, MPI_BYTE, 1, 0, (int)size, MPI_BYTE, win));
        EM_CHECK(MPI_Win_flush(1, win));
    }
    EM_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    if (b->rank == 1) {
        EM_CHECK(MPI_Win_sync(win));
        if (b->o.corrupt && size > 0)
            base[size / 2] ^= 0x5a;
        size_t bad = em_check(base, size, 0);
        if (bad != SIZE_MAX)
            em_fail("content mismatch: put of %zu bytes, byte %zu at the target", size, bad);
    }
    EM_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    if (b->rank == 0) {
        em_poison(b->rbuf, size, 0);
        EM_CHECK(MPI_Get(b->rbuf, (int)size, MPI_BYTE, 1, 0, (int)size, MPI_BYTE, win));
        EM_CHECK(MPI_Win_flush(1, win));
        size_t bad = em_check(b->rbuf, size, 0);
        if (bad != SIZE_MAX)
            em_fail("content mismatch: get of %zu bytes, byte %zu", size, bad);
    }
    EM_CHECK(MPI_Barrier(MPI_COMM_WORLD));
}

/* The target's counters after @p n operations of @p op in all: fop adds 1
 * each (word 0); cas alternates word 1 between 0 and 1 and can only move
 * it when the compare value matched, so an even count leaves 0. */
static void check_atomics(struct em_bench *b, enum osc_op op, long n)
{
    EM_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    if (b->rank == 1) {
        int64_t w[2];
        EM_CHECK(MPI_Win_sync(win));
        memcpy(w, base, sizeof w);
        if (b->o.corrupt)
            w[op == OSC_FOP ? 0 : 1] += 1;
        if (op == OSC_FOP && w[0] != n)
            em_fail("content mismatch: %ld fetch-and-add of 1 left %lld at the target", n,
                    (long long)w[0]);
        if (op == OSC_CAS && w[1] != (n & 1))
            em_fail("content mismatch: %ld alternating compare-and-swaps left %lld at the target",
                    n, (long long)w[1]);
    }
    EM_CHECK(MPI_Barrier(MPI_COMM_WORLD));
}

/* The operation: the one argument that names it (anywhere: compare.py
 * appends -q after it), taken out of argv so that em_setup parses the
 * options alone. */
static enum osc_op take_op(int *argc, char **argv)
{
    static const char *const names[] = { "put", "get", "fop", "cas" };
    for (int a = 1; a < *argc; a++)
        for (int i = 0; i < 4; i++)
            if (0 == strcmp(argv[a], names[i])) {
                memmove(&argv[a], &argv[a + 1], (size_t)(*argc - a) * sizeof *argv);
                (*argc)--;
                return (enum osc_op)i;
            }
    fprintf(stderr, "em_osc: name the operation: put, get, fop or cas (em_osc -h for options)\n");
    exit(2);
}

int main(int argc, char **argv)
{
    static const char *const unit[] = { "us" };
    struct em_bench b;
    int want_help = argc > 1 && (0 == strcmp(argv[1], "-h") || 0 == strcmp(argv[1], "--help"));
    enum osc_op op = want_help ? OSC_PUT : take_op(&argc, argv);
    static const char *const tables[] = { "osc-put", "osc-get", "osc-fop", "osc-cas" };
    prog.bench = tables[op]; /* one compare.py benchmark per operation */
    em_bench_begin(&b, &argc, &argv, &prog, NULL);
    const struct em_opts *o = &b.o;
    static const char *const metric[] = { "put", "get", "fop", "cas" };
    const char *const mine[] = { metric[op] };
    /* at least the two counters (fop's word 0, cas's word 1) */
    size_t wbytes = o->max_size < 16 ? 16 : o->max_size;
    EM_CHECK(MPI_Win_allocate((MPI_Aint)wbytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    memset(base, 0, wbytes);
    EM_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    EM_CHECK(MPI_Win_lock_all(0, win));
    em_bench_header(&b, 1, mine, unit,
                    "# em_osc: %s, %d ranks (0 -> 1 measured), iterations %ld:%ld, warm-up "
                    "%ld:%ld, large above %zu B%s\n",
                    metric[op], b.nranks, o->iters_small, o->iters_large, o->warmup_small,
                    o->warmup_large, EM_LARGE_THRESHOLD, o->quick ? ", quick" : "");
    long atomics = 0;
    /* the first operations of a window cost several times the later ones
     * (memif: 5.6 us against 0.8 for the first size's puts, after its own
     * warm-up; fetch-and-op and compare-and-swap have one size only): a
     * start-up cost of the window, not of any size, paid here untimed */
    long pre = 2 * em_iters(o, b.sizes[0]);
    if (b.rank == 0)
        (void)em_bench_time(&b, b.sizes[0], 0, pre, op_round, &op);
    atomics += pre;
    for (size_t k = 0; k < b.nsizes; k++) {
        size_t size = b.sizes[k];
        if (op == OSC_PUT || op == OSC_GET)
            check_size(&b, size);
        long iters = em_iters(o, size), warm = em_warmup(o, size);
        if (b.rank == 0) {
            double us = em_bench_time(&b, size, warm, iters, op_round, &op) * 1e6 / (double)iters;
            em_print_row(size, 1, &us);
        }
        atomics += warm + iters;
        EM_CHECK(MPI_Barrier(MPI_COMM_WORLD)); /* the target progresses here */
    }
    if (op == OSC_FOP || op == OSC_CAS)
        check_atomics(&b, op, atomics);
    EM_CHECK(MPI_Win_unlock_all(win));
    EM_CHECK(MPI_Win_free(&win));
    em_bench_end(&b);
    return 0;
}
