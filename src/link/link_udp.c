/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file link_udp.c
 * Kernel UDP link (see link_udp.h).  Transmit buffers come from a fixed pool
 * (no allocation on the data path); a tx burst is one sendmmsg(2) call, a
 * receive burst one recvmmsg(2) call into a fixed ring of buffers that stays
 * valid until the next rx_burst (the engine releases before it asks again).
 */
#include "link/link_udp.h"
#include "link/link_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define UDP_TX_POOL 256
#define UDP_RX_BURST 32

struct udp_link {
    em_link_t link;              /* must be first */
    int fd;
    struct sockaddr_in *peers;
    uint32_t npeers;
    em_pkt_t tx_pkts[UDP_TX_POOL];
    em_pkt_t *tx_free[UDP_TX_POOL];
    unsigned ntx_free;
    uint8_t *tx_mem;
    em_pkt_t rx_pkts[UDP_RX_BURST];
    uint8_t *rx_mem;
    struct mmsghdr rx_msgs[UDP_RX_BURST];
    struct iovec rx_iov[UDP_RX_BURST];
    struct sockaddr_in rx_from[UDP_RX_BURST];  /* source of each datagram (rx_peer) */
    em_addr_map_t bysrc;                       /* source IP:port -> peer */
    em_udp_stats_t st;
};

static em_pkt_t *udp_tx_alloc(em_link_t *l)
{
    struct udp_link *u = (struct udp_link *)l;
    if (!u->ntx_free)
        return NULL;
    em_pkt_t *p = u->tx_free[--u->ntx_free];
    p->ext = NULL;
    p->ext_len = 0;
    return p;
}

static void udp_tx_free(em_link_t *l, em_pkt_t *p)
{
    struct udp_link *u = (struct udp_link *)l;
    u->tx_free[u->ntx_free++] = p;
}

static unsigned udp_tx_burst(em_link_t *l, em_pkt_t **pkts, unsigned n)
{
    struct udp_link *u = (struct udp_link *)l;
    struct mmsghdr msgs[64];
    struct iovec iov[64][2];
    unsigned done = 0;

    while (done < n) {
        unsigned k = 0;
        while (k < 64 && done + k < n) {
            em_pkt_t *p = pkts[done + k];
            if (p->peer >= u->npeers || u->peers[p->peer].sin_port == 0) {
                break;
            }
            iov[k][0] = (struct iovec){ .iov_base = p->data, .iov_len = p->len };
            iov[k][1] = (struct iovec){ .iov_base = (void *)p->ext, .iov_len = p->ext_len };
            msgs[k] = (struct mmsghdr){ .msg_hdr = {
                .msg_name = &u->peers[p->peer], .msg_namelen = sizeof(struct sockaddr_in),
                .msg_iov = iov[k], .msg_iovlen = p->ext_len ? 2 : 1 } };
            k++;
        }
        if (k == 0) {
            /* unknown destination: a programming error upstream; drop, count */
            u->st.tx_unknown_peer++;
            udp_tx_free(l, pkts[done++]);
            continue;
        }
        int r = sendmmsg(u->fd, msgs, k, MSG_DONTWAIT);
        if (r < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS || errno == EINTR)
                break;          /* socket full: the caller keeps the rest */
            /* persistent error on the first datagram (e.g. EPERM from a
             * filter): it is lost like a frame on a bad wire; go on */
            u->st.tx_errors++;
            udp_tx_free(l, pkts[done++]);
            continue;
        }
        for (int i = 0; i < r; i++)
            udp_tx_free(l, pkts[done + i]);
        u->st.tx_dgrams += (uint64_t)r;
        done += (unsigned)r;
        if ((unsigned)r < k)
            break;
    }
    return done;
}

static unsigned udp_rx_burst(em_link_t *l, em_pkt_t **pkts, unsigned max)
{
    struct udp_link *u = (struct udp_link *)l;
    if (max > UDP_RX_BURST)
        max = UDP_RX_BURST;
    for (unsigned i = 0; i < max; i++) {
        u->rx_iov[i] = (struct iovec){ .iov_base = u->rx_mem + (size_t)i * u->link.mtu,
                                      .iov_len = u->link.mtu };
        u->rx_msgs[i].msg_hdr = (struct msghdr){ .msg_iov = &u->rx_iov[i], .msg_iovlen = 1,
                                                 .msg_name = &u->rx_from[i],
                                                 .msg_namelen = sizeof u->rx_from[i] };
    }
    int r = recvmmsg(u->fd, u->rx_msgs, max, MSG_DONTWAIT, NULL);
    if (r <= 0)
        return 0;
    unsigned n = 0;
    for (int i = 0; i < r; i++) {
        if (u->rx_msgs[i].msg_hdr.msg_flags & MSG_TRUNC) {
            u->st.rx_truncated++;
            continue;
        }
        em_pkt_t *p = &u->rx_pkts[n];
        p->data = u->rx_iov[i].iov_base;
        p->len = u->rx_msgs[i].msg_len;
        p->priv = &u->rx_from[i];
        pkts[n++] = p;
    }
    u->st.rx_dgrams += (uint64_t)r;
    return n;
}

