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

/* one socket on one interface queue; all share the link's UMEM */
struct xdp_q {
    struct xsk_socket *xsk;
    struct xsk_ring_prod fq, tx; /* fill ring: its own (create_shared) */
    struct xsk_ring_cons cq, rx; /* completion ring: its own */
    uint32_t id;                 /* the interface queue */
    uint32_t tx_out;             /* descriptors posted, not yet completed */
    em_xdp_guard_t guard;        /* this process owns the queue */
};

struct xdp_link {
    em_link_t link; /* must be first */
    struct xsk_umem *umem;
    struct xdp_q q[EM_XDP_MAX_QUEUES];
    uint32_t nq;      /* sockets open (q[0] made the UMEM's first) */
    uint32_t rx_next; /* the queue rx polls first (rotates) */
    int epfd;         /* several queues: an epoll of their sockets (wait_fd); else -1 */
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
    uint8_t rx_q[BURST]; /* the queue each lent frame came from (its chunks go back there) */
    uint8_t *bounce;     /* BURST x (link MTU + header) */
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
    em_loss_t loss; /* testing: seeded receive drop */
    em_xdp_info_t info;
    em_xdp_stats_t st;
    uint32_t l2mtu;      /* Ethernet payload bytes (the interface MTU or less) */
    uint32_t hdr_len;    /* headers in front of the protocol frame: 14, udp 42 */
    uint16_t ethertype;  /* L2 framing: ours (0x88B5; the broadcast channel 0x88B6) */
    struct xdp_udp *udp; /* udp framing (xdp_udp.c); NULL: L2 */
    char ifname[IF_NAMESIZE];
    char peer_err[256]; /* why the last set_peer failed */
};

/* several queues (xdp_queues.c) */
/** How many queues @p ifname has (ethtool -l, else /sys/class/net/IF/queues),
 *  0 when neither says. */
uint32_t em_xdp_if_queues(int ifindex, const char *ifname);
/** Check queues [cfg->queue, +queues) exist on the interface and fit the
 *  filter's map.  @return 0, or -1 with the cause and the fix in @p err. */
int em_xdp_check_queues(struct xdp_link *d, const em_xdp_cfg_t *cfg, uint32_t nq, char *err,
                        size_t errlen);
/** The filter's xsks_map must have an entry for every queue.  @return 0,
 *  or -1 with the cause and the fix. */
int em_xdp_check_map(int map_fd, const em_xdp_cfg_t *cfg, uint32_t nq, char *err, size_t errlen);
/** Sockets on the queues after the first, sharing its UMEM, each in the
 *  filter's map; then the epoll set of all of them.  @return 0 or -1. */
int em_xdp_open_more(struct xdp_link *d, const em_xdp_cfg_t *cfg, int map_fd, char *err,
                     size_t errlen);

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
