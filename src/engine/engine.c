/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file engine.c
 * Endpoint: protocol over a link (see engine.h).
 *
 * Transmit path: the protocol emits a frame -> the header (and, on links
 * that cannot gather or for small payloads, the payload) is copied into a
 * link tx buffer, which is appended to a batch -> the batch goes to the
 * link as one burst at the end of the call (send, put or progress).  On
 * gathering links (UDP) payloads of EM_GATHER_MIN bytes or more are sent
 * straight from the op's buffer.  When the link
 * refuses, the frame stays in the batch; when the batch is full, emit says
 * -EM_EAGAIN and the protocol retries later: nothing is dropped here.
 *
 * Receive path: a burst from the link -> em_proto_rx() for each frame (the
 * protocol hands single-frame messages to us straight from the link buffer)
 * -> buffers released -> timers.
 *
 * First contact: while the protocol judges a received frame, the frame is
 * lent to the resolve callback (em_engine_rx_frame, em_engine_rx_source),
 * so that an owner without a modex may build an unknown peer from an
 * address the frame carries (prov/emo_contact.c).  The engine adds no rule
 * of its own: the protocol's key and source checks still judge the frame.
 *
 * Peer addresses: a frame to a peer whose address was never set (a process
 * that only receives from it still owes it ACKs) asks the resolve_peer
 * callback once; without an address the frame is dropped and counted
 * (tx_no_addr), as a wire would lose it.  Before this, the UDP link dropped
 * such ACKs silently and a one-way sender stalled after one window
 * (docs/design.md "Peers known only by their frames").
 */
#include "engine/engine.h"
#include "engine/engine_internal.h"
#include "util/clock.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proto/hs_wire.h" /* em_hs_is: first contact */
#include "proto/wire.h"    /* em_wire_type: the class of what the protocol emits */

uint64_t em_now_ns(void) { return em_clock_ns(); }

/**
 * Hand the batch to the link; what it does not take stays, in order.  A
 * frame that stays gets its external payload copied in first: the payload
 * belongs to an op that may complete (and be reused) before the retry.
 */
void em_engine_flush_tx(em_engine_t *e)
{
    if (e->nbatch) {
        unsigned k = em_link_tx_burst(e->link, e->batch, e->nbatch);
        e->st.tx_frames += k;
        if (k < e->nbatch) {
            for (unsigned i = k; i < e->nbatch; i++)
                em_link_pkt_flatten(e->batch[i]);
            memmove(e->batch, e->batch + k, (e->nbatch - k) * sizeof e->batch[0]);
            e->st.tx_backpressure++;
        }
        e->nbatch -= k;
    }
    em_link_flush(e->link);
}

/** Can frames to @p peer leave?  Asks resolve_peer once for a peer never set. */
static bool peer_addressable(em_engine_t *e, uint32_t peer)
{
    if (peer >= e->npeers)
        return false;
    if (e->addr[peer] == ADDR_UNKNOWN) {
        /* ADDR_NONE first: the callback's em_engine_set_peer() overrides it */
        e->addr[peer] = ADDR_NONE;
        if (e->ops.resolve_peer && e->ops.resolve_peer(e->uctx, peer) == 0 &&
            e->addr[peer] == ADDR_SET)
            e->st.peers_resolved++;
    }
    return e->addr[peer] == ADDR_SET;
}

/** The link's class of a frame the protocol emits (the link never reads the frame). */
static uint8_t frame_class(const void *hdr)
{
    switch (em_wire_type(hdr)) {
    case EM_PT_PUT: return EM_PKT_BULK;
    case EM_PT_ACK:
    case EM_PT_NACK: return EM_PKT_CTRL;
    default: return EM_PKT_DATA;
    }
}

static int e_emit(void *u, uint32_t peer, const void *hdr, size_t hlen, const void *payload,
                  size_t plen)
{
    em_engine_t *e = u;
    if (!peer_addressable(e, peer)) {
        e->st.tx_no_addr++;
        return 0; /* lost, as on a wire; the protocol recovers or fails the peer */
    }
    if (e->nbatch == EM_TX_BATCH) {
        em_engine_flush_tx(e);
        if (e->nbatch == EM_TX_BATCH)
            return -EM_EAGAIN;
    }
    em_pkt_t *pkt = em_link_tx_alloc(e->link);
    if (!pkt) {
        em_engine_flush_tx(e);
        pkt = em_link_tx_alloc(e->link);
        if (!pkt) {
            e->st.tx_backpressure++;
            return -EM_EAGAIN;
        }
    }
    memcpy(pkt->data, hdr, hlen);
    pkt->len = (uint32_t)hlen;
    pkt->ext = NULL;
    pkt->ext_len = 0;
    if (plen >= EM_GATHER_MIN && (e->link->flags & EM_LINK_F_GATHER)) {
        pkt->ext = payload; /* the link sends it from the op's buffer */
        pkt->ext_len = (uint32_t)plen;
        e->st.tx_gather_bytes += plen;
    } else if (plen) {
        memcpy(pkt->data + hlen, payload, plen);
        pkt->len += (uint32_t)plen;
        e->st.tx_copy_bytes += plen;
    }
    pkt->peer = peer;
    pkt->cls = frame_class(hdr);
    e->batch[e->nbatch++] = pkt;
    return 0;
}

