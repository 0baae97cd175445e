/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file link_xdp.h
 * The native AF_XDP link: the kernel-bypass path clouds and ordinary
 * Ethernet clusters offer (ENA, gVNIC, virtio-net, mlx5, ice, i40e all run
 * XDP) without handing a NIC to a user-space driver, and without DPDK.
 *
 * AF_XDP sockets on one or several interface queues (`queues`, all on one
 * UMEM: libxdp's xsk_socket__create_shared, each socket with its own fill
 * and completion ring), on libxdp's xsk API, with:
 *  - multi-buffer frames (XDP_USE_SG, Linux 6.6 and later) up to the
 *    interface's MTU: a tx frame is a run of consecutive UMEM chunks (no
 *    copy), an rx frame of several chunks is gathered into a bounce buffer;
 *  - XDP_USE_NEED_WAKEUP: no syscall while the kernel is busy anyway;
 *  - busy polling (SO_PREFER_BUSY_POLL, SO_BUSY_POLL, SO_BUSY_POLL_BUDGET)
 *    when asked and the kernel allows it;
 *  - zero copy tried first, copy mode otherwise, the reason kept
 *    (em_xdp_link_info) and said in the log;
 *  - our XDP filter (xdp_drop.o, "xdp" or "xdp.frags"): only ethermpi's
 *    frames leave the kernel; a program someone else attached is never
 *    replaced or removed (an error names it).
 * L2 framing: Ethernet header (peer MAC, our MAC, ethertype 0x88B5), then
 * the protocol frame.  A peer's address is its MAC and queue (8 bytes, the
 * same as the DPDK link's L2 address, so either end may be either link),
 * and the interface's IPv4 address when it has one (12 bytes): a peer whose
 * address the kernel routes through a gateway is refused at set_peer
 * naming the udp framing, instead of timing out.
 * udp framing (framing_udp): Ethernet + IPv4 + UDP (link/ipudp.h) to the
 * peer's address and port through the next hop the kernel names
 * (link/neigh.h), for routed and cloud networks; the link MTU loses the 28
 * bytes of IP and UDP.  A peer's address is then MAC, queue, IPv4, port (14
 * bytes: the DPDK link's udp address).  xdp_udp.c holds it.
 * First contact (link.h tx_to, rx_from) as on the DPDK link (link_dpdk.h):
 * tx_to builds the headers from the address it is given (L2: its MAC, no
 * segment check; udp: its IPv4 and port through the next hop known now,
 * -EHOSTUNREACH without waiting while the kernel ARPs), making no peer
 * entry; rx_from judges a frame's source MAC (udp: source IPv4 and port).
 *
 * Several queues (cfg.queues > 1): sockets on queues [queue, queue+queues),
 * one process owning them all (em_xdp_guard_acquire for each), each rx
 * queue mapped to its socket in the filter's XSKMAP.  rx polls every
 * socket, the first one polled rotating from call to call, each taking at
 * most its share of the caller's burst before the others have had theirs.
 * tx sends a peer's frames on one socket, queue + (peer id % queues):
 * stable per peer, so one peer's frames keep their order, and peers spread
 * over the queues (dense peer numbers spread evenly; one stream never
 * spans two queues).  Completion rings of all sockets are reaped.  The
 * address still names the first ("home") queue.  Which queue a frame
 * arrives on is the receiver's business:
 *  - on a NIC, its RSS hash (or an ntuple rule) chooses; a frame on a
 *    queue this process did not open goes to the kernel stack, which drops
 *    our ethertype.  Point RSS at the opened queues (ethtool -X IF equal N,
 *    with N = queue + queues) or open all of them;
 *  - on a veth, the receiver's rx queue is the index of the sender's tx
 *    queue.  Both ends with the same queue and queues settings (as every
 *    rank of a job gets them) works.  When counts differ, a sender with
 *    more queues sends some peers' frames on queues the receiver did not
 *    open; those frames are lost and the protocol retransmits on the same
 *    queue until it gives the peer up: give every rank the same settings.
 *
 * Threading: one thread at a time, like every link.
 */
#ifndef EM_LINK_XDP_LINK_XDP_H
#define EM_LINK_XDP_LINK_XDP_H

#include <stdint.h>

#include "link/ipudp.h"
#include "link/link.h"

/** The ethertype of ethermpi's reliable protocol (as the DPDK link's L2 framing). */
#define EM_XDP_ETHERTYPE 0x88B5u
/** A peer's address: MAC (6 bytes), queue (2, big-endian). */
#define EM_XDP_ADDR_LEN 8u
/** ... in L2 framing on an interface with IPv4: and that address (4), so a
 *  peer behind a router is refused at set_peer (the DPDK link's L2 blob). */
