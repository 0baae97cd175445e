/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file conn.c
 * Wire v3's peer table and handshake (conn.h, hs_wire.h).  Entries live in
 * one array indexed by slot; a hash index (linear probing, backward-shift
 * deletion, keyed by SipHash under the table's secret so a stranger cannot
 * aim collisions) finds a slot by (address, endpoint); a pending list holds
 * the slots with a handshake frame to retransmit.
 */
#include "proto/conn.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto.h"

#define SLOT_BITS 24u
#define SLOT_MASK 0x00FFFFFFu
#define NO_POS    UINT32_MAX

struct entry {
    em_conn_name_t name;
    uint32_t remote_index; /* the peer's index for us (EM_HS_NO_INDEX: not yet) */
    uint64_t tx_token;     /* its token: on our frames to it */
    uint64_t rx_token;     /* ours: on its frames to us (fixed for the entry's life) */
    uint32_t tx_isn;       /* ours toward it (fixed for the entry's life) */
    uint32_t rx_isn;       /* its toward us */
    uint64_t next_ns;      /* next retransmission (pending entries) */
    uint64_t cookie;       /* the CHALLENGE's cookie we echo in CONFIRM */
    uint32_t cookie_ms;
    uint32_t pend_pos; /* position in the pending list, or NO_POS */
    uint16_t tries;
    uint8_t state;    /* em_conn_st_t */
    uint8_t gen;      /* generation of this slot's index */
    uint8_t stranger; /* made by a handshake, never inserted (em_conn_insert clears it) */
};

struct em_conn {
    em_conn_cfg_t cfg;
    em_conn_ops_t ops;
    void *uctx;
    struct entry *e;
    uint32_t nslots, cap; /* slots in use (high-water mark), allocated */
    uint32_t *free_slots; /* slots given back (em_conn_remove) */
    uint32_t nfree, free_cap;
    uint32_t *hidx;      /* slot + 1, 0 = empty */
    uint32_t hcap;       /* power of 2 */
    uint32_t count;      /* entries not FREE */
    uint32_t nstrangers; /* entries with stranger set */
    uint32_t *pending;
    uint32_t npending, pend_cap;
    em_conn_stats_t st;
};

static uint32_t index_of(const struct em_conn *c, uint32_t slot)
{
    return (uint32_t)c->e[slot].gen << SLOT_BITS | slot;
}

/* The entry @p index names (this generation), or NULL. */
static struct entry *entry_of(const struct em_conn *c, uint32_t index)
{
    uint32_t slot = index & SLOT_MASK;
    if (index == EM_HS_NO_INDEX || slot >= c->nslots)
        return NULL;
    struct entry *x = &c->e[slot];
    if (x->state == EM_CONN_FREE || x->gen != index >> SLOT_BITS)
        return NULL;
    return x;
}

static int addr_eq(const struct entry *x, const uint8_t *a, uint8_t len)
{
    return x->name.addr_len == len && memcmp(x->name.addr, a, len) == 0;
}

/* --------------------------------------------------------- hash index -- */

static uint32_t name_hash(const struct em_conn *c, const uint8_t *a, uint8_t len, uint32_t ep)
{
    uint8_t in[EM_CONN_ADDR_MAX + 5];
    in[0] = len;
    memcpy(in + 1, a, len);
    memcpy(in + 1 + len, &ep, 4);
    uint8_t out[crypto_shorthash_BYTES];
    crypto_shorthash(out, in, 1u + len + 4u, c->cfg.secret);
    uint32_t h;
    memcpy(&h, out, 4);
    return h;
}

static uint32_t *h_find(const struct em_conn *c, const uint8_t *a, uint8_t len, uint32_t ep)
{
    if (!c->hcap)
        return NULL;
    for (uint32_t k = name_hash(c, a, len, ep) & (c->hcap - 1);; k = (k + 1) & (c->hcap - 1)) {
        uint32_t v = c->hidx[k];
        if (!v)
            return NULL;
        const struct entry *x = &c->e[v - 1];
        if (x->name.ep == ep && addr_eq(x, a, len))
            return &c->hidx[k];
    }
}

