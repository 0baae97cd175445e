/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file emd_fwd.c
 * emd's forwarding (emd_core.h): port -> the clients' rx rings, the
 * clients' tx rings -> port (or a client on this node).  Routing and
 * counting use the shim's and the slots' frame class (emd_abi/emd_wire.h),
 * never the protocol frame; only the eager-ACK logic (emd_ack.c) decodes
 * protocol headers, from private copies.
 */
#include "daemon/emd_core_int.h"
#include "proto/hs_wire.h"
#include "proto/wire.h"

#include <string.h>

int emd_deliver(emd_core_t *c, struct emd_client *cl, const uint8_t *data, uint16_t len,
                const emd_shim_t *from)
{
    if (cl->doomed)
        return -1;
    if (len > cl->mtu) {
        atomic_fetch_add_explicit(&cl->h->st.rx_ring_full, 1, memory_order_relaxed);
        c->rx_ring_full++;
        return -1;
    }
    struct emd_slot_hdr sh = { .endpoint = from->src, .cls = from->cls };
    memcpy(sh.mac, from->src_mac, 6);
    int r = emd_recs_sp_put(&cl->rx, sh, data, len);
    if (r == EMD_RING_CORRUPT) {
        emd_core_doom(c, emd_index_of(c, cl), "corrupt rx ring index (rx.head)");
        return -1;
    }
    if (r != EMD_RING_OK) {
        atomic_fetch_add_explicit(&cl->h->st.rx_ring_full, 1, memory_order_relaxed);
        c->rx_ring_full++;
        return -1;
    }
    atomic_fetch_add_explicit(&cl->h->st.rx_delivered, 1, memory_order_relaxed);
    return 0;
}

void emd_core_publish_rx(emd_core_t *c)
{
    for (unsigned i = 0; i < c->max_clients; i++) {
        struct emd_client *cl = &c->cl[i];
        if (cl->fd >= 0)
            (void)emd_recs_sp_publish(&cl->rx);
    }
}

void emd_count_bulk(emd_core_t *c, struct emd_client *cl, uint8_t cls, uint32_t len)
{
    if (cls != EMD_CLS_BULK)
        return;
    c->put_frames++;
    c->put_bytes += len;
    atomic_fetch_add_explicit(&cl->h->st.put_frames, 1, memory_order_relaxed);
}

unsigned emd_core_poll_port(emd_core_t *c)
{
    em_pkt_t *pk[EMD_BURST];
    unsigned n = em_link_rx_burst(c->link, pk, EMD_BURST);
    int acks = 0;
    for (unsigned i = 0; i < n; i++) {
        emd_shim_t s;
        if (emd_wire_decode(pk[i]->data, pk[i]->len, &s) != EMD_WIRE_OK || s.len > c->mtu) {
            c->rx_bad++;
            continue;
        }
        const uint8_t *frame = pk[i]->data + EMD_WIRE_HDR_LEN;
        if (s.dst == EMD_EP_CONTROL) {
            emd_handle_hello(c, frame, s.len, s.src_mac);
            continue;
        }
        if (em_loss_drop(&c->loss)) {
            c->loss_drops++;
            continue;
        }
        struct emd_client *cl = emd_client_of(c, s.dst);
        if (!cl) {
            c->rx_no_ep++; /* the process is gone (or never was) */
            continue;
        }
        emd_count_bulk(c, cl, s.cls, s.len);
        if (em_hs_is(frame, s.len)) {
            /* first contact: carried as is (emd_core.h "Handshakes"), counted
             * once it is in the client's ring */
            if (emd_deliver(c, cl, frame, s.len, &s) == 0)
                c->handshakes++;
        } else if (cl->flows && cl->nflows) {
            emd_deliver_acked(c, cl, frame, s.len, &s);
            acks = 1;
        } else {
            (void)emd_deliver(c, cl, frame, s.len, &s);
        }
    }
    if (n) {
        em_link_rx_release(c->link, pk, n);
        emd_core_publish_rx(c); /* the frames are in the rings before any ACK leaves */
        if (acks)
            emd_send_acks(c);
        c->rx_frames += n;
    }
    return n;
}

/**
 * One slot of @p cl: a frame to the port (appended to @p batch) or to a
 * client on this node.  @return 1 taken into the batch, 0 done otherwise,
 * -1 no mbuf (stop here).
 */
