/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file send.c
 * Sender half of the protocol: fragmentation, the window, ACK/SACK/NACK
 * processing, retransmission.  New frames also wait for the per-peer
 * congestion controller (cc.h: congestion window, pacing), which this file
 * feeds with sends, ACKs, SACKs and losses.  Every DATA/PUT frame piggybacks the current
 * cumulative ACK and SACK bitmap for the peer it goes to.
 */
#include <string.h>

#include "proto/proto_internal.h"

static uint32_t frag_payload(const struct em_proto *p, const em_proto_op_t *op)
{
    return op->type == EM_PT_PUT ? p->put_payload : p->data_payload;
}

/** Fill the ACK fields every frame to @p pe carries. */
static void fill_ack(const struct em_peer *pe, em_hdr_t *h)
{
    h->ack = pe->rcv_nxt;
    h->sack = em_sack_bits(pe);
    if (h->sack)
        h->flags |= EM_F_SACK;
    if (pe->refused_put)
        h->flags |= EM_F_REMERR;
    if (pe->probed)
        h->flags |= EM_F_PROBED;
}

/** Our ACK state reached the peer: nothing owed any more. */
static void ack_sent(struct em_peer *pe)
{
    pe->ack_owed = 0;
    pe->ack_deadline = EM_NEVER;
    pe->probed = 0;
}

/**
 * (Re)transmit the frame with sequence number @p seq (must be in flight).
 * @return 0 or -EM_EAGAIN.
 */
int em_send_frag(struct em_proto *p, uint32_t peer, uint32_t seq, uint8_t flags, uint64_t now)
{
    struct em_peer *pe = &p->peers[peer];
    struct em_peer_act *a = pe->a; /* frames in flight: it has one */
    struct em_tx_slot *s = &a->tx[em_slot(p, seq)];
    const em_proto_op_t *op = s->op;
    uint32_t pl = frag_payload(p, op);
    uint32_t off = (uint32_t)s->frag_no * pl;
    uint32_t len = op->len - off < pl ? op->len - off : pl;
    uint8_t hbuf[EM_HDR_LEN + EM_PUT_EXT_LEN + EM_PROTO_HEAD_MAX];

    /* the last frame of a put (its completion, and so MPI's FIN, waits on
     * the ACK), or of a message whose sender asked (EM_SEND_ACK_LAST) */
    if ((op->type == EM_PT_PUT || op->ack_last) && s->frag_no == op->frag_cnt - 1)
        flags |= EM_F_ACKNOW;
    em_hdr_t h = {
        .type = op->type,
        .flags = flags,
        .tag = op->tag,
        .job_key = pe->key,
        .index = pe->remote_index,
        .len = (uint16_t)len,
        .seq = seq,
        .msg_id = op->msg_id,
        .msg_len = op->len,
        .frag_no = s->frag_no,
        .frag_cnt = op->frag_cnt,
    };
    if (op->type == EM_PT_PUT) {
        h.region = op->target.region;
        h.key = op->target.key;
        h.offset = op->target.offset + off;
    }
    bool first = !(flags & EM_F_RETX);
    uint32_t bytes = (uint32_t)em_hdr_len(op->type) + len;
    if (first && em_cc_want_ack(&a->cc, &p->cfg, bytes))
        h.flags |= EM_F_ACKNOW;
    fill_ack(pe, &h);
    size_t hlen = em_hdr_encode(&h, hbuf);
    /* the message is op->head, then op->buf: the part of the head in this
     * frame rides behind the wire header (em_proto_sendv()) */
    const uint8_t *pay = NULL;
    uint32_t plen = len;
    if (off < op->head_len) {
        uint32_t n = op->head_len - off < len ? op->head_len - off : len;
        memcpy(hbuf + hlen, op->head + off, n);
        hlen += n;
        plen -= n;
        if (plen)
            pay = op->buf;
    } else if (plen) {
        pay = op->buf + (off - op->head_len);
    }
    int rc = p->ops.emit(p->uctx, peer, hbuf, hlen, pay, plen);
    if (rc != 0) {
        p->st.tx_eagain++;
        a->tx_blocked = 1;
        em_arm(p, 0);
        return -EM_EAGAIN;
    }
    em_cc_on_send(&a->cc, &p->cfg, bytes, first, s->sacked, (h.flags & EM_F_ACKNOW) != 0, now);
    s->bytes = bytes;
    s->stamp = ++a->stamp;
    s->tx_time = now;
    s->sacked = 0;
    s->retx = (flags & EM_F_RETX) != 0;
    ack_sent(pe);
    p->st.tx_frames++;
    if (flags & EM_F_RETX) {
        p->st.retransmits++;
    } else {
        p->st.tx_data_frames++;
        p->st.tx_payload_bytes += len;
    }
    return 0;
}

