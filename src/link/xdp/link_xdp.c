/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file link_xdp.c
 * The native AF_XDP link (link_xdp.h).
 *
 * UMEM: `frames` chunks of one page.  The first half feeds the fill ring
 * (rx); the second half is cut into tx slots of `span` consecutive chunks,
 * enough for one frame of the link's MTU, so a tx frame is contiguous
 * memory the caller writes once and the ring gets `span` descriptors of it
 * (XDP_PKT_CONTD on all but the last).  A tx slot is free again when all of
 * its descriptors came back on the completion ring.  An rx frame of one
 * chunk is lent to the caller where it lies; one of several chunks (their
 * order in the UMEM is the kernel's) is gathered into a bounce buffer.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "link/xdp/xdp_internal.h"

#include <errno.h>
#include <net/if.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <xdp/xsk.h>

#include "link/link_util.h"

static struct xdp_link *X(em_link_t *l) { return (struct xdp_link *)l; }

/* --------------------------------------------------------------- tx -- */

/* Completions of every socket: a tx slot's descriptors all went out on one
 * socket and come back on its completion ring. */
static void reap(struct xdp_link *d)
{
    for (uint32_t qi = 0; qi < d->nq; qi++) {
        struct xdp_q *q = &d->q[qi];
        if (!q->tx_out)
            continue;
        uint32_t idx, n = xsk_ring_cons__peek(&q->cq, BURST, &idx);
        for (uint32_t i = 0; i < n; i++) {
            uint64_t a = *xsk_ring_cons__comp_addr(&q->cq, idx + i);
            uint32_t s = (uint32_t)((a - d->tx_base) / ((uint64_t)d->span * CHUNK));
            if (a < d->tx_base || s >= d->nslots)
                continue; /* never ours: the kernel returns what we gave */
            struct tx_slot *t = &d->slots[s];
            if (++t->done == t->nseg) {
                t->next_free = d->free_head;
                d->free_head = s;
            }
        }
        if (n)
            xsk_ring_cons__release(&q->cq, n);
        q->tx_out -= n < q->tx_out ? n : q->tx_out;
    }
}

static em_pkt_t *xdp_tx_alloc(em_link_t *l)
{
    struct xdp_link *d = X(l);
    if (d->free_head == NO_SLOT) {
        reap(d);
        if (d->free_head == NO_SLOT)
            return NULL;
    }
    uint32_t s = d->free_head;
    struct tx_slot *t = &d->slots[s];
    d->free_head = t->next_free;
    t->done = t->nseg = 0;
    t->pkt.len = 0;
    t->pkt.ext = NULL;
    t->pkt.ext_len = 0;
    return &t->pkt;
}

static void xdp_tx_free(em_link_t *l, em_pkt_t *p)
{
    struct xdp_link *d = X(l);
    uint32_t s = (uint32_t)(uintptr_t)p->priv;
    d->slots[s].next_free = d->free_head;
    d->free_head = s;
}

static void kick_tx(struct xdp_link *d, struct xdp_q *q)
{
    if (!xsk_ring_prod__needs_wakeup(&q->tx))
        return;
    d->st.wakeups++;
    (void)sendto(xsk_socket__fd(q->xsk), NULL, 0, MSG_DONTWAIT, NULL, 0);
}

/* Post frame @p p, its headers written, on the tx ring (one descriptor
 * per chunk).  0, or -1: the ring has no room now. */
static int tx_post(struct xdp_link *d, em_pkt_t *p, uint32_t qi)
{
    uint32_t s = (uint32_t)(uintptr_t)p->priv;
    uint32_t total = d->hdr_len + p->len;
    uint32_t nseg = (total + CHUNK - 1) / CHUNK;
    uint32_t idx;
    struct xdp_q *q = &d->q[qi];
    if (xsk_ring_prod__reserve(&q->tx, nseg, &idx) != nseg)
        return -1;
    uint64_t base = d->tx_base + (uint64_t)s * d->span * CHUNK;
    for (uint32_t k = 0; k < nseg; k++) {
        struct xdp_desc *x = xsk_ring_prod__tx_desc(&q->tx, idx + k);
        x->addr = base + (uint64_t)k * CHUNK;
        x->len = k + 1 < nseg ? CHUNK : total - k * CHUNK;
        x->options = k + 1 < nseg ? XDP_PKT_CONTD : 0;
    }
    d->slots[s].nseg = (uint16_t)nseg;
    d->slots[s].done = 0;
    xsk_ring_prod__submit(&q->tx, nseg);
    q->tx_out += nseg;
    d->st.tx_frames++;
    d->st.q_tx[qi]++;
    return 0;
}

/* L2 framing: the Ethernet header in front of @p p's frame, to @p dst */
static void l2_hdr(const struct xdp_link *d, em_pkt_t *p, const uint8_t dst[6])
{
    uint8_t *eh = p->data - ETH_HLEN;
    memcpy(eh, dst, 6);
    memcpy(eh + 6, d->mac, 6);
    eh[12] = (uint8_t)(d->ethertype >> 8);
    eh[13] = (uint8_t)d->ethertype;
}

static unsigned xdp_tx_burst(em_link_t *l, em_pkt_t **pkts, unsigned n)
{
    struct xdp_link *d = X(l);
    unsigned done = 0;
    uint32_t used = 0; /* sockets posted to (bit per queue) */
    for (; done < n; done++) {
        em_pkt_t *p = pkts[done];
        if (p->ext_len)
            em_link_pkt_flatten(p);
        if (p->peer >= d->npeers || !d->peers[p->peer].set)
            break;
        /* a peer's socket: stable (its frames keep their order), peers
         * spread over the queues (link_xdp.h) */
        uint32_t qi = p->peer % d->nq;
        if (d->udp)
            em_xdp_udp_tx_hdr(d, p);
        else
            l2_hdr(d, p, d->peers[p->peer].mac);
        if (tx_post(d, p, qi) != 0) {
            d->st.tx_full++;
            break;
        }
        used |= 1u << qi;
    }
    for (uint32_t qi = 0; used; qi++, used >>= 1)
        if (used & 1)
            kick_tx(d, &d->q[qi]);
    return done;
}

/* First contact (link.h tx_to): the headers from address @p a (L2: its
 * MAC; udp: its IPv4 and port, the next hop as xdp_udp.c knows it now),
 * no peer entry read or made. */
static int xdp_tx_to(em_link_t *l, em_pkt_t *p, const em_link_addr_t *a)
{
    struct xdp_link *d = X(l);
    if (p->len + p->ext_len > l->mtu)
        return -EINVAL;
    em_link_pkt_flatten(p); /* the slot holds a whole frame */
    if (d->udp) {
        int rc = em_xdp_udp_tx_to_hdr(d, p, a);
        if (rc != 0)
            return rc;
    } else {
        if (a->len != EM_XDP_ADDR_LEN && a->len != EM_XDP_ADDR_L2_IP_LEN)
            return -EINVAL;
        l2_hdr(d, p, a->bytes);
    }
    /* the first queue: a peer opens the same ones (link_xdp.h) */
    if (tx_post(d, p, 0) != 0) {
        d->st.tx_full++;
        return -EAGAIN;
    }
    kick_tx(d, &d->q[0]);
    return 0;
}

static int xdp_flush(em_link_t *l)
{
    struct xdp_link *d = X(l);
    /* the sockets with frames in flight (copy mode sends only inside the
     * syscall, a few dozen per call), counted after a reap so that a
     * socket whose frames all left costs no call */
    reap(d);
    for (uint32_t qi = 0; qi < d->nq; qi++)
        if (d->q[qi].tx_out)
            kick_tx(d, &d->q[qi]);
    return 0;
}

/* --------------------------------------------------------------- rx -- */

static void refill(struct xdp_q *q, const uint64_t *addrs, uint32_t n)
{
    uint32_t idx;
    while (xsk_ring_prod__reserve(&q->fq, n, &idx) != n)
        ; /* cannot fail: every fill ring can hold every rx chunk */
    for (uint32_t i = 0; i < n; i++)
        *xsk_ring_prod__fill_addr(&q->fq, idx + i) = addrs[i];
    xsk_ring_prod__submit(&q->fq, n);
}

/* Frames of socket @p qi into pkts[got..cap).  @return the new got. */
static unsigned rx_queue(struct xdp_link *d, uint32_t qi, em_pkt_t **pkts, unsigned got,
                         unsigned cap, int wake)
{
    struct xdp_q *q = &d->q[qi];
    uint32_t idx;
    uint32_t n = xsk_ring_cons__peek(&q->rx, BURST, &idx);
    if (!n) {
        if (wake && xsk_ring_prod__needs_wakeup(&q->fq)) {
            d->st.wakeups++;
            (void)recvfrom(xsk_socket__fd(q->xsk), NULL, 0, MSG_DONTWAIT, NULL, NULL);
        }
        return got;
    }
    unsigned got0 = got;
    uint32_t used = 0;
    uint64_t bad[BURST * 8];
    uint32_t nbad = 0;
    /* L2: our ethertype; udp: IPv4, the rest checked by xdp_udp.c */
    const uint8_t et0 = d->udp ? 0x08 : (uint8_t)(d->ethertype >> 8),
                  et1 = d->udp ? 0x00 : (uint8_t)d->ethertype;
    while (used < n && got < cap) {
        /* one frame: descriptors up to the one without XDP_PKT_CONTD */
        uint32_t k = 0, flen = 0;
        uint64_t addr[8];
        int too_long = 0, partial = 0;
        for (;;) {
            const struct xdp_desc *x = xsk_ring_cons__rx_desc(&q->rx, idx + used + k);
            if (k < 8)
                addr[k] = x->addr;
            else /* refused below; its chunks beyond the 8th go back from here */
                too_long = 1;
            flen += x->len;
            k++;
            if (!(x->options & XDP_PKT_CONTD))
                break;
            if (used + k == n) { /* the rest of the frame is not in this peek */
                partial = 1;
                break;
            }
        }
        if (partial && (used > 0 || n < BURST))
            break; /* left on the ring (cancelled below) for the next call */
        for (uint32_t j = 8; j < k; j++)
            bad[nbad++] = xsk_umem__extract_addr(
                xsk_ring_cons__rx_desc(&q->rx, idx + used + j)->addr);
        too_long |= partial; /* longer than a whole peek: no frame of ours */
        const struct xdp_desc *first = xsk_ring_cons__rx_desc(&q->rx, idx + used);
        uint8_t *f = xsk_umem__get_data(d->area, first->addr);
        int lost = d->loss.p > 0 && em_loss_drop(&d->loss);
        if (lost || too_long || k > 8 || flen < ETH_HLEN + 1 || flen - ETH_HLEN > d->l2mtu ||
            f[12] != et0 || f[13] != et1) {
            if (lost)
                d->st.rx_loss_drops++;
            else
                d->st.rx_bad++;
            for (uint32_t j = 0; j < k && j < 8; j++)
                bad[nbad++] = xsk_umem__extract_addr(addr[j]);
            used += k;
            continue;
        }
        em_pkt_t *p = &d->rx_pkts[got];
        if (k == 1) {
            p->data = f + ETH_HLEN;
        } else { /* gather the chunks, in ring order */
            uint8_t *b = d->bounce + (size_t)got * (d->l2mtu + ETH_HLEN), *w = b;
            for (uint32_t j = 0; j < k; j++) {
                const struct xdp_desc *x = xsk_ring_cons__rx_desc(&q->rx, idx + used + j);
                memcpy(w, xsk_umem__get_data(d->area, x->addr), x->len);
                w += x->len;
            }
            p->data = b + ETH_HLEN;
            d->st.rx_gathered++;
        }
        p->len = flen - ETH_HLEN;
        if (d->udp && em_xdp_udp_rx(d, p->data - ETH_HLEN, flen, p) != 0) {
            for (uint32_t j = 0; j < k; j++)
                bad[nbad++] = xsk_umem__extract_addr(addr[j]);
            used += k;
            continue;
        }
        p->cls = EM_PKT_DATA;
        p->priv = (void *)(uintptr_t)got;
        for (uint32_t j = 0; j < k; j++)
            d->rx_addr[got][j] = xsk_umem__extract_addr(addr[j]);
        d->rx_nchunks[got] = (uint8_t)k;
        d->rx_q[got] = (uint8_t)qi;
        pkts[got++] = p;
        used += k;
    }
    /* Descriptors peeked but not taken (the caller's max, a frame not yet
     * whole) stay on the ring: without the cancel the next peek would start
     * after them, losing their frames and their chunks for good. */
    xsk_ring_cons__release(&q->rx, used);
    if (used < n)
        xsk_ring_cons__cancel(&q->rx, n - used);
    if (nbad)
        refill(q, bad, nbad);
    d->st.q_rx[qi] += got - got0;
    return got;
}

/* Every socket, the first one polled rotating; on the first pass each
 * takes at most its share of @p max, a second pass fills what is left:
 * one busy queue cannot starve the others, nor leave the burst half empty. */
static unsigned xdp_rx_burst(em_link_t *l, em_pkt_t **pkts, unsigned max)
{
    struct xdp_link *d = X(l);
    if (max > BURST)
        max = BURST;
    if (d->udp)
        em_xdp_udp_poll(d);
    unsigned got = 0, share = (max + d->nq - 1) / d->nq;
    for (uint32_t k = 0; k < d->nq && got < max; k++) {
        unsigned cap = got + share < max ? got + share : max;
        got = rx_queue(d, (d->rx_next + k) % d->nq, pkts, got, cap, 1);
    }
    for (uint32_t k = 0; d->nq > 1 && k < d->nq && got < max; k++)
        got = rx_queue(d, (d->rx_next + k) % d->nq, pkts, got, max, 0);
    if (++d->rx_next == d->nq)
        d->rx_next = 0;
    d->st.rx_frames += got;
    return got;
}

static void xdp_rx_release(em_link_t *l, em_pkt_t **pkts, unsigned n)
{
    struct xdp_link *d = X(l);
    for (unsigned i = 0; i < n; i++) {
        uint32_t k = (uint32_t)(uintptr_t)pkts[i]->priv;
        refill(&d->q[d->rx_q[k]], d->rx_addr[k], d->rx_nchunks[k]);
    }
}

static uint32_t xdp_rx_peer(em_link_t *l, const em_pkt_t *p)
{
    const struct xdp_link *d = X(l);
    if (d->udp)
        return em_xdp_udp_rx_peer(d, p);
    return em_addr_map_get(&d->bysrc, em_addr_key6(p->data - ETH_HLEN + 6, 0));
}

/* rx_peer's judgment against one address: the frame's source MAC (udp
 * framing: its source IPv4 and port) is the address's */
static bool xdp_rx_from(em_link_t *l, const em_pkt_t *p, const em_link_addr_t *a)
{
    const struct xdp_link *d = X(l);
    if (d->udp)
        return em_xdp_udp_rx_from(p, a);
    return (a->len == EM_XDP_ADDR_LEN || a->len == EM_XDP_ADDR_L2_IP_LEN) &&
           memcmp(p->data - ETH_HLEN + 6, a->bytes, 6) == 0;
}

static int xdp_set_peer(em_link_t *l, uint32_t peer, const em_link_addr_t *a)
{
    struct xdp_link *d = X(l);
    d->peer_err[0] = 0;
    if (d->udp) {
        int rc = em_xdp_udp_set_peer(d, peer, a);
        if (rc == 0 &&
            em_peer_table_reserve((void **)&d->peers, &d->npeers, sizeof *d->peers, peer) != 0)
            rc = -ENOMEM;
        if (rc == 0)
            d->peers[peer].set = 1; /* the headers are xdp_udp.c's */
        return rc;
    }
    int rc = em_xdp_l2_check(d, peer, a); /* on our segment, in our framing */
    if (rc != 0)
        return rc;
    if (em_peer_table_reserve((void **)&d->peers, &d->npeers, sizeof *d->peers, peer) != 0)
        return -ENOMEM;
    struct xdp_peer *pa = &d->peers[peer];
    if (pa->set)
        em_addr_map_del(&d->bysrc, em_addr_key6(pa->mac, 0), peer);
    if (em_addr_map_put(&d->bysrc, em_addr_key6(a->bytes, 0), peer) != 0)
        return -ENOMEM;
    memcpy(pa->mac, a->bytes, 6);
    pa->set = 1;
    return 0;
}

/* one queue: its socket; several: the epoll set of all (readable when any is) */
static int xdp_wait_fd(em_link_t *l)
{
    struct xdp_link *d = X(l);
    return d->epfd >= 0 ? d->epfd : xsk_socket__fd(d->q[0].xsk);
}

/* ------------------------------------------------------------ setup -- */

static void detach_ours(struct xdp_link *d)
{
    if (!d->prog_id)
        return;
    /* only if it is still ours: an admin may have replaced it */
    uint32_t now = 0;
    if (bpf_xdp_query_id(d->ifindex, (int)d->xdp_flags, &now) == 0 && now == d->prog_id)
        (void)bpf_xdp_detach(d->ifindex, (int)d->xdp_flags, NULL);
    d->prog_id = 0;
}

static void xdp_close(em_link_t *l)
{
    struct xdp_link *d = X(l);
    if (d->epfd >= 0)
        close(d->epfd);
    /* the first socket last: it carries the UMEM's registration */
    for (uint32_t qi = EM_XDP_MAX_QUEUES; qi-- > 0;)
        if (d->q[qi].xsk)
            xsk_socket__delete(d->q[qi].xsk);
    if (d->umem)
        (void)xsk_umem__delete(d->umem);
    detach_ours(d);
    if (d->obj)
        bpf_object__close(d->obj);
    for (uint32_t qi = 0; qi < EM_XDP_MAX_QUEUES; qi++)
        em_xdp_guard_release(&d->q[qi].guard);
    em_xdp_udp_free(d);
    if (d->area)
        munmap(d->area, d->area_len);
    free(d->slots);
    free(d->bounce);
    free(d->peers);
    em_addr_map_free(&d->bysrc);
    free(d);
}

static const em_link_ops_t XDP_OPS = {
    .name = "xdp",
    .tx_alloc = xdp_tx_alloc,
    .tx_burst = xdp_tx_burst,
    .tx_free = xdp_tx_free,
    .rx_burst = xdp_rx_burst,
    .rx_release = xdp_rx_release,
    .flush = xdp_flush,
    .set_peer = xdp_set_peer,
    .close = xdp_close,
    .rx_peer = xdp_rx_peer,
    .wait_fd = xdp_wait_fd,
    .tx_to = xdp_tx_to,
    .rx_from = xdp_rx_from,
};

static int if_facts(struct xdp_link *d, const char *ifname, uint32_t *mtu, char *err, size_t len)
{
    d->ifindex = (int)if_nametoindex(ifname);
    if (!d->ifindex) {
        snprintf(err, len, "no interface '%s' (name the one of the cluster network)", ifname);
        return -1;
    }
    int s = socket(AF_INET, SOCK_DGRAM, 0);
    struct ifreq r = { 0 };
    snprintf(r.ifr_name, sizeof r.ifr_name, "%s", ifname);
    int ok = s >= 0 && ioctl(s, SIOCGIFHWADDR, &r) == 0;
    if (ok)
        memcpy(d->mac, r.ifr_hwaddr.sa_data, 6);
    ok = ok && ioctl(s, SIOCGIFMTU, &r) == 0;
    if (ok)
        *mtu = (uint32_t)r.ifr_mtu;
    if (s >= 0)
        close(s);
    if (!ok)
        snprintf(err, len, "cannot read %s's MAC and MTU: %s", ifname, strerror(errno));
    return ok ? 0 : -1;
}

static const char *prog_path(const em_xdp_cfg_t *cfg)
{
    const char *e = getenv("EM_XDP_PROG");
    if (cfg->prog && *cfg->prog)
        return cfg->prog;
    return e && *e ? e : EM_XDP_PROG_DEFAULT;
}

/* Load our filter and attach it (native, else generic), never over
 * someone else's program. */
static int attach_filter(struct xdp_link *d, const em_xdp_cfg_t *cfg, int frags, int *map_fd,
                         char *err, size_t len)
{
    const char *path = prog_path(cfg);
    d->obj = bpf_object__open_file(path, NULL);
    if (!d->obj || libbpf_get_error(d->obj)) {
        d->obj = NULL;
        snprintf(err, len,
                 "cannot open the XDP filter %s (install ethermpi-emd, or name it "
                 "with the xdp_prog setting or EM_XDP_PROG)",
                 path);
        return -1;
    }
    struct bpf_program *want = bpf_object__find_program_by_name(d->obj, frags ? "emc_xdp_drop_mb"
                                                                              : "emc_xdp_drop_sb");
    struct bpf_program *p;
    bpf_object__for_each_program(p, d->obj) bpf_program__set_autoload(p, p == want);
    if (!want || bpf_object__load(d->obj) != 0) {
        snprintf(err, len,
                 "cannot load the XDP filter %s: %s (it needs CAP_BPF and "
                 "CAP_NET_ADMIN, or root: docs/deploy.md)",
                 path, strerror(errno));
        return -1;
    }
    int fd = bpf_program__fd(want);
    uint32_t other = 0;
    if (bpf_xdp_query_id(d->ifindex, 0, &other) == 0 && other) {
        snprintf(err, len,
                 "another XDP program (id %u) is attached to %s: ethermpi never "
                 "replaces or removes it; if it is a leftover, 'ip link set dev %s xdp off' "
                 "removes it",
                 other, cfg->ifname, cfg->ifname);
        return -1;
    }
    d->xdp_flags = XDP_FLAGS_UPDATE_IF_NOEXIST | XDP_FLAGS_DRV_MODE;
    if (bpf_xdp_attach(d->ifindex, fd, d->xdp_flags, NULL) != 0) {
        d->xdp_flags = XDP_FLAGS_UPDATE_IF_NOEXIST | XDP_FLAGS_SKB_MODE;
        if (bpf_xdp_attach(d->ifindex, fd, d->xdp_flags, NULL) != 0) {
            int e = errno;
            snprintf(err, len, "cannot attach the XDP filter to %s: %s%s", cfg->ifname, strerror(e),
                     e == EPERM ? " (CAP_NET_ADMIN and CAP_BPF needed)" : "");
            return -1;
        }
    }
    d->info.native = !!(d->xdp_flags & XDP_FLAGS_DRV_MODE);
    (void)bpf_xdp_query_id(d->ifindex, (int)d->xdp_flags, &d->prog_id);
    *map_fd = bpf_object__find_map_fd_by_name(d->obj, "xsks_map");
    if (*map_fd < 0) {
        snprintf(err, len, "the XDP filter %s has no xsks_map", path);
        return -1;
    }
    return 0;
}

/* The socket: zero copy first (unless copy is asked), multi-buffer when the
 * MTU needs it; each fallback's reason kept. */
static int make_socket(struct xdp_link *d, const em_xdp_cfg_t *cfg, int sg, char *err, size_t len)
{
    struct xsk_socket_config sc = { .rx_size = d->rx_frames,
                                    .tx_size = d->rx_frames,
                                    .libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
                                    .xdp_flags = d->xdp_flags & ~XDP_FLAGS_UPDATE_IF_NOEXIST };
    uint16_t base = XDP_USE_NEED_WAKEUP | (sg ? XDP_USE_SG : 0);
    struct xdp_q *q = &d->q[0];
    int rc = -EOPNOTSUPP;
    if (cfg->zero_copy != 0) {
        sc.bind_flags = base | XDP_ZEROCOPY;
        rc = xsk_socket__create(&q->xsk, cfg->ifname, cfg->queue, d->umem, &q->rx, &q->tx, &sc);
        if (rc == 0)
            d->info.zero_copy = 1;
        else if (cfg->zero_copy == 1) {
            snprintf(err, len,
                     "zero copy on %s queue %u refused: %s (the driver has no AF_XDP "
                     "zero copy: let the link fall back to copy mode)",
                     cfg->ifname, cfg->queue, strerror(-rc));
            return -1;
        } else
            snprintf(d->info.why_copy, sizeof d->info.why_copy, "the driver refused zero copy (%s)",
                     strerror(-rc));
    } else {
        snprintf(d->info.why_copy, sizeof d->info.why_copy, "copy mode asked for");
    }
    if (rc != 0) {
        sc.bind_flags = base | XDP_COPY;
        /* EBUSY here, with the queue's guard already ours, is a socket
         * on the queue that its process has closed and the kernel has not
         * finished releasing (deferred work: a job started right after the
         * last one on this node, a link reopened at once saw it 1 time in
         * 12): retry for up to a second before calling the queue busy */
        for (int tries = 0;; tries++) {
            rc = xsk_socket__create(&q->xsk, cfg->ifname, cfg->queue, d->umem, &q->rx, &q->tx, &sc);
            if (rc != -EBUSY || tries >= 100)
                break;
            usleep(10000);
        }
    }
    if (rc != 0) {
        snprintf(err, len, "cannot open an AF_XDP socket on %s queue %u: %s%s", cfg->ifname,
                 cfg->queue, strerror(-rc),
                 rc == -EPERM ? " (CAP_NET_RAW needed)"
                 : sg && rc == -EOPNOTSUPP
                     ? " (multi-buffer frames need Linux 6.6 or later and driver support: "
                       "lower the MTU to one page)"
                     : "");
        return -1;
    }
    d->info.multi_buffer = sg;
    return 0;
}

static void busy_poll(struct xdp_link *d, const em_xdp_cfg_t *cfg)
{
    if (!cfg->busy_poll_us)
        return;
    int ok = 1, one = 1, us = (int)cfg->busy_poll_us,
        budget = (int)(cfg->busy_budget ? cfg->busy_budget : BURST);
    for (uint32_t qi = 0; ok && qi < d->nq; qi++) {
        int fd = xsk_socket__fd(d->q[qi].xsk);
        ok = setsockopt(fd, SOL_SOCKET, SO_PREFER_BUSY_POLL, &one, sizeof one) == 0 &&
             setsockopt(fd, SOL_SOCKET, SO_BUSY_POLL, &us, sizeof us) == 0 &&
             setsockopt(fd, SOL_SOCKET, SO_BUSY_POLL_BUDGET, &budget, sizeof budget) == 0;
    }
    if (!ok)
        snprintf(d->info.why_no_busy, sizeof d->info.why_no_busy,
                 "busy-poll socket options refused: %s (SO_BUSY_POLL_BUDGET above the default "
                 "needs CAP_NET_ADMIN)",
                 strerror(errno));
    else
        d->info.busy_poll = 1;
}

static int layout(struct xdp_link *d, const em_xdp_cfg_t *cfg, uint32_t mtu, char *err, size_t len)
{
    d->frames = cfg->frames ? cfg->frames : 4096;
    d->rx_frames = d->frames / 2;
    d->span = (mtu + ETH_HLEN + CHUNK - 1) / CHUNK; /* mtu: the Ethernet payload */
    d->nslots = (d->frames - d->rx_frames) / d->span;
    if ((d->frames & (d->frames - 1)) || d->frames < 64 || d->nslots < 8) {
        snprintf(err, len,
                 "UMEM of %u chunks: not a power of 2 of at least 64, or too small "
                 "for frames of %u bytes",
                 d->frames, mtu);
        return -1;
    }
    d->area_len = (uint64_t)d->frames * CHUNK;
    d->area = mmap(NULL, d->area_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    d->slots = calloc(d->nslots, sizeof *d->slots);
    d->bounce = malloc((size_t)BURST * (mtu + ETH_HLEN));
    if (d->area == MAP_FAILED || !d->slots || !d->bounce) {
        if (d->area == MAP_FAILED)
            d->area = NULL;
        snprintf(err, len, "no memory for the UMEM (%llu bytes)", (unsigned long long)d->area_len);
        return -1;
    }
    d->tx_base = (uint64_t)d->rx_frames * CHUNK;
    d->free_head = NO_SLOT;
    for (uint32_t s = d->nslots; s-- > 0;) {
        struct tx_slot *t = &d->slots[s];
        t->pkt.data = d->area + d->tx_base + (uint64_t)s * d->span * CHUNK + d->hdr_len;
        t->pkt.priv = (void *)(uintptr_t)s;
        t->next_free = d->free_head;
        d->free_head = s;
    }
    struct xsk_umem_config uc = { .fill_size = d->rx_frames,
                                  .comp_size = d->frames - d->rx_frames,
                                  .frame_size = CHUNK,
                                  .frame_headroom = 0,
                                  .flags = 0 };
    int rc = xsk_umem__create(&d->umem, d->area, d->area_len, &d->q[0].fq, &d->q[0].cq, &uc);
    if (rc != 0) {
        snprintf(err, len, "cannot register the UMEM: %s%s", strerror(-rc),
                 rc == -ENOMEM || rc == -EPERM
                     ? " (locked memory: raise RLIMIT_MEMLOCK, or CAP_IPC_LOCK)"
                     : "");
        return -1;
    }
    return 0;
}

em_link_t *em_xdp_link_open(const em_xdp_cfg_t *cfg, char *err, size_t errlen)
{
    struct xdp_link *d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    for (uint32_t qi = 0; qi < EM_XDP_MAX_QUEUES; qi++)
        d->q[qi].guard.lock_fd = d->q[qi].guard.if_lock_fd = -1;
    d->epfd = -1;
    uint32_t if_mtu = 0, nq = cfg->queues > 1 ? cfg->queues : 1;
    if (!cfg->ifname || if_facts(d, cfg->ifname, &if_mtu, err, errlen) != 0)
        goto fail;
    uint32_t mtu = cfg->mtu ? cfg->mtu : if_mtu;
    if (mtu > if_mtu || mtu < 256) {
        snprintf(err, errlen, "MTU %u for %s: it must lie between 256 and the interface's %u", mtu,
                 cfg->ifname, if_mtu);
        goto fail;
    }
    int sg = mtu + ETH_HLEN > CHUNK, map_fd = -1;
    snprintf(d->ifname, sizeof d->ifname, "%s", cfg->ifname);
    d->l2mtu = mtu;
    d->hdr_len = ETH_HLEN;
    d->ethertype = cfg->ethertype ? cfg->ethertype : EM_XDP_ETHERTYPE;
    d->link.mtu = mtu;
    d->link.local.len = EM_XDP_ADDR_LEN;
    memcpy(d->link.local.bytes, d->mac, 6);
    d->link.local.bytes[6] = (uint8_t)(cfg->queue >> 8);
    d->link.local.bytes[7] = (uint8_t)cfg->queue;
    /* udp framing: 42 header bytes, a smaller link MTU, a longer address;
     * L2: our IPv4 address in the blob, for the peers' segment check */
    if (cfg->framing_udp && em_xdp_udp_setup(d, cfg, err, errlen) != 0)
        goto fail;
    if (!cfg->framing_udp)
        em_xdp_l2_local_ip(d);
    if (em_xdp_check_queues(d, cfg, nq, err, errlen) != 0)
        goto fail;
    /* each queue's one live owner; a crashed owner's filter removed first
     * (a rank killed by an MPI abort leaves it attached) */
    for (uint32_t qi = 0; qi < nq; qi++) {
        d->q[qi].id = cfg->queue + qi;
        if (em_xdp_guard_acquire(cfg->ifname, d->q[qi].id, &d->q[qi].guard, err, errlen) != 0)
            goto fail;
    }
    if (layout(d, cfg, mtu, err, errlen) != 0 ||
        attach_filter(d, cfg, sg, &map_fd, err, errlen) != 0)
        goto fail;
    if (em_xdp_check_map(map_fd, cfg, nq, err, errlen) != 0 ||
        make_socket(d, cfg, sg, err, errlen) != 0)
        goto fail;
    d->nq = 1;
    int rc = xsk_socket__update_xskmap(d->q[0].xsk, map_fd);
    if (rc != 0) {
        snprintf(err, errlen, "cannot register the socket in the filter's map: %s", strerror(-rc));
        goto fail;
    }
    d->nq = nq;
    if (nq > 1 && em_xdp_open_more(d, cfg, map_fd, err, errlen) != 0)
        goto fail;
    busy_poll(d, cfg);
    /* the rx chunks split evenly over the fill rings (each can hold them
     * all: a chunk goes back to the ring of the queue it came from) */
    uint64_t a[BURST];
    uint32_t per = d->rx_frames / nq;
    for (uint32_t i = 0; i < per * nq;) {
        uint32_t k = per - i % per < BURST ? per - i % per : BURST;
        for (uint32_t j = 0; j < k; j++)
            a[j] = (uint64_t)(i + j) * CHUNK;
        refill(&d->q[i / per], a, k);
        i += k;
    }
    d->info.chunk = CHUNK;
    d->info.queue = cfg->queue;
    d->info.queues = nq;
    em_loss_init(&d->loss, cfg->rx_loss, cfg->loss_seed ? cfg->loss_seed : EM_LOSS_SEED_DEFAULT);
    d->link.ops = &XDP_OPS;
    return &d->link;
fail:
    xdp_close(&d->link);
    return NULL;
}

const em_xdp_info_t *em_xdp_link_info(const em_link_t *l)
{
    return &((const struct xdp_link *)l)->info;
}
const em_xdp_stats_t *em_xdp_link_stats(const em_link_t *l)
{
    return &((const struct xdp_link *)l)->st;
}
const char *em_xdp_link_peer_error(const em_link_t *l)
{
    return ((const struct xdp_link *)l)->peer_err;
}
