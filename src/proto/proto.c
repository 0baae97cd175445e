/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file proto.c
 * Protocol instance: configuration, the receive entry point (validation
 * and dispatch), timers, peer failure, teardown.
 */
#include "proto/proto_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void em_proto_cfg_default(em_proto_cfg_t *cfg)
{
    /* Defaults and the measurements behind them: docs/design.md §Defaults. */
    *cfg = (em_proto_cfg_t){
        .job_key = 0,
        .self = 0,
        .npeers = 2,
        .frame_max = 1500,
        .window = 32,
        .recovery = EM_RECOVERY_SR,
        .rto_ns = 1000000,           /* 1 ms until the first RTT sample */
        .rto_min_ns = 200000,        /* 200 us */
        .rto_max_ns = 1000000000,    /* 1 s */
        .max_retries = 70,           /* ~61 s of silence before a peer is declared failed */
        .resend_after_ns = 10000000, /* 10 ms: longer than a process is descheduled (design.md) */
        .ack_delay_ns = 20000,       /* 20 us */
        .isn = 0,
        .peers_need_set = 0,
        .bind_source = 0,
        .max_msg = 0,             /* em_proto_max_msg() */
        .rx_mem_max = 256u << 20, /* 256 MiB of reassembly + out-of-order buffers */
        /* congestion control: docs/design.md "Congestion control".  Loss,
         * not delay: on real links and loaded hosts a process's scheduling
         * gaps read as queueing delay and throttle the delay mode; it stays
         * the simulator's best (tests and proto_sim ask for it by name).
         * Every front end takes this default (src/transport/settings.c). */
        .cc = EM_CC_LOSS,
        .cc_target_ns = 10000,
        .cc_fs_range_ns = 40000,
        .cc_init_frames = 8,
        .cc_pace_burst = 8,
        .cc_pace_gain_pct = 125,
        .cc_pace_slack_ns = 10000, /* as Linux fq's timer_slack: docs/design.md "Pacing slack" */
        .cc_beta_pct = 80,
        .cc_max_md_pct = 50,
        .cc_loss_gain_pct = 100,
        .cc_loss_qdelay_pct = 50,
        .cc_adapt_target = 0,
        .live_idle_ns = 1000000000, /* = rto_max_ns: a watched peer fails within a sender's bound */
        /* 2 s = 2 x rto_max_ns: a peer that talks again within a few
         * seconds (an application's compute phase between exchanges)
         * keeps its window and congestion state; one quiet longer than
         * its longest retransmit back-off is idle by any measure
         * (docs/design.md "Memory per peer") */
        .peer_idle_ns = 2000000000,
    };
}

uint16_t em_proto_window_for(uint32_t kib, uint32_t frame_max)
{
    uint64_t frames = frame_max ? ((uint64_t)kib * 1024 + frame_max - 1) / frame_max : 64;
    if (frames < 64)
        frames = 64;
    if (frames > EM_WINDOW_MAX)
        frames = EM_WINDOW_MAX;
    return (uint16_t)frames;
}

const char *em_strerror(int err)
{
    switch (err < 0 ? -err : err) {
    // clang-format off: one aligned table of messages
    case EM_OK: return "success";
    case EM_EINVAL: return "invalid argument";
    case EM_EPEERFAIL: return "peer failed (no answer within the retry limit)";
    case EM_ENOMEM: return "out of memory";
    case EM_EAGAIN: return "resource temporarily unavailable";
    case EM_ECANCELED: return "operation canceled";
    case EM_EACCES: return "remote access error (the peer refused the put: region, key or bounds)";
    case EM_EADDRINUSE: return "address in use (another socket receives on the port)";
    default:
        return "unknown error";
        // clang-format on
    }
}

/* A peer as the instance starts it (and em_proto_reset_peer() again):
 * nothing sent or taken, the configuration's key and ISN, unset when the
 * owner sets its peers (cfg.peers_need_set); no active part (act.c). */
