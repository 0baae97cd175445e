/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file emo_prov.c
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
#include "emo_prov.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

emo_params_t emo_params;

/* ---- parameters -------------------------------------------------------- */

/* The provider's settings: the rows of src/transport/settings.c that name
 * EM_FRONT_OFI, as FI_ETHERMPI_<NAME> (fi_info -e lists them with their
 * help and default).  No default is written here. */
static char params_err[256];

const char *emo_params_error(void) { return params_err; }

static enum fi_param_type fi_type(em_set_type_t t)
{
    switch (t) {
    case EM_SET_INT: return FI_PARAM_INT;
    case EM_SET_BOOL: return FI_PARAM_BOOL;
    case EM_SET_DOUBLE: /* no double in fi_param: read as text */
    case EM_SET_STRING: break;
    }
    return FI_PARAM_STRING;
}

void emo_params_load(void)
{
    static int loaded;
    if (loaded)
        return;
    loaded = 1;
    if (!EM_SETTINGS_ABI_OK()) { /* a provider of another release than libethermpi */
        snprintf(params_err, sizeof params_err,
                 "this provider and libethermpi.so.0 come from different ethermpi builds "
                 "(their settings differ): reinstall them together");
        FI_WARN(&emo_prov, FI_LOG_CORE, "%s\n", params_err);
        return;
    }
    em_settings_default(&emo_params);
    size_t n;
    const em_setting_t *t = em_settings_table(&n);
    for (size_t i = 0; i < n; i++) {
        if (!(t[i].fronts & EM_FRONT_OFI))
            continue;
        char dflt[96];
        em_setting_format(&emo_params, &t[i], dflt, sizeof dflt);
        fi_param_define(&emo_prov, t[i].name, fi_type(t[i].type), "%s (default: %s)", t[i].help,
                        *dflt ? dflt : "empty");
        void *v = em_setting_ptr(&emo_params, &t[i]);
        int iv;
        char *sv = NULL;
        switch (t[i].type) {
        case EM_SET_INT: (void)fi_param_get_int(&emo_prov, t[i].name, (int *)v); break;
        case EM_SET_BOOL:
            if (fi_param_get_bool(&emo_prov, t[i].name, &iv) == FI_SUCCESS)
                *(bool *)v = iv != 0;
            break;
        case EM_SET_STRING: (void)fi_param_get_str(&emo_prov, t[i].name, (char **)v); break;
        case EM_SET_DOUBLE:
            if (fi_param_get_str(&emo_prov, t[i].name, &sv) == FI_SUCCESS && sv && !params_err[0]) {
                char name[64];
                em_setting_fullname(&t[i], EM_FRONT_OFI, name, sizeof name);
                (void)em_setting_parse(&emo_params, &t[i], sv, name, params_err, sizeof params_err);
            }
            break;
        }
    }
    em_settings_normalize(&emo_params); /* FI_ETHERMPI_CC= (empty): the default */
    if (!params_err[0])
        (void)em_settings_check(&emo_params, EM_FRONT_OFI, params_err, sizeof params_err);
    if (params_err[0])
        FI_WARN(&emo_prov, FI_LOG_CORE, "%s: the provider is not offered\n", params_err);
}

const char *emo_link_name(void) { return emo_params.link ? emo_params.link : "udp"; }

/* Domains: one per device the settings name (FI_ETHERMPI_IF_INCLUDE's
 * interfaces, FI_ETHERMPI_VDEV's ';' devices), as libfabric lists one
 * domain per NIC; the first is named after the link ("udp", "dpdk",
 * "emd", as before), the k-th "<link><k>". */
unsigned emo_domain_count(void)
{
    return em_transport_link_count(&emo_params, emo_link_kind(), "0");
}

void emo_domain_name(unsigned index, char *buf, size_t len)
{
    if (index == 0)
        snprintf(buf, len, "%s", emo_link_name());
    else
        snprintf(buf, len, "%s%u", emo_link_name(), index);
}

int emo_domain_index(const char *name)
{
    unsigned n = emo_domain_count();
    char d[64];
    for (unsigned i = 0; name && i < n; i++) {
        emo_domain_name(i, d, sizeof d);
        if (0 == strcmp(d, name))
            return (int)i;
    }
    return name ? -1 : 0;
}

em_link_kind_t emo_link_kind(void)
{
    int k = em_link_kind_parse(emo_link_name());
    return k < 0 ? EM_LINK_KIND_UDP : (em_link_kind_t)k;
}

