/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file xdp_queues.c
 * The native AF_XDP link on several interface queues (link_xdp.h): how
 * many queues the interface has, the sockets after the first one (sharing
 * its UMEM, each with its own fill and completion ring), the epoll set the
 * caller waits on, the per-queue counters as text.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "link/xdp/xdp_internal.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <linux/ethtool.h>
#include <linux/if_link.h>
#include <linux/sockios.h>

/* ethtool -l: the current channels; a queue is usable below the larger of
 * the rx and tx counts (the kernel's test at bind).  0: not supported. */
static uint32_t ethtool_queues(const char *ifname)
{
    struct ethtool_channels ch = { .cmd = ETHTOOL_GCHANNELS };
    struct ifreq r;
    memset(&r, 0, sizeof r);
    snprintf(r.ifr_name, sizeof r.ifr_name, "%s", ifname);
    r.ifr_data = (void *)&ch;
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return 0;
    int ok = ioctl(s, SIOCETHTOOL, &r) == 0;
    close(s);
    if (!ok)
        return 0;
    uint32_t rx = ch.combined_count + ch.rx_count, tx = ch.combined_count + ch.tx_count;
    return rx > tx ? rx : tx;
}

/* /sys/class/net/IF/queues: rx-N and tx-N, if that directory is this
 * namespace's interface (its ifindex matches: sysfs may be another
 * namespace's view) */
static uint32_t sysfs_queues(int ifindex, const char *ifname)
{
    char path[128];
    snprintf(path, sizeof path, "/sys/class/net/%s/ifindex", ifname);
    FILE *f = fopen(path, "r");
    int idx = -1;
    if (!f)
        return 0;
    if (fscanf(f, "%d", &idx) != 1)
        idx = -1;
    fclose(f);
    if (idx != ifindex)
        return 0;
    snprintf(path, sizeof path, "/sys/class/net/%s/queues", ifname);
    DIR *dir = opendir(path);
    if (!dir)
        return 0;
    uint32_t rx = 0, tx = 0;
    for (struct dirent *e; (e = readdir(dir));) {
        rx += strncmp(e->d_name, "rx-", 3) == 0;
        tx += strncmp(e->d_name, "tx-", 3) == 0;
    }
    closedir(dir);
    return rx > tx ? rx : tx;
}

uint32_t em_xdp_if_queues(int ifindex, const char *ifname)
{
    uint32_t n = ethtool_queues(ifname);
    return n ? n : sysfs_queues(ifindex, ifname);
}

int em_xdp_check_queues(struct xdp_link *d, const em_xdp_cfg_t *cfg, uint32_t nq, char *err,
                        size_t errlen)
{
    if (nq > EM_XDP_MAX_QUEUES) {
        snprintf(err, errlen,
                 "%u AF_XDP queues asked for on %s: one link opens at most %u (lower the "
                 "xdp_queues setting)",
                 nq, cfg->ifname, EM_XDP_MAX_QUEUES);
        return -1;
    }
    uint32_t have = em_xdp_if_queues(d->ifindex, cfg->ifname);
    if (!have || cfg->queue + nq <= have)
        return 0; /* neither source says: the kernel decides at bind */
    if (nq == 1)
        snprintf(err, errlen,
                 "AF_XDP queue %u of %s does not exist: the interface has %u queue%s (ethtool -l "
                 "%s, /sys/class/net/%s/queues); name one below %u with the xdp_queue setting",
                 cfg->queue, cfg->ifname, have, have == 1 ? "" : "s", cfg->ifname, cfg->ifname,
                 have);
    else
        snprintf(err, errlen,
                 "AF_XDP queues %u to %u of %s asked for (xdp_queue %u, xdp_queues %u), but the "
                 "interface has %u queue%s (ethtool -l %s, /sys/class/net/%s/queues): lower "
                 "xdp_queues to %u or less, or give the interface more channels (ethtool -L %s "
                 "combined %u; a veth: create it with numtxqueues %u numrxqueues %u)",
                 cfg->queue, cfg->queue + nq - 1, cfg->ifname, cfg->queue, nq, have,
                 have == 1 ? "" : "s", cfg->ifname, cfg->ifname,
                 have > cfg->queue ? have - cfg->queue : 0, cfg->ifname, cfg->queue + nq,
                 cfg->queue + nq, cfg->queue + nq);
    return -1;
}

