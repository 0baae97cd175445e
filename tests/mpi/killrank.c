/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * killrank.c - a rank dies in the middle of a run; the job must end (with an
 * error) instead of hanging.  The driver (run-mpi-tests) runs this under
 * 'timeout' and measures how long mpirun takes to exit.
 *
 * Two ranks on two nodes ping-pong messages alternating between 8 B and
 * 256 KiB (eager and rendezvous).  After --after=N completed iterations
 * rank 1 receives the next message, starts a 4 MiB MPI_Isend to rank 0 that
 * rank 0 never posts a receive for (a rendezvous left half open), prints
 *
 *   killrank: rank 1 dies after N iterations (MODE) at T=<unix time>
 *
 * and dies without MPI_Finalize:
 *   --mode=kill   raise(SIGKILL)  (default)
 *   --mode=exit   _Exit(3)
 * Rank 0 meanwhile waits for the reply.  If the MPI library reports an error
 * to rank 0 (MPI_ERRORS_RETURN) it prints it and exits with status 1; the
 * expected way out is that mpirun notices the dead rank and kills the job.
 * Either way mpirun must exit non-zero, and soon.
 *
 * Run: mpirun -np 2 --map-by node ./killrank [--after=20] [--mode=kill|exit]
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* SIGKILL */
#endif
#include "emt_common.h"

#include <signal.h>
#include <time.h>

#define BIGMSG     (256 * 1024)
#define DYING_SEND (4u << 20)

static void die(int after, int use_exit)
{
    struct timespec ts;
    uint8_t *b = emt_alloc(DYING_SEND);
    MPI_Request rq;

    emt_fill(b, DYING_SEND, 42);
    MPI_Isend(b, (int)DYING_SEND, MPI_BYTE, 0, 7, MPI_COMM_WORLD, &rq);
    timespec_get(&ts, TIME_UTC);
    printf("killrank: rank 1 dies after %d iterations (%s) at T=%lld.%09ld\n", after,
           use_exit ? "_Exit(3)" : "SIGKILL", (long long)ts.tv_sec, ts.tv_nsec);
    fflush(stdout);
    fflush(stderr);
    if (use_exit)
        _Exit(3);
    raise(SIGKILL);
    _Exit(4); /* not reached */
}

int main(int argc, char **argv)
{
    int after, use_exit = 0;
    uint8_t *buf;

    emt_init(&argc, &argv, "killrank");
    after = (int)emt_arg(argc, argv, "--after", 20);
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--mode=exit") == 0)
            use_exit = 1;
    emt_need_ranks(2, 2);
    emt_require_spread(2, 0, 1);
    buf = emt_alloc(BIGMSG);

    for (long it = 0;; it++) {
        int len = it % 2 ? BIGMSG : 8;
        int rc;

        if (emt.rank == 0) {
            emt_fill(buf, (size_t)len, (uint64_t)it);
            rc = MPI_Send(buf, len, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
            if (rc == MPI_SUCCESS)
                rc = MPI_Recv(buf, len, MPI_BYTE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (rc != MPI_SUCCESS) {
                char msg[MPI_MAX_ERROR_STRING];
                int mlen = 0;

                MPI_Error_string(rc, msg, &mlen);
                printf("killrank: rank 0 got an MPI error at iteration %ld: %s\n", it, msg);
                fflush(stdout);
                return 1; /* no MPI_Finalize: the peer is gone */
            }
            if (emt_verify(buf, (size_t)len, (uint64_t)it ^ 0xffu, "echo"))
                return 1;
            if (it == 0) {
                printf("killrank: exchanging until rank 1 dies\n");
                fflush(stdout);
            }
        } else {
            MPI_Recv(buf, len, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (it >= after)
                die(after, use_exit);
            emt_fill(buf, (size_t)len, (uint64_t)it ^ 0xffu);
            MPI_Send(buf, len, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
        }
    }
}