static void peer_init(struct em_proto *p, struct em_peer *pe)
{
    const em_proto_cfg_t *cfg = &p->cfg;
    uint8_t in_poll = pe->in_poll; /* a reset peer keeps its one place in the poll set */
    memset(pe, 0, sizeof *pe);
    pe->in_poll = in_poll;
    pe->set = !cfg->peers_need_set;
    pe->key = cfg->job_key;
    /* until the owner says otherwise (em_proto_set_peer_index), a peer
     * calls us what we call ourselves: tables numbered alike on both sides
     * (the tests; ranks) need no call */
    pe->remote_index = cfg->self;
    pe->tx_isn = pe->rx_isn = cfg->isn;
    pe->snd_una = pe->snd_nxt = pe->rcv_nxt = cfg->isn;
    pe->rto_base = cfg->rto_ns;
    pe->ack_deadline = EM_NEVER;
    pe->live_deadline = EM_NEVER;
}

em_proto_t *em_proto_create(const em_proto_cfg_t *cfg, const em_proto_ops_t *ops, void *uctx,
                            int *err)
{
    *err = EM_EINVAL;
    if (!cfg || !ops || !ops->emit || !ops->recv || !ops->complete)
        return NULL;
    /* self is one of the table's entries, or above every entry it can
     * have (a table of peers only, which may grow: em_proto_grow) */
    if (cfg->npeers == 0 ||
        (cfg->self == EM_PROTO_SELF_OUTSIDE ? cfg->npeers > cfg->self : cfg->self >= cfg->npeers))
        return NULL;
    if (cfg->window < 1 || cfg->window > EM_WINDOW_MAX)
        return NULL;
    /* a PUT frame must carry at least one byte, and lengths fit 16 bits */
    if (cfg->frame_max < EM_HDR_LEN + EM_PUT_EXT_LEN + 1 || cfg->frame_max > 65535 + EM_HDR_LEN)
        return NULL;
    if (cfg->recovery != EM_RECOVERY_SR && cfg->recovery != EM_RECOVERY_GBN)
        return NULL;
    if (cfg->rto_min_ns == 0 || cfg->rto_ns < cfg->rto_min_ns || cfg->rto_max_ns < cfg->rto_ns)
        return NULL;
    if (!em_cc_cfg_ok(cfg))
        return NULL;

    *err = EM_ENOMEM;
    struct em_proto *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->peers = calloc(cfg->npeers, sizeof *p->peers);
    p->poll = malloc((size_t)cfg->npeers * sizeof *p->poll); /* 4 bytes per peer */
    if (!p->peers || !p->poll) {
        free(p->peers);
        free(p->poll);
        free(p);
        return NULL;
    }
    p->cfg = *cfg;
    /* link_acks (the daemon acknowledges data for its ranks) keeps the
     * liveness watch: a probe still reaches the peer's process, or dies
     * with it at its daemon (a detached endpoint), so a peer that is only
     * waited for is failed within the bound in daemon mode too (live.c) */
    p->ops = *ops;
    p->uctx = uctx;
    p->data_payload = cfg->frame_max - EM_HDR_LEN;
    p->put_payload = cfg->frame_max - EM_HDR_LEN - EM_PUT_EXT_LEN;
    p->ack_every = cfg->window / 2 ? cfg->window / 2 : 1;
    p->ring = 1;
    while (p->ring < cfg->window)
        p->ring *= 2;
    em_cc_init(&p->cc0, cfg);
    p->next_deadline = EM_NEVER;
    p->sweep_at = EM_NEVER;
    p->max_msg = cfg->max_msg && cfg->max_msg < em_proto_max_msg(p) ? cfg->max_msg
                                                                    : (uint32_t)em_proto_max_msg(p);
    for (uint32_t i = 0; i < cfg->npeers; i++)
        peer_init(p, &p->peers[i]);
    *err = EM_OK;
    return p;
}

