/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file test_bcast_xdp.c
 * em_bcast on the native AF_XDP link (EM_BCAST_XDP, no DPDK) on a veth
 * pair in a network namespace of its own: two members, one on each end,
 * exchange updates both ways in L2 framing (ethertype 0x88B6) and in udp
 * framing (255.255.255.255:29718); each arrives once, intact, from its
 * sender, with no gap.  A missing interface is refused with the reason.
 *
 *   test_bcast_xdp XDP_DROP_OBJECT
 * Exit 77 (skipped) without root, veth or AF_XDP.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bcast/em_bcast.h"
#include "unit_check.h"

static double got[64];
static unsigned calls;
static uint16_t from;

static void apply(void *arg, uint16_t sender, uint32_t off, uint32_t count, const double *v)
{
    (void)arg;
    memcpy(got + off, v, count * sizeof *v);
    from = sender;
    calls++;
}

static em_bcast_t *open_member(const char *iface, uint16_t self, int framing, const char *prog,
                               char *err, size_t len)
{
    em_bcast_cfg_t c = { .kind = EM_BCAST_XDP,
                         .key = 91,
                         .channel = 2,
                         .self = self,
                         .members = 2,
                         .vec_len = 64,
                         .iface = iface,
                         .framing = framing,
                         .xdp_prog = prog };
    return em_bcast_open(&c, err, len);
}

/* @p a sends an update; @p b must deliver it, from a's id */
static void one_update(em_bcast_t *a, em_bcast_t *b, uint16_t sender, double base, const char *how)
{
    double v[3] = { base, base + 1, base + 2 };
    CHECK(em_bcast_send(a, 8, v, 3) == 0, "%s: member %u could not send", how, sender);
    calls = 0;
    memset(got, 0, sizeof got);
    for (double end = now_s() + 2; calls == 0 && now_s() < end;) {
        (void)em_bcast_poll(a, apply, NULL, 0); /* its own looped frame, if any */
        (void)em_bcast_poll(b, apply, NULL, 0);
    }
    CHECK(calls == 1 && from == sender && got[8] == base && got[10] == base + 2,
          "%s: from member %u: %u deliveries (sender %u, %g %g)", how, sender, calls, from, got[8],
          got[10]);
}

static void run(int framing, const char *prog)
{
    const char *how = framing ? "udp framing" : "L2 framing";
    char err[512];
    em_bcast_t *a = open_member("xa", 0, framing, prog, err, sizeof err);
    CHECK(a, "%s: member 0 on xa: %s", how, err);
    em_bcast_t *b = a ? open_member("xb", 1, framing, prog, err, sizeof err) : NULL;
    CHECK(!a || b, "%s: member 1 on xb: %s", how, err);
    if (a && b) {
        CHECK(em_bcast_max_elems(a) >= (9000 - 28 - 64) / 8, "%s: %u elements per frame", how,
              em_bcast_max_elems(a));
        CHECK((em_bcast_local_ipv4(a) != 0) == framing, "%s: local IPv4 %08x", how,
              em_bcast_local_ipv4(a));
        for (int k = 0; k < 20; k++) {
            one_update(a, b, 0, 10.0 * k, how);
            one_update(b, a, 1, -10.0 * k, how);
        }
        CHECK(em_bcast_stats(a)->dropped == 0 && em_bcast_stats(b)->dropped == 0,
              "%s: dropped %llu, %llu", how, (unsigned long long)em_bcast_stats(a)->dropped,
              (unsigned long long)em_bcast_stats(b)->dropped);
    }
    if (b)
        em_bcast_close(b);
    if (a)
        em_bcast_close(a);
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
               "ip link set xb mtu 9000 && ip addr add 10.97.0.1/24 dev xa && "
               "ip addr add 10.97.0.2/24 dev xb && ip link set lo up && ip link set xa up && "
               "ip link set xb up") != 0) {
        printf("skipped: cannot make a veth pair\n");
        return 77;
    }
    char err[512];
    em_bcast_t *none = open_member("nosuch0", 0, 0, argv[1], err, sizeof err);
    if (!none && strstr(err, "AF_XDP socket")) {
        printf("skipped: %s\n", err);
        return 77;
    }
    CHECK(!none && strstr(err, "xdp-bcast") && strstr(err, "nosuch0"), "no interface: %s",
          none ? "opened" : err);
    run(0, argv[1]);
    run(1, argv[1]);
    printf("%s\n", failures ? "FAILED" : "test_bcast_xdp: all passed");
    return failures ? 1 : 0;
}
