/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file port.c
 * Opening a port, in the steps of em_link_dpdk_open_port: pick the port,
 * claim it (af_xdp), check the device, size the buffers, choose the MTU,
 * create the pools, configure the queues, start it and wait for the link,
 * then finish the link.  And closing it again, in the order the PMDs need.
 */
#include "link/dpdk/dpdk_internal.h"

#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_bus.h>
#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf_pool_ops.h>

/* Ports closed while others are still open are only stopped: their close
 * waits for the last one (the order the af_xdp and NIC PMDs were tested
 * with).  memif ports are never stopped or closed at all (em_dpdk_port_close). */
static struct {
    uint16_t port;
    em_xdp_guard_t guard;
    struct rte_mempool *pool; /* freed after the close (the rx ring holds its mbufs) */
    struct rte_mempool *ext_pool;
} stopped[EM_DPDK_MAX_PORTS];
static unsigned nstopped;

void em_dpdk_port_close(em_link_t *l)
{
    struct dpdk_link *d = (struct dpdk_link *)l;
    if (d->sharer) {
        em_dpdk_share_close(d);
        return;
    }
    em_dpdk_share_unpublish(d); /* nobody may find the port any more */
    if (d->memif) {
        /* A memif port is left running until the process exits.  Its stop
         * runs memif_disconnect in this thread while EAL's interrupt
         * thread may run the same function for the peer's disconnect (the
         * peer finalizing at the same moment): DPDK 22.11 then frees the
         * rings twice ("EAL: Error: Invalid memory"), and the process
         * crashed in the interrupt thread or hung in MPI_Finalize, a few
         * runs in a hundred.  Untouched, only the interrupt thread ever
         * disconnects it, and process exit releases the rest. */
        em_dpdk_eal_keep_memif();
    } else if (nstopped < EM_DPDK_MAX_PORTS) {
        rte_eth_dev_stop(d->port);
        stopped[nstopped].port = d->port;
        stopped[nstopped].guard = d->guard;
        stopped[nstopped].pool = d->pool;
        stopped[nstopped].ext_pool = d->ext_pool;
        nstopped++;
    } else {
        rte_eth_dev_stop(d->port);
        rte_eth_dev_close(d->port);
        em_xdp_guard_release(&d->guard);
        rte_mempool_free(d->pool);
        rte_mempool_free(d->ext_pool);
    }
    free(d->peers);
    em_addr_map_free(&d->bysrc);
    em_dpdk_udp_free(d);
    free(d->scratch);
    free(d);
    if (em_dpdk_eal_last_port()) {
        for (unsigned i = 0; i < nstopped; i++) {
            rte_eth_dev_close(stopped[i].port); /* af_xdp: detaches its XDP program */
            em_xdp_guard_release(&stopped[i].guard);
            rte_mempool_free(stopped[i].pool);
            rte_mempool_free(stopped[i].ext_pool);
        }
        nstopped = 0;
    }
    em_dpdk_eal_release();
}

/** What the steps of an open learn and hand on. */
struct port_setup {
    const em_dpdk_cfg_t *cfg;
    char item[1024]; /* this port's devargs ("": a port of the EAL arguments) */
    uint16_t port;
    struct rte_eth_dev_info info;
    int dma_dev;          /* on a hardware bus: DMA, hugepages, no zero-copy send */
    int af_xdp;           /* page-sized buffers (size_buffers) */
    uint16_t priv, room;  /* mbuf private area and data room */
    uint32_t lim;         /* the largest MTU the buffers hold */
    uint32_t want;        /* the MTU */
    uint32_t memif_bsize; /* memif: the ring buffer size that bounds the MTU (0: none) */
    uint32_t kmtu;        /* af_xdp: the kernel interface's MTU (0: unknown) */
    uint32_t nb;          /* mbufs in the pool */
    int gather;           /* zero-copy send */
    uint16_t nq;          /* queue pairs: ours and the caller's extra ones */
    int extra_called;     /* extra.rx_pool was called (undo on failure) */
    struct rte_eth_conf conf;
    uint32_t waited; /* ms spent starting the port */
    char *err;
    size_t errlen;
};

