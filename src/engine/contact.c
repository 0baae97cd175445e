/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file contact.c
 * First contact in the engine (contact.h): proto/conn.h's table over the
 * link's tx_to / rx_from, its peers the engine's peers.
 *
 * Re-entrancy: the table's callbacks (emit, established, failed,
 * may_replace, admit) run inside em_conn_rx() and em_conn_poll(), which this file
 * calls from em_engine_progress() at its top level, outside every protocol
 * call: so established() and failed() may reset, set or fail a protocol
 * peer directly (em_engine_reset_peer() and em_engine_fail_peer() refuse
 * inside progress because the owner's callbacks may run inside the
 * protocol).  The owner's callbacks they cause (completions, peer_failed,
 * contact) may send: the gate below then answers from the table's state.
 */
#include "engine/contact.h"
#include "engine/engine_internal.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/hs_wire.h"

struct em_contact {
    em_conn_t *conn;
    uint32_t orphan;   /* a stranger established with no room (UINT32_MAX: none) */
    uint64_t quiet_ns; /* may_replace: unheard this long */
    uint64_t next;     /* the table's next deadline (UINT64_MAX: none) */
    unsigned emitted;  /* frames handed to tx_to since the last flush */
};

/* ------------------------------------------------------------- growth -- */

/* Room for peer @p idx: the engine's arrays, the protocol's table and the
 * owner's (ops.grow), doubling, up to EM_CONN_SLOTS_MAX.  Outside every
 * protocol call only (contact.h "Sizing"): from the owner's insert, or
 * from a handshake callback at progress's top level.  On failure the
 * engine keeps its size (the arrays and the protocol may be larger; no
 * number at or above npeers is handed out, so that costs only bytes). */
static int contact_grow(em_engine_t *e, uint32_t idx)
{
    if (idx < e->npeers)
        return 0;
    if (!e->ops.grow || idx >= EM_CONN_SLOTS_MAX)
        return -EM_ENOMEM;
    uint64_t n = e->npeers;
    while (n <= idx)
        n *= 2;
    if (n > EM_CONN_SLOTS_MAX)
        n = EM_CONN_SLOTS_MAX;
    uint32_t old = e->npeers;
    uint8_t *addr = realloc(e->addr, (size_t)n);
    if (!addr)
        return -EM_ENOMEM;
    e->addr = addr;
    memset(addr + old, ADDR_UNKNOWN, (size_t)n - old);
    uint8_t *ready = realloc(e->ready, (size_t)n);
    if (!ready)
        return -EM_ENOMEM;
    e->ready = ready;
    memset(ready + old, 0, (size_t)n - old);
    if (em_proto_npeers(e->proto) < n && em_proto_grow(e->proto, (uint32_t)n) != 0)
        return -EM_ENOMEM;
    if (e->ops.grow(e->uctx, (uint32_t)n) != 0)
        return -EM_ENOMEM;
    e->npeers = (uint32_t)n;
    return 0;
}

/* ------------------------------------------------- the table's callbacks -- */

static void c_emit(void *u, const uint8_t *a, uint8_t alen, const void *f, size_t len)
{
    em_engine_t *e = u;
    em_link_t *l = e->link;
    if (len > l->mtu) {
        e->st.hs_tx_failed++;
        return;
    }
    em_pkt_t *pkt = em_link_tx_alloc(l);
    if (!pkt) {
        em_engine_flush_tx(e);
        pkt = em_link_tx_alloc(l);
    }
    if (!pkt) {
        e->st.hs_tx_failed++; /* lost, as on a wire: the handshake retries */
        return;
    }
    memcpy(pkt->data, f, len);
    pkt->len = (uint32_t)len;
    pkt->ext = NULL;
    pkt->ext_len = 0;
    pkt->cls = EM_PKT_CTRL;
    pkt->peer = EM_LINK_PEER_UNKNOWN;
    em_link_addr_t to = { .len = alen };
    memcpy(to.bytes, a, alen);
    if (l->ops->tx_to(l, pkt, &to) != 0) {
        em_link_tx_free(l, pkt);
        e->st.hs_tx_failed++;
        return;
    }
    e->contact->emitted++;
}

/* @p peer's protocol state from before (a rebind: the peer removed us and
 * came back, or a restart) ends: operations canceled, receive state freed */
static void c_forget(em_engine_t *e, uint32_t peer, int status)
{
    e->ready[peer] = 0;
    em_proto_reset_peer(e->proto, peer); /* completes its ops with -EM_ECANCELED */
    if (e->rma)
        em_rma_peer_end(e, peer, status);
}

