/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file ofi_prov.c
 * The provider's entry point (fi_prov_ini), its FI_ETHERMPI_* parameters,
 * fi_getinfo, the fabric and the (empty) event queue.
 *
 * API version: written to the libfabric 1.17 headers (Debian 12, the
 * oldest target).  The core skips a provider whose fi_version is below the
 * version an application asks for, and the MPIs ask for their own header's
 * version (MPICH 5's embedded libfabric is 2.x); so fi_prov_ini declares
 * the running core's version (fi_version()), never less than 1.17.  The
 * provider only reads and writes fields that exist in 1.17, and every
 * fi_info it returns comes from the core's fi_allocinfo(), so structures
 * of a newer core are sized by that core (fields we do not know stay 0).
 */
#include "ofi_prov.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

emo_params_t emo_params;

/* ---- parameters -------------------------------------------------------- */

struct emo_pdef {
    const char *name;
    enum fi_param_type type;
    void *val;
    const char *help;
};

static const struct emo_pdef pdefs[] = {
    { "link", FI_PARAM_STRING, &emo_params.link,
      "Which link carries the frames: udp (kernel UDP, default), dpdk (a DPDK PMD: memif, "
      "af_xdp, a NIC; FI_ETHERMPI_VDEV) or emd (the node daemon; FI_ETHERMPI_EMD_SOCKET)" },
    { "if_include", FI_PARAM_STRING, &emo_params.iface,
      "udp: interface name, IPv4 address or subnet to bind (as btl_rudp_if_include); "
      "default the first non-loopback IPv4 interface" },
    { "mtu", FI_PARAM_INT, &emo_params.mtu, "Frame size in bytes; 0 = the link's" },
    { "sock_buf", FI_PARAM_INT, &emo_params.sock_buf,
      "udp: socket buffer bytes (as btl_rudp_sock_buf); 0 = 4 MiB" },
    { "vdev", FI_PARAM_STRING, &emo_params.vdev,
      "dpdk: device as DPDK devargs, or @FILE (first line); %h = host name (as btl_dpdk_vdev)" },
    { "eal_args", FI_PARAM_STRING, &emo_params.eal_args,
      "dpdk: extra EAL arguments, e.g. '-a 0000:3b:00.0' (as btl_dpdk_eal_args)" },
    { "emd_socket", FI_PARAM_STRING, &emo_params.emd_socket,
      "emd: the daemon's control socket (as btl_dpdk_emd_socket)" },
    { "window", FI_PARAM_INT, &emo_params.window,
      "Frames in flight per peer, 1-256; 0 = sized from FI_ETHERMPI_WINDOW_KB at the link's "
      "frame size (64-256 frames).  Default: 0 on kernel UDP (as btl_rudp_window), 64 on dpdk "
      "and emd" },
    { "window_kb", FI_PARAM_INT, &emo_params.window_kb,
      "With window 0: about this many KiB in flight per peer (as btl_rudp_window_kb); "
      "default 384" },
    { "rto_us", FI_PARAM_INT, &emo_params.rto_us, "First retransmit timeout, microseconds" },
    { "rto_min_us", FI_PARAM_INT, &emo_params.rto_min_us, "Smallest retransmit timeout, us" },
    { "rto_max_us", FI_PARAM_INT, &emo_params.rto_max_us, "Largest retransmit timeout, us" },
    { "retries", FI_PARAM_INT, &emo_params.retries,
      "Consecutive timeouts before a peer is declared failed (its operations then complete "
      "with FI_EIO in the CQ)" },
    { "live_us", FI_PARAM_INT, &emo_params.live_us,
      "Liveness watch: a peer this endpoint waits for (a receive posted for it alone, a "
      "rendezvous) that sends nothing for this long is probed, and declared failed after "
      "FI_ETHERMPI_RETRIES unanswered probes, within a sender's bound; default "
      "FI_ETHERMPI_RTO_MAX_US, 0 = off (a dead peer that is only waited for is then never "
      "noticed)" },
    { "linger_ms", FI_PARAM_INT, &emo_params.linger_ms,
      "fi_close of an endpoint waits at most this long for what it sent to be acknowledged "
      "(an inject whose frame was lost is resent meanwhile; MPICH closes its endpoint right "
      "after its last send), and names the peers that did not acknowledge; default 5000, "
      "0 = one pass: what is queued leaves, nothing is waited for (unacknowledged messages "
      "may be lost)" },
    { "unexp_mb", FI_PARAM_INT, &emo_params.unexp_mb,
      "MiB of unexpected messages (arrived before their receive was posted) an endpoint "
      "holds; when a message would exceed it, the peer holding the most is failed (its "
      "operations end with FI_EIO) and its held messages dropped; default 1024, 0 = no bound" },
    { "cq_spin_ns", FI_PARAM_INT, &emo_params.cq_spin_ns,
      "A caller that reads an empty CQ again within 20 us while a receive is posted (an MPI "
      "waiting for a message) is answered only after this many ns of progress without a "
      "completion (MPICH yields the CPU after every progress test); default 2000; a CQ whose "
      "spins mostly expire without a completion stops spinning (docs/ofi.md); 0 = answer at "
      "once" },
    { "yield_us", FI_PARAM_INT, &emo_params.yield_us,
      "A caller that reads an empty CQ again within 20 us, when nothing has arrived or "
      "completed for this many us, yields the core (sched_yield) before -FI_EAGAIN: an "
      "application waiting in a tight loop for a peer that shares its core (more ranks than "
      "cores) lets it run (Open MPI's blocking sends spin without yielding); default 50, 0 = "
      "never" },
    { "ack_delay_us", FI_PARAM_INT, &emo_params.ack_delay_us, "Longest ACK delay, us" },
    { "rx_mem_mb", FI_PARAM_INT, &emo_params.rx_mem_mb,
      "MiB of reassembly and out-of-order buffers per endpoint" },
    { "cc", FI_PARAM_STRING, &emo_params.cc, "Congestion control: loss (default), delay, off" },
    { "eager_max", FI_PARAM_INT, &emo_params.eager_max,
      "Largest message sent eagerly (sends and injects leave from the caller's buffer, an "
      "inject is then copied; copied once at the receiver); larger ones use rendezvous (a "
      "put into the receiver's buffer).  Also the inject size.  Default: 262144 on kernel "
      "UDP (where a rendezvous costs two more kernel crossings each way), 8192 on dpdk and "
      "emd; 0 = every message by rendezvous" },
    { "send_copy_max", FI_PARAM_INT, &emo_params.send_copy_max,
      "A send (fi_send, fi_tsend: not an inject) of up to this many bytes whose caller did "
      "not ask for FI_TRANSMIT_COMPLETE, FI_DELIVERY_COMPLETE or stronger is copied after it "
      "leaves and completes at once (inject complete), instead of at the peer's ACK, which "
      "the peer must then send on its own; default 8192, 0 = every send completes at the "
      "ACK" },
    { "id", FI_PARAM_INT, &emo_params.id,
      "This endpoint's id (0-65534), unique in the job; default the launcher's rank "
      "(PMIX_RANK, PMI_RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID), else random" },
    { "npeers", FI_PARAM_INT, &emo_params.npeers,
      "Ids in the job (every id below it); default 4 x the launcher's size, else 256" },
    { "first_contact", FI_PARAM_INT, &emo_params.first_contact,
      "Peers that may reach this endpoint before the application inserted their address "
      "(their first messages carry it; Open MPI inserts peers lazily); default "
      "FI_ETHERMPI_NPEERS, 0 = none" },
};

void emo_params_load(void)
{
    static int loaded;
    if (loaded)
        return;
    loaded = 1;
    emo_params = (emo_params_t){
        .link = "udp",
        .window = -1, /* the link's: emo_window() */
        .window_kb = 384,
        .rto_us = 1000,
        .rto_min_us = 200,
        .rto_max_us = 1000000,
        .retries = 70,
        .live_us = -1,
        .linger_ms = 5000,
        .unexp_mb = 1024,
        .cq_spin_ns = 2000, /* adaptive: stops when spins go unrewarded (docs/ofi.md) */
        .yield_us = 50,
        .ack_delay_us = 20,
        .rx_mem_mb = 256,
        .cc = "loss",
        .eager_max = -1, /* the link's: emo_eager_max() */
        .send_copy_max = 8192,
        .id = -1,
        .first_contact = -1,
    };
    for (size_t i = 0; i < sizeof pdefs / sizeof pdefs[0]; i++) {
        fi_param_define(&emo_prov, pdefs[i].name, pdefs[i].type, "%s", pdefs[i].help);
        (void)fi_param_get(&emo_prov, pdefs[i].name, pdefs[i].val);
    }
}

/* Eager limits when FI_ETHERMPI_EAGER_MAX is unset (docs/ofi.md, "Eager
 * limit").  Over kernel UDP every rendezvous leg (RTS, CTS) is a trip
 * through both kernels, about 5 us on the emulated cluster: with an 8 KiB
 * limit 16 KiB took 1.7-2.1x each MPI's tcp path, with 16 KiB 32 KiB took
 * 1.2-1.3x; eagerly 0.45-0.9x.  256 KiB, the rudp BTL's limit, beat 32 KiB
 * at 64-256 KiB on both MTUs (docs/ofi-measurements.md "Eager limit").
 * On the bypass links a leg costs well under a microsecond and the
 * rendezvous' zero-copy put pays from 8 KiB on. */
#define EMO_EAGER_UDP     262144
#define EMO_EAGER_DEFAULT 8192

/* The inject size (fi_getinfo's inject_size): an inject is copied before
 * the call returns, and the copies are kept for reuse (emo_op_new), so it
 * stays at most 256 KiB however far the eager limit goes.  A cap at 32 KiB
 * (larger sends leaving from the caller's buffer, completing at the
 * peer's ACK) made one-way streams of 128-256 KiB blocking sends twice
 * as fast, and collectives with two ranks per node on this 2-core host
 * 1.5 times slower at 128-256 KiB (a send then waits for a peer that may
 * be off its core): not kept (docs/ofi.md "Inject size and the send
 * budget").  The send budget (EMO_TX_BYTES) bounds what injects hold. */
#define EMO_INJECT_MAX 262144

const char *emo_link_name(void) { return emo_params.link ? emo_params.link : "udp"; }

size_t emo_inject_max(void)
{
    size_t e = emo_eager_max();
    return e < EMO_INJECT_MAX ? e : EMO_INJECT_MAX;
}

size_t emo_eager_max(void)
{
    if (emo_params.eager_max >= 0)
        return (size_t)emo_params.eager_max;
    return 0 == strcmp(emo_link_name(), "udp") ? EMO_EAGER_UDP : EMO_EAGER_DEFAULT;
}

/* Windows when FI_ETHERMPI_WINDOW is unset: as the BTLs of the same links.
 * Over kernel UDP a window in bytes (rudp's 384 KiB): 64 frames are 94 KB
 * at MTU 1500, and bounded the provider's rendezvous there (docs/ofi.md
 * "Window at MTU 1500").  The bypass links keep the 64 frames they were
 * measured with (the dpdk BTL's default is 32). */
#define EMO_WINDOW_DEFAULT 64

int emo_window(uint32_t frame_max)
{
    int w = emo_params.window;
    if (w < 0)
        w = 0 == strcmp(emo_link_name(), "udp") ? 0 : EMO_WINDOW_DEFAULT;
    if (w > (int)EM_WINDOW_MAX || (w == 0 && emo_params.window_kb <= 0))
        return -1;
    return w ? w : em_proto_window_for((uint32_t)emo_params.window_kb, frame_max);
}

/* ---- shared no-op methods -------------------------------------------- */

int emo_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags) { return -FI_ENOSYS; }
int emo_no_control(struct fid *fid, int command, void *arg) { return -FI_ENOSYS; }
int emo_no_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops, void *context)
{
    return -FI_ENOSYS;
}