/* The inject size (fi_getinfo's inject_size): an inject is copied before
 * the call returns, and the copies are kept for reuse (emo_op_new), so it
 * stays at most 256 KiB however far the eager limit goes; the send budget
 * (EMO_TX_BYTES) bounds what injects hold (docs/ofi.md "Inject size and
 * the send budget"). */
#define EMO_INJECT_MAX 262144

size_t emo_inject_max(void)
{
    size_t e = emo_eager_max();
    return e < EMO_INJECT_MAX ? e : EMO_INJECT_MAX;
}

/* the link's eager limit unless FI_ETHERMPI_EAGER_MAX is set (transport.h) */
size_t emo_eager_max(void) { return em_transport_eager_max(&emo_params, emo_link_kind()); }

int emo_window(uint32_t frame_max)
{
    unsigned w = em_transport_window(&emo_params, emo_link_kind(), frame_max);
    return w ? (int)w : -1;
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
/* FI_RMA (emo_rma.c) and FI_ATOMIC (emo_atomic.c), offered to an
 * application whose mr_mode accepts FI_MR_PROV_KEY (the key is ours:
 * never one a peer could guess) */
#define EMO_RMA_CAPS    (FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)
#define EMO_RMA_MR_MODE FI_MR_PROV_KEY
/* domain-level capabilities: in info->caps and domain_attr->caps, never in
 * tx_attr/rx_attr caps (fabtests' fi_getinfo_test caps1, caps2) */
#define EMO_DOMAIN_CAPS (FI_LOCAL_COMM | FI_REMOTE_COMM)
/* Orders beyond FI_ORDER_SAS, granted when asked (fabtests'
 * fi_getinfo_test msg_ordering1, 2: an order that was accepted must be in
 * the answer), all of them in the answer to an application that gave no
 * hints.  Without FI_RMA and FI_ATOMIC they hold because there is nothing
 * to order.  With them they hold because the engine keeps each peer's
 * frames in order and the target acts on them in that order (emo_rma.c,
 * emo_atomic.c); FI_ORDER_WAR for reads up to the eager limit
 * (max_order_war_size), which the target copies when the request arrives
 * (the engine's get), not for longer ones, whose answer is put from
 * memory when it goes out, after a later write may have landed.  Among
 * atomics all four hold (FI_ORDER_ATOMIC_*): a fetching atomic reads the
 * target when it is applied, in the order they were issued.  MPICH uses
 * native atomics only with those four (its default capability set), and
 * under MPI's default accumulate ordering only up to max_order_war_size. */
#define EMO_ORDER_ATOMIC                                                                           \
    (FI_ORDER_ATOMIC_RAR | FI_ORDER_ATOMIC_RAW | FI_ORDER_ATOMIC_WAR | FI_ORDER_ATOMIC_WAW)
#define EMO_ORDER_MORE                                                                             \
    (FI_ORDER_RAR | FI_ORDER_RAW | FI_ORDER_RAS | FI_ORDER_WAR | FI_ORDER_WAW | FI_ORDER_WAS |     \
     FI_ORDER_SAR | FI_ORDER_SAW | EMO_ORDER_ATOMIC)
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
    if (d->name && emo_domain_index(d->name) < 0) {
        FI_INFO(&emo_prov, FI_LOG_CORE,
                "domain '%s' asked; this process's are '%s' and its numbered devices "
                "(FI_ETHERMPI_LINK, _IF_INCLUDE, _VDEV)\n",
                d->name, emo_link_name());
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
        FI_INFO(&emo_prov, FI_LOG_CORE,
                "FI_RMA and FI_ATOMIC need mr_mode FI_MR_PROV_KEY (API 1.5 or later)\n");
        return -FI_ENODATA;
    }
    if (hints->ep_attr && hints->ep_attr->type != FI_EP_UNSPEC && hints->ep_attr->type != FI_EP_RDM)
        return -FI_ENODATA;
    if (hints->addr_format != FI_FORMAT_UNSPEC)
        return -FI_ENODATA;
    if (hints->fabric_attr && hints->fabric_attr->name &&
        strcmp(hints->fabric_attr->name, EMO_FABRIC_NAME))
        return -FI_ENODATA;
    uint64_t order = EMO_ORDER;
    if ((hints->tx_attr && (hints->tx_attr->msg_order & ~order)) ||
        (hints->rx_attr && (hints->rx_attr->msg_order & ~order))) {
        FI_INFO(&emo_prov, FI_LOG_CORE, "message order asked beyond what is kept\n");
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
    /* FI_RMA or FI_ATOMIC alone means reads and writes both ways */
    bool remote = (caps & (FI_RMA | FI_ATOMIC)) != 0;
    if (remote && !(caps & (FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)))
        caps |= FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
    uint64_t order = EMO_ORDER_MORE;
    /* the orders asked, or, with no hints, every order kept */
    uint64_t tx_order = !hints ? order : hints->tx_attr ? hints->tx_attr->msg_order & order : 0;
    uint64_t rx_order = !hints ? order : hints->rx_attr ? hints->rx_attr->msg_order & order : 0;
    fi->caps = caps;
    fi->mode = 0;
    fi->addr_format = FI_FORMAT_UNSPEC;

    fi->tx_attr->caps = caps & (EMO_PRIMARY | FI_SEND | FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE);
    fi->tx_attr->op_flags = hints && hints->tx_attr ? hints->tx_attr->op_flags : 0;
    fi->tx_attr->msg_order = FI_ORDER_SAS | tx_order;
    fi->tx_attr->comp_order = FI_ORDER_NONE;
    fi->tx_attr->inject_size = emo_inject_max();
    fi->tx_attr->size = EMO_TX_SIZE;
    fi->tx_attr->iov_limit = EMO_IOV_LIMIT;
    fi->tx_attr->rma_iov_limit = remote ? 1 : 0;

    fi->rx_attr->caps = caps &
                        (EMO_PRIMARY | FI_RECV | FI_DIRECTED_RECV | FI_SOURCE | FI_MULTI_RECV |
                         FI_RMA | FI_ATOMIC | FI_REMOTE_READ | FI_REMOTE_WRITE);
    fi->rx_attr->op_flags = hints && hints->rx_attr ? hints->rx_attr->op_flags : 0;
    fi->rx_attr->msg_order = FI_ORDER_SAS | rx_order;
    fi->rx_attr->comp_order = FI_ORDER_NONE;
    fi->rx_attr->total_buffered_recv = 0;
    fi->rx_attr->size = EMO_RX_SIZE;
    fi->rx_attr->iov_limit = EMO_IOV_LIMIT;

    fi->ep_attr->type = FI_EP_RDM;
    fi->ep_attr->protocol = FI_PROTO_UNSPEC;
    fi->ep_attr->protocol_version = 1;
    fi->ep_attr->max_msg_size = (size_t)1 << 40;
    fi->ep_attr->msg_prefix_size = 0;
    /* with FI_RMA or FI_ATOMIC, RAW and WAW hold for any size, WAR up to
     * the eager limit (above) */
    fi->ep_attr->max_order_raw_size = remote ? fi->ep_attr->max_msg_size : 0;
    fi->ep_attr->max_order_war_size = remote ? emo_eager_max() : 0;
    fi->ep_attr->max_order_waw_size = remote ? fi->ep_attr->max_msg_size : 0;
    fi->ep_attr->mem_tag_format = 0xAAAAAAAAAAAAAAAAull; /* FI_TAG_GENERIC: 64 bits */
    fi->ep_attr->tx_ctx_cnt = 1;
    fi->ep_attr->rx_ctx_cnt = 1;

    struct fi_domain_attr *d = fi->domain_attr;
    d->name = strdup(emo_link_name()); /* the first device's; emo_getinfo names the others */
    /* the level asked for, served (emo_domain_open: a lock per domain
     * above FI_THREAD_DOMAIN); none asked: FI_THREAD_DOMAIN, no lock */
    d->threading = hints && hints->domain_attr && hints->domain_attr->threading != FI_THREAD_UNSPEC
                       ? hints->domain_attr->threading
                       : FI_THREAD_DOMAIN;
    FI_INFO(&emo_prov, FI_LOG_CORE, "threading: %s%s\n", fi_tostr(&d->threading, FI_TYPE_THREADING),
            d->threading == FI_THREAD_DOMAIN ? " (no lock)" : " (a lock per domain)");
    d->control_progress = FI_PROGRESS_MANUAL;
    d->data_progress = FI_PROGRESS_MANUAL;
    d->resource_mgmt = FI_RM_ENABLED;
    d->av_type = hints && hints->domain_attr && hints->domain_attr->av_type != FI_AV_UNSPEC
                     ? hints->domain_attr->av_type
                     : FI_AV_TABLE;
    d->mr_mode = remote ? EMO_RMA_MR_MODE : 0;
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

/* does @p node name a host (a numeric address, or a name the resolver
 * knows)? */
static bool host_resolves(const char *node)
{
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_DGRAM }, *res = NULL;
    if (getaddrinfo(node, NULL, &hints, &res) != 0)
        return false;
    freeaddrinfo(res);
    return true;
}

/* fi_getinfo's node and service as a partial name (emo_name_partial):
 * with FI_SOURCE the source, else the destination (fi_getinfo(3); a
 * service without a node is then the local host's, as libfabric's util
 * providers read it) */
static int set_addrs(struct fi_info *fi, const char *node, const char *service, uint64_t flags)
{
    if (!service || !*service)
        return 0;
    bool src = (flags & FI_SOURCE) != 0;
    void *a = NULL;
    int rc = emo_name_partial(node, service, src, &a);
    if (rc == -FI_ENODATA) {
        FI_INFO(&emo_prov, FI_LOG_CORE, "'%s:%s' is no IPv4 address and port: no %s address\n",
                node ? node : "", service, src ? "source" : "destination");
        return 0; /* the answer as before, without the address */
    }
    if (rc)
        return rc;
    if (src) {
        fi->src_addr = a;
        fi->src_addrlen = EMO_ADDR_LEN;
    } else {
        fi->dest_addr = a;
        fi->dest_addrlen = EMO_ADDR_LEN;
    }
    return 0;
}

int emo_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
                const struct fi_info *hints, struct fi_info **info)
{
    emo_params_load();
    *info = NULL;
    /* A node or service without FI_SOURCE names the destination: with a service, the
     * answer's dest_addr is a partial name (emo_wire.h: the endpoint at
     * IPv4:service, index 0, nonce and send port not known yet), which the
     * kernel UDP link completes by its first contact and the others refuse
     * at insert (docs/ofi.md "Addresses").  A service with FI_SOURCE is
     * where this side receives: src_addr names it, and the endpoint opened
     * with it binds that port.  A name that names no host
     * at all is refused, as the socket providers refuse it (fabtests'
     * negative test 'fi_rdm g00n13s' wants -FI_ENODATA), instead of an
     * answer that fails later in fi_av_insert.  A node with FI_SOURCE
     * gives src_addr its IPv4, which the endpoint does not use (the link's
     * interface is FI_ETHERMPI_IF_INCLUDE's). */
    if (node && !(flags & FI_SOURCE) && !host_resolves(node)) {
        FI_INFO(&emo_prov, FI_LOG_CORE, "not offered for destination '%s': no such host\n", node);
        return -FI_ENODATA;
    }
    /* nothing to offer when no endpoint could open: an MPI then takes
     * another provider instead of failing on ours (the reason is logged) */
    if (emo_params_error()[0]) {
        FI_INFO(&emo_prov, FI_LOG_CORE, "not offered: %s\n", emo_params_error());
        return -FI_ENODATA;
    }
    if (!em_link_kind_built(emo_link_kind())) {
        FI_WARN(&emo_prov, FI_LOG_CORE,
                "not offered: FI_ETHERMPI_LINK=%s is not part of this build (DPDK, or libxdp and "
                "libbpf, were missing when it was built)\n",
                emo_link_name());
        return -FI_ENODATA;
    }
    int rc = check_hints(version, hints);
    if (rc)
        return rc;
    /* one answer per device (domain), or the one the hints name */
    const char *want = hints && hints->domain_attr ? hints->domain_attr->name : NULL;
    unsigned first = want ? (unsigned)emo_domain_index(want) : 0;
    unsigned last = want ? first + 1 : emo_domain_count();
    struct fi_info **tail = info;
    for (unsigned i = first; i < last; i++) {
        struct fi_info *fi = fi_allocinfo();
        if (!fi) {
            fi_freeinfo(*info);
            *info = NULL;
            return -FI_ENOMEM;
        }
        *tail = fi;
        tail = &fi->next;
        fill_info(fi, version, hints);
        rc = set_addrs(fi, node, service, flags);
        if (rc) {
            fi_freeinfo(*info);
            *info = NULL;
            return rc;
        }
        char name[64];
        emo_domain_name(i, name, sizeof name);
        free(fi->domain_attr->name);
        fi->domain_attr->name = strdup(name);
        if (!fi->domain_attr->name || !fi->fabric_attr->name) {
            fi_freeinfo(*info);
            *info = NULL;
            return -FI_ENOMEM;
        }
    }
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
