/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file emo_cq.c
 * Completion queue: completions in a growing ring (never dropped: the
 * provider has no other place for them), errors in a FIFO list.  Reading
 * drives every endpoint bound to the queue (manual progress).  Wait
 * objects FI_WAIT_FD (FI_WAIT_UNSPEC is the same): fi_cq_sread sleeps,
 * FI_GETWAIT gives an epoll descriptor, fi_trywait arms it (emo_wait.c).
 */
#include "emo_prov.h"

#include <sched.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int emo_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr, struct fid_cq **cq,
                void *context);

int emo_cq_write(struct emo_cq *cq, void *ctx, uint64_t flags, size_t len, void *buf, uint64_t data,
                 uint64_t tag, fi_addr_t src)
{
    if (cq->count == cq->cap) {
        size_t cap = cq->cap * 2;
        struct emo_cqe *r = malloc(cap * sizeof *r);
        if (!r) {
            FI_WARN(&emo_prov, FI_LOG_CQ, "out of memory for a completion: it is lost\n");
            return -FI_ENOMEM;
        }
        for (size_t i = 0; i < cq->count; i++)
            r[i] = cq->ring[(cq->head + i) % cq->cap];
        free(cq->ring);
        cq->ring = r;
        cq->cap = cap;
        cq->head = 0;
    }
    struct emo_cqe *e = &cq->ring[(cq->head + cq->count++) % cq->cap];
    e->e = (struct fi_cq_tagged_entry){
        .op_context = ctx, .flags = flags, .len = len, .buf = buf, .data = data, .tag = tag
    };
    e->src = src;
    emo_wait_signal(&cq->eps);
    return 0;
}

