/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file share.c
 * Port sharing (dpdk_internal.h): the owner publishes its port in the
 * process's table, a later user of the same port (another ethertype)
 * finds it there and becomes a sharer; whoever polls the port passes each frame of another
 * user's ethertype on to that user's ring.
 */
#include "link/dpdk/dpdk_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_errno.h>
#include <rte_lcore.h>

int em_dpdk_pass_on(struct port_share *sh, struct dpdk_link *d, struct rte_mbuf *mb)
{
    uint16_t key = em_dpdk_frame_key(mb);
    for (int u = 0; u < SHARE_USERS; u++) {
        if (sh->user[u].ethertype_be == key && sh->user[u].ring) {
            if (rte_ring_enqueue(sh->user[u].ring, mb) == 0)
                return 1;
            d->st.rx_share_full++; /* its ring is full: lost, like a full rx queue */
            rte_pktmbuf_free(mb);
            return 1;
        }
    }
    return 0;
}

/* The ports this process runs, by port id: one table, since the DPDK link
 * exists once per process (libethermpi.so).  Static and never freed, so a
 * sharer that outlives its owner (against the rule: sharers close first)
 * reads stale but valid memory, and the generation tells it the table is
 * no longer its.  Same thread rule as EAL. */
static struct port_share shares[RTE_MAX_ETHPORTS];

/* is @p d's view of its port's table current? */
static int share_current(const struct dpdk_link *d)
{
    return d->share && d->share->magic == SHARE_MAGIC && d->share->gen == d->share_gen;
}

int em_dpdk_share_active(const struct dpdk_link *d)
{
    return share_current(d) && d->share->users > 0;
}

struct port_share *em_dpdk_share_find(uint16_t port)
{
    struct port_share *sh = port < RTE_MAX_ETHPORTS ? &shares[port] : NULL;
    return sh && sh->magic == SHARE_MAGIC ? sh : NULL;
}

/* The owner publishes its port (best effort: without the ring the port
 * simply cannot be shared). */
void em_dpdk_share_publish(struct dpdk_link *d)
{
    char rname[RTE_RING_NAMESIZE];
    if (d->port >= RTE_MAX_ETHPORTS)
        return;
    snprintf(rname, sizeof rname, "em_rx_p%u_%04x", d->port, rte_be_to_cpu_16(d->ethertype_be));
    d->ring = rte_ring_create(rname, 1024, (int)rte_socket_id(), 0);
    if (!d->ring)
        return;
    struct port_share *sh = &shares[d->port];
    uint32_t gen = sh->gen + 1;
    memset(sh, 0, sizeof *sh);
    sh->gen = gen;
    sh->port = d->port;
    sh->mtu = d->link.mtu;
    memcpy(sh->mac, d->mac.addr_bytes, 6);
    sh->user[0].ethertype_be = d->ethertype_be;
    sh->user[0].ring = d->ring;
    sh->magic = SHARE_MAGIC;
    d->share = sh;
    d->share_gen = gen;
}

void em_dpdk_share_unpublish(struct dpdk_link *d)
{
    if (!d->share)
        return;
    rte_ring_free(d->ring);
    if (share_current(d)) {
        d->share->magic = 0;
        d->share->users = 0;
    }
    d->share = NULL;
}

/* a free entry of @p sh for ethertype @p et, or -1 with a sentence */
static int share_slot(const struct port_share *sh, uint16_t et, char *err, size_t errlen)
{
    int slot = -1;
    for (int u = 0; u < SHARE_USERS; u++) {
        if (sh->user[u].ethertype_be == et) {
            snprintf(err, errlen,
                     "the DPDK port is already used in this process for ethertype "
                     "0x%04x (one user per ethertype)",
                     rte_be_to_cpu_16(et));
            return -1;
        }
        if (slot < 0 && sh->user[u].ethertype_be == 0)
            slot = u;
    }
    if (slot < 0)
        snprintf(err, errlen, "the DPDK port already has %d users in this process", SHARE_USERS);
    return slot;
}

