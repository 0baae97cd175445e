/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file settings_dump.c
 * Prints the settings table (src/transport/settings.c) as tab-separated
 * lines "name<TAB>type<TAB>fronts<TAB>default", fronts as letters r (rudp
 * BTL), d (dpdk BTL), o (provider), e (emd's port): the reference run-frontend-check
 * compares every front end's published parameters against.
 */
#include <stdio.h>

#include "transport/settings.h"

int main(void)
{
    static const char *const types[] = { "int", "bool", "string", "double" };
    em_settings_t s;
    em_settings_default(&s);
    size_t n;
    const em_setting_t *t = em_settings_table(&n);
    for (size_t i = 0; i < n; i++) {
        char v[256];
        em_setting_format(&s, &t[i], v, sizeof v);
        printf("%s\t%s\t%s%s%s%s\t%s\n", t[i].name, types[t[i].type],
               t[i].fronts & EM_FRONT_RUDP ? "r" : "", t[i].fronts & EM_FRONT_DPDK ? "d" : "",
               t[i].fronts & EM_FRONT_OFI ? "o" : "", t[i].fronts & EM_FRONT_EMD ? "e" : "", v);
    }
    return 0;
}