int emo_cq_write_err(struct emo_cq *cq, void *ctx, uint64_t flags, int err, size_t len, size_t olen,
                     uint64_t tag, fi_addr_t src, const char *fmt, ...)
{
    struct emo_cq_err *x = calloc(1, sizeof *x);
    if (!x) {
        FI_WARN(&emo_prov, FI_LOG_CQ, "out of memory for an error completion: it is lost\n");
        return -FI_ENOMEM;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(x->msg, sizeof x->msg, fmt, ap);
    va_end(ap);
    x->e.op_context = ctx;
    x->e.flags = flags;
    x->e.len = len;
    x->e.olen = olen;
    x->e.tag = tag;
    x->e.err = err < 0 ? -err : err;
    x->e.prov_errno = x->e.err;
    x->src = src;
    if (cq->err_tail)
        cq->err_tail->next = x;
    else
        cq->err_head = x;
    cq->err_tail = x;
    emo_wait_signal(&cq->eps);
    FI_INFO(&emo_prov, FI_LOG_CQ, "error completion: %s (%s)\n", fi_strerror(x->e.err), x->msg);
    return 0;
}

static int cq_progress(struct emo_cq *cq) { return emo_ep_set_progress(&cq->eps); }

/* copy entry @p e in the CQ's format to @p out */
static size_t put_entry(const struct emo_cq *cq, const struct emo_cqe *e, void *out)
{
    switch (cq->format) {
    case FI_CQ_FORMAT_CONTEXT: {
        struct fi_cq_entry c = { .op_context = e->e.op_context };
        memcpy(out, &c, sizeof c);
        return sizeof c;
    }
    case FI_CQ_FORMAT_MSG: {
        struct fi_cq_msg_entry m = { .op_context = e->e.op_context,
                                     .flags = e->e.flags,
                                     .len = e->e.len };
        memcpy(out, &m, sizeof m);
        return sizeof m;
    }
    case FI_CQ_FORMAT_DATA: {
        struct fi_cq_data_entry d = { .op_context = e->e.op_context,
                                      .flags = e->e.flags,
                                      .len = e->e.len,
                                      .buf = e->e.buf,
                                      .data = e->e.data };
        memcpy(out, &d, sizeof d);
        return sizeof d;
    }
    default: memcpy(out, &e->e, sizeof e->e); return sizeof e->e;
    }
}

/* does a bound endpoint wait for a message (a posted receive)? */
static bool cq_waits(const struct emo_cq *cq)
{
    for (unsigned i = 0; i < cq->eps.n; i++)
        if (cq->eps.v[i].ep->posted_tag.len || cq->eps.v[i].ep->posted_msg.len)
            return true;
    return false;
}

/* Gap between reads below which the caller is taken to be polling in a loop. */
#define EMO_SPIN_GAP_NS 20000u

/*
 * The CQ is empty after one round of progress.  A caller that reads again
 * right after its last read, while a receive is posted, is waiting for a
 * message: progress on for up to FI_ETHERMPI_CQ_SPIN_NS before saying
 * -FI_EAGAIN.  MPICH's MPID_Progress_wait calls sched_yield() after every
 * progress test, one that completed the request too (docs/ofi.md "The
 * floor MPICH sets"), so a read that found nothing costs one more yield;
 * on a loaded host a yield hands the core to another process, and a
 * message that arrives meanwhile waits for the core to come back (MPICH's
 * one-way latency is then several times Open MPI's, which spins:
 * docs/ofi.md "Latency under MPICH").  Bounded, and only in a polling
 * loop: an application that reads the CQ now and then between computations
 * (gaps over EMO_SPIN_GAP_NS) is answered at once.
 *
 * Adaptive, as glibc's adaptive mutexes spin: a spin pays only when the
 * completion comes within it.  When it does not (the peer computes for
 * long, or it needs the very core we spin on: ranks sharing cores) the
 * spin is wasted core time, so the score of recent spins decides: under
 * half of them rewarded, the CQ stops spinning and tries one spin in
 * EMO_SPIN_RETRY eligible reads to notice when spinning pays again.
 */
#define EMO_SPIN_ONE   256u /* score of a CQ whose every recent spin was rewarded */
#define EMO_SPIN_RETRY 64u  /* a low-scoring CQ spins once per this many eligible reads */

/* The clock of the progress call just made: every empty read would
 * otherwise read it a second time (a counted 26 clock reads per round trip
 * against the rudp BTL's 12 under ob1; docs/ofi-measurements.md "Open
 * MPI 4.1 over kernel UDP").  @p after: a time this read must exceed, or
 * the engine did not run (a read from inside progress) and the real clock
 * is read. */
static uint64_t cq_clock(const struct emo_cq *cq, uint64_t after)
{
    uint64_t t = cq->eps.n && cq->eps.v[0].ep->eng ? em_engine_now(cq->eps.v[0].ep->eng) : 0;
    return t > after ? t : em_now_ns();
}

/* @return the work the spin's progress calls did */
static int cq_spin(struct emo_cq *cq)
{
    if (emo_params.cq_spin_ns <= 0)
        return 0;
    uint64_t now = cq_clock(cq, cq->read_at);
    if (now - cq->read_at >= EMO_SPIN_GAP_NS || !cq_waits(cq))
        return 0;
    if (cq->spin_score < EMO_SPIN_ONE / 2 && ++cq->spin_skip < EMO_SPIN_RETRY)
        return 0;
    cq->spin_skip = 0;
    uint64_t end = now + (uint64_t)emo_params.cq_spin_ns;
    int work = 0;
    while (cq->count == 0 && !cq->err_head && now < end) {
        work += cq_progress(cq);
        now = cq_clock(cq, now);
    }
    bool paid = cq->count || cq->err_head;
    /* moving average over ~8 spins */
    cq->spin_score = (uint16_t)(cq->spin_score - cq->spin_score / 8 +
                                (paid ? EMO_SPIN_ONE / 8 : 0));
    return work;
}

/*
 * The CQ is empty after progress (and the spin), and the caller reads it
 * in a loop (its last read returned under EMO_SPIN_GAP_NS ago), and no
 * frame or completion has come for FI_ETHERMPI_YIELD_US: give up the core
 * once (sched_yield) before answering -FI_EAGAIN.  Open MPI's mtl ofi
 * waits for a blocking send's completion by calling fi_cq_read in a loop
 * that never yields (mpi_yield_when_idle only reaches opal_progress), so
 * with more ranks than cores a rank whose rendezvous send waits for the
 * CTS of a receiver on its own core would keep that core until the
 * scheduler's tick took it away (docs/ofi.md "Ranks sharing cores"; the
 * invariant: a polling loop that finds nothing for FI_ETHERMPI_YIELD_US
 * lets the other task run).  A rank with a core of its own loses
 * nothing but the call (no other task to run), and only after
 * FI_ETHERMPI_YIELD_US of waiting; a reader between computations (gaps
 * over EMO_SPIN_GAP_NS) never yields here.
 */
static void cq_yield(struct emo_cq *cq, uint64_t last_read)
{
    uint64_t now = cq->read_at; /* this read's progress call's clock */
    if (now - last_read >= EMO_SPIN_GAP_NS) {
        cq->busy_at = now; /* not a polling loop, or a new wait: it starts now */
        return;
    }
    if (emo_params.yield_us > 0 && now - cq->busy_at >= (uint64_t)emo_params.yield_us * 1000u)
        (void)sched_yield();
}

static ssize_t cq_take(struct emo_cq *cq, void *buf, size_t count, fi_addr_t *src)
{
    int work = 0;
    if (cq->count == 0) {
        work = cq_progress(cq);
        if (cq->count == 0 && !cq->err_head)
            work += cq_spin(cq);
    }
    /* the clock of the progress call just made (no clock read of our own) */
    uint64_t last = cq->read_at;
    cq->read_at = cq->eps.n && cq->eps.v[0].ep->eng ? em_engine_now(cq->eps.v[0].ep->eng) : 0;
    cq->last_work = work;
    if (work > 0 || cq->count || cq->err_head)
        cq->busy_at = cq->read_at; /* activity: an entry, or frames taken */
    else
        cq_yield(cq, last);
    if (cq->count == 0)
        return cq->err_head ? -FI_EAVAIL : -FI_EAGAIN;
    /* an error waits to be read: entries before it may be read first */
    size_t n = 0;
    uint8_t *o = buf;
    while (n < count && cq->count) {
        const struct emo_cqe *e = &cq->ring[cq->head];
        o += put_entry(cq, e, o);
        if (src)
            src[n] = e->src;
        cq->head = (cq->head + 1) % cq->cap;
        cq->count--;
        n++;
    }
    return (ssize_t)n;
}

/* cq_take under the domain's lock (FI_THREAD_SAFE; nothing otherwise) */
static ssize_t cq_take_locked(struct emo_cq *cq, void *buf, size_t count, fi_addr_t *src)
{
    emo_lock(cq->dom);
    ssize_t n = cq_take(cq, buf, count, src);
    emo_unlock(cq->dom);
    return n;
}

static ssize_t cq_read(struct fid_cq *fcq, void *buf, size_t count)
{
    return cq_take_locked(container_of_emo(fcq, struct emo_cq, cq), buf, count, NULL);
}

static ssize_t cq_readfrom(struct fid_cq *fcq, void *buf, size_t count, fi_addr_t *src)
{
    return cq_take_locked(container_of_emo(fcq, struct emo_cq, cq), buf, count, src);
}

static ssize_t cq_readerr_(struct emo_cq *cq, struct fi_cq_err_entry *buf);

static ssize_t cq_readerr(struct fid_cq *fcq, struct fi_cq_err_entry *buf, uint64_t flags)
{
    (void)flags;
    struct emo_cq *cq = container_of_emo(fcq, struct emo_cq, cq);
    emo_lock(cq->dom);
    ssize_t n = cq_readerr_(cq, buf);
    emo_unlock(cq->dom);
    return n;
}

static ssize_t cq_readerr_(struct emo_cq *cq, struct fi_cq_err_entry *buf)
{
    struct emo_cq_err *x = cq->err_head;
    if (!x)
        return -FI_EAGAIN;
    cq->err_head = x->next;
    if (!cq->err_head)
        cq->err_tail = NULL;
    /* API >= 1.5: the caller's err_data_size says whether it gave a buffer.
     * A caller that reuses its fi_cq_err_entry hands back our pointer from
     * the last call, with its size: that is no buffer of its own (it was
     * freed below; copying into it corrupted the heap, and fabtests'
     * fi_rdm_tagged_peek crashed in _dl_fini at exit) */
    size_t user_sz = buf->err_data_size;
    void *user_buf = buf->err_data;
    if (cq->err_last && user_buf == (void *)cq->err_last->msg)
        user_sz = 0;
    /* err_data stays valid until the next readerr (libfabric's rule) */
    free(cq->err_last);
    cq->err_last = x;
    *buf = x->e;
    /* FI_ENOMSG (a peek that found nothing) and FI_ECANCELED say all there
     * is: no err_data, and the caller's buffer is never written (as the
     * util providers, whose such entries have none) */
    size_t mlen = x->e.err == FI_ENOMSG || x->e.err == FI_ECANCELED ? 0 : strlen(x->msg) + 1;
    if (!mlen) {
        buf->err_data = NULL;
        buf->err_data_size = 0;
    } else if (user_sz && user_buf) {
        size_t k = user_sz < mlen ? user_sz : mlen;
        memcpy(user_buf, x->msg, k);
        buf->err_data = user_buf;
        buf->err_data_size = k;
    } else {
        buf->err_data = x->msg;
        buf->err_data_size = mlen;
    }
    return 1;
}

/*
 * Read, and sleep on the wait object (emo_wait.c) between reads that find
 * nothing, until an entry comes, fi_cq_signal, or @p timeout ms (-1: none)
 * pass (-FI_EAGAIN).  The sleep ends at the bound engines' next timer too:
 * their retransmissions and ACKs go out on time.  It is skipped after a
 * read whose progress took frames (the link may hold more than its
 * descriptor shows).  A FI_WAIT_NONE CQ gets its wait object here, at its
 * first sread.  @p cond is ignored: one entry ends the wait.
 */
static ssize_t cq_sreadfrom(struct fid_cq *fcq, void *buf, size_t count, fi_addr_t *src,
                            const void *cond, int timeout)
{
    (void)cond;
    struct emo_cq *cq = container_of_emo(fcq, struct emo_cq, cq);
    uint64_t end = timeout >= 0 ? em_now_ns() + (uint64_t)timeout * 1000000u : UINT64_MAX;
    for (;;) {
        /* the lock is held for the read and the arming, never the sleep */
        emo_lock(cq->dom);
        ssize_t n = cq_take(cq, buf, count, src);
        int work = cq->last_work;
        emo_unlock(cq->dom);
        if (n != -FI_EAGAIN)
            return n;
        /* woken by fi_cq_signal (before it did, the signal was ignored:
         * fabtests' fi_cq_test cq_signal) */
        if (atomic_exchange(&cq->signaled, false) || em_now_ns() >= end)
            return -FI_EAGAIN;
        if (work > 0)
            continue;
        emo_lock(cq->dom);
        int armed = emo_wait_open(&cq->eps) == 0 && emo_wait_arm(&cq->eps, end) == 0;
        emo_unlock(cq->dom);
        if (!armed) {
            (void)sched_yield(); /* no wait object: poll, giving the core away */
            continue;
        }
        if (!atomic_load(&cq->signaled)) /* a signal since the check: its kick was drained */
            (void)emo_wait_sleep(&cq->eps);
    }
}

static ssize_t cq_sread(struct fid_cq *fcq, void *buf, size_t count, const void *cond, int timeout)
{
    return cq_sreadfrom(fcq, buf, count, NULL, cond, timeout);
}

static int cq_signal(struct fid_cq *cq)
{
    struct emo_cq *q = container_of_emo(cq, struct emo_cq, cq);
    atomic_store(&q->signaled, true);
    emo_wait_kick(&q->eps); /* a sleeping fi_cq_sread wakes */
    return 0;
}

static const char *cq_strerror(struct fid_cq *cq, int prov_errno, const void *err_data, char *buf,
                               size_t len)
{
    const char *s = err_data ? (const char *)err_data : fi_strerror(prov_errno);
    if (buf && len) {
        snprintf(buf, len, "%s", s);
        return buf;
    }
    return s;
}

static int cq_close(struct fid *fid)
{
    struct emo_cq *cq = container_of_emo(fid, struct emo_cq, cq.fid);
    if (cq->eps.n)
        return -FI_EBUSY;
    while (cq->err_head) {
        struct emo_cq_err *x = cq->err_head;
        cq->err_head = x->next;
        free(x);
    }
    free(cq->err_last);
    free(cq->ring);
    emo_ep_set_fini(&cq->eps);
    free(cq);
    return 0;
}

static int cq_control(struct fid *fid, int command, void *arg)
{
    struct emo_cq *cq = container_of_emo(fid, struct emo_cq, cq.fid);
    emo_lock(cq->dom); /* an fi_cq_sread may be making the wait object */
    int rc = emo_wait_control(&cq->eps, cq->wait_obj, command, arg);
    emo_unlock(cq->dom);
    return rc;
}

static struct fi_ops cq_fi_ops = EMO_FI_OPS(cq_close, emo_no_bind, cq_control);
static struct fi_ops_cq cq_ops = { .size = sizeof(struct fi_ops_cq),
                                   .read = cq_read,
                                   .readfrom = cq_readfrom,
                                   .readerr = cq_readerr,
                                   .sread = cq_sread,
                                   .sreadfrom = cq_sreadfrom,
                                   .signal = cq_signal,
                                   .strerror = cq_strerror };

int emo_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr, struct fid_cq **fcq,
                void *context)
{
    enum fi_cq_format fmt = attr ? attr->format : FI_CQ_FORMAT_UNSPEC;
    if (fmt == FI_CQ_FORMAT_UNSPEC)
        fmt = FI_CQ_FORMAT_CONTEXT;
    if (fmt != FI_CQ_FORMAT_CONTEXT && fmt != FI_CQ_FORMAT_MSG && fmt != FI_CQ_FORMAT_DATA &&
        fmt != FI_CQ_FORMAT_TAGGED)
        return -FI_ENOSYS;
    enum fi_wait_obj wait = attr ? attr->wait_obj : FI_WAIT_NONE;
    if (wait != FI_WAIT_NONE && wait != FI_WAIT_UNSPEC && wait != FI_WAIT_FD) {
        FI_INFO(&emo_prov, FI_LOG_CQ, "wait object %d: only FI_WAIT_NONE, _UNSPEC and _FD\n",
                (int)wait);
        return -FI_ENOSYS;
    }
    struct emo_cq *cq = calloc(1, sizeof *cq);
    if (!cq)
        return -FI_ENOMEM;
    emo_ep_set_init(&cq->eps);
    cq->wait_obj = wait == FI_WAIT_NONE ? FI_WAIT_NONE : FI_WAIT_FD;
    int rc = wait == FI_WAIT_NONE ? 0 : emo_wait_open(&cq->eps);
    if (rc) {
        free(cq);
        return rc;
    }
    cq->cap = attr && attr->size ? attr->size : EMO_CQ_DEFAULT;
    cq->ring = malloc(cq->cap * sizeof *cq->ring);
    if (!cq->ring) {
        emo_ep_set_fini(&cq->eps);
        free(cq);
        return -FI_ENOMEM;
    }
    cq->dom = container_of_emo(domain, struct emo_domain, dom);
    cq->format = fmt;
    cq->spin_score = EMO_SPIN_ONE; /* spin from the start; unrewarded spins end it */
    emo_fid_init(&cq->cq.fid, FI_CLASS_CQ, context, &cq_fi_ops);
    cq->cq.ops = &cq_ops;
    *fcq = &cq->cq;
    return 0;
}
