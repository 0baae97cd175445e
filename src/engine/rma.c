/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file rma.c
 * RMA reads and remote atomics as request/answer messages on the engine's
 * tag EM_ENGINE_TAG_RMA (engine.h, wire format in atomic.h).
 *
 * Initiator: a request takes one of EM_ENGINE_RMA_BUDGET slots, which holds
 * the encoded request (the protocol sends from it and may resend it) and
 * where the answer goes.  The request is a message of the protocol: it is
 * delivered exactly once, in order, so the target applies an atomic exactly
 * once; the answer is a message too.  The slot completes when both the
 * request's send completed (acknowledged) and the answer came, or when
 * either fails: the send's error, the peer's failure, the engine's end.
 *
 * Target: the request is decoded once (every length checked, refusals
 * counted), the region checked with em_engine_region_at() for the access
 * the op needs, plus natural alignment; then applied (atomic.c) or copied,
 * and answered.  The answer owns a copy of its bytes (the region may go
 * while the answer is resent).  An answer whose bytes find no memory still
 * goes, as a status alone (-EM_ENOMEM at the initiator).  Only when the
 * table of answers in flight cannot grow (out of memory, or RMA_RSP_MAX
 * answers unacknowledged at once) does a request go unanswered, counted in
 * rma_no_mem; its initiator's request then completes when this peer fails
 * or its engine ends.
 *
 * Our own operations are told from the owner's by their completion
 * context: a pointer into `marks`, an address range that is never read
 * (slot i: marks + i; answer j: marks + budget + j), so that telling them
 * apart costs two comparisons per completion.
 */
#include "engine/engine_internal.h"

#include <stdlib.h>
#include <string.h>

#define RMA_REQ_MAX (EM_RMA_REQ_LEN + 2u * EM_ATOMIC_COUNT_MAX * 8u)
/** Answers in flight (not yet acknowledged) at a target at a time. */
#define RMA_RSP_MAX 65536u

enum { S_FREE = 0, S_BUSY = 1, S_SENT = 2, S_ANSWERED = 4 };

struct rma_slot {
    uint16_t gen;
    uint32_t peer;
    uint8_t state;
    uint8_t kind; /* EM_RMA_GET_REQ or EM_RMA_ATOMIC_REQ */
    uint8_t type;
    uint8_t fetch;
    uint16_t count;
    int status; /* the answer's (0 or negative) */
    void *ctx;
    void *dst; /* get: the buffer; atomic: the result (or NULL) */
    size_t len;
    uint32_t next_free; /* index + 1, 0 = none */
    uint8_t req[RMA_REQ_MAX];
};

struct rma_rsp {
    em_proto_op_t op;
    uint8_t buf[]; /* header + data */
};

struct em_rma {
    char *marks; /* EM_ENGINE_RMA_BUDGET + RMA_RSP_MAX addresses, never read */
    struct rma_slot *slot;
    uint32_t free_head;
    struct rma_rsp **rsp; /* answers in flight, by index */
    uint32_t rsp_cap;
    uint32_t *rsp_free; /* stack of free indices */
    uint32_t rsp_nfree;
};

static struct em_rma *rma_get(em_engine_t *e)
{
    if (e->rma)
        return e->rma;
    struct em_rma *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->marks = malloc(EM_ENGINE_RMA_BUDGET + RMA_RSP_MAX);
    r->slot = calloc(EM_ENGINE_RMA_BUDGET, sizeof *r->slot);
    if (!r->marks || !r->slot) {
        free(r->marks);
        free(r->slot);
        free(r);
        return NULL;
    }
    for (uint32_t i = 0; i < EM_ENGINE_RMA_BUDGET; i++)
        r->slot[i].next_free = i + 1 < EM_ENGINE_RMA_BUDGET ? i + 2 : 0;
    r->free_head = 1;
    e->rma = r;
    return r;
}

static uint32_t slot_id(const struct em_rma *r, const struct rma_slot *s)
{
    uint32_t idx = (uint32_t)(s - r->slot);
    return ((uint32_t)s->gen << 16) | idx;
}

static void slot_free(struct em_rma *r, struct rma_slot *s)
{
    s->state = S_FREE;
    s->gen++;
    s->next_free = r->free_head;
    r->free_head = (uint32_t)(s - r->slot) + 1;
}

