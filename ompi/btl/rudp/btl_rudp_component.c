/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file btl_rudp_component.c
 * The `rudp` BTL: ethermpi's reliable datagram protocol over one kernel UDP
 * socket per process (seed 001).  Everything but the link lives in
 * ../common/em_btl.c; this file holds the component, its link parameters
 * and the link opener.
 *
 * Select with: --mca btl self,vader,rudp
 *
 * The native AF_XDP link (no DPDK, src/link/xdp): --mca btl_rudp_link xdp
 * --mca btl_rudp_if_include eth0 (btl_rudp_xdp_mode, _xdp_queue,
 * _xdp_busy_poll_us, _xdp_prog).  This component takes it, not the dpdk
 * one, because it names interfaces already (if_include, one module per
 * entry) and is built without DPDK, which the native link exists to do
 * without (docs/design.md "Which BTL opens the native AF_XDP link").  The
 * link binds one interface queue: one rank per node, as the dpdk BTL's
 * direct mode; on a node with more ranks every rank steps aside with the
 * help topic xdp-one-per-node.
 *
 * Opt-in: installed in Open MPI's component directory, the
 * component is used only when the job names it in `btl` or
 * btl_rudp_if_include is set (e.g. in openmpi-mca-params.conf); otherwise
 * it steps aside silently and the job runs as before.  With no interface
 * given it takes the first interface Open MPI's tcp BTL would use
 * (btl_tcp_if_include / btl_tcp_if_exclude, tcp's default exclusions, and
 * container bridges), not merely the first one up.
 */
#include "opal_config.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opal/mca/btl/base/base.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"
#include "opal/util/show_help.h"

#include "../common/em_btl.h"
#include "link/link_udp.h"
#ifdef EM_HAVE_XDP
#include "link/xdp/link_xdp.h"
#endif
#include "proto/wire.h"
#include "util/procfs.h"

/* exported: the component Open MPI looks up by name */
extern mca_btl_base_component_3_0_0_t mca_btl_rudp_component;

static em_btl_params_t rudp_params;

static em_btl_module_t rudp_module;

static void rudp_note(void *ctx, const char *msg)
{
    (void)ctx;
    opal_output_verbose(10, opal_btl_base_framework.framework_output, "[%s] btl_rudp: %s",
                        opal_process_info.nodename, msg);
}

static void rudp_link_stats(em_link_t *l)
{
    const em_udp_stats_t *s = em_link_udp_stats(l);
    em_udp_info_t i;
    em_link_udp_info(l, &i);
    opal_output(0,
                "[%s] btl_rudp link: tx %llu frames in %llu sends (%llu GSO sends, "
                "GSO %s, %llu fallbacks), %llu errors; rx %llu frames from %llu datagrams "
                "(%llu coalesced, GRO %s), refused: %llu oversize, %llu bad GRO; "
                "socket buffers rx %d KiB tx %d KiB",
                opal_process_info.nodename, (unsigned long long)s->tx_frames,
                (unsigned long long)s->tx_dgrams, (unsigned long long)s->tx_gso_sends,
                i.gso ? "on" : "off", (unsigned long long)s->tx_gso_fallback,
                (unsigned long long)s->tx_errors, (unsigned long long)s->rx_frames,
                (unsigned long long)s->rx_dgrams, (unsigned long long)s->rx_gro_dgrams,
                i.gro ? "on" : "off", (unsigned long long)s->rx_truncated,
                (unsigned long long)s->rx_bad_gro, i.rcvbuf / 1024, i.sndbuf / 1024);
}

