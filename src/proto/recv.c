/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file recv.c
 * Receiver half of the protocol: in-order delivery, the out-of-order buffer
 * (selective repeat) or discard + NACK (Go-Back-N), reassembly of
 * multi-fragment messages, placement of puts, and the ACK policy:
 *   - ACKs ride on every DATA/PUT frame going back (piggybacked);
 *   - after ack_every in-order frames, or a frame flagged ACKNOW (the last
 *     frame of a put, or of a message sent with EM_SEND_ACK_LAST), an ACK
 *     goes out on the next poll;
 *   - otherwise a standalone ACK waits at most ack_delay_ns;
 *   - a duplicate or out-of-order frame is acknowledged on the next poll.
 */
#include "proto/proto_internal.h"

#include <stdlib.h>
#include <string.h>

int em_send_ack(struct em_proto *p, uint32_t peer, uint8_t type)
{
    return em_send_ctl(p, peer, type, 0);
}

int em_send_ctl(struct em_proto *p, uint32_t peer, uint8_t type, uint8_t flags)
{
    struct em_peer *pe = &p->peers[peer];
    uint8_t hbuf[EM_HDR_LEN];
    em_hdr_t h = {
        .type = type,
        .flags = flags,
        .job_key = pe->key,
        .index = pe->remote_index,
        .seq = pe->snd_nxt,
        .ack = pe->rcv_nxt,
        .sack = em_sack_bits(pe),
    };
    if (h.sack)
        h.flags |= EM_F_SACK;
    if (pe->refused_put)
        h.flags |= EM_F_REMERR;
    if (pe->probed)
        h.flags |= EM_F_PROBED;
    em_hdr_encode(&h, hbuf);
    if (p->ops.emit(p->uctx, peer, hbuf, EM_HDR_LEN, NULL, 0) != 0) {
        p->st.tx_eagain++;
        return -EM_EAGAIN;
    }
    p->st.tx_frames++;
    pe->ack_owed = 0;
    pe->ack_deadline = EM_NEVER;
    pe->probed = 0;
    if (type == EM_PT_NACK) {
        p->st.tx_nacks++;
        pe->nack_owed = 0;
        pe->nack_sent = 1;
    } else {
        p->st.tx_acks++;
    }
    return 0;
}

void em_on_probe(struct em_proto *p, uint32_t peer, uint64_t now)
{
    struct em_peer *pe = &p->peers[peer];
    pe->probed = 1;
    pe->ack_deadline = now; /* the answer: on the next poll, or on our next frame */
    em_poll_add(p, pe);
    em_arm(p, now);
}

void em_reassembly_reset(struct em_proto *p, struct em_peer *pe)
{
    struct em_peer_act *a = pe->a;
    if (!a)
        return;
    if (a->ra_active && a->ra_dst) {
        /* cut short in its owner's buffer: the owner learns it (once) */
        a->ra_dst = NULL;
        p->ops.place_end(p->uctx, (uint32_t)(pe - p->peers), a->ra_ctx, -EM_ECANCELED);
    }
    a->ra_active = 0;
    a->ra_got = 0;
}

bool em_rx_mem_take(struct em_proto *p, uint64_t n)
{
    if (p->cfg.rx_mem_max && (p->rx_mem > p->cfg.rx_mem_max || n > p->cfg.rx_mem_max - p->rx_mem)) {
        p->st.drop_budget++;
        return false;
    }
    p->rx_mem += n;
    return true;
}

/** Give the reassembly buffer back (after a message larger than one that
 *  is worth keeping, or when a message was cut): an idle peer holds little. */
static void ra_release(struct em_proto *p, struct em_peer_act *a)
{
    free(a->ra_buf);
    p->rx_mem -= a->ra_cap;
    a->ra_buf = NULL;
    a->ra_cap = 0;
}

/** Keep reassembly buffers up to this size between messages (a 64 KiB eager
 *  message reuses its buffer; a forged huge claim does not stay pinned). */
#define EM_RA_KEEP (128u * 1024u)

