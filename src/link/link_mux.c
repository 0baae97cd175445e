/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file link_mux.c
 * Several endpoints of one process on one link (link_mux.h).
 */
#include "link/link_mux.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "link/link_util.h"
#include "proto/hs_wire.h" /* header only: em_hs_is and the frame's layout */

/* what the mux reads of a handshake frame (hs_wire.h): its destination
 * endpoint index, which routes it, and the reply address it names */
#define HS_DST_EP offsetof(struct em_hs_wire, dst_ep)
#define HS_REPLY  offsetof(struct em_hs_wire, addr_len)

/* one peer of a member: which base peer (process address) and which slot */
struct mux_peer {
    uint32_t up; /* base link's peer number for the peer's base address */
    uint8_t slot;
    uint8_t set;
};

struct member {
    em_link_t link; /* first: the em_link_t the endpoint holds */
    em_link_mux_t *mux;
    unsigned slot;
    struct mux_peer *peers;
    uint32_t npeers;
    em_addr_map_t byup; /* base peer -> a member peer at that address (rx_peer) */
    /* inbox: frames another member received for us, copied.  A ring of
     * EM_MUX_INBOX frames: [rel, rd) lent to our caller, [rd, wr) waiting */
    uint8_t *ibuf;
    em_pkt_t *ipkt;
    uint32_t *iup;  /* the base link's verdict on each one's source */
    uint8_t *ifrom; /* handshake frames: is the source the reply address they name? */
    uint32_t rel, rd, wr;
};

struct em_link_mux {
    em_link_t *base;
    pthread_mutex_t mu;
    struct member *mem[EM_MUX_MEMBERS];
    unsigned nmem;
    unsigned lent;            /* base frames a member holds: nobody polls the base */
    em_link_addr_t *upaddr;   /* base peer -> its base address */
    uint32_t nup_cap;         /* entries of upaddr */
    uint32_t nup;             /* base peers numbered so far */
    em_addr_map_t byaddr;     /* hash of a base address -> base peer */
    em_link_mux_t **registry; /* cleared when the mux goes (the creator's table) */
    em_link_mux_stats_t st;
};

static const em_link_ops_t member_ops, member_contact_ops;

static struct member *M(em_link_t *l) { return (struct member *)l; }

/* FNV-1a of an address: the key of byaddr (equality checked on a hit) */
static uint64_t addr_hash(const uint8_t *b, unsigned len)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned i = 0; i < len; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h ^ len;
}

static int is_inbox(const struct member *me, const em_pkt_t *p)
{
    return me->ipkt && p >= me->ipkt && p < me->ipkt + EM_MUX_INBOX;
}

