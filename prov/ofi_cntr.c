/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file ofi_cntr.c
 * Completion counters (fi_cntr_open, FI_CNTR_EVENTS_COMP).  MPICH's ch4:ofi
 * opens one in MPI_Init whatever the provider offers, and binds it for
 * FI_READ | FI_WRITE (its RMA completion count); without fi_cntr_open its
 * MPI_Init failed with "OFI call openct failed".
 *
 * A counter bound to an endpoint for FI_SEND counts that endpoint's
 * completed sends, for FI_RECV its completed receives (every one, whether
 * or not it writes a CQ entry); a failed one counts in the error count.
 * For FI_READ / FI_WRITE it counts the endpoint's completed RMA reads /
 * writes (ofi_rma.c); FI_REMOTE_* are accepted and never move (no
 * FI_RMA_EVENT).  No wait objects (FI_WAIT_NONE / UNSPEC):
 * fi_cntr_wait polls, driving the bound endpoints (manual progress), as
 * fi_cntr_read does.
 *
 * Threading: FI_THREAD_DOMAIN, as everything else.
 */
#include "ofi_prov.h"
#include "util/clock.h"

#include <stdlib.h>

static void cntr_progress(struct emo_cntr *c) { emo_ep_set_progress(&c->eps); }

void emo_cntr_inc(struct emo_cntr *c, int status)
{
    if (!c)
        return;
    if (status)
        c->err++;
    else
        c->val++;
}

static uint64_t cntr_read(struct fid_cntr *fc)
{
    struct emo_cntr *c = container_of_emo(fc, struct emo_cntr, cntr);
    cntr_progress(c);
    return c->val;
}

static uint64_t cntr_readerr(struct fid_cntr *fc)
{
    struct emo_cntr *c = container_of_emo(fc, struct emo_cntr, cntr);
    cntr_progress(c);
    return c->err;
}

static int cntr_add(struct fid_cntr *fc, uint64_t v)
{
    container_of_emo(fc, struct emo_cntr, cntr)->val += v;
    return 0;
}

static int cntr_set(struct fid_cntr *fc, uint64_t v)
{
    container_of_emo(fc, struct emo_cntr, cntr)->val = v;
    return 0;
}

static int cntr_adderr(struct fid_cntr *fc, uint64_t v)
{
    container_of_emo(fc, struct emo_cntr, cntr)->err += v;
    return 0;
}

static int cntr_seterr(struct fid_cntr *fc, uint64_t v)
{
    container_of_emo(fc, struct emo_cntr, cntr)->err = v;
    return 0;
}

static uint64_t ms_now(void) { return em_clock_ns() / 1000000u; }

/* poll until the count reaches @p threshold; a new error ends the wait
 * (-FI_EAVAIL), as does @p timeout ms (-FI_ETIMEDOUT; -1 = none) */
static int cntr_wait(struct fid_cntr *fc, uint64_t threshold, int timeout)
{
    struct emo_cntr *c = container_of_emo(fc, struct emo_cntr, cntr);
    uint64_t err0 = c->err, end = timeout >= 0 ? ms_now() + (uint64_t)timeout : UINT64_MAX;
    for (;;) {
        cntr_progress(c);
        if (c->val >= threshold)
            return 0;
        if (c->err != err0)
            return -FI_EAVAIL;
        if (ms_now() >= end)
            return -FI_ETIMEDOUT;
    }
}

static int cntr_close(struct fid *fid)
{
    struct emo_cntr *c = container_of_emo(fid, struct emo_cntr, cntr.fid);
    if (c->eps.n)
        return -FI_EBUSY; /* close the endpoints first */
    free(c);
    return 0;
}

static struct fi_ops cntr_fi_ops = EMO_FI_OPS(cntr_close, emo_no_bind, emo_no_control);
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
    if (attr && ((attr->events != FI_CNTR_EVENTS_COMP) || attr->flags ||
                 (attr->wait_obj != FI_WAIT_NONE && attr->wait_obj != FI_WAIT_UNSPEC)))
        return -FI_ENOSYS; /* completion events only, no wait objects */
    struct emo_cntr *c = calloc(1, sizeof *c);
    if (!c)
        return -FI_ENOMEM;
    emo_fid_init(&c->cntr.fid, FI_CLASS_CNTR, context, &cntr_fi_ops);
    c->cntr.ops = &cntr_ops;
    *out = &c->cntr;
    return 0;
}