/** Complete the owner's operation and free the slot. */
static void slot_done(em_engine_t *e, struct rma_slot *s, int status)
{
    void *ctx = s->ctx;
    slot_free(e->rma, s);
    e->events++;
    e->ops.complete(e->uctx, ctx, status);
}

static int start(em_engine_t *e, uint32_t peer, struct rma_slot **out)
{
    int gate = em_contact_gate(e, peer); /* first contact: handshake done? */
    if (gate != 0)
        return gate;
    struct em_rma *r = rma_get(e);
    if (!r)
        return -EM_ENOMEM;
    if (!r->free_head)
        return -EM_EAGAIN;
    if (peer >= e->npeers)
        return -EM_EINVAL;
    struct rma_slot *s = &r->slot[r->free_head - 1];
    r->free_head = s->next_free;
    s->state = S_BUSY;
    s->peer = peer;
    s->status = 0;
    *out = s;
    return 0;
}

static int launch(em_engine_t *e, em_proto_op_t *op, struct rma_slot *s, size_t req_len)
{
    struct em_rma *r = e->rma;
    void *mark = r->marks + (s - r->slot);
    int rc = em_proto_send(e->proto, op, s->peer, EM_ENGINE_TAG_RMA, s->req, req_len, mark,
                           em_now_ns());
    if (rc != 0) {
        slot_free(r, s);
        return rc;
    }
    em_engine_flush_tx(e);
    return 0;
}

size_t em_engine_get_max(const em_engine_t *e)
{
    /* the answer is a message we receive: our protocol's limit bounds it */
    size_t m = e->rx_msg_max - EM_RMA_RSP_LEN;
    return m < EM_ENGINE_GET_MAX ? m : EM_ENGINE_GET_MAX;
}

int em_engine_get(em_engine_t *e, em_proto_op_t *op, uint32_t peer,
                  const em_region_handle_t *remote, uint64_t offset, void *buf, size_t len,
                  void *ctx)
{
    if (len > em_engine_get_max(e) || (len && !buf) || !remote)
        return -EM_EINVAL;
    struct rma_slot *s;
    int rc = start(e, peer, &s);
    if (rc)
        return rc;
    s->kind = EM_RMA_GET_REQ;
    s->ctx = ctx;
    s->dst = buf;
    s->len = len;
    size_t n = em_rma_encode_req(s->req, slot_id(e->rma, s), remote->id, remote->key, offset, NULL,
                                 false, (uint32_t)len);
    return launch(e, op, s, n);
}

int em_engine_atomic(em_engine_t *e, em_proto_op_t *op, uint32_t peer,
                     const em_region_handle_t *remote, uint64_t offset, const em_atomic_desc_t *d,
                     void *result, void *ctx)
{
    size_t n = d ? em_rma_atomic_req_len(d) : 0;
    if (!n || !remote || (d->op != EM_AOP_READ && !d->operand) ||
        (em_atomic_has_compare(d->op) && !d->compare) || (d->op == EM_AOP_READ && !result))
        return -EM_EINVAL;
    struct rma_slot *s;
    int rc = start(e, peer, &s);
    if (rc)
        return rc;
    s->kind = EM_RMA_ATOMIC_REQ;
    s->ctx = ctx;
    s->dst = result;
    s->type = d->type;
    s->count = d->count;
    s->fetch = result != NULL;
    s->len = result ? d->count * em_atomic_type_size(d->type) : 0;
    em_rma_encode_req(s->req, slot_id(e->rma, s), remote->id, remote->key, offset, d,
                      result != NULL, 0);
    return launch(e, op, s, n);
}

/* ---- target ---- */

