/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file emo_cntr.c
 * Completion counters (fi_cntr_open, FI_CNTR_EVENTS_COMP).  MPICH's ch4:ofi
 * opens one in MPI_Init whatever the provider offers, and binds it for
 * FI_READ | FI_WRITE (its RMA completion count); without fi_cntr_open its
 * MPI_Init failed with "OFI call openct failed".
 *
 * A counter bound to an endpoint for FI_SEND counts that endpoint's
 * completed sends, for FI_RECV its completed receives (every one, whether
 * or not it writes a CQ entry); a failed one counts in the error count.
 * For FI_READ / FI_WRITE it counts the endpoint's completed RMA reads /
 * writes (emo_rma.c); FI_REMOTE_* are accepted and never move (no
 * FI_RMA_EVENT).  Wait objects FI_WAIT_NONE, _UNSPEC and _FD (emo_wait.c):
 * fi_cntr_wait drives the bound endpoints (manual progress), as
 * fi_cntr_read does, and sleeps between progress calls that found nothing.
 *
 * Threading: as everything else: the domain's lock (FI_THREAD_SAFE) is
 * held by every entry point here.
 */
#include "emo_prov.h"
#include "util/clock.h"

#include <sched.h>
#include <stdlib.h>

static int cntr_progress(struct emo_cntr *c) { return emo_ep_set_progress(&c->eps); }

void emo_cntr_inc(struct emo_cntr *c, int status)
{
    if (!c)
        return;
    if (status)
        c->err++;
    else
        c->val++;
    emo_wait_signal(&c->eps);
}

/* progress, then one of the values, under the domain's lock */
static uint64_t cntr_get(struct fid_cntr *fc, bool err)
{
    struct emo_cntr *c = container_of_emo(fc, struct emo_cntr, cntr);
    emo_lock(c->dom);
    cntr_progress(c);
    uint64_t v = err ? c->err : c->val;
    emo_unlock(c->dom);
    return v;
}

static uint64_t cntr_read(struct fid_cntr *fc) { return cntr_get(fc, false); }
static uint64_t cntr_readerr(struct fid_cntr *fc) { return cntr_get(fc, true); }

/* one of the values changed: set (@p add false) or added to */
static int cntr_change(struct fid_cntr *fc, bool err, bool add, uint64_t v)
{
    struct emo_cntr *c = container_of_emo(fc, struct emo_cntr, cntr);
    emo_lock(c->dom);
    uint64_t *at = err ? &c->err : &c->val;
    *at = add ? *at + v : v;
    emo_wait_signal(&c->eps);
    emo_unlock(c->dom);
    return 0;
}

static int cntr_add(struct fid_cntr *fc, uint64_t v) { return cntr_change(fc, false, true, v); }
static int cntr_set(struct fid_cntr *fc, uint64_t v) { return cntr_change(fc, false, false, v); }
static int cntr_adderr(struct fid_cntr *fc, uint64_t v) { return cntr_change(fc, true, true, v); }
static int cntr_seterr(struct fid_cntr *fc, uint64_t v) { return cntr_change(fc, true, false, v); }

/* Drive the bound endpoints until the count reaches @p threshold; a new
 * error ends the wait (-FI_EAVAIL), as does @p timeout ms (-FI_ETIMEDOUT;
 * -1 = none).  Between progress calls that did nothing it sleeps on the
 * wait object (emo_wait.c; made here for a FI_WAIT_NONE counter), which
 * the engines' timers bound. */
static int cntr_wait(struct fid_cntr *fc, uint64_t threshold, int timeout)
{
    struct emo_cntr *c = container_of_emo(fc, struct emo_cntr, cntr);
    emo_lock(c->dom);
    uint64_t err0 = c->err;
    emo_unlock(c->dom);
    uint64_t end = timeout >= 0 ? em_clock_ns() + (uint64_t)timeout * 1000000u : UINT64_MAX;
    for (;;) {
        /* the lock is held for progress, the checks and the arming, never
         * the sleep */
        emo_lock(c->dom);
        int work = cntr_progress(c);
        int rc = c->val >= threshold    ? 0
                 : c->err != err0       ? -FI_EAVAIL
                 : em_clock_ns() >= end ? -FI_ETIMEDOUT
                                        : 1;
        bool armed = rc == 1 && work <= 0 && emo_wait_open(&c->eps) == 0 &&
                     emo_wait_arm(&c->eps, end) == 0;
        emo_unlock(c->dom);
        if (rc != 1)
            return rc;
        if (work > 0)
            continue; /* the link may hold more than its descriptor shows */
        if (!armed)
            (void)sched_yield(); /* no wait object: poll, giving the core away */
        else
            (void)emo_wait_sleep(&c->eps);
    }
}

static int cntr_control(struct fid *fid, int command, void *arg)
{
    struct emo_cntr *c = container_of_emo(fid, struct emo_cntr, cntr.fid);
    emo_lock(c->dom); /* an fi_cntr_wait may be making the wait object */
    int rc = emo_wait_control(&c->eps, c->wait_obj, command, arg);
    emo_unlock(c->dom);
    return rc;
}

static int cntr_close(struct fid *fid)
{
    struct emo_cntr *c = container_of_emo(fid, struct emo_cntr, cntr.fid);
    if (c->eps.n)
        return -FI_EBUSY; /* close the endpoints first */
    emo_ep_set_fini(&c->eps);
    free(c);
    return 0;
}

static struct fi_ops cntr_fi_ops = EMO_FI_OPS(cntr_close, emo_no_bind, cntr_control);
static struct fi_ops_cntr cntr_ops = { .size = sizeof(struct fi_ops_cntr),
                                       .read = cntr_read,
                                       .readerr = cntr_readerr,
                                       .add = cntr_add,
                                       .set = cntr_set,
                                       .wait = cntr_wait,
                                       .adderr = cntr_adderr,
                                       .seterr = cntr_seterr };

int emo_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr, struct fid_cntr **out,
                  void *context)
{
    enum fi_wait_obj wait = attr ? attr->wait_obj : FI_WAIT_NONE;
    if (attr && ((attr->events != FI_CNTR_EVENTS_COMP) || attr->flags ||
                 (wait != FI_WAIT_NONE && wait != FI_WAIT_UNSPEC && wait != FI_WAIT_FD)))
        return -FI_ENOSYS; /* completion events only; wait objects NONE, UNSPEC, FD */
    struct emo_cntr *c = calloc(1, sizeof *c);
    if (!c)
        return -FI_ENOMEM;
    emo_ep_set_init(&c->eps);
    c->wait_obj = wait == FI_WAIT_NONE ? FI_WAIT_NONE : FI_WAIT_FD;
    int rc = wait == FI_WAIT_NONE ? 0 : emo_wait_open(&c->eps);
    if (rc) {
        free(c);
        return rc;
    }
    c->dom = container_of_emo(domain, struct emo_domain, dom);
    emo_fid_init(&c->cntr.fid, FI_CLASS_CNTR, context, &cntr_fi_ops);
    c->cntr.ops = &cntr_ops;
    *out = &c->cntr;
    return 0;
}
