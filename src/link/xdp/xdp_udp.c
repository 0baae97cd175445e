/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file xdp_udp.c
 * The native AF_XDP link's udp framing (link_xdp.h): our IPv4 address and
 * UDP port (the address blob, as the DPDK link's udp blob: MAC, queue,
 * IPv4, port) and the per-peer paths (link/ipudp_paths.h, shared with the
 * DPDK link: the next hop of every peer from the interface's kernel, the
 * check of every received frame, rx_peer by source (IPv4, port)); here
 * the frame layout (headers right in front of the protocol frame, the UDP
 * checksum computed in software, since AF_XDP offloads none here).
 * Threading: the link's thread only (link.h).
 */
#include "link/xdp/xdp_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "link/ipudp.h"
#include "link/ipudp_paths.h"
#include "link/neigh.h"

struct xdp_udp {
    em_udp_paths_t t; /* ours and the peers' paths (ipudp_paths.h) */
    int no_csum;
    uint16_t ip_id;
};

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
    u->t.watch.fd = -1;
    d->udp = u; /* freed by the link's close from here on */
    u->no_csum = cfg->udp_no_csum;
    const em_udp_paths_cfg_t pc = {
        .addr = cfg->udp_addr,
        .if_ip = if_ip,
        .if_plen = plen,
        .port = cfg->udp_port,
        .resolve_ms = cfg->resolve_ms,
        .tx_flags = 0, /* AF_XDP offloads no checksum here */
        .ifname = d->ifname,
        .ifindex = d->ifindex,
        .addr_setting = "the udp_addr setting",
        .mtu_setting = "the mtu setting",
        .unit = "link",
    };
    if (em_udp_paths_init(&u->t, &pc, err, errlen) != 0)
        return -1;
    if (d->l2mtu < 256 + EM_IPUDP_OVERHEAD) {
        snprintf(err, errlen, "udp framing: MTU %u leaves too little after IP and UDP headers",
                 d->l2mtu);
        return -1;
    }
    d->hdr_len = EM_IPUDP_HDR_LEN;
    d->link.mtu = d->l2mtu - EM_IPUDP_OVERHEAD; /* the IP packet is what the MTU bounds */
    em_udp_blob_put(&u->t, d->link.local.bytes);
    d->link.local.len = EM_XDP_ADDR_UDP_LEN;
    return 0;
}

void em_xdp_udp_free(struct xdp_link *d)
{
    struct xdp_udp *u = d->udp;
    if (!u)
        return;
    em_udp_paths_free(&u->t);
    free(u);
    d->udp = NULL;
}

void em_xdp_udp_tx_hdr(struct xdp_link *d, const em_pkt_t *p)
{
    struct xdp_udp *u = d->udp;
    /* tx_burst sends only to peers set: the template is there */
    em_csum_piece_t pc = { p->data, p->len };
    /* fits: the MTU bounds it */
    (void)em_ipudp_template_write(&u->t.tmpl[p->peer], u->ip_id++, p->len, &pc, 1, !u->no_csum,
                                  p->data - EM_IPUDP_HDR_LEN);
}

int em_xdp_udp_tx_to_hdr(struct xdp_link *d, const em_pkt_t *p, const em_link_addr_t *a)
{
    struct xdp_udp *u = d->udp;
    em_ipudp_template_t t;
    char why[256]; /* not said: the handshake tries again, and its failure is reported */
    if (a->len != EM_XDP_ADDR_UDP_LEN)
        return -EINVAL;
    /* the interface always has a kernel: no cable MAC */
    int rc = em_udp_paths_tmpl_to(&u->t, em_udp_blob_ip(a->bytes), em_udp_blob_port(a->bytes),
                                  d->mac, d->link.mtu, NULL, &t, why, sizeof why);
    if (rc != 0)
        return rc;
    em_csum_piece_t pc = { p->data, p->len };
    (void)em_ipudp_template_write(&t, u->ip_id++, p->len, &pc, 1, !u->no_csum,
                                  p->data - EM_IPUDP_HDR_LEN);
    return 0;
}

bool em_xdp_udp_rx_from(const em_pkt_t *p, const em_link_addr_t *a)
{
    /* em_xdp_udp_rx made sure the headers are right in front */
    return a->len == EM_XDP_ADDR_UDP_LEN &&
           em_udp_paths_rx_from(p->data - EM_IPUDP_HDR_LEN, em_udp_blob_ip(a->bytes),
                                em_udp_blob_port(a->bytes));
}

int em_xdp_udp_rx(struct xdp_link *d, const uint8_t *f, uint32_t len, em_pkt_t *p)
{
    struct xdp_udp *u = d->udp;
    em_ipudp_rx_t rx;
    if (em_udp_paths_rx(&u->t, f, len, 0, d->link.mtu, &d->st.udp_refused, &rx) != 0)
        return -1;
    p->data = (uint8_t *)(uintptr_t)rx.payload;
    p->len = rx.payload_len;
    return 0;
}

uint32_t em_xdp_udp_rx_peer(const struct xdp_link *d, const em_pkt_t *p)
{
    /* em_xdp_udp_rx made sure the headers are right in front */
    return em_udp_paths_rx_peer(&d->udp->t, p->data - EM_IPUDP_HDR_LEN);
}

int em_xdp_udp_set_peer(struct xdp_link *d, uint32_t peer, const em_link_addr_t *a)
{
    struct xdp_udp *u = d->udp;
    if (a->len != EM_XDP_ADDR_UDP_LEN) {
        snprintf(d->peer_err, sizeof d->peer_err,
                 "framing mismatch: this process runs udp framing, the peer L2 (give every "
                 "process the same framing setting)");
        em_link_say_once(&u->t.warned, peer, "xdp", d->peer_err);
        return -EINVAL;
    }
    /* the interface always has a kernel: no cable MAC */
    int rc = em_udp_paths_set_peer(&u->t, peer, em_udp_blob_ip(a->bytes),
                                   em_udp_blob_port(a->bytes), d->mac, d->link.mtu, NULL,
                                   d->peer_err, sizeof d->peer_err);
    if (rc != 0 && rc != -ENOMEM)
        em_link_say_once(&u->t.warned, peer, "xdp", d->peer_err);
    return rc;
}

void em_xdp_l2_local_ip(struct xdp_link *d)
{
    uint32_t ip = 0;
    unsigned plen = 0;
    if (em_if_ipv4(d->ifname, &ip, &plen) != 0 || !ip)
        return;
    em_udp_blob_put_ip(d->link.local.bytes, ip);
    d->link.local.len = EM_XDP_ADDR_L2_IP_LEN;
}

/* L2 errors are said once per peer too; peers >= 64 each time */
static void say_l2(struct xdp_link *d, uint32_t peer)
{
    static uint64_t warned; /* the link's thread only */
    em_link_say_once(&warned, peer, "xdp", d->peer_err);
}

int em_xdp_l2_check(struct xdp_link *d, uint32_t peer, const em_link_addr_t *a)
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
    int rc = em_l2_segment_check(
        em_udp_blob_ip(a->bytes), d->ifname, d->ifindex, d->ethertype,
        "the udp framing (framing udp: --mca btl_rudp_framing udp, FI_ETHERMPI_FRAMING=udp)",
        d->peer_err, sizeof d->peer_err);
    if (rc != 0)
        say_l2(d, peer);
    return rc;
}

void em_xdp_udp_poll(struct xdp_link *d) { d->st.nh_changes += em_udp_paths_poll(&d->udp->t); }