static void e_recv(void *u, uint32_t peer, uint8_t tag, const void *d, size_t len)
{
    em_engine_t *e = u;
    if (tag == EM_ENGINE_TAG_RMA) {
        em_rma_recv(e, peer, d, len); /* the engine's own: never the owner's */
        return;
    }
    e->st.recv_bytes += len;
    e->ops.recv(e->uctx, peer, tag, d, len);
}

static void *e_place(void *u, uint32_t peer, uint8_t tag, const void *head, size_t head_len,
                     size_t msg_len, size_t *skip, void **ctx)
{
    em_engine_t *e = u;
    if (tag == EM_ENGINE_TAG_RMA)
        return NULL; /* reassembled and handed to em_rma_recv */
    void *dst = e->ops.place ? e->ops.place(e->uctx, peer, tag, head, head_len, msg_len, skip, ctx)
                             : NULL;
    if (dst)
        e->st.recv_bytes += msg_len; /* delivered, as recv's: counted when it starts */
    return dst;
}

static void e_place_end(void *u, uint32_t peer, void *ctx, int status)
{
    em_engine_t *e = u;
    e->ops.place_end(e->uctx, peer, ctx, status);
}

static int e_put(void *u, uint32_t peer, const em_put_target_t *t, const void *d, size_t len)
{
    em_engine_t *e = u;
    uint8_t *dst;
    switch (em_regions_check(e->regions, t->region, t->key, t->offset, len, &dst)) {
    case EM_REGION_OK:
        if (len)
            memcpy(dst, d, len);
        e->st.puts_placed++;
        e->st.put_bytes += len;
        return 0;
    // clang-format off
    case EM_REGION_BAD_ID:        e->st.put_bad_region++; break;
    case EM_REGION_BAD_KEY:       e->st.put_bad_key++; break;
    case EM_REGION_OUT_OF_BOUNDS: e->st.put_out_of_bounds++; break;
    case EM_REGION_NO_ACCESS:     e->st.put_no_access++; break;
        // clang-format on
    }
    return -1;
}

static void e_complete(void *u, void *ctx, int status)
{
    em_engine_t *e = u;
    if (e->rma && em_rma_complete(e, ctx, status))
        return; /* a request or an answer of rma.c (it counts its own events) */
    e->events++;
    e->ops.complete(e->uctx, ctx, status);
}

static void e_failed(void *u, uint32_t peer)
{
    em_engine_t *e = u;
    if (e->rma)
        em_rma_peer_end(e, peer, -EM_EPEERFAIL);
    if (e->ops.peer_failed)
        e->ops.peer_failed(e->uctx, peer);
}

/* A frame from an unset peer, or from another address: let the owner add
 * the peer (lazily, from the modex), then ask the link again. */
static uint32_t e_resolve(void *u, uint32_t peer)
{
    em_engine_t *e = u;
    if (e->ops.resolve)
        e->ops.resolve(e->uctx, peer);
    if (!e->rx_cur || !e->link->ops->rx_peer)
        return EM_SRC_UNKNOWN;
    uint32_t src = e->link->ops->rx_peer(e->link, e->rx_cur);
    if (e->contact && src == peer)
        em_contact_early(e, peer); /* its handshake is ours and not done: count, hurry */
    return src;
}

static const em_proto_ops_t engine_proto_ops = {
    .emit = e_emit,
    .recv = e_recv,
    .put = e_put,
    .complete = e_complete,
    .peer_failed = e_failed,
    .resolve = e_resolve,
    .place = e_place,
    .place_end = e_place_end,
};

