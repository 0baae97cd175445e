/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file transport.c
 * The factory of transport.h: settings -> link, settings -> protocol
 * configuration.  Every front end opens its links here, so each link
 * option exists once and every front end has all of them.
 */
#include "transport/transport.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emd_abi/emd_wire.h"
#include "link/dpdk/devargs.h"
#include "link/link_dpdk.h"
#include "link/link_emd.h"
#include "link/link_mux.h"
#include "link/link_udp.h"
#ifdef EM_HAVE_XDP
#include "link/xdp/link_xdp.h"
#endif
#include "proto/wire.h"
#ifdef EM_HAVE_DPDK
#include "link/link_bulkq.h"
#endif

static const char *const kind_names[] = { "udp", "dpdk", "emd", "xdp" };

const char *em_link_kind_name(em_link_kind_t k)
{
    return (unsigned)k < sizeof kind_names / sizeof kind_names[0] ? kind_names[k] : "?";
}

int em_link_kind_parse(const char *name)
{
    /* the provider's `link` row lists the kinds in enum order */
    return name ? em_setting_choice_of(em_setting_find("link"), name) : -1;
}

int em_link_kind_built(em_link_kind_t k)
{
#ifdef EM_HAVE_XDP
    if (k == EM_LINK_KIND_XDP)
        return 1;
#endif
#ifdef EM_HAVE_DPDK
    return k <= EM_LINK_KIND_EMD;
#else
    return k == EM_LINK_KIND_UDP || k == EM_LINK_KIND_EMD;
#endif
}

/* the name of setting @p name as the front end publishes it */
static const char *sname(const em_transport_env_t *env, const char *name, char *buf, size_t len)
{
    const em_setting_t *d = em_setting_find(name);
    if (!d)
        snprintf(buf, len, "%s", name);
    else
        em_setting_fullname(d, env->front, buf, len);
    return buf;
}

/* ---- kernel UDP ------------------------------------------------------- */

/* Entry @p index of the comma list @p list into @p out: 1 found, 0 no
 * such entry (past the end, or empty after the first: "eth0,,eth1" is one
 * entry), -1 too long.  One walk for counting and for opening. */
static int list_entry(const char *list, unsigned index, char *out, size_t len)
{
    const char *p = list ? list : "";
    for (unsigned i = 0; i < index; i++) {
        size_t k = strcspn(p, ",");
        if (k == 0 && i > 0)
            return 0;
        p += k;
        if (*p != ',')
            return 0;
        p++;
    }
    size_t n = strcspn(p, ",");
    if (index > 0 && n == 0)
        return 0;
    if (n >= len)
        return -1;
    memcpy(out, p, n);
    out[n] = 0;
    return 1;
}

static em_link_t *open_udp(const em_settings_t *s, const em_transport_env_t *env, unsigned index,
                           char *err, size_t errlen)
{
    char iface[256] = "", nm[64];
    int r = list_entry(s->if_include, index, iface, sizeof iface);
    if (r == 0)
        return NULL; /* no such link */
    if (r < 0) {
        snprintf(err, errlen, "%s: entry %u is too long", sname(env, "if_include", nm, sizeof nm),
                 index);
        return NULL;
    }
    size_t n = strlen(iface);
    if (index == 0 && n == 0 && env->default_iface &&
        env->default_iface(iface, sizeof iface, err, errlen) != 0)
        return NULL;
    em_udp_cfg_t c = {
        .iface = iface,
        .port = env->udp_port,
        .mtu = s->mtu > 0 ? (uint32_t)s->mtu : 0,
        .sock_buf = s->sock_buf,
        .no_gso = !s->gso,
        .no_gro = !s->gro,
        .note = env->note,
        .note_ctx = env->ctx,
        .frame_len = em_wire_frame_len,
        .reason = env->reason,
    };
    return em_link_udp_open(&c, err, errlen);
}

/* ---- native AF_XDP ------------------------------------------------------ */

static int parse_framing(const em_settings_t *s, const em_transport_env_t *env, char *err,
                         size_t errlen);

