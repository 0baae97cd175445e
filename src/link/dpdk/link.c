/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file link.c
 * The burst link over an open port (link.h).  Each mbuf carries its
 * em_pkt_t in the mbuf private area, so lending frames to the engine
 * allocates nothing.  The protocol frame starts right after the Ethernet
 * header, which tx_burst fills in from the peer table, and tx_to (first
 * contact) from the address it is given, making no peer entry.
 */
#include "link/dpdk/dpdk_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rte_ethdev.h>

#include <linux/if_xdp.h>
#include <sys/socket.h>
#ifndef SOL_XDP
#define SOL_XDP 283
#endif

static em_pkt_t *pkt_of(struct rte_mbuf *m) { return rte_mbuf_to_priv(m); }

static em_pkt_t *dpdk_tx_alloc(em_link_t *l)
{
    struct dpdk_link *d = (struct dpdk_link *)l;
    struct rte_mbuf *m = rte_pktmbuf_alloc(d->pool);
    if (!m) {
        d->st.tx_nombuf++;
        return NULL;
    }
    em_pkt_t *p = pkt_of(m);
    p->data = rte_pktmbuf_mtod(m, uint8_t *) + d->hdr_len;
    p->len = 0;
    p->ext = NULL;
    p->ext_len = 0;
    p->priv = m;
    return p;
}

static void dpdk_tx_free(em_link_t *l, em_pkt_t *p) { rte_pktmbuf_free(p->priv); }

/* The payload's memory belongs to the protocol op (kept until the peer's
 * ACK, after the PMD has read it): nothing to free when DPDK is done. */
static void ext_done(void *addr, void *opaque)
{
    (void)addr;
    (void)opaque;
}

/* Chain a data-less mbuf pointing at the caller's payload behind the
 * header mbuf: the frame is built with no copy of the payload (zero-copy
 * send, docs/design.md "Copies per byte"; the PMD reads it from there).
 * 0, or -1 when no such mbuf is free (the caller then copies). */
static int attach_payload(struct dpdk_link *d, struct rte_mbuf *head, const uint8_t *ext,
                          uint32_t len)
{
    struct rte_mbuf *x = rte_pktmbuf_alloc(d->ext_pool);
    if (!x)
        return -1;
    struct rte_mbuf_ext_shared_info *sh = rte_mbuf_to_priv(x);
    sh->free_cb = ext_done;
    sh->fcb_opaque = NULL;
    rte_mbuf_ext_refcnt_set(sh, 1);
    void *va = (void *)(uintptr_t)ext;
    rte_pktmbuf_attach_extbuf(x, va, rte_mem_virt2iova(va), (uint16_t)len, sh);
    x->data_off = 0;
    x->data_len = (uint16_t)len;
    x->pkt_len = len;
    head->next = x;
    head->nb_segs = 2;
    return 0;
}

/* L2 framing: the Ethernet header of the frame in @p mb, to @p dst */
static void l2_hdr(const struct dpdk_link *d, struct rte_mbuf *mb, const uint8_t dst[6])
{
    struct rte_ether_hdr *eh = rte_pktmbuf_mtod(mb, struct rte_ether_hdr *);
    memcpy(eh->dst_addr.addr_bytes, dst, 6);
    rte_ether_addr_copy(&d->mac, &eh->src_addr);
    eh->ether_type = d->ethertype_be;
}