/* ---- fi_getinfo -------------------------------------------------------- */

#define EMO_PRIMARY (FI_MSG | FI_TAGGED)
#define EMO_SECONDARY                                                                              \
    (FI_SEND | FI_RECV | FI_DIRECTED_RECV | FI_SOURCE | FI_LOCAL_COMM | FI_REMOTE_CQ_DATA |        \
     FI_REMOTE_COMM | FI_MULTI_RECV)
#define EMO_CAPS (EMO_PRIMARY | EMO_SECONDARY)
/* FI_RMA (ofi_rma.c), offered to an application whose mr_mode accepts
 * FI_MR_PROV_KEY (the key is ours: never one a peer could guess) */
#define EMO_RMA_CAPS    (FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)
#define EMO_RMA_MR_MODE FI_MR_PROV_KEY
/* domain-level capabilities: in info->caps and domain_attr->caps, never in
 * tx_attr/rx_attr caps (fabtests' fi_getinfo_test caps1, caps2) */
#define EMO_DOMAIN_CAPS (FI_LOCAL_COMM | FI_REMOTE_COMM)
/* Orders beyond FI_ORDER_SAS, granted when asked (fabtests'
 * fi_getinfo_test msg_ordering1, 2: an order that was accepted must be in
 * the answer).  Without FI_RMA they hold because there is nothing to
 * order (no RMA or atomic operation).  With it they hold because the
 * engine keeps each peer's frames in order and the target acts on them in
 * that order (ofi_rma.c), except FI_ORDER_WAR: a read's answer is put
 * from memory when it goes out, after a later write may have landed.
 * No FI_ATOMIC: its orders are vacuous either way. */