/** Send what the window allows from the peer's queue. */
void em_pump(struct em_proto *p, uint32_t peer, uint64_t now)
{
    struct em_peer *pe = &p->peers[peer];
    struct em_peer_act *a = pe->a;

    if (pe->held)
        return; /* its keys are coming (em_proto_hold_peer) */
    if (!a)
        return; /* released: nothing queued */
    a->tx_blocked = 0;
    a->pace_at = EM_NEVER;
    while (pe->q_send && (uint32_t)(pe->snd_nxt - pe->snd_una) < p->cfg.window) {
        uint64_t wake;
        int v = em_cc_can_send(&a->cc, &p->cfg, now, &wake);
        if (v == EM_CC_CWND) {
            p->st.cc_cwnd_blocked++;
            return;
        }
        if (v == EM_CC_PACE) {
            p->st.cc_paced++;
            a->pace_at = wake;
            em_arm(p, wake);
            return;
        }
        em_proto_op_t *op = pe->q_send;
        uint32_t seq = pe->snd_nxt;
        struct em_tx_slot *s = &a->tx[em_slot(p, seq)];

        s->op = op;
        s->frag_no = op->frags_sent;
        if (em_send_frag(p, peer, seq, 0, now) != 0) {
            s->op = NULL;
            return;
        }
        if (pe->snd_nxt == pe->snd_una) {
            a->rto_deadline = now + a->rto_cur;
            em_arm(p, a->rto_deadline);
        }
        pe->snd_nxt++;
        if (++op->frags_sent == op->frag_cnt)
            pe->q_send = op->next;
    }
}

/**
 * RFC 6298 update from one round-trip sample @p r (ns) taken at @p now.
 *
 * The RTO is also kept at or above 5/4 of the largest sample seen in the
 * last EM_RTT_PEAK_WINDOW_NS.  A peer process that is descheduled or busy
 * (shared cores) acknowledges late now and then; srtt + 4 rttvar forgets
 * such a stall within a few dozen ACKs, and the next stall timed out again
 * although nothing was lost (spurious timeouts by the hundred in a
 * bandwidth run).  Losses are still repaired at once by SACK; only a lost
 * tail waits for the higher RTO, and only while stalls are recent.
 */
static void rtt_sample(struct em_proto *p, struct em_peer *pe, uint64_t r, uint64_t now)
{
    struct em_peer_act *a = pe->a;
    if (pe->srtt == 0) {
        pe->srtt = r ? r : 1;
        pe->rttvar = r / 2;
    } else {
        uint64_t dev = pe->srtt > r ? pe->srtt - r : r - pe->srtt;
        pe->rttvar = (3 * pe->rttvar + dev) / 4;
        pe->srtt = (7 * pe->srtt + r) / 8;
        if (pe->srtt == 0)
            pe->srtt = 1;
    }
    if (r >= a->rtt_peak || now - a->rtt_peak_at > EM_RTT_PEAK_WINDOW_NS) {
        a->rtt_peak = r; /* a new peak, or the old one expired */
        a->rtt_peak_at = now;
    }
    uint64_t rto = pe->srtt + 4 * pe->rttvar;
    if (rto < a->rtt_peak + a->rtt_peak / 4)
        rto = a->rtt_peak + a->rtt_peak / 4;
    if (rto < p->cfg.rto_min_ns)
        rto = p->cfg.rto_min_ns;
    if (rto > p->cfg.rto_max_ns)
        rto = p->cfg.rto_max_ns;
    pe->rto_base = rto;
    p->st.rtt_samples++;
}

