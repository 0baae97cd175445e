/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file link_dpdk.c
 * DPDK link (see link_dpdk.h).  Each mbuf carries its em_pkt_t in the mbuf
 * private area, so lending frames to the engine allocates nothing.  The
 * protocol frame starts right after the 14-byte Ethernet header, which
 * tx_burst fills in from the peer table.
 */
#include "link/link_dpdk.h"
#include "link/link_util.h"
#include "link/xdp_guard.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include <rte_bus.h>
#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_memzone.h>
#include <rte_ring.h>

#define ETH_HDR 14u
#define BURST 32
#define MAX_ARGS 48

struct dpdk_link {
    em_link_t link;                 /* must be first */
    uint16_t port;
    struct rte_mempool *pool;
    struct rte_mempool *ext_pool;   /* data-less mbufs that point at a caller's payload */
    struct rte_ether_addr mac;
    struct rte_ether_addr *peers;
    uint32_t npeers;
    em_addr_map_t bysrc;            /* source MAC -> peer (rx_peer) */
    uint64_t rng;
    double rx_loss;
    uint16_t ethertype_be;          /* our ethertype, network order */
    uint8_t *scratch;               /* BURST linear copies of multi-segment frames */
    em_xdp_guard_t guard;           /* af_xdp: this process owns the interface queue */
    struct port_share *share;       /* the port's sharing table (NULL: not published) */
    const struct rte_memzone *share_mz;  /* owner: the memzone holding it */
    struct rte_ring *ring;          /* sharer: frames of our ethertype the others passed on */
    int sharer;                     /* 1: not the port's owner */
    int memif;                      /* a memif port: never stopped or closed (dpdk_close) */
    uint16_t rdv_slots;             /* own-queue layout (0: one queue) */
    struct rte_mempool *rdv_pools[2 * 15];  /* per slot: rx pool, tx pool */
    int share_slot;                 /* sharer: our entry in share->user[] */
    em_dpdk_stats_t st;
};

/*
 * Port sharing (one DPDK port, several users in one process, told apart
 * by ethertype: the dpdk BTL's protocol 0x88B5 and an application's
 * em_bcast channel 0x88B6).  The user that opened the port (the owner)
 * publishes it in a memzone; a later open of the same device finds it
 * there, even from another copy of this file (the BTL's .so and the
 * application each link their own; DPDK's state is one per process), and
 * becomes a sharer: own mempool for sending, the owner's tx queue, and a
 * ring for the frames of its ethertype.  Whoever polls the port hands
 * each frame of another user's ethertype to that user's ring.  All users
 * must run in one thread (MPI's single-threaded progress), and sharers
 * must close before the owner.
 */
#define SHARE_USERS 4
struct port_share {
    uint32_t magic;                 /* SHARE_MAGIC once filled in */
    uint16_t port;
    uint16_t users;                 /* registered users besides the owner */
    uint32_t mtu;
    uint8_t mac[6];
    struct {
        uint16_t ethertype_be;      /* 0: free */
        struct rte_ring *ring;
    } user[SHARE_USERS];
};
#define SHARE_MAGIC 0x454d5348u     /* "EMSH" */

static int eal_started;             /* EAL runs once per process */
static int eal_foreign;             /* EAL was started by another copy of this code (a sharer's) */
static int eal_ports;               /* ports open; EAL is cleaned up with the last */
static int eal_gone;                /* cleaned up: EAL cannot start again */
static char eal_vdevs[2048];        /* the device list EAL was started with */

static em_pkt_t *pkt_of(struct rte_mbuf *m) { return rte_mbuf_to_priv(m); }

static em_pkt_t *dpdk_tx_alloc(em_link_t *l)
{
    struct dpdk_link *d = (struct dpdk_link *)l;
    struct rte_mbuf *m = rte_pktmbuf_alloc(d->pool);
    if (!m)
        return NULL;
    em_pkt_t *p = pkt_of(m);
    p->data = rte_pktmbuf_mtod(m, uint8_t *) + ETH_HDR;
    p->len = 0;
    p->ext = NULL;
    p->ext_len = 0;
    p->priv = m;
    return p;
}

static void dpdk_tx_free(em_link_t *l, em_pkt_t *p) { rte_pktmbuf_free(p->priv); }

/* The payload's memory belongs to the protocol op (kept until the peer's
 * ACK, after the PMD has read it): nothing to free when DPDK is done. */
static void ext_done(void *addr, void *opaque) { (void)addr; (void)opaque; }