#ifdef EM_HAVE_XDP
/* the native AF_XDP link's counters, and per queue when it has several */
static void rudp_xdp_link_stats(em_link_t *l)
{
    const em_xdp_stats_t *s = em_xdp_link_stats(l);
    const em_xdp_info_t *in = em_xdp_link_info(l);
    char qs[512];
    em_xdp_link_queue_stats(l, qs, sizeof qs);
    opal_output(0,
                "[%s] btl_rudp link: AF_XDP (%s, %s XDP, %u queue%s) rx %llu frames (%llu "
                "gathered, %llu refused), tx %llu (ring full %llu), wakeups %llu%s%s",
                opal_process_info.nodename, in->zero_copy ? "zero copy" : "copy mode",
                in->native ? "native" : "generic", in->queues, in->queues == 1 ? "" : "s",
                (unsigned long long)s->rx_frames, (unsigned long long)s->rx_gathered,
                (unsigned long long)s->rx_bad, (unsigned long long)s->tx_frames,
                (unsigned long long)s->tx_full, (unsigned long long)s->wakeups, qs[0] ? "; " : "",
                qs);
}
#endif

static int rudp_register(void)
{
    /* every setting of the kernel UDP link and the protocol, from the
     * table (src/transport/settings.c), as btl_rudp_<name> */
    if (OPAL_SUCCESS !=
        em_btl_register_params(&mca_btl_rudp_component.btl_version, &rudp_params, EM_FRONT_RUDP))
        return OPAL_ERROR; /* said why */
    /* the value is read at registration: btl_rudp_link picks the link, and
     * the eager limit below follows it */
    rudp_params.kind = em_setting_choice(&rudp_params.s, "link") == EM_LINK_KIND_XDP
                           ? EM_LINK_KIND_XDP
                           : EM_LINK_KIND_UDP;
    rudp_params.print_link_stats = rudp_params.kind == EM_LINK_KIND_UDP ? rudp_link_stats : NULL;
#ifdef EM_HAVE_XDP
    if (rudp_params.kind == EM_LINK_KIND_XDP)
        rudp_params.print_link_stats = rudp_xdp_link_stats;
#endif
    (void)em_btl_register_pvars(&mca_btl_rudp_component.btl_version, &rudp_module);
    em_btl_module_defaults(&rudp_module.super);
    /* Eager up to 256 KiB (+ ob1's header), not 64: a rendezvous costs
     * four one-way trips (RNDV, ob1's PUT request, the ACK the put waits
     * for, FIN) around the data, and over kernel UDP (GSO/GRO) the two
     * extra copies of an eager message cost less than those trips up to
     * 256 KiB: docs/design.md "link_udp", rendezvous or eager. */
    /* The native AF_XDP link keeps the bypass links' defaults (the dpdk
     * BTL's: em_btl_module_defaults), where a rendezvous leg costs no
     * kernel crossing. */
    if (rudp_params.kind == EM_LINK_KIND_UDP) {
        rudp_module.super.btl_eager_limit = EM_TRANSPORT_EAGER_UDP + 128;
        rudp_module.super.btl_max_send_size = EM_TRANSPORT_EAGER_UDP + 128;
    }
    return mca_btl_base_param_register(&mca_btl_rudp_component.btl_version, &rudp_module.super);
}

static int rudp_open(void)
{
    em_btl_add_help_dir((const void *)&mca_btl_rudp_component);
    return OPAL_SUCCESS;
}

static int rudp_close(void) { return OPAL_SUCCESS; }

/* tcp's value of its parameter @p param ("if_include"), or @p dflt when the
 * tcp component is not loaded in this job */
static const char *tcp_var(const char *param, const char *dflt)
{
    int idx = mca_base_var_find("opal", "btl", "tcp", param);
    const char **v = NULL;
    if (idx >= 0 && OPAL_SUCCESS == mca_base_var_get_value(idx, &v, NULL, NULL) && v && *v)
        return *v;
    return dflt;
}

/* does interface @p name with address @p a match an entry of the comma
 * list @p list (interface names or IPv4 subnets a.b.c.d/n, as tcp's)? */
