/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file engine_internal.h
 * The engine's state, shared by engine.c and rma.c (RMA reads and atomics
 * on the engine's reserved tag); not for front ends.
 */
#ifndef EM_ENGINE_ENGINE_INTERNAL_H
#define EM_ENGINE_ENGINE_INTERNAL_H

#include "engine/engine.h"

#define EM_BURST    32
#define EM_TX_BATCH 64
/* Below this a copy into the frame is cheaper than a second iovec. */
#define EM_GATHER_MIN 512

enum { ADDR_UNKNOWN = 0, ADDR_SET = 1, ADDR_NONE = 2 };

struct em_rma; /* rma.c */

struct em_engine {
    em_link_t *link;
    em_proto_t *proto;
    em_engine_ops_t ops;
    void *uctx;
    em_regions_t own_regions; /**< the table, unless the owner shares one (em_engine_use_regions) */
    em_regions_t *regions;    /**< the table in use */
    uint8_t *addr;            /* per peer: ADDR_UNKNOWN, ADDR_SET or ADDR_NONE */
    uint32_t npeers;
    em_pkt_t *batch[EM_TX_BATCH];
    unsigned nbatch;
    unsigned events;        /* completions during the current call */
    const em_pkt_t *rx_cur; /* the frame the protocol is judging (progress only) */
    uint32_t self;          /* our protocol endpoint id (cfg.self) */
    int in_progress;
    uint64_t now; /* the clock as the last progress call read it (0: none yet) */
    em_engine_stats_t st;
    uint32_t rx_msg_max; /**< longest message the protocol accepts from a peer (cfg.max_msg) */
    uint64_t silence_ns; /**< how long a peer may be silent before the protocol fails it
                          *   (cfg.max_retries back-offs capped at cfg.rto_max_ns):
                          *   first contact waits as long (contact.c) */
    struct em_rma *rma;  /**< RMA reads and atomics (rma.c), NULL until the first use */
    struct em_contact *contact; /**< first contact (contact.c), NULL when off */
    uint8_t *ready; /**< first contact: per peer, keys set from its handshake (contact.c) */
};

/* contact.c, called by engine.c and rma.c */
/** A handshake frame (em_hs_is) from the link, inside progress. */
void em_contact_rx(em_engine_t *e, const em_pkt_t *pkt, uint64_t now);
/** The table's timers, inside progress. */
void em_contact_poll(em_engine_t *e, uint64_t now);
/** The table's next deadline (UINT64_MAX: none). */
uint64_t em_contact_deadline(const em_engine_t *e);
/** The gate's answer for a peer not ready: 0 (its handshake started or under
 *  way: the operation is queued behind it, em_proto_hold_peer), -EM_EAGAIN
 *  (its keys are being set anew), -EM_EPEERFAIL or -EM_EINVAL. */
int em_contact_gate_slow(em_engine_t *e, uint32_t peer);
void em_contact_destroy(em_engine_t *e);
/** A data frame from @p peer's address before its keys are set (the
 *  protocol drops it, drop_source): when our handshake toward it is under
 *  way, the peer bound us already: count it (hs_early) and send our
 *  handshake frame again now (em_conn_hurry). */
void em_contact_early(em_engine_t *e, uint32_t peer);

/** May operations go to @p peer now?  0, or what the caller returns.  One
 *  byte read on the data path when first contact is on, nothing when off. */
static inline int em_contact_gate(em_engine_t *e, uint32_t peer)
{
    if (!e->ready || (peer < e->npeers && e->ready[peer]))
        return 0;
    return em_contact_gate_slow(e, peer);
}

/** Hand the batch of frames to the link (engine.c). */
void em_engine_flush_tx(em_engine_t *e);

/* rma.c, called by engine.c */
/** A message on EM_ENGINE_TAG_RMA from @p peer (inside receive processing). */
void em_rma_recv(em_engine_t *e, uint32_t peer, const void *data, size_t len);
/** Is @p ctx one of rma.c's own operations?  Then it is completed here. */
bool em_rma_complete(em_engine_t *e, void *ctx, int status);
/** @p peer failed (@p status -EM_EPEERFAIL) or was reset (-EM_ECANCELED):
 *  its outstanding requests complete with @p status. */
void em_rma_peer_end(em_engine_t *e, uint32_t peer, int status);
/** After the protocol is gone: the rest complete with -EM_ECANCELED; free. */
void em_rma_destroy(em_engine_t *e);

#endif
