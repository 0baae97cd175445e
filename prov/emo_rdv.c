/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file emo_rdv.c
 * What arrives from the engine, and the operations behind it: eager
 * delivery and the unexpected queue, the rendezvous (RTS -> CTS -> puts ->
 * FIN; emo_wire.h), the cookie table, completions and peer failure
 * (allocating the operations, their pools and the send budget: emo_op.c).
 *
 * Every message is decoded by emo_hdr_decode() (bounded, each field
 * checked for its type); a CTS or FIN must name an operation of the same
 * peer in the right state, with a length within what was asked, or it is
 * counted and dropped.
 *
 * Threading: everything here runs on the domain's thread, inside
 * em_engine_progress() (callbacks) or an fi_* call.
 */
#include "emo_rdv.h"

#include <stdlib.h>
#include <string.h>

/* ---- cookies (the operations themselves: emo_op.c) -------------------------- */

#define COOKIE_IDX_BITS 20u
#define COOKIE_IDX_MASK ((1u << COOKIE_IDX_BITS) - 1u)

/* Free slots are chained through op_next (index + 1 of the next free
 * slot, 0 = none) from ep->ops_free: a cookie is taken and given back in
 * O(1).  A slot's generation moves on each time it is taken, so a CTS or
 * FIN naming an earlier holder of the slot is refused (emo_cookie_get). */
static int cookie_grow(struct emo_ep *ep)
{
    uint32_t cap = ep->ops_cap ? ep->ops_cap * 2 : 64;
    if (cap > COOKIE_IDX_MASK)
        return -FI_EAGAIN;
    emo_op_t **o = realloc(ep->ops, cap * sizeof *o);
    if (!o)
        return -FI_ENOMEM;
    ep->ops = o;
    uint16_t *g = realloc(ep->op_gen, cap * sizeof *g);
    if (!g)
        return -FI_ENOMEM;
    ep->op_gen = g;
    uint32_t *n = realloc(ep->op_next, cap * sizeof *n);
    if (!n)
        return -FI_ENOMEM;
    ep->op_next = n;
    /* the new slots go on the free list lowest index first */
    for (uint32_t k = cap; k-- > ep->ops_cap;) {
        ep->ops[k] = NULL;
        ep->op_gen[k] = 0;
        ep->op_next[k] = ep->ops_free;
        ep->ops_free = k + 1;
    }
    ep->ops_cap = cap;
    return 0;
}

int emo_cookie_add(struct emo_ep *ep, emo_op_t *op)
{
    if (!ep->ops_free) {
        int rc = cookie_grow(ep);
        if (rc)
            return rc;
    }
    uint32_t i = ep->ops_free - 1;
    ep->ops_free = ep->op_next[i];
    ep->op_gen[i] = (uint16_t)((ep->op_gen[i] + 1) & 0xFFFu);
    ep->ops[i] = op;
    op->cookie = ((uint32_t)ep->op_gen[i] << COOKIE_IDX_BITS) | (i + 1);
    return 0;
}

emo_op_t *emo_cookie_get(struct emo_ep *ep, uint32_t cookie, uint32_t peer, int kind)
{
    uint32_t i = (cookie & COOKIE_IDX_MASK);
    emo_op_t *op = i && i <= ep->ops_cap ? ep->ops[i - 1] : NULL;
    if (!op || op->cookie != cookie || op->peer != peer || op->kind != kind) {
        ep->st.bad_cookie++;
        return NULL;
    }
    return op;
}

void emo_cookie_del(struct emo_ep *ep, emo_op_t *op)
{
    uint32_t i = op->cookie & COOKIE_IDX_MASK;
    if (i && i <= ep->ops_cap && ep->ops[i - 1] == op) {
        ep->ops[i - 1] = NULL;
        ep->op_next[i - 1] = ep->ops_free;
        ep->ops_free = i;
    }
    op->cookie = 0;
}

/* ---- liveness watch ------------------------------------------------------------ */

bool emo_watch(struct emo_ep *ep, uint32_t peer)
{
    if (peer >= ep->npeers || peer == ep->self.id || !ep->peer_set[peer])
        return false;
    return em_engine_watch(ep->eng, peer) == 0;
}

void emo_unwatch(struct emo_ep *ep, uint32_t peer, bool *watched)
{
    /* while the engine is destroyed (close) its watches go with it */
    if (*watched && ep->phase != EMO_EP_CLOSING)
        (void)em_engine_unwatch(ep->eng, peer);
    *watched = false;
}

