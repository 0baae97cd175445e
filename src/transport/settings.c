/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file settings.c
 * The settings table (settings.h): every default once, with its reason.
 */
#include "transport/settings.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "proto/proto.h"

#define OFF(f) offsetof(em_settings_t, f)
#define ALL    EM_FRONT_ALL
#define BTLS   EM_FRONT_BTLS
#define RUDP   EM_FRONT_RUDP
#define DPDK   EM_FRONT_DPDK
#define OFI    EM_FRONT_OFI
#define UDPL   (EM_FRONT_RUDP | EM_FRONT_OFI) /* who can open the kernel UDP link */
#define BYPL   (EM_FRONT_DPDK | EM_FRONT_OFI) /* ... the DPDK and daemon links */
#define PORT   (BYPL | EM_FRONT_EMD)          /* ... and the daemon's own DPDK port */
#define XDPL   (EM_FRONT_RUDP | EM_FRONT_OFI) /* ... the native AF_XDP link */
#define XDPE   (XDPL | EM_FRONT_EMD) /* ... and the daemon's AF_XDP port (emd --link xdp) */
#define FRAML  (PORT | XDPL)         /* ... a link with L2 or udp framing */
/* XDPL: the provider and the rudp BTL, the front ends that name interfaces
 * (if_include) and build without DPDK (docs/design.md "Which BTL opens the
 * native AF_XDP link") */

/* Ranges: the widest that makes sense; INT_MAX-sized values stay in int. */
#define BIG 2147483647L

