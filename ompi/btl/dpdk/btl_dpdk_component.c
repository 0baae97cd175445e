/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file btl_dpdk_component.c
 * The `dpdk` BTL (after Shimada and Hayasaka's DPDK BTL for Open MPI;
 * docs/design.md "link_dpdk and the dpdk BTL"): ethermpi's protocol at
 * layer 2 through a DPDK poll-mode driver, in user space.  Everything but
 * the link lives in ../common/em_btl.c; this file holds the component, its
 * link parameters and the link opener.  In this "direct" mode each MPI process owns its
 * DPDK port (one rank per node).
 *
 * Select with: --mca btl self,vader,dpdk --mca btl_dpdk_vdev <devargs>
 * (opt-in: with no device configured, i.e. mode direct and vdev and
 * eal_args empty, the component starts no EAL and steps aside silently;
 * with one line when the job named it in `btl`)
 *
 * btl_dpdk_vdev is a DPDK devargs string, or "@FILE" to read it from FILE
 * (first line); "%h" in either is replaced by the host name, so one mpirun
 * command line can give each node its own device (a memif cable has a
 * server end and a client end): --mca btl_dpdk_vdev @/etc/ethermpi/%h.vdev;
 * "%j" is replaced by the job id (a memif socket of its own for every job).
 *
 * Daemon mode (--mca btl_dpdk_mode daemon, docs/daemon.md): the node's
 * `emd` owns the port and many ranks per node share it; the rank attaches
 * to the daemon's socket (btl_dpdk_emd_socket) and runs the same engine
 * over link_emd (shared-memory rings).  Rendezvous (put) frames go on the
 * rank's bulk queue when the daemon offers one (btl_dpdk_bulk_queue): the
 * rank then is a DPDK secondary of the daemon (link_bulkq); otherwise the
 * rank runs no DPDK at all.
 */
#include "opal_config.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../common/em_btl.h"
#include "link/link_dpdk.h"
#include "link/link_emd.h"
#include "link/link_bulkq.h"
#include "emd_abi/emd_wire.h"
#include "opal/mca/btl/base/base.h"

extern mca_btl_base_component_3_0_0_t mca_btl_dpdk_component;

static em_btl_params_t dpdk_params;
static char *dpdk_vdev;
static char *dpdk_eal_args;
static int dpdk_mtu;
static double dpdk_rx_loss;
static int dpdk_loss_seed;
static int dpdk_link_wait_ms;
static int dpdk_zero_copy;
static char *dpdk_mode; /* "direct" or "daemon" */
static char *dpdk_emd_socket;
static int dpdk_emd_heartbeat_ms;
static char *dpdk_bulk_queue; /* "auto", "on" or "off" */
static char *dpdk_framing;    /* "l2" or "udp" */
static int dpdk_udp_port;
static char *dpdk_udp_addr;
static int dpdk_udp_checksum;

static em_btl_module_t dpdk_module;

