/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file emo_atomic.c
 * FI_ATOMIC: fi_atomic, fi_fetch_atomic and fi_compare_atomic (and their
 * v, msg and inject forms), fi_atomicvalid and its fetch and compare
 * forms, and the domain's fi_query_atomic, over the engine's remote
 * atomics (src/engine/atomic.h, em_engine_atomic).  The provider adds no
 * wire format and no arithmetic of its own: the engine carries the request
 * and its answer as messages on its reserved tag and applies the operation
 * at the target with em_atomic_apply(), the one implementation every front
 * end uses.
 *
 * What is offered (docs/ofi.md "Atomics"): the types FI_INT32, FI_UINT32,
 * FI_INT64, FI_UINT64, FI_FLOAT and FI_DOUBLE; fi_atomic: FI_MIN, FI_MAX,
 * FI_SUM, FI_PROD, FI_LOR, FI_LAND, FI_LXOR, FI_BOR, FI_BAND, FI_BXOR and
 * FI_ATOMIC_WRITE; fi_fetch_atomic: those and FI_ATOMIC_READ;
 * fi_compare_atomic: FI_CSWAP, FI_CSWAP_NE/LE/LT/GE/GT and FI_MSWAP.  The
 * bitwise ops and FI_MSWAP take integer types only (em_atomic_valid).
 * Anything else answers -FI_EOPNOTSUPP, from the *valid calls,
 * fi_query_atomic and the operation itself: MPICH then takes its
 * active-message path for it.  A request carries up to EM_ATOMIC_COUNT_MAX
 * elements (one fi_ioc; the count the *valid calls and fi_query_atomic
 * report); each element is atomic, the request as a whole is not (as in
 * libfabric).
 *
 * Keys and addresses as fi_write's (emo_rma.c): the key is the target's
 * FI_MR_PROV_KEY key, (region id << 48) | 48-bit region key, the address
 * an offset into that registration (no FI_MR_VIRT_ADDR).  The target
 * checks id, key, bounds, natural alignment and the registration's access:
 * FI_REMOTE_WRITE for every op but FI_ATOMIC_READ, FI_REMOTE_READ for
 * FI_ATOMIC_READ and for every fetching or comparing op (so those that
 * fetch and modify need both).  A refusal applies nothing and fails the
 * operation at the initiator with FI_EACCES.
 *
 * Completion: when the target has applied the operation and its answer
 * (with the fetched values) is back: FI_DELIVERY_COMPLETE, whatever level
 * was asked.  Entries say FI_ATOMIC | FI_WRITE (fi_atomic) or FI_ATOMIC |
 * FI_READ (fetch and compare), and count on the FI_WRITE or FI_READ
 * counter, as RMA writes and reads do.  fi_inject_atomic writes no entry;
 * its failure is logged.  Operands and compare values are read during the
 * call only (the engine encodes them into its request), so every form may
 * reuse its buffers at return; the result buffer is written before the
 * completion.  A target that fails meanwhile fails the operation with
 * FI_EIO (a liveness watch is held until the answer, as for a read).
 *
 * Order: requests are messages of the engine's ordered stream, applied at
 * the target in arrival order, behind the puts sent before them: the
 * FI_ORDER_ATOMIC_RAR/RAW/WAR/WAW orders hold (emo_prov.c offers them),
 * and an atomic sees the RMA writes issued before it.
 *
 * To the endpoint itself: the same checks, then em_atomic_apply() in the
 * call.  Threading: every entry point takes the domain's lock.
 */
#include "emo_rdv.h"

#include <stdint.h>
#include <string.h>

/* the operations' classes: which call, which ops */
enum aclass { AC_WRITE = 0, AC_FETCH, AC_COMPARE };

static int atype_of(enum fi_datatype dt)
{
    switch (dt) {
    case FI_INT32: return EM_ATYPE_INT32;
    case FI_UINT32: return EM_ATYPE_UINT32;
    case FI_INT64: return EM_ATYPE_INT64;
    case FI_UINT64: return EM_ATYPE_UINT64;
    case FI_FLOAT: return EM_ATYPE_FLOAT;
    case FI_DOUBLE: return EM_ATYPE_DOUBLE;
    default: return -1;
    }
}

