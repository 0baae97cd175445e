/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file link_udp.h
 * The burst interface over one kernel UDP socket per process (seed 001:
 * one port per process, instead of one TCP connection per peer pair).
 * Non-blocking; bursts go through sendmmsg(2)/recvmmsg(2).
 *
 * Offloads (docs/design.md "link_udp: what each offload bought"):
 *  - UDP_SEGMENT (GSO): consecutive frames of one tx burst to the same peer
 *    with the same length (the last may be shorter) leave in one send of up
 *    to 64 KB; the kernel cuts it into datagrams as late as it can (on a
 *    veth pair, not at all: the receiving socket gets the whole thing).
 *    Where the kernel refuses (EIO: no checksum offload on the route;
 *    EINVAL), the link falls back to one datagram per frame for the rest of
 *    its life, counts it and says so once through em_udp_cfg_t::note.
 *  - UDP_GRO: the kernel may hand over several datagrams of one flow as one
 *    buffer plus their size (a cmsg); rx_burst splits it back into frames.
 *    Sizes from the kernel are checked against the frame size like any
 *    datagram.
 *
 * Address blob: 4 bytes IPv4, 2 bytes receive port, 2 bytes send port
 * (8 bytes, what em_link_udp_open publishes), network byte order; 6 bytes
 * (no send port): a sender whose frames leave from its receive port.
 *
 * First contact (link.h tx_to, rx_from): tx_to sends one datagram with
 * sendto(2) through the shared unconnected send socket (from our send
 * port, as every frame), so no peer entry, source mapping or connected
 * socket is made; rx_from says whether a datagram's source is the
 * address's IPv4 and send port (rx_peer's judgment without a peer).
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
    uint16_t port; /**< 0 = any free port */
    uint32_t mtu;  /**< max frame (UDP payload); 0 = interface MTU - 28 */
    int sock_buf;  /**< SO_SNDBUF/SO_RCVBUF bytes; 0 = 4 MiB */
    /* --- real-network tuning; zero keeps the defaults --- */
    int no_gso; /**< 1 = never use UDP_SEGMENT (one datagram per frame) */
    int no_gro; /**< 1 = do not ask for UDP_GRO on receive */
    /** Optional: told once, in one sentence, about a degraded mode chosen at
     *  run time (e.g. GSO refused by the kernel).  Called on the thread that
     *  uses the link; may be NULL. */
    void (*note)(void *note_ctx, const char *msg);
    void *note_ctx;
    /** Datagrams asked for per recvmmsg call, 1..64; 0 = 32 (see
     *  docs/design.md "link_udp"; each costs 64 KiB of buffer with GRO). */
    unsigned rx_batch;
    /** Optional: the length of the frame that starts at @p frame (its
     *  headers + payload, read from its own header; em_wire_frame_len),
     *  0 if it is not a frame.  With it an idle link polls with recvfrom(2),
     *  one datagram and no control data (275 against 410 ns per empty poll
     *  here), and splits a coalesced datagram received that way at the
     *  first frame's length, where recvmmsg would have had the kernel's
     *  UDP_GRO segment size.  NULL: recvmmsg only (docs/design.md
     *  "link_udp", idle polls). */
    uint32_t (*frame_len)(const void *frame, size_t avail);
    /** Optional: where em_link_udp_open writes why it failed (0 when it
     *  opens): -EM_EADDRINUSE when another socket receives on @p port
     *  (bind's EADDRINUSE), -EM_ENOMEM, else -EM_EINVAL (the interface,
     *  the MTU, a socket the kernel refused: the error text says which).
     *  A caller acts on the code, never on the text. */
    int *reason;
} em_udp_cfg_t;

typedef struct em_udp_stats {
    uint64_t tx_dgrams, rx_dgrams, tx_errors, rx_truncated, tx_unknown_peer;
    /* --- real-network counters --- */
    uint64_t tx_frames;       /**< frames the kernel took (GSO sends count each frame) */
    uint64_t tx_gso_sends;    /**< sends that carried 2+ frames with UDP_SEGMENT */
    uint64_t tx_gso_fallback; /**< times the kernel refused GSO (then it is off) */
    uint64_t rx_frames;       /**< frames handed to the caller */
    uint64_t rx_gro_dgrams;   /**< received buffers holding 2+ coalesced frames */
    uint64_t rx_bad_gro;      /**< coalesced buffers refused (segment size 0 or > frame) */
    uint64_t tx_shared_peers; /**< peers sent to without a connected socket of their own */
} em_udp_stats_t;

/** What the socket got, for warnings and tests (see em_link_udp_info()). */
typedef struct em_udp_info {
    int sndbuf_req, rcvbuf_req; /**< bytes asked for */
    int sndbuf, rcvbuf;         /**< bytes the kernel granted (as asked, not doubled) */
    int gso;                    /**< UDP_SEGMENT in use now (0 after a fallback) */
    int gro;                    /**< UDP_GRO enabled on the socket */
    char ifname[64];            /**< the interface the socket is bound on */
} em_udp_info_t;

/**
 * Open the link.  On failure returns NULL and writes a sentence a user can
 * act on into @p err (e.g. which interfaces exist when the named one does not),
 * and its cause into *cfg->reason when given.
 * Socket buffers smaller than asked are not an error: see em_link_udp_info().
 */
em_link_t *em_link_udp_open(const em_udp_cfg_t *cfg, char *err, size_t errlen);
const em_udp_stats_t *em_link_udp_stats(const em_link_t *l);
/** Buffer sizes and offloads of an open link. */
void em_link_udp_info(const em_link_t *l, em_udp_info_t *out);
/**
 * If the kernel granted smaller socket buffers than asked, write a warning
 * naming the sysctl to raise (net.core.rmem_max / wmem_max) into @p buf and
 * return 1; else return 0.
 */
int em_link_udp_buf_warning(const em_link_t *l, char *buf, size_t len);
/** The socket descriptor (for counting descriptors, or to wait on it). */
int em_link_udp_fd(const em_link_t *l);
/** The socket frames to @p peer leave through (its connected socket,
 *  opened if need be, or the shared send socket): for tests. */
int em_link_udp_send_fd(em_link_t *l, uint32_t peer);
/** Render an address blob as "a.b.c.d:port". */
void em_link_udp_addr_str(const em_link_addr_t *a, char *buf, size_t len);

#endif
