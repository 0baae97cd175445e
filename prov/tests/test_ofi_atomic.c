/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * FI_ATOMIC through libfabric's API (prov/emo_atomic.c over the engine's
 * remote atomics), two processes over kernel UDP on loopback.  The child
 * (the target) registers a read-write window, a read-only page and a
 * write-only page and sends their keys over a pipe; it never inserts the
 * parent into its AV, as Open MPI 5's btl/ofi under osc/rdma does not
 * insert a peer that only targets it (the provider sends its address
 * ahead of the first one-sided operation: emo_announce).  The parent
 * checks:
 *
 *   info     fi_getinfo offers FI_ATOMIC only with FI_MR_PROV_KEY; with no
 *            hints it has FI_ATOMIC, the four FI_ORDER_ATOMIC_* orders
 *            (what MPICH's default capability set needs) and FI_ORDER_WAR
 *            up to at least one request's bytes (what MPICH's default
 *            accumulate ordering needs); MPICH's second call (those
 *            orders asked) is accepted
 *   query    fi_query_atomic and fi_atomicvalid / fi_fetch_atomicvalid /
 *            fi_compare_atomicvalid answer, for every datatype and op of
 *            libfabric, exactly this file's table of what is offered
 *            (others -FI_EOPNOTSUPP), with the element size and the count
 *            (64); a domain opened without FI_ATOMIC offers nothing
 *   ops      every op of every class on every offered type, over the wire,
 *            against this file's own model of libfabric's semantics: the
 *            fetched value is the one before, FI_ATOMIC_READ then reads
 *            the model's value; compare ops with compare values below,
 *            equal to and above the target's
 *   forms    64 elements in one request (and 65 refused), the v and msg
 *            forms, fi_inject_atomic (no completion; a read behind it sees
 *            it), to the endpoint itself
 *   refused  bad key, wrong region, out of bounds, misaligned, an op the
 *            registration's access forbids (read-only: no write, no
 *            fetch-and-modify; write-only: no fetch): each fails at the
 *            initiator with FI_EACCES and leaves the target untouched (the
 *            child checks), and the next atomic works
 *   counters the FI_WRITE counter counts fi_atomic, the FI_READ counter the
 *            fetching and comparing ones, errors apart
 *   killed   an atomic to a killed target ends as FI_EIO, not a hang
 *
 * Usage: test_ofi_atomic [provider dir]  (else FI_PROVIDER_PATH must be set)
 */
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

static int me; /* 0 parent, 1 child */
#define OFI_CHECK_WHO (me ? "[1] " : "[0] ")
#include "ofi_check.h"
#include "ofi_pair.h"

#define WIN_LEN   4096u
#define COUNT_MAX 64u     /* what the provider reports (the engine's EM_ATOMIC_COUNT_MAX) */
#define OFF_ARRAY 1024u   /* the 64-element checks */
#define OFF_WO    8u      /* where the write-only page's check lands */
#define WO_VALUE  0x5151u /* what the parent adds there */

static struct fid_fabric *fab;
static struct fid_domain *dom;
static struct fid_ep *ep;
static struct fid_av *av;
static struct fid_cq *cq;
static struct fid_cntr *wcntr, *rcntr;
static struct fi_info *info;
static fi_addr_t peer, self_addr;
static int to_peer, from_peer;
static uint64_t win_key, ro_key, wo_key; /* the child's */
static int n_w, n_r, bad_w, bad_r;       /* completions expected on each counter */

/* ---- the test's model of the types and operations ---------------------------- */

struct tinfo {
    enum fi_datatype dt;
    size_t size;
    bool fp, sign;
    const char *name;
};
static const struct tinfo types[] = {
    { FI_INT32, 4, false, true, "int32" }, { FI_UINT32, 4, false, false, "uint32" },
    { FI_INT64, 8, false, true, "int64" }, { FI_UINT64, 8, false, false, "uint64" },
    { FI_FLOAT, 4, true, true, "float" },  { FI_DOUBLE, 8, true, true, "double" },
};
#define NTYPES (sizeof types / sizeof types[0])

enum cls { C_WRITE, C_FETCH, C_COMPARE };

/* is (type @p t, @p op) offered by calls of class @p c?  (NULL t: a type
 * that is not offered) */
static bool offered(const struct tinfo *t, enum fi_op op, enum cls c)
{
    if (!t)
        return false;
    bool bitwise = op == FI_BOR || op == FI_BAND || op == FI_BXOR || op == FI_MSWAP;
    if (bitwise && t->fp)
        return false;
    bool cmp = op >= FI_CSWAP && op <= FI_MSWAP;
    if (c == C_COMPARE)
        return cmp;
    if (cmp)
        return false;
    return op != FI_ATOMIC_READ || c == C_FETCH;
}