/* ---- completions ------------------------------------------------------------ */

fi_addr_t emo_src(struct emo_ep *ep, uint32_t peer)
{
    /* (EMO_PEER_GONE: a removed sender, in no AV entry) */
    return peer < ep->npeers ? emo_av_fa(ep, peer) : FI_ADDR_NOTAVAIL;
}

void emo_complete_early(emo_op_t *op)
{
    emo_complete_tx(op, 0); /* the counter and CQ entry of any successful send */
    op->done_early = true;
    op->ep->st.sends_early++;
}

void emo_complete_tx(emo_op_t *op, int status)
{
    struct emo_ep *ep = op->ep;
    if (ep->phase == EMO_EP_CLOSING)
        return;
    if (op->done_early) {
        /* its caller had its completion when the copy was made; the peer's
         * failure reaches it on its next operation with that peer */
        if (status)
            FI_WARN(&emo_prov, FI_LOG_EP_DATA,
                    "send to endpoint %u (completed when copied) failed: %s\n", op->peer,
                    fi_strerror(-status));
        return;
    }
    bool atomic = (op->cq_flags & FI_ATOMIC) != 0;
    bool rma = atomic || (op->cq_flags & FI_RMA), read = rma && (op->cq_flags & FI_READ);
    /* an RMA or atomic operation counts on the FI_READ / FI_WRITE counter
     * (MPICH waits on it for its one-sided operations), a send on the
     * FI_SEND one */
    emo_cntr_inc(rma ? ep->other_cntr[read ? 0 : 1] : ep->tx_cntr, status);
    if (!ep->tx_cq)
        return;
    const char *what = atomic ? (read ? "fetching atomic on" : "atomic on")
                       : rma  ? (read ? "RMA read from" : "RMA write to")
                              : "send to";
    if (status && !op->context) {
        /* an inject has no completion, and an error entry without a
         * context crashes MPIs that map every entry to a request: log it;
         * the peer's failure reaches the caller on its next operation */
        FI_WARN(&emo_prov, FI_LOG_EP_DATA, "inject (%s) endpoint %u failed: %s\n", what, op->peer,
                fi_strerror(-status));
    } else if (status)
        emo_cq_write_err(ep->tx_cq, op->context, op->cq_flags, status, op->len, 0, op->tag,
                         emo_src(ep, op->peer), "%s endpoint %u: %s%s%s", what, op->peer,
                         fi_strerror(-status), status == -FI_EIO ? ": " : "",
                         status == -FI_EIO && em_engine_fail_reason(ep->eng, op->peer)
                             ? em_engine_fail_reason(ep->eng, op->peer)
                         : status == -FI_ECANCELED ? " (its address was removed from the AV)"
                                                   : "");
    else if (op->want_cqe)
        emo_cq_write(ep->tx_cq, op->context, op->cq_flags, op->len, NULL, 0, op->tag, 0);
}

/* a receive finished: @p n bytes of a @p total-byte message landed */
static void complete_rx(struct emo_ep *ep, void *ctx, uint64_t flags, bool want, void *buf,
                        size_t n, size_t total, uint64_t data, uint64_t tag, uint32_t peer,
                        int status)
{
    if (ep->phase == EMO_EP_CLOSING)
        return;
    fi_addr_t src = emo_src(ep, peer);
    if (!status && total > n)
        status = -FI_ETRUNC;
    emo_cntr_inc(ep->rx_cntr, status);
    if (!ep->rx_cq)
        return;
    if (status)
        emo_cq_write_err(ep->rx_cq, ctx, flags, status, n, total - n, tag, src,
                         "receive from endpoint %u: %s%s%s%s", peer, fi_strerror(-status),
                         status == -FI_ETRUNC ? " (the message is longer than the buffer)" : "",
                         status == -FI_EIO ? " (the peer failed)" : "",
                         status == -FI_ECANCELED ? " (the sender's address was removed from the AV)"
                                                 : "");
    else if (want)
        emo_cq_write(ep->rx_cq, ctx, flags, n, buf, data, tag, src);
}

static uint64_t rx_flags(bool tagged, uint8_t wflags)
{
    return FI_RECV | (tagged ? FI_TAGGED : FI_MSG) |
           ((wflags & EMO_F_DATA) ? FI_REMOTE_CQ_DATA : 0);
}

/* ---- control messages -------------------------------------------------------- */

