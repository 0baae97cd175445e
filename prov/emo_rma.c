/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file emo_rma.c
 * FI_RMA: fi_write and fi_read (and their v, msg, inject and data forms)
 * over the engine's puts, and the memory registrations they name.
 *
 * Registration (mr_mode FI_MR_PROV_KEY; FI_RMA is offered only to
 * applications that accept it: emo_prov.c).  A registration with remote
 * access is a region in its domain's table, which the engines of all the
 * domain's endpoints share (em_engine_use_regions), usable from fi_mr_reg
 * on, with what the access flags allow (FI_REMOTE_WRITE: puts land in it;
 * FI_REMOTE_READ: we answer reads from it).  Its key is (region id << 48)
 * | a 48-bit random key drawn at registration, so a stale or guessed key
 * is refused before a byte moves, as a rendezvous CTS's is
 * (src/engine/region.h).  The target address is an offset into the
 * registration (no FI_MR_VIRT_ADDR): peers never learn our addresses.
 * Not FI_MR_ENDPOINT: fabtests' fi_getinfo_test caps4 holds a provider to
 * what an application that ORs a NULL-hints answer's caps into its hints
 * with FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY
 * gets, and FI_MR_ENDPOINT is not among those.
 *
 * Write: the puts alone (the engine checks region, key, bounds and
 * access at the target and refuses, counted, what fails); fi_writedata
 * adds a WDATA message behind them, which the target reports as an
 * FI_REMOTE_WRITE completion with the data.  The write completes when
 * every put is acknowledged, i.e. placed: delivery complete.
 *
 * Read up to the eager limit: the engine's get (em_engine_get, src/engine
 * rma.c): one request, answered by one message whose bytes the target
 * copies when the request arrives, so a write issued after the read
 * cannot change them (FI_ORDER_WAR up to max_order_war_size); the target's
 * engine checks key, bounds and read access, a refusal fails the read with
 * FI_EACCES.  Longer reads:
 * READ names the target's region (key, offset) and a region the
 * initiator registered over its own buffer for the answer; the target
 * checks key, bounds and FI_REMOTE_READ (em_engine_region_at), puts the
 * bytes there and sends RDONE behind them (the engine keeps the order),
 * or RDONE alone with the refusal's fi_errno.  The read completes at
 * RDONE; it fails with FI_EIO if the target fails first (it is watched as
 * a rendezvous receive's sender is).
 *
 * Order: the engine delivers each peer's frames in order and the target
 * places and answers them in that order, so a read sees earlier writes
 * (RAW), writes land in order (WAW), and messages keep their place among
 * both.  WAR only up to the eager limit (the engine's get, above): the
 * answer to a longer read is put from the target's memory when its frames
 * go out, so a later write that overtakes a slow answer (the target's
 * window to us full) is what the read returns.
 *
 * Peers: the puts of a write and a READ carry no address, so the target
 * must know the initiator: its AV, or a message from it first.  Open MPI
 * 5's btl/ofi inserts a peer only when it first targets it, so the first
 * one-sided operation to a peer that has not shown it knows us goes behind
 * a HELLO message with our address (emo_announce, emo_contact.c).
 *
 * Threading: FI_THREAD_DOMAIN, as the rest of the provider.
 */
#include "emo_rdv.h"

#include <stdlib.h>
#include <string.h>

static uint64_t rkey_make(const em_region_handle_t *h)
{
    return ((uint64_t)h->id << EMO_RKEY_ID_SHIFT) | h->key;
}

/* ---- memory registration ---------------------------------------------------- */

/* ---- answers in flight from a registration ----------------------------------- */

static void serve_link(struct emo_domain *d, emo_op_t *op, uint32_t id, uint64_t key)
{
    op->sv = (struct emo_serve){ .next = d->serving, .id = id, .key = key };
    if (d->serving)
        d->serving->sv.prev = op;
    d->serving = op;
}

void emo_serve_end(emo_op_t *op)
{
    struct emo_domain *d = op->ep->dom;
    if (op->sv.prev)
        op->sv.prev->sv.next = op->sv.next;
    else if (d->serving == op)
        d->serving = op->sv.next;
    if (op->sv.next)
        op->sv.next->sv.prev = op->sv.prev;
    op->sv = (struct emo_serve){ 0 };
}

static emo_op_t *serving_from(const struct emo_domain *d, const em_region_handle_t *reg)
{
    for (emo_op_t *op = d->serving; op; op = op->sv.next)
        if (op->sv.id == reg->id && op->sv.key == reg->key)
            return op;
    return NULL;
}

/* The answer to a peer's read is put straight from the registration's
 * memory, and the engine resends from it until each frame is
 * acknowledged; once fi_close returns, the application may free that
 * memory (MPI_Win_free does).  So the close waits for the answers still
 * in flight from it: their endpoints are driven until the reader
 * acknowledges (a round trip: the reader has its bytes already), at most
 * FI_ETHERMPI_LINGER_MS; a reader that has not acknowledged by then is
 * failed, which drops its frames, so nothing reads the memory again.  The
 * region has left the table already: no new read starts from it. */
static void mr_quiesce(struct emo_mr *m)
{
    uint64_t end = em_now_ns() + (uint64_t)emo_params.linger_ms * 1000000u;
    emo_op_t *op;
    while ((op = serving_from(m->dom, &m->reg)) != NULL) {
        if (em_now_ns() < end) {
            emo_ep_progress(op->ep);
            continue;
        }
        FI_WARN(&emo_prov, FI_LOG_MR,
                "fi_close of a registration: endpoint %u has not acknowledged the answer to its "
                "read within FI_ETHERMPI_LINGER_MS=%d ms; it is failed\n",
                op->peer, emo_params.linger_ms);
        (void)em_engine_fail_peer(op->ep->eng, op->peer,
                                  "it did not acknowledge a read's answer before the registration "
                                  "it came from was closed (FI_ETHERMPI_LINGER_MS)");
        if (serving_from(m->dom, &m->reg) == op) {
            /* not failed (only from inside progress, which a close is not) */
            FI_WARN(&emo_prov, FI_LOG_MR,
                    "fi_close of a registration: an answer is still in "
                    "flight from it\n");
            return;
        }
    }
}

static int mr_close(struct fid *fid)
{
    struct emo_mr *m = container_of_emo(fid, struct emo_mr, mr.fid);
    struct emo_domain *d = m->dom;
    emo_lock(d);
    if (m->reg.id) {
        em_regions_remove(&d->regions, m->reg.id, m->reg.key);
        mr_quiesce(m);
    }
    d->nmrs--;
    emo_unlock(d);
    free(m);
    return 0;
}

/* nothing to bind: a registration serves every endpoint of its domain (an
 * application that binds anyway, as under FI_MR_ENDPOINT, may) */
static int mr_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
    (void)fid;
    (void)flags;
    return bfid && bfid->fclass == FI_CLASS_EP ? 0 : -FI_EINVAL;
}

static int mr_control(struct fid *fid, int command, void *arg)
{
    (void)fid;
    (void)arg;
    return command == FI_ENABLE ? 0 : -FI_ENOSYS; /* usable from fi_mr_reg on */
}

static struct fi_ops mr_fi_ops = EMO_FI_OPS(mr_close, mr_bind, mr_control);

static int mr_reg_(struct fid *fid, const void *buf, size_t len, uint64_t access, uint64_t offset,
                   uint64_t requested_key, uint64_t flags, struct fid_mr **mr, void *context)
{
    (void)offset;
    (void)requested_key; /* FI_MR_PROV_KEY: the key is ours */
    (void)flags;
    struct emo_domain *d = container_of_emo(fid, struct emo_domain, dom.fid);
    struct emo_mr *m = calloc(1, sizeof *m);
    if (!m)
        return -FI_ENOMEM;
    emo_fid_init(&m->mr.fid, FI_CLASS_MR, context, &mr_fi_ops);
    m->dom = d;
    m->mr.mem_desc = NULL;
    unsigned acc = ((access & FI_REMOTE_WRITE) ? EM_REGION_WRITE : 0) |
                   ((access & FI_REMOTE_READ) ? EM_REGION_READ : 0);
    if (!d->rma) {
        m->mr.key = ++d->mr_key; /* no FI_RMA: nothing a peer could name */
    } else if (acc) {
        int rc = em_regions_add_ex(&d->regions, (void *)buf, len, acc | EM_REGION_KEY48, &m->reg);
        if (rc) {
            free(m);
            return emo_errno(rc);
        }
        if (m->reg.id >> (64 - EMO_RKEY_ID_SHIFT)) {
            /* the id does not fit the key: 65535 regions in the domain's
             * table already (registrations, and the regions of rendezvous
             * receives and reads in flight) */
            em_regions_remove(&d->regions, m->reg.id, m->reg.key);
            FI_WARN(&emo_prov, FI_LOG_MR, "fi_mr_reg: 65535 regions in use already\n");
            free(m);
            return -FI_ENOSPC;
        }
        m->mr.key = rkey_make(&m->reg);
    } else {
        m->mr.key = 0; /* local access only: nothing a peer may name */
    }
    d->nmrs++;
    *mr = &m->mr;
    return 0;
}

static int mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access, uint64_t offset,
                  uint64_t requested_key, uint64_t flags, struct fid_mr **mr, void *context)
{
    struct emo_domain *d = container_of_emo(fid, struct emo_domain, dom.fid);
    emo_lock(d);
    int rc = mr_reg_(fid, buf, len, access, offset, requested_key, flags, mr, context);
    emo_unlock(d);
    return rc;
}

