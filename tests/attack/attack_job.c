/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * attack_job: the victim job of tests/attack/run-attack-tests.  Ranks 0 and
 * 1 (on two nodes) exchange messages of three size classes for SECONDS
 * (argv[1], default 10): 1 KiB (eager, one frame), 24 KiB (eager, several
 * fragments: a forged first fragment can cut its reassembly) and 320 KiB
 * (rendezvous: a put and an ob1 FIN, the target of the forged-FIN class).
 * Every message carries a pattern seeded by (iteration, size, direction),
 * checked byte for byte by the receiver, so an injected frame that reaches
 * the PML in place of a real one shows up as a data error, not just as a
 * crash or a hang.
 *
 * With "rma" as argv[2] (the BTL rows of run-attack-tests: osc rdma, Open
 * MPI 4.1's default, over our BTL) the job also keeps live one-sided
 * traffic into rank 1, the victim: a window from MPI_Win_allocate, and
 * after every exchange rank 0 runs one passive-target epoch on rank 1
 * (MPI_Win_lock exclusive; an 8 KiB MPI_Put, MPI_Win_flush, an MPI_Get of
 * the same bytes; MPI_Fetch_and_op(SUM, 1) on a counter;
 * MPI_Compare_and_swap n -> n + 1 on a word; MPI_Win_unlock).  So rank 1
 * has registered regions that the frames name (PUT frames with the put
 * extension; GET and ATOMIC requests on the engine's tag 255), which the
 * forger's one-sided classes aim at.  Rank 0 checks the bytes it gets back
 * and every fetched value (the counter and the word must read n in epoch
 * n); at the end rank 1 checks its own window: counter and word at the
 * number of epochs, the last put's bytes in place.
 *
 * Output of rank 0: "attack_job: running" after the first exchange (traffic
 * flows, the forger may start), then "attack_job: ok N exchanges verified"
 * (", M one-sided epochs" with rma) or "attack_job: FAIL N errors in M
 * exchanges".  Exit 0 only if no rank saw an error.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const int sizes[] = { 1024, 24 * 1024, 320 * 1024 };
#define NSIZES ((int)(sizeof sizes / sizeof sizes[0]))
#define MAXSZ  (320 * 1024)

static uint8_t pattern_byte(uint64_t seed, size_t i)
{
    uint64_t x = seed ^ (i * 0x9E3779B97F4A7C15ull);
    x ^= x >> 29;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 32;
    return (uint8_t)x;
}

static void fill(uint8_t *b, int n, uint64_t seed)
{
    for (int i = 0; i < n; i++)
        b[i] = pattern_byte(seed, (size_t)i);
}

/* ---- the one-sided phase (argv[2] "rma") ---- */
#define WINLEN  (64 * 1024)  /* put/get area of the window */
#define PUTSZ   (8 * 1024)   /* one put: several PUT frames */
#define CNT_OFF WINLEN       /* int64 counter: MPI_Fetch_and_op(SUM, 1) */
#define CAS_OFF (WINLEN + 8) /* int64 word: MPI_Compare_and_swap n -> n + 1 */
#define WINSZ   (WINLEN + 16)

static MPI_Win win = MPI_WIN_NULL;
static uint8_t *wmem;

static uint64_t rma_seed(long n) { return ((uint64_t)n << 20) ^ 0x5EEDull; }
static MPI_Aint rma_off(long n) { return (MPI_Aint)(n % (WINLEN / PUTSZ)) * PUTSZ; }

/* Epoch n of rank 0 on rank 1's window; its errors (0 .. 3). */
static long rma_epoch(long n, uint8_t *sbuf, uint8_t *rbuf)
{
    uint64_t seed = rma_seed(n);
    MPI_Aint off = rma_off(n);
    int64_t one = 1, old = -1, want = n, next = n + 1, got = -1;
    fill(sbuf, PUTSZ, seed);
    memset(rbuf, 0xa5, PUTSZ);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win);
    MPI_Put(sbuf, PUTSZ, MPI_BYTE, 1, off, PUTSZ, MPI_BYTE, win);
    MPI_Win_flush(1, win); /* the put is complete at the target */
    MPI_Get(rbuf, PUTSZ, MPI_BYTE, 1, off, PUTSZ, MPI_BYTE, win);
    MPI_Fetch_and_op(&one, &old, MPI_INT64_T, 1, CNT_OFF, MPI_SUM, win);
    MPI_Compare_and_swap(&next, &want, &got, MPI_INT64_T, 1, CAS_OFF, win);
    MPI_Win_unlock(1, win);
    long bad = 0, e = 0;
    for (int i = 0; i < PUTSZ; i++)
        bad += rbuf[i] != pattern_byte(seed, (size_t)i);
    e += bad != 0;
    e += old != n;
    e += got != n;
    if (e)
        fprintf(stderr,
                "attack_job: rank 0: one-sided epoch %ld: %ld bytes got back differ, "
                "fetch-and-op %lld (want %ld), compare-and-swap %lld (want %ld)\n",
                n, bad, (long long)old, n, (long long)got, n);
    return e;
}

/* Rank 1 after the last of @p n epochs: its own window; errors (0 .. 3). */
static long rma_check(long n)
{
    int64_t cnt, cas;
    long e = 0;
    MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
    memcpy(&cnt, wmem + CNT_OFF, sizeof cnt);
    memcpy(&cas, wmem + CAS_OFF, sizeof cas);
    if (n > 0) {
        const uint8_t *b = wmem + rma_off(n - 1);
        for (int i = 0; i < PUTSZ; i++)
            if (b[i] != pattern_byte(rma_seed(n - 1), (size_t)i)) {
                e++;
                break;
            }
    }
    MPI_Win_unlock(1, win);
    e += cnt != n;
    e += cas != n;
    if (e)
        fprintf(stderr,
                "attack_job: rank 1: window after %ld epochs: counter %lld, word %lld, "
                "last put %s\n",
                n, (long long)cnt, (long long)cas, e > (cnt != n) + (cas != n) ? "corrupt" : "ok");
    return e;
}

/* errors in a received message (length, content) */
static long verify(const uint8_t *b, int n, const MPI_Status *st, int want, uint64_t seed)
{
    int count = -1;
    MPI_Get_count(st, MPI_BYTE, &count);
    if (count != want)
        return 1;
    long bad = 0;
    for (int i = 0; i < n; i++)
        bad += b[i] != pattern_byte(seed, (size_t)i);
    return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
    int rank, size;
    double limit = argc > 1 ? atof(argv[1]) : 10.0;
    int rma = argc > 2 && !strcmp(argv[2], "rma");
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    uint8_t *sbuf = malloc(MAXSZ), *rbuf = malloc(MAXSZ + 64);
    if (!sbuf || !rbuf || size < 2)
        MPI_Abort(MPI_COMM_WORLD, 2);
    if (rma) { /* a failure aborts: the window's errors go to MPI_COMM_WORLD's handler */
        MPI_Win_allocate(WINSZ, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &wmem, &win);
        memset(wmem, 0, WINSZ);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    long errors = 0, n = 0;
    double t0 = MPI_Wtime();
    int go = 1;
    while (go && rank < 2) {
        int peer = 1 - rank;
        if (rank == 0)
            go = MPI_Wtime() - t0 < limit;
        MPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (!go)
            break;
        int sz = sizes[n % NSIZES];
        for (int dir = 0; dir < 2; dir++) {
            uint64_t seed = ((uint64_t)n << 20) ^ ((uint64_t)sz << 2) ^ (uint64_t)dir;
            MPI_Status st;
            if (rank == dir) {
                fill(sbuf, sz, seed);
                MPI_Send(sbuf, sz, MPI_BYTE, peer, 7 + dir, MPI_COMM_WORLD);
            } else {
                memset(rbuf, 0xa5, (size_t)sz + 64);
                MPI_Recv(rbuf, sz + 64, MPI_BYTE, peer, 7 + dir, MPI_COMM_WORLD, &st);
                long e = verify(rbuf, sz, &st, sz, seed);
                if (e && errors < 4)
                    fprintf(stderr, "attack_job: rank %d: exchange %ld (%d B) corrupt\n", rank, n,
                            sz);
                errors += e;
            }
        }
        if (rma && rank == 0)
            errors += rma_epoch(n, sbuf, rbuf);
        if (++n == 1 && rank == 0) {
            printf("attack_job: running\n");
            fflush(stdout);
        }
    }
    if (rank >= 2) { /* extra ranks only join the stop broadcasts */
        while (go)
            MPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
    if (rma && rank == 1)
        errors += rma_check(n);
    long total = 0;
    MPI_Reduce(&errors, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        if (total)
            printf("attack_job: FAIL %ld errors in %ld exchanges\n", total, n);
        else if (rma)
            printf("attack_job: ok %ld exchanges verified, %ld one-sided epochs\n", n, n);
        else
            printf("attack_job: ok %ld exchanges verified\n", n);
        fflush(stdout);
    }
    if (rma)
        MPI_Win_free(&win);
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return total ? 1 : 0;
}