static void udp_rx_release(em_link_t *l, em_pkt_t **pkts, unsigned n) { (void)l; (void)pkts; (void)n; }
static int udp_flush(em_link_t *l) { (void)l; return 0; }

static uint64_t sin_key(const struct sockaddr_in *s)
{
    return (uint64_t)ntohl(s->sin_addr.s_addr) << 16 | ntohs(s->sin_port);
}

/* the peer whose address (set_peer) sent this datagram */
static uint16_t udp_rx_peer(em_link_t *l, const em_pkt_t *p)
{
    const struct udp_link *u = (const struct udp_link *)l;
    const struct sockaddr_in *s = p->priv;
    if (!s || s->sin_family != AF_INET)
        return EM_LINK_PEER_UNKNOWN;
    return em_addr_map_get(&u->bysrc, sin_key(s));
}

static int udp_set_peer(em_link_t *l, uint16_t peer, const em_link_addr_t *a)
{
    struct udp_link *u = (struct udp_link *)l;
    if (a->len != 6)
        return -EINVAL;
    if (em_peer_table_reserve((void **)&u->peers, &u->npeers, sizeof *u->peers, peer) != 0)
        return -ENOMEM;
    struct sockaddr_in *s = &u->peers[peer];
    if (s->sin_family == AF_INET)
        em_addr_map_del(&u->bysrc, sin_key(s), peer);
    s->sin_family = AF_INET;
    memcpy(&s->sin_addr.s_addr, a->bytes, 4);
    memcpy(&s->sin_port, a->bytes + 4, 2);
    return em_addr_map_put(&u->bysrc, sin_key(s), peer) == 0 ? 0 : -ENOMEM;
}

static void udp_close(em_link_t *l)
{
    struct udp_link *u = (struct udp_link *)l;
    if (u->fd >= 0)
        close(u->fd);
    free(u->peers);
    em_addr_map_free(&u->bysrc);
    free(u->tx_mem);
    free(u->rx_mem);
    free(u);
}

static const em_link_ops_t udp_ops = {
    .name = "udp",
    .tx_alloc = udp_tx_alloc, .tx_burst = udp_tx_burst, .tx_free = udp_tx_free,
    .rx_burst = udp_rx_burst, .rx_release = udp_rx_release, .flush = udp_flush,
    .set_peer = udp_set_peer, .close = udp_close, .rx_peer = udp_rx_peer,
};

/** Does @p a match the selector (name, address or subnet)? */
static int iface_matches(const struct ifaddrs *ifa, const char *sel)
{
    const struct sockaddr_in *sin = (const struct sockaddr_in *)ifa->ifa_addr;
    if (!sel || !*sel)
        return !(ifa->ifa_flags & IFF_LOOPBACK);
    if (strcmp(ifa->ifa_name, sel) == 0)
        return 1;
    char buf[64];
    snprintf(buf, sizeof buf, "%s", sel);
    char *slash = strchr(buf, '/');
    int bits = 32;
    if (slash) {
        *slash = 0;
        bits = atoi(slash + 1);
        if (bits < 0 || bits > 32)
            return 0;
    }
    struct in_addr want;
    if (inet_pton(AF_INET, buf, &want) != 1)
        return 0;
    uint32_t mask = bits == 0 ? 0 : htonl(~0u << (32 - bits));
    return (sin->sin_addr.s_addr & mask) == (want.s_addr & mask);
}