static int mr_regv(struct fid *fid, const struct iovec *iov, size_t count, uint64_t access,
                   uint64_t offset, uint64_t requested_key, uint64_t flags, struct fid_mr **mr,
                   void *context)
{
    if (count > 1)
        return -FI_EINVAL; /* mr_iov_limit 1 */
    return mr_reg(fid, count ? iov[0].iov_base : NULL, count ? iov[0].iov_len : 0, access, offset,
                  requested_key, flags, mr, context);
}

static int mr_regattr(struct fid *fid, const struct fi_mr_attr *attr, uint64_t flags,
                      struct fid_mr **mr)
{
    if (!attr || attr->iov_count > 1)
        return -FI_EINVAL;
    return mr_reg(fid, attr->iov_count ? attr->mr_iov[0].iov_base : NULL,
                  attr->iov_count ? attr->mr_iov[0].iov_len : 0, attr->access, attr->offset,
                  attr->requested_key, flags, mr, attr->context);
}

struct fi_ops_mr emo_mr_ops = {
    .size = sizeof(struct fi_ops_mr), .reg = mr_reg, .regv = mr_regv, .regattr = mr_regattr
};

/* ---- the target's side ------------------------------------------------------ */

void emo_on_read(struct emo_ep *ep, uint32_t peer, const emo_hdr_t *h)
{
    uint32_t id;
    uint64_t key;
    emo_rkey_split(h->data, &id, &key);
    emo_hdr_t done = { .type = EMO_T_RDONE, .r_cookie = h->s_cookie };
    uint8_t *src = NULL;
    emo_op_t *op = NULL;
    if (!(ep->info->caps & FI_REMOTE_READ) || h->len > SIZE_MAX ||
        em_engine_region_at(ep->eng, id, key, h->tag, (size_t)h->len, EM_REGION_READ, &src)) {
        ep->st.reads_refused++;
        done.data = FI_EACCES;
    } else if (ep->reads_active >= EMO_READS_MAX) {
        ep->st.reads_busy++;
        done.data = FI_EAGAIN;
    } else if (h->len) {
        if (!(op = emo_op_new(ep, EMO_OP_RSERVE, 0))) {
            done.data = FI_ENOMEM;
        } else {
            op->peer = peer;
            ep->reads_active++;
            serve_link(ep->dom, op, id, key); /* until its puts are acknowledged */
            em_region_handle_t rh = { .id = h->region, .key = h->key, .len = h->len };
            if (emo_put_chunks(ep, op, peer, &rh, 0, src, (size_t)h->len))
                done.data = FI_EIO; /* part may have gone: the read fails */
        }
    }
    if (!done.data) {
        ep->st.reads_served++;
        done.len = h->len;
    }
    (void)emo_send_ctrl(ep, peer, &done, NULL); /* lost with the peer: it fails the read */
    if (op)
        emo_put_done(op, 0); /* drop the hold */
}