static unsigned dpdk_tx_burst(em_link_t *l, em_pkt_t **pkts, unsigned n)
{
    struct dpdk_link *d = (struct dpdk_link *)l;
    struct rte_mbuf *m[64];
    unsigned done = 0;

    while (done < n) {
        unsigned k = n - done < 64 ? n - done : 64;
        for (unsigned i = 0; i < k; i++) {
            em_pkt_t *p = pkts[done + i];
            struct rte_mbuf *mb = p->priv;
            if (d->udp) {
                em_dpdk_udp_tx_hdr(d, mb, p); /* before the payload may move (flatten) */
            } else {
                static const uint8_t all[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
                /* an unknown peer never happens: checked by set_peer */
                l2_hdr(d, mb, p->peer < d->npeers ? d->peers[p->peer].addr_bytes : all);
            }
            if (p->ext_len && attach_payload(d, mb, p->ext, p->ext_len) == 0) {
                mb->data_len = (uint16_t)(d->hdr_len + p->len);
                mb->pkt_len = mb->data_len + p->ext_len;
                d->st.tx_extbuf++;
            } else {
                if (p->ext_len)
                    em_link_pkt_flatten(p); /* no ext mbuf free: copy after all */
                mb->data_len = (uint16_t)(d->hdr_len + p->len);
                mb->pkt_len = mb->data_len;
            }
            m[i] = mb;
        }
        uint16_t sent = rte_eth_tx_burst(d->port, 0, m, (uint16_t)k);
        d->st.tx_frames += sent;
        done += sent;
        /* frames not taken stay the caller's, and their payload is copied
         * into them (em_link_pkt_flatten) before they wait: drop the chain */
        for (unsigned i = sent; i < k; i++) {
            struct rte_mbuf *mb = m[i];
            if (mb->next) {
                rte_pktmbuf_free_seg(mb->next);
                mb->next = NULL;
                mb->nb_segs = 1;
                mb->pkt_len = mb->data_len;
                d->st.tx_extbuf--;
            }
        }
        if (sent < k) {
            d->st.tx_full++;
            break;
        }
    }
    return done;
}

static unsigned dpdk_rx_burst(em_link_t *l, em_pkt_t **pkts, unsigned max)
{
    struct dpdk_link *d = (struct dpdk_link *)l;
    struct rte_mbuf *m[EM_DPDK_BURST];
    if (max > EM_DPDK_BURST)
        max = EM_DPDK_BURST;
    if (d->udp)
        em_dpdk_udp_poll(d); /* next-hop MAC changes, now and then */
    uint16_t n = 0;
    struct port_share *sh = d->share;
    int shared = em_dpdk_share_active(d);
    if (shared && d->ring) /* what the other users passed on to us */
        n = (uint16_t)rte_ring_dequeue_burst(d->ring, (void **)m, max, NULL);
    if (n < max)
        n = (uint16_t)(n + rte_eth_rx_burst(d->port, 0, m + n, (uint16_t)(max - n)));
    unsigned k = 0;
    for (uint16_t i = 0; i < n; i++) {
        struct rte_mbuf *mb = m[i];
        struct rte_ether_hdr *eh = rte_pktmbuf_mtod(mb, struct rte_ether_hdr *);
        uint16_t key = em_dpdk_frame_key(mb);
        if (key != d->demux_be && shared && em_dpdk_pass_on(sh, d, mb))
            continue;
        if (mb->pkt_len < d->hdr_len || key != d->demux_be ||
            mb->pkt_len - d->hdr_len > d->link.mtu) {
            d->st.rx_foreign++;
            rte_pktmbuf_free(mb);
            continue;
        }
        if (em_loss_drop(&d->loss)) {
            d->st.rx_dropped_loss++;
            rte_pktmbuf_free(mb);
            continue;
        }
        em_pkt_t *p = pkt_of(mb);
        p->priv = mb;
        uint8_t *f = (uint8_t *)eh;
        if (mb->nb_segs > 1) {
            /* chained mbufs (frame larger than one buffer): one linear copy */
            uint8_t *lin = d->scratch + (size_t)k * (d->link.mtu + d->hdr_len);
            const uint8_t *src = rte_pktmbuf_read(mb, 0, mb->pkt_len, lin);
            if (src != lin)
                memcpy(lin, src, mb->pkt_len);
            f = lin;
            d->st.rx_multiseg++;
        }
        if (d->udp) {
            if (em_dpdk_udp_rx(d, mb, f, mb->pkt_len, p) != 0) {
                rte_pktmbuf_free(mb);
                continue;
            }
        } else {
            p->len = mb->pkt_len - RTE_ETHER_HDR_LEN;
            p->data = f + RTE_ETHER_HDR_LEN;
        }
        pkts[k++] = p;
    }
    d->st.rx_frames += k;
    return k;
}

static void dpdk_rx_release(em_link_t *l, em_pkt_t **pkts, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        rte_pktmbuf_free(pkts[i]->priv);
}

static int dpdk_set_peer(em_link_t *l, uint32_t peer, const em_link_addr_t *a)
{
    return em_dpdk_set_peer((struct dpdk_link *)l, peer, a); /* udp.c: both framings */
}

/* the peer whose MAC (set_peer) is the frame's source: in direct mode one
 * process owns a port, so its MAC names it */
static uint32_t dpdk_rx_peer(em_link_t *l, const em_pkt_t *p)
{
    const struct dpdk_link *d = (const struct dpdk_link *)l;
    if (d->udp)
        return em_dpdk_udp_rx_peer(d, p); /* by source (IPv4, port) */
    const struct rte_mbuf *mb = p->priv;
    if (!mb || mb->data_len < RTE_ETHER_HDR_LEN)
        return EM_LINK_PEER_UNKNOWN;
    const struct rte_ether_hdr *eh = rte_pktmbuf_mtod(mb, const struct rte_ether_hdr *);
    return em_addr_map_get(&d->bysrc, em_addr_key6(eh->src_addr.addr_bytes, 0));
}

/* First contact (link.h tx_to): the headers from address @p a (L2: its
 * MAC; udp: its IPv4 and port, the next hop as udp.c knows it now), no
 * peer entry read or made; one frame to the port's queue 0. */
static int dpdk_tx_to(em_link_t *l, em_pkt_t *p, const em_link_addr_t *a)
{
    struct dpdk_link *d = (struct dpdk_link *)l;
    struct rte_mbuf *mb = p->priv;
    if (p->len + p->ext_len > l->mtu)
        return -EINVAL;
    em_link_pkt_flatten(p); /* the mbuf holds a whole frame */
    if (d->udp) {
        int rc = em_dpdk_udp_tx_to_hdr(d, mb, p, a);
        if (rc != 0)
            return rc;
    } else {
        if (a->len != EM_DPDK_ADDR_L2 && a->len != EM_DPDK_ADDR_L2_IP)
            return -EINVAL;
        l2_hdr(d, mb, a->bytes);
    }
    mb->data_len = (uint16_t)(d->hdr_len + p->len);
    mb->pkt_len = mb->data_len;
    if (rte_eth_tx_burst(d->port, 0, &mb, 1) != 1) {
        d->st.tx_full++;
        return -EAGAIN;
    }
    d->st.tx_frames++;
    return 0;
}

/* rx_peer's judgment against one address: the frame's source MAC (udp
 * framing: its source IPv4 and port) is the address's */
static bool dpdk_rx_from(em_link_t *l, const em_pkt_t *p, const em_link_addr_t *a)
{
    const struct dpdk_link *d = (const struct dpdk_link *)l;
    if (d->udp)
        return em_dpdk_udp_rx_from(p, a);
    const struct rte_mbuf *mb = p->priv;
    if (!mb || mb->data_len < RTE_ETHER_HDR_LEN ||
        (a->len != EM_DPDK_ADDR_L2 && a->len != EM_DPDK_ADDR_L2_IP))
        return false;
    const struct rte_ether_hdr *eh = rte_pktmbuf_mtod(mb, const struct rte_ether_hdr *);
    return memcmp(eh->src_addr.addr_bytes, a->bytes, 6) == 0;
}

static const em_link_ops_t dpdk_ops = {
    .name = "dpdk",
    .tx_alloc = dpdk_tx_alloc,
    .tx_burst = dpdk_tx_burst,
    .tx_free = dpdk_tx_free,
    .rx_burst = dpdk_rx_burst,
    .rx_release = dpdk_rx_release,
    .flush = em_link_flush_none,
    .set_peer = dpdk_set_peer,
    .close = em_dpdk_port_close,
    .rx_peer = dpdk_rx_peer,
    .tx_to = dpdk_tx_to,
    .rx_from = dpdk_rx_from,
};

void em_dpdk_link_init(struct dpdk_link *d, const em_dpdk_cfg_t *cfg, uint32_t mtu, uint32_t flags)
{
    d->ethertype_be = rte_cpu_to_be_16(cfg->ethertype ? cfg->ethertype : EM_ETHERTYPE);
    em_loss_init(&d->loss, cfg->rx_loss, cfg->loss_seed);
    d->link.ops = &dpdk_ops;
    d->link.mtu = mtu;
    d->link.flags = flags;
    d->link.local.len = 8;
    memcpy(d->link.local.bytes, d->mac.addr_bytes, 6);
    d->link.local.bytes[6] = 0; /* queue 0 */
    d->link.local.bytes[7] = 0;
    d->hdr_len = RTE_ETHER_HDR_LEN; /* udp.c changes both in udp framing */
    d->demux_be = d->ethertype_be;
}

const em_dpdk_stats_t *em_link_dpdk_stats(const em_link_t *l)
{
    return &((const struct dpdk_link *)l)->st;
}

/* The af_xdp PMD keeps its socket to itself: ask every descriptor of the
 * process, only AF_XDP sockets answer XDP_STATISTICS. */
static void xdp_socket_stats(em_dpdk_port_stats_t *out)
{
    for (int fd = 0; fd < 1024; fd++) {
        struct xdp_statistics xs;
        socklen_t len = sizeof xs;
        memset(&xs, 0, sizeof xs);
        if (getsockopt(fd, SOL_XDP, XDP_STATISTICS, &xs, &len) != 0)
            continue;
        out->xdp_rx_dropped += xs.rx_dropped;
        out->xdp_tx_invalid += xs.tx_invalid_descs;
        if (len >= sizeof xs) {
            out->xdp_rx_ring_full += xs.rx_ring_full;
            out->xdp_fill_empty += xs.rx_fill_ring_empty_descs;
        }
    }
}

int em_link_dpdk_port_stats(const em_link_t *l, em_dpdk_port_stats_t *out)
{
    const struct dpdk_link *d = (const struct dpdk_link *)l;
    struct rte_eth_stats st;
    memset(out, 0, sizeof *out);
    if (rte_eth_stats_get(d->port, &st) != 0)
        return -1;
    *out = (em_dpdk_port_stats_t){
        .rx_pkts = st.ipackets,
        .rx_bytes = st.ibytes,
        .tx_pkts = st.opackets,
        .tx_bytes = st.obytes,
        .q0_rx_pkts = st.q_ipackets[0],
        .q0_rx_bytes = st.q_ibytes[0],
        .q0_tx_pkts = st.q_opackets[0],
        .q0_tx_bytes = st.q_obytes[0],
        .rx_missed = st.imissed,
        .rx_errors = st.ierrors,
        .rx_nombuf = st.rx_nombuf,
        .tx_errors = st.oerrors,
    };
    if (d->af_xdp)
        xdp_socket_stats(out);
    return 0;
}

void em_link_dpdk_port_name(const em_link_t *l, char *buf, size_t len)
{
    const struct dpdk_link *d = (const struct dpdk_link *)l;
    char name[RTE_ETH_NAME_MAX_LEN];
    if (rte_eth_dev_get_name_by_port(d->port, name) != 0)
        name[0] = 0;
    snprintf(buf, len, "%s", name);
}

void em_link_dpdk_addr_str(const em_link_addr_t *a, char *buf, size_t len)
{
    if (a->len != EM_DPDK_ADDR_L2 && a->len != EM_DPDK_ADDR_L2_IP && a->len != EM_DPDK_ADDR_UDP) {
        snprintf(buf, len, "?");
        return;
    }
    int n = snprintf(buf, len, "%02x:%02x:%02x:%02x:%02x:%02x/%u", a->bytes[0], a->bytes[1],
                     a->bytes[2], a->bytes[3], a->bytes[4], a->bytes[5],
                     (unsigned)(a->bytes[6] << 8 | a->bytes[7]));
    if (a->len > EM_DPDK_ADDR_L2 && n > 0 && (size_t)n < len) {
        char ip[16];
        em_ipv4_str((uint32_t)a->bytes[8] << 24 | (uint32_t)a->bytes[9] << 16 |
                        (uint32_t)a->bytes[10] << 8 | a->bytes[11],
                    ip, sizeof ip);
        if (a->len == EM_DPDK_ADDR_UDP)
            snprintf(buf + n, len - (size_t)n, " %s:%u", ip,
                     (unsigned)(a->bytes[12] << 8 | a->bytes[13]));
        else
            snprintf(buf + n, len - (size_t)n, " %s", ip);
    }
}
