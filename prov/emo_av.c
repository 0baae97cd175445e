/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file emo_av.c
 * The address vector (fi_av(3)), which any number of its domain's
 * endpoints may share (up to EMO_AV_EPS_MAX; docs/ofi.md "Addresses").
 *
 * The AV keeps each peer's decoded address; fi_addr_t is the entry's
 * index for FI_AV_TABLE and FI_AV_MAP alike (FI_AV_MAP lets the provider
 * choose the value): the next index, or after fi_av_remove the lowest one
 * it freed (as libfabric's util AV reuses freed entries).
 *
 * Peer numbers are each endpoint's own (struct emo_av_map): a named
 * endpoint numbers its peers itself (emo_name.c), so the endpoints bound
 * to one AV read one fi_addr_t as different engine peers.  Each bound
 * endpoint keeps a map both ways: fi_addr_t -> its number (one array read
 * per send) and number -> fi_addr_t (FI_SOURCE).  fi_av_insert resolves
 * the address for every bound endpoint (emo_name_resolve); fi_ep_bind
 * resolves the entries inserted before for the endpoint it binds;
 * fi_av_remove makes every bound endpoint forget the peer
 * (emo_ep_unset_peer: its operations to it end with FI_ECANCELED); an
 * endpoint's close takes it out of the AV and leaves the others as they
 * were.  Numbered endpoints (FI_ETHERMPI_NAMES=ids, the daemon link) name
 * peers by job-wide ids, so an entry's number is its address's id for
 * every bound endpoint (their maps are alike), and the count of removals
 * that moves a pair to its next incarnation (emo_peer_key) is the AV's,
 * alike for all of them.  One AV serves one kind of endpoint, as one job
 * runs one kind of address: a second kind is refused at fi_ep_bind.
 *
 * Peers reach the engine lazily (emo_ep_set_peer): on the first send to
 * them, or when their first frame arrives.
 */
#include "emo_prov.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* make @p *t (@p *n entries) hold number @p id, doubling, new entries
 * FI_ADDR_NOTAVAIL: numbers are below the endpoint's table (named) or
 * EMO_NPEERS_MAX (ids), the table as large as the largest one */
static int id_reserve(fi_addr_t **t, uint32_t *n, uint32_t id)
{
    if (id < *n)
        return 0;
    uint32_t cap = *n ? *n : 256;
    while (cap <= id)
        cap *= 2;
    fi_addr_t *nt = realloc(*t, (size_t)cap * sizeof *nt);
    if (!nt)
        return -FI_ENOMEM;
    for (uint32_t i = *n; i < cap; i++)
        nt[i] = FI_ADDR_NOTAVAIL;
    *t = nt;
    *n = cap;
    return 0;
}

/* ---- an endpoint's map ---------------------------------------------------- */

/* @p ep calls entry @p fa (below av->cap) peer @p id; the first entry of
 * a number names it for FI_SOURCE */
static int map_set(const struct emo_av *av, struct emo_ep *ep, fi_addr_t fa, uint32_t id)
{
    struct emo_av_map *m = &ep->avm;
    if (m->cap < av->cap) { /* as large as the AV's table: grows when it does */
        uint32_t *p = realloc(m->peer, av->cap * sizeof *p);
        if (!p)
            return -FI_ENOMEM;
        for (size_t i = m->cap; i < av->cap; i++)
            p[i] = EMO_ID_NONE;
        m->peer = p;
        m->cap = av->cap;
    }
    fi_addr_t *first = &m->self_fa;
    if (id != ep->self.id) {
        if (id_reserve(&m->fa, &m->nfa, id) != 0)
            return -FI_ENOMEM;
        first = &m->fa[id];
    }
    m->peer[fa] = id;
    if (*first == FI_ADDR_NOTAVAIL)
        *first = fa;
    return 0;
}

/* @p ep forgets entry @p fa.  @return its number for it (EMO_ID_NONE:
 * none), *@p still when another entry has that number (named addresses
 * inserted twice before fi_ep_bind share one): that entry names it now.
 * (A scan then: removals are rare.) */
static uint32_t map_clear(struct emo_ep *ep, fi_addr_t fa, bool *still)
{
    struct emo_av_map *m = &ep->avm;
    *still = false;
    if (fa >= m->cap || m->peer[fa] == EMO_ID_NONE)
        return EMO_ID_NONE;
    uint32_t id = m->peer[fa];
    fi_addr_t *first = id == ep->self.id ? &m->self_fa : &m->fa[id];
    m->peer[fa] = EMO_ID_NONE;
    if (*first != fa) {
        *still = true; /* the other entry named it already */
        return id;
    }
    *first = FI_ADDR_NOTAVAIL;
    for (size_t i = 0; i < m->cap && !*still; i++)
        if (m->peer[i] == id) {
            *first = i;
            *still = true;
        }
    return id;
}

/* ---- entries ---------------------------------------------------------------- */

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
 * next; @return 0, or -FI_ENOMEM.  Not used until the caller sets it. */
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
    av->tab[*fa].used = 0;
    return 0;
}