/* @return 0 or a negative fi_errno */
int emo_send_ctrl(struct emo_ep *ep, uint32_t peer, const emo_hdr_t *h, emo_op_t *parent)
{
    emo_op_t *c = emo_op_new(ep, EMO_OP_CTRL, EMO_HDR_LEN);
    if (!c)
        return -FI_ENOMEM;
    c->peer = peer;
    c->buf = parent; /* not owned: only compared on failure */
    emo_hdr_encode(h, c->msg);
    int rc = em_engine_send(ep->eng, &c->pop, peer, h->type, c->msg, EMO_HDR_LEN, c);
    if (rc) {
        emo_op_free(c);
        return emo_errno(rc);
    }
    return 0;
}

/* ---- receiving ------------------------------------------------------------- */

/* An eager message of @p len bytes into receive @p rx: what fits is copied,
 * and it completes (FI_ETRUNC if cut).  @p extra: flags its completion
 * carries beyond the receive's own (FI_MULTI_RECV: it is written even
 * under FI_SELECTIVE_COMPLETION). */
static void eager_done(struct emo_ep *ep, const emo_rx_t *rx, uint64_t extra, uint32_t peer,
                       uint8_t wflags, uint64_t tag, uint64_t data, uint64_t len, size_t n)
{
    complete_rx(ep, rx->context, rx_flags(rx->tagged, wflags) | extra,
                extra || !ep->rx_selective || (rx->flags & FI_COMPLETION), rx->buf, n, (size_t)len,
                data, tag, peer, 0);
}

static void deliver_eager(struct emo_ep *ep, const emo_rx_t *rx, uint64_t extra, uint32_t peer,
                          uint8_t wflags, uint64_t tag, uint64_t data, uint64_t len,
                          const void *payload)
{
    size_t n = len < rx->len ? (size_t)len : rx->len;
    if (n)
        memcpy(rx->buf, payload, n);
    eager_done(ep, rx, extra, peer, wflags, tag, data, len, n);
}

/* ---- multi-receive buffers (FI_MULTI_RECV) -------------------------------- */

/* A multi-receive buffer (MPICH's active-message buffers) takes messages
 * one after another, each at the next 8-byte aligned offset, and stays
 * posted, in its place, until less than the endpoint's
 * FI_OPT_MIN_MULTI_RECV is left.  Then it is released: taken off the
 * posted queue, and the completion of the last message placed in it
 * carries FI_MULTI_RECV (the application may reuse the buffer after that
 * one).  An eager message completes at once; a rendezvous message is
 * carved out (its bytes reserved) and completes at its FIN, so a released
 * buffer with rendezvous in flight waits for the last of them.  A message
 * longer than the room left gets what fits, as FI_ETRUNC. */

/* @p n bytes of @p m handed out; release it when the room left is too small */
static void multi_take(struct emo_ep *ep, emo_rx_t *m, size_t n)
{
    size_t step = (n + 7) & ~(size_t)7;
    m->off = step < m->len - m->off ? m->off + step : m->len;
    if (!m->released && m->len - m->off < ep->min_multi_recv) {
        (void)emo_queue_remove(&ep->posted_msg, &m->q); /* (not queued yet: do_recv) */
        emo_unwatch(ep, (uint32_t)m->q.peer, &m->watched);
        m->released = true;
    }
}

/* A rendezvous receive carved from multi-receive buffer @p m (or NULL)
 * ended: @return FI_MULTI_RECV when it was the buffer's last use (then freed) */
static uint64_t multi_put(emo_rx_t *m)
{
    if (!m || --m->inflight || !m->released)
        return 0;
    free(m);
    return FI_MULTI_RECV;
}

static uint64_t multi_settle(emo_op_t *op)
{
    emo_rx_t *m = op->multi;
    op->multi = NULL;
    return multi_put(m);
}

void emo_multi_forget(emo_op_t *op)
{
    (void)multi_settle(op); /* endpoint close: no completion, the buffer freed if last */
}

static void rdv_accept(struct emo_ep *ep, const emo_rx_t *rx, emo_rx_t *multi, uint32_t peer,
                       uint64_t tag, uint64_t data, uint8_t wflags, uint64_t len,
                       uint32_t s_cookie);