/* clang-format off */
static const em_setting_t table[] = {
    /* ---- protocol (every front end) ---------------------------------- */
    { "window", EM_SET_INT, ALL, 5, OFF(window), "-1", -1, EM_WINDOW_MAX, NULL,
      "Frames in flight per peer before waiting for an ACK (1-256); 0 = sized from window_kb "
      "at the link's frame size (64-256 frames); -1 = the link's: 0 on kernel UDP, 64 on the "
      "bypass links (the congestion window, in bytes, decides how much of it is used)" },
    /* A window in bytes on kernel UDP: 64 frames are 94 KB at MTU 1500, which
     * bounded rudp's bandwidth there; 384 KiB = 256 frames at 1500, 64 at 9000
     * (docs/design.md "link_udp"). */
    { "window_kb", EM_SET_INT, ALL, 5, OFF(window_kb), "384", 0, 1048576, NULL,
      "With window 0: about this many KiB in flight per peer (64 to 256 frames)" },
    { "recovery", EM_SET_STRING, ALL, 5, OFF(recovery), NULL, 0, 0, "sr|gbn",
      "Loss recovery: 'sr' (selective repeat with SACK) or 'gbn' (Go-Back-N with NACK)" },
    { "cc", EM_SET_STRING, ALL, 5, OFF(cc), NULL, 0, 0, "loss|delay|off",
      "Congestion control per peer: 'loss' (AIMD on loss, once per window of loss), 'delay' "
      "(loss and round-trip delay, paced: the simulator's best, but a loaded host's scheduling "
      "delays read as queueing) or 'off' (fixed window)" },
    { "rto_us", EM_SET_INT, ALL, 5, OFF(rto_us), NULL, 1, BIG, NULL,
      "Retransmit timeout in microseconds before the first round-trip sample (doubled on each "
      "consecutive timeout)" },
    { "rto_min_us", EM_SET_INT, ALL, 5, OFF(rto_min_us), NULL, 1, BIG, NULL,
      "Smallest adaptive retransmit timeout in microseconds (the timeout follows the measured "
      "round-trip time: srtt + 4 rttvar)" },
    { "rto_max_us", EM_SET_INT, ALL, 5, OFF(rto_max_us), NULL, 1, BIG, NULL,
      "Largest retransmit timeout in microseconds" },
    { "retries", EM_SET_INT, ALL, 5, OFF(retries), NULL, 1, BIG, NULL,
      "Consecutive timeouts without progress before a peer is declared failed (its operations "
      "then fail, and an MPI job aborts instead of hanging)" },
    { "ack_delay_us", EM_SET_INT, ALL, 5, OFF(ack_delay_us), NULL, 0, BIG, NULL,
      "Longest delay of a standalone ACK when no reply carries it, in microseconds" },
    { "rx_mem_mb", EM_SET_INT, ALL, 5, OFF(rx_mem_mb), NULL, 0, 1048576, NULL,
      "MiB of receive buffers (reassembly of multi-frame messages and out-of-order frames) over "
      "all peers of one link; a frame that needs more is dropped unacknowledged and sent again "
      "by its sender (counter drop_budget); 0 = no bound" },
    /* MPICH closes its endpoint right after its last send, and a lost last
     * frame must still be resent: 5 s covers many RTOs of a loaded host */
    { "linger_ms", EM_SET_INT, ALL, 5, OFF(linger_ms), "5000", 0, BIG, NULL,
      "At MPI_Finalize (BTLs) or fi_close of an endpoint (provider), wait at most this many ms "
      "for what this process sent to be acknowledged (a lost last frame is resent meanwhile), "
      "and name the peers that did not acknowledge.  0 = one pass: what is queued leaves, "
      "nothing is waited for (unacknowledged messages may be lost)" },
    { "mtu", EM_SET_INT, ALL | EM_FRONT_EMD, 5, OFF(mtu), "0", 0, 65535, NULL,
      "Frame size in bytes (kernel UDP: the largest datagram; DPDK: the L2 payload); 0 = as "
      "large as the link allows (interface MTU minus IP/UDP headers; DPDK: port and mbufs, "
      "at most 9000)" },

    /* ---- the BTLs' glue ----------------------------------------------- */
    { "random_isn", EM_SET_BOOL, BTLS, 9, OFF(random_isn), "1", 0, 1, NULL,
      "Random initial sequence numbers (off: every flow starts at 0; for debugging only)" },
    { "print_stats", EM_SET_BOOL, BTLS, 5, OFF(print_stats), "0", 0, 1, NULL,
      "Print protocol counters (retransmits, drops by reason, ...) at MPI_Finalize" },
    { "same_node", EM_SET_BOOL, BTLS, 5, OFF(same_node), "0", 0, 1, NULL,
      "Also carry traffic between ranks of the same node (normally vader's job; for testing)" },
    { "order_max_held", EM_SET_INT, BTLS, 5, OFF(order_max_held), "16384", 0, BIG, NULL,
      "Several links: messages from one peer kept while an earlier one is missing; a peer that "
      "needs more is failed (the job ends with a message); 0 = no bound" },
    { "order_max_mb", EM_SET_INT, BTLS, 5, OFF(order_max_mb), "64", 0, 1048576, NULL,
      "Several links: MiB of messages kept per peer while an earlier one is missing; 0 = no "
      "bound" },
    /* docs/design.md "Sends from the application's buffer" */
    { "inplace_min", EM_SET_INT, BTLS, 5, OFF(inplace_min), "16384", 0, BIG, NULL,
      "Contiguous messages of at least this many bytes are sent from the application's buffer, "
      "without a copy; such a send completes when the peer has acknowledged it.  0 = copy "
      "every message" },

    /* ---- which link ----------------------------------------------------- */
    { "link", EM_SET_STRING, OFI | RUDP, 1, OFF(link), "udp", 0, 0, "udp|dpdk|emd|xdp",
      "Which link carries the frames: udp (kernel UDP), dpdk (a DPDK PMD: memif, af_xdp, a "
      "NIC; see vdev), emd (the node daemon; see emd_socket) or xdp (a native AF_XDP socket on "
      "the interface if_include names, no DPDK; one process per interface queue).  The rudp "
      "BTL takes udp or xdp (dpdk and emd are the dpdk BTL's: btl_dpdk_vdev, btl_dpdk_mode)" },
    { "mode", EM_SET_STRING, DPDK, 1, OFF(mode), "direct", 0, 0, "direct|daemon",
      "direct: this process owns the DPDK port (one rank per node); daemon: the node's emd "
      "daemon owns it and the node's ranks attach to it (docs/daemon.md)" },

    /* ---- kernel UDP link -------------------------------------------------- */
    { "if_include", EM_SET_STRING, UDPL, 1, OFF(if_include), "", 0, 0, NULL,
      "Interface for the UDP socket: a name (eth0), an IPv4 address, or a subnet "
      "(10.77.0.0/24); empty = the first IPv4 interface the tcp BTL would use (provider: the "
      "first non-loopback IPv4 interface).  BTL: a comma list (eth0,eth1) opens one socket "
      "and module per entry (several links).  Link xdp: interface names, required" },
    /* 4 MiB holds a window of 384 KiB many times over; the kernel caps it at
     * net.core.rmem_max without CAP_NET_ADMIN (the rudp BTL says so) */
    { "sock_buf", EM_SET_INT, UDPL, 5, OFF(sock_buf), "4194304", 0, BIG, NULL,
      "Socket send and receive buffer size in bytes (without CAP_NET_ADMIN the kernel caps it "
      "at net.core.rmem_max / wmem_max); 0 = 4 MiB" },
    { "gso", EM_SET_BOOL, UDPL, 9, OFF(gso), "1", 0, 1, NULL,
      "Send runs of equal frames to one peer as one UDP GSO send (UDP_SEGMENT, up to 64 KB); "
      "falls back by itself where the kernel refuses" },
    { "gro", EM_SET_BOOL, UDPL, 9, OFF(gro), "1", 0, 1, NULL,
      "Let the kernel coalesce received datagrams (UDP_GRO); they are split again" },

    /* ---- native AF_XDP link ----------------------------------------------- */
    { "xdp_mode", EM_SET_STRING, XDPE, 4, OFF(xdp_mode), "auto", 0, 0, "auto|zerocopy|copy",
      "AF_XDP link: auto tries zero copy and falls back to copy mode (the reason is logged); "
      "zerocopy refuses to open without it; copy never tries it" },
    { "xdp_queue", EM_SET_INT, XDPE, 4, OFF(xdp_queue), "0", 0, 65535, NULL,
      "AF_XDP link: the interface queue its socket binds to" },
    /* one queue unless asked: frames arrive on the queues RSS (a NIC) or
     * the sender's tx queue (a veth) picks, so more queues need the
     * interface set up for them (docs/deploy.md) */
    { "xdp_queues", EM_SET_INT, XDPE, 4, OFF(xdp_queues), "1", 0, 16, NULL,
      "AF_XDP link: sockets on this many interface queues from xdp_queue on, sharing one "
      "UMEM (0 or 1: one); rx polls them all, a peer's frames leave on one of them.  Every "
      "rank needs the same value; the interface needs that many queues (ethtool -l)" },
    { "xdp_busy_poll_us", EM_SET_INT, XDPE, 5, OFF(xdp_busy_poll_us), "0", 0, 1000000, NULL,
      "AF_XDP link: busy-poll the queue for this many microseconds per poll "
      "(SO_PREFER_BUSY_POLL, SO_BUSY_POLL); 0 = off" },
    /* the DPDK route names its program in the devargs (xdp_prog=); this is
     * the native link's, with the same @FILE and %h forms as vdev, so one
     * command line gives every node its own (emcluster's lossy filters) */
    { "xdp_prog", EM_SET_STRING, XDPE, 4, OFF(xdp_prog), "", 0, 0, NULL,
      "AF_XDP link: the XDP filter object it attaches (ethermpi's xdp_drop.o or one built "
      "from its source), or @FILE to read the path from FILE; %h is replaced by the host "
      "name.  Empty: the file the environment variable EM_XDP_PROG names, else the installed "
      "<libdir>/ethermpi/xdp_drop.o" },

    /* ---- DPDK link -------------------------------------------------------- */
    { "vdev", EM_SET_STRING, PORT, 1, OFF(vdev), "", 0, 0, NULL,
      "DPDK device: devargs (e.g. net_memif0,role=client,socket=/run/x.sock,socket-abstract=no "
      "or net_af_xdp0,iface=eth0), or @FILE to read them from FILE; %h is replaced by the host "
      "name, %j by the job id (MPI) or 0 (provider).  Several devices separated by ';' "
      "(@/x/%h.memif;@/x/%h.memif1): BTL: one module per device, ob1 stripes over them; "
      "provider: one domain per device.  Empty: the ports EAL finds (e.g. NICs given in "
      "eal_args with -a)" },
    { "eal_args", EM_SET_STRING, PORT, 4, OFF(eal_args), "", 0, 0, NULL,
      "Extra DPDK EAL arguments, e.g. '-a 0000:3b:00.0'; empty = '--in-memory -m 256' with "
      "hugepages, else '--no-huge --no-shconf -m 256' (no files left behind either way)" },
    { "rx_loss", EM_SET_DOUBLE, PORT, 9, OFF(rx_loss), "0", 0, 1, NULL,
      "Testing: drop this fraction of received frames (seeded; for wires no kernel sees, e.g. "
      "memif)" },
    { "loss_seed", EM_SET_INT, PORT, 9, OFF(loss_seed), "0", 0, BIG, NULL,
      "Testing: seed of rx_loss (0 = fixed default)" },
    /* a memif cable waits for its other end, which a loaded node starts late */
    { "link_wait_ms", EM_SET_INT, PORT, 5, OFF(link_wait_ms), "20000", 0, BIG, NULL,
      "How long to wait for the port's link to come up (a memif cable waits for its other end)" },
    { "zero_copy", EM_SET_BOOL, BYPL, 5, OFF(zero_copy), "1", 0, 1, NULL,
      "Send payloads of 512 bytes or more straight from the user's buffer (DPDK external "
      "buffers chained behind the header) where the PMD takes chained mbufs and is a virtual "
      "device (memif): never on a hardware NIC; 0 = copy every payload into the frame" },
    { "framing", EM_SET_STRING, FRAML, 2, OFF(framing), "l2", 0, 0, "l2|udp",
      "l2: raw Ethernet frames (ethertype 0x88B5), for one L2 segment; udp: every frame in "
      "UDP/IPv4 to the peer's address and port, through the next hop the kernel names, for "
      "routed fabrics and cloud networks (docs/design.md \"Framing\").  Every process of the "
      "job must use the same.  Daemon: the node's emd must run the same (emd --framing).  "
      "Links dpdk, emd and xdp; the kernel UDP link is UDP/IPv4 anyway" },
    { "udp_port", EM_SET_INT, FRAML, 4, OFF(udp_port), "0", 0, 65535, NULL,
      "udp framing: this process's UDP port (0 = 29717; the AF_XDP filter object takes 29717 "
      "and 29718)" },
    { "udp_addr", EM_SET_STRING, FRAML, 4, OFF(udp_addr), "", 0, 0, NULL,
      "udp framing: this process's IPv4 address (empty: the af_xdp or xdp interface's; on a "
      "memif cable a link-local 169.254.x.y from the port's MAC)" },
    { "udp_checksum", EM_SET_BOOL, BYPL | XDPL, 5, OFF(udp_checksum), "1", 0, 1, NULL,
      "udp framing: send UDP checksums (by the NIC where it offloads them, else computed); 0 = "
      "send none (allowed over IPv4; the Ethernet FCS still covers each hop)" },

    /* ---- the node daemon's link ------------------------------------------ */
    { "emd_socket", EM_SET_STRING, BYPL, 2, OFF(emd_socket), "/run/ethermpi/emd/%h.sock", 0, 0,
      NULL, "Daemon: the emd daemon's control socket (%h = host name, @FILE = first line of "
      "FILE)" },
    { "emd_heartbeat_ms", EM_SET_INT, BYPL, 5, OFF(emd_heartbeat_ms), "3000", 0, BIG, NULL,
      "Daemon: the daemon is declared gone (the job aborts, the provider's peers fail) when it "
      "has not run for this long" },
    { "bulk_queue", EM_SET_STRING, BYPL, 4, OFF(bulk_queue), "auto", 0, 0, "auto|on|off",
      "Daemon: rendezvous (put) data on this process's bulk queue, a queue of its own on the "
      "daemon's port (docs/daemon.md, Bulk queues): auto = when the daemon offers one (else "
      "through the daemon, with a note), on = required (opening fails with the reason), off = "
      "always through the daemon" },

    /* ---- the provider's own ------------------------------------------------ */
    { "live_us", EM_SET_INT, OFI, 5, OFF(live_us), "-1", -1, BIG, NULL,
      "Liveness watch: a peer this endpoint waits for (a receive posted for it alone, a "
      "rendezvous) that sends nothing for this long is probed, and declared failed after "
      "retries unanswered probes; -1 = rto_max_us, 0 = off" },
    /* a bound, not a working size: an MPI's unexpected messages are bursts */
    { "unexp_mb", EM_SET_INT, OFI, 5, OFF(unexp_mb), "1024", 0, 1048576, NULL,
      "MiB of unexpected messages (arrived before their receive was posted) an endpoint holds; "
      "when a message would exceed it, the peer holding the most is failed (its operations "
      "end with FI_EIO) and its held messages dropped; 0 = no bound" },
    /* docs/ofi.md "Waiting in the CQ" */
    { "cq_spin_ns", EM_SET_INT, OFI, 5, OFF(cq_spin_ns), "2000", 0, BIG, NULL,
      "A caller that reads an empty CQ again within 20 us while a receive is posted is "
      "answered only after this many ns of progress without a completion; a CQ whose spins "
      "mostly expire stops spinning; 0 = answer at once" },
    { "yield_us", EM_SET_INT, OFI, 5, OFF(yield_us), "50", 0, BIG, NULL,
      "A caller that reads an empty CQ again within 20 us, when nothing has arrived or "
      "completed for this many us, yields the core (sched_yield) so a peer sharing its core "
      "runs; 0 = never" },
    { "eager_max", EM_SET_INT, OFI, 5, OFF(eager_max), "-1", -1, BIG, NULL,
      "Largest message sent eagerly; larger ones use rendezvous (a put into the receiver's "
      "buffer).  Also the inject size (at most 256 KiB).  -1 = the link's: 262144 on kernel "
      "UDP (where a rendezvous costs two more kernel crossings each way), 8192 on dpdk and "
      "emd; 0 = every message by rendezvous" },
    /* docs/ofi.md "When a send completes" */
    { "send_copy_max", EM_SET_INT, OFI, 5, OFF(send_copy_max), "8192", 0, BIG, NULL,
      "A send (not an inject) of up to this many bytes whose caller did not ask for "
      "FI_TRANSMIT_COMPLETE or stronger is copied after it leaves and completes at once, "
      "instead of at the peer's ACK; 0 = every send completes at the ACK" },
    /* docs/ofi.md "Addresses": named endpoints (prov/emo_name.c); the BTLs:
     * docs/design.md "BTLs on first contact" (ompi/btl/common/em_btl_peer.c) */
    { "names", EM_SET_STRING, OFI | BTLS, 5, OFF(names), "auto", 0, 0, "auto|wire|ids",
      "How processes know each other: wire = by address (link address, endpoint index, "
      "nonce), each numbering its peers itself through a first-contact handshake that also "
      "gives each pair its keys, on every link (the emd daemon's too); ids = by a "
      "job-wide number (provider: FI_ETHERMPI_ID, the launcher's rank, else random; BTLs: the "
      "vpid, keys from secrets in the modex); auto = wire.  Every process of a job must use "
      "the same" },
    /* ids below 2^24 (prov/emo_wire.h EMO_NPEERS_MAX: a muxed link's peers) */
    { "id", EM_SET_INT, OFI, 5, OFF(id), "-1", -1, 16777215, NULL,
      "With ids: this endpoint's id (0-16777215), unique in the job; -1 = the launcher's rank "
      "(PMIX_RANK, PMI_RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID), else random" },
    { "npeers", EM_SET_INT, OFI, 5, OFF(npeers), "0", 0, 16777216, NULL,
      "With ids only: ids in the job (every id below it, at most 2^24); 0 = 4 x the "
      "launcher's size, else 256.  Not read on named endpoints: their peer table grows "
      "with their peers" },
    { "first_contact", EM_SET_INT, OFI, 5, OFF(first_contact), "-1", -1, 16777216, NULL,
      "Peers that may reach this endpoint before the application inserted their address "
      "(Open MPI inserts peers lazily), held at once: named endpoints -1 = 65536, 0 = none; "
      "with ids, -1 = npeers, 0 = none" },
};
/* clang-format on */