static em_link_t *open_xdp(const em_settings_t *s, const em_transport_env_t *env, unsigned index,
                           char *err, size_t errlen)
{
#ifdef EM_HAVE_XDP
    char iface[64] = "", nm[64];
    int r = list_entry(s->if_include, index, iface, sizeof iface);
    if (r == 0)
        return NULL; /* no such link */
    if (r < 0 || !iface[0]) {
        snprintf(err, errlen,
                 "the AF_XDP link needs its interface: name it with %s (one link "
                 "per entry of a comma list)",
                 sname(env, "if_include", nm, sizeof nm));
        return NULL;
    }
    /* the filter: @FILE and %h as in a device spec (one command line, a
     * file per node); empty = EM_XDP_PROG, else the installed one */
    char prog[1024] = "";
    if (s->xdp_prog && *s->xdp_prog &&
        em_link_dpdk_devargs(s->xdp_prog, env->job ? env->job : "0", prog, sizeof prog, err,
                             errlen) != 0)
        return NULL;
    int udp = parse_framing(s, env, err, errlen);
    if (udp < 0)
        return NULL;
    int m = em_setting_choice(s, "xdp_mode"); /* auto|zerocopy|copy */
    em_xdp_cfg_t c = { .ifname = iface,
                       .framing_udp = udp,
                       .udp_port = (uint16_t)s->udp_port,
                       .udp_addr = s->udp_addr,
                       .udp_no_csum = !s->udp_checksum,
                       .prog = prog[0] ? prog : NULL,
                       .queue = (uint32_t)s->xdp_queue,
                       .queues = (uint32_t)s->xdp_queues,
                       .mtu = s->mtu > 0 ? (uint32_t)s->mtu : 0,
                       .zero_copy = m == 1   ? 1
                                    : m == 2 ? 0
                                             : -1,
                       .busy_poll_us = (uint32_t)s->xdp_busy_poll_us,
                       .rx_loss = s->rx_loss,
                       .loss_seed = (uint64_t)s->loss_seed };
    em_link_t *l = em_xdp_link_open(&c, err, errlen);
    if (l && env->note) {
        const em_xdp_info_t *in = em_xdp_link_info(l);
        char msg[512];
        char qs[32]; /* " 0" or "s 0-1" */
        if (in->queues > 1)
            snprintf(qs, sizeof qs, "s %u-%u", c.queue, c.queue + in->queues - 1);
        else
            snprintf(qs, sizeof qs, " %u", c.queue);
        snprintf(msg, sizeof msg, "AF_XDP on %s queue%s, %s framing: %s%s%s, %s XDP%s%s%s", iface,
                 qs, udp ? "udp" : "L2", in->zero_copy ? "zero copy" : "copy mode (",
                 in->zero_copy ? "" : in->why_copy, in->zero_copy ? "" : ")",
                 in->native ? "native" : "generic", in->multi_buffer ? ", multi-buffer frames" : "",
                 in->why_no_busy[0] ? "; " : "", in->why_no_busy);
        env->note(env->ctx, msg);
    }
    return l;
#else
    (void)s, (void)env, (void)index;
    snprintf(err, errlen,
             "this build has no native AF_XDP link (it needs libxdp-dev and "
             "libbpf-dev at build time)");
    return NULL;
#endif
}

/* ---- DPDK -------------------------------------------------------------- */

/* setting @p name's value as the index of its choice (the table's order,
 * which the enums the caller maps it to follow), or -1 with a sentence */
static int choice(const em_settings_t *s, const em_transport_env_t *env, const char *name,
                  char *err, size_t errlen)
{
    int i = em_setting_choice(s, name);
    if (i < 0) {
        char nm[64];
        const em_setting_t *d = em_setting_find(name);
        const char *v = *(char *const *)em_setting_cptr(s, d);
        snprintf(err, errlen, "%s must be one of %s, not '%.32s'", sname(env, name, nm, sizeof nm),
                 d->choices, v ? v : "");
    }
    return i;
}

/* 1: UDP/IPv4 framing, 0: L2, -1 with a sentence */
static int parse_framing(const em_settings_t *s, const em_transport_env_t *env, char *err,
                         size_t errlen)
{
    return choice(s, env, "framing", err, errlen); /* l2|udp */
}

int em_transport_dpdk_cfg(const em_settings_t *s, const em_transport_env_t *env,
                          struct em_dpdk_cfg *c, char *vdev, size_t vdevlen, char *err,
                          size_t errlen)
{
    int udp = parse_framing(s, env, err, errlen);
    if (udp < 0)
        return -1;
    /* %j = the job id: every job gets its own memif socket, so a job that
     * starts while the last one's processes are exiting never connects to
     * their dying end of the cable */
    if (em_link_dpdk_devargs(s->vdev ? s->vdev : "", env->job ? env->job : "0", vdev, vdevlen, err,
                             errlen) != 0)
        return -1;
    *c = (em_dpdk_cfg_t){
        .vdev = vdev,
        .eal_args = s->eal_args,
        .mtu = s->mtu > 0 ? (uint32_t)s->mtu : 0,
        .rx_loss = s->rx_loss,
        .loss_seed = (uint64_t)s->loss_seed,
        .link_wait_ms = s->link_wait_ms > 0 ? (uint32_t)s->link_wait_ms : 0,
        .no_gather = !s->zero_copy,
        .framing = udp ? EM_DPDK_FRAMING_UDP : EM_DPDK_FRAMING_L2,
        .udp_port = (uint16_t)s->udp_port,
        .udp_addr = s->udp_addr,
        .udp_no_csum = !s->udp_checksum,
    };
    return 0;
}

