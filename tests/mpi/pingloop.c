/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pingloop: ranks 0 and 1 ping-pong 1 KiB messages until SECONDS (argv[1],
 * default 30) have passed, then exit 0.  Rank 0 prints "pingloop: running"
 * after the first round trip (so a test knows traffic flows) and
 * "pingloop: done N" at the end.  Used by run-peerfail: if the transport
 * never notices that its link died, this program runs to completion (or
 * hangs) and the test fails.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int rank;
    char buf[1024] = { 0 };
    double limit = argc > 1 ? atof(argv[1]) : 30.0;
    long n = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double t0 = MPI_Wtime();
    int go = 1;
    while (go) {
        if (rank == 0) {
            go = MPI_Wtime() - t0 < limit;
            buf[0] = (char)go;
            MPI_Send(buf, sizeof buf, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(buf, sizeof buf, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (++n == 1) {
                printf("pingloop: running\n");
                fflush(stdout);
            }
        } else if (rank == 1) {
            MPI_Recv(buf, sizeof buf, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            go = buf[0];
            MPI_Send(buf, sizeof buf, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
        } else {
            go = 0;
        }
    }
    if (rank == 0)
        printf("pingloop: done %ld\n", n);
    MPI_Finalize();
    return 0;
}
