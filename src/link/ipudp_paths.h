/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file ipudp_paths.h
 * The per-peer paths of udp framing (link/ipudp.h), shared by the
 * kernel-bypass links that run it (the DPDK link's src/link/dpdk/udp.c, the
 * native AF_XDP link's src/link/xdp/xdp_udp.c): our IPv4 address, UDP port
 * and subnet broadcast; for every peer its path (addresses), its headers
 * prepared once (em_ipudp_template_t) and its next hop (link/neigh.h: the
 * kernel's route and neighbour, followed through a neighbour watch); the
 * source (IPv4, port) -> peer map that rx_peer reads; which destinations a
 * received frame may carry.  What stays with a link: its frame layout, its
 * checksum offloads, its counters' home.
 *
 * Next hop of a peer's address:
 *  - 255.255.255.255 or our subnet's broadcast: ff:ff:ff:ff:ff:ff (the
 *    path sends only: no peer is mapped from it);
 *  - 224.0.0.0/4: the RFC 1112 group MAC 01:00:5e + the low 23 bits;
 *  - no kernel interface (a DPDK memif cable): the peer's own MAC, since a
 *    cable has no router;
 *  - else the kernel's neighbour of the route's next hop on our interface,
 *    resolved now (bounded by the resolve timeout) and refused when the
 *    route's MTU is below our packets (they are never fragmented).
 *
 * Error texts name the cause and the setting that fixes it, in the words of
 * the link the table belongs to (em_udp_paths_cfg_t's setting names).
 * Threading: a table is used by one thread at a time (the link's); no
 * shared state.  All addresses host order.
 */
#ifndef EM_LINK_IPUDP_PATHS_H
#define EM_LINK_IPUDP_PATHS_H

#include <net/if.h>
#include <stddef.h>
#include <stdint.h>

#include "link/ipudp.h"
#include "link/link_util.h"
#include "link/neigh.h"

/** Every this many em_udp_paths_poll calls the neighbour watch is read
 *  (one non-blocking recv: a few µs every few ms of polling). */
#define EM_UDP_NEIGH_POLL_EVERY 4096u

/** How a link sets up its table (em_udp_paths_init). */
typedef struct em_udp_paths_cfg {
    const char *addr;         /**< our IPv4 address as configured; NULL or "": em_udp_paths_init */
    uint32_t if_ip;           /**< the interface's first IPv4 address (0: none) */
    unsigned if_plen;         /**< its prefix length (0: unknown: no subnet broadcast) */
    uint32_t fallback_ip;     /**< no address and no interface: this one (a cable) */
    uint16_t port;            /**< our UDP port; 0: EM_UDP_PORT */
    uint32_t resolve_ms;      /**< next-hop resolution bound; 0: 3000 */
    unsigned tx_flags;        /**< enum em_ipudp_tx_flags of every template */
    const char *ifname;       /**< the kernel interface; NULL or "": none (a cable) */
    int ifindex;              /**< its index (0: none: no neighbour watch) */
    const char *addr_setting; /**< in errors: "btl_dpdk_udp_addr", "the udp_addr setting" */
    const char *mtu_setting;  /**< in errors: "btl_dpdk_mtu", "the mtu setting" */
    const char *unit;         /**< in errors: "this <unit>'s packets": "port", "link" */
} em_udp_paths_cfg_t;

/** Both bypass links' address blobs: MAC (bytes 0-5), queue (6-7), then
 *  the IPv4 address (8-11: udp framing, and L2 framing with the
 *  interface's address) and the UDP port (12-13: udp framing), big-endian. */
#define EM_UDP_BLOB_IP   8u
#define EM_UDP_BLOB_PORT 12u

/** The IPv4 address in @p blob (host order). */
static inline uint32_t em_udp_blob_ip(const uint8_t *blob)
{
    const uint8_t *b = blob + EM_UDP_BLOB_IP;
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

/** The UDP port in @p blob (host order). */
static inline uint16_t em_udp_blob_port(const uint8_t *blob)
{
    return (uint16_t)(blob[EM_UDP_BLOB_PORT] << 8 | blob[EM_UDP_BLOB_PORT + 1]);
}

/** Write @p ip into @p blob (big-endian). */
static inline void em_udp_blob_put_ip(uint8_t *blob, uint32_t ip)
{
    for (int i = 0; i < 4; i++)
        blob[EM_UDP_BLOB_IP + i] = (uint8_t)(ip >> (24 - 8 * i));
}

/** A link's udp framing state: ours, and per peer (npeers entries each). */
typedef struct em_udp_paths {
    uint32_t ip; /**< ours */
    uint16_t port;
    uint32_t bcast_ip; /**< our subnet's broadcast address (0: unknown) */
    uint32_t resolve_ms;
    unsigned tx_flags;
    char ifname[IF_NAMESIZE]; /**< "": no kernel interface */
    int ifindex;
    const char *mtu_setting, *unit;
    em_neigh_watch_t watch; /**< fd -1: not open (no refresh; right until a MAC changes) */
    uint32_t tick;
    uint32_t npeers;
    em_ipudp_path_t *path;     /**< the headers' addresses */
    em_ipudp_template_t *tmpl; /**< the headers, prepared */
    uint32_t *nh_ip;           /**< next hop (0: not from the kernel) */
    uint8_t (*nh_mac)[6];      /**< what the watch last saw */
    uint8_t *nh_valid;
    em_addr_map_t bysrc; /**< (IPv4, port) -> peer */
    uint64_t warned;     /**< set_peer errors already said (em_link_say_once) */
    /* tx_to's next-hop resolutions for addresses no peer has (netlink
     * calls, and an ARP the kernel sends): a bucket of EM_UDP_NH_BURST,
     * one more per EM_UDP_NH_EVERY_NS, so that answers to unproven frames
     * cannot keep the progress thread in netlink */
    uint32_t nh_tokens;
    uint64_t nh_tokens_at;
} em_udp_paths_t;

/** tx_to's resolutions for addresses no peer has: this many at once ... */
#define EM_UDP_NH_BURST 64u
/** ... and one more every this many ns (1000 a second). */
#define EM_UDP_NH_EVERY_NS 1000000ull

/**
 * Set up @p t from @p c: our address is @p c->addr when given (it must be
 * an IPv4 address), else the interface's, else, without an interface,
 * @p c->fallback_ip; our subnet's broadcast when our address is the
 * interface's and its prefix is below /31; the neighbour watch opened when
 * there is an interface index (without it: no refresh).
 * @return 0, or -1 with a sentence in @p err (nothing to free then).
 */
int em_udp_paths_init(em_udp_paths_t *t, const em_udp_paths_cfg_t *c, char *err, size_t errlen);
/** Free what @p t holds (the watch, the per-peer arrays, the map). */
void em_udp_paths_free(em_udp_paths_t *t);

/** Write our IPv4 address and UDP port into our @p blob. */
void em_udp_blob_put(const em_udp_paths_t *t, uint8_t *blob);

/** Grow the per-peer arrays to hold @p peer (new entries zeroed).
 *  @return 0, or -1 (out of memory: the arrays keep npeers entries). */
int em_udp_paths_reserve(em_udp_paths_t *t, uint32_t peer);

/**
 * The next hop's MAC of @p ip (see the file's rules) for packets of
 * @p link_mtu + EM_IPUDP_OVERHEAD bytes; @p cable_mac: the peer's MAC, used
 * when @p t has no interface.  @p nh_ip: the next hop's address when the
 * kernel gave it, else 0 (broadcast, group, cable: never refreshed).
 * @return 0, -EHOSTUNREACH (no route or no ARP answer) or -EMSGSIZE (path
 * MTU below our packets, naming the MTU setting to lower), with a sentence
 * in @p err.
 */
int em_udp_next_hop(const em_udp_paths_t *t, uint32_t ip, uint32_t link_mtu,
                    const uint8_t *cable_mac, uint8_t mac[6], uint32_t *nh_ip, char *err,
                    size_t errlen);

/**
 * Make @p peer's path go from @p src_mac and our address and port to
 * @p ip, @p port (next hop: em_udp_next_hop), its template prepared, and
 * (unless the next hop is a broadcast or group MAC, which only sends) the
 * source (@p ip, @p port) mapped to @p peer instead of its previous one.
 * On an error the peer's previous path stays.
 * @return 0, -ENOMEM, or em_udp_next_hop's error with its sentence in @p err.
 */
int em_udp_paths_set_peer(em_udp_paths_t *t, uint32_t peer, uint32_t ip, uint16_t port,
                          const uint8_t src_mac[6], uint32_t link_mtu, const uint8_t *cable_mac,
                          char *err, size_t errlen);

/**
 * First contact (link.h tx_to): the headers toward (@p ip, @p port), an
 * address that may be no peer's, into @p tmpl, from @p src_mac and our
 * address and port, without waiting and without touching any peer's
 * state.  The next hop: a peer's at that address (kept current by the
 * watch), else by the rules above with the kernel's neighbour table as it
 * is now (em_nexthop_resolve without waiting: a missing entry has the
 * kernel ARP in the background, and the handshake's retries find it).
 * Resolutions for addresses no peer has are rate limited
 * (EM_UDP_NH_BURST, EM_UDP_NH_EVERY_NS): beyond, -EHOSTUNREACH at once.
 * @return 0, or -EHOSTUNREACH (no route, no neighbour entry yet, over the
 * rate) or -EMSGSIZE with a sentence in @p err.
 */
int em_udp_paths_tmpl_to(em_udp_paths_t *t, uint32_t ip, uint16_t port, const uint8_t src_mac[6],
                         uint32_t link_mtu, const uint8_t *cable_mac, em_ipudp_template_t *tmpl,
                         char *err, size_t errlen);

/** rx_from of udp framing: are the headers at @p hdr (EM_IPUDP_HDR_LEN
 *  bytes, as decoded) from source (@p ip, @p port)?  rx_peer's judgment
 *  (by IPv4 and port, never by MAC: across a router the source MAC is the
 *  router's) against one address. */
static inline int em_udp_paths_rx_from(const uint8_t *hdr, uint32_t ip, uint16_t port)
{
    const uint8_t *s = hdr + 26, *sp = hdr + 34;
    return ((uint32_t)s[0] << 24 | (uint32_t)s[1] << 16 | (uint32_t)s[2] << 8 | s[3]) == ip &&
           (uint16_t)(sp[0] << 8 | sp[1]) == port;
}

/** The peer whose (IPv4, port) is the source of the headers at @p hdr
 *  (EM_IPUDP_HDR_LEN bytes, as decoded), or EM_LINK_PEER_UNKNOWN (0xFFFF). */
uint32_t em_udp_paths_rx_peer(const em_udp_paths_t *t, const uint8_t *hdr);

/** 1 when a received frame to @p dst_ip is ours: our address, the limited
 *  or our subnet's broadcast, a group (224.0.0.0/4); else 0. */
int em_udp_accept_dst(const em_udp_paths_t *t, uint32_t dst_ip);

/**
 * Check a received frame of @p len bytes at @p f (em_ipudp_decode with the
 * NIC's @p rx_flags, then em_udp_accept_dst, the headers 42 bytes, the
 * payload within @p link_mtu) and fill @p rx.
 * @return 0, or -1 with the reason counted in @p refused.
 */
int em_udp_paths_rx(const em_udp_paths_t *t, const uint8_t *f, uint32_t len, unsigned rx_flags,
                    uint32_t link_mtu, em_ipudp_counters_t *refused, em_ipudp_rx_t *rx);

/**
 * Every EM_UDP_NEIGH_POLL_EVERY calls: read the neighbour watch and, for
 * every peer whose kernel next hop has a new MAC, rewrite its path and
 * template; a deleted entry keeps the old MAC while the kernel is asked
 * again (its answer comes back through the watch).
 * @return how many peers' next-hop MACs changed (the link counts them).
 */
unsigned em_udp_paths_poll(em_udp_paths_t *t);

#endif