static void h_put_raw(struct em_conn *c, uint32_t slot)
{
    const struct entry *x = &c->e[slot];
    uint32_t k = name_hash(c, x->name.addr, x->name.addr_len, x->name.ep) & (c->hcap - 1);
    while (c->hidx[k])
        k = (k + 1) & (c->hcap - 1);
    c->hidx[k] = slot + 1;
}

static int h_grow(struct em_conn *c, uint32_t want)
{
    if ((uint64_t)want * 2 <= c->hcap)
        return 0;
    uint32_t ncap = c->hcap ? c->hcap : 64;
    while ((uint64_t)want * 2 > ncap)
        ncap *= 2;
    uint32_t *old = c->hidx, ocap = c->hcap;
    c->hidx = calloc(ncap, sizeof *c->hidx);
    if (!c->hidx) {
        c->hidx = old;
        return -1;
    }
    c->hcap = ncap;
    for (uint32_t k = 0; k < ocap; k++)
        if (old[k])
            h_put_raw(c, old[k] - 1);
    free(old);
    return 0;
}

/* Remove the index cell @p cell (linear probing: shift the cluster back). */
static void h_del(struct em_conn *c, uint32_t *cell)
{
    uint32_t i = (uint32_t)(cell - c->hidx), m = c->hcap - 1;
    c->hidx[i] = 0;
    for (uint32_t j = (i + 1) & m; c->hidx[j]; j = (j + 1) & m) {
        const struct entry *x = &c->e[c->hidx[j] - 1];
        uint32_t home = name_hash(c, x->name.addr, x->name.addr_len, x->name.ep) & m;
        /* move j into the hole at i unless its home lies cyclically in (i, j] */
        if (((j - home) & m) >= ((j - i) & m)) {
            c->hidx[i] = c->hidx[j];
            c->hidx[j] = 0;
            i = j;
        }
    }
}

/* ------------------------------------------------------------ pending -- */

static void pend_add(struct em_conn *c, uint32_t slot)
{
    struct entry *x = &c->e[slot];
    if (x->pend_pos != NO_POS)
        return;
    if (c->npending == c->pend_cap) {
        uint32_t ncap = c->pend_cap ? c->pend_cap * 2 : 64;
        uint32_t *n = realloc(c->pending, ncap * sizeof *n);
        if (!n)
            return; /* no retransmission for it: the peer's own retries may still bind us */
        c->pending = n;
        c->pend_cap = ncap;
    }
    x->pend_pos = c->npending;
    c->pending[c->npending++] = slot;
}

static void pend_del(struct em_conn *c, uint32_t slot)
{
    struct entry *x = &c->e[slot];
    if (x->pend_pos == NO_POS)
        return;
    uint32_t last = c->pending[--c->npending];
    c->pending[x->pend_pos] = last;
    c->e[last].pend_pos = x->pend_pos;
    x->pend_pos = NO_POS;
}

/* -------------------------------------------------------------- table -- */

void em_conn_cfg_default(em_conn_cfg_t *cfg)
{
    *cfg = (em_conn_cfg_t){ .max_peers = 1u << 20,
                            .hs_rto_ns = 5000000ull,
                            .hs_rto_max_ns = 500000000ull,
                            .hs_tries = 12,
                            .cookie_life_ms = 2000 };
}

em_conn_t *em_conn_create(const em_conn_cfg_t *cfg, const em_conn_ops_t *ops, void *uctx)
{
    if (!cfg->nonce || cfg->ep == EM_HS_NO_INDEX || !ops->emit || !ops->rand64 ||
        cfg->addr_len == 0 || cfg->addr_len > EM_CONN_ADDR_MAX || cfg->max_peers == 0 ||
        cfg->max_peers > EM_CONN_SLOTS_MAX || !cfg->hs_tries || sodium_init() < 0)
        return NULL;
    struct em_conn *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->cfg = *cfg;
    c->ops = *ops;
    c->uctx = uctx;
    return c;
}

