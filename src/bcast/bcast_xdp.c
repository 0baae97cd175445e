/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file bcast_xdp.c
 * The broadcast channel on the native AF_XDP link (link/xdp/link_xdp.h),
 * no DPDK: the interface's queue under the channel's own ethertype
 * (EM_ETHERTYPE_BCAST), peer 0 the Ethernet broadcast address; in udp
 * framing UDP/IPv4 to 255.255.255.255 port 29718, with the fan-out of
 * em_bcast_set_members as on the DPDK backend (the link's udp address is
 * the DPDK link's).  The link owns its interface queue: a process cannot
 * run this channel and the rudp BTL's native link on the same queue (the
 * DPDK link's port sharing has no counterpart here yet).  Built only when
 * libxdp is found; otherwise opening fails with a message.
 */
#include "bcast/bcast_internal.h"

#include <stdio.h>
#include <string.h>

#ifdef EM_BCAST_HAVE_XDP
#include "link/xdp/link_xdp.h"

em_link_t *em_bcast_xdp_link_open(const em_bcast_cfg_t *cfg, char *err, size_t errlen)
{
    if (!cfg->iface || !*cfg->iface) {
        snprintf(err, errlen, "xdp-bcast: no interface given (the iface of the configuration)");
        return NULL;
    }
    /* one queue (no xdp_queues here): every update goes to one peer, the
     * broadcast address, so it would leave on one socket anyway, and on a
     * NIC an L2 frame of our ethertype has no flow for RSS to spread (udp
     * framing's broadcasts may be spread by source address, as they are
     * with one queue: point RSS at the queue there, docs/relax.md) */
    em_xdp_cfg_t c = {
        .ifname = cfg->iface,
        .queue = cfg->xdp_queue,
        .mtu = cfg->mtu,
        .zero_copy = -1,
        .prog = cfg->xdp_prog,
        .rx_loss = cfg->rx_loss,
        .loss_seed = cfg->loss_seed,
        .framing_udp = cfg->framing != 0,
        .udp_port = EM_UDP_PORT_BCAST,
        .ethertype = EM_ETHERTYPE_BCAST,
    };
    char e2[768];
    em_link_t *l = em_xdp_link_open(&c, e2, sizeof e2);
    if (!l) {
        snprintf(err, errlen, "xdp-bcast: %s", e2);
        return NULL;
    }
    em_link_addr_t all = { .len = EM_XDP_ADDR_LEN,
                           .bytes = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff } };
    if (l->local.len == EM_XDP_ADDR_UDP_LEN) { /* 255.255.255.255:29718 */
        all.len = EM_XDP_ADDR_UDP_LEN;
        memset(all.bytes + 8, 0xff, 4);
        memcpy(all.bytes + 12, l->local.bytes + 12, 2);
    }
    if (em_link_set_peer(l, 0, &all) != 0) {
        snprintf(err, errlen, "xdp-bcast: cannot set the broadcast address: %s",
                 em_xdp_link_peer_error(l));
        em_link_close(l);
        return NULL;
    }
    return l;
}

const char *em_bcast_xdp_peer_error(const em_link_t *l) { return em_xdp_link_peer_error(l); }
#else
em_link_t *em_bcast_xdp_link_open(const em_bcast_cfg_t *cfg, char *err, size_t errlen)
{
    (void)cfg;
    snprintf(err, errlen,
             "xdp-bcast: this build has no native AF_XDP link (install libxdp-dev and "
             "libbpf-dev and re-run meson setup)");
    return NULL;
}

const char *em_bcast_xdp_peer_error(const em_link_t *l)
{
    (void)l;
    return "";
}
#endif
