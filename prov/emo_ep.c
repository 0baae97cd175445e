/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file emo_ep.c
 * The endpoint: its link and engine (opened by fi_endpoint, so that
 * fi_getname works before fi_enable), binding to the AV and CQs, the
 * address, the endpoint id, and manual progress.
 *
 * Endpoint id: the engine's wire header names source and destination by a
 * 32-bit id (below EMO_NPEERS_MAX, 2^24) that all processes of a job agree
 * on (like the BTL's vpid).
 * FI_ETHERMPI_ID if set; else the launcher's rank (PMIX_RANK, PMI_RANK,
 * OMPI_COMM_WORLD_RANK, SLURM_PROCID) plus k x size for a process's k-th
 * endpoint; else random below FI_ETHERMPI_NPEERS (256): two endpoints that
 * draw the same id are refused by fi_av_insert (-FI_EADDRINUSE, with a
 * message naming FI_ETHERMPI_ID), never mixed up.
 */
#include "emo_prov.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "engine/contact.h"
#include "link/link_mux.h"
#include "link/link_udp.h"
#ifdef EM_HAVE_XDP
#include "link/xdp/link_xdp.h"
#endif
#include "proto/wire.h"

int emo_errno(int em_err)
{
    switch (-em_err) {
    case 0: return 0;
    case EM_EINVAL: return -FI_EINVAL;
    case EM_EPEERFAIL: return -FI_EIO;
    case EM_ENOMEM: return -FI_ENOMEM;
    case EM_EAGAIN: return -FI_EAGAIN;
    case EM_ECANCELED: return -FI_ECANCELED;
    case EM_EACCES: return -FI_EACCES;
    default: return -FI_EOTHER;
    }
}

/* ---- id ------------------------------------------------------------------- */

static long env_long(const char *const *names, const char **which)
{
    for (; *names; names++) {
        const char *v = getenv(*names);
        char *end;
        if (v && *v) {
            errno = 0;
            long x = strtol(v, &end, 10);
            if (!errno && !*end && x >= 0) {
                if (which)
                    *which = *names;
                return x;
            }
        }
    }
    return -1;
}

/* @return 0 with *id and *npeers, or -1 with a sentence in @p err */
static int pick_id(uint32_t *id, uint32_t *npeers, char *err, size_t errlen)
{
    static unsigned eps_in_process;
    static const char *const rank_vars[] = { "PMIX_RANK", "PMI_RANK", "OMPI_COMM_WORLD_RANK",
                                             "SLURM_PROCID", NULL };
    static const char *const size_vars[] = { "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS",
                                             NULL };
    unsigned k = eps_in_process++;
    long n = emo_params.npeers > 0 ? emo_params.npeers : 0, x;
    const char *from = "FI_ETHERMPI_ID";
    if (emo_params.id >= 0) {
        x = emo_params.id + (long)k * (n ? n : 256);
        if (!n)
            n = 256;
        if (k)
            x = -1; /* an explicit id names one endpoint */
    } else if ((x = env_long(rank_vars, &from)) >= 0) {
        long size = env_long(size_vars, NULL);
        if (!n)
            n = size > 0 ? size * 4 : 256;
        if (size > 0)
            x += (long)k * size;
    } else {
        uint32_t r;
        if (!n)
            n = 256;
        if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r) {
            snprintf(err, errlen, "getrandom failed (%s): set FI_ETHERMPI_ID", strerror(errno));
            return -1;
        }
        from = "random";
        x = r % n;
    }
    if (n > (long)EMO_NPEERS_MAX)
        n = (long)EMO_NPEERS_MAX;
    if (x < 0 || x >= n) {
        snprintf(err, errlen,
                 "endpoint id %ld (%s, endpoint %u of this process) is not below "
                 "FI_ETHERMPI_NPEERS %ld: set FI_ETHERMPI_NPEERS larger (the same in every "
                 "process)",
                 x, from, k, n);
        return -1;
    }
    *id = (uint32_t)x;
    *npeers = (uint32_t)n;
    FI_INFO(&emo_prov, FI_LOG_EP_CTRL, "endpoint id %ld of %ld (%s)\n", x, n, from);
    return 0;
}

/* ---- link ----------------------------------------------------------------- */

static void link_note(void *ctx, const char *msg)
{
    FI_WARN(&emo_prov, FI_LOG_EP_CTRL, "link: %s\n", msg);
}

/* The node daemon is gone: this endpoint's link carries nothing any more.
 * Every peer fails now (its operations end with FI_EIO, an MPI job ends
 * with the error), as the dpdk BTL aborts the job, instead of after
 * FI_ETHERMPI_RETRIES retransmit timeouts (about a minute by default).
 * Called from inside the link's poll, so within the engine's progress: the
 * failures are applied when it returns (emo_ep_progress). */
