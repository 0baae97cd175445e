/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file emo_domain.c
 * Domain, address vector and completion queue (memory registration:
 * emo_rma.c).
 *
 * The AV keeps each peer's decoded address; fi_addr_t is the entry's
 * index for FI_AV_TABLE and FI_AV_MAP alike (FI_AV_MAP lets the provider
 * choose the value): the next index, or after fi_av_remove the lowest one
 * it freed (as libfabric's util AV reuses freed entries).  Peers reach
 * the engine lazily (emo_ep_set_peer): on the first send to them, or when
 * their first frame arrives.  fi_av_remove makes the bound endpoint
 * forget the peer (emo_ep_unset_peer) and remembers the pair's
 * incarnation (emo_peer_key; docs/ofi.md "Removing an address").
 *
 * The CQ keeps completions in a ring that grows (never drops one) and
 * errors in a list; reading it drives every endpoint bound to it.
 */
#include "emo_prov.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- address vector ------------------------------------------------------ */

static int av_close(struct fid *fid)
{
    struct emo_av *av = container_of_emo(fid, struct emo_av, av.fid);
    if (av->ep)
        return -FI_EBUSY;
    free(av->tab);
    free(av->by_id);
    free(av->gone);
    free(av);
    return 0;
}

fi_addr_t emo_av_lookup_id(const struct emo_av *av, uint32_t id)
{
    return av && id < av->n_by_id ? av->by_id[id] : FI_ADDR_NOTAVAIL;
}

/* make by_id hold id @p id (doubling; new entries FI_ADDR_NOTAVAIL):
 * ids are below EMO_NPEERS_MAX, the table as large as the largest one */
static int av_id_reserve(struct emo_av *av, uint32_t id)
{
    if (id < av->n_by_id)
        return 0;
    uint32_t n = av->n_by_id ? av->n_by_id : 256;
    while (n <= id)
        n *= 2;
    fi_addr_t *t = realloc(av->by_id, (size_t)n * sizeof *t);
    if (!t)
        return -FI_ENOMEM;
    for (uint32_t i = av->n_by_id; i < n; i++)
        t[i] = FI_ADDR_NOTAVAIL;
    av->by_id = t;
    av->n_by_id = n;
    return 0;
}

const emo_addr_t *emo_av_get(const struct emo_av *av, fi_addr_t fa)
{
    if (!av || fa >= av->n || !av->tab[fa].used)
        return NULL;
    return &av->tab[fa].a;
}

/* @p av's record of endpoint id @p id's removals, or NULL (a scan:
 * removals are rare, and this runs when a peer is set, not per frame) */
static struct emo_av_gone *av_gone(const struct emo_av *av, uint32_t id)
{
    for (size_t i = 0; av && i < av->ngone; i++)
        if (av->gone[i].id == id)
            return &av->gone[i];
    return NULL;
}

/* The pair's incarnation: after @p ep's AV removed this very endpoint
 * (same id, same secret) n times, the pair's key is that of epoch n.  The
 * peer that removed us as many times computes the same key, and frames of
 * an earlier incarnation (still in a socket buffer, or resent by a peer
 * that did not remove us) carry another: refused (drop_job_key), never
 * taken as the new pair's, although both start again at the same ISNs.
 * Another endpoint under the id (a new secret) starts at epoch 0. */
uint64_t emo_peer_key(const struct emo_ep *ep, const emo_addr_t *a)
{
    uint64_t key = emo_pair_key(ep->self.secret, ep->self.id, a->secret, a->id);
    const struct emo_av_gone *g = av_gone(ep->av, a->id);
    return g && g->secret == a->secret ? emo_pair_key_epoch(key, g->epoch) : key;
}

/* fi_addr_t for a new entry: the lowest one fi_av_remove freed, else the
 * next; @return 0, or -FI_ENOMEM */
static int av_slot(struct emo_av *av, fi_addr_t *fa)
{
    if (av->nfree) {
        while (av->tab[av->free_lo].used)
            av->free_lo++;
        av->nfree--;
        *fa = av->free_lo++;
        return 0;
    }
    if (av->n == av->cap) {
        size_t cap = av->cap ? av->cap * 2 : 64;
        struct emo_av_ent *t = realloc(av->tab, cap * sizeof *t);
        if (!t)
            return -FI_ENOMEM;
        av->tab = t;
        av->cap = cap;
    }
    *fa = av->n++;
    return 0;
}

/* A named address (emo_name.c): the bound endpoint numbers it (now, or at
 * fi_ep_bind: emo_av_bound); the same endpoint again gets its entry back. */
static int av_insert_named(struct emo_av *av, emo_addr_t *a, fi_addr_t *out)
{
    if (av->ep && !emo_named(av->ep)) {
        FI_WARN(&emo_prov, FI_LOG_AV,
                "a named address (an endpoint on a link with first contact) given to an "
                "endpoint on the %s link, which numbers its peers: run every process "
                "on the same FI_ETHERMPI_LINK\n",
                av->ep->link->ops->name);
        return -FI_EINVAL;
    }
    if (av->ep) {
        int rc = emo_name_resolve(av->ep, a);
        if (rc)
            return rc;
        if (av_id_reserve(av, a->id) != 0)
            return -FI_ENOMEM;
        if (av->by_id[a->id] != FI_ADDR_NOTAVAIL) {
            *out = av->by_id[a->id]; /* the same endpoint again */
            return 0;
        }
    }
    fi_addr_t fa;
    if (av_slot(av, &fa) != 0)
        return -FI_ENOMEM;
    av->tab[fa] = (struct emo_av_ent){ .a = *a, .used = 1 };
    if (a->id != EMO_ID_NONE)
        av->by_id[a->id] = fa;
    *out = fa;
    return 0;
}

int emo_av_bound(struct emo_av *av)
{
    if (!av->ep || !emo_named(av->ep))
        return 0;
    for (size_t i = 0; i < av->n; i++) {
        struct emo_av_ent *e = &av->tab[i];
        if (!e->used || !e->a.named || e->a.id != EMO_ID_NONE)
            continue;
        if (emo_name_resolve(av->ep, &e->a) != 0 || av_id_reserve(av, e->a.id) != 0)
            continue; /* said why; sends to it fail with -FI_EINVAL */
        if (av->by_id[e->a.id] == FI_ADDR_NOTAVAIL)
            av->by_id[e->a.id] = i;
    }
    return 0;
}

/* one address: @return 0 with *@p out set, or a negative fi_errno */
static int av_insert_one(struct emo_av *av, const void *blob, fi_addr_t *out)
{
    emo_addr_t a;
    if (emo_addr_decode(blob, EMO_ADDR_LEN, &a) != 0) {
        FI_WARN(&emo_prov, FI_LOG_AV,
                "not an ethermpi address (wrong size, version or "
                "fields): was it made by another provider or version? (an "
                "ethermpi build of wire version 2 cannot talk to this one: "
                "install one release everywhere)\n");
        return -FI_EINVAL;
    }
    if (a.named)
        return av_insert_named(av, &a, out);
    if (av->ep && emo_named(av->ep)) {
        FI_WARN(&emo_prov, FI_LOG_AV,
                "a numbered address (an endpoint on the daemon link, or an older build) "
                "given to a named endpoint on the %s link: run every process on the same "
                "FI_ETHERMPI_LINK and release\n",
                av->ep->link->ops->name);
        return -FI_EINVAL;
    }
    if (av_id_reserve(av, a.id) != 0)
        return -FI_ENOMEM;
    fi_addr_t old = av->by_id[a.id];
    if (old != FI_ADDR_NOTAVAIL) {
        if (av->tab[old].a.secret == a.secret) {
            *out = old; /* the same endpoint again */
            return 0;
        }
        FI_WARN(&emo_prov, FI_LOG_AV,
                "two endpoints use id %u: give each process its own "
                "FI_ETHERMPI_ID (or start it with an MPI launcher)\n",
                a.id);
        return -FI_EADDRINUSE;
    }
    const emo_addr_t *fc = av->ep ? emo_contact_get(av->ep, a.id) : NULL;
    if (fc && fc->secret != a.secret) {
        FI_WARN(&emo_prov, FI_LOG_AV,
                "endpoint id %u reached this endpoint first with another "
                "address (first contact): two endpoints use that id, or it restarted\n",
                a.id);
        return -FI_EADDRINUSE;
    }
    if (av->ep && a.id == av->ep->self.id && a.secret != av->ep->self.secret) {
        FI_WARN(&emo_prov, FI_LOG_AV,
                "a peer uses this endpoint's own id %u: give each "
                "process its own FI_ETHERMPI_ID\n",
                a.id);
        return -FI_EADDRINUSE;
    }
    fi_addr_t fa;
    if (av_slot(av, &fa) != 0)
        return -FI_ENOMEM;
    av->tab[fa] = (struct emo_av_ent){ .a = a, .used = 1 };
    av->by_id[a.id] = fa;
    *out = fa;
    return 0;
}

static int av_insert(struct fid_av *fav, const void *addr, size_t count, fi_addr_t *fi_addr,
                     uint64_t flags, void *context)
{
    struct emo_av *av = container_of_emo(fav, struct emo_av, av);
    int done = 0;
    if (flags)
        return -FI_EBADFLAGS;
    emo_lock(av->dom);
    for (size_t i = 0; i < count; i++) {
        fi_addr_t fa = FI_ADDR_NOTAVAIL;
        int rc = av_insert_one(av, (const uint8_t *)addr + i * EMO_ADDR_LEN, &fa);
        if (fi_addr)
            fi_addr[i] = fa;
        if (rc == 0)
            done++;
    }
    emo_unlock(av->dom);
    return done;
}

/* Count one more removal of endpoint (@p id, @p secret): its next
 * incarnation (emo_peer_key).  Room was made (av_remove_). */
static void av_note_gone(struct emo_av *av, uint32_t id, uint64_t secret)
{
    struct emo_av_gone *g = av_gone(av, id);
    if (!g) {
        g = &av->gone[av->ngone++];
        *g = (struct emo_av_gone){ .id = id, .secret = secret };
    }
    if (g->secret != secret)
        *g = (struct emo_av_gone){ .id = id, .secret = secret }; /* another endpoint */
    g->epoch++;
}

/* Is @p id still the number of a used entry?  (A scan: removals are rare.) */
static bool av_id_used(const struct emo_av *av, uint32_t id)
{
    for (size_t i = 0; i < av->n; i++)
        if (av->tab[i].used && av->tab[i].a.id == id)
            return true;
    return false;
}

/* Every address is checked first: one that is not in the AV (never
 * inserted, removed already, out of range) fails the call with
 * -FI_EINVAL and removes nothing. */
static int av_remove_(struct emo_av *av, fi_addr_t *fi_addr, size_t count)
{
    if (count && !fi_addr)
        return -FI_EINVAL;
    for (size_t i = 0; i < count; i++)
        if (fi_addr[i] >= av->n || !av->tab[fi_addr[i]].used)
            return -FI_EINVAL;
    if (av->ngone + count > av->gone_cap) { /* no failure half way */
        size_t cap = av->ngone + count + 16;
        struct emo_av_gone *g = realloc(av->gone, cap * sizeof *g);
        if (!g)
            return -FI_ENOMEM;
        av->gone = g;
        av->gone_cap = cap;
    }
    for (size_t i = 0; i < count; i++) {
        fi_addr_t fa = fi_addr[i];
        struct emo_av_ent *e = &av->tab[fa];
        if (!e->used)
            continue; /* named twice in the list */
        e->used = 0;
        bool numbered = e->a.id != EMO_ID_NONE;
        if (numbered && av->by_id[e->a.id] == fa)
            av->by_id[e->a.id] = FI_ADDR_NOTAVAIL;
        if (!e->a.named)
            av_note_gone(av, e->a.id, e->a.secret); /* named: the handshake draws new keys */
        /* named addresses inserted twice before fi_ep_bind share a number:
         * the peer goes with its last entry */
        if (av->ep && numbered && !av_id_used(av, e->a.id))
            emo_ep_unset_peer(av->ep, e->a.id);
        av->nfree++;
        if (fa < av->free_lo)
            av->free_lo = fa;
    }
    return 0;
}

static int av_remove(struct fid_av *fav, fi_addr_t *fi_addr, size_t count, uint64_t flags)
{
    if (flags)
        return -FI_EBADFLAGS; /* (FI_AUTH_KEY: no authorization keys here) */
    struct emo_av *av = container_of_emo(fav, struct emo_av, av);
    emo_lock(av->dom);
    int rc = av_remove_(av, fi_addr, count);
    emo_unlock(av->dom);
    return rc;
}

static int av_lookup(struct fid_av *fav, fi_addr_t fa, void *addr, size_t *addrlen)
{
    struct emo_av *av = container_of_emo(fav, struct emo_av, av);
    emo_lock(av->dom);
    const emo_addr_t *a = emo_av_get(av, fa);
    uint8_t blob[EMO_ADDR_LEN];
    if (a)
        emo_addr_encode(a, blob);
    emo_unlock(av->dom);
    if (!a)
        return -FI_EINVAL;
    memcpy(addr, blob, *addrlen < EMO_ADDR_LEN ? *addrlen : EMO_ADDR_LEN);
    *addrlen = EMO_ADDR_LEN;
    return 0;
}

static const char *av_straddr(struct fid_av *fav, const void *addr, char *buf, size_t *len)
{
    emo_addr_t a;
    char tmp[128];
    if (emo_addr_decode(addr, EMO_ADDR_LEN, &a) != 0)
        snprintf(tmp, sizeof tmp, "ethermpi:invalid");
    else if (a.named)
        snprintf(tmp, sizeof tmp, "ethermpi:ep=%u:nonce=%016llx:mtu=%u:link=%u bytes", a.ep_index,
                 (unsigned long long)a.nonce, a.frame_max, a.link.len);
    else
        snprintf(tmp, sizeof tmp, "ethermpi:id=%u:mtu=%u:link=%u bytes", a.id, a.frame_max,
                 a.link.len);
    if (buf && *len) {
        snprintf(buf, *len, "%s", tmp);
    }
    *len = strlen(tmp) + 1;
    return buf;
}

static int av_insertsvc(struct fid_av *av, const char *node, const char *service,
                        fi_addr_t *fi_addr, uint64_t flags, void *context)
{
    return -FI_ENOSYS;
}

static int av_insertsym(struct fid_av *av, const char *node, size_t nodecnt, const char *service,
                        size_t svccnt, fi_addr_t *fi_addr, uint64_t flags, void *context)
{
    return -FI_ENOSYS;
}

static int av_set(struct fid_av *av, struct fi_av_set_attr *attr, struct fid_av_set **av_set,
                  void *context)
{
    return -FI_ENOSYS;
}

static struct fi_ops av_fi_ops = EMO_FI_OPS(av_close, emo_no_bind, emo_no_control);
static struct fi_ops_av av_ops = { .size = sizeof(struct fi_ops_av),
                                   .insert = av_insert,
                                   .insertsvc = av_insertsvc,
                                   .insertsym = av_insertsym,
                                   .remove = av_remove,
                                   .lookup = av_lookup,
                                   .straddr = av_straddr,
                                   .av_set = av_set };

static int av_open(struct fid_domain *domain, struct fi_av_attr *attr, struct fid_av **fav,
                   void *context)
{
    if (attr && attr->type != FI_AV_UNSPEC && attr->type != FI_AV_MAP && attr->type != FI_AV_TABLE)
        return -FI_EINVAL;
    if (attr && (attr->flags & (FI_EVENT | FI_READ)))
        return -FI_ENOSYS; /* no asynchronous inserts, no shared AVs */
    struct emo_av *av = calloc(1, sizeof *av);
    if (!av)
        return -FI_ENOMEM;
    av->dom = container_of_emo(domain, struct emo_domain, dom);
    av->type = attr && attr->type != FI_AV_UNSPEC ? attr->type : FI_AV_TABLE;
    emo_fid_init(&av->av.fid, FI_CLASS_AV, context, &av_fi_ops);
    av->av.ops = &av_ops;
    *fav = &av->av;
    return 0;
}

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
                                           .av_open = av_open,
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