em_engine_t *em_engine_create(em_link_t *link, const em_proto_cfg_t *cfg,
                              const em_engine_ops_t *ops, void *uctx, int *err)
{
    *err = EM_EINVAL;
    if (!link || !cfg || !ops || !ops->recv || !ops->complete || !ops->place != !ops->place_end)
        return NULL;
    em_engine_t *e = calloc(1, sizeof *e);
    if (!e) {
        *err = EM_ENOMEM;
        return NULL;
    }
    em_proto_cfg_t c = *cfg;
    if (c.frame_max > link->mtu)
        c.frame_max = link->mtu;
    if (link->flags & EM_LINK_F_ACKS)
        c.link_acks = true; /* the link acknowledges for us (emd) */
    e->addr = calloc(c.npeers ? c.npeers : 1, 1);
    if (!e->addr) {
        free(e);
        *err = EM_ENOMEM;
        return NULL;
    }
    e->npeers = c.npeers;
    e->link = link;
    e->self = c.self;
    e->ops = *ops;
    e->uctx = uctx;
    em_regions_init(&e->own_regions);
    e->regions = &e->own_regions;
    e->proto = em_proto_create(&c, &engine_proto_ops, e, err);
    if (!e->proto) {
        free(e->addr);
        free(e);
        return NULL;
    }
    size_t pm = em_proto_max_msg(e->proto);
    e->rx_msg_max = (uint32_t)(c.max_msg && c.max_msg < pm ? c.max_msg : pm);
    e->silence_ns = (uint64_t)c.max_retries * c.rto_max_ns;
    return e;
}

void em_engine_destroy(em_engine_t *e)
{
    if (!e)
        return;
    e->in_progress = 1;    /* no progress from cancellation callbacks */
    em_contact_destroy(e); /* its callbacks need the protocol: first */
    em_proto_destroy(e->proto);
    em_rma_destroy(e); /* after the protocol: its cancellations came first */
    for (unsigned i = 0; i < e->nbatch; i++)
        em_link_tx_free(e->link, e->batch[i]);
    em_regions_fini(&e->own_regions);
    free(e->addr);
    free(e);
}

int em_engine_set_peer(em_engine_t *e, uint32_t peer, const em_link_addr_t *addr)
{
    int rc = em_link_set_peer(e->link, peer, addr);
    if (rc == 0 && peer < e->npeers)
        e->addr[peer] = ADDR_SET;
    if (rc == 0)
        (void)em_engine_sync_flow(e, peer);
    return rc;
}

int em_engine_sync_flow(em_engine_t *e, uint32_t peer)
{
    em_proto_flow_t f;
    if (!e->link->ops->set_flow || !(e->link->flags & EM_LINK_F_ACKS))
        return 0;
    if (em_proto_flow(e->proto, peer, &f) != 0)
        return -EM_EINVAL;
    em_link_flow_t lf = { .rx_key = f.rx_key,
                          .tx_key = f.tx_key,
                          .rx_next = f.rcv_nxt,
                          .tx_next = f.snd_nxt,
                          .frame_max = f.frame_max,
                          .self = f.self,
                          .peer = f.peer,
                          .remote_index = f.remote_index };
    /* refused: the link does not acknowledge for this peer; we do */
    return e->link->ops->set_flow(e->link, peer, &lf);
}

int em_engine_set_peer_keys(em_engine_t *e, uint32_t peer, uint64_t key, uint32_t tx_isn,
                            uint32_t rx_isn)
{
    int rc = em_proto_set_peer(e->proto, peer, key, tx_isn, rx_isn);
    if (rc == 0)
        (void)em_engine_sync_flow(e, peer); /* refused: the link does not ACK for us */
    return rc;
}

int em_engine_set_peer_index(em_engine_t *e, uint32_t peer, uint32_t remote_index)
{
    uint32_t was = em_proto_peer_index(e->proto, peer);
    int rc = em_proto_set_peer_index(e->proto, peer, remote_index);
    /* the link's ACKs for us carry it too; unchanged (the default, our own
     * number, is what numbered-alike front ends set), it heard of it
     * already: no second FLOW per peer */
    if (rc == 0 && was != remote_index)
        (void)em_engine_sync_flow(e, peer);
    return rc;
}

int em_engine_peer_params(const em_engine_t *e, uint32_t peer, uint64_t *key, uint32_t *tx_isn,
                          uint32_t *rx_isn)
{
    return em_proto_peer_params(e->proto, peer, key, tx_isn, rx_isn);
}

