/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mpi_threads - MPI_THREAD_MULTIPLE over the transport under test.
 *
 *   init_thread   MPI_Init_thread(MPI_THREAD_MULTIPLE) provides MULTIPLE
 *                 (a BTL or provider that cannot serve it makes the MPI
 *                 fall back to another transport or lower the level: both
 *                 are failures here, the former caught by the driver's
 *                 transport check, the latter by this one)
 *   p2p_thread_T  (T = 0..3) four threads at once, each on its own
 *                 MPI_Comm_dup of MPI_COMM_WORLD: messages of 1 B .. 1 MiB
 *                 (eager and rendezvous) both ways with the partner rank
 *                 (rank ^ 1), every byte checked against a pattern seeded
 *                 by (thread, size, iteration, sender)
 *   coll_thread   a fifth thread, at the same time, on another dup:
 *                 Allreduce (sum) and Bcast (rotating root) with checks
 *
 * An even number of ranks (pairs).  A watchdog (SIGALRM after
 * MPI_THREADS_TIMEOUT seconds, default 100) ends a hung run with exit 3;
 * any wrong byte, count or MPI error makes the exit status 1.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include "emt_common.h"

#define NP2P      4
#define MAX_BYTES (1u << 20)
#define ITERS     2
#define COLL_ITER 100

struct worker {
    int id;
    MPI_Comm comm;
    int errors;
    int details;
    int started;
    pthread_t th;
};

static int partner;

/* a detail line from a thread (emt_detail is not thread-safe: it counts
 * into the one sub-check in progress) */
static void wdetail(struct worker *w, const char *fmt, ...)
{
    va_list ap;
    w->errors++;
    if (w->details++ >= EMT_MAX_DETAIL)
        return;
    char line[256];
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "mpi_threads: rank %d thread %d: %s\n", emt.rank, w->id, line);
}

static void wcheck(struct worker *w, int rc, const char *what)
{
    if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, msg, &len);
        wdetail(w, "%s failed: %s", what, msg);
    }
}

static void *p2p(void *u)
{
    struct worker *w = u;
    uint8_t *sbuf = malloc(MAX_BYTES), *rbuf = malloc(MAX_BYTES);
    if (!sbuf || !rbuf) {
        wdetail(w, "out of memory");
        free(sbuf);
        free(rbuf);
        return NULL;
    }
    for (size_t n = 1; n <= MAX_BYTES; n *= 2) {
        for (int it = 0; it < ITERS; it++) {
            MPI_Request rq[2];
            emt_fill(sbuf, n, emt_seed((uint64_t)w->id, n, (uint64_t)it, (uint64_t)emt.rank));
            memset(rbuf, EMT_POISON, n);
            wcheck(w, MPI_Irecv(rbuf, (int)n, MPI_BYTE, partner, it, w->comm, &rq[0]), "Irecv");
            wcheck(w, MPI_Isend(sbuf, (int)n, MPI_BYTE, partner, it, w->comm, &rq[1]), "Isend");
            MPI_Status st[2];
            wcheck(w, MPI_Waitall(2, rq, st), "Waitall");
            int count = -1;
            MPI_Get_count(&st[0], MPI_BYTE, &count);
            if (count != (int)n)
                wdetail(w, "%zu B iteration %d: received %d bytes", n, it, count);
            uint64_t seed = emt_seed((uint64_t)w->id, n, (uint64_t)it, (uint64_t)partner);
            for (size_t i = 0; i < n; i++)
                if (rbuf[i] != emt_byte(seed, i)) {
                    wdetail(w, "%zu B iteration %d: byte %zu is 0x%02x, want 0x%02x", n, it, i,
                            rbuf[i], emt_byte(seed, i));
                    break;
                }
        }
    }
    free(sbuf);
    free(rbuf);
    return NULL;
}