void em_conn_destroy(em_conn_t *c)
{
    if (!c)
        return;
    free(c->e);
    free(c->free_slots);
    free(c->hidx);
    free(c->pending);
    sodium_memzero(c->cfg.secret, sizeof c->cfg.secret);
    free(c);
}

static uint64_t nonzero64(struct em_conn *c)
{
    uint64_t v;
    while ((v = c->ops.rand64(c->uctx)) == 0)
        ;
    return v;
}

/* A new entry for @p name (not in the table).  @return its slot, or NO_POS. */
static uint32_t entry_new(struct em_conn *c, const em_conn_name_t *name)
{
    if (c->count >= c->cfg.max_peers || h_grow(c, c->count + 1) != 0)
        return NO_POS;
    uint32_t slot;
    if (c->nfree) {
        slot = c->free_slots[--c->nfree];
    } else {
        if (c->nslots == c->cap) {
            uint32_t ncap = c->cap ? c->cap * 2 : 64;
            if (ncap > c->cfg.max_peers)
                ncap = c->cfg.max_peers;
            struct entry *n = realloc(c->e, (size_t)ncap * sizeof *n);
            if (!n)
                return NO_POS;
            memset(n + c->cap, 0, (size_t)(ncap - c->cap) * sizeof *n);
            c->e = n;
            c->cap = ncap;
        }
        slot = c->nslots++;
    }
    struct entry *x = &c->e[slot];
    uint8_t gen = x->gen;
    *x = (struct entry){ .name = *name,
                         .remote_index = EM_HS_NO_INDEX,
                         .rx_token = nonzero64(c),
                         .tx_isn = (uint32_t)c->ops.rand64(c->uctx),
                         .pend_pos = NO_POS,
                         .state = EM_CONN_KNOWN,
                         .gen = gen };
    h_put_raw(c, slot);
    c->count++;
    return slot;
}

int em_conn_insert(em_conn_t *c, const em_conn_name_t *name, uint32_t *index)
{
    if (name->addr_len == 0 || name->addr_len > EM_CONN_ADDR_MAX || name->ep == EM_HS_NO_INDEX)
        return -EM_EINVAL;
    uint32_t *cell = h_find(c, name->addr, name->addr_len, name->ep);
    if (cell) {
        struct entry *x = &c->e[*cell - 1];
        if (name->nonce && x->name.nonce && name->nonce != x->name.nonce)
            return -EM_EINVAL; /* another incarnation: the old one must be removed first */
        if (name->nonce && !x->name.nonce)
            x->name.nonce = name->nonce;
        if (x->stranger)
            c->nstrangers--;
        x->stranger = 0; /* the owner knows it now */
        *index = index_of(c, *cell - 1);
        return 0;
    }
    uint32_t slot = entry_new(c, name);
    if (slot == NO_POS)
        return -EM_ENOMEM;
    *index = index_of(c, slot);
    return 0;
}

static int slot_free(struct em_conn *c, uint32_t slot);

int em_conn_remove(em_conn_t *c, uint32_t index)
{
    struct entry *x = entry_of(c, index);
    if (!x)
        return -EM_EINVAL;
    return slot_free(c, index & SLOT_MASK);
}

/* @p slot (in use) back to the free list under its next generation */
static int slot_free(struct em_conn *c, uint32_t slot)
{
    struct entry *x = &c->e[slot];
    pend_del(c, slot);
    uint32_t *cell = h_find(c, x->name.addr, x->name.addr_len, x->name.ep);
    if (cell && *cell == slot + 1)
        h_del(c, cell);
    if (c->nfree == c->free_cap) {
        uint32_t ncap = c->free_cap ? c->free_cap * 2 : 64;
        uint32_t *n = realloc(c->free_slots, ncap * sizeof *n);
        if (!n)
            return -EM_ENOMEM;
        c->free_slots = n;
        c->free_cap = ncap;
    }
    if (x->stranger)
        c->nstrangers--;
    uint8_t gen = c->cfg.no_generation ? 0 : (uint8_t)(x->gen + 1);
    if (((uint32_t)gen << SLOT_BITS | slot) == EM_HS_NO_INDEX)
        gen++; /* never hand out the "no index" value */
    *x = (struct entry){ .gen = gen, .state = EM_CONN_FREE, .pend_pos = NO_POS };
    c->free_slots[c->nfree++] = slot;
    c->count--;
    return 0;
}