static int aop_of(enum fi_op op)
{
    switch (op) {
    case FI_MIN: return EM_AOP_MIN;
    case FI_MAX: return EM_AOP_MAX;
    case FI_SUM: return EM_AOP_SUM;
    case FI_PROD: return EM_AOP_PROD;
    case FI_LOR: return EM_AOP_LOR;
    case FI_LAND: return EM_AOP_LAND;
    case FI_BOR: return EM_AOP_BOR;
    case FI_BAND: return EM_AOP_BAND;
    case FI_LXOR: return EM_AOP_LXOR;
    case FI_BXOR: return EM_AOP_BXOR;
    case FI_ATOMIC_READ: return EM_AOP_READ;
    case FI_ATOMIC_WRITE: return EM_AOP_WRITE;
    case FI_CSWAP: return EM_AOP_CSWAP;
    case FI_CSWAP_NE: return EM_AOP_CSWAP_NE;
    case FI_CSWAP_LE: return EM_AOP_CSWAP_LE;
    case FI_CSWAP_LT: return EM_AOP_CSWAP_LT;
    case FI_CSWAP_GE: return EM_AOP_CSWAP_GE;
    case FI_CSWAP_GT: return EM_AOP_CSWAP_GT;
    case FI_MSWAP: return EM_AOP_MSWAP;
    default: return -1;
    }
}

/* Is (@p dt, @p op) offered by calls of class @p c?  @return 0 with the
 * engine's type and op, or -FI_EOPNOTSUPP. */
static int op_check(enum fi_datatype dt, enum fi_op op, enum aclass c, uint8_t *type, uint8_t *aop)
{
    int t = atype_of(dt), o = aop_of(op);
    if (t < 0 || o < 0 || !em_atomic_valid((unsigned)o, (unsigned)t))
        return -FI_EOPNOTSUPP;
    bool cmp = em_atomic_has_compare((unsigned)o);
    if ((c == AC_COMPARE) != cmp || (c == AC_WRITE && o == EM_AOP_READ))
        return -FI_EOPNOTSUPP;
    *type = (uint8_t)t;
    *aop = (uint8_t)o;
    return 0;
}

int emo_query_atomic(const struct emo_domain *d, enum fi_datatype dt, enum fi_op op,
                     struct fi_atomic_attr *attr, uint64_t flags)
{
    if ((flags & FI_FETCH_ATOMIC) && (flags & FI_COMPARE_ATOMIC))
        return -FI_EINVAL;
    if (flags & ~(uint64_t)(FI_FETCH_ATOMIC | FI_COMPARE_ATOMIC))
        return -FI_EOPNOTSUPP; /* FI_TAGGED, FI_COLLECTIVE: none offered */
    enum aclass c = (flags & FI_FETCH_ATOMIC)     ? AC_FETCH
                    : (flags & FI_COMPARE_ATOMIC) ? AC_COMPARE
                                                  : AC_WRITE;
    uint8_t type, aop;
    if (!d->atomic || op_check(dt, op, c, &type, &aop))
        return -FI_EOPNOTSUPP;
    if (attr) {
        attr->size = em_atomic_type_size(type);
        attr->count = EM_ATOMIC_COUNT_MAX;
    }
    return 0;
}

void emo_atomic_stats(const struct emo_ep *ep)
{
    char me[EMO_LABEL_LEN];
    const em_engine_stats_t *es = em_engine_stats(ep->eng);
    if (!ep->st.atomics && !ep->st.atomics_self && !es->rma_atomics_applied && !es->rma_refused &&
        !es->rma_gets_served)
        return;
    FI_INFO(&emo_prov, FI_LOG_EP_DATA,
            "endpoint %s atomics: started %llu (to itself %llu, engine budget full %llu); "
            "peers' applied %llu; peers' reads answered by the engine %llu; requests refused "
            "%llu\n",
            emo_ep_label(ep, me), (unsigned long long)ep->st.atomics,
            (unsigned long long)ep->st.atomics_self, (unsigned long long)ep->st.atomics_busy,
            (unsigned long long)es->rma_atomics_applied, (unsigned long long)es->rma_gets_served,
            (unsigned long long)es->rma_refused);
}