#define EMO_ORDER_MORE                                                                             \
    (FI_ORDER_RAR | FI_ORDER_RAW | FI_ORDER_RAS | FI_ORDER_WAR | FI_ORDER_WAW | FI_ORDER_WAS |     \
     FI_ORDER_SAR | FI_ORDER_SAW)
#define EMO_ORDER (FI_ORDER_SAS | EMO_ORDER_MORE)

/* Does the application accept what FI_RMA needs?  (API 1.5 and later:
 * mr_mode bits are what it supports; no hints or no domain attributes:
 * anything) */
static bool rma_modes_ok(uint32_t version, const struct fi_info *hints)
{
    if (FI_VERSION_LT(version, FI_VERSION(1, 5)))
        return false;
    if (!hints || !hints->domain_attr)
        return true;
    return (hints->domain_attr->mr_mode & EMO_RMA_MR_MODE) == EMO_RMA_MR_MODE;
}

/* FI_RMA in the answer: asked for (or any capability asked), and its
 * registration modes accepted */
static bool rma_offered(uint32_t version, const struct fi_info *hints)
{
    if (hints && hints->caps && !(hints->caps & EMO_RMA_CAPS))
        return false;
    return rma_modes_ok(version, hints);
}

/* can the hints' domain attributes be met?  @return 0 or -FI_ENODATA */
static int check_domain_hints(const struct fi_domain_attr *d)
{
    if (!d)
        return 0;
    if (d->name && strcmp(d->name, emo_params.link)) {
        FI_INFO(&emo_prov, FI_LOG_CORE,
                "domain '%s' asked; this process's is '%s' "
                "(FI_ETHERMPI_LINK)\n",
                d->name, emo_params.link);
        return -FI_ENODATA;
    }
    if (d->threading != FI_THREAD_UNSPEC && d->threading != FI_THREAD_DOMAIN) {
        FI_INFO(&emo_prov, FI_LOG_CORE, "threading %d asked: only FI_THREAD_DOMAIN\n",
                (int)d->threading);
        return -FI_ENODATA;
    }
    if (d->control_progress == FI_PROGRESS_AUTO || d->data_progress == FI_PROGRESS_AUTO) {
        FI_INFO(&emo_prov, FI_LOG_CORE, "FI_PROGRESS_AUTO asked: progress is manual\n");
        return -FI_ENODATA;
    }
    if (d->av_type != FI_AV_UNSPEC && d->av_type != FI_AV_MAP && d->av_type != FI_AV_TABLE)
        return -FI_ENODATA;
    if (d->cq_data_size > 8)
        return -FI_ENODATA;
    if (d->caps & ~(uint64_t)EMO_DOMAIN_CAPS) {
        FI_INFO(&emo_prov, FI_LOG_CORE, "domain capabilities 0x%llx not offered\n",
                (unsigned long long)(d->caps & ~(uint64_t)EMO_DOMAIN_CAPS));
        return -FI_ENODATA;
    }
    return 0;
}

