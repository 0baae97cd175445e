/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file link_emd.c
 * Client side of the node daemon (see link_emd.h, the contract in
 * src/emd_abi/).  The rings are touched only through emd_abi/emd_ring.h;
 * frames are routed and counted by their class (em_pkt_t::cls), never by
 * reading them.
 *
 * tx: tx_alloc lends a private buffer; tx_burst copies it (and a gather
 * payload) straight into the tx ring, one copy in all, and publishes the
 * tail once per burst.  rx: rx_burst lends the ring records themselves (zero
 * copy); rx_release publishes the new head.  The daemon's liveness is
 * checked every few milliseconds of polling: socket hang-up, state, and
 * heartbeat age.
 */
#include "link/link_emd.h"
#include "link/link_emd_int.h"
#include "link/link_util.h"
#include "link/pkt_pool.h"
#include "emd_abi/emd_ctl_msg.h"
#include "emd_abi/emd_region.h"
#include "emd_abi/emd_ring.h"
#include "emd_abi/emd_wire.h"
#include "util/clock.h"
#include "util/loss.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define EMD_TX_POOL  256
#define EMD_RX_BURST 32
#define EMD_CHECK_NS 20000000ull /* liveness check period while polling */

struct peer_addr {
    uint8_t mac[6];
    uint16_t ep;
    uint8_t set;
    uint8_t bulkq; /* its puts go on our bulk queue */
};

struct emd_link {
    em_link_t link; /* must be first */
    int fd;         /* control socket */
    struct emd_shm_hdr *h;
    uint64_t size;
    uint32_t mtu;
    emd_ring_t rx; /* we consume (records; a burst is released whole) */
    emd_ring_t tx; /* we produce (slots) */
    struct peer_addr *peers;
    uint32_t npeers;
    em_pkt_t tx_pkts[EMD_TX_POOL];
    em_pkt_t *tx_stack[EMD_TX_POOL];
    em_pkt_pool_t tx_pool; /* free packets of tx_pkts */
    uint8_t *tx_mem;
    em_pkt_t rx_pkts[EMD_RX_BURST];
    uint64_t rx_src[EMD_RX_BURST]; /* (MAC, endpoint) the daemon says each came from */
    em_addr_map_t bysrc;           /* (MAC, endpoint) -> peer (rx_peer) */
    em_loss_t loss;                /* injected receive loss (cfg rx_loss, loss_seed) */
    uint64_t hb_timeout_ns, last_check_ns;
    unsigned poll_count;
    int dead;
    void (*dead_cb)(void *, const char *);
    void *dead_ctx;
    em_emd_stats_t st;
    /* bulk queues (NULL bulkq: none, puts go through the daemon) */
    em_link_t *bulkq;
    uint16_t bulk_slots, bulk_slot;
    em_pkt_t *bulk_lent[EMD_RX_BURST]; /* frames of the last rx burst that are the bulk queue's */
    unsigned bulk_nlent;
    int bulk_first; /* alternate which source is polled first */
    void (*close_cb)(void *, const struct em_emd_stats *);
    void (*note_cb)(void *, const char *);
    void *cb_ctx;
    int bulk_mode, layout_warned;
    int udp, framing_warned; /* the daemon's framing (EMD_SHM_F_UDP): node ids are IPv4 + port */
};

_Static_assert((int)EM_PKT_DATA == (int)EMD_CLS_DATA && (int)EM_PKT_BULK == (int)EMD_CLS_BULK &&
                   (int)EM_PKT_CTRL == (int)EMD_CLS_CTRL,
               "em_pkt_t::cls travels in the shim and the slots as is");

static void declare_dead(struct emd_link *d, const char *why)
{
    if (d->dead)
        return;
    d->dead = 1;
    if (d->dead_cb)
        d->dead_cb(d->dead_ctx, why);
    else
        fprintf(stderr, "ethermpi link_emd: %s\n", why);
}