/* ---- the operation ------------------------------------------------------------ */

struct emo_atomic_args {
    enum aclass cls;
    enum fi_datatype dt;
    enum fi_op op;
    const void *buf;     /**< operands (NULL for FI_ATOMIC_READ) */
    const void *compare; /**< compare values (AC_COMPARE) */
    void *result;        /**< fetched values (AC_FETCH, AC_COMPARE) */
    size_t count;        /**< elements */
    fi_addr_t peer;
    uint64_t addr, key; /**< offset in the target's registration, its key */
    void *context;
    uint64_t flags; /**< FI_COMPLETION, FI_INJECT, ... */
    bool no_cqe;    /**< fi_inject_atomic: never a completion */
};

/* what the call may be asked for; @return 0 or -FI_* */
static int args_check(const struct emo_ep *ep, const struct emo_atomic_args *a, uint8_t aop)
{
    if (!ep->enabled)
        return -FI_EOPBADSTATE;
    /* a non-fetching atomic writes (FI_WRITE); one that fetches reads
     * (FI_READ), and counts and completes as a read (docs/ofi.md) */
    uint64_t need = FI_ATOMIC | (a->cls == AC_WRITE ? FI_WRITE : FI_READ);
    if ((ep->info->caps & need) != need)
        return -FI_EOPNOTSUPP;
    if (a->flags & FI_REMOTE_CQ_DATA)
        return -FI_EOPNOTSUPP; /* no remote CQ data with atomics */
    if (a->count == 0 || a->count > EM_ATOMIC_COUNT_MAX)
        return -FI_EINVAL; /* fi_atomicvalid: at most EM_ATOMIC_COUNT_MAX */
    if ((aop != EM_AOP_READ && !a->buf) || (a->cls == AC_COMPARE && !a->compare) ||
        (a->cls != AC_WRITE && !a->result))
        return -FI_EINVAL;
    return 0;
}

/* to ourselves: the checks the target's engine makes (rma.c), then the
 * engine's own apply */
static ssize_t atomic_self(struct emo_ep *ep, emo_op_t *op, const struct emo_atomic_args *a,
                           const em_atomic_desc_t *d)
{
    uint32_t id;
    uint64_t key;
    emo_rkey_split(a->key, &id, &key);
    size_t es = em_atomic_type_size(d->type);
    bool fetch = a->cls != AC_WRITE;
    unsigned access = (em_atomic_writes(d->op) ? EM_REGION_WRITE : 0) |
                      (fetch || d->op == EM_AOP_READ ? EM_REGION_READ : 0);
    uint8_t *at;
    int status = 0;
    if (em_engine_region_at(ep->eng, id, key, a->addr, (size_t)d->count * es, access, &at) ||
        ((uintptr_t)at & (es - 1)))
        status = -FI_EACCES;
    else if (em_atomic_apply(d->op, d->type, at, d->operand, d->compare, fetch ? a->result : NULL,
                             d->count))
        status = -FI_EINVAL;
    ep->st.atomics_self++;
    emo_complete_tx(op, status);
    emo_op_free(op);
    return 0;
}

