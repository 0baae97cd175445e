/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * link_dpdk in udp framing on net_ring0, which loops every
 * frame sent back to the receive queue, so a link that sends to its own
 * address sees its own frames: the 14-byte address blob (MAC, queue,
 * 169.254.x.y from the MAC: no kernel interface, port 29717), the MTU
 * less the 28 bytes of IP and UDP, the headers on the wire (checked by the
 * decoder: checksums, lengths, port), a zero-copy (gathered) payload
 * checksummed across its two pieces, rx_peer by source (IPv4, port), frames
 * broken by hand (bad checksum, fragment, foreign port) refused and
 * counted, a framing mismatch refused with its reason, and a second user
 * of the port (the broadcast channel, port 29718) demultiplexed by port;
 * first contact (tx_to an address no peer has, rx_from by IPv4 and port).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_mbuf.h>

#include "link/ipudp.h"
#include "link_test_util.h"
#include "link/link_dpdk.h"

static em_link_t *L;

/* poll until @p want frames came (or 2000 tries); check each against @p s */
static unsigned expect(em_link_t *l, unsigned want, const char *s, uint32_t peer)
{
    em_pkt_t *pk[32];
    unsigned got = 0;
    for (int tries = 0; tries < 2000 && got < want; tries++) {
        unsigned n = em_link_rx_burst(l, pk, 32);
        for (unsigned i = 0; i < n; i++) {
            assert_int_equal(pk[i]->len, strlen(s));
            assert_memory_equal(pk[i]->data, s, pk[i]->len);
            assert_int_equal(l->ops->rx_peer(l, pk[i]), peer);
        }
        got += n;
        em_link_rx_release(l, pk, n);
    }
    return got;
}

static void test_address_and_loopback(void **st)
{
    (void)st;
    assert_int_equal(L->local.len, EM_DPDK_ADDR_UDP);
    assert_int_equal(L->local.bytes[8], 169);
    assert_int_equal(L->local.bytes[9], 254);
    assert_int_equal(L->local.bytes[12] << 8 | L->local.bytes[13], EM_UDP_PORT);
    char s[64];
    em_link_dpdk_addr_str(&L->local, s, sizeof s);
    assert_non_null(strstr(s, " 169.254."));
    assert_non_null(strstr(s, ":29717"));
    assert_int_equal(em_link_set_peer(L, 2, &L->local), 0);
    em_test_send_str(L, 2, "hello over udp");
    em_test_send_str(L, 2, "hello over udp");
    assert_int_equal(expect(L, 2, "hello over udp", 2), 2);
    assert_true(em_link_dpdk_stats(L)->tx_csum_sw >= 2);
    /* an L2 peer: refused with the reason */
    em_link_addr_t l2 = { .len = EM_DPDK_ADDR_L2 };
    assert_int_not_equal(em_link_set_peer(L, 5, &l2), 0);
    assert_non_null(strstr(em_link_dpdk_peer_error(L), "framing mismatch"));
}

static void test_gather_checksum(void **st)
{
    (void)st;
    if (!(L->flags & EM_LINK_F_GATHER)) {
        skip();
        return;
    }
    assert_int_equal(em_link_set_peer(L, 0, &L->local), 0);
    static uint8_t payload[1201]; /* odd: the second piece starts at an odd offset too */
    for (size_t i = 0; i < sizeof payload; i++)
        payload[i] = (uint8_t)(i * 7 + 3);
    em_test_send(L, 0, "HDR", 3, payload, sizeof payload);
    em_pkt_t *pk[4];
    unsigned n = 0;
    for (int tries = 0; tries < 2000 && n == 0; tries++)
        n = em_link_rx_burst(L, pk, 4);
    assert_int_equal(n, 1); /* the decoder verified the UDP checksum */
    assert_int_equal(pk[0]->len, 3 + sizeof payload);
    assert_memory_equal(pk[0]->data + 3, payload, sizeof payload);
    em_link_rx_release(L, pk, n);
    assert_int_equal(em_link_dpdk_stats(L)->udp_refused.refused[EM_IPUDP_UDP_CSUM], 0);
}

