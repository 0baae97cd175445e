/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file test_link_xdp_queues.c
 * The native AF_XDP link on two interface queues (cfg.queues 2, one UMEM
 * shared by two sockets) on a veth pair made with two rx and two tx queues,
 * in a network namespace of its own: each end has two peer ids for the
 * other end, so its frames leave on both of its sockets (peer id % 2) and,
 * on a veth, arrive on the other end's queue of the same index.  Both
 * directions: every frame arrives once, byte for byte, each peer's stream
 * in order, and the per-queue counters show that both queues carried
 * frames in and out on both ends; the wait fd (an epoll set of the two
 * sockets) is readable while a frame waits.  Asking for more queues than
 * the interface has, or a queue beyond them, fails naming its count and
 * the fix; a second link on the second queue is refused (this process
 * owns it).
 *
 *   test_link_xdp_queues XDP_DROP_OBJECT
 * Exit 77 (skipped, with the reason) without root, a multi-queue veth or
 * AF_XDP sockets sharing a UMEM across queues.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "link/xdp/link_xdp.h"
#include "unit_check.h"

#define NFRAMES 2000u

static uint8_t byte_at(uint32_t seq, uint32_t i, unsigned dir)
{
    return (uint8_t)(seq * 7u + i * 13u + dir * 101u);
}

/* up to the veth's MTU of 1500 (the link's MTU) */
static uint32_t frame_len(uint32_t seq) { return 64 + (seq * 37u) % 1400u; }

/* NFRAMES frames from @p a to @p b, alternating a's peer ids 0 and 1 (both
 * b): each arrives once, intact, each stream in order */
static void both_queues(em_link_t *a, em_link_t *b, unsigned dir)
{
    uint32_t next[2] = { 0, 1 }, sent = 0, got = 0, bad = 0, order = 0;
    int waited = 0;
    double end = now_s() + 10;
    while ((sent < NFRAMES || got < sent) && now_s() < end) {
        for (unsigned k = 0; k < 16 && sent < NFRAMES; k++) {
            em_pkt_t *p = em_link_tx_alloc(a);
            if (!p)
                break;
            uint32_t len = frame_len(sent);
            p->data[0] = (uint8_t)(sent & 1); /* the stream: peer id */
            memcpy(p->data + 1, &sent, sizeof sent);
            for (uint32_t i = 5; i < len; i++)
                p->data[i] = byte_at(sent, i, dir);
            p->len = len;
            p->peer = sent & 1;
            p->ext_len = 0;
            if (em_link_tx_burst(a, &p, 1) != 1) {
                em_link_tx_free(a, p);
                break;
            }
            sent++;
        }
        em_link_flush(a);
        if (!waited && sent > 8) { /* something waits on b: its wait fd says so */
            struct pollfd pf = { .fd = b->ops->wait_fd(b), .events = POLLIN };
            CHECK(poll(&pf, 1, 2000) == 1, "direction %u: the wait fd is not readable", dir);
            waited = 1;
        }
        em_pkt_t *r[32];
        unsigned n = em_link_rx_burst(b, r, 32);
        for (unsigned j = 0; j < n; j++) {
            uint32_t seq;
            memcpy(&seq, r[j]->data + 1, sizeof seq);
            unsigned s = r[j]->data[0] & 1;
            int ok = r[j]->len == frame_len(seq) && s == (seq & 1);
            for (uint32_t i = 5; ok && i < r[j]->len; i++)
                ok = r[j]->data[i] == byte_at(seq, i, dir);
            bad += !ok;
            order += ok && seq != next[s]; /* stream s: seq s, s+2, s+4, ... */
            if (ok)
                next[s] = seq + 2;
        }
        got += n;
        em_link_rx_release(b, r, n);
    }
    CHECK(sent == NFRAMES && got == sent && bad == 0 && order == 0,
          "direction %u: %u frames sent, %u received, %u damaged, %u out of order", dir, sent, got,
          bad, order);
}

