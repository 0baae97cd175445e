/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file em_btl.c
 * BTL 3.1 module over the ethermpi engine (see em_btl.h).
 */
#include "em_btl.h"

#include <dlfcn.h>
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "opal/class/opal_bitmap.h"
#include "opal/datatype/opal_convertor.h"
#include "opal/mca/btl/base/base.h"
#include "opal/mca/btl/base/btl_base_error.h"
#include "opal/mca/pmix/pmix.h"
#include "opal/util/proc.h"
#include "opal/util/show_help.h"

#define HELP_FILE "help-mpi-btl-ethermpi.txt"
#define FRAG_BATCH 16

static em_btl_module_t *MOD(struct mca_btl_base_module_t *b) { return (em_btl_module_t *)b; }

/* the order number is sent from order_hdr: it must run straight into buf */
_Static_assert(offsetof(em_btl_frag_t, buf) == offsetof(em_btl_frag_t, order_hdr) + EM_ORDER_HDR,
               "order_hdr sits right before buf");

/* ---------------------------------------------------------------- memory */

static void *track(em_btl_module_t *m, size_t sz)
{
    if (m->nchunks == m->chunks_cap) {
        size_t nc = m->chunks_cap ? m->chunks_cap * 2 : 64;
        void **n = realloc(m->chunks, nc * sizeof *n);
        if (!n)
            return NULL;
        m->chunks = n;
        m->chunks_cap = nc;
    }
    void *p = calloc(1, sz);
    if (p)
        m->chunks[m->nchunks++] = p;
    return p;
}

static em_btl_frag_t *frag_get(em_btl_module_t *m, int cls)
{
    if (!m->free_frags[cls]) {
        for (int i = 0; i < FRAG_BATCH; i++) {
            em_btl_frag_t *f = track(m, sizeof *f + m->frag_cap[cls]);
            if (!f)
                break;
            f->cap = m->frag_cap[cls];
            f->cls = (uint8_t)cls;
            f->kind = EM_BTL_OP_SEND;
            f->next_free = m->free_frags[cls];
            m->free_frags[cls] = f;
        }
        if (!m->free_frags[cls])
            return NULL;
    }
    em_btl_frag_t *f = m->free_frags[cls];
    m->free_frags[cls] = f->next_free;
    return f;
}

static void frag_put(em_btl_module_t *m, em_btl_frag_t *f)
{
    f->next_free = m->free_frags[f->cls];
    m->free_frags[f->cls] = f;
}

static em_btl_rdma_t *rdma_get(em_btl_module_t *m)
{
    if (!m->free_rdma) {
        em_btl_rdma_t *r = track(m, sizeof *r);
        if (!r)
            return NULL;
        r->kind = EM_BTL_OP_PUT;
        return r;
    }
    em_btl_rdma_t *r = m->free_rdma;
    m->free_rdma = r->next_free;
    return r;
}

static void rdma_put(em_btl_module_t *m, em_btl_rdma_t *r)
{
    r->next_free = m->free_rdma;
    m->free_rdma = r;
}

/* ------------------------------------------------------- engine callbacks */

/* hand one message to the PML */
static void deliver(em_btl_module_t *m, uint8_t tag, const void *data, size_t len)
{
    /* the tag comes from the wire: Open MPI's table has MCA_BTL_TAG_MAX
     * (255) entries, so tag 255 would read past it and call what follows */
    if (tag >= MCA_BTL_TAG_MAX) {
        m->drop_tag++;
        return;
    }
    mca_btl_active_message_callback_t *reg = mca_btl_base_active_message_trigger + tag;
    mca_btl_base_segment_t seg = { .seg_addr.pval = (void *)data, .seg_len = len };
    mca_btl_base_descriptor_t des;
    memset(&des, 0, sizeof des);
    des.des_segments = &seg;
    des.des_segment_count = 1;
    if (reg->cbfunc)
        reg->cbfunc(&m->super, tag, &des, reg->cbdata);
}

/* ------------------------------------------- one order over several links */

static int deliver_in_order(void *ctx, void *origin, uint8_t tag, const uint8_t *data, size_t len)
{
    em_btl_module_t *m = origin;     /* the module it arrived on */
    (void)ctx;
    deliver(m, tag, data, len);
    return m->finalizing;            /* the PML is gone: hand nothing more up */
}

static void order_free(struct em_btl_order *o, uint32_t npeers)
{
    if (!o)
        return;
    for (uint32_t i = 0; i < npeers; i++)
        em_order_reset(&o[i].o);
    free(o);
}

/* A process's modex entry, checked; NULL when it has none we can use. */
static struct em_btl_modex *read_modex(em_btl_module_t *m, const opal_process_name_t *name)
{
    struct em_btl_modex *mx = NULL;
    size_t sz = 0;
    int rc;
    OPAL_MODEX_RECV(rc, &m->super.btl_component->btl_version, name, (void **)&mx, &sz);
    if (OPAL_SUCCESS != rc || !mx || sz != sizeof *mx || mx->version != EM_BTL_MODEX_VERSION ||
        mx->count < 1 || mx->count > EM_BTL_MAX_LINKS) {
        free(mx);
        return NULL;
    }
    return mx;
}

/* The order state of @p peer when its messages carry order numbers, else
 * NULL.  Known from add_procs normally; but Open MPI adds remote processes
 * on first use (mpi_add_procs_cutoff 0), so a peer's first message can
 * come before add_procs ran for it: then its modex entry decides, as ob1
 * itself reads it in the same callback. */