/* a frame to ourselves, built by the framing module, changed by @p how */
static void inject(void (*how)(uint8_t *f))
{
    static struct rte_mempool *mp;
    if (!mp)
        mp = rte_pktmbuf_pool_create("test_raw_udp", 63, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
                                     SOCKET_ID_ANY);
    assert_non_null(mp);
    struct rte_mbuf *m = rte_pktmbuf_alloc(mp);
    uint8_t *f = (uint8_t *)rte_pktmbuf_append(m, EM_IPUDP_HDR_LEN + 20);
    em_ipudp_path_t pa = { .src_ip = 0x0A000001u,
                           .src_port = 1,
                           .dst_ip = (uint32_t)L->local.bytes[8] << 24 |
                                     (uint32_t)L->local.bytes[9] << 16 |
                                     (uint32_t)L->local.bytes[10] << 8 | L->local.bytes[11],
                           .dst_port = EM_UDP_PORT };
    memcpy(pa.dst_mac, L->local.bytes, 6);
    em_ipudp_encode(&pa, 9, 20, 0, f);
    memset(f + EM_IPUDP_HDR_LEN, 'x', 20);
    em_csum_piece_t pc = { f + EM_IPUDP_HDR_LEN, 20 };
    em_ipudp_udp_csum_set(f, &pc, 1);
    how(f);
    assert_int_equal(rte_eth_tx_burst(0, 0, &m, 1), 1);
}

static void flip_payload(uint8_t *f) { f[EM_IPUDP_HDR_LEN + 3] ^= 1; }
static void set_mf(uint8_t *f)
{
    f[20] |= 0x20;
    em_test_ip_csum_fix(f);
}
static void other_port(uint8_t *f) { f[37] = (uint8_t)(f[37] + 7); }

static void test_refused_frames(void **st)
{
    (void)st;
    const em_dpdk_stats_t *s = em_link_dpdk_stats(L);
    uint64_t foreign = s->rx_foreign;
    assert_int_equal(em_link_set_peer(L, 2, &L->local), 0); /* our address is peer 2's again */
    inject(flip_payload);
    inject(set_mf);
    inject(other_port);
    em_test_send_str(L, 2, "good");
    assert_int_equal(expect(L, 1, "good", 2), 1);
    for (int i = 0; i < 200; i++) /* nothing else comes */
        assert_int_equal(expect(L, 1, "none", 0), 0);
    assert_int_equal(s->udp_refused.refused[EM_IPUDP_UDP_CSUM], 1);
    assert_int_equal(s->udp_refused.refused[EM_IPUDP_FRAGMENT], 1);
    assert_int_equal(s->rx_foreign, foreign + 1); /* another port: not ours at all */
}

static void unchanged(uint8_t *f) { (void)f; }

/* one received frame, or NULL after 2000 polls (more than one: a failure) */
static em_pkt_t *recv_one(void)
{
    em_pkt_t *pk[4];
    unsigned n = 0;
    for (int tries = 0; tries < 2000 && n == 0; tries++)
        n = em_link_rx_burst(L, pk, 4);
    assert_true(n <= 1);
    return n ? pk[0] : NULL;
}

/* First contact: tx_to our own address (the cable: the blob's MAC is the
 * next hop) arrives intact, judged by rx_from by (IPv4, port); tx_to to
 * 10.0.0.1:1, which no peer is, leaves with that destination (the ring
 * brings it back, to port 1: not ours) and makes no peer of it: a frame
 * from 10.0.0.1:1 is still no peer's; L2 addresses are refused. */