/* a value: integers as their bits (sign-extended when signed), floats as a double */
typedef struct {
    uint64_t u;
    double f;
} num_t;

static num_t norm(const struct tinfo *t, num_t v)
{
    if (t->fp)
        v.f = t->size == 4 ? (double)(float)v.f : v.f;
    else if (t->size == 4)
        v.u = t->sign ? (uint64_t)(int64_t)(int32_t)(uint32_t)v.u : (v.u & 0xFFFFFFFFu);
    return v;
}

static num_t mk(const struct tinfo *t, int64_t i, double f)
{
    return norm(t, (num_t){ .u = (uint64_t)i, .f = f });
}

static int cmp(const struct tinfo *t, num_t a, num_t b)
{
    if (t->fp)
        return a.f < b.f ? -1 : a.f > b.f;
    if (t->sign)
        return (int64_t)a.u < (int64_t)b.u ? -1 : (int64_t)a.u > (int64_t)b.u;
    return a.u < b.u ? -1 : a.u > b.u;
}

static bool nz(const struct tinfo *t, num_t a) { return t->fp ? a.f != 0 : a.u != 0; }

static num_t boolean(const struct tinfo *t, bool b) { return mk(t, b, b); }

/* libfabric's fi_atomic(3) semantics: the target's new value */
static num_t model(const struct tinfo *t, enum fi_op op, num_t cur, num_t o, num_t c)
{
    num_t r = cur;
    switch (op) {
    case FI_MIN: return cmp(t, o, cur) < 0 ? o : cur;
    case FI_MAX: return cmp(t, o, cur) > 0 ? o : cur;
    case FI_SUM: r.u = cur.u + o.u, r.f = cur.f + o.f; break;
    case FI_PROD: r.u = cur.u * o.u, r.f = cur.f * o.f; break;
    case FI_LOR: return boolean(t, nz(t, cur) || nz(t, o));
    case FI_LAND: return boolean(t, nz(t, cur) && nz(t, o));
    case FI_LXOR: return boolean(t, nz(t, cur) != nz(t, o));
    case FI_BOR: r.u = cur.u | o.u; break;
    case FI_BAND: r.u = cur.u & o.u; break;
    case FI_BXOR: r.u = cur.u ^ o.u; break;
    case FI_ATOMIC_READ: return cur;
    case FI_ATOMIC_WRITE: return o;
    case FI_CSWAP: return cmp(t, c, cur) == 0 ? o : cur;
    case FI_CSWAP_NE: return cmp(t, c, cur) != 0 ? o : cur;
    case FI_CSWAP_LE: return cmp(t, c, cur) <= 0 ? o : cur;
    case FI_CSWAP_LT: return cmp(t, c, cur) < 0 ? o : cur;
    case FI_CSWAP_GE: return cmp(t, c, cur) >= 0 ? o : cur;
    case FI_CSWAP_GT: return cmp(t, c, cur) > 0 ? o : cur;
    case FI_MSWAP: r.u = (o.u & c.u) | (cur.u & ~c.u); break;
    default: CHECK(0, "model: op %d", (int)op);
    }
    return norm(t, r);
}

static void enc(const struct tinfo *t, num_t v, void *p)
{
    if (t->fp && t->size == 4) {
        float f = (float)v.f;
        memcpy(p, &f, 4);
    } else if (t->fp) {
        memcpy(p, &v.f, 8);
    } else if (t->size == 4) {
        uint32_t u = (uint32_t)v.u;
        memcpy(p, &u, 4);
    } else {
        memcpy(p, &v.u, 8);
    }
}

static num_t dec(const struct tinfo *t, const void *p)
{
    num_t v = { 0, 0 };
    if (t->fp && t->size == 4) {
        float f;
        memcpy(&f, p, 4);
        v.f = f;
    } else if (t->fp) {
        memcpy(&v.f, p, 8);
    } else if (t->size == 4) {
        uint32_t u;
        memcpy(&u, p, 4);
        v.u = u;
    } else {
        memcpy(&v.u, p, 8);
    }
    return norm(t, v);
}

static bool same(const struct tinfo *t, num_t a, num_t b)
{
    return t->fp ? a.f == b.f : a.u == b.u;
}

/* ---- plumbing ------------------------------------------------------------------ */

