/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file act.c
 * A peer's active part (proto_internal.h, struct em_peer_act): taken on
 * first use, released when the peer has been quiet (docs/design.md
 * "Memory per peer").
 *
 * Taken by the first send to the peer (em_proto_send/sendv/put: without
 * memory the call fails with -EM_ENOMEM and nothing is queued), or by the
 * first received frame that must be held out of order or reassembled
 * (without memory it is dropped unacknowledged, drop_nomem, and comes
 * again; a peer that only exchanges single-frame messages in order never
 * needs one on its receive side).  Never on the release side of the data
 * path: em_proto_poll() looks for idle peers every peer_idle_ns / 4
 * (em_act_sweep), and only while some peer is active.
 *
 * A peer is quiet when nothing of ours is queued or unacknowledged, nothing
 * of its is held out of order and no message of its is half reassembled;
 * it is released when it stayed quiet, with neither sequence number moving,
 * for peer_idle_ns (so between peer_idle_ns and 1.5 x peer_idle_ns after
 * its last frame); a peer that fails gives it back at once (em_fail_peer).  What must stay
 * correct across the release stays in struct em_peer: both sequence
 * numbers (the next frame continues the sequence; a duplicate of a frame
 * already delivered is below rcv_nxt and is recognized as before), the
 * ACK we owe, the liveness watch and the RTT estimate.  The out-of-order
 * bitmap is dropped only when empty, which quiet requires.
 */
#include "proto/proto_internal.h"

#include <stdlib.h>
#include <string.h>

/** How often em_proto_poll() looks for idle peers: a quarter of the idle time. */
static uint64_t sweep_every(const struct em_proto *p)
{
    uint64_t s = p->cfg.peer_idle_ns / 4;
    return s ? s : 1;
}

struct em_peer_act *em_peer_act_get(struct em_proto *p, struct em_peer *pe, uint64_t now)
{
    if (pe->a)
        return pe->a;
    struct em_peer_act *a = NULL;
    if (p->act_fail)
        p->act_fail--; /* em_proto_fail_act_alloc(): as if out of memory */
    else
        a = calloc(1, sizeof *a + (size_t)p->ring * sizeof a->tx[0]);
    if (!a) {
        p->st.peer_acquire_failed++;
        return NULL;
    }
    a->rto_cur = pe->rto_base; /* the RTT estimate outlived the release */
    a->rto_deadline = EM_NEVER;
    a->pace_at = EM_NEVER;
    a->cc = p->cc0;
    a->seen_snd = pe->snd_nxt;
    a->seen_rcv = pe->rcv_nxt;
    a->quiet_since = EM_NEVER;
    pe->a = a;
    em_poll_add(p, pe); /* its timers (retransmit, pacing) */
    p->st.peer_acquires++;
    if (p->nactive++ == 0 && p->cfg.peer_idle_ns) {
        p->sweep_at = now + sweep_every(p);
        em_arm(p, p->sweep_at);
    }
    return a;
}

void em_peer_act_put(struct em_proto *p, struct em_peer *pe)
{
    if (!pe->a)
        return;
    em_rx_free(p, pe); /* out-of-order slots and the reassembly buffer */
    free(pe->a);
    pe->a = NULL;
    if (--p->nactive == 0)
        p->sweep_at = EM_NEVER; /* nothing to look for: no timer runs for it */
}

/** Nothing of ours queued or unacknowledged, nothing of its held or half
 *  reassembled: the active part holds nothing that must be kept. */
static bool quiet(const struct em_peer *pe)
{
    const struct em_peer_act *a = pe->a;
    return !pe->q_head && pe->snd_una == pe->snd_nxt && !a->nooo && !a->ra_active;
}

void em_act_sweep(struct em_proto *p, uint64_t now)
{
    /* a peer holding its active part is in the poll set (em_peer_act_get) */
    for (uint32_t k = 0; k < p->poll_n && p->nactive; k++) {
        struct em_peer *pe = &p->peers[p->poll[k]];
        struct em_peer_act *a = pe->a;
        if (!a) /* released, or failed (em_fail_peer released it) */
            continue;
        bool q = quiet(pe);
        if (!q || a->seen_snd != pe->snd_nxt || a->seen_rcv != pe->rcv_nxt) {
            /* traffic since the last sweep: quiet (if at all) from now */
            a->seen_snd = pe->snd_nxt;
            a->seen_rcv = pe->rcv_nxt;
            a->quiet_since = q ? now : EM_NEVER;
            continue;
        }
        if (a->quiet_since == EM_NEVER) {
            a->quiet_since = now;
            continue;
        }
        if (now - a->quiet_since >= p->cfg.peer_idle_ns) {
            em_peer_act_put(p, pe);
            p->st.peer_releases++;
        }
    }
    p->sweep_at = p->nactive && p->cfg.peer_idle_ns ? now + sweep_every(p) : EM_NEVER;
}

size_t em_proto_peer_bytes_idle(const em_proto_cfg_t *cfg)
{
    (void)cfg; /* the record is the same for every configuration */
    return sizeof(struct em_peer) + sizeof(uint32_t); /* + its place in the poll set */
}

size_t em_proto_peer_bytes_active(const em_proto_cfg_t *cfg)
{
    size_t ring = 1;
    while (ring < cfg->window)
        ring *= 2;
    return sizeof(struct em_peer_act) + ring * sizeof(struct em_tx_slot);
}

size_t em_proto_peer_bytes(const em_proto_cfg_t *cfg) { return em_proto_peer_bytes_idle(cfg); }

uint32_t em_proto_active_peers(const em_proto_t *p) { return p->nactive; }

bool em_proto_peer_active(const em_proto_t *p, uint32_t peer)
{
    return peer < p->cfg.npeers && p->peers[peer].a != NULL;
}

void em_proto_fail_act_alloc(em_proto_t *p, uint32_t n) { p->act_fail = n; }