static em_order_t *numbered(em_btl_module_t *m, uint16_t peer)
{
    if (!m->order || peer >= m->npeers)
        return NULL;
    struct em_btl_order *o = &m->order[peer];
    if (o->on == EM_BTL_ORDER_UNKNOWN) {
        opal_process_name_t name = { .jobid = OPAL_PROC_MY_NAME.jobid, .vpid = peer };
        struct em_btl_modex *mx = read_modex(m, &name);
        if (!mx)
            return NULL;    /* no address: nothing of ours can come from it */
        o->on = mx->count >= 2 ? EM_BTL_ORDER_ON : EM_BTL_ORDER_OFF;
        free(mx);
    }
    return o->on == EM_BTL_ORDER_ON ? &o->o : NULL;
}

static void fail_peer_loudly(em_btl_module_t *m, uint16_t peer, const char *why);

static void cb_recv(void *u, uint16_t peer, uint8_t tag, const void *data, size_t len)
{
    em_btl_module_t *m = u;
    if (m->finalizing)        /* the PML may already be gone (and unloaded) */
        return;
    em_order_t *o = numbered(m, peer);
    if (!o)
        deliver(m, tag, data, len);
    else if (em_order_rx(o, m, tag, data, len, deliver_in_order, NULL) == EM_ORDER_OVERFLOW) {
        /* acknowledged below us, so it cannot be dropped and fetched again:
         * a peer this far ahead of a missing message is broken or hostile */
        char why[256];
        snprintf(why, sizeof why, "it sent %u messages (%zu bytes) ahead of one that never came, "
                 "more than btl_%s_order_max_held / btl_%s_order_max_mb allow",
                 o->nheld, o->bytes_held, m->name, m->name);
        m->order_overflow++;
        fail_peer_loudly(m, peer, why);
    }
}

static void cb_complete(void *u, void *ctx, int status)
{
    em_btl_module_t *m = u;
    /* a refused put is a remote access error (IB: IBV_WC_REM_ACCESS_ERR):
     * ob1 sees a failed RDMA completion, tells the receiver (FIN with an
     * error) and sends that range by copy in/out instead */
    int rc = status == 0 ? OPAL_SUCCESS : status == -EM_EACCES ? OPAL_ERR_PERM : OPAL_ERR_UNREACH;
    if (m->finalizing)        /* ops drained or cancelled by finalize: no upcalls */
        return;
    if (*(int *)ctx == EM_BTL_OP_SEND) {
        em_btl_frag_t *f = (em_btl_frag_t *)((char *)ctx - offsetof(em_btl_frag_t, kind));
        uint32_t flags = f->base.des_flags;
        if (f->base.des_cbfunc)
            f->base.des_cbfunc(&m->super, f->ep, &f->base, rc);
        if (flags & MCA_BTL_DES_FLAGS_BTL_OWNERSHIP)
            frag_put(m, f);
    } else {
        em_btl_rdma_t *r = (em_btl_rdma_t *)((char *)ctx - offsetof(em_btl_rdma_t, kind));
        mca_btl_base_rdma_completion_fn_t fn = r->cbfunc;
        struct mca_btl_base_endpoint_t *ep = r->ep;
        void *la = r->local_address, *cx = r->cbcontext, *cd = r->cbdata;
        mca_btl_base_registration_handle_t *lh = r->local_handle;
        rdma_put(m, r);
        fn(&m->super, ep, la, lh, cx, cd, rc);
    }
}

/* The Open MPI process of @p peer: add_procs' endpoint, or, for a peer known
 * only by its frames (resolved from the modex, never added), looked up by
 * name, so that its failure is reported all the same (a receive-only rank
 * must not hang silently).  NULL if Open MPI does not know it. */
static opal_proc_t *peer_proc(em_btl_module_t *m, uint16_t peer)
{
    struct mca_btl_base_endpoint_t *ep = peer < m->npeers ? &m->eps[peer] : NULL;
    if (!ep)
        return NULL;
    if (ep->proc)
        return ep->proc;
    opal_process_name_t name = { .jobid = OPAL_PROC_MY_NAME.jobid, .vpid = peer };
    return opal_proc_for_name ? opal_proc_for_name(name) : NULL;
}

static void cb_peer_failed(void *u, uint16_t peer)
{
    em_btl_module_t *m = u;
    struct mca_btl_base_endpoint_t *ep = peer < m->npeers ? &m->eps[peer] : NULL;
    opal_proc_t *proc = m->finalizing ? NULL : peer_proc(m, peer);
    if (!ep || !proc)
        return;
    ep->failed = 1;
    /* Rendered here and written to stderr rather than opal_show_help(): the
     * latter is forwarded to mpirun through the PMIx log, and Open MPI 4.1.4's
     * mpirun crashed (orte_rml_oob_send_buffer_nb from pmix_server_log_fn)
     * when that log raced with the abort that follows. */
    if (em_engine_proto_stats(m->engine)->fail_refused_acked) {
        /* not a silence: a frame the emd daemon acknowledged could not be
         * taken (the help text below is about silent peers) */
        fprintf(stderr, "[%s] ethermpi %s: peer %s failed: %s\n", opal_process_info.nodename, m->name,
                OPAL_NAME_PRINT(proc->proc_name), em_engine_fail_reason(m->engine, peer));
        fflush(stderr);
    }
    char *msg = opal_show_help_string(HELP_FILE, "peer-failed", true, m->name,
                                      opal_process_info.nodename,
                                      OPAL_NAME_PRINT(proc->proc_name), m->params->retries);
    if (msg) {
        fputs(msg, stderr);
        fflush(stderr);
        free(msg);
    }
    if (m->error_cb)
        m->error_cb(&m->super, MCA_BTL_ERROR_FLAGS_FATAL, proc, "ethermpi: peer stopped answering");
}

/* Fail @p peer for a protocol violation (not silence): say why, then let
 * Open MPI end the job as for a failed peer. */