int em_proto_grow(em_proto_t *p, uint32_t npeers)
{
    uint32_t old = p->cfg.npeers;
    if (npeers <= old || (p->cfg.self >= old && npeers > p->cfg.self))
        return -EM_EINVAL;
    /* the poll set first: a table larger than its poll set's room could
     * overflow it (em_poll_add_slow never checks); the other way round, a
     * larger poll set than table costs only bytes */
    uint32_t *poll = realloc(p->poll, (size_t)npeers * sizeof *poll);
    if (!poll)
        return -EM_ENOMEM;
    p->poll = poll;
    struct em_peer *peers = realloc(p->peers, (size_t)npeers * sizeof *peers);
    if (!peers)
        return -EM_ENOMEM;
    /* peers are named by number everywhere (poll set, callbacks, the
     * caller's tables); no em_peer pointer outlives a call, so the move is
     * safe between calls */
    p->peers = peers;
    memset(peers + old, 0, (size_t)(npeers - old) * sizeof *peers);
    p->cfg.npeers = npeers;
    for (uint32_t i = old; i < npeers; i++)
        peer_init(p, &peers[i]);
    return EM_OK;
}

uint32_t em_proto_npeers(const em_proto_t *p) { return p->cfg.npeers; }

/** Take every op off @p pe and complete it with @p status. */
static void abort_ops(struct em_proto *p, struct em_peer *pe, int status)
{
    em_proto_op_t *op = pe->q_head;
    struct em_peer_act *a = pe->a;

    pe->q_head = pe->q_tail = pe->q_send = NULL;
    pe->snd_una = pe->snd_nxt;
    if (a) {
        memset(a->tx, 0, (size_t)p->ring * sizeof *a->tx);
        a->rto_deadline = EM_NEVER;
        a->pace_at = EM_NEVER;
        a->tx_blocked = 0;
        em_cc_flush(&a->cc);
    }
    while (op) {
        em_proto_op_t *next = op->next;
        p->ops.complete(p->uctx, op->ctx, status);
        op = next;
    }
}

void em_fail_peer(struct em_proto *p, uint32_t peer)
{
    struct em_peer *pe = &p->peers[peer];

    if (pe->state == EM_PEER_FAILED)
        return;
    pe->state = EM_PEER_FAILED;
    if (!pe->fail_reason)
        pe->fail_reason = "no answer within the retry limit";
    pe->ack_deadline = EM_NEVER;
    pe->nack_owed = 0;
    pe->watchers = 0; /* nothing will come: em_proto_unwatch() is a no-op now */
    pe->live_deadline = EM_NEVER;
    p->st.peer_failures++;
    em_rx_free(p, pe);
    abort_ops(p, pe, -EM_EPEERFAIL);
    /* nothing will move toward it again: its active part goes now (every
     * caller returns without touching it after a failure) */
    if (pe->a) {
        em_peer_act_put(p, pe);
        p->st.peer_releases++;
    }
    if (p->ops.peer_failed)
        p->ops.peer_failed(p->uctx, peer);
}

/* Fail @p peer for @p why, counted in *@p counter (of peer_failures); once. */
static void fail_for(struct em_proto *p, uint32_t peer, const char *why, uint64_t *counter)
{
    struct em_peer *pe = &p->peers[peer];
    if (pe->state == EM_PEER_FAILED)
        return;
    pe->fail_reason = why;
    (*counter)++;
    em_fail_peer(p, peer);
}

void em_fail_acked(struct em_proto *p, uint32_t peer, const char *why)
{
    fail_for(p, peer, why, &p->st.fail_refused_acked);
}

int em_proto_fail_peer(em_proto_t *p, uint32_t peer, const char *why)
{
    if (peer >= p->cfg.npeers || peer == p->cfg.self || !why)
        return -EM_EINVAL;
    fail_for(p, peer, why, &p->st.fail_by_owner);
    return 0;
}

