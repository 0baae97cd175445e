/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file ipudp_paths.c
 * The per-peer paths of udp framing (link/ipudp_paths.h).
 */
#include "link/ipudp_paths.h"
#include "util/clock.h"

#include <arpa/inet.h>
#include <stdbool.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int em_udp_paths_init(em_udp_paths_t *t, const em_udp_paths_cfg_t *c, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    t->watch.fd = -1;
    int has_if = c->ifname && c->ifname[0];
    if (c->addr && *c->addr) {
        struct in_addr a;
        if (inet_pton(AF_INET, c->addr, &a) != 1) {
            snprintf(err, errlen, "udp framing: '%s' is not an IPv4 address (%s)", c->addr,
                     c->addr_setting);
            return -1;
        }
        t->ip = ntohl(a.s_addr);
    } else if (c->if_ip) {
        t->ip = c->if_ip;
    } else if (has_if) {
        snprintf(err, errlen,
                 "udp framing: the interface %s has no IPv4 address (give it one, or name "
                 "ours with %s)",
                 c->ifname, c->addr_setting);
        return -1;
    } else {
        t->ip = c->fallback_ip;
    }
    if (c->if_plen && c->if_plen < 31 && t->ip == c->if_ip)
        t->bcast_ip = t->ip | (0xFFFFFFFFu >> c->if_plen);
    t->port = c->port ? c->port : EM_UDP_PORT;
    t->resolve_ms = c->resolve_ms ? c->resolve_ms : 3000;
    t->tx_flags = c->tx_flags;
    if (has_if)
        snprintf(t->ifname, sizeof t->ifname, "%s", c->ifname);
    t->ifindex = c->ifindex;
    t->mtu_setting = c->mtu_setting;
    t->unit = c->unit;
    if (t->ifindex)
        (void)em_neigh_watch_open(&t->watch); /* without it: no refresh */
    return 0;
}

void em_udp_paths_free(em_udp_paths_t *t)
{
    em_neigh_watch_close(&t->watch);
    em_addr_map_free(&t->bysrc);
    free(t->path);
    free(t->tmpl);
    free(t->nh_ip);
    free(t->nh_mac);
    free(t->nh_valid);
    t->path = NULL;
    t->tmpl = NULL;
    t->nh_ip = NULL;
    t->nh_mac = NULL;
    t->nh_valid = NULL;
    t->npeers = 0;
}

void em_udp_blob_put(const em_udp_paths_t *t, uint8_t *blob)
{
    em_udp_blob_put_ip(blob, t->ip);
    blob[EM_UDP_BLOB_PORT] = (uint8_t)(t->port >> 8);
    blob[EM_UDP_BLOB_PORT + 1] = (uint8_t)t->port;
}

int em_udp_paths_reserve(em_udp_paths_t *t, uint32_t peer)
{
    const struct {
        void **arr;
        size_t elem;
    } a[] = {
        { (void **)&t->path, sizeof *t->path },         { (void **)&t->tmpl, sizeof *t->tmpl },
        { (void **)&t->nh_ip, sizeof *t->nh_ip },       { (void **)&t->nh_mac, sizeof *t->nh_mac },
        { (void **)&t->nh_valid, sizeof *t->nh_valid },
    };
    uint32_t n = t->npeers;
    for (size_t i = 0; i < sizeof a / sizeof a[0]; i++) {
        n = t->npeers; /* every array has npeers entries until all have grown */
        if (em_peer_table_reserve(a[i].arr, &n, a[i].elem, peer) != 0)
            return -1;
    }
    t->npeers = n;
    return 0;
}