/** MTU of the kernel interface named by "iface=" in @p vdev (0: unknown). */
static uint32_t kernel_mtu(const char *vdev)
{
    char name[IF_NAMESIZE];
    unsigned q;
    return em_xdp_devargs_iface(vdev, name, sizeof name, &q) ? em_if_mtu(name) : 0;
}

/* The port: by device name ("net_memif1" of "net_memif1,role=..."), or
 * the index-th port EAL found (a NIC given in the EAL arguments).
 * 0: found; 1: no more ports (not an error); -1: a sentence in err. */
static int pick_port(struct port_setup *ps, unsigned index)
{
    ps->port = RTE_MAX_ETHPORTS;
    if (ps->item[0]) {
        char name[64];
        size_t n = strcspn(ps->item, ",");
        snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name ? n : sizeof name - 1), ps->item);
        if (rte_eth_dev_get_port_by_name(name, &ps->port) != 0)
            ps->port = RTE_MAX_ETHPORTS;
    } else {
        unsigned k = 0;
        uint16_t p;
        RTE_ETH_FOREACH_DEV(p)
        {
            if (k++ == index) {
                ps->port = p;
                break;
            }
        }
        if (ps->port == RTE_MAX_ETHPORTS && index > 0)
            return 1;
    }
    if (ps->port == RTE_MAX_ETHPORTS) {
        snprintf(ps->err, ps->errlen,
                 "DPDK found no usable port%s%s (check the device/interface "
                 "name, that the interface exists in this network namespace, and that the "
                 "PMD is installed)",
                 ps->item[0] ? " for " : "", ps->item);
        return -1;
    }
    return 0;
}

/* The device: its limits, and whether it reads our buffers by DMA.  A
 * device on a hardware bus (pci, auxiliary, ...: not "vdev") does.  That
 * needs hugepage-backed memory (--no-huge memory has no IOVA a device can
 * use), and rules out zero-copy send: the user buffers it would hand the
 * NIC are not DMA-mapped (rte_extmem_register + rte_dev_dma_map is not
 * built).  The vdev PMDs (memif, af_xdp, ring, pcap) touch mbufs with the
 * CPU. */
static int check_device(struct port_setup *ps)
{
    int rc = rte_eth_dev_info_get(ps->port, &ps->info);
    if (rc != 0) {
        snprintf(ps->err, ps->errlen, "rte_eth_dev_info_get: %s", rte_strerror(-rc));
        return -1;
    }
    const char *bus = ps->info.device ? rte_bus_name(rte_dev_bus(ps->info.device)) : NULL;
    ps->dma_dev = bus && strcmp(bus, "vdev") != 0;
    if (ps->dma_dev && !rte_eal_has_hugepages()) {
        snprintf(ps->err, ps->errlen,
                 "%s (%s bus) needs hugepages, and EAL runs without them "
                 "(--no-huge, or fewer than 128 free 2 MB pages at start): reserve some "
                 "(echo 512 > /proc/sys/vm/nr_hugepages; mount -t hugetlbfs nodev "
                 "/dev/hugepages) or pass --in-memory -m 512 in btl_dpdk_eal_args",
                 ps->info.driver_name ? ps->info.driver_name : "the device", bus);
        return -1;
    }
    return 0;
}

/* af_xdp: the PMD hands our mempool to the kernel as its UMEM, one element
 * per UMEM chunk, and a chunk is at most a page.  So the element (object
 * header + mbuf + our private area + data room) is made as large as fits
 * a page, and a received frame must also leave the kernel's XDP headroom
 * free in it: at 4 KiB pages that is a 3402-byte MTU.  (With DPDK's default
 * 2 KiB room the kernel could place only ~1.8 KB frames, and anything
 * larger was dropped silently.)  The pool's objects must tile the UMEM
 * exactly (af_xdp_pool, below).  Other PMDs may carry a jumbo frame in one
 * buffer. */