int em_xdp_check_map(int map_fd, const em_xdp_cfg_t *cfg, uint32_t nq, char *err, size_t errlen)
{
    struct bpf_map_info mi;
    uint32_t len = sizeof mi;
    memset(&mi, 0, sizeof mi);
    if (bpf_obj_get_info_by_fd(map_fd, &mi, &len) != 0 || cfg->queue + nq <= mi.max_entries)
        return 0;
    snprintf(err, errlen,
             "AF_XDP queue %u of %s is beyond the filter's xsks_map (%u entries): use queues "
             "below %u (xdp_queue, xdp_queues)",
             cfg->queue + nq - 1, cfg->ifname, mi.max_entries, mi.max_entries);
    return -1;
}

int em_xdp_open_more(struct xdp_link *d, const em_xdp_cfg_t *cfg, int map_fd, char *err,
                     size_t errlen)
{
    /* bind flags are the first socket's: a socket sharing a UMEM takes its
     * copy / zero copy, need-wakeup and multi-buffer modes (libxdp binds it
     * with XDP_SHARED_UMEM alone) */
    struct xsk_socket_config sc = { .rx_size = d->rx_frames,
                                    .tx_size = d->rx_frames,
                                    .libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
                                    .xdp_flags = d->xdp_flags & ~XDP_FLAGS_UPDATE_IF_NOEXIST };
    for (uint32_t qi = 1; qi < d->nq; qi++) {
        struct xdp_q *q = &d->q[qi];
        int rc;
        /* EBUSY: a closed socket the kernel has not released yet (make_socket) */
        for (int tries = 0;; tries++) {
            rc = xsk_socket__create_shared(&q->xsk, cfg->ifname, q->id, d->umem, &q->rx, &q->tx,
                                           &q->fq, &q->cq, &sc);
            if (rc != -EBUSY || tries >= 100)
                break;
            usleep(10000);
        }
        if (rc != 0) {
            q->xsk = NULL;
            snprintf(err, errlen,
                     "cannot open an AF_XDP socket on %s queue %u sharing queue %u's UMEM: %s%s",
                     cfg->ifname, q->id, d->q[0].id, strerror(-rc),
                     rc == -EINVAL ? " (a kernel before 5.10 cannot share a UMEM across queues: "
                                     "set xdp_queues to 1)"
                                   : "");
            return -1;
        }
        rc = xsk_socket__update_xskmap(q->xsk, map_fd);
        if (rc != 0) {
            snprintf(err, errlen, "cannot register queue %u's socket in the filter's map: %s",
                     q->id, strerror(-rc));
            return -1;
        }
    }
    d->epfd = epoll_create1(EPOLL_CLOEXEC);
    for (uint32_t qi = 0; d->epfd >= 0 && qi < d->nq; qi++) {
        struct epoll_event ev = { .events = EPOLLIN, .data.u32 = qi };
        if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, xsk_socket__fd(d->q[qi].xsk), &ev) != 0) {
            close(d->epfd);
            d->epfd = -1;
        }
    }
    if (d->epfd < 0) {
        snprintf(err, errlen, "cannot make the epoll set of the AF_XDP sockets: %s",
                 strerror(errno));
        return -1;
    }
    return 0;
}

void em_xdp_link_queue_stats(const em_link_t *l, char *buf, size_t len)
{
    const struct xdp_link *d = (const struct xdp_link *)l;
    size_t o = 0;
    buf[0] = 0;
    for (uint32_t qi = 0; d->nq > 1 && qi < d->nq && o < len; qi++) {
        int w = snprintf(buf + o, len - o, "%sq%u rx %llu tx %llu", qi ? ", " : "", d->q[qi].id,
                         (unsigned long long)d->st.q_rx[qi], (unsigned long long)d->st.q_tx[qi]);
        if (w < 0)
            break;
        o += (size_t)w;
    }
}
