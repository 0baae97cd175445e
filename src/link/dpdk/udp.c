/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file udp.c
 * The DPDK link's framing (link_dpdk.h "Framing"):
 *  - udp framing: our IPv4 address and UDP port (the address blob), the
 *    next hop of every peer (link/neigh.h on a port with a kernel
 *    interface; on a memif cable the peer's own MAC: a cable has no
 *    router), the headers of every frame (link/ipudp.h) with checksums
 *    offloaded or computed, the validation of every received frame, and
 *    rx_peer by source (IPv4, port);
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
#include <unistd.h>

#include <rte_ethdev.h>

#include "link/ipudp.h"
#include "link/neigh.h"

/** Neighbour changes are read every this many rx_burst calls (one
 *  non-blocking recv; a few µs every few ms of polling). */
#define NEIGH_POLL_EVERY 4096u

struct dpdk_udp {
    uint32_t ip; /* ours, host order */
    uint16_t port;
    uint32_t bcast_ip; /* our subnet's broadcast address (0: unknown) */
    int tx_ip_hw, tx_udp_hw, no_csum;
    uint16_t ip_id;
    uint32_t resolve_ms;
    int ifindex; /* the kernel interface (0: none) */
    em_neigh_watch_t watch;
    uint32_t tick;
    uint32_t npeers;
    em_ipudp_path_t *path;     /* per peer: the headers' addresses */
    em_ipudp_template_t *tmpl; /* per peer: its headers, prepared (ipudp.h) */
    uint32_t *nh_ip;           /* per peer: next hop (0: not from the kernel) */
    uint8_t (*nh_mac)[6];      /* per peer: what the watch last saw */
    uint8_t *nh_valid;
    em_addr_map_t bysrc; /* (IPv4, port) -> peer */
    uint64_t warned;     /* set_peer errors already printed (peers < 64) */
};

static uint64_t ipport_key(uint32_t ip, uint16_t port)
{
    const uint8_t b[6] = { (uint8_t)(ip >> 24), (uint8_t)(ip >> 16),  (uint8_t)(ip >> 8),
                           (uint8_t)ip,         (uint8_t)(port >> 8), (uint8_t)port };
    return em_addr_key6(b, 0);
}

static uint32_t be32(const uint8_t *b)
{
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
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
            uint32_t v = htonl(d->if_ip);
            memcpy(d->link.local.bytes + 8, &v, 4);
            d->link.local.len = EM_DPDK_ADDR_L2_IP;
        }
        return 0;
    }
    struct dpdk_udp *u = calloc(1, sizeof *u);
    if (!u) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    u->watch.fd = -1;
    if (cfg->udp_addr && *cfg->udp_addr) {
        struct in_addr a;
        if (inet_pton(AF_INET, cfg->udp_addr, &a) != 1) {
            snprintf(err, errlen, "udp framing: '%s' is not an IPv4 address (btl_dpdk_udp_addr)",
                     cfg->udp_addr);
            free(u);
            return -1;
        }
        u->ip = ntohl(a.s_addr);
    } else if (d->if_ip) {
        u->ip = d->if_ip;
    } else if (d->ifname[0]) {
        snprintf(err, errlen,
                 "udp framing: the interface %s has no IPv4 address (give it one, "
                 "or name ours with btl_dpdk_udp_addr)",
                 d->ifname);
        free(u);
        return -1;
    } else {
        /* a cable no kernel sees: a link-local address from our MAC */
        u->ip = 0xA9FE0000u | (uint32_t)d->mac.addr_bytes[4] << 8 | d->mac.addr_bytes[5];
    }
    if (plen && plen < 31 && u->ip == d->if_ip)
        u->bcast_ip = u->ip | (0xFFFFFFFFu >> plen);
    u->port = cfg->udp_port ? cfg->udp_port : EM_UDP_PORT;
    u->tx_ip_hw = (offloads & RTE_ETH_TX_OFFLOAD_IPV4_CKSUM) != 0;
    u->tx_udp_hw = (offloads & RTE_ETH_TX_OFFLOAD_UDP_CKSUM) != 0;
    u->no_csum = cfg->udp_no_csum;
    u->resolve_ms = cfg->resolve_ms ? cfg->resolve_ms : 3000;
    u->ifindex = d->ifname[0] ? (int)if_nametoindex(d->ifname) : 0;
    if (u->ifindex)
        (void)em_neigh_watch_open(
            &u->watch); /* without it: no refresh, still correct until a MAC changes */
    d->udp = u;
    d->hdr_len = EM_IPUDP_HDR_LEN;
    d->demux_be = htons(u->port);
    d->link.mtu -= EM_IPUDP_OVERHEAD; /* the IP packet is what the MTU bounds */
    uint32_t ipbe = htonl(u->ip);
    uint16_t pbe = htons(u->port);
    memcpy(d->link.local.bytes + 8, &ipbe, 4);
    memcpy(d->link.local.bytes + 12, &pbe, 2);
    d->link.local.len = EM_DPDK_ADDR_UDP;
    return 0;
}

