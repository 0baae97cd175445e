/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file link_udp_int.h
 * The kernel UDP link's state, shared by its two halves: link_udp.c (the
 * data path: bursts, frames' sources, first-contact sends) and
 * link_udp_open.c (opening and configuring: sockets, peers' addresses,
 * close).  Private to them; users include link_udp.h.  The names shared
 * between the halves start with udpl_ (not exported: ethermpi.map).
 */
#ifndef EM_LINK_UDP_INT_H
#define EM_LINK_UDP_INT_H

#include "link/link_udp.h"
#include "link/link_util.h"
#include "link/pkt_pool.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

#define UDP_TX_POOL   256
#define UDP_TX_MSGS   64    /* messages per sendmmsg call */
#define UDP_TX_IOV    256   /* iovecs per sendmmsg call (2 per frame) */
#define UDP_GSO_SEGS  64    /* frames per GSO send (the kernel's floor of UDP_MAX_SEGMENTS) */
#define UDP_GSO_BYTES 65507 /* largest UDP payload of an IPv4 datagram */
#define UDP_RX_SLOTS  64    /* most datagrams per recvmmsg call (cfg.rx_batch) */
#define UDP_RX_BATCH  32    /* default datagrams per recvmmsg call */
#define UDP_RX_FRAMES 64    /* frames per rx_burst */
#define UDP_GRO_SLOT  65536 /* a coalesced datagram is at most 64 KB */
#define UDP_LONE_COPY 1024  /* a lone frame's payload up to this is copied for sendto */
#define UDP_CONN_MAX  256   /* peers that get a connected send socket (one fd each) */

/* A peer: where its frames go, where they come from, our socket to it. */
struct udp_peer {
    struct sockaddr_in rx; /* its receive socket: our frames go there */
    uint16_t tx_port;      /* its send port (network order): its frames come from it */
    /* our socket connected to rx and bound to our send port, + 1: 0 = not
     * opened yet, -1 = none (over UDP_CONN_MAX, or the kernel refused):
     * frames to it leave through the shared send socket */
    int fd1;
};

/* one received datagram (possibly several coalesced frames) */
struct rx_slot {
    uint32_t len; /* bytes received */
    uint32_t seg; /* frame size inside it (= len when not coalesced) */
};

struct udp_link {
    em_link_t link;               /* must be first */
    int fd;                       /* receive socket (our receive port) */
    int sfd;                      /* unconnected send socket (our send port) */
    struct sockaddr_in send_addr; /* our send port's address */
    unsigned nconn;               /* connected send sockets open */
    int sock_buf;                 /* send buffer of each send socket */
    struct udp_peer *peers;
    uint32_t npeers;
    int gso, gro; /* offloads in use */
    void (*note)(void *, const char *);
    uint32_t (*frame_len)(const void *, size_t); /* cfg.frame_len: idle polls use recvfrom */
    void *note_ctx;
    em_udp_info_t info;
    /* tx */
    em_pkt_t tx_pkts[UDP_TX_POOL];
    em_pkt_t *tx_stack[UDP_TX_POOL];
    em_pkt_pool_t tx_pool; /* free packets of tx_pkts */
    uint8_t *tx_mem;
    struct mmsghdr tx_msgs[UDP_TX_MSGS];
    struct iovec tx_iov[UDP_TX_IOV];
    unsigned tx_nfr[UDP_TX_MSGS]; /* frames in each message */
    struct {
        _Alignas(struct cmsghdr) char buf[CMSG_SPACE(sizeof(uint16_t))];
    } tx_ctl[UDP_TX_MSGS];
    /* rx: slots filled by the last recvmmsg, and the cursor over their frames */
    uint8_t *rx_mem;
    uint32_t rx_slot_bytes;
    unsigned rx_batch; /* slots asked for per recvmmsg */
    unsigned rx_dirty; /* slots 0..rx_dirty-1 need their msghdr/iovec set again */
    unsigned rx_want;  /* slots the next recvmmsg asks for: 1 or rx_batch */
    struct rx_slot rx_slots[UDP_RX_SLOTS];
    unsigned rx_filled, rx_cur;
    uint32_t rx_off;
    struct mmsghdr rx_msgs[UDP_RX_SLOTS];
    struct iovec rx_iov[UDP_RX_SLOTS];
    /* source of each slot's datagram (all frames of a slot share it) */
    struct sockaddr_in rx_names[UDP_RX_SLOTS];
    struct {
        _Alignas(struct cmsghdr) char buf[CMSG_SPACE(sizeof(int)) * 2];
    } rx_ctl[UDP_RX_SLOTS];
    em_pkt_t rx_pkts[UDP_RX_FRAMES];
    em_addr_map_t bysrc; /* source IP:port -> peer (rx_peer) */
    em_udp_stats_t st;
};

/* bysrc's key: an IPv4 address and a port (both network order) */
static inline uint64_t src_key(uint32_t addr, uint16_t port)
{
    return (uint64_t)ntohl(addr) << 16 | ntohs(port);
}

/* link_udp.c: the ops every udp link has */
extern const em_link_ops_t udpl_ops;

/* link_udp_open.c */
/* A socket bound to our send port (shared with SO_REUSEPORT) that keeps
 * nothing it receives, with cfg.sock_buf of send buffer (the bytes granted
 * in *@p granted if given); connected to @p to if given.  -1 on failure. */
int udpl_send_socket(const struct udp_link *u, const struct sockaddr_in *to, int *granted);
/* em_link_ops_t set_peer, covers, close */
int udpl_set_peer(em_link_t *l, uint32_t peer, const em_link_addr_t *a);
bool udpl_covers(const em_link_t *l, const em_link_addr_t *p, const em_link_addr_t *f);
void udpl_close(em_link_t *l);

#endif
