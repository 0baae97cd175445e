/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file dpdk_internal.h
 * The pieces of the DPDK link (link_dpdk.h) and what they share.
 *
 *   eal.c      EAL start and release, once per process (process-global state)
 *   devargs.c  device lists and specifications ("@FILE", %h, %j, ';'),
 *              reading devargs (devargs.h)
 *   share.c    one port, several users of one process, told apart by ethertype
 *   port.c     port set-up in steps (pick, size, configure, start) and close
 *   link.c     the burst link ops over an open port, counters
 *   udp.c      udp framing: addresses, next hop, headers, and
 *              the L2 framing's check that a peer is on our segment
 *   xdp_guard.c  one live owner per AF_XDP interface queue (xdp_guard.h)
 *
 * Internal names are em_dpdk_*; the public API (link_dpdk.h) em_link_dpdk_*.
 *
 * Threading: everything here runs in the thread that opened the port; the
 * EAL and sharing state is process-global and unlocked (link_dpdk.h).
 * Nothing here is exported (hidden visibility): the one copy of this code
 * in a process is libethermpi.so's, and its state is the process's.
 */
#ifndef EM_DPDK_INTERNAL_H
#define EM_DPDK_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rte_ether.h>
#include <rte_mbuf.h>
#include <rte_memzone.h>
#include <rte_ring.h>

#include "link/link_dpdk.h"
#include "link/link_util.h"
#include "link/dpdk/devargs.h"
#include "link/dpdk/xdp_guard.h"
#include "util/loss.h"

#pragma GCC visibility push(hidden)

/** Most frames one rx_burst takes (and linear copies the scratch holds). */
#define EM_DPDK_BURST 32

struct dpdk_link {
    em_link_t link; /* must be first */
    uint16_t port;
    struct rte_mempool *pool;
    struct rte_mempool *ext_pool; /* data-less mbufs that point at a caller's payload */
    struct rte_ether_addr mac;
    struct rte_ether_addr *peers;
    uint32_t npeers;
    em_addr_map_t bysrc;      /* source MAC -> peer (rx_peer) */
    em_loss_t loss;           /* injected receive loss (cfg rx_loss, loss_seed) */
    uint16_t ethertype_be;    /* our ethertype, network order */
    uint8_t *scratch;         /* EM_DPDK_BURST linear copies of multi-segment frames */
    em_xdp_guard_t guard;     /* af_xdp: this process owns the interface queue */
    struct port_share *share; /* the port's sharing table (NULL: not published) */
    struct rte_ring *ring;    /* sharer: frames of our ethertype the others passed on */
    int sharer;               /* 1: not the port's owner */
    int memif;                /* a memif port: never stopped or closed (port.c) */
    int af_xdp;               /* an af_xdp port (its socket's counters: port stats) */
    int share_slot;           /* sharer: our entry in share->user[] */
    uint32_t share_gen;       /* share->gen when we joined (owner: published) */
    uint16_t hdr_len;         /* bytes in front of the protocol frame: 14, or 42 (udp) */
    uint16_t demux_be;        /* what tells our frames from a port sharer's: the
                                       ethertype (L2) or the UDP port (udp), network order */
    struct dpdk_udp *udp;     /* udp framing state (udp.c); NULL: L2 framing */
    char ifname[16];          /* the port's kernel interface ("": none, e.g. memif) */
    uint32_t if_ip;           /* its IPv4 address (host order; 0: none) */
    char peer_err[320];       /* why the last set_peer failed */
    em_dpdk_stats_t st;
};

/*
 * Port sharing (one DPDK port, several users in one process, told apart
 * by ethertype: the dpdk BTL's protocol 0x88B5 and an application's
 * em_bcast channel 0x88B6).  The user that opened the port (the owner)
 * publishes it in the process's table (share.c: this code exists once per
 * process, in libethermpi.so); a later open of the same device finds it
 * there and becomes a sharer: own mempool for sending, the owner's tx queue, and a
 * ring for the frames of its ethertype.  Whoever polls the port hands
 * each frame of another user's ethertype to that user's ring.  All users
 * must run in one thread (MPI's single-threaded progress), and sharers
 * must close before the owner.
 */
#define SHARE_USERS 4
struct port_share {
    uint32_t magic; /* SHARE_MAGIC while published */
    uint32_t gen;   /* bumped at each publish: a sharer of an earlier owner is stale */
    uint16_t port;
    uint16_t users; /* registered users besides the owner */
    uint32_t mtu;
    uint8_t mac[6];
    struct {
        uint16_t ethertype_be; /* 0: free */
        struct rte_ring *ring;
    } user[SHARE_USERS];
};
#define SHARE_MAGIC 0x454d5348u /* "EMSH" */