static void c_established(void *u, uint32_t index, bool again)
{
    em_engine_t *e = u;
    uint32_t peer = index;
    em_conn_peer_t cp;
    em_conn_name_t nm;
    /* a stranger beyond the table: it grows now (em_conn_rx runs at
     * progress's top level, outside every protocol call); without memory
     * the stranger is forgotten once em_conn_rx returns */
    if (peer >= e->npeers && contact_grow(e, peer) != 0) {
        e->contact->orphan = peer;
        return;
    }
    if (em_conn_peer(e->contact->conn, index, &cp) != 0 ||
        em_conn_name(e->contact->conn, index, &nm) != 0)
        return;
    uint64_t key;
    uint32_t tx_isn, rx_isn;
    if (em_proto_peer_params(e->proto, peer, &key, &tx_isn, &rx_isn) == 0 ||
        em_proto_peer_failed(e->proto, peer))
        c_forget(e, peer, -EM_ECANCELED);
    em_link_addr_t a = { .len = nm.addr_len };
    memcpy(a.bytes, nm.addr, nm.addr_len);
    if (em_link_set_peer(e->link, peer, &a) != 0) {
        em_proto_fail_peer(e->proto, peer, "the link refused the address its handshake proved");
        return;
    }
    e->addr[peer] = ADDR_SET;
    if (em_proto_set_peer(e->proto, peer, cp.tx_token ^ cp.rx_token, cp.tx_isn, cp.rx_isn) != 0 ||
        em_proto_set_peer_index(e->proto, peer, cp.remote_index) != 0) {
        em_proto_fail_peer(e->proto, peer, "its handshake's parameters could not be set");
        return;
    }
    (void)em_engine_sync_flow(e, peer);
    e->ready[peer] = 1;
    (void)em_proto_release_peer(e->proto, peer, e->now); /* what waited for it leaves */
    if (e->ops.contact)
        e->ops.contact(e->uctx, peer, again);
}

static void c_failed(void *u, uint32_t index, const char *why)
{
    em_engine_t *e = u;
    if (index >= e->npeers)
        return;
    e->ready[index] = 0;
    em_proto_fail_peer(e->proto, index, why); /* once; ops end with -EM_EPEERFAIL */
}

static bool c_may_replace(void *u, uint32_t index)
{
    em_engine_t *e = u;
    uint64_t heard = em_proto_heard_at(e->proto, index);
    return heard == 0 || e->now - heard >= e->contact->quiet_ns;
}

static bool c_admit(void *u, const em_conn_name_t *name)
{
    em_engine_t *e = u;
    return !e->ops.admit || e->ops.admit(e->uctx, name);
}

static uint64_t c_rand64(void *u)
{
    (void)u;
    uint64_t v;
    randombytes_buf(&v, sizeof v);
    return v;
}

/* a partial name (conn.h ops.extends): the link judges its addresses */
static bool c_extends(void *u, const uint8_t *part, uint8_t plen, const uint8_t *full, uint8_t flen)
{
    em_engine_t *e = u;
    if (!e->link->ops->covers)
        return false;
    em_link_addr_t p = { .len = plen }, f = { .len = flen };
    memcpy(p.bytes, part, plen);
    memcpy(f.bytes, full, flen);
    return e->link->ops->covers(e->link, &p, &f);
}

static const em_conn_ops_t contact_conn_ops = {
    .extends = c_extends,
    .emit = c_emit,
    .established = c_established,
    .failed = c_failed,
    .rand64 = c_rand64,
    .may_replace = c_may_replace,
    .admit = c_admit,
};

/* ------------------------------------------------------------ engine.c -- */

void em_contact_rx(em_engine_t *e, const em_pkt_t *pkt, uint64_t now)
{
    em_hs_t h;
    if (em_hs_decode(pkt->data, pkt->len, &h) == EM_HS_DEC_OK) {
        em_link_addr_t from = { .len = h.addr_len };
        memcpy(from.bytes, h.addr, h.addr_len);
        if (!e->link->ops->rx_from(e->link, pkt, &from)) {
            e->st.hs_bad_source++;
            return;
        }
    } /* else the table's decoder refuses it again, and counts why */
    struct em_contact *c = e->contact;
    (void)em_conn_rx(c->conn, pkt->data, pkt->len, now);
    if (c->orphan != UINT32_MAX) { /* no room for a stranger (c_established) */
        (void)em_conn_remove(c->conn, c->orphan);
        c->orphan = UINT32_MAX;
        e->st.hs_no_memory++;
    }
}

