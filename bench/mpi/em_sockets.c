/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * em_sockets: [dse-rudp]'s reason to exist, measured.  Every rank exchanges a
 * message with every other rank (so connection-oriented transports open all
 * their connections), then counts the socket descriptors it holds
 * (/proc/self/fd -> "socket:[...]").  Rank 0 prints per-rank counts and the
 * median in the em-bench table format (size 0: the count is per process):
 *   # em-bench sockets transport-neutral v1
 *   # size_bytes sockets_per_process count
 *   0 <median>
 * The count includes Open MPI's own runtime sockets (the same for every
 * BTL); differences between BTLs are the BTLs'.
 */
#include <dirent.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int count_sockets(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    char path[300], target[128];
    int n = 0;
    if (!d)
        return -1;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
        ssize_t k = readlink(path, target, sizeof target - 1);
        if (k > 0) {
            target[k] = 0;
            n += strncmp(target, "socket:", 7) == 0;
        }
    }
    closedir(d);
    return n;
}

static int cmp(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* every pair talks, in both directions, with a content check */
    for (int k = 1; k < size; k++) {
        int to = (rank + k) % size, from = (rank - k + size) % size;
        int out = rank * 1000 + to, in = -1;
        MPI_Sendrecv(&out, 1, MPI_INT, to, 7, &in, 1, MPI_INT, from, 7, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        if (in != from * 1000 + rank) {
            fprintf(stderr, "em_sockets: rank %d got %d from %d\n", rank, in, from);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    int mine = count_sockets();
    int *all = rank == 0 ? malloc(sizeof(int) * (size_t)size) : NULL;
    MPI_Gather(&mine, 1, MPI_INT, all, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("# em_sockets: %d ranks, per-rank socket descriptors:", size);
        for (int i = 0; i < size; i++)
            printf(" %d", all[i]);
        printf("\n");
        qsort(all, (size_t)size, sizeof *all, cmp);
        printf("# em-bench sockets transport-neutral v1\n# size_bytes sockets_per_process count\n");
        printf("0 %d\n", all[size / 2]);
        printf("# min %d max %d\n", all[0], all[size - 1]);
        free(all);
    }
    MPI_Finalize();
    return 0;
}
