/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The per-peer paths of udp framing (src/link/ipudp_paths.h), as both
 * kernel-bypass links use them: our address from the settings (and the
 * errors naming the link's setting), the subnet broadcast, the next hop of
 * a broadcast, a group and a cable's peer, set_peer's template and
 * by-source map (moved when a peer's address changes, none for a
 * broadcast), which received frames are ours, and the once-per-peer
 * warning.  Then, with root, against a real kernel in a network namespace
 * of the test's own (unshare(CLONE_NEWNET)):
 *   p0 10.95.0.1/24 <-veth-> p1, 10.95.0.2 a permanent neighbour,
 *   10.94.0.0/24 via 10.95.0.2 (mtu 1400)
 * the kernel's next hop, the path-MTU refusal in each link's words, and
 * L2 framing's segment check (skipped without root).
 */
#include <errno.h>
#include <net/if.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "link/ipudp_paths.h"
#include "link/link.h"

static const uint8_t our_mac[6] = { 2, 0xe7, 0, 0, 0, 1 };
static const uint8_t cable_mac[6] = { 2, 0xe7, 0, 0, 0, 2 };
static int have_netns;

/* the DPDK link's words; a cable (no interface) unless @p ifname */
static em_udp_paths_cfg_t dpdk_cfg(const char *addr, uint32_t if_ip, unsigned plen,
                                   const char *ifname)
{
    em_udp_paths_cfg_t c = {
        .addr = addr,
        .if_ip = if_ip,
        .if_plen = plen,
        .fallback_ip = 0xA9FE0001u,
        .ifname = ifname,
        .ifindex = ifname ? (int)if_nametoindex(ifname) : 0,
        .addr_setting = "btl_dpdk_udp_addr",
        .mtu_setting = "btl_dpdk_mtu",
        .unit = "port",
    };
    return c;
}

static void test_own_address(void **state)
{
    (void)state;
    char err[256];
    em_udp_paths_t t;
    em_udp_paths_cfg_t c = dpdk_cfg("10.1.2.3", 0x0A010203u, 24, NULL);
    assert_int_equal(em_udp_paths_init(&t, &c, err, sizeof err), 0);
    assert_int_equal(t.ip, 0x0A010203u);
    assert_int_equal(t.port, EM_UDP_PORT);
    assert_int_equal(t.resolve_ms, 3000);
    assert_int_equal(t.bcast_ip, 0x0A0102FFu);
    em_udp_paths_free(&t);

    /* an address that is not the interface's: no subnet broadcast known */
    c = dpdk_cfg("10.1.2.9", 0x0A010203u, 24, NULL);
    c.port = 4000;
    assert_int_equal(em_udp_paths_init(&t, &c, err, sizeof err), 0);
    assert_int_equal(t.bcast_ip, 0);
    assert_int_equal(t.port, 4000);
    em_udp_paths_free(&t);

    /* /31: no broadcast address */
    c = dpdk_cfg(NULL, 0x0A010203u, 31, NULL);
    assert_int_equal(em_udp_paths_init(&t, &c, err, sizeof err), 0);
    assert_int_equal(t.ip, 0x0A010203u);
    assert_int_equal(t.bcast_ip, 0);
    em_udp_paths_free(&t);

    /* a cable: the fallback */
    c = dpdk_cfg("", 0, 0, NULL);
    assert_int_equal(em_udp_paths_init(&t, &c, err, sizeof err), 0);
    assert_int_equal(t.ip, 0xA9FE0001u);
    em_udp_paths_free(&t);

    c = dpdk_cfg("10.1.2", 0, 0, NULL);
    assert_int_equal(em_udp_paths_init(&t, &c, err, sizeof err), -1);
    assert_string_equal(err, "udp framing: '10.1.2' is not an IPv4 address (btl_dpdk_udp_addr)");

    c = dpdk_cfg(NULL, 0, 0, "lo");
    c.addr_setting = "the udp_addr setting";
    assert_int_equal(em_udp_paths_init(&t, &c, err, sizeof err), -1);
    assert_string_equal(err, "udp framing: the interface lo has no IPv4 address (give it one, or "
                             "name ours with the udp_addr setting)");
}

static void test_next_hop_without_kernel(void **state)
{
    (void)state;
    char err[256] = "";
    em_udp_paths_t t;
    em_udp_paths_cfg_t c = dpdk_cfg(NULL, 0x0A010203u, 24, NULL);
    assert_int_equal(em_udp_paths_init(&t, &c, err, sizeof err), 0);
    uint8_t mac[6];
    uint32_t nh = 99;
    static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
    assert_int_equal(em_udp_next_hop(&t, 0xFFFFFFFFu, 1472, cable_mac, mac, &nh, err, sizeof err),
                     0);
    assert_memory_equal(mac, bcast, 6);
    assert_int_equal(nh, 0);
    assert_int_equal(em_udp_next_hop(&t, 0x0A0102FFu, 1472, cable_mac, mac, &nh, err, sizeof err),
                     0);
    assert_memory_equal(mac, bcast, 6);
    /* 239.129.2.3: the group's low 23 bits */
    static const uint8_t group[6] = { 0x01, 0x00, 0x5e, 0x01, 0x02, 0x03 };
    assert_int_equal(em_udp_next_hop(&t, 0xEF810203u, 1472, cable_mac, mac, &nh, err, sizeof err),
                     0);
    assert_memory_equal(mac, group, 6);
    assert_int_equal(em_udp_next_hop(&t, 0x0A010207u, 1472, cable_mac, mac, &nh, err, sizeof err),
                     0);
    assert_memory_equal(mac, cable_mac, 6);
    assert_int_equal(nh, 0);
    assert_string_equal(err, "");
    em_udp_paths_free(&t);
}

/* headers as the peer at (@p ip, @p port) sends them to @p dst_ip */
static void frame_from(uint32_t ip, uint16_t port, uint32_t dst_ip, uint32_t plen, uint8_t *f)
{
    const em_ipudp_path_t p = { .src_mac = { 2, 0xe7, 0, 0, 0, 2 },
                                .dst_mac = { 2, 0xe7, 0, 0, 0, 1 },
                                .src_ip = ip,
                                .dst_ip = dst_ip,
                                .src_port = port,
                                .dst_port = EM_UDP_PORT };
    memset(f + EM_IPUDP_HDR_LEN, 0x5a, plen);
    assert_int_equal(em_ipudp_encode(&p, 1, plen, 0, f), 0);
}

static void test_blob(void **state)
{
    (void)state;
    char err[256];
    em_udp_paths_t t;
    em_udp_paths_cfg_t c = dpdk_cfg("10.1.2.3", 0, 0, NULL);
    c.port = 0x1234;
    assert_int_equal(em_udp_paths_init(&t, &c, err, sizeof err), 0);
    uint8_t blob[14] = { 0 };
    em_udp_blob_put(&t, blob);
    static const uint8_t want[14] = { 0, 0, 0, 0, 0, 0, 0, 0, 10, 1, 2, 3, 0x12, 0x34 };
    assert_memory_equal(blob, want, sizeof want);
    assert_int_equal(em_udp_blob_ip(blob), 0x0A010203u);
    assert_int_equal(em_udp_blob_port(blob), 0x1234);
    em_udp_paths_free(&t);
}

static void test_set_peer_and_rx(void **state)
{
    (void)state;
    char err[256] = "";
    em_udp_paths_t t;
    em_udp_paths_cfg_t c = dpdk_cfg(NULL, 0x0A010203u, 24, NULL);
    c.tx_flags = EM_IPUDP_TX_IP_CSUM_HW;
    assert_int_equal(em_udp_paths_init(&t, &c, err, sizeof err), 0);
    assert_int_equal(
        em_udp_paths_set_peer(&t, 5, 0x0A010207u, 4000, our_mac, 1472, cable_mac, err, sizeof err),
        0);
    assert_true(t.npeers >= 6);
    /* the template writes what the encoder writes for this path */
    const em_ipudp_path_t want = { .src_mac = { 2, 0xe7, 0, 0, 0, 1 },
                                   .dst_mac = { 2, 0xe7, 0, 0, 0, 2 },
                                   .src_ip = 0x0A010203u,
                                   .dst_ip = 0x0A010207u,
                                   .src_port = EM_UDP_PORT,
                                   .dst_port = 4000 };
    uint8_t a[EM_IPUDP_HDR_LEN], b[EM_IPUDP_HDR_LEN];
    assert_int_equal(em_ipudp_encode(&want, 7, 100, EM_IPUDP_TX_IP_CSUM_HW, a), 0);
    const uint8_t pay[100] = { 0 };
    em_csum_piece_t pc = { pay, sizeof pay };
    assert_int_equal(em_ipudp_template_write(&t.tmpl[5], 7, 100, &pc, 1, 0, b), 0);
    assert_memory_equal(a, b, sizeof a);

    static uint8_t f[EM_IPUDP_HDR_LEN + 2000];
    frame_from(0x0A010207u, 4000, t.ip, 64, f);
    assert_int_equal(em_udp_paths_rx_peer(&t, f), 5);
    frame_from(0x0A010207u, 4001, t.ip, 64, f);
    assert_int_equal(em_udp_paths_rx_peer(&t, f), EM_LINK_PEER_UNKNOWN);

    /* a new address: the old source no longer names the peer */
    assert_int_equal(
        em_udp_paths_set_peer(&t, 5, 0x0A010208u, 4000, our_mac, 1472, cable_mac, err, sizeof err),
        0);
    frame_from(0x0A010207u, 4000, t.ip, 64, f);
    assert_int_equal(em_udp_paths_rx_peer(&t, f), EM_LINK_PEER_UNKNOWN);
    frame_from(0x0A010208u, 4000, t.ip, 64, f);
    assert_int_equal(em_udp_paths_rx_peer(&t, f), 5);

    /* the broadcast peer only sends */
    assert_int_equal(
        em_udp_paths_set_peer(&t, 6, 0x0A0102FFu, 4000, our_mac, 1472, cable_mac, err, sizeof err),
        0);
    frame_from(0x0A0102FFu, 4000, t.ip, 64, f);
    assert_int_equal(em_udp_paths_rx_peer(&t, f), EM_LINK_PEER_UNKNOWN);

    /* ours: our address, the broadcasts, a group; not a stranger's */
    assert_true(em_udp_accept_dst(&t, 0x0A010203u));
    assert_true(em_udp_accept_dst(&t, 0x0A0102FFu));
    assert_true(em_udp_accept_dst(&t, 0xFFFFFFFFu));
    assert_true(em_udp_accept_dst(&t, 0xE0000001u));
    assert_false(em_udp_accept_dst(&t, 0x0A010204u));

    em_ipudp_counters_t n = { { 0 } };
    em_ipudp_rx_t rx;
    frame_from(0x0A010208u, 4000, t.ip, 64, f);
    assert_int_equal(em_udp_paths_rx(&t, f, EM_IPUDP_HDR_LEN + 64, 0, 1472, &n, &rx), 0);
    assert_ptr_equal(rx.payload, f + EM_IPUDP_HDR_LEN);
    assert_int_equal(rx.payload_len, 64);
    frame_from(0x0A010208u, 4000, 0x0A010204u, 64, f);
    assert_int_equal(em_udp_paths_rx(&t, f, EM_IPUDP_HDR_LEN + 64, 0, 1472, &n, &rx), -1);
    assert_int_equal(n.refused[EM_IPUDP_ADDR], 1);
    frame_from(0x0A010208u, 4000, t.ip, 1473, f);
    assert_int_equal(em_udp_paths_rx(&t, f, EM_IPUDP_HDR_LEN + 1473, 0, 1472, &n, &rx), -1);
    assert_int_equal(n.refused[EM_IPUDP_IP_LEN], 1);
    /* no watch (a cable): nothing to follow */
    for (unsigned i = 0; i < 2 * EM_UDP_NEIGH_POLL_EVERY; i++)
        assert_int_equal(em_udp_paths_poll(&t), 0);
    em_udp_paths_free(&t);
    assert_null(t.path);
}

/* lines written to stderr while @p fn runs */
static unsigned stderr_lines(void (*fn)(void))
{
    fflush(stderr);
    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    int saved = dup(2);
    assert_true(saved >= 0 && dup2(fileno(tmp), 2) == 2);
    fn();
    fflush(stderr);
    assert_int_equal(dup2(saved, 2), 2);
    close(saved);
    rewind(tmp);
    unsigned n = 0;
    char line[512];
    while (fgets(line, sizeof line, tmp))
        n += strstr(line, "ethermpi xdp: peer gone") != NULL;
    fclose(tmp);
    return n;
}

static void say_some(void)
{
    uint64_t warned = 0;
    for (int i = 0; i < 3; i++) {
        em_link_say_once(&warned, 3, "xdp", "peer gone");
        em_link_say_once(&warned, 70, "xdp", "peer gone"); /* >= 64: every time */
        em_link_say_once(&warned, 4, "xdp", "");           /* nothing to say */
    }
}

static void test_say_once(void **state)
{
    (void)state;
    assert_int_equal(stderr_lines(say_some), 1 + 3);
}

static void sh(const char *cmd)
{
    if (system(cmd) != 0)
        fail_msg("setup command failed: %s", cmd);
}

static void test_kernel_next_hop(void **state)
{
    (void)state;
    if (!have_netns)
        skip();
    sh("ip link set lo up && ip link add p0 type veth peer name p1 && "
       "ip addr add 10.95.0.1/24 dev p0 && ip link set p0 up && ip link set p1 up");
    sh("ip neigh replace 10.95.0.2 lladdr 02:e7:00:00:95:02 dev p0 nud permanent");
    sh("ip route add 10.94.0.0/24 via 10.95.0.2 dev p0 mtu 1400");
    static const uint8_t gw_mac[6] = { 2, 0xe7, 0, 0, 0x95, 2 };
    char err[320] = "";
    em_udp_paths_t t;
    em_udp_paths_cfg_t c = dpdk_cfg(NULL, 0x0A5F0001u, 24, "p0");
    assert_int_equal(em_udp_paths_init(&t, &c, err, sizeof err), 0);
    assert_true(t.watch.fd >= 0);
    /* on-link: the kernel's entry; the cable MAC is not used */
    assert_int_equal(
        em_udp_paths_set_peer(&t, 0, 0x0A5F0002u, 4000, our_mac, 1472, cable_mac, err, sizeof err),
        0);
    assert_memory_equal(t.path[0].dst_mac, gw_mac, 6);
    assert_int_equal(t.nh_ip[0], 0x0A5F0002u);
    assert_true(t.nh_valid[0]);
    /* behind the router: its MAC, and its route's MTU bounds our packets */
    assert_int_equal(
        em_udp_paths_set_peer(&t, 1, 0x0A5E0005u, 4000, our_mac, 1372, NULL, err, sizeof err), 0);
    assert_memory_equal(t.path[1].dst_mac, gw_mac, 6);
    assert_int_equal(t.nh_ip[1], 0x0A5F0002u);
    assert_int_equal(
        em_udp_paths_set_peer(&t, 1, 0x0A5E0006u, 4000, our_mac, 1472, NULL, err, sizeof err),
        -EMSGSIZE);
    assert_string_equal(err, "udp framing: the path MTU to 10.94.0.6 is 1400, below this port's "
                             "1500-byte packets (never fragmented): set btl_dpdk_mtu to 1400 or "
                             "less");
    assert_int_equal(t.path[1].dst_ip, 0x0A5E0005u); /* the previous path stays */
    em_udp_paths_free(&t);

    c.mtu_setting = "the mtu setting";
    c.unit = "link";
    assert_int_equal(em_udp_paths_init(&t, &c, err, sizeof err), 0);
    assert_int_equal(
        em_udp_paths_set_peer(&t, 0, 0x0A5E0006u, 4000, our_mac, 1472, NULL, err, sizeof err),
        -EMSGSIZE);
    assert_string_equal(err, "udp framing: the path MTU to 10.94.0.6 is 1400, below this link's "
                             "1500-byte packets (never fragmented): set the mtu setting to 1400 or "
                             "less");
    em_udp_paths_free(&t);

    /* L2 framing: on-link through p0, or the reason it is not */
    int p0 = (int)if_nametoindex("p0");
    assert_int_equal(
        em_l2_segment_check(0x0A5F0002u, "p0", p0, 0x88B5, "framing udp", err, sizeof err), 0);
    assert_int_equal(
        em_l2_segment_check(0x0A5E0006u, "p0", p0, 0x88B5, "framing udp", err, sizeof err),
        -EHOSTUNREACH);
    assert_string_equal(err, "L2 framing: peer 10.94.0.6 unreachable: it is behind the router "
                             "10.95.0.2, and raw Ethernet frames (ethertype 0x88b5) do not cross "
                             "a router; run the job with framing udp");
    assert_int_equal(em_l2_segment_check(0x0A5F0002u, "lo", (int)if_nametoindex("lo"), 0x88B5,
                                         "framing udp", err, sizeof err),
                     -EHOSTUNREACH);
    assert_string_equal(err, "L2 framing: peer 10.95.0.2 unreachable: it is not on lo's segment "
                             "(the kernel routes it through another interface)");
}

int main(void)
{
    /* the kernel test's own namespace: nothing of the host's is touched */
    have_netns = geteuid() == 0 && unshare(CLONE_NEWNET) == 0;
    if (!have_netns)
        fprintf(stderr, "test_ipudp_paths: no root or no network namespace: the kernel next-hop "
                        "test is skipped\n");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_own_address), cmocka_unit_test(test_next_hop_without_kernel),
        cmocka_unit_test(test_blob),        cmocka_unit_test(test_set_peer_and_rx),
        cmocka_unit_test(test_say_once),    cmocka_unit_test(test_kernel_next_hop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