static void emd_dead(void *ctx, const char *why)
{
    struct emo_ep *ep = ctx;
    FI_WARN(&emo_prov, FI_LOG_EP_CTRL, "the emd daemon is gone (%s): every peer fails\n", why);
    if (!ep || ep->link_dead)
        return;
    snprintf(ep->link_dead_why, sizeof ep->link_dead_why,
             "this process's emd node daemon is gone (%s)", why);
    ep->link_dead = 1;
}

static void fail_all_peers(struct emo_ep *ep)
{
    ep->link_dead = 2;
    for (uint32_t i = 0; i < ep->npeers; i++)
        if (i != ep->self.id && ep->peer_set[i] && !ep->peer_failed[i])
            (void)em_engine_fail_peer(ep->eng, (uint32_t)i, ep->link_dead_why);
}

/* FI_ETHERMPI_LINK's link, with every option the BTLs have (the front-end
 * layer opens it: src/transport/transport.h).  On failure *@p fi_err is
 * what fi_endpoint returns: -FI_EADDRINUSE when the link says the port of
 * fi_getinfo's service is taken (its reason code, never its text), else
 * -FI_ENODEV. */
static em_link_t *open_link(struct emo_ep *ep, unsigned index, int *fi_err, char *err,
                            size_t errlen)
{
    *fi_err = -FI_ENODEV;
    if (emo_params_error()[0]) {
        snprintf(err, errlen, "%s", emo_params_error());
        return NULL;
    }
    int reason = 0;
    const em_transport_env_t env = {
        .front = EM_FRONT_OFI,
        .job = "0", /* no job id in libfabric: one cable socket per node pair */
        .note = link_note,
        .emd_dead = emd_dead,
        .ctx = ep,
        /* a service in the info's source (fi_getinfo with FI_SOURCE): the
         * port this endpoint receives on (kernel UDP; the L2 links take
         * none: their address is a MAC and queue) */
        .udp_port = emo_name_src_port(ep->info->src_addr, ep->info->src_addrlen),
        .reason = &reason,
    };
    if (env.udp_port && emo_link_kind() != EM_LINK_KIND_UDP)
        FI_INFO(&emo_prov, FI_LOG_EP_CTRL,
                "the source's port %u is not used on the %s link (no ports there): peers "
                "need this endpoint's fi_getname address\n",
                env.udp_port, emo_link_name());
    /* a DPDK port or AF_XDP queue is the process's: every endpoint of the
     * process on it is a member of one shared link (link/link_mux.h), so
     * Open MPI's btl ofi opens its endpoint beside mtl ofi's */
    em_link_t *l = em_transport_open_shared_link(&emo_params, emo_link_kind(), &env, index, err,
                                                 errlen);
    if (!l && !err[0])
        snprintf(err, errlen, "no device %u in the settings", index);
    else if (!l && env.udp_port && reason == -EM_EADDRINUSE) { /* say whose, and the fix */
        snprintf(err + strlen(err), errlen - strlen(err),
                 " (the port of fi_getinfo's service: another endpoint, of this process or "
                 "another, receives on it; give each endpoint its own service, or none for any "
                 "free port)");
        *fi_err = -FI_EADDRINUSE;
    }
    return l;
}

/* ---- engine --------------------------------------------------------------- */

static int make_engine(struct emo_ep *ep, char *err, size_t errlen)
{
    em_proto_cfg_t cfg;
    /* window, recovery, timers, congestion control, receive budget,
     * liveness: the settings, applied as every front end applies them */
    if (em_transport_proto_cfg(&emo_params, emo_link_kind(), ep->link->mtu, &cfg, err, errlen) != 0)
        return -1;
    ep->unexp_budget = (uint64_t)emo_params.unexp_mb << 20;
    cfg.peers_need_set = 1;
    cfg.bind_source = 1;
    cfg.job_key = ep->self.secret;
    cfg.isn = ep->self.isn;
    cfg.self = ep->self.id;
    cfg.npeers = ep->npeers;
    /* no message longer than a sender of ours makes: the eager limit plus
     * our header (rendezvous data travels as puts, not messages) */
    cfg.max_msg = (uint32_t)ep->eager_max + EMO_HDR_LEN + EMO_ADDR_LEN; /* + first contact */
    int e = 0;
    ep->eng = em_engine_create(ep->link, &cfg, &emo_engine_ops, ep, &e);
    if (!ep->eng) {
        snprintf(err, errlen, "engine: %s (check FI_ETHERMPI_RTO_* and WINDOW)", em_strerror(e));
        return -1;
    }
    /* the domain's registrations serve every endpoint of it (emo_rma.c) */
    (void)em_engine_use_regions(ep->eng, &ep->dom->regions); /* new: no registration yet */
    return 0;
}