/** Ask for an ACK on the next poll. */
static void ack_soon(struct em_proto *p, struct em_peer *pe, uint64_t now)
{
    pe->ack_deadline = now;
    em_poll_add(p, pe);
    em_arm(p, now);
}

/**
 * Deliver one in-order DATA fragment.  Single-fragment messages go straight
 * from the frame to the callback; fragments are copied into the peer's
 * reassembly buffer (seed 001: a temporary buffer per sender).
 * @return false if the frame must not be consumed (out of memory: the sender
 *         will retransmit it).
 */
/**
 * First frame @p h of a multi-frame message: ask the owner for a buffer to
 * assemble it in (ops.place).  @return true when it gave one (a->ra_dst).
 */
static bool place_in_owner(struct em_proto *p, uint32_t peer, const em_hdr_t *h,
                           const uint8_t *payload)
{
    struct em_peer_act *a = p->peers[peer].a;
    a->ra_dst = NULL;
    if (!p->ops.place)
        return false;
    size_t skip = 0;
    void *ctx = NULL;
    uint8_t *dst = p->ops.place(p->uctx, peer, h->tag, payload, h->len, h->msg_len, &skip, &ctx);
    if (!dst)
        return false;
    if (skip > h->len) { /* the owner broke the contract: give it back, assemble as usual */
        p->ops.place_end(p->uctx, peer, ctx, -EM_EINVAL);
        return false;
    }
    a->ra_dst = dst;
    a->ra_skip = (uint32_t)skip;
    a->ra_ctx = ctx;
    return true;
}

static bool deliver_data(struct em_proto *p, uint32_t peer, const em_hdr_t *h,
                         const uint8_t *payload, bool *malformed, uint64_t now)
{
    struct em_peer *pe = &p->peers[peer];
    struct em_peer_act *a = pe->a;

    *malformed = false;
    if (h->frag_cnt == 1) {
        if (a && a->ra_active) { /* a message was cut short */
            em_reassembly_reset(p, pe);
            *malformed = true;
        }
        return true; /* caller delivers from the frame */
    }
    if (!a && h->frag_no != 0) {
        *malformed = true; /* no message begun: a fragment out of nowhere */
        return true;
    }
    if (h->frag_no == 0) {
        /* reassembly is active state: the first use of a peer that so far
         * only had single-frame messages, or came back from idle */
        a = em_peer_act_get(p, pe, now);
        if (!a) {
            p->st.drop_nomem++;
            return false; /* not consumed, not acked: it comes again */
        }
        if (a->ra_active) {
            em_reassembly_reset(p, pe);
            *malformed = true;
        }
        if (place_in_owner(p, peer, h, payload)) {
            /* no reassembly buffer: the owner's (ops.place) */
        } else if (h->msg_len > a->ra_cap) {
            /* budget: the whole new buffer, as the old one goes */
            ra_release(p, a);
            if (!em_rx_mem_take(p, h->msg_len))
                return false; /* not consumed, not acked: it comes again */
            uint8_t *nb = malloc(h->msg_len);
            if (!nb) {
                p->rx_mem -= h->msg_len;
                p->st.drop_nomem++;
                return false;
            }
            a->ra_buf = nb;
            a->ra_cap = h->msg_len;
        }
        a->ra_active = 1;
        a->ra_tag = h->tag;
        a->ra_cnt = h->frag_cnt;
        a->ra_next = 0;
        a->ra_msg_id = h->msg_id;
        a->ra_len = h->msg_len;
        a->ra_got = 0;
    } else if (!a->ra_active || h->msg_id != a->ra_msg_id || h->frag_no != a->ra_next ||
               h->frag_cnt != a->ra_cnt || h->msg_len != a->ra_len || h->tag != a->ra_tag) {
        em_reassembly_reset(p, pe);
        *malformed = true;
        return true;
    }
    if (h->len > a->ra_len - a->ra_got ||
        (h->frag_no == h->frag_cnt - 1 && a->ra_got + h->len != a->ra_len)) {
        em_reassembly_reset(p, pe);
        *malformed = true;
        return true;
    }
    if (a->ra_dst) {
        /* the owner's buffer starts at message byte ra_skip (only the
         * first frame can hold bytes before it: place_in_owner) */
        uint32_t from = a->ra_got < a->ra_skip ? a->ra_skip - a->ra_got : 0;
        if (h->len > from)
            memcpy(a->ra_dst + (a->ra_got + from - a->ra_skip), payload + from, h->len - from);
        p->st.rx_copy_bytes += h->len - from;
    } else {
        if (h->len) /* a zero-length message may have no buffer at all */
            memcpy(a->ra_buf + a->ra_got, payload, h->len);
        p->st.rx_copy_bytes += h->len;
    }
    a->ra_got += h->len;
    a->ra_next++;
    return true;
}