/* ---------------------------------------------------------- handshake -- */

/* Handshake frame @p h to link address @p a (a peer's, or a stranger's),
 * naming our reply address. */
static void send_hs(struct em_conn *c, const uint8_t *a, uint8_t alen, em_hs_t *h)
{
    uint8_t f[EM_HS_LEN];
    h->addr_len = c->cfg.addr_len;
    memcpy(h->addr, c->cfg.addr, c->cfg.addr_len);
    em_hs_encode(h, f);
    c->st.hs_tx[h->type - EM_HS_INIT]++;
    c->ops.emit(c->uctx, a, alen, f, sizeof f);
}

/* INIT or CONFIRM from entry @p slot, by its state. */
static void send_ours(struct em_conn *c, uint32_t slot)
{
    const struct entry *x = &c->e[slot];
    em_hs_t h = { .type = x->state == EM_CONN_INIT_SENT ? EM_HS_INIT : EM_HS_CONFIRM,
                  .src_ep = c->cfg.ep,
                  .dst_ep = x->name.ep,
                  .src_nonce = c->cfg.nonce,
                  .dst_nonce = x->name.nonce,
                  .src_index = index_of(c, slot),
                  .dst_index = EM_HS_NO_INDEX,
                  .isn = x->tx_isn,
                  .token = x->rx_token };
    if (h.type == EM_HS_CONFIRM) {
        h.cookie_ms = x->cookie_ms;
        h.cookie = x->cookie;
    }
    send_hs(c, x->name.addr, x->name.addr_len, &h);
}

static void arm(struct em_conn *c, uint32_t slot, uint64_t now)
{
    struct entry *x = &c->e[slot];
    x->tries = 1;
    x->next_ns = now + c->cfg.hs_rto_ns;
    pend_add(c, slot);
    send_ours(c, slot);
}

int em_conn_connect(em_conn_t *c, uint32_t index, uint64_t now)
{
    struct entry *x = entry_of(c, index);
    if (!x)
        return -EM_EINVAL;
    if (x->state != EM_CONN_KNOWN)
        return 0; /* under way, established or failed */
    x->state = EM_CONN_INIT_SENT;
    arm(c, index & SLOT_MASK, now);
    return 0;
}

int em_conn_hurry(em_conn_t *c, uint32_t index, uint64_t now)
{
    struct entry *x = entry_of(c, index);
    if (!x || (x->state != EM_CONN_INIT_SENT && x->state != EM_CONN_CONFIRM_SENT))
        return 0;
    uint64_t rto = c->cfg.hs_rto_ns << (x->tries < 20 ? x->tries - 1 : 19);
    if (rto > c->cfg.hs_rto_max_ns)
        rto = c->cfg.hs_rto_max_ns;
    /* the last one left at next_ns - rto: not again within hs_rto_ns */
    if (x->next_ns < rto || now < x->next_ns - rto + c->cfg.hs_rto_ns)
        return 0;
    x->next_ns = now + rto;
    send_ours(c, index & SLOT_MASK);
    return 1;
}

/* The cookie of an initiator at @p a with INIT/CONFIRM fields @p h, at @p ms. */
static uint64_t cookie_of(const struct em_conn *c, const uint8_t *a, uint8_t alen, const em_hs_t *h,
                          uint32_t ms)
{
    uint8_t in[1 + EM_CONN_ADDR_MAX + 44];
    size_t n = 0;
    in[n++] = alen;
    memcpy(in + n, a, alen);
    n += alen;
    uint32_t u32[4] = { h->src_ep, h->src_index, h->isn, ms };
    uint64_t u64[3] = { h->src_nonce, h->token, c->cfg.nonce };
    memcpy(in + n, u32, sizeof u32);
    n += sizeof u32;
    memcpy(in + n, u64, sizeof u64);
    n += sizeof u64;
    uint8_t out[crypto_shorthash_BYTES];
    crypto_shorthash(out, in, n, c->cfg.secret);
    uint64_t v;
    memcpy(&v, out, sizeof v);
    return v;
}