int emo_ep_set_peer(struct emo_ep *ep, uint32_t id)
{
    if (id >= ep->npeers || id == ep->self.id)
        return -FI_EINVAL;
    if (ep->peer_set[id])
        return 0;
    fi_addr_t fa = emo_av_fa(ep, id);
    const emo_addr_t *a = emo_av_get(ep->av, fa);
    if (!a)
        return -FI_EADDRNOTAVAIL;
    if (a->frame_max < ep->link->mtu) {
        FI_WARN(&emo_prov, FI_LOG_AV,
                "peer %u's frames are %u bytes, ours %u: set "
                "FI_ETHERMPI_MTU the same in every process\n",
                id, a->frame_max, ep->link->mtu);
        return -FI_EINVAL;
    }
    if (emo_named(ep)) {
        /* its address is the engine's since the insert; the handshake
         * (on the first send) sets the rest */
        ep->peer_set[id] = EMO_PEER_AV;
        return 0;
    }
    if (em_engine_set_peer(ep->eng, id, &a->link) != 0)
        return -FI_EINVAL;
    /* the pair's key (of its incarnation: emo_peer_key) */
    uint64_t key = emo_peer_key(ep, a);
    if (em_engine_set_peer_keys(ep->eng, id, key, ep->self.isn, a->isn) != 0)
        return -FI_EINVAL;
    /* wire v3: frames name the receiver's index for their sender; every
     * endpoint's table is indexed by the job-wide ids, so the peer's index
     * for us is our id */
    if (em_engine_set_peer_index(ep->eng, id, ep->self.id) != 0)
        return -FI_EINVAL;
    ep->peer_set[id] = EMO_PEER_AV;
    return 0;
}

/* In the order that keeps every completion: the engine's operations to
 * the peer end first (FI_ECANCELED through cb_complete), then the
 * provider's that wait on it (rendezvous steps, reads, receives posted
 * for it alone); what it sent that waits unexpected stays.  The peer's
 * per-endpoint state goes: a failure (a peer removed after it failed and
 * inserted again is a live one), first contact, whether it has our
 * address (the next message to it carries it again). */
void emo_ep_unset_peer(struct emo_ep *ep, uint32_t id)
{
    if (!ep->eng || id >= ep->npeers || id == ep->self.id)
        return;
    enum emo_ep_phase was = ep->phase;
    ep->phase = EMO_EP_PROGRESS; /* the callbacks run as in progress: no re-entry */
    if (emo_named(ep))
        (void)em_engine_contact_remove(ep->eng, id); /* its number may name another */
    else
        (void)em_engine_reset_peer(ep->eng, id);
    ep->phase = was;
    emo_peer_ops_end(ep, id, -FI_ECANCELED);
    emo_unexp_orphan(ep, id);
    emo_contact_forget(ep, id);
    ep->peer_set[id] = 0;
    ep->peer_heard[id] = 0;
    ep->peer_failed[id] = 0;
    if (ep->fail_pending[id]) {
        ep->fail_pending[id] = 0;
        ep->nfail_pending--;
    }
}

int emo_ep_progress(struct emo_ep *ep)
{
    if (!ep->eng || ep->phase != EMO_EP_IDLE)
        return 0;
    ep->phase = EMO_EP_PROGRESS;
    int work = em_engine_progress(ep->eng);
    ep->phase = EMO_EP_IDLE;
    if (ep->nfail_pending)
        emo_apply_failures(ep);
    if (ep->link_dead == 1)
        fail_all_peers(ep);
    return work;
}

/* ---- fid methods ---------------------------------------------------------- */