#define EM_XDP_ADDR_L2_IP_LEN 12u
/** ... in udp framing: and IPv4 (4), UDP port (2), both big-endian. */
#define EM_XDP_ADDR_UDP_LEN 14u
/** Queues one link may open (cfg.queues).  One thread polls them all: past
 *  a handful, empty rings cost more per call than the spread gains. */
#define EM_XDP_MAX_QUEUES 16u

typedef struct em_xdp_cfg {
    const char *ifname;    /**< interface */
    uint32_t queue;        /**< its (first) receive/transmit queue */
    uint32_t queues;       /**< sockets on queues [queue, queue+queues); 0 or 1: one */
    uint32_t mtu;          /**< L2 payload bytes; 0: the interface's MTU */
    uint32_t frames;       /**< UMEM chunks (power of 2; 0: 4096) */
    int zero_copy;         /**< 1 only zero copy, 0 only copy, -1 zero copy if the driver can */
    uint32_t busy_poll_us; /**< SO_BUSY_POLL (0: no busy polling) */
    uint32_t busy_budget;  /**< SO_BUSY_POLL_BUDGET (0: the kernel's default) */
    const char *prog;      /**< the filter object (xdp_drop.o); NULL: EM_XDP_PROG, then the
                               installed one */
    double rx_loss;        /**< testing: drop this fraction of received frames (seeded) */
    uint64_t loss_seed;    /**< its stream (0: the fixed default) */
    int framing_udp;       /**< 1: UDP/IPv4 framing; 0: L2 */
    uint16_t udp_port;     /**< udp framing: our port (0: EM_UDP_PORT, which the filter takes) */
    const char *udp_addr;  /**< udp framing: our IPv4 (NULL or "": the interface's) */
    int udp_no_csum;       /**< udp framing: send no UDP checksum */
    uint32_t resolve_ms;   /**< udp framing: how long set_peer waits for ARP (0: 3000) */
    uint16_t ethertype;    /**< L2 framing: 0 = EM_XDP_ETHERTYPE; em_bcast: 0x88B6 */
} em_xdp_cfg_t;

/** What the link ended up with, for logs, stats and ethermpi-info. */
typedef struct em_xdp_info {
    int zero_copy;         /**< 1 zero copy, 0 copy mode */
    int native;            /**< 1 the filter runs in the driver, 0 generic (skb) XDP */
    int multi_buffer;      /**< 1 frames may span UMEM chunks (XDP_USE_SG) */
    int busy_poll;         /**< 1 busy-poll options set */
    uint32_t chunk;        /**< UMEM chunk bytes */
    uint32_t queue;        /**< the first ("home") queue: the one the address names */
    uint32_t queues;       /**< sockets opened, on queues [queue, queue+queues) */
    char why_copy[160];    /**< why not zero copy (empty when zero copy) */
    char why_no_busy[120]; /**< why not busy polling (empty when set or not asked) */
} em_xdp_info_t;

typedef struct em_xdp_stats {
    uint64_t rx_frames, tx_frames;
    uint64_t rx_gathered;   /**< rx frames of several chunks (copied into a bounce buffer) */
    uint64_t rx_bad;        /**< refused: not our ethertype, shorter than a header, too long */
    uint64_t rx_loss_drops; /**< dropped by rx_loss (testing) */
    uint64_t tx_full;       /**< tx ring full: frames left to the caller */
    uint64_t wakeups;       /**< syscalls the kernel asked for (need-wakeup) */
    em_ipudp_counters_t udp_refused;  /**< udp framing: received frames refused, by reason */
    uint64_t nh_changes;              /**< udp framing: next-hop MACs changed (neighbour watch) */
    uint64_t q_rx[EM_XDP_MAX_QUEUES]; /**< frames received per queue (index: queue - first) */
    uint64_t q_tx[EM_XDP_MAX_QUEUES]; /**< frames sent per queue */
} em_xdp_stats_t;

/**
 * Open the link.  @return it, or NULL with the reason (and its fix) in
 * @p err: no such interface, no XDP in its driver, an MTU the driver cannot
 * take with multi-buffer frames, a missing capability, another program on
 * the interface.
 */
em_link_t *em_xdp_link_open(const em_xdp_cfg_t *cfg, char *err, size_t errlen);
const em_xdp_info_t *em_xdp_link_info(const em_link_t *l);
const em_xdp_stats_t *em_xdp_link_stats(const em_link_t *l);
/** Why the last set_peer failed ("" when it did not): udp framing's
 *  unreachable next hop or too small path MTU, a framing mismatch. */
const char *em_xdp_link_peer_error(const em_link_t *l);
/** The per-queue counters as text ("q0 rx 12 tx 9, q1 rx 3 tx 7"), for the
 *  stats lines of every front end; "" with one queue. */
void em_xdp_link_queue_stats(const em_link_t *l, char *buf, size_t len);

#endif
