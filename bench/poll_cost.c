/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * poll_cost: what the size of the peer table costs one pair that talks.
 *
 * Two protocol instances in one process, wired back to back (frames
 * handed over in memory, no link), each with a table of N peers of which
 * only peer 0 talks: 64-byte messages, alternating direction, each one
 * sent, delivered and acknowledged (the default delayed ACK, real clock)
 * before the next.  It prints wall-clock nanoseconds per message for
 * each table size, the sizes alternated round after round, and the
 * median and spread over the rounds.  em_proto_poll() looks only at the
 * peers with something timed (src/proto/poll.c): the figure should not
 * grow with N.  A guide only: the machine is shared and noisy.
 *
 * Usage: poll_cost [-i ITERS] [-r ROUNDS] [N ...]   (default 20000 iters,
 *        3 rounds, N = 17 4097 100001)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto.h"
#include "util/clock.h"

#define QMAX   64
#define FMAX   2048
#define NSIZES 8

struct side {
    em_proto_t *p;
    uint8_t q[QMAX][FMAX]; /* frames waiting for this side */
    size_t ql[QMAX];
    unsigned qn;
};

static struct side S[2];
static unsigned long done;

static int emit(void *u, uint32_t peer, const void *h, size_t hl, const void *pl, size_t pll)
{
    struct side *to = &S[1 - (int)(intptr_t)u];
    (void)peer;
    if (to->qn == QMAX || hl + pll > FMAX)
        return -EM_EAGAIN;
    memcpy(to->q[to->qn], h, hl);
    if (pll)
        memcpy(to->q[to->qn] + hl, pl, pll);
    to->ql[to->qn++] = hl + pll;
    return 0;
}

static void on_recv(void *u, uint32_t peer, uint8_t tag, const void *d, size_t len)
{
    (void)u, (void)peer, (void)tag, (void)d, (void)len;
}

static void on_complete(void *u, void *ctx, int status)
{
    (void)u, (void)ctx, (void)status;
    done++;
}

/* ns per message with tables of @p n peers, @p iters messages */
static double run(uint32_t n, long iters)
{
    em_proto_ops_t ops = { .emit = emit, .recv = on_recv, .complete = on_complete };
    for (int i = 0; i < 2; i++) {
        em_proto_cfg_t c;
        em_proto_cfg_default(&c);
        c.self = n - 1;
        c.npeers = n;
        c.peers_need_set = 1;
        int err;
        S[i].qn = 0;
        S[i].p = em_proto_create(&c, &ops, (void *)(intptr_t)i, &err);
        if (!S[i].p || em_proto_set_peer(S[i].p, 0, 42, 1000u + (unsigned)i, 1001u - (unsigned)i) ||
            em_proto_set_peer_index(S[i].p, 0, 0)) {
            fprintf(stderr, "poll_cost: no protocol of %u peers\n", n);
            exit(1);
        }
    }
    static const uint8_t msg[64];
    em_proto_op_t op;
    uint64_t t0 = em_clock_ns();
    for (long k = 0; k < iters; k++) {
        unsigned long want = done + 1;
        if (em_proto_send(S[k & 1].p, &op, 0, 1, msg, sizeof msg, NULL, em_clock_ns()) != 0) {
            fprintf(stderr, "poll_cost: send refused\n");
            exit(1);
        }
        while (done < want)
            for (int i = 0; i < 2; i++) {
                unsigned m = S[i].qn;
                S[i].qn = 0;
                for (unsigned j = 0; j < m; j++)
                    (void)em_proto_rx(S[i].p, S[i].q[j], S[i].ql[j], em_clock_ns());
                em_proto_poll(S[i].p, em_clock_ns());
            }
    }
    double ns = (double)(em_clock_ns() - t0) / (double)iters;
    for (int i = 0; i < 2; i++)
        em_proto_destroy(S[i].p);
    return ns;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    long iters = 20000;
    int rounds = 3, nn = 0;
    uint32_t sizes[NSIZES];
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-i") == 0 && i + 1 < argc)
            iters = atol(argv[++i]);
        else if (strcmp(argv[i], "-r") == 0 && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (nn < NSIZES && atol(argv[i]) >= 2)
            sizes[nn++] = (uint32_t)atol(argv[i]);
        else {
            fprintf(stderr,
                    "usage: poll_cost [-i ITERS] [-r ROUNDS] [N ...] (N >= 2, at most %d)\n",
                    NSIZES);
            return 2;
        }
    }
    if (nn == 0) {
        sizes[nn++] = 17;
        sizes[nn++] = 4097;
        sizes[nn++] = 100001;
    }
    if (iters < 1 || rounds < 1 || rounds > 99)
        return 2;
    double t[NSIZES][99];
    for (int r = 0; r < rounds; r++)
        for (int s = 0; s < nn; s++)
            t[s][r] = run(sizes[s], iters);
    for (int s = 0; s < nn; s++) {
        qsort(t[s], (size_t)rounds, sizeof t[s][0], cmp);
        printf("%7u peers: %8.0f ns per message (median of %d rounds; min %.0f, max %.0f)\n",
               sizes[s], t[s][rounds / 2], rounds, t[s][0], t[s][rounds - 1]);
    }
    return 0;
}