int em_proto_reset_peer(em_proto_t *p, uint32_t peer)
{
    if (peer >= p->cfg.npeers || peer == p->cfg.self)
        return -EM_EINVAL;
    struct em_peer *pe = &p->peers[peer];
    em_proto_op_t *op = pe->q_head;
    /* a message cut short in its owner's buffer ends first (place_end),
     * then the state goes back to the start, and only then do the
     * operations complete: a completion callback that sends to the peer
     * again finds it unset (-EM_EINVAL), never half reset */
    em_rx_free(p, pe);
    em_peer_act_put(p, pe);
    peer_init(p, pe);
    p->st.peer_resets++;
    while (op) {
        em_proto_op_t *next = op->next;
        p->ops.complete(p->uctx, op->ctx, -EM_ECANCELED);
        op = next;
    }
    return 0;
}

uint64_t em_proto_heard_at(const em_proto_t *p, uint32_t peer)
{
    return peer < p->cfg.npeers ? p->peers[peer].heard_at : 0;
}

const char *em_proto_fail_reason(const em_proto_t *p, uint32_t peer)
{
    if (peer >= p->cfg.npeers || p->peers[peer].state != EM_PEER_FAILED)
        return NULL;
    return p->peers[peer].fail_reason;
}

int em_proto_flow(const em_proto_t *p, uint32_t peer, em_proto_flow_t *out)
{
    if (peer >= p->cfg.npeers || peer == p->cfg.self)
        return -EM_EINVAL;
    const struct em_peer *pe = &p->peers[peer];
    /* one key per pair (em_proto_set_peer): both directions carry it; a
     * peer whose key is not set yet has no flow a link may acknowledge */
    if (!pe->set)
        return -EM_EINVAL;
    *out = (em_proto_flow_t){ .rx_key = pe->key,
                              .tx_key = pe->key,
                              .rcv_nxt = pe->rcv_nxt,
                              .snd_nxt = pe->snd_nxt,
                              .frame_max = p->cfg.frame_max,
                              .self = p->cfg.self,
                              .peer = peer,
                              .remote_index = pe->remote_index };
    return 0;
}

void em_proto_destroy(em_proto_t *p)
{
    if (!p)
        return;
    for (uint32_t i = 0; i < p->cfg.npeers; i++) {
        abort_ops(p, &p->peers[i], -EM_ECANCELED);
        em_rx_free(p, &p->peers[i]);
        em_peer_act_put(p, &p->peers[i]);
    }
    free(p->peers);
    free(p->poll);
    free(p);
}

size_t em_proto_data_payload(const em_proto_t *p) { return p->data_payload; }

size_t em_proto_max_msg(const em_proto_t *p) { return (size_t)UINT16_MAX * p->put_payload; }

uint64_t em_proto_rx_mem(const em_proto_t *p) { return p->rx_mem; }

/** Has nothing moved between us and @p pe yet (no frame sent or taken)? */
static bool peer_untouched(const struct em_peer *pe)
{
    /* a held peer's queued operations have sent nothing (em_pump waits) */
    return (!pe->q_head || pe->held) && pe->snd_nxt == pe->tx_isn && pe->rcv_nxt == pe->rx_isn &&
           (!pe->a || (!pe->a->nooo && !pe->a->ra_active)) && pe->state == EM_PEER_ACTIVE;
}

int em_proto_hold_peer(em_proto_t *p, uint32_t peer)
{
    if (peer >= p->cfg.npeers || peer == p->cfg.self)
        return -EM_EINVAL;
    struct em_peer *pe = &p->peers[peer];
    if (pe->state == EM_PEER_FAILED)
        return -EM_EPEERFAIL;
    if (pe->set)
        return pe->held ? 0 : -EM_EINVAL; /* set and flowing: nothing to hold */
    pe->held = 1;
    return 0;
}

int em_proto_release_peer(em_proto_t *p, uint32_t peer, uint64_t now)
{
    if (peer >= p->cfg.npeers || peer == p->cfg.self || !p->peers[peer].set)
        return -EM_EINVAL;
    struct em_peer *pe = &p->peers[peer];
    if (pe->held) {
        pe->held = 0;
        em_pump(p, peer, now);
    }
    return 0;
}

