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
 * Output of rank 0: "attack_job: running" after the first exchange (traffic
 * flows, the forger may start), then "attack_job: ok N exchanges verified"
 * or "attack_job: FAIL N errors in M exchanges".  Exit 0 only if no rank
 * saw an error.
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
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    uint8_t *sbuf = malloc(MAXSZ), *rbuf = malloc(MAXSZ + 64);
    if (!sbuf || !rbuf || size < 2)
        MPI_Abort(MPI_COMM_WORLD, 2);
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
        if (++n == 1 && rank == 0) {
            printf("attack_job: running\n");
            fflush(stdout);
        }
    }
    if (rank >= 2) { /* extra ranks only join the stop broadcasts */
        while (go)
            MPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
    long total = 0;
    MPI_Reduce(&errors, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        if (total)
            printf("attack_job: FAIL %ld errors in %ld exchanges\n", total, n);
        else
            printf("attack_job: ok %ld exchanges verified\n", n);
        fflush(stdout);
    }
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return total ? 1 : 0;
}
