/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file devargs.c
 * Device specifications and lists: "%h"/"%j" expansion, "@FILE" (its first
 * line), several devices separated by ';' (link_dpdk.h).
 */
#include "link/dpdk/dpdk_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
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