static int dpdk_register(void)
{
    mca_base_component_t *c = &mca_btl_dpdk_component.btl_version;
    em_btl_register_params(c, &dpdk_params);
    dpdk_vdev = "";
    dpdk_eal_args = "";
    dpdk_mtu = 0;
    dpdk_rx_loss = 0.0;
    dpdk_loss_seed = 0;
    dpdk_link_wait_ms = 20000;
    dpdk_zero_copy = 1;
    dpdk_mode = "direct";
    dpdk_emd_socket = "/run/ethermpi/emd/%h.sock";
    dpdk_emd_heartbeat_ms = 3000;
    dpdk_bulk_queue = "auto";
    dpdk_framing = "l2";
    dpdk_udp_port = 0;
    dpdk_udp_addr = "";
    dpdk_udp_checksum = 1;
    /* read-only parameters, their defaults set above (in ompi_info's order) */
    const em_btl_var_t params[] = {
        { "bulk_queue", MCA_BASE_VAR_TYPE_STRING, OPAL_INFO_LVL_4, &dpdk_bulk_queue,
          "Daemon mode: rendezvous (put) data on this process's bulk queue, a queue of its own "
          "on the daemon's port (memif wire, the daemon a hugepage-backed DPDK primary; "
          "docs/daemon.md, Bulk queues): auto = when the daemon offers one (else through the "
          "daemon, said at btl_base_verbose 10), on = required (the job fails with the reason), "
          "off = always through the daemon" },
        { "mode", MCA_BASE_VAR_TYPE_STRING, OPAL_INFO_LVL_1, &dpdk_mode,
          "direct: this process owns the DPDK port (one rank per node); daemon: the node's emd "
          "daemon owns it and the node's ranks attach to it (docs/daemon.md)" },
        { "emd_socket", MCA_BASE_VAR_TYPE_STRING, OPAL_INFO_LVL_2, &dpdk_emd_socket,
          "Daemon mode: the emd daemon's control socket (%h = host name, @FILE = first line of "
          "FILE)" },
        { "emd_heartbeat_ms", MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_5, &dpdk_emd_heartbeat_ms,
          "Daemon mode: the job is aborted when the daemon has not run for this long" },
        { "vdev", MCA_BASE_VAR_TYPE_STRING, OPAL_INFO_LVL_1, &dpdk_vdev,
          "DPDK device: devargs (e.g. net_memif0,role=client,socket=/run/x.sock,socket-abstract=no "
          "or net_af_xdp0,iface=eth0), or @FILE to read them from FILE; %h is replaced by the "
          "host name.  Several devices separated by ';' (@/x/%h.memif;@/x/%h.memif1): one "
          "module per device, ob1 stripes over them.  Empty: the ports EAL finds (e.g. NICs "
          "given in eal_args with -a); with eal_args empty too (and mode direct) the component "
          "is not used" },
        { "eal_args", MCA_BASE_VAR_TYPE_STRING, OPAL_INFO_LVL_4, &dpdk_eal_args,
          "Extra DPDK EAL arguments; empty = '--in-memory -m 256' with hugepages, else "
          "'--no-huge --no-shconf -m 256' (no files left behind either way)" },
        { "mtu", MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_5, &dpdk_mtu,
          "L2 payload bytes per frame; 0 = as large as the port and mbufs allow (<= 9000)" },
        { "rx_loss", MCA_BASE_VAR_TYPE_DOUBLE, OPAL_INFO_LVL_9, &dpdk_rx_loss,
          "Testing: drop this fraction of received frames (seeded; for wires no kernel sees, e.g. "
          "memif)" },
        { "loss_seed", MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_9, &dpdk_loss_seed,
          "Testing: seed of rx_loss (0 = fixed default)" },
        { "zero_copy", MCA_BASE_VAR_TYPE_BOOL, OPAL_INFO_LVL_5, &dpdk_zero_copy,
          "Send payloads of 512 bytes or more straight from the user's buffer (DPDK external "
          "buffers chained behind the header) where the PMD takes chained mbufs and is a "
          "virtual device (memif): never on a hardware NIC, whose DMA cannot reach user "
          "memory that is not registered with DPDK; 0 = copy every payload into the frame" },
        { "link_wait_ms", MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_5, &dpdk_link_wait_ms,
          "How long to wait for the port's link to come up (a memif cable waits for its other "
          "end)" },
        { "framing", MCA_BASE_VAR_TYPE_STRING, OPAL_INFO_LVL_2, &dpdk_framing,
          "l2: raw Ethernet frames (ethertype 0x88B5), for one L2 segment; udp: every frame in "
          "UDP/IPv4 to the peer's address and port, through the next hop the kernel names, for "
          "routed fabrics and cloud networks (docs/design.md \"Framing\").  Every process of the "
          "job must use the same; in l2 a peer behind a router is refused at wire-up.  Daemon "
          "mode: the node's emd must run the same (emd --framing; its --udp-port/--udp-addr "
          "apply, not btl_dpdk_udp_*), else the job stops at start-up" },
        { "udp_port", MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_4, &dpdk_udp_port,
          "udp framing: this process's UDP port (0 = 29717; the AF_XDP filter object takes "
          "29717 and 29718)" },
        { "udp_addr", MCA_BASE_VAR_TYPE_STRING, OPAL_INFO_LVL_4, &dpdk_udp_addr,
          "udp framing: this process's IPv4 address (empty: the af_xdp interface's; on a memif "
          "cable a link-local 169.254.x.y from the port's MAC)" },
        { "udp_checksum", MCA_BASE_VAR_TYPE_BOOL, OPAL_INFO_LVL_5, &dpdk_udp_checksum,
          "udp framing: send UDP checksums (by the NIC where it offloads them, else computed); "
          "0 = send none (allowed over IPv4; the Ethernet FCS still covers each hop)" },
    };
    em_btl_register_vars(c, params, sizeof params / sizeof params[0]);
    int bq = mca_base_var_find("ompi", "btl", "dpdk", "bulk_queue");
    if (bq >= 0) /* its old name, deprecated */
        (void)mca_base_var_register_synonym(bq, "ompi", "btl", "dpdk", "rdv_queue",
                                            MCA_BASE_VAR_SYN_FLAG_DEPRECATED);
    em_btl_module_defaults(&dpdk_module.super);
    return mca_btl_base_param_register(c, &dpdk_module.super);
}

static int dpdk_open(void)
{
    em_btl_add_help_dir((const void *)&mca_btl_dpdk_component);
    return OPAL_SUCCESS;
}

static int dpdk_close(void) { return OPAL_SUCCESS; }