static void size_buffers(struct port_setup *ps)
{
    ps->af_xdp = ps->info.driver_name && strstr(ps->info.driver_name, "af_xdp") != NULL;
    ps->priv = (uint16_t)RTE_ALIGN(sizeof(em_pkt_t), RTE_MBUF_PRIV_ALIGN);
    ps->room = (uint16_t)(9216 + RTE_PKTMBUF_HEADROOM);
    uint32_t xdp_headroom = 0;
    if (ps->af_xdp) {
        /* The data room of the element one cache line short of a page
         * (what DPDK's default mempool layout allowed; the MTU stays the
         * one the clusters and docs give); the element itself is padded
         * to the page in af_xdp_pool. */
        long page = sysconf(_SC_PAGESIZE);
        size_t total = (page >= 4096 ? (size_t)page : 4096u) - RTE_CACHE_LINE_SIZE;
        size_t elt = total - RTE_CACHE_LINE_ROUNDUP(sizeof(struct rte_mempool_objhdr));
        uint16_t room = (uint16_t)(elt - sizeof(struct rte_mbuf) - ps->priv);
        ps->room = (uint16_t)(room -
                              (sizeof(struct rte_mbuf) + ps->priv + room) % RTE_CACHE_LINE_SIZE);
        xdp_headroom = 256; /* XDP_PACKET_HEADROOM */
    }
    ps->lim = (uint32_t)ps->room - RTE_PKTMBUF_HEADROOM - xdp_headroom - RTE_ETHER_HDR_LEN;
}

/* The MTU: what was asked for (0: up to 9000), within the buffers, the
 * device, a memif ring buffer and an af_xdp kernel interface. */
static void negotiate_mtu(struct port_setup *ps, struct dpdk_link *d)
{
    uint32_t want = ps->cfg->mtu ? ps->cfg->mtu : 9000;
    if (want > ps->lim)
        want = ps->lim;
    if (ps->info.max_mtu && want > ps->info.max_mtu)
        want = ps->info.max_mtu;
    /* memif reports 1518-byte frames, but a ring buffer holds "bsize"
     * bytes (devarg, default 2048) and the PMD never looks at the MTU: with
     * bsize=9216 a 9000-byte frame travels in one descriptor.  (Frames
     * larger than bsize would be chained over descriptors, a path that
     * crashed DPDK 22.11's memif rx here, so the limit is bsize.)  Fewer,
     * larger frames: several times the bandwidth of 1500-byte ones
     * (docs/design.md, memif and bsize). */
    d->memif = ps->info.driver_name && strstr(ps->info.driver_name, "memif") != NULL;
    ps->memif_bsize = 0;
    char bsize[16];
    if (d->memif && em_dpdk_devarg(ps->item, "bsize", bsize, sizeof bsize))
        ps->memif_bsize = (uint32_t)strtoul(bsize, NULL, 10);
    if (ps->memif_bsize > 1518) {
        if (want > ps->memif_bsize - RTE_ETHER_HDR_LEN)
            want = ps->memif_bsize - RTE_ETHER_HDR_LEN;
    } else if (ps->info.max_rx_pktlen > RTE_ETHER_HDR_LEN + 4 &&
               want > ps->info.max_rx_pktlen - RTE_ETHER_HDR_LEN - 4) {
        want = ps->info.max_rx_pktlen - RTE_ETHER_HDR_LEN -
               4; /* memif: 1518-byte frames incl. CRC */
        ps->memif_bsize = 0;
    }
    /* af_xdp rides a kernel interface: use its MTU, never change it (the
     * peer's end would not follow) */
    ps->kmtu = ps->af_xdp ? kernel_mtu(ps->item) : 0;
    if (ps->kmtu && want > ps->kmtu)
        want = ps->kmtu;
    ps->want = want;
}

