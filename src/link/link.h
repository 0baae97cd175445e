/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file link.h
 * The burst interface every ethermpi I/O backend ("link") implements:
 * allocate tx frames, send a burst, receive a burst, release it, flush.
 * The protocol never sees a link; the engine glues the two together, and
 * no link reads a protocol frame: what a link must know to route a frame
 * (its class, its destination) is in the descriptor (em_pkt_t).
 *
 * Addressing: each link has a local address (an opaque blob exchanged out
 * of band, e.g. through the Open MPI modex) and a peer table filled with
 * em_link_set_peer(); tx frames name their destination by peer index.
 *
 * Threading: a link is used by one thread at a time.
 */
#ifndef EM_LINK_LINK_H
#define EM_LINK_LINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** Opaque link-level address (MAC + queue, IP + port, simulated node, ...). */
typedef struct em_link_addr {
    uint8_t len;
    uint8_t bytes[31];
} em_link_addr_t;

/** A frame buffer owned by the link, lent to the caller. */
typedef struct em_pkt {
    uint8_t *data; /**< first byte of the protocol frame */
    uint32_t len;  /**< bytes at data (tx: set by the caller) */
    uint32_t peer; /**< tx: destination peer index */
    /** tx only, links with EM_LINK_F_GATHER: ext_len more bytes of frame,
     *  sent from the caller's memory after the len bytes at data.  Valid
     *  only until tx_burst returns: a frame the link does not take must
     *  have ext copied into data (em_link_pkt_flatten) before it waits. */
    const uint8_t *ext;
    uint32_t ext_len;
    /** enum em_pkt_cls: what the frame is, set by the layer above (the
     *  engine, from the protocol) on tx, and by links that carry it on rx;
     *  a link routes and counts by it and never reads the frame for that
     *  (after ext_len: the 32-bit peer left the struct at 40 bytes) */
    uint8_t cls;
    uint8_t rsvd;
    void *priv; /**< link private (mbuf, slot index, ...) */
} em_pkt_t;

/** Frame classes (em_pkt_t::cls). */
enum em_pkt_cls {
    EM_PKT_DATA = 0, /**< sequenced message data (and anything unclassified) */
    EM_PKT_BULK = 1, /**< put (rendezvous) data */
    EM_PKT_CTRL = 2, /**< standalone ACK/NACK */
};

/** em_link_ops::rx_peer: the source address is no peer's. */
#define EM_LINK_PEER_UNKNOWN 0xFFFFFFFFu

/** em_link::flags */
enum em_link_flags {
    EM_LINK_F_GATHER = 0x1, /**< tx frames may carry an external payload (em_pkt_t::ext) */
    /** the link acknowledges in-order frames on the endpoint's behalf (emd's
     *  eager ACKs): the protocol runs with em_proto_cfg_t::link_acks */
    EM_LINK_F_ACKS = 0x2,
};

/** What a link that acknowledges for the endpoint must know of one peer
 *  (em_link_ops_t::set_flow; the protocol's em_proto_flow_t). */
typedef struct em_link_flow {
    uint64_t rx_key, tx_key; /**< keys of the frames peer -> us and us -> peer */
    uint32_t rx_next;        /**< next sequence number we expect from the peer */
    uint32_t tx_next;        /**< our next sequence number toward the peer */
    uint32_t frame_max;      /**< our largest frame, headers included */
    uint32_t self, peer;     /**< protocol endpoint ids */
    uint32_t remote_index;   /**< what the peer calls us: the index our frames and
                                  the link's ACKs for us carry (wire.h) */
} em_link_flow_t;

typedef struct em_link em_link_t;

