/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file link_util.c
 * Small pieces shared by the link implementations (see link_util.h).
 */
#include "link/link_util.h"
#include "link/link.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <linux/filter.h>
#include <net/if.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

int em_peer_table_reserve(void **tab, uint32_t *n, size_t elem, uint32_t peer)
{
    if (peer < *n)
        return 0;
    if (peer == EM_LINK_PEER_UNKNOWN)
        return -EINVAL; /* no peer's number */
    /* doubling in 64 bits (a 32-bit count would wrap to 0 past 2^31), then
     * no more than the 2^32 - 1 entries a uint32_t count holds */
    uint64_t nn = *n ? *n : 16;
    while (nn <= peer)
        nn *= 2;
    if (nn > UINT32_MAX)
        nn = (uint64_t)peer + 1;
    if (nn > SIZE_MAX / elem)
        return -ENOMEM;
    uint8_t *np = realloc(*tab, (size_t)nn * elem);
    if (!np)
        return -ENOMEM;
    memset(np + (size_t)*n * elem, 0, (size_t)(nn - *n) * elem);
    *tab = np;
    *n = (uint32_t)nn;
    return 0;
}

#define MAP_FREE 0xFFFFFFFFu /* EM_LINK_PEER_UNKNOWN */

static uint32_t map_slot(uint64_t key, uint32_t cap)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    return (uint32_t)key & (cap - 1);
}

static int map_grow(em_addr_map_t *m)
{
    uint32_t nc = m->cap ? m->cap * 2 : 64;
    uint64_t *k = calloc(nc, sizeof *k);
    uint32_t *p = malloc(nc * sizeof *p);
    if (!k || !p) {
        free(k);
        free(p);
        return -ENOMEM;
    }
    for (uint32_t i = 0; i < nc; i++)
        p[i] = MAP_FREE;
    for (uint32_t i = 0; i < m->cap; i++) {
        if (m->peers[i] == MAP_FREE)
            continue;
        uint32_t s = map_slot(m->keys[i], nc);
        while (p[s] != MAP_FREE)
            s = (s + 1) & (nc - 1);
        k[s] = m->keys[i];
        p[s] = m->peers[i];
    }
    free(m->keys);
    free(m->peers);
    m->keys = k;
    m->peers = p;
    m->cap = nc;
    return 0;
}

int em_addr_map_put(em_addr_map_t *m, uint64_t key, uint32_t peer)
{
    if ((m->n + 1) * 2 > m->cap && map_grow(m) != 0)
        return -ENOMEM;
    uint32_t s = map_slot(key, m->cap);
    while (m->peers[s] != MAP_FREE && m->keys[s] != key)
        s = (s + 1) & (m->cap - 1);
    if (m->peers[s] == MAP_FREE)
        m->n++;
    m->keys[s] = key;
    m->peers[s] = peer;
    return 0;
}

uint32_t em_addr_map_get(const em_addr_map_t *m, uint64_t key)
{
    if (!m->cap)
        return MAP_FREE;
    for (uint32_t s = map_slot(key, m->cap);; s = (s + 1) & (m->cap - 1)) {
        if (m->peers[s] == MAP_FREE)
            return MAP_FREE;
        if (m->keys[s] == key)
            return m->peers[s];
    }
}

void em_addr_map_del(em_addr_map_t *m, uint64_t key, uint32_t peer)
{
    if (em_addr_map_get(m, key) != peer || peer == MAP_FREE)
        return;
    /* linear probing: take the entry out and put the rest of its run back */
    uint32_t s = map_slot(key, m->cap);
    while (m->keys[s] != key)
        s = (s + 1) & (m->cap - 1);
    m->peers[s] = MAP_FREE;
    m->n--;
    for (uint32_t t = (s + 1) & (m->cap - 1); m->peers[t] != MAP_FREE; t = (t + 1) & (m->cap - 1)) {
        uint64_t k = m->keys[t];
        uint32_t v = m->peers[t];
        m->peers[t] = MAP_FREE;
        m->n--;
        (void)em_addr_map_put(m, k, v); /* never grows: n went down by one */
    }
}

void em_addr_map_free(em_addr_map_t *m)
{
    free(m->keys);
    free(m->peers);
    *m = (em_addr_map_t){ 0 };
}

uint32_t em_if_mtu(const char *ifname)
{
    struct ifreq ifr;
    size_t len = ifname ? strnlen(ifname, sizeof ifr.ifr_name) : 0;
    if (len == 0 || len >= sizeof ifr.ifr_name)
        return 0;
    memset(&ifr, 0, sizeof ifr);
    memcpy(ifr.ifr_name, ifname, len);
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    int rc = ioctl(fd, SIOCGIFMTU, &ifr);
    close(fd);
    return rc == 0 && ifr.ifr_mtu > 0 ? (uint32_t)ifr.ifr_mtu : 0;
}

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

int em_pick_ipv4_iface(const char *sel, struct in_addr *addr, char *name, size_t namelen, char *err,
                       size_t errlen)
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
        snprintf(avail + used, sizeof avail - used, "%s%s (%s)", used ? ", " : "", ifa->ifa_name,
                 ip);
    }
    freeifaddrs(ifs);
    snprintf(err, errlen, "no IPv4 interface matches '%s'; interfaces that are up: %s",
             sel && *sel ? sel : "(any non-loopback)", *avail ? avail : "none");
    return -1;
}

int em_sock_ask_buf(int fd, int force, int opt, int want)
{
    int v;
    socklen_t sl = sizeof v;
    if (setsockopt(fd, SOL_SOCKET, force, &want, sizeof want) != 0)
        setsockopt(fd, SOL_SOCKET, opt, &want, sizeof want);
    /* getsockopt answers twice the usable size (the kernel's bookkeeping share) */
    return getsockopt(fd, SOL_SOCKET, opt, &v, &sl) == 0 ? v / 2 : 0;
}

int em_sock_drop_all_input(int fd)
{
    struct sock_filter drop = BPF_STMT(BPF_RET | BPF_K, 0);
    struct sock_fprog prog = { .len = 1, .filter = &drop };
    return setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof prog);
}

void em_link_say_once(uint64_t *warned, uint32_t peer, const char *link, const char *msg)
{
    uint64_t bit = peer < 64 ? 1ull << peer : 0;
    if (!msg[0] || (bit && (*warned & bit)))
        return;
    char host[64] = "";
    gethostname(host, sizeof host - 1);
    fprintf(stderr, "[%s] ethermpi %s: %s\n", host, link, msg);
    *warned |= bit;
}