void emo_on_rdone(struct emo_ep *ep, uint32_t peer, const emo_hdr_t *h)
{
    emo_op_t *op = emo_cookie_get(ep, h->r_cookie, peer, EMO_OP_READ);
    if (!op)
        return;
    if (h->len != (h->data ? 0 : op->len)) {
        ep->st.bad_len++;
        return;
    }
    emo_cookie_del(ep, op);
    emo_unwatch(ep, peer, &op->watched);
    if (op->reg.id)
        em_engine_deregister(ep->eng, &op->reg);
    emo_complete_tx(op, h->data ? -(int)h->data : 0);
    emo_op_free(op);
}

/* a remote write's data for our CQ (from a peer, or from ourselves) */
static void remote_write_data(struct emo_ep *ep, uint32_t peer, uint64_t len, uint64_t data)
{
    if (ep->rx_cq && ep->phase != EMO_EP_CLOSING)
        emo_cq_write(ep->rx_cq, NULL, FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA, (size_t)len,
                     NULL, data, 0, emo_src(ep, peer));
}

void emo_on_wdata(struct emo_ep *ep, uint32_t peer, const emo_hdr_t *h)
{
    /* an endpoint without FI_RMA never asked for such entries (an MPI that
     * maps every entry's context to a request would crash on its NULL one);
     * and the data says the write is in place: only if its puts could have
     * been (the region it names takes them: the engine refused them
     * otherwise, and the initiator's write fails with FI_EACCES) */
    uint32_t id;
    uint64_t key;
    emo_rkey_split(h->key, &id, &key);
    uint8_t *at;
    if (!(ep->info->caps & FI_REMOTE_WRITE) || h->len > SIZE_MAX ||
        (h->len &&
         em_engine_region_at(ep->eng, id, key, h->tag, (size_t)h->len, EM_REGION_WRITE, &at))) {
        ep->st.wdata_refused++;
        return;
    }
    remote_write_data(ep, peer, h->len, h->data);
}

