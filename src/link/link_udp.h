/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file link_udp.h
 * The burst interface over one kernel UDP socket per process (seed 001:
 * one port per process, instead of one TCP connection per peer pair).
 * Non-blocking; bursts go through sendmmsg(2)/recvmmsg(2).
 *
 * Address blob: 4 bytes IPv4 + 2 bytes port, network byte order.
 */
#ifndef EM_LINK_UDP_H
#define EM_LINK_UDP_H

#include <stddef.h>
#include <stdint.h>

#include "link/link.h"

typedef struct em_udp_cfg {
    /** Interface to bind: a name ("eth0"), an IPv4 address, or a subnet
     *  ("10.77.0.0/24"); NULL or "" = the first non-loopback IPv4 interface. */
    const char *iface;
    uint16_t port;      /**< 0 = any free port */
    uint32_t mtu;       /**< max frame (UDP payload); 0 = interface MTU - 28 */
    int sock_buf;       /**< SO_SNDBUF/SO_RCVBUF bytes; 0 = 4 MiB */
} em_udp_cfg_t;

typedef struct em_udp_stats {
    uint64_t tx_dgrams, rx_dgrams, tx_errors, rx_truncated, tx_unknown_peer;
} em_udp_stats_t;

/**
 * Open the link.  On failure returns NULL and writes a sentence a user can
 * act on into @p err (e.g. which interfaces exist when the named one does not).
 */
em_link_t *em_link_udp_open(const em_udp_cfg_t *cfg, char *err, size_t errlen);
const em_udp_stats_t *em_link_udp_stats(const em_link_t *l);
/** The socket descriptor (for counting descriptors, or to wait on it). */
int em_link_udp_fd(const em_link_t *l);
/** Render an address blob as "a.b.c.d:port". */
void em_link_udp_addr_str(const em_link_addr_t *a, char *buf, size_t len);

#endif