/* daemon mode: the daemon went away under us; the job cannot go on */
static void emd_dead(void *ctx, const char *why)
{
    (void)ctx;
    fprintf(stderr, "[%s] ethermpi dpdk BTL (daemon mode): %s\n", opal_process_info.nodename, why);
    fflush(stderr);
    if (dpdk_module.error_cb)
        dpdk_module.error_cb(&dpdk_module.super, MCA_BTL_ERROR_FLAGS_FATAL, NULL,
                             "ethermpi: the emd node daemon is gone");
}

/* daemon mode: this process's bulk queue (a DPDK secondary of the daemon) */
static em_link_t *bulk_open(void *ctx, const em_emd_bulkq_t *r, char *err, size_t errlen)
{
    (void)ctx;
    em_bulkq_cfg_t c = {
        .file_prefix = r->file_prefix,
        .port = r->port,
        .slots = r->slots,
        .slot = r->slot,
        .endpoint = r->endpoint,
        .mtu = r->mtu,
        .loss_ppm = r->loss_ppm,
        .loss_seed = (uint64_t)dpdk_loss_seed + r->endpoint,
    };
    memcpy(c.mac, r->mac, 6);
    return em_link_bulkq_open(&c, err, errlen);
}

static void bulk_note(void *ctx, const char *msg)
{
    (void)ctx;
    opal_output_verbose(10, opal_btl_base_framework.framework_output, "[%s] btl_dpdk: %s",
                        opal_process_info.nodename, msg);
}

/* btl_dpdk_print_stats: which path the rendezvous data took */
static void emd_closing(void *ctx, const em_emd_stats_t *s)
{
    (void)ctx;
    if (!dpdk_params.print_stats)
        return;
    opal_output(
        0,
        "[%s] btl_dpdk daemon-mode stats: bulk queue %s; put frames on the bulk queue: "
        "tx %llu (%llu bytes) rx %llu (%llu bytes); through the daemon: tx %llu (%llu "
        "bytes) rx %llu (%llu bytes); bulk queue full, sent via the daemon %llu, dropped %llu; "
        "ACKs on the bulk queue %llu",
        opal_process_info.nodename, s->bulk_queue ? "yes" : "no",
        (unsigned long long)s->put_tx_bulk, (unsigned long long)s->put_tx_bulk_bytes,
        (unsigned long long)s->put_rx_bulk, (unsigned long long)s->put_rx_bulk_bytes,
        (unsigned long long)s->put_tx_daemon, (unsigned long long)s->put_tx_daemon_bytes,
        (unsigned long long)s->put_rx_daemon, (unsigned long long)s->put_rx_daemon_bytes,
        (unsigned long long)s->bulk_tx_fallback, (unsigned long long)s->bulk_tx_dropped,
        (unsigned long long)s->ack_tx_bulk);
}

static em_link_t *emd_open_link(int udp, char *err, size_t errlen)
{
    char path[1024];
    if (em_link_dpdk_devargs(dpdk_emd_socket, "", path, sizeof path, err, errlen) != 0)
        return NULL;
    int mode;
    const char *rq = dpdk_bulk_queue ? dpdk_bulk_queue : "auto";
    if (0 == strcmp(rq, "auto"))
        mode = EM_EMD_BULKQ_AUTO;
    else if (0 == strcmp(rq, "on"))
        mode = EM_EMD_BULKQ_ON;
    else if (0 == strcmp(rq, "off"))
        mode = EM_EMD_BULKQ_OFF;
    else {
        snprintf(err, errlen, "btl_dpdk_bulk_queue must be 'auto', 'on' or 'off', not '%s'", rq);
        return NULL;
    }
    em_emd_cfg_t c = {
        .socket_path = path,
        .rx_loss = dpdk_rx_loss,
        .loss_seed = (uint64_t)dpdk_loss_seed,
        .heartbeat_timeout_ms = dpdk_emd_heartbeat_ms > 0 ? (uint32_t)dpdk_emd_heartbeat_ms : 0,
        .dead_cb = emd_dead,
        .bulk_mode = mode,
        .bulk_open = bulk_open,
        .note_cb = bulk_note,
        .close_cb = emd_closing,
        /* the daemon must run the same framing (emd --framing): checked at attach */
        .framing = udp ? EMD_FRAMING_UDP : EMD_FRAMING_L2,
    };
    return em_link_emd_open(&c, err, errlen);
}