/** Is the daemon still there?  Cheap enough to run every EMD_CHECK_NS. */
static void check_daemon(struct emd_link *d, uint64_t now)
{
    d->last_check_ns = now;
    struct pollfd p = { .fd = d->fd, .events = POLLIN };
    if (d->fd >= 0 && poll(&p, 1, 0) > 0) {
        if (p.revents & (POLLHUP | POLLERR)) {
            declare_dead(d, "the emd daemon closed its connection (daemon killed or restarted); "
                            "this process's link is gone");
            return;
        }
        if (p.revents & POLLIN) { /* the daemon sends nothing after ATTACH_OK: drain */
            char buf[64];
            ssize_t r = recv(d->fd, buf, sizeof buf, MSG_DONTWAIT);
            if (r == 0) {
                declare_dead(d,
                             "the emd daemon closed its connection (daemon killed or restarted)");
                return;
            }
        }
    }
    if (atomic_load_explicit(&d->h->state, memory_order_acquire) != EMD_STATE_RUNNING) {
        declare_dead(d, "the emd daemon stopped (emd stop or SIGTERM) while this process used it");
        return;
    }
    uint64_t hb = atomic_load_explicit(&d->h->heartbeat_ns, memory_order_relaxed);
    if (hb && now > hb && now - hb > d->hb_timeout_ns) {
        char why[160];
        snprintf(why, sizeof why,
                 "the emd daemon has not run for %llu ms (hung or stopped; "
                 "heartbeat timeout %llu ms)",
                 (unsigned long long)((now - hb) / 1000000u),
                 (unsigned long long)(d->hb_timeout_ns / 1000000u));
        declare_dead(d, why);
    }
}

static void maybe_check(struct emd_link *d)
{
    if ((++d->poll_count & 63u) != 0)
        return;
    uint64_t now = em_clock_ns();
    if (now - d->last_check_ns >= EMD_CHECK_NS)
        check_daemon(d, now);
}

static em_pkt_t *emd_tx_alloc(em_link_t *l)
{
    em_pkt_t *p = em_pkt_pool_get(&((struct emd_link *)l)->tx_pool);
    if (p)
        p->cls = EM_PKT_DATA; /* until the caller says otherwise */
    return p;
}

static void emd_tx_free(em_link_t *l, em_pkt_t *p)
{
    em_pkt_pool_put(&((struct emd_link *)l)->tx_pool, p);
}

static void wake_daemon(struct emd_link *d)
{
    struct emd_ctl_msg m;
    emd_ctl_init(&m, EMD_CTL_WAKE);
    if (send(d->fd, &m, sizeof m, MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)sizeof m)
        d->st.wakes_sent++;
}

/** Copy one frame into the next tx slot (the caller checked the room). */
static void fill_slot(struct emd_link *d, const struct peer_addr *pa, uint8_t cls, const uint8_t *a,
                      uint32_t alen, const uint8_t *b, uint32_t blen, uint8_t flags)
{
    uint8_t *s = emd_slots_sp_next(&d->tx);
    struct emd_slot_hdr sh = { .len = alen + blen, .endpoint = pa->ep, .flags = flags, .cls = cls };
    memcpy(sh.mac, pa->mac, 6);
    memcpy(s, &sh, sizeof sh);
    memcpy(s + sizeof sh, a, alen);
    if (blen)
        memcpy(s + sizeof sh + alen, b, blen);
    if (!flags && cls == EM_PKT_BULK) {
        d->st.put_tx_daemon++;
        d->st.put_tx_daemon_bytes += alen + blen;
    }
}

/** Frames of one tx burst bound for the bulk queue. */
struct bulk_batch {
    em_pkt_t *pk[EMD_RX_BURST];
    uint32_t bytes[EMD_RX_BURST];
    uint8_t put[EMD_RX_BURST];
    unsigned n;
};

/** Send the batch on the bulk queue; what it refuses goes through the
 *  daemon (ring slots from @p used on, up to @p room). */
