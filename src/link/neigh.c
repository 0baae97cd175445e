/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file neigh.c
 * Route and neighbour lookups over rtnetlink (see neigh.h).
 */
#include "link/neigh.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "link/ipudp.h"
#include "link/link_util.h"

#define NL_BUF 16384

static int nl_open(unsigned groups)
{
    int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (fd < 0)
        return -1;
    struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = groups };
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        close(fd);
        return -1;
    }
    struct timeval tv = { .tv_sec = 1 }; /* the kernel answers at once; never hang */
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
}

/* append attribute @p type with @p len bytes to the message in @p buf */
static void nl_attr(struct nlmsghdr *n, size_t cap, unsigned short type, const void *data,
                    unsigned short len)
{
    struct rtattr *a = (struct rtattr *)((char *)n + NLMSG_ALIGN(n->nlmsg_len));
    if (NLMSG_ALIGN(n->nlmsg_len) + RTA_SPACE(len) > cap)
        return;
    a->rta_type = type;
    a->rta_len = (unsigned short)RTA_LENGTH(len);
    memcpy(RTA_DATA(a), data, len);
    n->nlmsg_len = (uint32_t)(NLMSG_ALIGN(n->nlmsg_len) + RTA_SPACE(len));
}

static uint32_t be32_at(const struct rtattr *a)
{
    uint32_t v = 0;
    if (RTA_PAYLOAD(a) >= 4)
        memcpy(&v, RTA_DATA(a), 4);
    return ntohl(v);
}

int em_route_get(uint32_t dst, em_route_t *r, char *err, size_t errlen)
{
    char ipstr[16];
    em_ipv4_str(dst, ipstr, sizeof ipstr);
    memset(r, 0, sizeof *r);
    int fd = nl_open(0);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open a netlink socket: %s", strerror(errno));
        return -1;
    }
    union {
        struct nlmsghdr n;
        char buf[NL_BUF];
    } u;
    memset(&u, 0, 256);
    u.n.nlmsg_len = NLMSG_LENGTH(sizeof(struct rtmsg));
    u.n.nlmsg_type = RTM_GETROUTE;
    u.n.nlmsg_flags = NLM_F_REQUEST;
    u.n.nlmsg_seq = 1;
    struct rtmsg *rm = NLMSG_DATA(&u.n);
    rm->rtm_family = AF_INET;
    rm->rtm_dst_len = 32;
    uint32_t dbe = htonl(dst);
    nl_attr(&u.n, 256, RTA_DST, &dbe, 4);
    int rc = -1;
    if (send(fd, &u.n, u.n.nlmsg_len, 0) < 0) {
        snprintf(err, errlen, "netlink route query for %s: %s", ipstr, strerror(errno));
        goto out;
    }
    ssize_t got = recv(fd, u.buf, sizeof u.buf, 0);
    if (got < 0) {
        snprintf(err, errlen, "netlink route query for %s: %s", ipstr, strerror(errno));
        goto out;
    }
    for (struct nlmsghdr *n = &u.n; NLMSG_OK(n, (size_t)got); n = NLMSG_NEXT(n, got)) {
        if (n->nlmsg_type == NLMSG_ERROR) {
            const struct nlmsgerr *e = NLMSG_DATA(n);
            snprintf(err, errlen, "no route to %s: %s (check 'ip route get %s')", ipstr,
                     strerror(e->error < 0 ? -e->error : EHOSTUNREACH), ipstr);
            goto out;
        }
        if (n->nlmsg_type != RTM_NEWROUTE)
            continue;
        const struct rtmsg *m = NLMSG_DATA(n);
        int alen = (int)RTM_PAYLOAD(n);
        for (const struct rtattr *a = RTM_RTA(m); RTA_OK(a, alen); a = RTA_NEXT(a, alen)) {
            if (a->rta_type == RTA_OIF && RTA_PAYLOAD(a) >= 4)
                memcpy(&r->ifindex, RTA_DATA(a), 4);
            else if (a->rta_type == RTA_GATEWAY)
                r->gateway = be32_at(a);
            else if (a->rta_type == RTA_PREFSRC)
                r->prefsrc = be32_at(a);
            else if (a->rta_type == RTA_METRICS) {
                int mlen = (int)RTA_PAYLOAD(a);
                for (const struct rtattr *x = RTA_DATA(a); RTA_OK(x, mlen); x = RTA_NEXT(x, mlen))
                    if (x->rta_type == RTAX_MTU && RTA_PAYLOAD(x) >= 4)
                        memcpy(&r->mtu, RTA_DATA(x), 4);
            }
        }
        if (m->rtm_type != RTN_UNICAST && m->rtm_type != RTN_LOCAL) {
            snprintf(err, errlen, "no unicast route to %s (route type %u; check 'ip route get %s')",
                     ipstr, m->rtm_type, ipstr);
            goto out;
        }
        rc = r->ifindex > 0 ? 0 : -1;
        if (rc)
            snprintf(err, errlen, "the route to %s names no interface", ipstr);
        goto out;
    }
    snprintf(err, errlen, "netlink gave no route to %s", ipstr);
