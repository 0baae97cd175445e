/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file test_link_xdp_udp.c
 * The native AF_XDP link in udp framing (link/xdp/xdp_udp.c) across a veth
 * pair whose ends live in two network namespaces (two kernels' worth of
 * routes and ARP, as two hosts): each side opens the link on its end, the
 * next hop is resolved by the kernel's ARP, and frames of every size up to
 * the link MTU (9000 - 28) go out, come back from the other side's echo,
 * byte for byte, each bound to its sender by (IPv4, port).  Also: an
 * interface without IPv4 is refused naming the setting, a peer in the
 * other framing is refused at set_peer naming the mismatch, and in L2
 * framing a peer behind a router is refused naming the udp framing.
 * First contact, before the peer is set: tx_to refuses an address whose
 * next hop is not resolved at once (-EHOSTUNREACH, no wait) and reaches
 * the echo side once the kernel has resolved it; rx_from by (IPv4, port).
 *
 *   test_link_xdp_udp XDP_DROP_OBJECT
 * Exit 77 (skipped) without root, veth or AF_XDP.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "link/xdp/link_xdp.h"
#include "unit_check.h"

#define END_LEN 3u /* the frame that ends the echo */

static uint8_t byte_at(uint32_t len, uint32_t i)
{
    return (uint8_t)(len * 7u + i * 13u + (i >> 9));
}

static int send_frame(em_link_t *l, const uint8_t *src, uint32_t len, int pattern)
{
    em_pkt_t *p = NULL;
    for (double end = now_s() + 2; !p && now_s() < end;)
        p = em_link_tx_alloc(l);
    if (!p)
        return -1;
    for (uint32_t i = 0; i < len; i++)
        p->data[i] = pattern ? byte_at(len, i) : src[i];
    p->len = len;
    p->peer = 0;
    p->ext_len = 0;
    if (em_link_tx_burst(l, &p, 1) != 1)
        return -1;
    em_link_flush(l);
    return 0;
}

static em_link_t *open_udp(const char *ifname, const char *prog, char *err, size_t len)
{
    em_xdp_cfg_t c = { .ifname = ifname, .zero_copy = -1, .prog = prog, .framing_udp = 1 };
    return em_xdp_link_open(&c, err, len);
}

/* the far side, in a namespace of its own: echo every frame until END_LEN */
static int echo_side(int to_parent, int from_parent, const char *prog)
{
    char err[512], go;
    if (unshare(CLONE_NEWNET) != 0 || write(to_parent, "r", 1) != 1 ||
        read(from_parent, &go, 1) != 1)
        return 2;
    if (system("ip link set lo up && ip addr add 10.98.0.2/24 dev ub && ip link set ub mtu 9000 "
               "&& ip link set ub up") != 0)
        return 3;
    em_link_t *l = open_udp("ub", prog, err, sizeof err);
    if (!l) {
        fprintf(stderr, "echo side: %s\n", err);
        return 4;
    }
    em_link_addr_t peer;
    if (write(to_parent, &l->local, sizeof l->local) != (ssize_t)sizeof l->local ||
        read(from_parent, &peer, sizeof peer) != (ssize_t)sizeof peer)
        return 5;
    if (l->ops->set_peer(l, 0, &peer) != 0) {
        fprintf(stderr, "echo side: set_peer: %s\n", em_xdp_link_peer_error(l));
        return 6;
    }
    (void)!write(to_parent, "s", 1);
    for (double idle = now_s() + 20; now_s() < idle;) {
        em_pkt_t *r[8];
        unsigned n = em_link_rx_burst(l, r, 8);
        for (unsigned i = 0; i < n; i++) {
            uint32_t len = r[i]->len;
            uint8_t buf[9000];
            memcpy(buf, r[i]->data, len);
            em_link_rx_release(l, &r[i], 1);
            if (len == END_LEN) {
                em_link_close(l);
                return 0;
            }
            if (send_frame(l, buf, len, 0) != 0)
                return 7;
            idle = now_s() + 20;
        }
    }
    return 8;
}

static void exchange(em_link_t *a)
{
    static const uint32_t sizes[] = { 1, 64, 1000, 4000, 4054, 4055, 4096, 8000, 8971, 8972 };
    for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        uint32_t len = sizes[i];
        CHECK(send_frame(a, NULL, len, 1) == 0, "%u bytes: not sent", len);
        em_pkt_t *r[8];
        unsigned n = 0;
        for (double end = now_s() + 3; n == 0 && now_s() < end;)
            n = em_link_rx_burst(a, r, 8);
        CHECK(n == 1, "%u bytes: %u frames came back", len, n);
        if (n < 1)
            continue;
        int same = r[0]->len == len;
        for (uint32_t k = 0; same && k < len; k++)
            same = r[0]->data[k] == byte_at(len, k);
        CHECK(same, "%u bytes: %u came back, not the ones sent", len, r[0]->len);
        CHECK(a->ops->rx_peer(a, r[0]) == 0, "%u bytes: not bound to the echo side", len);
        em_link_rx_release(a, r, n);
    }
}