static void flush_bulk(struct emd_link *d, struct bulk_batch *b, unsigned *used, uint32_t room)
{
    if (!b->n)
        return;
    unsigned sent = em_link_tx_burst(d->bulkq, b->pk, b->n);
    if (sent)
        atomic_store_explicit(&d->h->bulk_active_ns, em_clock_ns(), memory_order_relaxed);
    for (unsigned j = 0; j < sent; j++)
        if (b->put[j]) {
            d->st.put_tx_bulk++;
            d->st.put_tx_bulk_bytes += b->bytes[j];
        }
    for (unsigned j = sent; j < b->n; j++) {
        /* the queue toward that slot is full: the daemon carries it */
        em_pkt_t *q = b->pk[j];
        if (*used < room) {
            fill_slot(d, &d->peers[q->peer], q->cls, q->data, q->len, NULL, 0, 0);
            (*used)++;
            d->st.bulk_tx_fallback++;
        } else {
            d->st.bulk_tx_dropped++; /* lost like a full wire: retransmitted */
        }
        em_link_tx_free(d->bulkq, q);
    }
    b->n = 0;
}

/** Publish the slots filled since the last call (@p used of them) and wake
 *  a sleeping daemon. */
static void publish_tx(struct emd_link *d, unsigned used)
{
    if (emd_slots_sp_enqueue(&d->tx)) {
        /* a seq_cst store, then this load: pairs with the daemon's
         * "sleeping = 1, then look at the rings once more" (no lost wake-up) */
        d->st.tx_frames += used;
        if (atomic_load(&d->h->daemon_sleeping))
            wake_daemon(d);
    }
}

static unsigned emd_tx_burst(em_link_t *l, em_pkt_t **pkts, unsigned n)
{
    struct emd_link *d = (struct emd_link *)l;
    if (d->dead)
        return 0;
    uint32_t room = emd_slots_sp_room(&d->tx);
    unsigned k = 0, used = 0;
    struct bulk_batch bq;
    bq.n = 0;
    for (; k < n && used < room; k++) {
        em_pkt_t *p = pkts[k];
        if (p->peer >= d->npeers || !d->peers[p->peer].set || p->len + p->ext_len > d->mtu) {
            d->st.tx_bad++; /* engine bug: drop, as a wire would */
            em_pkt_pool_put(&d->tx_pool, p);
            continue;
        }
        const struct peer_addr *pa = &d->peers[p->peer];
        int put = p->cls == EM_PKT_BULK, ack = p->cls == EM_PKT_CTRL;
        if (pa->bulkq && (put || ack)) {
            /* rendezvous data, and the ACKs its sender waits for: on our
             * bulk queue, toward the peer's slot */
            if (bq.n == EMD_RX_BURST)
                flush_bulk(d, &bq, &used, room);
            em_pkt_t *q = used < room ? em_link_tx_alloc(d->bulkq) : NULL;
            if (q && ack && !p->ext_len) {
                /* the daemon keeps acknowledging eager frames for us only
                 * if it knows how far we are: a note of the ACK, not sent */
                fill_slot(d, pa, p->cls, p->data, p->len, NULL, 0, EMD_SLOT_F_NOTE);
                used++;
                d->st.ack_tx_bulk++;
            }
            if (q) {
                memcpy(q->data, p->data, p->len);
                if (p->ext_len)
                    memcpy(q->data + p->len, p->ext, p->ext_len);
                q->len = p->len + p->ext_len;
                q->peer = p->peer;
                q->cls = p->cls;
                bq.bytes[bq.n] = q->len;
                bq.put[bq.n] = (uint8_t)put;
                bq.pk[bq.n++] = q;
                em_pkt_pool_put(&d->tx_pool, p);
                continue;
            }
            if (used == room)
                break; /* (the note took the last slot) */
            if (put)
                d->st.bulk_tx_fallback++; /* no mbuf free: through the daemon */
        }
        fill_slot(d, pa, p->cls, p->data, p->len, p->ext, p->ext_len, 0);
        used++;
        em_pkt_pool_put(&d->tx_pool, p); /* copied: the buffer is free again */
    }
    flush_bulk(d, &bq, &used, room);
    if (k < n)
        d->st.tx_ring_full++;
    publish_tx(d, used);
    return k;
}

