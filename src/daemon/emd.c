/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file emd.c
 * `emd`, the per-node polling daemon (docs/daemon.md; the polling process
 * of [dpdk-btl] §4.1-4.2, docs/references.md): the process around one
 * struct emd (emd.h) with a DPDK port, or (--link xdp) the native AF_XDP
 * link (emd_xdp.c: no DPDK in its path, no bulk queues).  This file holds
 * what needs DPDK or the command line: the options, whether the ranks can
 * have bulk queues, opening the port (link_dpdk, with the bulk queues as
 * extra queue pairs whose pools this file makes) and the port's extras (emd_port_ops_t: its counters, the
 * bulk slots' pool reset), signals, and main.  Everything else is DPDK-free:
 * emd_core.h (data plane: forwarding, eager ACKs, peers), emd_ctl.h
 * (control socket, attach), emd_run.c (the loop and idle policy).
 *
 * One process per node owns the port (a DPDK primary) and carries the
 * frames of every MPI process on the node; processes attach over a unix
 * socket (emd_abi/emd_ctl_msg.h) and get a shared region with an rx and a
 * tx ring (emd_abi/emd_region.h); a closed socket detaches them, so a
 * killed process's rings are reclaimed at once.
 *
 * Bulk queues (emd_abi/emd_abi.h): on the memif wire, with hugepages, the
 * daemon is a DPDK primary with a file prefix (not --in-memory) and 1 + S*S
 * queue pairs; it hands each attaching process a slot (the lowest free one,
 * up to S = --bulk-slots), whose queues that process then drives itself as
 * a DPDK secondary: put frames never pass here.  When a slot's process
 * detaches, the slot's mbuf pools are reset (it may have died holding
 * mbufs).
 *
 * Single-threaded.  Usage: emd --help.
 */
#include "daemon/emd.h"
#include "daemon/emd_xdp.h"
#include "link/link_dpdk.h"
#include "transport/transport.h"
#include "link/link_util.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#ifdef EM_HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

#define MAX_CLIENTS_LIMIT 1024

/* the one daemon of this process, for the signal handlers only */
static struct emd *sig_emd;
static void on_stop(int sig)
{
    (void)sig;
    sig_emd->stop = 1;
}
static void on_usr1(int sig)
{
    (void)sig;
    sig_emd->dump = 1;
}
static void on_hup(int sig)
{
    (void)sig;
    sig_emd->hup = 1;
}

static void emd_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void emd_log(const char *fmt, ...)
{
    char ts[32];
    time_t t = time(NULL);
    struct tm tm;
    strftime(ts, sizeof ts, "%H:%M:%S", localtime_r(&t, &tm));
    fprintf(stderr, "emd[%ld] %s: ", (long)getpid(), ts);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
}

/** `emd --status SOCKET`: print the counters of the emd serving SOCKET.  @return the exit code. */
static int status_main(const char *spec)
{
    char path[256], err[512];
    struct emd_ctl_status s;
    if (em_link_dpdk_devargs(spec, "emd", path, sizeof path, err, sizeof err) != 0 ||
        emd_status_query(path, 2000, &s, err, sizeof err) != 0) {
        fprintf(stderr, "emd --status: %s\n", err);
        return 1;
    }
    emd_status_print(&s, stdout);
    return fflush(stdout) == 0 ? 0 : 1;
}

/* ------------------------------------------------------- the port's extras -- */

/*
 * The DPDK port as emd_port_ops_t sees it (the ops' ctx): the link, and the
 * bulk queues' pools: per slot the pool its rx queues receive into and the
 * pool it sends from (emd_abi.h: EMD_BULKQ_*_POOL), created as the port
 * sets up its extra queues: 1 + S*S queue pairs, queue q >= 1 received by
 * slot (q - 1) % S.  The DPDK link only configures the queues.
 */
struct dpdk_port {
    em_link_t *link;
    uint16_t slots;
    struct rte_mempool *pools[EMD_BULKQ_SLOTS_MAX][2];
};

/** emd_port_ops_t::stats over link_dpdk. */
static void port_stats(void *ctx, emd_port_stats_t *out)
{
    em_link_t *link = ((struct dpdk_port *)ctx)->link;
    em_dpdk_port_stats_t q;
    out->tx_full = em_link_dpdk_stats(link)->tx_full;
    if (em_link_dpdk_port_stats(link, &q) == 0) {
        /* every queue but the daemon's own queue 0: the ranks' bulk queues */
        out->bulk_known = 1;
        out->bulk_rx_frames = q.rx_pkts - q.q0_rx_pkts;
        out->bulk_rx_bytes = q.rx_bytes - q.q0_rx_bytes;
        out->bulk_tx_frames = q.tx_pkts - q.q0_tx_pkts;
        out->bulk_tx_bytes = q.tx_bytes - q.q0_tx_bytes;
    }
}