bool emo_multi_deliver(struct emo_ep *ep, emo_rx_t *m, uint32_t peer, uint8_t type, uint8_t wflags,
                       uint64_t tag, uint64_t data, uint64_t len, uint32_t s_cookie,
                       const void *payload)
{
    size_t room = m->len - m->off;
    size_t n = len < room ? (size_t)len : room;
    void *at = (uint8_t *)m->buf + m->off;
    multi_take(ep, m, n);
    emo_rx_t part = { .buf = at, .len = n, .context = m->context, .flags = m->flags };
    if (type == EMO_T_RTS) {
        m->inflight++;
        rdv_accept(ep, &part, m, peer, tag, data, wflags, len, s_cookie);
        return false; /* the buffer lives at least until its FIN */
    }
    bool last = m->released && m->inflight == 0;
    deliver_eager(ep, &part, last ? FI_MULTI_RECV : 0, peer, wflags, tag, data, len, payload);
    if (last)
        free(m);
    return last;
}

/* Start the receive of a rendezvous message into @p rx (matched); @p multi:
 * the multi-receive buffer @p rx was carved from (its inflight counts this
 * receive), or NULL. */
static void rdv_accept(struct emo_ep *ep, const emo_rx_t *rx, emo_rx_t *multi, uint32_t peer,
                       uint64_t tag, uint64_t data, uint8_t wflags, uint64_t len, uint32_t s_cookie)
{
    uint64_t flags = rx_flags(rx->tagged, wflags);
    if (peer == EMO_PEER_GONE) {
        /* its sender was removed from the AV before the bytes were asked
         * for: they are still there, and nothing can ask now */
        complete_rx(ep, rx->context, flags | multi_put(multi), true, rx->buf, 0, (size_t)len, data,
                    tag, peer, -FI_ECANCELED);
        return;
    }
    emo_op_t *op = emo_op_new(ep, EMO_OP_RRECV, 0);
    if (!op || emo_cookie_add(ep, op) != 0) {
        /* cannot take it: the sender waits for a CTS that never comes, so
         * fail the receive loudly (the job's error path ends it) */
        emo_op_free(op);
        complete_rx(ep, rx->context, flags | multi_put(multi), true, rx->buf, 0, 0, data, tag, peer,
                    -FI_ENOMEM);
        return;
    }
    op->multi = multi;
    op->peer = peer;
    op->context = rx->context;
    op->cq_flags = flags;
    op->want_cqe = !ep->rx_selective || (rx->flags & FI_COMPLETION);
    op->buf = rx->buf;
    op->tag = tag;
    op->data = data;
    op->len = len < rx->len ? (size_t)len : rx->len;
    op->olen = (size_t)(len - op->len);
    emo_hdr_t h = {
        .type = EMO_T_CTS, .len = op->len, .s_cookie = s_cookie, .r_cookie = op->cookie
    };
    if (op->len) {
        if (em_engine_register(ep->eng, op->buf, op->len, &op->reg) != 0) {
            op->status = -FI_ENOMEM;
            op->len = 0; /* grant nothing; FIN still comes and ends it */
            h.len = 0;
        } else {
            h.region = op->reg.id;
            h.key = op->reg.key;
        }
    }
    int rc = emo_send_ctrl(ep, peer, &h, op);
    if (rc) {
        if (op->reg.id)
            em_engine_deregister(ep->eng, &op->reg);
        emo_cookie_del(ep, op);
        complete_rx(ep, op->context, flags | multi_settle(op), true, op->buf, 0, 0, data, tag, peer,
                    rc);
        emo_op_free(op);
        return;
    }
    op->watched = emo_watch(ep, peer); /* until its FIN */
}

/* an unexpected or arriving message meets receive @p rx */
void emo_deliver(struct emo_ep *ep, const emo_rx_t *rx, uint32_t peer, uint8_t type, uint8_t wflags,
                 uint64_t tag, uint64_t data, uint64_t len, uint32_t s_cookie, const void *payload)
{
    if (type == EMO_T_RTS) {
        rdv_accept(ep, rx, NULL, peer, tag, data, wflags, len, s_cookie);
        return;
    }
    deliver_eager(ep, rx, 0, peer, wflags, tag, data, len, payload);
}

/* ---- the unexpected queues' budget ------------------------------------------ */

/* What an unexpected message holds: its entry and, eager, its bytes. */
static size_t unexp_size(uint8_t type, uint64_t len)
{
    return sizeof(emo_unexp_t) + (type == EMO_T_EAGER ? (size_t)len : 0);
}

static const char unexp_why[] =
    "it sent more unexpected messages (held until their receives are posted) than "
    "FI_ETHERMPI_UNEXP_MB allows this endpoint, and held the most of them";