void em_dpdk_udp_free(struct dpdk_link *d)
{
    struct dpdk_udp *u = d->udp;
    if (!u)
        return;
    em_neigh_watch_close(&u->watch);
    em_addr_map_free(&u->bysrc);
    free(u->path);
    free(u->tmpl);
    free(u->nh_ip);
    free(u->nh_mac);
    free(u->nh_valid);
    free(u);
    d->udp = NULL;
}

static unsigned tx_flags(const struct dpdk_udp *u)
{
    return (u->tx_ip_hw ? EM_IPUDP_TX_IP_CSUM_HW : 0) |
           (u->tx_udp_hw && !u->no_csum ? EM_IPUDP_TX_UDP_CSUM_HW : 0);
}

void em_dpdk_udp_tx_hdr(struct dpdk_link *d, struct rte_mbuf *mb, const em_pkt_t *p)
{
    struct dpdk_udp *u = d->udp;
    uint8_t *h = rte_pktmbuf_mtod(mb, uint8_t *);
    unsigned flags = tx_flags(u);
    /* a peer never set (the engine sends only to peers it set: never
     * happens) gets all-zero addresses, which every receiver refuses */
    static const em_ipudp_template_t none;
    const em_ipudp_template_t *t = p->peer < u->npeers ? &u->tmpl[p->peer] : &none;
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
    em_ipudp_err_t e = em_ipudp_decode(f, len, 0, u->port, flags, &rx);
    /* ours: our address, the limited or our subnet's broadcast, a group */
    if (e == EM_IPUDP_OK && rx.dst_ip != u->ip && rx.dst_ip != 0xFFFFFFFFu &&
        !(u->bcast_ip && rx.dst_ip == u->bcast_ip) && rx.dst_ip >> 28 != 0xE)
        e = EM_IPUDP_ADDR;
    if (e != EM_IPUDP_OK) {
        em_ipudp_count(&d->st.udp_refused, e);
        return -1;
    }
    if (rx.payload_len > d->link.mtu) {
        em_ipudp_count(&d->st.udp_refused, EM_IPUDP_IP_LEN);
        return -1;
    }
    p->data = (uint8_t *)(uintptr_t)rx.payload;
    p->len = rx.payload_len;
    return 0;
}

uint16_t em_dpdk_udp_rx_peer(const struct dpdk_link *d, const em_pkt_t *p)
{
    const struct rte_mbuf *mb = p->priv;
    if (!mb || mb->data_len < EM_IPUDP_HDR_LEN)
        return EM_LINK_PEER_UNKNOWN;
    const uint8_t *h = rte_pktmbuf_mtod(mb, const uint8_t *);
    return em_addr_map_get(&d->udp->bysrc,
                           ipport_key(be32(h + 26), (uint16_t)(h[34] << 8 | h[35])));
}