static void challenge(struct em_conn *c, const em_hs_t *in, uint64_t now)
{
    const uint8_t *a = in->addr, alen = in->addr_len;
    uint32_t ms = (uint32_t)(now / 1000000u);
    em_hs_t h = { .type = EM_HS_CHALLENGE,
                  .src_ep = c->cfg.ep,
                  .dst_ep = in->src_ep,
                  .src_nonce = c->cfg.nonce,
                  .dst_nonce = in->src_nonce,
                  .src_index = EM_HS_NO_INDEX,
                  .dst_index = in->src_index,
                  .cookie_ms = ms,
                  .cookie = cookie_of(c, a, alen, in, ms) };
    send_hs(c, a, alen, &h);
}

static void accept_to(struct em_conn *c, uint32_t slot)
{
    const struct entry *x = &c->e[slot];
    em_hs_t h = { .type = EM_HS_ACCEPT,
                  .src_ep = c->cfg.ep,
                  .dst_ep = x->name.ep,
                  .src_nonce = c->cfg.nonce,
                  .dst_nonce = x->name.nonce,
                  .src_index = index_of(c, slot),
                  .dst_index = x->remote_index,
                  .isn = x->tx_isn,
                  .token = x->rx_token };
    send_hs(c, x->name.addr, x->name.addr_len, &h);
}

/* Would binding @p h change established @p slot (a rebind), and is that
 * refused because its current incarnation is still heard?  (Counted.) */
static bool replace_refused(struct em_conn *c, uint32_t slot, const em_hs_t *h)
{
    const struct entry *x = &c->e[slot];
    if (x->state != EM_CONN_ESTABLISHED ||
        (x->name.nonce == h->src_nonce && x->remote_index == h->src_index &&
         x->tx_token == h->token && x->rx_isn == h->isn))
        return false;
    if (!c->ops.may_replace || c->ops.may_replace(c->uctx, index_of(c, slot)))
        return false;
    c->st.hs_replace_refused++;
    return true;
}

/* Bind the peer's parameters (proven) into @p slot; tell the layer above. */
static void bind(struct em_conn *c, uint32_t slot, const em_hs_t *h)
{
    struct entry *x = &c->e[slot];
    bool again = x->state == EM_CONN_ESTABLISHED &&
                 (x->remote_index != h->src_index || x->tx_token != h->token ||
                  x->rx_isn != h->isn);
    bool news = x->state != EM_CONN_ESTABLISHED || again;
    x->name.nonce = h->src_nonce;
    x->remote_index = h->src_index;
    x->tx_token = h->token;
    x->rx_isn = h->isn;
    x->state = EM_CONN_ESTABLISHED;
    pend_del(c, slot);
    c->st.hs_rebinds += again;
    if (news && c->ops.established)
        c->ops.established(c->uctx, index_of(c, slot), again);
}

static void fail(struct em_conn *c, uint32_t slot, const char *why)
{
    struct entry *x = &c->e[slot];
    pend_del(c, slot);
    x->state = EM_CONN_FAILED;
    /* out of the name index: a new incarnation at this address is a new peer */
    uint32_t *cell = h_find(c, x->name.addr, x->name.addr_len, x->name.ep);
    if (cell && *cell == slot + 1)
        h_del(c, cell);
    if (c->ops.failed)
        c->ops.failed(c->uctx, index_of(c, slot), why);
}