/* Peer @p peer is to fail (after this progress call: emo_apply_failures);
 * its held unexpected messages go now, so that the memory is free at once */
static void unexp_overflow(struct emo_ep *ep, uint32_t peer)
{
    ep->st.unexp_overflow++;
    if (!ep->fail_pending[peer]) {
        ep->fail_pending[peer] = 1;
        ep->nfail_pending++;
    }
    emo_queue_t *qs[2] = { &ep->unexp_tag, &ep->unexp_msg };
    for (int k = 0; k < 2; k++) {
        for (emo_qent_t *c = qs[k]->head, *next; c; c = next) {
            next = c->next;
            if (c->peer == peer && !c->claimed) {
                emo_queue_remove(qs[k], c);
                emo_unexp_release(ep, container_of_emo(c, emo_unexp_t, q));
            }
        }
    }
    FI_WARN(&emo_prov, FI_LOG_EP_DATA,
            "endpoint %u: unexpected messages over FI_ETHERMPI_UNEXP_MB=%d; endpoint %u, which "
            "held the most, is failed\n",
            ep->self.id, emo_params.unexp_mb, peer);
}

/* Room for @p need more bytes from @p peer?  Over the budget, the peer that
 * would hold the most (this message counted) is failed: a receiver cannot
 * refuse what the engine has acknowledged, and a broken or hostile peer
 * must not take the node's memory (docs/ofi.md "Limits"). */
static bool unexp_room(struct emo_ep *ep, uint32_t peer, size_t need)
{
    if (peer < ep->npeers && ep->fail_pending[peer])
        return false;
    if (!ep->unexp_budget || peer >= ep->npeers || peer == ep->self.id ||
        ep->unexp_bytes + need <= ep->unexp_budget)
        return true;
    uint32_t worst = peer;
    uint64_t most = ep->unexp_held[peer] + need;
    for (uint32_t i = 0; i < ep->npeers; i++) {
        if (i != ep->self.id && ep->unexp_held[i] > most) {
            worst = (uint32_t)i;
            most = ep->unexp_held[i];
        }
    }
    unexp_overflow(ep, worst);
    return worst != peer && ep->unexp_bytes + need <= ep->unexp_budget;
}

void emo_apply_failures(struct emo_ep *ep)
{
    for (uint32_t i = 0; i < ep->npeers && ep->nfail_pending; i++) {
        if (!ep->fail_pending[i])
            continue;
        ep->fail_pending[i] = 0;
        ep->nfail_pending--;
        (void)em_engine_fail_peer(ep->eng, (uint32_t)i, unexp_why); /* -> cb_peer_failed */
    }
}

/* keep an unmatched EAGER or RTS message */
static void queue_unexp(struct emo_ep *ep, emo_queue_t *q, uint32_t peer, const emo_hdr_t *h,
                        const void *payload)
{
    size_t plen = h->type == EMO_T_EAGER ? (size_t)h->len : 0, size = unexp_size(h->type, h->len);
    if (!unexp_room(ep, peer, size)) {
        ep->st.unexp_refused++;
        return;
    }
    emo_unexp_t *u = malloc(sizeof *u + plen);
    if (!u) {
        FI_WARN(&emo_prov, FI_LOG_EP_DATA,
                "out of memory for an unexpected message of %zu "
                "bytes from endpoint %u: it is lost\n",
                plen, peer);
        return;
    }
    u->q.peer = peer;
    u->q.tag = h->tag;
    u->q.ignore = 0;
    u->q.claimed = 0;
    u->type = h->type;
    u->flags = h->flags;
    u->data = h->data;
    u->len = h->len;
    u->s_cookie = h->s_cookie;
    if (plen)
        memcpy(u->payload, payload, plen);
    emo_queue_push(q, &u->q);
    ep->unexp_bytes += size;
    if (peer < ep->npeers)
        ep->unexp_held[peer] += size;
    ep->st.unexp_msgs++;
    if (ep->unexp_bytes > ep->st.unexp_bytes_max)
        ep->st.unexp_bytes_max = ep->unexp_bytes;
}

void emo_unexp_orphan(struct emo_ep *ep, uint32_t peer)
{
    emo_queue_t *qs[2] = { &ep->unexp_tag, &ep->unexp_msg };
    for (int k = 0; k < 2; k++)
        for (emo_qent_t *c = qs[k]->head; c; c = c->next)
            if (c->peer == peer) {
                emo_unexp_t *u = container_of_emo(c, emo_unexp_t, q);
                ep->unexp_held[peer] -= unexp_size(u->type, u->len);
                c->peer = EMO_PEER_GONE; /* (the budget still counts its bytes) */
            }
}

