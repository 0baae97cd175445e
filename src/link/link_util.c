/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file link_util.c
 * Small pieces shared by the link implementations (see link_util.h).
 */
#include "link/link_util.h"

#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

int em_devarg(const char *devargs, const char *key, char *out, size_t len)
{
    size_t kl = strlen(key);
    const char *p = devargs;
    while ((p = strstr(p, key)) != NULL) {
        if ((p == devargs || p[-1] == ',') && p[kl] == '=') {
            p += kl + 1;
            size_t n = strcspn(p, ",");
            if (n == 0 || n >= len)
                return 0;
            memcpy(out, p, n);
            out[n] = 0;
            return 1;
        }
        p += kl;
    }
    return 0;
}

int em_peer_table_reserve(void **tab, uint32_t *n, size_t elem, uint16_t peer)
{
    if (peer < *n)
        return 0;
    uint32_t nn = *n ? *n : 16;
    while (nn <= peer)
        nn *= 2;
    uint8_t *np = realloc(*tab, (size_t)nn * elem);
    if (!np)
        return -ENOMEM;
    memset(np + (size_t)*n * elem, 0, (size_t)(nn - *n) * elem);
    *tab = np;
    *n = nn;
    return 0;
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

long em_hugepages_free(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[128];
    long v = 0;
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "HugePages_Free: %ld", &v) == 1)
            break;
    fclose(f);
    return v;
}

int em_memif_remove_stale_socket(const char *devargs)
{
    char role[16], abstract[8], path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    if (strncmp(devargs, "net_memif", 9) != 0 || !em_devarg(devargs, "role", role, sizeof role) ||
        strcmp(role, "server") != 0 || !em_devarg(devargs, "socket-abstract", abstract, sizeof abstract) ||
        strcmp(abstract, "no") != 0 || !em_devarg(devargs, "socket", path, sizeof path))
        return 0;
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISSOCK(st.st_mode))
        return 0;
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    memcpy(a.sun_path, path, strlen(path) + 1);
    int live = connect(fd, (struct sockaddr *)&a, sizeof a) == 0 || errno != ECONNREFUSED;
    close(fd);
    return !live && unlink(path) == 0;
}