out:
    close(fd);
    return rc;
}

/* a usable link-layer address in this state? */
static int state_usable(uint16_t st)
{
    return (st & (NUD_REACHABLE | NUD_STALE | NUD_DELAY | NUD_PROBE | NUD_PERMANENT | NUD_NOARP)) !=
           0;
}

/* the (ifindex, ip, mac, usable) of one neighbour message; 0 if not IPv4 */
static int parse_neigh(const struct nlmsghdr *n, int *ifindex, uint32_t *ip, uint8_t mac[6],
                       int *usable, int *has_mac)
{
    if (n->nlmsg_len < NLMSG_LENGTH(sizeof(struct ndmsg)))
        return 0;
    const struct ndmsg *nd = NLMSG_DATA(n);
    if (nd->ndm_family != AF_INET)
        return 0;
    *ifindex = nd->ndm_ifindex;
    *usable = n->nlmsg_type == RTM_NEWNEIGH && state_usable(nd->ndm_state);
    *has_mac = 0;
    *ip = 0;
    int alen = (int)(n->nlmsg_len - NLMSG_LENGTH(sizeof *nd));
    for (const struct rtattr *a =
             (const struct rtattr *)((const char *)nd + NLMSG_ALIGN(sizeof *nd));
         RTA_OK(a, alen); a = RTA_NEXT(a, alen)) {
        if (a->rta_type == NDA_DST)
            *ip = be32_at(a);
        else if (a->rta_type == NDA_LLADDR && RTA_PAYLOAD(a) == 6) {
            memcpy(mac, RTA_DATA(a), 6);
            *has_mac = 1;
        }
    }
    if (!*has_mac)
        *usable = 0;
    return 1;
}

int em_neigh_get(int ifindex, uint32_t ip, uint8_t mac[6])
{
    int fd = nl_open(0);
    if (fd < 0)
        return -1;
    struct {
        struct nlmsghdr n;
        struct ndmsg nd;
    } req;
    memset(&req, 0, sizeof req);
    req.n.nlmsg_len = NLMSG_LENGTH(sizeof req.nd);
    req.n.nlmsg_type = RTM_GETNEIGH;
    req.n.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    req.n.nlmsg_seq = 2;
    req.nd.ndm_family = AF_INET;
    req.nd.ndm_ifindex = ifindex; /* the kernel filters by it when strict; we check anyway */
    int found = -1;
    if (send(fd, &req, req.n.nlmsg_len, 0) < 0)
        goto out;
    static __thread char buf[NL_BUF];
    found = 0;
    for (int done = 0, rounds = 0; !done && rounds < 4096; rounds++) {
        ssize_t got = recv(fd, buf, sizeof buf, 0);
        if (got <= 0) {
            found = -1;
            break;
        }
        for (struct nlmsghdr *n = (struct nlmsghdr *)buf; NLMSG_OK(n, (size_t)got);
             n = NLMSG_NEXT(n, got)) {
            if (n->nlmsg_type == NLMSG_DONE || n->nlmsg_type == NLMSG_ERROR) {
                done = 1;
                break;
            }
            int ifi, usable, has_mac;
            uint32_t nip;
            uint8_t m[6];
            if (parse_neigh(n, &ifi, &nip, m, &usable, &has_mac) && ifi == ifindex && nip == ip &&
                usable) {
                memcpy(mac, m, 6);
                found = 1;
            }
        }
    }
out:
    close(fd);
    return found;
}