static void per_queue(const char *name, em_link_t *l)
{
    const em_xdp_stats_t *s = em_xdp_link_stats(l);
    char qs[256];
    em_xdp_link_queue_stats(l, qs, sizeof qs);
    printf("%s: %s\n", name, qs);
    for (unsigned q = 0; q < 2; q++)
        CHECK(s->q_rx[q] > 0 && s->q_tx[q] > 0,
              "%s queue %u carried rx %llu tx %llu frames: both queues must carry both ways", name,
              q, (unsigned long long)s->q_rx[q], (unsigned long long)s->q_tx[q]);
    CHECK(s->q_rx[0] + s->q_rx[1] == s->rx_frames && s->q_tx[0] + s->q_tx[1] == s->tx_frames,
          "%s: the per-queue counters do not add up to the link's", name);
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    if (geteuid() != 0 || unshare(CLONE_NEWNET) != 0) {
        printf("skipped: needs root (a network namespace of its own)\n");
        return 77;
    }
    if (system("ip link add qa numtxqueues 2 numrxqueues 2 type veth peer name qb "
               "numtxqueues 2 numrxqueues 2 2>/dev/null && ip link set lo up && "
               "ip link set qa up && ip link set qb up") != 0) {
        printf("skipped: cannot make a veth pair with two queues (numtxqueues/numrxqueues)\n");
        return 77;
    }
    char err[768];
    /* more queues than the interface has: refused, naming its count */
    em_xdp_cfg_t c3 = { .ifname = "qa", .queues = 3, .zero_copy = -1, .prog = argv[1] };
    em_link_t *x = em_xdp_link_open(&c3, err, sizeof err);
    CHECK(!x && strstr(err, "has 2 queues") && strstr(err, "xdp_queues"),
          "3 queues on a 2-queue veth: %s", x ? "opened" : err);
    printf("3 queues refused: %s\n", err);
    if (x)
        em_link_close(x);
    /* ... and one queue beyond them */
    em_xdp_cfg_t cq = { .ifname = "qa", .queue = 2, .zero_copy = -1, .prog = argv[1] };
    x = em_xdp_link_open(&cq, err, sizeof err);
    CHECK(!x && strstr(err, "queue 2 of qa does not exist") && strstr(err, "has 2 queues"),
          "queue 2 on a 2-queue veth: %s", x ? "opened" : err);
    if (x)
        em_link_close(x);
    em_xdp_cfg_t ca = { .ifname = "qa", .queues = 2, .zero_copy = -1, .prog = argv[1] };
    em_xdp_cfg_t cb = { .ifname = "qb", .queues = 2, .zero_copy = -1, .prog = argv[1] };
    em_link_t *a = em_xdp_link_open(&ca, err, sizeof err);
    if (!a && strstr(err, "AF_XDP socket")) {
        printf("skipped: %s\n", err);
        return 77;
    }
    CHECK(a, "open on qa: %s", err);
    em_link_t *b = em_xdp_link_open(&cb, err, sizeof err);
    CHECK(b, "open on qb: %s", err);
    if (!a || !b)
        return 1;
    const em_xdp_info_t *ia = em_xdp_link_info(a);
    printf("qa: %u queues from %u, %s, %s XDP\n", ia->queues, ia->queue,
           ia->zero_copy ? "zero copy" : "copy mode", ia->native ? "native" : "generic");
    CHECK(ia->queues == 2 && em_xdp_link_info(b)->queues == 2, "not two queues each");
    CHECK(a->local.bytes[6] == 0 && a->local.bytes[7] == 0, "the address must name queue 0");
    /* a second link on the second queue: refused (this process owns it) */
    em_xdp_cfg_t c1 = { .ifname = "qa", .queue = 1, .zero_copy = -1, .prog = argv[1] };
    x = em_xdp_link_open(&c1, err, sizeof err);
    CHECK(!x && strstr(err, "queue 1 of qa is in use"), "queue 1 of qa opened twice: %s",
          x ? "opened" : err);
    if (x)
        em_link_close(x);
    for (uint32_t id = 0; id < 2; id++)
        CHECK(a->ops->set_peer(a, id, &b->local) == 0 && b->ops->set_peer(b, id, &a->local) == 0,
              "set_peer %u", id);
    both_queues(a, b, 0);
    both_queues(b, a, 1);
    per_queue("qa", a);
    per_queue("qb", b);
    em_link_close(a);
    em_link_close(b);
    CHECK(system("ip link show qa | grep -q xdp") != 0, "our XDP program stayed on qa");
    printf("%s\n", failures ? "FAILED" : "test_link_xdp_queues: all passed");
    return failures ? 1 : 0;
}
