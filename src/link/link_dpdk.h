/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file link_dpdk.h
 * The burst interface over a DPDK poll-mode driver at layer 2: ethertype
 * 0x88B5 (IEEE 802 local experimental), MAC addressing, no IP stack (the
 * design of Shimada and Hayasaka's DPDK BTL for Open MPI; docs/design.md,
 * "link_dpdk and the dpdk BTL").  The PMD comes from a devargs string, so
 * the same code runs on net_memif (shared-memory "cable"), net_af_xdp (a
 * kernel interface) and a real NIC's PMD.
 *
 * Framing (em_dpdk_cfg_t::framing): L2 (default) sends raw
 * Ethernet frames of our ethertype; udp puts Ethernet + IPv4 + UDP
 * (link/ipudp.h) in front of the protocol frame, addressed to the peer's
 * IPv4 address and UDP port, through the next hop the kernel's tables name
 * (link/neigh.h), so routers and cloud networks carry it.
 *
 * Address blob: 6 bytes MAC + 2 bytes queue id (big-endian; always 0: a
 * link sends and receives on its port's queue 0); L2 framing on
 * a port with a kernel interface (af_xdp) adds the interface's IPv4
 * address (4 bytes, big-endian: 12 in all) so that a peer behind a router
 * is refused at set_peer with the reason, not left to time out; udp
 * framing: MAC, queue, IPv4 address, UDP port (14 bytes).
 *
 * First contact (link.h tx_to, rx_from): tx_to builds the headers from the
 * address it is given, without a peer entry: L2, the Ethernet header to
 * the address's MAC (8 or 12 bytes; no segment check, which set_peer
 * makes once per peer); udp framing (14 bytes), to its IPv4 address and
 * port through the next hop known now: a peer's at that address, the
 * broadcast, group and cable rules, or the kernel's neighbour table as it
 * is (link/ipudp_paths.h em_udp_paths_tmpl_to): without an entry tx_to
 * never waits; it has the kernel ARP and answers -EHOSTUNREACH, and the
 * handshake's retry finds the entry.  rx_from is rx_peer's judgment
 * against one address: the source MAC in L2 framing, the source IPv4 and
 * UDP port in udp framing (never the MAC: behind a router it is the
 * router's).
 *
 * Ports: a process opens up to EM_DPDK_MAX_PORTS ports (a ';'-separated
 * device list, one link each), and becomes a DPDK primary: EAL is started
 * with the first port, once per process, with a unique file prefix and the
 * calling thread's current CPU affinity (EAL would otherwise pin the MPI
 * rank to core 0), and cleaned up when the last port closes.  A port the
 * process already runs under another ethertype is shared (a second user,
 * e.g. an em_bcast channel beside the dpdk BTL; both reach this code in
 * libethermpi.so): sharers must close before the port's owner.
 * A port can also carry extra queue pairs for another user (cfg.extra).
 *
 * Threading: EAL and port-sharing state is process-global and unlocked; open
 * and close ports, and drive every link of a port, from one thread.
 * Source layout: src/link/dpdk/ (dpdk_internal.h).
 */
#ifndef EM_LINK_DPDK_H
#define EM_LINK_DPDK_H

#include <stddef.h>
#include <stdint.h>

#include "link/ipudp.h"
#include "link/link.h"

#define EM_ETHERTYPE 0x88B5u
/** Most ports one process opens (e.g. two memif cables: two links). */
#define EM_DPDK_MAX_PORTS 4

struct rte_mempool;

/** What the pool of an extra queue must fit (em_dpdk_extra_queues_t::rx_pool). */
typedef struct em_dpdk_queue_info {
    uint16_t port;      /**< DPDK port id */
    uint16_t queue;     /**< the queue pair: 1 .. extra.n */
    uint16_t priv_size; /**< mbuf private area of the port's frames (an em_pkt_t) */
    uint16_t data_room; /**< mbuf data room of the port's frames (headroom included) */
    int socket;         /**< NUMA socket of the port */
    const char *driver; /**< the PMD's name, for messages */
} em_dpdk_queue_info_t;

/**
 * Queue pairs beyond the link's own queue 0, for another user of the port
 * (e.g. DPDK secondary processes of this primary that drive queues of
 * their own, the way emd lends its clients own queues).
 * The link only configures them: it never polls nor sends on them.
 */
typedef struct em_dpdk_extra_queues {
    uint16_t n; /**< extra queue pairs (0: none; the port must have 1 + n) */
    /** The mempool that receives extra queue qi->queue, created and owned
     *  by the caller (em_link_dpdk_queue_pool makes one that fits).  Called
     *  once per queue, in queue order, before the port starts.  NULL fails
     *  the open, with a sentence in @p err. */
    struct rte_mempool *(*rx_pool)(void *ctx, const em_dpdk_queue_info_t *qi, char *err,
                                   size_t errlen);
    /** Optional: the open failed after rx_pool calls; free what they made
     *  (EAL still runs). */
    void (*undo)(void *ctx);
    void *ctx;
} em_dpdk_extra_queues_t;