static int if_listed(const char *list, const char *name, struct in_addr a)
{
    char item[64];
    for (const char *p = list; *p;) {
        size_t k = strcspn(p, ",");
        if (k > 0 && k < sizeof item) {
            memcpy(item, p, k);
            item[k] = 0;
            char *slash = strchr(item, '/');
            struct in_addr net;
            if (!slash && 0 == strcmp(item, name))
                return 1;
            if (slash) {
                *slash = 0;
                int bits = atoi(slash + 1);
                if (bits >= 0 && bits <= 32 && inet_pton(AF_INET, item, &net) == 1) {
                    uint32_t mask = bits ? htonl(~0u << (32 - bits)) : 0;
                    if ((a.s_addr & mask) == (net.s_addr & mask))
                        return 1;
                }
            }
        }
        p += k;
        if (*p == ',')
            p++;
    }
    return 0;
}

/* container and VM bridges: never the cluster network, though tcp uses them */
static int bridge_name(const char *n)
{
    static const char *const pre[] = { "docker",  "br-",    "virbr", "veth", "cni",
                                       "flannel", "podman", "lxcbr", "lxdbr" };
    for (size_t i = 0; i < sizeof pre / sizeof pre[0]; i++)
        if (0 == strncmp(n, pre[i], strlen(pre[i])))
            return 1;
    return 0;
}

/* btl_rudp_if_include empty: the first IPv4 interface tcp would take */
static int default_iface(char *out, size_t outlen, char *err, size_t errlen)
{
    const char *inc = tcp_var("if_include", "");
    const char *exc = tcp_var("if_exclude", "127.0.0.1/8,sppp");
    struct ifaddrs *ifs;
    if (getifaddrs(&ifs) != 0) {
        snprintf(err, errlen, "getifaddrs failed; set btl_rudp_if_include");
        return -1;
    }
    int found = 0;
    for (struct ifaddrs *i = ifs; i && !found; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP) ||
            (i->ifa_flags & IFF_LOOPBACK) || strlen(i->ifa_name) >= outlen)
            continue;
        struct in_addr a = ((struct sockaddr_in *)i->ifa_addr)->sin_addr;
        if (*inc ? !if_listed(inc, i->ifa_name, a)
                 : (if_listed(exc, i->ifa_name, a) || bridge_name(i->ifa_name)))
            continue;
        snprintf(out, outlen, "%s", i->ifa_name);
        found = 1;
    }
    freeifaddrs(ifs);
    if (!found)
        snprintf(err, errlen,
                 "no IPv4 interface that the tcp BTL would use (btl_tcp_if_include "
                 "'%s', btl_tcp_if_exclude '%s'; loopback and container bridges skipped): set "
                 "btl_rudp_if_include",
                 inc, exc);
    return found ? 0 : -1;
}

/* a /proc/sys value, or -1 */
static long proc_long(const char *path)
{
    FILE *f = fopen(path, "r");
    long v = -1;
    if (f) {
        if (fscanf(f, "%ld", &v) != 1)
            v = -1;
        fclose(f);
    }
    return v;
}

/* CAP_NET_ADMIN effective: link_udp's SO_{SND,RCV}BUFFORCE then works */
static int has_net_admin(void)
{
    return (em_proc_field("/proc/self/status", "CapEff:", 16, 0) >> 12) & 1; /* CAP_NET_ADMIN */
}

/* Without CAP_NET_ADMIN the kernel clamps the socket buffers to
 * net.core.rmem_max / wmem_max (212992 on a stock kernel): bursts then
 * overflow the receive buffer and cost retransmissions.  Said once per
 * node (local rank 0), naming the sysctl; quiet when the buffers fit. */
static void warn_clamped_buffers(void)
{
    int want = rudp_params.s.sock_buf;
    if (want <= 0 || has_net_admin() || opal_process_info.my_local_rank != 0)
        return;
    long r = proc_long("/proc/sys/net/core/rmem_max");
    long w = proc_long("/proc/sys/net/core/wmem_max");
    long lim = r >= 0 && w >= 0 ? (r < w ? r : w) : (r >= 0 ? r : w);
    if (lim < 0 || lim >= want)
        return;
    opal_show_help(EM_BTL_HELP_FILE, "sock-buf-clamped", true, "rudp", opal_process_info.nodename,
                   want, "rudp", lim, want, want, "rudp", lim);
}