static void fail_peer_loudly(em_btl_module_t *m, uint16_t peer, const char *why)
{
    struct mca_btl_base_endpoint_t *ep = peer < m->npeers ? &m->eps[peer] : NULL;
    fprintf(stderr, "ethermpi btl_%s on %s: peer vpid %u is failed: %s\n", m->name,
            opal_process_info.nodename, (unsigned)peer, why);
    fflush(stderr);
    opal_proc_t *proc = m->finalizing ? NULL : peer_proc(m, peer);
    if (!ep || !proc)
        return;
    ep->failed = 1;
    if (m->error_cb)
        m->error_cb(&m->super, MCA_BTL_ERROR_FLAGS_FATAL, proc, "ethermpi: peer broke the protocol");
}

/* The pair key of this process and a peer: both sides compute the same
 * value from the two published secrets (ordered by vpid).  A non-linear
 * mix, so that pair keys seen on the wire tell nothing about other pairs. */
static uint64_t pair_key(uint64_t a, uint32_t va, uint64_t b, uint32_t vb)
{
    uint64_t lo = va < vb ? a : b, hi = va < vb ? b : a;
    uint64_t x = lo ^ 0x9E3779B97F4A7C15ull;
    for (int r = 0; r < 2; r++) {
        x ^= hi + 0x632BE59BD9B4E019ull + (x << 6) + (x >> 2);
        x ^= x >> 30; x *= 0xBF58476D1CE4E5B9ull;
        x ^= x >> 27; x *= 0x94D049BB133111EBull;
        x ^= x >> 31;
    }
    return x;
}

/* The link address and the pair's keys of @p vpid from its modex entry
 * @p mx.  @return 0, or -1 when the entry does not fit this module. */
static int set_peer_from(em_btl_module_t *m, uint16_t vpid, const struct em_btl_modex *mx)
{
    if (m->index >= mx->count || mx->link[m->index].frame_max < m->link->mtu ||
        mx->link[m->index].addr.len > sizeof mx->link[m->index].addr.bytes)
        return -1;
    if (em_engine_set_peer(m->engine, vpid, &mx->link[m->index].addr) != 0)
        return -1;
    uint64_t key = pair_key(m->secret, OPAL_PROC_MY_NAME.vpid, mx->secret, vpid);
    return em_engine_set_peer_keys(m->engine, vpid, key, m->isn, mx->isn) == 0 ? 0 : -1;
}

/* Take @p peer's address and the pair's keys from its modex entry now, as
 * add_procs will: Open MPI 4.1 adds a remote peer on first send only
 * (mpi_add_procs_cutoff 0), so a peer may be unknown when its first frame
 * arrives, or when we owe it an ACK without ever having sent to it
 * (docs/design.md "Peers known only by their frames").  The endpoint itself
 * stays add_procs' business.  @return 0 when the peer is now set. */
static int resolve_from_modex(em_btl_module_t *m, uint16_t peer)
{
    if (peer >= m->npeers || peer == OPAL_PROC_MY_NAME.vpid)
        return -1;
    if (m->eps[peer].resolved)
        return 0;
    opal_process_name_t name = { .jobid = OPAL_PROC_MY_NAME.jobid, .vpid = peer };
    struct em_btl_modex *mx = read_modex(m, &name);
    if (mx && set_peer_from(m, peer, mx) == 0)
        m->eps[peer].resolved = 1;
    free(mx);
    return m->eps[peer].resolved ? 0 : -1;
}

/* A frame claims to come from @p peer, which is not set yet: resolve it;
 * the engine then checks the frame's source against its address. */
static void cb_resolve(void *u, uint16_t peer)
{
    (void)resolve_from_modex(u, peer);
}

/* The engine has a frame (an ACK, typically) for @p peer, whose address was
 * never set: a rank that only receives from a peer still owes it ACKs. */
static int cb_resolve_peer(void *u, uint16_t peer)
{
    return resolve_from_modex(u, peer);
}

static const em_engine_ops_t engine_ops = {
    .recv = cb_recv, .complete = cb_complete, .peer_failed = cb_peer_failed,
    .resolve = cb_resolve, .resolve_peer = cb_resolve_peer,
};

/* -------------------------------------------------------- module functions */

static int em_add_procs(struct mca_btl_base_module_t *btl, size_t nprocs,
                        struct opal_proc_t **procs, struct mca_btl_base_endpoint_t **peers,
                        opal_bitmap_t *reachable)
{
    em_btl_module_t *m = MOD(btl);
    const opal_process_name_t me = OPAL_PROC_MY_NAME;

    for (size_t i = 0; i < nprocs; i++) {
        opal_proc_t *proc = procs[i];
        if (0 == opal_compare_proc(proc->proc_name, me))
            continue;
        if (!m->params->same_node && OPAL_PROC_ON_LOCAL_NODE(proc->proc_flags))
            continue;                       /* vader's job */
        if (proc->proc_name.jobid != me.jobid || proc->proc_name.vpid >= m->npeers)
            continue;                       /* other jobs (spawn) are not supported */
        struct em_btl_modex *mx = read_modex(m, &proc->proc_name);
        if (!mx) {
            BTL_VERBOSE(("%s: no usable address for %s", m->name, OPAL_NAME_PRINT(proc->proc_name)));
            continue;
        }
        if (m->index >= mx->count) {        /* the peer has fewer links: not via this one */
            free(mx);
            continue;
        }
        if (mx->link[m->index].frame_max < m->link->mtu ||
            mx->link[m->index].addr.len > sizeof mx->link[m->index].addr.bytes) {
            opal_show_help(HELP_FILE, "mtu-mismatch", true, m->name, opal_process_info.nodename,
                           (unsigned)m->link->mtu, OPAL_NAME_PRINT(proc->proc_name),
                           (unsigned)mx->link[m->index].frame_max, m->name);
            free(mx);
            continue;
        }
        uint16_t vpid = (uint16_t)proc->proc_name.vpid;
        struct mca_btl_base_endpoint_t *ep = &m->eps[vpid];
        if (!ep->resolved && set_peer_from(m, vpid, mx) != 0) {
            free(mx);
            continue;
        }
        ep->resolved = 1;
        if (m->order)
            m->order[vpid].on = mx->count >= 2 ? EM_BTL_ORDER_ON : EM_BTL_ORDER_OFF;
        free(mx);
        ep->proc = proc;
        ep->peer = vpid;
        peers[i] = ep;
        if (reachable)
            opal_bitmap_set_bit(reachable, (int)i);
    }
    return OPAL_SUCCESS;
}