int em_proto_set_peer(em_proto_t *p, uint32_t peer, uint64_t key, uint32_t tx_isn, uint32_t rx_isn)
{
    if (peer >= p->cfg.npeers || peer == p->cfg.self)
        return -EM_EINVAL;
    struct em_peer *pe = &p->peers[peer];
    if (pe->set && pe->key == key && pe->tx_isn == tx_isn && pe->rx_isn == rx_isn)
        return 0;
    /* nothing may have moved yet: the ISNs are where both sides start */
    if (!peer_untouched(pe))
        return -EM_EINVAL;
    pe->key = key;
    pe->tx_isn = tx_isn;
    pe->rx_isn = rx_isn;
    pe->snd_una = pe->snd_nxt = tx_isn;
    pe->rcv_nxt = rx_isn;
    pe->set = 1;
    return 0;
}

int em_proto_set_peer_index(em_proto_t *p, uint32_t peer, uint32_t remote_index)
{
    if (peer >= p->cfg.npeers || peer == p->cfg.self)
        return -EM_EINVAL;
    struct em_peer *pe = &p->peers[peer];
    if (pe->remote_index == remote_index)
        return 0;
    /* frames already sent named the old index: the peer would refuse
     * every later one (and its ACKs of ours would still come) */
    if (!peer_untouched(pe))
        return -EM_EINVAL;
    pe->remote_index = remote_index;
    return 0;
}

uint32_t em_proto_peer_index(const em_proto_t *p, uint32_t peer)
{
    return peer < p->cfg.npeers ? p->peers[peer].remote_index : EM_PEER_INDEX_NONE;
}

int em_proto_peer_params(const em_proto_t *p, uint32_t peer, uint64_t *key, uint32_t *tx_isn,
                         uint32_t *rx_isn)
{
    if (peer >= p->cfg.npeers || !p->peers[peer].set)
        return -EM_EINVAL;
    const struct em_peer *pe = &p->peers[peer];
    if (key)
        *key = pe->key;
    if (tx_isn)
        *tx_isn = pe->tx_isn;
    if (rx_isn)
        *rx_isn = pe->rx_isn;
    return 0;
}

uint64_t em_proto_rto(const em_proto_t *p, uint32_t peer)
{
    return peer < p->cfg.npeers ? p->peers[peer].rto_base : 0;
}

uint64_t em_proto_cwnd(const em_proto_t *p, uint32_t peer)
{
    if (peer >= p->cfg.npeers)
        return 0;
    /* a released peer starts again from a fresh window */
    return p->peers[peer].a ? p->peers[peer].a->cc.cwnd : p->cc0.cwnd;
}

uint64_t em_proto_srtt(const em_proto_t *p, uint32_t peer)
{
    return peer < p->cfg.npeers ? p->peers[peer].srtt : 0;
}

uint32_t em_proto_tx_room(const em_proto_t *p, uint32_t peer, uint64_t now)
{
    if (peer >= p->cfg.npeers)
        return 0;
    const struct em_peer *pe = &p->peers[peer];
    const struct em_peer_act *a = pe->a;
    if (pe->state != EM_PEER_ACTIVE || pe->q_send ||
        (a && (a->tx_blocked || a->rto_deadline <= now)))
        return 0;
    uint32_t used = pe->snd_nxt - pe->snd_una;
    uint32_t room = used < p->cfg.window ? p->cfg.window - used : 0;
    /* the congestion window and pacing count too: only frames that leave
     * now, or an inline send would wait for someone's progress call */
    uint32_t cc_room = em_cc_room(a ? &a->cc : &p->cc0, &p->cfg, now);
    return cc_room < room ? cc_room : room;
}

bool em_proto_peer_failed(const em_proto_t *p, uint32_t peer)
{
    return peer < p->cfg.npeers && p->peers[peer].state == EM_PEER_FAILED;
}

const em_proto_stats_t *em_proto_stats(const em_proto_t *p) { return &p->st; }

