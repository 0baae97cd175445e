/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file emd_peer.c
 * emd's peers (emd_core.h): the node table (the node ids it sends to, LRU
 * beyond --max-nodes) and the memif hello that checks the other end's
 * queue layout.
 */
#include "daemon/emd_core_int.h"

#include <string.h>

int emd_core_node(emd_core_t *c, const uint8_t mac[6], uint32_t uid)
{
    int lru = -1, own_lru = -1;
    unsigned owned = 0; /* entries @p uid's sends made */
    if (c->unreach_ns && memcmp(mac, c->unreach_id, 6) == 0 &&
        c->now_ns - c->unreach_ns < EMD_NODE_AGE_NS) {
        c->nodes_unreachable++;
        return -1;
    }
    for (unsigned i = 0; i < c->nnodes; i++) {
        struct emd_node *n = &c->nodes[i];
        if (memcmp(n->mac, mac, 6) == 0) {
            n->last_ns = c->now_ns;
            return (int)i;
        }
        if (lru < 0 || n->last_ns < c->nodes[lru].last_ns)
            lru = (int)i;
        if (n->uid == uid) {
            owned++;
            if (own_lru < 0 || n->last_ns < c->nodes[own_lru].last_ns)
                own_lru = (int)i;
        }
    }
    unsigned slot;
    if (uid != EMD_UID_DAEMON && c->max_nodes_per_uid < c->max_nodes &&
        owned >= c->max_nodes_per_uid) {
        /* one user naming ever new nodes keeps at most its share, the rest
         * of the table stays for the others: it may only reuse its own
         * entries once they aged */
        if (own_lru < 0 || c->now_ns - c->nodes[own_lru].last_ns < EMD_NODE_AGE_NS) {
            c->nodes_uid_full++;
            return -1;
        }
        slot = (unsigned)own_lru;
        c->nodes_evicted++;
    } else if (c->nnodes < c->max_nodes) {
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
    if (c->framing == EMD_FRAMING_UDP) {
        a.len = 14; /* link_dpdk.h: EM_DPDK_ADDR_UDP */
        memset(a.bytes, 0xff, 6);
        memcpy(a.bytes + 8, mac, 6); /* IPv4 + port, big-endian */
    } else {
        memcpy(a.bytes, mac, 6);
    }
    if (em_link_set_peer(c->link, (uint16_t)slot, &a) != 0) {
        memcpy(c->unreach_id, mac, 6);
        c->unreach_ns = c->now_ns ? c->now_ns : 1;
        c->nodes_unreachable++;
        return -1;
    }
    memcpy(c->nodes[slot].mac, mac, 6);
    c->nodes[slot].last_ns = c->now_ns;
    c->nodes[slot].used = 1;
    c->nodes[slot].uid = uid;
    if (slot == c->nnodes)
        c->nnodes++;
    return (int)slot;
}

uint16_t emd_core_queues(const emd_core_t *c) { return emd_bulkq_queues(c->bulk_slots); }

void emd_core_send_hello(emd_core_t *c, uint8_t kind)
{
    static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
    if (c->framing == EMD_FRAMING_UDP)
        return; /* no bulk queues to pair up */
    int ni = emd_core_node(c, bcast, EMD_UID_DAEMON);
    em_pkt_t *p = ni >= 0 ? em_link_tx_alloc(c->link) : NULL;
    if (!p)
        return;
    emd_shim_t to = { .cls = EMD_CLS_CTRL,
                      .len = (uint16_t)sizeof(struct emd_hello),
                      .dst = EMD_EP_CONTROL,
                      .src = 0 };
    memcpy(to.src_mac, c->mac, 6);
    emd_wire_encode(p->data, &to);
    emd_hello_encode(p->data + EMD_WIRE_HDR_LEN, kind, c->bulk_slots, emd_core_queues(c));
    p->len = EMD_WIRE_HDR_LEN + (uint32_t)sizeof(struct emd_hello);
    p->peer = (uint32_t)ni;
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
void emd_handle_hello(emd_core_t *c, const uint8_t *f, uint16_t len, const uint8_t smac[6])
{
    uint8_t kind;
    uint16_t slots, queues;
    if (emd_hello_decode(f, len, &kind, &slots, &queues) != 0) {
        c->hello_bad++;
        c->rx_bad++;
        return;
    }
    if (!c->peer_seen || (c->peer_queues != emd_core_queues(c) && queues == emd_core_queues(c))) {
        /* the first; or a matching one after a mismatching one (a forger
         * that spoke first does not decide for the real other end) */
        c->peer_seen = 1;
        c->peer_slots = slots;
        c->peer_queues = queues;
        memcpy(c->peer_mac, smac, 6);
    } else if (memcmp(smac, c->peer_mac, 6) != 0 || queues != c->peer_queues) {
        c->hello_conflict++; /* changes nothing */
    }
    if (queues != emd_core_queues(c) && !c->mismatch_logged) {
        c->log("error: a daemon on the cable has %u queue pairs (--bulk-slots %u), this one %u "
               "(--bulk-slots %u): their bulk queues do not pair up; restart both with the same "
               "--bulk-slots",
               queues, slots, emd_core_queues(c), c->bulk_slots);
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