/** Remove the (completed) head op and report it. */
static void complete_head(struct em_proto *p, struct em_peer *pe)
{
    em_proto_op_t *op = pe->q_head;

    pe->q_head = op->next;
    if (!pe->q_head)
        pe->q_tail = NULL;
    int status = 0;
    if (op->type == EM_PT_PUT && pe->rem_err) {
        p->st.puts_failed++; /* the peer refused a put of ours (EM_F_REMERR) */
        status = -EM_EACCES;
    } else if (op->type == EM_PT_PUT) {
        p->st.puts_done++;
    } else {
        p->st.msgs_sent++;
    }
    p->ops.complete(p->uctx, op->ctx, status);
}

/**
 * Resend unacked frames, oldest first.  Go-Back-N resends all of them.
 * Selective repeat resends at most @p max frames: the oldest, then frames
 * the receiver does not hold that have themselves been waiting a whole
 * (un-backed-off) RTO: frames sent a moment ago are not presumed lost just
 * because an older one was.
 * @return frames sent.
 */
static unsigned resend_outstanding(struct em_proto *p, uint32_t peer, bool selective, unsigned max,
                                   uint64_t now)
{
    struct em_peer *pe = &p->peers[peer];
    struct em_peer_act *a = pe->a;
    unsigned n = 0;

    if (!a)
        return 0; /* released: nothing in flight */

    for (uint32_t seq = pe->snd_una; em_seq_lt(seq, pe->snd_nxt); seq++) {
        const struct em_tx_slot *s = &a->tx[em_slot(p, seq)];
        if (selective && n >= max)
            break;
        if (selective && seq != pe->snd_una && (s->sacked || now - s->tx_time < pe->rto_base))
            continue;
        if (em_send_frag(p, peer, seq, EM_F_RETX, now) != 0)
            break;
        n++;
    }
    return n;
}

/**
 * The answer to our probe: the peer's ACK state after the probe arrived.
 * The oldest frame sent before the probe that it neither acknowledges nor
 * SACKs was lost, if the network kept the order: resend it now.  Only that
 * one: a probe can overtake data (a veth delivers from per-CPU backlogs;
 * under load a 64 KB GSO skb was seen to arrive milliseconds after a probe
 * sent later from another CPU, and resending every frame the answer did
 * not cover resent up to a window of duplicates).  More holes show in the
 * SACK once it arrives (RACK), or the next timeout probes again.  Frames
 * resent since the probe have newer stamps and are left alone.
 */
static void on_probe_answer(struct em_proto *p, uint32_t peer, uint64_t now)
{
    struct em_peer *pe = &p->peers[peer];
    struct em_peer_act *a = pe->a;
    uint64_t before = a->probe_stamp;
    unsigned lost = 0;

    a->probe_stamp = 0;
    for (uint32_t seq = pe->snd_una; em_seq_lt(seq, pe->snd_nxt); seq++) {
        const struct em_tx_slot *s = &a->tx[em_slot(p, seq)];
        if (s->sacked || s->stamp > before)
            continue;
        if (em_send_frag(p, peer, seq, EM_F_RETX, now) != 0)
            break;
        p->st.fast_retransmits++;
        lost++;
        break;
    }
    if (lost)
        em_cc_on_loss(&a->cc, &p->cfg, &p->st, lost, false, pe->snd_una, pe->snd_nxt, now);
}

/**
 * Process the ACK fields of a frame from @p peer.
 * @return false when the ACK acknowledges something never sent (the frame
 *         is then dropped as out of window).
 */