/* tx_to from @p a to @p to, a frame of @p len pattern bytes; the link's
 * answer (a frame not taken is given back) */
static int tx_to(em_link_t *a, const em_link_addr_t *to, uint32_t len)
{
    em_pkt_t *p = NULL;
    for (double end = now_s() + 2; !p && now_s() < end;)
        p = em_link_tx_alloc(a);
    if (!p)
        return -ENOBUFS;
    for (uint32_t i = 0; i < len; i++)
        p->data[i] = byte_at(len, i);
    p->len = len;
    p->peer = 0xFFFFFFF0u; /* no peer: tx_to reads the address only */
    p->ext_len = 0;
    int rc = a->ops->tx_to(a, p, to);
    if (rc != 0)
        em_link_tx_free(a, p);
    em_link_flush(a);
    return rc;
}

/* First contact before @p a has a peer: an address whose next hop does not
 * answer ARP is refused with -EHOSTUNREACH at once (no wait); tx_to to the
 * echo side (retried while the kernel resolves it) comes back intact, no
 * peer's (tx_to made no entry), and rx_from binds it to the echo side's
 * (IPv4, port), not another port's or address's; L2 addresses are refused. */
static void first_contact(em_link_t *a, const em_link_addr_t *far)
{
    CHECK(em_link_has_contact(a), "no tx_to / rx_from");
    em_link_addr_t nobody = *far;
    nobody.bytes[11] = 77; /* 10.98.0.77: on the segment, nobody there */
    double t0 = now_s();
    int rc = tx_to(a, &nobody, 100);
    CHECK(rc == -EHOSTUNREACH && now_s() - t0 < 0.5, "tx_to nobody: %d after %.3f s", rc,
          now_s() - t0);
    rc = -EHOSTUNREACH;
    for (double end = now_s() + 3; rc == -EHOSTUNREACH && now_s() < end; usleep(5000))
        rc = tx_to(a, far, 1200);
    CHECK(rc == 0, "tx_to the echo side: %d", rc);
    em_pkt_t *r[8];
    unsigned n = 0;
    for (double end = now_s() + 3; rc == 0 && n == 0 && now_s() < end;)
        n = em_link_rx_burst(a, r, 8);
    CHECK(n == 1, "first contact: %u frames came back", n);
    if (n == 1) {
        int same = r[0]->len == 1200;
        for (uint32_t k = 0; same && k < 1200; k++)
            same = r[0]->data[k] == byte_at(1200, k);
        CHECK(same, "first contact: %u bytes came back, not the ones sent", r[0]->len);
        CHECK(a->ops->rx_peer(a, r[0]) == EM_LINK_PEER_UNKNOWN, "tx_to made a peer entry");
        em_link_addr_t o = *far;
        CHECK(a->ops->rx_from(a, r[0], &o), "rx_from: not from the echo side");
        o.bytes[13] ^= 1;
        CHECK(!a->ops->rx_from(a, r[0], &o), "rx_from: from another port");
        o = *far;
        o.bytes[11] ^= 1;
        CHECK(!a->ops->rx_from(a, r[0], &o), "rx_from: from another address");
        o = *far;
        o.len = EM_XDP_ADDR_LEN;
        CHECK(!a->ops->rx_from(a, r[0], &o), "rx_from: an L2 address");
    }
    em_link_rx_release(a, r, n);
    static const uint8_t bad[] = { 0, EM_XDP_ADDR_LEN, EM_XDP_ADDR_L2_IP_LEN, 13, 15 };
    for (unsigned i = 0; i < sizeof bad; i++) {
        em_link_addr_t x = *far;
        x.len = bad[i];
        CHECK(tx_to(a, &x, 64) == -EINVAL, "an address of %u bytes taken", bad[i]);
    }
}

/* L2 framing on uc (now 10.96.0.1/24): its blob carries the address; a peer
 * the kernel routes through a gateway is refused with the reason, one on
 * the segment is taken */