static void test_tx_to_rx_from(void **st)
{
    (void)st;
    const em_dpdk_stats_t *s = em_link_dpdk_stats(L);
    assert_true(em_link_has_contact(L));
    assert_int_equal(em_test_tx_to_str(L, &L->local, "first contact"), 0);
    em_pkt_t *r = recv_one();
    assert_non_null(r);
    assert_int_equal(r->len, 13);
    assert_memory_equal(r->data, "first contact", 13);
    assert_true(L->ops->rx_from(L, r, &L->local));
    em_link_addr_t o = L->local;
    o.bytes[13] ^= 1; /* another port */
    assert_false(L->ops->rx_from(L, r, &o));
    o = L->local;
    o.bytes[11] ^= 1; /* another IPv4 address */
    assert_false(L->ops->rx_from(L, r, &o));
    o = L->local;
    o.bytes[0] ^= 2; /* another MAC: not judged (a router's, across one) */
    assert_true(L->ops->rx_from(L, r, &o));
    o.len = EM_DPDK_ADDR_L2_IP;
    assert_false(L->ops->rx_from(L, r, &o));
    em_link_rx_release(L, &r, 1);
    /* to 10.0.0.1:1 */
    em_link_addr_t x = { .len = EM_DPDK_ADDR_UDP,
                         .bytes = { 0x02, 0, 0, 0, 0, 0x77, 0, 0, 10, 0, 0, 1, 0, 1 } };
    uint64_t foreign = s->rx_foreign;
    assert_int_equal(em_test_tx_to_str(L, &x, "to a stranger"), 0);
    assert_null(recv_one());
    assert_int_equal(s->rx_foreign, foreign + 1); /* to port 1: not ours */
    inject(unchanged);                            /* from 10.0.0.1:1 */
    assert_non_null(r = recv_one());
    assert_int_equal(L->ops->rx_peer(L, r), EM_LINK_PEER_UNKNOWN);
    assert_true(L->ops->rx_from(L, r, &x));
    assert_false(L->ops->rx_from(L, r, &L->local));
    em_link_rx_release(L, &r, 1);
    const uint8_t bad[] = { 0, EM_DPDK_ADDR_L2, EM_DPDK_ADDR_L2_IP, 13, 15 };
    for (unsigned i = 0; i < sizeof bad; i++) {
        o = L->local;
        o.len = bad[i];
        assert_int_equal(em_test_tx_to_str(L, &o, "refused"), -EINVAL);
    }
    assert_null(recv_one());
}

static void test_shared_by_port(void **st)
{
    (void)st;
    char err[512] = "";
    em_dpdk_cfg_t c = { .vdev = "net_ring0",
                        .eal_args = "--no-huge -m 128 --no-shconf",
                        .nb_mbufs = 2047,
                        .link_wait_ms = 2000,
                        .ethertype = 0x88B6,
                        .udp_port = EM_UDP_PORT_BCAST,
                        .framing = EM_DPDK_FRAMING_UDP };
    em_link_t *b = em_link_dpdk_open(&c, err, sizeof err);
    assert_non_null(b);
    assert_int_equal(b->local.bytes[12] << 8 | b->local.bytes[13], EM_UDP_PORT_BCAST);
    assert_int_equal(em_link_set_peer(b, 0, &b->local), 0);
    em_test_send_str(b, 0, "to the channel");
    em_test_send_str(L, 2, "to the protocol");
    /* either user may poll first: each gets only its own */
    assert_int_equal(expect(L, 1, "to the protocol", 2), 1);
    assert_int_equal(expect(b, 1, "to the channel", 0), 1);
    em_link_close(b);
}

int main(void)
{
    char err[512] = "";
    em_dpdk_cfg_t c = { .vdev = "net_ring0",
                        .eal_args = "--no-huge -m 128 --no-shconf",
                        .nb_mbufs = 2047,
                        .link_wait_ms = 2000,
                        .framing = EM_DPDK_FRAMING_UDP };
    L = em_link_dpdk_open(&c, err, sizeof err);
    if (!L) {
        fprintf(stderr, "cannot open net_ring0: %s\n", err);
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_address_and_loopback), cmocka_unit_test(test_gather_checksum),
        cmocka_unit_test(test_refused_frames),       cmocka_unit_test(test_shared_by_port),
        cmocka_unit_test(test_tx_to_rx_from),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    em_link_close(L);
    return rc;
}
