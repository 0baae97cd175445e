/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file em_bcast.h
 * em_bcast: a lossy broadcast channel for small typed updates ([relax-dpdk]).
 *
 * A member sends an update (a run of elements of a shared vector, given by
 * element offset and count) to every other member in ONE broadcast frame,
 * and receives whatever arrives: no acknowledgement, no retransmission, no
 * ordering promise.  Applications that tolerate lost and stale updates
 * (asynchronous relaxation) use it where a reliable transport would wait.
 *
 * Backends, chosen at run time (em_bcast_cfg::kind):
 *   EM_BCAST_DPDK  L2 broadcast (ff:ff:ff:ff:ff:ff) through link_dpdk, under
 *                  its own ethertype EM_ETHERTYPE_BCAST (0x88B6), on any
 *                  DPDK PMD (memif cable, af_xdp on a veth, a real NIC).
 *   EM_BCAST_XDP   the same on the native AF_XDP link (link/xdp/link_xdp.h,
 *                  no DPDK) on interface `iface`, queue `xdp_queue`; the
 *                  link owns the queue (no sharing with a BTL on it).
 *   EM_BCAST_UDP   kernel UDP to the interface's broadcast address
 *                  (SO_BROADCAST): the baseline of Koishi et al.
 * em_bcast_open_link() runs the channel over any em_link_t (tests).
 *
 * Counters per channel (em_bcast_stats): frames sent, frames received
 * (accepted), dropped = gaps in the per-sender sequence numbers + frames
 * rejected by validation (bcast_wire.h lists every check).
 *
 * Sharing a port with the dpdk BTL (EM_BCAST_DPDK only; an EM_BCAST_XDP
 * channel owns its interface queue): when the process already runs the BTL
 * (direct mode) on the same device, an EM_BCAST_DPDK channel shares that
 * port (link_dpdk's port sharing: its own mempool, the owner's tx queue, a
 * ring for its ethertype).  Both must be used from one thread, and the
 * channel must be closed before MPI_Finalize closes the BTL's port
 * (docs/relax.md, tests/mpi/bcast_share.c).
 *
 * Threading: a channel is used by one thread at a time.
 */
#ifndef EM_BCAST_H
#define EM_BCAST_H

#include <stddef.h>
#include <stdint.h>

#include "link/link.h"

typedef enum em_bcast_kind {
    EM_BCAST_UDP = 1,
    EM_BCAST_DPDK = 2,
    EM_BCAST_XDP = 3,
} em_bcast_kind_t;

typedef struct em_bcast_cfg {
    em_bcast_kind_t kind;
    uint32_t key;     /**< job key: frames carrying another key are rejected */
    uint16_t channel; /**< channel id: several channels may share a wire */
    uint16_t self;    /**< this member's id (0 .. members-1) */
    uint16_t members; /**< number of members (senders) */
    uint32_t vec_len; /**< length of the shared vector (bounds check) */
    uint32_t mtu;     /**< largest frame payload wanted; 0 = what the wire allows */
    /* EM_BCAST_UDP */
    const char *iface; /**< interface whose IPv4 broadcast address is used (e.g. "eth0");
                            EM_BCAST_XDP: the interface of the AF_XDP socket */
    uint16_t port;     /**< UDP port (same on every member); 0 = 47603 */
    /* EM_BCAST_DPDK (see link_dpdk.h) */
    const char *vdev; /**< devargs, after em_link_dpdk_devargs() expansion */
    const char *eal_args;
    const char *file_prefix;
    double rx_loss; /**< injected receive loss (wires no kernel sees) */
    uint64_t loss_seed;
    uint32_t link_wait_ms;
    /** EM_BCAST_DPDK framing (link_dpdk.h): 0 = L2 broadcast (ethertype
     *  0x88B6); 1 = UDP/IPv4 to 255.255.255.255 port 29718 (routable
     *  framing; beyond a router see em_bcast_set_members) */
    int framing;
    /* EM_BCAST_XDP (also: iface, mtu, rx_loss, loss_seed, framing) */
    uint32_t xdp_queue;   /**< the interface queue of its socket */
    const char *xdp_prog; /**< the filter object; NULL: EM_XDP_PROG, else the installed one */
} em_bcast_cfg_t;