/* @return 0 when @p hints can be met, or -FI_ENODATA (with the reason logged) */
static int check_hints(uint32_t version, const struct fi_info *hints)
{
    if (!hints)
        return 0;
    if (hints->caps & ~(EMO_CAPS | EMO_RMA_CAPS)) {
        FI_INFO(&emo_prov, FI_LOG_CORE, "capabilities 0x%llx not offered\n",
                (unsigned long long)(hints->caps & ~(EMO_CAPS | EMO_RMA_CAPS)));
        return -FI_ENODATA;
    }
    if ((hints->caps & EMO_RMA_CAPS) && !rma_modes_ok(version, hints)) {
        FI_INFO(&emo_prov, FI_LOG_CORE, "FI_RMA needs mr_mode FI_MR_PROV_KEY (API 1.5 or later)\n");
        return -FI_ENODATA;
    }
    if (hints->ep_attr && hints->ep_attr->type != FI_EP_UNSPEC && hints->ep_attr->type != FI_EP_RDM)
        return -FI_ENODATA;
    if (hints->addr_format != FI_FORMAT_UNSPEC)
        return -FI_ENODATA;
    if (hints->fabric_attr && hints->fabric_attr->name &&
        strcmp(hints->fabric_attr->name, EMO_FABRIC_NAME))
        return -FI_ENODATA;
    uint64_t order = rma_offered(version, hints) ? EMO_ORDER & ~(uint64_t)FI_ORDER_WAR : EMO_ORDER;
    if ((hints->tx_attr && (hints->tx_attr->msg_order & ~order)) ||
        (hints->rx_attr && (hints->rx_attr->msg_order & ~order))) {
        FI_INFO(&emo_prov, FI_LOG_CORE, "message order asked beyond what is kept%s\n",
                order & FI_ORDER_WAR ? "" : " (FI_ORDER_WAR is not, with FI_RMA)");
        return -FI_ENODATA;
    }
    return check_domain_hints(hints->domain_attr);
}

