/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file bcast.c
 * The channel itself (em_bcast.h), over any em_link_t: framing, per-sender
 * sequence numbers, validation, counters.  The backends only open a link
 * whose peer 0 reaches every member.
 */
#include "bcast/em_bcast.h"
#include "bcast/bcast_internal.h"
#include "bcast/bcast_wire.h"
#include "util/seq.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RX_BURST 32

struct em_bcast {
    em_link_t *link;
    uint16_t peer; /* the link's broadcast peer */
    uint16_t nfan; /* > 0: unicast fan-out to link peers 1..nfan instead (udp framing) */
    uint16_t self;
    uint32_t max_elems;
    uint32_t tx_seq;
    em_bc_expect_t ex;
    uint32_t *next_seq; /* per sender: the sequence number expected next */
    double *vals;       /* max_elems decoded elements */
    em_bcast_stats_t st;
};

_Static_assert(EM_BC_NREASONS <= 12, "em_bcast_stats::rejected_by holds every reason");

em_bcast_t *em_bcast_open_link(em_link_t *link, uint16_t bcast_peer, const em_bcast_cfg_t *cfg,
                               char *err, size_t errlen)
{
    if (!link) {
        snprintf(err, errlen, "em_bcast: no link");
        return NULL;
    }
    if (cfg->members == 0 || cfg->self >= cfg->members || cfg->vec_len == 0) {
        snprintf(err, errlen,
                 "em_bcast: bad configuration: member %u of %u, vector of %u "
                 "elements (need self < members and a non-empty vector)",
                 cfg->self, cfg->members, cfg->vec_len);
        em_link_close(link);
        return NULL;
    }
    uint32_t mtu = link->mtu;
    if (cfg->mtu && cfg->mtu < mtu)
        mtu = cfg->mtu;
    if (mtu < EM_BC_HDR_LEN + EM_BC_ELEM_SIZE) {
        snprintf(err, errlen,
                 "em_bcast: frames of %u bytes cannot carry one element "
                 "(header %u + %u bytes)",
                 mtu, EM_BC_HDR_LEN, EM_BC_ELEM_SIZE);
        em_link_close(link);
        return NULL;
    }
    em_bcast_t *b = calloc(1, sizeof *b);
    if (b) {
        b->max_elems = (mtu - EM_BC_HDR_LEN) / EM_BC_ELEM_SIZE;
        if (b->max_elems > UINT16_MAX)
            b->max_elems = UINT16_MAX;
        b->next_seq = calloc(cfg->members, sizeof *b->next_seq);
        b->vals = malloc(b->max_elems * sizeof *b->vals);
    }
    if (!b || !b->next_seq || !b->vals) {
        snprintf(err, errlen, "em_bcast: out of memory");
        if (b) {
            free(b->next_seq);
            free(b->vals);
        }
        free(b);
        em_link_close(link);
        return NULL;
    }
    b->link = link;
    b->peer = bcast_peer;
    b->self = cfg->self;
    b->ex = (em_bc_expect_t){
        .key = cfg->key, .channel = cfg->channel, .members = cfg->members, .vec_len = cfg->vec_len
    };
    return b;
}

em_bcast_t *em_bcast_open(const em_bcast_cfg_t *cfg, char *err, size_t errlen)
{
    em_link_t *l;
    switch (cfg->kind) {
    case EM_BCAST_UDP: l = em_bcast_udp_link_open(cfg, err, errlen); break;
    case EM_BCAST_DPDK: l = em_bcast_dpdk_link_open(cfg, err, errlen); break;
    case EM_BCAST_XDP: l = em_bcast_xdp_link_open(cfg, err, errlen); break;
    default:
        snprintf(err, errlen, "em_bcast: unknown backend %d (udp, dpdk or xdp)", (int)cfg->kind);
        return NULL;
    }
    return l ? em_bcast_open_link(l, 0, cfg, err, errlen) : NULL;
}

uint32_t em_bcast_max_elems(const em_bcast_t *b) { return b->max_elems; }
const em_bcast_stats_t *em_bcast_stats(const em_bcast_t *b) { return &b->st; }
em_link_t *em_bcast_link(const em_bcast_t *b) { return b->link; }

uint32_t em_bcast_local_ipv4(const em_bcast_t *b)
{
    const em_link_addr_t *a = &b->link->local;
    if (a->len != 14 ||
        (strcmp(b->link->ops->name, "dpdk") != 0 && strcmp(b->link->ops->name, "xdp") != 0))
        return 0;
    return (uint32_t)a->bytes[8] << 24 | (uint32_t)a->bytes[9] << 16 | (uint32_t)a->bytes[10] << 8 |
           a->bytes[11];
}