/* Room for the caller's extra queue pairs (em_dpdk_extra_queues_t). */
static int check_extra_queues(struct port_setup *ps)
{
    const em_dpdk_extra_queues_t *x = &ps->cfg->extra;
    ps->nq = (uint16_t)(1u + x->n);
    if (x->n && !x->rx_pool) {
        snprintf(ps->err, ps->errlen, "extra DPDK queues need an rx_pool callback");
        return -1;
    }
    if (1u + x->n > ps->info.max_rx_queues || 1u + x->n > ps->info.max_tx_queues) {
        snprintf(ps->err, ps->errlen,
                 "%s cannot have %u queue pairs (1 + %u extra; it has %u rx, "
                 "%u tx)",
                 ps->info.driver_name, 1u + x->n, x->n, ps->info.max_rx_queues,
                 ps->info.max_tx_queues);
        return -1;
    }
    return 0;
}

/* af_xdp: the mbuf pool the PMD registers as the socket's UMEM.  DPDK
 * 22.11's PMD registers, from the first object's page on, "objects x
 * object size" bytes: it assumes the objects lie back to back.  DPDK's
 * default layout does not keep that promise for page-sized elements: it
 * pads an object to an odd number of cache lines (spreading objects over
 * memory channels), and it never lets an object cross a page (a 4 KiB one
 * without hugepages, 2 MiB with), so every object began a page of its own
 * and the objects near the pool's end lay beyond the registered UMEM (129
 * of 8191 without hugepages).  The kernel refuses a frame sent from such
 * an mbuf (XDP_STATISTICS tx_invalid_descs) while the PMD counts it as
 * sent: a silent loss.  A thread with an EAL lcore recycles a few hot
 * mbufs through its mempool cache and rarely reached them; the
 * application's threads have none (rte_lcore_id() is LCORE_ID_ANY), take
 * and return every mbuf through the pool's ring, cycle through all of
 * them, and lost ~3 % of their frames (mpi_threads: hundreds of
 * retransmission timeouts).  So the objects here are exactly one page
 * (no spreading; header + element = page), and tile the UMEM. */
static void umem_area_free(struct rte_mempool_memhdr *mh, void *opaque)
{
    (void)mh;
    rte_memzone_free(opaque);
}

static struct rte_mempool *af_xdp_pool(const char *name, unsigned n, uint16_t priv, uint16_t room)
{
    long page = sysconf(_SC_PAGESIZE);
    size_t pg = page >= 4096 ? (size_t)page : 4096u;
    unsigned hdr = RTE_CACHE_LINE_ROUNDUP(sizeof(struct rte_mempool_objhdr));
    unsigned elt = (unsigned)pg - hdr;
    if (sizeof(struct rte_mbuf) + priv + room > elt ||
        rte_mempool_calc_obj_size(elt, RTE_MEMPOOL_F_NO_SPREAD, NULL) != pg) {
        rte_errno = EINVAL; /* the layout below no longer holds: refuse, do not lose frames */
        return NULL;
    }
    struct rte_mempool *mp = rte_mempool_create_empty(
        name, n, elt, 256, sizeof(struct rte_pktmbuf_pool_private), (int)rte_socket_id(),
        RTE_MEMPOOL_F_NO_SPREAD);
    if (!mp)
        return NULL;
    struct rte_pktmbuf_pool_private pp = { .mbuf_data_room_size = room, .mbuf_priv_size = priv };
    int rc = rte_mempool_set_ops_byname(mp, rte_mbuf_best_mempool_ops(), NULL);
    if (rc == 0) {
        rte_pktmbuf_pool_init(mp, &pp);
        /* one page-aligned area of n pages: object i is page i */
        char mzname[RTE_MEMZONE_NAMESIZE];
        snprintf(mzname, sizeof mzname, "%.24s_umem", name);
        const struct rte_memzone *mz = rte_memzone_reserve_aligned(mzname, (size_t)n * pg,
                                                                   (int)rte_socket_id(), 0, pg);
        if (!mz)
            rc = -rte_errno;
        else if (rte_mempool_populate_iova(mp, mz->addr, mz->iova, mz->len, umem_area_free,
                                           (void *)(uintptr_t)mz) <= 0) {
            rte_memzone_free(mz);
            rc = -ENOMEM;
        } else if (mp->populated_size != n)
            rc = -ENOMEM;
    }
    if (rc != 0) {
        rte_mempool_free(mp);
        rte_errno = -rc;
        return NULL;
    }
    rte_mempool_obj_iter(mp, rte_pktmbuf_init, NULL);
    return mp;
}