static void *coll(void *u)
{
    struct worker *w = u;
    enum { CMAX = 16384 };
    int *v = malloc(CMAX * sizeof *v), *sum = malloc(CMAX * sizeof *sum);
    if (!v || !sum) {
        wdetail(w, "out of memory");
        free(v);
        free(sum);
        return NULL;
    }
    for (int it = 0; it < COLL_ITER; it++) {
        int count = 1 + (it * 977) % CMAX;
        for (int i = 0; i < count; i++)
            v[i] = emt.rank * 1000 + i + it;
        wcheck(w, MPI_Allreduce(v, sum, count, MPI_INT, MPI_SUM, w->comm), "Allreduce");
        /* sum over ranks r of (1000 r + i + it) */
        long base = 1000L * emt.size * (emt.size - 1) / 2;
        for (int i = 0; i < count; i++)
            if (sum[i] != (int)(base + (long)emt.size * (i + it))) {
                wdetail(w, "Allreduce %d ints iteration %d: [%d] = %d, want %ld", count, it, i,
                        sum[i], base + (long)emt.size * (i + it));
                break;
            }
        int root = it % emt.size;
        if (emt.rank == root)
            for (int i = 0; i < count; i++)
                v[i] = root * 7 + i * 3 + it;
        else
            memset(v, 0, (size_t)count * sizeof *v);
        wcheck(w, MPI_Bcast(v, count, MPI_INT, root, w->comm), "Bcast");
        for (int i = 0; i < count; i++)
            if (v[i] != root * 7 + i * 3 + it) {
                wdetail(w, "Bcast %d ints from %d iteration %d: [%d] = %d", count, root, it, i,
                        v[i]);
                break;
            }
    }
    free(v);
    free(sum);
    return NULL;
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "mpi_threads: timed out (a thread hung: MPI_THREADS_TIMEOUT)\n";
    ssize_t r = write(2, msg, sizeof msg - 1);
    (void)r;
    _exit(3);
}

int main(int argc, char **argv)
{
    int provided = -1;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &emt.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &emt.size);
    emt.prog = "mpi_threads";
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    setvbuf(stdout, NULL, _IOLBF, 0);
    emt_need_ranks(2, 0);
    if (emt.size % 2) {
        if (emt.rank == 0)
            fprintf(stderr, "mpi_threads: needs an even number of ranks, got %d\n", emt.size);
        MPI_Finalize();
        return 2;
    }
    const char *t = getenv("MPI_THREADS_TIMEOUT");
    signal(SIGALRM, on_alarm);
    alarm(t && atoi(t) > 0 ? (unsigned)atoi(t) : 100u);
    partner = emt.rank ^ 1;

    if (provided != MPI_THREAD_MULTIPLE)
        emt_detail("MPI_Init_thread provided level %d, not MPI_THREAD_MULTIPLE (%d)", provided,
                   MPI_THREAD_MULTIPLE);
    emt_report("init_thread");
    if (provided != MPI_THREAD_MULTIPLE)
        return emt_finish();

    /* the dups: collective, so made here in one order on every rank */
    struct worker w[NP2P + 1];
    memset(w, 0, sizeof w);
    for (int i = 0; i <= NP2P; i++) {
        w[i].id = i;
        emt_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &w[i].comm), "MPI_Comm_dup");
        MPI_Comm_set_errhandler(w[i].comm, MPI_ERRORS_RETURN);
    }
    for (int i = 0; i <= NP2P; i++) {
        w[i].started = pthread_create(&w[i].th, NULL, i < NP2P ? p2p : coll, &w[i]) == 0;
        if (!w[i].started)
            w[i].errors++; /* its partner's thread then waits: the watchdog ends the run */
    }
    for (int i = 0; i <= NP2P; i++)
        if (w[i].started)
            pthread_join(w[i].th, NULL);
    alarm(0);
    for (int i = 0; i <= NP2P; i++) {
        emt.local_errors += w[i].errors;
        if (i < NP2P)
            emt_report("p2p_thread_%d (1 B .. 1 MiB, both ways)", i);
        else
            emt_report("coll_thread (Allreduce, Bcast)");
        MPI_Comm_free(&w[i].comm);
    }
    return emt_finish();
}