/** Up to @p max frames from the daemon's rx ring (lent until rx_release). */
static unsigned daemon_rx(struct emd_link *d, em_pkt_t **pkts, unsigned max)
{
    if (max == 0)
        return 0;
    int64_t av = emd_recs_sc_avail(&d->rx); /* the daemon's tail, once */
    if (av < 0) {                           /* nonsense: stop trusting the ring */
        declare_dead(d, "the emd daemon's rx ring indices are corrupt");
        return 0;
    }
    uint32_t avail = (uint32_t)av;
    unsigned k = 0;
    while (k < max) {
        struct emd_slot_hdr sh;
        uint8_t *frame;
        int r = emd_recs_sc_take(&d->rx, &avail, d->mtu, &sh, &frame);
        if (r == 0)
            break;
        if (r < 0) {
            static char why[96];
            snprintf(why, sizeof why, "the emd daemon's rx ring is unusable: %s",
                     emd_ring_strerror(r));
            d->st.rx_bad++;
            declare_dead(d, why);
            return 0;
        }
        if (em_loss_drop(&d->loss)) {
            d->st.rx_dropped_loss++;
            continue;
        }
        em_pkt_t *p = &d->rx_pkts[k];
        d->rx_src[k] = em_addr_key6(sh.mac, sh.endpoint);
        p->data = frame;
        p->len = sh.len;
        p->peer = 0;
        p->cls = sh.cls < EMD_CLS_COUNT ? sh.cls : EM_PKT_DATA;
        p->ext = NULL;
        p->ext_len = 0;
        if (p->cls == EM_PKT_BULK) {
            d->st.put_rx_daemon++;
            d->st.put_rx_daemon_bytes += p->len;
        }
        pkts[k++] = p;
    }
    if (k == 0)
        emd_recs_sc_release(&d->rx); /* nothing lent: give the records back now */
    d->st.rx_frames += k;
    return k;
}

/** Bulk-queue traffic: the daemon keeps spinning a while (the eager frames
 *  of the rendezvous protocol pass through it), and a sleeping one is woken. */
static void bulk_active(struct emd_link *d)
{
    atomic_store_explicit(&d->h->bulk_active_ns, em_clock_ns(), memory_order_relaxed);
    if (atomic_load(&d->h->daemon_sleeping))
        wake_daemon(d);
}

/** Up to @p max frames from our bulk queues (remembered for rx_release). */
static unsigned bulk_rx(struct emd_link *d, em_pkt_t **pkts, unsigned max)
{
    if (max == 0)
        return 0;
    unsigned k = em_link_rx_burst(d->bulkq, pkts, max);
    if (k)
        bulk_active(d);
    for (unsigned i = 0; i < k; i++) {
        d->bulk_lent[d->bulk_nlent++] = pkts[i];
        if (pkts[i]->cls == EM_PKT_BULK) {
            d->st.put_rx_bulk++;
            d->st.put_rx_bulk_bytes += pkts[i]->len;
        }
    }
    d->st.rx_frames += k;
    return k;
}

static unsigned emd_rx_burst(em_link_t *l, em_pkt_t **pkts, unsigned max)
{
    struct emd_link *d = (struct emd_link *)l;
    maybe_check(d);
    if (d->dead)
        return 0;
    if (max > EMD_RX_BURST)
        max = EMD_RX_BURST;
    d->bulk_nlent = 0;
    if (!d->bulkq)
        return daemon_rx(d, pkts, max);
    /* both sources, the one polled first alternating (neither starves) */
    unsigned k;
    d->bulk_first ^= 1;
    if (d->bulk_first) {
        k = bulk_rx(d, pkts, max);
        k += daemon_rx(d, pkts + k, max - k);
    } else {
        k = daemon_rx(d, pkts, max);
        k += bulk_rx(d, pkts + k, max - k);
    }
    return k;
}

static void emd_rx_release(em_link_t *l, em_pkt_t **pkts, unsigned n)
{
    struct emd_link *d = (struct emd_link *)l;
    (void)pkts;
    (void)n; /* a burst is always released whole */
    emd_recs_sc_release(&d->rx);
    if (d->bulk_nlent) {
        em_link_rx_release(d->bulkq, d->bulk_lent, d->bulk_nlent);
        d->bulk_nlent = 0;
    }
}

static int emd_flush(em_link_t *l)
{
    struct emd_link *d = (struct emd_link *)l;
    return d->dead ? -EPIPE : 0;
}