static int em_del_procs(struct mca_btl_base_module_t *btl, size_t nprocs,
                        struct opal_proc_t **procs, struct mca_btl_base_endpoint_t **peers)
{
    return OPAL_SUCCESS;
}

static mca_btl_base_descriptor_t *em_alloc(struct mca_btl_base_module_t *btl,
                                           struct mca_btl_base_endpoint_t *ep,
                                           uint8_t order, size_t size, uint32_t flags)
{
    em_btl_module_t *m = MOD(btl);
    int cls = size <= m->frag_cap[0] ? 0 : 1;
    if (size > m->frag_cap[1])
        return NULL;
    em_btl_frag_t *f = frag_get(m, cls);
    if (!f)
        return NULL;
    f->seg.seg_addr.pval = f->buf;
    f->seg.seg_len = size;
    f->base.des_segments = &f->seg;
    f->base.des_segment_count = 1;
    f->base.des_flags = flags;
    f->base.des_cbfunc = NULL;
    f->base.des_cbdata = NULL;
    f->base.des_context = NULL;
    f->base.order = MCA_BTL_NO_ORDER;
    f->ep = ep;
    return &f->base;
}

static int em_free(struct mca_btl_base_module_t *btl, mca_btl_base_descriptor_t *des)
{
    frag_put(MOD(btl), (em_btl_frag_t *)des);
    return OPAL_SUCCESS;
}

static mca_btl_base_descriptor_t *em_prepare_src(struct mca_btl_base_module_t *btl,
                                                 struct mca_btl_base_endpoint_t *ep,
                                                 struct opal_convertor_t *conv, uint8_t order,
                                                 size_t reserve, size_t *size, uint32_t flags)
{
    em_btl_module_t *m = MOD(btl);
    if (reserve + *size > m->frag_cap[1])
        *size = m->frag_cap[1] - reserve;
    mca_btl_base_descriptor_t *des = em_alloc(btl, ep, order, reserve + *size, flags);
    if (!des)
        return NULL;
    em_btl_frag_t *f = (em_btl_frag_t *)des;
    struct iovec iov = { .iov_base = f->buf + reserve, .iov_len = *size };
    uint32_t cnt = 1;
    size_t max = *size;
    if (opal_convertor_pack(conv, &iov, &cnt, &max) < 0) {
        em_free(btl, des);
        return NULL;
    }
    *size = max;
    f->seg.seg_len = reserve + max;
    return des;
}

static int map_err(int rc)
{
    return rc == -EM_EPEERFAIL ? OPAL_ERR_UNREACH : OPAL_ERROR;
}

/* Send the @p len bytes at f->buf; with several links, behind the peer's
 * next order number (which counts only once the engine took the message). */
static int ordered_send(em_btl_module_t *m, em_btl_frag_t *f, uint16_t peer, uint8_t tag,
                        size_t len)
{
    em_order_t *o = numbered(m, peer);
    if (!o)
        return em_engine_send(m->engine, &f->op, peer, tag, f->buf, len, &f->kind);
    em_order_stamp(o, f->order_hdr);
    int rc = em_engine_send(m->engine, &f->op, peer, tag, f->order_hdr, len + EM_ORDER_HDR,
                            &f->kind);
    if (rc == 0)
        em_order_sent(o);
    return rc;
}

static int em_send(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                   struct mca_btl_base_descriptor_t *des, mca_btl_base_tag_t tag)
{
    em_btl_module_t *m = MOD(btl);
    em_btl_frag_t *f = (em_btl_frag_t *)des;
    if (ep->failed)
        return OPAL_ERR_UNREACH;
    f->ep = ep;
    int rc = ordered_send(m, f, ep->peer, tag, (size_t)des->des_segments[0].seg_len);
    return rc == 0 ? OPAL_SUCCESS : map_err(rc);
}

