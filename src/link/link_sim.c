/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file link_sim.c
 * Simulated links (see link_sim.h).  Each node has a receive queue kept as
 * a binary min-heap ordered by (arrival time, send order), so frames with
 * equal arrival times keep their send order and reordering happens only
 * where the configuration asks for it.  The optional shared bottleneck
 * (link_sim.h) keeps frames on their way to its port in one more such heap,
 * ordered by their arrival at the port, and moves them through it whenever
 * the clock is set or a node reads.
 */
#include "link/link_sim.h"
#include "link/link_util.h"
#include "util/loss.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct sim_frame {
    em_pkt_t pkt; /* must be first: em_pkt_t* <-> sim_frame* */
    uint64_t arrival;
    uint64_t order;
    unsigned from; /* sending node: the frame's "source address" */
    uint8_t buf[];
};

/* binary min-heap of frames ordered by (arrival, order) */
struct sim_heap {
    struct sim_frame **a;
    size_t n, cap;
};

struct sim_node {
    em_link_t link; /* must be first */
    em_sim_t *sim;
    unsigned idx;
    bool dead;
    uint64_t busy_until; /* serialisation: when this node's wire is free */
    struct sim_heap q;   /* frames on their way to this node */
    /* set_peer's numbering (none: peer == node): peer -> node + 1 (0: not
     * set), and node -> peer + 1 (0: not set) */
    uint32_t *p2n, np2n;
    uint32_t *n2p;
};

/* The shared bottleneck in front of cfg.bn_node (see link_sim.h). */
struct sim_bottleneck {
    struct sim_heap pending; /* frames not yet at the port, by arrival time there */
    uint64_t *dep;           /* ring: departure times of the frames in the port */
    uint32_t head, count;
    uint64_t last_dep; /* departure time of the newest frame admitted */
};

struct em_sim {
    em_sim_cfg_t cfg;
    uint64_t now;
    em_loss_t fault; /* loss (cfg.loss), and the draws for reordering and duplication */
    uint64_t order;
    unsigned nnodes;
    em_sim_stats_t st;
    struct sim_bottleneck bn;
    struct sim_node nodes[];
};

static uint64_t rnd(em_sim_t *s) { return em_loss_next(&s->fault); }
static double rnd01(em_sim_t *s) { return em_loss_unit(&s->fault); }

static bool before(const struct sim_frame *a, const struct sim_frame *b)
{
    return a->arrival < b->arrival || (a->arrival == b->arrival && a->order < b->order);
}

static int heap_push(struct sim_heap *h, struct sim_frame *f)
{
    if (h->n == h->cap) {
        size_t nc = h->cap ? h->cap * 2 : 64;
        struct sim_frame **na = realloc(h->a, nc * sizeof *na);
        if (!na)
            return -ENOMEM;
        h->a = na;
        h->cap = nc;
    }
    size_t i = h->n++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!before(f, h->a[parent]))
            break;
        h->a[i] = h->a[parent];
        i = parent;
    }
    h->a[i] = f;
    return 0;
}

static struct sim_frame *heap_pop(struct sim_heap *h)
{
    struct sim_frame *top = h->a[0];
    struct sim_frame *last = h->a[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && before(h->a[c + 1], h->a[c]))
            c++;
        if (!before(h->a[c], last))
            break;
        h->a[i] = h->a[c];
        i = c;
    }
    if (h->n)
        h->a[i] = last;
    return top;
}

static void heap_free(struct sim_heap *h)
{
    for (size_t k = 0; k < h->n; k++)
        free(h->a[k]);
    free(h->a);
    h->a = NULL;
    h->n = h->cap = 0;
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
    if (s->cfg.queue_cap && d->q.n >= s->cfg.queue_cap) {
        s->st.overflowed++;
        free(f);
        return;
    }
    f->order = s->order++;
    if (heap_push(&d->q, f) != 0)
        free(f);
}

static bool bn_on(const em_sim_t *s) { return s->cfg.bn_ns_per_kb > 0; }

/** Send @p f (its arrival time set) towards node @p dst: through the bottleneck or straight. */
static void route(em_sim_t *s, unsigned dst, struct sim_frame *f)
{
    if (!bn_on(s) || dst != s->cfg.bn_node) {
        deliver(s, dst, f);
        return;
    }
    f->order = s->order++;
    if (heap_push(&s->bn.pending, f) != 0)
        free(f);
}

