/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file procfs.h
 * One field of a "Key: value" file under /proc (/proc/self/status,
 * /proc/meminfo), for the few places that ask the kernel about this process
 * or host.  Header-only, no state: safe from any thread.
 */
#ifndef EM_UTIL_PROCFS_H
#define EM_UTIL_PROCFS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/**
 * The number after @p key at the start of a line of @p path (key with its
 * colon: "CapEff:", "HugePages_Free:"), read in @p base (16 for masks, 10
 * for counts).
 * @return the value, or @p dflt when the file cannot be read or has no such
 *         line.
 */
static inline unsigned long long em_proc_field(const char *path, const char *key, int base,
                                               unsigned long long dflt)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return dflt;
    char line[256];
    size_t klen = strlen(key);
    unsigned long long v = dflt;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, key, klen) == 0) {
            v = strtoull(line + klen, NULL, base);
            break;
        }
    fclose(f);
    return v;
}

#endif
