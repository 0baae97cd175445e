// SPDX-License-Identifier: BSD-3-Clause
/*
 * xdp_drop.bpf.c - random drop of received frames at XDP, for the emulated
 * cluster (tools/emcluster xdploss).  Used for traffic that never passes
 * through tc, e.g. frames sent by an AF_XDP socket on the peer.
 *
 *   ip link set dev eth0 xdpdrv obj xdp_drop.o sec xdp
 *
 * The drop probability is fixed at compile time, like tc_drop.bpf.c:
 *   -DEMC_DROP_THRESH=T   drop when bpf_get_prandom_u32() < T (T / 2^32).
 * bpf_get_prandom_u32() cannot be seeded.
 *
 * Frames that are not dropped and are ethermpi's are redirected to the
 * AF_XDP socket registered in "xsks_map" for the receive queue (or passed
 * to the kernel stack when there is none); every other frame goes to the
 * kernel stack.  Ethermpi's frames are:
 *  - L2 framing: ethertype 0x88B5 (the reliable protocol) or 0x88B6 (the
 *    lossy broadcast channel);
 *  - udp framing: IPv4 (no VLAN tag), protocol UDP, not a
 *    fragment, destination port EMC_UDP_PORT (the protocol, default 29717)
 *    or EMC_UDP_PORT + 1 (the broadcast channel); -DEMC_UDP_PORT=0 turns
 *    this off.  The port is the whole test: the interface's other UDP
 *    traffic (DNS, the kernel's own sockets, whose ephemeral ports start at
 *    32768) keeps going to the kernel.  Both framings are matched by one
 *    object, so the same file serves a job in either framing.  So the object is the custom program to give DPDK's
 * af_xdp PMD (devarg xdp_prog=<obj>, which looks up "xsks_map"):
 *  - with threshold 0 it is the filter the af_xdp wire needs: the PMD's
 *    default program takes *every* frame of the queue, so on an interface
 *    that also carries IP (the MPI launcher's out-of-band TCP, ARP, the tcp
 *    BTL) the job's control plane goes dark and MPI_Init hangs in its fence;
 *  - with a threshold it adds random ingress loss in front of the socket.
 *
 * Two entry points: "xdp" (single-buffer) and "xdp.frags" (multi-buffer,
 * needed for native XDP on a veth whose MTU exceeds one page, e.g. 9000).
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#ifndef EMC_DROP_THRESH
#define EMC_DROP_THRESH 0ULL
#endif
#ifndef EMC_UDP_PORT
#define EMC_UDP_PORT 29717
#endif

/* IPv4 + UDP to one of our ports?  Only fixed-offset reads after a bounds
 * check the verifier can follow.  A header with options (IHL > 5) is left to
 * the kernel: we never send one (ipudp refuses them too), and a variable
 * offset into the packet is refused by the verifier to a loader without
 * CAP_PERFMON, which a non-root rank with exactly CAP_BPF is (docs/deploy.md). */
static __always_inline int emc_is_our_udp(const void *l3, const void *end)
{
    const __u8 *ip = l3;
    if (EMC_UDP_PORT == 0 || (const void *)(ip + 20) > end)
        return 0;
    if ((ip[0] >> 4) != 4 || ip[9] != 17)
        return 0;
    if (((ip[6] << 8) | ip[7]) & 0x3FFF) /* a fragment: the kernel reassembles */
        return 0;
    if ((ip[0] & 0xF) != 5)
        return 0;
    const __u8 *udp = ip + 20;
    if ((const void *)(udp + 8) > end)
        return 0;
    __u16 dport = (__u16)((udp[2] << 8) | udp[3]);
    return dport == EMC_UDP_PORT || dport == EMC_UDP_PORT + 1;
}

struct {
    __uint(type, BPF_MAP_TYPE_XSKMAP);
    __uint(max_entries, 64);
    __type(key, __u32);
    __type(value, __u32);
} xsks_map SEC(".maps");

static __always_inline int emc_xdp_drop(struct xdp_md *ctx)
{
    const void *data = (const void *)(long)ctx->data;
    const void *end = (const void *)(long)ctx->data_end;
    const struct ethhdr *eth = data;

    if ((__u64)bpf_get_prandom_u32() < (__u64)(EMC_DROP_THRESH))
        return XDP_DROP;
    if ((const void *)(eth + 1) > end)
        return XDP_PASS;
    if (eth->h_proto != bpf_htons(0x88B5) && eth->h_proto != bpf_htons(0x88B6) &&
        !(eth->h_proto == bpf_htons(ETH_P_IP) && emc_is_our_udp(eth + 1, end)))
        return XDP_PASS;
#ifdef EMC_XDP_TEST
    /* tests/unit/test_xdp_filter.c: "ours" is told apart from "the
	 * kernel's" by the verdict (an empty xsks_map slot would give PASS) */
    return XDP_TX;
#else
    /* the low bits of flags are the action when the map slot is empty */
    return bpf_redirect_map(&xsks_map, ctx->rx_queue_index, XDP_PASS);
#endif
}

SEC("xdp")
int emc_xdp_drop_sb(struct xdp_md *ctx) { return emc_xdp_drop(ctx); }

SEC("xdp.frags")
int emc_xdp_drop_mb(struct xdp_md *ctx) { return emc_xdp_drop(ctx); }

/* The sources are BSD-3-Clause (LICENSE); "Dual BSD/GPL" is the string the
 * kernel reads as GPL-compatible, which keeps every helper available. */
char _license[] SEC("license") = "Dual BSD/GPL";
