/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file link_util.h
 * Small pieces shared by the link implementations: peer tables, the
 * source-address map, a kernel interface's MTU.  (What only the DPDK link
 * needs lives in src/link/dpdk/.)
 */
#ifndef EM_LINK_UTIL_H
#define EM_LINK_UTIL_H

#include <stddef.h>
#include <netinet/in.h>
#include <stdint.h>

/**
 * Make the peer table *@p tab (*@p n entries of @p elem bytes) hold index
 * @p peer, growing it (doubling, new entries zeroed) when needed.
 * @return 0, -ENOMEM, or -EINVAL for EM_LINK_PEER_UNKNOWN (no peer).
 */
int em_peer_table_reserve(void **tab, uint32_t *n, size_t elem, uint32_t peer);

/**
 * Source address -> peer index, for em_link_ops::rx_peer: an open-addressing
 * hash of 64-bit address keys (IPv4 + port, MAC, MAC + endpoint), so a
 * frame's source is judged in O(1) whatever the job size.  Zero-init is an
 * empty map.
 */
typedef struct em_addr_map {
    uint64_t *keys;
    uint32_t *peers; /**< EM_LINK_PEER_UNKNOWN (0xFFFFFFFF) marks a free cell */
    uint32_t cap, n; /**< cells (power of two), used cells */
} em_addr_map_t;

/** Map @p key to @p peer (replacing its previous peer). @return 0 or -ENOMEM. */
int em_addr_map_put(em_addr_map_t *m, uint64_t key, uint32_t peer);
/** The peer of @p key, or 0xFFFFFFFF (EM_LINK_PEER_UNKNOWN). */
uint32_t em_addr_map_get(const em_addr_map_t *m, uint64_t key);
/** Forget @p key's entry when it maps to @p peer (the peer's address changed). */
void em_addr_map_del(em_addr_map_t *m, uint64_t key, uint32_t peer);
void em_addr_map_free(em_addr_map_t *m);
/** Six bytes (a MAC) and a 16-bit number as one key. */
static inline uint64_t em_addr_key6(const uint8_t b[6], uint16_t x)
{
    uint64_t k = 0;
    for (int i = 0; i < 6; i++)
        k = k << 8 | b[i];
    return k << 16 | x;
}

/**
 * Say @p msg on stderr as "[host] ethermpi <@p link>: <msg>" once per peer:
 * a set_peer error, of which the front end only learns that the peer is
 * unreachable.  @p warned: the peers already said (bit p for peer p < 64;
 * a peer >= 64 is said each time).  Nothing when @p msg is empty.
 * Threading: the caller's @p warned, one thread at a time.
 */
void em_link_say_once(uint64_t *warned, uint32_t peer, const char *link, const char *msg);

/** MTU of kernel interface @p ifname (SIOCGIFMTU), 0 when unknown. */
uint32_t em_if_mtu(const char *ifname);

/**
 * The IPv4 interface that selector @p sel names: an interface name
 * ("eth0"), an IPv4 address, or a subnet ("10.77.0.0/24"); NULL or "" =
 * the first non-loopback one that is up.  Fills @p addr and @p name, or
 * writes an error naming the interfaces that are up and returns -1.
 */
int em_pick_ipv4_iface(const char *sel, struct in_addr *addr, char *name, size_t namelen, char *err,
                       size_t errlen);

/**
 * Ask for @p want bytes of buffer @p opt (SO_SNDBUF or SO_RCVBUF) on @p fd.
 * As root the FORCE variant @p force passes net.core.[rw]mem_max; otherwise
 * the kernel clamps to those sysctls (em_link_udp_buf_warning() reports
 * it).  @return the usable bytes granted (0 if unknown).
 */
int em_sock_ask_buf(int fd, int force, int opt, int want);

/** Attach a filter that keeps no byte of any datagram sent to socket @p fd
 *  (a send-only socket: a stranger's datagrams then cost no buffer; the
 *  kernel counts them as the socket's drops).  setsockopt's result. */
int em_sock_drop_all_input(int fd);

#endif