/* push out the handshake frames handed to tx_to (links may hold them) */
static void flush_emitted(em_engine_t *e)
{
    if (e->contact->emitted) {
        e->contact->emitted = 0;
        em_link_flush(e->link);
    }
}

void em_contact_poll(em_engine_t *e, uint64_t now)
{
    e->contact->next = em_conn_poll(e->contact->conn, now);
    flush_emitted(e);
}

uint64_t em_contact_deadline(const em_engine_t *e) { return e->contact->next; }

void em_contact_early(em_engine_t *e, uint32_t peer)
{
    struct em_contact *c = e->contact;
    em_conn_st_t st = em_conn_state(c->conn, peer);
    if (e->ready[peer] || (st != EM_CONN_INIT_SENT && st != EM_CONN_CONFIRM_SENT))
        return;
    e->st.hs_early++;
    if (em_conn_hurry(c->conn, peer, e->now))
        c->emitted++; /* flushed at the end of this progress call */
}

int em_contact_gate_slow(em_engine_t *e, uint32_t peer)
{
    struct em_contact *c = e->contact;
    switch (em_conn_state(c->conn, peer)) {
    case EM_CONN_FREE: return -EM_EINVAL;
    case EM_CONN_FAILED: return -EM_EPEERFAIL;
    case EM_CONN_KNOWN:
        (void)em_conn_connect(c->conn, peer, em_now_ns());
        c->next = 0; /* its retransmission is due on the next progress */
        flush_emitted(e);
        return em_proto_hold_peer(e->proto, peer); /* the operation waits in its queue */
    case EM_CONN_INIT_SENT:
    case EM_CONN_CONFIRM_SENT: return em_proto_hold_peer(e->proto, peer);
    default: /* established: its keys are being set anew (a rebind), or could not be */
        return em_proto_peer_failed(e->proto, peer) ? -EM_EPEERFAIL : -EM_EAGAIN;
    }
}

void em_contact_destroy(em_engine_t *e)
{
    if (!e->contact)
        return;
    em_conn_destroy(e->contact->conn);
    free(e->ready);
    free(e->contact);
    e->contact = NULL;
    e->ready = NULL;
}

/* ---------------------------------------------------------------- API -- */

/* INIT/CONFIRM sends (back-off from hs_rto_ns, capped at hs_rto_max_ns)
 * that span @p silence_ns: a peer slow to start (still in its launcher's
 * start-up, or not progressing while it computes) is given as long by
 * its handshake as the protocol gives a silent peer before it fails it,
 * never less than the table's own default (em_conn_cfg_default) */
static uint32_t tries_for(const em_conn_cfg_t *cc, uint64_t silence_ns)
{
    uint64_t spent = 0, rto = cc->hs_rto_ns;
    uint32_t tries = 1;
    while (spent < silence_ns && tries < 100000) {
        spent += rto;
        rto = rto * 2 > cc->hs_rto_max_ns ? cc->hs_rto_max_ns : rto * 2;
        tries++;
    }
    return tries > cc->hs_tries ? tries : cc->hs_tries;
}

int em_engine_contact_open(em_engine_t *e, const em_engine_contact_cfg_t *cfg)
{
    if (e->contact || !em_link_has_contact(e->link) || e->self != EM_PROTO_SELF_OUTSIDE ||
        e->link->local.len == 0 || e->link->local.len > EM_CONN_ADDR_MAX)
        return -EM_EINVAL;
    for (uint32_t i = 0; i < e->npeers; i++)
        if (e->addr[i] == ADDR_SET)
            return -EM_EINVAL;
    em_conn_cfg_t cc;
    em_conn_cfg_default(&cc);
    cc.addr_len = e->link->local.len;
    memcpy(cc.addr, e->link->local.bytes, cc.addr_len);
    cc.ep = cfg->ep;
    cc.nonce = cfg->nonce;
    memcpy(cc.secret, cfg->secret, sizeof cc.secret);
    /* an owner that grows with the engine: the table's limit; else as created */
    cc.max_peers = e->ops.grow || e->npeers > EM_CONN_SLOTS_MAX ? EM_CONN_SLOTS_MAX : e->npeers;
    cc.accept_strangers = cfg->accept_strangers;
    cc.max_strangers = cfg->stranger_max;
    cc.no_generation = true; /* the engine's peer number is the slot */
    cc.ep_max = cfg->ep_max;
    cc.hs_tries = tries_for(&cc, e->silence_ns);
    struct em_contact *c = calloc(1, sizeof *c);
    if (!c)
        return -EM_ENOMEM;
    e->ready = calloc(e->npeers, 1);
    c->quiet_ns = (uint64_t)(cfg->quiet_ms ? cfg->quiet_ms : 1000) * 1000000u;
    c->next = UINT64_MAX;
    c->orphan = UINT32_MAX;
    e->contact = c; /* the table's callbacks find it */
    c->conn = e->ready ? em_conn_create(&cc, &contact_conn_ops, e) : NULL;
    if (!c->conn) {
        int rc = e->ready ? -EM_EINVAL : -EM_ENOMEM;
        em_contact_destroy(e);
        return rc;
    }
    return 0;
}