/**
 * Consume the in-order frame @p h (its seq == rcv_nxt).  rcv_nxt advances
 * before any callback runs, so a reply sent from the callback already
 * acknowledges this frame.
 * @return false when the frame could not be consumed.
 */
static bool consume(struct em_proto *p, uint32_t peer, const em_hdr_t *h, const uint8_t *payload,
                    uint64_t now)
{
    struct em_peer *pe = &p->peers[peer];
    bool malformed = false;

    if (h->type == EM_PT_DATA && !deliver_data(p, peer, h, payload, &malformed, now))
        return false;
    pe->rcv_nxt++;
    pe->nack_sent = 0;
    pe->ack_owed++;
    p->st.rx_payload_bytes += h->len;

    if (malformed) {
        p->st.drop_malformed++;
        if (h->frag_cnt != 1 || h->type != EM_PT_DATA)
            return true;
    }
    if (h->type == EM_PT_PUT) {
        em_put_target_t t = { .region = h->region, .key = h->key, .offset = h->offset };
        int rc = p->ops.put ? p->ops.put(p->uctx, peer, &t, payload, h->len) : -1;
        if (rc == 0) {
            p->st.puts_placed++;
        } else {
            p->st.puts_rejected++;
            pe->refused_put = 1; /* every later frame to it says so: EM_F_REMERR */
        }
    } else if (h->frag_cnt == 1) {
        p->st.msgs_recv++;
        p->ops.recv(p->uctx, peer, h->tag, payload, h->len);
    } else if (h->frag_no == h->frag_cnt - 1) {
        struct em_peer_act *a = pe->a; /* deliver_data took it for the first frame */
        a->ra_active = 0;
        p->st.msgs_recv++;
        if (a->ra_dst) { /* it is in the owner's buffer already */
            a->ra_dst = NULL;
            p->st.msgs_placed++;
            p->ops.place_end(p->uctx, peer, a->ra_ctx, 0);
            return true;
        }
        /* never hand out NULL, even for an empty message */
        p->ops.recv(p->uctx, peer, a->ra_tag, a->ra_buf ? a->ra_buf : payload, a->ra_len);
        if (a->ra_cap > EM_RA_KEEP && !a->ra_active)
            ra_release(p, a);
    }
    return true;
}

/** Keep an out-of-order frame (selective repeat). */
static void buffer_ooo(struct em_proto *p, struct em_peer *pe, const em_hdr_t *h,
                       const uint8_t *payload, uint64_t now)
{
    /* the reorder state is active state: taken on first use */
    struct em_peer_act *a = em_peer_act_get(p, pe, now);
    if (!a) {
        p->st.drop_nomem++;
        return; /* not buffered: SACK does not claim it, it comes again */
    }
    if (!a->rx) {
        if (!em_rx_mem_take(p, (uint64_t)p->ring * sizeof *a->rx))
            return;
        a->rx = calloc(p->ring, sizeof *a->rx);
        if (!a->rx) {
            p->rx_mem -= (uint64_t)p->ring * sizeof *a->rx;
            p->st.drop_nomem++;
            return;
        }
    }
    struct em_rx_slot *s = &a->rx[em_slot(p, h->seq)];
    if (!s->payload) {
        if (!em_rx_mem_take(p, p->cfg.frame_max))
            return; /* not buffered: SACK does not claim it, it comes again */
        s->payload = malloc(p->cfg.frame_max);
        if (!s->payload) {
            p->rx_mem -= p->cfg.frame_max;
            p->st.drop_nomem++;
            return;
        }
    }
    s->hdr = *h;
    memcpy(s->payload, payload, h->len);
    p->st.rx_copy_bytes += h->len;
    em_ooo_set(a, h->seq);
    p->st.rx_ooo++;
}