/* one datagram through the kernel: it resolves the next hop toward @p dst */
static void kick_resolution(uint32_t dst)
{
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return;
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(9) };
    sa.sin_addr.s_addr = htonl(dst);
    (void)sendto(s, "", 0, MSG_DONTWAIT, (struct sockaddr *)&sa, sizeof sa);
    close(s);
}

int em_nexthop_resolve(uint32_t dst, const char *ifname, uint32_t wait_ms, em_nexthop_t *nh,
                       char *err, size_t errlen)
{
    em_route_t r;
    char dstr[16], hstr[16], oif[IF_NAMESIZE] = "?";
    em_ipv4_str(dst, dstr, sizeof dstr);
    if (em_route_get(dst, &r, err, errlen) != 0)
        return -1;
    int want = (int)if_nametoindex(ifname);
    if (want == 0) {
        snprintf(err, errlen, "no interface '%s' in this network namespace", ifname);
        return -1;
    }
    if (r.ifindex != want) {
        if_indextoname((unsigned)r.ifindex, oif);
        snprintf(err, errlen,
                 "the route to %s leaves through %s, not through %s (the port's "
                 "interface): the peer is not reachable on this port",
                 dstr, oif, ifname);
        return -1;
    }
    memset(nh, 0, sizeof *nh);
    nh->ifindex = r.ifindex;
    nh->gateway = r.gateway;
    nh->ip = r.gateway ? r.gateway : dst;
    uint32_t ifmtu = em_if_mtu(ifname);
    nh->path_mtu = r.mtu && (!ifmtu || r.mtu < ifmtu) ? r.mtu : ifmtu;
    em_ipv4_str(nh->ip, hstr, sizeof hstr);
    for (uint32_t t = 0;; t += 5) {
        int f = em_neigh_get(r.ifindex, nh->ip, nh->mac);
        if (f == 1)
            return 0;
        if (f < 0) {
            snprintf(err, errlen, "cannot read the neighbour table of %s over netlink: %s", ifname,
                     strerror(errno));
            return -1;
        }
        if (t % 500 == 0)
            kick_resolution(dst); /* the kernel ARPs for the next hop */
        if (t >= wait_ms)
            break; /* wait_ms 0: asked once, the answer comes later */
        nanosleep(&(struct timespec){ .tv_nsec = 5000000 }, NULL);
    }
    if (r.gateway)
        snprintf(err, errlen,
                 "no neighbour entry for the gateway %s (next hop toward %s) on %s "
                 "after %u ms: it did not answer ARP (a kernel UDP datagram to %s was sent to make "
                 "the kernel ask; check 'ip neigh show dev %s' and that the router is up)",
                 hstr, dstr, ifname, wait_ms, dstr, ifname);
    else
        snprintf(err, errlen,
                 "no neighbour entry for %s on %s after %u ms: it did not answer ARP "
                 "(a kernel UDP datagram to it was sent to make the kernel ask; is the peer's "
                 "interface up and on this subnet? check 'ip neigh show dev %s')",
                 dstr, ifname, wait_ms, ifname);
    return -1;
}