struct umem_span {
    uintptr_t base, end;
    uint32_t size;
    unsigned outside;
};

static void count_outside(struct rte_mempool *mp, void *opaque, void *obj, unsigned idx)
{
    (void)idx;
    struct umem_span *u = opaque;
    uintptr_t o = (uintptr_t)obj - mp->header_size;
    if (o < u->base || o + u->size > u->end)
        u->outside++;
}

/* af_xdp: how many of the pool's objects lie outside the UMEM the PMD
 * registers for it (its rule: from the first memory chunk's page, objects
 * x object size bytes; af_xdp_pool makes that 0). */
static unsigned umem_outside(struct rte_mempool *mp)
{
    struct rte_mempool_memhdr *mh = STAILQ_FIRST(&mp->mem_list);
    if (!mh)
        return mp->size;
    uintptr_t a = (uintptr_t)mh->addr;
    struct umem_span u = { .size = rte_mempool_calc_obj_size(mp->elt_size, mp->flags, NULL) };
    u.base = a & ~((uintptr_t)sysconf(_SC_PAGESIZE) - 1);
    u.end = a + (uintptr_t)mp->populated_size * u.size;
    rte_mempool_obj_iter(mp, count_outside, &u);
    return u.outside;
}

/* The port's mbuf pool, and for zero-copy send the pool of data-less mbufs
 * that point at a caller's payload. */
static int create_pools(struct port_setup *ps, struct dpdk_link *d)
{
    char name[64];
    snprintf(name, sizeof name, "em_pool_%u", ps->port);
    ps->nb = ps->cfg->nb_mbufs ? ps->cfg->nb_mbufs : 8191;
    d->pool = ps->af_xdp ? af_xdp_pool(name, ps->nb, ps->priv, ps->room)
                         : rte_pktmbuf_pool_create(name, ps->nb, 256, ps->priv, ps->room,
                                                   (int)rte_socket_id());
    if (!d->pool) {
        snprintf(ps->err, ps->errlen,
                 "cannot create a pool of %u mbufs of %u bytes: %s (raise -m in the "
                 "EAL arguments)",
                 ps->nb, ps->room, rte_strerror(rte_errno));
        return -1;
    }
    unsigned out = ps->af_xdp ? umem_outside(d->pool) : 0;
    if (out) {
        snprintf(ps->err, ps->errlen,
                 "%u of the %u mbufs of the af_xdp pool lie outside the UMEM the PMD "
                 "registers (the pool's memory is not one run of page-sized objects); frames "
                 "sent from them would be lost: give EAL one contiguous memory area "
                 "(--no-huge -m 256, or enough free hugepages)",
                 out, ps->nb);
        return -1;
    }
    memset(&ps->conf, 0, sizeof ps->conf);
    ps->conf.rxmode.mtu = ps->memif_bsize ? 0 : ps->want; /* memif: its MTU is not ours (above) */
    /* zero-copy send: a PMD that takes chained mbufs gets the payload as an
     * external buffer pointing into the caller's memory (memif: yes; af_xdp
     * in DPDK 22.11: no, every frame is copied into the UMEM anyway) */
    ps->gather = !ps->cfg->no_gather && !ps->dma_dev &&
                 (ps->info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS);
    if (ps->gather) {
        char xname[64];
        snprintf(xname, sizeof xname, "em_ext_%u", ps->port);
        d->ext_pool = rte_pktmbuf_pool_create(
            xname, ps->nb, 256,
            RTE_ALIGN(sizeof(struct rte_mbuf_ext_shared_info), RTE_MBUF_PRIV_ALIGN), 0,
            (int)rte_socket_id());
        if (d->ext_pool)
            ps->conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
        else
            ps->gather = 0; /* copy instead: slower, still correct */
    }
    /* udp framing: the NIC fills in the checksums where it can (memif and
     * af_xdp cannot: udp.c computes them) */
    if (ps->cfg->framing == EM_DPDK_FRAMING_UDP)
        ps->conf.txmode.offloads |= ps->info.tx_offload_capa &
                                    (RTE_ETH_TX_OFFLOAD_IPV4_CKSUM | RTE_ETH_TX_OFFLOAD_UDP_CKSUM);
    return 0;
}