/* an insert that failed gives its slot back (a free entry) */
static void av_unslot(struct emo_av *av, fi_addr_t fa)
{
    av->tab[fa].used = 0;
    av->nfree++;
    if (fa < av->free_lo)
        av->free_lo = fa;
}

/* An insert that failed for the @p k-th bound endpoint: the endpoints
 * before it forget entry @p fa, and a named endpoint gives back a number
 * it drew for it alone (no other entry, no traffic: not a stranger). */
static void av_insert_undo(struct emo_av *av, fi_addr_t fa, unsigned k)
{
    for (unsigned i = 0; i < k; i++) {
        struct emo_ep *ep = av->eps[i];
        bool still;
        uint32_t id = map_clear(ep, fa, &still);
        if (emo_named(ep) && id != EMO_ID_NONE && !still && id < ep->npeers && !ep->peer_set[id])
            emo_ep_unset_peer(ep, id);
    }
}

/* A named address (emo_name.c): every bound endpoint numbers it (now, or
 * each at its fi_ep_bind: emo_av_bind); the same endpoint again gets its
 * entry back.  It fails for all when it fails for one (its table is
 * full: said why). */
static int av_insert_named(struct emo_av *av, const emo_addr_t *a, fi_addr_t *out)
{
    if (av->neps && !emo_named(av->eps[0]) && !a->nonce) {
        FI_WARN(&emo_prov, FI_LOG_AV,
                "an address from fi_getinfo's node and service given to an endpoint on the "
                "%s link, which numbers its peers and cannot reach one by node and service: "
                "exchange addresses out of band (fi_getname, then fi_av_insert; fabtests -b "
                "or -E), or use the kernel UDP link\n",
                emo_link_name());
        return -FI_EINVAL;
    }
    if (av->neps && !emo_named(av->eps[0])) {
        FI_WARN(&emo_prov, FI_LOG_AV,
                "a named address (an endpoint on a link with first contact) given to an "
                "endpoint on the %s link, which numbers its peers: run every process "
                "on the same FI_ETHERMPI_LINK\n",
                av->eps[0]->link->ops->name);
        return -FI_EINVAL;
    }
    fi_addr_t fa;
    if (av_slot(av, &fa) != 0)
        return -FI_ENOMEM;
    for (unsigned i = 0; i < av->neps; i++) {
        struct emo_ep *ep = av->eps[i];
        emo_addr_t r = *a;
        r.id = EMO_ID_NONE;
        int rc = emo_name_resolve(ep, &r);
        if (rc == 0 && i == 0 && emo_av_fa(ep, r.id) != FI_ADDR_NOTAVAIL) {
            av_unslot(av, fa);
            *out = emo_av_fa(ep, r.id); /* the same endpoint again: every endpoint has it */
            return 0;
        }
        if (rc == 0)
            rc = map_set(av, ep, fa, r.id);
        if (rc != 0) {
            av_insert_undo(av, fa, i + 1);
            av_unslot(av, fa);
            return rc;
        }
    }
    av->tab[fa] = (struct emo_av_ent){ .a = *a, .used = 1 };
    av->tab[fa].a.id = EMO_ID_NONE; /* (the numbers are the endpoints') */
    *out = fa;
    return 0;
}