int em_bcast_set_members(em_bcast_t *b, const uint32_t *ipv4, uint16_t n, int force, char *err,
                         size_t errlen)
{
    if (!em_bcast_local_ipv4(b)) {
        snprintf(err, errlen,
                 "em_bcast: member addresses need the dpdk or xdp backend in udp framing");
        return -1;
    }
    int k = em_bcast_fanout(b->link, ipv4, n, b->self, force, err, errlen);
    if (k > 0)
        b->nfan = (uint16_t)k;
    return k;
}

int em_bcast_send(em_bcast_t *b, uint32_t offset, const double *vals, uint32_t count)
{
    if (count == 0 || count > b->max_elems)
        return -EMSGSIZE;
    if (offset > b->ex.vec_len || count > b->ex.vec_len - offset)
        return -ERANGE;
    em_pkt_t *p = em_link_tx_alloc(b->link);
    if (!p) {
        em_link_flush(b->link);
        b->st.send_full++;
        return -EAGAIN;
    }
    em_bc_hdr_t h = { .type = EM_BC_T_F64,
                      .key = b->ex.key,
                      .channel = b->ex.channel,
                      .sender = b->self,
                      .seq = b->tx_seq,
                      .offset = offset,
                      .count = (uint16_t)count };
    em_bc_encode_hdr(&h, p->data);
    for (uint32_t i = 0; i < count; i++)
        em_bc_put_f64(p->data + EM_BC_HDR_LEN + (size_t)i * EM_BC_ELEM_SIZE, vals[i]);
    p->len = EM_BC_HDR_LEN + count * EM_BC_ELEM_SIZE;
    p->peer = b->nfan ? 1 : b->peer;
    /* fan-out: the same frame to each unicast peer (a copy each) */
    for (uint16_t f = 2; f <= b->nfan; f++) {
        em_pkt_t *q = em_link_tx_alloc(b->link);
        if (!q) {
            b->st.send_full++;
            break;
        }
        memcpy(q->data, p->data, p->len);
        q->len = p->len;
        q->peer = f;
        if (em_link_tx_burst(b->link, &q, 1) != 1) {
            em_link_tx_free(b->link, q);
            b->st.send_full++;
        }
    }
    if (em_link_tx_burst(b->link, &p, 1) != 1) {
        em_link_tx_free(b->link, p);
        b->st.send_full++;
        return -EAGAIN;
    }
    em_link_flush(b->link);
    b->tx_seq++; /* numbers only frames on the wire: a receiver's gaps are wire losses */
    b->st.sent++;
    return 0;
}

static void deliver(em_bcast_t *b, const em_pkt_t *p, em_bcast_rx_fn cb, void *arg, unsigned *n)
{
    em_bc_hdr_t h;
    int r = em_bc_decode(p->data, p->len, &b->ex, &h);
    if (r != EM_BC_OK) {
        b->st.rejected++;
        b->st.rejected_by[r]++;
        b->st.dropped++;
        return;
    }
    if (h.count > b->max_elems) {
        /* a valid frame longer than this channel's frames (cfg.mtu below
         * the link's): it would overrun vals[max_elems]; counted as a
         * length mismatch, the sender uses a larger frame size than we do */
        b->st.rejected++;
        b->st.rejected_by[EM_BC_ELEN]++;
        b->st.dropped++;
        return;
    }
    if (h.sender == b->self) { /* our own broadcast, looped back by the kernel */
        b->st.own++;
        return;
    }
    int32_t d = em_seq_diff(h.seq, b->next_seq[h.sender]);
    if (d > 0) {
        b->st.gaps += (uint64_t)d;
        b->st.dropped += (uint64_t)d;
    }
    if (d >= 0)
        b->next_seq[h.sender] = h.seq + 1;
    else
        b->st.late++; /* still delivered: another part of the vector */
    const uint8_t *e = p->data + EM_BC_HDR_LEN;
    for (uint32_t i = 0; i < h.count; i++)
        b->vals[i] = em_bc_get_f64(e + (size_t)i * EM_BC_ELEM_SIZE);
    b->st.received++;
    b->st.elements += h.count;
    (*n)++;
    if (cb)
        cb(arg, h.sender, h.offset, h.count, b->vals);
}

unsigned em_bcast_poll(em_bcast_t *b, em_bcast_rx_fn cb, void *arg, unsigned max_frames)
{
    em_pkt_t *pk[RX_BURST];
    unsigned delivered = 0, seen = 0;
    for (;;) {
        unsigned want = RX_BURST;
        if (max_frames && max_frames - seen < want)
            want = max_frames - seen;
        if (want == 0)
            break;
        unsigned got = em_link_rx_burst(b->link, pk, want);
        for (unsigned i = 0; i < got; i++)
            deliver(b, pk[i], cb, arg, &delivered);
        em_link_rx_release(b->link, pk, got);
        seen += got;
        if (got < want)
            break;
    }
    return delivered;
}

void em_bcast_close(em_bcast_t *b)
{
    if (!b)
        return;
    em_link_close(b->link);
    free(b->next_seq);
    free(b->vals);
    free(b);
}