int em_proto_stats_frames(const em_proto_stats_t *s, char *buf, size_t len)
{
    return snprintf(buf, len,
                    "tx %llu frames (%llu data, %llu acks, %llu retransmits, %llu timeouts, "
                    "%llu probes, %llu fast_retransmits), rx %llu frames (%llu dups, "
                    "%llu out-of-order, %llu spurious_retx)",
                    (unsigned long long)s->tx_frames, (unsigned long long)s->tx_data_frames,
                    (unsigned long long)s->tx_acks, (unsigned long long)s->retransmits,
                    (unsigned long long)s->timeouts, (unsigned long long)s->probes,
                    (unsigned long long)s->fast_retransmits, (unsigned long long)s->rx_frames,
                    (unsigned long long)s->rx_dups, (unsigned long long)s->rx_ooo,
                    (unsigned long long)s->spurious_retx);
}

int em_proto_stats_refused(const em_proto_stats_t *s, char *buf, size_t len)
{
    return snprintf(buf, len,
                    "drop_source %llu drop_job_key %llu drop_budget %llu drop_endpoint %llu "
                    "drop_version %llu drop_short %llu drop_peer_failed %llu",
                    (unsigned long long)s->drop_source, (unsigned long long)s->drop_job_key,
                    (unsigned long long)s->drop_budget, (unsigned long long)s->drop_endpoint,
                    (unsigned long long)s->drop_version, (unsigned long long)s->drop_short,
                    (unsigned long long)s->drop_peer_failed);
}

uint64_t em_proto_next_deadline(const em_proto_t *p) { return p->next_deadline; }

bool em_proto_idle(const em_proto_t *p)
{
    for (uint32_t i = 0; i < p->cfg.npeers; i++) {
        const struct em_peer *pe = &p->peers[i];
        if (pe->q_head || pe->ack_deadline != EM_NEVER || pe->nack_owed)
            return false;
    }
    return true;
}

void em_proto_flush(em_proto_t *p, uint64_t now)
{
    for (uint32_t i = 0; i < p->cfg.npeers; i++) {
        struct em_peer *pe = &p->peers[i];
        struct em_peer_act *a = pe->a;
        if (pe->state != EM_PEER_ACTIVE || pe->snd_una == pe->snd_nxt || !a)
            continue;
        if (a->rto_deadline > now) {
            a->rto_deadline = now;
            em_arm(p, now);
        }
    }
}

void em_proto_ack_heard(em_proto_t *p)
{
    for (uint32_t i = 0; i < p->cfg.npeers; i++) {
        const struct em_peer *pe = &p->peers[i];
        if (pe->state == EM_PEER_ACTIVE && pe->set && pe->rcv_nxt != pe->rx_isn)
            (void)em_send_ack(p, (uint32_t)i, EM_PT_ACK); /* refused: nothing more to do */
    }
}

uint32_t em_proto_pending(const em_proto_t *p, uint32_t peer)
{
    if (peer >= p->cfg.npeers)
        return 0;
    uint32_t n = 0;
    for (const em_proto_op_t *op = p->peers[peer].q_head; op; op = op->next)
        n++;
    return n;
}

uint64_t em_proto_retx_horizon(const em_proto_t *p)
{
    uint64_t rto = 0;
    for (uint32_t i = 0; i < p->cfg.npeers; i++) {
        const struct em_peer *pe = &p->peers[i];
        uint64_t cur = pe->a ? pe->a->rto_cur : pe->rto_base;
        if (pe->state == EM_PEER_ACTIVE && pe->set && cur > rto)
            rto = cur;
    }
    return rto * 2 < EM_PROTO_HORIZON_MAX_NS ? rto * 2 : EM_PROTO_HORIZON_MAX_NS;
}

_Static_assert(EM_PROTO_HEAD_MAX <= UINT8_MAX, "em_proto_op_t::head_len is one byte");