/* Would @p ep refuse numbered address @p a?  @return 0 or -FI_EADDRINUSE, said why. */
static int numbered_clash(const struct emo_ep *ep, const emo_addr_t *a)
{
    const emo_addr_t *fc = emo_contact_get(ep, a->id);
    if (fc && fc->secret != a->secret) {
        FI_WARN(&emo_prov, FI_LOG_AV,
                "endpoint id %u reached endpoint %u first with another "
                "address (first contact): two endpoints use that id, or it restarted\n",
                a->id, ep->self.id);
        return -FI_EADDRINUSE;
    }
    if (a->id == ep->self.id && a->secret != ep->self.secret) {
        FI_WARN(&emo_prov, FI_LOG_AV,
                "a peer uses the id %u of an endpoint bound to this AV: give each "
                "process its own FI_ETHERMPI_ID\n",
                a->id);
        return -FI_EADDRINUSE;
    }
    return 0;
}

/* A numbered address: its id is every bound endpoint's number for it. */
static int av_insert_numbered(struct emo_av *av, const emo_addr_t *a, fi_addr_t *out)
{
    if (av->neps && emo_named(av->eps[0])) {
        FI_WARN(&emo_prov, FI_LOG_AV,
                "a numbered address (an endpoint on the daemon link, or an older build) "
                "given to a named endpoint on the %s link: run every process on the same "
                "FI_ETHERMPI_LINK and release\n",
                av->eps[0]->link->ops->name);
        return -FI_EINVAL;
    }
    if (id_reserve(&av->by_id, &av->n_by_id, a->id) != 0)
        return -FI_ENOMEM;
    fi_addr_t old = av->by_id[a->id];
    if (old != FI_ADDR_NOTAVAIL) {
        if (av->tab[old].a.secret == a->secret) {
            *out = old; /* the same endpoint again */
            return 0;
        }
        FI_WARN(&emo_prov, FI_LOG_AV,
                "two endpoints use id %u: give each process its own "
                "FI_ETHERMPI_ID (or start it with an MPI launcher)\n",
                a->id);
        return -FI_EADDRINUSE;
    }
    for (unsigned i = 0; i < av->neps; i++)
        if (numbered_clash(av->eps[i], a) != 0)
            return -FI_EADDRINUSE;
    fi_addr_t fa;
    if (av_slot(av, &fa) != 0)
        return -FI_ENOMEM;
    for (unsigned i = 0; i < av->neps; i++)
        if (map_set(av, av->eps[i], fa, a->id) != 0) {
            av_insert_undo(av, fa, i + 1);
            av_unslot(av, fa);
            return -FI_ENOMEM;
        }
    av->tab[fa] = (struct emo_av_ent){ .a = *a, .used = 1 };
    av->by_id[a->id] = fa;
    *out = fa;
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
    return a.named ? av_insert_named(av, &a, out) : av_insert_numbered(av, &a, out);
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

/* ---- removal ---------------------------------------------------------------- */

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

/* Every address is checked first: one that is not in the AV (never
 * inserted, removed already, out of range) fails the call with
 * -FI_EINVAL and removes nothing.  Each bound endpoint forgets each peer
 * (its operations to it end), unless another entry still names it. */
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
        if (!e->a.named) {
            if (av->by_id[e->a.id] == fa)
                av->by_id[e->a.id] = FI_ADDR_NOTAVAIL;
            av_note_gone(av, e->a.id, e->a.secret); /* named: the handshake draws new keys */
        }
        for (unsigned k = 0; k < av->neps; k++) {
            bool still;
            uint32_t id = map_clear(av->eps[k], fa, &still);
            if (id != EMO_ID_NONE && !still)
                emo_ep_unset_peer(av->eps[k], id);
        }
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

/* ---- binding ---------------------------------------------------------------- */

/* @p ep's number for entry @p e, as at an insert; EMO_ID_NONE when it
 * cannot have one (said why: sends to it fail with -FI_EINVAL) */
static uint32_t bind_number(struct emo_ep *ep, const struct emo_av_ent *e)
{
    if (!e->a.named)
        return emo_named(ep) ? EMO_ID_NONE : e->a.id; /* (the other kind: refused at
                                                         insert once bound) */
    if (!emo_named(ep))
        return EMO_ID_NONE;
    emo_addr_t r = e->a;
    return emo_name_resolve(ep, &r) == 0 ? r.id : EMO_ID_NONE;
}

static int bind_check(const struct emo_av *av, const struct emo_ep *ep)
{
    if (ep->av) {
        FI_WARN(&emo_prov, FI_LOG_EP_CTRL,
                "fi_ep_bind: this endpoint has an AV already; an endpoint takes one AV\n");
        return -FI_EINVAL;
    }
    if (av->dom != ep->dom) {
        FI_WARN(&emo_prov, FI_LOG_EP_CTRL,
                "fi_ep_bind: the AV was opened on another domain: open it on the "
                "endpoint's domain\n");
        return -FI_EINVAL;
    }
    if (av->neps && emo_named(av->eps[0]) != emo_named(ep)) {
        FI_WARN(&emo_prov, FI_LOG_EP_CTRL,
                "fi_ep_bind: the AV serves %s endpoints and this one is %s: open the "
                "endpoints with the same FI_ETHERMPI_LINK and FI_ETHERMPI_NAMES\n",
                emo_named(av->eps[0]) ? "named" : "numbered", emo_named(ep) ? "named" : "numbered");
        return -FI_EINVAL;
    }
    if (av->neps >= EMO_AV_EPS_MAX) {
        FI_WARN(&emo_prov, FI_LOG_EP_CTRL,
                "fi_ep_bind: %u endpoints share this AV already, the most one AV "
                "serves: open another AV for the next endpoints\n",
                av->neps);
        return -FI_ENOSPC;
    }
    return 0;
}

int emo_av_bind(struct emo_av *av, struct emo_ep *ep)
{
    int rc = bind_check(av, ep);
    if (rc)
        return rc;
    if (av->neps == av->eps_cap) {
        unsigned cap = av->eps_cap ? av->eps_cap * 2 : 4;
        struct emo_ep **v = realloc(av->eps, cap * sizeof *v);
        if (!v)
            return -FI_ENOMEM;
        av->eps = v;
        av->eps_cap = cap;
    }
    av->eps[av->neps++] = ep;
    ep->av = av;
    /* the entries inserted before: numbered now (a named address that
     * appears twice gets one number, its first entry naming it) */
    for (size_t i = 0; i < av->n; i++) {
        if (!av->tab[i].used)
            continue;
        uint32_t id = bind_number(ep, &av->tab[i]);
        if (id != EMO_ID_NONE && map_set(av, ep, i, id) != 0) {
            emo_av_unbind(ep);
            return -FI_ENOMEM;
        }
    }
    return 0;
}

void emo_av_unbind(struct emo_ep *ep)
{
    struct emo_av *av = ep->av;
    if (!av)
        return;
    for (unsigned i = 0; i < av->neps; i++)
        if (av->eps[i] == ep) {
            memmove(&av->eps[i], &av->eps[i + 1], (av->neps - i - 1) * sizeof *av->eps);
            av->neps--;
            break;
        }
    free(ep->avm.peer);
    free(ep->avm.fa);
    ep->avm = (struct emo_av_map){ .self_fa = FI_ADDR_NOTAVAIL };
    ep->av = NULL;
}

/* ---- the rest of fi_av ------------------------------------------------------ */

static int av_close(struct fid *fid)
{
    struct emo_av *av = container_of_emo(fid, struct emo_av, av.fid);
    if (av->neps) {
        FI_WARN(&emo_prov, FI_LOG_AV,
                "fi_close(av): %u endpoint(s) still bound to it: close them first\n", av->neps);
        return -FI_EBUSY;
    }
    free(av->tab);
    free(av->by_id);
    free(av->gone);
    free(av->eps);
    free(av);
    return 0;
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

int emo_av_open(struct fid_domain *domain, struct fi_av_attr *attr, struct fid_av **fav,
                void *context)
{
    if (attr && attr->type != FI_AV_UNSPEC && attr->type != FI_AV_MAP && attr->type != FI_AV_TABLE)
        return -FI_EINVAL;
    if (attr && (attr->flags & (FI_EVENT | FI_READ)))
        return -FI_ENOSYS; /* no asynchronous inserts, no AVs shared between processes */
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