/* The caller's pool for extra queue @p q (NULL: a sentence in err). */
static struct rte_mempool *extra_rx_pool(struct port_setup *ps, uint16_t q)
{
    const em_dpdk_extra_queues_t *x = &ps->cfg->extra;
    em_dpdk_queue_info_t qi = {
        .port = ps->port,
        .queue = q,
        .priv_size = ps->priv,
        .data_room = ps->room,
        .socket = rte_eth_dev_socket_id(ps->port),
        .driver = ps->info.driver_name,
    };
    ps->extra_called = 1;
    struct rte_mempool *mp = x->rx_pool(x->ctx, &qi, ps->err, ps->errlen);
    if (!mp && !ps->err[0])
        snprintf(ps->err, ps->errlen, "no mempool for extra queue %u of %s", q,
                 ps->info.driver_name);
    return mp;
}

/* Configure the port and set up its queue pairs. */
static int configure_queues(struct port_setup *ps, struct dpdk_link *d)
{
    uint16_t port = ps->port, nq = ps->nq;
    uint16_t nd = ps->cfg->nb_desc ? ps->cfg->nb_desc : 1024;
    int rc;
    if ((rc = rte_eth_dev_configure(port, nq, nq, &ps->conf)) != 0) {
        /* some PMDs refuse a large MTU at configure time: retry with theirs */
        ps->conf.rxmode.mtu = 0;
        if ((rc = rte_eth_dev_configure(port, nq, nq, &ps->conf)) != 0) {
            snprintf(ps->err, ps->errlen, "rte_eth_dev_configure(%s): %s", ps->info.driver_name,
                     rte_strerror(-rc));
            return -1;
        }
    }
    rte_eth_dev_adjust_nb_rx_tx_desc(port, &nd, &nd);
    for (uint16_t q = 0; q < nq; q++) {
        struct rte_mempool *rp = q ? extra_rx_pool(ps, q) : d->pool;
        if (!rp)
            return -1;
        if ((rc = rte_eth_rx_queue_setup(port, q, nd, rte_eth_dev_socket_id(port), NULL, rp)) !=
                0 ||
            (rc = rte_eth_tx_queue_setup(port, q, nd, rte_eth_dev_socket_id(port), NULL)) != 0) {
            char *err = ps->err;
            size_t errlen = ps->errlen;
            snprintf(err, errlen, "queue %u setup on %s: %s", q, ps->info.driver_name,
                     rte_strerror(-rc));
            size_t used = strlen(err);
            /* DPDK says only EINVAL; an MTU beyond AF_XDP's is the usual cause */
            char ifname[IF_NAMESIZE];
            unsigned queue;
            if (ps->af_xdp && em_xdp_devargs_iface(ps->item, ifname, sizeof ifname, &queue) &&
                used + 3 < errlen)
                if (em_xdp_explain_mtu(ifname, ps->lim, err + used + 2, errlen - used - 2))
                    memcpy(err + used, ": ", 2);
            return -1;
        }
    }
    return 0;
}

/* Start the port.  A memif client connects once, in dev_start, and fails
 * if the server end has not created its socket yet (which rank starts
 * first is a race): retry until the link wait runs out.  Then the MTU
 * (where the port's own is ours to set) and the MAC address. */
