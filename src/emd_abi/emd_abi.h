/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file emd_abi.h
 * The daemon contract: everything two processes of daemon mode must agree
 * on, and nothing either one keeps to itself.
 *
 *   emd_abi.h      the version, and the bulk queues' layout on the port
 *   emd_ctl_msg.h  control messages on the daemon's unix socket, the
 *                  STATUS reply, fd passing (SCM_RIGHTS)
 *   emd_region.h   the shared region a client gets (memfd): header, slots
 *   emd_ring.h     the one single-producer/single-consumer ring API both
 *                  sides use on the region's rings
 *   emd_wire.h     node to node: the shim, the hello, the modex address
 *
 * Why a folder of its own (src/emd_abi/, not src/daemon/ or src/link/):
 * it is the ABI between `emd` (src/daemon/) and its clients (link_emd,
 * link_bulkq in src/link/), and between two nodes' daemons.  Neither side
 * owns it, so neither side's folder holds it; both include it, and nothing
 * here includes either.  (Open MPI's usnic keeps its agent/client contract
 * in a neutral btl_usnic_connectivity.h the same way.)
 *
 * Trust: the two ends of every part are different processes (or nodes), so
 * every reader validates what it reads before use (the *_check and
 * *_decode functions, and the ring API's bounds), and says why it refused.
 */
#ifndef EM_EMD_ABI_EMD_ABI_H
#define EM_EMD_ABI_EMD_ABI_H

#include <stdint.h>

/*
 * One version for the whole contract (control messages, region, shim,
 * hello): daemons and clients of one build speak it.
 * 2: the region's header carries the bulk-queue block, the live
 *    receive-loss fraction, and put counters; rx_off moved to 768
 * 3: FLOW control messages; the daemon acknowledges only registered flows
 * 4: the frame class: in the shim (16 bytes), in every ring record
 * 5: FLOW names the peer's address; the daemon acknowledges only frames
 *    from it
 * 6: protocol wire version 3 (proto/wire.h): the daemon finds a flow by
 *    the frame's 32-bit index, and FLOW carries the peer's index for the
 *    client (remote_index), which the daemon's ACKs carry
 * 7: FLOW's protocol endpoint ids (self, peer) are 32 bits, as the
 *    protocol's peer numbers and the wire's index are
 */
#define EMD_VERSION 7u

/*
 * Bulk queues (docs/daemon.md "Bulk queues"; [dpdk-btl]'s rendezvous data
 * on the MPI process's own queue, docs/references.md).  On the memif wire the
 * daemon is a hugepage-backed DPDK primary with 1 + S*S queue pairs on its
 * port (S = emd --bulk-slots): queue 0 is the daemon's; queue
 * emd_bulkq_queue(S, s, r) carries put frames from bulk slot s of one node
 * to slot r of the other (memif queue i feeds queue i of the other end).
 * A client with a slot runs as a DPDK secondary of the daemon and owns the
 * TX side of queues (S, my slot, *) and the RX side of queues (S, *, my
 * slot): no two processes touch one ring.  Frames on these queues carry
 * the daemon's shim (emd_wire.h), so a receiver drops what was meant for
 * the previous owner of its slot.
 */
#define EMD_BULKQ_SLOTS_MAX 15u /* 1 + 15*15 = 226 queue pairs (memif: <= 255) */
#define EMD_BULKQ_NO_SLOT   0xFFFFu
#define EMD_BULKQ_NAME_LEN  64u
#define EMD_BULKQ_WHY_LEN   96u

/* The daemon creates two mempools per bulk slot, the slot's DPDK secondary
 * looks them up by name: the pool the slot's rx queues receive into, and
 * the pool it sends from (printf arguments: port id, slot). */
#define EMD_BULKQ_RX_POOL  "bulkq_rx_p%u_s%u"
#define EMD_BULKQ_TX_POOL  "bulkq_tx_p%u_s%u"
#define EMD_BULKQ_RX_MBUFS 1023u
#define EMD_BULKQ_TX_MBUFS 511u

/** The queue carrying put frames from bulk slot @p from (sender's node) to slot @p to. */
static inline uint16_t emd_bulkq_queue(uint16_t slots, uint16_t from, uint16_t to)
{
    return (uint16_t)(1u + (uint32_t)from * slots + to);
}

/** Queue pairs of a port with @p slots bulk slots (1 + S*S; 1 without). */
static inline uint16_t emd_bulkq_queues(uint16_t slots)
{
    return (uint16_t)(slots ? 1u + (uint32_t)slots * slots : 1u);
}

#endif