/**
 * Move every frame that reached the bottleneck port by @p upto through it,
 * in arrival order: tail drop when the port is full, else queue it behind
 * the frames already there and deliver it when its service ends.
 */
static void bn_advance(em_sim_t *s, uint64_t upto)
{
    struct sim_bottleneck *b = &s->bn;
    uint32_t cap = s->cfg.bn_queue;

    while (b->pending.n && b->pending.a[0]->arrival <= upto) {
        struct sim_frame *f = heap_pop(&b->pending);
        uint64_t t = f->arrival;
        if (cap) {
            while (b->count && b->dep[b->head] <= t) { /* frames gone by t */
                b->head = (b->head + 1) % cap;
                b->count--;
            }
            if (b->count >= cap) {
                s->st.bn_dropped++;
                free(f);
                continue;
            }
        }
        uint64_t start = b->last_dep > t ? b->last_dep : t;
        b->last_dep = start + f->pkt.len * s->cfg.bn_ns_per_kb / 1000;
        if (cap) {
            b->dep[(b->head + b->count) % cap] = b->last_dep;
            b->count++;
            if (b->count > s->st.bn_max_queue)
                s->st.bn_max_queue = b->count;
        }
        s->st.bn_forwarded++;
        s->st.bn_bytes += f->pkt.len;
        f->arrival = b->last_dep;
        deliver(s, s->cfg.bn_node, f);
    }
}

/* Frame @p f from @p src onto the wire toward node @p dst (taken). */
static void sim_send(struct sim_node *src, struct sim_frame *f, unsigned dst)
{
    em_sim_t *s = src->sim;
    f->from = src->idx;
    s->st.sent++;
    uint64_t start = src->busy_until > s->now ? src->busy_until : s->now;
    src->busy_until = start + f->pkt.len * s->cfg.ns_per_kb / 1000;
    if (dst >= s->nnodes || src->dead || s->nodes[dst].dead) {
        s->st.to_dead++;
        free(f);
        return;
    }
    if (em_loss_drop(&s->fault)) {
        s->st.lost++;
        free(f);
        return;
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
            c->from = f->from;
            memcpy(c->buf, f->buf, f->pkt.len);
            c->arrival = f->arrival + 1 + (s->cfg.reorder_ns ? rnd(s) % s->cfg.reorder_ns : 0);
            s->st.duplicated++;
            route(s, dst, c);
        }
    }
    route(s, dst, f);
}

static unsigned sim_tx_burst(em_link_t *l, em_pkt_t **pkts, unsigned n)
{
    struct sim_node *src = (struct sim_node *)l;
    for (unsigned i = 0; i < n; i++) {
        uint32_t peer = pkts[i]->peer;
        sim_send(src, (struct sim_frame *)pkts[i],
                 peer < src->np2n && src->p2n[peer] ? src->p2n[peer] - 1 : peer);
    }
    return n;
}

/* node i's address is {1, {i}} (link_sim.h) */
static int sim_tx_to(em_link_t *l, em_pkt_t *p, const em_link_addr_t *a)
{
    struct sim_node *src = (struct sim_node *)l;
    if (a->len != 1 || a->bytes[0] >= src->sim->nnodes)
        return -EINVAL;
    sim_send(src, (struct sim_frame *)p, a->bytes[0]);
    return 0;
}

static bool sim_rx_from(em_link_t *l, const em_pkt_t *p, const em_link_addr_t *a)
{
    (void)l;
    return a->len == 1 && a->bytes[0] == ((const struct sim_frame *)p)->from;
}