static uint32_t be32_at(const uint8_t *b)
{
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

/* The device part of member address @p a (its last byte a slot) into
 * @p dev.  0, or -EINVAL: @p a is no member's address. */
static int device_part(const em_link_addr_t *a, em_link_addr_t *dev)
{
    if (a->len < 2 || a->len > sizeof a->bytes || a->bytes[a->len - 1] >= EM_MUX_MEMBERS)
        return -EINVAL;
    dev->len = (uint8_t)(a->len - 1);
    memcpy(dev->bytes, a->bytes, dev->len);
    return 0;
}

static int addr_eq(const em_link_addr_t *x, const em_link_addr_t *y)
{
    return x->len == y->len && memcmp(x->bytes, y->bytes, x->len) == 0;
}

/* The device part of the reply address handshake frame @p f names (a
 * member's address).  1, or 0 when it names none. */
static int reply_device(const uint8_t *f, uint32_t len, em_link_addr_t *dev)
{
    if (len < HS_REPLY + 1 || f[HS_REPLY] > EM_HS_ADDR_MAX || len < HS_REPLY + 1 + f[HS_REPLY])
        return 0;
    em_link_addr_t a = { .len = f[HS_REPLY] };
    memcpy(a.bytes, f + HS_REPLY + 1, a.len);
    return device_part(&a, dev) == 0;
}

/* ---- transmit --------------------------------------------------------------- */

static em_pkt_t *m_tx_alloc(em_link_t *l)
{
    em_link_mux_t *m = M(l)->mux;
    pthread_mutex_lock(&m->mu);
    em_pkt_t *p = em_link_tx_alloc(m->base);
    pthread_mutex_unlock(&m->mu);
    return p;
}

static void m_tx_free(em_link_t *l, em_pkt_t *p)
{
    em_link_mux_t *m = M(l)->mux;
    pthread_mutex_lock(&m->mu);
    em_link_tx_free(m->base, p);
    pthread_mutex_unlock(&m->mu);
}

/* The destination's slot into the index's top byte, the base peer into
 * p->peer; frames the base does not take get both back (the caller keeps
 * them and may hand them to us again). */
static unsigned m_tx_burst(em_link_t *l, em_pkt_t **pkts, unsigned n)
{
    struct member *me = M(l);
    em_link_mux_t *m = me->mux;
    unsigned done = 0;
    pthread_mutex_lock(&m->mu);
    while (done < n) {
        uint32_t orig[64];
        uint8_t hs[64];
        unsigned k = 0, want = n - done < 64 ? n - done : 64;
        for (; k < want; k++) {
            em_pkt_t *p = pkts[done + k];
            /* a handshake frame is routed by its destination endpoint
             * index (link_mux.h): its bytes stay as they are */
            hs[k] = (uint8_t)em_hs_is(p->data, p->len);
            /* an unset peer (never sent to by the engine) or an index the
             * slot byte would overwrite: not ours to send; stop here */
            if (p->peer >= me->npeers || !me->peers[p->peer].set || p->len < 8 ||
                (!hs[k] && p->data[4]))
                break;
            orig[k] = p->peer;
            if (!hs[k])
                p->data[4] = me->peers[p->peer].slot;
            p->peer = me->peers[p->peer].up;
        }
        unsigned sent = k ? em_link_tx_burst(m->base, pkts + done, k) : 0;
        for (unsigned i = sent; i < k; i++) {
            pkts[done + i]->peer = orig[i];
            if (!hs[i])
                pkts[done + i]->data[4] = 0;
        }
        m->st.tx_frames += sent;
        done += sent;
        if (sent < want)
            break;
    }
    pthread_mutex_unlock(&m->mu);
    return done;
}

/* First contact: a handshake frame (only: a data frame would be routed by
 * its index, which names no member here) to member address @p a, whose
 * slot must be the frame's destination endpoint index (the receiving mux
 * routes by it); sent by the base link to the device part, untouched. */
static int m_tx_to(em_link_t *l, em_pkt_t *p, const em_link_addr_t *a)
{
    em_link_mux_t *m = M(l)->mux;
    em_link_addr_t dev;
    if (device_part(a, &dev) != 0 || p->ext_len || !em_hs_is(p->data, p->len) ||
        p->len < HS_DST_EP + 4 || be32_at(p->data + HS_DST_EP) != a->bytes[a->len - 1])
        return -EINVAL;
    pthread_mutex_lock(&m->mu);
    int rc = m->base->ops->tx_to(m->base, p, &dev);
    m->st.tx_frames += rc == 0;
    pthread_mutex_unlock(&m->mu);
    return rc;
}

static int m_flush(em_link_t *l)
{
    em_link_mux_t *m = M(l)->mux;
    pthread_mutex_lock(&m->mu);
    int rc = em_link_flush(m->base);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

/* ---- receive ---------------------------------------------------------------- */

/* copy @p p into @p to's inbox (its buffers on first use); 0 or -1 (full) */
static int inbox_put(em_link_mux_t *m, struct member *to, const em_pkt_t *p, uint32_t up,
                     uint8_t from)
{
    uint32_t mtu = m->base->mtu;
    if (!to->ibuf) {
        to->ibuf = malloc((size_t)EM_MUX_INBOX * mtu);
        to->ipkt = calloc(EM_MUX_INBOX, sizeof *to->ipkt);
        to->iup = calloc(EM_MUX_INBOX, sizeof *to->iup);
        to->ifrom = calloc(EM_MUX_INBOX, 1);
        if (!to->ibuf || !to->ipkt || !to->iup || !to->ifrom) {
            free(to->ibuf), free(to->ipkt), free(to->iup), free(to->ifrom);
            to->ibuf = NULL, to->ipkt = NULL, to->iup = NULL, to->ifrom = NULL;
            return -1;
        }
    }
    if (to->wr - to->rel >= EM_MUX_INBOX || p->len > mtu)
        return -1;
    uint32_t i = to->wr % EM_MUX_INBOX;
    em_pkt_t *q = &to->ipkt[i];
    memset(q, 0, sizeof *q);
    q->data = to->ibuf + (size_t)i * mtu;
    q->len = p->len;
    q->cls = p->cls;
    memcpy(q->data, p->data, p->len);
    to->iup[i] = up;
    to->ifrom[i] = from;
    to->wr++;
    return 0;
}

/* Sort one burst of the base link: ours into @p pkts, the others' into
 * their inboxes.  Under the lock.  @return frames put into @p pkts. */
static unsigned sort_burst(struct member *me, em_pkt_t **pkts, unsigned max)
{
    em_link_mux_t *m = me->mux;
    em_link_t *b = m->base;
    em_pkt_t *got[64], *rel[64];
    unsigned n = 0, nrel = 0;
    unsigned k = em_link_rx_burst(b, got, max < 64 ? max : 64);
    for (unsigned i = 0; i < k; i++) {
        em_pkt_t *p = got[i];
        int hs = em_hs_is(p->data, p->len);
        if (p->len < (hs ? HS_DST_EP + 4 : 8)) {
            m->st.rx_short++;
            rel[nrel++] = p;
            continue;
        }
        /* a handshake frame names its member by its destination endpoint
         * index (link_mux.h: a member's is its slot), a data frame by its
         * index's top byte, cleared: the member's protocol sees its own */
        uint32_t ep = hs ? be32_at(p->data + HS_DST_EP) : p->data[4];
        unsigned slot = ep < EM_MUX_MEMBERS ? (unsigned)ep : EM_MUX_MEMBERS;
        if (!hs)
            p->data[4] = 0;
        m->st.rx_hs += (uint64_t)hs;
        if (slot == me->slot) {
            pkts[n++] = p;
            m->lent++;
            m->st.rx_own++;
        } else if (slot < EM_MUX_MEMBERS && m->mem[slot]) {
            uint32_t up = b->ops->rx_peer ? b->ops->rx_peer(b, p) : EM_LINK_PEER_UNKNOWN;
            /* the source is judged while the base still has the frame:
             * for a handshake frame, against the reply address it names */
            em_link_addr_t dev;
            uint8_t from = hs && b->ops->rx_from && reply_device(p->data, p->len, &dev) &&
                           b->ops->rx_from(b, p, &dev);
            if (inbox_put(m, m->mem[slot], p, up, from) == 0)
                m->st.rx_passed++;
            else
                m->st.rx_inbox_full++;
            rel[nrel++] = p;
        } else {
            m->st.rx_no_member++;
            rel[nrel++] = p;
        }
    }
    if (nrel)
        em_link_rx_release(b, rel, nrel);
    return n;
}

static unsigned m_rx_burst(em_link_t *l, em_pkt_t **pkts, unsigned max)
{
    struct member *me = M(l);
    em_link_mux_t *m = me->mux;
    unsigned n = 0;
    pthread_mutex_lock(&m->mu);
    while (n < max && me->rd != me->wr)
        pkts[n++] = &me->ipkt[me->rd++ % EM_MUX_INBOX];
    /* the base's frames stay valid only until its next burst on some
     * links: none while a member still holds some */
    if (n < max && m->lent == 0)
        n += sort_burst(me, pkts + n, max - n);
    pthread_mutex_unlock(&m->mu);
    return n;
}

/* @p nb base frames a member lent back: to the base, off the lent count */
static void base_release(em_link_mux_t *m, em_pkt_t **pkts, unsigned nb)
{
    em_link_rx_release(m->base, pkts, nb);
    m->lent -= nb < m->lent ? nb : m->lent;
}

static void m_rx_release(em_link_t *l, em_pkt_t **pkts, unsigned n)
{
    struct member *me = M(l);
    em_link_mux_t *m = me->mux;
    em_pkt_t *base[64];
    unsigned nb = 0;
    pthread_mutex_lock(&m->mu);
    for (unsigned i = 0; i < n; i++) {
        if (is_inbox(me, pkts[i])) {
            me->rel++; /* given back in the order they were lent */
            continue;
        }
        base[nb++] = pkts[i];
        if (nb == 64) {
            base_release(m, base, nb);
            nb = 0;
        }
    }
    if (nb)
        base_release(m, base, nb);
    pthread_mutex_unlock(&m->mu);
}

/* The peer the frame claims to be (its index) when that peer's base
 * address is the frame's source; else any of ours at that address. */
static uint32_t m_rx_peer(em_link_t *l, const em_pkt_t *p)
{
    struct member *me = M(l);
    em_link_mux_t *m = me->mux;
    uint32_t up, who = EM_LINK_PEER_UNKNOWN;
    pthread_mutex_lock(&m->mu);
    if (is_inbox(me, p))
        up = me->iup[p - me->ipkt];
    else
        up = m->base->ops->rx_peer ? m->base->ops->rx_peer(m->base, p) : EM_LINK_PEER_UNKNOWN;
    if (up != EM_LINK_PEER_UNKNOWN && p->len >= 8) {
        uint32_t claimed = (uint32_t)p->data[5] << 16 | (uint32_t)p->data[6] << 8 | p->data[7];
        if (claimed < me->npeers && me->peers[claimed].set && me->peers[claimed].up == up)
            who = claimed;
        else
            who = em_addr_map_get(&me->byup, up);
    }
    pthread_mutex_unlock(&m->mu);
    return who;
}

/* The base link's rx_from with the device part of @p a.  A frame copied
 * into our inbox was judged when it was sorted: a handshake frame against
 * the reply address it names; against another address (and a data frame
 * against any) through the base peer its source is, when it is one. */
static bool m_rx_from(em_link_t *l, const em_pkt_t *p, const em_link_addr_t *a)
{
    struct member *me = M(l);
    em_link_mux_t *m = me->mux;
    em_link_addr_t dev, reply;
    if (device_part(a, &dev) != 0)
        return false;
    bool ok;
    pthread_mutex_lock(&m->mu);
    if (is_inbox(me, p)) {
        uint32_t i = (uint32_t)(p - me->ipkt), up = me->iup[i];
        if (reply_device(p->data, p->len, &reply) && addr_eq(&reply, &dev))
            ok = me->ifrom[i];
        else
            ok = up < m->nup && addr_eq(&m->upaddr[up], &dev);
    } else {
        ok = m->base->ops->rx_from(m->base, p, &dev);
    }
    pthread_mutex_unlock(&m->mu);
    return ok;
}

/* ---- peers -------------------------------------------------------------------- */

/* the base peer for base address @p a (numbered and set on first sight) */
static int base_peer(em_link_mux_t *m, const em_link_addr_t *a, uint32_t *up)
{
    uint64_t h = addr_hash(a->bytes, a->len);
    uint32_t u = em_addr_map_get(&m->byaddr, h);
    if (u != EM_LINK_PEER_UNKNOWN) {
        if (m->upaddr[u].len != a->len || memcmp(m->upaddr[u].bytes, a->bytes, a->len))
            return -EADDRINUSE; /* two addresses, one 64-bit hash: never seen */
        *up = u;
        return 0;
    }
    if (m->nup >= EM_LINK_PEER_UNKNOWN)
        return -ENOSPC;
    u = m->nup;
    if (em_peer_table_reserve((void **)&m->upaddr, &m->nup_cap, sizeof *m->upaddr, u) != 0)
        return -ENOMEM;
    int rc = em_link_set_peer(m->base, u, a);
    if (rc != 0)
        return rc;
    if (em_addr_map_put(&m->byaddr, h, u) != 0)
        return -ENOMEM;
    m->upaddr[u] = *a;
    m->nup++;
    *up = u;
    return 0;
}

static int m_set_peer(em_link_t *l, uint32_t peer, const em_link_addr_t *a)
{
    struct member *me = M(l);
    em_link_mux_t *m = me->mux;
    em_link_addr_t b;
    if (device_part(a, &b) != 0)
        return -EINVAL; /* no member address (a peer on an unshared link?) */
    /* the index's top byte carries the receiving member's slot (link_mux.h):
     * a frame from peer 2^24 or above would name another member, so such a
     * peer number cannot be a member's (the protocol's are 32 bits) */
    if (peer >= 1u << EM_MUX_INDEX_BITS)
        return -EINVAL;
    uint32_t up;
    pthread_mutex_lock(&m->mu);
    int rc = base_peer(m, &b, &up);
    if (rc == 0 &&
        em_peer_table_reserve((void **)&me->peers, &me->npeers, sizeof *me->peers, peer) != 0)
        rc = -ENOMEM;
    if (rc == 0) {
        struct mux_peer *mp = &me->peers[peer];
        if (mp->set && mp->up != up)
            em_addr_map_del(&me->byup, mp->up, peer);
        if (em_addr_map_put(&me->byup, up, peer) != 0)
            rc = -ENOMEM;
        mp->up = up;
        mp->slot = a->bytes[a->len - 1];
        mp->set = 1;
    }
    pthread_mutex_unlock(&m->mu);
    return rc;
}

static int m_wait_fd(em_link_t *l)
{
    em_link_mux_t *m = M(l)->mux;
    pthread_mutex_lock(&m->mu);
    /* with other members, our frames may sit in our inbox, which no
     * descriptor shows: the waiter then takes short sleeps */
    int fd = m->nmem == 1 ? em_link_wait_fd(m->base) : -1;
    pthread_mutex_unlock(&m->mu);
    return fd;
}

static void mux_free(em_link_mux_t *m)
{
    if (m->registry)
        *m->registry = NULL;
    em_link_close(m->base);
    free(m->upaddr);
    em_addr_map_free(&m->byaddr);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

static void m_close(em_link_t *l)
{
    struct member *me = M(l);
    em_link_mux_t *m = me->mux;
    pthread_mutex_lock(&m->mu);
    m->mem[me->slot] = NULL;
    unsigned left = --m->nmem;
    pthread_mutex_unlock(&m->mu);
    free(me->peers);
    em_addr_map_free(&me->byup);
    free(me->ibuf);
    free(me->ipkt);
    free(me->iup);
    free(me->ifrom);
    free(me);
    if (!left)
        mux_free(m);
}

void em_link_mux_drop_if_empty(em_link_mux_t *m)
{
    if (m && m->nmem == 0)
        mux_free(m);
}

static const em_link_ops_t member_ops = {
    .name = "mux",
    .tx_alloc = m_tx_alloc,
    .tx_burst = m_tx_burst,
    .tx_free = m_tx_free,
    .rx_burst = m_rx_burst,
    .rx_release = m_rx_release,
    .flush = m_flush,
    .set_peer = m_set_peer,
    .close = m_close,
    .rx_peer = m_rx_peer,
    .wait_fd = m_wait_fd,
};

/* the members of a base that can run first contact (link.h tx_to, rx_from) */
static const em_link_ops_t member_contact_ops = {
    .name = "mux",
    .tx_alloc = m_tx_alloc,
    .tx_burst = m_tx_burst,
    .tx_free = m_tx_free,
    .rx_burst = m_rx_burst,
    .rx_release = m_rx_release,
    .flush = m_flush,
    .set_peer = m_set_peer,
    .close = m_close,
    .rx_peer = m_rx_peer,
    .wait_fd = m_wait_fd,
    .tx_to = m_tx_to,
    .rx_from = m_rx_from,
};

/* ---- the mux ------------------------------------------------------------------ */

em_link_mux_t *em_link_mux_create(em_link_t *base, em_link_mux_t **registry)
{
    /* a link that acknowledges for its endpoint (emd) keeps one endpoint:
     * its daemon already gives each endpoint an address of its own */
    if (!base || (base->flags & EM_LINK_F_ACKS) || base->local.len >= sizeof base->local.bytes)
        return NULL;
    em_link_mux_t *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    pthread_mutex_init(&m->mu, NULL);
    m->base = base;
    m->registry = registry;
    if (registry)
        *registry = m;
    return m;
}

em_link_t *em_link_mux_join(em_link_mux_t *m, char *err, size_t errlen)
{
    unsigned slot = 0;
    while (slot < EM_MUX_MEMBERS && m->mem[slot])
        slot++;
    if (slot == EM_MUX_MEMBERS) {
        snprintf(err, errlen,
                 "this process already has %u endpoints on the device: close one first",
                 EM_MUX_MEMBERS);
        return NULL;
    }
    struct member *me = calloc(1, sizeof *me);
    if (!me) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    me->mux = m;
    me->slot = slot;
    me->link.ops = em_link_has_contact(m->base) ? &member_contact_ops : &member_ops;
    me->link.mtu = m->base->mtu;
    me->link.flags = m->base->flags;
    me->link.local = m->base->local;
    me->link.local.bytes[me->link.local.len++] = (uint8_t)slot;
    pthread_mutex_lock(&m->mu);
    m->mem[slot] = me;
    m->nmem++;
    pthread_mutex_unlock(&m->mu);
    return &me->link;
}

int em_link_is_mux(const em_link_t *l)
{
    return l && (l->ops == &member_ops || l->ops == &member_contact_ops);
}

em_link_t *em_link_mux_base(em_link_t *l)
{
    return em_link_is_mux(l) ? ((struct member *)l)->mux->base : l;
}

const em_link_mux_stats_t *em_link_mux_stats(const em_link_t *l)
{
    return em_link_is_mux(l) ? &((const struct member *)l)->mux->st : NULL;
}
