/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file live.c
 * Liveness watch: detect the death of a peer we only wait for.
 *
 * A sender learns that its peer is gone from the retransmit timer (send.c,
 * em_on_timeout).  A process that only waits for a peer (an MPI rank in a
 * receive posted for it alone, a rendezvous waiting for the peer's answer)
 * has nothing in flight to it, so no timer runs and a dead peer is never
 * noticed: the job hangs (docs/ofi.md, MPICH's killrank_exit).  The layer
 * above says which peers it waits for (em_proto_watch); a watched peer
 * that stays silent for cfg.live_idle_ns gets a probe, the frame the
 * retransmit timer already uses (a standalone ACK flagged EM_F_ACKNOW: the
 * peer answers with its ACK state on its next poll, no wire change).
 * Unanswered probes back off like retransmissions, from the peer's RTO to
 * rto_max_ns, and the (max_retries + 1)-th expiry fails the peer through
 * the sender's path (em_fail_peer: same error, callbacks and counters).
 *
 * The bound from the last frame heard to the failure is
 *   live_idle_ns + sum_{k=0}^{max_retries-1} min(rto * 2^k, rto_max),
 * the sender's bound when live_idle_ns = rto_max_ns (the default).  Any
 * accepted frame from the peer, a probe's answer included, restarts it.
 *
 * Quiet by construction: unwatched peers are never probed; a watched peer
 * with our frames in flight is left to the retransmit timer (it probes
 * already); an answering peer costs one probe per live_idle_ns.
 */
#include "proto/proto_internal.h"

int em_proto_watch(em_proto_t *p, uint32_t peer, uint64_t now)
{
    if (peer >= p->cfg.npeers || peer == p->cfg.self)
        return -EM_EINVAL;
    struct em_peer *pe = &p->peers[peer];
    if (pe->state == EM_PEER_FAILED)
        return -EM_EPEERFAIL;
    if (!pe->set)
        return -EM_EINVAL; /* keys unknown: no probe could be sent */
    if (pe->watchers++ == 0 && p->cfg.live_idle_ns) {
        /* silence is counted from now: what came before the watch was
         * not waited for */
        pe->live_retries = 0;
        pe->live_rto = pe->rto_base;
        pe->live_deadline = now + p->cfg.live_idle_ns;
        em_poll_add(p, pe);
        em_arm(p, pe->live_deadline);
    }
    return 0;
}

int em_proto_unwatch(em_proto_t *p, uint32_t peer)
{
    if (peer >= p->cfg.npeers || peer == p->cfg.self)
        return -EM_EINVAL;
    struct em_peer *pe = &p->peers[peer];
    if (pe->state == EM_PEER_FAILED)
        return 0; /* em_fail_peer dropped every watch */
    if (!pe->watchers)
        return -EM_EINVAL;
    if (--pe->watchers == 0)
        pe->live_deadline = EM_NEVER;
    return 0;
}

uint32_t em_proto_watchers(const em_proto_t *p, uint32_t peer)
{
    return peer < p->cfg.npeers ? p->peers[peer].watchers : 0;
}

void em_live_timeout(struct em_proto *p, uint32_t peer, uint64_t now)
{
    struct em_peer *pe = &p->peers[peer];

    if (pe->snd_una != pe->snd_nxt || pe->q_send) {
        /* our frames are in flight or queued: the retransmit timer watches
         * this peer (and probes it); start the idle time again */
        pe->live_retries = 0;
        pe->live_rto = pe->rto_base;
        pe->live_deadline = now + p->cfg.live_idle_ns;
        return;
    }
    if (++pe->live_retries > p->cfg.max_retries) {
        p->st.live_failures++;
        pe->fail_reason = "no answer to liveness probes within the retry limit "
                          "(a receive or rendezvous was waiting for it)";
        em_fail_peer(p, peer);
        return;
    }
    /* a lost or refused probe is sent again at the next expiry */
    if (em_send_ctl(p, peer, EM_PT_ACK, EM_F_ACKNOW) == 0)
        p->st.live_probes++;
    pe->live_deadline = now + pe->live_rto;
    pe->live_rto = em_rto_backoff(p, pe->live_rto);
}