static void progress_once(void)
{
    struct fi_cq_tagged_entry e;
    ssize_t n = fi_cq_read(cq, &e, 1);
    CHECK(n == -FI_EAGAIN, "unexpected completion (flags %lx) or error: %zd",
          n == 1 ? (unsigned long)e.flags : 0ul, n);
}

static void sync_peer(void) { ofi_sync_peer(to_peer, from_peer, progress_once); }

/* wait for @p ctx's completion; @return 0 or the error's fi_errno */
static int wait_ctx(void *ctx, uint64_t want_flags)
{
    for (double end = ofi_now_s() + 30; ofi_now_s() < end;) {
        struct fi_cq_tagged_entry e;
        ssize_t n = fi_cq_read(cq, &e, 1);
        if (n == 1) {
            CHECK(e.op_context == ctx && e.flags == want_flags,
                  "completion of %p flags %lx, want %p flags %lx", e.op_context,
                  (unsigned long)e.flags, ctx, (unsigned long)want_flags);
            return 0;
        }
        if (n == -FI_EAVAIL) {
            struct fi_cq_err_entry x = { 0 };
            CHECK(fi_cq_readerr(cq, &x, 0) == 1 && x.op_context == ctx, "error entry");
            return x.err;
        }
        CHECK(n == -FI_EAGAIN, "fi_cq_read = %zd", n);
    }
    CHECK(0, "no completion of %p within 30 s", ctx);
    return -1;
}

/* one operation posted by @p rc (its context @p c), waited for; counts it */
static int done(ssize_t rc, struct fi_context *c, enum cls k, const char *what)
{
    CHECK(rc == 0, "%s posted: %s", what, fi_strerror((int)-rc));
    int st = wait_ctx(c, FI_ATOMIC | (k == C_WRITE ? FI_WRITE : FI_READ));
    if (k == C_WRITE)
        st ? bad_w++ : n_w++;
    else
        st ? bad_r++ : n_r++;
    return st;
}

static int at_write(fi_addr_t to, const void *v, size_t n, uint64_t off, uint64_t key,
                    enum fi_datatype dt, enum fi_op op)
{
    struct fi_context c;
    return done(fi_atomic(ep, v, n, NULL, to, off, key, dt, op, &c), &c, C_WRITE, "fi_atomic");
}

static int at_fetch(fi_addr_t to, const void *v, void *res, size_t n, uint64_t off, uint64_t key,
                    enum fi_datatype dt, enum fi_op op)
{
    struct fi_context c;
    return done(fi_fetch_atomic(ep, v, n, NULL, res, NULL, to, off, key, dt, op, &c), &c, C_FETCH,
                "fi_fetch_atomic");
}

static int at_compare(fi_addr_t to, const void *v, const void *cmpv, void *res, size_t n,
                      uint64_t off, uint64_t key, enum fi_datatype dt, enum fi_op op)
{
    struct fi_context c;
    return done(fi_compare_atomic(ep, v, n, NULL, cmpv, NULL, res, NULL, to, off, key, dt, op, &c),
                &c, C_COMPARE, "fi_compare_atomic");
}

/* ---- checks -------------------------------------------------------------------- */

static struct fi_info *atomic_info(uint64_t caps, uint64_t mr_mode, uint64_t tx_order, int *rc)
{
    struct fi_info *hints = fi_allocinfo(), *fi = NULL;
    CHECK(hints, "fi_allocinfo");
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = caps;
    hints->fabric_attr->prov_name = strdup("ethermpi");
    hints->domain_attr->mr_mode = (int)mr_mode;
    hints->tx_attr->msg_order = tx_order;
    *rc = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &fi);
    fi_freeinfo(hints);
    return fi;
}

#define ATOMIC_ORDERS                                                                              \
    (FI_ORDER_ATOMIC_RAR | FI_ORDER_ATOMIC_RAW | FI_ORDER_ATOMIC_WAR | FI_ORDER_ATOMIC_WAW)

