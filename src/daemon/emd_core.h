/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file emd_core.h
 * The data plane of `emd`, without DPDK and without sockets: the clients'
 * rings (port -> rx rings, tx rings -> port or a client on this node), the
 * eager-ACK flows, the node table and the memif hello.  emd.c (the process:
 * options, control socket, attach, the loop) drives it; the fuzz target
 * tests/fuzz/fuzz_emd_daemon.c drives it over a fake link with regions whose
 * every byte it rewrites between calls; tests/unit/test_emd_fwd.c runs two
 * of them over link_sim, with real protocol endpoints as clients.
 *
 * Files, one per seam: emd_core.c (clients, doom), emd_fwd.c (port -> rx
 * rings, tx rings -> port or a client on this node), emd_ack.c (eager-ACK
 * flows), emd_peer.c (node table, hello).  The rings are only touched
 * through emd_abi/emd_ring.h.
 *
 * Trust (docs/daemon.md "Trust model"): a client's region is client-writable
 * memory.  The geometry of its rings (offsets, sizes, slot size, frame size)
 * is the daemon's own copy, taken when the region was made and never read
 * back from the region; each client-written index (rx.head, tx.tail) and
 * each tx slot header is read once per use and bounded before use; frame
 * bytes are copied once, and a header the daemon must understand is decoded
 * from that copy.  A client whose indices are impossible is marked doomed
 * (emd_client::doomed, with the reason) and detached by the caller at the
 * next safe point (emd_core_take_doomed), never in the middle of a pass that
 * may still hold a pointer into its region.
 *
 * Eager ACKs: the daemon acknowledges an in-order DATA/PUT frame for a
 * client only on a flow the client registered (emd_core_add_flow: the
 * peer's id, the keys, where each direction's sequence numbers stand, the
 * client's frame size), and only after the frame passed the same stateless
 * checks the client's protocol runs (key, index, frame size, message
 * length).  No registration, no ACK: the client's protocol acknowledges those
 * itself.  Nothing here assumes an initial sequence number or a key format.
 *
 * Handshakes (wire v3 first contact, proto/hs_wire.h; docs/daemon.md
 * "First contact"): a frame whose first bytes em_hs_is() (magic, version 3,
 * a handshake type) is carried untouched between endpoints, local or
 * remote, like any frame (the node table and its per-uid share, the rings'
 * bounds, loss injection), but never eager-ACKed, never read for a flow's
 * resynchronisation, and needs no flow: the pair it introduces has none
 * yet.  Counted in `handshakes`.  What a receiver trusts of it is its
 * source, which the daemon writes in the ring record (this node and the
 * sending client's endpoint, or the shim's); a client's tx slot names only
 * the destination.  Once its handshake completes, a client registers the
 * pair's flow (EMD_CTL_FLOW, the keys the handshake derived) as a
 * numbered client does after its modex.
 *
 * The ISN invariant (where the protocol's sequence numbers start, the
 * protocol's em_proto_cfg_t::isn, random per pair since wire version 2):
 * the daemon never guesses it.  A flow's starting point is the rx_next the
 * client registers (EMD_CTL_FLOW, from the protocol's own state through
 * em_link_ops_t::set_flow), and a frame further than EMD_DUP_REACH behind
 * it, or a registration that is wrong, is left to the client's protocol
 * (delivered, not acknowledged).  test_emd_fwd checks it with random ISNs
 * near the 2^32 wrap.
 *
 * Threading: one thread (the daemon's loop).
 */
#ifndef EM_DAEMON_EMD_CORE_H
#define EM_DAEMON_EMD_CORE_H

#include <stddef.h>
#include <stdint.h>

#include "emd_abi/emd_ctl_msg.h"
#include "emd_abi/emd_region.h"
#include "emd_abi/emd_ring.h"
#include "emd_abi/emd_wire.h"
#include "link/link.h"
#include "util/clock.h"
#include "util/loss.h"

#define EMD_BURST 32
/** flows a client may register (one per peer of its job), default */
#define EMD_FLOWS_DEFAULT 4096u
#define EMD_FLOWS_MAX     65536u
/** node table (MACs the daemon sends to), default; LRU beyond it */
#define EMD_NODES_DEFAULT 1024u
/** a node entry unused this long may be given to another MAC */
#define EMD_NODE_AGE_NS 1000000000ull

/** A sender -> client stream the daemon acknowledges (registered by the client). */
struct emd_flow {
    uint64_t rx_key;       /* key of frames peer -> client */
    uint64_t tx_key;       /* key of frames client -> peer (our ACKs carry it) */
    uint32_t rcv_nxt;      /* next sequence number expected from the peer */
    uint32_t snd_hint;     /* the client's next sequence number toward the peer */
    uint32_t frame_max;    /* the client's largest frame, headers included */
    uint32_t self, peer;   /* protocol endpoint ids; the peer's frames carry peer (wire v3) */
    uint32_t remote_index; /* the peer's number of the client: its frames and our ACKs carry it */
    uint16_t src_ep;       /* the peer's address as the client registered it (FLOW): */
    uint8_t src_mac[6];    /* frames are acknowledged only from it, and ACKs go to it */
    uint8_t used, ack_owed;
};

/** The port's counters emd reports beyond the link's (emd_port_ops_t::stats). */
typedef struct emd_port_stats {
    uint64_t tx_full; /**< sends the port refused (tx queue full) */
    int bulk_known;   /**< 1: the bulk_* counters below are meaningful */
    uint64_t bulk_rx_frames, bulk_rx_bytes, bulk_tx_frames,
        bulk_tx_bytes; /**< the ranks' bulk queues */
} emd_port_stats_t;

/**
 * What emd needs of its port beyond the em_link_t burst interface: the
 * DPDK link's extras (emd.c fills it) or the AF_XDP link's (emd_xdp.c), none of them needed to forward or
 * acknowledge.  Every member is optional; no ops at all (the tests over
 * link_sim): no port counters, nothing to reset.
 */
typedef struct emd_port_ops {
    /** Fill @p out with the port's counters. */
    void (*stats)(void *ctx, emd_port_stats_t *out);
    /** Reset bulk slot @p slot's mbuf pools before the slot is given again.  @return 0 or -1. */
    int (*slot_reset)(void *ctx, uint16_t slot);
    /** The port's own counters as one line for the stats log (SIGUSR1, stop). */
    void (*describe)(void *ctx, char *buf, size_t len);
} emd_port_ops_t;

/** One attached client, as the daemon sees it. */
struct emd_client {
    int fd;                /* control socket; -1: slot free (the control plane's) */
    struct emd_shm_hdr *h; /* the shared region (client-writable) */
    /* geometry: the daemon's copies, fixed at attach, never re-read */
    uint64_t size;
    uint32_t mtu;
    emd_ring_t rx; /* we produce (records) */
    emd_ring_t tx; /* we consume (slots) */
    uint16_t ep;
    uint32_t pid, uid; /* from SO_PEERCRED */
    /* hash table of flow_cap entries, keyed by the client's number of the
     * peer (what the peer's frames name as their index, wire v3) (NULL: no
     * eager ACKs) */
    struct emd_flow *flows;
    /* the same flows keyed by the peer's address (node, endpoint), for the
     * client's own frames, whose index is the peer's number of the client:
     * flow_cap entries, each 0 (free) or 1 + a slot of flows */
    uint32_t *by_dst;
    unsigned nflows, flow_cap;
    uint16_t slot;      /* bulk-queue slot, or EMD_BULKQ_NO_SLOT */
    const char *doomed; /* non-NULL: detach at the next safe point, for this reason */
};

struct emd_node {
    uint8_t mac[6];
    uint8_t used;
    uint32_t uid;     /* whose send made the entry (EMD_UID_DAEMON: the daemon's own) */
    uint64_t last_ns; /* last use (LRU) */
};

/** The node table owner of entries the daemon makes for itself (hellos). */
#define EMD_UID_DAEMON UINT32_MAX

/**
 * Shares of a node (docs/daemon.md "Limits"): with per-uid limits on (the
 * default), one uid may hold at most this fraction of the client slots and
 * of the node table, so a quarter stays for everyone else.  3/4 and not 1/2:
 * one user's job that uses the whole node (a rank per core, ranks <
 * --max-clients) must still fit.
 */
#define EMD_UID_SHARE_NUM 3u
#define EMD_UID_SHARE_DEN 4u
/** @p total's per-uid share (at least 1). */
static inline uint32_t emd_uid_share(uint32_t total)
{
    uint32_t s = (uint32_t)((uint64_t)total * EMD_UID_SHARE_NUM / EMD_UID_SHARE_DEN);
    return s ? s : 1;
}

typedef struct emd_core {
    em_link_t *link;
    uint8_t mac[6]; /* our node id (emd_wire.h "Node ids": MAC, or IPv4 + port) */
    int framing;    /* enum emd_framing: what node ids are, how peers are addressed */
    uint32_t mtu;   /* client frame size = link MTU - shim */
    int ack;        /* send eager ACKs on the clients' behalf */
    uint32_t max_clients, max_flows;
    struct emd_client *cl;
    uint16_t *ep2cl;        /* endpoint -> client index + 1 (65536 entries) */
    struct emd_node *nodes; /* the link's peer table: index = link peer id */
    unsigned nnodes, max_nodes;
    unsigned max_nodes_per_uid; /* a uid's share of the node table (max_nodes: no limit) */
    uint64_t now_ns;            /* the loop's clock, em_clock_ns() (set by the caller each round) */
    int tx_blocked;             /* this round, the port refused frames (or no mbuf) */
    em_loss_t loss;             /* testing: drop this fraction (loss.p) of port frames */
    /* memif: the other end's queue layout (hello) */
    uint16_t bulk_slots; /* ours (emd --bulk-slots) */
    int peer_seen;       /* a consistent hello or reply arrived */
    uint16_t peer_slots, peer_queues;
    uint8_t peer_mac[6]; /* the first hello's source: its layout is the one we keep */
    int mismatch_logged;
    uint64_t last_hello_reply_ns;
    void (*log)(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
    /* node totals */
    uint64_t rx_frames, rx_bad, rx_no_ep, tx_frames, local, loss_drops, acks;
    uint64_t put_frames, put_bytes, ack_resyncs, notes;
    uint64_t ack_refused;      /* in-order frames delivered without an ACK: a check refused them */
    uint64_t ack_wrong_source; /* of which: right key and ids, another address than the flow's */
    uint64_t flows_refused;    /* flow registrations refused (bad or table full) */
    uint64_t nodes_full, nodes_evicted, tx_bad_mac;
    uint64_t nodes_uid_full; /* sends refused: the sender's uid holds its share of the table */
    /* the last node the port refused (udp: no route, no ARP answer; link_dpdk
     * says why on stderr): not asked again for EMD_NODE_AGE_NS, so a
     * retransmitting client does not stall the loop in next-hop lookups */
    uint8_t unreach_id[6];
    uint64_t unreach_ns, nodes_unreachable;
    uint64_t hello_bad, hello_conflict, hello_replies_skipped;
    uint64_t doomed_clients;
    uint64_t rx_ring_full; /* frames dropped for a full rx ring (the daemon's own count) */
    uint64_t handshakes;   /* wire v3 handshake frames carried ("Handshakes" above) */
} emd_core_t;

/** Set up @p c (zeroed by the caller) for @p max_clients clients.  @return 0 or -1 (no memory). */
int emd_core_init(emd_core_t *c, em_link_t *link, const uint8_t mac[6], uint32_t mtu,
                  uint32_t max_clients, uint32_t max_flows, uint32_t max_nodes, int ack);
void emd_core_fini(emd_core_t *c);

/**
 * Client @p i (free) now owns region @p h of @p size bytes, laid out by
 * emd_shm_init with these ring sizes: take the geometry from the arguments
 * (never from the region).  @return 0, or -1 (no memory for its flows).
 */
int emd_core_attach(emd_core_t *c, unsigned i, int fd, struct emd_shm_hdr *h, uint64_t size,
                    uint32_t rx_size, uint32_t tx_slots, uint16_t ep, uint32_t pid, uint32_t uid,
                    uint16_t slot);
/** Forget client @p i (the caller unmaps and closes). */
void emd_core_forget(emd_core_t *c, unsigned i);
/** Mark client @p i for detaching with @p why (a static string); the first reason wins. */
void emd_core_doom(emd_core_t *c, unsigned i, const char *why);
/** A doomed client's index, or -1 (the caller detaches it and asks again). */
int emd_core_take_doomed(emd_core_t *c);

/**
 * Client @p i registers the flow described by a control message (already
 * checked by emd_ctl_check).  @return 0, or -1 with the reason in @p why
 * (counted in flows_refused).
 */
int emd_core_add_flow(emd_core_t *c, unsigned i, const struct emd_ctl_flow *f, const char **why);

/** Port -> rx rings (and eager ACKs).  @return frames handled. */
unsigned emd_core_poll_port(emd_core_t *c);
/** Client @p i's tx ring -> port (or a client on this node).  @return slots consumed. */
unsigned emd_core_drain(emd_core_t *c, unsigned i);
/** Publish the rx tails written since the last call. */
void emd_core_publish_rx(emd_core_t *c);
/** Any client with tx slots waiting? */
int emd_core_tx_pending(const emd_core_t *c);

/** Send a hello (or reply) with our queue layout to every node (L2 only:
 *  in udp framing there are no bulk queues to pair, so no hello). */
void emd_core_send_hello(emd_core_t *c, uint8_t kind);
/** Queue pairs of our port (1 + S*S, or 1). */
uint16_t emd_core_queues(const emd_core_t *c);

/** Link peer index of node @p mac (added, or an aged entry reused); -1: none free.
 *  The link address it gives the port: L2, the MAC and queue 0 (8 bytes);
 *  udp, link_dpdk's udp blob (14 bytes: MAC ff:..:ff, queue 0, IPv4,
 *  port): the DPDK link takes the next hop's MAC from the kernel, and on a
 *  cable, which no kernel sees, any MAC reaches the one other end, which
 *  checks the IPv4 address and port. */
int emd_core_node(emd_core_t *c, const uint8_t mac[6], uint32_t uid);

#endif
