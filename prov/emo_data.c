/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file emo_data.c
 * The data-path calls: fi_send/fi_tsend (and their inject, data, msg and
 * iov forms), fi_recv/fi_trecv with FI_PEEK, FI_CLAIM and FI_DISCARD,
 * fi_cancel.  A message up to the eager limit travels whole (copied once
 * into the engine's message, once out of it); a longer one goes by
 * rendezvous (emo_rdv.c).  Messages to the endpoint itself are delivered
 * locally, whatever their size.
 */
#include "emo_rdv.h"
#include "engine/contact.h"

#include <stdlib.h>
#include <string.h>

int emo_dest_peer(struct emo_ep *ep, fi_addr_t fa, uint32_t *peer)
{
    /* this endpoint's number for the entry: no entry, removed, or one it
     * could not number when it was inserted or bound (said why then) */
    uint32_t id = emo_av_peer(ep, fa);
    if (id == EMO_ID_NONE)
        return -FI_EINVAL;
    *peer = id;
    if (id == ep->self.id) {
        const emo_addr_t *a = emo_av_get(ep->av, fa);
        return a->named || a->secret == ep->self.secret ? 0 : -FI_EADDRINUSE;
    }
    if (id >= ep->npeers) {
        FI_WARN(&emo_prov, FI_LOG_EP_DATA,
                "peer id %u is not below FI_ETHERMPI_NPEERS %u: "
                "set it the same in every process\n",
                id, ep->npeers);
        return -FI_EINVAL;
    }
    if (ep->peer_failed[id])
        return -FI_EIO;
    return emo_ep_set_peer(ep, id);
}

struct emo_send_args {
    const void *buf;
    size_t len;
    fi_addr_t dest;
    void *context;
    uint64_t tag, data, flags; /* flags: FI_INJECT, FI_COMPLETION, FI_REMOTE_CQ_DATA */
    bool tagged;
    /* an fi_inject* call: never a completion.  The FI_INJECT op flag (of
     * fi_sendmsg, or the endpoint's op_flags) only lets the caller reuse
     * the buffer at once; the send still completes as any other (fabtests'
     * fi_msg_inject -A inject waited for that completion forever) */
    bool no_cqe;
};

/* deliver to this endpoint itself, then complete */
static ssize_t send_self(struct emo_ep *ep, emo_op_t *op)
{
    ep->st.self_sent++;
    emo_handle_msg(ep, ep->self.id, EMO_T_EAGER, op->msg, op->msg_len);
    emo_complete_tx(op, 0);
    emo_op_free(op);
    return 0;
}

/* the completion levels a caller may name that an early completion
 * (when the send is copied) would not meet */
#define EMO_COMPLETE_LEVELS                                                                        \
    (FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE | FI_MATCH_COMPLETE | FI_COMMIT_COMPLETE)

/* an eager send from the caller's buffer gives the engine our header as its head */
_Static_assert(EMO_HDR_LEN <= EM_PROTO_HEAD_MAX, "the message header fits the engine's head");

/* A small send whose caller asked for no completion level completes
 * when it is copied, as an inject does, rather than at the peer's ACK
 * (docs/ofi.md "When a send completes"): that ACK would otherwise be a
 * frame of its own, sent before the peer's application sees the
 * message, and it doubled a ping-pong of fi_tsend (Open MPI 4.1's
 * MPI_Isend).  Not when the copy would wait for the send budget, nor while
 * the send waits behind its peer's handshake: an fi_av_remove then would
 * cancel a send that never left (emo_name.c). */
static bool complete_early(const struct emo_ep *ep, const struct emo_send_args *s, uint32_t peer,
                           size_t off)
{
    return !s->no_cqe && ep->send_copy_max && s->len <= ep->send_copy_max &&
           !(s->flags & EMO_COMPLETE_LEVELS) && emo_tx_fits(ep, off + s->len) &&
           em_engine_contact_ready(ep->eng, peer);
}

static ssize_t do_send(struct emo_ep *ep, const struct emo_send_args *s)
{
    if (!ep->enabled)
        return -FI_EOPBADSTATE;
    if ((s->flags & FI_INJECT) && s->len > ep->inject_max)
        return -FI_EMSGSIZE;
    uint32_t peer;
    int rc = emo_dest_peer(ep, s->dest, &peer);
    if (rc)
        return rc;
    bool self = peer == ep->self.id, eager = self || s->len <= ep->eager_max;
    /* first contact: our address rides along until the peer has shown it
     * knows us (emo_contact.c); never to ourselves */
    bool hello = !self && !ep->peer_heard[peer];
    size_t off = EMO_HDR_LEN + (hello ? EMO_ADDR_LEN : 0);
    /* An eager send that is not an inject keeps the caller's buffer until
     * it completes (at the peer's ACK, unless it completes early: below),
     * so the engine sends it from there, behind our header, with no copy.
     * An inject (the buffer is the caller's again at return) is sent from
     * there too, then copied for the frames still to leave and for
     * resends (em_proto_op_rebase): the copy is made while the peer
     * receives, not before the first frame leaves (docs/ofi.md "Injects
     * copied after they leave").  A first-contact message (header and address are over
     * the engine's head limit) and a send to ourselves are copied first. */
    bool inplace = eager && !self && !hello && s->len;
    bool early = eager && !self && complete_early(ep, s, peer, off);
    bool copy_after = inplace && ((s->flags & FI_INJECT) || early);
    size_t msg_len = off + (eager && (!inplace || copy_after) ? s->len : 0);
    if (!emo_tx_room(ep, msg_len))
        return -FI_EAGAIN;
    emo_op_t *op = emo_op_new(ep, eager ? EMO_OP_EAGER : EMO_OP_RTS, msg_len);
    if (!op)
        return -FI_EAGAIN;
    op->peer = peer;
    op->context = s->context;
    op->cq_flags = FI_SEND | (s->tagged ? FI_TAGGED : FI_MSG);
    op->want_cqe = !s->no_cqe && (!ep->tx_selective || (s->flags & FI_COMPLETION));
    op->tag = s->tagged ? s->tag : 0;
    op->len = s->len;
    op->buf = (void *)s->buf;
    emo_hdr_t h = { .type = eager ? EMO_T_EAGER : EMO_T_RTS,
                    .flags = (uint8_t)((s->tagged ? EMO_F_TAGGED : 0) |
                                       ((s->flags & FI_REMOTE_CQ_DATA) ? EMO_F_DATA : 0) |
                                       (hello ? EMO_F_HELLO : 0)),
                    .tag = op->tag,
                    .data = (s->flags & FI_REMOTE_CQ_DATA) ? s->data : 0,
                    .len = s->len };
    if (eager) {
        /* the caller's buffer behind our header, or the copy in op->msg */
        const void *head = NULL, *body = op->msg;
        size_t head_len = 0, body_len = op->msg_len;
        if (inplace) {
            head = op->msg;
            head_len = off;
            body = s->buf;
            body_len = s->len;
        } else if (s->len) {
            memcpy(op->msg + off, s->buf, s->len);
        }
        emo_hdr_encode(&h, op->msg);
        if (hello)
            emo_addr_encode(&ep->self, op->msg + EMO_HDR_LEN);
        if (self)
            return send_self(ep, op);
        /* a send that completes at the peer's ACK (not an inject, not
         * early) asks the peer to send it at once, in the progress call
         * that hands it the message, not only when it next drives
         * progress (under manual progress it may never: fi_pingpong's
         * last pong) */
        rc = em_engine_sendv(ep->eng, &op->pop, peer, EMO_T_EAGER, head, head_len, body, body_len,
                             (s->flags & FI_INJECT) || early ? 0 : EM_SEND_ACK_LAST, op);
        if (rc) {
            emo_op_free(op);
            return emo_errno(rc);
        }
        if (copy_after) {
            memcpy(op->msg + off, s->buf, s->len);
            em_proto_op_rebase(&op->pop, op->msg + off);
        }
        if (early)
            emo_complete_early(op);
        ep->st.eager_sent++;
        return 0;
    }
    /* rendezvous: the RTS travels as a control message; the operation
     * waits in the cookie table for the CTS */
    if ((rc = emo_cookie_add(ep, op)) != 0) {
        emo_op_free(op);
        return rc;
    }
    h.s_cookie = op->cookie;
    emo_op_t *c = emo_op_new(ep, EMO_OP_CTRL, off);
    if (!c) {
        emo_cookie_del(ep, op);
        emo_op_free(op);
        return -FI_EAGAIN;
    }
    c->peer = peer;
    emo_hdr_encode(&h, c->msg);
    if (hello)
        emo_addr_encode(&ep->self, c->msg + EMO_HDR_LEN);
    rc = em_engine_send(ep->eng, &c->pop, peer, EMO_T_RTS, c->msg, off, c);
    if (rc) {
        emo_op_free(c);
        emo_cookie_del(ep, op);
        emo_op_free(op);
        return emo_errno(rc);
    }
    ep->st.rdv_sent++;
    op->watched = emo_watch(ep, peer); /* until its CTS: a dead receiver is noticed */
    return 0;
}

/* ---- receive ---------------------------------------------------------------- */

struct emo_recv_args {
    void *buf;
    size_t len;
    fi_addr_t src;
    void *context;
    uint64_t tag, ignore, flags;
    bool tagged;
};

/* a directed receive's source that is in no AV entry (never inserted,
 * or removed): refused, -FI_EINVAL (fi_av(3): a removed fi_addr_t may
 * not be used in data transfer calls), not posted to match nobody */
#define EMO_NO_PEER (EMO_ANY_PEER - 1)

static uint32_t peer_filter(struct emo_ep *ep, fi_addr_t src)
{
    if (src == FI_ADDR_UNSPEC || !(ep->info->caps & FI_DIRECTED_RECV))
        return EMO_ANY_PEER;
    uint32_t id = emo_av_peer(ep, src);
    return id != EMO_ID_NONE ? id : EMO_NO_PEER;
}

/* FI_PEEK (with FI_CLAIM or FI_DISCARD): look at the unexpected queue */
static ssize_t do_peek(struct emo_ep *ep, const struct emo_recv_args *r, emo_queue_t *unexp,
                       uint32_t filt)
{
    uint64_t fl = FI_RECV | (r->tagged ? FI_TAGGED : FI_MSG);
    emo_qent_t *q = emo_match_unexp(unexp, filt, r->tag, r->ignore, (r->flags & FI_DISCARD) != 0);
    if (!q) {
        if (ep->rx_cq)
            emo_cq_write_err(ep->rx_cq, r->context, fl, -FI_ENOMSG, 0, 0, r->tag, FI_ADDR_NOTAVAIL,
                             "no message matches the probe");
        return 0;
    }
    emo_unexp_t *u = container_of_emo(q, emo_unexp_t, q);
    if (u->flags & EMO_F_DATA)
        fl |= FI_REMOTE_CQ_DATA;
    if (ep->rx_cq)
        emo_cq_write(ep->rx_cq, r->context, fl, (size_t)u->len, NULL, u->data, u->q.tag,
                     emo_src(ep, (uint32_t)u->q.peer));
    if (r->flags & FI_DISCARD) {
        emo_unexp_release(ep, u); /* an RTS dropped so: its sender waits forever (MPI
                                         never discards) */
    } else if (r->flags & FI_CLAIM) {
        u->q.claimed = 1;
        ((struct fi_context *)r->context)->internal[0] = u;
    }
    return 0;
}

/* is receive filter @p filt a peer that failed?  (nothing more comes from it) */
static bool failed_peer(const struct emo_ep *ep, uint32_t filt)
{
    return filt < ep->npeers && filt != ep->self.id && ep->peer_failed[filt];
}

/* a receive posted for a failed peer ends at once, as an error entry */
static void fail_recv_now(struct emo_ep *ep, const struct emo_recv_args *r, uint32_t filt,
                          uint64_t tag, uint64_t extra_flags)
{
    if (ep->rx_cq)
        emo_cq_write_err(ep->rx_cq, r->context,
                         FI_RECV | (r->tagged ? FI_TAGGED : FI_MSG) | extra_flags, -FI_EIO, 0, 0,
                         tag, r->src, "receive from endpoint %u: the peer failed", (unsigned)filt);
    emo_cntr_inc(ep->rx_cntr, -FI_EIO);
}

/* FI_MULTI_RECV (untagged): a buffer for many messages (emo_rdv.c,
 * "multi-receive buffers"); what waits in the unexpected queue goes in
 * first, then it is posted until full */
static ssize_t do_multi_recv(struct emo_ep *ep, const struct emo_recv_args *r, uint32_t filt)
{
    if (r->tagged || (r->flags & (FI_PEEK | FI_CLAIM)))
        return -FI_EINVAL; /* multi-receive is an FI_MSG receive */
    if (failed_peer(ep, filt)) {
        fail_recv_now(ep, r, filt, 0, FI_MULTI_RECV);
        return 0;
    }
    emo_rx_t *m = calloc(1, sizeof *m);
    if (!m)
        return -FI_EAGAIN;
    *m = (emo_rx_t){
        .buf = r->buf, .len = r->len, .context = r->context, .flags = r->flags, .multi = true
    };
    m->q.peer = filt;
    emo_qent_t *q;
    while ((q = emo_match_unexp(&ep->unexp_msg, filt, 0, 0, true)) != NULL) {
        emo_unexp_t *u = container_of_emo(q, emo_unexp_t, q);
        bool freed = emo_multi_deliver(ep, m, (uint32_t)u->q.peer, u->type, u->flags, u->q.tag,
                                       u->data, u->len, u->s_cookie, u->payload);
        emo_unexp_release(ep, u);
        if (freed)
            return 0;
        if (m->released)
            return 0; /* full; its rendezvous receives hold it */
    }
    if (filt < ep->npeers && emo_ep_set_peer(ep, (uint32_t)filt) == 0)
        m->watched = emo_watch(ep, (uint32_t)filt);
    emo_queue_push(&ep->posted_msg, &m->q);
    return 0;
}

static ssize_t do_recv(struct emo_ep *ep, const struct emo_recv_args *r)
{
    if (!ep->enabled)
        return -FI_EOPBADSTATE;
    emo_queue_t *unexp = r->tagged ? &ep->unexp_tag : &ep->unexp_msg;
    uint32_t filt = peer_filter(ep, r->src);
    if (filt == EMO_NO_PEER)
        return -FI_EINVAL;
    uint64_t tag = r->tagged ? r->tag : 0, ignore = r->tagged ? r->ignore : 0;
    emo_rx_t rx = {
        .buf = r->buf, .len = r->len, .context = r->context, .flags = r->flags, .tagged = r->tagged
    };
    if (r->flags & FI_MULTI_RECV)
        return do_multi_recv(ep, r, filt);
    if (r->flags & FI_PEEK)
        return do_peek(ep, r, unexp, filt);
    emo_qent_t *q;
    if (r->flags & FI_CLAIM) {
        if (!r->context)
            return -FI_EINVAL;
        emo_unexp_t *u = ((struct fi_context *)r->context)->internal[0];
        if (!u || !u->q.claimed || !emo_queue_remove(unexp, &u->q))
            return -FI_EINVAL;
        q = &u->q;
        if (r->flags & FI_DISCARD) {
            emo_unexp_release(ep, u);
            if (ep->rx_cq)
                emo_cq_write(ep->rx_cq, r->context, FI_RECV | (r->tagged ? FI_TAGGED : FI_MSG), 0,
                             NULL, 0, tag, FI_ADDR_NOTAVAIL);
            return 0;
        }
    } else {
        q = emo_match_unexp(unexp, filt, tag, ignore, true);
    }
    if (q) {
        emo_unexp_t *u = container_of_emo(q, emo_unexp_t, q);
        emo_deliver(ep, &rx, (uint32_t)u->q.peer, u->type, u->flags, u->q.tag, u->data, u->len,
                    u->s_cookie, u->payload);
        emo_unexp_release(ep, u);
        return 0;
    }
    if (failed_peer(ep, filt)) {
        /* nothing will come from a failed peer: say so now, not never */
        fail_recv_now(ep, r, filt, tag, 0);
        return 0;
    }
    emo_rx_t *p = malloc(sizeof *p);
    if (!p)
        return -FI_EAGAIN;
    *p = rx;
    /* a receive for one peer waits for it: watch it, so that its death
     * fails the receive (src/proto/live.c); FI_ADDR_UNSPEC receives wait
     * for nobody in particular and probe nobody */
    if (filt < ep->npeers && emo_ep_set_peer(ep, (uint32_t)filt) == 0)
        p->watched = emo_watch(ep, (uint32_t)filt);
    p->q.peer = filt;
    p->q.tag = tag;
    p->q.ignore = ignore;
    p->q.claimed = 0;
    emo_queue_push(r->tagged ? &ep->posted_tag : &ep->posted_msg, &p->q);
    return 0;
}

/* A posted receive @p rx leaves the queue without a message (canceled,
 * its peer failed): @return FI_MULTI_RECV for a multi-receive buffer that
 * no rendezvous holds (the caller frees it after the completion); one that
 * is held is marked released, and the last rendezvous into it says
 * FI_MULTI_RECV (emo_rdv.c). */
static uint64_t unpost(emo_rx_t *rx)
{
    if (!rx->multi)
        return 0;
    rx->released = true;
    return rx->inflight ? 0 : FI_MULTI_RECV;
}

void emo_fail_posted_from(struct emo_ep *ep, uint32_t peer, int status)
{
    emo_queue_t *qs[2] = { &ep->posted_tag, &ep->posted_msg };
    for (int k = 0; k < 2; k++) {
        emo_qent_t *q = qs[k]->head;
        while (q) {
            emo_qent_t *next = q->next;
            if (q->peer == peer) {
                emo_rx_t *rx = container_of_emo(q, emo_rx_t, q);
                emo_queue_remove(qs[k], q);
                emo_unwatch(ep, peer, &rx->watched);
                uint64_t last = unpost(rx);
                const char *why = status == -FI_ECANCELED ? "its address was removed from the AV"
                                  : em_engine_fail_reason(ep->eng, peer)
                                      ? em_engine_fail_reason(ep->eng, peer)
                                      : "?";
                if (ep->rx_cq)
                    emo_cq_write_err(
                        ep->rx_cq, rx->context, FI_RECV | (rx->tagged ? FI_TAGGED : FI_MSG) | last,
                        status, 0, 0, rx->q.tag, emo_src(ep, peer),
                        "receive from endpoint %u: %s (%s)", peer, fi_strerror(-status), why);
                if (last || !rx->multi)
                    free(rx);
            }
            q = next;
        }
    }
}

ssize_t emo_cancel(struct emo_ep *ep, void *context)
{
    emo_queue_t *qs[2] = { &ep->posted_tag, &ep->posted_msg };
    for (int k = 0; k < 2; k++) {
        for (emo_qent_t *q = qs[k]->head; q; q = q->next) {
            emo_rx_t *rx = container_of_emo(q, emo_rx_t, q);
            if (rx->context != context)
                continue;
            emo_queue_remove(qs[k], q);
            emo_unwatch(ep, (uint32_t)rx->q.peer, &rx->watched);
            uint64_t last = unpost(rx);
            if (ep->rx_cq)
                emo_cq_write_err(ep->rx_cq, context,
                                 FI_RECV | (rx->tagged ? FI_TAGGED : FI_MSG) | last, -FI_ECANCELED,
                                 0, 0, rx->q.tag, FI_ADDR_NOTAVAIL, "receive canceled");
            if (last || !rx->multi)
                free(rx);
            return 0;
        }
    }
    return -FI_ENOENT; /* not a posted receive (sends cannot be canceled) */
}

void emo_data_fini(struct emo_ep *ep)
{
    emo_queue_t *posted[2] = { &ep->posted_tag, &ep->posted_msg };
    emo_queue_t *unexp[2] = { &ep->unexp_tag, &ep->unexp_msg };
    /* rendezvous receives let go of their multi-receive buffers first: a
     * released one goes with its last holder, a posted one below */
    for (uint32_t i = 0; i < ep->ops_cap; i++)
        if (ep->ops[i])
            emo_multi_forget(ep->ops[i]);
    for (int k = 0; k < 2; k++) {
        while (posted[k]->head) {
            emo_qent_t *q = posted[k]->head;
            emo_queue_remove(posted[k], q);
            free(container_of_emo(q, emo_rx_t, q));
        }
        while (unexp[k]->head) {
            emo_qent_t *q = unexp[k]->head;
            emo_queue_remove(unexp[k], q);
            emo_unexp_release(ep, container_of_emo(q, emo_unexp_t, q));
        }
    }
    for (uint32_t i = 0; i < ep->ops_cap; i++) {
        emo_op_t *op = ep->ops[i];
        /* a rendezvous receive's or a read's region is in the domain's
         * table, which outlives the engine: it goes with its op */
        if (op && op->reg.id && ep->dom)
            (void)em_regions_remove(&ep->dom->regions, op->reg.id, op->reg.key);
        emo_op_free(op);
        ep->ops[i] = NULL;
    }
    emo_op_cache_drain(ep);
}

/* ---- fi_ops_msg / fi_ops_tagged ---------------------------------------------- */

#define EP(fep) container_of_emo(fep, struct emo_ep, ep)

static ssize_t send_(struct fid_ep *fep, const void *buf, size_t len, fi_addr_t dest, void *ctx,
                     uint64_t tag, uint64_t data, uint64_t flags, bool tagged)
{
    struct emo_send_args s = { .buf = buf,
                               .len = len,
                               .dest = dest,
                               .context = ctx,
                               .tag = tag,
                               .data = data,
                               .flags = flags,
                               .tagged = tagged };
    struct emo_ep *ep = EP(fep);
    emo_lock(ep->dom);
    ssize_t rc = do_send(ep, &s);
    emo_unlock(ep->dom);
    return rc;
}

/* fi_inject, fi_injectdata, fi_tinject, fi_tinjectdata: no completion */
static ssize_t inject_(struct fid_ep *fep, const void *buf, size_t len, fi_addr_t dest,
                       uint64_t tag, uint64_t data, uint64_t flags, bool tagged)
{
    struct emo_send_args s = { .buf = buf,
                               .len = len,
                               .dest = dest,
                               .tag = tag,
                               .data = data,
                               .flags = FI_INJECT | flags,
                               .tagged = tagged,
                               .no_cqe = true };
    struct emo_ep *ep = EP(fep);
    emo_lock(ep->dom);
    ssize_t rc = do_send(ep, &s);
    emo_unlock(ep->dom);
    return rc;
}

static ssize_t recv_(struct fid_ep *fep, void *buf, size_t len, fi_addr_t src, void *ctx,
                     uint64_t tag, uint64_t ignore, uint64_t flags, bool tagged)
{
    struct emo_recv_args r = { .buf = buf,
                               .len = len,
                               .src = src,
                               .context = ctx,
                               .tag = tag,
                               .ignore = ignore,
                               .flags = flags,
                               .tagged = tagged };
    struct emo_ep *ep = EP(fep);
    emo_lock(ep->dom);
    ssize_t rc = do_recv(ep, &r);
    emo_unlock(ep->dom);
    return rc;
}

/* the iov forms: one entry at most (iov_limit 1), then as send_ / recv_ */
static ssize_t sendv_(struct fid_ep *fep, const struct iovec *iov, size_t count, fi_addr_t dest,
                      void *ctx, uint64_t tag, uint64_t data, uint64_t flags, bool tagged)
{
    if (count > EMO_IOV_LIMIT)
        return -FI_EINVAL;
    return send_(fep, count ? iov[0].iov_base : NULL, count ? iov[0].iov_len : 0, dest, ctx, tag,
                 data, flags, tagged);
}

static ssize_t recvv_(struct fid_ep *fep, const struct iovec *iov, size_t count, fi_addr_t src,
                      void *ctx, uint64_t tag, uint64_t ignore, uint64_t flags, bool tagged)
{
    if (count > EMO_IOV_LIMIT)
        return -FI_EINVAL;
    return recv_(fep, count ? iov[0].iov_base : NULL, count ? iov[0].iov_len : 0, src, ctx, tag,
                 ignore, flags, tagged);
}

static ssize_t m_recv(struct fid_ep *ep, void *buf, size_t len, void *desc, fi_addr_t src,
                      void *ctx)
{
    return recv_(ep, buf, len, src, ctx, 0, 0, EP(ep)->rx_op_flags, false);
}

static ssize_t m_recvv(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
                       fi_addr_t src, void *ctx)
{
    return recvv_(ep, iov, count, src, ctx, 0, 0, EP(ep)->rx_op_flags, false);
}

static ssize_t m_recvmsg(struct fid_ep *ep, const struct fi_msg *msg, uint64_t flags)
{
    return recvv_(ep, msg->msg_iov, msg->iov_count, msg->addr, msg->context, 0, 0, flags, false);
}

static ssize_t m_send(struct fid_ep *ep, const void *buf, size_t len, void *desc, fi_addr_t dest,
                      void *ctx)
{
    return send_(ep, buf, len, dest, ctx, 0, 0, EP(ep)->tx_op_flags, false);
}

static ssize_t m_sendv(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
                       fi_addr_t dest, void *ctx)
{
    return sendv_(ep, iov, count, dest, ctx, 0, 0, EP(ep)->tx_op_flags, false);
}

static ssize_t m_sendmsg(struct fid_ep *ep, const struct fi_msg *msg, uint64_t flags)
{
    return sendv_(ep, msg->msg_iov, msg->iov_count, msg->addr, msg->context, 0, msg->data, flags,
                  false);
}

static ssize_t m_inject(struct fid_ep *ep, const void *buf, size_t len, fi_addr_t dest)
{
    return inject_(ep, buf, len, dest, 0, 0, 0, false);
}

static ssize_t m_senddata(struct fid_ep *ep, const void *buf, size_t len, void *desc, uint64_t data,
                          fi_addr_t dest, void *ctx)
{
    return send_(ep, buf, len, dest, ctx, 0, data, EP(ep)->tx_op_flags | FI_REMOTE_CQ_DATA, false);
}

static ssize_t m_injectdata(struct fid_ep *ep, const void *buf, size_t len, uint64_t data,
                            fi_addr_t dest)
{
    return inject_(ep, buf, len, dest, 0, data, FI_REMOTE_CQ_DATA, false);
}

struct fi_ops_msg emo_msg_ops = { .size = sizeof(struct fi_ops_msg),
                                  .recv = m_recv,
                                  .recvv = m_recvv,
                                  .recvmsg = m_recvmsg,
                                  .send = m_send,
                                  .sendv = m_sendv,
                                  .sendmsg = m_sendmsg,
                                  .inject = m_inject,
                                  .senddata = m_senddata,
                                  .injectdata = m_injectdata };

static ssize_t t_recv(struct fid_ep *ep, void *buf, size_t len, void *desc, fi_addr_t src,
                      uint64_t tag, uint64_t ignore, void *ctx)
{
    return recv_(ep, buf, len, src, ctx, tag, ignore, EP(ep)->rx_op_flags, true);
}

static ssize_t t_recvv(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
                       fi_addr_t src, uint64_t tag, uint64_t ignore, void *ctx)
{
    return recvv_(ep, iov, count, src, ctx, tag, ignore, EP(ep)->rx_op_flags, true);
}

static ssize_t t_recvmsg(struct fid_ep *ep, const struct fi_msg_tagged *msg, uint64_t flags)
{
    return recvv_(ep, msg->msg_iov, msg->iov_count, msg->addr, msg->context, msg->tag, msg->ignore,
                  flags, true);
}

static ssize_t t_send(struct fid_ep *ep, const void *buf, size_t len, void *desc, fi_addr_t dest,
                      uint64_t tag, void *ctx)
{
    return send_(ep, buf, len, dest, ctx, tag, 0, EP(ep)->tx_op_flags, true);
}

static ssize_t t_sendv(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
                       fi_addr_t dest, uint64_t tag, void *ctx)
{
    return sendv_(ep, iov, count, dest, ctx, tag, 0, EP(ep)->tx_op_flags, true);
}

static ssize_t t_sendmsg(struct fid_ep *ep, const struct fi_msg_tagged *msg, uint64_t flags)
{
    return sendv_(ep, msg->msg_iov, msg->iov_count, msg->addr, msg->context, msg->tag, msg->data,
                  flags, true);
}

static ssize_t t_inject(struct fid_ep *ep, const void *buf, size_t len, fi_addr_t dest,
                        uint64_t tag)
{
    return inject_(ep, buf, len, dest, tag, 0, 0, true);
}

static ssize_t t_senddata(struct fid_ep *ep, const void *buf, size_t len, void *desc, uint64_t data,
                          fi_addr_t dest, uint64_t tag, void *ctx)
{
    return send_(ep, buf, len, dest, ctx, tag, data, EP(ep)->tx_op_flags | FI_REMOTE_CQ_DATA, true);
}

static ssize_t t_injectdata(struct fid_ep *ep, const void *buf, size_t len, uint64_t data,
                            fi_addr_t dest, uint64_t tag)
{
    return inject_(ep, buf, len, dest, tag, data, FI_REMOTE_CQ_DATA, true);
}

struct fi_ops_tagged emo_tagged_ops = { .size = sizeof(struct fi_ops_tagged),
                                        .recv = t_recv,
                                        .recvv = t_recvv,
                                        .recvmsg = t_recvmsg,
                                        .send = t_send,
                                        .sendv = t_sendv,
                                        .sendmsg = t_sendmsg,
                                        .inject = t_inject,
                                        .senddata = t_senddata,
                                        .injectdata = t_injectdata };
