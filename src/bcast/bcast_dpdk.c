/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file bcast_dpdk.c
 * The broadcast channel's DPDK backend: a link_dpdk port under the
 * channel's own ethertype (EM_ETHERTYPE_BCAST, so its frames never mix with
 * the BTL protocol's 0x88B5), whose peer 0 is the Ethernet broadcast
 * address.  On a memif cable (two nodes) a broadcast reaches the one other
 * end; on af_xdp over a bridged veth or a real NIC, every node on the L2
 * segment.  Built only when DPDK is found; otherwise opening fails with a
 * message.
 *
 * udp framing (cfg->framing): the frames are UDP/IPv4 to port
 * 29718, peer 0 the limited broadcast 255.255.255.255 (MAC ff:..:ff),
 * which stays on the subnet.  em_bcast_set_members gives the members'
 * addresses: when one is behind a router (or the network delivers no
 * broadcast, force), peers 1..k become the other members by unicast and
 * the channel fans each update out to them, said once (bcast_fanout.c).
 */
#include "bcast/bcast_internal.h"

#include <stdio.h>
#include <string.h>

#ifdef EM_BCAST_HAVE_DPDK
#include "link/link_dpdk.h"

em_link_t *em_bcast_dpdk_link_open(const em_bcast_cfg_t *cfg, char *err, size_t errlen)
{
    if (!cfg->vdev || !*cfg->vdev) {
        snprintf(err, errlen,
                 "dpdk-bcast: no DPDK device given (a devargs string such as "
                 "net_memif0,role=server,socket=/run/x.sock,socket-abstract=no)");
        return NULL;
    }
    em_dpdk_cfg_t c = {
        .vdev = cfg->vdev,
        .eal_args = cfg->eal_args,
        .file_prefix = cfg->file_prefix,
        .mtu = cfg->mtu,
        .rx_loss = cfg->rx_loss,
        .loss_seed = cfg->loss_seed,
        .link_wait_ms = cfg->link_wait_ms,
        .nb_mbufs = 8191,
        .ethertype = EM_ETHERTYPE_BCAST,
        .framing = cfg->framing ? EM_DPDK_FRAMING_UDP : EM_DPDK_FRAMING_L2,
        .udp_port = EM_UDP_PORT_BCAST,
    };
    char e2[768];
    em_link_t *l = em_link_dpdk_open(&c, e2, sizeof e2);
    if (!l) {
        snprintf(err, errlen, "dpdk-bcast: %s", e2);
        return NULL;
    }
    em_link_addr_t all = { .len = 8, .bytes = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0 } };
    if (l->local.len == EM_DPDK_ADDR_UDP) { /* 255.255.255.255:29718 */
        all.len = EM_DPDK_ADDR_UDP;
        memset(all.bytes + 8, 0xff, 4);
        memcpy(all.bytes + 12, l->local.bytes + 12, 2);
    }
    if (em_link_set_peer(l, 0, &all) != 0) {
        snprintf(err, errlen, "dpdk-bcast: cannot set the broadcast address");
        em_link_close(l);
        return NULL;
    }
    return l;
}

const char *em_bcast_dpdk_peer_error(const em_link_t *l) { return em_link_dpdk_peer_error(l); }
#else
const char *em_bcast_dpdk_peer_error(const em_link_t *l)
{
    (void)l;
    return "";
}

em_link_t *em_bcast_dpdk_link_open(const em_bcast_cfg_t *cfg, char *err, size_t errlen)
{
    (void)cfg;
    snprintf(err, errlen,
             "dpdk-bcast: this build has no DPDK (install libdpdk-dev and "
             "re-run meson setup)");
    return NULL;
}
#endif
