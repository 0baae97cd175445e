/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * em_mt_rate -- multi-threaded message rate under MPI_THREAD_MULTIPLE
 * (the pattern of OSU's osu_mbw_mr, with threads instead of rank pairs):
 * T threads on rank 0 each send windows of W messages to their partner
 * thread on rank 1, each pair on its own duplicated communicator (no
 * matching between threads), and every window is answered with a 0-byte
 * message.  The result is the messages per second of all T pairs
 * together, from the first thread's start to the last one's end.
 *
 * What it shows: whether a transport lets threads move messages side by
 * side, or makes them queue behind one lock.  Ranks other than 0 and 1
 * only meet the barriers.  Every size ends with a content check per
 * thread (a deterministic pattern per thread, so a message delivered on
 * another thread's communicator fails it).
 */
#include "em_common.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct em_prog prog = {
    .prog = "em_mt_rate",
    .bench = "mt-rate",
    .summary = "messages per second of T threads per rank, each on its own communicator "
               "(MPI_THREAD_MULTIPLE), rank 0 to 1, windows of W messages",
    .optmask = EM_OPT_SIZES | EM_OPT_ITERS | EM_OPT_WARMUP | EM_OPT_WINDOW | EM_OPT_THREADS,
    .normal = { .min_size = 8,
                .max_size = 4096,
                .iters_small = 200,
                .iters_large = 50,
                .warmup_small = 20,
                .warmup_large = 5,
                .window = 64,
                .threads = 1 },
    .quick = { .min_size = 8,
               .max_size = 1024,
               .iters_small = 10,
               .iters_large = 5,
               .warmup_small = 2,
               .warmup_large = 1,
               .window = 16,
               .threads = 1 },
    .min_ranks = 2,
    .thread_multiple = 1,
};

struct worker {
    pthread_t tid;
    int index; /* thread number, also its pattern's direction */
    MPI_Comm comm;
    struct em_bench *b;
    size_t size;
    long warm, iters;
    unsigned char *sbuf, *rbuf; /* the window's slots, window * size bytes each */
    MPI_Request *req;
    pthread_barrier_t *start; /* the rank's threads start their timed part together */
    double t0, t1;
};

static void window_round(struct worker *w)
{
    const struct em_opts *o = &w->b->o;
    int n = o->window, count = (int)w->size;
    if (w->b->rank == 0) {
        for (int k = 0; k < n; k++)
            EM_CHECK(MPI_Isend(w->sbuf + (size_t)k * w->size, count, MPI_BYTE, 1, EM_TAG_DATA,
                               w->comm, &w->req[k]));
        EM_CHECK(MPI_Waitall(n, w->req, MPI_STATUSES_IGNORE));
        EM_CHECK(MPI_Recv(NULL, 0, MPI_BYTE, 1, EM_TAG_ACK, w->comm, MPI_STATUS_IGNORE));
    } else {
        for (int k = 0; k < n; k++)
            EM_CHECK(MPI_Irecv(w->rbuf + (size_t)k * w->size, count, MPI_BYTE, 0, EM_TAG_DATA,
                               w->comm, &w->req[k]));
        EM_CHECK(MPI_Waitall(n, w->req, MPI_STATUSES_IGNORE));
        EM_CHECK(MPI_Send(NULL, 0, MPI_BYTE, 0, EM_TAG_ACK, w->comm));
    }
}

/* One window whose every message carries this thread's pattern, checked
 * at rank 1 (the -C self-test flips one received byte first). */
static void checked_round(struct worker *w)
{
    unsigned dir = 16u + (unsigned)w->index;
    for (int k = 0; k < w->b->o.window; k++) {
        if (w->b->rank == 0)
            em_fill(w->sbuf + (size_t)k * w->size, w->size, dir);
        else
            em_poison(w->rbuf + (size_t)k * w->size, w->size, dir);
    }
    window_round(w);
    if (w->b->rank != 1)
        return;
    for (int k = 0; k < w->b->o.window; k++) {
        unsigned char *at = w->rbuf + (size_t)k * w->size;
        if (w->b->o.corrupt && k == 0 && w->index == 0 && w->size > 0)
            at[w->size / 2] ^= 0x5a;
        size_t bad = em_check(at, w->size, dir);
        if (bad != SIZE_MAX)
            em_fail("content mismatch: thread %d, message %d of %zu bytes, byte %zu", w->index, k,
                    w->size, bad);
    }
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    for (long i = 0; i < w->warm; i++)
        window_round(w);
    pthread_barrier_wait(w->start);
    w->t0 = MPI_Wtime();
    for (long i = 0; i < w->iters; i++)
        window_round(w);
    w->t1 = MPI_Wtime();
    checked_round(w);
    return NULL;
}

/* Messages per second of the rank's threads for one size. */
static double run_size(struct em_bench *b, struct worker *ws, int nt, size_t size)
{
    pthread_barrier_t start;
    if (pthread_barrier_init(&start, NULL, (unsigned)nt) != 0)
        em_fail("pthread_barrier_init failed");
    EM_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    for (int t = 0; t < nt; t++) {
        ws[t].size = size;
        ws[t].warm = em_warmup(&b->o, size);
        ws[t].iters = em_iters(&b->o, size);
        ws[t].start = &start;
        if (pthread_create(&ws[t].tid, NULL, worker_main, &ws[t]) != 0)
            em_fail("pthread_create failed for thread %d", t);
    }
    double first = 0, last = 0;
    for (int t = 0; t < nt; t++) {
        pthread_join(ws[t].tid, NULL);
        if (t == 0 || ws[t].t0 < first)
            first = ws[t].t0;
        if (t == 0 || ws[t].t1 > last)
            last = ws[t].t1;
    }
    pthread_barrier_destroy(&start);
    double msgs = (double)nt * (double)b->o.window * (double)ws[0].iters;
    return last > first ? msgs / (last - first) : 0.0;
}

int main(int argc, char **argv)
{
    static const char *const metric[] = { "rate" };
    static const char *const unit[] = { "msg/s" };
    struct em_bench b;

    em_bench_begin(&b, &argc, &argv, &prog, NULL);
    const struct em_opts *o = &b.o;
    int nt = o->threads;
    struct worker *ws = calloc((size_t)nt, sizeof *ws);
    if (!ws)
        em_fail("out of memory");
    /* every rank duplicates (collective, in the same order); only 0 and 1 use them */
    for (int t = 0; t < nt; t++) {
        EM_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &ws[t].comm));
        ws[t].index = t;
        ws[t].b = &b;
        ws[t].sbuf = em_alloc((size_t)o->window * o->max_size);
        ws[t].rbuf = em_alloc((size_t)o->window * o->max_size);
        ws[t].req = calloc((size_t)o->window, sizeof(MPI_Request));
        if (!ws[t].req)
            em_fail("out of memory");
    }
    em_bench_header(&b, 1, metric, unit,
                    "# em_mt_rate: %d ranks (0 -> 1 measured), %d thread%s per rank, window %d, "
                    "iterations %ld:%ld, warm-up %ld:%ld, large above %zu B%s\n",
                    b.nranks, nt, nt == 1 ? "" : "s", o->window, o->iters_small, o->iters_large,
                    o->warmup_small, o->warmup_large, EM_LARGE_THRESHOLD,
                    o->quick ? ", quick" : "");
    for (size_t k = 0; k < b.nsizes; k++) {
        size_t size = b.sizes[k];
        if (b.rank <= 1) {
            double rate = run_size(&b, ws, nt, size);
            if (b.rank == 0)
                em_print_row(size, 1, &rate);
        } else {
            EM_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        }
    }
    for (int t = 0; t < nt; t++) {
        EM_CHECK(MPI_Comm_free(&ws[t].comm));
        free(ws[t].sbuf);
        free(ws[t].rbuf);
        free(ws[t].req);
    }
    free(ws);
    em_bench_end(&b);
    return 0;
}
