// SPDX-License-Identifier: BSD-3-Clause
/*
 * ipv4_only.bpf.c - the router ports of emcluster's routed topology
 * (tools/emcluster up --routed): a tc classifier for the clsact ingress
 * hook of each router port that lets IPv4 and ARP through and drops every
 * other ethertype, before the bridge or the IP stack of the router sees
 * the frame.  So a raw ethermpi frame (0x88B5, 0x88B6) crosses neither the
 * router nor a subnet, as on a cloud virtual network or an L3 fabric, and
 * a test that passes there proves the traffic was routable IPv4.
 *
 *   tc qdisc add dev n0 clsact
 *   tc filter add dev n0 ingress bpf direct-action obj ipv4_only.o sec tc
 *
 * (tc's matchall/u32 classifiers and gact actions are not built into every
 * kernel; a BPF classifier only needs CONFIG_NET_CLS_BPF, which the loss
 * injection needs anyway.)
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

SEC("tc")
int emc_ipv4_only(struct __sk_buff *skb)
{
    /* skb->protocol: the ethertype (after any VLAN tag the driver took) */
    if (skb->protocol == bpf_htons(ETH_P_IP) || skb->protocol == bpf_htons(ETH_P_ARP))
        return TC_ACT_OK;
    return TC_ACT_SHOT;
}

/* BSD-3-Clause sources (LICENSE); "Dual BSD/GPL" is what the kernel reads
 * as GPL-compatible. */
char _license[] SEC("license") = "Dual BSD/GPL";