/* ---- the initiator's side ---------------------------------------------------- */

struct emo_rma_args {
    void *buf; /**< write: the source; read: where the bytes go */
    size_t len;
    fi_addr_t peer;
    uint64_t addr, key; /**< offset in the target's registration, its key */
    void *context;
    uint64_t data, flags; /**< FI_REMOTE_CQ_DATA, FI_INJECT, FI_COMPLETION */
    bool no_cqe;          /**< fi_inject_write*: never a completion */
};

/* common checks; @return 0 with *@p peer set, or -FI_* */
static int rma_start(struct emo_ep *ep, const struct emo_rma_args *a, uint64_t cap, uint32_t *peer)
{
    if (!ep->enabled)
        return -FI_EOPBADSTATE;
    if (!(ep->info->caps & FI_RMA) || !(ep->info->caps & cap))
        return -FI_EOPNOTSUPP;
    if (a->len && !a->buf)
        return -FI_EINVAL;
    int rc = emo_dest_peer(ep, a->peer, peer);
    /* our address first, to a peer that may not know us (emo_contact.c) */
    return rc ? rc : emo_announce(ep, *peer);
}

static emo_op_t *rma_op(struct emo_ep *ep, int kind, const struct emo_rma_args *a, uint32_t peer,
                        size_t msg_len)
{
    emo_op_t *op = emo_op_new(ep, kind, msg_len);
    if (!op)
        return NULL;
    op->peer = peer;
    op->context = a->no_cqe ? NULL : a->context;
    op->cq_flags = FI_RMA | (kind == EMO_OP_READ ? FI_READ : FI_WRITE);
    op->want_cqe = !a->no_cqe && (!ep->tx_selective || (a->flags & FI_COMPLETION));
    op->len = a->len;
    op->buf = a->buf;
    return op;
}