typedef struct em_bcast_stats {
    uint64_t sent;      /**< frames handed to the wire */
    uint64_t send_full; /**< updates not sent: no tx buffer / ring full (lost at the sender) */
    uint64_t received;  /**< frames accepted and delivered */
    uint64_t elements;  /**< elements delivered */
    uint64_t dropped;   /**< gaps + rejected */
    uint64_t gaps;      /**< frames missing in per-sender sequence numbers */
    uint64_t late;      /**< frames older than one already seen (reordered or duplicated) */
    uint64_t own;       /**< own frames looped back (ignored, not counted as received) */
    uint64_t rejected;  /**< frames failing validation (sum of rejected_by) */
    uint64_t rejected_by[12]; /**< per em_bc_dec reason (index = enum em_bc_dec) */
} em_bcast_stats_t;

typedef struct em_bcast em_bcast_t;

/**
 * Called once per accepted frame with the update decoded to host order.
 * @p vals is valid only during the call.
 */
typedef void (*em_bcast_rx_fn)(void *arg, uint16_t sender, uint32_t offset, uint32_t count,
                               const double *vals);

/**
 * Open a channel.  @return NULL with a sentence a user can act on in @p err
 * (bad configuration, no such interface, DPDK cannot start, ...).
 */
em_bcast_t *em_bcast_open(const em_bcast_cfg_t *cfg, char *err, size_t errlen);

/**
 * Run a channel over an open link (taken over: closed by em_bcast_close).
 * Frames go to peer @p bcast_peer, which the caller has pointed at the
 * broadcast address (em_link_set_peer).  cfg->kind is ignored.
 */
em_bcast_t *em_bcast_open_link(em_link_t *link, uint16_t bcast_peer, const em_bcast_cfg_t *cfg,
                               char *err, size_t errlen);

/** Most elements one frame carries on this channel's wire. */
uint32_t em_bcast_max_elems(const em_bcast_t *b);

/**
 * Broadcast elements [offset, offset+count) of the shared vector, values
 * @p vals, in one frame.
 * @return 0; -EAGAIN when the wire has no room now (the update is lost, and
 * counted in send_full); -EMSGSIZE when count is 0 or > em_bcast_max_elems;
 * -ERANGE when the run is outside the vector.
 */
int em_bcast_send(em_bcast_t *b, uint32_t offset, const double *vals, uint32_t count);

/**
 * Receive what has arrived (up to @p max_frames, 0 = everything queued now)
 * and call @p cb for each accepted frame.  Never blocks.
 * @return the number of frames delivered.
 */
unsigned em_bcast_poll(em_bcast_t *b, em_bcast_rx_fn cb, void *arg, unsigned max_frames);

const em_bcast_stats_t *em_bcast_stats(const em_bcast_t *b);

/** udp framing: this member's IPv4 address (host order), 0 otherwise. */
uint32_t em_bcast_local_ipv4(const em_bcast_t *b);

/**
 * udp framing: every member's IPv4 address (@p ipv4[m] for member m, host
 * order; 0 = unknown).  A broadcast does not cross a router: when some
 * member is behind one (the kernel routes it via a gateway), or with
 * @p force (networks that deliver no broadcast at all, e.g. cloud virtual
 * networks), each update is sent by unicast to every other member instead,
 * and this is said once on stderr.
 * @return the number of unicast peers (0: the broadcast reaches everyone),
 * or -1 with a sentence in @p err (no route, no ARP answer from a next hop).
 */
int em_bcast_set_members(em_bcast_t *b, const uint32_t *ipv4, uint16_t n, int force, char *err,
                         size_t errlen);

/** The underlying link (e.g. for link_dpdk's own counters). */
em_link_t *em_bcast_link(const em_bcast_t *b);

void em_bcast_close(em_bcast_t *b);

#endif