static void print_stats(struct emo_ep *ep)
{
    char me[EMO_LABEL_LEN]; /* this endpoint, as every close-time line names it */
    emo_ep_label(ep, me);
    const em_proto_stats_t *p = em_engine_proto_stats(ep->eng);
    char frames[512]; /* 11 counters of up to 20 digits and the words: < 400 */
    em_proto_stats_frames(p, frames, sizeof frames);
    FI_INFO(&emo_prov, FI_LOG_EP_DATA,
            "endpoint %s: eager %llu rdv %llu self %llu (completed when copied %llu; received in "
            "place %llu; send budget full %llu); "
            "unexpected %llu (peak %llu bytes; over FI_ETHERMPI_UNEXP_MB: %llu dropped, %llu "
            "peers failed); refused: short %llu magic %llu type %llu "
            "malformed %llu cookie %llu len %llu unknown-peer %llu; first contact: %llu peers, "
            "refused blob %llu key %llu source %llu address-in-use %llu budget %llu; RMA: writes "
            "%llu reads %llu, "
            "peers' reads served %llu refused %llu busy %llu, write data refused %llu; %s, "
            "peer failures %llu\n",
            me, (unsigned long long)ep->st.eager_sent, (unsigned long long)ep->st.rdv_sent,
            (unsigned long long)ep->st.self_sent, (unsigned long long)ep->st.sends_early,
            (unsigned long long)ep->st.placed, (unsigned long long)ep->st.tx_budget_waits,
            (unsigned long long)ep->st.unexp_msgs, (unsigned long long)ep->st.unexp_bytes_max,
            (unsigned long long)ep->st.unexp_refused, (unsigned long long)ep->st.unexp_overflow,
            (unsigned long long)ep->st.dec_err[EMO_DEC_SHORT],
            (unsigned long long)ep->st.dec_err[EMO_DEC_MAGIC],
            (unsigned long long)ep->st.dec_err[EMO_DEC_TYPE],
            (unsigned long long)ep->st.dec_err[EMO_DEC_MALFORMED],
            (unsigned long long)ep->st.bad_cookie, (unsigned long long)ep->st.bad_len,
            (unsigned long long)ep->st.unknown_peer, (unsigned long long)ep->st.fc_peers,
            (unsigned long long)ep->st.fc_bad_blob, (unsigned long long)ep->st.fc_bad_key,
            (unsigned long long)ep->st.fc_bad_source, (unsigned long long)ep->st.fc_addr_in_use,
            (unsigned long long)ep->st.fc_over_budget, (unsigned long long)ep->st.rma_writes,
            (unsigned long long)ep->st.rma_reads, (unsigned long long)ep->st.reads_served,
            (unsigned long long)ep->st.reads_refused, (unsigned long long)ep->st.reads_busy,
            (unsigned long long)ep->st.wdata_refused, frames, (unsigned long long)p->peer_failures);
    /* the engine's refusals of hostile or stray frames, named as the
     * BTLs' stats lines name them (docs/design.md "Threat model";
     * tests/attack reads them) */
    char refused[320];
    em_proto_stats_refused(p, refused, sizeof refused);
    FI_INFO(&emo_prov, FI_LOG_EP_DATA,
            "endpoint %s protocol: drops: key %llu magic %llu malformed %llu window %llu; "
            "refused: %s; congestion control: cwnd cuts for loss %llu, for delay %llu, frames "
            "held by cwnd %llu, by pacing %llu\n",
            me, (unsigned long long)p->drop_job_key, (unsigned long long)p->drop_magic,
            (unsigned long long)p->drop_malformed, (unsigned long long)p->drop_window, refused,
            (unsigned long long)p->cc_loss_decreases, (unsigned long long)p->cc_delay_decreases,
            (unsigned long long)p->cc_cwnd_blocked, (unsigned long long)p->cc_paced);
    /* the rest of the counters the BTLs export as MPI_T variables, under
     * the same names (docs/ofi.md "Counters") */
    const em_engine_stats_t *e = em_engine_stats(ep->eng);
    FI_INFO(&emo_prov, FI_LOG_EP_DATA,
            "endpoint %s counters: bytes_sent %llu bytes_received %llu messages_sent %llu "
            "messages_received %llu nacks_sent %llu peer_failures %llu drops_gbn_ooo %llu "
            "drops_nomem %llu drops_no_address %llu tx_backpressure %llu\n",
            me, (unsigned long long)p->tx_payload_bytes, (unsigned long long)p->rx_payload_bytes,
            (unsigned long long)p->msgs_sent, (unsigned long long)p->msgs_recv,
            (unsigned long long)p->tx_nacks, (unsigned long long)p->peer_failures,
            (unsigned long long)p->drop_gbn_ooo, (unsigned long long)p->drop_nomem,
            (unsigned long long)e->tx_no_addr, (unsigned long long)e->tx_backpressure);
    /* endpoints of this process sharing the device (link/link_mux.h) */
    const em_link_mux_stats_t *mx = em_link_mux_stats(ep->link);
    if (mx)
        FI_INFO(&emo_prov, FI_LOG_EP_DATA,
                "endpoint %s shared link: rx kept %llu passed to another endpoint %llu; dropped: "
                "inbox full %llu no endpoint %llu short %llu; tx %llu\n",
                me, (unsigned long long)mx->rx_own, (unsigned long long)mx->rx_passed,
                (unsigned long long)mx->rx_inbox_full, (unsigned long long)mx->rx_no_member,
                (unsigned long long)mx->rx_short, (unsigned long long)mx->tx_frames);
    /* what the kernel made of our bursts: whether UDP GSO and GRO carried
     * several frames a system call (docs/design.md "link_udp") */
    if (ep->link && 0 == strcmp(emo_link_name(), "udp")) {
        const em_udp_stats_t *u = em_link_udp_stats(ep->link);
        FI_INFO(&emo_prov, FI_LOG_EP_DATA,
                "endpoint %s udp: tx %llu frames in %llu datagrams (%llu GSO sends), rx %llu "
                "frames in %llu datagrams (%llu coalesced by GRO), errors tx %llu, truncated "
                "%llu, bad GRO %llu\n",
                me, (unsigned long long)u->tx_frames, (unsigned long long)u->tx_dgrams,
                (unsigned long long)u->tx_gso_sends, (unsigned long long)u->rx_frames,
                (unsigned long long)u->rx_dgrams, (unsigned long long)u->rx_gro_dgrams,
                (unsigned long long)u->tx_errors, (unsigned long long)u->rx_truncated,
                (unsigned long long)u->rx_bad_gro);
    }
#ifdef EM_HAVE_XDP
    /* the native AF_XDP link under the mux: its counters, per queue when
     * it has several (the device's, alike for every endpoint on it) */
    if (ep->link && 0 == strcmp(emo_link_name(), "xdp")) {
        em_link_t *base = em_link_mux_base(ep->link);
        const em_xdp_stats_t *x = em_xdp_link_stats(base);
        char qs[512];
        em_xdp_link_queue_stats(base, qs, sizeof qs);
        FI_INFO(&emo_prov, FI_LOG_EP_DATA,
                "endpoint %s xdp: rx %llu frames (%llu refused), tx %llu (ring full %llu), "
                "wakeups %llu%s%s\n",
                me, (unsigned long long)x->rx_frames, (unsigned long long)x->rx_bad,
                (unsigned long long)x->tx_frames, (unsigned long long)x->tx_full,
                (unsigned long long)x->wakeups, qs[0] ? "; " : "", qs);
    }
#endif
}

