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
 * with a help message when the job named it in `btl`)
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
#include "opal/util/show_help.h"

extern mca_btl_base_component_3_0_0_t mca_btl_dpdk_component;

static em_btl_params_t dpdk_params;

static em_btl_module_t dpdk_module;

static int dpdk_register(void)
{
    mca_base_component_t *c = &mca_btl_dpdk_component.btl_version;
    /* every setting of the DPDK and daemon links and the protocol, from
     * the table (src/transport/settings.c), as btl_dpdk_<name> */
    if (OPAL_SUCCESS != em_btl_register_params(c, &dpdk_params, EM_FRONT_DPDK))
        return OPAL_ERROR; /* said why */
    (void)em_btl_register_pvars(c, &dpdk_module);
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
    if (!dpdk_params.s.print_stats)
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

static int daemon_mode(void)
{
    return dpdk_params.s.mode && 0 == strcmp(dpdk_params.s.mode, "daemon");
}

/* link @p index: the index-th device of btl_dpdk_vdev ("A;B": two cables),
 * or in daemon mode the daemon's (one link) */
static em_link_t *dpdk_open_link(unsigned index, char *err, size_t errlen)
{
    char job[32];
    snprintf(job, sizeof job, "%u", (unsigned)OPAL_PROC_MY_NAME.jobid);
    const em_transport_env_t env = {
        .front = EM_FRONT_DPDK,
        .job = job, /* %j: a memif socket of its own for every job */
        .note = bulk_note,
        .emd_dead = emd_dead,
        .emd_closing = emd_closing,
    };
    return em_transport_open_link(&dpdk_params.s, dpdk_params.kind, &env, index, err, errlen);
}

/* a device is configured: daemon mode, a vdev, or EAL arguments (-a PCI) */
static int dpdk_configured(void)
{
    const em_settings_t *p = &dpdk_params.s;
    return daemon_mode() || (p->vdev && *p->vdev) || (p->eal_args && *p->eal_args);
}

/* btl_dpdk_print_stats, direct mode: the link's and the port's counters
 * (what the PMD or the kernel lost never reaches the protocol's) */
static void dpdk_link_stats(em_link_t *l)
{
    const em_dpdk_stats_t *s = em_link_dpdk_stats(l);
    em_dpdk_port_stats_t p;
    char name[64];
    em_link_dpdk_port_name(l, name, sizeof name);
    if (em_link_dpdk_port_stats(l, &p) != 0)
        memset(&p, 0, sizeof p);
    opal_output(0,
                "[%s] btl_dpdk link %s: tx %llu frames (%llu times the queue was full), rx %llu "
                "frames (%llu foreign); port: rx %llu missed %llu errors %llu no-mbuf %llu, "
                "tx %llu errors %llu; AF_XDP: rx ring full %llu, fill ring empty %llu, "
                "dropped %llu, tx refused %llu; no free mbuf to send %llu",
                opal_process_info.nodename, name, (unsigned long long)s->tx_frames,
                (unsigned long long)s->tx_full, (unsigned long long)s->rx_frames,
                (unsigned long long)s->rx_foreign, (unsigned long long)p.rx_pkts,
                (unsigned long long)p.rx_missed, (unsigned long long)p.rx_errors,
                (unsigned long long)p.rx_nombuf, (unsigned long long)p.tx_pkts,
                (unsigned long long)p.tx_errors, (unsigned long long)p.xdp_rx_ring_full,
                (unsigned long long)p.xdp_fill_empty, (unsigned long long)p.xdp_rx_dropped,
                (unsigned long long)p.xdp_tx_invalid, (unsigned long long)s->tx_nombuf);
}

static mca_btl_base_module_t **dpdk_init(int *num_btls, bool progress_threads, bool mpi_threads)
{
    *num_btls = 0;
    /* Opt-in: with no device configured the component starts no
     * EAL and says nothing, unless the job named it (then the help topic no-device) */
    if (!dpdk_configured()) {
        if (em_btl_named("dpdk"))
            opal_show_help(EM_BTL_HELP_FILE, "no-device", true, "dpdk", opal_process_info.nodename);
        return NULL;
    }
    dpdk_params.kind = daemon_mode() ? EM_LINK_KIND_EMD : EM_LINK_KIND_DPDK;
    dpdk_params.print_link_stats = daemon_mode() ? NULL : dpdk_link_stats;
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