/** Node id, endpoint and bulk-queue layout of address @p a.  @return its
 *  framing (EMD_FRAMING_L2 / _UDP: whole), or -1 (no address of ours). */
static int addr_parse(const em_link_addr_t *a, uint8_t mac[6], uint16_t *ep, uint16_t *slots,
                      uint16_t *slot)
{
    if (a->len > sizeof a->bytes)
        return -1;
    int fr = emd_addr_framing(a->bytes, a->len, mac, ep);
    if (fr == EMD_FRAMING_L2 && emd_addr_decode(a->bytes, a->len, mac, ep, slots, slot) != 0)
        return -1;
    return fr;
}

static int emd_set_peer(em_link_t *l, uint32_t peer, const em_link_addr_t *a)
{
    struct emd_link *d = (struct emd_link *)l;
    uint8_t mac[6];
    uint16_t ep, slots = 0, slot = EMD_BULKQ_NO_SLOT;
    int fr = addr_parse(a, mac, &ep, &slots, &slot);
    if (fr >= 0 && fr != d->udp && !d->framing_warned++)
        fprintf(stderr,
                "ethermpi link_emd: framing mismatch: this process's emd daemon runs %s "
                "framing, peer %u's %s: give every process the same btl_dpdk_framing and every "
                "emd the same --framing\n",
                d->udp ? "udp" : "l2", peer, fr ? "udp" : "l2");
    if (fr != d->udp)
        return -EINVAL; /* e.g. a direct-mode address: not reachable through emd */
    if (em_peer_table_reserve((void **)&d->peers, &d->npeers, sizeof *d->peers, peer) != 0)
        return -ENOMEM;
    struct peer_addr *pa = &d->peers[peer];
    if (pa->set)
        em_addr_map_del(&d->bysrc, em_addr_key6(pa->mac, pa->ep), peer);
    if (em_addr_map_put(&d->bysrc, em_addr_key6(mac, ep), peer) != 0)
        return -ENOMEM;
    memcpy(pa->mac, mac, 6);
    pa->ep = ep;
    pa->set = 1;
    /* its bulk queue is reachable from ours when both daemons have the same
     * layout (then the memif queues pair up) and it is on the other node */
    int remote = memcmp(mac, d->h->mac, 6) != 0;
    pa->bulkq = d->bulkq && slots == d->bulk_slots && remote &&
                em_link_set_peer(d->bulkq, peer, a) == 0;
    if (d->bulkq && remote && slots && slots != d->bulk_slots && !d->layout_warned) {
        /* the two daemons of the cable were started with different
         * --bulk-slots: their queues do not pair up */
        char msg[300];
        snprintf(msg, sizeof msg,
                 "the emd daemon of peer %u has %u bulk-queue slots, ours %u: start "
                 "both daemons with the same --bulk-slots; until then rendezvous data to and from "
                 "that node goes through the daemons",
                 peer, slots, d->bulk_slots);
        if (d->bulk_mode == EM_EMD_BULKQ_ON || !d->note_cb)
            fprintf(stderr, "ethermpi link_emd: %s\n", msg);
        else
            d->note_cb(d->cb_ctx, msg);
        d->layout_warned = 1;
    }
    return 0;
}

/* the peer the frame came from: for the daemon's ring, the source (MAC,
 * endpoint) the daemon wrote (it fixes them for frames from its clients);
 * for our bulk queues, that link's judgement */
static uint32_t emd_rx_peer(em_link_t *l, const em_pkt_t *p)
{
    const struct emd_link *d = (const struct emd_link *)l;
    if (p >= d->rx_pkts && p < d->rx_pkts + EMD_RX_BURST)
        return em_addr_map_get(&d->bysrc, d->rx_src[p - d->rx_pkts]);
    if (d->bulkq && d->bulkq->ops->rx_peer)
        return d->bulkq->ops->rx_peer(d->bulkq, p);
    return EM_LINK_PEER_UNKNOWN;
}

/* First contact (link.h tx_to): a frame to (node, endpoint) @p a, always
 * through the daemon (never on our bulk queue: a peer takes handshakes only
 * from its daemon's ring, whose source the daemon writes).  A tx slot names
 * only where a frame goes: its source is the daemon's to fill. */