#ifdef EM_HAVE_DPDK
static em_link_t *open_dpdk(const em_settings_t *s, const em_transport_env_t *env, unsigned index,
                            char *err, size_t errlen)
{
    char vdev[1024], prefix[64];
    em_dpdk_cfg_t c;
    if (em_transport_dpdk_cfg(s, env, &c, vdev, sizeof vdev, err, errlen) != 0)
        return NULL;
    /* one EAL per process (this library holds the only copy of its state) */
    snprintf(prefix, sizeof prefix, "em%ld", (long)getpid());
    c.file_prefix = prefix;
    /* "A;B": one port and link per device (two cables) */
    return em_link_dpdk_open_port(&c, index, err, errlen);
}

/* the daemon lends this process a bulk queue: a DPDK secondary of it */
static em_link_t *bulk_open(uint64_t loss_seed, const em_emd_bulkq_t *r, char *err, size_t errlen)
{
    em_bulkq_cfg_t c = {
        .file_prefix = r->file_prefix,
        .port = r->port,
        .slots = r->slots,
        .slot = r->slot,
        .endpoint = r->endpoint,
        .mtu = r->mtu,
        .loss_ppm = r->loss_ppm,
        .loss_seed = loss_seed + r->endpoint,
    };
    memcpy(c.mac, r->mac, 6);
    return em_link_bulkq_open(&c, err, errlen);
}
#endif

/* ---- the node daemon ----------------------------------------------------- */

/* the emd link's callbacks are (ctx, ...): relay them to the front end's.
 * It keeps copies, not the caller's settings: it lives as long as the
 * link (freed by the close callback, the link's last call). */
struct emd_relay {
    em_transport_env_t env; /* callbacks and their ctx; job is not kept */
    uint64_t loss_seed;     /* the bulk queue's loss stream */
};

static void relay_dead(void *ctx, const char *why)
{
    struct emd_relay *r = ctx;
    if (r->env.emd_dead)
        r->env.emd_dead(r->env.ctx, why);
    else
        fprintf(stderr, "ethermpi: the emd node daemon is gone: %s\n", why);
}

static void relay_note(void *ctx, const char *msg)
{
    struct emd_relay *r = ctx;
    if (r->env.note)
        r->env.note(r->env.ctx, msg);
}

static void relay_closing(void *ctx, const struct em_emd_stats *st)
{
    struct emd_relay *r = ctx;
    if (r->env.emd_closing)
        r->env.emd_closing(r->env.ctx, st);
    free(r); /* the link's last call */
}

#ifdef EM_HAVE_DPDK
static em_link_t *relay_bulk(void *ctx, const em_emd_bulkq_t *info, char *err, size_t errlen)
{
    struct emd_relay *r = ctx;
    return bulk_open(r->loss_seed, info, err, errlen);
}
#endif