/** em_dpdk_extra_queues_t::rx_pool. */
static struct rte_mempool *bulk_rx_pool(void *ctx, const em_dpdk_queue_info_t *qi, char *err,
                                        size_t errlen)
{
    struct rte_mempool *(*bulk_pools)[2] = ((struct dpdk_port *)ctx)->pools;
    unsigned s = (qi->queue - 1u) % ((struct dpdk_port *)ctx)->slots;
    if (!bulk_pools[s][0]) {
        char rx[64], tx[64];
        snprintf(rx, sizeof rx, EMD_BULKQ_RX_POOL, qi->port, s);
        snprintf(tx, sizeof tx, EMD_BULKQ_TX_POOL, qi->port, s);
        bulk_pools[s][0] = em_link_dpdk_queue_pool(qi, rx, EMD_BULKQ_RX_MBUFS, err, errlen);
        if (bulk_pools[s][0])
            bulk_pools[s][1] = em_link_dpdk_queue_pool(qi, tx, EMD_BULKQ_TX_MBUFS, err, errlen);
    }
    return bulk_pools[s][1] ? bulk_pools[s][0] : NULL;
}

/** em_dpdk_extra_queues_t::undo: the port did not open; free the pools while EAL still runs. */
static void bulk_pools_free(void *ctx)
{
    struct rte_mempool *(*bulk_pools)[2] = ((struct dpdk_port *)ctx)->pools;
    for (unsigned s = 0; s < EMD_BULKQ_SLOTS_MAX; s++)
        for (unsigned k = 0; k < 2; k++) {
            em_link_dpdk_pool_free(bulk_pools[s][k]);
            bulk_pools[s][k] = NULL;
        }
}

/** emd_port_ops_t::slot_reset: every mbuf of the slot's pools back, as new. */
static int port_slot_reset(void *ctx, uint16_t slot)
{
    struct rte_mempool *(*bulk_pools)[2] = ((struct dpdk_port *)ctx)->pools;
    if (slot >= EMD_BULKQ_SLOTS_MAX || !bulk_pools[slot][1])
        return -1;
    int rc = em_link_dpdk_pool_reset(bulk_pools[slot][0]);
    return em_link_dpdk_pool_reset(bulk_pools[slot][1]) | rc;
}

static const emd_port_ops_t dpdk_port_ops = { .stats = port_stats, .slot_reset = port_slot_reset };

static int hugetlbfs_mounted(void)
{
    FILE *f = fopen("/proc/mounts", "r");
    char line[512];
    int found = 0;
    if (!f)
        return 0;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, " hugetlbfs ") != NULL;
    fclose(f);
    return found;
}

/* hugepages the bulk-queue daemon needs (2 MB pages): its port pool
 * (8191 mbufs of ~9.5 KB) and the slots' pools */
#define BULKQ_HUGEPAGES_MIN 96

/**
 * Can the ranks have bulk queues?  Sets e->ctl.bulk_slots to 0 and e->ctl.bulk_why when
 * not.  @return the EAL arguments to use: the given ones, or for own
 * queues a hugepage-backed primary with the file prefix (link_dpdk adds
 * it), or "" (link_dpdk's default: in memory, no files).
 */
static const char *bulkq_possible(struct emd *e, const char *vdev, const char *eal_args)
{
    const char *why = NULL;
    static char hp[EMD_BULKQ_WHY_LEN];
    if (e->ctl.bulk_slots == 0)
        why = "emd --bulk-slots 0";
    else if (e->core.framing == EMD_FRAMING_UDP)
        /* a bulk queue writes L2 frames to the peer node's MAC (link_bulkq);
         * udp framing would need IP/UDP headers and next-hop lookups in
         * every rank, for the memif cable only (the one wire with bulk
         * queues), which has no router to cross */
        why = "emd --framing udp (bulk queues write L2 frames only)";
    else if (strncmp(vdev, "net_memif", 9) != 0 || strchr(vdev, ';'))
        why = strstr(vdev, "af_xdp") ? "the af_xdp wire (DPDK secondaries cannot rx/tx on it)"
                                     : "not a memif wire (no per-process queues without rte_flow)";
    else if (strstr(eal_args, "--in-memory") || strstr(eal_args, "--no-shconf") ||
             strstr(eal_args, "--no-huge"))
        why = "the daemon runs --in-memory/--no-shconf/--no-huge (DPDK secondaries cannot attach)";
    else if (!*eal_args &&
             (!hugetlbfs_mounted() || em_link_dpdk_hugepages_free() < BULKQ_HUGEPAGES_MIN)) {
        snprintf(hp, sizeof hp,
                 "no hugepages: echo 256 >/proc/sys/vm/nr_hugepages; "
                 "mount -t hugetlbfs nodev /dev/hugepages");
        why = hp;
    }
    if (why) {
        e->ctl.bulk_slots = 0;
        snprintf(e->ctl.bulk_why, sizeof e->ctl.bulk_why, "%s", why);
        return eal_args;
    }
    return *eal_args ? eal_args : "--proc-type=primary";
}