void emo_unexp_release(struct emo_ep *ep, emo_unexp_t *u)
{
    size_t size = unexp_size(u->type, u->len);
    ep->unexp_bytes -= size;
    if (u->q.peer < ep->npeers)
        ep->unexp_held[u->q.peer] -= size;
    free(u);
}

static void on_message(struct emo_ep *ep, uint32_t peer, const emo_hdr_t *h, const void *pl)
{
    bool tagged = (h->flags & EMO_F_TAGGED) != 0;
    emo_queue_t *posted = tagged ? &ep->posted_tag : &ep->posted_msg;
    /* untagged: a multi-receive buffer stays posted until it is full */
    emo_qent_t *q = tagged ? emo_match_posted(posted, peer, h->tag)
                           : emo_find_posted(posted, peer, 0);
    if (!q) {
        queue_unexp(ep, tagged ? &ep->unexp_tag : &ep->unexp_msg, peer, h, pl);
        return;
    }
    emo_rx_t *rx = container_of_emo(q, emo_rx_t, q);
    if (rx->multi) {
        (void)emo_multi_deliver(ep, rx, peer, h->type, h->flags, h->tag, h->data, h->len,
                                h->s_cookie, pl);
        return;
    }
    if (!tagged)
        (void)emo_queue_remove(posted, q);
    emo_unwatch(ep, peer, &rx->watched);
    emo_deliver(ep, rx, peer, h->type, h->flags, h->tag, h->data, h->len, h->s_cookie, pl);
    free(rx);
}

/* CTS: put the bytes into the receiver's region, then FIN */
static void on_cts(struct emo_ep *ep, uint32_t peer, const emo_hdr_t *h)
{
    emo_op_t *op = emo_cookie_get(ep, h->s_cookie, peer, EMO_OP_RTS);
    if (!op)
        return;
    if (h->len > op->len) {
        ep->st.bad_len++;
        return;
    }
    emo_cookie_del(ep, op);
    emo_unwatch(ep, peer, &op->watched); /* it answered; the puts have the retransmit timer */
    size_t len = (size_t)h->len;
    em_region_handle_t rh = { .id = h->region, .key = h->key, .len = len };
    emo_put_chunks(ep, op, peer, &rh, 0, op->buf, len);
    emo_hdr_t fin = { .type = EMO_T_FIN, .len = op->status ? 0 : len, .r_cookie = h->r_cookie };
    int rc = emo_send_ctrl(ep, peer, &fin, NULL);
    if (rc && !op->status)
        op->status = rc;
    emo_put_done(op, 0); /* drop the hold */
}

int emo_put_chunks(struct emo_ep *ep, emo_op_t *op, uint32_t peer, const em_region_handle_t *rh,
                   uint64_t off, const void *buf, size_t len)
{
    size_t nput = (len + EMO_PUT_CHUNK - 1) / EMO_PUT_CHUNK;
    op->puts_left = 1; /* held until every put is queued */
    if (nput && !(op->puts = calloc(nput, sizeof *op->puts)))
        return op->status = -FI_ENOMEM;
    for (size_t i = 0, at = 0; i < nput; i++, at += EMO_PUT_CHUNK) {
        size_t n = len - at < EMO_PUT_CHUNK ? len - at : EMO_PUT_CHUNK;
        int rc = em_engine_put(ep->eng, &op->puts[i], peer, rh, off + at, (const uint8_t *)buf + at,
                               n, op);
        if (rc)
            return op->status = emo_errno(rc);
        op->puts_left++;
    }
    return 0;
}

void emo_put_chunks_rebase(emo_op_t *op, const void *buf)
{
    /* puts_left is the hold and one per put queued, as emo_put_chunks left it */
    for (unsigned i = 0; i + 1 < op->puts_left; i++)
        em_proto_op_rebase(&op->puts[i], (const uint8_t *)buf + (size_t)i * EMO_PUT_CHUNK);
}

void emo_put_done(emo_op_t *op, int status)
{
    if (status && !op->status)
        op->status = status;
    if (--op->puts_left)
        return;
    if (op->kind == EMO_OP_RSERVE) {
        op->ep->reads_active--; /* a peer's read: its RDONE said the rest */
        emo_serve_end(op);
    } else
        emo_complete_tx(op, op->status);
    emo_op_free(op);
}