bool em_on_ack(struct em_proto *p, uint32_t peer, const em_hdr_t *h, uint64_t now)
{
    struct em_peer *pe = &p->peers[peer];

    if (em_seq_gt(h->ack, pe->snd_nxt))
        return false;
    if (h->flags & EM_F_REMERR)
        pe->rem_err = 1; /* before the completions this ACK causes */
    struct em_peer_act *a = pe->a;
    if (!a) {
        /* released: nothing in flight (h->ack is snd_nxt), nothing to do */
        if ((h->flags & EM_F_SACK) && h->sack)
            p->st.rx_sacks++;
        return true;
    }

    if (em_seq_gt(h->ack, pe->snd_una)) {
        /* One RTT sample per ACK, from the newest frame it covers, if no
         * frame it covers was resent (Karn, as TCP applies it to a whole
         * cumulative ACK): an ACK that a resend let move past a hole
         * measures the repair (an RTO, or a round trip more), not the path,
         * and the RTO's 250 ms peak would then feed on its own timeouts.
         * The answer to a probe was sent because of the probe: it measures
         * the probe's round trip (a lost ACK is not a slow path), and only
         * the streak's first probe's, which no other probe can have
         * answered. */
        const struct em_tx_slot *newest = &a->tx[em_slot(p, (h->ack - 1))];
        uint64_t rtt = 0, acked = 0, unsacked = 0;
        bool answer = (h->flags & EM_F_PROBED) && a->probe_stamp;
        bool ambiguous = answer && a->retries != 1;
        for (uint32_t q = pe->snd_una; !answer && !ambiguous && em_seq_lt(q, h->ack); q++)
            ambiguous = a->tx[em_slot(p, q)].retx;
        uint64_t sent = answer ? a->probe_at : newest->tx_time;
        if (!ambiguous && now >= sent) {
            rtt = now - sent;
            rtt_sample(p, pe, rtt, now);
            if (rtt == 0)
                rtt = 1;
        }
        /* Cumulative progress: free slots, complete ops in FIFO order.
         * snd_una moves before each completion so that a send issued from
         * the callback sees a consistent window. */
        while (em_seq_lt(pe->snd_una, h->ack)) {
            struct em_tx_slot *s = &a->tx[em_slot(p, pe->snd_una)];
            em_proto_op_t *op = s->op;
            acked += s->bytes;
            if (!s->sacked)
                unsacked += s->bytes;
            s->op = NULL;
            s->sacked = 0;
            pe->snd_una++;
            if (pe->snd_una == h->ack) /* before the callbacks below send more */
                em_cc_on_ack(&a->cc, &p->cfg, &p->st, acked, unsacked, rtt, pe->srtt, pe->snd_una,
                             now);
            if (++op->frags_acked == op->frag_cnt)
                complete_head(p, pe);
            if (pe->state != EM_PEER_ACTIVE)
                return true;
        }
        a->retries = 0;
        a->resends = 0;
        a->rto_cur = pe->rto_base;
        a->rto_deadline = pe->snd_una == pe->snd_nxt ? EM_NEVER : now + a->rto_cur;
        em_arm(p, a->rto_deadline);
    }

    if ((h->flags & EM_F_SACK) && h->sack) {
        p->st.rx_sacks++;
        if (p->cfg.recovery == EM_RECOVERY_SR) {
            /* Mark what the receiver holds; a hole sent before the latest
             * frame known to have arrived is taken as lost (RACK-style:
             * robust to reordering of ACKs, needs no duplicate counting). */
            uint64_t newest = 0;
            for (unsigned i = 0; i < EM_SACK_BITS; i++) {
                uint32_t seq = h->ack + 1 + i;
                if (!((h->sack >> i) & 1) ||
                    !em_seq_in(seq, pe->snd_una, pe->snd_nxt - pe->snd_una))
                    continue;
                struct em_tx_slot *s = &a->tx[em_slot(p, seq)];
                if (!s->sacked)
                    em_cc_on_sacked(&a->cc, s->bytes);
                s->sacked = 1;
                if (s->stamp > newest)
                    newest = s->stamp;
            }
            unsigned lost = 0;
            for (uint32_t seq = pe->snd_una; em_seq_lt(seq, pe->snd_nxt); seq++) {
                struct em_tx_slot *s = &a->tx[em_slot(p, seq)];
                if (s->sacked || s->stamp >= newest)
                    continue;
                if (em_send_frag(p, peer, seq, EM_F_RETX, now) != 0)
                    break;
                p->st.fast_retransmits++;
                lost++;
            }
            em_cc_on_loss(&a->cc, &p->cfg, &p->st, lost, false, pe->snd_una, pe->snd_nxt, now);
        }
    }
    if (h->flags & EM_F_PROBED)
        a->answered_at = now; /* it reads its receive queue: em_on_timeout() */
    if ((h->flags & EM_F_PROBED) && a->probe_stamp)
        on_probe_answer(p, peer, now);
    em_pump(p, peer, now);
    return true;
}