/* link @p index: the index-th entry of btl_rudp_if_include ("eth0,eth1":
 * one socket or AF_XDP queue, one module per interface; ob1 stripes over
 * them) */
static em_link_t *rudp_open_link(unsigned index, char *err, size_t errlen)
{
    char job[32];
    snprintf(job, sizeof job, "%u", (unsigned)OPAL_PROC_MY_NAME.jobid);
    const em_transport_env_t env = {
        .front = EM_FRONT_RUDP,
        .job = job,
        .default_iface = default_iface, /* the one tcp would take */
        .note = rudp_note,
    };
    em_link_t *link = em_transport_open_link(&rudp_params.s, rudp_params.kind, &env, index, err,
                                             errlen);
    if (link && rudp_params.kind != EM_LINK_KIND_UDP) {
        opal_output_verbose(10, opal_btl_base_framework.framework_output,
                            "[%s] btl_rudp: link %u is %s (entry %u of btl_rudp_if_include %s)",
                            opal_process_info.nodename, index, link->ops->name, index,
                            rudp_params.s.if_include);
        return link;
    }
    if (link) {
        em_udp_info_t i;
        em_link_udp_info(link, &i);
        opal_output_verbose(10, opal_btl_base_framework.framework_output,
                            "[%s] btl_rudp: link %u on interface %s", opal_process_info.nodename,
                            index, i.ifname);
    }
    if (link && index == 0)
        warn_clamped_buffers(); /* once per node (local rank 0), naming the sysctl */
    return link;
}

/* btl_rudp_link: udp, or xdp on a node where this is the only rank.
 * @return 1, or 0 after a help message (the component steps aside). */
static int link_usable(void)
{
    char err[256];
    int k = em_setting_choice(&rudp_params.s, "link");
    if (k != EM_LINK_KIND_UDP && k != EM_LINK_KIND_XDP) {
        snprintf(err, sizeof err,
                 "btl_rudp_link is '%.32s': the rudp BTL opens the kernel UDP link (udp) or "
                 "the native AF_XDP link (xdp); the DPDK and daemon links are the dpdk BTL's "
                 "(--mca btl self,vader,dpdk with btl_dpdk_vdev or btl_dpdk_mode daemon)",
                 rudp_params.s.link ? rudp_params.s.link : "");
        opal_show_help(EM_BTL_HELP_FILE, "bad-setting", true, "rudp", opal_process_info.nodename,
                       err);
        return 0;
    }
    /* The link binds an interface queue, which one process owns: a second
     * rank on the node would fail to open it (the AF_XDP guard names the
     * owner) while the first one waited for peers that cannot reach it.
     * Every rank of such a node steps aside instead, at once and alike, and
     * says so once (local rank 0): other BTLs in the list carry the job,
     * else MPI_Init ends it naming the unreachable peers. */
    if (k == EM_LINK_KIND_XDP && opal_process_info.num_local_peers > 0) {
        if (opal_process_info.my_local_rank == 0)
            opal_show_help(EM_BTL_HELP_FILE, "xdp-one-per-node", true, "rudp",
                           opal_process_info.nodename, opal_process_info.num_local_peers + 1);
        return 0;
    }
    return 1;
}

static mca_btl_base_module_t **rudp_init(int *num_btls, bool progress_threads, bool mpi_threads)
{
    *num_btls = 0;
    const char *inc = rudp_params.s.if_include;
    if (!em_btl_named("rudp") && !(inc && *inc))
        return NULL; /* not asked for: step aside silently */
    if (!link_usable())
        return NULL; /* said why */
    return em_btl_init(&rudp_module, &mca_btl_rudp_component, "rudp", &rudp_params, rudp_open_link,
                       num_btls, mpi_threads);
}

static int rudp_progress(void) { return em_btl_progress(&rudp_module); }

/* mca_btl_rudp_component, the struct Open MPI loads */
EM_BTL_COMPONENT(rudp);