static em_link_t *dpdk_open_link(unsigned index, char *err, size_t errlen)
{
    const char *fr = dpdk_framing ? dpdk_framing : "l2";
    if (0 != strcmp(fr, "l2") && 0 != strcmp(fr, "udp")) {
        snprintf(err, errlen, "btl_dpdk_framing must be 'l2' or 'udp', not '%s'", fr);
        return NULL;
    }
    int udp = 0 == strcmp(fr, "udp");
    if (dpdk_mode && 0 == strcmp(dpdk_mode, "daemon")) /* one link: the daemon's */
        return index == 0 ? emd_open_link(udp, err, errlen) : NULL;
    if (dpdk_mode && 0 != strcmp(dpdk_mode, "direct")) {
        snprintf(err, errlen, "btl_dpdk_mode must be 'direct' or 'daemon', not '%s'", dpdk_mode);
        return NULL;
    }
    /* %j = the job id: every job gets its own memif socket, so a job that
     * starts while the last one's processes are exiting never connects to
     * their dying end of the cable */
    char vdev[1024], job[32];
    snprintf(job, sizeof job, "%u", (unsigned)OPAL_PROC_MY_NAME.jobid);
    if (em_link_dpdk_devargs(dpdk_vdev, job, vdev, sizeof vdev, err, errlen) != 0)
        return NULL;
    char prefix[64];
    snprintf(prefix, sizeof prefix, "em%ld", (long)getpid());
    em_dpdk_cfg_t c = {
        .vdev = vdev,
        .eal_args = dpdk_eal_args,
        .file_prefix = prefix,
        .mtu = dpdk_mtu > 0 ? (uint32_t)dpdk_mtu : 0,
        .rx_loss = dpdk_rx_loss,
        .loss_seed = (uint64_t)dpdk_loss_seed,
        .link_wait_ms = dpdk_link_wait_ms > 0 ? (uint32_t)dpdk_link_wait_ms : 0,
        .no_gather = !dpdk_zero_copy,
        .framing = udp ? EM_DPDK_FRAMING_UDP : EM_DPDK_FRAMING_L2,
        .udp_port = dpdk_udp_port > 0 && dpdk_udp_port < 65536 ? (uint16_t)dpdk_udp_port : 0,
        .udp_addr = dpdk_udp_addr,
        .udp_no_csum = !dpdk_udp_checksum,
    };
    /* "A;B" in btl_dpdk_vdev: one port and module per device (two cables) */
    return em_link_dpdk_open_port(&c, index, err, errlen);
}

/* a device is configured: daemon mode, a vdev, or EAL arguments (-a PCI) */
static int dpdk_configured(void)
{
    return (dpdk_mode && 0 == strcmp(dpdk_mode, "daemon")) || (dpdk_vdev && *dpdk_vdev) ||
           (dpdk_eal_args && *dpdk_eal_args);
}

static mca_btl_base_module_t **dpdk_init(int *num_btls, bool progress_threads, bool mpi_threads)
{
    *num_btls = 0;
    /* Opt-in (issue 15): with no device configured the component starts no
     * EAL and says nothing, unless the job named it (then one line) */
    if (!dpdk_configured()) {
        if (em_btl_named("dpdk"))
            opal_output(0, "btl dpdk: not used: no device configured (set btl_dpdk_vdev, "
                           "btl_dpdk_eal_args '-a <PCI address>', or btl_dpdk_mode daemon; "
                           "ethermpi-info prints the line for this node)");
        return NULL;
    }
    return em_btl_init(&dpdk_module, &mca_btl_dpdk_component, "dpdk", &dpdk_params, dpdk_open_link,
                       num_btls, mpi_threads);
}

static int dpdk_progress(void) { return em_btl_progress(&dpdk_module); }

/**
 * Counters for benchmarks (bench/mpi/em_compute_burst.c finds this symbol
 * with dlsym): fills @p out[0..n) with mode (0 direct, 1 daemon), frames
 * dropped before the protocol saw them (daemon: rx ring full + injected;
 * direct: injected), protocol retransmits, retransmit timeouts, times the
 * link had no room for a frame.  @return values written (0: no module).
 */
__attribute__((visibility("default"))) int em_btl_dpdk_counters(uint64_t *out, int n);
int em_btl_dpdk_counters(uint64_t *out, int n)
{
    if (!dpdk_module.engine || !dpdk_module.link || n < 5)
        return 0;
    const em_proto_stats_t *p = em_engine_proto_stats(dpdk_module.engine);
    int daemon = 0 == strcmp(dpdk_module.link->ops->name, "emd");
    uint64_t drops, full;
    if (daemon) {
        em_emd_stats_t s;
        em_link_emd_stats(dpdk_module.link, &s);
        drops = s.daemon_rx_ring_full + s.rx_dropped_loss + s.daemon_port_rx_loss;
        full = s.tx_ring_full;
    } else {
        const em_dpdk_stats_t *s = em_link_dpdk_stats(dpdk_module.link);
        drops = s->rx_dropped_loss;
        full = s->tx_full;
    }
    out[0] = (uint64_t)daemon;
    out[1] = drops;
    out[2] = p->retransmits;
    out[3] = p->timeouts;
    out[4] = full;
    return 5;
}

/* mca_btl_dpdk_component, the struct Open MPI loads */
EM_BTL_COMPONENT(dpdk);