/** Go-Back-N: the receiver asks for everything from its cumulative ACK on. */
void em_on_nack(struct em_proto *p, uint32_t peer, uint64_t now)
{
    struct em_peer *pe = &p->peers[peer];
    struct em_peer_act *a = pe->a;

    if (p->cfg.recovery != EM_RECOVERY_GBN || !a)
        return;
    unsigned n = resend_outstanding(p, peer, false, EM_WINDOW_MAX, now);
    p->st.fast_retransmits += n;
    /* one hole; the rest is resent because Go-Back-N discarded it */
    em_cc_on_loss(&a->cc, &p->cfg, &p->st, n ? 1 : 0, false, pe->snd_una, pe->snd_nxt, now);
    if (pe->snd_una != pe->snd_nxt) {
        a->rto_deadline = now + a->rto_cur;
        em_arm(p, a->rto_deadline);
    }
}

/**
 * The oldest unacked frame timed out: back off, resend, or give up.
 *
 * RTO policy (docs/design.md "Retransmit timeouts: probe first"): on a
 * healthy link a timeout means, far more
 * often than loss, that the receiver acknowledged late (descheduled, or busy
 * on a shared core).  Selective repeat therefore resends only the oldest
 * frame on the first timeout of a streak, 2 on the second, 4 on the third
 * ... (never more than the window): a spurious timeout costs one duplicate
 * instead of a window of them, and the frames that were not resent still
 * give an RTT sample when the late ACK comes (Karn discards samples from
 * resent frames), so the RTO learns how late this receiver acknowledges.
 * Resending every frame older than an RTO made every frame ambiguous: no
 * sample, the RTO never grew, and the next stall timed out again.  A lost
 * tail of several frames is still repaired in a few timeouts (the doubling),
 * holes before a received frame at once by SACK.
 *
 * Probe first (RACK-TLP, RFC 8985, in spirit): every timeout sends a
 * probe, a standalone ACK flagged ACKNOW, and the peer answers with its ACK
 * state flagged PROBED.  A peer that was only late (descheduled: the common
 * case on shared cores) has by then consumed the frames that came before
 * the probe, so the answer acknowledges them and nothing is resent: no
 * spurious retransmission.  A peer that lost frames answers without them,
 * and they are resent one round trip later (on_probe_answer).  The first
 * EM_PROBE_ONLY timeouts of a streak resend no data.  A peer that answered
 * a probe since the streak began reads its receive queue, so later
 * timeouts mean a lossy path and resend at once.  A peer that answered
 * none may be a receiver process descheduled for milliseconds (shared
 * cores), or one too busy sending to read (its data frames still come, so
 * only an answer counts): resending to it only makes duplicates, and data
 * waits until the streak is cfg.resend_after_ns old.  A dead peer fails
 * after the same max_retries timeouts as without probes.
 */
void em_on_timeout(struct em_proto *p, uint32_t peer, uint64_t now)
{
    struct em_peer *pe = &p->peers[peer];
    struct em_peer_act *a = pe->a; /* a timer runs: it has one */

    p->st.timeouts++;
    if (++a->retries > p->cfg.max_retries) {
        em_fail_peer(p, peer);
        return;
    }
    a->probe_stamp = 0;
    if (a->retries == 1)
        a->streak_at = now;
    bool probe = !p->cfg.link_acks;
    /* data once EM_PROBE_ONLY probes went unanswered and, if the peer has
     * answered none since the streak began, once the streak is
     * resend_after_ns old; then 1, 2, 4 ... frames.  Without probes from the
     * first timeout. */
    bool silent = a->answered_at < a->streak_at;
    bool resend = !probe || (a->retries > EM_PROBE_ONLY &&
                             (!silent || now - a->streak_at >= p->cfg.resend_after_ns));
    if (resend) {
        unsigned k = a->resends++;
        unsigned burst = k > 8 ? EM_WINDOW_MAX : 1u << k;
        unsigned n = resend_outstanding(p, peer, p->cfg.recovery == EM_RECOVERY_SR, burst, now);
        em_cc_on_loss(&a->cc, &p->cfg, &p->st, n, true, pe->snd_una, pe->snd_nxt, now);
    }
    if (probe && em_send_ctl(p, peer, EM_PT_ACK, EM_F_ACKNOW) == 0) {
        a->probe_stamp = a->stamp ? a->stamp : 1; /* judges what went before it */
        a->probe_at = now;
        p->st.probes++;
    }
    a->rto_cur = em_rto_backoff(p, a->rto_cur);
    a->rto_deadline = now + a->rto_cur;
    em_arm(p, a->rto_deadline);
}