int em_if_ipv4(const char *ifname, uint32_t *ip, unsigned *prefix_len)
{
    struct ifaddrs *ifa0;
    if (getifaddrs(&ifa0) != 0)
        return -1;
    int rc = -1;
    for (struct ifaddrs *a = ifa0; a; a = a->ifa_next) {
        if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET || strcmp(a->ifa_name, ifname) != 0)
            continue;
        *ip = ntohl(((const struct sockaddr_in *)a->ifa_addr)->sin_addr.s_addr);
        uint32_t m = a->ifa_netmask
                         ? ntohl(((const struct sockaddr_in *)a->ifa_netmask)->sin_addr.s_addr)
                         : 0;
        *prefix_len = (unsigned)__builtin_popcount(m);
        rc = 0;
        break;
    }
    freeifaddrs(ifa0);
    return rc;
}

int em_neigh_watch_open(em_neigh_watch_t *w)
{
    w->changes = 0;
    w->fd = nl_open(1u << (RTNLGRP_NEIGH - 1));
    return w->fd >= 0 ? 0 : -1;
}

void em_neigh_watch_close(em_neigh_watch_t *w)
{
    if (w->fd >= 0)
        close(w->fd);
    w->fd = -1;
}

unsigned em_neigh_watch_poll(em_neigh_watch_t *w, int ifindex, const uint32_t *ips,
                             uint8_t (*macs)[6], uint8_t *valid, unsigned n)
{
    if (w->fd < 0)
        return 0;
    static __thread char buf[NL_BUF];
    unsigned changed = 0;
    for (int rounds = 0; rounds < 64; rounds++) { /* bounded per call */
        ssize_t got = recv(w->fd, buf, sizeof buf, MSG_DONTWAIT);
        if (got <= 0)
            break;
        for (struct nlmsghdr *m = (struct nlmsghdr *)buf; NLMSG_OK(m, (size_t)got);
             m = NLMSG_NEXT(m, got)) {
            if (m->nlmsg_type != RTM_NEWNEIGH && m->nlmsg_type != RTM_DELNEIGH)
                continue;
            int ifi, usable, has_mac;
            uint32_t ip;
            uint8_t mac[6];
            if (!parse_neigh(m, &ifi, &ip, mac, &usable, &has_mac) || ifi != ifindex)
                continue;
            for (unsigned i = 0; i < n; i++) {
                if (ips[i] != ip)
                    continue;
                if (usable && (!valid[i] || memcmp(macs[i], mac, 6) != 0)) {
                    memcpy(macs[i], mac, 6);
                    valid[i] = 1;
                    changed++;
                } else if (!usable && m->nlmsg_type == RTM_DELNEIGH && valid[i]) {
                    valid[i] = 0;
                    changed++;
                }
            }
        }
    }
    w->changes += changed;
    return changed;
}

int em_l2_segment_check(uint32_t dst, const char *ifname, int ifindex, uint16_t ethertype,
                        const char *fix, char *err, size_t errlen)
{
    char s[16], g[16], why[256];
    em_ipv4_str(dst, s, sizeof s);
    em_route_t r;
    if (em_route_get(dst, &r, why, sizeof why) != 0) {
        snprintf(err, errlen, "L2 framing: peer %s unreachable: %s", s, why);
        return -EHOSTUNREACH;
    }
    if (r.gateway) {
        em_ipv4_str(r.gateway, g, sizeof g);
        snprintf(err, errlen,
                 "L2 framing: peer %s unreachable: it is behind the router %s, and raw Ethernet "
                 "frames (ethertype 0x%04x) do not cross a router; run the job with %s",
                 s, g, ethertype, fix);
        return -EHOSTUNREACH;
    }
    if (r.ifindex != ifindex) {
        snprintf(err, errlen,
                 "L2 framing: peer %s unreachable: it is not on %s's segment (the kernel routes "
                 "it through another interface)",
                 s, ifname);
        return -EHOSTUNREACH;
    }
    return 0;
}