/** Send an answer: header + @p data (@p dlen), copied. */
static void answer(em_engine_t *e, uint32_t peer, uint8_t kind, uint32_t req_id, int status,
                   const void *data, size_t dlen, size_t esize)
{
    struct em_rma *r = rma_get(e);
    if (!r) {
        e->st.rma_no_mem++;
        return; /* the initiator learns when the peer fails or its engine ends */
    }
    if (!r->rsp_nfree) {
        uint32_t nc = r->rsp_cap ? r->rsp_cap * 2 : 64;
        if (nc > RMA_RSP_MAX)
            nc = RMA_RSP_MAX;
        struct rma_rsp **nr = nc > r->rsp_cap ? realloc(r->rsp, nc * sizeof *nr) : NULL;
        uint32_t *nf = nr ? realloc(r->rsp_free, nc * sizeof *nf) : NULL;
        if (nr)
            r->rsp = nr;
        if (!nf) {
            e->st.rma_no_mem++;
            return;
        }
        r->rsp_free = nf;
        for (uint32_t i = r->rsp_cap; i < nc; i++) {
            r->rsp[i] = NULL;
            r->rsp_free[r->rsp_nfree++] = nc - 1 - (i - r->rsp_cap);
        }
        r->rsp_cap = nc;
    }
    struct rma_rsp *a = malloc(sizeof *a + EM_RMA_RSP_LEN + (status ? 0 : dlen));
    if (!a && status == 0) {
        e->st.rma_no_mem++;
        status = -EM_ENOMEM;
        a = malloc(sizeof *a + EM_RMA_RSP_LEN);
    }
    if (!a) {
        e->st.rma_no_mem++;
        return;
    }
    size_t len = EM_RMA_RSP_LEN;
    em_rma_put_hdr(a->buf, kind, (uint8_t)-status, req_id);
    if (status == 0 && dlen) {
        if (esize)
            em_rma_elems_to_be(a->buf + len, data, esize, (unsigned)(dlen / esize));
        else
            memcpy(a->buf + len, data, dlen);
        len += dlen;
    }
    uint32_t j = r->rsp_free[--r->rsp_nfree];
    r->rsp[j] = a;
    void *mark = r->marks + EM_ENGINE_RMA_BUDGET + j;
    int rc = em_proto_send(e->proto, &a->op, peer, EM_ENGINE_TAG_RMA, a->buf, len, mark,
                           em_now_ns());
    if (rc != 0) {
        /* the peer failed: nobody waits for it (every answer fits a message:
         * serve_get refuses longer gets) */
        r->rsp[j] = NULL;
        r->rsp_free[r->rsp_nfree++] = j;
        free(a);
    }
}

static void serve_get(em_engine_t *e, uint32_t peer, const em_rma_msg_t *m)
{
    uint8_t *at;
    /* A get longer than one answer carries (our own em_engine_get_max(),
     * which is the initiator's too: the front ends set the same message
     * limit on every rank) is refused before anything is copied.  Before
     * this check such a request inside a large region cost a copy of up to
     * the region's length into the answer, which em_proto_send() then
     * refused as over the message limit: freed unsent, the request
     * unanswered, and counted as served. */
    if (m->get_len > em_engine_get_max(e) ||
        em_engine_region_at(e, m->region, m->key, m->offset, m->get_len, EM_REGION_READ, &at)) {
        e->st.rma_refused++;
        answer(e, peer, EM_RMA_GET_RSP, m->req_id, -EM_EACCES, NULL, 0, 0);
        return;
    }
    e->st.rma_gets_served++;
    answer(e, peer, EM_RMA_GET_RSP, m->req_id, 0, at, m->get_len, 0);
}

static void serve_atomic(em_engine_t *e, uint32_t peer, const em_rma_msg_t *m)
{
    size_t es = em_atomic_type_size(m->type), n = (size_t)m->count * es;
    bool fetch = m->flags & EM_RMA_F_FETCH;
    unsigned access = (em_atomic_writes(m->op) ? EM_REGION_WRITE : 0) |
                      (fetch || m->op == EM_AOP_READ ? EM_REGION_READ : 0);
    uint8_t *at;
    if (em_engine_region_at(e, m->region, m->key, m->offset, n, access, &at) ||
        ((uintptr_t)at & (es - 1))) {
        e->st.rma_refused++;
        answer(e, peer, EM_RMA_ATOMIC_RSP, m->req_id, -EM_EACCES, NULL, 0, 0);
        return;
    }
    /* operands to host order, aligned (the frame's are neither) */
    uint64_t o[EM_ATOMIC_COUNT_MAX], c[EM_ATOMIC_COUNT_MAX], old[EM_ATOMIC_COUNT_MAX];
    em_rma_elems_from_be(o, m->operand, es, m->count);
    if (m->compare)
        em_rma_elems_from_be(c, m->compare, es, m->count);
    (void)em_atomic_apply(m->op, m->type, at, o, m->compare ? c : NULL, old, m->count);
    e->st.rma_atomics_applied++;
    answer(e, peer, EM_RMA_ATOMIC_RSP, m->req_id, 0, old, fetch ? n : 0, es);
}

/* ---- initiator: answers ---- */