static ssize_t do_atomic(struct emo_ep *ep, const struct emo_atomic_args *a)
{
    uint8_t type, aop;
    int rc = op_check(a->dt, a->op, a->cls, &type, &aop);
    if (rc || (rc = args_check(ep, a, aop)) != 0)
        return rc;
    size_t bytes = a->count * em_atomic_type_size(type);
    if (a->no_cqe && bytes > ep->inject_max)
        return -FI_EMSGSIZE;
    uint32_t peer;
    if ((rc = emo_dest_peer(ep, a->peer, &peer)) != 0 || (rc = emo_announce(ep, peer)) != 0)
        return rc; /* (our address first, to a peer that may not know us: emo_contact.c) */
    if (!emo_tx_room(ep, 0))
        return -FI_EAGAIN;
    emo_op_t *op = emo_op_new(ep, EMO_OP_ATOMIC, 0);
    if (!op)
        return -FI_EAGAIN;
    op->peer = peer;
    op->context = a->no_cqe ? NULL : a->context;
    op->cq_flags = FI_ATOMIC | (a->cls == AC_WRITE ? FI_WRITE : FI_READ);
    op->want_cqe = !a->no_cqe && (!ep->tx_selective || (a->flags & FI_COMPLETION));
    op->len = bytes;
    op->buf = a->result;
    em_atomic_desc_t d = { .op = aop,
                           .type = type,
                           .count = (uint16_t)a->count,
                           .operand = a->buf,
                           .compare = a->cls == AC_COMPARE ? a->compare : NULL };
    if (peer == ep->self.id)
        return atomic_self(ep, op, a, &d);
    uint32_t id;
    uint64_t key;
    emo_rkey_split(a->key, &id, &key);
    em_region_handle_t rh = { .id = id, .key = key };
    void *result = a->cls == AC_WRITE ? NULL : a->result;
    rc = em_engine_atomic(ep->eng, &op->pop, peer, &rh, a->addr, &d, result, op);
    if (rc == -EM_EAGAIN) {
        /* the engine's requests are all out: answers may be waiting */
        emo_ep_progress(ep);
        rc = em_engine_atomic(ep->eng, &op->pop, peer, &rh, a->addr, &d, result, op);
        if (rc == -EM_EAGAIN)
            ep->st.atomics_busy++;
    }
    if (rc) {
        emo_op_free(op);
        return emo_errno(rc);
    }
    ep->st.atomics++;
    op->watched = emo_watch(ep, peer); /* until the answer: a dead target is noticed */
    return 0;
}

/* ---- fi_ops_atomic ------------------------------------------------------------ */

#define EP(f) container_of_emo(f, struct emo_ep, ep)

static ssize_t run(struct fid_ep *fep, struct emo_atomic_args *a)
{
    struct emo_ep *ep = EP(fep);
    emo_lock(ep->dom);
    ssize_t rc = do_atomic(ep, a);
    emo_unlock(ep->dom);
    return rc;
}

/* one fi_ioc at most (iov_limit 1); @return its count, or -1 */
static ssize_t ioc1(const struct fi_ioc *iov, size_t n, const void **addr)
{
    *addr = NULL;
    if (n != 1 || !iov)
        return -1;
    *addr = iov[0].addr;
    return (ssize_t)iov[0].count;
}

/* a message's target (one fi_rma_ioc) and operands; @return 0 or -FI_EINVAL */
static int from_msg(const struct fi_msg_atomic *msg, uint64_t flags, enum aclass c,
                    struct emo_atomic_args *a)
{
    const void *buf;
    ssize_t n;
    if (!msg || msg->rma_iov_count != 1 || !msg->rma_iov ||
        (n = ioc1(msg->msg_iov, msg->iov_count, &buf)) < 0)
        return -FI_EINVAL;
    *a = (struct emo_atomic_args){ .cls = c,
                                   .dt = msg->datatype,
                                   .op = msg->op,
                                   .buf = buf,
                                   .count = (size_t)n,
                                   .peer = msg->addr,
                                   .addr = msg->rma_iov[0].addr,
                                   .key = msg->rma_iov[0].key,
                                   .context = msg->context,
                                   .flags = flags };
    return 0;
}

static ssize_t a_write(struct fid_ep *ep, const void *buf, size_t count, void *desc, fi_addr_t dest,
                       uint64_t addr, uint64_t key, enum fi_datatype dt, enum fi_op op, void *ctx)
{
    (void)desc;
    struct emo_atomic_args a = { .cls = AC_WRITE,
                                 .dt = dt,
                                 .op = op,
                                 .buf = buf,
                                 .count = count,
                                 .peer = dest,
                                 .addr = addr,
                                 .key = key,
                                 .context = ctx,
                                 .flags = EP(ep)->tx_op_flags };
    return run(ep, &a);
}

