/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file link_sim.h
 * An in-memory "fabric" of N simulated links with seeded, reproducible
 * loss, duplication, reordering, latency, bandwidth and queue limits, on a
 * simulated clock.  Used by the protocol tests and the proto_sim benchmark.
 *
 * Time is the fabric's own: the driver sets it with em_sim_set_now(); a
 * frame sent at t arrives at t + serialisation + latency (+ a random extra
 * delay when it is picked for reordering).  The address of node i is
 * {1, {i}}.  A node's peer numbers are node numbers until set_peer() says
 * otherwise: set_peer(p, address of node i) makes peer p (any 32-bit
 * number, as the protocol's) node i for that node, both ways (frames to p
 * go to node i; rx_peer calls frames from node i peer p).
 *
 * Shared bottleneck (optional, bn_ns_per_kb > 0): every frame addressed to
 * node bn_node, from any sender, passes one switch port in front of it:
 *
 *   sender 1 --(own wire: ns_per_kb + latency)--\
 *   sender 2 --(own wire: ns_per_kb + latency)---> [ bn_queue frames, FIFO ] --(bn_ns_per_kb)--> bn_node
 *   ...                                         /     tail drop when full
 *
 * A frame reaches the port at (end of its serialisation on the sender's
 * wire) + latency, waits behind the frames already queued there and leaves
 * after its own service time (bytes x bn_ns_per_kb / 1000); it is delivered
 * when it leaves.  The port holds at most bn_queue frames, the one in
 * service included; a frame that finds it full is dropped (bn_dropped).
 * Arrivals at the port are processed in time order (a heap of pending
 * frames on the simulated clock), so the result depends only on the seed
 * and the traffic, never on the order in which senders were polled.
 * Frames in the other direction (ACKs from bn_node) do not pass it.
 */
#ifndef EM_LINK_SIM_H
#define EM_LINK_SIM_H

#include <stdbool.h>
#include <stdint.h>

#include "link/link.h"

typedef struct em_sim_cfg {
    uint32_t mtu;          /**< frame size limit (bytes) */
    double loss;           /**< probability a frame is dropped */
    double dup;            /**< probability a delivered frame arrives twice */
    double reorder;        /**< probability a frame gets an extra random delay */
    uint64_t latency_ns;   /**< one-way propagation delay */
    uint64_t reorder_ns;   /**< max extra delay of a reordered frame */
    uint64_t ns_per_kb;    /**< serialisation time per 1000 bytes (0 = infinite bandwidth) */
    uint32_t queue_cap;    /**< frames a node's receive queue holds (0 = unlimited) */
    uint64_t seed;         /**< PRNG seed: same seed, same run */
    uint64_t bn_ns_per_kb; /**< shared bottleneck in front of bn_node: service time per
                                 1000 bytes (0 = no bottleneck) */
    uint32_t bn_queue; /**< frames the bottleneck port holds, in service included (0 = unlimited) */
    uint16_t bn_node;  /**< the node behind the bottleneck (the incast receiver) */
} em_sim_cfg_t;

typedef struct em_sim_stats {
    uint64_t sent, delivered, lost, duplicated, reordered, overflowed, to_dead;
    uint64_t bn_forwarded; /**< frames that went through the bottleneck */
    uint64_t bn_dropped;   /**< frames the full bottleneck queue dropped (tail drop) */
    uint64_t bn_bytes;     /**< bytes that went through the bottleneck */
    uint32_t bn_max_queue; /**< most frames seen queued at the bottleneck */
} em_sim_stats_t;

typedef struct em_sim em_sim_t;

void em_sim_cfg_default(em_sim_cfg_t *cfg);
/** NULL when @p nodes is 0 or above 256, mtu is 0, bn_node is not a node, or out of memory. */
em_sim_t *em_sim_create(unsigned nodes, const em_sim_cfg_t *cfg);
void em_sim_destroy(em_sim_t *s);
/** Node @p i's link (owned by the fabric). */
em_link_t *em_sim_link(em_sim_t *s, unsigned i);
void em_sim_set_now(em_sim_t *s, uint64_t now);
uint64_t em_sim_now(const em_sim_t *s);
/** Earliest arrival time of any queued frame (UINT64_MAX: none). */
uint64_t em_sim_next_arrival(const em_sim_t *s);
/** A dead node neither sends nor receives (frames vanish). */
void em_sim_set_dead(em_sim_t *s, unsigned node, bool dead);
/** Change loss probability at run time. */
void em_sim_set_loss(em_sim_t *s, double loss);
const em_sim_stats_t *em_sim_stats(const em_sim_t *s);

#endif