/* ---- eal.c ---- */
/** Start EAL for @p cfg's device list (first call), or accept a further
 *  port of the same list.  @return 0, or -1 with a sentence in @p err. */
int em_dpdk_eal_start(const em_dpdk_cfg_t *cfg, char *err, size_t errlen);
/** One more port holds EAL (after a successful em_dpdk_eal_start). */
void em_dpdk_eal_hold(void);
/** A port let go of EAL: the last one cleans it up (unless another DPDK
 *  user of the process started it, or memif ports are left running). */
void em_dpdk_eal_release(void);
/** 1 when the caller holds the only port left. */
int em_dpdk_eal_last_port(void);
/** A memif port is left running to the end (EAL must not be cleaned up). */
void em_dpdk_eal_keep_memif(void);

/* ---- share.c ---- */
/** The published sharing table of @p port (NULL: nobody publishes it). */
struct port_share *em_dpdk_share_find(uint16_t port);
/** The owner publishes its port (best effort). */
void em_dpdk_share_publish(struct dpdk_link *d);
/** 1 when @p d's port has other users now (its table is current). */
int em_dpdk_share_active(const struct dpdk_link *d);
/** The owner closes: nobody may find the port any more. */
void em_dpdk_share_unpublish(struct dpdk_link *d);
/** Become a sharer of a published port.  NULL with a sentence in @p err. */
em_link_t *em_dpdk_share_open(const em_dpdk_cfg_t *cfg, uint16_t port, struct port_share *sh,
                              char *err, size_t errlen);
/** A sharer closes (frees @p d, releases EAL). */
void em_dpdk_share_close(struct dpdk_link *d);
/** A frame of another user's ethertype goes to that user's ring.  1: taken. */
int em_dpdk_pass_on(struct port_share *sh, struct dpdk_link *d, struct rte_mbuf *mb);
/** The demultiplexing key of a user configured by @p cfg (network order). */
uint16_t em_dpdk_demux_key(const em_dpdk_cfg_t *cfg);
/** The demultiplexing key of a received frame: its ethertype, or for
 *  IPv4/UDP (no options) its UDP destination port (network order). */
uint16_t em_dpdk_frame_key(const struct rte_mbuf *mb);

/* ---- udp.c ---- */
/** After em_dpdk_link_init: learn the kernel interface behind @p item
 *  (af_xdp), and in udp framing set up addresses, blob, MTU and the
 *  neighbour watch; @p offloads are the port's enabled tx offloads.
 *  @return 0, or -1 with a sentence in @p err. */
int em_dpdk_udp_setup(struct dpdk_link *d, const em_dpdk_cfg_t *cfg, const char *item,
                      uint64_t offloads, char *err, size_t errlen);
void em_dpdk_udp_free(struct dpdk_link *d);
/** udp framing: the 42 header bytes of @p p's frame in @p mb (checksums included). */
void em_dpdk_udp_tx_hdr(struct dpdk_link *d, struct rte_mbuf *mb, const em_pkt_t *p);
/** udp framing, first contact: the headers of @p p's frame toward address
 *  @p a (no peer's state read or made).  0, -EINVAL (not a udp framing
 *  address), -EHOSTUNREACH (next hop not known yet) or -EMSGSIZE. */
int em_dpdk_udp_tx_to_hdr(struct dpdk_link *d, struct rte_mbuf *mb, const em_pkt_t *p,
                          const em_link_addr_t *a);
/** udp framing: is received frame @p p's source address @p a's (IPv4, port)? */
bool em_dpdk_udp_rx_from(const em_pkt_t *p, const em_link_addr_t *a);
/** udp framing: validate a received frame (@p len linear bytes at @p f);
 *  0 with p->data/p->len set, or -1 (counted). */
int em_dpdk_udp_rx(struct dpdk_link *d, const struct rte_mbuf *mb, uint8_t *f, uint32_t len,
                   em_pkt_t *p);
/** set_peer of either framing (address checks, next hop). */
int em_dpdk_set_peer(struct dpdk_link *d, uint32_t peer, const em_link_addr_t *a);
/** rx_peer of udp framing: by source (IPv4, port). */
uint32_t em_dpdk_udp_rx_peer(const struct dpdk_link *d, const em_pkt_t *p);
/** udp framing, from rx_burst now and then: apply neighbour changes. */
void em_dpdk_udp_poll(struct dpdk_link *d);

/* ---- link.c ---- */
/** Fill in the link part of @p d (ops, MTU, flags, address, loss, ethertype). */
void em_dpdk_link_init(struct dpdk_link *d, const em_dpdk_cfg_t *cfg, uint32_t mtu, uint32_t flags);

/* ---- port.c ---- */
void em_dpdk_port_close(em_link_t *l);

#pragma GCC visibility pop

#endif
