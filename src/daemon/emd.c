/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file emd.c
 * `emd`, the per-node polling daemon (seed 000 §4.1-4.2; docs/daemon.md).
 *
 * One process per node owns the port (a DPDK primary, through link_dpdk) and
 * carries the frames of every MPI process on the node: it polls the port
 * and hands each received frame to its destination's rx ring (demultiplexed
 * on the endpoint id in the 8-byte emd shim header), and it drains the
 * processes' tx rings onto the port.  Processes attach over a unix socket
 * (daemon/emd_shm.h); a closed socket detaches them, so a killed process's
 * rings are reclaimed at once.
 *
 * Eager ACKs (seed 000: the daemon acknowledges eager traffic, so a
 * sender's window keeps moving while the receiving process computes): for
 * each (job, source, destination) flow of a client the daemon tracks the
 * next sequence number it expects (the protocol's ISN is 0 in every job,
 * and a flow lives no longer than its client's attachment); a sequenced
 * frame that is next in order and fits the client's rx ring advances it,
 * and after each port burst one standalone ACK per advanced flow goes back.
 * The process's own protocol acknowledges again later (the sender ignores
 * ACKs behind its window).  Safe because a frame is acknowledged only once
 * it is in the ring, which the client never drops (it refuses its own
 * loss injection when the daemon acknowledges; the daemon's --rx-loss
 * drops before the decision).  Off with --no-ack.
 *
 * Own queues (seed 000: rendezvous data on the MPI process's own queue;
 * daemon/emd_shm.h): on the memif wire, with hugepages, the daemon is a
 * DPDK primary with a file prefix (not --in-memory) and 1 + S*S queue
 * pairs; it hands each attaching process a slot (the lowest free one, up to
 * S = --rdv-slots), whose queues that process then drives itself as a DPDK
 * secondary: put frames never pass here.  When a slot's process detaches,
 * the slot's mbuf pools are reset (it may have died holding mbufs).  The
 * daemon still sees the process's own ACKs going out and moves its eager
 * flow state up to them (the puts it never saw took sequence numbers).
 *
 * Idle policy: spin while there is work and for --spin-us after it; then
 * sleep in ppoll() with a doubling timeout (up to --max-sleep-us), woken
 * early by a client's WAKE message.  The port cannot wake us, so a frame
 * arriving after a quiet spell waits up to max-sleep-us.
 *
 * Single-threaded.  Usage: emd --help.
 */
#include "daemon/emd_core.h"
#include "daemon/emd_ctl.h"
#include "daemon/emd_shm.h"
#include "link/link_dpdk.h"
#include "link/link_util.h"
#include "proto/wire.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_CLIENTS_LIMIT 1024

static struct {
    emd_core_t core;              /* data plane (emd_core.h) */
    emd_ctl_t ctl;                /* control plane (emd_ctl.h) */
    uint64_t spin_ns, max_sleep_ns;
    int yield;                    /* sched_yield() when a spin round found nothing */
    char loss_path[300];          /* re-read on SIGHUP */
    int hello;                    /* 1: check the other end's layout (memif wire) */
} D;

static volatile sig_atomic_t stop_flag, dump_flag, hup_flag;
static void on_stop(int sig) { (void)sig; stop_flag = 1; }
static void on_usr1(int sig) { (void)sig; dump_flag = 1; }
static void on_hup(int sig) { (void)sig; hup_flag = 1; }

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...)
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

/* Own queues: per slot the pool its rx queues receive into and the pool it
 * sends from (emd_shm.h: EMD_RDV_*_POOL), created as the port sets up the
 * queues: 1 + S*S queue pairs, queue q >= 1 received by slot (q - 1) % S. */
static struct rte_mempool *own_pools[EMD_RDV_SLOTS_MAX][2];

static struct rte_mempool *own_rx_pool(void *ctx, const em_dpdk_queue_info_t *qi, char *err,
                                       size_t errlen)
{
    (void)ctx;
    unsigned s = (qi->queue - 1u) % D.ctl.rdv_slots;
    if (!own_pools[s][0]) {
        char rx[64], tx[64];
        snprintf(rx, sizeof rx, EMD_RDV_RX_POOL, qi->port, s);
        snprintf(tx, sizeof tx, EMD_RDV_TX_POOL, qi->port, s);
        own_pools[s][0] = em_link_dpdk_queue_pool(qi, rx, EMD_RDV_RX_MBUFS, err, errlen);
        if (own_pools[s][0])
            own_pools[s][1] = em_link_dpdk_queue_pool(qi, tx, EMD_RDV_TX_MBUFS, err, errlen);
    }
    return own_pools[s][1] ? own_pools[s][0] : NULL;
}

