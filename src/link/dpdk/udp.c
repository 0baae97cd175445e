/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file udp.c
 * The DPDK link's framing (link_dpdk.h "Framing"):
 *  - udp framing: our IPv4 address and UDP port (the address blob), and
 *    the per-peer paths (link/ipudp_paths.h: the next hop from the kernel
 *    of a port with a kernel interface, on a memif cable the peer's own
 *    MAC: a cable has no router; rx_peer by source (IPv4, port)); here the
 *    headers of every frame (link/ipudp.h) with checksums offloaded or
 *    computed, and the mbuf's checksum flags on receive;
 *  - L2 framing: set_peer refuses a peer whose IPv4 address (in its blob
 *    when its port has a kernel interface) is not on our segment, with the
 *    reason, so a job across a router fails at wire-up instead of
 *    retransmitting into the void until the peer is declared dead.
 * Threading: the link's thread only (link.h).
 */
#include "link/dpdk/dpdk_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ethdev.h>

#include "link/ipudp.h"
#include "link/ipudp_paths.h"
#include "link/neigh.h"

struct dpdk_udp {
    em_udp_paths_t t; /* ours and the peers' paths (ipudp_paths.h) */
    int tx_ip_hw, tx_udp_hw, no_csum;
    uint16_t ip_id;
};

static unsigned tx_flags(const struct dpdk_udp *u)
{
    return (u->tx_ip_hw ? EM_IPUDP_TX_IP_CSUM_HW : 0) |
           (u->tx_udp_hw && !u->no_csum ? EM_IPUDP_TX_UDP_CSUM_HW : 0);
}

int em_dpdk_udp_setup(struct dpdk_link *d, const em_dpdk_cfg_t *cfg, const char *item,
                      uint64_t offloads, char *err, size_t errlen)
{
    unsigned queue, plen = 0;
    d->hdr_len = RTE_ETHER_HDR_LEN;
    d->demux_be = d->ethertype_be;
    if (item && em_xdp_devargs_iface(item, d->ifname, sizeof d->ifname, &queue) &&
        em_if_ipv4(d->ifname, &d->if_ip, &plen) != 0)
        d->if_ip = 0;
    if (cfg->framing != EM_DPDK_FRAMING_UDP) {
        if (d->if_ip) { /* for the peers' segment check */
            em_udp_blob_put_ip(d->link.local.bytes, d->if_ip);
            d->link.local.len = EM_DPDK_ADDR_L2_IP;
        }
        return 0;
    }
    struct dpdk_udp *u = calloc(1, sizeof *u);
    if (!u) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    u->tx_ip_hw = (offloads & RTE_ETH_TX_OFFLOAD_IPV4_CKSUM) != 0;
    u->tx_udp_hw = (offloads & RTE_ETH_TX_OFFLOAD_UDP_CKSUM) != 0;
    u->no_csum = cfg->udp_no_csum;
    const em_udp_paths_cfg_t pc = {
        .addr = cfg->udp_addr,
        .if_ip = d->if_ip,
        .if_plen = plen,
        /* a cable no kernel sees: a link-local address from our MAC */
        .fallback_ip = 0xA9FE0000u | (uint32_t)d->mac.addr_bytes[4] << 8 | d->mac.addr_bytes[5],
        .port = cfg->udp_port,
        .resolve_ms = cfg->resolve_ms,
        .tx_flags = tx_flags(u),
        .ifname = d->ifname,
        .ifindex = d->ifname[0] ? (int)if_nametoindex(d->ifname) : 0,
        .addr_setting = "btl_dpdk_udp_addr",
        .mtu_setting = "btl_dpdk_mtu",
        .unit = "port",
    };
    if (em_udp_paths_init(&u->t, &pc, err, errlen) != 0) {
        free(u);
        return -1;
    }
    d->udp = u;
    d->hdr_len = EM_IPUDP_HDR_LEN;
    d->demux_be = htons(u->t.port);
    d->link.mtu -= EM_IPUDP_OVERHEAD; /* the IP packet is what the MTU bounds */
    em_udp_blob_put(&u->t, d->link.local.bytes);
    d->link.local.len = EM_DPDK_ADDR_UDP;
    return 0;
}