static ssize_t a_writev(struct fid_ep *ep, const struct fi_ioc *iov, void **desc, size_t count,
                        fi_addr_t dest, uint64_t addr, uint64_t key, enum fi_datatype dt,
                        enum fi_op op, void *ctx)
{
    const void *buf;
    ssize_t n = ioc1(iov, count, &buf);
    return n < 0 ? -FI_EINVAL
                 : a_write(ep, buf, (size_t)n, desc ? desc[0] : NULL, dest, addr, key, dt, op, ctx);
}

static ssize_t a_writemsg(struct fid_ep *ep, const struct fi_msg_atomic *msg, uint64_t flags)
{
    struct emo_atomic_args a;
    return from_msg(msg, flags, AC_WRITE, &a) ? -FI_EINVAL : run(ep, &a);
}

static ssize_t a_inject(struct fid_ep *ep, const void *buf, size_t count, fi_addr_t dest,
                        uint64_t addr, uint64_t key, enum fi_datatype dt, enum fi_op op)
{
    struct emo_atomic_args a = { .cls = AC_WRITE,
                                 .dt = dt,
                                 .op = op,
                                 .buf = buf,
                                 .count = count,
                                 .peer = dest,
                                 .addr = addr,
                                 .key = key,
                                 .flags = FI_INJECT,
                                 .no_cqe = true };
    return run(ep, &a);
}

static ssize_t a_readwrite(struct fid_ep *ep, const void *buf, size_t count, void *desc,
                           void *result, void *result_desc, fi_addr_t dest, uint64_t addr,
                           uint64_t key, enum fi_datatype dt, enum fi_op op, void *ctx)
{
    (void)desc;
    (void)result_desc;
    struct emo_atomic_args a = { .cls = AC_FETCH,
                                 .dt = dt,
                                 .op = op,
                                 .buf = buf,
                                 .result = result,
                                 .count = count,
                                 .peer = dest,
                                 .addr = addr,
                                 .key = key,
                                 .context = ctx,
                                 .flags = EP(ep)->tx_op_flags };
    return run(ep, &a);
}

static ssize_t a_readwritev(struct fid_ep *ep, const struct fi_ioc *iov, void **desc, size_t count,
                            struct fi_ioc *resultv, void **result_desc, size_t result_count,
                            fi_addr_t dest, uint64_t addr, uint64_t key, enum fi_datatype dt,
                            enum fi_op op, void *ctx)
{
    (void)desc;
    (void)result_desc;
    const void *buf, *res;
    ssize_t n = ioc1(iov, count, &buf), m = ioc1(resultv, result_count, &res);
    if (n < 0 || m != n)
        return -FI_EINVAL;
    return a_readwrite(ep, buf, (size_t)n, NULL, (void *)res, NULL, dest, addr, key, dt, op, ctx);
}

static ssize_t a_readwritemsg(struct fid_ep *ep, const struct fi_msg_atomic *msg,
                              struct fi_ioc *resultv, void **result_desc, size_t result_count,
                              uint64_t flags)
{
    (void)result_desc;
    struct emo_atomic_args a;
    const void *res;
    if (from_msg(msg, flags, AC_FETCH, &a) || ioc1(resultv, result_count, &res) != (ssize_t)a.count)
        return -FI_EINVAL;
    a.result = (void *)res;
    return run(ep, &a);
}