static void getinfo_checks(void)
{
    int rc;
    struct fi_info *fi = atomic_info(FI_TAGGED | FI_ATOMIC, FI_MR_VIRT_ADDR, 0, &rc);
    CHECK(rc == -FI_ENODATA && !fi, "FI_ATOMIC without FI_MR_PROV_KEY: %d", rc);
    fi = atomic_info(FI_TAGGED | FI_RMA, FI_MR_PROV_KEY, 0, &rc);
    CHECK(rc == 0 && fi && !(fi->caps & FI_ATOMIC), "FI_RMA asked: no FI_ATOMIC");
    fi_freeinfo(fi);
    /* MPICH's second call: its default set's caps and the atomic orders */
    fi = atomic_info(FI_TAGGED | FI_MSG | FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE | FI_REMOTE_READ |
                         FI_REMOTE_WRITE | FI_DIRECTED_RECV | FI_MULTI_RECV,
                     FI_MR_PROV_KEY, FI_ORDER_SAS | ATOMIC_ORDERS, &rc);
    CHECK(rc == 0 && fi && (fi->caps & FI_ATOMIC) && (fi->tx_attr->caps & FI_ATOMIC) &&
              (fi->rx_attr->caps & FI_ATOMIC) &&
              (fi->tx_attr->msg_order & ATOMIC_ORDERS) == ATOMIC_ORDERS,
          "FI_ATOMIC with the atomic orders: %d", rc);
    fi_freeinfo(fi);
    fi = NULL;
    CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, NULL, &fi) == 0 && fi, "no hints");
    for (struct fi_info *i = fi; i; i = i->next)
        if (!strcmp(i->fabric_attr->prov_name, "ethermpi"))
            CHECK((i->caps & FI_ATOMIC) && i->domain_attr->mr_mode == FI_MR_PROV_KEY &&
                      (i->tx_attr->msg_order & ATOMIC_ORDERS) == ATOMIC_ORDERS &&
                      (i->tx_attr->msg_order & FI_ORDER_WAR) &&
                      i->ep_attr->max_order_war_size >= COUNT_MAX * 8,
                  "no hints: FI_ATOMIC, FI_MR_PROV_KEY, the atomic orders, FI_ORDER_WAR up to "
                  "at least one atomic request");
    fi_freeinfo(fi);
}

static const struct tinfo *tinfo_of(int dt)
{
    for (size_t i = 0; i < NTYPES; i++)
        if ((int)types[i].dt == dt)
            return &types[i];
    return NULL;
}

/* fi_query_atomic and the *valid calls against the table (offered()) */
static void query_checks(void)
{
    static const uint64_t qflags[3] = { 0, FI_FETCH_ATOMIC, FI_COMPARE_ATOMIC };
    int ok = 0;
    for (int dt = 0; dt < FI_DATATYPE_LAST; dt++) {
        for (int op = 0; op < FI_ATOMIC_OP_LAST; op++) {
            for (int c = C_WRITE; c <= C_COMPARE; c++) {
                const struct tinfo *t = tinfo_of(dt);
                bool want = offered(t, (enum fi_op)op, (enum cls)c);
                struct fi_atomic_attr at = { 0, 0 };
                int q = fi_query_atomic(dom, (enum fi_datatype)dt, (enum fi_op)op, &at, qflags[c]);
                size_t n = 0;
                int v = c == C_WRITE ? fi_atomicvalid(ep, (enum fi_datatype)dt, (enum fi_op)op, &n)
                        : c == C_FETCH
                            ? fi_fetch_atomicvalid(ep, (enum fi_datatype)dt, (enum fi_op)op, &n)
                            : fi_compare_atomicvalid(ep, (enum fi_datatype)dt, (enum fi_op)op, &n);
                CHECK(want ? q == 0 && v == 0 : q == -FI_EOPNOTSUPP && v == -FI_EOPNOTSUPP,
                      "datatype %d op %d class %d: query %d valid %d, want %s", dt, op, c, q, v,
                      want ? "offered" : "-FI_EOPNOTSUPP");
                if (want)
                    CHECK(at.size == t->size && at.count == COUNT_MAX && n == COUNT_MAX,
                          "datatype %d op %d: size %zu count %zu / %zu", dt, op, at.size, at.count,
                          n);
                ok += want;
            }
        }
    }
    struct fi_atomic_attr at;
    CHECK(fi_query_atomic(dom, FI_INT64, FI_CSWAP, &at, FI_FETCH_ATOMIC | FI_COMPARE_ATOMIC) ==
              -FI_EINVAL,
          "query with both classes");
    /* a domain opened without FI_ATOMIC offers nothing */
    int rc;
    struct fi_info *fi = atomic_info(FI_TAGGED | FI_RMA, FI_MR_PROV_KEY, 0, &rc);
    struct fid_fabric *f2;
    struct fid_domain *d2;
    FI(rc);
    FI(fi_fabric(fi->fabric_attr, &f2, NULL));
    FI(fi_domain(f2, fi, &d2, NULL));
    CHECK(fi_query_atomic(d2, FI_INT64, FI_SUM, &at, 0) == -FI_EOPNOTSUPP,
          "a domain without FI_ATOMIC answers a query");
    fi_close(&d2->fid);
    fi_close(&f2->fid);
    fi_freeinfo(fi);
    printf("fi_query_atomic / *valid: %d (type, op, class) offered, the rest refused\n", ok);
}