static int on_confirm(struct em_conn *c, const em_hs_t *h, uint64_t now)
{
    const uint8_t *a = h->addr, alen = h->addr_len;
    uint32_t now_ms = (uint32_t)(now / 1000000u);
    if (h->cookie != cookie_of(c, a, alen, h, h->cookie_ms)) {
        c->st.hs_cookie_bad++;
        return -1;
    }
    if ((uint32_t)(now_ms - h->cookie_ms) > c->cfg.cookie_life_ms) {
        /* a sender that was refused a while (not inserted yet, a full
         * table) or whose answers were lost: a fresh cookie, as for an
         * INIT (no state); its tries stay counted, so it still gives up */
        c->st.hs_cookie_old++;
        challenge(c, h, now);
        return -1;
    }
    /* proven: the sender receives at @p a */
    uint32_t *cell = h_find(c, a, alen, h->src_ep);
    uint32_t slot = cell ? *cell - 1 : NO_POS;
    if (slot != NO_POS && replace_refused(c, slot, h))
        return -1; /* a live peer keeps its place; a real restart retries */
    if (slot != NO_POS && c->e[slot].name.nonce && c->e[slot].name.nonce != h->src_nonce) {
        c->st.hs_restarts++;
        bool stranger = c->e[slot].stranger;
        fail(c, slot, "the peer restarted (a new incarnation at its address)");
        /* a stranger's slot is nobody's to remove: free it now (the layer
         * above was told it failed), so restarts cannot use up the table */
        if (stranger)
            (void)slot_free(c, slot);
        slot = NO_POS;
    }
    if (slot == NO_POS) {
        em_conn_name_t n = { .addr_len = alen, .ep = h->src_ep, .nonce = h->src_nonce };
        memcpy(n.addr, a, alen);
        if (!c->cfg.accept_strangers || (c->ops.admit && !c->ops.admit(c->uctx, &n))) {
            c->st.hs_stranger++;
            return -1;
        }
        if (c->cfg.max_strangers && c->nstrangers >= c->cfg.max_strangers) {
            c->st.hs_strangers_full++;
            return -1;
        }
        if ((slot = entry_new(c, &n)) == NO_POS) {
            c->st.hs_full++;
            return -1;
        }
        c->e[slot].stranger = 1;
        c->nstrangers++;
    }
    bind(c, slot, h);
    accept_to(c, slot);
    return 0;
}

/* A CHALLENGE @p h answers the INIT of @p slot, inserted by a partial name
 * (nonce 0), from a reply address other than the entry's: take that
 * address when ops.extends says it extends the entry's, the CHALLENGE
 * echoes our INIT (our nonce; index and endpoint were checked) and no
 * other entry has it (conn.h, ops.extends).  @return 1 taken, 0 not. */
static int extend(struct em_conn *c, uint32_t slot, const em_hs_t *h)
{
    struct entry *x = &c->e[slot];
    if (h->type != EM_HS_CHALLENGE || x->state != EM_CONN_INIT_SENT || x->name.nonce ||
        h->dst_nonce != c->cfg.nonce || !c->ops.extends ||
        !c->ops.extends(c->uctx, x->name.addr, x->name.addr_len, h->addr, h->addr_len) ||
        h_find(c, h->addr, h->addr_len, x->name.ep))
        return 0;
    uint32_t *cell = h_find(c, x->name.addr, x->name.addr_len, x->name.ep);
    if (cell && *cell == slot + 1)
        h_del(c, cell);
    x->name.addr_len = h->addr_len;
    memset(x->name.addr, 0, sizeof x->name.addr);
    memcpy(x->name.addr, h->addr, h->addr_len);
    h_put_raw(c, slot);
    c->st.hs_extended++;
    return 1;
}

