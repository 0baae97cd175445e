/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file link_udp_open.c
 * Kernel UDP link (link_udp.h): opening and configuring it.  The sockets
 * (the receive socket on the receive port, the send sockets that share the
 * send port), its buffers, the peers' addresses (set_peer, covers) and
 * close.  The data path is link_udp.c; the state both share,
 * link_udp_int.h.
 */
#include "link/link_udp_int.h"
#include "proto/proto.h"

#include <errno.h>
#include <netinet/udp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int udpl_send_socket(const struct udp_link *u, const struct sockaddr_in *to, int *granted)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int one = 1;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0 ||
        em_sock_drop_all_input(fd) != 0 || /* nothing is read from it */
        bind(fd, (const struct sockaddr *)&u->send_addr, sizeof u->send_addr) != 0 ||
        (to && connect(fd, (const struct sockaddr *)to, sizeof *to) != 0)) {
        close(fd);
        return -1;
    }
    int g = em_sock_ask_buf(fd, SO_SNDBUFFORCE, SO_SNDBUF, u->sock_buf);
    if (granted)
        *granted = g;
    return fd;
}

static void close_peer_sock(struct udp_link *u, struct udp_peer *p)
{
    if (p->fd1 > 0) {
        close(p->fd1 - 1);
        u->nconn--;
    }
    p->fd1 = 0;
}

/* A peer's address: IPv4, receive port, send port (8 bytes, what
 * em_link_udp_open publishes); 6 bytes (no send port) = it sends from its
 * receive port (a plain UDP socket, e.g. a test's). */
int udpl_set_peer(em_link_t *l, uint32_t peer, const em_link_addr_t *a)
{
    struct udp_link *u = (struct udp_link *)l;
    if (a->len != 6 && a->len != 8)
        return -EINVAL;
    if (em_peer_table_reserve((void **)&u->peers, &u->npeers, sizeof *u->peers, peer) != 0)
        return -ENOMEM;
    struct udp_peer *p = &u->peers[peer];
    if (p->rx.sin_family == AF_INET) {
        if (p->tx_port)
            em_addr_map_del(&u->bysrc, src_key(p->rx.sin_addr.s_addr, p->tx_port), peer);
        close_peer_sock(u, p); /* connected to the old address */
    }
    p->rx.sin_family = AF_INET;
    memcpy(&p->rx.sin_addr.s_addr, a->bytes, 4);
    memcpy(&p->rx.sin_port, a->bytes + 4, 2);
    memcpy(&p->tx_port, a->bytes + (a->len == 8 ? 6 : 4), 2);
    if (!p->tx_port) /* a partial address (udpl_covers): no frame is its yet */
        return 0;
    return em_addr_map_put(&u->bysrc, src_key(p->rx.sin_addr.s_addr, p->tx_port), peer) == 0
               ? 0
               : -ENOMEM;
}

/* link.h covers: IPv4 and receive port the same, the partial's send port 0 */
bool udpl_covers(const em_link_t *l, const em_link_addr_t *p, const em_link_addr_t *f)
{
    (void)l;
    return p->len == 8 && f->len == 8 && !p->bytes[6] && !p->bytes[7] &&
           (f->bytes[6] || f->bytes[7]) && memcmp(p->bytes, f->bytes, 6) == 0;
}

void udpl_close(em_link_t *l)
{
    struct udp_link *u = (struct udp_link *)l;
    if (u->fd >= 0)
        close(u->fd);
    if (u->sfd >= 0)
        close(u->sfd);
    for (uint32_t i = 0; i < u->npeers; i++)
        close_peer_sock(u, &u->peers[i]);
    free(u->peers);
    em_addr_map_free(&u->bysrc);
    free(u->tx_mem);
    free(u->rx_mem);
    free(u);
}