/* FIN: the bytes are in place (the engine delivers in order) */
static void on_fin(struct emo_ep *ep, uint32_t peer, const emo_hdr_t *h)
{
    emo_op_t *op = emo_cookie_get(ep, h->r_cookie, peer, EMO_OP_RRECV);
    if (!op)
        return;
    int status = op->status;
    if (h->len != op->len && !status)
        status = -FI_EIO; /* the sender gave up part way (its own error) */
    emo_cookie_del(ep, op);
    emo_unwatch(ep, peer, &op->watched);
    if (op->reg.id)
        em_engine_deregister(ep->eng, &op->reg);
    uint64_t last = multi_settle(op);
    complete_rx(ep, op->context, op->cq_flags | last, op->want_cqe || last, op->buf, op->len,
                op->len + op->olen, op->data, op->tag, peer, status);
    emo_op_free(op);
}

void emo_handle_msg(struct emo_ep *ep, uint32_t peer, uint8_t etag, const void *data, size_t len)
{
    emo_hdr_t h;
    emo_dec_err_t e = emo_hdr_decode(etag, data, len, &h);
    if (e != EMO_DEC_OK) {
        ep->st.dec_err[e]++;
        FI_WARN_SPARSE(&emo_prov, FI_LOG_EP_DATA, "refused a message from endpoint %u: %s\n", peer,
                       emo_dec_err_name(e));
        return;
    }
    const uint8_t *pl = (const uint8_t *)data + h.off; /* after a first-contact blob */
    switch (h.type) {
    case EMO_T_EAGER:
    case EMO_T_RTS: on_message(ep, peer, &h, pl); break;
    case EMO_T_CTS: on_cts(ep, peer, &h); break;
    case EMO_T_FIN: on_fin(ep, peer, &h); break;
    case EMO_T_READ: emo_on_read(ep, peer, &h); break;
    case EMO_T_RDONE: emo_on_rdone(ep, peer, &h); break;
    case EMO_T_WDATA: emo_on_wdata(ep, peer, &h); break;
    case EMO_T_HELLO: break; /* its address served the engine's resolve (emo_contact.c) */
    }
}

/* ---- engine callbacks -------------------------------------------------------- */

static void cb_recv(void *u, uint32_t peer, uint8_t tag, const void *data, size_t len)
{
    struct emo_ep *ep = u;
    if (peer < ep->npeers)
        ep->peer_heard[peer] = 1; /* it sent to us: it has our address */
    emo_handle_msg(u, peer, tag, data, len);
}

/* ---- eager messages placed as they arrive ------------------------------------ */

/* An eager message of several frames (up to 256 KiB over kernel UDP) would
 * be assembled by the engine in a buffer of its own and copied into its
 * receive at the end.  When that receive is posted already (a ping-pong, a
 * window of pre-posted receives), the engine assembles it straight in the
 * receive's buffer instead (ops.place): one copy of the payload instead of
 * two, and no buffer of message size to allocate (and fault in) per
 * message.  The receive is matched when the first frame arrives: the
 * engine hands a peer's messages over one after another, so that is the
 * message's turn in its peer's order.  A receive it would truncate, a
 * multi-receive buffer, or none: the message is assembled by the engine
 * and matched whole at its end, as before.  A message cut short (the peer
 * failed) ends its receive with FI_EIO. */
static void *cb_place(void *u, uint32_t peer, uint8_t etag, const void *head, size_t head_len,
                      size_t msg_len, size_t *skip, void **ctx)
{
    struct emo_ep *ep = u;
    emo_hdr_t h;
    /* (a message that does not decode is judged, and counted, whole: recv) */
    if (etag != EMO_T_EAGER || head_len < EMO_HDR_LEN ||
        emo_hdr_decode(etag, head, msg_len, &h) != EMO_DEC_OK || h.off > head_len)
        return NULL;
    bool tagged = (h.flags & EMO_F_TAGGED) != 0;
    emo_queue_t *posted = tagged ? &ep->posted_tag : &ep->posted_msg;
    emo_qent_t *q = emo_find_posted(posted, peer, tagged ? h.tag : 0);
    if (!q)
        return NULL;
    emo_rx_t *rx = container_of_emo(q, emo_rx_t, q);
    if (rx->multi || rx->len < h.len)
        return NULL;
    (void)emo_queue_remove(posted, q);
    emo_unwatch(ep, peer, &rx->watched);
    if (peer < ep->npeers)
        ep->peer_heard[peer] = 1; /* it sent to us: it has our address */
    rx->ph = h;
    *skip = h.off;
    *ctx = rx;
    return rx->buf;
}