/* Before the engine goes: what this endpoint sent must still arrive.  An
 * inject completes at once, and MPICH 5 closes its endpoints right after
 * its last one (no barrier in MPI_Finalize for a provider it does not know):
 * when that frame was lost, its resend is due one retransmit timeout later,
 * up to FI_ETHERMPI_RTO_MAX_US.  A 50 ms wait here lost the message and
 * left the peer waiting for it until its liveness watch declared this
 * process failed (1 MPICH run in 20 under 5 % loss).  So: wait for every
 * ACK (em_engine_drain probes at once and answers late resends), bounded
 * by FI_ETHERMPI_LINGER_MS, and name the peers that never answered. */
static void linger(struct emo_ep *ep)
{
    /* FI_ETHERMPI_LINGER_MS=0: one pass, so that what is queued and our
     * ACK state still leave (with none, fabtests' fi_msg_inject hangs) */
    ep->phase = EMO_EP_PROGRESS; /* callbacks run as in emo_ep_progress */
    size_t left = em_engine_drain(ep->eng, (uint64_t)emo_params.linger_ms * 1000000u);
    ep->phase = EMO_EP_IDLE;
    if (!left)
        return;
    char me[EMO_LABEL_LEN];
    for (uint32_t i = 0; i < ep->npeers; i++) {
        uint32_t n = em_engine_pending(ep->eng, (uint32_t)i);
        if (n)
            FI_WARN(&emo_prov, FI_LOG_EP_CTRL,
                    "closing endpoint %s: %u message(s) to endpoint %u were not acknowledged "
                    "within FI_ETHERMPI_LINGER_MS=%d ms (the peer exited or is unreachable); "
                    "they may be lost\n",
                    emo_ep_label(ep, me), n, i, emo_params.linger_ms);
    }
}

static int ep_close(struct fid *fid)
{
    struct emo_ep *ep = container_of_emo(fid, struct emo_ep, ep.fid);
    if (ep->eng) {
        linger(ep);
        print_stats(ep);
        emo_atomic_stats(ep);
        if (emo_named(ep))
            emo_name_stats(ep);
        ep->phase = EMO_EP_CLOSING; /* destroying: callbacks write no completions */
        em_engine_destroy(ep->eng);
    }
    emo_data_fini(ep);
    /* out of the CQs' and counters' sets before the link goes: their wait
     * objects watch its descriptor */
    if (ep->tx_cq)
        emo_ep_set_remove(&ep->tx_cq->eps, ep);
    if (ep->rx_cq)
        emo_ep_set_remove(&ep->rx_cq->eps, ep);
    if (ep->tx_cntr)
        emo_ep_set_remove(&ep->tx_cntr->eps, ep);
    if (ep->rx_cntr)
        emo_ep_set_remove(&ep->rx_cntr->eps, ep);
    for (unsigned i = 0; i < 4; i++)
        if (ep->other_cntr[i])
            emo_ep_set_remove(&ep->other_cntr[i]->eps, ep);
    em_link_close(ep->link);
    emo_av_unbind(ep); /* the AV's other endpoints keep theirs */
    fi_freeinfo(ep->info);
    free(ep->peer_set);
    free(ep->peer_heard);
    free(ep->fc);
    free(ep->peer_failed);
    free(ep->unexp_held);
    free(ep->fail_pending);
    free(ep->ops);
    free(ep->op_gen);
    free(ep->op_next);
    ep->dom->neps--;
    free(ep);
    return 0;
}

