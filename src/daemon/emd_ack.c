/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file emd_ack.c
 * emd's eager ACKs (emd_core.h "Eager ACKs", docs/daemon.md): the flows the
 * clients register, the in-order check of each received sequenced frame,
 * one standalone ACK per advanced flow after each port burst, and moving a
 * flow by the ACKs the client itself sends.  The daemon is a protocol agent
 * here: it decodes protocol headers with the protocol's own decoder, from
 * private copies, and compares sequence numbers through proto/seq.h.
 */
#include "daemon/emd_core_int.h"
#include "proto/seq.h"
#include "proto/wire.h"

#include <string.h>

/* A client's flows are found two ways (wire v3 names no sender, only the
 * receiver's index for it): a frame from a peer by the index it carries,
 * which is the client's own number of that peer (flows, keyed by peer); a
 * frame of the client's by where it goes (by_dst, keyed by the peer's
 * node and endpoint), since its index is the peer's number of the client,
 * the same for every peer when both sides number alike (ranks). */
static unsigned flow_hash(uint32_t peer, unsigned cap)
{
    uint32_t x = peer * 0x9E3779B1u;
    return (x >> 7) & (cap - 1);
}

static unsigned dst_hash(const uint8_t mac[6], uint16_t ep, unsigned cap)
{
    uint64_t v = (uint64_t)ep << 48;
    for (int i = 0; i < 6; i++)
        v |= (uint64_t)mac[i] << (8 * i);
    /* splitmix64's finaliser: every bit of v reaches the low bits (a bare
     * product carries only upwards, and the endpoint would be lost) */
    v = (v ^ (v >> 30)) * 0xBF58476D1CE4E5B9ull;
    v = (v ^ (v >> 27)) * 0x94D049BB133111EBull;
    return (unsigned)(v ^ (v >> 31)) & (cap - 1);
}

static struct emd_flow *flow_find(struct emd_client *cl, uint32_t peer)
{
    if (!cl->flows)
        return NULL;
    for (unsigned k = flow_hash(peer, cl->flow_cap), n = 0; n < cl->flow_cap;
         n++, k = (k + 1) & (cl->flow_cap - 1)) {
        struct emd_flow *f = &cl->flows[k];
        if (!f->used)
            return NULL;
        if (f->peer == peer)
            return f;
    }
    return NULL;
}

/* The flow of the client's frame to (@p mac, @p ep) whose key is @p tx_key. */
static struct emd_flow *flow_find_dst(struct emd_client *cl, const uint8_t mac[6], uint16_t ep,
                                      uint64_t tx_key)
{
    if (!cl->flows)
        return NULL;
    for (unsigned k = dst_hash(mac, ep, cl->flow_cap), n = 0; n < cl->flow_cap;
         n++, k = (k + 1) & (cl->flow_cap - 1)) {
        if (!cl->by_dst[k])
            return NULL;
        struct emd_flow *f = &cl->flows[cl->by_dst[k] - 1];
        if (f->src_ep == ep && memcmp(f->src_mac, mac, 6) == 0 && f->tx_key == tx_key)
            return f;
    }
    return NULL;
}

static void dst_insert(struct emd_client *cl, unsigned slot)
{
    const struct emd_flow *f = &cl->flows[slot];
    unsigned k = dst_hash(f->src_mac, f->src_ep, cl->flow_cap);
    while (cl->by_dst[k]) /* never full: it holds at most nflows < flow_cap entries */
        k = (k + 1) & (cl->flow_cap - 1);
    cl->by_dst[k] = slot + 1;
}

/* A registered flow's peer moved (a FLOW again with another address): the
 * address index is built anew, which is rare and bounded by flow_cap. */
static void dst_rebuild(struct emd_client *cl)
{
    memset(cl->by_dst, 0, cl->flow_cap * sizeof *cl->by_dst);
    for (unsigned k = 0; k < cl->flow_cap; k++)
        if (cl->flows[k].used)
            dst_insert(cl, k);
}

int emd_core_add_flow(emd_core_t *c, unsigned i, const struct emd_ctl_flow *m, const char **why)
{
    struct emd_client *cl = &c->cl[i];
    if (!cl->flows) {
        *why = c->ack ? "no memory for flows" : "the daemon does not acknowledge (--no-ack)";
        c->flows_refused++;
        return -1;
    }
    if (m->self == m->peer || m->frame_max < EM_HDR_LEN + EM_PUT_EXT_LEN ||
        m->frame_max > cl->mtu) {
        *why = "flow with equal endpoints or a frame size beyond the region's";
        c->flows_refused++;
        return -1;
    }
    struct emd_flow *f = flow_find(cl, m->peer);
    int moved = 0, added = 0;
    if (!f) {
        if (cl->nflows >= c->max_flows) {
            *why = "flow table full (emd --max-flows)";
            c->flows_refused++;
            return -1;
        }
        unsigned k = flow_hash(m->peer, cl->flow_cap);
        while (cl->flows[k].used)
            k = (k + 1) & (cl->flow_cap - 1);
        f = &cl->flows[k];
        cl->nflows++;
        added = 1;
    } else {
        moved = f->src_ep != m->peer_ep || memcmp(f->src_mac, m->peer_node, 6) != 0;
    }
    *f = (struct emd_flow){ .rx_key = m->rx_key,
                            .tx_key = m->tx_key,
                            .rcv_nxt = m->rx_next,
                            .snd_hint = m->tx_next,
                            .frame_max = m->frame_max,
                            .self = m->self,
                            .peer = m->peer,
                            .remote_index = m->remote_index,
                            .src_ep = m->peer_ep,
                            .used = 1 };
    memcpy(f->src_mac, m->peer_node, 6);
    if (added)
        dst_insert(cl, (unsigned)(f - cl->flows));
    else if (moved)
        dst_rebuild(cl);
    return 0;
}