/* CHALLENGE or ACCEPT: the answer to our own INIT or CONFIRM. */
static int on_answer(struct em_conn *c, const em_hs_t *h, uint64_t now)
{
    const uint8_t *a = h->addr, alen = h->addr_len;
    struct entry *x = entry_of(c, h->dst_index);
    uint32_t slot = h->dst_index & SLOT_MASK;
    int ok = x && x->name.ep == h->src_ep && (!x->name.nonce || x->name.nonce == h->src_nonce) &&
             (addr_eq(x, a, alen) || extend(c, slot, h));
    if (ok && h->type == EM_HS_CHALLENGE &&
        (x->state == EM_CONN_INIT_SENT || x->state == EM_CONN_CONFIRM_SENT)) {
        x->name.nonce = h->src_nonce;
        x->cookie = h->cookie;
        x->cookie_ms = h->cookie_ms;
        if (x->state == EM_CONN_INIT_SENT) {
            x->state = EM_CONN_CONFIRM_SENT;
            arm(c, slot, now);
        } else {
            send_ours(c, slot); /* a fresh cookie: CONFIRM with it, tries still counted */
        }
        return 0;
    }
    if (ok && h->type == EM_HS_ACCEPT &&
        (x->state == EM_CONN_CONFIRM_SENT || x->state == EM_CONN_ESTABLISHED)) {
        /* ESTABLISHED: a duplicate, or both sides started at once and the
         * peer's CONFIRM bound us first: the same values, nothing changes.
         * Other values in an ACCEPT bind nothing (no cookie proves them):
         * a peer that bound us anew does it with a CONFIRM */
        if (x->state == EM_CONN_ESTABLISHED &&
            (x->remote_index != h->src_index || x->tx_token != h->token || x->rx_isn != h->isn)) {
            c->st.hs_unexpected++;
            return -1;
        }
        bind(c, slot, h);
        return 0;
    }
    if (ok && h->type == EM_HS_CHALLENGE && x->state == EM_CONN_ESTABLISHED)
        return 0; /* a late answer to our INIT: the peer's CONFIRM bound us already */
    c->st.hs_unexpected++;
    return -1;
}

int em_conn_rx(em_conn_t *c, const void *f, size_t len, uint64_t now)
{
    em_hs_t h;
    em_hs_dec_t d = em_hs_decode(f, len, &h);
    if (d != EM_HS_DEC_OK) {
        c->st.hs_dec[d]++;
        return (int)d;
    }
    if (c->cfg.ep_max && h.src_ep > c->cfg.ep_max) {
        c->st.hs_bad_ep++; /* no such endpoint: one address mints no more than it has */
        return -1;
    }
    /* for this endpoint, and (once a nonce of ours is named) this incarnation */
    if (h.dst_ep != c->cfg.ep || (h.dst_nonce && h.dst_nonce != c->cfg.nonce)) {
        c->st.hs_not_us++;
        return -1;
    }
    int rc;
    switch (h.type) {
    case EM_HS_INIT:
        challenge(c, &h, now);
        rc = 0;
        break;
    case EM_HS_CONFIRM: rc = on_confirm(c, &h, now); break;
    default: rc = on_answer(c, &h, now); break;
    }
    if (rc == 0)
        c->st.hs_rx[h.type - EM_HS_INIT]++;
    return rc;
}

uint64_t em_conn_poll(em_conn_t *c, uint64_t now)
{
    uint64_t next = UINT64_MAX;
    for (uint32_t i = 0; i < c->npending;) {
        uint32_t slot = c->pending[i];
        struct entry *x = &c->e[slot];
        if (x->next_ns > now) {
            next = x->next_ns < next ? x->next_ns : next;
            i++;
            continue;
        }
        if (x->tries >= c->cfg.hs_tries) {
            c->st.hs_gave_up++;
            fail(c, slot,
                 "no answer to first contact (check the peer's address and that it "
                 "runs)");
            continue; /* fail() moved another slot to position i */
        }
        uint64_t rto = c->cfg.hs_rto_ns << (x->tries < 20 ? x->tries : 20);
        if (rto > c->cfg.hs_rto_max_ns)
            rto = c->cfg.hs_rto_max_ns;
        x->tries++;
        x->next_ns = now + rto;
        send_ours(c, slot);
        next = x->next_ns < next ? x->next_ns : next;
        i++;
    }
    return next;
}

/* ------------------------------------------------------------- access -- */

em_conn_chk_t em_conn_check(em_conn_t *c, uint32_t index, const uint8_t *addr, uint8_t addr_len,
                            uint64_t token)
{
    const struct entry *x = entry_of(c, index);
    em_conn_chk_t r = !x                                ? EM_CONN_CHK_INDEX
                      : x->state != EM_CONN_ESTABLISHED ? EM_CONN_CHK_STATE
                      : !addr_eq(x, addr, addr_len)     ? EM_CONN_CHK_SOURCE
                      : x->rx_token != token            ? EM_CONN_CHK_TOKEN
                                                        : EM_CONN_CHK_OK;
    c->st.chk[r]++;
    return r;
}