/* every offered op of every class on every type, checked against model() */
static void op_checks(void)
{
    uint8_t v[8], r[8], x[8], cv[8];
    int nops = 0;
    for (size_t ti = 0; ti < NTYPES; ti++) {
        const struct tinfo *t = &types[ti];
        num_t x0 = mk(t, -7, -7.5), o = mk(t, 5, 2.25);
        for (int op = 0; op < FI_ATOMIC_OP_LAST; op++) {
            for (int c = C_WRITE; c <= C_COMPARE; c++) {
                if (!offered(t, (enum fi_op)op, (enum cls)c))
                    continue;
                /* compare values below, equal to and above the target's */
                num_t cs[3] = { mk(t, -8, -8.5), x0, mk(t, -6, -6.5) };
                for (int k = 0; k < (c == C_COMPARE ? 3 : 1); k++) {
                    enc(t, x0, x);
                    CHECK(at_write(peer, x, 1, 0, win_key, t->dt, FI_ATOMIC_WRITE) == 0, "set");
                    enc(t, o, v);
                    enc(t, cs[k], cv);
                    memset(r, 0xEE, sizeof r);
                    int st = c == C_WRITE ? at_write(peer, v, 1, 0, win_key, t->dt, (enum fi_op)op)
                             : c == C_FETCH
                                 ? at_fetch(peer, v, r, 1, 0, win_key, t->dt, (enum fi_op)op)
                                 : at_compare(peer, v, cv, r, 1, 0, win_key, t->dt, (enum fi_op)op);
                    CHECK(st == 0, "%s op %d class %d: %s", t->name, op, c, fi_strerror(st));
                    CHECK(c == C_WRITE || same(t, dec(t, r), x0), "%s op %d: fetched not the old",
                          t->name, op);
                    CHECK(at_fetch(peer, NULL, r, 1, 0, win_key, t->dt, FI_ATOMIC_READ) == 0,
                          "read back");
                    num_t want = model(t, (enum fi_op)op, x0, o, cs[k]), got = dec(t, r);
                    CHECK(same(t, got, want),
                          "%s op %d class %d compare %d: target %llx / %g, want %llx / %g", t->name,
                          op, c, k, (unsigned long long)got.u, got.f, (unsigned long long)want.u,
                          want.f);
                    nops++;
                }
            }
        }
    }
    printf("every op of every class on %zu types: %d operations checked against the model\n",
           NTYPES, nops);
}