/* to ourselves: the checks a peer would make, then a copy */
static ssize_t rma_self(struct emo_ep *ep, emo_op_t *op, const struct emo_rma_args *a)
{
    uint32_t id;
    uint64_t key;
    emo_rkey_split(a->key, &id, &key);
    bool read = op->kind == EMO_OP_READ;
    uint8_t *at;
    int status = 0;
    if (em_engine_region_at(ep->eng, id, key, a->addr, a->len,
                            read ? EM_REGION_READ : EM_REGION_WRITE, &at))
        status = -FI_EACCES;
    else if (a->len)
        memmove(read ? a->buf : at, read ? at : a->buf, a->len);
    if (!status && !read && (a->flags & FI_REMOTE_CQ_DATA))
        remote_write_data(ep, ep->self.id, a->len, a->data);
    emo_complete_tx(op, status);
    emo_op_free(op);
    return 0;
}

static ssize_t do_write(struct emo_ep *ep, const struct emo_rma_args *a)
{
    uint32_t peer;
    bool copy = a->no_cqe || (a->flags & FI_INJECT);
    if (copy && a->len > ep->inject_max)
        return -FI_EMSGSIZE;
    int rc = rma_start(ep, a, FI_WRITE, &peer);
    if (rc)
        return rc;
    /* an inject's bytes are the caller's again at return: copied (under
     * the send budget, as an inject send) */
    if (!emo_tx_room(ep, copy ? a->len : 0))
        return -FI_EAGAIN;
    emo_op_t *op = rma_op(ep, EMO_OP_WRITE, a, peer, copy ? a->len : 0);
    if (!op)
        return -FI_EAGAIN;
    ep->st.rma_writes++;
    if (peer == ep->self.id)
        return rma_self(ep, op, a);
    uint32_t id;
    uint64_t key;
    emo_rkey_split(a->key, &id, &key);
    em_region_handle_t rh = { .id = id, .key = key, .len = a->len };
    /* from the caller's buffer, as an inject send (prov/emo_data.c): the
     * frames the window allows leave before our copy is made; the puts
     * queued are then moved to the copy, for later frames and resends */
    rc = emo_put_chunks(ep, op, peer, &rh, a->addr, a->buf, a->len);
    if (rc && op->puts_left == 1) {
        emo_op_free(op); /* nothing went: the call fails, no completion */
        return rc;
    }
    if (copy && a->len) { /* no put completes before we return: nothing is received */
        memcpy(op->msg, a->buf, a->len);
        emo_put_chunks_rebase(op, op->msg);
    }
    if (!rc && (a->flags & FI_REMOTE_CQ_DATA)) {
        emo_hdr_t h = { .type = EMO_T_WDATA,
                        .flags = EMO_F_DATA,
                        .len = a->len,
                        .data = a->data,
                        .tag = a->addr,
                        .key = a->key };
        rc = emo_send_ctrl(ep, peer, &h, op);
        if (rc)
            op->status = rc;
    }
    emo_put_done(op, 0); /* drop the hold: completes when the puts are acknowledged */
    return 0;
}

void emo_answered(emo_op_t *op, int status)
{
    emo_unwatch(op->ep, op->peer, &op->watched);
    emo_complete_tx(op, status);
    emo_op_free(op);
}