static ssize_t a_compwrite(struct fid_ep *ep, const void *buf, size_t count, void *desc,
                           const void *compare, void *compare_desc, void *result, void *result_desc,
                           fi_addr_t dest, uint64_t addr, uint64_t key, enum fi_datatype dt,
                           enum fi_op op, void *ctx)
{
    (void)desc;
    (void)compare_desc;
    (void)result_desc;
    struct emo_atomic_args a = { .cls = AC_COMPARE,
                                 .dt = dt,
                                 .op = op,
                                 .buf = buf,
                                 .compare = compare,
                                 .result = result,
                                 .count = count,
                                 .peer = dest,
                                 .addr = addr,
                                 .key = key,
                                 .context = ctx,
                                 .flags = EP(ep)->tx_op_flags };
    return run(ep, &a);
}

static ssize_t a_compwritev(struct fid_ep *ep, const struct fi_ioc *iov, void **desc, size_t count,
                            const struct fi_ioc *comparev, void **compare_desc,
                            size_t compare_count, struct fi_ioc *resultv, void **result_desc,
                            size_t result_count, fi_addr_t dest, uint64_t addr, uint64_t key,
                            enum fi_datatype dt, enum fi_op op, void *ctx)
{
    (void)desc;
    (void)compare_desc;
    (void)result_desc;
    const void *buf, *cmp, *res;
    ssize_t n = ioc1(iov, count, &buf), k = ioc1(comparev, compare_count, &cmp),
            m = ioc1(resultv, result_count, &res);
    if (n < 0 || k != n || m != n)
        return -FI_EINVAL;
    return a_compwrite(ep, buf, (size_t)n, NULL, cmp, NULL, (void *)res, NULL, dest, addr, key, dt,
                       op, ctx);
}

static ssize_t a_compwritemsg(struct fid_ep *ep, const struct fi_msg_atomic *msg,
                              const struct fi_ioc *comparev, void **compare_desc,
                              size_t compare_count, struct fi_ioc *resultv, void **result_desc,
                              size_t result_count, uint64_t flags)
{
    (void)compare_desc;
    (void)result_desc;
    struct emo_atomic_args a;
    const void *cmp, *res;
    if (from_msg(msg, flags, AC_COMPARE, &a) ||
        ioc1(comparev, compare_count, &cmp) != (ssize_t)a.count ||
        ioc1(resultv, result_count, &res) != (ssize_t)a.count)
        return -FI_EINVAL;
    a.compare = cmp;
    a.result = (void *)res;
    return run(ep, &a);
}

/* fi_*atomicvalid: offered for this endpoint, and how many elements */
static int valid(struct fid_ep *fep, enum fi_datatype dt, enum fi_op op, enum aclass c,
                 size_t *count)
{
    struct emo_ep *ep = EP(fep);
    uint8_t type, aop;
    uint64_t need = FI_ATOMIC | (c == AC_WRITE ? FI_WRITE : FI_READ);
    if ((ep->info->caps & need) != need || op_check(dt, op, c, &type, &aop))
        return -FI_EOPNOTSUPP;
    if (count)
        *count = EM_ATOMIC_COUNT_MAX;
    return 0;
}

static int a_writevalid(struct fid_ep *ep, enum fi_datatype dt, enum fi_op op, size_t *count)
{
    return valid(ep, dt, op, AC_WRITE, count);
}

static int a_readwritevalid(struct fid_ep *ep, enum fi_datatype dt, enum fi_op op, size_t *count)
{
    return valid(ep, dt, op, AC_FETCH, count);
}

static int a_compwritevalid(struct fid_ep *ep, enum fi_datatype dt, enum fi_op op, size_t *count)
{
    return valid(ep, dt, op, AC_COMPARE, count);
}

struct fi_ops_atomic emo_atomic_ops = { .size = sizeof(struct fi_ops_atomic),
                                        .write = a_write,
                                        .writev = a_writev,
                                        .writemsg = a_writemsg,
                                        .inject = a_inject,
                                        .readwrite = a_readwrite,
                                        .readwritev = a_readwritev,
                                        .readwritemsg = a_readwritemsg,
                                        .compwrite = a_compwrite,
                                        .compwritev = a_compwritev,
                                        .compwritemsg = a_compwritemsg,
                                        .writevalid = a_writevalid,
                                        .readwritevalid = a_readwritevalid,
                                        .compwritevalid = a_compwritevalid };
