/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file incast.h
 * The incast scenario: N senders stream to one receiver (node 0)
 * through a link_sim shared bottleneck with a finite buffer, for a fixed
 * simulated time.  Shared by the unit test (tests/unit/test_incast.c) and
 * bench/proto_sim, so both measure the same thing.
 *
 * Every sender keeps @c queued messages of @c msg_bytes outstanding (a new
 * one is sent as soon as one completes), so all of them always have data
 * for the bottleneck.  Goodput counts payload bytes delivered in order at
 * the receiver during the run, start-up included.
 */
#ifndef EM_SIM_INCAST_H
#define EM_SIM_INCAST_H

#include <stdint.h>

#include "sim/simnet.h"

#define EM_INCAST_MAX_SENDERS 64

typedef struct em_incast_cfg {
    unsigned senders;     /**< 1 .. EM_INCAST_MAX_SENDERS (nodes 1 .. senders) */
    uint32_t msg_bytes;   /**< size of each message */
    unsigned queued;      /**< messages outstanding per sender, 1 .. 16 */
    uint64_t duration_ns; /**< simulated time of the run */
} em_incast_cfg_t;

typedef struct em_incast_result {
    double goodput_frac;   /**< payload bits delivered / (bottleneck rate x duration) */
    double retx_frac;      /**< retransmissions / first transmissions of data frames, all senders */
    double jain;           /**< Jain's fairness index of the senders' delivered bytes (1 = equal) */
    double min_share;      /**< smallest sender's bytes / mean bytes per sender */
    uint64_t data_frames;  /**< first transmissions, all senders */
    uint64_t retransmits;  /**< all senders */
    uint64_t timeouts;     /**< retransmit timer expiries, all senders */
    uint64_t bn_dropped;   /**< tail drops at the bottleneck */
    uint32_t bn_max_queue; /**< most frames queued at the bottleneck */
    uint64_t delivered_bytes; /**< payload delivered in order at the receiver */
    int failed;               /**< operations that completed with an error (must be 0) */
} em_incast_result_t;

/** Defaults: 8 senders, 64 KiB messages, 4 outstanding, 20 ms. */
void em_incast_cfg_default(em_incast_cfg_t *ic);

/**
 * Run the scenario.  @p sc must describe a bottleneck in front of node 0
 * (bn_ns_per_kb > 0, bn_node 0); @p pc is each endpoint's protocol config.
 * @return 0, or -1 on a bad configuration or out of memory.
 */
int em_incast_run(const em_proto_cfg_t *pc, const em_sim_cfg_t *sc, const em_incast_cfg_t *ic,
                  em_incast_result_t *r);

#endif