/* A read up to the eager limit is the engine's get (em_engine_get): the
 * target copies the bytes into its answer when the request arrives, in
 * the order of what the initiator sent, so a write issued after the read
 * cannot change what it returns (FI_ORDER_WAR up to max_order_war_size,
 * emo_prov.c).  The answer is one message, which the initiator's engine
 * accepts up to the eager limit (its max_msg). */
static ssize_t read_by_get(struct emo_ep *ep, emo_op_t *op, const struct emo_rma_args *a,
                           uint32_t peer)
{
    uint32_t id;
    uint64_t key;
    emo_rkey_split(a->key, &id, &key);
    em_region_handle_t rh = { .id = id, .key = key };
    op->kind = EMO_OP_GET;
    int rc = em_engine_get(ep->eng, &op->pop, peer, &rh, a->addr, a->buf, a->len, op);
    if (rc == -EM_EAGAIN) { /* the engine's requests are all out: answers may be waiting */
        emo_ep_progress(ep);
        rc = em_engine_get(ep->eng, &op->pop, peer, &rh, a->addr, a->buf, a->len, op);
    }
    if (rc) {
        emo_op_free(op);
        return emo_errno(rc);
    }
    op->watched = emo_watch(ep, peer); /* until the answer: a dead target is noticed */
    return 0;
}

static ssize_t do_read(struct emo_ep *ep, const struct emo_rma_args *a)
{
    uint32_t peer;
    int rc = rma_start(ep, a, FI_READ, &peer);
    if (rc)
        return rc;
    emo_op_t *op = rma_op(ep, EMO_OP_READ, a, peer, 0);
    if (!op)
        return -FI_EAGAIN;
    ep->st.rma_reads++;
    if (peer == ep->self.id)
        return rma_self(ep, op, a);
    if (a->len && a->len <= ep->eager_max)
        return read_by_get(ep, op, a, peer);
    /* a longer one: the target puts the answer into a region over the
     * caller's buffer */
    if (a->len && (rc = emo_errno(em_engine_register(ep->eng, a->buf, a->len, &op->reg))) != 0) {
        emo_op_free(op);
        return rc;
    }
    if ((rc = emo_cookie_add(ep, op)) == 0) {
        emo_hdr_t h = { .type = EMO_T_READ,
                        .len = a->len,
                        .s_cookie = op->cookie,
                        .region = op->reg.id,
                        .key = op->reg.key,
                        .tag = a->addr,
                        .data = a->key };
        if ((rc = emo_send_ctrl(ep, peer, &h, op)) != 0)
            emo_cookie_del(ep, op);
    }
    if (rc) {
        if (op->reg.id)
            em_engine_deregister(ep->eng, &op->reg);
        emo_op_free(op);
        return rc;
    }
    op->watched = emo_watch(ep, peer); /* until its RDONE: a dead target is noticed */
    return 0;
}

/* ---- fi_ops_rma -------------------------------------------------------------- */

#define EP(f) container_of_emo(f, struct emo_ep, ep)

static ssize_t rma_iov(struct fid_ep *ep, const struct iovec *iov, size_t count, fi_addr_t peer,
                       uint64_t addr, uint64_t key, void *ctx, uint64_t data, uint64_t flags,
                       bool read)
{
    if (count > EMO_IOV_LIMIT || (count && !iov))
        return -FI_EINVAL;
    struct emo_rma_args a = { .buf = count ? iov[0].iov_base : NULL,
                              .len = count ? iov[0].iov_len : 0,
                              .peer = peer,
                              .addr = addr,
                              .key = key,
                              .context = ctx,
                              .data = data,
                              .flags = flags };
    struct emo_ep *e = EP(ep);
    emo_lock(e->dom);
    ssize_t rc = read ? do_read(e, &a) : do_write(e, &a);
    emo_unlock(e->dom);
    return rc;
}

