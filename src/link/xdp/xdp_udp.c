/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file xdp_udp.c
 * The native AF_XDP link's udp framing (link_xdp.h): our IPv4 address and
 * UDP port (the address blob, as the DPDK link's udp blob: MAC, queue,
 * IPv4, port), the next hop of every peer from the interface's kernel
 * (link/neigh.h: route, ARP, the neighbour watch), the headers of every
 * frame (link/ipudp.h: prepared once per peer, the UDP checksum computed
 * in software, since AF_XDP offloads none here), the check of every
 * received frame, and rx_peer by source (IPv4, port).  The same rules as
 * the DPDK link's (src/link/dpdk/udp.c), on the xdp link's state.
 * Threading: the link's thread only (link.h).
 */
#include "link/xdp/xdp_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "link/ipudp.h"
#include "link/neigh.h"

/** Neighbour changes are read every this many rx_burst calls. */
#define NEIGH_POLL_EVERY 4096u

struct xdp_udp {
    uint32_t ip; /* ours, host order */
    uint16_t port;
    uint32_t bcast_ip; /* our subnet's broadcast address (0: unknown) */
    int no_csum;
    uint16_t ip_id;
    uint32_t resolve_ms;
    em_neigh_watch_t watch;
    uint32_t tick;
    uint32_t npeers;
    em_ipudp_path_t *path;     /* per peer: the headers' addresses */
    em_ipudp_template_t *tmpl; /* per peer: its headers, prepared */
    uint32_t *nh_ip;           /* per peer: next hop */
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

int em_xdp_udp_setup(struct xdp_link *d, const em_xdp_cfg_t *cfg, char *err, size_t errlen)
{
    uint32_t if_ip = 0;
    unsigned plen = 0;
    if (em_if_ipv4(d->ifname, &if_ip, &plen) != 0)
        if_ip = 0;
    struct xdp_udp *u = calloc(1, sizeof *u);
    if (!u) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    u->watch.fd = -1;
    d->udp = u; /* freed by the link's close from here on */
    if (cfg->udp_addr && *cfg->udp_addr) {
        struct in_addr a;
        if (inet_pton(AF_INET, cfg->udp_addr, &a) != 1) {
            snprintf(err, errlen, "udp framing: '%s' is not an IPv4 address (the udp_addr setting)",
                     cfg->udp_addr);
            return -1;
        }
        u->ip = ntohl(a.s_addr);
    } else if (if_ip) {
        u->ip = if_ip;
    } else {
        snprintf(err, errlen,
                 "udp framing: the interface %s has no IPv4 address (give it one, or name "
                 "ours with the udp_addr setting)",
                 d->ifname);
        return -1;
    }
    if (plen && plen < 31 && u->ip == if_ip)
        u->bcast_ip = u->ip | (0xFFFFFFFFu >> plen);
    u->port = cfg->udp_port ? cfg->udp_port : EM_UDP_PORT;
    u->no_csum = cfg->udp_no_csum;
    u->resolve_ms = cfg->resolve_ms ? cfg->resolve_ms : 3000;
    /* without the watch: no refresh, still right until a next hop's MAC changes */
    (void)em_neigh_watch_open(&u->watch);
    if (d->l2mtu < 256 + EM_IPUDP_OVERHEAD) {
        snprintf(err, errlen, "udp framing: MTU %u leaves too little after IP and UDP headers",
                 d->l2mtu);
        return -1;
    }
    d->hdr_len = EM_IPUDP_HDR_LEN;
    d->link.mtu = d->l2mtu - EM_IPUDP_OVERHEAD; /* the IP packet is what the MTU bounds */
    uint32_t ipbe = htonl(u->ip);
    uint16_t pbe = htons(u->port);
    memcpy(d->link.local.bytes + 8, &ipbe, 4);
    memcpy(d->link.local.bytes + 12, &pbe, 2);
    d->link.local.len = EM_XDP_ADDR_UDP_LEN;
    return 0;
}

void em_xdp_udp_free(struct xdp_link *d)
{
    struct xdp_udp *u = d->udp;
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

void em_xdp_udp_tx_hdr(struct xdp_link *d, const em_pkt_t *p)
{
    struct xdp_udp *u = d->udp;
    /* tx_burst sends only to peers set: the template is there */
    em_csum_piece_t pc = { p->data, p->len };
    /* fits: the MTU bounds it */
    (void)em_ipudp_template_write(&u->tmpl[p->peer], u->ip_id++, p->len, &pc, 1, !u->no_csum,
                                  p->data - EM_IPUDP_HDR_LEN);
}

int em_xdp_udp_rx(struct xdp_link *d, const uint8_t *f, uint32_t len, em_pkt_t *p)
{
    struct xdp_udp *u = d->udp;
    em_ipudp_rx_t rx;
    em_ipudp_err_t e = em_ipudp_decode(f, len, 0, u->port, 0, &rx);
    /* ours: our address, the limited or our subnet's broadcast, a group */
    if (e == EM_IPUDP_OK && rx.dst_ip != u->ip && rx.dst_ip != 0xFFFFFFFFu &&
        !(u->bcast_ip && rx.dst_ip == u->bcast_ip) && rx.dst_ip >> 28 != 0xE)
        e = EM_IPUDP_ADDR;
    if (e == EM_IPUDP_OK && rx.payload != f + EM_IPUDP_HDR_LEN)
        e = EM_IPUDP_OPTIONS; /* never: IHL 5 is required; rx_peer reads at -42 */
    if (e == EM_IPUDP_OK && rx.payload_len > d->link.mtu)
        e = EM_IPUDP_IP_LEN;
    if (e != EM_IPUDP_OK) {
        em_ipudp_count(&d->st.udp_refused, e);
        return -1;
    }
    p->data = (uint8_t *)(uintptr_t)rx.payload;
    p->len = rx.payload_len;
    return 0;
}

uint16_t em_xdp_udp_rx_peer(const struct xdp_link *d, const em_pkt_t *p)
{
    const uint8_t *h = p->data - EM_IPUDP_HDR_LEN; /* em_xdp_udp_rx put it there */
    return em_addr_map_get(&d->udp->bysrc,
                           ipport_key(be32(h + 26), (uint16_t)(h[34] << 8 | h[35])));
}

/* grow the per-peer arrays to hold @p peer */
static int udp_reserve(struct xdp_udp *u, uint16_t peer)
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

/* the next hop's MAC of @p ip: broadcast, multicast, or the kernel's
 * neighbour (resolved now, bounded) */
static int next_hop(struct xdp_link *d, uint32_t ip, uint8_t mac[6], uint32_t *nh_ip)
{
    struct xdp_udp *u = d->udp;
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
    em_nexthop_t nh;
    char why[200];
    if (em_nexthop_resolve(ip, d->ifname, u->resolve_ms, &nh, why, sizeof why) != 0) {
        snprintf(d->peer_err, sizeof d->peer_err, "udp framing: %s", why);
        return -EHOSTUNREACH;
    }
    if (nh.path_mtu && nh.path_mtu < d->link.mtu + EM_IPUDP_OVERHEAD) {
        char s[16];
        em_ipv4_str(ip, s, sizeof s);
        snprintf(d->peer_err, sizeof d->peer_err,
                 "udp framing: the path MTU to %s is %u, below this link's %u-byte packets "
                 "(never fragmented): set the mtu setting to %u or less",
                 s, nh.path_mtu, d->link.mtu + EM_IPUDP_OVERHEAD, nh.path_mtu);
        return -EMSGSIZE;
    }
    memcpy(mac, nh.mac, 6);
    *nh_ip = nh.ip;
    return 0;
}

/* said once per peer: the front end only learns that the peer is unreachable */
static void say_once(struct xdp_link *d, uint16_t peer)
{
    uint64_t bit = peer < 64 ? 1ull << peer : 0;
    if (!d->peer_err[0] || (bit && (d->udp->warned & bit)))
        return;
    char host[64] = "";
    gethostname(host, sizeof host - 1);
    fprintf(stderr, "[%s] ethermpi xdp: %s\n", host, d->peer_err);
    d->udp->warned |= bit;
}

int em_xdp_udp_set_peer(struct xdp_link *d, uint16_t peer, const em_link_addr_t *a)
{
    struct xdp_udp *u = d->udp;
    if (a->len != EM_XDP_ADDR_UDP_LEN) {
        snprintf(d->peer_err, sizeof d->peer_err,
                 "framing mismatch: this process runs udp framing, the peer L2 (give every "
                 "process the same framing setting)");
        say_once(d, peer);
        return -EINVAL;
    }
    if (udp_reserve(u, peer) != 0)
        return -ENOMEM;
    uint32_t ip = be32(a->bytes + 8);
    uint16_t port = (uint16_t)(a->bytes[12] << 8 | a->bytes[13]);
    em_ipudp_path_t *pa = &u->path[peer];
    uint8_t mac[6];
    uint32_t nh_ip;
    int rc = next_hop(d, ip, mac, &nh_ip);
    if (rc != 0) {
        say_once(d, peer);
        return rc;
    }
    if (pa->dst_ip || pa->dst_port)
        em_addr_map_del(&u->bysrc, ipport_key(pa->dst_ip, pa->dst_port), peer);
    memcpy(pa->src_mac, d->mac, 6);
    memcpy(pa->dst_mac, mac, 6);
    pa->src_ip = u->ip;
    pa->dst_ip = ip;
    pa->src_port = u->port;
    pa->dst_port = port;
    em_ipudp_template_init(&u->tmpl[peer], pa, 0);
    u->nh_ip[peer] = nh_ip;
    memcpy(u->nh_mac[peer], mac, 6);
    u->nh_valid[peer] = nh_ip != 0;
    /* the broadcast address sends only; anything else is a source too */
    if (mac[0] & 1)
        return 0;
    return em_addr_map_put(&u->bysrc, ipport_key(ip, port), peer) == 0 ? 0 : -ENOMEM;
}

void em_xdp_l2_local_ip(struct xdp_link *d)
{
    uint32_t ip = 0;
    unsigned plen = 0;
    if (em_if_ipv4(d->ifname, &ip, &plen) != 0 || !ip)
        return;
    uint32_t v = htonl(ip);
    memcpy(d->link.local.bytes + 8, &v, 4);
    d->link.local.len = EM_XDP_ADDR_L2_IP_LEN;
}

/* L2 errors are said once per peer too; peers >= 64 each time */
static void say_l2(struct xdp_link *d, uint16_t peer)
{
    static uint64_t warned; /* the link's thread only */
    uint64_t bit = peer < 64 ? 1ull << peer : 0;
    if (bit && (warned & bit))
        return;
    char host[64] = "";
    gethostname(host, sizeof host - 1);
    fprintf(stderr, "[%s] ethermpi xdp: %s\n", host, d->peer_err);
    warned |= bit;
}

int em_xdp_l2_check(struct xdp_link *d, uint16_t peer, const em_link_addr_t *a)
{
    if (a->len == EM_XDP_ADDR_UDP_LEN) {
        snprintf(d->peer_err, sizeof d->peer_err,
                 "framing mismatch: this process runs L2 framing, the peer udp (give every "
                 "process the same framing setting)");
        say_l2(d, peer);
        return -EINVAL;
    }
    if (a->len != EM_XDP_ADDR_L2_IP_LEN)
        return a->len == EM_XDP_ADDR_LEN ? 0 : -EINVAL;
    uint32_t ip = be32(a->bytes + 8);
    char s[16], g[16], why[160];
    em_ipv4_str(ip, s, sizeof s);
    em_route_t r;
    if (em_route_get(ip, &r, why, sizeof why) != 0) {
        snprintf(d->peer_err, sizeof d->peer_err, "L2 framing: peer %s unreachable: %s", s, why);
        say_l2(d, peer);
        return -EHOSTUNREACH;
    }
    if (r.gateway) {
        em_ipv4_str(r.gateway, g, sizeof g);
        snprintf(d->peer_err, sizeof d->peer_err,
                 "L2 framing: peer %s unreachable: it is behind the router %s, and raw Ethernet "
                 "frames (ethertype 0x%04x) do not cross a router; run the job with the udp "
                 "framing (framing udp: --mca btl_rudp_framing udp, FI_ETHERMPI_FRAMING=udp)",
                 s, g, d->ethertype);
        say_l2(d, peer);
        return -EHOSTUNREACH;
    }
    if (r.ifindex != d->ifindex) {
        snprintf(d->peer_err, sizeof d->peer_err,
                 "L2 framing: peer %s unreachable: it is not on %s's segment (the kernel routes "
                 "it through another interface)",
                 s, d->ifname);
        say_l2(d, peer);
        return -EHOSTUNREACH;
    }
    return 0;
}

void em_xdp_udp_poll(struct xdp_link *d)
{
    struct xdp_udp *u = d->udp;
    if (++u->tick % NEIGH_POLL_EVERY || u->watch.fd < 0 || !u->npeers)
        return;
    int ifindex = d->ifindex;
    if (!em_neigh_watch_poll(&u->watch, ifindex, u->nh_ip, u->nh_mac, u->nh_valid, u->npeers))
        return;
    for (uint32_t i = 0; i < u->npeers; i++) {
        if (!u->nh_ip[i])
            continue;
        if (u->nh_valid[i] && memcmp(u->path[i].dst_mac, u->nh_mac[i], 6) != 0) {
            memcpy(u->path[i].dst_mac, u->nh_mac[i], 6);
            em_ipudp_template_init(&u->tmpl[i], &u->path[i], 0);
            d->st.nh_changes++;
        } else if (!u->nh_valid[i]) {
            /* deleted: keep the old MAC, have the kernel ask again (the
             * answer comes back through the watch) */
            em_nexthop_t nh;
            char why[200];
            if (em_nexthop_resolve(u->path[i].dst_ip, d->ifname, 0, &nh, why, sizeof why) == 0) {
                memcpy(u->nh_mac[i], nh.mac, 6);
                u->nh_valid[i] = 1;
            }
        }
    }
}