static void take_answer(em_engine_t *e, uint32_t peer, const em_rma_msg_t *m)
{
    struct em_rma *r = e->rma;
    uint32_t idx = m->req_id & 0xFFFFu;
    struct rma_slot *s = r && idx < EM_ENGINE_RMA_BUDGET ? &r->slot[idx] : NULL;
    uint8_t want = m->kind == EM_RMA_GET_RSP ? EM_RMA_GET_REQ : EM_RMA_ATOMIC_REQ;
    if (!s || !(s->state & S_BUSY) || (s->state & S_ANSWERED) || s->peer != peer ||
        s->gen != (uint16_t)(m->req_id >> 16) || s->kind != want) {
        e->st.rma_stale_rsp++;
        return;
    }
    /* a status we do not know is one we did not understand */
    int status = m->op <= EM_EACCES ? -(int)m->op : -EM_EINVAL;
    if (status == 0 && m->data_len != s->len) {
        e->st.rma_bad_msg++;
        status = -EM_EINVAL;
    } else if (status == 0 && s->len) {
        if (s->kind == EM_RMA_GET_REQ)
            memcpy(s->dst, m->data, s->len);
        else
            em_rma_elems_from_be(s->dst, m->data, em_atomic_type_size(s->type), s->count);
    }
    s->status = status;
    s->state |= S_ANSWERED;
    if (s->state & S_SENT)
        slot_done(e, s, status);
}

void em_rma_recv(em_engine_t *e, uint32_t peer, const void *data, size_t len)
{
    em_rma_msg_t m;
    em_rma_dec_t why = em_rma_decode(data, len, &m);
    if (why != EM_RMA_DEC_OK) {
        e->st.rma_bad_msg++;
        /* a request whose header we could read is answered, so that its
         * initiator does not wait forever */
        if (why != EM_RMA_DEC_SHORT && why != EM_RMA_DEC_MAGIC &&
            (m.kind == EM_RMA_GET_REQ || m.kind == EM_RMA_ATOMIC_REQ))
            answer(e, peer, m.kind + 1, m.req_id, -EM_EINVAL, NULL, 0, 0);
        return;
    }
    switch (m.kind) {
    case EM_RMA_GET_REQ: serve_get(e, peer, &m); break;
    case EM_RMA_ATOMIC_REQ: serve_atomic(e, peer, &m); break;
    default: take_answer(e, peer, &m); break;
    }
}

bool em_rma_complete(em_engine_t *e, void *ctx, int status)
{
    struct em_rma *r = e->rma;
    uintptr_t c = (uintptr_t)ctx, m0 = (uintptr_t)r->marks;
    if (c < m0 || c - m0 >= EM_ENGINE_RMA_BUDGET + RMA_RSP_MAX)
        return false;
    size_t i = (size_t)(c - m0);
    if (i >= EM_ENGINE_RMA_BUDGET) {
        uint32_t j = (uint32_t)(i - EM_ENGINE_RMA_BUDGET);
        free(r->rsp[j]); /* an answer arrived, or its peer is gone */
        r->rsp[j] = NULL;
        r->rsp_free[r->rsp_nfree++] = j;
        return true;
    }
    struct rma_slot *s = &r->slot[i];
    if (!(s->state & S_BUSY))
        return true; /* cannot happen: a slot completes after its send */
    s->state |= S_SENT;
    if (s->state & S_ANSWERED)
        slot_done(e, s, s->status); /* the answer is what happened */
    else if (status != 0)
        slot_done(e, s, status); /* never delivered, or its peer failed */
    return true;
}

void em_rma_peer_end(em_engine_t *e, uint32_t peer, int status)
{
    struct em_rma *r = e->rma;
    for (uint32_t i = 0; i < EM_ENGINE_RMA_BUDGET; i++)
        if ((r->slot[i].state & S_BUSY) && r->slot[i].peer == peer)
            slot_done(e, &r->slot[i], status);
}

void em_rma_destroy(em_engine_t *e)
{
    struct em_rma *r = e->rma;
    if (!r)
        return;
    for (uint32_t i = 0; i < EM_ENGINE_RMA_BUDGET; i++)
        if (r->slot[i].state & S_BUSY)
            slot_done(e, &r->slot[i], -EM_ECANCELED);
    for (uint32_t j = 0; j < r->rsp_cap; j++)
        free(r->rsp[j]);
    free(r->rsp);
    free(r->rsp_free);
    free(r->slot);
    free(r->marks);
    free(r);
    e->rma = NULL;
}
