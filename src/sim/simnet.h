/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file simnet.h
 * A discrete-event driver that runs N protocol endpoints over a link_sim
 * fabric on the fabric's simulated clock: each step jumps to the next frame
 * arrival or protocol timer, delivers arrived frames and runs timers.
 * Used by the end-to-end protocol tests and bench/proto_sim.
 */
#ifndef EM_SIM_SIMNET_H
#define EM_SIM_SIMNET_H

#include <stdbool.h>
#include <stdint.h>

#include "link/link_sim.h"
#include "proto/proto.h"

typedef struct em_simnet_cb {
    void (*recv)(void *u, unsigned node, uint32_t from, uint8_t tag, const void *data, size_t len);
    void (*complete)(void *u, unsigned node, void *op_ctx, int status);
    int (*put)(void *u, unsigned node, uint32_t from, const em_put_target_t *t, const void *data,
               size_t len);                                     /* optional */
    void (*peer_failed)(void *u, unsigned node, uint32_t peer); /* optional */
    /* optional, both or neither: the protocol's ops.place / ops.place_end */
    void *(*place)(void *u, unsigned node, uint32_t from, uint8_t tag, const void *head,
                   size_t head_len, size_t msg_len, size_t *skip, void **ctx);
    void (*place_end)(void *u, unsigned node, uint32_t from, void *ctx, int status);
} em_simnet_cb_t;

typedef struct em_simnet em_simnet_t;

/** @p pcfg's self/npeers are set per node; everything else is shared. */
em_simnet_t *em_simnet_create(unsigned nodes, const em_proto_cfg_t *pcfg, const em_sim_cfg_t *scfg,
                              const em_simnet_cb_t *cb, void *u);
void em_simnet_destroy(em_simnet_t *n);
em_proto_t *em_simnet_proto(em_simnet_t *n, unsigned node);
em_sim_t *em_simnet_sim(em_simnet_t *n);
uint64_t em_simnet_now(const em_simnet_t *n);
/** Stop running @p node (its process "died"): no rx, no timers, frames vanish. */
void em_simnet_kill(em_simnet_t *n, unsigned node);
/**
 * Advance to the next event, but not beyond @p limit, and process it.
 * @return false when there is no event at or before @p limit.
 */
bool em_simnet_step(em_simnet_t *n, uint64_t limit);
/** Step until @p done returns true or time passes @p limit. @return done's last answer. */
bool em_simnet_run(em_simnet_t *n, bool (*done)(void *u), void *u, uint64_t limit);

#endif