static ssize_t rma_msg(struct fid_ep *ep, const struct fi_msg_rma *msg, uint64_t flags, bool read)
{
    if (!msg || msg->rma_iov_count > 1 || (msg->rma_iov_count && !msg->rma_iov))
        return -FI_EINVAL;
    uint64_t addr = msg->rma_iov_count ? msg->rma_iov[0].addr : 0;
    uint64_t key = msg->rma_iov_count ? msg->rma_iov[0].key : 0;
    return rma_iov(ep, msg->msg_iov, msg->iov_count, msg->addr, addr, key, msg->context, msg->data,
                   flags, read);
}

static ssize_t r_read(struct fid_ep *ep, void *buf, size_t len, void *desc, fi_addr_t src,
                      uint64_t addr, uint64_t key, void *ctx)
{
    struct iovec v = { buf, len };
    return rma_iov(ep, &v, 1, src, addr, key, ctx, 0, EP(ep)->tx_op_flags, true);
}

static ssize_t r_readv(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
                       fi_addr_t src, uint64_t addr, uint64_t key, void *ctx)
{
    return rma_iov(ep, iov, count, src, addr, key, ctx, 0, EP(ep)->tx_op_flags, true);
}

static ssize_t r_readmsg(struct fid_ep *ep, const struct fi_msg_rma *msg, uint64_t flags)
{
    return rma_msg(ep, msg, flags, true);
}

static ssize_t r_write(struct fid_ep *ep, const void *buf, size_t len, void *desc, fi_addr_t dest,
                       uint64_t addr, uint64_t key, void *ctx)
{
    struct iovec v = { (void *)buf, len };
    return rma_iov(ep, &v, 1, dest, addr, key, ctx, 0, EP(ep)->tx_op_flags, false);
}

static ssize_t r_writev(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
                        fi_addr_t dest, uint64_t addr, uint64_t key, void *ctx)
{
    return rma_iov(ep, iov, count, dest, addr, key, ctx, 0, EP(ep)->tx_op_flags, false);
}

static ssize_t r_writemsg(struct fid_ep *ep, const struct fi_msg_rma *msg, uint64_t flags)
{
    return rma_msg(ep, msg, flags, false);
}

static ssize_t r_writedata(struct fid_ep *ep, const void *buf, size_t len, void *desc,
                           uint64_t data, fi_addr_t dest, uint64_t addr, uint64_t key, void *ctx)
{
    struct iovec v = { (void *)buf, len };
    return rma_iov(ep, &v, 1, dest, addr, key, ctx, data, EP(ep)->tx_op_flags | FI_REMOTE_CQ_DATA,
                   false);
}

static ssize_t inject_write(struct fid_ep *ep, const void *buf, size_t len, uint64_t data,
                            fi_addr_t dest, uint64_t addr, uint64_t key, uint64_t flags)
{
    struct emo_rma_args a = { .buf = (void *)buf,
                              .len = len,
                              .peer = dest,
                              .addr = addr,
                              .key = key,
                              .data = data,
                              .flags = flags | FI_INJECT,
                              .no_cqe = true };
    struct emo_ep *e = EP(ep);
    emo_lock(e->dom);
    ssize_t rc = do_write(e, &a);
    emo_unlock(e->dom);
    return rc;
}

static ssize_t r_inject(struct fid_ep *ep, const void *buf, size_t len, fi_addr_t dest,
                        uint64_t addr, uint64_t key)
{
    return inject_write(ep, buf, len, 0, dest, addr, key, 0);
}

static ssize_t r_injectdata(struct fid_ep *ep, const void *buf, size_t len, uint64_t data,
                            fi_addr_t dest, uint64_t addr, uint64_t key)
{
    return inject_write(ep, buf, len, data, dest, addr, key, FI_REMOTE_CQ_DATA);
}

struct fi_ops_rma emo_rma_ops = { .size = sizeof(struct fi_ops_rma),
                                  .read = r_read,
                                  .readv = r_readv,
                                  .readmsg = r_readmsg,
                                  .write = r_write,
                                  .writev = r_writev,
                                  .writemsg = r_writemsg,
                                  .inject = r_inject,
                                  .writedata = r_writedata,
                                  .injectdata = r_injectdata };
