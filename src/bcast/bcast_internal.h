/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file bcast_internal.h
 * The backends' entry points (one file each), called by em_bcast_open.
 */
#ifndef EM_BCAST_INTERNAL_H
#define EM_BCAST_INTERNAL_H

#include "bcast/em_bcast.h"

/** The DPDK backend's ethertype (IEEE 802 local experimental 2), beside the
 *  dpdk BTL protocol's EM_ETHERTYPE (0x88B5) on a shared port. */
#define EM_ETHERTYPE_BCAST 0x88B6u

/** A link over kernel UDP broadcast; peer 0 is the broadcast address. */
em_link_t *em_bcast_udp_link_open(const em_bcast_cfg_t *cfg, char *err, size_t errlen);

/** A link_dpdk port under EM_ETHERTYPE_BCAST; peer 0 is ff:ff:ff:ff:ff:ff. */
em_link_t *em_bcast_dpdk_link_open(const em_bcast_cfg_t *cfg, char *err, size_t errlen);

/** The native AF_XDP link under EM_ETHERTYPE_BCAST; peer 0 is the broadcast address. */
em_link_t *em_bcast_xdp_link_open(const em_bcast_cfg_t *cfg, char *err, size_t errlen);

/** Why the bypass link's last set_peer failed (the DPDK or the xdp link). */
const char *em_bcast_dpdk_peer_error(const em_link_t *l);
const char *em_bcast_xdp_peer_error(const em_link_t *l);

/** udp framing on the dpdk or xdp link (the same 14-byte udp address):
 *  point link peers 1..k at the members that need unicast
 *  (em_bcast_set_members).  @return k, 0, or -1 with @p err. */
int em_bcast_fanout(em_link_t *l, const uint32_t *ipv4, uint16_t n, uint16_t self, int force,
                    char *err, size_t errlen);

#endif