static void fill_info(struct fi_info *fi, uint32_t version, const struct fi_info *hints)
{
    bool rma = rma_offered(version, hints);
    uint64_t caps = hints && hints->caps ? hints->caps : EMO_CAPS | (rma ? EMO_RMA_CAPS : 0);
    if (!(caps & EMO_PRIMARY))
        caps |= EMO_PRIMARY;
    caps |= FI_SEND | FI_RECV;
    /* FI_RMA alone means reads and writes both ways */
    if ((caps & FI_RMA) && !(caps & (FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)))
        caps |= FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
    uint64_t order = rma ? EMO_ORDER_MORE & ~(uint64_t)FI_ORDER_WAR : EMO_ORDER_MORE;
    fi->caps = caps;
    fi->mode = 0;
    fi->addr_format = FI_FORMAT_UNSPEC;

    fi->tx_attr->caps = caps & (EMO_PRIMARY | FI_SEND | FI_RMA | FI_READ | FI_WRITE);
    fi->tx_attr->op_flags = hints && hints->tx_attr ? hints->tx_attr->op_flags : 0;
    fi->tx_attr->msg_order = FI_ORDER_SAS |
                             (hints && hints->tx_attr ? hints->tx_attr->msg_order & order : 0);
    fi->tx_attr->comp_order = FI_ORDER_NONE;
    fi->tx_attr->inject_size = emo_inject_max();
    fi->tx_attr->size = EMO_TX_SIZE;
    fi->tx_attr->iov_limit = EMO_IOV_LIMIT;
    fi->tx_attr->rma_iov_limit = (caps & FI_RMA) ? 1 : 0;

    fi->rx_attr->caps = caps & (EMO_PRIMARY | FI_RECV | FI_DIRECTED_RECV | FI_SOURCE |
                                FI_MULTI_RECV | FI_RMA | FI_REMOTE_READ | FI_REMOTE_WRITE);
    fi->rx_attr->op_flags = hints && hints->rx_attr ? hints->rx_attr->op_flags : 0;
    fi->rx_attr->msg_order = FI_ORDER_SAS |
                             (hints && hints->rx_attr ? hints->rx_attr->msg_order & order : 0);
    fi->rx_attr->comp_order = FI_ORDER_NONE;
    fi->rx_attr->total_buffered_recv = 0;
    fi->rx_attr->size = EMO_RX_SIZE;
    fi->rx_attr->iov_limit = EMO_IOV_LIMIT;

    fi->ep_attr->type = FI_EP_RDM;
    fi->ep_attr->protocol = FI_PROTO_UNSPEC;
    fi->ep_attr->protocol_version = 1;
    fi->ep_attr->max_msg_size = (size_t)1 << 40;
    fi->ep_attr->msg_prefix_size = 0;
    /* with FI_RMA, RAW and WAW hold for any size (above) */
    fi->ep_attr->max_order_raw_size = (caps & FI_RMA) ? fi->ep_attr->max_msg_size : 0;
    fi->ep_attr->max_order_war_size = 0;
    fi->ep_attr->max_order_waw_size = (caps & FI_RMA) ? fi->ep_attr->max_msg_size : 0;
    fi->ep_attr->mem_tag_format = 0xAAAAAAAAAAAAAAAAull; /* FI_TAG_GENERIC: 64 bits */
    fi->ep_attr->tx_ctx_cnt = 1;
    fi->ep_attr->rx_ctx_cnt = 1;

    struct fi_domain_attr *d = fi->domain_attr;
    d->name = strdup(emo_params.link);
    d->threading = FI_THREAD_DOMAIN;
    d->control_progress = FI_PROGRESS_MANUAL;
    d->data_progress = FI_PROGRESS_MANUAL;
    d->resource_mgmt = FI_RM_ENABLED;
    d->av_type = hints && hints->domain_attr && hints->domain_attr->av_type != FI_AV_UNSPEC
                     ? hints->domain_attr->av_type
                     : FI_AV_TABLE;
    d->mr_mode = (caps & FI_RMA) ? EMO_RMA_MR_MODE : 0;
    d->mr_key_size = 8;
    d->cq_data_size = 8;
    d->cq_cnt = 64;
    d->cntr_cnt = 64;
    d->ep_cnt = 4;
    d->tx_ctx_cnt = 1;
    d->rx_ctx_cnt = 1;
    d->max_ep_tx_ctx = 1;
    d->max_ep_rx_ctx = 1;
    d->mr_iov_limit = 1;
    d->caps = EMO_DOMAIN_CAPS;
    d->mr_cnt = 1u << 16;
    d->max_err_data = sizeof(((struct emo_cq_err *)0)->msg);

    fi->fabric_attr->name = strdup(EMO_FABRIC_NAME);
    fi->fabric_attr->prov_version = EMO_PROV_VERSION;
}