em_link_t *em_link_udp_open(const em_udp_cfg_t *cfg, char *err, size_t errlen)
{
    struct in_addr ip;
    char ifname[64];
    if (cfg->reason) /* until it opens: what the text explains, unless a case below knows more */
        *cfg->reason = -EM_EINVAL;
    if (em_pick_ipv4_iface(cfg->iface, &ip, ifname, sizeof ifname, err, errlen) != 0)
        return NULL;

    struct udp_link *u = calloc(1, sizeof *u);
    if (!u) {
        snprintf(err, errlen, "out of memory");
        if (cfg->reason)
            *cfg->reason = -EM_ENOMEM;
        return NULL;
    }
    u->sfd = -1;
    u->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (u->fd < 0) {
        snprintf(err, errlen, "socket(AF_INET, SOCK_DGRAM) failed: %s", strerror(errno));
        free(u);
        return NULL;
    }
    uint32_t ifmtu = em_if_mtu(ifname);
    uint32_t mtu = cfg->mtu;
    if (mtu == 0)
        mtu = ifmtu > 28 ? ifmtu - 28 : 1472;
    if (mtu > 65507)
        mtu = 65507;
    if (ifmtu > 28 && mtu > ifmtu - 28) {
        /* the kernel would fragment every frame in IP (one lost fragment
         * loses the frame) and GSO would be refused: not a mode to run in */
        snprintf(err, errlen,
                 "frames of %u bytes do not fit %s (MTU %u carries at most %u bytes "
                 "of UDP payload); lower btl_rudp_mtu to %u or less, or raise the interface "
                 "MTU (ip link set dev %s mtu %u) on every node",
                 mtu, ifname, ifmtu, ifmtu - 28, ifmtu - 28, ifname, mtu + 28);
        close(u->fd);
        free(u);
        return NULL;
    }
    /* the receive socket never sends: its receive buffer only (the send
     * sockets get theirs in udpl_send_socket) */
    u->sock_buf = cfg->sock_buf ? cfg->sock_buf : 4 << 20;
    u->info.sndbuf_req = u->info.rcvbuf_req = u->sock_buf;
    snprintf(u->info.ifname, sizeof u->info.ifname, "%s", ifname);
    u->info.rcvbuf = em_sock_ask_buf(u->fd, SO_RCVBUFFORCE, SO_RCVBUF, u->sock_buf);
    u->gso = !cfg->no_gso;
    if (!cfg->no_gro) {
        int one = 1;
        u->gro = setsockopt(u->fd, SOL_UDP, UDP_GRO, &one, sizeof one) == 0;
    }
    u->info.gso = u->gso;
    u->info.gro = u->gro;
    u->note = cfg->note;
    u->note_ctx = cfg->note_ctx;
    u->frame_len = cfg->frame_len;

    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(cfg->port), .sin_addr = ip };
    socklen_t sl = sizeof sa;
    if (bind(u->fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        getsockname(u->fd, (struct sockaddr *)&sa, &sl) != 0) {
        int e = errno;
        snprintf(err, errlen, "cannot bind UDP %s:%u on %s: %s", inet_ntoa(ip), cfg->port, ifname,
                 strerror(e));
        if (cfg->reason && e == EADDRINUSE) /* the caller names whose port and the fix */
            *cfg->reason = -EM_EADDRINUSE;
        close(u->fd);
        free(u);
        return NULL;
    }
    /* The send port: our frames leave from it, through one socket per peer
     * connected to it (tx_sock) or this shared one.  A send socket of its
     * own, because a connected socket on the receive port would take that
     * peer's datagrams away from the receive socket. */
    u->send_addr = (struct sockaddr_in){ .sin_family = AF_INET, .sin_addr = ip };
    u->sfd = udpl_send_socket(u, NULL, &u->info.sndbuf);
    sl = sizeof u->send_addr;
    if (u->sfd < 0 || getsockname(u->sfd, (struct sockaddr *)&u->send_addr, &sl) != 0) {
        snprintf(err, errlen, "cannot open a UDP send socket on %s (%s): %s", inet_ntoa(ip), ifname,
                 strerror(errno));
        udpl_close(&u->link);
        return NULL;
    }
    u->tx_mem = malloc((size_t)UDP_TX_POOL * mtu);
    u->rx_slot_bytes = u->gro ? UDP_GRO_SLOT : mtu;
    u->rx_batch = cfg->rx_batch ? cfg->rx_batch : UDP_RX_BATCH;
    if (u->rx_batch > UDP_RX_SLOTS)
        u->rx_batch = UDP_RX_SLOTS;
    u->rx_dirty = u->rx_batch;
    u->rx_want = u->rx_batch;
    u->rx_mem = malloc((size_t)u->rx_batch * u->rx_slot_bytes);
    if (!u->tx_mem || !u->rx_mem) {
        snprintf(err, errlen, "out of memory for UDP buffers");
        if (cfg->reason)
            *cfg->reason = -EM_ENOMEM;
        udpl_close(&u->link);
        return NULL;
    }
    em_pkt_pool_init(&u->tx_pool, u->tx_stack, UDP_TX_POOL);
    em_pkt_pool_fill(&u->tx_pool, u->tx_pkts, u->tx_mem, UDP_TX_POOL, mtu);
    if (cfg->reason)
        *cfg->reason = 0;
    u->link.ops = &udpl_ops;
    u->link.mtu = mtu;
    u->link.flags = EM_LINK_F_GATHER;
    u->link.local.len = 8; /* IPv4, receive port, send port */
    memcpy(u->link.local.bytes, &sa.sin_addr.s_addr, 4);
    memcpy(u->link.local.bytes + 4, &sa.sin_port, 2);
    memcpy(u->link.local.bytes + 6, &u->send_addr.sin_port, 2);
    return &u->link;
}

void em_link_udp_info(const em_link_t *l, em_udp_info_t *out)
{
    *out = ((const struct udp_link *)l)->info;
}
