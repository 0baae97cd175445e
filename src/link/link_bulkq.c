/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file link_bulkq.c
 * The process's bulk queue (its own queues) on the daemon's port, as a
 * DPDK secondary (see link_bulkq.h).  tx: an mbuf of the slot's tx pool (created by the daemon,
 * no cache), Ethernet header + emd shim + frame, sent on the queue toward
 * the destination's slot.  rx: the slot's rx queues in turn; each mbuf
 * carries its em_pkt_t in the private area (the daemon's pools reserve it).
 */
#include "link/link_bulkq.h"
#include "link/link_dpdk.h"
#include "link/link_util.h"
#include "emd_abi/emd_abi.h"
#include "emd_abi/emd_wire.h"
#include "util/loss.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#define ETH_HDR RTE_ETHER_HDR_LEN
#define HDRS    (ETH_HDR + EMD_WIRE_HDR_LEN)
#define BURST   32

struct bulkq_peer {
    struct rte_ether_addr mac;
    uint16_t ep, queue; /* its endpoint; our tx queue toward its slot */
    uint8_t set;
};

struct bulkq_link {
    em_link_t link; /* must be first */
    uint16_t port, slots, slot, ep;
    uint8_t mac[6];
    struct rte_mempool *txpool;
    struct bulkq_peer *peers;
    uint32_t npeers;
    em_addr_map_t bysrc; /* (source MAC, source endpoint) -> peer */
    unsigned rx_next;    /* the sending slot whose queue is polled first */
    const volatile uint32_t *loss_ppm;
    em_loss_t loss; /* the stream behind loss_ppm (its p is unused) */
    em_bulkq_stats_t st;
};

static em_pkt_t *pkt_of(struct rte_mbuf *m) { return rte_mbuf_to_priv(m); }

static em_pkt_t *bulkq_tx_alloc(em_link_t *l)
{
    struct bulkq_link *d = (struct bulkq_link *)l;
    struct rte_mbuf *m = rte_pktmbuf_alloc(d->txpool);
    if (!m)
        return NULL;
    em_pkt_t *p = pkt_of(m);
    p->data = rte_pktmbuf_mtod(m, uint8_t *) + HDRS;
    p->len = 0;
    p->cls = EM_PKT_DATA;
    p->ext = NULL;
    p->ext_len = 0;
    p->priv = m;
    return p;
}

static void bulkq_tx_free(em_link_t *l, em_pkt_t *p)
{
    (void)l;
    rte_pktmbuf_free(p->priv);
}

static unsigned bulkq_tx_burst(em_link_t *l, em_pkt_t **pkts, unsigned n)
{
    struct bulkq_link *d = (struct bulkq_link *)l;
    unsigned done = 0;
    while (done < n) {
        /* a run of frames for the same queue goes in one burst */
        struct rte_mbuf *m[BURST];
        uint16_t q = 0;
        unsigned k = 0;
        for (; k < BURST && done + k < n; k++) {
            em_pkt_t *p = pkts[done + k];
            if (p->peer >= d->npeers || !d->peers[p->peer].set)
                break;
            const struct bulkq_peer *pe = &d->peers[p->peer];
            if (k == 0)
                q = pe->queue;
            else if (pe->queue != q)
                break;
            if (p->ext_len) { /* gather: one copy into the mbuf */
                memcpy(p->data + p->len, p->ext, p->ext_len);
                p->len += p->ext_len;
                p->ext = NULL;
                p->ext_len = 0;
            }
            struct rte_mbuf *mb = p->priv;
            struct rte_ether_hdr *eh = rte_pktmbuf_mtod(mb, struct rte_ether_hdr *);
            rte_ether_addr_copy(&pe->mac, &eh->dst_addr);
            memcpy(eh->src_addr.addr_bytes, d->mac, 6);
            eh->ether_type = rte_cpu_to_be_16(EM_ETHERTYPE);
            emd_shim_t sh = { .cls = p->cls, .len = (uint16_t)p->len, .dst = pe->ep, .src = d->ep };
            memcpy(sh.src_mac, d->mac, 6);
            emd_wire_encode((uint8_t *)eh + ETH_HDR, &sh);
            mb->data_len = (uint16_t)(HDRS + p->len);
            mb->pkt_len = mb->data_len;
            d->st.tx_bytes += p->len;
            m[k] = mb;
        }
        if (k == 0) {
            /* a frame for a peer we have no queue for: the caller's bug; drop it */
            rte_pktmbuf_free(pkts[done]->priv);
            done++;
            continue;
        }
        uint16_t sent = rte_eth_tx_burst(d->port, q, m, (uint16_t)k);
        d->st.tx_frames += sent;
        for (unsigned i = sent; i < k; i++)
            d->st.tx_bytes -= pkts[done + i]->len;
        done += sent;
        if (sent < k) {
            d->st.tx_full++;
            break;
        }
    }
    return done;
}

static unsigned bulkq_rx_burst(em_link_t *l, em_pkt_t **pkts, unsigned max)
{
    struct bulkq_link *d = (struct bulkq_link *)l;
    struct rte_mbuf *m[BURST];
    if (max > BURST)
        max = BURST;
    unsigned n = 0;
    for (unsigned i = 0; i < d->slots && n < max; i++) {
        uint16_t from = (uint16_t)((d->rx_next + i) % d->slots);
        n += rte_eth_rx_burst(d->port, emd_bulkq_queue(d->slots, from, d->slot), m + n,
                              (uint16_t)(max - n));
    }
    d->rx_next = (d->rx_next + 1) % d->slots;
    uint32_t ppm = d->loss_ppm ? *d->loss_ppm : 0;
    unsigned k = 0;
    for (unsigned i = 0; i < n; i++) {
        struct rte_mbuf *mb = m[i];
        const struct rte_ether_hdr *eh = rte_pktmbuf_mtod(mb, const struct rte_ether_hdr *);
        emd_shim_t sh;
        if (mb->nb_segs != 1 || mb->pkt_len < HDRS ||
            eh->ether_type != rte_cpu_to_be_16(EM_ETHERTYPE) ||
            emd_wire_decode((const uint8_t *)eh + ETH_HDR, mb->pkt_len - ETH_HDR, &sh) !=
                EMD_WIRE_OK ||
            sh.len > d->link.mtu) {
            d->st.rx_bad++;
            rte_pktmbuf_free(mb);
            continue;
        }
        if (sh.dst != d->ep) { /* for the slot's previous owner */
            d->st.rx_stale++;
            rte_pktmbuf_free(mb);
            continue;
        }
        if (em_loss_drop_ppm(&d->loss, ppm)) {
            d->st.rx_dropped_loss++;
            rte_pktmbuf_free(mb);
            continue;
        }
        em_pkt_t *p = pkt_of(mb);
        p->priv = mb;
        p->data = (uint8_t *)eh + HDRS;
        p->len = sh.len;
        p->peer = 0;
        p->cls = sh.cls;
        p->ext = NULL;
        p->ext_len = 0;
        d->st.rx_frames++;
        d->st.rx_bytes += sh.len;
        pkts[k++] = p;
    }
    return k;
}

static void bulkq_rx_release(em_link_t *l, em_pkt_t **pkts, unsigned n)
{
    (void)l;
    for (unsigned i = 0; i < n; i++)
        rte_pktmbuf_free(pkts[i]->priv);
}

static int bulkq_set_peer(em_link_t *l, uint32_t peer, const em_link_addr_t *a)
{
    struct bulkq_link *d = (struct bulkq_link *)l;
    uint8_t mac[6];
    uint16_t ep, slots, slot;
    if (emd_addr_decode(a->bytes, a->len, mac, &ep, &slots, &slot) != 0 || slots != d->slots)
        return -EINVAL;
    if (em_peer_table_reserve((void **)&d->peers, &d->npeers, sizeof *d->peers, peer) != 0)
        return -ENOMEM;
    struct bulkq_peer *pe = &d->peers[peer];
    if (pe->set)
        em_addr_map_del(&d->bysrc, em_addr_key6(pe->mac.addr_bytes, pe->ep), peer);
    if (em_addr_map_put(&d->bysrc, em_addr_key6(mac, ep), peer) != 0)
        return -ENOMEM;
    memcpy(pe->mac.addr_bytes, mac, 6);
    pe->ep = ep;
    pe->queue = emd_bulkq_queue(d->slots, d->slot, slot);
    pe->set = 1;
    return 0;
}

/* the peer whose (MAC, endpoint) the frame's shim names as its source */
static uint32_t bulkq_rx_peer(em_link_t *l, const em_pkt_t *p)
{
    const struct bulkq_link *d = (const struct bulkq_link *)l;
    const struct rte_mbuf *mb = p->priv;
    emd_shim_t sh;
    if (!mb || mb->data_len < HDRS ||
        emd_wire_decode(rte_pktmbuf_mtod(mb, const uint8_t *) + ETH_HDR, mb->data_len - ETH_HDR,
                        &sh) != EMD_WIRE_OK)
        return EM_LINK_PEER_UNKNOWN;
    return em_addr_map_get(&d->bysrc, em_addr_key6(sh.src_mac, sh.src));
}

/* This process's EAL as emd's secondary, shared by its bulk queues (one
 * per endpoint: Open MPI opens two, mtl ofi's and btl ofi's): started by
 * the first, cleaned up with the last.  Same thread rule as EAL. */
static unsigned eal_refs;
static char eal_prefix[128];

static void bulkq_close(em_link_t *l)
{
    struct bulkq_link *d = (struct bulkq_link *)l;
    em_addr_map_free(&d->bysrc);
    /* the port is the daemon's: nothing to stop; our EAL goes with the
     * last queue (the secondary's mp socket with it) */
    free(d->peers);
    free(d);
    if (eal_refs && --eal_refs == 0)
        rte_eal_cleanup();
}

static const em_link_ops_t bulkq_ops = {
    .name = "bulkq",
    .tx_alloc = bulkq_tx_alloc,
    .tx_burst = bulkq_tx_burst,
    .tx_free = bulkq_tx_free,
    .rx_burst = bulkq_rx_burst,
    .rx_release = bulkq_rx_release,
    .flush = em_link_flush_none,
    .set_peer = bulkq_set_peer,
    .close = bulkq_close,
    .rx_peer = bulkq_rx_peer,
};

/* The slot's queue pair on the daemon's port, once this process runs
 * as its secondary.  NULL with a sentence in @p err. */
static em_link_t *open_queue(const em_bulkq_cfg_t *cfg, char *err, size_t errlen)
{
    uint16_t port;
    struct rte_mempool *txpool = NULL;
    char pn[RTE_MEMPOOL_NAMESIZE];
    if (rte_eth_dev_get_port_by_name(cfg->port, &port) != 0) {
        snprintf(err, errlen, "the emd daemon's port %s is not visible to its secondary",
                 cfg->port);
        return NULL;
    }
    struct rte_eth_dev_info info;
    if (rte_eth_dev_info_get(port, &info) != 0 ||
        info.nb_rx_queues != 1u + (unsigned)cfg->slots * cfg->slots ||
        info.nb_tx_queues != info.nb_rx_queues) {
        snprintf(err, errlen,
                 "the emd daemon's port %s does not have the %u queue pairs of its "
                 "bulk-queue layout",
                 cfg->port, 1u + (unsigned)cfg->slots * cfg->slots);
        return NULL;
    }
    snprintf(pn, sizeof pn, EMD_BULKQ_TX_POOL, port, cfg->slot);
    txpool = rte_mempool_lookup(pn);
    if (!txpool || rte_pktmbuf_data_room_size(txpool) < RTE_PKTMBUF_HEADROOM + HDRS + cfg->mtu ||
        rte_pktmbuf_priv_size(txpool) < sizeof(em_pkt_t)) {
        snprintf(err, errlen, "the emd daemon has no usable bulk-queue pool %s", pn);
        return NULL;
    }
    /* the first link query maps the memif regions into this process */
    struct rte_eth_link lk;
    memset(&lk, 0, sizeof lk);
    rte_eth_link_get_nowait(port, &lk);
    if (lk.link_status != RTE_ETH_LINK_UP) {
        snprintf(err, errlen, "the emd daemon's port %s is down", cfg->port);
        return NULL;
    }
    struct bulkq_link *d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    d->port = port;
    d->slots = cfg->slots;
    d->slot = cfg->slot;
    d->ep = cfg->endpoint;
    memcpy(d->mac, cfg->mac, 6);
    d->txpool = txpool;
    d->loss_ppm = cfg->loss_ppm;
    em_loss_init(&d->loss, 0,
                 cfg->loss_seed ? cfg->loss_seed : 0x2545F4914F6CDD1Dull ^ cfg->endpoint);
    d->link.ops = &bulkq_ops;
    d->link.mtu = cfg->mtu;
    d->link.flags = EM_LINK_F_GATHER; /* the payload is copied into the mbuf once */
    d->link.local.len = 0;            /* link_emd publishes the address */
    return &d->link;
}

em_link_t *em_link_bulkq_open(const em_bulkq_cfg_t *cfg, char *err, size_t errlen)
{
    if (!cfg->slots || cfg->slots > EMD_BULKQ_SLOTS_MAX || cfg->slot >= cfg->slots ||
        !cfg->endpoint) {
        snprintf(err, errlen, "bad bulk-queue layout (slot %u of %u)", cfg->slot, cfg->slots);
        return NULL;
    }
    if (eal_refs && strcmp(eal_prefix, cfg->file_prefix) != 0) {
        snprintf(err, errlen,
                 "this process is already a secondary of another emd daemon (--file-prefix=%s, "
                 "asked for %s): one daemon per process",
                 eal_prefix, cfg->file_prefix);
        return NULL;
    }
    if (!eal_refs && rte_lcore_count() > 0) {
        snprintf(err, errlen,
                 "DPDK is already initialised in this process (a bulk queue needs "
                 "this process to be a secondary of the emd daemon)");
        return NULL;
    }
    if (eal_refs) { /* another endpoint's queue started it */
        em_link_t *l = open_queue(cfg, err, errlen);
        if (l)
            eal_refs++;
        return l;
    }
    /* EAL as the daemon's secondary; the main thread keeps its affinity */
    static char prefix[128], lcores[512];
    char *argv[12];
    int argc = 0;
    argv[argc++] = "ethermpi";
    argv[argc++] = "--proc-type=secondary";
    snprintf(prefix, sizeof prefix, "--file-prefix=%s", cfg->file_prefix);
    argv[argc++] = prefix;
    cpu_set_t set;
    size_t o = (size_t)snprintf(lcores, sizeof lcores, "--lcores=0@(");
    int first = 1;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        for (int c = 0; c < CPU_SETSIZE && o + 8 < sizeof lcores; c++)
            if (CPU_ISSET(c, &set)) {
                o += (size_t)snprintf(lcores + o, sizeof lcores - o, "%s%d", first ? "" : ",", c);
                first = 0;
            }
    snprintf(lcores + o, sizeof lcores - o, "%s)", first ? "0" : "");
    argv[argc++] = lcores;
    /* a rank (secondary of emd's EAL): emd's telemetry socket answers for
     * the port; one more per rank would only litter its runtime dir */
    argv[argc++] = "--no-telemetry";
    argv[argc++] = "--log-level=*:error";
    argv[argc++] = "--no-pci";
    argv[argc] = NULL;
    if (rte_eal_init(argc, argv) < 0) {
        snprintf(err, errlen,
                 "DPDK EAL failed to start as a secondary of the emd daemon "
                 "(--file-prefix=%s): %s",
                 cfg->file_prefix, rte_strerror(rte_errno));
        return NULL;
    }
    em_link_t *l = open_queue(cfg, err, errlen);
    if (!l) {
        rte_eal_cleanup();
        return NULL;
    }
    eal_refs = 1;
    snprintf(eal_prefix, sizeof eal_prefix, "%s", cfg->file_prefix);
    return l;
}

void em_link_bulkq_stats(const em_link_t *l, em_bulkq_stats_t *out)
{
    *out = ((const struct bulkq_link *)l)->st;
}