static void usage(FILE *f)
{
    em_settings_t dflt; /* the table's defaults (src/transport/settings.c) */
    em_settings_default(&dflt);
    fprintf(f,
            "usage: emd --socket PATH --vdev SPEC [options]\n"
            "       emd --socket PATH --link xdp --iface NAME [options]\n"
            "       emd --status PATH   print the counters of the emd serving PATH as\n"
            "                           'name value' lines (any user the access rule admits)\n"
            "  The ethermpi node daemon: owns the port (DPDK or AF_XDP), serves the node's MPI\n"
            "  processes (dpdk BTL, --mca btl_dpdk_mode daemon).  See docs/daemon.md.\n"
            "  --socket PATH      control socket the processes attach to (%%h = host name)\n"
            "  --vdev SPEC        DPDK devargs, or @FILE (first line); %%h = host name,\n"
            "                     %%j = \"emd\"; empty: the first port EAL finds\n"
            "  --eal-args ARGS    extra EAL arguments (default: see link_dpdk)\n"
            "  --link dpdk|xdp    the port: dpdk (default; --vdev), or xdp: a native AF_XDP\n"
            "                     socket on --iface, no DPDK (no bulk queues)\n"
            "  --iface NAME       --link xdp: the interface\n"
            "  --xdp-queue N      --link xdp: its queue (default 0)\n"
            "  --xdp-queues N     --link xdp: sockets on N queues from --xdp-queue on (default 1)\n"
            "  --xdp-mode M       --link xdp: auto (zero copy if the driver can), zerocopy, copy\n"
            "  --xdp-busy-poll-us N  --link xdp: busy-poll the queue this long (0: off)\n"
            "  --xdp-prog FILE    --link xdp: the XDP filter (xdp_drop.o; @FILE, %%h as --vdev;\n"
            "                     default $EM_XDP_PROG, else the installed one)\n"
            "  --mtu N            L2 payload bytes (0 = largest)\n"
            "  --framing l2|udp   l2 (default): raw Ethernet frames, one segment; udp: inside\n"
            "                     UDP/IPv4, to the peer node's IPv4 address and port, across\n"
            "                     routers (no bulk queues; the ranks need btl_dpdk_framing udp)\n"
            "  --udp-port N       udp framing: this node's UDP port (default 29717)\n"
            "  --udp-addr A.B.C.D udp framing: this node's IPv4 address (default: the af_xdp\n"
            "                     interface's; on a memif cable 169.254.x.y from the MAC)\n"
            "  --udp-no-csum      udp framing: send no UDP checksum (0; the FCS covers each hop)\n"
            "  --rx-kib N         per-process rx ring in KiB, power of 2 (default 16384: 16 MiB,\n"
            "                     e.g. 50,000 frames of 256 B or 1,800 of 9000 B)\n"
            "  --tx-slots N       per-process tx ring slots, power of 2 (default 1024)\n"
            "  --max-clients N    processes at once (default 64)\n"
            "  --max-per-uid N    processes of one uid at once (default 3/4 of --max-clients;\n"
            "                     a uid also holds at most 3/4 of the node table); 0: no\n"
            "                     per-uid limits (a node with one user)\n"
            "  --max-flows N      peers per process the daemon acknowledges for (default 4096)\n"
            "  --max-nodes N      nodes the daemon sends to at once (default 1024; unused ones age "
            "out)\n"
            "  --group NAME       who may attach: members of this group (default: the daemon's "
            "group);\n"
            "                     the socket is made with this group, mode 0660\n"
            "  --uid USER         who may attach: this user too (and the socket's owner)\n"
            "  --spin-us N        keep polling this long after the last frame (default 50)\n"
            "  --max-sleep-us N   longest idle sleep (default 200)\n"
            "  --rx-loss P        testing: drop this fraction of received frames (seeded); SIGHUP\n"
            "                     re-reads it from SOCKET.loss (emcluster emd loss)\n"
            "  --no-ack           do not acknowledge eager frames for the processes\n"
            "  --no-yield         never sched_yield() while spinning (a core of its own)\n"
            "  --loss-seed N      seed of --rx-loss\n"
            "  --link-wait-ms N   wait this long for the port's link (default %d)\n"
            "  --bulk-slots N     bulk queues: up to N processes get queues of their own for\n"
            "                     rendezvous (put) data (1 + N*N queue pairs; memif wire and\n"
            "                     hugepages, no --link xdp; both daemons of a cable agree);\n"
            "                     0 = none, puts go through the daemon (default 4)\n"
            "  --file-prefix P    EAL file prefix (default emd-%%h); the ranks attach to it as\n"
            "                     DPDK secondaries\n"
            "  -v, --verbose      log attaches and detaches (a client detached for bad rings or\n"
            "                     messages is always logged, with its pid and uid)\n"
            "  SIGUSR1 logs the counters; SIGTERM/SIGINT stop (clients see the stop).\n"
            "  The port's options are the settings the BTLs and the provider share\n"
            "  (btl_dpdk_<name>, FI_ETHERMPI_<NAME>), with their defaults and ranges.\n",
            dflt.link_wait_ms);
}