/** em_dpdk_cfg_t::framing */
enum em_dpdk_framing {
    EM_DPDK_FRAMING_L2 = 0,  /**< raw Ethernet, our ethertype (one L2 segment) */
    EM_DPDK_FRAMING_UDP = 1, /**< Ethernet + IPv4 + UDP (routable; link/ipudp.h) */
};
/** Address blob lengths. */
#define EM_DPDK_ADDR_L2    8u
#define EM_DPDK_ADDR_L2_IP 12u
#define EM_DPDK_ADDR_UDP   14u

typedef struct em_dpdk_cfg {
    /** PMD devargs, e.g. "net_memif0,role=server,socket=/run/x.sock,socket-abstract=no"
     *  or "net_af_xdp0,iface=eth0,start_queue=0,queue_count=1".  NULL/"": use
     *  the first port EAL finds with @p eal_args (e.g. a PCI NIC). */
    const char *vdev;
    /** Extra EAL arguments, space separated; NULL/"": "--in-memory -m 256"
     *  when 128 hugepages are free, else "--no-huge --no-shconf -m 256". */
    const char *eal_args;
    /** --file-prefix; NULL = "em<pid>" (must be unique per process). */
    const char *file_prefix;
    /** 1: leave DPDK's telemetry socket on (<runtime dir>/dpdk_telemetry.v2,
     *  the runtime dir being /run/dpdk/<file_prefix> for root); 0 (every
     *  rank): --no-telemetry.  Only the node daemon turns it on: a socket
     *  and a thread in every rank process would fill the runtime dirs with
     *  one socket per rank, of processes that live for one job. */
    int telemetry;
    uint32_t mtu; /**< wanted L2 payload bytes; 0 = as large as port and mbufs allow (<= 9000) */
    uint32_t nb_mbufs; /**< mempool size; 0 = 8191 (af_xdp pre-fills >= 2048 per queue) */
    uint16_t nb_desc;  /**< ring descriptors per queue; 0 = 1024 */
    double
        rx_loss; /**< seeded drop probability on receive (loss injection for wires no kernel sees) */
    uint64_t loss_seed;
    uint32_t link_wait_ms; /**< how long to wait for link up; 0 = 10000 */
    /** ethertype of our frames (host order); 0 = EM_ETHERTYPE.  Another
     *  value (e.g. em_bcast's 0x88B6) keeps a second user of the wire
     *  apart: frames of other ethertypes are counted as rx_foreign. */
    uint16_t ethertype;
    /** 1: never send a payload from the caller's memory (EM_LINK_F_GATHER
     *  off: every payload is copied into the mbuf), for comparison. */
    int no_gather;
    /** Queue pairs for another user of the port (below); none when zeroed. */
    em_dpdk_extra_queues_t extra;
    /** enum em_dpdk_framing (0: L2) */
    int framing;
    /** udp framing: our UDP port; 0 = EM_UDP_PORT (the broadcast channel
     *  gives EM_UDP_PORT_BCAST) */
    uint16_t udp_port;
    /** udp framing: this end's IPv4 address ("a.b.c.d"); NULL or "": the
     *  af_xdp interface's first address, else (a memif cable, which no
     *  kernel sees) 169.254.<MAC byte 4>.<MAC byte 5> */
    const char *udp_addr;
    /** udp framing: 1 = send no UDP checksum (0, allowed over IPv4; the
     *  Ethernet FCS still covers each hop); 0 = a checksum, by the NIC when
     *  it offloads it, else computed */
    int udp_no_csum;
    /** udp framing: how long set_peer waits for the next hop's ARP answer
     *  (ms; 0 = 3000) */
    uint32_t resolve_ms;
} em_dpdk_cfg_t;

/** Port counters (rte_eth_stats): all queues, and queue 0 alone; and
 *  what the port lost: received frames dropped before we polled them
 *  (imissed: af_xdp counts the kernel's drops for an empty fill ring
 *  there), receive errors, mbuf allocation failures, send errors. */
typedef struct em_dpdk_port_stats {
    uint64_t rx_pkts, rx_bytes, tx_pkts, tx_bytes;
    uint64_t q0_rx_pkts, q0_rx_bytes, q0_tx_pkts, q0_tx_bytes;
    uint64_t rx_missed, rx_errors, rx_nombuf, tx_errors;
    /* af_xdp: the kernel's counters (XDP_STATISTICS) of the process's
     * AF_XDP sockets (the PMD does not say which is the port's: with two
     * af_xdp ports both links show the sum): received frames dropped for a
     * full rx ring, fill ring found empty, other receive drops, and sent
     * frames the kernel refused (tx_invalid_descs, e.g. outside the UMEM) */
    uint64_t xdp_rx_ring_full, xdp_fill_empty, xdp_rx_dropped, xdp_tx_invalid;
} em_dpdk_port_stats_t;