static void l2_behind_router(const char *prog)
{
    char err[512];
    CHECK(system("ip addr add 10.96.0.1/24 dev uc && "
                 "ip route add 10.55.0.0/24 via 10.96.0.2 dev uc") == 0,
          "address and route on uc");
    em_xdp_cfg_t c = { .ifname = "uc", .zero_copy = -1, .prog = prog };
    em_link_t *l = em_xdp_link_open(&c, err, sizeof err);
    CHECK(l, "L2 on uc: %s", err);
    if (!l)
        return;
    CHECK(l->local.len == EM_XDP_ADDR_L2_IP_LEN && l->local.bytes[8] == 10 &&
              l->local.bytes[11] == 1,
          "L2 blob of %u bytes", l->local.len);
    em_link_addr_t far = { .len = EM_XDP_ADDR_L2_IP_LEN,
                           .bytes = { 2, 0, 0, 0, 0, 9, 0, 0, 10, 55, 0, 9 } };
    CHECK(l->ops->set_peer(l, 0, &far) != 0 &&
              strstr(em_xdp_link_peer_error(l), "behind the router 10.96.0.2") &&
              strstr(em_xdp_link_peer_error(l), "framing udp"),
          "a peer behind a router: '%s'", em_xdp_link_peer_error(l));
    far.bytes[9] = 96; /* 10.96.0.9: on the segment */
    CHECK(l->ops->set_peer(l, 0, &far) == 0, "a peer on the segment: '%s'",
          em_xdp_link_peer_error(l));
    em_link_close(l);
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    if (geteuid() != 0 || unshare(CLONE_NEWNET) != 0) {
        printf("skipped: needs root (a network namespace of its own)\n");
        return 77;
    }
    if (system("ip link add ua type veth peer name ub 2>/dev/null && ip link set ua mtu 9000 && "
               "ip link set ub mtu 9000 && ip link set lo up && ip addr add 10.98.0.1/24 dev ua "
               "&& ip link set ua up && ip link add uc type veth peer name ud && "
               "ip link set uc up && ip link set ud up") != 0) {
        printf("skipped: cannot make the veth pairs\n");
        return 77;
    }
    char err[512];
    /* no IPv4 on uc: refused, naming the setting that gives one */
    em_link_t *c = open_udp("uc", argv[1], err, sizeof err);
    if (!c && strstr(err, "AF_XDP socket")) {
        printf("skipped: %s\n", err);
        return 77;
    }
    CHECK(!c && strstr(err, "no IPv4 address") && strstr(err, "udp_addr"), "uc without IPv4: %s",
          c ? "opened" : err);
    if (c)
        em_link_close(c);
    int up[2], down[2];
    if (pipe(up) != 0 || pipe(down) != 0)
        return 1;
    pid_t pid = fork();
    if (pid == 0)
        _exit(echo_side(up[1], down[0], argv[1]));
    char ch, cmd[128];
    CHECK(read(up[0], &ch, 1) == 1, "the echo side did not start");
    snprintf(cmd, sizeof cmd, "ip link set ub netns %d", (int)pid);
    CHECK(system(cmd) == 0, "cannot move ub");
    (void)!write(down[1], "g", 1);
    em_link_t *a = open_udp("ua", argv[1], err, sizeof err);
    CHECK(a, "open on ua: %s", err);
    em_link_addr_t far;
    if (a && read(up[0], &far, sizeof far) == (ssize_t)sizeof far) {
        CHECK(a->mtu == 9000 - 28 && a->local.len == EM_XDP_ADDR_UDP_LEN, "MTU %u, address %u",
              a->mtu, a->local.len);
        (void)!write(down[1], &a->local, sizeof a->local);
        /* the far side in L2 framing: refused, naming the mismatch */
        em_link_addr_t l2 = far;
        l2.len = EM_XDP_ADDR_LEN;
        CHECK(a->ops->set_peer(a, 1, &l2) != 0 &&
                  strstr(em_xdp_link_peer_error(a), "framing mismatch"),
              "an L2 peer: '%s'", em_xdp_link_peer_error(a));
        CHECK(read(up[0], &ch, 1) == 1, "the echo side did not set its peer");
        first_contact(a, &far);
        int rc = a->ops->set_peer(a, 0, &far);
        CHECK(rc == 0, "set_peer: %s", em_xdp_link_peer_error(a));
        if (rc == 0)
            exchange(a);
        (void)send_frame(a, NULL, END_LEN, 1);
        const em_xdp_stats_t *st = em_xdp_link_stats(a);
        uint64_t refused = 0;
        for (int e = 0; e < EM_IPUDP_NERR; e++)
            refused += st->udp_refused.refused[e];
        CHECK(refused == 0 && st->rx_bad == 0, "%llu refused, %llu bad",
              (unsigned long long)refused, (unsigned long long)st->rx_bad);
    }
    int ws = -1;
    for (double end = now_s() + 10; now_s() < end && waitpid(pid, &ws, WNOHANG) == 0;)
        usleep(10000);
    if (!WIFEXITED(ws)) {
        kill(pid, SIGKILL);
        waitpid(pid, &ws, 0);
    }
    CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "the echo side ended with %d",
          WIFEXITED(ws) ? WEXITSTATUS(ws) : -1);
    if (a)
        em_link_close(a);
    l2_behind_router(argv[1]);
    printf("%s\n", failures ? "FAILED" : "test_link_xdp_udp: all passed");
    return failures ? 1 : 0;
}