int em_engine_progress(em_engine_t *e)
{
    if (e->in_progress)
        return 0;
    e->in_progress = 1;
    e->events = 0;
    e->st.progress_calls++;

    em_pkt_t *pkts[EM_BURST];
    unsigned n = em_link_rx_burst(e->link, pkts, EM_BURST);
    uint64_t now = em_now_ns();
    e->now = now;
    for (unsigned i = 0; i < n; i++) {
        if (e->contact && em_hs_is(pkts[i]->data, pkts[i]->len)) {
            em_contact_rx(e, pkts[i], now); /* first contact: not the protocol's */
            continue;
        }
        e->rx_cur = pkts[i]; /* lent to resolve (em_engine_rx_frame) */
        if (e->link->ops->rx_peer)
            em_proto_rx_from(e->proto, pkts[i]->data, pkts[i]->len,
                             e->link->ops->rx_peer(e->link, pkts[i]), now);
        else
            em_proto_rx(e->proto, pkts[i]->data, pkts[i]->len, now);
        e->rx_cur = NULL;
    }
    if (n)
        em_link_rx_release(e->link, pkts, n);
    e->st.rx_frames += n;
    em_proto_poll(e->proto, now);
    if (e->contact)
        em_contact_poll(e, now);
    if (e->nbatch || n)
        em_engine_flush_tx(e);
    e->in_progress = 0;
    return (int)(n + e->events);
}

int em_engine_send(em_engine_t *e, em_proto_op_t *op, uint32_t peer, uint8_t tag, const void *buf,
                   size_t len, void *ctx)
{
    if (tag == EM_ENGINE_TAG_RMA)
        return -EM_EINVAL; /* the engine's own: the peer's engine would take it */
    int rc = em_contact_gate(e, peer);
    if (rc != 0)
        return rc;
    rc = em_proto_send(e->proto, op, peer, tag, buf, len, ctx, em_now_ns());
    if (rc == 0)
        em_engine_flush_tx(e);
    return rc;
}

int em_engine_sendv(em_engine_t *e, em_proto_op_t *op, uint32_t peer, uint8_t tag, const void *head,
                    size_t head_len, const void *buf, size_t len, unsigned flags, void *ctx)
{
    if (tag == EM_ENGINE_TAG_RMA)
        return -EM_EINVAL;
    int rc = em_contact_gate(e, peer);
    if (rc != 0)
        return rc;
    rc = em_proto_sendv(e->proto, op, peer, tag, head, head_len, buf, len, flags, ctx, em_now_ns());
    if (rc == 0)
        em_engine_flush_tx(e);
    return rc;
}

bool em_engine_send_ready(const em_engine_t *e, uint32_t peer, size_t len)
{
    size_t pl = em_proto_data_payload(e->proto);
    size_t frames = len == 0 ? 1 : (len + pl - 1) / pl;
    return e->nbatch == 0 && frames <= em_proto_tx_room(e->proto, peer, em_now_ns());
}

int em_engine_put(em_engine_t *e, em_proto_op_t *op, uint32_t peer, const em_region_handle_t *h,
                  uint64_t offset, const void *buf, size_t len, void *ctx)
{
    int rc = em_contact_gate(e, peer);
    if (rc != 0)
        return rc;
    em_put_target_t t = { .region = h->id, .key = h->key, .offset = offset };
    rc = em_proto_put(e->proto, op, peer, &t, buf, len, ctx, em_now_ns());
    if (rc == 0)
        em_engine_flush_tx(e);
    return rc;
}

int em_engine_register(em_engine_t *e, void *base, size_t len, em_region_handle_t *out)
{
    return em_regions_add(e->regions, base, len, out);
}

int em_engine_register_ex(em_engine_t *e, void *base, size_t len, unsigned flags,
                          em_region_handle_t *out)
{
    return em_regions_add_ex(e->regions, base, len, flags, out);
}

int em_engine_region_at(em_engine_t *e, uint32_t id, uint64_t key, uint64_t offset, size_t len,
                        unsigned access, uint8_t **at)
{
    if (em_regions_check_ex(e->regions, id, key, offset, len, access, at) != EM_REGION_OK) {
        e->st.region_refused++;
        return -EM_EACCES;
    }
    return 0;
}

int em_engine_use_regions(em_engine_t *e, em_regions_t *r)
{
    if (!r || e->own_regions.used)
        return -EM_EINVAL;
    e->regions = r;
    return 0;
}

int em_engine_deregister(em_engine_t *e, const em_region_handle_t *h)
{
    return em_regions_remove(e->regions, h->id, h->key);
}

const void *em_engine_rx_frame(const em_engine_t *e, size_t *len)
{
    if (!e->rx_cur)
        return NULL;
    *len = e->rx_cur->len;
    return e->rx_cur->data;
}

uint32_t em_engine_rx_source(em_engine_t *e)
{
    if (!e->rx_cur || !e->link->ops->rx_peer)
        return EM_SRC_UNKNOWN;
    return e->link->ops->rx_peer(e->link, e->rx_cur);
}