static void cb_place_end(void *u, uint32_t peer, void *ctx, int status)
{
    struct emo_ep *ep = u;
    emo_rx_t *rx = ctx;
    const emo_hdr_t *h = &rx->ph;
    if (status) {
        complete_rx(ep, rx->context, rx_flags(rx->tagged, h->flags), true, rx->buf, 0,
                    (size_t)h->len, h->data, h->tag, peer, -FI_EIO);
    } else {
        ep->st.placed++;
        eager_done(ep, rx, 0, peer, h->flags, h->tag, h->data, h->len, (size_t)h->len);
    }
    free(rx);
}

static void cb_complete(void *u, void *ctx, int status)
{
    emo_op_t *op = ctx;
    int st = emo_errno(status);
    if (status == 0 && op->peer < op->ep->npeers)
        op->ep->peer_heard[op->peer] = 1; /* it acknowledged: no more first-contact blobs */
    switch (op->kind) {
    case EMO_OP_EAGER:
        emo_complete_tx(op, st);
        emo_op_free(op);
        break;
    case EMO_OP_RTS: /* one of its puts */
    case EMO_OP_WRITE:
    case EMO_OP_RSERVE: emo_put_done(op, st); break;
    case EMO_OP_GET:
    case EMO_OP_ATOMIC: emo_answered(op, st); break; /* its answer came (or the peer failed) */
    case EMO_OP_CTRL: /* a CTS, FIN or RTS message; failures reach the
                                 operations through peer_failed */
        emo_op_free(op);
        break;
    default: break;
    }
}

/* @p peer failed: rendezvous operations waiting on it end with FI_EIO, and
 * so do receives posted for it alone */
static void cb_peer_failed(void *u, uint32_t peer)
{
    struct emo_ep *ep = u;
    if (peer < ep->npeers)
        ep->peer_failed[peer] = 1;
    FI_WARN(&emo_prov, FI_LOG_EP_DATA, "endpoint %u failed: %s\n", peer,
            em_engine_fail_reason(ep->eng, peer) ? em_engine_fail_reason(ep->eng, peer) : "");
    if (ep->phase == EMO_EP_CLOSING)
        return; /* destroying: nobody reads the CQ any more */
    emo_peer_ops_end(ep, peer, -FI_EIO);
}

void emo_peer_ops_end(struct emo_ep *ep, uint32_t peer, int status)
{
    for (uint32_t i = 0; i < ep->ops_cap; i++) {
        emo_op_t *op = ep->ops[i];
        if (!op || op->peer != peer)
            continue;
        emo_cookie_del(ep, op);
        emo_unwatch(ep, peer, &op->watched); /* (the failed peer's watches are gone) */
        if (op->reg.id) /* a rendezvous receive's, or a read's landing region */
            em_engine_deregister(ep->eng, &op->reg);
        if (op->kind == EMO_OP_RRECV) {
            complete_rx(ep, op->context, op->cq_flags | multi_settle(op), true, op->buf, 0,
                        op->len + op->olen, op->data, op->tag, peer, status);
        } else {
            emo_complete_tx(op, status);
        }
        emo_op_free(op);
    }
    emo_fail_posted_from(ep, peer, status);
}

static void cb_resolve(void *u, uint32_t peer)
{
    struct emo_ep *ep = u;
    if (peer < ep->npeers && ep->peer_set[peer])
        return; /* known: the protocol judges the source address */
    int rc = emo_ep_set_peer(ep, peer);
    if (rc == -FI_EADDRNOTAVAIL && emo_contact(ep, peer) == 0)
        return; /* first contact (emo_contact.c) */
    if (rc)
        ep->st.unknown_peer++;
}

static int cb_resolve_peer(void *u, uint32_t peer)
{
    return emo_ep_set_peer(u, peer) == 0 ? 0 : -1;
}

const em_engine_ops_t emo_engine_ops = {
    .recv = cb_recv,
    .complete = cb_complete,
    .peer_failed = cb_peer_failed,
    .resolve = cb_resolve,
    .resolve_peer = cb_resolve_peer,
    .place = cb_place,
    .place_end = cb_place_end,
    .contact = emo_name_contact,
    .grow = emo_name_grow, /* named endpoints only: numbered ones never open first contact */
};
