/**
 * @file btl_rudp_component.c
 * The `rudp` BTL: ethermpi's reliable datagram protocol over one kernel UDP
 * socket per process (seed 001).  Everything but the link lives in
 * ../common/em_btl.c; this file holds the component, its link parameters
 * and the link opener.
 *
 * Select with: --mca btl self,vader,rudp
 */
#include "opal_config.h"

#include <stdio.h>
#include <string.h>

#include "opal/mca/btl/base/base.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"
#include "opal/util/show_help.h"

#include "../common/em_btl.h"
#include "link/link_udp.h"

/* exported: the component Open MPI looks up by name */
extern mca_btl_base_component_3_0_0_t mca_btl_rudp_component;

static em_btl_params_t rudp_params;
static char *rudp_if_include;
static int rudp_mtu;
static int rudp_sock_buf;
static bool rudp_gso;
static bool rudp_gro;

static em_btl_module_t rudp_module;

static void rudp_note(void *ctx, const char *msg)
{
    (void)ctx;
    opal_output_verbose(10, opal_btl_base_framework.framework_output, "[%s] btl_rudp: %s",
                        opal_process_info.nodename, msg);
}

static void rudp_link_stats(em_link_t *l)
{
    const em_udp_stats_t *s = em_link_udp_stats(l);
    em_udp_info_t i;
    em_link_udp_info(l, &i);
    opal_output(0, "[%s] btl_rudp link: tx %llu frames in %llu sends (%llu GSO sends, "
                   "GSO %s, %llu fallbacks), %llu errors; rx %llu frames from %llu datagrams "
                   "(%llu coalesced, GRO %s), refused: %llu oversize, %llu bad GRO; "
                   "socket buffers rx %d KiB tx %d KiB",
                opal_process_info.nodename, (unsigned long long)s->tx_frames,
                (unsigned long long)s->tx_dgrams, (unsigned long long)s->tx_gso_sends,
                i.gso ? "on" : "off", (unsigned long long)s->tx_gso_fallback,
                (unsigned long long)s->tx_errors, (unsigned long long)s->rx_frames,
                (unsigned long long)s->rx_dgrams, (unsigned long long)s->rx_gro_dgrams,
                i.gro ? "on" : "off", (unsigned long long)s->rx_truncated,
                (unsigned long long)s->rx_bad_gro, i.rcvbuf / 1024, i.sndbuf / 1024);
}

static int rudp_register(void)
{
    /* 64 frames in flight, not 32: over kernel UDP the full window (94 KB
     * at MTU 1500) is what a GSO send and a GRO receive can carry at once;
     * measured in docs/design.md "link_udp: what each offload bought" */
    rudp_params.window = 64;
    em_btl_register_params(&mca_btl_rudp_component.btl_version, &rudp_params);
    rudp_if_include = "";
    rudp_mtu = 0;
    rudp_sock_buf = 4 * 1024 * 1024;
    rudp_gso = true;
    rudp_gro = true;
    (void)mca_base_component_var_register(&mca_btl_rudp_component.btl_version, "if_include",
        "Interface for the UDP socket: a name (eth0), an IPv4 address, or a subnet "
        "(10.77.0.0/24); empty = the first non-loopback IPv4 interface.  A comma list "
        "(eth0,eth1) opens one socket and module per entry (several links)",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_1, MCA_BASE_VAR_SCOPE_READONLY,
        &rudp_if_include);
    (void)mca_base_component_var_register(&mca_btl_rudp_component.btl_version, "mtu",
        "Largest datagram in bytes; 0 = interface MTU minus IP/UDP headers",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY, &rudp_mtu);
    (void)mca_base_component_var_register(&mca_btl_rudp_component.btl_version, "sock_buf",
        "Socket send and receive buffer size in bytes",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY, &rudp_sock_buf);
    (void)mca_base_component_var_register(&mca_btl_rudp_component.btl_version, "gso",
        "Send runs of equal frames to one peer as one UDP GSO send (UDP_SEGMENT, up to 64 KB); "
        "falls back by itself where the kernel refuses",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_READONLY, &rudp_gso);
    (void)mca_base_component_var_register(&mca_btl_rudp_component.btl_version, "gro",
        "Let the kernel coalesce received datagrams (UDP_GRO); the BTL splits them again",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_READONLY, &rudp_gro);
    rudp_params.print_link_stats = rudp_link_stats;
    em_btl_module_defaults(&rudp_module.super);
    return mca_btl_base_param_register(&mca_btl_rudp_component.btl_version, &rudp_module.super);
}

static int rudp_open(void)
{
    em_btl_add_help_dir((const void *)&mca_btl_rudp_component);
    return OPAL_SUCCESS;
}

static int rudp_close(void) { return OPAL_SUCCESS; }

/* link @p index: the index-th entry of btl_rudp_if_include ("eth0,eth1":
 * one socket, one module per interface; ob1 stripes over them) */
static em_link_t *rudp_open_link(unsigned index, char *err, size_t errlen)
{
    char iface[256] = "";
    const char *p = rudp_if_include ? rudp_if_include : "";
    for (unsigned i = 0; i < index; i++) {
        p = strchr(p, ',');
        if (!p)
            return NULL;                    /* no such link */
        p++;
    }
    size_t n = strcspn(p, ",");
    if (index > 0 && n == 0)
        return NULL;
    if (n >= sizeof iface) {
        snprintf(err, errlen, "btl_rudp_if_include entry too long");
        return NULL;
    }
    memcpy(iface, p, n);
    iface[n] = 0;
    em_udp_cfg_t c = { .iface = iface, .mtu = rudp_mtu > 0 ? (uint32_t)rudp_mtu : 0,
                       .sock_buf = rudp_sock_buf, .no_gso = !rudp_gso, .no_gro = !rudp_gro,
                       .note = rudp_note };
    em_link_t *l = em_link_udp_open(&c, err, errlen);
    char warn[512];
    if (l && em_link_udp_buf_warning(l, warn, sizeof warn))
        opal_show_help("help-mpi-btl-ethermpi.txt", "udp-buffers-clamped", true,
                       opal_process_info.nodename, warn);
    return l;
}

static mca_btl_base_module_t **rudp_init(int *num_btls, bool progress_threads, bool mpi_threads)
{
    return em_btl_init(&rudp_module, &mca_btl_rudp_component, "rudp", &rudp_params,
                       rudp_open_link, num_btls, mpi_threads);
}

static int rudp_progress(void) { return em_btl_progress(&rudp_module); }

__attribute__((visibility("default")))
mca_btl_base_component_3_0_0_t mca_btl_rudp_component = {
    .btl_version = {
        MCA_BTL_DEFAULT_VERSION("rudp"),
        .mca_open_component = rudp_open,
        .mca_close_component = rudp_close,
        .mca_register_component_params = rudp_register,
    },
    .btl_data = {
        .param_field = MCA_BASE_METADATA_PARAM_CHECKPOINT,
    },
    .btl_init = rudp_init,
    .btl_progress = rudp_progress,
};