size_t em_settings_size(void) { return sizeof(em_settings_t); }

const em_setting_t *em_settings_table(size_t *n)
{
    *n = sizeof table / sizeof table[0];
    return table;
}

const em_setting_t *em_setting_find(const char *name)
{
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (0 == strcmp(table[i].name, name))
            return &table[i];
    return NULL;
}

void *em_setting_ptr(em_settings_t *s, const em_setting_t *d) { return (char *)s + d->offset; }

const void *em_setting_cptr(const em_settings_t *s, const em_setting_t *d)
{
    return (const char *)s + d->offset;
}

static const char *recovery_name(em_recovery_t r) { return r == EM_RECOVERY_GBN ? "gbn" : "sr"; }

static const char *cc_name(em_cc_mode_t m)
{
    return m == EM_CC_OFF ? "off" : m == EM_CC_DELAY ? "delay" : "loss";
}

/* ns -> us, the protocol's timers in the units the front ends publish */
static int us(uint64_t ns)
{
    uint64_t v = ns / 1000u;
    return v > (uint64_t)BIG ? (int)BIG : (int)v;
}

void em_settings_default(em_settings_t *s)
{
    memset(s, 0, sizeof *s);
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        const em_setting_t *d = &table[i];
        if (d->dflt) {
            char ignore[8];
            (void)em_setting_parse(s, d, d->dflt, d->name, ignore, sizeof ignore);
        }
    }
    /* the protocol's own defaults (src/proto/proto.c, with their reasons) */
    em_proto_cfg_t p;
    em_proto_cfg_default(&p);
    s->recovery = (char *)recovery_name(p.recovery);
    s->cc = (char *)cc_name(p.cc);
    s->rto_us = us(p.rto_ns);
    s->rto_min_us = us(p.rto_min_ns);
    s->rto_max_us = us(p.rto_max_ns);
    s->retries = (int)p.max_retries;
    s->ack_delay_us = us(p.ack_delay_ns);
    s->rx_mem_mb = (int)(p.rx_mem_max >> 20);
}