bool em_engine_contact_on(const em_engine_t *e) { return e->contact != NULL; }

bool em_engine_contact_ready(const em_engine_t *e, uint32_t peer)
{
    return !e->ready || (peer < e->npeers && e->ready[peer]);
}

int em_engine_contact_insert(em_engine_t *e, const em_conn_name_t *name, uint32_t *peer)
{
    if (!e->contact)
        return -EM_EINVAL;
    uint32_t idx;
    int rc = em_conn_insert(e->contact->conn, name, &idx);
    if (rc != 0)
        return rc;
    /* beyond the table: it grows, only from the owner's own call (a
     * callback may run inside the protocol, whose table would move) */
    if (idx >= e->npeers && (e->in_progress || contact_grow(e, idx) != 0)) {
        em_conn_remove(e->contact->conn, idx);
        return e->in_progress ? -EM_EAGAIN : -EM_ENOMEM;
    }
    if (e->addr[idx] != ADDR_SET) {
        em_link_addr_t a = { .len = name->addr_len };
        memcpy(a.bytes, name->addr, name->addr_len);
        if (em_link_set_peer(e->link, idx, &a) != 0) {
            em_conn_remove(e->contact->conn, idx);
            return -EM_EINVAL;
        }
        e->addr[idx] = ADDR_SET;
    }
    *peer = idx;
    return 0;
}

int em_engine_contact_connect(em_engine_t *e, uint32_t peer)
{
    if (!e->contact)
        return -EM_EINVAL;
    int rc = em_contact_gate(e, peer);
    return rc == -EM_EAGAIN ? 0 : rc;
}

int em_engine_contact_remove(em_engine_t *e, uint32_t peer)
{
    if (!e->contact || e->in_progress || peer >= e->npeers ||
        em_conn_state(e->contact->conn, peer) == EM_CONN_FREE)
        return -EM_EINVAL;
    /* out of the table first: a completion that sends to it again (from
     * the reset below) finds no such peer (-EM_EINVAL), never queues on a
     * slot about to name another */
    int rc = em_conn_remove(e->contact->conn, peer);
    if (rc != 0)
        return rc;
    e->ready[peer] = 0;
    return em_engine_reset_peer(e, peer);
}

int em_engine_contact_name(const em_engine_t *e, uint32_t peer, em_conn_name_t *out)
{
    return e->contact ? em_conn_name(e->contact->conn, peer, out) : -EM_EINVAL;
}

em_conn_st_t em_engine_contact_state(const em_engine_t *e, uint32_t peer)
{
    return e->contact ? em_conn_state(e->contact->conn, peer) : EM_CONN_FREE;
}

const em_conn_stats_t *em_engine_contact_stats(const em_engine_t *e)
{
    return e->contact ? em_conn_stats(e->contact->conn) : NULL;
}

size_t em_engine_contact_mem(const em_engine_t *e)
{
    return e->contact ? em_conn_mem(e->contact->conn) + e->npeers : 0;
}

int em_engine_contact_stats_format(const em_engine_t *e, char *buf, size_t len)
{
    if (!e->contact)
        return snprintf(buf, len, "first contact off");
    int n = em_conn_stats_format(e->contact->conn, buf, len);
    if (n < 0 || (size_t)n >= len)
        return n;
    return n + snprintf(buf + n, len - (size_t)n,
                        " hs_bad_source %llu hs_tx_failed %llu hs_early %llu hs_no_memory %llu",
                        (unsigned long long)e->st.hs_bad_source,
                        (unsigned long long)e->st.hs_tx_failed, (unsigned long long)e->st.hs_early,
                        (unsigned long long)e->st.hs_no_memory);
}
