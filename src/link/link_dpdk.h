/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file link_dpdk.h
 * The burst interface over a DPDK poll-mode driver at layer 2: ethertype
 * 0x88B5 (IEEE 802 local experimental), MAC addressing, no IP stack (seed
 * 000).  The PMD comes from a devargs string, so the same code runs on
 * net_memif (shared-memory "cable"), net_af_xdp (a kernel interface) and a
 * real NIC's PMD.
 *
 * Framing (issue 17, em_dpdk_cfg_t::framing): L2 (default) sends raw
 * Ethernet frames of our ethertype; udp puts Ethernet + IPv4 + UDP
 * (link/ipudp.h) in front of the protocol frame, addressed to the peer's
 * IPv4 address and UDP port, through the next hop the kernel's tables name
 * (link/neigh.h), so routers and cloud networks carry it.
 *
 * Address blob: 6 bytes MAC + 2 bytes queue id (big-endian); L2 framing on
 * a port with a kernel interface (af_xdp) adds the interface's IPv4
 * address (4 bytes, big-endian: 12 in all) so that a peer behind a router
 * is refused at set_peer with the reason, not left to time out; udp
 * framing: MAC, queue, IPv4 address, UDP port (14 bytes).
 *
 * One DPDK port, one rx and one tx queue per process (direct mode).  The
 * process becomes a DPDK primary: EAL is started here, once per process,
 * with a unique file prefix and the calling thread's current CPU affinity
 * (EAL would otherwise pin the MPI rank to core 0).
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
/** The lossy broadcast channel's frames (IEEE 802 local experimental 2). */
#define EM_ETHERTYPE_BCAST 0x88B6u

/** em_dpdk_cfg_t::framing */
enum em_dpdk_framing {
    EM_DPDK_FRAMING_L2 = 0,   /**< raw Ethernet, our ethertype (one L2 segment) */
    EM_DPDK_FRAMING_UDP = 1,  /**< Ethernet + IPv4 + UDP (routable; link/ipudp.h) */
};
/** Address blob lengths. */
#define EM_DPDK_ADDR_L2     8u
#define EM_DPDK_ADDR_L2_IP  12u
#define EM_DPDK_ADDR_UDP    14u

typedef struct em_dpdk_cfg {
    /** PMD devargs, e.g. "net_memif0,role=server,socket=/run/x.sock,socket-abstract=no"
     *  or "net_af_xdp0,iface=eth0,start_queue=0,queue_count=1".  NULL/"": use
     *  the first port EAL finds with @p eal_args (e.g. a PCI NIC). */
    const char *vdev;
    /** Extra EAL arguments, space separated (default "--no-huge -m 256"). */
    const char *eal_args;
    /** --file-prefix; NULL = "em<pid>" (must be unique per process). */
    const char *file_prefix;
    uint32_t mtu;          /**< wanted L2 payload bytes; 0 = as large as port and mbufs allow (<= 9000) */
    uint32_t nb_mbufs;     /**< mempool size; 0 = 8191 (af_xdp pre-fills >= 2048 per queue) */
    uint16_t nb_desc;      /**< ring descriptors per queue; 0 = 1024 */
    double rx_loss;        /**< seeded drop probability on receive (loss injection for wires no kernel sees) */
    uint64_t loss_seed;
    uint32_t link_wait_ms; /**< how long to wait for link up; 0 = 10000 */
    /** ethertype of our frames (host order); 0 = EM_ETHERTYPE.  Another
     *  value (e.g. EM_ETHERTYPE_BCAST) keeps a second user of the wire
     *  apart: frames of other ethertypes are counted as rx_foreign. */
    uint16_t ethertype;
    /** 1: never send a payload from the caller's memory (EM_LINK_F_GATHER
     *  off: every payload is copied into the mbuf), for comparison. */
    int no_gather;
    /** emd's own-queue layout (daemon/emd_shm.h): S > 0 configures 1 + S*S
     *  queue pairs; this link uses queue 0, and for each slot s the pools
     *  EM_DPDK_RDV_RX_POOL (the rx queues of slot s) and EM_DPDK_RDV_TX_POOL
     *  are created here (no per-lcore cache, single producer and consumer:
     *  the slot's DPDK secondary is their only user).  0: one queue pair. */
    uint16_t rdv_slots;
    /** enum em_dpdk_framing (0: L2) */
    int framing;
    /** udp framing: our UDP port; 0 = EM_UDP_PORT (EM_UDP_PORT_BCAST for
     *  the EM_ETHERTYPE_BCAST user) */
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

/** Pool names of own-queue slot s on port p (printf formats: port, slot). */
#define EM_DPDK_RDV_RX_POOL "emq_rx_p%u_s%u"
#define EM_DPDK_RDV_TX_POOL "emq_tx_p%u_s%u"
#define EM_DPDK_RDV_RX_MBUFS 1023u
#define EM_DPDK_RDV_TX_MBUFS 511u

/** Port counters (rte_eth_stats): all queues, and queue 0 alone. */
typedef struct em_dpdk_port_stats {
    uint64_t rx_pkts, rx_bytes, tx_pkts, tx_bytes;
    uint64_t q0_rx_pkts, q0_rx_bytes, q0_tx_pkts, q0_tx_bytes;
} em_dpdk_port_stats_t;

typedef struct em_dpdk_stats {
    uint64_t rx_frames, rx_foreign, rx_multiseg, rx_dropped_loss, tx_frames, tx_full;
    uint64_t tx_extbuf;    /**< frames whose payload went out from the caller's memory (extbuf) */
    em_ipudp_counters_t udp_refused;  /**< udp framing: received frames refused, by reason */
    uint64_t nh_changes;   /**< udp framing: next-hop MACs changed under us (neighbour watch) */
    uint64_t tx_csum_sw;   /**< udp framing: UDP checksums computed in software */
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
 * Own queues: put slot @p slot's pools back in their initial state (every
 * mbuf free), after the slot's process is gone (it may have been killed
 * holding mbufs, or inside a pool operation).  Only while nobody uses the
 * slot.  @return 0, or -1 (no such slot).
 */
int em_link_dpdk_rdv_reset(em_link_t *l, uint16_t slot);

/**
 * Turn a device specification into devargs: "%h" becomes the host name and
 * "%j" @p job (e.g. the MPI job id, so a memif socket is per job); "@FILE"
 * means the first line of FILE, in which %h and %j are replaced too.  One
 * spec can so give every node its own device (a memif cable has a server
 * end and a client end).  Several devices are separated by ';' ("@F0;@F1":
 * two cables, one link each), each part expanded on its own.
 * @return 0, or -1 with a sentence in @p err (unreadable FILE).
 */
int em_dpdk_devargs(const char *spec, const char *job, char *out, size_t len,
                    char *err, size_t errlen);
/** Render an address blob as "aa:bb:cc:dd:ee:ff/q" (udp: "... a.b.c.d:port"). */
void em_link_dpdk_addr_str(const em_link_addr_t *a, char *buf, size_t len);

#endif