/* em_udp_next_hop, waiting up to @p wait_ms for the kernel's answer */
static int next_hop(const em_udp_paths_t *t, uint32_t ip, uint32_t link_mtu,
                    const uint8_t *cable_mac, uint32_t wait_ms, uint8_t mac[6], uint32_t *nh_ip,
                    char *err, size_t errlen)
{
    *nh_ip = 0;
    if (ip == 0xFFFFFFFFu || (t->bcast_ip && ip == t->bcast_ip)) {
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
    if (!t->ifname[0]) { /* no kernel: a cable, the peer is the next hop */
        memcpy(mac, cable_mac, 6);
        return 0;
    }
    em_nexthop_t nh;
    char why[256];
    if (em_nexthop_resolve(ip, t->ifname, wait_ms, &nh, why, sizeof why) != 0) {
        snprintf(err, errlen, "udp framing: %s", why);
        return -EHOSTUNREACH;
    }
    if (nh.path_mtu && nh.path_mtu < link_mtu + EM_IPUDP_OVERHEAD) {
        char s[16];
        em_ipv4_str(ip, s, sizeof s);
        snprintf(err, errlen,
                 "udp framing: the path MTU to %s is %u, below this %s's %u-byte packets "
                 "(never fragmented): set %s to %u or less",
                 s, nh.path_mtu, t->unit, link_mtu + EM_IPUDP_OVERHEAD, t->mtu_setting,
                 nh.path_mtu);
        return -EMSGSIZE;
    }
    memcpy(mac, nh.mac, 6);
    *nh_ip = nh.ip;
    return 0;
}

int em_udp_next_hop(const em_udp_paths_t *t, uint32_t ip, uint32_t link_mtu,
                    const uint8_t *cable_mac, uint8_t mac[6], uint32_t *nh_ip, char *err,
                    size_t errlen)
{
    return next_hop(t, ip, link_mtu, cable_mac, t->resolve_ms, mac, nh_ip, err, errlen);
}

/* May tx_to resolve a next hop now?  (The bucket of em_udp_paths_t.) */
static bool nh_token(em_udp_paths_t *t)
{
    uint64_t now = em_clock_ns();
    if (!t->nh_tokens_at) {
        t->nh_tokens = EM_UDP_NH_BURST;
        t->nh_tokens_at = now;
    }
    uint64_t add = (now - t->nh_tokens_at) / EM_UDP_NH_EVERY_NS;
    if (add) {
        t->nh_tokens = add >= EM_UDP_NH_BURST - t->nh_tokens ? EM_UDP_NH_BURST
                                                             : t->nh_tokens + (uint32_t)add;
        t->nh_tokens_at += add * EM_UDP_NH_EVERY_NS;
    }
    if (!t->nh_tokens)
        return false;
    t->nh_tokens--;
    return true;
}

int em_udp_paths_tmpl_to(em_udp_paths_t *t, uint32_t ip, uint16_t port, const uint8_t src_mac[6],
                         uint32_t link_mtu, const uint8_t *cable_mac, em_ipudp_template_t *tmpl,
                         char *err, size_t errlen)
{
    em_ipudp_path_t pa = { .src_ip = t->ip, .dst_ip = ip, .src_port = t->port, .dst_port = port };
    memcpy(pa.src_mac, src_mac, 6);
    /* a peer at that address: its next hop, which the watch keeps current */
    uint32_t peer = em_addr_map_get(&t->bysrc, ipport_key(ip, port));
    if (peer < t->npeers && (t->nh_valid[peer] || !t->nh_ip[peer])) {
        memcpy(pa.dst_mac, t->path[peer].dst_mac, 6);
    } else {
        uint32_t nh_ip;
        if (!nh_token(t)) {
            snprintf(err, errlen,
                     "udp framing: next-hop resolutions for unknown addresses "
                     "over their rate: the handshake retries");
            return -EHOSTUNREACH;
        }
        int rc = next_hop(t, ip, link_mtu, cable_mac, 0, pa.dst_mac, &nh_ip, err, errlen);
        if (rc != 0)
            return rc;
    }
    em_ipudp_template_init(tmpl, &pa, t->tx_flags);
    return 0;
}

int em_udp_paths_set_peer(em_udp_paths_t *t, uint32_t peer, uint32_t ip, uint16_t port,
                          const uint8_t src_mac[6], uint32_t link_mtu, const uint8_t *cable_mac,
                          char *err, size_t errlen)
{
    if (em_udp_paths_reserve(t, peer) != 0)
        return -ENOMEM;
    em_ipudp_path_t *pa = &t->path[peer];
    uint8_t mac[6];
    uint32_t nh_ip;
    int rc = em_udp_next_hop(t, ip, link_mtu, cable_mac, mac, &nh_ip, err, errlen);
    if (rc != 0)
        return rc;
    if (pa->dst_ip || pa->dst_port)
        em_addr_map_del(&t->bysrc, ipport_key(pa->dst_ip, pa->dst_port), peer);
    memcpy(pa->src_mac, src_mac, 6);
    memcpy(pa->dst_mac, mac, 6);
    pa->src_ip = t->ip;
    pa->dst_ip = ip;
    pa->src_port = t->port;
    pa->dst_port = port;
    em_ipudp_template_init(&t->tmpl[peer], pa, t->tx_flags);
    t->nh_ip[peer] = nh_ip;
    memcpy(t->nh_mac[peer], mac, 6);
    t->nh_valid[peer] = nh_ip != 0;
    /* the broadcast address sends only; anything else is a source too */
    if (mac[0] & 1)
        return 0;
    return em_addr_map_put(&t->bysrc, ipport_key(ip, port), peer) == 0 ? 0 : -ENOMEM;
}

uint32_t em_udp_paths_rx_peer(const em_udp_paths_t *t, const uint8_t *hdr)
{
    return em_addr_map_get(&t->bysrc,
                           ipport_key(be32(hdr + 26), (uint16_t)(hdr[34] << 8 | hdr[35])));
}

int em_udp_accept_dst(const em_udp_paths_t *t, uint32_t dst_ip)
{
    return dst_ip == t->ip || dst_ip == 0xFFFFFFFFu || (t->bcast_ip && dst_ip == t->bcast_ip) ||
           dst_ip >> 28 == 0xE;
}

int em_udp_paths_rx(const em_udp_paths_t *t, const uint8_t *f, uint32_t len, unsigned rx_flags,
                    uint32_t link_mtu, em_ipudp_counters_t *refused, em_ipudp_rx_t *rx)
{
    em_ipudp_err_t e = em_ipudp_decode(f, len, 0, t->port, rx_flags, rx);
    if (e == EM_IPUDP_OK && !em_udp_accept_dst(t, rx->dst_ip))
        e = EM_IPUDP_ADDR;
    if (e == EM_IPUDP_OK && rx->payload != f + EM_IPUDP_HDR_LEN)
        e = EM_IPUDP_OPTIONS; /* never: IHL 5 is required; rx_peer reads the headers at -42 */
    if (e == EM_IPUDP_OK && rx->payload_len > link_mtu)
        e = EM_IPUDP_IP_LEN;
    if (e != EM_IPUDP_OK) {
        em_ipudp_count(refused, e);
        return -1;
    }
    return 0;
}

unsigned em_udp_paths_poll(em_udp_paths_t *t)
{
    if (++t->tick % EM_UDP_NEIGH_POLL_EVERY || t->watch.fd < 0 || !t->npeers)
        return 0;
    if (!em_neigh_watch_poll(&t->watch, t->ifindex, t->nh_ip, t->nh_mac, t->nh_valid, t->npeers))
        return 0;
    unsigned changed = 0;
    for (uint32_t i = 0; i < t->npeers; i++) {
        if (!t->nh_ip[i])
            continue;
        if (t->nh_valid[i] && memcmp(t->path[i].dst_mac, t->nh_mac[i], 6) != 0) {
            memcpy(t->path[i].dst_mac, t->nh_mac[i], 6);
            em_ipudp_template_init(&t->tmpl[i], &t->path[i], t->tx_flags);
            changed++;
        } else if (!t->nh_valid[i]) {
            /* deleted: keep the old MAC, have the kernel ask again (the
             * answer comes back through the watch) */
            em_nexthop_t nh;
            char why[256];
            if (em_nexthop_resolve(t->path[i].dst_ip, t->ifname, 0, &nh, why, sizeof why) == 0) {
                memcpy(t->nh_mac[i], nh.mac, 6);
                t->nh_valid[i] = 1;
            }
        }
    }
    return changed;
}
