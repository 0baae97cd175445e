/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file bcast_fanout.c
 * udp framing beyond a router (em_bcast_set_members): a broadcast does not
 * cross a router, so when a member is behind one (or the caller forces
 * it), link peers 1..k become the other members by unicast and each
 * update is fanned out to them.  The same for the dpdk and the xdp
 * backend, whose udp addresses have one layout (MAC, queue, IPv4, port).
 */
#include "bcast/bcast_internal.h"

#include <stdio.h>
#include <string.h>

#include "link/neigh.h"

int em_bcast_fanout(em_link_t *l, const uint32_t *ipv4, uint16_t n, uint16_t self, int force,
                    char *err, size_t errlen)
{
    const char *who = l->ops->name; /* "dpdk" or "xdp" */
    unsigned behind = 0;
    for (uint16_t m = 0; m < n && !force; m++) {
        em_route_t r;
        char why[256];
        if (m == self || !ipv4[m])
            continue;
        if (em_route_get(ipv4[m], &r, why, sizeof why) != 0) {
            snprintf(err, errlen, "%s-bcast: member %u: %s", who, m, why);
            return -1;
        }
        behind += r.gateway != 0;
    }
    if (!behind && !force)
        return 0; /* the broadcast reaches everyone */
    uint16_t k = 0;
    for (uint16_t m = 0; m < n; m++) {
        if (m == self || !ipv4[m])
            continue;
        em_link_addr_t a = { .len = 14 }; /* MAC, queue, IPv4, port: both links */
        a.bytes[8] = (uint8_t)(ipv4[m] >> 24);
        a.bytes[9] = (uint8_t)(ipv4[m] >> 16);
        a.bytes[10] = (uint8_t)(ipv4[m] >> 8);
        a.bytes[11] = (uint8_t)ipv4[m];
        memcpy(a.bytes + 12, l->local.bytes + 12, 2); /* the same port everywhere */
        if (em_link_set_peer(l, (uint16_t)(k + 1), &a) != 0) {
            snprintf(err, errlen, "%s-bcast: member %u: %s", who, m,
                     strcmp(who, "xdp") == 0 ? em_bcast_xdp_peer_error(l)
                                             : em_bcast_dpdk_peer_error(l));
            return -1;
        }
        k++;
    }
    if (k)
        fprintf(stderr,
                "em_bcast: %s: each update goes by unicast to the %u other member(s) "
                "instead (udp framing, fan-out)\n",
                force ? "broadcast not used (asked for fan-out)"
                      : "some members are behind a router, which a broadcast does not cross",
                k);
    return k;
}
