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
    em_arm(p, now);
}

void em_reassembly_reset(struct em_proto *p, struct em_peer *pe)
{
    if (pe->ra_active && pe->ra_dst) {
        /* cut short in its owner's buffer: the owner learns it (once) */
        pe->ra_dst = NULL;
        p->ops.place_end(p->uctx, (uint32_t)(pe - p->peers), pe->ra_ctx, -EM_ECANCELED);
    }
    pe->ra_active = 0;
    pe->ra_got = 0;
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
static void ra_release(struct em_proto *p, struct em_peer *pe)
{
    free(pe->ra_buf);
    p->rx_mem -= pe->ra_cap;
    pe->ra_buf = NULL;
    pe->ra_cap = 0;
}

/** Keep reassembly buffers up to this size between messages (a 64 KiB eager
 *  message reuses its buffer; a forged huge claim does not stay pinned). */
#define EM_RA_KEEP (128u * 1024u)

/** Ask for an ACK on the next poll. */
static void ack_soon(struct em_proto *p, struct em_peer *pe, uint64_t now)
{
    pe->ack_deadline = now;
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
 * assemble it in (ops.place).  @return true when it gave one (pe->ra_dst).
 */
static bool place_in_owner(struct em_proto *p, uint32_t peer, const em_hdr_t *h,
                           const uint8_t *payload)
{
    struct em_peer *pe = &p->peers[peer];
    pe->ra_dst = NULL;
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
    pe->ra_dst = dst;
    pe->ra_skip = (uint32_t)skip;
    pe->ra_ctx = ctx;
    return true;
}

static bool deliver_data(struct em_proto *p, uint32_t peer, const em_hdr_t *h,
                         const uint8_t *payload, bool *malformed)
{
    struct em_peer *pe = &p->peers[peer];

    *malformed = false;
    if (h->frag_cnt == 1) {
        if (pe->ra_active) { /* a message was cut short */
            em_reassembly_reset(p, pe);
            *malformed = true;
        }
        return true; /* caller delivers from the frame */
    }
    if (h->frag_no == 0) {
        if (pe->ra_active) {
            em_reassembly_reset(p, pe);
            *malformed = true;
        }
        if (place_in_owner(p, peer, h, payload)) {
            /* no reassembly buffer: the owner's (ops.place) */
        } else if (h->msg_len > pe->ra_cap) {
            /* budget: the whole new buffer, as the old one goes */
            ra_release(p, pe);
            if (!em_rx_mem_take(p, h->msg_len))
                return false; /* not consumed, not acked: it comes again */
            uint8_t *nb = malloc(h->msg_len);
            if (!nb) {
                p->rx_mem -= h->msg_len;
                p->st.drop_nomem++;
                return false;
            }
            pe->ra_buf = nb;
            pe->ra_cap = h->msg_len;
        }
        pe->ra_active = 1;
        pe->ra_tag = h->tag;
        pe->ra_cnt = h->frag_cnt;
        pe->ra_next = 0;
        pe->ra_msg_id = h->msg_id;
        pe->ra_len = h->msg_len;
        pe->ra_got = 0;
    } else if (!pe->ra_active || h->msg_id != pe->ra_msg_id || h->frag_no != pe->ra_next ||
               h->frag_cnt != pe->ra_cnt || h->msg_len != pe->ra_len || h->tag != pe->ra_tag) {
        em_reassembly_reset(p, pe);
        *malformed = true;
        return true;
    }
    if (h->len > pe->ra_len - pe->ra_got ||
        (h->frag_no == h->frag_cnt - 1 && pe->ra_got + h->len != pe->ra_len)) {
        em_reassembly_reset(p, pe);
        *malformed = true;
        return true;
    }
    if (pe->ra_dst) {
        /* the owner's buffer starts at message byte ra_skip (only the
         * first frame can hold bytes before it: place_in_owner) */
        uint32_t from = pe->ra_got < pe->ra_skip ? pe->ra_skip - pe->ra_got : 0;
        if (h->len > from)
            memcpy(pe->ra_dst + (pe->ra_got + from - pe->ra_skip), payload + from, h->len - from);
        p->st.rx_copy_bytes += h->len - from;
    } else {
        if (h->len) /* a zero-length message may have no buffer at all */
            memcpy(pe->ra_buf + pe->ra_got, payload, h->len);
        p->st.rx_copy_bytes += h->len;
    }
    pe->ra_got += h->len;
    pe->ra_next++;
    return true;
}

/**
 * Consume the in-order frame @p h (its seq == rcv_nxt).  rcv_nxt advances
 * before any callback runs, so a reply sent from the callback already
 * acknowledges this frame.
 * @return false when the frame could not be consumed.
 */
static bool consume(struct em_proto *p, uint32_t peer, const em_hdr_t *h, const uint8_t *payload)
{
    struct em_peer *pe = &p->peers[peer];
    bool malformed = false;

    if (h->type == EM_PT_DATA && !deliver_data(p, peer, h, payload, &malformed))
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
        pe->ra_active = 0;
        p->st.msgs_recv++;
        if (pe->ra_dst) { /* it is in the owner's buffer already */
            pe->ra_dst = NULL;
            p->st.msgs_placed++;
            p->ops.place_end(p->uctx, peer, pe->ra_ctx, 0);
            return true;
        }
        /* never hand out NULL, even for an empty message */
        p->ops.recv(p->uctx, peer, pe->ra_tag, pe->ra_buf ? pe->ra_buf : payload, pe->ra_len);
        if (pe->ra_cap > EM_RA_KEEP && !pe->ra_active)
            ra_release(p, pe);
    }
    return true;
}

/** Keep an out-of-order frame (selective repeat). */
static void buffer_ooo(struct em_proto *p, struct em_peer *pe, uint32_t d, const em_hdr_t *h,
                       const uint8_t *payload)
{
    if (!pe->rx) {
        if (!em_rx_mem_take(p, (uint64_t)p->ring * sizeof *pe->rx))
            return;
        pe->rx = calloc(p->ring, sizeof *pe->rx);
        if (!pe->rx) {
            p->rx_mem -= (uint64_t)p->ring * sizeof *pe->rx;
            p->st.drop_nomem++;
            return;
        }
    }
    struct em_rx_slot *s = &pe->rx[em_slot(p, h->seq)];
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
    em_ooo_set(pe, h->seq);
    p->st.rx_ooo++;
}

void em_rx_free(struct em_proto *p, struct em_peer *pe)
{
    if (pe->rx) {
        for (unsigned i = 0; i < p->ring; i++) {
            if (pe->rx[i].payload)
                p->rx_mem -= p->cfg.frame_max;
            free(pe->rx[i].payload);
        }
        free(pe->rx);
        p->rx_mem -= (uint64_t)p->ring * sizeof *pe->rx;
        pe->rx = NULL;
    }
    ra_release(p, pe);
    memset(pe->ooo, 0, sizeof pe->ooo);
    pe->nooo = 0;
    em_reassembly_reset(p, pe);
}

void em_on_sequenced(struct em_proto *p, uint32_t peer, const em_hdr_t *h, const uint8_t *payload,
                     uint64_t now)
{
    struct em_peer *pe = &p->peers[peer];
    int32_t d = em_seq_diff(h->seq, pe->rcv_nxt);

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
        if (em_ooo_has(pe, h->seq)) {
            p->st.rx_dups++;
            if (h->flags & EM_F_RETX)
                p->st.spurious_retx++;
        } else
            buffer_ooo(p, pe, (uint32_t)d, h, payload);
        ack_soon(p, pe, now);
        return;
    }

    if (pe->nooo && em_ooo_has(pe, h->seq))
        em_ooo_clear(pe, h->seq); /* a copy kept earlier could not be consumed: this one is */
    if (!consume(p, peer, h, payload)) {
        if (p->cfg.link_acks) /* acknowledged by the link: it will not come again */
            em_fail_acked(p, peer,
                          "no memory to reassemble a message the emd daemon had "
                          "acknowledged for us");
        return;
    }
    /* Drain frames that were waiting for this one. */
    while (pe->nooo && em_ooo_has(pe, pe->rcv_nxt) && pe->state == EM_PEER_ACTIVE) {
        struct em_rx_slot *s = &pe->rx[em_slot(p, pe->rcv_nxt)];
        em_ooo_clear(pe, pe->rcv_nxt);
        if (!consume(p, peer, &s->hdr, s->payload)) {
            em_ooo_set(pe, pe->rcv_nxt); /* keep it; retried when the next frame arrives */
            if (p->cfg.link_acks) /* (which may never come: the link acknowledged the rest) */
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
        em_arm(p, pe->ack_deadline);
    }
}
