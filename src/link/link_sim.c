/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file link_sim.c
 * Simulated links (see link_sim.h).  Each node has a receive queue kept as
 * a binary min-heap ordered by (arrival time, send order), so frames with
 * equal arrival times keep their send order and reordering happens only
 * where the configuration asks for it.
 */
#include "link/link_sim.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct sim_frame {
    em_pkt_t pkt;          /* must be first: em_pkt_t* <-> sim_frame* */
    uint64_t arrival;
    uint64_t order;
    uint8_t buf[];
};

struct sim_node {
    em_link_t link;        /* must be first */
    em_sim_t *sim;
    unsigned idx;
    bool dead;
    uint64_t busy_until;   /* serialisation: when this node's wire is free */
    struct sim_frame **heap;
    size_t n, cap;
};

struct em_sim {
    em_sim_cfg_t cfg;
    uint64_t now;
    uint64_t rng;
    uint64_t order;
    unsigned nnodes;
    em_sim_stats_t st;
    struct sim_node nodes[];
};

/* xorshift64*: small, fast, reproducible */
static uint64_t rnd(em_sim_t *s)
{
    s->rng ^= s->rng >> 12;
    s->rng ^= s->rng << 25;
    s->rng ^= s->rng >> 27;
    return s->rng * 2685821657736338717ull;
}

static double rnd01(em_sim_t *s) { return (double)(rnd(s) >> 11) / 9007199254740992.0; }

static bool before(const struct sim_frame *a, const struct sim_frame *b)
{
    return a->arrival < b->arrival || (a->arrival == b->arrival && a->order < b->order);
}

static int heap_push(struct sim_node *n, struct sim_frame *f)
{
    if (n->n == n->cap) {
        size_t nc = n->cap ? n->cap * 2 : 64;
        struct sim_frame **nh = realloc(n->heap, nc * sizeof *nh);
        if (!nh)
            return -ENOMEM;
        n->heap = nh;
        n->cap = nc;
    }
    size_t i = n->n++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!before(f, n->heap[parent]))
            break;
        n->heap[i] = n->heap[parent];
        i = parent;
    }
    n->heap[i] = f;
    return 0;
}

static struct sim_frame *heap_pop(struct sim_node *n)
{
    struct sim_frame *top = n->heap[0];
    struct sim_frame *last = n->heap[--n->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n->n)
            break;
        if (c + 1 < n->n && before(n->heap[c + 1], n->heap[c]))
            c++;
        if (!before(n->heap[c], last))
            break;
        n->heap[i] = n->heap[c];
        i = c;
    }
    if (n->n)
        n->heap[i] = last;
    return top;
}

static struct sim_frame *frame_new(em_sim_t *s)
{
    struct sim_frame *f = malloc(sizeof *f + s->cfg.mtu);
    if (f) {
        memset(&f->pkt, 0, sizeof f->pkt);
        f->pkt.data = f->buf;
    }
    return f;
}

static em_pkt_t *sim_tx_alloc(em_link_t *l)
{
    struct sim_frame *f = frame_new(((struct sim_node *)l)->sim);
    return f ? &f->pkt : NULL;
}

static void sim_free(em_link_t *l, em_pkt_t *p) { free(p); }

/** Enqueue @p f at node @p dst, honouring the queue limit. */
static void deliver(em_sim_t *s, unsigned dst, struct sim_frame *f)
{
    struct sim_node *d = &s->nodes[dst];
    if (s->cfg.queue_cap && d->n >= s->cfg.queue_cap) {
        s->st.overflowed++;
        free(f);
        return;
    }
    f->order = s->order++;
    if (heap_push(d, f) != 0)
        free(f);
}

static unsigned sim_tx_burst(em_link_t *l, em_pkt_t **pkts, unsigned n)
{
    struct sim_node *src = (struct sim_node *)l;
    em_sim_t *s = src->sim;

    for (unsigned i = 0; i < n; i++) {
        struct sim_frame *f = (struct sim_frame *)pkts[i];
        unsigned dst = f->pkt.peer;
        s->st.sent++;
        uint64_t start = src->busy_until > s->now ? src->busy_until : s->now;
        src->busy_until = start + f->pkt.len * s->cfg.ns_per_kb / 1000;
        if (dst >= s->nnodes || src->dead || s->nodes[dst].dead) {
            s->st.to_dead++;
            free(f);
            continue;
        }
        if (rnd01(s) < s->cfg.loss) {
            s->st.lost++;
            free(f);
            continue;
        }
        f->arrival = src->busy_until + s->cfg.latency_ns;
        if (s->cfg.reorder > 0 && rnd01(s) < s->cfg.reorder) {
            f->arrival += s->cfg.reorder_ns ? 1 + rnd(s) % s->cfg.reorder_ns : 1;
            s->st.reordered++;
        }
        if (s->cfg.dup > 0 && rnd01(s) < s->cfg.dup) {
            struct sim_frame *c = frame_new(s);
            if (c) {
                c->pkt.len = f->pkt.len;
                c->pkt.peer = f->pkt.peer;
                memcpy(c->buf, f->buf, f->pkt.len);
                c->arrival = f->arrival + 1 + (s->cfg.reorder_ns ? rnd(s) % s->cfg.reorder_ns : 0);
                s->st.duplicated++;
                deliver(s, dst, c);
            }
        }
        deliver(s, dst, f);
    }
    return n;
}

