/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file simnet.c
 * Discrete-event driver of protocol endpoints over link_sim (see simnet.h).
 */
#include "sim/simnet.h"

#include <stdlib.h>
#include <string.h>

struct sn_node {
    em_simnet_t *net;
    unsigned idx;
    bool dead;
    em_link_t *link;
    em_proto_t *proto;
};

struct em_simnet {
    em_sim_t *sim;
    em_simnet_cb_t cb;
    void *u;
    unsigned n;
    struct sn_node nodes[];
};

static int sn_emit(void *uctx, uint32_t peer, const void *hdr, size_t hlen, const void *payload,
                   size_t plen)
{
    struct sn_node *nd = uctx;
    em_pkt_t *pkt = em_link_tx_alloc(nd->link);
    if (!pkt)
        return -EM_EAGAIN;
    memcpy(pkt->data, hdr, hlen);
    if (plen)
        memcpy(pkt->data + hlen, payload, plen);
    pkt->len = (uint32_t)(hlen + plen);
    pkt->peer = peer;
    if (em_link_tx_burst(nd->link, &pkt, 1) != 1) {
        em_link_tx_free(nd->link, pkt);
        return -EM_EAGAIN;
    }
    return 0;
}

static void sn_recv(void *uctx, uint32_t peer, uint8_t tag, const void *d, size_t len)
{
    struct sn_node *nd = uctx;
    nd->net->cb.recv(nd->net->u, nd->idx, peer, tag, d, len);
}

static void sn_complete(void *uctx, void *op_ctx, int status)
{
    struct sn_node *nd = uctx;
    nd->net->cb.complete(nd->net->u, nd->idx, op_ctx, status);
}

static int sn_put(void *uctx, uint32_t peer, const em_put_target_t *t, const void *d, size_t len)
{
    struct sn_node *nd = uctx;
    return nd->net->cb.put ? nd->net->cb.put(nd->net->u, nd->idx, peer, t, d, len) : -1;
}

static void sn_failed(void *uctx, uint32_t peer)
{
    struct sn_node *nd = uctx;
    if (nd->net->cb.peer_failed)
        nd->net->cb.peer_failed(nd->net->u, nd->idx, peer);
}

static void *sn_place(void *uctx, uint32_t peer, uint8_t tag, const void *head, size_t head_len,
                      size_t msg_len, size_t *skip, void **ctx)
{
    struct sn_node *nd = uctx;
    return nd->net->cb.place ? nd->net->cb.place(nd->net->u, nd->idx, peer, tag, head, head_len,
                                                 msg_len, skip, ctx)
                             : NULL;
}

static void sn_place_end(void *uctx, uint32_t peer, void *ctx, int status)
{
    struct sn_node *nd = uctx;
    nd->net->cb.place_end(nd->net->u, nd->idx, peer, ctx, status);
}

static const em_proto_ops_t sn_ops = {
    .emit = sn_emit,
    .recv = sn_recv,
    .put = sn_put,
    .complete = sn_complete,
    .peer_failed = sn_failed,
    .place = sn_place,
    .place_end = sn_place_end,
};

em_simnet_t *em_simnet_create(unsigned nodes, const em_proto_cfg_t *pcfg, const em_sim_cfg_t *scfg,
                              const em_simnet_cb_t *cb, void *u)
{
    em_simnet_t *n = calloc(1, sizeof *n + nodes * sizeof(struct sn_node));
    if (!n)
        return NULL;
    n->sim = em_sim_create(nodes, scfg);
    if (!n->sim) {
        free(n);
        return NULL;
    }
    n->cb = *cb;
    n->u = u;
    n->n = nodes;
    for (unsigned i = 0; i < nodes; i++) {
        struct sn_node *nd = &n->nodes[i];
        em_proto_cfg_t c = *pcfg;
        int err;
        c.self = (uint32_t)i;
        c.npeers = (uint32_t)nodes;
        c.frame_max = scfg->mtu;
        nd->net = n;
        nd->idx = i;
        nd->link = em_sim_link(n->sim, i);
        nd->proto = em_proto_create(&c, &sn_ops, nd, &err);
        if (!nd->proto) {
            em_simnet_destroy(n);
            return NULL;
        }
        for (unsigned j = 0; j < nodes; j++) {
            em_link_addr_t a = { .len = 1, .bytes = { (uint8_t)j } };
            em_link_set_peer(nd->link, (uint32_t)j, &a);
        }
    }
    return n;
}

void em_simnet_destroy(em_simnet_t *n)
{
    if (!n)
        return;
    for (unsigned i = 0; i < n->n; i++)
        em_proto_destroy(n->nodes[i].proto);
    em_sim_destroy(n->sim);
    free(n);
}

em_proto_t *em_simnet_proto(em_simnet_t *n, unsigned node) { return n->nodes[node].proto; }
em_sim_t *em_simnet_sim(em_simnet_t *n) { return n->sim; }
uint64_t em_simnet_now(const em_simnet_t *n) { return em_sim_now(n->sim); }

void em_simnet_kill(em_simnet_t *n, unsigned node)
{
    n->nodes[node].dead = true;
    em_sim_set_dead(n->sim, node, true);
}

bool em_simnet_step(em_simnet_t *n, uint64_t limit)
{
    uint64_t t = em_sim_next_arrival(n->sim);
    for (unsigned i = 0; i < n->n; i++) {
        if (n->nodes[i].dead)
            continue;
        uint64_t d = em_proto_next_deadline(n->nodes[i].proto);
        if (d < t)
            t = d;
    }
    if (t == UINT64_MAX || t > limit)
        return false;
    if (t > em_sim_now(n->sim))
        em_sim_set_now(n->sim, t);
    uint64_t now = em_sim_now(n->sim);

    for (unsigned i = 0; i < n->n; i++) {
        struct sn_node *nd = &n->nodes[i];
        em_pkt_t *pk[32];
        unsigned k;
        if (nd->dead)
            continue;
        while ((k = em_link_rx_burst(nd->link, pk, 32)) > 0) {
            for (unsigned j = 0; j < k; j++)
                em_proto_rx(nd->proto, pk[j]->data, pk[j]->len, now);
            em_link_rx_release(nd->link, pk, k);
        }
        em_proto_poll(nd->proto, now);
    }
    return true;
}

bool em_simnet_run(em_simnet_t *n, bool (*done)(void *u), void *u, uint64_t limit)
{
    while (!done(u)) {
        if (!em_simnet_step(n, limit))
            return done(u);
    }
    return true;
}