void em_setting_fullname(const em_setting_t *d, unsigned front, char *buf, size_t len)
{
    if (front == EM_FRONT_OFI) {
        size_t o = (size_t)snprintf(buf, len, "FI_ETHERMPI_");
        for (const char *p = d->name; *p && o + 1 < len; p++)
            buf[o++] = (char)(*p >= 'a' && *p <= 'z' ? *p - 'a' + 'A' : *p);
        if (o < len)
            buf[o] = 0;
        return;
    }
    if (front == EM_FRONT_EMD) {
        size_t o = (size_t)snprintf(buf, len, "--");
        for (const char *p = d->name; *p && o + 1 < len; p++)
            buf[o++] = *p == '_' ? '-' : *p;
        if (o < len)
            buf[o] = 0;
        return;
    }
    snprintf(buf, len, "btl_%s_%s", front == EM_FRONT_RUDP ? "rudp" : "dpdk", d->name);
}

void em_setting_format(const em_settings_t *s, const em_setting_t *d, char *buf, size_t len)
{
    const void *v = em_setting_cptr(s, d);
    switch (d->type) {
    case EM_SET_INT: snprintf(buf, len, "%d", *(const int *)v); break;
    case EM_SET_BOOL: snprintf(buf, len, "%d", *(const bool *)v ? 1 : 0); break;
    case EM_SET_DOUBLE: snprintf(buf, len, "%g", *(const double *)v); break;
    case EM_SET_STRING: {
        const char *str = *(char *const *)v;
        snprintf(buf, len, "%s", str ? str : "");
        break;
    }
    }
}

