/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file poll.c
 * em_proto_poll(): the timers of the peers that have something timed.
 *
 * The poll set (struct em_proto::poll) holds every peer that may have a
 * deadline: an active part (retransmit timer, pacing, a blocked link), an
 * ACK or NACK owed, or a liveness deadline.  A peer enters it where one
 * of those is set (em_poll_add: em_peer_act_get, the receive path's ACK
 * deadlines, em_proto_watch) and leaves it in the poll that finds nothing
 * timed left, so a poll costs the busy peers, not the table
 * (docs/design.md "Memory per peer", "The poll set").  Room for every peer
 * is allocated with the table (4 bytes each; em_proto_grow grows both
 * together) and a peer is in it at most
 * once (its in_poll flag, kept across em_proto_reset_peer), so adding
 * never fails.
 *
 * Re-entrancy: as em_proto_poll() (proto.h); a callback run from a timer
 * may send to another peer, which then joins the set during the poll and
 * is looked at in the same pass.
 */
#include "proto/proto_internal.h"

static void poll_peer(struct em_proto *p, uint32_t peer, uint64_t now)
{
    struct em_peer *pe = &p->peers[peer];
    const struct em_peer_act *a = pe->a;

    if (pe->state != EM_PEER_ACTIVE)
        return;
    if (a && a->rto_deadline <= now) {
        em_on_timeout(p, peer, now);
        if (pe->state != EM_PEER_ACTIVE)
            return;
    }
    if (pe->live_deadline <= now) {
        em_live_timeout(p, peer, now);
        if (pe->state != EM_PEER_ACTIVE)
            return;
    }
    if (pe->a && (pe->a->tx_blocked || pe->a->pace_at <= now))
        em_pump(p, peer, now);
    if (pe->nack_owed)
        em_send_ack(p, peer, EM_PT_NACK);
    if (pe->ack_deadline <= now)
        em_send_ack(p, peer, EM_PT_ACK);
}

void em_poll_add_slow(struct em_proto *p, struct em_peer *pe)
{
    /* room for every peer once (em_proto_create), and each is in it once */
    pe->in_poll = 1;
    p->poll[p->poll_n++] = (uint32_t)(pe - p->peers);
}

/* Is anything of @p pe's timed?  (Then it stays in the poll set.) */
static bool has_deadline(const struct em_peer *pe)
{
    return pe->state == EM_PEER_ACTIVE && (pe->a || pe->ack_deadline != EM_NEVER ||
                                           pe->live_deadline != EM_NEVER || pe->nack_owed);
}

/* the earliest of @p pe's deadlines, or @p next */
static uint64_t peer_next(const struct em_peer *pe, uint64_t now, uint64_t next)
{
    const struct em_peer_act *a = pe->a;
    if (pe->state != EM_PEER_ACTIVE)
        return next;
    if (pe->ack_deadline < next)
        next = pe->ack_deadline;
    if (pe->live_deadline < next)
        next = pe->live_deadline;
    if (pe->nack_owed && now < next)
        next = now;
    if (!a)
        return next;
    if (a->rto_deadline < next)
        next = a->rto_deadline;
    if (a->pace_at < next)
        next = a->pace_at;
    if (a->tx_blocked && now < next)
        next = now;
    return next;
}

void em_proto_poll(em_proto_t *p, uint64_t now)
{
    if (now < p->next_deadline)
        return;
    /* the peers that may have a deadline (the set grows while this runs:
     * a callback may send to another peer; those are looked at too) */
    for (uint32_t k = 0; k < p->poll_n; k++) {
        poll_peer(p, p->poll[k], now);
        p->st.poll_visits++;
    }
    if (now >= p->sweep_at)
        em_act_sweep(p, now); /* release the active parts of idle peers */
    /* Recompute the bound exactly; a peer with nothing timed leaves the set. */
    uint64_t next = p->sweep_at;
    uint32_t kept = 0;
    for (uint32_t k = 0; k < p->poll_n; k++) {
        struct em_peer *pe = &p->peers[p->poll[k]];
        if (!has_deadline(pe)) {
            pe->in_poll = 0;
            continue;
        }
        p->poll[kept++] = p->poll[k];
        next = peer_next(pe, now, next);
    }
    p->poll_n = kept;
    p->next_deadline = next;
}
