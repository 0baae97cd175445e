/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file link_udp.c
 * Kernel UDP link (see link_udp.h).  Transmit buffers come from a fixed pool
 * (no allocation on the data path); a tx burst is one sendmmsg(2) call (or
 * a few), each message one datagram or, with UDP_SEGMENT, one GSO send of
 * up to 64 KB of equal frames.  A receive burst is one recvmmsg(2) call into
 * a fixed ring of slots that stays valid until the next rx_burst (the
 * engine releases before it asks again); with UDP_GRO a slot may hold
 * several coalesced frames, which are handed out one em_pkt_t each, over as
 * many rx_burst calls as it takes (the ring is refilled only when every
 * frame of the previous fill was handed out).
 *
 * Sockets: frames arrive on the receive socket (the receive port) and
 * leave from the send port: through a socket connected to the peer (one
 * per peer, up to UDP_CONN_MAX, opened at the first send; the kernel keeps
 * the route of a connected socket) or, to several peers in one burst or
 * beyond UDP_CONN_MAX, a shared unconnected one.  The send sockets share
 * the port with SO_REUSEPORT (same user only, the kernel's rule) and keep
 * nothing they receive (a drop-all filter).  The address a link publishes
 * is IPv4, receive port, send port; frames are taken as a peer's by their
 * source, its IPv4 and send port (rx_peer).  First contact (tx_to, to an
 * address no peer has) goes through the shared unconnected socket, with
 * no peer entry, source mapping or connected socket made; rx_from judges
 * a datagram's source as rx_peer would, against one address.
 *
 * Budgets: UDP_TX_POOL frames of mtu bytes; rx_batch (<= UDP_RX_SLOTS) slots
 * of mtu bytes (64 KiB with GRO: the largest coalesced datagram);
 * UDP_RX_FRAMES frame descriptors per rx_burst.
 *
 * This file is the data path (bursts, frames' sources, first-contact
 * sends, the ops table); opening, the sockets, the peers' addresses and
 * close are link_udp_open.c; the state both share, link_udp_int.h.
 */
#include "link/link_udp_int.h"

#include <errno.h>
#include <netinet/udp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static em_pkt_t *udp_tx_alloc(em_link_t *l)
{
    return em_pkt_pool_get(&((struct udp_link *)l)->tx_pool);
}

static void udp_tx_free(em_link_t *l, em_pkt_t *p)
{
    em_pkt_pool_put(&((struct udp_link *)l)->tx_pool, p);
}

static uint32_t frame_len(const em_pkt_t *p) { return p->len + p->ext_len; }

/**
 * How many frames from @p pkts[0] (at most @p n) may leave as one GSO send:
 * same peer, same length, the last may be shorter, within the kernel's
 * segment and byte limits.  1 = send it alone.
 */
static unsigned gso_run(em_pkt_t **pkts, unsigned n)
{
    uint32_t seg = frame_len(pkts[0]);
    size_t total = seg;
    unsigned k = 1;
    if (seg == 0)
        return 1;
    while (k < n && k < UDP_GSO_SEGS) {
        uint32_t l = frame_len(pkts[k]);
        if (pkts[k]->peer != pkts[0]->peer || l == 0 || l > seg || total + l > UDP_GSO_BYTES)
            break;
        total += l;
        k++;
        if (l < seg)
            break; /* a shorter frame ends the run */
    }
    return k;
}

static int peer_known(const struct udp_link *u, uint32_t peer)
{
    return peer < u->npeers && u->peers[peer].rx.sin_port != 0;
}

/**
 * The socket frames to @p peer leave through: its connected socket, opened
 * at the first send (a connected UDP socket keeps its route: no route
 * lookup and no address to copy in per send, docs/design.md "link_udp",
 * connected sends), or the shared send socket beyond UDP_CONN_MAX peers
 * or if the kernel refuses one.  *@p connected says which.
 */
static int tx_sock(struct udp_link *u, uint32_t peer, int *connected)
{
    struct udp_peer *p = &u->peers[peer];
    if (p->fd1 == 0) {
        int fd = u->nconn < UDP_CONN_MAX ? udpl_send_socket(u, &p->rx, NULL) : -1;
        p->fd1 = fd >= 0 ? fd + 1 : -1;
        if (fd >= 0)
            u->nconn++;
        else
            u->st.tx_shared_peers++;
    }
    *connected = p->fd1 > 0;
    return p->fd1 > 0 ? p->fd1 - 1 : u->sfd;
}

/**
 * Build up to UDP_TX_MSGS messages from @p pkts[0..n); frames to unknown
 * peers at the front are dropped and counted (*@p dropped).  @return the
 * number of messages; u->tx_nfr[] says how many frames each carries.
 */
static unsigned tx_build(struct udp_link *u, em_pkt_t **pkts, unsigned n, unsigned *dropped)
{
    unsigned m = 0, niov = 0, f = 0;
    *dropped = 0;
    while (f < n && m < UDP_TX_MSGS && niov + 2 <= UDP_TX_IOV) {
        if (!peer_known(u, pkts[f]->peer)) {
            if (m > 0)
                break; /* send what is built first; dropped on the next round */
            /* unknown destination: a programming error upstream; drop, count */
            u->st.tx_unknown_peer++;
            udp_tx_free(&u->link, pkts[f++]);
            (*dropped)++;
            continue;
        }
        unsigned room = (UDP_TX_IOV - niov) / 2;
        unsigned k = u->gso ? gso_run(pkts + f, n - f < room ? n - f : room) : 1;
        struct msghdr *h = &u->tx_msgs[m].msg_hdr;
        *h = (struct msghdr){ .msg_name = &u->peers[pkts[f]->peer].rx,
                              .msg_namelen = sizeof(struct sockaddr_in),
                              .msg_iov = &u->tx_iov[niov] };
        for (unsigned i = 0; i < k; i++) {
            em_pkt_t *p = pkts[f + i];
            u->tx_iov[niov++] = (struct iovec){ .iov_base = p->data, .iov_len = p->len };
            if (p->ext_len)
                u->tx_iov[niov++] = (struct iovec){ .iov_base = (void *)p->ext,
                                                    .iov_len = p->ext_len };
        }
        h->msg_iovlen = (size_t)(&u->tx_iov[niov] - h->msg_iov);
        if (k > 1) {
            h->msg_control = u->tx_ctl[m].buf;
            h->msg_controllen = sizeof u->tx_ctl[m].buf;
            struct cmsghdr *c = CMSG_FIRSTHDR(h);
            c->cmsg_level = SOL_UDP;
            c->cmsg_type = UDP_SEGMENT;
            c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
            uint16_t gso = (uint16_t)frame_len(pkts[f]);
            memcpy(CMSG_DATA(c), &gso, sizeof gso);
        }
        u->tx_nfr[m++] = k;
        f += k;
    }
    return m;
}

/** The kernel refused a GSO send: one datagram per frame from now on. */
static void gso_disable(struct udp_link *u, int err)
{
    u->gso = 0;
    u->info.gso = 0;
    u->st.tx_gso_fallback++;
    if (u->note) {
        char msg[200];
        snprintf(msg, sizeof msg,
                 "the kernel refused UDP GSO (UDP_SEGMENT: %s); sending one "
                 "datagram per frame from now on",
                 strerror(err));
        u->note(u->note_ctx, msg);
    }
}

/**
 * Send one frame alone (tx_build made it message 0) without sendmmsg: a
 * small frame is made contiguous and goes with sendto(2), a larger one with
 * sendmsg(2).  sendmmsg copies in and walks an mmsghdr and its iovecs even
 * for one message; on the latency path of every small message that is
 * measurable (loopback, 112-byte frame incl. delivery: sendmmsg 3.04 us,
 * sendmsg 2.94, copy + sendto 2.81; docs/design.md "link_udp", lone
 * frames).  @return 1 (sent), or -1 with errno as sendmmsg would set it.
 */
static int tx_lone(struct udp_link *u, em_pkt_t *p)
{
    int connected;
    int fd = tx_sock(u, p->peer, &connected);
    const struct sockaddr *to = connected ? NULL : (const struct sockaddr *)&u->peers[p->peer].rx;
    socklen_t tolen = connected ? 0 : sizeof(struct sockaddr_in);
    if (p->ext_len <= UDP_LONE_COPY) {
        /* the pool buffer holds a whole frame (mtu bytes): copy the payload
         * behind the header, as em_link_pkt_flatten would */
        if (p->ext_len)
            memcpy(p->data + p->len, p->ext, p->ext_len);
        return sendto(fd, p->data, (size_t)p->len + p->ext_len, MSG_DONTWAIT, to, tolen) < 0 ? -1
                                                                                             : 1;
    }
    u->tx_msgs[0].msg_hdr.msg_name = (void *)to;
    u->tx_msgs[0].msg_hdr.msg_namelen = tolen;
    return sendmsg(fd, &u->tx_msgs[0].msg_hdr, MSG_DONTWAIT) < 0 ? -1 : 1;
}

/* sendmmsg of the @p m messages tx_build made: through the peer's
 * connected socket when they all go to one peer (the common case: a
 * message's frames), else through the shared send socket, addressed. */
static int tx_many(struct udp_link *u, em_pkt_t **pkts, unsigned m)
{
    uint32_t peer = pkts[0]->peer;
    unsigned f = 0;
    for (unsigned i = 0; i < m; i++) {
        if (pkts[f]->peer != peer)
            return sendmmsg(u->sfd, u->tx_msgs, m, MSG_DONTWAIT);
        f += u->tx_nfr[i];
    }
    int connected;
    int fd = tx_sock(u, peer, &connected);
    if (connected)
        for (unsigned i = 0; i < m; i++) {
            u->tx_msgs[i].msg_hdr.msg_name = NULL;
            u->tx_msgs[i].msg_hdr.msg_namelen = 0;
        }
    return sendmmsg(fd, u->tx_msgs, m, MSG_DONTWAIT);
}

static unsigned udp_tx_burst(em_link_t *l, em_pkt_t **pkts, unsigned n)
{
    struct udp_link *u = (struct udp_link *)l;
    unsigned done = 0;

    while (done < n) {
        unsigned dropped;
        unsigned m = tx_build(u, pkts + done, n - done, &dropped);
        done += dropped;
        if (m == 0)
            continue;
        int r = m == 1 && u->tx_nfr[0] == 1 ? tx_lone(u, pkts[done]) : tx_many(u, pkts + done, m);
        if (r < 0) {
            int e = errno;
            if (e == EAGAIN || e == EWOULDBLOCK || e == ENOBUFS || e == EINTR)
                break; /* socket full: the caller keeps the rest */
            if (u->tx_nfr[0] > 1 && (e == EIO || e == EINVAL)) {
                gso_disable(u, e);
                continue; /* the same frames again, one datagram each */
            }
            /* persistent error on the first message (e.g. EPERM from a
             * filter): its frames are lost like frames on a bad wire; go on */
            for (unsigned i = 0; i < u->tx_nfr[0]; i++)
                udp_tx_free(l, pkts[done++]);
            u->st.tx_errors++;
            continue;
        }
        for (int i = 0; i < r; i++) {
            unsigned k = u->tx_nfr[i];
            for (unsigned j = 0; j < k; j++)
                udp_tx_free(l, pkts[done++]);
            u->st.tx_frames += k;
            if (k > 1)
                u->st.tx_gso_sends++;
        }
        u->st.tx_dgrams += (uint64_t)r;
        if ((unsigned)r < m)
            break;
    }
    return done;
}

/** Hand out up to @p max frames of the slots filled by the last recvmmsg. */
static unsigned rx_split(struct udp_link *u, em_pkt_t **pkts, unsigned max)
{
    unsigned n = 0;
    while (n < max && u->rx_cur < u->rx_filled) {
        const struct rx_slot *s = &u->rx_slots[u->rx_cur];
        uint32_t left = s->len - u->rx_off;
        uint32_t take = left < s->seg ? left : s->seg;
        em_pkt_t *p = &u->rx_pkts[n];
        p->data = (uint8_t *)u->rx_iov[u->rx_cur].iov_base + u->rx_off;
        p->len = take;
        p->peer = 0;
        p->priv = &u->rx_names[u->rx_cur]; /* the frame's source address */
        pkts[n++] = p;
        u->rx_off += take;
        if (u->rx_off >= s->len) {
            u->rx_cur++;
            u->rx_off = 0;
        }
    }
    u->st.rx_frames += n;
    return n;
}

/** The coalesced frame size the kernel reported for @p h, or 0. */
static uint32_t gro_size(struct msghdr *h)
{
    for (struct cmsghdr *c = CMSG_FIRSTHDR(h); c; c = CMSG_NXTHDR(h, c)) {
        if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO &&
            c->cmsg_len >= CMSG_LEN(sizeof(int))) {
            int v;
            memcpy(&v, CMSG_DATA(c), sizeof v);
            return v > 0 ? (uint32_t)v : 0;
        }
    }
    return 0;
}