static int ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
    struct emo_ep *ep = container_of_emo(fid, struct emo_ep, ep.fid);
    switch (bfid->fclass) {
    case FI_CLASS_AV: /* one AV per endpoint, any number of endpoints per AV */
        return emo_av_bind(container_of_emo(bfid, struct emo_av, av.fid), ep);
    case FI_CLASS_CQ: {
        struct emo_cq *cq = container_of_emo(bfid, struct emo_cq, cq.fid);
        if (!(flags & (FI_TRANSMIT | FI_RECV)))
            return -FI_EBADFLAGS;
        int rc = emo_ep_set_add(&cq->eps, ep, emo_ep_progress);
        if (rc)
            return rc;
        if (flags & FI_TRANSMIT) {
            ep->tx_cq = cq;
            ep->tx_selective = (flags & FI_SELECTIVE_COMPLETION) != 0;
        }
        if (flags & FI_RECV) {
            ep->rx_cq = cq;
            ep->rx_selective = (flags & FI_SELECTIVE_COMPLETION) != 0;
        }
        return 0;
    }
    case FI_CLASS_EQ: return 0; /* nothing to report: RDM endpoints do not connect */
    case FI_CLASS_CNTR: {
        /* FI_SEND / FI_RECV / FI_READ / FI_WRITE count; FI_REMOTE_READ and
         * FI_REMOTE_WRITE are accepted (MPICH binds its RMA counter for them
         * whatever the provider offers) and never move: no FI_RMA_EVENT */
        struct emo_cntr *c = container_of_emo(bfid, struct emo_cntr, cntr.fid);
        static const uint64_t other[4] = { FI_READ, FI_WRITE, FI_REMOTE_READ, FI_REMOTE_WRITE };
        if (!(flags & (FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)))
            return -FI_EBADFLAGS;
        int rc = emo_ep_set_add(&c->eps, ep, emo_ep_progress);
        if (rc)
            return rc;
        if (flags & FI_SEND)
            ep->tx_cntr = c;
        if (flags & FI_RECV)
            ep->rx_cntr = c;
        for (unsigned i = 0; i < 4; i++)
            if (flags & other[i])
                ep->other_cntr[i] = c;
        return 0;
    }
    default: return -FI_EINVAL;
    }
}

static int ep_control(struct fid *fid, int command, void *arg)
{
    struct emo_ep *ep = container_of_emo(fid, struct emo_ep, ep.fid);
    switch (command) {
    case FI_ENABLE:
        if (!ep->av) {
            FI_WARN(&emo_prov, FI_LOG_EP_CTRL, "fi_enable: bind an AV first\n");
            return -FI_ENOAV;
        }
        if (!ep->tx_cq || !ep->rx_cq) {
            FI_WARN(&emo_prov, FI_LOG_EP_CTRL,
                    "fi_enable: bind CQs for FI_TRANSMIT and "
                    "FI_RECV first\n");
            return -FI_ENOCQ;
        }
        ep->enabled = true;
        return 0;
    case FI_GETOPSFLAG:
        if (!arg)
            return -FI_EINVAL;
        *(uint64_t *)arg = (*(uint64_t *)arg & FI_TRANSMIT) ? ep->tx_op_flags : ep->rx_op_flags;
        return 0;
    case FI_SETOPSFLAG:
        if (!arg)
            return -FI_EINVAL;
        if (*(uint64_t *)arg & FI_TRANSMIT)
            ep->tx_op_flags = *(uint64_t *)arg & ~(uint64_t)FI_TRANSMIT;
        else
            ep->rx_op_flags = *(uint64_t *)arg & ~(uint64_t)FI_RECV;
        return 0;
    default: return -FI_ENOSYS;
    }
}

static int ep_getname(fid_t fid, void *addr, size_t *addrlen)
{
    struct emo_ep *ep = container_of_emo(fid, struct emo_ep, ep.fid);
    size_t have = *addrlen;
    *addrlen = EMO_ADDR_LEN;
    if (!addr || have < EMO_ADDR_LEN)
        return -FI_ETOOSMALL;
    emo_addr_encode(&ep->self, addr);
    return 0;
}