static unsigned sim_rx_burst(em_link_t *l, em_pkt_t **pkts, unsigned max)
{
    struct sim_node *me = (struct sim_node *)l;
    em_sim_t *s = me->sim;
    unsigned k = 0;

    bn_advance(s, s->now);
    while (k < max && me->q.n && me->q.a[0]->arrival <= s->now) {
        struct sim_frame *f = heap_pop(&me->q);
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

static int sim_set_peer(em_link_t *l, uint32_t peer, const em_link_addr_t *a)
{
    struct sim_node *me = (struct sim_node *)l;
    unsigned node = a->len == 1 ? a->bytes[0] : ~0u;
    if (node >= me->sim->nnodes || peer == EM_LINK_PEER_UNKNOWN)
        return -EINVAL;
    if (!me->n2p && !(me->n2p = calloc(me->sim->nnodes, sizeof *me->n2p)))
        return -ENOMEM;
    if (em_peer_table_reserve((void **)&me->p2n, &me->np2n, sizeof *me->p2n, peer) != 0)
        return -ENOMEM;
    me->p2n[peer] = node + 1;
    me->n2p[node] = peer + 1;
    return 0;
}

static void sim_close(em_link_t *l) { (void)l; }

/* the sending node is the peer: by set_peer's number, else the node's */
static uint32_t sim_rx_peer(em_link_t *l, const em_pkt_t *p)
{
    const struct sim_node *me = (const struct sim_node *)l;
    unsigned from = ((const struct sim_frame *)p)->from;
    return me->n2p && me->n2p[from] ? me->n2p[from] - 1 : from;
}

static const em_link_ops_t sim_ops = {
    .name = "sim",
    .tx_alloc = sim_tx_alloc,
    .tx_burst = sim_tx_burst,
    .tx_free = sim_free,
    .rx_burst = sim_rx_burst,
    .rx_release = sim_rx_release,
    .flush = em_link_flush_none,
    .set_peer = sim_set_peer,
    .close = sim_close,
    .rx_peer = sim_rx_peer,
    .tx_to = sim_tx_to,
    .rx_from = sim_rx_from,
};

void em_sim_cfg_default(em_sim_cfg_t *cfg)
{
    *cfg = (em_sim_cfg_t){
        .mtu = 1500,
        .latency_ns = 5000,
        .reorder_ns = 20000,
        .ns_per_kb = 800, /* 10 Gbit/s */
        .seed = 1,
    };
}

em_sim_t *em_sim_create(unsigned nodes, const em_sim_cfg_t *cfg)
{
    if (nodes == 0 || nodes > 256 || cfg->mtu == 0)
        return NULL;
    if (cfg->bn_ns_per_kb && cfg->bn_node >= nodes)
        return NULL;
    em_sim_t *s = calloc(1, sizeof *s + nodes * sizeof(struct sim_node));
    if (!s)
        return NULL;
    if (cfg->bn_ns_per_kb && cfg->bn_queue) {
        s->bn.dep = calloc(cfg->bn_queue, sizeof *s->bn.dep);
        if (!s->bn.dep) {
            free(s);
            return NULL;
        }
    }
    s->cfg = *cfg;
    s->nnodes = nodes;
    em_loss_init(&s->fault, cfg->loss, cfg->seed);
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
        heap_free(&s->nodes[i].q);
        free(s->nodes[i].p2n);
        free(s->nodes[i].n2p);
    }
    heap_free(&s->bn.pending);
    free(s->bn.dep);
    free(s);
}

em_link_t *em_sim_link(em_sim_t *s, unsigned i) { return i < s->nnodes ? &s->nodes[i].link : NULL; }
void em_sim_set_now(em_sim_t *s, uint64_t now)
{
    s->now = now;
    bn_advance(s, now);
}
uint64_t em_sim_now(const em_sim_t *s) { return s->now; }
void em_sim_set_dead(em_sim_t *s, unsigned node, bool dead)
{
    if (node < s->nnodes)
        s->nodes[node].dead = dead;
}
void em_sim_set_loss(em_sim_t *s, double loss)
{
    s->cfg.loss = loss;
    s->fault.p = loss;
}
const em_sim_stats_t *em_sim_stats(const em_sim_t *s) { return &s->st; }

uint64_t em_sim_next_arrival(const em_sim_t *s)
{
    uint64_t t = UINT64_MAX;
    for (unsigned i = 0; i < s->nnodes; i++)
        if (s->nodes[i].q.n && s->nodes[i].q.a[0]->arrival < t)
            t = s->nodes[i].q.a[0]->arrival;
    if (s->bn.pending.n && s->bn.pending.a[0]->arrival < t)
        t = s->bn.pending.a[0]->arrival;
    return t;
}