static int submit(struct em_proto *p, em_proto_op_t *op, uint32_t peer, uint8_t type, uint8_t tag,
                  const em_put_target_t *t, const void *head, size_t head_len, const void *buf,
                  size_t len, unsigned flags, void *ctx, uint64_t now)
{
    if (peer >= p->cfg.npeers || peer == p->cfg.self || !op || (len && !buf))
        return -EM_EINVAL;
    if (flags & ~EM_SEND_ACK_LAST)
        return -EM_EINVAL;
    if (head_len > EM_PROTO_HEAD_MAX || (head_len && !head))
        return -EM_EINVAL;
    if (len > em_proto_max_msg(p) - head_len) /* max_msg is well above the head's limit */
        return -EM_EINVAL;
    len += head_len;
    struct em_peer *pe = &p->peers[peer];
    if (pe->state == EM_PEER_FAILED)
        return -EM_EPEERFAIL;
    if (!pe->set && !pe->held)
        return -EM_EINVAL; /* keys unknown: em_proto_set_peer() (or hold) first */
    /* the window is taken on first use; without memory for it the op is
     * refused at once, nothing queued (the caller owns the retry: a queue
     * that waits for memory could wait for ever, unseen) */
    if (!em_peer_act_get(p, pe, now))
        return -EM_ENOMEM;

    uint32_t pl = type == EM_PT_PUT ? p->put_payload : p->data_payload;
    *op = (em_proto_op_t){
        .head = head,
        .head_len = (uint8_t)head_len,
        .buf = buf,
        .ctx = ctx,
        .len = (uint32_t)len,
        .type = type,
        .tag = tag,
        .msg_id = pe->next_msg_id++,
        .ack_last = (flags & EM_SEND_ACK_LAST) != 0,
        .frag_cnt = len == 0 ? 1 : (uint16_t)((len + pl - 1) / pl),
    };
    if (t)
        op->target = *t;
    if (pe->q_tail)
        pe->q_tail->next = op;
    else
        pe->q_head = op;
    pe->q_tail = op;
    if (!pe->q_send)
        pe->q_send = op;
    em_pump(p, peer, now);
    return 0;
}

int em_proto_send(em_proto_t *p, em_proto_op_t *op, uint32_t peer, uint8_t tag, const void *buf,
                  size_t len, void *ctx, uint64_t now)
{
    return submit(p, op, peer, EM_PT_DATA, tag, NULL, NULL, 0, buf, len, 0, ctx, now);
}

int em_proto_sendv(em_proto_t *p, em_proto_op_t *op, uint32_t peer, uint8_t tag, const void *head,
                   size_t head_len, const void *buf, size_t len, unsigned flags, void *ctx,
                   uint64_t now)
{
    return submit(p, op, peer, EM_PT_DATA, tag, NULL, head, head_len, buf, len, flags, ctx, now);
}

int em_proto_put(em_proto_t *p, em_proto_op_t *op, uint32_t peer, const em_put_target_t *t,
                 const void *buf, size_t len, void *ctx, uint64_t now)
{
    if (!t || t->offset > UINT64_MAX - len)
        return -EM_EINVAL;
    return submit(p, op, peer, EM_PT_PUT, 0, t, NULL, 0, buf, len, 0, ctx, now);
}

/** Is the frame's source address @p src that of @p peer (the peer the frame's
 *  index names), and is the peer known?  Asks ops.resolve once when not
 *  (lazy add of a peer). */
static bool source_ok(struct em_proto *p, uint32_t peer, uint32_t src, bool bind)
{
    struct em_peer *pe = &p->peers[peer];
    if (pe->set && (!bind || src == peer))
        return true;
    if (p->ops.resolve)
        src = p->ops.resolve(p->uctx, peer);
    if (!pe->set || (bind && src != peer)) {
        p->st.drop_source++;
        return false;
    }
    return true;
}

static void rx_frame(struct em_proto *p, const void *frame, size_t len, uint32_t src,
                     bool judge_source, uint64_t now);

void em_proto_rx(em_proto_t *p, const void *frame, size_t len, uint64_t now)
{
    rx_frame(p, frame, len, EM_SRC_UNKNOWN, false, now);
}

void em_proto_rx_from(em_proto_t *p, const void *frame, size_t len, uint32_t src, uint64_t now)
{
    rx_frame(p, frame, len, src, p->cfg.bind_source != 0, now);
}

