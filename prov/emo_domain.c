/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file emo_domain.c
 * The domain: its objects' constructors (address vector: emo_av.c,
 * completion queue: emo_cq.c, counter: emo_cntr.c, memory registration:
 * emo_rma.c), its lock and its endpoints' shared region table.
 */
#include "emo_prov.h"

#include <stdio.h>
#include <stdlib.h>

/* ---- domain ------------------------------------------------------------ */

int emo_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr, struct fid_cq **cq,
                void *context);

static int domain_close(struct fid *fid)
{
    struct emo_domain *d = container_of_emo(fid, struct emo_domain, dom.fid);
    if (d->neps || d->nmrs) {
        FI_WARN(&emo_prov, FI_LOG_DOMAIN,
                "fi_close(domain): %u endpoint(s) and %u registration(s) still open\n", d->neps,
                d->nmrs);
        return -FI_EBUSY;
    }
    em_regions_fini(&d->regions);
    em_lock_fini(&d->lock);
    free(d);
    return 0;
}

static int no_scalable_ep(struct fid_domain *d, struct fi_info *i, struct fid_ep **e, void *c)
{
    return -FI_ENOSYS;
}

static int no_poll_open(struct fid_domain *d, struct fi_poll_attr *a, struct fid_poll **p)
{
    return -FI_ENOSYS;
}

static int no_stx_ctx(struct fid_domain *d, struct fi_tx_attr *a, struct fid_stx **s, void *c)
{
    return -FI_ENOSYS;
}

static int no_srx_ctx(struct fid_domain *d, struct fi_rx_attr *a, struct fid_ep **e, void *c)
{
    return -FI_ENOSYS;
}

static int query_atomic(struct fid_domain *fd, enum fi_datatype dt, enum fi_op op,
                        struct fi_atomic_attr *a, uint64_t flags)
{
    return emo_query_atomic(container_of_emo(fd, struct emo_domain, dom), dt, op, a, flags);
}

static int no_query_collective(struct fid_domain *d, enum fi_collective_op coll,
                               struct fi_collective_attr *a, uint64_t flags)
{
    return -FI_ENOSYS;
}

/* an endpoint opens under its domain's lock: it joins the domain's count
 * and region table */
static int ep_open_locked(struct fid_domain *fd, struct fi_info *info, struct fid_ep **ep,
                          void *context)
{
    struct emo_domain *d = container_of_emo(fd, struct emo_domain, dom);
    emo_lock(d);
    int rc = emo_ep_open(fd, info, ep, context);
    emo_unlock(d);
    return rc;
}

static int endpoint2(struct fid_domain *d, struct fi_info *info, struct fid_ep **ep, uint64_t flags,
                     void *context)
{
    return flags ? -FI_EBADFLAGS : ep_open_locked(d, info, ep, context);
}

static struct fi_ops domain_fi_ops = EMO_FI_OPS(domain_close, emo_no_bind, emo_no_control);
static struct fi_ops_domain domain_ops = { .size = sizeof(struct fi_ops_domain),
                                           .av_open = emo_av_open,
                                           .cq_open = emo_cq_open,
                                           .endpoint = ep_open_locked,
                                           .scalable_ep = no_scalable_ep,
                                           .cntr_open = emo_cntr_open,
                                           .poll_open = no_poll_open,
                                           .stx_ctx = no_stx_ctx,
                                           .srx_ctx = no_srx_ctx,
                                           .query_atomic = query_atomic,
                                           .query_collective = no_query_collective,
                                           .endpoint2 = endpoint2 };

int emo_domain_open(struct fid_fabric *fabric, struct fi_info *info, struct fid_domain **dom,
                    void *context)
{
    emo_params_load();
    int index = emo_domain_index(info && info->domain_attr ? info->domain_attr->name : NULL);
    if (index < 0)
        return -FI_EINVAL;
    struct emo_domain *d = calloc(1, sizeof *d);
    if (!d)
        return -FI_ENOMEM;
    d->index = (unsigned)index;
    d->fab = container_of_emo(fabric, struct emo_fabric, fab);
    emo_fid_init(&d->dom.fid, FI_CLASS_DOMAIN, context, &domain_fi_ops);
    d->dom.ops = &domain_ops;
    d->dom.mr = &emo_mr_ops;
    em_regions_init(&d->regions);
    /* FI_RMA or FI_ATOMIC was asked and granted (emo_prov.c offers them
     * with FI_MR_PROV_KEY): registrations become regions */
    d->rma = info && (info->caps & (FI_RMA | FI_ATOMIC));
    d->atomic = info && (info->caps & FI_ATOMIC);
    /* the level the domain was opened with: FI_THREAD_DOMAIN (and UNSPEC)
     * takes no lock; every other (SAFE, FID, ENDPOINT, COMPLETION: the
     * caller serialises less) takes the domain's lock at every entry
     * point (docs/design.md, "Threads") */
    enum fi_threading th = info && info->domain_attr ? info->domain_attr->threading
                                                     : FI_THREAD_DOMAIN;
    if (em_lock_init(&d->lock, th != FI_THREAD_DOMAIN && th != FI_THREAD_UNSPEC) != 0) {
        em_regions_fini(&d->regions);
        free(d);
        return -FI_ENOMEM;
    }
    *dom = &d->dom;
    return 0;
}