typedef struct em_link_ops {
    const char *name;
    /** A free tx frame of em_link::mtu bytes, or NULL when none is free now. */
    em_pkt_t *(*tx_alloc)(em_link_t *l);
    /**
     * Queue @p n frames for transmission.  @return how many were taken (from
     * the front); the others still belong to the caller (free or retry).
     * Frames may wait in the link until flush().
     */
    unsigned (*tx_burst)(em_link_t *l, em_pkt_t **pkts, unsigned n);
    /** Give back a tx frame that was not sent. */
    void (*tx_free)(em_link_t *l, em_pkt_t *pkt);
    /** Up to @p max received frames; each must be released with rx_release(). */
    unsigned (*rx_burst)(em_link_t *l, em_pkt_t **pkts, unsigned max);
    void (*rx_release)(em_link_t *l, em_pkt_t **pkts, unsigned n);
    /** Push out frames queued by tx_burst. @return 0 or a negative errno. */
    int (*flush)(em_link_t *l);
    /** Record where peer @p peer is reached. @return 0 or a negative errno. */
    int (*set_peer)(em_link_t *l, uint32_t peer, const em_link_addr_t *addr);
    void (*close)(em_link_t *l);
    /**
     * Which peer a received frame (from rx_burst, not yet released) came
     * from: the peer whose address (set_peer) is the frame's source address
     * (UDP source IP:port, Ethernet source MAC, the daemon's source (MAC,
     * endpoint), the simulated node), or EM_LINK_PEER_UNKNOWN.  Judges the
     * address only, never the protocol header (a rule of the link layer).  Optional
     * (NULL: the link cannot tell; frames are not bound to addresses).
     */
    uint32_t (*rx_peer)(em_link_t *l, const em_pkt_t *pkt);
    /**
     * Optional (links with EM_LINK_F_ACKS): link peer @p peer's flows stand
     * as @p f; the link may then acknowledge that peer's in-order frames.
     * Called after set_peer, and again whenever the protocol's state for the
     * peer is reset.  @return 0 or a negative errno (no ACKs for that peer).
     */
    int (*set_flow)(em_link_t *l, uint32_t peer, const em_link_flow_t *f);
    /**
     * Optional: a file descriptor that polls readable (POLLIN) when rx_burst
     * may have frames, for a caller that wants to sleep until traffic comes
     * (the libfabric provider's wait objects, prov/emo_wait.c).  The link
     * keeps it; the caller only polls it, and must not read it.  Frames the
     * link holds in its own memory from an earlier rx_burst are not shown by
     * it: a caller sleeps only after an rx_burst that returned nothing.
     * NULL, or -1 returned: no such descriptor (polled links: DPDK, emd),
     * so a waiter falls back to short sleeps.
     */
    int (*wait_fd)(em_link_t *l);
    /**
     * Optional (first contact, wire v3's handshake): send frame @p pkt (from
     * tx_alloc, len set, no ext) to link address @p addr, which may be no
     * peer's (the answer to a stranger's INIT).  Touches no peer state: no
     * entry, no source mapping, no connected socket.  May wait in the link
     * until flush().  @return 0 (taken), or a negative errno with @p pkt
     * still the caller's: -EINVAL an address this link cannot send to,
     * -EAGAIN no room now, -EHOSTUNREACH not reachable now (e.g. its next
     * hop is not resolved yet: the handshake's retries come again).
     * A link without it cannot run first contact (the front ends then
     * number peers as before).
     */
    int (*tx_to)(em_link_t *l, em_pkt_t *pkt, const em_link_addr_t *addr);
    /**
     * Optional (with tx_to): is received frame @p pkt's source consistent
     * with link address @p addr?  The judgment rx_peer makes for a peer
     * whose address is @p addr (UDP source IPv4 and send port, Ethernet
     * source MAC, ...), without a peer entry: a handshake frame names its
     * sender's reply address, and a frame whose source is another's is
     * dropped before the handshake reads it.
     */
    bool (*rx_from)(em_link_t *l, const em_pkt_t *pkt, const em_link_addr_t *addr);
    /**
     * Optional (with tx_to): does @p full, the reply address a handshake
     * answer named (its source already judged by rx_from), extend
     * @p partial, an address that names a peer before all of it is known
     * (kernel UDP: IPv4 and receive port, send port 0, from fi_getinfo's
     * node and service)?  tx_to must take @p partial.  NULL: this link has
     * no partial addresses (DPDK, AF_XDP: a MAC and queue cannot be derived
     * from a node and service); an address matches only itself.
     */
    bool (*covers)(const em_link_t *l, const em_link_addr_t *partial, const em_link_addr_t *full);
} em_link_ops_t;

/** Common part of every link (the first member of each implementation). */
struct em_link {
    const em_link_ops_t *ops;
    uint32_t mtu;         /**< bytes of protocol frame per packet */
    uint32_t flags;       /**< enum em_link_flags */
    em_link_addr_t local; /**< this link's address, for the peers */
};

static inline em_pkt_t *em_link_tx_alloc(em_link_t *l) { return l->ops->tx_alloc(l); }
static inline unsigned em_link_tx_burst(em_link_t *l, em_pkt_t **p, unsigned n)
{
    return l->ops->tx_burst(l, p, n);
}
static inline void em_link_tx_free(em_link_t *l, em_pkt_t *p) { l->ops->tx_free(l, p); }
static inline unsigned em_link_rx_burst(em_link_t *l, em_pkt_t **p, unsigned max)
{
    return l->ops->rx_burst(l, p, max);
}
static inline void em_link_rx_release(em_link_t *l, em_pkt_t **p, unsigned n)
{
    l->ops->rx_release(l, p, n);
}
static inline int em_link_flush(em_link_t *l) { return l->ops->flush(l); }
static inline int em_link_set_peer(em_link_t *l, uint32_t peer, const em_link_addr_t *a)
{
    return l->ops->set_peer(l, peer, a);
}
/** The link's wait descriptor (em_link_ops_t::wait_fd), or -1 when it has none. */
static inline int em_link_wait_fd(em_link_t *l)
{
    return l && l->ops->wait_fd ? l->ops->wait_fd(l) : -1;
}
/** Can the link run first contact (tx_to and rx_from)? */
static inline bool em_link_has_contact(const em_link_t *l)
{
    return l && l->ops->tx_to && l->ops->rx_from;
}
static inline void em_link_close(em_link_t *l)
{
    if (l)
        l->ops->close(l);
}

/** The flush() of a link whose tx_burst hands every frame on at once (nothing waits). */
static inline int em_link_flush_none(em_link_t *l)
{
    (void)l;
    return 0;
}

/** The rx_release() of a link whose received frames stay in its own
 *  buffers until its next rx_burst (nothing to give back). */
static inline void em_link_rx_release_none(em_link_t *l, em_pkt_t **pkts, unsigned n)
{
    (void)l;
    (void)pkts;
    (void)n;
}

/** Copy a frame's external payload into its own buffer (so it may wait). */
static inline void em_link_pkt_flatten(em_pkt_t *p)
{
    if (p->ext_len) {
        for (uint32_t i = 0; i < p->ext_len; i++)
            p->data[p->len + i] = p->ext[i];
        p->len += p->ext_len;
    }
    p->ext = NULL;
    p->ext_len = 0;
}

#endif