void em_rx_free(struct em_proto *p, struct em_peer *pe)
{
    struct em_peer_act *a = pe->a;
    if (!a)
        return; /* released: it holds no receive buffers */
    if (a->rx) {
        for (unsigned i = 0; i < p->ring; i++) {
            if (a->rx[i].payload)
                p->rx_mem -= p->cfg.frame_max;
            free(a->rx[i].payload);
        }
        free(a->rx);
        p->rx_mem -= (uint64_t)p->ring * sizeof *a->rx;
        a->rx = NULL;
    }
    ra_release(p, a);
    memset(a->ooo, 0, sizeof a->ooo);
    a->nooo = 0;
    em_reassembly_reset(p, pe);
}

void em_on_sequenced(struct em_proto *p, uint32_t peer, const em_hdr_t *h, const uint8_t *payload,
                     uint64_t now)
{
    struct em_peer *pe = &p->peers[peer];
    int32_t d = em_seq_diff(h->seq, pe->rcv_nxt);
    struct em_peer_act *a = pe->a;

    if (d < 0) { /* already delivered */
        p->st.rx_dups++;
        if (h->flags & EM_F_RETX)
            p->st.spurious_retx++;
        ack_soon(p, pe, now);
        return;
    }
    if ((uint32_t)d >= p->cfg.window) {
        p->st.drop_window++;
        return;
    }
    if (d > 0) {
        if (p->cfg.recovery == EM_RECOVERY_GBN) {
            p->st.drop_gbn_ooo++;
            if (!pe->nack_sent) {
                pe->nack_owed = 1;
                ack_soon(p, pe, now);
            }
            return;
        }
        if (a && em_ooo_has(a, h->seq)) {
            p->st.rx_dups++;
            if (h->flags & EM_F_RETX)
                p->st.spurious_retx++;
        } else
            buffer_ooo(p, pe, h, payload, now);
        ack_soon(p, pe, now);
        return;
    }

    if (a && a->nooo && em_ooo_has(a, h->seq))
        em_ooo_clear(a, h->seq); /* a copy kept earlier could not be consumed: this one is */
    if (!consume(p, peer, h, payload, now)) {
        if (p->cfg.link_acks) /* acknowledged by the link: it will not come again */
            em_fail_acked(p, peer,
                          "no memory to reassemble a message the emd daemon had "
                          "acknowledged for us");
        return;
    }
    /* Drain frames that were waiting for this one (consume may have taken
     * the active part: read it again). */
    a = pe->a;
    while (a && pe->state == EM_PEER_ACTIVE && a->nooo && em_ooo_has(a, pe->rcv_nxt)) {
        struct em_rx_slot *s = &a->rx[em_slot(p, pe->rcv_nxt)];
        em_ooo_clear(a, pe->rcv_nxt);
        if (!consume(p, peer, &s->hdr, s->payload, now)) {
            em_ooo_set(a, pe->rcv_nxt); /* keep it; retried when the next frame arrives */
            if (p->cfg.link_acks)       /* (which may never come: the link acknowledged the rest) */
                em_fail_acked(p, peer,
                              "no memory to reassemble a message the emd daemon had "
                              "acknowledged for us");
            break;
        }
    }
    if (pe->ack_owed >= p->ack_every || (h->flags & EM_F_ACKNOW))
        ack_soon(p, pe, now);
    else if (pe->ack_deadline == EM_NEVER) {
        pe->ack_deadline = now + p->cfg.ack_delay_ns;
        em_poll_add(p, pe);
        em_arm(p, pe->ack_deadline);
    }
}