/* grow the per-peer arrays to hold @p peer */
static int udp_reserve(struct dpdk_udp *u, uint16_t peer)
{
    const struct {
        void **arr;
        size_t elem;
    } t[] = {
        { (void **)&u->path, sizeof *u->path },         { (void **)&u->tmpl, sizeof *u->tmpl },
        { (void **)&u->nh_ip, sizeof *u->nh_ip },       { (void **)&u->nh_mac, sizeof *u->nh_mac },
        { (void **)&u->nh_valid, sizeof *u->nh_valid },
    };
    uint32_t n = u->npeers;
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        n = u->npeers; /* every array has npeers entries until all have grown */
        if (em_peer_table_reserve(t[i].arr, &n, t[i].elem, peer) != 0)
            return -1;
    }
    u->npeers = n;
    return 0;
}

/* the next hop's MAC of @p ip: broadcast, multicast, the cable's other
 * end, or the kernel's neighbour (resolved now, bounded) */
static int next_hop(struct dpdk_link *d, uint32_t ip, const uint8_t *blob_mac, uint8_t mac[6],
                    uint32_t *nh_ip)
{
    struct dpdk_udp *u = d->udp;
    *nh_ip = 0;
    if (ip == 0xFFFFFFFFu || (u->bcast_ip && ip == u->bcast_ip)) {
        memset(mac, 0xFF, 6);
        return 0;
    }
    if (ip >> 28 == 0xE) { /* 224.0.0.0/4: RFC 1112 mapping */
        const uint8_t m[6] = {
            0x01, 0x00, 0x5E, (uint8_t)((ip >> 16) & 0x7F), (uint8_t)(ip >> 8), (uint8_t)ip
        };
        memcpy(mac, m, 6);
        return 0;
    }
    if (!d->ifname[0]) { /* no kernel: a cable, the peer is the next hop */
        memcpy(mac, blob_mac, 6);
        return 0;
    }
    em_nexthop_t nh;
    char why[256];
    if (em_nexthop_resolve(ip, d->ifname, u->resolve_ms, &nh, why, sizeof why) != 0) {
        snprintf(d->peer_err, sizeof d->peer_err, "udp framing: %s", why);
        return -EHOSTUNREACH;
    }
    if (nh.path_mtu && nh.path_mtu < d->link.mtu + EM_IPUDP_OVERHEAD) {
        char s[16];
        em_ipv4_str(ip, s, sizeof s);
        snprintf(d->peer_err, sizeof d->peer_err,
                 "udp framing: the path MTU to %s is %u, below "
                 "this port's %u-byte packets (never fragmented): set btl_dpdk_mtu to %u or less",
                 s, nh.path_mtu, d->link.mtu + EM_IPUDP_OVERHEAD, nh.path_mtu);
        return -EMSGSIZE;
    }
    memcpy(mac, nh.mac, 6);
    *nh_ip = nh.ip;
    return 0;
}

