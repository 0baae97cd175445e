/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file test_link_xdp.c
 * The native AF_XDP link (link/xdp/link_xdp.h) on a veth pair in a network
 * namespace of its own, at MTU 9000: frames of every size from 64 bytes to
 * the MTU (multi-buffer beyond one page) both ways, byte for byte, each
 * bound to its sender (rx_peer); a second open of a busy queue fails
 * naming its owner and leaves the first link working; the filter a dead
 * owner left is removed by the next open.  What the link ended up with (zero copy or
 * copy and why, native or generic XDP) is printed.  First, before any
 * peer is set: tx_to both ways, rx_from by source MAC, no peer made.
 *
 *   test_link_xdp XDP_DROP_OBJECT
 * Exit 77 (skipped) without root, veth or AF_XDP.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "link/xdp/link_xdp.h"
#include "unit_check.h"

static uint8_t byte_at(uint32_t len, uint32_t i, unsigned dir)
{
    return (uint8_t)(len * 7u + i * 13u + (i >> 9) + dir * 101u);
}

/* one frame of @p len bytes from @p a (peer 0 of it is @p b), received and checked */
static void one_frame(em_link_t *a, em_link_t *b, uint32_t len, unsigned dir)
{
    em_pkt_t *p = NULL;
    for (double end = now_s() + 2; !p && now_s() < end;)
        p = em_link_tx_alloc(a);
    CHECK(p, "no tx frame");
    if (!p)
        return;
    for (uint32_t i = 0; i < len; i++)
        p->data[i] = byte_at(len, i, dir);
    p->len = len;
    p->peer = 0;
    p->ext_len = 0;
    CHECK(em_link_tx_burst(a, &p, 1) == 1, "tx_burst of %u bytes refused", len);
    em_link_flush(a);
    em_pkt_t *r[8];
    unsigned n = 0;
    for (double end = now_s() + 3; n == 0 && now_s() < end;)
        n = em_link_rx_burst(b, r, 8);
    CHECK(n == 1, "%u bytes (direction %u): %u frames received", len, dir, n);
    if (n >= 1) {
        int same = r[0]->len == len;
        for (uint32_t i = 0; same && i < len; i++)
            same = r[0]->data[i] == byte_at(len, i, dir);
        CHECK(same, "%u bytes (direction %u): received %u bytes, not the ones sent", len, dir,
              r[0]->len);
        CHECK(b->ops->rx_peer(b, r[0]) == 0, "the frame is not bound to its sender");
        em_link_rx_release(b, r, n);
    }
}

/* More frames waiting than the caller takes at once (the engine takes 32,
 * a peek 64): every one must still come, once, in order, and its chunks
 * go back (3 rounds of 200 would exhaust the fill ring otherwise). */
static void queued_frames(em_link_t *a, em_link_t *b)
{
    for (unsigned round = 0; round < 3; round++) {
        unsigned sent = 0, got = 0, order_ok = 1;
        for (; sent < 200; sent++) {
            em_pkt_t *p = NULL;
            for (double end = now_s() + 2; !p && now_s() < end;)
                p = em_link_tx_alloc(a);
            if (!p)
                break;
            uint32_t len = sent % 3 ? 200 : 6000; /* some span several chunks */
            memset(p->data, 0, len);
            memcpy(p->data, &sent, sizeof sent);
            p->len = len;
            p->peer = 0;
            p->ext_len = 0;
            if (em_link_tx_burst(a, &p, 1) != 1) {
                em_link_tx_free(a, p);
                break;
            }
        }
        em_link_flush(a);
        usleep(200000); /* all of them waiting on b's ring */
        for (double end = now_s() + 3; got < sent && now_s() < end;) {
            em_pkt_t *r[7];
            unsigned n = em_link_rx_burst(b, r, 7);
            for (unsigned i = 0; i < n; i++) {
                unsigned v;
                memcpy(&v, r[i]->data, sizeof v);
                order_ok &= v == got + i;
            }
            got += n;
            em_link_rx_release(b, r, n);
        }
        CHECK(sent == 200 && got == sent && order_ok,
              "round %u: %u frames sent, %u received 7 at a time%s", round, sent, got,
              order_ok ? "" : ", out of order");
    }
}