static em_link_t *open_emd(const em_settings_t *s, const em_transport_env_t *env, char *err,
                           size_t errlen)
{
    char path[1024], nm[64];
    int udp = parse_framing(s, env, err, errlen);
    if (udp < 0)
        return NULL;
    if (!s->emd_socket || !*s->emd_socket) {
        snprintf(err, errlen, "%s is empty: name the daemon's control socket",
                 sname(env, "emd_socket", nm, sizeof nm));
        return NULL;
    }
    if (em_link_dpdk_devargs(s->emd_socket, env->job ? env->job : "0", path, sizeof path, err,
                             errlen) != 0)
        return NULL;
    int mode = choice(s, env, "bulk_queue", err, errlen); /* auto|on|off: EM_EMD_BULKQ_* */
    if (mode < 0)
        return NULL;
#ifndef EM_HAVE_DPDK
    if (mode == EM_EMD_BULKQ_ON) {
        snprintf(err, errlen, "%s is 'on' but this build has no DPDK (bulk queues need it)",
                 sname(env, "bulk_queue", nm, sizeof nm));
        return NULL;
    }
#endif
    char bulk_set[64];
    sname(env, "bulk_queue", bulk_set, sizeof bulk_set);
    struct emd_relay *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    r->env = *env;
    r->env.job = NULL; /* the caller's buffer: read only during the open */
    r->loss_seed = (uint64_t)s->loss_seed;
    em_emd_cfg_t c = {
        .socket_path = path,
        .rx_loss = s->rx_loss,
        .loss_seed = (uint64_t)s->loss_seed,
        .heartbeat_timeout_ms = s->emd_heartbeat_ms > 0 ? (uint32_t)s->emd_heartbeat_ms : 0,
        .dead_cb = relay_dead,
        .dead_ctx = r,
        .bulk_mode = mode,
        .bulk_setting = bulk_set,
#ifdef EM_HAVE_DPDK
        .bulk_open = relay_bulk,
#endif
        .ctx = r,
        .note_cb = relay_note,
        .close_cb = relay_closing,
        /* the daemon must run the same framing (emd --framing): checked at attach */
        .framing = udp ? EMD_FRAMING_UDP : EMD_FRAMING_L2,
    };
    em_link_t *l = em_link_emd_open(&c, err, errlen);
    if (!l)
        free(r);
    return l;
}

static em_link_t *open_kind(const em_settings_t *s, em_link_kind_t kind,
                            const em_transport_env_t *env, unsigned index, char *err, size_t errlen)
{
    switch (kind) {
    case EM_LINK_KIND_UDP: return open_udp(s, env, index, err, errlen);
    case EM_LINK_KIND_XDP: return open_xdp(s, env, index, err, errlen);
    case EM_LINK_KIND_EMD: return index == 0 ? open_emd(s, env, err, errlen) : NULL;
    case EM_LINK_KIND_DPDK:
#ifdef EM_HAVE_DPDK
        return open_dpdk(s, env, index, err, errlen);
#else
        break;
#endif
    }
    snprintf(err, errlen, "the %s link is not part of this build of ethermpi (built: udp, emd)",
             em_link_kind_name(kind));
    return NULL;
}

em_link_t *em_transport_open_link(const em_settings_t *s, em_link_kind_t kind,
                                  const em_transport_env_t *env, unsigned index, char *err,
                                  size_t errlen)
{
    if (errlen)
        err[0] = 0;
    if (env->reason) /* kernel UDP's open says more (em_udp_cfg_t::reason) */
        *env->reason = -EM_EINVAL;
    em_link_t *l = open_kind(s, kind, env, index, err, errlen);
    if (l && env->reason)
        *env->reason = 0;
    return l;
}

/* The muxes of this process's shared links, by kind and index: one table,
 * since a device is one process's (the DPDK port, the AF_XDP queue).  An
 * entry goes back to NULL when its last member closes (link_mux.c). */
#define SHARED_INDEXES 64
static em_link_mux_t *shared[EM_LINK_KIND_XDP + 1][SHARED_INDEXES];

/* links of @p kind are one process's device (dpdk, xdp): shared */
static int link_shares(em_link_kind_t kind)
{
    return kind == EM_LINK_KIND_DPDK || kind == EM_LINK_KIND_XDP;
}

em_link_t *em_transport_open_shared_link(const em_settings_t *s, em_link_kind_t kind,
                                         const em_transport_env_t *env, unsigned index, char *err,
                                         size_t errlen)
{
    if (!link_shares(kind) || index >= SHARED_INDEXES)
        return em_transport_open_link(s, kind, env, index, err, errlen);
    if (errlen)
        err[0] = 0;
    em_link_mux_t **slot = &shared[kind][index];
    if (!*slot) {
        em_link_t *base = em_transport_open_link(s, kind, env, index, err, errlen);
        if (!base)
            return NULL;
        if (!em_link_mux_create(base, slot)) {
            em_link_close(base);
            if (env->reason)
                *env->reason = -EM_ENOMEM;
            snprintf(err, errlen, "out of memory for the %s link's endpoint table",
                     em_link_kind_name(kind));
            return NULL;
        }
    }
    em_link_t *l = em_link_mux_join(*slot, err, errlen);
    if (!l) {
        em_link_mux_drop_if_empty(*slot); /* a new one: its base closes */
        if (env->reason)
            *env->reason = -EM_EINVAL;
    } else if (env->reason) {
        *env->reason = 0;
    }
    return l;
}