static int udp_set_peer(struct dpdk_link *d, uint16_t peer, const em_link_addr_t *a)
{
    struct dpdk_udp *u = d->udp;
    if (a->len != EM_DPDK_ADDR_UDP) {
        snprintf(d->peer_err, sizeof d->peer_err,
                 "framing mismatch: this process runs udp "
                 "framing, the peer L2 (give every process the same btl_dpdk_framing)");
        return -EINVAL;
    }
    if (udp_reserve(u, peer) != 0)
        return -ENOMEM;
    uint32_t ip = be32(a->bytes + 8);
    uint16_t port = (uint16_t)(a->bytes[12] << 8 | a->bytes[13]);
    em_ipudp_path_t *pa = &u->path[peer];
    uint8_t mac[6];
    uint32_t nh_ip;
    int rc = next_hop(d, ip, a->bytes, mac, &nh_ip);
    if (rc != 0)
        return rc;
    if (pa->dst_ip || pa->dst_port)
        em_addr_map_del(&u->bysrc, ipport_key(pa->dst_ip, pa->dst_port), peer);
    memcpy(pa->src_mac, d->mac.addr_bytes, 6);
    memcpy(pa->dst_mac, mac, 6);
    pa->src_ip = u->ip;
    pa->dst_ip = ip;
    pa->src_port = u->port;
    pa->dst_port = port;
    em_ipudp_template_init(&u->tmpl[peer], pa, tx_flags(u));
    u->nh_ip[peer] = nh_ip;
    memcpy(u->nh_mac[peer], mac, 6);
    u->nh_valid[peer] = nh_ip != 0;
    /* the broadcast address sends only; anything else is a source too */
    if (mac[0] & 1)
        return 0;
    return em_addr_map_put(&u->bysrc, ipport_key(ip, port), peer) == 0 ? 0 : -ENOMEM;
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
    uint32_t ip = be32(a->bytes + 8);
    char s[16], g[16], why[256];
    em_ipv4_str(ip, s, sizeof s);
    em_route_t r;
    if (em_route_get(ip, &r, why, sizeof why) != 0) {
        snprintf(d->peer_err, sizeof d->peer_err, "L2 framing: peer %s unreachable: %s", s, why);
        return -EHOSTUNREACH;
    }
    if (r.gateway) {
        em_ipv4_str(r.gateway, g, sizeof g);
        snprintf(d->peer_err, sizeof d->peer_err,
                 "L2 framing: peer %s unreachable: it is behind "
                 "the router %s, and raw Ethernet frames (ethertype 0x%04x) do not cross a router; "
                 "run the job with --mca btl_dpdk_framing udp",
                 s, g, ntohs(d->ethertype_be));
        return -EHOSTUNREACH;
    }
    if (r.ifindex != (int)if_nametoindex(d->ifname)) {
        snprintf(d->peer_err, sizeof d->peer_err,
                 "L2 framing: peer %s unreachable: it is not on "
                 "%s's segment (the kernel routes it through another interface)",
                 s, d->ifname);
        return -EHOSTUNREACH;
    }
    return 0;
}

int em_dpdk_set_peer(struct dpdk_link *d, uint16_t peer, const em_link_addr_t *a)
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
    if (rc != 0 && d->peer_err[0]) {
        /* said once per peer: the BTL only learns that the peer is unreachable */
        uint64_t bit = peer < 64 ? 1ull << peer : 0;
        uint64_t *warned = d->udp ? &d->udp->warned : NULL;
        static uint64_t l2_warned;
        if (!warned)
            warned = &l2_warned;
        if (!bit || !(*warned & bit)) {
            char host[64] = "";
            gethostname(host, sizeof host - 1);
            fprintf(stderr, "[%s] ethermpi dpdk: %s\n", host, d->peer_err);
            *warned |= bit;
        }
    }
    return rc;
}

void em_dpdk_udp_poll(struct dpdk_link *d)
{
    struct dpdk_udp *u = d->udp;
    if (++u->tick % NEIGH_POLL_EVERY || u->watch.fd < 0 || !u->npeers)
        return;
    unsigned n = em_neigh_watch_poll(&u->watch, u->ifindex, u->nh_ip, u->nh_mac, u->nh_valid,
                                     u->npeers);
    if (!n)
        return;
    for (uint32_t i = 0; i < u->npeers; i++) {
        if (!u->nh_ip[i])
            continue;
        if (u->nh_valid[i] && memcmp(u->path[i].dst_mac, u->nh_mac[i], 6) != 0) {
            memcpy(u->path[i].dst_mac, u->nh_mac[i], 6);
            em_ipudp_template_init(&u->tmpl[i], &u->path[i], tx_flags(u));
            d->st.nh_changes++;
        } else if (!u->nh_valid[i]) {
            /* deleted: keep the old MAC, have the kernel ask again (the
             * answer comes back through the watch) */
            em_nexthop_t nh;
            char why[256];
            if (em_nexthop_resolve(u->path[i].dst_ip, d->ifname, 0, &nh, why, sizeof why) == 0) {
                memcpy(u->nh_mac[i], nh.mac, 6);
                u->nh_valid[i] = 1;
            }
        }
    }
}

const char *em_link_dpdk_peer_error(const em_link_t *l)
{
    return ((const struct dpdk_link *)l)->peer_err;
}