static int em_sendi(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                    struct opal_convertor_t *conv, void *header, size_t header_size,
                    size_t payload_size, uint8_t order, uint32_t flags,
                    mca_btl_base_tag_t tag, mca_btl_base_descriptor_t **descriptor)
{
    em_btl_module_t *m = MOD(btl);
    if (descriptor)
        *descriptor = NULL;
    if (ep->failed)
        return OPAL_ERR_UNREACH;
    /* An inline send completes at once, and the caller may then not drive
     * progress for a long time (a rank that sends and sleeps): a message
     * queued behind a full window, or behind a frame whose timer is due,
     * would wait for that.  Take it only if it leaves now; otherwise hand
     * back a descriptor: ob1 sends it with btl_send and waits for its
     * completion, driving progress (ACKs, retransmissions) meanwhile. */
    if (!em_engine_send_ready(m->engine, ep->peer, header_size + payload_size +
                              (numbered(m, ep->peer) ? EM_ORDER_HDR : 0))) {
        if (descriptor)
            *descriptor = em_alloc(btl, ep, order, header_size + payload_size, flags);
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    mca_btl_base_descriptor_t *des = em_alloc(btl, ep, order, header_size + payload_size,
                                              flags | MCA_BTL_DES_FLAGS_BTL_OWNERSHIP);
    if (!des)
        return OPAL_ERR_OUT_OF_RESOURCE;
    em_btl_frag_t *f = (em_btl_frag_t *)des;
    memcpy(f->buf, header, header_size);
    if (payload_size) {
        struct iovec iov = { .iov_base = f->buf + header_size, .iov_len = payload_size };
        uint32_t cnt = 1;
        size_t max = payload_size;
        if (opal_convertor_pack(conv, &iov, &cnt, &max) < 0 || max != payload_size) {
            em_free(btl, des);
            return OPAL_ERROR;
        }
    }
    int rc = ordered_send(m, f, ep->peer, tag, header_size + payload_size);
    if (rc != 0) {
        em_free(btl, des);
        return map_err(rc);
    }
    return OPAL_SUCCESS;
}

static int em_put(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                  void *local_address, uint64_t remote_address,
                  mca_btl_base_registration_handle_t *local_handle,
                  mca_btl_base_registration_handle_t *remote_handle, size_t size, int flags,
                  int order, mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                  void *cbdata)
{
    em_btl_module_t *m = MOD(btl);
    if (ep->failed)
        return OPAL_ERR_UNREACH;
    if (!remote_handle || remote_address < remote_handle->region.base || size > btl->btl_put_limit)
        return OPAL_ERR_BAD_PARAM;
    em_btl_rdma_t *r = rdma_get(m);
    if (!r)
        return OPAL_ERR_OUT_OF_RESOURCE;
    r->ep = ep;
    r->cbfunc = cbfunc;
    r->cbcontext = cbcontext;
    r->cbdata = cbdata;
    r->local_address = local_address;
    r->local_handle = local_handle;
    int rc = em_engine_put(m->engine, &r->op, ep->peer, &remote_handle->region,
                           remote_address - remote_handle->region.base, local_address, size,
                           &r->kind);
    if (rc != 0) {
        rdma_put(m, r);
        return map_err(rc);
    }
    return OPAL_SUCCESS;
}

static mca_btl_base_registration_handle_t *em_register_mem(struct mca_btl_base_module_t *btl,
                                                           struct mca_btl_base_endpoint_t *ep,
                                                           void *base, size_t size, uint32_t flags)
{
    em_btl_module_t *m = MOD(btl);
    mca_btl_base_registration_handle_t *h = malloc(sizeof *h);
    if (!h)
        return NULL;
    if (!(flags & MCA_BTL_REG_FLAG_REMOTE_WRITE)) {
        /* access flags honoured (issue 13, L5): puts are the only remote
         * access we offer, so a region nobody may write gets a handle that
         * names no region: every put into it is refused */
        h->region = (em_region_handle_t){ .id = 0, .key = 0,
                                          .base = (uint64_t)(uintptr_t)base, .len = size };
        return h;
    }
    if (em_engine_register(m->engine, base, size, &h->region) != 0) {
        free(h);
        return NULL;
    }
    return h;
}

static int em_deregister_mem(struct mca_btl_base_module_t *btl,
                             mca_btl_base_registration_handle_t *h)
{
    em_btl_module_t *m = MOD(btl);
    int rc = h->region.id == 0 ? 0 : em_engine_deregister(m->engine, &h->region);
    free(h);
    return rc == 0 ? OPAL_SUCCESS : OPAL_ERR_BAD_PARAM;
}

static int em_register_error(struct mca_btl_base_module_t *btl,
                             mca_btl_base_module_error_cb_fn_t cbfunc)
{
    MOD(btl)->error_cb = cbfunc;
    return OPAL_SUCCESS;
}

static void print_stats(em_btl_module_t *m)
{
    const em_proto_stats_t *p = em_engine_proto_stats(m->engine);
    const em_engine_stats_t *e = em_engine_stats(m->engine);
    opal_output(0, "[%s] btl_%s stats: tx %llu frames (%llu data, %llu acks, %llu retransmits, "
                   "%llu timeouts), rx %llu frames (%llu dups, %llu out-of-order, %llu spurious_retx), "
                   "msgs %llu/%llu, "
                   "puts placed %llu rejected %llu, drops: key %llu magic %llu malformed %llu "
                   "window %llu, backpressure %llu; payload bytes copied by ethermpi: tx %llu "
                   "(sent from the user's memory: %llu), rx reassembly/out-of-order %llu, "
                   "rx put placement %llu (handed over in place: %llu); refused: "
                   "drop_source %llu drop_job_key %llu drop_tag %llu drop_budget %llu "
                   "drop_endpoint %llu drop_version %llu drop_short %llu drop_peer_failed %llu, "
                   "puts_failed %llu (remote access error), rx buffers %llu bytes",
                opal_process_info.nodename, m->name,
                (unsigned long long)p->tx_frames, (unsigned long long)p->tx_data_frames,
                (unsigned long long)p->tx_acks, (unsigned long long)p->retransmits,
                (unsigned long long)p->timeouts, (unsigned long long)p->rx_frames,
                (unsigned long long)p->rx_dups, (unsigned long long)p->rx_ooo,
                (unsigned long long)p->spurious_retx,
                (unsigned long long)p->msgs_sent, (unsigned long long)p->msgs_recv,
                (unsigned long long)e->puts_placed, (unsigned long long)p->puts_rejected,
                (unsigned long long)p->drop_job_key, (unsigned long long)p->drop_magic,
                (unsigned long long)p->drop_malformed, (unsigned long long)p->drop_window,
                (unsigned long long)e->tx_backpressure, (unsigned long long)e->tx_copy_bytes,
                (unsigned long long)e->tx_gather_bytes, (unsigned long long)p->rx_copy_bytes,
                (unsigned long long)e->put_bytes, (unsigned long long)e->recv_bytes,
                (unsigned long long)p->drop_source, (unsigned long long)p->drop_job_key,
                (unsigned long long)m->drop_tag, (unsigned long long)p->drop_budget,
                (unsigned long long)p->drop_endpoint, (unsigned long long)p->drop_version,
                (unsigned long long)p->drop_short, (unsigned long long)p->drop_peer_failed,
                (unsigned long long)p->puts_failed,
                (unsigned long long)em_engine_rx_mem(m->engine));
    opal_output(0, "[%s] btl_%s congestion control: cwnd cuts for loss %llu, for delay %llu; "
                   "new frames held by cwnd %llu, by pacing %llu", opal_process_info.nodename,
                m->name,
                (unsigned long long)p->cc_loss_decreases, (unsigned long long)p->cc_delay_decreases,
                (unsigned long long)p->cc_cwnd_blocked, (unsigned long long)p->cc_paced);
    if (m->order && m->index == 0) {
        uint64_t kept = 0, dropped = 0;
        for (uint32_t i = 0; i < m->npeers; i++) {
            kept += m->order[i].o.kept;
            dropped += m->order[i].o.dropped;
        }
        opal_output(0, "[%s] btl_%s links: %llu messages kept until their turn, %llu dropped "
                       "(no valid order number), order_overflow %llu peers",
                    opal_process_info.nodename, m->name,
                    (unsigned long long)kept, (unsigned long long)dropped,
                    (unsigned long long)m->order_overflow);
    }
}

static int em_finalize(struct mca_btl_base_module_t *btl)
{
    em_btl_module_t *m = MOD(btl);
    /* From here on no upcall reaches the PML: it has been finalized, and its
     * component may be unloaded (a late frame during the drain below used to
     * call into unmapped memory: a segfault in MPI_Finalize, ~1 run in 4). */
    m->finalizing = 1;
    if (m->order && m->index == 0) {
        /* the order state is the first module's: the siblings stop handing
         * messages up with it (the PML is finalized before any BTL) */
        for (em_btl_module_t *s = m->next; s; s = s->next) {
            s->finalizing = 1;
            s->order = NULL;
        }
        order_free(m->order, m->npeers);
    }
    m->order = NULL;
    if (m->engine) {
        /* give the last ACKs a moment to leave, so peers need not retransmit */
        uint64_t t0 = em_now_ns();
        while (!em_engine_idle(m->engine) && em_now_ns() - t0 < 100000000ull)
            em_engine_progress(m->engine);
        if (m->params->print_stats)
            print_stats(m);
        if (m->params->print_stats && m->params->print_link_stats)
            m->params->print_link_stats(m->link);
        em_engine_destroy(m->engine);
        m->engine = NULL;
    }
    em_link_close(m->link);
    m->link = NULL;
    for (size_t i = 0; i < m->nchunks; i++)
        free(m->chunks[i]);
    free(m->chunks);
    m->chunks = NULL;
    m->nchunks = m->chunks_cap = 0;
    m->free_frags[0] = m->free_frags[1] = NULL;
    m->free_rdma = NULL;
    free(m->eps);
    m->eps = NULL;
    return OPAL_SUCCESS;
}

/* ----------------------------------------------------------- component side */

void em_btl_module_defaults(mca_btl_base_module_t *b)
{
    /* See docs/design.md "BTL defaults" for how these were measured: eager
     * beat the put rendezvous up to 64 KiB messages (+128 for ob1's header). */
    b->btl_eager_limit = 64 * 1024 + 128;
    b->btl_rndv_eager_limit = 8 * 1024;
    b->btl_max_send_size = 64 * 1024 + 128;
    b->btl_rdma_pipeline_send_length = 64 * 1024;
    b->btl_rdma_pipeline_frag_size = 4 * 1024 * 1024;
    b->btl_min_rdma_pipeline_size = 0;
    /* above tcp's LOW + 100: bml/r2 keeps only the BTLs of the highest
     * exclusivity per peer, so with both listed tcp carries nothing to a
     * peer we reach (at equal exclusivity r2 would split large messages
     * with tcp by bandwidth weight); below vader and self (same node) */
    b->btl_exclusivity = MCA_BTL_EXCLUSIVITY_LOW + 200;
    b->btl_latency = 10;
    b->btl_bandwidth = 10000;
    b->btl_flags = MCA_BTL_FLAGS_SEND | MCA_BTL_FLAGS_PUT;
    b->btl_put_limit = 64 * 1024 * 1024;   /* lowered at init to what one put can carry */
    b->btl_put_alignment = 0;
    b->btl_put_local_registration_threshold = SIZE_MAX;  /* puts read local memory directly */
    b->btl_registration_handle_size = sizeof(struct mca_btl_base_registration_handle_t);
    b->btl_add_procs = em_add_procs;
    b->btl_del_procs = em_del_procs;
    b->btl_finalize = em_finalize;
    b->btl_alloc = em_alloc;
    b->btl_free = em_free;
    b->btl_prepare_src = em_prepare_src;
    b->btl_send = em_send;
    b->btl_sendi = em_sendi;
    b->btl_put = em_put;
    b->btl_get = NULL;
    b->btl_dump = mca_btl_base_dump;
    b->btl_register_mem = em_register_mem;
    b->btl_deregister_mem = em_deregister_mem;
    b->btl_register_error = em_register_error;
}

bool em_btl_named(const char *name)
{
    const char *sel = opal_btl_base_framework.framework_selection;
    if (!sel || !*sel || sel[0] == '^')
        return false;
    size_t n = strlen(name);
    for (const char *p = sel; *p;) {
        size_t k = strcspn(p, ",");
        if (k == n && 0 == strncmp(p, name, n))
            return true;
        p += k;
        if (*p == ',')
            p++;
    }
    return false;
}

void em_btl_add_help_dir(const void *symbol_in_component)
{
    Dl_info info;
    if (dladdr(symbol_in_component, &info) && info.dli_fname) {
        char *copy = strdup(info.dli_fname);
        if (copy) {
            opal_show_help_add_dir(dirname(copy));
            free(copy);
        }
    }
}

/** The cc parameter's value (docs/design.md "Congestion control"); -1 if unknown. */
static int cc_mode(const char *s)
{
    if (!s || 0 == strcmp(s, "loss"))
        return EM_CC_LOSS;
    if (0 == strcmp(s, "delay"))
        return EM_CC_DELAY;
    if (0 == strcmp(s, "off"))
        return EM_CC_OFF;
    return -1;
}

/* One link's module: engine, endpoints, fragment sizes. */
static int module_setup(em_btl_module_t *m, em_link_t *link, uint32_t jsize, em_recovery_t rec,
                        char *err, size_t errlen)
{
    em_btl_params_t *params = m->params;
    m->link = link;
    em_proto_cfg_t cfg;
    em_proto_cfg_default(&cfg);
    /* every peer's key and ISN come from its modex entry (set_peer_from):
     * none is known, and no frame accepted, before that */
    cfg.peers_need_set = 1;
    cfg.bind_source = 1;
    cfg.job_key = m->secret;
    cfg.isn = m->isn;
    /* receiver budgets (issue 13): no message longer than a sender of ours
     * makes (+ the order number), and rx_mem_mb of buffers in all */
    cfg.max_msg = (uint32_t)m->super.btl_max_send_size + EM_ORDER_HDR;
    cfg.rx_mem_max = params->rx_mem_mb > 0 ? (uint64_t)params->rx_mem_mb << 20 : 0;
    cfg.self = (uint16_t)OPAL_PROC_MY_NAME.vpid;
    cfg.npeers = (uint16_t)jsize;
    cfg.frame_max = link->mtu;
    cfg.window = (uint16_t)params->window;
    cfg.recovery = rec;
    cfg.rto_ns = (uint64_t)params->rto_us * 1000u;
    cfg.rto_min_ns = (uint64_t)params->rto_min_us * 1000u;
    cfg.rto_max_ns = (uint64_t)params->rto_max_us * 1000u;
    cfg.max_retries = (uint32_t)params->retries;
    cfg.ack_delay_ns = (uint64_t)params->ack_delay_us * 1000u;
    cfg.cc = (em_cc_mode_t)cc_mode(params->cc);     /* checked by the caller */
    /* Pace in bursts of 64 KB, not 8 frames: the kernel sends a GSO batch of
     * up to 64 KB as one packet anyway (as TCP paces TSO-sized bursts), and
     * a user-space loop woken per 1.5 KB frame lost 40 % of rudp's bandwidth
     * at MTU 1500 (docs/design.md "Congestion control", real links). */
    if (cfg.frame_max && 65536 / cfg.frame_max > cfg.cc_pace_burst)
        cfg.cc_pace_burst = (uint16_t)(65536 / cfg.frame_max);
    if (cfg.cc_pace_burst > cfg.window)
        cfg.cc_pace_burst = cfg.window;
    int e;
    m->engine = em_engine_create(link, &cfg, &engine_ops, m, &e);
    if (!m->engine) {
        snprintf(err, errlen, "engine: %s (check rto/rto_max/window parameters)", em_strerror(e));
        return -1;
    }
    m->npeers = jsize;
    m->eps = calloc(jsize, sizeof *m->eps);
    for (uint32_t i = 0; m->eps && i < jsize; i++)
        m->eps[i].peer = (uint16_t)i;
    if (!m->eps) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    m->frag_cap[0] = (uint32_t)em_engine_frame_payload(m->engine);
    m->frag_cap[1] = (uint32_t)m->super.btl_max_send_size;
    if (m->frag_cap[1] < m->frag_cap[0])
        m->frag_cap[1] = m->frag_cap[0];
    if (m->super.btl_put_limit > em_engine_max_msg(m->engine))
        m->super.btl_put_limit = em_engine_max_msg(m->engine);
    return 0;
}

/* finalize and free the sibling modules of @p first (init failed) */
static void drop_modules(em_btl_module_t *first)
{
    em_btl_module_t *n = first->next;
    first->next = NULL;
    em_finalize(&first->super);
    while (n) {
        em_btl_module_t *k = n->next;
        em_finalize(&n->super);
        free(n);
        n = k;
    }
}

mca_btl_base_module_t **em_btl_init(em_btl_module_t *m, mca_btl_base_component_t *comp,
                                    const char *name, em_btl_params_t *params,
                                    em_btl_link_open_fn open_link, int *num_btls,
                                    bool enable_mpi_threads)
{
    char err[512] = "";
    int rc;

    *num_btls = 0;
    m->name = name;
    m->params = params;
    m->super.btl_component = comp;
    m->index = 0;
    m->next = NULL;
    m->order = NULL;
    if (enable_mpi_threads) {
        /* mpi4py and many apps ask for THREAD_MULTIPLE by default: a job
         * that did not name us hears nothing, one that did gets one line */
        if (em_btl_named(name))
            opal_output(0, "btl %s: not used: MPI_THREAD_MULTIPLE is not supported (the "
                           "engine is single-threaded; ask for MPI_THREAD_SERIALIZED or less)",
                        name);
        return NULL;
    }
    em_recovery_t rec;
    if (!params->recovery || 0 == strcmp(params->recovery, "sr"))
        rec = EM_RECOVERY_SR;
    else if (0 == strcmp(params->recovery, "gbn"))
        rec = EM_RECOVERY_GBN;
    else {
        opal_show_help(HELP_FILE, "bad-param", true, name, opal_process_info.nodename,
                       "recovery", params->recovery, "sr or gbn");
        return NULL;
    }
    if (cc_mode(params->cc) < 0) {
        opal_show_help(HELP_FILE, "bad-param", true, name, opal_process_info.nodename,
                       "cc", params->cc, "delay, loss or off");
        return NULL;
    }
    if (params->window < 1 || params->window > (int)EM_WINDOW_MAX) {
        char v[32];
        snprintf(v, sizeof v, "%d", params->window);
        opal_show_help(HELP_FILE, "bad-param", true, name, opal_process_info.nodename,
                       "window", v, "1 to 64");
        return NULL;
    }

    /* job size: peer ids are vpids, 16 bits on the wire */
    opal_process_name_t wild = { .jobid = OPAL_PROC_MY_NAME.jobid, .vpid = OPAL_VPID_WILDCARD };
    uint32_t jsize = 0, *jsp = &jsize;
    OPAL_MODEX_RECV_VALUE(rc, OPAL_PMIX_JOB_SIZE, &wild, &jsp, OPAL_UINT32);
    if (OPAL_SUCCESS != rc || jsize == 0 || jsize > 65535) {
        char v[32];
        snprintf(v, sizeof v, "%u", jsize);
        opal_show_help(HELP_FILE, "job-size", true, name, opal_process_info.nodename, v);
        return NULL;
    }

    /* this process's secret and first sequence number: from the kernel's
     * generator only (a guessable fallback would defeat their purpose) */
    uint8_t rnd[12];
    ssize_t got;
    do {
        got = getrandom(rnd, sizeof rnd, 0);
    } while (got < 0 && errno == EINTR);
    if (got != (ssize_t)sizeof rnd) {
        snprintf(err, sizeof err, "getrandom() failed (%s): the per-job secret cannot be drawn; "
                 "this kernel or sandbox must allow getrandom(2)", got < 0 ? strerror(errno) : "short read");
        opal_show_help(HELP_FILE, "link-open-failed", true, name, opal_process_info.nodename, err, name);
        return NULL;
    }
    memcpy(&m->secret, rnd, 8);
    memcpy(&m->isn, rnd + 8, 4);
    if (!params->random_isn)
        m->isn = 0;
    m->drop_tag = m->order_overflow = 0;

    /* one module per link: link 0 is @p m, the others are copies of its
     * (registered) parameters; a failure on any link disqualifies the
     * component, since the peers expect every link they were told of */
    struct em_btl_modex mx;
    memset(&mx, 0, sizeof mx);
    mx.version = EM_BTL_MODEX_VERSION;
    mx.secret = m->secret;
    mx.isn = m->isn;
    em_btl_module_t *last = NULL;
    unsigned n = 0;
    for (; n < EM_BTL_MAX_LINKS; n++) {
        err[0] = 0;
        em_link_t *link = open_link(n, err, sizeof err);
        if (!link) {
            if (n > 0 && !err[0])
                break;                      /* no more links */
            if (!err[0])
                snprintf(err, sizeof err, "no link");
            goto fail_open;
        }
        em_btl_module_t *mod = m;
        if (n > 0) {
            mod = calloc(1, sizeof *mod);
            if (!mod) {
                em_link_close(link);
                snprintf(err, sizeof err, "out of memory");
                goto fail_open;
            }
            mod->super = m->super;
            mod->name = name;
            mod->params = params;
            mod->index = n;
            mod->secret = m->secret;
            mod->isn = m->isn;
            last->next = mod;
        }
        last = mod;
        if (module_setup(mod, link, jsize, rec, err, sizeof err) != 0)
            goto fail_open;
        mx.link[n].frame_max = link->mtu;
        mx.link[n].addr = link->local;
    }
    mx.count = n;
    if (n >= 2) {
        m->order = calloc(jsize, sizeof *m->order);
        if (!m->order) {
            snprintf(err, sizeof err, "out of memory");
            goto fail_open;
        }
        for (uint32_t i = 0; i < jsize; i++) {
            m->order[i].o.max_held = params->order_max_held > 0 ? (uint32_t)params->order_max_held : 0;
            m->order[i].o.max_bytes = params->order_max_mb > 0 ? (size_t)params->order_max_mb << 20 : 0;
        }
        for (em_btl_module_t *it = m; it; it = it->next) {
            it->order = m->order;
            /* a one-frame message stays one frame with its order number */
            if (it->frag_cap[0] > EM_ORDER_HDR)
                it->frag_cap[0] -= EM_ORDER_HDR;
        }
    }
    OPAL_MODEX_SEND(rc, OPAL_PMIX_GLOBAL, &comp->btl_version, &mx, sizeof mx);
    if (OPAL_SUCCESS != rc)
        goto fail;

    mca_btl_base_module_t **mods = malloc(n * sizeof *mods);
    if (!mods)
        goto fail;
    unsigned k = 0;
    for (em_btl_module_t *it = m; it; it = it->next)
        mods[k++] = &it->super;
    *num_btls = (int)k;
    return mods;

fail_open:
    opal_show_help(HELP_FILE, "link-open-failed", true, name, opal_process_info.nodename, err, name);
fail:
    drop_modules(m);
    return NULL;
}

int em_btl_progress(em_btl_module_t *m)
{
    int n = 0;
    for (; m; m = m->next)
        if (m->engine)
            n += em_engine_progress(m->engine);
    return n;
}