/** Find the interface: fills @p addr and @p name, or writes an error. */
static int pick_iface(const char *sel, struct in_addr *addr, char *name, size_t namelen,
                      char *err, size_t errlen)
{
    struct ifaddrs *ifs, *ifa;
    char avail[256] = "";
    if (getifaddrs(&ifs) != 0) {
        snprintf(err, errlen, "getifaddrs failed: %s", strerror(errno));
        return -1;
    }
    for (ifa = ifs; ifa; ifa = ifa->ifa_next) {
        if (!ifa->ifa_addr || ifa->ifa_addr->sa_family != AF_INET || !(ifa->ifa_flags & IFF_UP))
            continue;
        if (iface_matches(ifa, sel)) {
            *addr = ((struct sockaddr_in *)ifa->ifa_addr)->sin_addr;
            snprintf(name, namelen, "%s", ifa->ifa_name);
            freeifaddrs(ifs);
            return 0;
        }
        size_t used = strlen(avail);
        char ip[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &((struct sockaddr_in *)ifa->ifa_addr)->sin_addr, ip, sizeof ip);
        snprintf(avail + used, sizeof avail - used, "%s%s (%s)", used ? ", " : "", ifa->ifa_name, ip);
    }
    freeifaddrs(ifs);
    snprintf(err, errlen, "no IPv4 interface matches '%s'; interfaces that are up: %s",
             sel && *sel ? sel : "(any non-loopback)", *avail ? avail : "none");
    return -1;
}

em_link_t *em_link_udp_open(const em_udp_cfg_t *cfg, char *err, size_t errlen)
{
    struct in_addr ip;
    char ifname[64];
    if (pick_iface(cfg->iface, &ip, ifname, sizeof ifname, err, errlen) != 0)
        return NULL;

    struct udp_link *u = calloc(1, sizeof *u);
    if (!u) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    u->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (u->fd < 0) {
        snprintf(err, errlen, "socket(AF_INET, SOCK_DGRAM) failed: %s", strerror(errno));
        free(u);
        return NULL;
    }
    uint32_t mtu = cfg->mtu;
    if (mtu == 0) {
        uint32_t ifmtu = em_if_mtu(ifname);
        mtu = ifmtu > 28 ? ifmtu - 28 : 1472;
    }
    if (mtu > 65507)
        mtu = 65507;
    int buf = cfg->sock_buf ? cfg->sock_buf : 4 << 20;
    /* as root the FORCE variants pass net.core.[rw]mem_max; otherwise best effort */
    if (setsockopt(u->fd, SOL_SOCKET, SO_SNDBUFFORCE, &buf, sizeof buf) != 0)
        setsockopt(u->fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
    if (setsockopt(u->fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof buf) != 0)
        setsockopt(u->fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);

    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(cfg->port), .sin_addr = ip };
    socklen_t sl = sizeof sa;
    if (bind(u->fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        getsockname(u->fd, (struct sockaddr *)&sa, &sl) != 0) {
        snprintf(err, errlen, "cannot bind UDP %s:%u on %s: %s", inet_ntoa(ip), cfg->port,
                 ifname, strerror(errno));
        close(u->fd);
        free(u);
        return NULL;
    }
    u->tx_mem = malloc((size_t)UDP_TX_POOL * mtu);
    u->rx_mem = malloc((size_t)UDP_RX_BURST * mtu);
    if (!u->tx_mem || !u->rx_mem) {
        snprintf(err, errlen, "out of memory for UDP buffers");
        udp_close(&u->link);
        return NULL;
    }
    for (unsigned i = 0; i < UDP_TX_POOL; i++) {
        u->tx_pkts[i].data = u->tx_mem + (size_t)i * mtu;
        u->tx_free[i] = &u->tx_pkts[i];
    }
    u->ntx_free = UDP_TX_POOL;
    u->link.ops = &udp_ops;
    u->link.mtu = mtu;
    u->link.flags = EM_LINK_F_GATHER;
    u->link.local.len = 6;
    memcpy(u->link.local.bytes, &sa.sin_addr.s_addr, 4);
    memcpy(u->link.local.bytes + 4, &sa.sin_port, 2);
    return &u->link;
}

const em_udp_stats_t *em_link_udp_stats(const em_link_t *l) { return &((const struct udp_link *)l)->st; }
int em_link_udp_fd(const em_link_t *l) { return ((const struct udp_link *)l)->fd; }

void em_link_udp_addr_str(const em_link_addr_t *a, char *buf, size_t len)
{
    char ip[INET_ADDRSTRLEN] = "?";
    uint16_t port = 0;
    if (a->len == 6) {
        inet_ntop(AF_INET, a->bytes, ip, sizeof ip);
        memcpy(&port, a->bytes + 4, 2);
    }
    snprintf(buf, len, "%s:%u", ip, ntohs(port));
}