/* tx_to a frame of @p len pattern bytes from @p a to @p to (no peer);
 * the link's answer (a frame not taken is given back) */
static int tx_to(em_link_t *a, const em_link_addr_t *to, uint32_t len)
{
    em_pkt_t *p = NULL;
    for (double end = now_s() + 2; !p && now_s() < end;)
        p = em_link_tx_alloc(a);
    if (!p)
        return -ENOBUFS;
    for (uint32_t i = 0; i < len; i++)
        p->data[i] = byte_at(len, i, 7);
    p->len = len;
    p->peer = 0xFFFFFFF0u; /* no peer: tx_to reads the address only */
    p->ext_len = 0;
    int rc = a->ops->tx_to(a, p, to);
    if (rc != 0)
        em_link_tx_free(a, p);
    em_link_flush(a);
    return rc;
}

/* the one frame @p b receives within 3 s, checked as tx_to's of @p len */
static em_pkt_t *contact_frame(em_link_t *b, uint32_t len)
{
    em_pkt_t *r[8];
    unsigned n = 0;
    for (double end = now_s() + 3; n == 0 && now_s() < end;)
        n = em_link_rx_burst(b, r, 8);
    CHECK(n == 1, "first contact: %u frames received", n);
    if (n != 1) {
        em_link_rx_release(b, r, n);
        return NULL;
    }
    int same = r[0]->len == len;
    for (uint32_t i = 0; same && i < len; i++)
        same = r[0]->data[i] == byte_at(len, i, 7);
    CHECK(same, "first contact: %u bytes received, not the ones sent", r[0]->len);
    return r[0];
}

/* First contact before either side has a peer: a frame sent with tx_to
 * arrives intact; rx_from tells the sender's MAC from another; the answer
 * (tx_to back) is no peer's at the first sender, which made no entry;
 * addresses of other lengths are refused. */