static unsigned sim_rx_burst(em_link_t *l, em_pkt_t **pkts, unsigned max)
{
    struct sim_node *me = (struct sim_node *)l;
    em_sim_t *s = me->sim;
    unsigned k = 0;

    while (k < max && me->n && me->heap[0]->arrival <= s->now) {
        struct sim_frame *f = heap_pop(me);
        if (me->dead) {
            s->st.to_dead++;
            free(f);
            continue;
        }
        s->st.delivered++;
        pkts[k++] = &f->pkt;
    }
    return k;
}

static void sim_rx_release(em_link_t *l, em_pkt_t **pkts, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        free(pkts[i]);
}

static int sim_flush(em_link_t *l) { return 0; }

static int sim_set_peer(em_link_t *l, uint16_t peer, const em_link_addr_t *a)
{
    struct sim_node *me = (struct sim_node *)l;
    if (a->len != 1 || a->bytes[0] != peer || peer >= me->sim->nnodes)
        return -EINVAL;
    return 0;
}

static void sim_close(em_link_t *l) { (void)l; }

static const em_link_ops_t sim_ops = {
    .name = "sim",
    .tx_alloc = sim_tx_alloc,
    .tx_burst = sim_tx_burst,
    .tx_free = sim_free,
    .rx_burst = sim_rx_burst,
    .rx_release = sim_rx_release,
    .flush = sim_flush,
    .set_peer = sim_set_peer,
    .close = sim_close,
};

void em_sim_cfg_default(em_sim_cfg_t *cfg)
{
    *cfg = (em_sim_cfg_t){
        .mtu = 1500, .latency_ns = 5000, .reorder_ns = 20000,
        .ns_per_kb = 800,   /* 10 Gbit/s */
        .seed = 1,
    };
}

em_sim_t *em_sim_create(unsigned nodes, const em_sim_cfg_t *cfg)
{
    if (nodes == 0 || nodes > 256 || cfg->mtu == 0)
        return NULL;
    em_sim_t *s = calloc(1, sizeof *s + nodes * sizeof(struct sim_node));
    if (!s)
        return NULL;
    s->cfg = *cfg;
    s->nnodes = nodes;
    s->rng = cfg->seed ? cfg->seed : 0x9e3779b97f4a7c15ull;
    for (unsigned i = 0; i < nodes; i++) {
        struct sim_node *n = &s->nodes[i];
        n->link.ops = &sim_ops;
        n->link.mtu = cfg->mtu;
        n->link.local.len = 1;
        n->link.local.bytes[0] = (uint8_t)i;
        n->sim = s;
        n->idx = i;
    }
    return s;
}

void em_sim_destroy(em_sim_t *s)
{
    if (!s)
        return;
    for (unsigned i = 0; i < s->nnodes; i++) {
        struct sim_node *n = &s->nodes[i];
        for (size_t k = 0; k < n->n; k++)
            free(n->heap[k]);
        free(n->heap);
    }
    free(s);
}

em_link_t *em_sim_link(em_sim_t *s, unsigned i) { return i < s->nnodes ? &s->nodes[i].link : NULL; }
void em_sim_set_now(em_sim_t *s, uint64_t now) { s->now = now; }
uint64_t em_sim_now(const em_sim_t *s) { return s->now; }
void em_sim_set_dead(em_sim_t *s, unsigned node, bool dead) { if (node < s->nnodes) s->nodes[node].dead = dead; }
void em_sim_set_loss(em_sim_t *s, double loss) { s->cfg.loss = loss; }
const em_sim_stats_t *em_sim_stats(const em_sim_t *s) { return &s->st; }

uint64_t em_sim_next_arrival(const em_sim_t *s)
{
    uint64_t t = UINT64_MAX;
    for (unsigned i = 0; i < s->nnodes; i++)
        if (s->nodes[i].n && s->nodes[i].heap[0]->arrival < t)
            t = s->nodes[i].heap[0]->arrival;
    return t;
}
