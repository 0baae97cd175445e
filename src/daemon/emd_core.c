/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file emd_core.c
 * The data plane of emd (see emd_core.h): rings, eager-ACK flows, node
 * table, hello.  No DPDK, no sockets: the port is an em_link_t.
 *
 * Reading client memory: the region is shared with a process that may
 * rewrite any byte at any time.  So: the geometry comes from struct
 * emd_client (our copies); rx.head and tx.tail are loaded once per use and
 * bounded; a tx slot's header is copied once and checked; a frame is copied
 * once (into an mbuf, or into another client's ring) and anything the
 * daemon must understand in it is decoded from a private copy.
 */
#include "daemon/emd_core.h"
#include "proto/wire.h"

#include <stdlib.h>
#include <string.h>

/* A sender retransmits only what is in its window (at most 64 frames, the
 * protocol's EM_WINDOW_MAX) and our rcv_nxt never passes its snd_nxt: a
 * true duplicate is at most this far behind. */
#define EMD_DUP_REACH 64

/* ------------------------------------------------------------ helpers -- */

/** tx slot @p i of client @p cl (our geometry). */
static inline const uint8_t *tx_slot(const struct emd_client *cl, uint32_t i)
{
    return (const uint8_t *)cl->h + cl->tx_off + (size_t)(i & (cl->tx_slots - 1)) * cl->slot_size;
}

/** The rx ring's byte at free-running position @p pos (our geometry). */
static inline uint8_t *rx_at(const struct emd_client *cl, uint32_t pos)
{
    return (uint8_t *)cl->h + cl->rx_off + (pos & (cl->rx_size - 1));
}

static struct emd_client *client_of(emd_core_t *c, uint16_t ep)
{
    uint16_t i = c->ep2cl[ep];
    if (!i)
        return NULL;
    struct emd_client *cl = &c->cl[i - 1];
    return cl->doomed ? NULL : cl;
}

static unsigned index_of(const emd_core_t *c, const struct emd_client *cl)
{
    return (unsigned)(cl - c->cl);
}

static void nolog(const char *fmt, ...) { (void)fmt; }

int emd_core_init(emd_core_t *c, em_link_t *link, const uint8_t mac[6], uint32_t mtu,
                  uint32_t max_clients, uint32_t max_flows, uint32_t max_nodes, int ack)
{
    c->link = link;
    memcpy(c->mac, mac, 6);
    c->mtu = mtu;
    c->ack = ack;
    c->max_clients = max_clients;
    c->max_flows = max_flows ? max_flows : EMD_FLOWS_DEFAULT;
    if (c->max_flows > EMD_FLOWS_MAX)
        c->max_flows = EMD_FLOWS_MAX;
    c->max_nodes = max_nodes ? max_nodes : EMD_NODES_DEFAULT;
    if (c->max_nodes > 65535u)
        c->max_nodes = 65535u;
    if (!c->rng)
        c->rng = 0x9E3779B97F4A7C15ull;
    if (!c->log)
        c->log = nolog;
    c->cl = calloc(max_clients, sizeof *c->cl);
    c->ep2cl = calloc(65536, sizeof *c->ep2cl);
    c->nodes = calloc(c->max_nodes, sizeof *c->nodes);
    if (!c->cl || !c->ep2cl || !c->nodes) {
        emd_core_fini(c);
        return -1;
    }
    for (unsigned i = 0; i < max_clients; i++) {
        c->cl[i].fd = -1;
        c->cl[i].slot = EMD_RDV_NO_SLOT;
    }
    return 0;
}

void emd_core_fini(emd_core_t *c)
{
    if (c->cl)
        for (unsigned i = 0; i < c->max_clients; i++)
            free(c->cl[i].flows);
    free(c->cl);
    free(c->ep2cl);
    free(c->nodes);
    c->cl = NULL;
    c->ep2cl = NULL;
    c->nodes = NULL;
}

/* ------------------------------------------------------------ clients -- */

int emd_core_attach(emd_core_t *c, unsigned i, int fd, struct emd_shm_hdr *h, uint64_t size,
                    uint32_t rx_size, uint32_t tx_slots, uint16_t ep, uint32_t pid, uint32_t uid,
                    uint16_t slot)
{
    uint32_t ss = 0;
    uint64_t want = emd_shm_size(c->mtu, rx_size, tx_slots, &ss);
    if (i >= c->max_clients || want == 0 || want != size || ep == 0 || ep == EMD_EP_CONTROL)
        return -1;
    struct emd_client *cl = &c->cl[i];
    *cl = (struct emd_client){
        .fd = fd, .h = h, .size = size, .rx_off = EMD_SHM_RX_OFF, .rx_size = rx_size,
        .tx_off = EMD_SHM_RX_OFF + rx_size, .tx_slots = tx_slots, .slot_size = ss, .mtu = c->mtu,
        .ep = ep, .pid = pid, .uid = uid, .slot = slot,
    };
    if (c->ack) {
        /* open addressing, at most half full */
        unsigned cap = 64;
        while (cap < 2 * c->max_flows)
            cap <<= 1;
        cl->flows = calloc(cap, sizeof *cl->flows);
        cl->flow_cap = cl->flows ? cap : 0;      /* no memory: no eager ACKs for this one */
    }
    c->ep2cl[ep] = (uint16_t)(i + 1);
    return 0;
}

void emd_core_forget(emd_core_t *c, unsigned i)
{
    struct emd_client *cl = &c->cl[i];
    if (cl->ep && c->ep2cl[cl->ep] == i + 1)
        c->ep2cl[cl->ep] = 0;
    free(cl->flows);
    *cl = (struct emd_client){ .fd = -1, .slot = EMD_RDV_NO_SLOT };
}

void emd_core_doom(emd_core_t *c, unsigned i, const char *why)
{
    struct emd_client *cl = &c->cl[i];
    if (cl->fd < 0 || cl->doomed)
        return;
    cl->doomed = why;
    c->doomed_clients++;
}

int emd_core_take_doomed(emd_core_t *c)
{
    for (unsigned i = 0; i < c->max_clients; i++)
        if (c->cl[i].fd >= 0 && c->cl[i].doomed)
            return (int)i;
    return -1;
}

/* -------------------------------------------------------------- flows -- */

static unsigned flow_hash(uint16_t self, uint16_t peer, unsigned cap)
{
    uint32_t x = ((uint32_t)self << 16 | peer) * 0x9E3779B1u;
    return (x >> 7) & (cap - 1);
}

static struct emd_flow *flow_find(struct emd_client *cl, uint16_t self, uint16_t peer)
{
    if (!cl->flows)
        return NULL;
    for (unsigned k = flow_hash(self, peer, cl->flow_cap), n = 0; n < cl->flow_cap;
         n++, k = (k + 1) & (cl->flow_cap - 1)) {
        struct emd_flow *f = &cl->flows[k];
        if (!f->used)
            return NULL;
        if (f->self == self && f->peer == peer)
            return f;
    }
    return NULL;
}

int emd_core_add_flow(emd_core_t *c, unsigned i, const struct emd_ctl_flow *m, const char **why)
{
    struct emd_client *cl = &c->cl[i];
    if (!cl->flows) {
        *why = c->ack ? "no memory for flows" : "the daemon does not acknowledge (--no-ack)";
        c->flows_refused++;
        return -1;
    }
    if (m->self == m->peer || m->frame_max < EM_HDR_LEN + EM_PUT_EXT_LEN || m->frame_max > cl->mtu) {
        *why = "flow with equal endpoints or a frame size beyond the region's";
        c->flows_refused++;
        return -1;
    }
    struct emd_flow *f = flow_find(cl, m->self, m->peer);
    if (!f) {
        if (cl->nflows >= c->max_flows) {
            *why = "flow table full (emd --max-flows)";
            c->flows_refused++;
            return -1;
        }
        unsigned k = flow_hash(m->self, m->peer, cl->flow_cap);
        while (cl->flows[k].used)
            k = (k + 1) & (cl->flow_cap - 1);
        f = &cl->flows[k];
        cl->nflows++;
    }
    *f = (struct emd_flow){ .rx_key = m->rx_key, .tx_key = m->tx_key, .rcv_nxt = m->rx_next,
                            .snd_hint = m->tx_next, .frame_max = m->frame_max, .self = m->self,
                            .peer = m->peer, .used = 1 };
    return 0;
}

/* --------------------------------------------------------------- rings -- */

/** Copy one frame into @p cl's rx ring; 0, or -1 (ring full, or the client doomed). */
static int deliver(emd_core_t *c, struct emd_client *cl, const uint8_t *data, uint16_t len,
                   uint16_t src_ep, const uint8_t *src_mac)
{
    struct emd_shm_hdr *h = cl->h;
    if (cl->doomed)
        return -1;
    uint32_t head = atomic_load_explicit(&h->rx.head, memory_order_acquire);   /* once */
    uint32_t used = cl->rx_tail - head;
    if (used > cl->rx_size || (head & 63u)) {
        emd_core_doom(c, index_of(c, cl), "corrupt rx ring index (rx.head)");
        return -1;
    }
    uint32_t need = emd_rec_size(len);
    uint32_t to_end = cl->rx_size - (cl->rx_tail & (cl->rx_size - 1));
    uint32_t pad = need > to_end ? to_end : 0;       /* the record starts over at 0 */
    if (cl->rx_size - used < pad + need || len > cl->mtu) {
        atomic_fetch_add_explicit(&h->st.rx_ring_full, 1, memory_order_relaxed);
        c->rx_ring_full++;
        return -1;
    }
    if (pad) {
        struct emd_slot_hdr w = { .len = EMD_REC_WRAP };
        memcpy(rx_at(cl, cl->rx_tail), &w, sizeof w);
        cl->rx_tail += pad;
    }
    uint8_t *s = rx_at(cl, cl->rx_tail);
    struct emd_slot_hdr sh = { .len = len, .endpoint = src_ep };
    if (src_mac)
        memcpy(sh.mac, src_mac, 6);
    memcpy(s, &sh, sizeof sh);
    memcpy(s + sizeof sh, data, len);
    cl->rx_tail += need;
    cl->rx_dirty = 1;
    atomic_fetch_add_explicit(&h->st.rx_delivered, 1, memory_order_relaxed);
    return 0;
}

void emd_core_publish_rx(emd_core_t *c)
{
    for (unsigned i = 0; i < c->max_clients; i++) {
        struct emd_client *cl = &c->cl[i];
        if (cl->fd >= 0 && cl->rx_dirty) {
            atomic_store_explicit(&cl->h->rx.tail, cl->rx_tail, memory_order_release);
            cl->rx_dirty = 0;
        }
    }
}

static uint64_t rnd(emd_core_t *c)
{
    c->rng ^= c->rng << 13;
    c->rng ^= c->rng >> 7;
    c->rng ^= c->rng << 17;
    return c->rng;
}

/**
 * The stateless checks the client's protocol runs on a sequenced frame
 * (em_proto_rx): its key, its endpoints, the frame size, the message length.
 * A frame that fails one would be refused by the client, so it must not be
 * acknowledged for it.
 */
static int frame_acceptable(const struct emd_flow *f, const em_hdr_t *h)
{
    size_t hl = em_hdr_len(h->type);
    if ((uint64_t)h->job_key != f->rx_key || h->src != f->peer || h->dst != f->self)
        return 0;
    if (hl + h->len > f->frame_max)
        return 0;
    return (uint64_t)h->msg_len <= (uint64_t)h->frag_cnt * (f->frame_max - hl);
}

/**
 * Deliver a frame to @p cl, acknowledging it when it is the next in a
 * registered flow and passes that flow's checks.  @p data is daemon memory.
 */
static void deliver_acked(emd_core_t *c, struct emd_client *cl, const uint8_t *data, uint16_t len,
                          uint16_t src_ep, const uint8_t src_mac[6])
{
    em_hdr_t h;
    struct emd_flow *f = NULL;
    if (em_hdr_decode(data, len, &h) == EM_DEC_OK && (h.type == EM_PT_DATA || h.type == EM_PT_PUT))
        f = flow_find(cl, h.dst, h.src);
    if (!f || !frame_acceptable(f, &h)) {
        if (f)
            c->ack_refused++;        /* the client refuses and counts it; no ACK from us */
        (void)deliver(c, cl, data, len, src_ep, src_mac);
        return;
    }
    int32_t d = (int32_t)(h.seq - f->rcv_nxt);
    /* where the ACKs go: only a frame that passed the key check moves it */
    f->src_ep = src_ep;
    memcpy(f->src_mac, src_mac, 6);
    f->where_known = 1;
    if (d < 0 && d >= -EMD_DUP_REACH) {
        /* acknowledged before, so it is in the ring already (or was
         * consumed): the sender missed our ACK, say it again */
        atomic_fetch_add_explicit(&cl->h->st.rx_dups, 1, memory_order_relaxed);
        f->ack_owed = 1;
        return;
    }
    if (d < 0) {
        /* further back than any sender's window reaches: not ours to judge
         * (a registration that was wrong?); the client's protocol decides */
        c->ack_refused++;
        (void)deliver(c, cl, data, len, src_ep, src_mac);
        return;
    }
    if (deliver(c, cl, data, len, src_ep, src_mac) != 0)
        return;                      /* ring full: no ACK, the sender retransmits */
    if (d == 0) {
        f->rcv_nxt++;
        f->ack_owed = 1;
    }
}

static void tx_batch(emd_core_t *c, em_pkt_t **batch, unsigned nb)
{
    unsigned sent = em_link_tx_burst(c->link, batch, nb);
    for (unsigned j = sent; j < nb; j++)
        em_link_tx_free(c->link, batch[j]);   /* a later ACK covers it */
    c->acks += sent;
}

/** One standalone ACK per flow that advanced in this burst. */
static void send_acks(emd_core_t *c)
{
    em_pkt_t *batch[EMD_BURST];
    unsigned nb = 0;
    for (unsigned i = 0; i < c->max_clients; i++) {
        struct emd_client *cl = &c->cl[i];
        if (cl->fd < 0 || !cl->flows || cl->doomed)
            continue;
        for (unsigned k = 0; k < cl->flow_cap; k++) {
            struct emd_flow *f = &cl->flows[k];
            if (!f->used || !f->ack_owed || !f->where_known)
                continue;
            int ni = emd_core_node(c, f->src_mac);
            em_pkt_t *p = ni >= 0 ? em_link_tx_alloc(c->link) : NULL;
            if (!p)
                continue;            /* try again after the next burst */
            em_hdr_t a = { .type = EM_PT_ACK, .src = f->self, .dst = f->peer,
                           .seq = f->snd_hint, .ack = f->rcv_nxt };
            a.job_key = f->tx_key;   /* (whatever width the wire's key has) */
            emd_wire_encode(p->data, EM_HDR_LEN, f->src_ep, cl->ep, c->mac);
            p->len = EMD_WIRE_HDR_LEN + (uint32_t)em_hdr_encode(&a, p->data + EMD_WIRE_HDR_LEN);
            p->peer = (uint16_t)ni;
            f->ack_owed = 0;
            atomic_fetch_add_explicit(&cl->h->st.acks_sent, 1, memory_order_relaxed);
            batch[nb++] = p;
            if (nb == EMD_BURST) {
                tx_batch(c, batch, nb);
                nb = 0;
            }
        }
    }
    if (nb)
        tx_batch(c, batch, nb);
}

/** A put frame carried by the daemon (its own queue would have spared us). */
static void count_put(emd_core_t *c, struct emd_client *cl, const uint8_t *f, uint32_t len)
{
    if (len >= EM_HDR_LEN && f[0] == EM_WIRE_MAGIC && f[2] == EM_PT_PUT) {
        c->put_frames++;
        c->put_bytes += len;
        atomic_fetch_add_explicit(&cl->h->st.put_frames, 1, memory_order_relaxed);
    }
}

/**
 * A frame the client sends carries its protocol's cumulative ACK for the
 * reverse flow: everything below it has reached the process, whichever way
 * (frames on its own queue never pass here).  Move that flow's eager-ACK
 * state up to it, else the daemon would wait forever for sequence numbers
 * it never sees; and note the client's own next sequence number (our ACKs
 * carry it).  @p hdr is a private copy.  (A client that lies only hurts the
 * flows to its own endpoint.)
 */
static void resync_flow(emd_core_t *c, struct emd_client *cl, const uint8_t *hdr, uint32_t len)
{
    em_hdr_t h;
    if (!cl->flows || em_hdr_decode(hdr, len, &h) != EM_DEC_OK)
        return;
    struct emd_flow *f = flow_find(cl, h.src, h.dst);
    if (!f || (uint64_t)h.job_key != f->tx_key)
        return;
    int32_t ahead = (int32_t)(h.ack - f->rcv_nxt);
    if (ahead > 0 && ahead < (1 << 24)) {
        f->rcv_nxt = h.ack;
        c->ack_resyncs++;
    }
    uint32_t next = (h.type == EM_PT_DATA || h.type == EM_PT_PUT) ? h.seq + 1 : h.seq;
    int32_t fwd = (int32_t)(next - f->snd_hint);
    if (fwd > 0 && fwd < (1 << 24))
        f->snd_hint = next;
}

/* --------------------------------------------------------------- nodes -- */

int emd_core_node(emd_core_t *c, const uint8_t mac[6])
{
    int lru = -1;
    for (unsigned i = 0; i < c->nnodes; i++) {
        struct emd_node *n = &c->nodes[i];
        if (memcmp(n->mac, mac, 6) == 0) {
            n->last_ns = c->now_ns;
            return (int)i;
        }
        if (lru < 0 || n->last_ns < c->nodes[lru].last_ns)
            lru = (int)i;
    }
    unsigned slot;
    if (c->nnodes < c->max_nodes) {
        slot = c->nnodes;
    } else if (lru >= 0 && c->now_ns - c->nodes[lru].last_ns >= EMD_NODE_AGE_NS) {
        /* not used for a while (a frame of this round may still name a
         * younger entry, never this one): give it to the new MAC */
        slot = (unsigned)lru;
        c->nodes_evicted++;
    } else {
        c->nodes_full++;
        return -1;
    }
    em_link_addr_t a = { .len = 8 };
    memcpy(a.bytes, mac, 6);
    if (em_link_set_peer(c->link, (uint16_t)slot, &a) != 0)
        return -1;
    memcpy(c->nodes[slot].mac, mac, 6);
    c->nodes[slot].last_ns = c->now_ns;
    c->nodes[slot].used = 1;
    if (slot == c->nnodes)
        c->nnodes++;
    return (int)slot;
}

/* --------------------------------------------------------------- hello -- */

uint16_t emd_core_queues(const emd_core_t *c)
{
    return (uint16_t)(c->rdv_slots ? 1u + (unsigned)c->rdv_slots * c->rdv_slots : 1u);
}

void emd_core_send_hello(emd_core_t *c, uint8_t kind)
{
    static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
    int ni = emd_core_node(c, bcast);
    em_pkt_t *p = ni >= 0 ? em_link_tx_alloc(c->link) : NULL;
    if (!p)
        return;
    emd_wire_encode(p->data, (uint16_t)sizeof(struct emd_hello), EMD_EP_CONTROL, 0, c->mac);
    emd_hello_encode(p->data + EMD_WIRE_HDR_LEN, kind, c->rdv_slots, emd_core_queues(c));
    p->len = EMD_WIRE_HDR_LEN + (uint32_t)sizeof(struct emd_hello);
    p->peer = (uint16_t)ni;
    if (em_link_tx_burst(c->link, &p, 1) != 1)
        em_link_tx_free(c->link, p);
}

/**
 * A hello from the wire (anyone can send one): the first consistent one
 * fixes the other end's layout; later ones from another source, or with
 * another layout, are counted and change nothing.  A layout that differs
 * from ours is logged once (emd.c decides at start what to do about it).
 * Replies at most every 100 ms (a flood of hellos is not amplified).
 */
static void handle_hello(emd_core_t *c, const uint8_t *f, uint16_t len, const uint8_t smac[6])
{
    uint8_t kind;
    uint16_t slots, queues;
    if (emd_hello_decode(f, len, &kind, &slots, &queues) != 0) {
        c->hello_bad++;
        c->rx_bad++;
        return;
    }
    if (!c->peer_seen ||
        (c->peer_queues != emd_core_queues(c) && queues == emd_core_queues(c))) {
        /* the first; or a matching one after a mismatching one (a forger
         * that spoke first does not decide for the real other end) */
        c->peer_seen = 1;
        c->peer_slots = slots;
        c->peer_queues = queues;
        memcpy(c->peer_mac, smac, 6);
    } else if (memcmp(smac, c->peer_mac, 6) != 0 || queues != c->peer_queues) {
        c->hello_conflict++;          /* changes nothing */
    }
    if (queues != emd_core_queues(c) && !c->mismatch_logged) {
        c->log("error: a daemon on the cable has %u queue pairs (--rdv-slots %u), this one %u "
               "(--rdv-slots %u): their own queues do not pair up; restart both with the same "
               "--rdv-slots", queues, slots, emd_core_queues(c), c->rdv_slots);
        c->mismatch_logged = 1;
    }
    if (kind == EMD_HELLO) {
        if (c->last_hello_reply_ns && c->now_ns - c->last_hello_reply_ns < 100000000ull) {
            c->hello_replies_skipped++;
            return;
        }
        c->last_hello_reply_ns = c->now_ns ? c->now_ns : 1;
        emd_core_send_hello(c, EMD_HELLO_REPLY);
    }
}

/* ---------------------------------------------------------------- port -- */

unsigned emd_core_poll_port(emd_core_t *c)
{
    em_pkt_t *pk[EMD_BURST];
    unsigned n = em_link_rx_burst(c->link, pk, EMD_BURST);
    int acks = 0;
    for (unsigned i = 0; i < n; i++) {
        uint16_t len, dst, src;
        uint8_t smac[6];
        if (emd_wire_decode(pk[i]->data, pk[i]->len, &len, &dst, &src, smac) != 0 || len > c->mtu) {
            c->rx_bad++;
            continue;
        }
        if (dst == EMD_EP_CONTROL) {
            handle_hello(c, pk[i]->data + EMD_WIRE_HDR_LEN, len, smac);
            continue;
        }
        if (c->loss > 0 && (double)(rnd(c) >> 11) / 9007199254740992.0 < c->loss) {
            c->loss_drops++;
            continue;
        }
        struct emd_client *cl = client_of(c, dst);
        if (!cl) {
            c->rx_no_ep++;          /* the process is gone (or never was) */
            continue;
        }
        count_put(c, cl, pk[i]->data + EMD_WIRE_HDR_LEN, len);
        if (cl->flows && cl->nflows) {
            deliver_acked(c, cl, pk[i]->data + EMD_WIRE_HDR_LEN, len, src, smac);
            acks = 1;
        } else {
            (void)deliver(c, cl, pk[i]->data + EMD_WIRE_HDR_LEN, len, src, smac);
        }
    }
    if (n) {
        em_link_rx_release(c->link, pk, n);
        emd_core_publish_rx(c);    /* the frames are in the rings before any ACK leaves */
        if (acks)
            send_acks(c);
        c->rx_frames += n;
    }
    return n;
}

/** A destination a client may name: unicast (no broadcast or multicast amplification). */
static int unicast(const uint8_t mac[6]) { return !(mac[0] & 1); }

/**
 * One slot of @p cl: a frame to the port (appended to @p batch) or to a
 * client on this node.  @return 1 taken into the batch, 0 done otherwise,
 * -1 no mbuf (stop here).
 */
static int drain_slot(emd_core_t *c, struct emd_client *cl, const uint8_t *s, em_pkt_t **out)
{
    struct emd_slot_hdr sh;
    memcpy(&sh, s, sizeof sh);   /* one read of what the client wrote; checked below */
    if (sh.len == 0 || sh.len > cl->mtu || sh.endpoint == 0) {
        atomic_fetch_add_explicit(&cl->h->st.tx_bad, 1, memory_order_relaxed);
        return 0;
    }
    const uint8_t *frame = s + sizeof sh;
    uint8_t hdr[EM_HDR_LEN + EM_PUT_EXT_LEN];
    uint32_t hl = sh.len < sizeof hdr ? sh.len : (uint32_t)sizeof hdr;
    memcpy(hdr, frame, hl);      /* a private copy of what we parse */
    if (sh.flags & EMD_SLOT_F_NOTE) {
        resync_flow(c, cl, hdr, hl);
        c->notes++;              /* its frame went on the client's own queue */
        return 0;
    }
    if (memcmp(sh.mac, c->mac, 6) == 0) {          /* on this node */
        resync_flow(c, cl, hdr, hl);
        count_put(c, cl, hdr, sh.len);
        struct emd_client *dc = client_of(c, sh.endpoint);
        if (dc)
            (void)deliver(c, dc, frame, (uint16_t)sh.len, cl->ep, c->mac);
        else
            c->rx_no_ep++;
        c->local++;
        return 0;
    }
    int ni = unicast(sh.mac) ? emd_core_node(c, sh.mac) : -1;
    if (ni < 0) {
        if (!unicast(sh.mac))
            c->tx_bad_mac++;
        atomic_fetch_add_explicit(&cl->h->st.tx_bad, 1, memory_order_relaxed);
        return 0;
    }
    em_pkt_t *p = em_link_tx_alloc(c->link);
    if (!p)
        return -1;
    emd_wire_encode(p->data, (uint16_t)sh.len, sh.endpoint, cl->ep, c->mac);
    memcpy(p->data + EMD_WIRE_HDR_LEN, frame, sh.len);   /* the one copy of the frame */
    p->len = EMD_WIRE_HDR_LEN + sh.len;
    p->peer = (uint16_t)ni;
    /* parse the copy in the mbuf, not the slot */
    resync_flow(c, cl, p->data + EMD_WIRE_HDR_LEN, hl);
    count_put(c, cl, p->data + EMD_WIRE_HDR_LEN, sh.len);
    *out = p;
    return 1;
}

unsigned emd_core_drain(emd_core_t *c, unsigned ci)
{
    struct emd_client *cl = &c->cl[ci];
    if (cl->fd < 0 || cl->doomed)
        return 0;
    struct emd_shm_hdr *h = cl->h;
    uint32_t tail = atomic_load_explicit(&h->tx.tail, memory_order_acquire);   /* once */
    uint32_t avail = tail - cl->tx_head;
    if (avail == 0)
        return 0;
    if (avail > cl->tx_slots) {
        atomic_fetch_add_explicit(&h->st.tx_bad, 1, memory_order_relaxed);
        emd_core_doom(c, ci, "corrupt tx ring index (tx.tail)");
        return 0;
    }
    if (avail > EMD_BURST)
        avail = EMD_BURST;
    em_pkt_t *batch[EMD_BURST];
    uint32_t slot_of[EMD_BURST];
    unsigned nb = 0, done = 0;
    for (uint32_t k = 0; k < avail; k++) {
        em_pkt_t *p = NULL;
        int r = drain_slot(c, cl, tx_slot(cl, cl->tx_head + k), &p);
        if (r < 0) {                  /* no mbuf: stop here, the rest waits */
            avail = k;
            c->tx_blocked = 1;
            break;
        }
        if (r > 0) {
            slot_of[nb] = k;
            batch[nb++] = p;
        }
    }
    if (nb) {
        unsigned sent = em_link_tx_burst(c->link, batch, nb);
        for (unsigned j = sent; j < nb; j++)
            em_link_tx_free(c->link, batch[j]);
        if (sent < nb) {
            /* the port is full: resume at the first frame it refused (a
             * same-node frame after it is delivered again: the protocol
             * drops the duplicate) */
            avail = slot_of[sent];
            c->tx_blocked = 1;
        }
        c->tx_frames += sent;
        atomic_fetch_add_explicit(&h->st.tx_sent, sent, memory_order_relaxed);
        done = sent;
    }
    emd_core_publish_rx(c);           /* same-node deliveries */
    cl->tx_head += avail;
    atomic_store_explicit(&h->tx.head, cl->tx_head, memory_order_release);
    return avail ? avail : done;
}

int emd_core_tx_pending(const emd_core_t *c)
{
    for (unsigned i = 0; i < c->max_clients; i++) {
        const struct emd_client *cl = &c->cl[i];
        if (cl->fd >= 0 && !cl->doomed &&
            atomic_load(&cl->h->tx.tail) != cl->tx_head)
            return 1;
    }
    return 0;
}