int emo_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
                const struct fi_info *hints, struct fi_info **info)
{
    (void)node;
    (void)service;
    (void)flags;
    emo_params_load();
    *info = NULL;
    int rc = check_hints(version, hints);
    if (rc)
        return rc;
    struct fi_info *fi = fi_allocinfo();
    if (!fi)
        return -FI_ENOMEM;
    fill_info(fi, version, hints);
    if (!fi->domain_attr->name || !fi->fabric_attr->name) {
        fi_freeinfo(fi);
        return -FI_ENOMEM;
    }
    *info = fi;
    return 0;
}

/* ---- event queue (no events: RDM endpoints never connect) -------------- */

static int eq_close(struct fid *fid)
{
    free(container_of_emo(fid, struct emo_eq, eq.fid));
    return 0;
}

static ssize_t eq_read(struct fid_eq *eq, uint32_t *event, void *buf, size_t len, uint64_t f)
{
    return -FI_EAGAIN;
}

static ssize_t eq_readerr(struct fid_eq *eq, struct fi_eq_err_entry *buf, uint64_t flags)
{
    return -FI_EAGAIN;
}

/* No event ever arrives (no connections, no fi_eq_write), so a finite
 * timeout is waited out as asked (it returned at once: a caller's sread
 * loop spun; fabtests' fi_eq_test eq_wait_fd_sread).  An infinite one
 * (timeout < 0) still returns at once: blocking forever on a queue that
 * can never fill would only hang the caller. */