em_link_t *em_dpdk_share_open(const em_dpdk_cfg_t *cfg, uint16_t port, struct port_share *sh,
                              char *err, size_t errlen)
{
    uint16_t et = em_dpdk_demux_key(cfg);
    int slot = share_slot(sh, et, err, errlen);
    if (slot < 0)
        return NULL;
    struct dpdk_link *d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    char name[RTE_RING_NAMESIZE];
    snprintf(name, sizeof name, "em_rx_p%u_%04x", port, rte_be_to_cpu_16(et));
    d->ring = rte_ring_lookup(name); /* a previous sharer's, still here */
    if (!d->ring)
        d->ring = rte_ring_create(name, 1024, (int)rte_socket_id(), 0);
    /* our own mbufs for sending (never freed: the PMD may hold some after
     * we close; they go with EAL) */
    snprintf(name, sizeof name, "em_pool_p%u_%04x", port, rte_be_to_cpu_16(et));
    d->pool = rte_mempool_lookup(name);
    if (!d->pool)
        d->pool = rte_pktmbuf_pool_create(
            name, 2047, 256, RTE_ALIGN(sizeof(em_pkt_t), RTE_MBUF_PRIV_ALIGN),
            (uint16_t)(sh->mtu + RTE_ETHER_HDR_LEN + RTE_PKTMBUF_HEADROOM), (int)rte_socket_id());
    d->scratch = malloc((size_t)EM_DPDK_BURST * (sh->mtu + RTE_ETHER_HDR_LEN));
    if (!d->ring || !d->pool || !d->scratch) {
        snprintf(err, errlen, "cannot share the DPDK port: no memory for a ring or mbufs (%s)",
                 rte_strerror(rte_errno));
        free(d->scratch);
        free(d);
        return NULL;
    }
    d->port = port;
    d->guard.lock_fd = -1;
    d->sharer = 1;
    d->share = sh;
    d->share_gen = sh->gen;
    d->share_slot = slot;
    memcpy(d->mac.addr_bytes, sh->mac, 6);
    em_dpdk_link_init(d, cfg, cfg->mtu && cfg->mtu < sh->mtu ? cfg->mtu : sh->mtu, 0);
    if (em_dpdk_udp_setup(d, cfg, cfg->vdev, 0, err, errlen) != 0) {
        free(d->scratch);
        free(d);
        return NULL;
    }
    sh->user[slot].ring = d->ring;
    sh->user[slot].ethertype_be = et;
    sh->users++;
    return &d->link;
}

void em_dpdk_share_close(struct dpdk_link *d)
{
    struct port_share *sh = d->share;
    if (share_current(d)) { /* not a later owner's table */
        sh->user[d->share_slot].ethertype_be = 0;
        sh->user[d->share_slot].ring = NULL;
        sh->users--;
    }
    void *mb;
    while (rte_ring_dequeue(d->ring, &mb) == 0)
        rte_pktmbuf_free(mb);
    free(d->peers);
    em_addr_map_free(&d->bysrc);
    em_dpdk_udp_free(d);
    free(d->scratch);
    free(d);
    em_dpdk_eal_release();
}

/* The sharing table's key (its field is named for L2): the ethertype, or
 * in udp framing the UDP port (ours are 29717 and 29718, no ethertype in
 * use has these values) */
uint16_t em_dpdk_demux_key(const em_dpdk_cfg_t *cfg)
{
    uint16_t et = cfg->ethertype ? cfg->ethertype : EM_ETHERTYPE;
    if (cfg->framing != EM_DPDK_FRAMING_UDP)
        return rte_cpu_to_be_16(et);
    return rte_cpu_to_be_16(cfg->udp_port ? cfg->udp_port : EM_UDP_PORT);
}

uint16_t em_dpdk_frame_key(const struct rte_mbuf *mb)
{
    if (mb->data_len < RTE_ETHER_HDR_LEN)
        return 0;
    const uint8_t *f = rte_pktmbuf_mtod(mb, const uint8_t *);
    uint16_t et;
    memcpy(&et, f + 12, 2);
    if (et != rte_cpu_to_be_16(EM_ETHERTYPE_IPV4) || mb->data_len < EM_IPUDP_HDR_LEN ||
        f[14] != 0x45 || f[23] != EM_IPPROTO_UDP)
        return et;
    uint16_t port;
    memcpy(&port, f + 36, 2);
    return port;
}