void em_dpdk_udp_free(struct dpdk_link *d)
{
    struct dpdk_udp *u = d->udp;
    if (!u)
        return;
    em_udp_paths_free(&u->t);
    free(u);
    d->udp = NULL;
}

/* the 42 header bytes from template @p t */
static void tx_hdr(struct dpdk_link *d, struct rte_mbuf *mb, const em_pkt_t *p,
                   const em_ipudp_template_t *t)
{
    struct dpdk_udp *u = d->udp;
    uint8_t *h = rte_pktmbuf_mtod(mb, uint8_t *);
    unsigned flags = tx_flags(u);
    em_csum_piece_t pc[2] = { { p->data, p->len }, { p->ext, p->ext_len } };
    int sw = !u->no_csum && !u->tx_udp_hw;
    /* fits: the MTU bounds it */
    (void)em_ipudp_template_write(t, u->ip_id++, p->len + p->ext_len, pc, p->ext_len ? 2 : 1, sw,
                                  h);
    d->st.tx_csum_sw += (uint64_t)sw;
    if (flags) {
        mb->ol_flags |= RTE_MBUF_F_TX_IPV4 | (u->tx_ip_hw ? RTE_MBUF_F_TX_IP_CKSUM : 0) |
                        ((flags & EM_IPUDP_TX_UDP_CSUM_HW) ? RTE_MBUF_F_TX_UDP_CKSUM : 0);
        mb->l2_len = RTE_ETHER_HDR_LEN;
        mb->l3_len = EM_IPV4_HDR_LEN;
    }
}

void em_dpdk_udp_tx_hdr(struct dpdk_link *d, struct rte_mbuf *mb, const em_pkt_t *p)
{
    struct dpdk_udp *u = d->udp;
    /* a peer never set (the engine sends only to peers it set: never
     * happens) gets all-zero addresses, which every receiver refuses */
    static const em_ipudp_template_t none;
    tx_hdr(d, mb, p, p->peer < u->t.npeers ? &u->t.tmpl[p->peer] : &none);
}

int em_dpdk_udp_tx_to_hdr(struct dpdk_link *d, struct rte_mbuf *mb, const em_pkt_t *p,
                          const em_link_addr_t *a)
{
    em_ipudp_template_t t;
    char why[256]; /* not said: the handshake tries again, and its failure is reported */
    if (a->len != EM_DPDK_ADDR_UDP)
        return -EINVAL;
    /* on a cable the blob's MAC is the next hop (as in set_peer) */
    int rc = em_udp_paths_tmpl_to(&d->udp->t, em_udp_blob_ip(a->bytes), em_udp_blob_port(a->bytes),
                                  d->mac.addr_bytes, d->link.mtu, a->bytes, &t, why, sizeof why);
    if (rc == 0)
        tx_hdr(d, mb, p, &t);
    return rc;
}

int em_dpdk_udp_rx(struct dpdk_link *d, const struct rte_mbuf *mb, uint8_t *f, uint32_t len,
                   em_pkt_t *p)
{
    struct dpdk_udp *u = d->udp;
    unsigned flags = 0;
    if ((mb->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK) == RTE_MBUF_F_RX_IP_CKSUM_GOOD)
        flags |= EM_IPUDP_RX_IP_CSUM_OK;
    if ((mb->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK) == RTE_MBUF_F_RX_L4_CKSUM_GOOD)
        flags |= EM_IPUDP_RX_UDP_CSUM_OK;
    em_ipudp_rx_t rx;
    if (em_udp_paths_rx(&u->t, f, len, flags, d->link.mtu, &d->st.udp_refused, &rx) != 0)
        return -1;
    p->data = (uint8_t *)(uintptr_t)rx.payload;
    p->len = rx.payload_len;
    return 0;
}