static int ep_setname(fid_t fid, void *addr, size_t addrlen)
{
    /* the link chose its address at open (a port, a queue): only that
     * address can be "set" again */
    struct emo_ep *ep = container_of_emo(fid, struct emo_ep, ep.fid);
    uint8_t mine[EMO_ADDR_LEN];
    emo_addr_encode(&ep->self, mine);
    return addrlen == EMO_ADDR_LEN && 0 == memcmp(addr, mine, EMO_ADDR_LEN) ? 0 : -FI_EINVAL;
}

static ssize_t ep_cancel(fid_t fid, void *context)
{
    struct emo_ep *ep = container_of_emo(fid, struct emo_ep, ep.fid);
    emo_lock(ep->dom);
    ssize_t rc = emo_cancel(ep, context);
    emo_unlock(ep->dom);
    return rc;
}

/* FI_OPT_MIN_MULTI_RECV is the one option (multi-receive buffers, emo_rdv.c) */
static int ep_getopt(fid_t fid, int level, int optname, void *optval, size_t *optlen)
{
    struct emo_ep *ep = container_of_emo(fid, struct emo_ep, ep.fid);
    if (level != FI_OPT_ENDPOINT || optname != FI_OPT_MIN_MULTI_RECV)
        return -FI_ENOPROTOOPT;
    if (!optval || !optlen || *optlen < sizeof(size_t))
        return -FI_ETOOSMALL;
    *(size_t *)optval = ep->min_multi_recv;
    *optlen = sizeof(size_t);
    return 0;
}

static int ep_setopt(fid_t fid, int level, int optname, const void *optval, size_t optlen)
{
    struct emo_ep *ep = container_of_emo(fid, struct emo_ep, ep.fid);
    if (level != FI_OPT_ENDPOINT || optname != FI_OPT_MIN_MULTI_RECV)
        return -FI_ENOPROTOOPT;
    if (!optval || optlen != sizeof(size_t))
        return -FI_EINVAL;
    emo_lock(ep->dom);
    ep->min_multi_recv = *(const size_t *)optval;
    emo_unlock(ep->dom);
    return 0;
}

/* close, bind and control under the domain's lock (FI_THREAD_SAFE) */
static int ep_close_locked(struct fid *fid)
{
    struct emo_domain *d = container_of_emo(fid, struct emo_ep, ep.fid)->dom;
    emo_lock(d);
    int rc = ep_close(fid);
    emo_unlock(d);
    return rc;
}

static int ep_bind_locked(struct fid *fid, struct fid *bfid, uint64_t flags)
{
    struct emo_domain *d = container_of_emo(fid, struct emo_ep, ep.fid)->dom;
    emo_lock(d);
    int rc = ep_bind(fid, bfid, flags);
    emo_unlock(d);
    return rc;
}

static int ep_control_locked(struct fid *fid, int command, void *arg)
{
    struct emo_domain *d = container_of_emo(fid, struct emo_ep, ep.fid)->dom;
    emo_lock(d);
    int rc = ep_control(fid, command, arg);
    emo_unlock(d);
    return rc;
}

static ssize_t ep_size_left(struct fid_ep *ep) { return EMO_TX_SIZE; }

/* connection management: RDM endpoints do not connect */
static int cm_getpeer(struct fid_ep *e, void *a, size_t *l) { return -FI_ENOSYS; }
static int cm_connect(struct fid_ep *e, const void *a, const void *p, size_t l)
{
    return -FI_ENOSYS;
}
static int cm_listen(struct fid_pep *p) { return -FI_ENOSYS; }
static int cm_accept(struct fid_ep *e, const void *p, size_t l) { return -FI_ENOSYS; }
static int cm_reject(struct fid_pep *pe, fid_t h, const void *p, size_t l) { return -FI_ENOSYS; }
static int cm_shutdown(struct fid_ep *e, uint64_t f) { return -FI_ENOSYS; }
static int cm_join(struct fid_ep *e, const void *a, uint64_t f, struct fid_mc **m, void *c)
{
    return -FI_ENOSYS;
}

static struct fi_ops ep_fi_ops = EMO_FI_OPS(ep_close_locked, ep_bind_locked, ep_control_locked);
static struct fi_ops_ep ep_ops = { .size = sizeof(struct fi_ops_ep),
                                   .cancel = ep_cancel,
                                   .getopt = ep_getopt,
                                   .setopt = ep_setopt,
                                   .rx_size_left = ep_size_left,
                                   .tx_size_left = ep_size_left };