static int parse_bool(const char *t, bool *out)
{
    static const char *const yes[] = { "1", "true", "yes", "on" };
    static const char *const no[] = { "0", "false", "no", "off" };
    for (size_t i = 0; i < 4; i++) {
        if (0 == strcasecmp(t, yes[i])) {
            *out = true;
            return 0;
        }
        if (0 == strcasecmp(t, no[i])) {
            *out = false;
            return 0;
        }
    }
    return -1;
}

int em_setting_parse(em_settings_t *s, const em_setting_t *d, const char *text, const char *name,
                     char *err, size_t errlen)
{
    void *v = em_setting_ptr(s, d);
    char *end;
    errno = 0;
    switch (d->type) {
    case EM_SET_INT: {
        long x = strtol(text, &end, 10);
        if (errno || end == text || *end || x < -BIG - 1 || x > BIG) {
            snprintf(err, errlen, "%s: '%.64s' is not an integer", name, text);
            return -1;
        }
        *(int *)v = (int)x;
        return 0;
    }
    case EM_SET_BOOL:
        if (parse_bool(text, (bool *)v) != 0) {
            snprintf(err, errlen, "%s: '%.64s' is not a boolean (0/1, true/false)", name, text);
            return -1;
        }
        return 0;
    case EM_SET_DOUBLE: {
        double x = strtod(text, &end);
        if (errno || end == text || *end) {
            snprintf(err, errlen, "%s: '%.64s' is not a number", name, text);
            return -1;
        }
        *(double *)v = x;
        return 0;
    }
    case EM_SET_STRING: *(const char **)v = text; return 0;
    }
    return -1;
}