static int drain_slot(emd_core_t *c, struct emd_client *cl, const uint8_t *s, em_pkt_t **out)
{
    struct emd_slot_hdr sh;
    memcpy(&sh, s, sizeof sh); /* one read of what the client wrote; checked below */
    if (sh.len == 0 || sh.len > cl->mtu || sh.endpoint == 0 || sh.cls >= EMD_CLS_COUNT) {
        atomic_fetch_add_explicit(&cl->h->st.tx_bad, 1, memory_order_relaxed);
        return 0;
    }
    const uint8_t *frame = s + sizeof sh;
    uint8_t hdr[EM_HDR_LEN + EM_PUT_EXT_LEN];
    uint32_t hl = sh.len < sizeof hdr ? sh.len : (uint32_t)sizeof hdr;
    memcpy(hdr, frame, hl); /* a private copy of what we parse */
    /* a handshake (first contact): carried as is, never read as a data
     * frame (no flow moved by it); judged once, on the private copy */
    int hs = em_hs_is(hdr, hl);
    if (sh.flags & EMD_SLOT_F_NOTE) {
        if (!hs)
            emd_resync_flow(c, cl, sh.mac, sh.endpoint, hdr, hl);
        c->notes++; /* its frame went on the client's bulk queue */
        return 0;
    }
    if (memcmp(sh.mac, c->mac, 6) == 0) { /* on this node */
        if (!hs)
            emd_resync_flow(c, cl, sh.mac, sh.endpoint, hdr, hl);
        emd_count_bulk(c, cl, sh.cls, sh.len);
        struct emd_client *dc = emd_client_of(c, sh.endpoint);
        emd_shim_t from = { .cls = sh.cls, .src = cl->ep };
        memcpy(from.src_mac, c->mac, 6);
        if (dc) {
            if (emd_deliver(c, dc, frame, (uint16_t)sh.len, &from) == 0)
                c->handshakes += (uint64_t)hs; /* in its ring */
        } else
            c->rx_no_ep++;
        c->local++;
        return 0;
    }
    /* a destination a client may name: unicast (no broadcast or multicast amplification) */
    int uni = emd_node_unicast(c->framing, sh.mac);
    int ni = uni ? emd_core_node(c, sh.mac, cl->uid) : -1;
    if (ni < 0) {
        if (!uni)
            c->tx_bad_mac++;
        atomic_fetch_add_explicit(&cl->h->st.tx_bad, 1, memory_order_relaxed);
        return 0;
    }
    em_pkt_t *p = em_link_tx_alloc(c->link);
    if (!p)
        return -1;
    emd_shim_t to = { .cls = sh.cls, .len = (uint16_t)sh.len, .dst = sh.endpoint, .src = cl->ep };
    memcpy(to.src_mac, c->mac, 6);
    emd_wire_encode(p->data, &to);
    memcpy(p->data + EMD_WIRE_HDR_LEN, frame, sh.len); /* the one copy of the frame */
    p->len = EMD_WIRE_HDR_LEN + sh.len;
    p->peer = (uint32_t)ni;
    p->cls = sh.cls;
    /* parse the copy in the mbuf, not the slot: the client may have
     * changed the slot since hdr was read, so whether it is a handshake is
     * judged again on the bytes that leave */
    hs = em_hs_is(p->data + EMD_WIRE_HDR_LEN, hl);
    if (!hs)
        emd_resync_flow(c, cl, sh.mac, sh.endpoint, p->data + EMD_WIRE_HDR_LEN, hl);
    emd_count_bulk(c, cl, sh.cls, sh.len);
    c->handshakes += (uint64_t)hs; /* queued for the port (one it refuses is counted again
                                    * when retried) */
    *out = p;
    return 1;
}

unsigned emd_core_drain(emd_core_t *c, unsigned ci)
{
    struct emd_client *cl = &c->cl[ci];
    if (cl->fd < 0 || cl->doomed)
        return 0;
    int64_t av = emd_slots_sc_avail(&cl->tx); /* the client's tail, once */
    if (av == 0)
        return 0;
    if (av < 0) {
        atomic_fetch_add_explicit(&cl->h->st.tx_bad, 1, memory_order_relaxed);
        emd_core_doom(c, ci, "corrupt tx ring index (tx.tail)");
        return 0;
    }
    uint32_t avail = av > EMD_BURST ? EMD_BURST : (uint32_t)av;
    em_pkt_t *batch[EMD_BURST];
    uint32_t slot_of[EMD_BURST];
    unsigned nb = 0, done = 0;
    for (uint32_t k = 0; k < avail; k++) {
        em_pkt_t *p = NULL;
        int r = drain_slot(c, cl, emd_slots_sc_at(&cl->tx, k), &p);
        if (r < 0) { /* no mbuf: stop here, the rest waits */
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
        atomic_fetch_add_explicit(&cl->h->st.tx_sent, sent, memory_order_relaxed);
        done = sent;
    }
    emd_core_publish_rx(c); /* same-node deliveries */
    emd_slots_sc_dequeue(&cl->tx, avail);
    return avail ? avail : done;
}

int emd_core_tx_pending(const emd_core_t *c)
{
    for (unsigned i = 0; i < c->max_clients; i++) {
        const struct emd_client *cl = &c->cl[i];
        if (cl->fd >= 0 && !cl->doomed && emd_slots_sc_pending(&cl->tx))
            return 1;
    }
    return 0;
}
