/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sparse.c - sparse, bursty and idle traffic between 2 ranks on 2 nodes,
 * every message checked (over rudp a one-way stream of 64-byte
 * messages every 50 ms stopped after about one window, and the sender
 * declared the live receiver failed).  Idle gaps are real sleeps, longer
 * than the retransmit timeout cap (rudp: 1 s) and the delayed-ACK time, in
 * which a rank makes no MPI call at all.
 *
 *   one-way, sleeping  rank 0 sends N messages of 64 B, sleeping GAP ms
 *                      after each; rank 1 receives and checks them.  This
 *                      runs first, before any other MPI traffic: rank 1 has
 *                      never sent to rank 0 (the case that failed)
 *   placement          ranks 0 and 1 on different hosts
 *   one-way, probing   the same, rank 0 spinning in MPI_Iprobe in the gaps
 *   bursts             ROUNDS rounds: BURST messages one way (the direction
 *                      alternates), then both ranks sleep IDLE ms
 *   receiver asleep    rank 1 sleeps IDLE ms while rank 0 sends 3 windows'
 *                      worth of messages (the sender's timers back off into
 *                      the silence); then all must arrive, and 20 round
 *                      trips must follow within 2 s (the back-off is over)
 *
 *   --n=N (60) --gap=MS (20) --burst=B (100) --rounds=R (3) --idle=MS (1500)
 *   --repeat=K  run the whole sequence K times (default 1)
 *
 * Run: mpirun -np 2 --map-by node ./sparse   (about 10 s)
 */
#define _POSIX_C_SOURCE 200809L
#include "emt_common.h"

#include <time.h>

#define MSG 64

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

    while (nanosleep(&ts, &ts) != 0)
        ;
}

static void spin_iprobe_ms(long ms)
{
    double t0 = MPI_Wtime();
    int flag;

    while ((MPI_Wtime() - t0) * 1000.0 < (double)ms)
        MPI_Iprobe(MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
}

static void send_one(int to, int tag, int i)
{
    uint8_t buf[MSG];

    emt_fill(buf, MSG, emt_seed((uint64_t)tag, (uint64_t)i, 0, 0));
    emt_mpi(MPI_Send(buf, MSG, MPI_BYTE, to, tag, MPI_COMM_WORLD), "MPI_Send");
}

static int recv_one(int from, int tag, int i)
{
    uint8_t buf[MSG];

    memset(buf, 0, MSG);
    if (emt_mpi(MPI_Recv(buf, MSG, MPI_BYTE, from, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                "MPI_Recv") != MPI_SUCCESS)
        return 1;
    return emt_verify(buf, MSG, emt_seed((uint64_t)tag, (uint64_t)i, 0, 0), "message") != 0;
}

/* rank 0 -> rank 1, one message per gap; spin: MPI_Iprobe in the gaps */
static void one_way(int n, long gap, int spin, int tag)
{
    double t0 = MPI_Wtime();

    for (int i = 0; i < n; i++) {
        if (emt.rank == 0) {
            send_one(1, tag, i);
            if (spin)
                spin_iprobe_ms(gap);
            else
                sleep_ms(gap);
        } else if (emt.rank == 1 && recv_one(0, tag, i)) {
            break;
        }
    }
    if (emt.rank == 1)
        printf("  info  one-way %s: %d messages in %.2f s\n", spin ? "probing" : "sleeping", n,
               MPI_Wtime() - t0);
    emt_report("one-way %s: %d x %d B, %ld ms apart", spin ? "probing" : "sleeping", n, MSG, gap);
}

static void bursts(int rounds, int burst, long idle, int tag)
{
    for (int r = 0; r < rounds; r++) {
        int from = r % 2, to = 1 - from;
        for (int i = 0; i < burst; i++) {
            if (emt.rank == from)
                send_one(to, tag + r, i);
            else if (emt.rank == to && recv_one(from, tag + r, i))
                break;
        }
        sleep_ms(idle); /* both ranks: no MPI call at all */
    }
    emt_report("bursts: %d rounds of %d messages, alternating, %ld ms idle after each", rounds,
               burst, idle);
}

static void receiver_asleep(int n, long idle, int tag)
{
    double t0 = 0;

    MPI_Barrier(MPI_COMM_WORLD);
    if (emt.rank == 0) {
        for (int i = 0; i < n; i++)
            send_one(1, tag, i);
    } else if (emt.rank == 1) {
        sleep_ms(idle);
        for (int i = 0; i < n; i++)
            if (recv_one(0, tag, i))
                break;
    }
    /* the pair must be quick again: 20 round trips */
    char b = 0;
    t0 = MPI_Wtime();
    for (int i = 0; i < 20 && emt.rank < 2; i++) {
        if (emt.rank == 0) {
            emt_mpi(MPI_Send(&b, 1, MPI_CHAR, 1, tag + 1, MPI_COMM_WORLD), "MPI_Send");
            emt_mpi(MPI_Recv(&b, 1, MPI_CHAR, 1, tag + 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                    "MPI_Recv");
        } else {
            emt_mpi(MPI_Recv(&b, 1, MPI_CHAR, 0, tag + 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                    "MPI_Recv");
            emt_mpi(MPI_Send(&b, 1, MPI_CHAR, 0, tag + 1, MPI_COMM_WORLD), "MPI_Send");
        }
    }
    double rt = MPI_Wtime() - t0;
    if (emt.rank == 0) {
        printf("  info  receiver asleep: 20 round trips after it woke: %.3f s\n", rt);
        if (rt > 2.0)
            emt_detail("20 round trips after the idle took %.3f s (> 2 s): timers still backed off",
                       rt);
    }
    emt_report("receiver asleep %ld ms while %d messages come, then 20 round trips", idle, n);
}

int main(int argc, char **argv)
{
    emt_init(&argc, &argv, "sparse");
    int n = (int)emt_arg(argc, argv, "--n", 60);
    long gap = emt_arg(argc, argv, "--gap", 20);
    int burst = (int)emt_arg(argc, argv, "--burst", 100);
    int rounds = (int)emt_arg(argc, argv, "--rounds", 3);
    long idle = emt_arg(argc, argv, "--idle", 1500);
    int repeat = (int)emt_arg(argc, argv, "--repeat", 1);

    for (int k = 0; k < repeat; k++) {
        int tag = 100 * k;
        /* first of all, before any collective: rank 1 must not have sent
		 * anything to rank 0 yet (Open MPI names a peer to the BTL only on
		 * the first send to it; a receive-only rank 1 could not ACK) */
        one_way(n, gap, 0, tag + 1);
        if (k == 0)
            emt_require_spread(2, 0, 1);
        one_way(n, gap, 1, tag + 2);
        bursts(rounds, burst, idle, tag + 10);
        receiver_asleep(96, idle, tag + 20);
    }
    return emt_finish();
}