static int start_port(struct port_setup *ps, struct dpdk_link *d)
{
    uint32_t wait = ps->cfg->link_wait_ms ? ps->cfg->link_wait_ms : 10000;
    int rc;
    ps->waited = 0;
    while ((rc = rte_eth_dev_start(ps->port)) != 0 && ps->waited < wait) {
        rte_delay_ms(20);
        ps->waited += 20;
    }
    if (rc != 0) {
        snprintf(ps->err, ps->errlen,
                 "cannot start %s: %s (for a memif client: no server end "
                 "appeared within %u ms)",
                 ps->info.driver_name, rte_strerror(rc < 0 ? -rc : rc), wait);
        return -1;
    }
    uint16_t mtu = 0;
    if (!ps->kmtu && !ps->memif_bsize && rte_eth_dev_set_mtu(ps->port, (uint16_t)ps->want) != 0 &&
        rte_eth_dev_get_mtu(ps->port, &mtu) == 0 && mtu < ps->want)
        ps->want = mtu;
    rte_eth_macaddr_get(ps->port, &d->mac);
    return 0;
}

/* Wait for link up.  The memif server end listens from probe time (inside
 * rte_eal_init) but refuses the handshake until its own dev_start ("device
 * disabled"), and a refused client never tries again: so a client end
 * whose link stays down restarts its port every 500 ms to reconnect.  On
 * failure the port is left stopped. */
static int wait_link_up(struct port_setup *ps)
{
    uint32_t wait = ps->cfg->link_wait_ms ? ps->cfg->link_wait_ms : 10000;
    uint32_t waited = ps->waited;
    int memif_client = strstr(ps->item, "net_memif") && strstr(ps->item, "role=client");
    struct rte_eth_link lk;
    for (uint32_t t = waited;; t += 10) {
        memset(&lk, 0, sizeof lk);
        rte_eth_link_get_nowait(ps->port, &lk);
        if (lk.link_status == RTE_ETH_LINK_UP)
            return 0;
        if (memif_client && t > waited && (t - waited) % 500 == 0) {
            rte_eth_dev_stop(ps->port);
            for (uint32_t r = 0; rte_eth_dev_start(ps->port) != 0 && r < 50; r++)
                rte_delay_ms(10);
        }
        if (t >= wait) {
            snprintf(ps->err, ps->errlen,
                     "link of %s is still down after %u ms (for a memif "
                     "cable, is the other side running?)",
                     ps->info.driver_name, wait);
            rte_eth_dev_stop(ps->port);
            return -1;
        }
        rte_delay_ms(10);
    }
}

/* An owner's open after its port was picked: every step, or undo them all. */
static em_link_t *open_owner(struct port_setup *ps)
{
    struct dpdk_link *d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(ps->err, ps->errlen, "out of memory");
        em_dpdk_eal_release();
        return NULL;
    }
    d->port = ps->port;
    /* af_xdp: own the interface queue, and clear what a crashed owner left
     * (its XDP program) before the PMD attaches ours at queue setup */
    d->guard.lock_fd = -1;
    char ifname[IF_NAMESIZE];
    unsigned queue;
    if (em_xdp_devargs_iface(ps->item, ifname, sizeof ifname, &queue) &&
        em_xdp_guard_acquire(ifname, queue, &d->guard, ps->err, ps->errlen) != 0) {
        free(d);
        em_dpdk_eal_release();
        return NULL;
    }
    if (check_device(ps) != 0 || check_extra_queues(ps) != 0)
        goto fail;
    size_buffers(ps);
    negotiate_mtu(ps, d);
    if (create_pools(ps, d) != 0 || configure_queues(ps, d) != 0 || start_port(ps, d) != 0 ||
        wait_link_up(ps) != 0)
        goto fail;
    d->scratch = malloc((size_t)EM_DPDK_BURST * (ps->want + RTE_ETHER_HDR_LEN));
    if (!d->scratch) {
        snprintf(ps->err, ps->errlen, "out of memory");
        rte_eth_dev_stop(ps->port);
        goto fail;
    }
    em_dpdk_link_init(d, ps->cfg, ps->want, ps->gather ? EM_LINK_F_GATHER : 0);
    d->af_xdp = ps->af_xdp;
    if (em_dpdk_udp_setup(d, ps->cfg, ps->item, ps->conf.txmode.offloads, ps->err, ps->errlen) !=
        0) {
        rte_eth_dev_stop(ps->port);
        goto fail;
    }
    em_dpdk_share_publish(d);
    return &d->link;