static ssize_t eq_sread(struct fid_eq *eq, uint32_t *event, void *buf, size_t len, int timeout,
                        uint64_t flags)
{
    if (timeout > 0) {
        struct timespec ts = { .tv_sec = timeout / 1000, .tv_nsec = (timeout % 1000) * 1000000L };
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
    }
    return -FI_EAGAIN;
}

static const char *eq_strerror(struct fid_eq *eq, int prov_errno, const void *err_data, char *buf,
                               size_t len)
{
    const char *s = fi_strerror(prov_errno);
    if (buf && len) {
        strncpy(buf, s, len - 1);
        buf[len - 1] = 0;
    }
    return s;
}

static ssize_t eq_write(struct fid_eq *eq, uint32_t event, const void *buf, size_t len,
                        uint64_t flags)
{
    return -FI_ENOSYS;
}

static struct fi_ops eq_fi_ops = EMO_FI_OPS(eq_close, emo_no_bind, emo_no_control);
static struct fi_ops_eq eq_ops = { .size = sizeof(struct fi_ops_eq),
                                   .read = eq_read,
                                   .readerr = eq_readerr,
                                   .write = eq_write,
                                   .sread = eq_sread,
                                   .strerror = eq_strerror };

static int eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr, struct fid_eq **eq,
                   void *context)
{
    struct emo_eq *q = calloc(1, sizeof *q);
    if (!q)
        return -FI_ENOMEM;
    emo_fid_init(&q->eq.fid, FI_CLASS_EQ, context, &eq_fi_ops);
    q->eq.ops = &eq_ops;
    *eq = &q->eq;
    return 0;
}

/* ---- fabric ------------------------------------------------------------ */

static int fabric_close(struct fid *fid)
{
    free(container_of_emo(fid, struct emo_fabric, fab.fid));
    return 0;
}

static int no_passive_ep(struct fid_fabric *fabric, struct fi_info *info, struct fid_pep **pep,
                         void *context)
{
    return -FI_ENOSYS;
}

static int no_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
                        struct fid_wait **waitset)
{
    return -FI_ENOSYS;
}

static struct fi_ops fabric_fi_ops = EMO_FI_OPS(fabric_close, emo_no_bind, emo_no_control);
static struct fi_ops_fabric fabric_ops = { .size = sizeof(struct fi_ops_fabric),
                                           .domain = emo_domain_open,
                                           .passive_ep = no_passive_ep,
                                           .eq_open = eq_open,
                                           .wait_open = no_wait_open,
                                           .trywait = emo_trywait };

int emo_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context)
{
    if (attr && attr->name && strcmp(attr->name, EMO_FABRIC_NAME))
        return -FI_ENODATA;
    struct emo_fabric *f = calloc(1, sizeof *f);
    if (!f)
        return -FI_ENOMEM;
    emo_fid_init(&f->fab.fid, FI_CLASS_FABRIC, context, &fabric_fi_ops);
    f->fab.ops = &fabric_ops;
    *fabric = &f->fab;
    return 0;
}

/* ---- provider ---------------------------------------------------------- */

static void emo_cleanup(void) {}

struct fi_provider emo_prov = {
    .version = EMO_PROV_VERSION,
    .fi_version = EMO_API_VERSION,
    .name = EMO_PROV_NAME,
    .getinfo = emo_getinfo,
    .fabric = emo_fabric_open,
    .cleanup = emo_cleanup,
};

FI_EXT_INI
{
    uint32_t core = fi_version();
    if (FI_VERSION_GE(core, EMO_API_VERSION))
        emo_prov.fi_version = core;
    return &emo_prov;
}