em_conn_st_t em_conn_state(const em_conn_t *c, uint32_t index)
{
    const struct entry *x = entry_of(c, index);
    return x ? (em_conn_st_t)x->state : EM_CONN_FREE;
}

int em_conn_peer(const em_conn_t *c, uint32_t index, em_conn_peer_t *out)
{
    const struct entry *x = entry_of(c, index);
    if (!x || x->state != EM_CONN_ESTABLISHED)
        return -EM_EINVAL;
    *out = (em_conn_peer_t){ .remote_index = x->remote_index,
                             .tx_token = x->tx_token,
                             .rx_token = x->rx_token,
                             .tx_isn = x->tx_isn,
                             .rx_isn = x->rx_isn };
    return 0;
}

int em_conn_name(const em_conn_t *c, uint32_t index, em_conn_name_t *out)
{
    const struct entry *x = entry_of(c, index);
    if (!x)
        return -EM_EINVAL;
    *out = x->name;
    return 0;
}

uint32_t em_conn_count(const em_conn_t *c) { return c->count; }

size_t em_conn_mem(const em_conn_t *c)
{
    return sizeof *c + (size_t)c->cap * sizeof *c->e + (size_t)c->hcap * sizeof *c->hidx +
           (size_t)c->free_cap * sizeof *c->free_slots + (size_t)c->pend_cap * sizeof *c->pending;
}

const em_conn_stats_t *em_conn_stats(const em_conn_t *c) { return &c->st; }

int em_conn_stats_format(const em_conn_t *c, char *buf, size_t len)
{
    const em_conn_stats_t *s = &c->st;
    return snprintf(
        buf, len,
        "hs_init %llu hs_challenge %llu hs_confirm %llu hs_accept %llu hs_short %llu "
        "hs_magic %llu hs_version %llu hs_type %llu hs_malformed %llu hs_not_us %llu "
        "hs_cookie_bad %llu hs_cookie_old %llu hs_stranger %llu hs_full %llu hs_bad_ep %llu "
        "hs_unexpected %llu "
        "hs_restarts %llu hs_replace_refused %llu hs_rebinds %llu hs_gave_up %llu "
        "hs_extended %llu chk_ok %llu "
        "chk_index %llu "
        "chk_state %llu chk_source %llu chk_token %llu hs_strangers_full %llu",
        (unsigned long long)s->hs_rx[0], (unsigned long long)s->hs_rx[1],
        (unsigned long long)s->hs_rx[2], (unsigned long long)s->hs_rx[3],
        (unsigned long long)s->hs_dec[EM_HS_DEC_SHORT],
        (unsigned long long)s->hs_dec[EM_HS_DEC_MAGIC],
        (unsigned long long)s->hs_dec[EM_HS_DEC_VERSION],
        (unsigned long long)s->hs_dec[EM_HS_DEC_TYPE],
        (unsigned long long)s->hs_dec[EM_HS_DEC_MALFORMED], (unsigned long long)s->hs_not_us,
        (unsigned long long)s->hs_cookie_bad, (unsigned long long)s->hs_cookie_old,
        (unsigned long long)s->hs_stranger, (unsigned long long)s->hs_full,
        (unsigned long long)s->hs_bad_ep, (unsigned long long)s->hs_unexpected,
        (unsigned long long)s->hs_restarts, (unsigned long long)s->hs_replace_refused,
        (unsigned long long)s->hs_rebinds, (unsigned long long)s->hs_gave_up,
        (unsigned long long)s->hs_extended, (unsigned long long)s->chk[EM_CONN_CHK_OK],
        (unsigned long long)s->chk[EM_CONN_CHK_INDEX],
        (unsigned long long)s->chk[EM_CONN_CHK_STATE],
        (unsigned long long)s->chk[EM_CONN_CHK_SOURCE],
        (unsigned long long)s->chk[EM_CONN_CHK_TOKEN], (unsigned long long)s->hs_strangers_full);
}
