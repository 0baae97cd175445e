/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file bcast_udp.c
 * The broadcast channel's kernel UDP backend ([relax-dpdk]'s baseline, Koishi et
 * al.): one socket per member, SO_BROADCAST, every frame one datagram to the
 * IPv4 broadcast address of the chosen interface.  Implemented as a small
 * em_link_t whose only peer (0) is that broadcast address, so bcast.c runs
 * unchanged over it.  The kernel loops a member's own broadcasts back to
 * it; bcast.c recognises and ignores them.
 */
#include "bcast/bcast_internal.h"
#include "link/link_util.h"
#include "link/pkt_pool.h"

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

#define TX_POOL       64
#define RX_BURST      32
#define IPV4_UDP_HDRS 28u
#define DEFAULT_PORT  47603

struct ubc_link {
    em_link_t link; /* must be first */
    int fd;
    struct sockaddr_in bcast;
    em_pkt_t tx[TX_POOL];
    em_pkt_t *tx_stack[TX_POOL];
    em_pkt_pool_t tx_pool; /* free packets of tx[] */
    uint8_t *tx_mem;
    em_pkt_t rx[RX_BURST];
    uint8_t *rx_mem;
    struct mmsghdr msgs[RX_BURST];
    struct iovec iov[RX_BURST];
};

static em_pkt_t *ubc_tx_alloc(em_link_t *l)
{
    return em_pkt_pool_get(&((struct ubc_link *)l)->tx_pool);
}

static void ubc_tx_free(em_link_t *l, em_pkt_t *p)
{
    em_pkt_pool_put(&((struct ubc_link *)l)->tx_pool, p);
}

static unsigned ubc_tx_burst(em_link_t *l, em_pkt_t **pkts, unsigned n)
{
    struct ubc_link *u = (struct ubc_link *)l;
    unsigned done = 0;
    for (; done < n; done++) {
        em_pkt_t *p = pkts[done];
        ssize_t r = sendto(u->fd, p->data, p->len, MSG_DONTWAIT, (const struct sockaddr *)&u->bcast,
                           sizeof u->bcast);
        if (r < 0 &&
            (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS || errno == EINTR))
            break; /* socket full: the caller keeps this one */
        /* sent, or failed for good (the datagram is lost like a frame on a bad wire) */
        ubc_tx_free(l, p);
    }
    return done;
}

static unsigned ubc_rx_burst(em_link_t *l, em_pkt_t **pkts, unsigned max)
{
    struct ubc_link *u = (struct ubc_link *)l;
    if (max > RX_BURST)
        max = RX_BURST;
    for (unsigned i = 0; i < max; i++) {
        u->iov[i] = (struct iovec){ .iov_base = u->rx_mem + (size_t)i * u->link.mtu,
                                    .iov_len = u->link.mtu };
        u->msgs[i].msg_hdr = (struct msghdr){ .msg_iov = &u->iov[i], .msg_iovlen = 1 };
    }
    int r = recvmmsg(u->fd, u->msgs, max, MSG_DONTWAIT, NULL);
    unsigned n = 0;
    for (int i = 0; i < r; i++) {
        if (u->msgs[i].msg_hdr.msg_flags & MSG_TRUNC)
            continue; /* longer than our MTU: not one of ours */
        u->rx[n].data = u->iov[i].iov_base;
        u->rx[n].len = u->msgs[i].msg_len;
        pkts[n] = &u->rx[n];
        n++;
    }
    return n;
}

static int ubc_set_peer(em_link_t *l, uint32_t peer, const em_link_addr_t *a)
{
    (void)l;
    (void)peer;
    (void)a;
    return -ENOTSUP; /* one destination only: the broadcast address */
}

static void ubc_close(em_link_t *l)
{
    struct ubc_link *u = (struct ubc_link *)l;
    if (u->fd >= 0)
        close(u->fd);
    free(u->tx_mem);
    free(u->rx_mem);
    free(u);
}

static const em_link_ops_t ubc_ops = {
    .name = "udp-bcast",
    .tx_alloc = ubc_tx_alloc,
    .tx_burst = ubc_tx_burst,
    .tx_free = ubc_tx_free,
    .rx_burst = ubc_rx_burst,
    .rx_release = em_link_rx_release_none,
    .flush = em_link_flush_none,
    .set_peer = ubc_set_peer,
    .close = ubc_close,
};