/* Chain a data-less mbuf pointing at the caller's payload behind the
 * header mbuf: the frame is built with no copy of the payload (seed 002's
 * zero-copy send; the PMD reads it from there).  0, or -1 when no such
 * mbuf is free (the caller then copies). */
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
            struct rte_ether_hdr *eh = rte_pktmbuf_mtod(mb, struct rte_ether_hdr *);
            if (p->peer < d->npeers)
                rte_ether_addr_copy(&d->peers[p->peer], &eh->dst_addr);
            else
                memset(&eh->dst_addr, 0xff, sizeof eh->dst_addr);  /* never happens: checked by set_peer */
            rte_ether_addr_copy(&d->mac, &eh->src_addr);
            eh->ether_type = d->ethertype_be;
            if (p->ext_len && attach_payload(d, mb, p->ext, p->ext_len) == 0) {
                mb->data_len = (uint16_t)(ETH_HDR + p->len);
                mb->pkt_len = mb->data_len + p->ext_len;
                d->st.tx_extbuf++;
            } else {
                if (p->ext_len)
                    em_link_pkt_flatten(p);   /* no ext mbuf free: copy after all */
                mb->data_len = (uint16_t)(ETH_HDR + p->len);
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

static uint64_t rnd(struct dpdk_link *d)
{
    d->rng ^= d->rng << 13;
    d->rng ^= d->rng >> 7;
    d->rng ^= d->rng << 17;
    return d->rng;
}

/* A frame of another user's ethertype goes to that user's ring (the
 * owner's ring is user[0] when a sharer polls).  1: taken. */
static int pass_on(struct port_share *sh, struct dpdk_link *d, struct rte_mbuf *mb)
{
    const struct rte_ether_hdr *eh = rte_pktmbuf_mtod(mb, const struct rte_ether_hdr *);
    for (int u = 0; u < SHARE_USERS; u++) {
        if (sh->user[u].ethertype_be == eh->ether_type && sh->user[u].ring) {
            if (rte_ring_enqueue(sh->user[u].ring, mb) == 0)
                return 1;
            d->st.rx_foreign++;     /* its ring is full: lost, like a full rx queue */
            rte_pktmbuf_free(mb);
            return 1;
        }
    }
    return 0;
}

static unsigned dpdk_rx_burst(em_link_t *l, em_pkt_t **pkts, unsigned max)
{
    struct dpdk_link *d = (struct dpdk_link *)l;
    struct rte_mbuf *m[BURST];
    if (max > BURST)
        max = BURST;
    uint16_t n = 0;
    struct port_share *sh = d->share;
    int shared = sh && sh->users > 0;
    if (shared && d->ring)          /* what the other users passed on to us */
        n = (uint16_t)rte_ring_dequeue_burst(d->ring, (void **)m, max, NULL);
    if (n < max)
        n = (uint16_t)(n + rte_eth_rx_burst(d->port, 0, m + n, (uint16_t)(max - n)));
    unsigned k = 0;
    for (uint16_t i = 0; i < n; i++) {
        struct rte_mbuf *mb = m[i];
        struct rte_ether_hdr *eh = rte_pktmbuf_mtod(mb, struct rte_ether_hdr *);
        if (mb->pkt_len >= ETH_HDR && eh->ether_type != d->ethertype_be && shared &&
            pass_on(sh, d, mb))
            continue;
        if (mb->pkt_len < ETH_HDR || eh->ether_type != d->ethertype_be ||
            mb->pkt_len - ETH_HDR > d->link.mtu) {
            d->st.rx_foreign++;
            rte_pktmbuf_free(mb);
            continue;
        }
        if (d->rx_loss > 0 && (double)(rnd(d) >> 11) / 9007199254740992.0 < d->rx_loss) {
            d->st.rx_dropped_loss++;
            rte_pktmbuf_free(mb);
            continue;
        }
        em_pkt_t *p = pkt_of(mb);
        p->priv = mb;
        p->len = mb->pkt_len - ETH_HDR;
        if (mb->nb_segs > 1) {
            /* chained mbufs (frame larger than one buffer): one linear copy */
            uint8_t *lin = d->scratch + (size_t)k * (d->link.mtu + ETH_HDR);
            const uint8_t *src = rte_pktmbuf_read(mb, 0, mb->pkt_len, lin);
            if (src != lin)
                memcpy(lin, src, mb->pkt_len);
            p->data = lin + ETH_HDR;
            d->st.rx_multiseg++;
        } else {
            p->data = (uint8_t *)eh + ETH_HDR;
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

static int dpdk_flush(em_link_t *l) { (void)l; return 0; }

static int dpdk_set_peer(em_link_t *l, uint16_t peer, const em_link_addr_t *a)
{
    struct dpdk_link *d = (struct dpdk_link *)l;
    if (a->len != 8)
        return -EINVAL;
    if (em_peer_table_reserve((void **)&d->peers, &d->npeers, sizeof *d->peers, peer) != 0)
        return -ENOMEM;
    em_addr_map_del(&d->bysrc, em_addr_key6(d->peers[peer].addr_bytes, 0), peer);
    memcpy(d->peers[peer].addr_bytes, a->bytes, 6);
    return em_addr_map_put(&d->bysrc, em_addr_key6(a->bytes, 0), peer) == 0 ? 0 : -ENOMEM;
}

/* the peer whose MAC (set_peer) is the frame's source: in direct mode one
 * process owns a port, so its MAC names it */
static uint16_t dpdk_rx_peer(em_link_t *l, const em_pkt_t *p)
{
    const struct dpdk_link *d = (const struct dpdk_link *)l;
    const struct rte_mbuf *mb = p->priv;
    if (!mb || mb->data_len < ETH_HDR)
        return EM_LINK_PEER_UNKNOWN;
    const struct rte_ether_hdr *eh = rte_pktmbuf_mtod(mb, const struct rte_ether_hdr *);
    return em_addr_map_get(&d->bysrc, em_addr_key6(eh->src_addr.addr_bytes, 0));
}

/** Remove @p dir and the plain files in it (EAL's runtime directory). */
static void remove_dir(const char *dir)
{
    DIR *dp = opendir(dir);
    struct dirent *e;
    char path[PATH_MAX + 256];
    if (!dp)
        return;
    while ((e = readdir(dp)))
        if (e->d_name[0] != '.') {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
    closedir(dp);
    rmdir(dir);
}

static void eal_release(void);

/* Ports closed while others are still open are only stopped: their close
 * waits for the last one.  This was first needed for two memif cables
 * (closing one port while the other still ran crashed EAL's interrupt
 * thread at MPI_Finalize); memif ports are now never stopped or closed at
 * all (dpdk_close), so this serves the other PMDs (af_xdp, NICs), kept as
 * the order they were tested with. */
static unsigned memif_left;         /* memif ports left running (dpdk_close) */
static struct {
    uint16_t port;
    em_xdp_guard_t guard;
    struct rte_mempool *pool;   /* freed after the close (the rx ring holds its mbufs) */
    struct rte_mempool *ext_pool;
} stopped[EM_DPDK_MAX_PORTS];
static unsigned nstopped;

static void share_close(struct dpdk_link *d);

static void dpdk_close(em_link_t *l)
{
    struct dpdk_link *d = (struct dpdk_link *)l;
    if (d->sharer) {
        share_close(d);
        return;
    }
    if (d->share) {                 /* unpublish: nobody may find the port any more */
        rte_ring_free(d->ring);
        d->share->magic = 0;
        rte_memzone_free(d->share_mz);
        d->share = NULL;
    }
    if (d->memif) {
        /* A memif port is left running until the process exits.  Its stop
         * runs memif_disconnect in this thread while EAL's interrupt
         * thread may run the same function for the peer's disconnect (the
         * peer finalizing at the same moment): DPDK 22.11 then frees the
         * rings twice ("EAL: Error: Invalid memory"), and the process
         * crashed in the interrupt thread or hung in MPI_Finalize, a few
         * runs in a hundred.  Untouched, only the interrupt thread ever
         * disconnects it, and process exit releases the rest. */
        memif_left++;
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
    free(d->scratch);
    free(d);
    if (eal_ports == 1) {
        for (unsigned i = 0; i < nstopped; i++) {
            rte_eth_dev_close(stopped[i].port);   /* af_xdp: detaches its XDP program */
            em_xdp_guard_release(&stopped[i].guard);
            rte_mempool_free(stopped[i].pool);
            rte_mempool_free(stopped[i].ext_pool);
        }
        nstopped = 0;
    }
    eal_release();
}

/* the last port closed: EAL goes too (no hugepage files are left: EAL
 * runs --in-memory or --no-huge --no-shconf), and so does the runtime
 * directory EAL creates (and never removes) under /var/run/dpdk */
static void eal_release(void)
{
    if (--eal_ports > 0 || eal_foreign)
        return;
    char rundir[PATH_MAX];
    snprintf(rundir, sizeof rundir, "%s", rte_eal_get_runtime_dir());
    /* with memif ports left running, EAL must stay: their interrupt
     * handlers still use its memory (cleanup detaches it) */
    if (!memif_left)
        rte_eal_cleanup();
    eal_gone = 1;
    remove_dir(rundir);
}

static const em_link_ops_t dpdk_ops = {
    .name = "dpdk",
    .tx_alloc = dpdk_tx_alloc, .tx_burst = dpdk_tx_burst, .tx_free = dpdk_tx_free,
    .rx_burst = dpdk_rx_burst, .rx_release = dpdk_rx_release, .flush = dpdk_flush,
    .set_peer = dpdk_set_peer, .close = dpdk_close, .rx_peer = dpdk_rx_peer,
};

/** "--lcores=0@(a,b,...)": EAL's main thread keeps the affinity it has now. */
static void lcores_arg(char *buf, size_t len)
{
    cpu_set_t set;
    size_t n = (size_t)snprintf(buf, len, "--lcores=0@(");
    int first = 1;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        for (int c = 0; c < CPU_SETSIZE && n + 8 < len; c++)
            if (CPU_ISSET(c, &set)) {
                n += (size_t)snprintf(buf + n, len - n, "%s%d", first ? "" : ",", c);
                first = 0;
            }
    }
    if (first)
        n += (size_t)snprintf(buf + n, len - n, "0");
    snprintf(buf + n, len - n, ")");
}

/** MTU of the kernel interface named by "iface=" in @p vdev (0: unknown). */
static uint32_t kernel_mtu(const char *vdev)
{
    char name[IF_NAMESIZE];
    unsigned q;
    return em_xdp_devargs_iface(vdev, name, sizeof name, &q) ? em_if_mtu(name) : 0;
}

static int vdev_item(const char *list, unsigned index, char *out, size_t len);

/*
 * Without EAL arguments we take hugepages when at least 128 are free.  Two
 * processes of a node (two ranks with em_bcast, a rank and a daemon) that
 * look at the same moment both see them free, and the second one's EAL
 * then fails for memory.  The look and the mapping (rte_eal_init with -m)
 * are therefore done under one machine-wide lock, so the next process sees
 * what the first took.  Best effort: a lock we cannot open or get within
 * 20 s is skipped (the lock file is opened read-only with O_NOFOLLOW:
 * any user may share it, none can redirect it).
 */
#define EAL_MEM_LOCK "/tmp/ethermpi-eal-memory.lock"

static int eal_mem_lock(void)
{
    int fd = open(EAL_MEM_LOCK, O_RDONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    for (int i = 0; i < 2000; i++) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0)
            return fd;
        if (errno != EWOULDBLOCK && errno != EINTR)
            break;
        nanosleep(&(struct timespec){ .tv_nsec = 10000000 }, NULL);
    }
    close(fd);
    return -1;
}

static int start_eal(const em_dpdk_cfg_t *cfg, char *err, size_t errlen)
{
    static char store[2048];
    static char lcores[512], prefix[128];
    char *argv[MAX_ARGS];
    int argc = 0;

    if (eal_started) {
        /* a further port of the device list EAL was started with */
        if (!eal_gone && 0 == strcmp(eal_vdevs, cfg->vdev ? cfg->vdev : ""))
            return 0;
        snprintf(err, errlen, "DPDK is already initialised in this process with other devices "
                 "(one ethermpi device list per process)");
        return -1;
    }
    argv[argc++] = "ethermpi";
    if (cfg->file_prefix && *cfg->file_prefix)
        snprintf(prefix, sizeof prefix, "--file-prefix=%s", cfg->file_prefix);
    else
        snprintf(prefix, sizeof prefix, "--file-prefix=em%ld", (long)getpid());
    argv[argc++] = prefix;
    lcores_arg(lcores, sizeof lcores);
    argv[argc++] = lcores;
    argv[argc++] = "--no-telemetry";
    argv[argc++] = "--log-level=*:error";
    const char *extra = cfg->eal_args;
    int mem_lock = -1;
    if (!extra || !*extra) {
        /* hugepages when there are some, else plain memory; either way no
         * files: --in-memory / --no-shconf leave nothing in /dev/hugepages
         * or /var/run/dpdk after a crash */
        mem_lock = eal_mem_lock();
        extra = em_hugepages_free() >= 128 ? "--in-memory -m 256" : "--no-huge --no-shconf -m 256";
    }
    snprintf(store, sizeof store, "%s", extra);
    for (char *tok = strtok(store, " "); tok && argc < MAX_ARGS - 3; tok = strtok(NULL, " "))
        argv[argc++] = tok;
    if (cfg->vdev && *cfg->vdev) {
        /* "dev0;dev1": one --vdev each, probed in this order */
        static char vargs[EM_DPDK_MAX_PORTS][1100];
        argv[argc++] = "--no-pci";
        char item[1024];
        for (unsigned nv = 0; nv < EM_DPDK_MAX_PORTS && argc < MAX_ARGS - 2 &&
             vdev_item(cfg->vdev, nv, item, sizeof item) == 0; nv++) {
            em_memif_remove_stale_socket(item);   /* an exited server's (ports stay open to the end) */
            snprintf(vargs[nv], sizeof vargs[nv], "--vdev=%s", item);
            argv[argc++] = vargs[nv];
        }
    }
    argv[argc] = NULL;
    /* EAL already up (no lcore before it): rte_eal_init would only print
     * "FATAL: already called initialization" and fail with EALREADY */
    int init_rc = rte_lcore_count() > 0 ? (rte_errno = EALREADY, -1) : rte_eal_init(argc, argv);
    if (mem_lock >= 0)
        close(mem_lock);                 /* our pages are mapped (or none were taken) */
    if (init_rc < 0 && rte_errno == EALREADY) {
        /* started by another copy of this file in the process (the dpdk
         * BTL's): its ports can be shared, and it cleans up, not us */
        eal_started = 1;
        eal_foreign = 1;
        snprintf(eal_vdevs, sizeof eal_vdevs, "%s", cfg->vdev ? cfg->vdev : "");
        return 0;
    }
    if (init_rc < 0) {
        int e = rte_errno;
        const char *hint = "";
        if (e == EACCES || e == EPERM)
            hint = " (DPDK needs root, or CAP_NET_ADMIN, CAP_NET_RAW, CAP_IPC_LOCK and CAP_SYS_ADMIN)";
        else if (e == ENOMEM)
            hint = " (not enough memory: with hugepages reserve more, e.g. "
                   "echo 256 > /proc/sys/vm/nr_hugepages, or pass --no-huge -m 256 in the EAL arguments)";
        else if (e == EALREADY)
            hint = " (EAL was already initialised by something else in this process)";
        snprintf(err, errlen, "DPDK EAL failed to start: %s%s; EAL arguments: %s%s%s",
                 rte_strerror(e), hint, extra, cfg->vdev && *cfg->vdev ? " --vdev=" : "",
                 cfg->vdev ? cfg->vdev : "");
        return -1;
    }
    eal_started = 1;
    snprintf(eal_vdevs, sizeof eal_vdevs, "%s", cfg->vdev ? cfg->vdev : "");
    return 0;
}

/* item @p index of the ';'-separated device list, or -1 past its end */
static int vdev_item(const char *list, unsigned index, char *out, size_t len)
{
    const char *p = list ? list : "";
    for (unsigned i = 0; i < index; i++) {
        p = strchr(p, ';');
        if (!p)
            return -1;
        p++;
    }
    size_t n = strcspn(p, ";");
    if (n == 0 || n >= len)
        return -1;
    memcpy(out, p, n);
    out[n] = 0;
    return 0;
}

static const em_link_ops_t dpdk_ops;

/* The owner publishes its port (best effort: without the memzone or the
 * ring the port simply cannot be shared). */
static void share_publish(struct dpdk_link *d, const char *mzname)
{
    char rname[RTE_RING_NAMESIZE];
    snprintf(rname, sizeof rname, "em_rx_p%u_%04x", d->port, rte_be_to_cpu_16(d->ethertype_be));
    d->ring = rte_ring_create(rname, 1024, (int)rte_socket_id(), 0);
    const struct rte_memzone *mz = d->ring ?
        rte_memzone_reserve(mzname, sizeof(struct port_share), (int)rte_socket_id(), 0) : NULL;
    if (!mz) {
        rte_ring_free(d->ring);
        d->ring = NULL;
        return;
    }
    struct port_share *sh = mz->addr;
    memset(sh, 0, sizeof *sh);
    sh->port = d->port;
    sh->mtu = d->link.mtu;
    memcpy(sh->mac, d->mac.addr_bytes, 6);
    sh->user[0].ethertype_be = d->ethertype_be;
    sh->user[0].ring = d->ring;
    sh->magic = SHARE_MAGIC;
    d->share = sh;
    d->share_mz = mz;
}

static em_link_t *share_open(const em_dpdk_cfg_t *cfg, uint16_t port, struct port_share *sh,
                             char *err, size_t errlen)
{
    uint16_t et = rte_cpu_to_be_16(cfg->ethertype ? cfg->ethertype : EM_ETHERTYPE);
    int slot = -1;
    for (int u = 0; u < SHARE_USERS; u++) {
        if (sh->user[u].ethertype_be == et) {
            snprintf(err, errlen, "the DPDK port is already used in this process for ethertype "
                     "0x%04x (one user per ethertype)", rte_be_to_cpu_16(et));
            return NULL;
        }
        if (slot < 0 && sh->user[u].ethertype_be == 0)
            slot = u;
    }
    if (slot < 0) {
        snprintf(err, errlen, "the DPDK port already has %d users in this process", SHARE_USERS);
        return NULL;
    }
    struct dpdk_link *d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    char name[RTE_RING_NAMESIZE];
    snprintf(name, sizeof name, "em_rx_p%u_%04x", port, rte_be_to_cpu_16(et));
    d->ring = rte_ring_lookup(name);        /* a previous sharer's, still here */
    if (!d->ring)
        d->ring = rte_ring_create(name, 1024, (int)rte_socket_id(), 0);
    /* our own mbufs for sending (never freed: the PMD may hold some after
     * we close; they go with EAL) */
    snprintf(name, sizeof name, "em_pool_p%u_%04x", port, rte_be_to_cpu_16(et));
    d->pool = rte_mempool_lookup(name);
    if (!d->pool)
        d->pool = rte_pktmbuf_pool_create(name, 2047, 256,
                                          RTE_ALIGN(sizeof(em_pkt_t), RTE_MBUF_PRIV_ALIGN),
                                          (uint16_t)(sh->mtu + ETH_HDR + RTE_PKTMBUF_HEADROOM),
                                          (int)rte_socket_id());
    d->scratch = malloc((size_t)BURST * (sh->mtu + ETH_HDR));
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
    d->share_slot = slot;
    memcpy(d->mac.addr_bytes, sh->mac, 6);
    d->rx_loss = cfg->rx_loss;
    d->ethertype_be = et;
    d->rng = cfg->loss_seed ? cfg->loss_seed : 0x9E3779B97F4A7C15ull;
    d->link.ops = &dpdk_ops;
    d->link.mtu = cfg->mtu && cfg->mtu < sh->mtu ? cfg->mtu : sh->mtu;
    d->link.flags = 0;
    d->link.local.len = 8;
    memcpy(d->link.local.bytes, sh->mac, 6);
    sh->user[slot].ring = d->ring;
    sh->user[slot].ethertype_be = et;
    sh->users++;
    return &d->link;
}

static void share_close(struct dpdk_link *d)
{
    struct port_share *sh = d->share;
    if (sh->magic == SHARE_MAGIC) {
        sh->user[d->share_slot].ethertype_be = 0;
        sh->user[d->share_slot].ring = NULL;
        sh->users--;
    }
    void *mb;
    while (rte_ring_dequeue(d->ring, &mb) == 0)
        rte_pktmbuf_free(mb);
    free(d->peers);
    em_addr_map_free(&d->bysrc);
    free(d->scratch);
    free(d);
    eal_release();
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
    char item[1024] = "";
    int have_vdev = cfg->vdev && *cfg->vdev;
    err[0] = 0;
    if (have_vdev && vdev_item(cfg->vdev, index, item, sizeof item) != 0)
        return NULL;                        /* no such device: not an error */
    if (index >= EM_DPDK_MAX_PORTS)
        return NULL;
    if (start_eal(cfg, err, errlen) != 0)
        return NULL;
    eal_ports++;                            /* from here on, eal_release() on failure */

    /* the port: by device name ("net_memif1" of "net_memif1,role=..."),
     * or the index-th port EAL found (a NIC given in the EAL arguments) */
    uint16_t port = RTE_MAX_ETHPORTS;
    if (have_vdev) {
        char name[64];
        size_t n = strcspn(item, ",");
        snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name ? n : sizeof name - 1), item);
        if (rte_eth_dev_get_port_by_name(name, &port) != 0)
            port = RTE_MAX_ETHPORTS;
    } else {
        unsigned k = 0;
        uint16_t p;
        RTE_ETH_FOREACH_DEV(p) {
            if (k++ == index) {
                port = p;
                break;
            }
        }
        if (port == RTE_MAX_ETHPORTS && index > 0) {
            eal_release();
            return NULL;                    /* no more ports: not an error */
        }
    }
    if (port == RTE_MAX_ETHPORTS) {
        snprintf(err, errlen, "DPDK found no usable port%s%s (check the device/interface "
                 "name, that the interface exists in this network namespace, and that the "
                 "PMD is installed)", have_vdev ? " for " : "", item);
        eal_release();
        return NULL;
    }
    /* a port another user of this process already runs: share it */
    char mzname[RTE_MEMZONE_NAMESIZE];
    snprintf(mzname, sizeof mzname, "em_share_p%u", port);
    const struct rte_memzone *mz = rte_memzone_lookup(mzname);
    if (mz && ((const struct port_share *)mz->addr)->magic == SHARE_MAGIC) {
        em_link_t *l = share_open(cfg, port, (struct port_share *)mz->addr, err, errlen);
        if (!l)
            eal_release();
        return l;
    }
    struct dpdk_link *d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(err, errlen, "out of memory");
        eal_release();
        return NULL;
    }
    d->port = port;
    /* af_xdp: own the interface queue, and clear what a crashed owner left
     * (its XDP program) before the PMD attaches ours at queue setup */
    d->guard.lock_fd = -1;
    char ifname[IF_NAMESIZE];
    unsigned queue;
    if (em_xdp_devargs_iface(item, ifname, sizeof ifname, &queue) &&
        em_xdp_guard_acquire(ifname, queue, &d->guard, err, errlen) != 0) {
        free(d);
        eal_release();
        return NULL;
    }

    struct rte_eth_dev_info info;
    int rc = rte_eth_dev_info_get(port, &info);
    if (rc != 0) {
        snprintf(err, errlen, "rte_eth_dev_info_get: %s", rte_strerror(-rc));
        goto fail;
    }
    /* A device on a hardware bus (pci, auxiliary, ...: not "vdev") reads
     * and writes our buffers by DMA.  That needs hugepage-backed memory
     * (--no-huge memory has no IOVA a device can use), and rules out
     * zero-copy send: the user buffers it would hand the NIC are not
     * DMA-mapped (rte_extmem_register + rte_dev_dma_map is not built).
     * The vdev PMDs (memif, af_xdp, ring, pcap) touch mbufs with the CPU. */
    const char *bus = info.device ? rte_bus_name(rte_dev_bus(info.device)) : NULL;
    int dma_dev = bus && strcmp(bus, "vdev") != 0;
    if (dma_dev && !rte_eal_has_hugepages()) {
        snprintf(err, errlen, "%s (%s bus) needs hugepages, and EAL runs without them "
                 "(--no-huge, or fewer than 128 free 2 MB pages at start): reserve some "
                 "(echo 512 > /proc/sys/vm/nr_hugepages; mount -t hugetlbfs nodev "
                 "/dev/hugepages) or pass --in-memory -m 512 in btl_dpdk_eal_args",
                 info.driver_name ? info.driver_name : "the device", bus);
        goto fail;
    }
    /* af_xdp: the PMD hands our mempool to the kernel as its UMEM, one
     * element per UMEM chunk, and a chunk is at most a page.  So the
     * element (object header + mbuf + our private area + data room) is
     * made as large as fits a page, and a received frame must also leave
     * the kernel's XDP headroom free in it: at 4 KiB pages that is a
     * 3402-byte MTU.  (With DPDK's default 2 KiB room the kernel could place only
     * ~1.8 KB frames, and anything larger was dropped silently.)  Other
     * PMDs may carry a jumbo frame in one buffer. */
    int small = info.driver_name && strstr(info.driver_name, "af_xdp") != NULL;
    uint16_t priv = (uint16_t)RTE_ALIGN(sizeof(em_pkt_t), RTE_MBUF_PRIV_ALIGN);
    uint16_t room = (uint16_t)(9216 + RTE_PKTMBUF_HEADROOM);
    uint32_t xdp_headroom = 0;
    if (small) {
        /* The mempool pads an object to an odd number of cache lines (it
         * spreads objects over memory channels), so a page-sized object
         * would become 65 lines: aim at one line less than a page. */
        long page = sysconf(_SC_PAGESIZE);
        size_t total = (page >= 4096 ? (size_t)page : 4096u) - RTE_CACHE_LINE_SIZE;
        size_t elt = total - RTE_CACHE_LINE_ROUNDUP(sizeof(struct rte_mempool_objhdr));
        room = (uint16_t)(elt - sizeof(struct rte_mbuf) - priv);
        room = (uint16_t)(room - (sizeof(struct rte_mbuf) + priv + room) % RTE_CACHE_LINE_SIZE);
        xdp_headroom = 256; /* XDP_PACKET_HEADROOM */
    }
    uint32_t want = cfg->mtu ? cfg->mtu : 9000;
    uint32_t lim = (uint32_t)room - RTE_PKTMBUF_HEADROOM - xdp_headroom - ETH_HDR;
    if (want > lim)
        want = lim;
    if (info.max_mtu && want > info.max_mtu)
        want = info.max_mtu;
    /* memif reports 1518-byte frames, but a ring buffer holds "bsize"
     * bytes (devarg, default 2048) and the PMD never looks at the MTU: with
     * bsize=9216 a 9000-byte frame travels in one descriptor.  (Frames
     * larger than bsize would be chained over descriptors, a path that
     * crashed DPDK 22.11's memif rx here, so the limit is bsize.)  Fewer,
     * larger frames: 2.5x the bandwidth of 1500-byte ones on this machine. */
    int memif = info.driver_name && strstr(info.driver_name, "memif") != NULL;
    d->memif = memif;
    uint32_t memif_bsize = 0;
    char bsize[16];
    if (memif && em_devarg(item, "bsize", bsize, sizeof bsize))
        memif_bsize = (uint32_t)strtoul(bsize, NULL, 10);
    if (memif_bsize > 1518) {
        if (want > memif_bsize - ETH_HDR)
            want = memif_bsize - ETH_HDR;
    } else if (info.max_rx_pktlen > ETH_HDR + 4 && want > info.max_rx_pktlen - ETH_HDR - 4) {
        want = info.max_rx_pktlen - ETH_HDR - 4;   /* memif: 1518-byte frames incl. CRC */
        memif_bsize = 0;
    }
    /* af_xdp rides a kernel interface: use its MTU, never change it (the
     * peer's end would not follow) */
    uint32_t kmtu = small ? kernel_mtu(item) : 0;
    if (kmtu && want > kmtu)
        want = kmtu;

    char name[64];
    snprintf(name, sizeof name, "em_pool_%u", port);
    uint32_t nb = cfg->nb_mbufs ? cfg->nb_mbufs : 8191;
    d->pool = rte_pktmbuf_pool_create(name, nb, 256, priv, room, (int)rte_socket_id());
    if (!d->pool) {
        snprintf(err, errlen, "cannot create a pool of %u mbufs of %u bytes: %s (raise -m in the "
                 "EAL arguments)", nb, room, rte_strerror(rte_errno));
        goto fail;
    }
    struct rte_eth_conf conf;
    memset(&conf, 0, sizeof conf);
    conf.rxmode.mtu = memif_bsize ? 0 : want;   /* memif: its MTU is not ours (above) */
    /* zero-copy send: a PMD that takes chained mbufs gets the payload as an
     * external buffer pointing into the caller's memory (memif: yes; af_xdp
     * in DPDK 22.11: no, every frame is copied into the UMEM anyway) */
    int gather = !cfg->no_gather && !dma_dev &&
                 (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS);
    if (gather) {
        char xname[64];
        snprintf(xname, sizeof xname, "em_ext_%u", port);
        d->ext_pool = rte_pktmbuf_pool_create(xname, nb, 256,
            RTE_ALIGN(sizeof(struct rte_mbuf_ext_shared_info), RTE_MBUF_PRIV_ALIGN), 0,
            (int)rte_socket_id());
        if (d->ext_pool)
            conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
        else
            gather = 0;                     /* copy instead: slower, still correct */
    }
    uint16_t nd = cfg->nb_desc ? cfg->nb_desc : 1024;
    uint16_t nq = 1;
    if (cfg->rdv_slots) {
        if (cfg->rdv_slots > 15 || 1u + (unsigned)cfg->rdv_slots * cfg->rdv_slots > info.max_rx_queues ||
            1u + (unsigned)cfg->rdv_slots * cfg->rdv_slots > info.max_tx_queues) {
            snprintf(err, errlen, "%s cannot have the %u queue pairs of %u own-queue slots",
                     info.driver_name, 1u + (unsigned)cfg->rdv_slots * cfg->rdv_slots, cfg->rdv_slots);
            goto fail;
        }
        nq = (uint16_t)(1u + (unsigned)cfg->rdv_slots * cfg->rdv_slots);
        d->rdv_slots = cfg->rdv_slots;
        for (unsigned s = 0; s < cfg->rdv_slots; s++) {
            for (unsigned k = 0; k < 2; k++) {
                char pn[RTE_MEMPOOL_NAMESIZE];
                snprintf(pn, sizeof pn, k ? EM_DPDK_RDV_TX_POOL : EM_DPDK_RDV_RX_POOL, port, s);
                /* no cache (secondaries share lcore ids), sp/sc ring: one user */
                d->rdv_pools[2 * s + k] = rte_pktmbuf_pool_create_by_ops(pn,
                    k ? EM_DPDK_RDV_TX_MBUFS : EM_DPDK_RDV_RX_MBUFS, 0, priv, room,
                    (int)rte_socket_id(), "ring_sp_sc");
                if (!d->rdv_pools[2 * s + k]) {
                    snprintf(err, errlen, "cannot create the own-queue pool %s: %s (more hugepages?)",
                             pn, rte_strerror(rte_errno));
                    goto fail;
                }
            }
        }
    }
    if ((rc = rte_eth_dev_configure(port, nq, nq, &conf)) != 0) {
        /* some PMDs refuse a large MTU at configure time: retry with theirs */
        conf.rxmode.mtu = 0;
        if ((rc = rte_eth_dev_configure(port, nq, nq, &conf)) != 0) {
            snprintf(err, errlen, "rte_eth_dev_configure(%s): %s", info.driver_name, rte_strerror(-rc));
            goto fail;
        }
    }
    rte_eth_dev_adjust_nb_rx_tx_desc(port, &nd, &nd);
    for (uint16_t q = 0; q < nq; q++) {
        /* own queue q >= 1 is received by slot (q - 1) % S */
        struct rte_mempool *rp = q ? d->rdv_pools[2 * ((q - 1u) % d->rdv_slots)] : d->pool;
        if ((rc = rte_eth_rx_queue_setup(port, q, nd, rte_eth_dev_socket_id(port), NULL, rp)) != 0 ||
            (rc = rte_eth_tx_queue_setup(port, q, nd, rte_eth_dev_socket_id(port), NULL)) != 0) {
            snprintf(err, errlen, "queue %u setup on %s: %s", q, info.driver_name, rte_strerror(-rc));
            size_t used = strlen(err);
            /* DPDK says only EINVAL; an MTU beyond AF_XDP's is the usual cause */
            if (small && em_xdp_devargs_iface(item, ifname, sizeof ifname, &queue) && used + 3 < errlen)
                if (em_xdp_explain_mtu(ifname, lim, err + used + 2, errlen - used - 2))
                    memcpy(err + used, ": ", 2);
            goto fail;
        }
    }
    /* A memif client connects once, in dev_start, and fails if the server
     * end has not created its socket yet (which rank starts first is a
     * race): retry until the link wait runs out. */
    uint32_t wait = cfg->link_wait_ms ? cfg->link_wait_ms : 10000;
    uint32_t waited = 0;
    while ((rc = rte_eth_dev_start(port)) != 0 && waited < wait) {
        rte_delay_ms(20);
        waited += 20;
    }
    if (rc != 0) {
        snprintf(err, errlen, "cannot start %s: %s (for a memif client: no server end "
                 "appeared within %u ms)", info.driver_name, rte_strerror(rc < 0 ? -rc : rc), wait);
        goto fail;
    }
    uint16_t mtu = 0;
    if (!kmtu && !memif_bsize && rte_eth_dev_set_mtu(port, (uint16_t)want) != 0 &&
        rte_eth_dev_get_mtu(port, &mtu) == 0 && mtu < want)
        want = mtu;
    rte_eth_macaddr_get(port, &d->mac);

    /* The memif server end listens from probe time (inside rte_eal_init)
     * but refuses the handshake until its own dev_start ("device
     * disabled"), and a refused client never tries again: so a client end
     * whose link stays down restarts its port every 500 ms to reconnect. */
    int memif_client = strstr(item, "net_memif") && strstr(item, "role=client");
    struct rte_eth_link lk;
    for (uint32_t t = waited;; t += 10) {
        memset(&lk, 0, sizeof lk);
        rte_eth_link_get_nowait(port, &lk);
        if (lk.link_status == RTE_ETH_LINK_UP)
            break;
        if (memif_client && t > waited && (t - waited) % 500 == 0) {
            rte_eth_dev_stop(port);
            for (uint32_t r = 0; rte_eth_dev_start(port) != 0 && r < 50; r++)
                rte_delay_ms(10);
        }
        if (t >= wait) {
            snprintf(err, errlen, "link of %s is still down after %u ms (for a memif cable, is "
                     "the other side running?)", info.driver_name, wait);
            rte_eth_dev_stop(port);
            goto fail;
        }
        rte_delay_ms(10);
    }
    d->scratch = malloc((size_t)BURST * (want + ETH_HDR));
    if (!d->scratch) {
        snprintf(err, errlen, "out of memory");
        rte_eth_dev_stop(port);
        goto fail;
    }
    d->rx_loss = cfg->rx_loss;
    d->ethertype_be = rte_cpu_to_be_16(cfg->ethertype ? cfg->ethertype : EM_ETHERTYPE);
    d->rng = cfg->loss_seed ? cfg->loss_seed : 0x9E3779B97F4A7C15ull;
    d->link.ops = &dpdk_ops;
    d->link.mtu = want;
    d->link.flags = gather ? EM_LINK_F_GATHER : 0;
    d->link.local.len = 8;
    memcpy(d->link.local.bytes, d->mac.addr_bytes, 6);
    d->link.local.bytes[6] = 0;   /* queue 0 */
    d->link.local.bytes[7] = 0;
    share_publish(d, mzname);
    return &d->link;

fail:
    rte_eth_dev_close(port);
    em_xdp_guard_release(&d->guard);
    for (unsigned i = 0; i < 2 * 15; i++)
        rte_mempool_free(d->rdv_pools[i]);
    if (d->pool)
        rte_mempool_free(d->pool);
    rte_mempool_free(d->ext_pool);
    free(d->scratch);
    free(d);
    eal_release();
    return NULL;
}

/** Copy @p in to @p out with %h -> host name, %j -> @p job. */
static void expand_spec(const char *in, const char *job, char *out, size_t len)
{
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    size_t o = 0;
    for (const char *p = in; *p && o + 1 < len; p++) {
        if (p[0] == '%' && (p[1] == 'h' || p[1] == 'j')) {
            o += (size_t)snprintf(out + o, len - o, "%s", p[1] == 'h' ? host : job);
            if (o >= len)
                o = len - 1;
            p++;
        } else {
            out[o++] = *p;
        }
    }
    out[o] = 0;
}

/* one device of a spec: "@FILE" (its first line) or devargs; %h/%j expanded */
static int devargs_one(const char *spec, const char *job, char *out, size_t len,
                       char *err, size_t errlen)
{
    char line[1024];
    expand_spec(spec, job, out, len);
    if (out[0] != '@')
        return 0;
    FILE *f = fopen(out + 1, "r");
    if (!f) {
        snprintf(err, errlen, "cannot read the device file '%s': %s", out + 1, strerror(errno));
        return -1;
    }
    if (!fgets(line, sizeof line, f))
        line[0] = 0;
    fclose(f);
    line[strcspn(line, "\r\n")] = 0;
    expand_spec(line, job, out, len);
    return 0;
}

int em_dpdk_devargs(const char *spec, const char *job, char *out, size_t len,
                    char *err, size_t errlen)
{
    /* "A;B": each part expanded on its own (two cables: two device files) */
    char part[1024], one[1024];
    size_t o = 0;
    const char *p = spec ? spec : "";
    out[0] = 0;
    do {
        size_t n = strcspn(p, ";");
        if (n >= sizeof part) {
            snprintf(err, errlen, "device specification too long");
            return -1;
        }
        memcpy(part, p, n);
        part[n] = 0;
        if (devargs_one(part, job, one, sizeof one, err, errlen) != 0)
            return -1;
        int w = snprintf(out + o, len - o, "%s%s", o ? ";" : "", one);
        if (w < 0 || (size_t)w >= len - o) {
            snprintf(err, errlen, "device specification too long");
            return -1;
        }
        o += (size_t)w;
        p += n;
    } while (*p++ == ';');
    return 0;
}

const em_dpdk_stats_t *em_link_dpdk_stats(const em_link_t *l) { return &((const struct dpdk_link *)l)->st; }

int em_link_dpdk_port_stats(const em_link_t *l, em_dpdk_port_stats_t *out)
{
    const struct dpdk_link *d = (const struct dpdk_link *)l;
    struct rte_eth_stats st;
    memset(out, 0, sizeof *out);
    if (rte_eth_stats_get(d->port, &st) != 0)
        return -1;
    *out = (em_dpdk_port_stats_t){
        .rx_pkts = st.ipackets, .rx_bytes = st.ibytes, .tx_pkts = st.opackets, .tx_bytes = st.obytes,
        .q0_rx_pkts = st.q_ipackets[0], .q0_rx_bytes = st.q_ibytes[0],
        .q0_tx_pkts = st.q_opackets[0], .q0_tx_bytes = st.q_obytes[0],
    };
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

struct pool_reset {
    void **objs;
    unsigned n, cap;
};

static void reset_one(struct rte_mempool *mp, void *opaque, void *obj, unsigned idx)
{
    struct pool_reset *r = opaque;
    rte_pktmbuf_init(mp, NULL, obj, idx);   /* refcount, segments, lengths as new */
    if (r->n < r->cap)
        r->objs[r->n++] = obj;
}

/* Every object of a ring-backed pool back into its (emptied) ring.  Safe
 * only while nobody else uses the pool; the ring is reset first, so a user
 * killed inside an enqueue or dequeue leaves nothing behind. */
static int pool_reset(struct rte_mempool *mp)
{
    struct rte_ring *ring = mp->pool_data;
    struct pool_reset r = { .cap = mp->size };
    r.objs = malloc(sizeof *r.objs * mp->size);
    if (!r.objs || !ring)
        return free(r.objs), -1;
    rte_ring_reset(ring);
    rte_mempool_obj_iter(mp, reset_one, &r);
    unsigned put = rte_ring_enqueue_bulk(ring, r.objs, r.n, NULL);
    free(r.objs);
    return put == r.n ? 0 : -1;
}

int em_link_dpdk_rdv_reset(em_link_t *l, uint16_t slot)
{
    struct dpdk_link *d = (struct dpdk_link *)l;
    if (slot >= d->rdv_slots)
        return -1;
    int rc = pool_reset(d->rdv_pools[2 * slot]);
    return pool_reset(d->rdv_pools[2 * slot + 1]) | rc;
}

void em_link_dpdk_addr_str(const em_link_addr_t *a, char *buf, size_t len)
{
    if (a->len != 8) {
        snprintf(buf, len, "?");
        return;
    }
    snprintf(buf, len, "%02x:%02x:%02x:%02x:%02x:%02x/%u", a->bytes[0], a->bytes[1], a->bytes[2],
             a->bytes[3], a->bytes[4], a->bytes[5], (unsigned)(a->bytes[6] << 8 | a->bytes[7]));
}