uint32_t em_dpdk_udp_rx_peer(const struct dpdk_link *d, const em_pkt_t *p)
{
    const struct rte_mbuf *mb = p->priv;
    if (!mb || mb->data_len < EM_IPUDP_HDR_LEN)
        return EM_LINK_PEER_UNKNOWN;
    return em_udp_paths_rx_peer(&d->udp->t, rte_pktmbuf_mtod(mb, const uint8_t *));
}

bool em_dpdk_udp_rx_from(const em_pkt_t *p, const em_link_addr_t *a)
{
    const struct rte_mbuf *mb = p->priv;
    if (!mb || mb->data_len < EM_IPUDP_HDR_LEN || a->len != EM_DPDK_ADDR_UDP)
        return false;
    return em_udp_paths_rx_from(rte_pktmbuf_mtod(mb, const uint8_t *), em_udp_blob_ip(a->bytes),
                                em_udp_blob_port(a->bytes));
}

static int udp_set_peer(struct dpdk_link *d, uint32_t peer, const em_link_addr_t *a)
{
    struct dpdk_udp *u = d->udp;
    if (a->len != EM_DPDK_ADDR_UDP) {
        snprintf(d->peer_err, sizeof d->peer_err,
                 "framing mismatch: this process runs udp "
                 "framing, the peer L2 (give every process the same btl_dpdk_framing)");
        return -EINVAL;
    }
    /* on a cable the blob's MAC is the next hop */
    return em_udp_paths_set_peer(&u->t, peer, em_udp_blob_ip(a->bytes), em_udp_blob_port(a->bytes),
                                 d->mac.addr_bytes, d->link.mtu, a->bytes, d->peer_err,
                                 sizeof d->peer_err);
}

/* L2 framing: a peer whose blob has its IPv4 address must be on our segment */
static int l2_check_segment(struct dpdk_link *d, const em_link_addr_t *a)
{
    if (a->len == EM_DPDK_ADDR_UDP) {
        snprintf(d->peer_err, sizeof d->peer_err,
                 "framing mismatch: this process runs L2 "
                 "framing, the peer udp (give every process the same btl_dpdk_framing)");
        return -EINVAL;
    }
    if (a->len != EM_DPDK_ADDR_L2_IP || !d->ifname[0] || !d->if_ip)
        return a->len == EM_DPDK_ADDR_L2 || a->len == EM_DPDK_ADDR_L2_IP ? 0 : -EINVAL;
    return em_l2_segment_check(em_udp_blob_ip(a->bytes), d->ifname, (int)if_nametoindex(d->ifname),
                               ntohs(d->ethertype_be), "--mca btl_dpdk_framing udp", d->peer_err,
                               sizeof d->peer_err);
}

int em_dpdk_set_peer(struct dpdk_link *d, uint32_t peer, const em_link_addr_t *a)
{
    d->peer_err[0] = 0;
    int rc;
    if (d->udp) {
        rc = udp_set_peer(d, peer, a);
    } else {
        rc = l2_check_segment(d, a);
        if (rc == 0) {
            if (em_peer_table_reserve((void **)&d->peers, &d->npeers, sizeof *d->peers, peer) != 0)
                return -ENOMEM;
            em_addr_map_del(&d->bysrc, em_addr_key6(d->peers[peer].addr_bytes, 0), peer);
            memcpy(d->peers[peer].addr_bytes, a->bytes, 6);
            return em_addr_map_put(&d->bysrc, em_addr_key6(a->bytes, 0), peer) == 0 ? 0 : -ENOMEM;
        }
    }
    if (rc != 0) {
        /* said once per peer: the BTL only learns that the peer is unreachable */
        static uint64_t l2_warned; /* the link's thread only */
        em_link_say_once(d->udp ? &d->udp->t.warned : &l2_warned, peer, "dpdk", d->peer_err);
    }
    return rc;
}

void em_dpdk_udp_poll(struct dpdk_link *d) { d->st.nh_changes += em_udp_paths_poll(&d->udp->t); }

const char *em_link_dpdk_peer_error(const em_link_t *l)
{
    return ((const struct dpdk_link *)l)->peer_err;
}