static int emd_tx_to(em_link_t *l, em_pkt_t *p, const em_link_addr_t *a)
{
    struct emd_link *d = (struct emd_link *)l;
    struct peer_addr pa = { .set = 1 };
    uint16_t slots = 0, slot = EMD_BULKQ_NO_SLOT;
    if (addr_parse(a, pa.mac, &pa.ep, &slots, &slot) != d->udp || p->len + p->ext_len > d->mtu)
        return -EINVAL;
    if (d->dead)
        return -EHOSTUNREACH;
    if (emd_slots_sp_room(&d->tx) == 0) {
        d->st.tx_ring_full++;
        return -EAGAIN;
    }
    uint8_t cls = p->cls < EMD_CLS_COUNT ? p->cls : EM_PKT_DATA;
    fill_slot(d, &pa, cls, p->data, p->len, p->ext, p->ext_len, 0);
    em_pkt_pool_put(&d->tx_pool, p); /* copied: the buffer is free again */
    publish_tx(d, 1);
    return 0;
}

/* First contact (link.h rx_from): is @p p's source, as the daemon wrote it
 * in the ring record (its own node and the sending client's endpoint for a
 * frame from this node, the shim's for one from the port; never the
 * sender's word), the node and endpoint of @p a?  A frame from our bulk
 * queues is no handshake's: false. */
static bool emd_rx_from(em_link_t *l, const em_pkt_t *p, const em_link_addr_t *a)
{
    const struct emd_link *d = (const struct emd_link *)l;
    uint8_t mac[6];
    uint16_t ep, slots, slot;
    if (p < d->rx_pkts || p >= d->rx_pkts + EMD_RX_BURST ||
        addr_parse(a, mac, &ep, &slots, &slot) != d->udp)
        return false;
    return d->rx_src[p - d->rx_pkts] == em_addr_key6(mac, ep);
}

/** Tell the daemon where @p peer's flows stand (EMD_CTL_FLOW): it may then
 *  acknowledge that peer's in-order frames for us. */
static int emd_set_flow(em_link_t *l, uint32_t peer, const em_link_flow_t *f)
{
    struct emd_link *d = (struct emd_link *)l;
    if (d->fd < 0 || d->dead)
        return -ENOTCONN;
    /* the daemon acknowledges only what comes from the address our own
     * source check binds to this peer (emd_ctl_msg.h FLOW) */
    if (peer >= d->npeers || !d->peers[peer].set)
        return -EINVAL;
    struct emd_ctl_msg m;
    emd_ctl_init(&m, EMD_CTL_FLOW);
    memcpy(m.flow.peer_node, d->peers[peer].mac, 6);
    m.flow.peer_ep = d->peers[peer].ep;
    m.flow.rx_key = f->rx_key;
    m.flow.tx_key = f->tx_key;
    m.flow.rx_next = f->rx_next;
    m.flow.tx_next = f->tx_next;
    m.flow.frame_max = f->frame_max < d->mtu ? f->frame_max : d->mtu;
    m.flow.self = f->self;
    m.flow.peer = f->peer;
    m.flow.remote_index = f->remote_index;
    /* the daemon reads its control messages about once a millisecond: a
     * job with many peers fills the socket for a moment */
    for (int tries = 0; tries < 2000; tries++) {
        if (send(d->fd, &m, sizeof m, MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)sizeof m) {
            d->st.flows_sent++;
            return 0;
        }
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            break;
        struct pollfd p = { .fd = d->fd, .events = POLLOUT };
        (void)poll(&p, 1, 1);
    }
    return -EAGAIN; /* no eager ACKs for this peer: ours do */
}

static void emd_close(em_link_t *l)
{
    struct emd_link *d = (struct emd_link *)l;
    if (d->close_cb) {
        em_emd_stats_t st;
        em_link_emd_stats(l, &st);
        d->close_cb(d->cb_ctx, &st);
    }
    em_link_close(d->bulkq); /* before the region: it reads the loss fraction there */
    if (d->fd >= 0) {        /* (from_region: the caller owns the region) */
        munmap(d->h, d->size);
        close(d->fd); /* = detach: the daemon frees our endpoint */
    }
    free(d->peers);
    em_addr_map_free(&d->bysrc);
    free(d->tx_mem);
    free(d);
}

