/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mpi_xnode.c - small MPI check for the emulated cluster (tests/cluster).
 *
 * Every rank reports its host name; rank 0 prints them and how many distinct
 * hosts took part.  Then rank 0 and the last rank exchange messages of
 * several sizes (eager and rendezvous, larger than a jumbo frame) and check
 * every byte, and all ranks run an allreduce.  Prints "mpi_xnode: OK ..."
 * on success; exits non-zero (MPI_Abort) on any mismatch.
 *
 * Build: mpicc -O2 -o mpi_xnode mpi_xnode.c
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME_LEN 64

static void fail(const char *what, long detail)
{
    fprintf(stderr, "mpi_xnode: FAIL: %s (%ld)\n", what, detail);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static unsigned char pattern(size_t i, int round)
{
    return (unsigned char)((i * 131u + (size_t)round * 7u + 1u) & 0xffu);
}

static void pingpong(int rank, int peer, size_t len, int round, unsigned char *buf)
{
    size_t i;

    if (rank == 0) {
        for (i = 0; i < len; i++)
            buf[i] = pattern(i, round);
        MPI_Send(buf, (int)len, MPI_BYTE, peer, round, MPI_COMM_WORLD);
        memset(buf, 0, len);
        MPI_Recv(buf, (int)len, MPI_BYTE, peer, round, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (i = 0; i < len; i++)
            if (buf[i] != (unsigned char)~pattern(i, round))
                fail("echoed data differs at byte", (long)i);
    } else {
        memset(buf, 0, len);
        MPI_Recv(buf, (int)len, MPI_BYTE, 0, round, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (i = 0; i < len; i++) {
            if (buf[i] != pattern(i, round))
                fail("received data differs at byte", (long)i);
            buf[i] = (unsigned char)~buf[i];
        }
        MPI_Send(buf, (int)len, MPI_BYTE, 0, round, MPI_COMM_WORLD);
    }
}

int main(int argc, char **argv)
{
    static const size_t sizes[] = { 0, 1, 8, 1000, 8999, 9000, 65536, 1u << 20 };
    char name[NAME_LEN] = { 0 };
    char *names = NULL;
    unsigned char *buf;
    int rank, size, len, distinct = 0, i, j, round = 0;
    long sum = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2)
        fail("need at least 2 ranks, got", size);

    MPI_Get_processor_name(name, &len);
    name[NAME_LEN - 1] = '\0';
    if (rank == 0)
        names = calloc((size_t)size, NAME_LEN);
    MPI_Gather(name, NAME_LEN, MPI_CHAR, names, NAME_LEN, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        for (i = 0; i < size; i++) {
            int seen = 0;
            for (j = 0; j < i; j++)
                if (strcmp(names + (size_t)i * NAME_LEN, names + (size_t)j * NAME_LEN) == 0)
                    seen = 1;
            distinct += !seen;
            printf("mpi_xnode: rank %d on %s\n", i, names + (size_t)i * NAME_LEN);
        }
    }

    buf = malloc(sizes[sizeof(sizes) / sizeof(sizes[0]) - 1] + 1);
    if (!buf)
        fail("out of memory", 0);
    if (rank == 0 || rank == size - 1) {
        for (round = 0; round < 3; round++)
            for (i = 0; i < (int)(sizeof(sizes) / sizeof(sizes[0])); i++)
                pingpong(rank, size - 1, sizes[i], round * 16 + i, buf);
    }

    MPI_Allreduce(&rank, &i, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    sum = i;
    if (sum != (long)size * (size - 1) / 2)
        fail("allreduce sum is wrong", sum);
    MPI_Barrier(MPI_COMM_WORLD);

    if (rank == 0)
        printf("mpi_xnode: OK ranks=%d hosts=%d\n", size, distinct);
    free(buf);
    free(names);
    MPI_Finalize();
    return 0;
}
