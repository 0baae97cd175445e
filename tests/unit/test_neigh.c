/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Netlink next hop (src/link/neigh.h) against a real kernel, inside a
 * network namespace of the test's own (unshare(CLONE_NEWNET)) plus one
 * named peer namespace "emneigh<pid>" that answers ARP:
 *   t0 10.99.0.1/24 (ours) <-veth-> t1 10.99.0.7/24 (peer namespace)
 *   10.98.0.0/24 via 10.99.0.254 (mtu 1400), 10.97.0.0/24 via veth d0
 * Checks: gateway route and its MTU, a permanent gateway entry, the error
 * naming the gateway when it has no entry and does not answer ARP, an
 * on-link peer resolved by the kernel's ARP after our datagram, a route
 * through another interface refused, and a changed MAC seen by the watch.
 * Needs root (skipped, exit 77, without).
 */
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <net/if.h>
#include <unistd.h>

#include <cmocka.h>

#include "link/neigh.h"

static char peer_ns[64];

static void sh(const char *fmt, ...)
{
    char cmd[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    if (system(cmd) != 0) {
        char del[128];
        snprintf(del, sizeof del, "ip netns del %s 2>/dev/null", peer_ns);
        if (system(del) != 0) { /* nothing more to do */
        }
        fail_msg("setup command failed: %s", cmd);
    }
}

static int setup(void **state)
{
    (void)state;
    snprintf(peer_ns, sizeof peer_ns, "emneigh%ld", (long)getpid());
    sh("ip netns add %s", peer_ns);
    sh("ip link set lo up && ip link add t0 type veth peer name t1 && ip link set t1 netns %s",
       peer_ns);
    sh("ip addr add 10.99.0.1/24 dev t0 && ip link set t0 up");
    sh("ip -n %s addr add 10.99.0.7/24 dev t1 && ip -n %s link set t1 up", peer_ns, peer_ns);
    sh("ip link add d0 type veth peer name d1 && ip addr add 10.96.0.1/24 dev d0 && ip link set d1 "
       "up && ip link set d0 up");
    sh("ip route add 10.98.0.0/24 via 10.99.0.254 dev t0 mtu 1400");
    sh("ip route add 10.97.0.0/24 via 10.96.0.254 dev d0");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "ip netns del %s 2>/dev/null", peer_ns);
    if (system(cmd) != 0)
        fprintf(stderr, "could not delete %s\n", peer_ns);
    return 0;
}

static void test_gateway(void **state)
{
    (void)state;
    char err[512];
    em_route_t r;
    assert_int_equal(em_route_get(0x0A620005u, &r, err, sizeof err), 0);
    assert_int_equal(r.gateway, 0x0A6300FEu); /* 10.99.0.254 */
    assert_int_equal(r.mtu, 1400);
    /* no entry, nobody answers: the error names the gateway and the cause */
    em_nexthop_t nh;
    assert_int_equal(em_nexthop_resolve(0x0A620005u, "t0", 150, &nh, err, sizeof err), -1);
    assert_non_null(strstr(err, "gateway 10.99.0.254"));
    assert_non_null(strstr(err, "ARP"));
    sh("ip neigh replace 10.99.0.254 lladdr 02:00:00:00:00:aa dev t0 nud permanent");
    assert_int_equal(em_nexthop_resolve(0x0A620005u, "t0", 150, &nh, err, sizeof err), 0);
    const uint8_t aa[6] = { 2, 0, 0, 0, 0, 0xaa };
    assert_memory_equal(nh.mac, aa, 6);
    assert_int_equal(nh.gateway, 0x0A6300FEu);
    assert_int_equal(nh.path_mtu, 1400);
}

static void test_onlink_arp(void **state)
{
    (void)state;
    char err[512];
    em_nexthop_t nh;
    uint8_t mac[6];
    assert_int_equal(em_neigh_get((int)if_nametoindex("t0"), 0x0A630007u, mac), 0);
    /* our datagram makes the kernel ARP; the peer namespace answers */
    assert_int_equal(em_nexthop_resolve(0x0A630007u, "t0", 2000, &nh, err, sizeof err), 0);
    assert_int_equal(nh.gateway, 0);
    assert_int_equal(nh.ip, 0x0A630007u);
    assert_int_equal(nh.path_mtu, 1500);
    /* nobody at .9: the error names the peer, not a gateway */
    assert_int_equal(em_nexthop_resolve(0x0A630009u, "t0", 100, &nh, err, sizeof err), -1);
    assert_non_null(strstr(err, "no neighbour entry for 10.99.0.9 on t0"));
}

static void test_other_interface(void **state)
{
    (void)state;
    char err[512];
    em_nexthop_t nh;
    assert_int_equal(em_nexthop_resolve(0x0A610005u, "t0", 100, &nh, err, sizeof err), -1);
    assert_non_null(strstr(err, "leaves through d0, not through t0"));
    assert_int_equal(em_nexthop_resolve(0x0A610005u, "nosuch0", 100, &nh, err, sizeof err), -1);
    assert_non_null(strstr(err, "no interface 'nosuch0'"));
}

static void test_watch(void **state)
{
    (void)state;
    em_neigh_watch_t w;
    assert_int_equal(em_neigh_watch_open(&w), 0);
    uint32_t ips[2] = { 0x0A630063u, 0x0A6300FEu }; /* 10.99.0.99 (never set), the gateway */
    uint8_t macs[2][6] = { { 0 }, { 2, 0, 0, 0, 0, 0xaa } };
    uint8_t valid[2] = { 0, 1 };
    assert_int_equal(em_neigh_watch_poll(&w, (int)if_nametoindex("t0"), ips, macs, valid, 2), 0);
    sh("ip neigh replace 10.99.0.254 lladdr 02:00:00:00:00:bb dev t0 nud permanent");
    unsigned got = 0;
    for (int i = 0; i < 100 && !got; i++) {
        got = em_neigh_watch_poll(&w, (int)if_nametoindex("t0"), ips, macs, valid, 2);
        usleep(10000);
    }
    assert_int_equal(got, 1);
    assert_int_equal(macs[1][5], 0xbb);
    assert_int_equal(valid[0], 0);
    sh("ip neigh del 10.99.0.254 dev t0");
    got = 0;
    for (int i = 0; i < 100 && !got; i++) {
        got = em_neigh_watch_poll(&w, (int)if_nametoindex("t0"), ips, macs, valid, 2);
        usleep(10000);
    }
    assert_int_equal(got, 1);
    assert_int_equal(valid[1], 0);
    em_neigh_watch_close(&w);
}

int main(void)
{
    if (geteuid() != 0) {
        printf("SKIP: needs root (network namespaces)\n");
        return 77;
    }
    if (unshare(CLONE_NEWNET) != 0) {
        perror("unshare(CLONE_NEWNET)");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gateway),
        cmocka_unit_test(test_onlink_arp),
        cmocka_unit_test(test_other_interface),
        cmocka_unit_test(test_watch),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