static const em_link_ops_t emd_ops = {
    .name = "emd",
    .tx_alloc = emd_tx_alloc,
    .tx_burst = emd_tx_burst,
    .tx_free = emd_tx_free,
    .rx_burst = emd_rx_burst,
    .rx_release = emd_rx_release,
    .flush = emd_flush,
    .set_peer = emd_set_peer,
    .close = emd_close,
    .rx_peer = emd_rx_peer,
    .set_flow = emd_set_flow,
    .tx_to = emd_tx_to,
    .rx_from = emd_rx_from,
};

/** Bulk queues: open them if the daemon offers a slot (AUTO: else say why
 *  once; ON: else fail with the reason).  @return 0, or -1 with @p err. */
static int open_bulk_queue(struct emd_link *d, struct emd_shm_hdr *h, uint16_t endpoint,
                           const em_emd_cfg_t *cfg, char *err, size_t errlen)
{
    char why[400] = "", e2[300] = "";
    const struct emd_bulkq_info *r = &h->bulkq;
    if (r->slots == 0 || d->udp) /* bulk queues write L2 frames (docs/daemon.md, Framing) */
        snprintf(why, sizeof why, "the emd daemon offers no bulk queues: %s",
                 r->slots ? "it runs udp framing" : r->why);
    else if (r->slot == EMD_BULKQ_NO_SLOT)
        snprintf(why, sizeof why, "the emd daemon has no bulk-queue slot left for this process: %s",
                 r->why);
    else if (!cfg->bulk_open)
        snprintf(why, sizeof why, "this build cannot open bulk queues (no DPDK)");
    if (!why[0]) {
        em_emd_bulkq_t info = {
            .file_prefix = r->prefix,
            .port = r->port,
            .slots = r->slots,
            .slot = r->slot,
            .endpoint = endpoint,
            .mtu = h->mtu,
            .loss_ppm = (const volatile uint32_t *)(const void *)&h->rx_loss_ppm,
        };
        memcpy(info.mac, h->mac, 6);
        d->bulkq = cfg->bulk_open(cfg->ctx, &info, e2, sizeof e2);
        if (d->bulkq && d->bulkq->mtu < h->mtu) {
            snprintf(e2, sizeof e2, "its frames are smaller (%u bytes) than the daemon's (%u)",
                     d->bulkq->mtu, h->mtu);
            em_link_close(d->bulkq);
            d->bulkq = NULL;
        }
        if (!d->bulkq)
            snprintf(why, sizeof why,
                     "cannot open this process's bulk queue (slot %u of %u on %s): %s", r->slot,
                     r->slots, r->port, e2);
    }
    if (!d->bulkq) {
        if (cfg->bulk_mode == EM_EMD_BULKQ_ON) {
            const char *set = cfg->bulk_setting ? cfg->bulk_setting : "btl_dpdk_bulk_queue";
            snprintf(err, errlen,
                     "bulk queue for rendezvous data requested (%s on) but not possible: %s.  "
                     "Set %s to auto or off (rendezvous data then goes through the daemon), "
                     "or give the daemon bulk queues",
                     set, why, set);
            return -1;
        }
        if (cfg->note_cb) {
            char msg[480];
            snprintf(msg, sizeof msg,
                     "rendezvous data goes through the emd daemon (no bulk queue): %s", why);
            cfg->note_cb(cfg->ctx, msg);
        }
        return 0;
    }
    d->bulk_slots = r->slots;
    d->bulk_slot = r->slot;
    d->link.local.len = emd_addr_encode(d->link.local.bytes, h->mac, endpoint, r->slots, r->slot);
    return 0;
}