fail:
    rte_eth_dev_close(ps->port);
    em_xdp_guard_release(&d->guard);
    if (ps->extra_called && ps->cfg->extra.undo)
        ps->cfg->extra.undo(ps->cfg->extra.ctx);
    if (d->pool)
        rte_mempool_free(d->pool);
    rte_mempool_free(d->ext_pool);
    free(d->scratch);
    free(d);
    em_dpdk_eal_release();
    return NULL;
}

em_link_t *em_link_dpdk_open(const em_dpdk_cfg_t *cfg, char *err, size_t errlen)
{
    em_link_t *l = em_link_dpdk_open_port(cfg, 0, err, errlen);
    if (!l && !err[0])
        snprintf(err, errlen, "no DPDK device given");
    return l;
}

em_link_t *em_link_dpdk_open_port(const em_dpdk_cfg_t *cfg, unsigned index, char *err,
                                  size_t errlen)
{
    struct port_setup ps = { .cfg = cfg, .err = err, .errlen = errlen };
    err[0] = 0;
    if (cfg->vdev && *cfg->vdev &&
        em_dpdk_vdev_item(cfg->vdev, index, ps.item, sizeof ps.item) != 0)
        return NULL; /* no such device: not an error */
    if (index >= EM_DPDK_MAX_PORTS)
        return NULL;
    if (em_dpdk_eal_start(cfg, err, errlen) != 0)
        return NULL;
    em_dpdk_eal_hold(); /* from here on, em_dpdk_eal_release() on failure */
    int rc = pick_port(&ps, index);
    if (rc != 0) {
        em_dpdk_eal_release();
        return NULL; /* rc 1: no more ports, not an error */
    }
    /* a port another user of this process already runs: share it */
    struct port_share *sh = em_dpdk_share_find(ps.port);
    if (sh) {
        em_link_t *l = em_dpdk_share_open(cfg, ps.port, sh, err, errlen);
        if (!l)
            em_dpdk_eal_release();
        return l;
    }
    return open_owner(&ps);
}

struct rte_mempool *em_link_dpdk_queue_pool(const em_dpdk_queue_info_t *qi, const char *name,
                                            unsigned n, char *err, size_t errlen)
{
    struct rte_mempool *mp = rte_pktmbuf_pool_create_by_ops(
        name, n, 0, qi->priv_size, qi->data_room, qi->socket, "ring_sp_sc");
    if (!mp)
        snprintf(err, errlen,
                 "cannot create the mempool %s of %u mbufs for queue %u of %s: %s "
                 "(more hugepages?)",
                 name, n, qi->queue, qi->driver, rte_strerror(rte_errno));
    return mp;
}

void em_link_dpdk_pool_free(struct rte_mempool *mp) { rte_mempool_free(mp); }

struct pool_reset {
    void **objs;
    unsigned n, cap;
};

static void reset_one(struct rte_mempool *mp, void *opaque, void *obj, unsigned idx)
{
    struct pool_reset *r = opaque;
    rte_pktmbuf_init(mp, NULL, obj, idx); /* refcount, segments, lengths as new */
    if (r->n < r->cap)
        r->objs[r->n++] = obj;
}

/* Every object of a ring-backed pool back into its (emptied) ring.  The
 * ring is reset first, so a user killed inside an enqueue or dequeue
 * leaves nothing behind. */
int em_link_dpdk_pool_reset(struct rte_mempool *mp)
{
    struct rte_ring *ring = mp ? mp->pool_data : NULL;
    if (!ring)
        return -1;
    struct pool_reset r = { .cap = mp->size };
    r.objs = malloc(sizeof *r.objs * mp->size);
    if (!r.objs)
        return -1;
    rte_ring_reset(ring);
    rte_mempool_obj_iter(mp, reset_one, &r);
    unsigned put = rte_ring_enqueue_bulk(ring, r.objs, r.n, NULL);
    free(r.objs);
    return put == r.n ? 0 : -1;
}