/* the port did not open: free the pools while EAL still runs */
static void own_pools_free(void *ctx)
{
    (void)ctx;
    for (unsigned s = 0; s < EMD_RDV_SLOTS_MAX; s++)
        for (unsigned k = 0; k < 2; k++) {
            em_link_dpdk_pool_free(own_pools[s][k]);
            own_pools[s][k] = NULL;
        }
}

static int slot_reset(void *ctx, uint16_t slot)
{
    (void)ctx;
    if (slot >= EMD_RDV_SLOTS_MAX || !own_pools[slot][1])
        return -1;
    int rc = em_link_dpdk_pool_reset(own_pools[slot][0]);
    return em_link_dpdk_pool_reset(own_pools[slot][1]) | rc;
}

#define FOR_CLIENTS(i) for (unsigned i = 0; i < D.core.max_clients; i++) if (D.core.cl[i].fd >= 0)

/** The latest own-queue activity any client reported (0: none; never later than @p now). */
static uint64_t own_activity(uint64_t now)
{
    uint64_t t = 0;
    if (!D.ctl.rdv_slots)
        return 0;
    FOR_CLIENTS(i)
        if (D.core.cl[i].slot != EMD_RDV_NO_SLOT) {
            uint64_t v = atomic_load_explicit(&D.core.cl[i].h->own_active_ns, memory_order_relaxed);
            if (v > t)
                t = v;
        }
    return t > now ? now : t;      /* (client-written: a future stamp would keep us spinning) */
}

static void set_sleeping(uint32_t v)
{
    FOR_CLIENTS(i)
        atomic_store(&D.core.cl[i].h->daemon_sleeping, v);
}

static void heartbeat(uint64_t now)
{
    uint32_t ppm = (uint32_t)(D.core.loss * 1e6);
    FOR_CLIENTS(i) {
        struct emd_shm_hdr *h = D.core.cl[i].h;
        atomic_store_explicit(&h->heartbeat_ns, now, memory_order_relaxed);
        atomic_store_explicit(&h->rx_loss_ppm, ppm, memory_order_relaxed);
        atomic_store_explicit(&h->st.port_rx_loss, D.core.loss_drops, memory_order_relaxed);
    }
}

static void dump_stats(void)
{
    const emd_core_t *c = &D.core;
    const em_dpdk_stats_t *ps = em_link_dpdk_stats(c->link);
    unsigned nc = 0;
    uint64_t full = 0;
    FOR_CLIENTS(i) {
        nc++;
        full += atomic_load(&c->cl[i].h->st.rx_ring_full);
    }
    logf_("stats: %u clients (%llu attaches, %llu detaches); port rx %llu frames (%llu bad, %llu for "
          "no endpoint, %llu dropped by loss injection), tx %llu (port full %llu), same-node %llu, "
          "eager ACKs %llu; rx ring full drops (attached clients) %llu",
          nc, (unsigned long long)D.ctl.attaches, (unsigned long long)D.ctl.detaches,
          (unsigned long long)c->rx_frames, (unsigned long long)c->rx_bad,
          (unsigned long long)c->rx_no_ep, (unsigned long long)c->loss_drops,
          (unsigned long long)c->tx_frames, (unsigned long long)ps->tx_full,
          (unsigned long long)c->local, (unsigned long long)c->acks, (unsigned long long)full);
    logf_("refusals: attaches refused %llu (credentials) %llu (limits); clients detached for bad "
          "rings or messages %llu (bad control messages %llu); flows registered %llu, refused %llu; "
          "in-order frames not acknowledged (checks failed) %llu; node table full %llu, aged out %llu; "
          "tx to broadcast/multicast refused %llu; hellos bad %llu, conflicting %llu, replies skipped "
          "%llu; own-queue slots kept for live holders %llu",
          (unsigned long long)D.ctl.refused_cred, (unsigned long long)D.ctl.refused_busy,
          (unsigned long long)c->doomed_clients, (unsigned long long)D.ctl.bad_ctl,
          (unsigned long long)D.ctl.flows_added, (unsigned long long)c->flows_refused,
          (unsigned long long)c->ack_refused, (unsigned long long)c->nodes_full,
          (unsigned long long)c->nodes_evicted, (unsigned long long)c->tx_bad_mac,
          (unsigned long long)c->hello_bad, (unsigned long long)c->hello_conflict,
          (unsigned long long)c->hello_replies_skipped, (unsigned long long)D.ctl.slots_held);
    if (!D.ctl.rdv_slots) {
        logf_("own queues: none (%s); puts carried by the daemon: %llu frames, %llu bytes", D.ctl.rdv_why,
              (unsigned long long)c->put_frames, (unsigned long long)c->put_bytes);
        return;
    }
    em_dpdk_port_stats_t q;
    unsigned used = 0;
    for (unsigned k = 0; k < D.ctl.rdv_slots; k++)
        used += D.ctl.slot_used[k];
    if (em_link_dpdk_port_stats(c->link, &q) == 0)
        logf_("own queues: %u slots (%u in use), %u queue pairs; ranks' own queues rx %llu frames "
              "%llu bytes, tx %llu frames %llu bytes (memif counts queues < 16); puts carried by "
              "the daemon: %llu frames, %llu bytes; eager flows moved by clients' ACKs %llu (notes of "
              "own-queue ACKs %llu)",
              D.ctl.rdv_slots, used, 1u + (unsigned)D.ctl.rdv_slots * D.ctl.rdv_slots,
              (unsigned long long)(q.rx_pkts - q.q0_rx_pkts), (unsigned long long)(q.rx_bytes - q.q0_rx_bytes),
              (unsigned long long)(q.tx_pkts - q.q0_tx_pkts), (unsigned long long)(q.tx_bytes - q.q0_tx_bytes),
              (unsigned long long)c->put_frames, (unsigned long long)c->put_bytes,
              (unsigned long long)c->ack_resyncs, (unsigned long long)c->notes);
}