/**
 * The stateless checks the client's protocol runs on a sequenced frame
 * (em_proto_rx): its source address (the link's binding: the shim's node id
 * and endpoint, link_emd.c), its key, its index (found the flow), the frame
 * size, the message length.  A frame that fails one would be refused by the client,
 * so it must not be acknowledged for it.  @return 1 acceptable, 0 not, -1
 * right key and ids from another address (a forger that read the key on the
 * wire, or a peer that moved without registering again).
 */
static int frame_acceptable(const struct emd_flow *f, const em_hdr_t *h, const emd_shim_t *from)
{
    size_t hl = em_hdr_len(h->type);
    if ((uint64_t)h->job_key != f->rx_key)
        return 0;
    if (from->src != f->src_ep || memcmp(from->src_mac, f->src_mac, 6) != 0)
        return -1;
    if (hl + h->len > f->frame_max)
        return 0;
    return (uint64_t)h->msg_len <= (uint64_t)h->frag_cnt * (f->frame_max - hl);
}

void emd_deliver_acked(emd_core_t *c, struct emd_client *cl, const uint8_t *data, uint16_t len,
                       const emd_shim_t *from)
{
    em_hdr_t h;
    struct emd_flow *f = NULL;
    if (em_hdr_decode(data, len, &h) == EM_DEC_OK && (h.type == EM_PT_DATA || h.type == EM_PT_PUT))
        f = flow_find(cl, h.index); /* the client's number of the sender */
    int ok = f ? frame_acceptable(f, &h, from) : 0;
    if (ok != 1) {
        if (f)
            c->ack_refused++; /* the client refuses and counts it; no ACK from us */
        if (ok < 0)
            c->ack_wrong_source++;
        (void)emd_deliver(c, cl, data, len, from);
        return;
    }
    int32_t d = em_seq_diff(h.seq, f->rcv_nxt);
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
        (void)emd_deliver(c, cl, data, len, from);
        return;
    }
    if (emd_deliver(c, cl, data, len, from) != 0)
        return; /* ring full: no ACK, the sender retransmits */
    if (d == 0) {
        f->rcv_nxt++;
        f->ack_owed = 1;
    }
}

static void tx_batch(emd_core_t *c, em_pkt_t **batch, unsigned nb)
{
    unsigned sent = em_link_tx_burst(c->link, batch, nb);
    for (unsigned j = sent; j < nb; j++)
        em_link_tx_free(c->link, batch[j]); /* a later ACK covers it */
    c->acks += sent;
}

void emd_send_acks(emd_core_t *c)
{
    em_pkt_t *batch[EMD_BURST];
    unsigned nb = 0;
    for (unsigned i = 0; i < c->max_clients; i++) {
        struct emd_client *cl = &c->cl[i];
        if (cl->fd < 0 || !cl->flows || cl->doomed)
            continue;
        for (unsigned k = 0; k < cl->flow_cap; k++) {
            struct emd_flow *f = &cl->flows[k];
            if (!f->used || !f->ack_owed)
                continue;
            int ni = emd_core_node(c, f->src_mac, cl->uid);
            em_pkt_t *p = ni >= 0 ? em_link_tx_alloc(c->link) : NULL;
            if (!p)
                continue; /* try again after the next burst */
            em_hdr_t a = { .type = EM_PT_ACK,
                           .index = f->remote_index, /* the peer's number of the client */
                           .seq = f->snd_hint,
                           .ack = f->rcv_nxt };
            a.job_key = f->tx_key; /* (whatever width the wire's key has) */
            emd_shim_t to = {
                .cls = EMD_CLS_CTRL, .len = EM_HDR_LEN, .dst = f->src_ep, .src = cl->ep
            };
            memcpy(to.src_mac, c->mac, 6);
            emd_wire_encode(p->data, &to);
            p->len = EMD_WIRE_HDR_LEN + (uint32_t)em_hdr_encode(&a, p->data + EMD_WIRE_HDR_LEN);
            p->peer = (uint32_t)ni;
            p->cls = EMD_CLS_CTRL;
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

/**
 * A frame the client sends carries its protocol's cumulative ACK for the
 * reverse flow: everything below it has reached the process, whichever way
 * (frames on its bulk queue never pass here).  Move that flow's eager-ACK
 * state up to it, else the daemon would wait forever for sequence numbers
 * it never sees; and note the client's own next sequence number (our ACKs
 * carry it).  @p hdr is a private copy.  (A client that lies only hurts the
 * flows to its own endpoint.)
 */
void emd_resync_flow(emd_core_t *c, struct emd_client *cl, const uint8_t mac[6], uint16_t ep,
                     const uint8_t *hdr, uint32_t len)
{
    em_hdr_t h;
    if (!cl->flows || em_hdr_decode(hdr, len, &h) != EM_DEC_OK)
        return;
    struct emd_flow *f = flow_find_dst(cl, mac, ep, (uint64_t)h.job_key);
    if (!f || h.index != f->remote_index)
        return;
    int32_t ahead = em_seq_diff(h.ack, f->rcv_nxt);
    if (ahead > 0 && ahead < (1 << 24)) {
        f->rcv_nxt = h.ack;
        c->ack_resyncs++;
    }
    uint32_t next = (h.type == EM_PT_DATA || h.type == EM_PT_PUT) ? h.seq + 1 : h.seq;
    int32_t fwd = em_seq_diff(next, f->snd_hint);
    if (fwd > 0 && fwd < (1 << 24))
        f->snd_hint = next;
}