static void rx_frame(struct em_proto *p, const void *frame, size_t len, uint32_t src,
                     bool judge_source, uint64_t now)
{
    em_hdr_t h;

    switch (em_hdr_decode(frame, len, &h)) {
    // clang-format off: one aligned table, a counter per decode reason
    case EM_DEC_OK: break;
    case EM_DEC_SHORT: p->st.drop_short++; return;
    case EM_DEC_MAGIC: p->st.drop_magic++; return;
    case EM_DEC_VERSION: p->st.drop_version++; return;
    case EM_DEC_MALFORMED:
        p->st.drop_malformed++;
        return;
        // clang-format on
    }
    /* wire v3: the frame names its sender by our own index for it (wire.h);
     * one bounds check, then the pair's key and source address say whether
     * that peer sent it */
    if (h.index >= p->cfg.npeers || h.index == p->cfg.self) {
        p->st.drop_endpoint++;
        return;
    }
    const uint32_t from = h.index;
    if (!source_ok(p, from, src, judge_source))
        return;
    struct em_peer *pe = &p->peers[from];
    if (h.job_key != pe->key) {
        p->st.drop_job_key++;
        return;
    }
    if (pe->state == EM_PEER_FAILED) {
        p->st.drop_peer_failed++;
        return;
    }
    /* No frame may carry more than our frames can (a peer with a larger
     * MTU, or a forged frame): the out-of-order slots hold frame_max bytes.
     * Found by fuzz_proto_rx (heap overflow in buffer_ooo). */
    if ((h.type == EM_PT_DATA || h.type == EM_PT_PUT) &&
        (em_hdr_len(h.type) + h.len > p->cfg.frame_max ||
         h.msg_len >
             (uint64_t)h.frag_cnt * (h.type == EM_PT_PUT ? p->put_payload : p->data_payload))) {
        p->st.drop_malformed++;
        return;
    }
    /* Receiver budget: a message longer than any we accept is refused
     * before it is acknowledged (an honest sender never sends one). */
    if (h.type == EM_PT_DATA && h.msg_len > p->max_msg) {
        p->st.drop_budget++;
        /* the daemon acknowledged it already: it will never come again */
        if (p->cfg.link_acks && h.seq == pe->rcv_nxt)
            em_fail_acked(p, from,
                          "a message longer than this process accepts "
                          "(btl max_send_size differs between nodes?), which the "
                          "emd daemon had acknowledged");
        return;
    }
    if (!em_on_ack(p, from, &h, now)) {
        p->st.drop_window++;
        if (p->cfg.link_acks && (h.type == EM_PT_DATA || h.type == EM_PT_PUT) &&
            h.seq == pe->rcv_nxt)
            em_fail_acked(p, from,
                          "an in-order frame the emd daemon had acknowledged for us "
                          "acknowledges data we never sent (a forged or corrupt frame)");
        return;
    }
    p->st.rx_frames++;
    pe->heard_at = now;
    em_live_heard(p, pe, now);
    switch (h.type) {
    case EM_PT_ACK:
        p->st.rx_acks++;
        if (h.flags & EM_F_ACKNOW)
            em_on_probe(p, from, now); /* a probe: answer with our ACK state */
        break;
    case EM_PT_NACK:
        p->st.rx_nacks++;
        em_on_nack(p, from, now);
        break;
    default:
        em_on_sequenced(p, from, &h, (const uint8_t *)frame + em_hdr_len(h.type), now);
        /* A put we refused was acknowledged by the daemon as if placed, so
         * EM_F_REMERR on our later frames may come too late: the initiator
         * may already have completed it.  Fail the peer visibly instead
         * (after the frame is fully processed: failing frees rx state). */
        if (p->cfg.link_acks && pe->refused_put && pe->state == EM_PEER_ACTIVE)
            em_fail_acked(p, from,
                          "refused a put (bad region, key or bounds) that the emd "
                          "daemon had acknowledged");
        break;
    }
}