static void first_contact(em_link_t *a, em_link_t *b)
{
    CHECK(em_link_has_contact(a), "no tx_to / rx_from");
    CHECK(tx_to(a, &b->local, 700) == 0, "tx_to b");
    em_pkt_t *r = contact_frame(b, 700);
    if (r) {
        em_link_addr_t other = a->local;
        other.bytes[5] ^= 1;
        CHECK(b->ops->rx_from(b, r, &a->local), "rx_from: not from a");
        CHECK(!b->ops->rx_from(b, r, &other), "rx_from: from another MAC");
        CHECK(b->ops->rx_peer(b, r) == EM_LINK_PEER_UNKNOWN, "a peer without set_peer");
        em_link_rx_release(b, &r, 1);
    }
    CHECK(tx_to(b, &a->local, 5000) == 0, "tx_to a"); /* several chunks */
    if ((r = contact_frame(a, 5000)) != NULL) {
        CHECK(a->ops->rx_peer(a, r) == EM_LINK_PEER_UNKNOWN, "tx_to made a peer entry");
        CHECK(a->ops->rx_from(a, r, &b->local), "rx_from: not from b");
        em_link_rx_release(a, &r, 1);
    }
    static const uint8_t bad[] = { 0, 6, 7, 9, EM_XDP_ADDR_UDP_LEN };
    for (unsigned i = 0; i < sizeof bad; i++) {
        em_link_addr_t x = b->local;
        x.len = bad[i];
        CHECK(tx_to(a, &x, 64) == -EINVAL, "an address of %u bytes taken", bad[i]);
    }
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    if (geteuid() != 0 || unshare(CLONE_NEWNET) != 0) {
        printf("skipped: needs root (a network namespace of its own)\n");
        return 77;
    }
    if (system("ip link add xa type veth peer name xb 2>/dev/null && ip link set xa mtu 9000 && "
               "ip link set xb mtu 9000 && ip link set lo up && ip link set xa up && "
               "ip link set xb up") != 0) {
        printf("skipped: cannot make a veth pair\n");
        return 77;
    }
    char err[512];
    em_xdp_cfg_t ca = { .ifname = "xa", .zero_copy = -1, .prog = argv[1] };
    em_xdp_cfg_t cb = { .ifname = "xb", .zero_copy = -1, .prog = argv[1], .busy_poll_us = 20 };
    em_link_t *a = em_xdp_link_open(&ca, err, sizeof err);
    if (!a && strstr(err, "AF_XDP socket")) {
        printf("skipped: %s\n", err);
        return 77;
    }
    CHECK(a, "open on xa: %s", err);
    em_link_t *b = em_xdp_link_open(&cb, err, sizeof err);
    CHECK(b, "open on xb: %s", err);
    if (!a || !b)
        return 1;
    const em_xdp_info_t *ia = em_xdp_link_info(a), *ib = em_xdp_link_info(b);
    printf("xa: %s%s, %s XDP, multi-buffer %s; xb busy poll %s%s\n",
           ia->zero_copy ? "zero copy" : "copy mode: ", ia->why_copy,
           ia->native ? "native" : "generic", ia->multi_buffer ? "yes" : "no",
           ib->busy_poll ? "on" : "off: ", ib->why_no_busy);
    CHECK(a->mtu == 9000 && ia->multi_buffer, "MTU %u, multi-buffer %d", a->mtu, ia->multi_buffer);
    CHECK(ia->zero_copy || ia->why_copy[0], "copy mode without a reason");
    first_contact(a, b);
    CHECK(a->ops->set_peer(a, 0, &b->local) == 0 && b->ops->set_peer(b, 0, &a->local) == 0,
          "set_peer");
    static const uint32_t sizes[] = { 1, 64, 1000, 4000, 4082, 4083, 4096, 6000, 8192, 8999, 9000 };
    for (unsigned dir = 0; dir < 2; dir++)
        for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
            one_frame(dir ? b : a, dir ? a : b, sizes[i], dir);
    /* many at once, to cycle the tx slots and the fill ring */
    for (unsigned k = 0; k < 3000; k++)
        one_frame(a, b, 100 + (k * 37) % 8900, 0);
    queued_frames(a, b);
    const em_xdp_stats_t *sb = em_xdp_link_stats(b);
    CHECK(sb->rx_gathered > 0, "no frame spanned several chunks");
    CHECK(sb->rx_bad == 0, "%llu frames refused", (unsigned long long)sb->rx_bad);
    /* a second user of xa's queue: refused, naming the owner; xa goes on */
    em_link_t *c = em_xdp_link_open(&ca, err, sizeof err);
    CHECK(!c && strstr(err, "in use by another ethermpi process"), "a second open of xa: %s",
          c ? "succeeded" : err);
    if (c)
        em_link_close(c);
    one_frame(a, b, 5000, 0);
    /* a user of xc that dies without closing (SIGKILL, an MPI abort) leaves
     * its filter attached; the next open takes the queue over */
    CHECK(system("ip link add xc type veth peer name xd && ip link set xc up && "
                 "ip link set xd up") == 0,
          "second veth pair");
    em_xdp_cfg_t cc = { .ifname = "xc", .zero_copy = 0, .prog = argv[1] };
    pid_t pid = fork();
    if (pid == 0)
        _exit(em_xdp_link_open(&cc, err, sizeof err) ? 0 : 1); /* no close */
    int ws = -1;
    waitpid(pid, &ws, 0);
    CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0 && system("ip link show xc | grep -q xdp") == 0,
          "the dying owner did not leave its filter on xc");
    c = em_xdp_link_open(&cc, err, sizeof err);
    CHECK(c, "after a dead owner, xc: %s", err);
    if (c)
        em_link_close(c);
    em_link_close(a);
    em_link_close(b);
    int left = system("ip link show xb | grep -q 'xdp'");
    CHECK(left != 0, "our XDP program stayed on xb after close");
    printf("%s\n", failures ? "FAILED" : "test_link_xdp: all passed");
    return failures ? 1 : 0;
}