void em_settings_normalize(em_settings_t *s)
{
    em_settings_t d;
    em_settings_default(&d);
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        if (table[i].type != EM_SET_STRING)
            continue;
        char **v = em_setting_ptr(s, &table[i]);
        if (table[i].choices && (!*v || !**v))
            *v = *(char **)em_setting_ptr(&d, &table[i]); /* static text */
        else if (!*v)
            *v = "";
    }
}

/* the index of @p val in "a|b|c", or -1 */
static int choice_index(const char *choices, const char *val)
{
    size_t n = strlen(val);
    int i = 0;
    for (const char *p = choices; *p; i++) {
        size_t k = strcspn(p, "|");
        if (k == n && 0 == strncmp(p, val, n))
            return i;
        p += k;
        if (*p == '|')
            p++;
    }
    return -1;
}

int em_setting_choice_of(const em_setting_t *d, const char *val)
{
    if (!d || d->type != EM_SET_STRING || !d->choices)
        return -1;
    if (!val || !*val) { /* empty is the default (em_settings_normalize) */
        if (d->dflt) {
            val = d->dflt;
        } else { /* a protocol setting: the core's default */
            em_settings_t x;
            em_settings_default(&x);
            val = *(char *const *)em_setting_cptr(&x, d);
        }
    }
    return choice_index(d->choices, val);
}