typedef struct em_dpdk_stats {
    uint64_t rx_frames;       /**< frames handed to the caller */
    uint64_t rx_foreign;      /**< not ours, dropped: another ethertype nobody in this process
                               *   uses, shorter than an Ethernet header, or over the MTU */
    uint64_t rx_share_full;   /**< another user's frames (shared port) this link polled and
                               *   dropped because that user's ring was full */
    uint64_t rx_multiseg;     /**< chained frames, copied into one buffer */
    uint64_t rx_dropped_loss; /**< dropped by the seeded loss injection (rx_loss) */
    uint64_t tx_frames;       /**< frames the PMD took */
    uint64_t tx_full;         /**< tx_burst calls that found the tx queue full */
    uint64_t tx_extbuf; /**< frames whose payload went out from the caller's memory (extbuf) */
    em_ipudp_counters_t udp_refused; /**< udp framing: received frames refused, by reason */
    uint64_t nh_changes; /**< udp framing: next-hop MACs changed under us (neighbour watch) */
    uint64_t tx_csum_sw; /**< udp framing: UDP checksums computed in software */
    uint64_t tx_nombuf;  /**< tx_alloc found the pool empty */
} em_dpdk_stats_t;

/**
 * Why the last em_link_set_peer() on @p l failed, as a sentence naming the
 * cause and the fix ("" when it did not fail): a peer behind a router in
 * L2 framing, no ARP answer from the next hop, a route through another
 * interface, a framing mismatch with the peer.
 */
const char *em_link_dpdk_peer_error(const em_link_t *l);

/**
 * Start EAL (first call only), probe the device, configure and start the
 * port, wait for link up.  On failure returns NULL with a sentence a user
 * can act on in @p err (no hugepages, no permission, interface missing...).
 */
em_link_t *em_link_dpdk_open(const em_dpdk_cfg_t *cfg, char *err, size_t errlen);
/**
 * Port @p index of a device list: cfg->vdev may name several devices
 * separated by ';' ("net_memif0,...;net_memif1,..."), one link each.  The
 * first call starts EAL with all of them; later calls (same cfg->vdev)
 * open further ports; EAL is cleaned up when the last port closes.
 * @return the link; NULL with an empty @p err when there is no device
 * @p index; NULL with a sentence on failure.
 */
em_link_t *em_link_dpdk_open_port(const em_dpdk_cfg_t *cfg, unsigned index, char *err,
                                  size_t errlen);
const em_dpdk_stats_t *em_link_dpdk_stats(const em_link_t *l);
/** The port's counters (0, or -1 when the PMD has none). */
int em_link_dpdk_port_stats(const em_link_t *l, em_dpdk_port_stats_t *out);
/** The DPDK name of the link's port ("net_memif0"). */
void em_link_dpdk_port_name(const em_link_t *l, char *buf, size_t len);
/**
 * A mempool fitting the port's frames (@p qi of an extra queue's rx_pool
 * call) for one user: no per-lcore cache (DPDK secondaries share lcore
 * ids), a single-producer single-consumer ring.  @return the pool, or NULL
 * with a sentence in @p err.
 */
struct rte_mempool *em_link_dpdk_queue_pool(const em_dpdk_queue_info_t *qi, const char *name,
                                            unsigned n, char *err, size_t errlen);
/** Free a pool made by em_link_dpdk_queue_pool (NULL: nothing), while EAL runs. */
void em_link_dpdk_pool_free(struct rte_mempool *mp);
/**
 * Put every mbuf of a pool made by em_link_dpdk_queue_pool back, as new,
 * after its user is gone (it may have been killed holding mbufs, or inside
 * a pool operation).  Only while nobody uses the pool.  @return 0 or -1.
 */
int em_link_dpdk_pool_reset(struct rte_mempool *mp);

/**
 * Turn a device specification into devargs: "%h" becomes the host name and
 * "%j" @p job (e.g. the MPI job id, so a memif socket is per job); "@FILE"
 * means the first line of FILE, in which %h and %j are replaced too.  One
 * spec can so give every node its own device (a memif cable has a server
 * end and a client end).  Several devices are separated by ';' ("@F0;@F1":
 * two cables, one link each), each part expanded on its own.
 * @return 0, or -1 with a sentence in @p err (unreadable FILE).
 */
int em_link_dpdk_devargs(const char *spec, const char *job, char *out, size_t len, char *err,
                         size_t errlen);
/** Free hugepages of the default size (/proc/meminfo), 0 when unknown. */
long em_link_dpdk_hugepages_free(void);
/** Render an address blob as "aa:bb:cc:dd:ee:ff/q" (udp: "... a.b.c.d:port"). */
void em_link_dpdk_addr_str(const em_link_addr_t *a, char *buf, size_t len);

#endif