unsigned em_transport_link_count(const em_settings_t *s, em_link_kind_t kind, const char *job)
{
    unsigned n = 1;
    if (kind == EM_LINK_KIND_UDP || kind == EM_LINK_KIND_XDP) {
        char item[256];
        while (n < 64 && list_entry(s->if_include, n, item, sizeof item) > 0)
            n++;
    } else if (kind == EM_LINK_KIND_DPDK) {
        char vdev[1024], item[1024], err[64];
        if (em_link_dpdk_devargs(s->vdev ? s->vdev : "", job ? job : "0", vdev, sizeof vdev, err,
                                 sizeof err) != 0)
            return 1; /* the open says why */
        n = 0;
        while (n < EM_DPDK_MAX_PORTS && em_dpdk_vdev_item(vdev, n, item, sizeof item) == 0)
            n++;
        if (n == 0)
            n = 1;
    }
    return n;
}

/* ---- protocol -------------------------------------------------------------- */

/* Bypass links keep the 64 frames they were measured with (docs/ofi.md
 * "Window"); kernel UDP sizes its window in bytes (window_kb). */
#define BYPASS_WINDOW 64

unsigned em_transport_window(const em_settings_t *s, em_link_kind_t kind, uint32_t frame_max)
{
    int w = s->window;
    if (w < 0)
        w = kind == EM_LINK_KIND_UDP ? 0 : BYPASS_WINDOW;
    if (w > (int)EM_WINDOW_MAX || (w == 0 && s->window_kb <= 0))
        return 0;
    return w ? (unsigned)w : em_proto_window_for((uint32_t)s->window_kb, frame_max);
}

size_t em_transport_eager_max(const em_settings_t *s, em_link_kind_t kind)
{
    if (s->eager_max >= 0)
        return (size_t)s->eager_max;
    return kind == EM_LINK_KIND_UDP ? EM_TRANSPORT_EAGER_UDP : EM_TRANSPORT_EAGER_BYPASS;
}

int em_transport_proto_cfg(const em_settings_t *s, em_link_kind_t kind, uint32_t frame_max,
                           em_proto_cfg_t *cfg, char *err, size_t errlen)
{
    em_proto_cfg_default(cfg);
    unsigned w = em_transport_window(s, kind, frame_max);
    int cc = em_cc_mode_parse(s->cc);
    if (!w || cc < 0) {
        snprintf(err, errlen,
                 "the window (%d, window_kb %d) must be 0 to %u with window_kb over 0 where it "
                 "is 0, and cc loss, delay or off (not '%.16s')",
                 s->window, s->window_kb, EM_WINDOW_MAX, s->cc ? s->cc : "");
        return -1;
    }
    int rec = em_setting_choice(s, "recovery"); /* sr|gbn: EM_RECOVERY_SR, _GBN */
    if (rec < 0) {
        snprintf(err, errlen, "recovery must be sr or gbn, not '%.16s'", s->recovery);
        return -1;
    }
    cfg->recovery = (em_recovery_t)rec;
    cfg->frame_max = frame_max;
    cfg->window = (uint16_t)w;
    cfg->rto_ns = (uint64_t)s->rto_us * 1000u;
    cfg->rto_min_ns = (uint64_t)s->rto_min_us * 1000u;
    cfg->rto_max_ns = (uint64_t)s->rto_max_us * 1000u;
    cfg->max_retries = (uint32_t)s->retries;
    cfg->ack_delay_ns = (uint64_t)s->ack_delay_us * 1000u;
    cfg->cc = (em_cc_mode_t)cc;
    cfg->rx_mem_max = s->rx_mem_mb > 0 ? (uint64_t)s->rx_mem_mb << 20 : 0;
    /* a watched peer fails within a sender's bound (src/proto/live.c) */
    cfg->live_idle_ns = (uint64_t)(s->live_us < 0 ? s->rto_max_us : s->live_us) * 1000u;
    /* Pace in bursts of 64 KB, not 8 frames: the kernel sends a GSO batch of
     * up to 64 KB as one packet anyway (as TCP paces TSO-sized bursts), and
     * a user-space loop woken per 1.5 KB frame lost 40 % of rudp's bandwidth
     * at MTU 1500 (docs/design.md "Congestion control", real links). */
    if (frame_max && 65536 / frame_max > cfg->cc_pace_burst)
        cfg->cc_pace_burst = (uint16_t)(65536 / frame_max);
    if (cfg->cc_pace_burst > cfg->window)
        cfg->cc_pace_burst = cfg->window;
    return 0;
}
