// SPDX-License-Identifier: BSD-3-Clause
/*
 * tc_drop.bpf.c - random packet drop for the emulated cluster (tools/emcluster).
 *
 * A tc classifier meant for the clsact egress hook of a node's interface:
 *
 *   tc qdisc add dev eth0 clsact
 *   tc filter add dev eth0 egress bpf direct-action obj tc_drop.o sec tc
 *
 * The drop probability is fixed when the object is compiled, so no map has
 * to be updated from user space (this machine has no bpftool) and nothing is
 * pinned in bpffs:
 *
 *   -DEMC_DROP_THRESH=T   drop a packet when a 32-bit random number is < T,
 *                         i.e. with probability T / 2^32 (0 .. 4294967296).
 *   -DEMC_SEED=S          optional: use a seeded xorshift generator (state per
 *                         CPU, in a per-CPU array map) instead of the kernel's
 *                         bpf_get_prandom_u32(), which cannot be seeded.  The
 *                         sequence is deterministic per CPU only, so a run is
 *                         reproducible at best when the traffic is sent from
 *                         one CPU in the same order (best effort).
 *
 * tools/emcluster compiles one object per (threshold, seed) into the cluster's
 * run directory, e.g. /run/ethermpi/<prefix>/bpf/tc_drop_t858993459.o.
 */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

#ifndef EMC_DROP_THRESH
#define EMC_DROP_THRESH 0ULL
#endif

#ifdef EMC_SEED
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, __u32);
} emc_rng_state SEC(".maps");

static __always_inline __u32 emc_random(void)
{
    __u32 key = 0;
    __u32 *st = bpf_map_lookup_elem(&emc_rng_state, &key);
    __u32 x;

    if (!st)
        return bpf_get_prandom_u32();
    x = *st;
    if (x == 0) {
        /* first packet on this CPU: derive a non-zero state from the seed */
        x = (__u32)(EMC_SEED) ^ ((bpf_get_smp_processor_id() + 1) * 0x9e3779b9u);
        if (x == 0)
            x = 0x6d2b79f5u;
    }
    /* xorshift32 (Marsaglia) */
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    *st = x;
    return x;
}
#else
static __always_inline __u32 emc_random(void) { return bpf_get_prandom_u32(); }
#endif

/*
 * A dropped packet is consumed with TC_ACT_STOLEN, not TC_ACT_SHOT: SHOT is
 * reported back to the sender (sendmsg() fails with ENOBUFS, TCP takes it as
 * local congestion, ping silently sends again), while STOLEN looks like a
 * successful transmit, i.e. like a frame lost on the wire.
 */
SEC("tc")
int emc_tc_drop(struct __sk_buff *skb)
{
    if ((__u64)emc_random() < (__u64)(EMC_DROP_THRESH))
        return TC_ACT_STOLEN;
    return TC_ACT_OK;
}

/* The sources are BSD-3-Clause (LICENSE); "Dual BSD/GPL" is the string the
 * kernel reads as GPL-compatible, which keeps every helper available. */
char _license[] SEC("license") = "Dual BSD/GPL";