static struct fi_ops_cm ep_cm = { .size = sizeof(struct fi_ops_cm),
                                  .setname = ep_setname,
                                  .getname = ep_getname,
                                  .getpeer = cm_getpeer,
                                  .connect = cm_connect,
                                  .listen = cm_listen,
                                  .accept = cm_accept,
                                  .reject = cm_reject,
                                  .shutdown = cm_shutdown,
                                  .join = cm_join };

/* link, id, secrets, engine; @return 0, or with a sentence in @p err what
 * fi_endpoint returns: the link's (open_link), else -FI_ENODEV */
static int ep_setup(struct emo_ep *ep, char *err, size_t errlen)
{
    uint8_t rnd[12];
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
        snprintf(err, errlen, "getrandom failed (%s): no secret for the pair keys",
                 strerror(errno));
        return -FI_ENODEV;
    }
    memcpy(&ep->self.secret, rnd, 8);
    memcpy(&ep->self.isn, rnd + 8, 4);
    int rc;
    ep->link = open_link(ep, ep->dom->index, &rc, err, errlen);
    if (!ep->link)
        return rc;
    ep->self.frame_max = ep->link->mtu;
    ep->self.link = ep->link->local;
    /* named by its address where the link runs first contact (emo_name.c),
     * else numbered */
    if (emo_name_setup(ep, err, errlen) != 0)
        return -FI_ENODEV;
    if (!emo_named(ep) && pick_id(&ep->self.id, &ep->npeers, err, errlen) != 0)
        return -FI_ENODEV;
    ep->peer_set = calloc(ep->npeers, 1);
    ep->peer_failed = calloc(ep->npeers, 1);
    ep->peer_heard = calloc(ep->npeers, 1);
    ep->unexp_held = calloc(ep->npeers, sizeof *ep->unexp_held);
    ep->fail_pending = calloc(ep->npeers, 1);
    if (!ep->peer_set || !ep->peer_failed || !ep->peer_heard || !ep->unexp_held ||
        !ep->fail_pending) {
        snprintf(err, errlen, "out of memory");
        return -FI_ENODEV;
    }
    if (make_engine(ep, err, errlen) != 0)
        return -FI_ENODEV;
    return emo_named(ep) && emo_name_open(ep, err, errlen) != 0 ? -FI_ENODEV : 0;
}

int emo_ep_open(struct fid_domain *domain, struct fi_info *info, struct fid_ep **fep, void *context)
{
    if (!info || !info->ep_attr || info->ep_attr->type != FI_EP_RDM)
        return -FI_EINVAL;
    emo_params_load();
    struct emo_ep *ep = calloc(1, sizeof *ep);
    if (!ep)
        return -FI_ENOMEM;
    ep->avm.self_fa = FI_ADDR_NOTAVAIL; /* (the rest of its AV map: empty, zeros) */
    ep->dom = container_of_emo(domain, struct emo_domain, dom);
    ep->dom->neps++; /* (ep_close undoes it, also for a failed open) */
    ep->info = fi_dupinfo(info);
    ep->eager_max = emo_eager_max();
    ep->inject_max = emo_inject_max();
    ep->send_copy_max = emo_params.send_copy_max > 0 ? (size_t)emo_params.send_copy_max : 0;
    if (ep->send_copy_max > ep->inject_max)
        ep->send_copy_max = ep->inject_max;
    emo_op_pools_init(ep);
    ep->tx_op_flags = info->tx_attr ? info->tx_attr->op_flags : 0;
    ep->rx_op_flags = info->rx_attr ? info->rx_attr->op_flags : 0;
    ep->min_multi_recv = EMO_MIN_MULTI_RECV;
    emo_queue_init(&ep->posted_tag);
    emo_queue_init(&ep->unexp_tag);
    emo_queue_init(&ep->posted_msg);
    emo_queue_init(&ep->unexp_msg);
    emo_fid_init(&ep->ep.fid, FI_CLASS_EP, context, &ep_fi_ops);
    ep->ep.ops = &ep_ops;
    ep->ep.cm = &ep_cm;
    ep->ep.msg = &emo_msg_ops;
    ep->ep.tagged = &emo_tagged_ops;
    ep->ep.rma = &emo_rma_ops;       /* each call checks the endpoint's FI_RMA */
    ep->ep.atomic = &emo_atomic_ops; /* ... and FI_ATOMIC */
    char err[512] = "";
    int rc = ep->info ? ep_setup(ep, err, sizeof err) : -FI_ENODEV;
    if (rc != 0) {
        FI_WARN(&emo_prov, FI_LOG_EP_CTRL, "cannot open an endpoint: %s\n",
                err[0] ? err : "out of memory");
        ep_close(&ep->ep.fid);
        return rc;
    }
    *fep = &ep->ep;
    return 0;
}