int em_engine_watch(em_engine_t *e, uint32_t peer)
{
    /* the last progress call's clock: a watch's idle time is a second, and
     * a receive posted on the data path costs no clock read */
    return em_proto_watch(e->proto, peer, e->now ? e->now : em_now_ns());
}

uint64_t em_engine_now(const em_engine_t *e) { return e->now; }

int em_engine_unwatch(em_engine_t *e, uint32_t peer) { return em_proto_unwatch(e->proto, peer); }

bool em_engine_idle(const em_engine_t *e) { return e->nbatch == 0 && em_proto_idle(e->proto); }

uint64_t em_engine_next_deadline(const em_engine_t *e)
{
    if (e->nbatch)
        return 0;
    uint64_t d = em_proto_next_deadline(e->proto);
    if (e->contact && em_contact_deadline(e) < d)
        d = em_contact_deadline(e);
    return d;
}

uint32_t em_engine_pending(const em_engine_t *e, uint32_t peer)
{
    return em_proto_pending(e->proto, peer);
}

size_t em_engine_drain(em_engine_t *e, uint64_t bound_ns)
{
    const em_proto_stats_t *st = em_proto_stats(e->proto);
    uint64_t t0 = em_now_ns(), heard_at = t0, heard = st->rx_frames;
    em_proto_flush(e->proto, t0);
    for (;;) {
        int work = em_engine_progress(e);
        uint64_t now = em_now_ns();
        if (st->rx_frames != heard) {
            heard = st->rx_frames;
            heard_at = now;
        }
        if (em_engine_idle(e) && now - heard_at >= em_proto_retx_horizon(e->proto))
            break;
        if (now - t0 >= bound_ns)
            break;
        if (work == 0) {
            struct timespec ts = { 0, 50000 };
            nanosleep(&ts, NULL);
        }
    }
    /* our ACK state once more to every peer we heard from, twice (a lost
     * one is the case this is for): a peer that resends only after we are
     * gone still learns that its data arrived */
    for (int k = 0; k < 2; k++) {
        em_proto_ack_heard(e->proto);
        em_engine_flush_tx(e);
    }
    size_t n = 0;
    for (uint32_t i = 0; i < e->npeers; i++)
        n += em_proto_pending(e->proto, (uint32_t)i);
    return n;
}
size_t em_engine_max_msg(const em_engine_t *e) { return em_proto_max_msg(e->proto); }
uint32_t em_engine_npeers(const em_engine_t *e) { return e->npeers; }
size_t em_engine_peer_bytes(const em_proto_cfg_t *cfg)
{
    return em_proto_peer_bytes_idle(cfg) + sizeof *((em_engine_t *)0)->addr;
}
size_t em_engine_peer_bytes_active(const em_proto_cfg_t *cfg)
{
    return em_proto_peer_bytes_active(cfg);
}
size_t em_engine_frame_payload(const em_engine_t *e) { return em_proto_data_payload(e->proto); }
const em_engine_stats_t *em_engine_stats(const em_engine_t *e) { return &e->st; }
const em_proto_stats_t *em_engine_proto_stats(const em_engine_t *e)
{
    return em_proto_stats(e->proto);
}
em_link_t *em_engine_link(em_engine_t *e) { return e->link; }
uint64_t em_engine_rx_mem(const em_engine_t *e) { return em_proto_rx_mem(e->proto); }
int em_engine_fail_peer(em_engine_t *e, uint32_t peer, const char *why)
{
    if (e->in_progress)
        return -EM_EINVAL; /* from a callback: the caller must defer it */
    return em_proto_fail_peer(e->proto, peer, why);
}

int em_engine_reset_peer(em_engine_t *e, uint32_t peer)
{
    if (e->in_progress || peer >= e->npeers || peer == e->self)
        return -EM_EINVAL; /* from a callback the caller defers it, as fail_peer */
    /* em_engine_progress() from the completions below (the owner's
     * callbacks) returns at once, as from any callback */
    e->in_progress = 1;
    int rc = em_proto_reset_peer(e->proto, peer);
    /* the peer's gets and atomics whose requests were acknowledged wait
     * for answers that will not be taken now (rma.c): they end too */
    if (e->rma)
        em_rma_peer_end(e, peer, -EM_ECANCELED);
    /* its link address is asked for again (resolve_peer) before a frame
     * goes to it; the owner's em_engine_set_peer() names it anew */
    e->addr[peer] = ADDR_UNKNOWN;
    e->in_progress = 0;
    return rc;
}

const char *em_engine_fail_reason(const em_engine_t *e, uint32_t peer)
{
    return em_proto_fail_reason(e->proto, peer);
}