/**
 * Check what the kernel wrote into slot @p i; 0 = usable (rx_slots[i]
 * filled), -1 = refused and counted.  A datagram longer than a frame is
 * accepted only as coalesced frames no longer than a frame each.
 */
static int rx_check(struct udp_link *u, unsigned i)
{
    struct msghdr *h = &u->rx_msgs[i].msg_hdr;
    uint32_t len = u->rx_msgs[i].msg_len;
    if (h->msg_flags & MSG_TRUNC) {
        u->st.rx_truncated++;
        return -1;
    }
    uint32_t seg = u->gro ? gro_size(h) : 0;
    if (seg == 0 || seg >= len) {
        if (len > u->link.mtu) { /* one datagram, bigger than a frame */
            u->st.rx_truncated++;
            return -1;
        }
        seg = len ? len : 1;
    } else if (seg > u->link.mtu) {
        u->st.rx_bad_gro++;
        return -1;
    } else {
        u->st.rx_gro_dgrams++;
    }
    u->rx_slots[i] = (struct rx_slot){ .len = len, .seg = seg };
    return 0;
}

/**
 * The poll of an idle link: one datagram into slot 0 with recvfrom(2),
 * which copies in no msghdr and no iovec (an empty poll costs 275 ns here
 * against recvmmsg's 410, docs/design.md "link_udp", idle polls).  It gets
 * no UDP_GRO control message, so with GRO on a datagram is split at the
 * length its first frame's header states (cfg.frame_len): the kernel
 * coalesces only equal segments (the last may be shorter), and every
 * frame split out is decoded and checked above as any other.
 */
