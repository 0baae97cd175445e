/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file emd_xdp.c
 * emd's AF_XDP port (emd_xdp.h): the link from the settings, its checks,
 * and its counters for the stats log and emd --status.
 */
#include "daemon/emd_xdp.h"

#include <stdio.h>
#include <string.h>

#include "emd_abi/emd_wire.h"
#include "link/xdp/link_xdp.h"
#include "transport/transport.h"

#ifdef EM_HAVE_XDP
/** emd_port_ops_t::stats: the tx ring's refusals (what emd --status calls tx_port_full). */
static void xdp_port_stats(void *ctx, emd_port_stats_t *out)
{
    out->tx_full = em_xdp_link_stats(ctx)->tx_full;
}

/** emd_port_ops_t::describe: what the link counts that the daemon does not. */
static void xdp_port_describe(void *ctx, char *buf, size_t len)
{
    const em_xdp_stats_t *s = em_xdp_link_stats(ctx);
    const em_xdp_info_t *in = em_xdp_link_info(ctx);
    const em_ipudp_counters_t *u = &s->udp_refused;
    uint64_t udp_refused = 0;
    for (size_t i = 0; i < EM_IPUDP_NERR; i++)
        udp_refused += u->refused[i];
    char qs[512];
    em_xdp_link_queue_stats(ctx, qs, sizeof qs);
    snprintf(buf, len,
             "AF_XDP (%s, %s XDP) rx %llu frames (%llu gathered from several chunks, %llu "
             "refused: not ours or too long, %llu refused udp), tx %llu (ring full %llu), "
             "wakeups %llu, next-hop changes %llu%s%s",
             in->zero_copy ? "zero copy" : "copy mode", in->native ? "native" : "generic",
             (unsigned long long)s->rx_frames, (unsigned long long)s->rx_gathered,
             (unsigned long long)s->rx_bad, (unsigned long long)udp_refused,
             (unsigned long long)s->tx_frames, (unsigned long long)s->tx_full,
             (unsigned long long)s->wakeups, (unsigned long long)s->nh_changes, qs[0] ? "; " : "",
             qs);
}

const emd_port_ops_t emd_xdp_port_ops = { .stats = xdp_port_stats, .describe = xdp_port_describe };
#else
const emd_port_ops_t emd_xdp_port_ops = { 0 }; /* never opened: this build has no AF_XDP link */
#endif

/* em_transport_env_t::note: the link's notes (copy mode and why, ...) */
static void note(void *ctx, const char *msg) { ((struct emd *)ctx)->log("port: %s", msg); }

em_link_t *emd_xdp_open(struct emd *e, const em_settings_t *s, const char *iface, char *what,
                        size_t whatlen, char *err, size_t errlen)
{
    em_settings_t c = *s;
    c.if_include = (char *)iface; /* one interface: emd_xdp.h */
    c.rx_loss = 0;                /* the daemon's, before its eager ACKs (emd_core.h) */
    const em_transport_env_t env = { .front = EM_FRONT_EMD, .job = "emd", .note = note, .ctx = e };
    em_link_t *link = em_transport_open_link(&c, EM_LINK_KIND_XDP, &env, 0, err, errlen);
    if (!link)
        return NULL;
    if (s->xdp_queues > 1)
        snprintf(what, whatlen, "xdp:%.40s queues %d-%d", iface, s->xdp_queue,
                 s->xdp_queue + s->xdp_queues - 1);
    else
        snprintf(what, whatlen, "xdp:%.40s queue %d", iface, s->xdp_queue);
    const char *why = NULL;
    /* node ids (emd_core.h): the MAC, or in udp framing the IPv4 address
     * and port of the 14-byte blob, the DPDK port's layout */
    if (e->core.framing == EMD_FRAMING_UDP && link->local.len != EM_XDP_ADDR_UDP_LEN)
        why = "the port has no udp address";
    else if (link->mtu <= EMD_WIRE_HDR_LEN + 64)
        why = "the port's MTU is too small (raise the interface's MTU or --mtu)";
    if (why) {
        snprintf(err, errlen, "%s (%s)", why, what);
        em_link_close(link);
        return NULL;
    }
    return link;
}