em_link_t *em_link_emd_make(struct emd_shm_hdr *h, uint64_t size, int fd, uint16_t endpoint,
                            const em_emd_cfg_t *cfg, char *err, size_t errlen)
{
    if ((h->flags & EMD_SHM_F_DAEMON_ACKS) && cfg->rx_loss > 0) {
        /* the daemon acknowledged the frames already: dropping one here
         * would lose it for good */
        snprintf(err, errlen,
                 "receive-loss injection in the process (btl_dpdk_rx_loss) cannot be "
                 "used with an emd that acknowledges for it; inject loss in the daemon instead "
                 "(emd --rx-loss, tools/emcluster emd loss)");
        return NULL;
    }
    int udp = (h->flags & EMD_SHM_F_UDP) != 0;
    if (udp != (cfg->framing == EMD_FRAMING_UDP)) {
        snprintf(err, errlen,
                 "framing mismatch: the job asks for btl_dpdk_framing %s, but this "
                 "node's emd daemon runs --framing %s: run the job with --mca btl_dpdk_framing %s, "
                 "or restart the daemons with emd --framing %s",
                 udp ? "l2" : "udp", udp ? "udp" : "l2", udp ? "udp" : "l2", udp ? "l2" : "udp");
        return NULL;
    }
    struct emd_link *d = calloc(1, sizeof *d);
    uint32_t mtu = h->mtu;
    uint8_t *txm = d ? malloc((size_t)EMD_TX_POOL * mtu) : NULL;
    if (!d || !txm) {
        snprintf(err, errlen, "out of memory");
        free(d);
        return NULL;
    }
    d->fd = fd;
    d->h = h;
    d->size = size;
    d->mtu = mtu;
    emd_ring_init_rx(&d->rx, h);
    emd_ring_init_tx(&d->tx, h);
    d->tx_mem = txm;
    em_pkt_pool_init(&d->tx_pool, d->tx_stack, EMD_TX_POOL);
    em_pkt_pool_fill(&d->tx_pool, d->tx_pkts, txm, EMD_TX_POOL, mtu);
    em_loss_init(&d->loss, cfg->rx_loss, cfg->loss_seed);
    d->hb_timeout_ns = (uint64_t)(cfg->heartbeat_timeout_ms ? cfg->heartbeat_timeout_ms : 3000) *
                       1000000ull;
    d->last_check_ns = em_clock_ns();
    d->dead_cb = cfg->dead_cb;
    d->dead_ctx = cfg->dead_ctx;
    d->link.ops = &emd_ops;
    d->link.mtu = mtu;
    d->link.flags = EM_LINK_F_GATHER;
    if (h->flags & EMD_SHM_F_DAEMON_ACKS)
        d->link.flags |=
            EM_LINK_F_ACKS; /* the protocol must not drop what the daemon acknowledged */
    d->udp = udp; /* a udp daemon offers no bulk queues (emd.c), so the address stays this one */
    d->link.local.len = udp ? emd_addr_encode_udp(d->link.local.bytes, h->mac, endpoint)
                            : emd_addr_encode(d->link.local.bytes, h->mac, endpoint, 0, 0);
    d->close_cb = cfg->close_cb;
    d->note_cb = cfg->note_cb;
    d->cb_ctx = cfg->ctx;
    d->bulk_mode = cfg->bulk_mode;
    if (cfg->bulk_mode != EM_EMD_BULKQ_OFF &&
        open_bulk_queue(d, h, endpoint, cfg, err, errlen) != 0) {
        free(d->tx_mem);
        free(d);
        return NULL;
    }
    return &d->link;
}

void em_link_emd_stats(const em_link_t *l, em_emd_stats_t *out)
{
    const struct emd_link *d = (const struct emd_link *)l;
    *out = d->st;
    out->daemon_rx_ring_full = atomic_load_explicit(&d->h->st.rx_ring_full, memory_order_relaxed);
    out->daemon_tx_bad = atomic_load_explicit(&d->h->st.tx_bad, memory_order_relaxed);
    out->daemon_port_rx_loss = atomic_load_explicit(&d->h->st.port_rx_loss, memory_order_relaxed);
    out->daemon_put_frames = atomic_load_explicit(&d->h->st.put_frames, memory_order_relaxed);
    out->bulk_queue = d->bulkq != NULL;
    out->slot = d->bulkq ? d->bulk_slot : EMD_BULKQ_NO_SLOT;
    out->slots = d->bulk_slots;
}

int em_link_emd_alive(const em_link_t *l) { return !((const struct emd_link *)l)->dead; }