/* 64 elements at once, the v and msg forms, an inject, to ourselves */
static void form_checks(void)
{
    uint64_t a[COUNT_MAX + 1], res[COUNT_MAX], back[COUNT_MAX];
    for (unsigned i = 0; i < COUNT_MAX; i++)
        a[i] = i;
    CHECK(at_write(peer, a, COUNT_MAX, OFF_ARRAY, win_key, FI_UINT64, FI_ATOMIC_WRITE) == 0, "64");
    for (unsigned i = 0; i < COUNT_MAX; i++)
        a[i] = 1000 + i;
    CHECK(at_fetch(peer, a, res, COUNT_MAX, OFF_ARRAY, win_key, FI_UINT64, FI_SUM) == 0, "64 sum");
    CHECK(at_fetch(peer, NULL, back, COUNT_MAX, OFF_ARRAY, win_key, FI_UINT64, FI_ATOMIC_READ) == 0,
          "64 read");
    for (unsigned i = 0; i < COUNT_MAX; i++)
        CHECK(res[i] == i && back[i] == 1000 + 2 * i, "element %u: %llu %llu", i,
              (unsigned long long)res[i], (unsigned long long)back[i]);
    struct fi_context c;
    CHECK(fi_atomic(ep, a, COUNT_MAX + 1, NULL, peer, OFF_ARRAY, win_key, FI_UINT64, FI_SUM, &c) ==
              -FI_EINVAL,
          "65 elements accepted");
    /* the v and msg forms: +1 +2 (atomic), +4 +8 (fetch), a swap (compare) */
    int64_t one = 1, two = 2, four = 4, eight = 8, old = -1, cmpv = 15, nv = 99, r2 = -1;
    struct fi_ioc io = { &one, 1 }, res_io = { &old, 1 }, cmp_io = { &cmpv, 1 };
    struct fi_rma_ioc rio = { 0, 1, win_key };
    CHECK(at_write(peer, &(int64_t){ 0 }, 1, 0, win_key, FI_INT64, FI_ATOMIC_WRITE) == 0, "zero");
    CHECK(done(fi_atomicv(ep, &io, NULL, 1, peer, 0, win_key, FI_INT64, FI_SUM, &c), &c, C_WRITE,
               "fi_atomicv") == 0,
          "fi_atomicv");
    io.addr = &two;
    struct fi_msg_atomic m = { .msg_iov = &io,
                               .iov_count = 1,
                               .addr = peer,
                               .rma_iov = &rio,
                               .rma_iov_count = 1,
                               .datatype = FI_INT64,
                               .op = FI_SUM,
                               .context = &c };
    CHECK(done(fi_atomicmsg(ep, &m, FI_COMPLETION), &c, C_WRITE, "fi_atomicmsg") == 0, "msg");
    io.addr = &four;
    CHECK(done(fi_fetch_atomicv(ep, &io, NULL, 1, &res_io, NULL, 1, peer, 0, win_key, FI_INT64,
                                FI_SUM, &c),
               &c, C_FETCH, "fi_fetch_atomicv") == 0 &&
              old == 3,
          "fi_fetch_atomicv fetched %lld", (long long)old);
    io.addr = &eight;
    res_io.addr = &r2;
    CHECK(done(fi_fetch_atomicmsg(ep, &m, &res_io, NULL, 1, FI_COMPLETION), &c, C_FETCH,
               "fi_fetch_atomicmsg") == 0 &&
              r2 == 7,
          "fi_fetch_atomicmsg fetched %lld", (long long)r2);
    io.addr = &nv;
    m.op = FI_CSWAP;
    CHECK(done(fi_compare_atomicmsg(ep, &m, &cmp_io, NULL, 1, &res_io, NULL, 1, FI_COMPLETION), &c,
               C_COMPARE, "fi_compare_atomicmsg") == 0 &&
              r2 == 15,
          "fi_compare_atomicmsg fetched %lld", (long long)r2);
    CHECK(done(fi_compare_atomicv(ep, &io, NULL, 1, &cmp_io, NULL, 1, &res_io, NULL, 1, peer, 0,
                                  win_key, FI_INT64, FI_CSWAP, &c),
               &c, C_COMPARE, "fi_compare_atomicv") == 0 &&
              r2 == 99,
          "fi_compare_atomicv: 99 != 15, nothing swapped, fetched %lld", (long long)r2);
    /* an inject: no completion; a read behind it sees it (FI_ORDER_ATOMIC_RAW) */
    int64_t add = 1000;
    FI(fi_inject_atomic(ep, &add, 1, peer, 0, win_key, FI_INT64, FI_SUM));
    add = 0; /* the caller's again at return */
    n_w++;   /* it counts on the FI_WRITE counter */
    CHECK(at_fetch(peer, NULL, &r2, 1, 0, win_key, FI_INT64, FI_ATOMIC_READ) == 0 && r2 == 1099,
          "read after fi_inject_atomic: %lld", (long long)r2);
    /* to ourselves, through our own registration */
    uint64_t *mine = calloc(1, WIN_LEN);
    struct fid_mr *mr;
    FI(fi_mr_reg(dom, mine, WIN_LEN, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL));
    uint64_t k = fi_mr_key(mr), u = 5, ru = 0, cu = 5, nu = 6;
    CHECK(at_fetch(self_addr, &u, &ru, 1, 8, k, FI_UINT64, FI_SUM) == 0 && ru == 0 && mine[1] == 5,
          "self fetch-add");
    CHECK(at_compare(self_addr, &nu, &cu, &ru, 1, 8, k, FI_UINT64, FI_CSWAP) == 0 && ru == 5 &&
              mine[1] == 6,
          "self compare-and-swap");
    CHECK(at_write(self_addr, &u, 1, WIN_LEN, k, FI_UINT64, FI_SUM) == FI_EACCES, "self: past end");
    fi_close(&mr->fid);
    free(mine);
}

/* refusals: each fails at the initiator and changes nothing (the child
 * checks its pages after) */