int em_setting_choice(const em_settings_t *s, const char *name)
{
    const em_setting_t *d = em_setting_find(name);
    return d ? em_setting_choice_of(d, *(char *const *)em_setting_cptr(s, d)) : -1;
}

int em_settings_check(const em_settings_t *s, unsigned front, char *err, size_t errlen)
{
    char name[64];
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        const em_setting_t *d = &table[i];
        if (!(d->fronts & front))
            continue;
        const void *v = em_setting_cptr(s, d);
        em_setting_fullname(d, front, name, sizeof name);
        if (d->type == EM_SET_INT) {
            int x = *(const int *)v;
            if (x < d->min || x > d->max) {
                snprintf(err, errlen, "%s is %d: it must be %ld to %ld", name, x, d->min, d->max);
                return -1;
            }
        } else if (d->type == EM_SET_DOUBLE) {
            double x = *(const double *)v;
            if (!(x >= (double)d->min && x <= (double)d->max)) {
                snprintf(err, errlen, "%s is %g: it must be %ld to %ld", name, x, d->min, d->max);
                return -1;
            }
        } else if (d->type == EM_SET_STRING && d->choices) {
            const char *x = *(char *const *)v;
            if (!x || choice_index(d->choices, x) < 0) {
                snprintf(err, errlen, "%s is '%.64s': it must be one of %s", name, x ? x : "",
                         d->choices);
                return -1;
            }
        }
    }
    /* a window sized from window_kb needs a window_kb */
    if (s->window == 0 && s->window_kb <= 0) {
        em_setting_fullname(em_setting_find("window_kb"), front, name, sizeof name);
        snprintf(err, errlen, "%s must be over 0 when the window is 0 (sized from it)", name);
        return -1;
    }
    return 0;
}
