/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file xdp_internal.h
 * The native AF_XDP link's state, shared by link_xdp.c (UMEM, rings, L2
 * framing, setup) and xdp_udp.c (udp framing).  Private to src/link/xdp.
 */
#ifndef EM_LINK_XDP_INTERNAL_H
#define EM_LINK_XDP_INTERNAL_H

#include <net/if.h>
#include <stdbool.h>
#include <stdint.h>

#include <xdp/xsk.h>

#include "link/dpdk/xdp_guard.h"
#include "link/link_util.h"
#include "link/xdp/link_xdp.h"
#include "util/loss.h"

/* newer than the Debian 12 headers (Linux 6.1); the kernel decides */
#ifndef XDP_USE_SG
#define XDP_USE_SG (1 << 4)
#endif
#ifndef XDP_PKT_CONTD
#define XDP_PKT_CONTD (1 << 0)
#endif
#ifndef SO_PREFER_BUSY_POLL
#define SO_PREFER_BUSY_POLL 69
#endif
#ifndef SO_BUSY_POLL_BUDGET
#define SO_BUSY_POLL_BUDGET 70
#endif

#define CHUNK    4096u
#define ETH_HLEN 14u
#define BURST    64u
#define NO_SLOT  UINT32_MAX

struct tx_slot {
    em_pkt_t pkt;
    uint16_t done; /* descriptors completed */
    uint16_t nseg; /* descriptors posted */
    uint32_t next_free;
};

struct xdp_link {
    em_link_t link; /* must be first */
    struct xsk_umem *umem;
    struct xsk_socket *xsk;
    struct xsk_ring_prod fq, tx;
    struct xsk_ring_cons cq, rx;
    uint8_t *area;
    uint64_t area_len;
    uint32_t frames, rx_frames; /* chunks; of which the fill ring's */
    uint32_t span;              /* chunks per tx slot */
    struct tx_slot *slots;
    uint32_t nslots, free_head;
    uint64_t tx_base; /* UMEM offset of the first tx slot */
    /* rx: frames lent to the caller (their chunks go back on release) */
    em_pkt_t rx_pkts[BURST];
    uint64_t rx_addr[BURST][8]; /* the chunks of each lent frame */
    uint8_t rx_nchunks[BURST];
    uint8_t *bounce; /* BURST x (link MTU + header) */
    /* peers: MAC per link peer id, and source MAC -> peer (rx_peer) */
    struct xdp_peer {
        uint8_t mac[6];
        uint8_t set;
    } * peers;
    uint32_t npeers;
    em_addr_map_t bysrc;
    uint8_t mac[6];
    int ifindex;
    struct bpf_object *obj;
    uint32_t prog_id; /* ours, attached by us (0: none) */
    uint32_t xdp_flags;
    em_loss_t loss;       /* testing: seeded receive drop */
    em_xdp_guard_t guard; /* this process owns the interface queue */
    em_xdp_info_t info;
    em_xdp_stats_t st;
    uint32_t l2mtu;      /* Ethernet payload bytes (the interface MTU or less) */
    uint32_t hdr_len;    /* headers in front of the protocol frame: 14, udp 42 */
    uint16_t ethertype;  /* L2 framing: ours (0x88B5; the broadcast channel 0x88B6) */
    struct xdp_udp *udp; /* udp framing (xdp_udp.c); NULL: L2 */
    char ifname[IF_NAMESIZE];
    char peer_err[256]; /* why the last set_peer failed */
};

/* udp framing (xdp_udp.c); every one but setup is called only when d->udp */
int em_xdp_udp_setup(struct xdp_link *d, const em_xdp_cfg_t *cfg, char *err, size_t errlen);
void em_xdp_udp_free(struct xdp_link *d);
/** Write the headers in front of @p p's frame (p->data - 42). */
void em_xdp_udp_tx_hdr(struct xdp_link *d, const em_pkt_t *p);
/** Check the received frame of @p len bytes at @p f and point @p p at its
 *  payload.  @return 0, or -1 (refused, counted by reason). */
int em_xdp_udp_rx(struct xdp_link *d, const uint8_t *f, uint32_t len, em_pkt_t *p);
uint32_t em_xdp_udp_rx_peer(const struct xdp_link *d, const em_pkt_t *p);
/** First contact: the headers in front of @p p's frame toward address
 *  @p a (no peer's state read or made).  0, -EINVAL (not a udp framing
 *  address), -EHOSTUNREACH (next hop not known yet) or -EMSGSIZE. */
int em_xdp_udp_tx_to_hdr(struct xdp_link *d, const em_pkt_t *p, const em_link_addr_t *a);
/** Is received frame @p p's source address @p a's (IPv4, port)? */
bool em_xdp_udp_rx_from(const em_pkt_t *p, const em_link_addr_t *a);
int em_xdp_udp_set_peer(struct xdp_link *d, uint32_t peer, const em_link_addr_t *a);
/** Follow next-hop changes (every few thousand calls: one recv). */
void em_xdp_udp_poll(struct xdp_link *d);
/** L2 framing: put the interface's IPv4 address into our blob (if any). */
void em_xdp_l2_local_ip(struct xdp_link *d);
/** L2 framing: a peer whose blob has its IPv4 address must be on our
 *  segment.  @return 0, or -EHOSTUNREACH / -EINVAL with d->peer_err said. */
int em_xdp_l2_check(struct xdp_link *d, uint32_t peer, const em_link_addr_t *a);

#endif
