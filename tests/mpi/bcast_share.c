/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file bcast_share.c
 * The dpdk BTL and an em_bcast channel in one process, on one DPDK port
 * (the solver's requirement: "it shares the process's DPDK port with the dpdk BTL when both
 * are loaded").  Two ranks, one per node, run with
 *   --mca btl self,vader,dpdk --mca btl_dpdk_vdev <device>
 * and open a dpdk broadcast channel on the same device: link_dpdk finds the
 * BTL's port and shares it (the BTL's frames are 0x88B5, the channel's
 * 0x88B6; whoever polls passes the other's frames on).  Each round, every
 * rank broadcasts ROUNDS frames and exchanges a checked MPI message over
 * the BTL; the channel must deliver (nearly) all of the peer's frames and
 * every MPI message must arrive intact.
 *
 *   bcast_share DEVICE-SPEC        (@FILE and %h as for btl_dpdk_vdev)
 * Prints "bcast_share: ok ..." and exits 0, or says what failed.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bcast/em_bcast.h"
#include "link/link_dpdk.h"
#include "util/clock.h"

#define ROUNDS 200
#define ELEMS  16

struct seen {
    uint64_t frames, elems, bad;
    int peer;
};

static void on_update(void *arg, uint16_t sender, uint32_t offset, uint32_t count,
                      const double *vals)
{
    struct seen *s = arg;
    if (sender != (uint16_t)s->peer) {
        s->bad++;
        return;
    }
    for (uint32_t i = 0; i < count; i++)
        if (vals[i] != (double)(offset + i) + 0.5 * sender)
            s->bad++;
    s->frames++;
    s->elems += count;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2 || argc < 2) {
        if (rank == 0)
            fprintf(stderr, "bcast_share: needs 2 ranks and a device spec\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    char vdev[1024], err[512];
    if (em_link_dpdk_devargs(argv[1], "", vdev, sizeof vdev, err, sizeof err) != 0) {
        fprintf(stderr, "bcast_share: rank %d: %s\n", rank, err);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    em_bcast_cfg_t c;
    memset(&c, 0, sizeof c);
    c.kind = EM_BCAST_DPDK;
    c.key = 0x5EA5u;
    c.channel = 7;
    c.self = (uint16_t)rank;
    c.members = 2;
    c.vec_len = ROUNDS * ELEMS;
    c.vdev = vdev;
    c.link_wait_ms = 5000;
    em_bcast_t *b = em_bcast_open(&c, err, sizeof err);
    if (!b) {
        fprintf(stderr, "bcast_share: rank %d: cannot open the channel on the BTL's port: %s\n",
                rank, err);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Barrier(MPI_COMM_WORLD); /* both channels open before anyone sends */

    struct seen s = { .peer = 1 - rank };
    double vals[ELEMS];
    int mpi_bad = 0;
    for (int r = 0; r < ROUNDS; r++) {
        for (int i = 0; i < ELEMS; i++)
            vals[i] = (double)(r * ELEMS + i) + 0.5 * rank;
        while (em_bcast_send(b, (uint32_t)(r * ELEMS), vals, ELEMS) != 0)
            em_bcast_poll(b, on_update, &s, 0);
        em_bcast_poll(b, on_update, &s, 0);
        /* an MPI exchange over the same port (the BTL's frames) */
        int out[64], in[64];
        for (int i = 0; i < 64; i++)
            out[i] = r * 1000 + rank * 100 + i;
        MPI_Sendrecv(out, 64, MPI_INT, 1 - rank, r, in, 64, MPI_INT, 1 - rank, r, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        for (int i = 0; i < 64; i++)
            if (in[i] != r * 1000 + (1 - rank) * 100 + i)
                mpi_bad++;
    }
    /* late frames: poll a little longer (frames the BTL's progress took off
     * the port wait in our ring) */
    uint64_t t0 = em_clock_ns();
    do {
        em_bcast_poll(b, on_update, &s, 0);
        int flag;
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    } while (s.frames < ROUNDS && em_clock_ns() - t0 < 500000000ull);
    MPI_Barrier(MPI_COMM_WORLD);
    const em_bcast_stats_t *st = em_bcast_stats(b);
    int ok = s.bad == 0 && mpi_bad == 0 && s.frames >= ROUNDS * 9 / 10;
    printf("bcast_share: rank %d: %s: channel got %llu of %d frames (%llu elements, %llu bad, "
           "sent %llu), MPI mismatches %d\n",
           rank, ok ? "ok" : "FAILED", (unsigned long long)s.frames, ROUNDS,
           (unsigned long long)s.elems, (unsigned long long)s.bad, (unsigned long long)st->sent,
           mpi_bad);
    em_bcast_close(b); /* before MPI_Finalize closes the BTL's port */
    int all = ok, both;
    MPI_Allreduce(&all, &both, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    MPI_Finalize();
    return both ? 0 : 1;
}