static void refusal_checks(void)
{
    uint64_t v = 1, r = 0, c = 0;
    CHECK(at_write(peer, &v, 1, 0, win_key ^ 1, FI_UINT64, FI_SUM) == FI_EACCES, "bad key");
    CHECK(at_write(peer, &v, 1, 0, win_key | ((uint64_t)0xFFF << 48), FI_UINT64, FI_SUM) ==
              FI_EACCES,
          "no such region");
    CHECK(at_write(peer, &v, 1, WIN_LEN - 4, win_key, FI_UINT64, FI_SUM) == FI_EACCES,
          "across the end");
    CHECK(at_fetch(peer, &v, &r, 1, WIN_LEN, win_key, FI_UINT64, FI_SUM) == FI_EACCES, "past end");
    CHECK(at_write(peer, &v, 1, 4, win_key, FI_UINT64, FI_SUM) == FI_EACCES, "misaligned");
    /* read-only page: reads only */
    CHECK(at_write(peer, &v, 1, 0, ro_key, FI_UINT64, FI_SUM) == FI_EACCES, "ro: sum");
    CHECK(at_fetch(peer, &v, &r, 1, 0, ro_key, FI_UINT64, FI_SUM) == FI_EACCES, "ro: fetch-add");
    CHECK(at_compare(peer, &v, &c, &r, 1, 0, ro_key, FI_UINT64, FI_CSWAP) == FI_EACCES, "ro: cas");
    CHECK(at_fetch(peer, NULL, &r, 1, 0, ro_key, FI_UINT64, FI_ATOMIC_READ) == 0 && r == 0x77,
          "ro: read %llx", (unsigned long long)r);
    /* write-only page: no fetch */
    CHECK(at_fetch(peer, NULL, &r, 1, 0, wo_key, FI_UINT64, FI_ATOMIC_READ) == FI_EACCES,
          "wo read");
    CHECK(at_fetch(peer, &v, &r, 1, OFF_WO, wo_key, FI_UINT64, FI_SUM) == FI_EACCES, "wo fetch");
    v = WO_VALUE;
    CHECK(at_write(peer, &v, 1, OFF_WO, wo_key, FI_UINT64, FI_SUM) == 0, "wo: sum");
    /* not offered: refused in the call, nothing posted */
    struct fi_context x;
    float f = 1;
    CHECK(fi_atomic(ep, &f, 1, NULL, peer, 0, win_key, FI_FLOAT, FI_BOR, &x) == -FI_EOPNOTSUPP &&
              fi_atomic(ep, &v, 1, NULL, peer, 0, win_key, FI_INT8, FI_SUM, &x) == -FI_EOPNOTSUPP &&
              fi_atomic(ep, &v, 1, NULL, peer, 0, win_key, FI_UINT64, FI_CSWAP, &x) ==
                  -FI_EOPNOTSUPP &&
              fi_fetch_atomic(ep, &v, 1, NULL, &r, NULL, peer, 0, win_key, FI_UINT64, FI_CSWAP,
                              &x) == -FI_EOPNOTSUPP,
          "an op not offered was accepted");
    /* after the refusals the pair works */
    v = 2;
    CHECK(at_fetch(peer, &v, &r, 1, 0, win_key, FI_UINT64, FI_SUM) == 0, "after refusals");
}

static void open_all(void)
{
    int rc;
    info = atomic_info(FI_TAGGED | FI_ATOMIC, FI_MR_PROV_KEY, 0, &rc);
    FI(rc);
    ofi_open_ep(info, FI_AV_TABLE, 64, &fab, &dom, &cq, &av, &ep);
    struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP };
    FI(fi_cntr_open(dom, &ca, &wcntr, NULL));
    FI(fi_cntr_open(dom, &ca, &rcntr, NULL));
    FI(fi_ep_bind(ep, &wcntr->fid, FI_WRITE));
    FI(fi_ep_bind(ep, &rcntr->fid, FI_READ));
    FI(fi_enable(ep));
    char name[256], rname[256];
    size_t len = sizeof name;
    FI(fi_getname(&ep->fid, name, &len));
    CHECK(write(to_peer, name, len) == (ssize_t)len && read(from_peer, rname, len) == (ssize_t)len,
          "pipe: names");
    if (me)
        return; /* the target never inserts the initiator (Open MPI 5's btl/ofi) */
    CHECK(fi_av_insert(av, rname, 1, &peer, 0, NULL) == 1, "av_insert peer");
    CHECK(fi_av_insert(av, name, 1, &self_addr, 0, NULL) == 1, "av_insert self");
}