/** The IPv4 broadcast address of @p ifname, or -1 with a reason. */
static int if_broadcast(const char *ifname, struct in_addr *out, char *err, size_t errlen)
{
    struct ifaddrs *ifs, *i;
    int found = 0, exists = 0;
    if (getifaddrs(&ifs) != 0) {
        snprintf(err, errlen, "udp-bcast: getifaddrs: %s", strerror(errno));
        return -1;
    }
    for (i = ifs; i; i = i->ifa_next) {
        if (strcmp(i->ifa_name, ifname) != 0)
            continue;
        exists = 1;
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_BROADCAST))
            continue;
        /* the configured broadcast address; for an address added without
         * "brd" getifaddrs reports 0.0.0.0 or the address itself: then use
         * the subnet's directed broadcast, for which the kernel adds a
         * broadcast route by itself */
        struct in_addr b = { 0 };
        uint32_t a = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
        if (i->ifa_broadaddr)
            b = ((struct sockaddr_in *)i->ifa_broadaddr)->sin_addr;
        if ((b.s_addr == 0 || b.s_addr == a) && i->ifa_netmask) {
            uint32_t m = ((struct sockaddr_in *)i->ifa_netmask)->sin_addr.s_addr;
            b.s_addr = m != 0xffffffffu ? (a | ~m) : 0;
        }
        if (b.s_addr != 0) {
            *out = b;
            found = 1;
            break;
        }
    }
    freeifaddrs(ifs);
    if (!found)
        snprintf(err, errlen,
                 exists ? "udp-bcast: interface '%s' has no IPv4 broadcast address"
                        : "udp-bcast: no interface '%s' in this network namespace "
                          "(pick one with the interface option)",
                 ifname);
    return found ? 0 : -1;
}

em_link_t *em_bcast_udp_link_open(const em_bcast_cfg_t *cfg, char *err, size_t errlen)
{
    const char *ifname = cfg->iface && *cfg->iface ? cfg->iface : "eth0";
    struct in_addr ba;
    if (if_broadcast(ifname, &ba, err, errlen) != 0)
        return NULL;
    uint32_t ifmtu = em_if_mtu(ifname);
    if (ifmtu <= IPV4_UDP_HDRS) {
        snprintf(err, errlen, "udp-bcast: cannot read the MTU of '%s'", ifname);
        return NULL;
    }
    struct ubc_link *u = calloc(1, sizeof *u);
    if (!u) {
        snprintf(err, errlen, "udp-bcast: out of memory");
        return NULL;
    }
    u->fd = -1;
    em_pkt_pool_init(&u->tx_pool, u->tx_stack, TX_POOL);
    u->link.ops = &ubc_ops;
    u->link.mtu = ifmtu - IPV4_UDP_HDRS;
    u->tx_mem = malloc((size_t)TX_POOL * u->link.mtu);
    u->rx_mem = malloc((size_t)RX_BURST * u->link.mtu);
    if (!u->tx_mem || !u->rx_mem) {
        snprintf(err, errlen, "udp-bcast: out of memory");
        ubc_close(&u->link);
        return NULL;
    }
    em_pkt_pool_fill(&u->tx_pool, u->tx, u->tx_mem, TX_POOL, u->link.mtu);
    uint16_t port = cfg->port ? cfg->port : DEFAULT_PORT;
    int one = 1, big = 4 << 20;
    u->fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (u->fd < 0 || setsockopt(u->fd, SOL_SOCKET, SO_BROADCAST, &one, sizeof one) != 0 ||
        /* several members on one node each get every broadcast */
        setsockopt(u->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0) {
        snprintf(err, errlen, "udp-bcast: socket: %s", strerror(errno));
        ubc_close(&u->link);
        return NULL;
    }
    (void)setsockopt(u->fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    (void)setsockopt(u->fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    /* only this interface's broadcasts (needs CAP_NET_RAW; best effort) */
    (void)setsockopt(u->fd, SOL_SOCKET, SO_BINDTODEVICE, ifname, (socklen_t)strlen(ifname));
    struct sockaddr_in any = { .sin_family = AF_INET,
                               .sin_port = htons(port),
                               .sin_addr.s_addr = htonl(INADDR_ANY) };
    if (bind(u->fd, (struct sockaddr *)&any, sizeof any) != 0) {
        snprintf(err, errlen, "udp-bcast: cannot bind UDP port %u: %s", port, strerror(errno));
        ubc_close(&u->link);
        return NULL;
    }
    u->bcast = (struct sockaddr_in){ .sin_family = AF_INET,
                                     .sin_port = htons(port),
                                     .sin_addr = ba };
    return &u->link;
}