static unsigned rx_one(struct udp_link *u, em_pkt_t **pkts, unsigned max)
{
    socklen_t nl = sizeof u->rx_names[0];
    uint8_t *buf = u->rx_iov[0].iov_base;
    /* MSG_TRUNC: the datagram's real length, to refuse one that did not fit */
    ssize_t r = recvfrom(u->fd, buf, u->rx_slot_bytes, MSG_DONTWAIT | MSG_TRUNC,
                         (struct sockaddr *)&u->rx_names[0], &nl);
    if (r < 0)
        return 0; /* EAGAIN; errors are the next poll's (as recvmmsg's are) */
    u->st.rx_dgrams++;
    u->rx_want = u->rx_batch; /* more may wait */
    uint32_t len = (uint32_t)r, seg;
    if ((size_t)r > u->rx_slot_bytes) {
        u->st.rx_truncated++;
        return 0;
    }
    uint32_t f = u->gro ? u->frame_len(buf, len) : 0;
    if (f == 0 || f >= len) {    /* one datagram (or not a frame: refused above) */
        if (len > u->link.mtu) { /* bigger than a frame and not splittable */
            if (u->gro)
                u->st.rx_bad_gro++;
            else
                u->st.rx_truncated++;
            return 0;
        }
        seg = len ? len : 1;
    } else if (f > u->link.mtu) {
        u->st.rx_bad_gro++;
        return 0;
    } else {
        seg = f;
        u->st.rx_gro_dgrams++;
    }
    u->rx_slots[0] = (struct rx_slot){ .len = len, .seg = seg };
    u->rx_filled = 1;
    u->rx_cur = 0;
    u->rx_off = 0;
    return rx_split(u, pkts, max);
}