/**
 * Open the port (a DPDK primary; with bulk queues hugepage-backed, 1 + S*S
 * queue pairs) and check the bulk-queue names the clients will check.
 * @return the link, or NULL after saying why on stderr, with the exit code in @p rc.
 */
static em_link_t *open_port(struct emd *e, struct dpdk_port *port, em_dpdk_cfg_t cfg, int *rc)
{
    char err[512];
    const char *prefix = cfg.file_prefix;
    *rc = 1;
    cfg.eal_args = bulkq_possible(e, cfg.vdev, cfg.eal_args);
    cfg.framing = e->core.framing == EMD_FRAMING_UDP ? EM_DPDK_FRAMING_UDP : EM_DPDK_FRAMING_L2;
    if (e->ctl.bulk_slots)
        cfg.extra = (em_dpdk_extra_queues_t){ .n = (uint16_t)(emd_bulkq_queues(e->ctl.bulk_slots) -
                                                              1u),
                                              .rx_pool = bulk_rx_pool,
                                              .undo = bulk_pools_free,
                                              .ctx = port };
    port->slots = e->ctl.bulk_slots;
    em_link_t *link = em_link_dpdk_open(&cfg, err, sizeof err);
    if (!link) {
        fprintf(stderr, "emd: %s\n", err);
        return NULL;
    }
    if (e->core.framing == EMD_FRAMING_UDP && link->local.len != EM_DPDK_ADDR_UDP) {
        fprintf(stderr, "emd: the port has no udp address (%u-byte blob)\n", link->local.len);
        em_link_close(link);
        return NULL;
    }
    if (link->mtu <= EMD_WIRE_HDR_LEN + 64) {
        fprintf(stderr, "emd: the port's MTU (%u) is too small\n", link->mtu);
        em_link_close(link);
        return NULL;
    }
    if (e->ctl.bulk_slots) {
        snprintf(e->ctl.bulk_prefix, sizeof e->ctl.bulk_prefix, "%s", prefix);
        em_link_dpdk_port_name(link, e->ctl.bulk_port, sizeof e->ctl.bulk_port);
        struct emd_bulkq_info probe = { .slots = e->ctl.bulk_slots,
                                        .slot = 0,
                                        .queues = emd_bulkq_queues(e->ctl.bulk_slots) };
        memcpy(probe.prefix, e->ctl.bulk_prefix, sizeof probe.prefix);
        memcpy(probe.port, e->ctl.bulk_port, sizeof probe.port);
        const char *why = NULL;
        if (emd_bulkq_check(&probe, &why) != 0) { /* what the clients will check */
            fprintf(stderr, "emd: bulk queues: %s (prefix '%s', port '%s')\n", why, prefix,
                    e->ctl.bulk_port);
            em_link_close(link);
            *rc = 2;
            return NULL;
        }
    }
    return link;
}

