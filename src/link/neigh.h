/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file neigh.h
 * The next hop of a UDP path (udp framing), from the kernel of the interface
 * a kernel-bypass port rides on (af_xdp; a NIC that also has a kernel
 * interface): the route toward the peer (RTM_GETROUTE: on-link, or via a
 * gateway; the route's MTU), then the next hop's MAC from the interface's
 * neighbour table (RTM_GETNEIGH).  A missing entry is resolved the kernel's
 * way: a kernel UDP datagram to the peer's discard port makes the kernel
 * ARP for the next hop; then the table is read again, for a bounded time.
 * Changes are followed through an RTNLGRP_NEIGH subscription that the data
 * path polls now and then (em_neigh_watch_poll: one non-blocking recv).
 *
 * Threading: no shared state; a watch is used by one thread at a time.
 * All addresses host order.
 */
#ifndef EM_LINK_NEIGH_H
#define EM_LINK_NEIGH_H

#include <stddef.h>
#include <stdint.h>

/** The route toward a destination. */
typedef struct em_route {
    int ifindex;      /**< outgoing interface */
    uint32_t gateway; /**< next hop router; 0: the destination is on-link */
    uint32_t prefsrc; /**< preferred source address (0: none given) */
    uint32_t mtu;     /**< the route's MTU metric (0: none; use the interface's) */
} em_route_t;

/** A resolved next hop. */
typedef struct em_nexthop {
    int ifindex;
    uint32_t ip;      /**< the next hop's address (gateway or the peer itself) */
    uint32_t gateway; /**< 0: on-link */
    uint8_t mac[6];
    uint32_t path_mtu; /**< route MTU, else the interface's */
} em_nexthop_t;

/**
 * The kernel's route to @p dst (RTM_GETROUTE).
 * @return 0, or -1 with a sentence in @p err (no route, netlink error).
 */
int em_route_get(uint32_t dst, em_route_t *r, char *err, size_t errlen);

/**
 * L2 framing: the peer at @p dst must be on the segment of @p ifname
 * (index @p ifindex): the kernel's route to it on-link, through that
 * interface.  The errors name the cause; behind a router, raw frames of
 * @p ethertype do not cross it, and the job runs with @p fix (how the
 * caller's front end selects udp framing).
 * @return 0, or -EHOSTUNREACH with a sentence in @p err.
 */
int em_l2_segment_check(uint32_t dst, const char *ifname, int ifindex, uint16_t ethertype,
                        const char *fix, char *err, size_t errlen);

/**
 * The neighbour entry of @p ip on interface @p ifindex.
 * @return 1 with @p mac set when the entry has a usable link-layer address
 * (reachable, stale, delay, probe, permanent, noarp), 0 when there is none
 * (or it is incomplete or failed), -1 on a netlink error.
 */
int em_neigh_get(int ifindex, uint32_t ip, uint8_t mac[6]);

/**
 * Route to @p dst, which must leave through @p ifname, and the next hop's
 * MAC.  Without a neighbour entry: one kernel UDP datagram to @p dst port
 * 9 (discard) makes the kernel resolve the next hop by ARP; the table is
 * polled every 5 ms for up to @p wait_ms.  @p wait_ms 0: one look, and
 * without an entry the datagram is still sent, so the kernel resolves it
 * in the background while the caller goes on (and asks again later).
 * @return 0, or -1 with a sentence naming the cause in @p err (no route,
 * the route leaves through another interface, no ARP answer from the next
 * hop or the gateway within @p wait_ms).
 */
int em_nexthop_resolve(uint32_t dst, const char *ifname, uint32_t wait_ms, em_nexthop_t *nh,
                       char *err, size_t errlen);

/**
 * The first IPv4 address of @p ifname and its prefix length.
 * @return 0, or -1 (no such interface, no IPv4 address).
 */
int em_if_ipv4(const char *ifname, uint32_t *ip, unsigned *prefix_len);

/** A subscription to neighbour changes (RTNLGRP_NEIGH). */
typedef struct em_neigh_watch {
    int fd;           /**< -1: not open */
    uint64_t changes; /**< entries updated through the watch */
} em_neigh_watch_t;

/** @return 0, or -1 (the watch stays closed; callers then re-query instead). */
int em_neigh_watch_open(em_neigh_watch_t *w);
void em_neigh_watch_close(em_neigh_watch_t *w);

/**
 * Read the pending notifications (non-blocking) and apply those about
 * interface @p ifindex and one of the @p n addresses @p ips: a new MAC is
 * written to @p macs[i] and @p valid[i] set to 1; a deleted or failed
 * entry sets @p valid[i] to 0 (the caller resolves it again).
 * @return how many entries changed.
 */
unsigned em_neigh_watch_poll(em_neigh_watch_t *w, int ifindex, const uint32_t *ips,
                             uint8_t (*macs)[6], uint8_t *valid, unsigned n);

#endif