static void child_serves(void)
{
    uint64_t *win = aligned_alloc(4096, WIN_LEN), *ro = aligned_alloc(4096, WIN_LEN),
             *wo = aligned_alloc(4096, WIN_LEN);
    CHECK(win && ro && wo, "aligned_alloc");
    memset(win, 0, WIN_LEN);
    memset(wo, 0, WIN_LEN);
    for (unsigned i = 0; i < WIN_LEN / 8; i++)
        ro[i] = 0x77;
    struct fid_mr *m[3];
    FI(fi_mr_reg(dom, win, WIN_LEN, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &m[0], NULL));
    FI(fi_mr_reg(dom, ro, WIN_LEN, FI_REMOTE_READ, 0, 0, 0, &m[1], NULL));
    FI(fi_mr_reg(dom, wo, WIN_LEN, FI_REMOTE_WRITE, 0, 0, 0, &m[2], NULL));
    uint64_t keys[3] = { fi_mr_key(m[0]), fi_mr_key(m[1]), fi_mr_key(m[2]) };
    CHECK(write(to_peer, keys, sizeof keys) == sizeof keys, "pipe");
    sync_peer(); /* the parent's checks run meanwhile; we progress */
    for (unsigned i = 0; i < WIN_LEN / 8; i++)
        CHECK(ro[i] == 0x77, "the read-only page was written at %u", i);
    for (unsigned i = 0; i < WIN_LEN / 8; i++)
        CHECK(wo[i] == (i == OFF_WO / 8 ? WO_VALUE : 0), "write-only page at %u: %llx", i,
              (unsigned long long)wo[i]);
    CHECK(win[WIN_LEN / 8 - 1] == 0, "a refused atomic past the end touched the window's tail");
    CHECK(win[OFF_ARRAY / 8 + 5] == 1010, "the 64-element sum is not in the window");
    sync_peer();
    for (int i = 0; i < 3; i++)
        fi_close(&m[i]->fid);
    pause(); /* killed by the parent */
}

static void parent_checks(pid_t child)
{
    CHECK(read(from_peer, &win_key, 8) == 8 && read(from_peer, &ro_key, 8) == 8 &&
              read(from_peer, &wo_key, 8) == 8,
          "pipe: keys");
    query_checks();
    op_checks();
    form_checks();
    refusal_checks();
    CHECK(fi_cntr_read(wcntr) == (uint64_t)n_w && fi_cntr_readerr(wcntr) == (uint64_t)bad_w &&
              fi_cntr_read(rcntr) == (uint64_t)n_r && fi_cntr_readerr(rcntr) == (uint64_t)bad_r,
          "counters: write %lu/%lu read %lu/%lu, want %d/%d %d/%d",
          (unsigned long)fi_cntr_read(wcntr), (unsigned long)fi_cntr_readerr(wcntr),
          (unsigned long)fi_cntr_read(rcntr), (unsigned long)fi_cntr_readerr(rcntr), n_w, bad_w,
          n_r, bad_r);
    printf("counters: FI_WRITE %d ok %d failed, FI_READ %d ok %d failed\n", n_w, bad_w, n_r, bad_r);
    sync_peer(); /* the child checks its pages */
    sync_peer();
    /* the target dies: an atomic to it ends, it does not hang */
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    double t0 = ofi_now_s();
    uint64_t v = 1, r;
    struct fi_context c;
    ssize_t rc = fi_fetch_atomic(ep, &v, 1, NULL, &r, NULL, peer, 0, win_key, FI_UINT64, FI_SUM,
                                 &c);
    if (rc == 0)
        CHECK(wait_ctx(&c, FI_ATOMIC | FI_READ) == FI_EIO, "atomic to a killed target");
    else
        CHECK(rc == -FI_EIO, "atomic to a killed target: %zd", rc);
    printf("killed target: the atomic failed after %.2f s\n", ofi_now_s() - t0);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        setenv("FI_PROVIDER_PATH", argv[1], 1);
    setenv("FI_ETHERMPI_IF_INCLUDE", "127.0.0.1", 0);
    setenv("FI_ETHERMPI_RETRIES", "12", 0);
    setenv("FI_ETHERMPI_RTO_MAX_US", "250000", 0);
    pid_t pid = ofi_fork_pair(&me, &to_peer, &from_peer);
    if (pid < 0)
        return 1;
    if (!me)
        getinfo_checks();
    open_all();
    if (me) {
        child_serves();
        return 0;
    }
    parent_checks(pid);
    fi_close(&ep->fid);
    fi_close(&wcntr->fid);
    fi_close(&rcntr->fid);
    fi_close(&av->fid);
    fi_close(&cq->fid);
    fi_close(&dom->fid);
    fi_close(&fab->fid);
    fi_freeinfo(info);
    printf("test_ofi_atomic: all checks passed\n");
    return 0;
}