/** STATUS: the port's counters, which only the process knows (emd_ctl_t::status_extra). */
static void status_extra(struct emd_ctl_status *s)
{
    s->v[EMD_ST_tx_port_full] = em_link_dpdk_stats(D.core.link)->tx_full;
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

/** Testing: the loss fraction in <socket>.loss (emcluster emd loss), on SIGHUP. */
static void read_loss_file(void)
{
    FILE *f = fopen(D.loss_path, "r");
    double v = 0;
    if (f) {
        if (fscanf(f, "%lf", &v) != 1 || v < 0 || v >= 1)
            v = 0;
        fclose(f);
    }
    D.core.loss = v;
    logf_("receive loss now %.4f (%s)", v, f ? D.loss_path : "no loss file");
}

/** One round of work: the port, then every client's tx ring.  @return frames handled. */
static unsigned work_round(void)
{
    D.core.tx_blocked = 0;
    D.core.now_ns = now_ns();
    unsigned work = emd_core_poll_port(&D.core);
    FOR_CLIENTS(i)
        work += emd_core_drain(&D.core, i);
    if (emd_core_take_doomed(&D.core) >= 0)
        emd_ctl_reap(&D.ctl);           /* a safe point: no pass holds a region */
    return work;
}

static void run(void)
{
    uint64_t last_work = now_ns(), last_hb = 0, sleep_ns = 0, last_ctl = 0;
    while (!stop_flag) {
        unsigned work = work_round();
        uint64_t now = now_ns();
        if (work) {
            last_work = now;
            sleep_ns = 0;
        }
        if (now - last_hb >= 1000000ull) {          /* 1 ms */
            heartbeat(now);
            last_hb = now;
        }
        if (dump_flag) {
            dump_flag = 0;
            dump_stats();
        }
        if (hup_flag) {
            hup_flag = 0;
            read_loss_file();
        }
        if (now - last_work < D.spin_ns) {
            if (now - last_ctl >= 1000000ull) {     /* control traffic once a ms while busy */
                emd_ctl_poll(&D.ctl, 0);
                last_ctl = now;
            }
            /* nothing this round: let a rank that shares our core run
             * (what mpi_yield_when_idle does for the ranks) */
            if (!work && D.yield)
                sched_yield();
            continue;
        }
        /* a client busy on its own queues is in a rendezvous, whose eager
         * frames pass here: keep spinning for them */
        uint64_t own = own_activity(now);
        if (own && own > last_work && own + D.spin_ns > now) {
            last_work = own;
            if (D.yield)
                sched_yield();
            continue;
        }
        /* idle: announce the sleep, look once more (a client that added a
         * frame before seeing the flag is caught here), then sleep */
        set_sleeping(1);
        if (emd_core_tx_pending(&D.core)) {
            set_sleeping(0);
            if (!D.core.tx_blocked)
                continue;             /* just queued: serve it now */
            /* frames wait that could not go out (port full, or a peer's
             * end of the cable is gone): nap briefly instead of spinning,
             * and keep serving the control socket (detaches!) */
            emd_ctl_poll(&D.ctl, 20000);
            last_ctl = now_ns();
            continue;
        }
        sleep_ns = sleep_ns ? sleep_ns * 2 : 10000;  /* 10 us, doubling */
        if (sleep_ns > D.max_sleep_ns)
            sleep_ns = D.max_sleep_ns;
        emd_ctl_poll(&D.ctl, sleep_ns);
        last_ctl = now_ns();
        set_sleeping(0);
    }
}

/* ------------------------------------------------------------ setup -- */

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

/* hugepages the own-queue daemon needs (2 MB pages): its port pool
 * (8191 mbufs of ~9.5 KB) and the slots' pools */
#define RDV_HUGEPAGES_MIN 96

/**
 * Can the ranks have own queues?  Sets D.ctl.rdv_slots to 0 and D.ctl.rdv_why when
 * not.  @return the EAL arguments to use: the given ones, or for own
 * queues a hugepage-backed primary with the file prefix (link_dpdk adds
 * it), or "" (link_dpdk's default: in memory, no files).
 */
static const char *rdv_possible(const char *vdev, const char *eal_args, const char *prefix)
{
    const char *why = NULL;
    static char hp[EMD_RDV_WHY_LEN];
    if (D.ctl.rdv_slots == 0)
        why = "emd --rdv-slots 0";
    else if (strncmp(vdev, "net_memif", 9) != 0 || strchr(vdev, ';'))
        why = strstr(vdev, "af_xdp") ? "the af_xdp wire (DPDK secondaries cannot rx/tx on it)"
                                     : "not a memif wire (no per-process queues without rte_flow)";
    else if (strstr(eal_args, "--in-memory") || strstr(eal_args, "--no-shconf") ||
             strstr(eal_args, "--no-huge"))
        why = "the daemon runs --in-memory/--no-shconf/--no-huge (DPDK secondaries cannot attach)";
    else if (!*eal_args && (!hugetlbfs_mounted() || em_link_dpdk_hugepages_free() < RDV_HUGEPAGES_MIN)) {
        snprintf(hp, sizeof hp, "no hugepages: echo 256 >/proc/sys/vm/nr_hugepages; "
                 "mount -t hugetlbfs nodev /dev/hugepages");
        why = hp;
    }
    if (why) {
        D.ctl.rdv_slots = 0;
        snprintf(D.ctl.rdv_why, sizeof D.ctl.rdv_why, "%s", why);
        return eal_args;
    }
    (void)prefix;
    return *eal_args ? eal_args : "--proc-type=primary";
}

static void usage(FILE *f)
{
    fprintf(f,
        "usage: emd --socket PATH --vdev SPEC [options]\n"
        "       emd --status PATH   print the counters of the emd serving PATH as\n"
        "                           'name value' lines (any user the access rule admits)\n"
        "  The ethermpi node daemon: owns the DPDK port, serves the node's MPI processes\n"
        "  (dpdk BTL, --mca btl_dpdk_mode daemon).  See docs/daemon.md.\n"
        "  --socket PATH      control socket the processes attach to (%%h = host name)\n"
        "  --vdev SPEC        DPDK devargs, or @FILE (first line); %%h = host name,\n"
        "                     %%j = \"emd\"; empty: the first port EAL finds\n"
        "  --eal-args ARGS    extra EAL arguments (default: see link_dpdk)\n"
        "  --mtu N            L2 payload bytes (0 = largest)\n"
        "  --rx-kib N         per-process rx ring in KiB, power of 2 (default 16384: 16 MiB,\n"
        "                     e.g. 50,000 frames of 256 B or 1,800 of 9000 B)\n"
        "  --tx-slots N       per-process tx ring slots, power of 2 (default 1024)\n"
        "  --max-clients N    processes at once (default 64)\n"
        "  --max-per-uid N    processes of one uid at once (default 0: no limit)\n"
        "  --max-flows N      peers per process the daemon acknowledges for (default 4096)\n"
        "  --max-nodes N      nodes the daemon sends to at once (default 1024; unused ones age out)\n"
        "  --group NAME       who may attach: members of this group (default: the daemon's group);\n"
        "                     the socket is made with this group, mode 0660\n"
        "  --uid USER         who may attach: this user too (and the socket's owner)\n"
        "  --spin-us N        keep polling this long after the last frame (default 50)\n"
        "  --max-sleep-us N   longest idle sleep (default 200)\n"
        "  --rx-loss P        testing: drop this fraction of received frames (seeded); SIGHUP\n"
        "                     re-reads it from SOCKET.loss (emcluster emd loss)\n"
        "  --no-ack           do not acknowledge eager frames for the processes\n"
        "  --no-yield         never sched_yield() while spinning (a core of its own)\n"
        "  --loss-seed N      seed of --rx-loss\n"
        "  --link-wait-ms N   wait this long for the port's link (default 30000)\n"
        "  --rdv-slots N      own queues: up to N processes get queues of their own for\n"
        "                     rendezvous data (1 + N*N queue pairs; memif wire and\n"
        "                     hugepages only; both daemons of a cable must agree);\n"
        "                     0 = none, puts go through the daemon (default 4)\n"
        "  --file-prefix P    EAL file prefix (default emd-%%h); the ranks attach to it as\n"
        "                     DPDK secondaries\n"
        "  -v, --verbose      log attaches and detaches (a client detached for bad rings or\n"
        "                     messages is always logged, with its pid and uid)\n"
        "  SIGUSR1 logs the counters; SIGTERM/SIGINT stop (clients see the stop).\n");
}

/**
 * memif: wait for the other end's hello (ours every 100 ms).  A hello with
 * another layout is not believed at once (anyone on the wire can send one):
 * a matching one within a second wins; else the mismatch is real.
 * @return 0, or -1 after saying why on stderr.
 */
static int wait_hello(uint32_t link_wait)
{
    uint64_t t0 = now_ns(), last = 0, mismatch_since = 0;
    while (!stop_flag && now_ns() - t0 < (uint64_t)link_wait * 1000000ull) {
        D.core.now_ns = now_ns();
        if (D.core.now_ns - last >= 100000000ull) {     /* every 100 ms */
            emd_core_send_hello(&D.core, EMD_HELLO);
            last = D.core.now_ns;
        }
        if (!emd_core_poll_port(&D.core))
            usleep(1000);
        if (D.core.peer_seen && D.core.peer_queues == emd_core_queues(&D.core))
            return 0;
        if (D.core.peer_seen && !mismatch_since)
            mismatch_since = now_ns();
        if (mismatch_since && now_ns() - mismatch_since > 1000000000ull)
            break;
    }
    if (!D.core.peer_seen) {
        fprintf(stderr, "emd: no answer from the daemon at the other end of the memif cable within "
                "%u ms (is it an older emd?  both ends must be this version)\n", link_wait);
        return -1;
    }
    fprintf(stderr, "emd: the daemon at the other end of the memif cable has %u queue pairs "
            "(--rdv-slots %u), this one %u (--rdv-slots %u%s%s): own queues pair up by index, "
            "so both must be started with the same --rdv-slots (and both with hugepages)\n",
            D.core.peer_queues, D.core.peer_slots, emd_core_queues(&D.core), D.ctl.rdv_slots,
            D.ctl.rdv_slots ? "" : ": ", D.ctl.rdv_slots ? "" : D.ctl.rdv_why);
    return -1;
}

/**
 * Open the port (a DPDK primary; with own queues hugepage-backed, 1 + S*S
 * queue pairs) and check the own-queue names the clients will check.
 * @return the link, or NULL after saying why on stderr, with the exit code in @p rc.
 */
static em_link_t *open_port(const char *vdev, const char *eal_args, const char *prefix, uint32_t mtu,
                            uint32_t link_wait, int *rc)
{
    char err[512];
    *rc = 1;
    const char *eal = rdv_possible(vdev, eal_args, prefix);
    em_dpdk_cfg_t cfg = { .vdev = vdev, .eal_args = eal, .file_prefix = prefix, .mtu = mtu,
                          .link_wait_ms = link_wait };
    if (D.ctl.rdv_slots)
        cfg.extra = (em_dpdk_extra_queues_t){ .n = (uint16_t)((unsigned)D.ctl.rdv_slots * D.ctl.rdv_slots),
                                              .rx_pool = own_rx_pool, .undo = own_pools_free };
    em_link_t *link = em_link_dpdk_open(&cfg, err, sizeof err);
    if (!link) {
        fprintf(stderr, "emd: %s\n", err);
        return NULL;
    }
    if (link->mtu <= EMD_WIRE_HDR_LEN + 64) {
        fprintf(stderr, "emd: the port's MTU (%u) is too small\n", link->mtu);
        em_link_close(link);
        return NULL;
    }
    if (D.ctl.rdv_slots) {
        snprintf(D.ctl.rdv_prefix, sizeof D.ctl.rdv_prefix, "%s", prefix);
        em_link_dpdk_port_name(link, D.ctl.rdv_port, sizeof D.ctl.rdv_port);
        struct emd_rdv_info probe = { .slots = D.ctl.rdv_slots, .slot = 0,
                                      .queues = (uint16_t)(1u + (unsigned)D.ctl.rdv_slots * D.ctl.rdv_slots) };
        memcpy(probe.prefix, D.ctl.rdv_prefix, sizeof probe.prefix);
        memcpy(probe.port, D.ctl.rdv_port, sizeof probe.port);
        const char *why = NULL;
        if (emd_rdv_check(&probe, &why) != 0) {   /* what the clients will check */
            fprintf(stderr, "emd: own queues: %s (prefix '%s', port '%s')\n", why, prefix, D.ctl.rdv_port);
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
    const char *sock_spec, *vdev_spec, *eal_args, *prefix_spec, *status_spec;
    uint32_t rdv_slots, mtu, spin_us, max_sleep_us, loss_seed, link_wait;
    uint32_t rx_kib, max_clients, max_flows, max_nodes;
    double rx_loss;
    int verbose, no_ack;
};

/** The command line into @p a (and D.ctl's access rule and limits).
 *  @return -1 to go on, or the exit code (0 after --help, 2 on bad arguments). */
static int parse_args(int argc, char **argv, struct args *a)
{
    static const struct option opts[] = {
        { "socket", required_argument, NULL, 's' }, { "vdev", required_argument, NULL, 'd' },
        { "eal-args", required_argument, NULL, 'e' }, { "mtu", required_argument, NULL, 'm' },
        { "rx-kib", required_argument, NULL, 'R' }, { "tx-slots", required_argument, NULL, 'T' },
        { "max-clients", required_argument, NULL, 'C' }, { "spin-us", required_argument, NULL, 'S' },
        { "max-sleep-us", required_argument, NULL, 'Z' }, { "rx-loss", required_argument, NULL, 'l' },
        { "loss-seed", required_argument, NULL, 'L' }, { "link-wait-ms", required_argument, NULL, 'w' },
        { "verbose", no_argument, NULL, 'v' }, { "no-ack", no_argument, NULL, 'A' },
        { "no-yield", no_argument, NULL, 'Y' }, { "help", no_argument, NULL, 'h' },
        { "rdv-slots", required_argument, NULL, 'Q' }, { "file-prefix", required_argument, NULL, 'P' },
        { "max-per-uid", required_argument, NULL, 'U' }, { "max-flows", required_argument, NULL, 'F' },
        { "max-nodes", required_argument, NULL, 'N' }, { "group", required_argument, NULL, 'G' },
        { "uid", required_argument, NULL, 'I' }, { "status", required_argument, NULL, 'q' },
        { 0, 0, 0, 0 }
    };
    *a = (struct args){ .vdev_spec = "", .eal_args = "", .prefix_spec = "emd-%h", .rdv_slots = 4,
                        .spin_us = 50, .max_sleep_us = 200, .link_wait = 30000, .rx_kib = 16384,
                        .max_clients = 64, .max_flows = EMD_FLOWS_DEFAULT, .max_nodes = EMD_NODES_DEFAULT };
    const char *group = NULL, *user = NULL;
    D.ctl.tx_slots = 1024;
    int o, bad = 0;
    while ((o = getopt_long(argc, argv, "vh", opts, NULL)) != -1) {
        switch (o) {
        case 's': a->sock_spec = optarg; break;
        case 'd': a->vdev_spec = optarg; break;
        case 'e': a->eal_args = optarg; break;
        case 'm': bad |= parse_u32(optarg, &a->mtu); break;
        case 'R': bad |= parse_u32(optarg, &a->rx_kib); break;
        case 'T': bad |= parse_u32(optarg, &D.ctl.tx_slots); break;
        case 'C': bad |= parse_u32(optarg, &a->max_clients); break;
        case 'U': bad |= parse_u32(optarg, &D.ctl.max_per_uid); break;
        case 'F': bad |= parse_u32(optarg, &a->max_flows); break;
        case 'N': bad |= parse_u32(optarg, &a->max_nodes); break;
        case 'G': group = optarg; break;
        case 'I': user = optarg; break;
        case 'q': a->status_spec = optarg; break;
        case 'S': bad |= parse_u32(optarg, &a->spin_us); break;
        case 'Z': bad |= parse_u32(optarg, &a->max_sleep_us); break;
        case 'L': bad |= parse_u32(optarg, &a->loss_seed); break;
        case 'w': bad |= parse_u32(optarg, &a->link_wait); break;
        case 'Q': bad |= parse_u32(optarg, &a->rdv_slots); break;
        case 'P': a->prefix_spec = optarg; break;
        case 'l': {
            char *e;
            a->rx_loss = strtod(optarg, &e);
            bad |= (*e || a->rx_loss < 0 || a->rx_loss >= 1) ? -1 : 0;
            break;
        }
        case 'v': a->verbose = 1; break;
        case 'A': a->no_ack = 1; break;
        case 'Y': D.yield = -1; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    D.ctl.allow_uid = user ? emd_ctl_user(user) : -1;
    D.ctl.allow_gid = group ? emd_ctl_group(group) : -1;
    if ((user && D.ctl.allow_uid < 0) || (group && D.ctl.allow_gid < 0)) {
        fprintf(stderr, "emd: unknown %s '%s'\n", user && D.ctl.allow_uid < 0 ? "user" : "group",
                user && D.ctl.allow_uid < 0 ? user : group);
        return 2;
    }
    if (a->status_spec && !bad && optind == argc)
        return -1;
    if (bad || !a->sock_spec || optind != argc || a->max_clients == 0 || a->max_clients > MAX_CLIENTS_LIMIT ||
        a->max_sleep_us == 0 || a->rdv_slots > EMD_RDV_SLOTS_MAX || a->max_flows > EMD_FLOWS_MAX ||
        a->max_nodes > 65535) {
        fprintf(stderr, "emd: bad or missing arguments\n");
        usage(stderr);
        return 2;
    }
    return -1;
}

int main(int argc, char **argv)
{
    struct args A;
    int prc = parse_args(argc, argv, &A);
    if (prc >= 0)
        return prc;
    if (A.status_spec)
        return status_main(A.status_spec);
    const char *sock_spec = A.sock_spec, *vdev_spec = A.vdev_spec, *eal_args = A.eal_args,
               *prefix_spec = A.prefix_spec;
    uint32_t rdv_slots = A.rdv_slots, mtu = A.mtu, spin_us = A.spin_us, max_sleep_us = A.max_sleep_us,
             loss_seed = A.loss_seed, link_wait = A.link_wait, rx_kib = A.rx_kib,
             max_clients = A.max_clients, max_flows = A.max_flows, max_nodes = A.max_nodes;
    double rx_loss = A.rx_loss;
    int verbose = A.verbose, no_ack = A.no_ack;
    char err[512], sock[256], vdev[1024];
    if (em_link_dpdk_devargs(sock_spec, "emd", sock, sizeof sock, err, sizeof err) != 0 ||
        em_link_dpdk_devargs(vdev_spec, "emd", vdev, sizeof vdev, err, sizeof err) != 0) {
        fprintf(stderr, "emd: %s\n", err);
        return 1;
    }
    D.yield = D.yield == -1 ? 0 : 1;
    D.core.loss = rx_loss;
    D.core.rng = loss_seed ? loss_seed : 0x9E3779B97F4A7C15ull;
    D.core.log = logf_;
    D.ctl.log = logf_;
    D.ctl.verbose = verbose;
    D.ctl.core = &D.core;
    D.ctl.listen_fd = D.ctl.lock_fd = -1;
    snprintf(D.loss_path, sizeof D.loss_path, "%s.loss", sock);
    D.spin_ns = (uint64_t)spin_us * 1000u;
    D.max_sleep_ns = (uint64_t)max_sleep_us * 1000u;
    (void)prctl(PR_SET_TIMERSLACK, 1000UL);   /* short sleeps mean short */
    if (emd_ctl_claim(&D.ctl, sock, err, sizeof err) != 0) {
        fprintf(stderr, "emd: %s\n", err);
        return 1;
    }
    struct sigaction sa = { .sa_handler = on_stop };
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    sa.sa_handler = on_hup;
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    char prefix[EMD_RDV_NAME_LEN];
    if (em_link_dpdk_devargs(prefix_spec, "emd", prefix, sizeof prefix, err, sizeof err) != 0) {
        fprintf(stderr, "emd: %s\n", err);
        return 1;
    }
    D.ctl.rdv_slots = (uint16_t)rdv_slots;
    int rc;
    em_link_t *link = open_port(vdev, eal_args, prefix, mtu, link_wait, &rc);
    if (!link)
        return rc;
    uint32_t ss, cmtu = link->mtu - EMD_WIRE_HDR_LEN;
    /* what arrives while a process computes must fit: the compute-burst
     * experiment's 10,000 eager frames of 256 B take 3.2 MB */
    D.ctl.rx_size = rx_kib <= (EMD_RX_SIZE_MAX >> 10) ? rx_kib << 10 : 0;
    if (emd_shm_size(cmtu, D.ctl.rx_size, D.ctl.tx_slots, &ss) == 0) {
        fprintf(stderr, "emd: bad ring sizes (powers of 2: rx %u..%u KiB, tx %u..%u slots)\n",
                EMD_RX_SIZE_MIN >> 10, EMD_RX_SIZE_MAX >> 10, EMD_SLOTS_MIN, EMD_SLOTS_MAX);
        em_link_close(link);
        return 2;
    }
    if (getrandom(&D.ctl.instance, sizeof D.ctl.instance, 0) != sizeof D.ctl.instance)
        D.ctl.instance = now_ns() ^ ((uint64_t)getpid() << 32);
    D.core.rdv_slots = D.ctl.rdv_slots;
    D.ctl.slot_reset = slot_reset;
    D.ctl.status_extra = status_extra;
    if (emd_core_init(&D.core, link, link->local.bytes, cmtu, max_clients, max_flows, max_nodes,
                      !no_ack) != 0 || emd_ctl_setup(&D.ctl) != 0) {
        fprintf(stderr, "emd: out of memory\n");
        em_link_close(link);
        return 1;
    }
    /* memif: both ends must have the same queue pairs (own queues pair up
     * by index); ask the other end before serving anyone */
    D.hello = strncmp(vdev, "net_memif", 9) == 0;
    if (D.hello && wait_hello(link_wait) != 0) {
        em_link_close(link);
        return D.core.peer_seen ? 2 : 1;
    }
    if (emd_ctl_listen(&D.ctl, sock, err, sizeof err) != 0) {
        fprintf(stderr, "emd: %s\n", err);
        em_link_close(link);
        return 1;
    }
    const uint8_t *m = D.core.mac;
    logf_("ready: %s, MAC %02x:%02x:%02x:%02x:%02x:%02x, frame %u bytes, socket %s, rings: rx %u KiB, "
          "tx %u slots%s", vdev[0] ? vdev : "(first port)", m[0], m[1], m[2], m[3], m[4], m[5],
          D.core.mtu, sock, D.ctl.rx_size >> 10, D.ctl.tx_slots, D.core.ack ? ", eager ACKs" : "");
    if (D.ctl.allow_uid >= 0 || D.ctl.allow_gid >= 0)
        logf_("who may attach: root, uid %ld%s, group %ld (socket mode 0660)", (long)geteuid(),
              D.ctl.allow_uid >= 0 ? " and --uid" : "",
              D.ctl.allow_gid >= 0 ? D.ctl.allow_gid : (long)getegid());
    if (D.ctl.rdv_slots)
        logf_("own queues: %u slots, %u queue pairs on %s, DPDK primary with --file-prefix=%s "
              "(ranks attach as secondaries: trusted users only, see docs/daemon.md)", D.ctl.rdv_slots,
              1u + (unsigned)D.ctl.rdv_slots * D.ctl.rdv_slots, D.ctl.rdv_port, D.ctl.rdv_prefix);
    else
        logf_("own queues: none: %s; rendezvous data goes through the daemon", D.ctl.rdv_why);
    run();
    logf_("stopping");
    dump_stats();
    FOR_CLIENTS(i) {
        atomic_store(&D.core.cl[i].h->state, EMD_STATE_STOPPED);
        emd_ctl_detach(&D.ctl, i, "daemon stopping", 0);
    }
    close(D.ctl.listen_fd);
    unlink(sock);
    em_link_close(link);
    close(D.ctl.lock_fd);          /* the lock file stays: flock, not its existence, is the lock */
    emd_core_fini(&D.core);
    return 0;
}