static unsigned udp_rx_burst(em_link_t *l, em_pkt_t **pkts, unsigned max)
{
    struct udp_link *u = (struct udp_link *)l;
    if (max > UDP_RX_FRAMES)
        max = UDP_RX_FRAMES;
    if (u->rx_cur < u->rx_filled)
        return rx_split(u, pkts, max); /* frames left from a coalesced datagram */

    /* After an empty poll ask for one datagram, after any datagram for the
     * whole batch: recvmmsg tries the slot after the last datagram it got,
     * so a lone datagram asked for with 32 slots costs a second, failing
     * receive (0.17-0.25 us on the latency path of every small message),
     * while a stream that keeps the queue non-empty still gets full
     * batches; only the first datagram after a pause comes alone. */
    unsigned want = u->rx_want; /* more frames than max stay for the next call */
    /* Only the slots the last recvmmsg filled (and the compaction below
     * moved) need their headers set again: an empty poll, the common case
     * of a busy-polling rank, then costs the syscall alone (the 32-slot
     * re-initialisation was 9 % of an idle rank's time: docs/design.md
     * "link_udp", small messages). */
    for (unsigned i = 0; i < u->rx_dirty; i++) {
        u->rx_iov[i] = (struct iovec){ .iov_base = u->rx_mem + (size_t)i * u->rx_slot_bytes,
                                       .iov_len = u->rx_slot_bytes };
        u->rx_msgs[i].msg_hdr = (struct msghdr){ .msg_name = &u->rx_names[i],
                                                 .msg_namelen = sizeof u->rx_names[i],
                                                 .msg_iov = &u->rx_iov[i],
                                                 .msg_iovlen = 1,
                                                 .msg_control = u->gro ? u->rx_ctl[i].buf : NULL,
                                                 .msg_controllen = u->gro ? sizeof u->rx_ctl[i].buf
                                                                          : 0 };
    }
    u->rx_dirty = 0;
    if (want == 1 && (u->frame_len || !u->gro))
        return rx_one(u, pkts, max);
    int r = recvmmsg(u->fd, u->rx_msgs, want, MSG_DONTWAIT, NULL);
    if (r <= 0) {
        /* EAGAIN writes nothing back; after any other error set all again */
        if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
            u->rx_dirty = want;
        u->rx_want = 1;
        return 0;
    }
    u->rx_want = u->rx_batch;  /* more may wait */
    u->rx_dirty = (unsigned)r; /* written by the kernel, or moved below */
    u->st.rx_dgrams += (uint64_t)r;
    /* compact the usable slots to the front (rx_iov/rx_names move with them) */
    unsigned k = 0;
    for (unsigned i = 0; i < (unsigned)r; i++) {
        if (rx_check(u, i) != 0)
            continue;
        if (k != i) {
            u->rx_slots[k] = u->rx_slots[i];
            u->rx_iov[k] = u->rx_iov[i];
            u->rx_names[k] = u->rx_names[i];
        }
        k++;
    }
    u->rx_filled = k;
    u->rx_cur = 0;
    u->rx_off = 0;
    return rx_split(u, pkts, max);
}