static int parse_u32(const char *s, uint32_t *out)
{
    char *e;
    errno = 0;
    unsigned long v = strtoul(s, &e, 10);
    if (errno || *e || e == s || v > 0xffffffffu)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

struct args {
    const char *sock_spec, *prefix_spec, *status_spec;
    /** the port's settings: the rows of the one settings table
     *  (src/transport/settings.c) that name emd, as --<name>; the same
     *  names, defaults and ranges as the BTLs' and the provider's */
    em_settings_t port;
    uint32_t bulk_slots, spin_us, max_sleep_us;
    uint32_t rx_kib, max_clients, max_flows, max_nodes;
    int verbose, no_ack;
    int xdp;                  /**< --link xdp: the native AF_XDP port (emd_xdp.h) */
    const char *link, *iface; /**< --link, --iface */
    int bulk_slots_set;       /**< --bulk-slots given */
};

/* --<option> @p val into the table row @p name of @p a->port; 0 or -1 */
static int set_port(struct args *a, const char *name, const char *val)
{
    char opt[64], err[160];
    const em_setting_t *d = em_setting_find(name);
    em_setting_fullname(d, EM_FRONT_EMD, opt, sizeof opt);
    if (em_setting_parse(&a->port, d, val, opt, err, sizeof err) != 0) {
        fprintf(stderr, "emd: %s\n", err);
        return -1;
    }
    return 0;
}

/*
 * The port's options fit the port: each option a port does not take is
 * refused with the one it takes, not ignored.  With --link xdp the ranks
 * get no bulk queues (emd_xdp.h): the default --bulk-slots 4 becomes 0,
 * an explicit non-zero --bulk-slots is refused.  0 or -1.
 */
static int check_port_args(struct args *a)
{
    const char *why = NULL;
    a->xdp = a->link && 0 == strcmp(a->link, "xdp");
    if (a->link && !a->xdp && strcmp(a->link, "dpdk") != 0)
        why = "--link must be dpdk (a DPDK port: --vdev) or xdp (AF_XDP: --iface)";
    else if (!a->xdp) {
        if (a->iface)
            why = "--iface names the AF_XDP port's interface: add --link xdp (or keep the DPDK "
                  "port and give --vdev net_af_xdp0,iface=NAME)";
    } else if (a->port.vdev && *a->port.vdev)
        why = "--vdev names a DPDK device: with --link xdp name the interface with --iface";
    else if (a->port.eal_args && *a->port.eal_args)
        why = "--eal-args: --link xdp runs no DPDK (drop it, or use the DPDK port: --vdev)";
    else if (!a->iface || !*a->iface || strchr(a->iface, ','))
        why = "--link xdp needs one interface: --iface NAME (its queue: --xdp-queue)";
    else if (a->bulk_slots_set && a->bulk_slots)
        why = "--bulk-slots: bulk queues are queue pairs of a DPDK port that the ranks drive as "
              "DPDK secondaries; --link xdp has none.  Drop --bulk-slots (the ranks' "
              "rendezvous data then goes through the daemon), or run the DPDK port (--vdev)";
    if (why) {
        fprintf(stderr, "emd: %s\n", why);
        return -1;
    }
    if (a->xdp)
        a->bulk_slots = 0;
    return 0;
}

/** The command line into @p a (and @p e's access rule and limits).
 *  @return -1 to go on, or the exit code (0 after --help, 2 on bad arguments). */
static int parse_args(struct emd *e, int argc, char **argv, struct args *a)
{
    static const struct option opts[] = { { "socket", required_argument, NULL, 's' },
                                          { "vdev", required_argument, NULL, 'd' },
                                          { "eal-args", required_argument, NULL, 'e' },
                                          { "mtu", required_argument, NULL, 'm' },
                                          { "rx-kib", required_argument, NULL, 'R' },
                                          { "tx-slots", required_argument, NULL, 'T' },
                                          { "max-clients", required_argument, NULL, 'C' },
                                          { "spin-us", required_argument, NULL, 'S' },
                                          { "max-sleep-us", required_argument, NULL, 'Z' },
                                          { "rx-loss", required_argument, NULL, 'l' },
                                          { "loss-seed", required_argument, NULL, 'L' },
                                          { "link-wait-ms", required_argument, NULL, 'w' },
                                          { "verbose", no_argument, NULL, 'v' },
                                          { "no-ack", no_argument, NULL, 'A' },
                                          { "no-yield", no_argument, NULL, 'Y' },
                                          { "help", no_argument, NULL, 'h' },
                                          { "bulk-slots", required_argument, NULL, 'Q' },
                                          { "file-prefix", required_argument, NULL, 'P' },
                                          { "max-per-uid", required_argument, NULL, 'U' },
                                          { "max-flows", required_argument, NULL, 'F' },
                                          { "max-nodes", required_argument, NULL, 'N' },
                                          { "group", required_argument, NULL, 'G' },
                                          { "uid", required_argument, NULL, 'I' },
                                          { "status", required_argument, NULL, 'q' },
                                          { "framing", required_argument, NULL, 'x' },
                                          { "udp-port", required_argument, NULL, 'u' },
                                          { "udp-addr", required_argument, NULL, 'a' },
                                          { "udp-no-csum", no_argument, NULL, 'n' },
                                          { "link", required_argument, NULL, 'k' },
                                          { "iface", required_argument, NULL, 'i' },
                                          { "xdp-mode", required_argument, NULL, 'X' },
                                          { "xdp-queue", required_argument, NULL, 'D' },
                                          { "xdp-queues", required_argument, NULL, 'W' },
                                          { "xdp-busy-poll-us", required_argument, NULL, 'B' },
                                          { "xdp-prog", required_argument, NULL, 'p' },
                                          { 0, 0, 0, 0 } };
    *a = (struct args){ .prefix_spec = "emd-%h",
                        .bulk_slots = 4,
                        .spin_us = 50,
                        .max_sleep_us = 200,
                        .rx_kib = 16384,
                        .max_clients = 64,
                        .max_flows = EMD_FLOWS_DEFAULT,
                        .max_nodes = EMD_NODES_DEFAULT };
    em_settings_default(&a->port);
    const char *group = NULL, *user = NULL;
    e->ctl.tx_slots = 1024;
    e->ctl.max_per_uid = EMD_PER_UID_AUTO;
    int o, bad = 0;
    while ((o = getopt_long(argc, argv, "vh", opts, NULL)) != -1) {
        switch (o) {
        case 's': a->sock_spec = optarg; break;
        case 'd': bad |= set_port(a, "vdev", optarg); break;
        case 'e': bad |= set_port(a, "eal_args", optarg); break;
        case 'm': bad |= set_port(a, "mtu", optarg); break;
        case 'R': bad |= parse_u32(optarg, &a->rx_kib); break;
        case 'T': bad |= parse_u32(optarg, &e->ctl.tx_slots); break;
        case 'C': bad |= parse_u32(optarg, &a->max_clients); break;
        case 'U': bad |= parse_u32(optarg, &e->ctl.max_per_uid); break;
        case 'F': bad |= parse_u32(optarg, &a->max_flows); break;
        case 'N': bad |= parse_u32(optarg, &a->max_nodes); break;
        case 'G': group = optarg; break;
        case 'I': user = optarg; break;
        case 'q': a->status_spec = optarg; break;
        case 'S': bad |= parse_u32(optarg, &a->spin_us); break;
        case 'Z': bad |= parse_u32(optarg, &a->max_sleep_us); break;
        case 'L': bad |= set_port(a, "loss_seed", optarg); break;
        case 'w': bad |= set_port(a, "link_wait_ms", optarg); break;
        case 'Q':
            bad |= parse_u32(optarg, &a->bulk_slots);
            a->bulk_slots_set = 1;
            break;
        case 'k': a->link = optarg; break;
        case 'i': a->iface = optarg; break;
        case 'X': bad |= set_port(a, "xdp_mode", optarg); break;
        case 'D': bad |= set_port(a, "xdp_queue", optarg); break;
        case 'W': bad |= set_port(a, "xdp_queues", optarg); break;
        case 'B': bad |= set_port(a, "xdp_busy_poll_us", optarg); break;
        case 'p': bad |= set_port(a, "xdp_prog", optarg); break;
        case 'P': a->prefix_spec = optarg; break;
        case 'x': bad |= set_port(a, "framing", optarg); break;
        case 'u': bad |= set_port(a, "udp_port", optarg); break;
        case 'a': bad |= set_port(a, "udp_addr", optarg); break;
        case 'n': a->port.udp_checksum = false; break;
        case 'l': bad |= set_port(a, "rx_loss", optarg); break;
        case 'v': a->verbose = 1; break;
        case 'A': a->no_ack = 1; break;
        case 'Y': e->yield = -1; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    e->ctl.allow_uid = user ? emd_ctl_user(user) : -1;
    e->ctl.allow_gid = group ? emd_ctl_group(group) : -1;
    if ((user && e->ctl.allow_uid < 0) || (group && e->ctl.allow_gid < 0)) {
        fprintf(stderr, "emd: unknown %s '%s'\n", user && e->ctl.allow_uid < 0 ? "user" : "group",
                user && e->ctl.allow_uid < 0 ? user : group);
        return 2;
    }
    char err[256];
    if (!bad && em_settings_check(&a->port, EM_FRONT_EMD, err, sizeof err) != 0) {
        fprintf(stderr, "emd: %s\n", err);
        return 2;
    }
    e->core.framing = 0 == strcmp(a->port.framing, "udp") ? EMD_FRAMING_UDP : EMD_FRAMING_L2;
    if (a->status_spec && !bad && optind == argc)
        return -1;
    bad |= check_port_args(a);
    if (bad || !a->sock_spec || optind != argc || a->max_clients == 0 ||
        a->max_clients > MAX_CLIENTS_LIMIT || a->max_sleep_us == 0 ||
        a->bulk_slots > EMD_BULKQ_SLOTS_MAX || a->max_flows > EMD_FLOWS_MAX ||
        a->max_nodes > 65535) {
        fprintf(stderr, "emd: bad or missing arguments\n");
        usage(stderr);
        return 2;
    }
    return -1;
}

/** Set @p e up from the arguments: the rings, the instance, the two planes.  @return 0 or an exit code. */
static int setup(struct emd *e, const struct args *A, em_link_t *link)
{
    uint32_t ss, cmtu = link->mtu - EMD_WIRE_HDR_LEN;
    /* what arrives while a process computes must fit: the compute-burst
     * experiment's 10,000 eager frames of 256 B take 3.2 MB */
    e->ctl.rx_size = A->rx_kib <= (EMD_RX_SIZE_MAX >> 10) ? A->rx_kib << 10 : 0;
    if (emd_shm_size(cmtu, e->ctl.rx_size, e->ctl.tx_slots, &ss) == 0) {
        fprintf(stderr, "emd: bad ring sizes (powers of 2: rx %u..%u KiB, tx %u..%u slots)\n",
                EMD_RX_SIZE_MIN >> 10, EMD_RX_SIZE_MAX >> 10, EMD_SLOTS_MIN, EMD_SLOTS_MAX);
        return 2;
    }
    if (getrandom(&e->ctl.instance, sizeof e->ctl.instance, 0) != sizeof e->ctl.instance)
        e->ctl.instance = em_clock_ns() ^ ((uint64_t)getpid() << 32);
    e->core.bulk_slots = e->ctl.bulk_slots;
    e->port = A->xdp ? &emd_xdp_port_ops : &dpdk_port_ops;
    e->ctl.port = e->port;
    e->ctl.port_ctx = e->port_ctx;
    /* our node id (emd_wire.h): the MAC, or in udp framing the IPv4 address
     * and port of the udp blob (link_dpdk.h: MAC, queue, IPv4, port) */
    const uint8_t *id = link->local.bytes + (e->core.framing == EMD_FRAMING_UDP ? 8 : 0);
    if (emd_core_init(&e->core, link, id, cmtu, A->max_clients, A->max_flows, A->max_nodes,
                      !A->no_ack) != 0 ||
        emd_ctl_setup(&e->ctl) != 0) {
        fprintf(stderr, "emd: out of memory\n");
        return 1;
    }
    /* per-uid limits (emd_core.h "Shares"): on unless --max-per-uid 0 */
    if (e->ctl.max_per_uid == EMD_PER_UID_AUTO)
        e->ctl.max_per_uid = emd_uid_share(A->max_clients);
    else if (e->ctl.max_per_uid == 0)
        e->core.max_nodes_per_uid = e->core.max_nodes;
    return 0;
}

/** The "ready" lines of the log. */
static void log_ready(const struct emd *e, const char *vdev, const char *sock)
{
    const uint8_t *m = e->core.mac;
    char node[40];
    if (e->core.framing == EMD_FRAMING_UDP)
        snprintf(node, sizeof node, "udp framing, node %u.%u.%u.%u:%u", m[0], m[1], m[2], m[3],
                 (unsigned)(m[4] << 8 | m[5]));
    else
        snprintf(node, sizeof node, "MAC %02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3],
                 m[4], m[5]);
    e->log("ready: %s, %s, frame %u bytes, socket %s, rings: rx %u KiB, "
           "tx %u slots%s",
           vdev[0] ? vdev : "(first port)", node, e->core.mtu, sock, e->ctl.rx_size >> 10,
           e->ctl.tx_slots, e->core.ack ? ", eager ACKs" : "");
    if (e->ctl.allow_uid >= 0 || e->ctl.allow_gid >= 0)
        e->log("who may attach: root, uid %ld%s, group %ld (socket mode 0660)", (long)geteuid(),
               e->ctl.allow_uid >= 0 ? " and --uid" : "",
               e->ctl.allow_gid >= 0 ? e->ctl.allow_gid : (long)getegid());
    if (e->ctl.bulk_slots)
        e->log("bulk queues: %u slots, %u queue pairs on %s, DPDK primary with --file-prefix=%s "
               "(ranks attach as secondaries: trusted users only, see docs/daemon.md)",
               e->ctl.bulk_slots, emd_bulkq_queues(e->ctl.bulk_slots), e->ctl.bulk_port,
               e->ctl.bulk_prefix);
    else
        e->log("bulk queues: none: %s; rendezvous data goes through the daemon", e->ctl.bulk_why);
}

/* ------------------------------------------------- the service manager -- */

/*
 * systemd's Type=notify (sd_notify(3); data/ethermpi-emd.service.in):
 * READY=1 once the port is open (for memif, the other end's hello seen)
 * and the control socket listens, so units ordered after the daemon find
 * its socket; STATUS= says what it serves; STOPPING=1 when SIGTERM stops
 * it; WATCHDOG=1 from the main loop when the unit sets WatchdogSec=.
 * Without NOTIFY_SOCKET (a manual run, a test, a Slurm prolog) each call
 * does nothing; built without libsystemd, neither does it.
 */
#ifdef EM_HAVE_SYSTEMD
#define emd_notify(...) (void)sd_notifyf(0, __VA_ARGS__)
#else
static void emd_notify(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void emd_notify(const char *fmt, ...) { (void)fmt; }
#endif

static struct {
    uint64_t watchdog_ns; /* ping interval: half of WatchdogSec= (0: none) */
    uint64_t last_ping;
    unsigned clients; /* the number STATUS= last said (~0u: not said yet) */
    char what[200];   /* what it serves: port, framing, socket */
} notify = { .clients = ~0u };

/** Read WatchdogSec= (WATCHDOG_USEC) once, before the loop. */
static void notify_watchdog_init(void)
{
#ifdef EM_HAVE_SYSTEMD
    uint64_t usec = 0;
    if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0)
        notify.watchdog_ns = usec * 1000u / 2u;
#endif
}

/** emd::tick: the watchdog ping, and STATUS= when the number of clients changed. */
static void notify_tick(struct emd *e, uint64_t now)
{
    if (notify.watchdog_ns && now - notify.last_ping >= notify.watchdog_ns) {
        emd_notify("WATCHDOG=1");
        notify.last_ping = now;
    }
    unsigned n = 0;
    for (unsigned i = 0; i < e->core.max_clients; i++)
        n += e->core.cl[i].fd >= 0;
    if (n != notify.clients) {
        notify.clients = n;
        emd_notify("STATUS=serving %u client%s: %s", n, n == 1 ? "" : "s", notify.what);
    }
}

/** READY=1 with the first STATUS=: the port is up and the socket listens. */
static void notify_ready(struct emd *e, const char *vdev, const char *sock)
{
    snprintf(notify.what, sizeof notify.what, "port %.80s, %s framing, socket %.80s",
             vdev[0] ? vdev : "(first port)", e->core.framing == EMD_FRAMING_UDP ? "udp" : "l2",
             sock);
    notify.clients = 0;
    notify_watchdog_init();
    notify.last_ping = em_clock_ns();
    emd_notify("READY=1\nSTATUS=serving 0 clients: %s", notify.what);
    e->tick = notify_tick;
}

static void catch_signals(struct emd *e)
{
    sig_emd = e;
    struct sigaction sa = { .sa_handler = on_stop };
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    sa.sa_handler = on_hup;
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

/** Expand the %h specs of the socket, device and prefix.  @return 0, or -1 after saying why. */
static int expand_specs(const struct args *A, char *sock, char *prefix)
{
    char err[512];
    if (em_link_dpdk_devargs(A->sock_spec, "emd", sock, 256, err, sizeof err) != 0 ||
        em_link_dpdk_devargs(A->prefix_spec, "emd", prefix, EMD_BULKQ_NAME_LEN, err, sizeof err) !=
            0) {
        fprintf(stderr, "emd: %s\n", err);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    static struct emd E;
    static struct dpdk_port port;
    struct emd *e = &E;
    struct args A;
    int rc = parse_args(e, argc, argv, &A);
    if (rc >= 0)
        return rc;
    if (A.status_spec)
        return status_main(A.status_spec);
    char err[512], sock[256], vdev[1024], prefix[EMD_BULKQ_NAME_LEN];
    if (expand_specs(&A, sock, prefix) != 0)
        return 1;
    /* the port, as every front end configures a DPDK link (src/transport) */
    em_dpdk_cfg_t pcfg;
    const em_transport_env_t env = { .front = EM_FRONT_EMD, .job = "emd" };
    if (em_transport_dpdk_cfg(&A.port, &env, &pcfg, vdev, sizeof vdev, err, sizeof err) != 0) {
        fprintf(stderr, "emd: %s\n", err);
        return 1;
    }
    pcfg.file_prefix = prefix;
    /* DPDK telemetry on (ranks keep it off, em_dpdk_cfg_t::telemetry): an
     * admin reads the port's counters from the socket in DPDK's runtime
     * dir, dpdk-telemetry.py -f <prefix> (docs/daemon.md "Telemetry") */
    pcfg.telemetry = 1;
    /* the loss is the daemon's, before its eager ACKs (emd_core.h), not the link's */
    pcfg.rx_loss = 0;
    e->yield = e->yield == -1 ? 0 : 1;
    em_loss_init(&e->core.loss, A.port.rx_loss, (uint64_t)A.port.loss_seed);
    e->log = e->core.log = e->ctl.log = emd_log;
    e->ctl.verbose = A.verbose;
    e->ctl.core = &e->core;
    e->ctl.listen_fd = e->ctl.lock_fd = -1;
    snprintf(e->loss_path, sizeof e->loss_path, "%s.loss", sock);
    e->spin_ns = (uint64_t)A.spin_us * 1000u;
    e->max_sleep_ns = (uint64_t)A.max_sleep_us * 1000u;
    (void)prctl(PR_SET_TIMERSLACK, 1000UL); /* short sleeps mean short */
    if (emd_ctl_claim(&e->ctl, sock, err, sizeof err) != 0) {
        fprintf(stderr, "emd: %s\n", err);
        return 1;
    }
    catch_signals(e);
    emd_notify("STATUS=opening the port %s", vdev[0] ? vdev : "(first port)");
    e->ctl.bulk_slots = (uint16_t)A.bulk_slots;
    em_link_t *link;
    if (A.xdp) {
        snprintf(e->ctl.bulk_why, sizeof e->ctl.bulk_why, "%s", EMD_XDP_NO_BULKQ);
        if (!(link = emd_xdp_open(e, &A.port, A.iface, vdev, sizeof vdev, err, sizeof err))) {
            fprintf(stderr, "emd: %s\n", err);
            return 1;
        }
        e->port_ctx = link;
    } else {
        if (!(link = open_port(e, &port, pcfg, &rc)))
            return rc;
        port.link = link;
        e->port_ctx = &port;
    }
    if ((rc = setup(e, &A, link)) != 0) {
        em_link_close(link);
        return rc;
    }
    /* memif: both ends must have the same queue pairs (bulk queues pair up
     * by index); ask the other end before serving anyone (udp framing has
     * no bulk queues: nothing to pair) */
    int memif_pair = strncmp(vdev, "net_memif", 9) == 0 && e->core.framing != EMD_FRAMING_UDP;
    if (memif_pair)
        emd_notify("STATUS=waiting for the other end of the memif cable");
    if (memif_pair && emd_wait_hello(e, (uint32_t)A.port.link_wait_ms) != 0) {
        em_link_close(link);
        return e->core.peer_seen ? 2 : 1;
    }
    if (emd_ctl_listen(&e->ctl, sock, err, sizeof err) != 0) {
        fprintf(stderr, "emd: %s\n", err);
        em_link_close(link);
        return 1;
    }
    log_ready(e, vdev, sock);
    notify_ready(e, vdev, sock);
    emd_run(e);
    /* (not from the signal handler: sd_notify is not async-signal-safe) */
    emd_notify("STOPPING=1\nSTATUS=stopping: clients see the stop");
    e->log("stopping");
    emd_dump_stats(e);
    emd_shutdown(e, sock);
    em_link_close(link);
    close(e->ctl.lock_fd); /* the lock file stays: flock, not its existence, is the lock */
    emd_core_fini(&e->core);
    return 0;
}
