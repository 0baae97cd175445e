/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file devargs.c
 * Device specifications and lists: "%h"/"%j" expansion, "@FILE" (its first
 * line), several devices separated by ';' (link_dpdk.h); reading one key of
 * a devargs string; a memif server's stale socket file (devargs.h).
 */
#include "link/dpdk/devargs.h"
#include "link/link_dpdk.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

int em_dpdk_vdev_item(const char *list, unsigned index, char *out, size_t len)
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
static int devargs_one(const char *spec, const char *job, char *out, size_t len, char *err,
                       size_t errlen)
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

int em_link_dpdk_devargs(const char *spec, const char *job, char *out, size_t len, char *err,
                         size_t errlen)
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

int em_dpdk_devarg(const char *devargs, const char *key, char *out, size_t len)
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

int em_dpdk_memif_remove_stale_socket(const char *devargs)
{
    char role[16], abstract[8], path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    if (strncmp(devargs, "net_memif", 9) != 0 ||
        !em_dpdk_devarg(devargs, "role", role, sizeof role) || strcmp(role, "server") != 0 ||
        !em_dpdk_devarg(devargs, "socket-abstract", abstract, sizeof abstract) ||
        strcmp(abstract, "no") != 0 || !em_dpdk_devarg(devargs, "socket", path, sizeof path))
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