/* the peer whose address (set_peer) sent this datagram */
static uint32_t udp_rx_peer(em_link_t *l, const em_pkt_t *p)
{
    const struct udp_link *u = (const struct udp_link *)l;
    const struct sockaddr_in *s = p->priv;
    if (!s || s->sin_family != AF_INET)
        return EM_LINK_PEER_UNKNOWN;
    return em_addr_map_get(&u->bysrc, src_key(s->sin_addr.s_addr, s->sin_port));
}

/* First contact (link.h tx_to): one datagram to @p a through the shared
 * unconnected send socket, so it leaves from our send port like every
 * frame, and no peer entry, source mapping or connected socket is made. */
static int udp_tx_to(em_link_t *l, em_pkt_t *p, const em_link_addr_t *a)
{
    struct udp_link *u = (struct udp_link *)l;
    struct sockaddr_in to = { .sin_family = AF_INET };
    memcpy(&to.sin_addr.s_addr, a->bytes, 4);
    memcpy(&to.sin_port, a->bytes + 4, 2);
    if ((a->len != 6 && a->len != 8) || !to.sin_port || p->len + p->ext_len > l->mtu)
        return -EINVAL;
    em_link_pkt_flatten(p); /* the pool buffer holds mtu bytes */
    const struct sockaddr *sa = (const struct sockaddr *)&to;
    if (sendto(u->sfd, p->data, p->len, MSG_DONTWAIT, sa, sizeof to) < 0) {
        int e = errno;
        if (e == EAGAIN || e == EWOULDBLOCK || e == ENOBUFS || e == EINTR)
            return -EAGAIN;
        u->st.tx_errors++;
        return e == ENETUNREACH || e == EHOSTUNREACH ? -EHOSTUNREACH : -e;
    }
    u->st.tx_dgrams++;
    u->st.tx_frames++;
    udp_tx_free(l, p);
    return 0;
}

/* rx_peer's judgment (src_key) against one address: the datagram came from
 * its IPv4 address and send port (the receive port in the 6-byte form) */
static bool udp_rx_from(em_link_t *l, const em_pkt_t *p, const em_link_addr_t *a)
{
    (void)l;
    const struct sockaddr_in *s = p->priv;
    if (!s || s->sin_family != AF_INET || (a->len != 6 && a->len != 8))
        return false;
    return memcmp(&s->sin_addr.s_addr, a->bytes, 4) == 0 &&
           memcmp(&s->sin_port, a->bytes + (a->len == 8 ? 6 : 4), 2) == 0;
}

/* the receive socket: readable when a datagram waits (em_link_ops_t::wait_fd) */
static int udp_wait_fd(em_link_t *l) { return ((struct udp_link *)l)->fd; }

const em_link_ops_t udpl_ops = {
    .name = "udp",
    .tx_alloc = udp_tx_alloc,
    .tx_burst = udp_tx_burst,
    .tx_free = udp_tx_free,
    .rx_burst = udp_rx_burst,
    .rx_release = em_link_rx_release_none,
    .flush = em_link_flush_none,
    .set_peer = udpl_set_peer,
    .close = udpl_close,
    .rx_peer = udp_rx_peer,
    .wait_fd = udp_wait_fd,
    .tx_to = udp_tx_to,
    .rx_from = udp_rx_from,
    .covers = udpl_covers,
};

const em_udp_stats_t *em_link_udp_stats(const em_link_t *l)
{
    return &((const struct udp_link *)l)->st;
}

int em_link_udp_fd(const em_link_t *l) { return ((const struct udp_link *)l)->fd; }

int em_link_udp_send_fd(em_link_t *l, uint32_t peer)
{
    struct udp_link *u = (struct udp_link *)l;
    int connected;
    return peer_known(u, peer) ? tx_sock(u, peer, &connected) : u->sfd;
}
