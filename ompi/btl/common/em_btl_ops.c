/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file em_btl_ops.c
 * The BTL 3.1 module functions over the ethermpi engine and their
 * descriptor pools (see em_btl.h, em_btl_internal.h).
 */
#include "em_btl_internal.h"
#include "engine/contact.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opal/class/opal_bitmap.h"
#include "opal/datatype/opal_convertor.h"
#include "opal/mca/btl/base/base.h"
#include "opal/mca/btl/base/btl_base_error.h"
#include "opal/util/proc.h"
#include "opal/util/show_help.h"

#define FRAG_BATCH 16

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

void em_btl_frag_put(em_btl_module_t *m, em_btl_frag_t *f)
{
    f->next_free = m->free_frags[f->cls];
    m->free_frags[f->cls] = f;
}

em_btl_rdma_t *em_btl_rdma_get(em_btl_module_t *m)
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

void em_btl_rdma_put(em_btl_module_t *m, em_btl_rdma_t *r)
{
    r->next_free = m->free_rdma;
    m->free_rdma = r;
}

em_btl_rdma_t *em_btl_rdma_start(em_btl_module_t *m, struct mca_btl_base_endpoint_t *ep,
                                 void *local_address,
                                 mca_btl_base_registration_handle_t *local_handle,
                                 mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                                 void *cbdata)
{
    em_btl_rdma_t *r = em_btl_rdma_get(m);
    if (!r)
        return NULL;
    r->ep = ep;
    r->cbfunc = cbfunc;
    r->cbcontext = cbcontext;
    r->cbdata = cbdata;
    r->local_address = local_address;
    r->local_handle = local_handle;
    return r;
}

/* -------------------------------------------------------- module functions */

static int em_add_procs(struct mca_btl_base_module_t *btl, size_t nprocs,
                        struct opal_proc_t **procs, struct mca_btl_base_endpoint_t **peers,
                        opal_bitmap_t *reachable)
{
    em_btl_module_t *m = em_btl_mod(btl);
    const opal_process_name_t me = OPAL_PROC_MY_NAME;

    for (size_t i = 0; i < nprocs; i++) {
        opal_proc_t *proc = procs[i];
        if (proc->proc_name.jobid != me.jobid || proc->proc_name.vpid >= m->npeers)
            continue; /* other jobs (spawn) are not supported */
        /* Ourselves and the ranks of this node are reachable too: osc/rdma
         * takes one BTL that reaches every rank of a window (docs/design.md
         * "One-sided MPI").  Our exclusivity is below self's and vader's,
         * so bml/r2 keeps us out of their send lists (their messages go
         * over self and vader) and lists us as an RDMA-only BTL, which ob1
         * does not use for them.  One-sided operations to ourselves are
         * applied in place (em_btl_rma.c); to the node's other ranks they
         * go over the link. */
        if (0 == opal_compare_proc(proc->proc_name, me)) {
            struct mca_btl_base_endpoint_t *ep = &m->eps[me.vpid];
            ep->self = 1; /* every operation to it is applied in place: no engine number */
            ep->resolved = 1;
            ep->proc = proc;
            peers[i] = ep;
            if (reachable)
                opal_bitmap_set_bit(reachable, (int)i);
            continue;
        }
        bool local = OPAL_PROC_ON_LOCAL_NODE(proc->proc_flags);
        struct em_btl_modex *mx = em_btl_read_modex(m, &proc->proc_name);
        if (!mx) {
            BTL_VERBOSE(
                ("%s: no usable address for %s", m->name, OPAL_NAME_PRINT(proc->proc_name)));
            continue;
        }
        if (m->index >= mx->count) { /* the peer has fewer links: not via this one */
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
        uint32_t vpid = proc->proc_name.vpid;
        struct mca_btl_base_endpoint_t *ep = &m->eps[vpid];
        ep->proc = proc;
        /* named links: the peer's name into the engine (its number kept in
         * ep->peer); numbered: its address and pair keys by vpid */
        if (!m->named != !mx->link[m->index].nonce) {
            em_btl_names_mismatch(m, proc);
            free(mx);
            continue;
        }
        if (!ep->resolved &&
            (m->named ? em_btl_insert_named(m, ep, mx) : em_btl_set_peer_from(m, vpid, mx)) != 0) {
            free(mx);
            continue;
        }
        ep->resolved = 1;
        if (m->order)
            m->order[vpid].on = mx->count >= 2 ? EM_BTL_ORDER_ON : EM_BTL_ORDER_OFF;
        free(mx);
        ep->rma_only = local && !m->params->s.same_node; /* messages: vader's job */
        peers[i] = ep;
        if (reachable)
            opal_bitmap_set_bit(reachable, (int)i);
    }
    return OPAL_SUCCESS;
}

/* Nothing to release: ompi_mpi_finalize calls del_procs for every process
 * before the BTLs finalize, and the drain at finalize must still answer
 * their last frames (a named peer removed from the engine would lose its
 * keys); endpoints and engine peers end with the module. */
static int em_del_procs(struct mca_btl_base_module_t *btl, size_t nprocs,
                        struct opal_proc_t **procs, struct mca_btl_base_endpoint_t **peers)
{
    return OPAL_SUCCESS;
}

static mca_btl_base_descriptor_t *em_alloc(struct mca_btl_base_module_t *btl,
                                           struct mca_btl_base_endpoint_t *ep, uint8_t order,
                                           size_t size, uint32_t flags)
{
    em_btl_module_t *m = em_btl_mod(btl);
    int cls = size <= m->frag_cap[0] ? 0 : 1;
    if (size > m->frag_cap[1])
        return NULL;
    em_btl_frag_t *f = frag_get(m, cls);
    if (!f)
        return NULL;
    f->seg[0].seg_addr.pval = f->buf;
    f->seg[0].seg_len = size;
    f->base.des_segments = f->seg;
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
    em_btl_frag_put(em_btl_mod(btl), (em_btl_frag_t *)des);
    return OPAL_SUCCESS;
}

/* Is this message sent from where it lies (MCA_BTL_FLAGS_SEND_INPLACE)?
 * Only contiguous data (the convertor hands out a pointer, no packing) and
 * only large messages: the send then completes when the peer acknowledged
 * it, not when it left, and for small messages the copy is cheaper than
 * that wait (docs/design.md "Sends from the application's buffer"). */
static bool send_in_place(const em_btl_module_t *m, const struct opal_convertor_t *conv,
                          size_t reserve, size_t size)
{
    return m->params->s.inplace_min > 0 && size >= (size_t)m->params->s.inplace_min &&
           (conv->flags & CONVERTOR_NO_OP) && reserve + EM_ORDER_HDR <= EM_PROTO_HEAD_MAX;
}

static mca_btl_base_descriptor_t *em_prepare_src(struct mca_btl_base_module_t *btl,
                                                 struct mca_btl_base_endpoint_t *ep,
                                                 struct opal_convertor_t *conv, uint8_t order,
                                                 size_t reserve, size_t *size, uint32_t flags)
{
    em_btl_module_t *m = em_btl_mod(btl);
    if (reserve + *size > m->frag_cap[1])
        *size = m->frag_cap[1] - reserve;
    bool inplace = send_in_place(m, conv, reserve, *size);
    mca_btl_base_descriptor_t *des = em_alloc(btl, ep, order, inplace ? reserve : reserve + *size,
                                              flags);
    if (!des)
        return NULL;
    em_btl_frag_t *f = (em_btl_frag_t *)des;
    /* in place: a NULL base makes the convertor hand out its own pointer */
    struct iovec iov = { .iov_base = inplace ? NULL : f->buf + reserve, .iov_len = *size };
    uint32_t cnt = 1;
    size_t max = *size;
    if (opal_convertor_pack(conv, &iov, &cnt, &max) < 0) {
        em_free(btl, des);
        return NULL;
    }
    *size = max;
    if (inplace) {
        m->inplace_msgs++;
        m->inplace_bytes += max;
        f->seg[0].seg_len = reserve;
        f->seg[1].seg_addr.pval = iov.iov_base;
        f->seg[1].seg_len = max;
        des->des_segment_count = 2;
    } else {
        m->packed_bytes += max;
        f->seg[0].seg_len = reserve + max;
    }
    return des;
}

/* -EM_ENOMEM: no memory for an idle peer's window (proto.h "Memory");
 * OUT_OF_RESOURCE makes the PML keep the fragment and try again later */
static int map_err(int rc)
{
    if (rc == -EM_EPEERFAIL)
        return OPAL_ERR_UNREACH;
    return rc == -EM_ENOMEM ? OPAL_ERR_OUT_OF_RESOURCE : OPAL_ERROR;
}

/* Send the @p len bytes at f->buf, then the @p blen bytes at @p body (in
 * place) if any; with several links, behind the peer's next order number
 * (which counts only once the engine took the message). */
static int ordered_send(em_btl_module_t *m, em_btl_frag_t *f,
                        const struct mca_btl_base_endpoint_t *ep, uint8_t tag, size_t len,
                        const void *body, size_t blen)
{
    em_order_t *o = em_btl_numbered(m, ep->vpid);
    uint32_t peer = ep->peer;
    const uint8_t *head = f->buf;
    if (o) {
        em_order_stamp(o, f->order_hdr);
        head = f->order_hdr;
        len += EM_ORDER_HDR;
    }
    int rc = body
                 ? em_engine_sendv(m->engine, &f->op, peer, tag, head, len, body, blen, 0, &f->kind)
                 : em_engine_send(m->engine, &f->op, peer, tag, head, len, &f->kind);
    if (rc == 0 && o)
        em_order_sent(o);
    return rc;
}

/* Would a message of @p len bytes (its order number added, with several
 * links) leave for @p ep at once?  Not while its handshake runs (named
 * links): it waits behind it, so it is not complete when copied. */
static bool leaves_at_once(em_btl_module_t *m, const struct mca_btl_base_endpoint_t *ep, size_t len)
{
    return em_engine_contact_ready(m->engine, ep->peer) &&
           em_engine_send_ready(m->engine, ep->peer,
                                len + (em_btl_numbered(m, ep->vpid) ? EM_ORDER_HDR : 0));
}

static int em_send(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                   struct mca_btl_base_descriptor_t *des, mca_btl_base_tag_t tag)
{
    em_btl_module_t *m = em_btl_mod(btl);
    em_btl_frag_t *f = (em_btl_frag_t *)des;
    if (ep->failed || ep->self || ep->rma_only)
        return OPAL_ERR_UNREACH; /* failed, or reached for one-sided operations only */
    f->ep = ep;
    size_t len = des->des_segments[0].seg_len;
    if (des->des_segment_count == 2) {
        int rc = ordered_send(m, f, ep, tag, len, des->des_segments[1].seg_addr.pval,
                              des->des_segments[1].seg_len);
        return rc == 0 ? OPAL_SUCCESS : map_err(rc);
    }
    /* The data is in our buffer: as em_sendi(), a message that leaves at
     * once is complete for the caller (return 1: no callback unless it
     * asked for one always; the descriptor is ours and is freed when the
     * peer acknowledged it).  One that waits completes with its callback. */
    bool now = (des->des_flags & MCA_BTL_DES_FLAGS_BTL_OWNERSHIP) && leaves_at_once(m, ep, len);
    int rc = ordered_send(m, f, ep, tag, len, NULL, 0);
    if (rc != 0)
        return map_err(rc);
    if (!now)
        return OPAL_SUCCESS;
    if (!(des->des_flags & MCA_BTL_DES_SEND_ALWAYS_CALLBACK))
        des->des_cbfunc = NULL;
    return 1;
}

static int em_sendi(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                    struct opal_convertor_t *conv, void *header, size_t header_size,
                    size_t payload_size, uint8_t order, uint32_t flags, mca_btl_base_tag_t tag,
                    mca_btl_base_descriptor_t **descriptor)
{
    em_btl_module_t *m = em_btl_mod(btl);
    if (descriptor)
        *descriptor = NULL;
    if (ep->failed || ep->self || ep->rma_only)
        return OPAL_ERR_UNREACH;
    /* An inline send completes at once, and the caller may then not drive
     * progress for a long time (a rank that sends and sleeps): a message
     * queued behind a full window, or behind a frame whose timer is due,
     * would wait for that.  Take it only if it leaves now; otherwise hand
     * back a descriptor: ob1 sends it with btl_send and waits for its
     * completion, driving progress (ACKs, retransmissions) meanwhile. */
    if (!leaves_at_once(m, ep, header_size + payload_size)) {
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
        m->packed_bytes += max;
    }
    int rc = ordered_send(m, f, ep, tag, header_size + payload_size, NULL, 0);
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
    em_btl_module_t *m = em_btl_mod(btl);
    if (ep->failed)
        return OPAL_ERR_UNREACH;
    if (!remote_handle || remote_address < remote_handle->region.base || size > btl->btl_put_limit)
        return OPAL_ERR_BAD_PARAM;
    if (ep->self)
        return em_btl_put_self(m, ep, local_address, remote_address, local_handle, remote_handle,
                               size, cbfunc, cbcontext, cbdata);
    em_btl_rdma_t *r = em_btl_rdma_start(m, ep, local_address, local_handle, cbfunc, cbcontext,
                                         cbdata);
    if (!r)
        return OPAL_ERR_OUT_OF_RESOURCE;
    int rc = em_engine_put(m->engine, &r->op, ep->peer, &remote_handle->region,
                           remote_address - remote_handle->region.base, local_address, size,
                           &r->kind);
    if (rc != 0) {
        em_btl_rdma_put(m, r);
        return map_err(rc);
    }
    return OPAL_SUCCESS;
}

static mca_btl_base_registration_handle_t *em_register_mem(struct mca_btl_base_module_t *btl,
                                                           struct mca_btl_base_endpoint_t *ep,
                                                           void *base, size_t size, uint32_t flags)
{
    em_btl_module_t *m = em_btl_mod(btl);
    mca_btl_base_registration_handle_t *h = malloc(sizeof *h);
    if (!h)
        return NULL;
    /* access flags honoured (a hostile-input rule): what peers may do with
     * the region is what the caller asked for; an atomic reads and writes */
    unsigned access = 0;
    if (flags & MCA_BTL_REG_FLAG_REMOTE_WRITE)
        access |= EM_REGION_WRITE;
    if (flags & MCA_BTL_REG_FLAG_REMOTE_READ)
        access |= EM_REGION_READ;
    if (flags & MCA_BTL_REG_FLAG_REMOTE_ATOMIC)
        access |= EM_REGION_READ | EM_REGION_WRITE;
    if (access == EM_REGION_READ) {
        /* Read-only exposure is what ob1's get protocol (RGET) asks for, and
         * only it: Open MPI 4.1 runs with mpi_leave_pinned -1, which ob1
         * reads as "on", so with btl_get it would send every large
         * contiguous message by get, where the target copies the bytes
         * into answers and the receiver reassembles and copies them again.
         * Refused, ob1 keeps the put rendezvous (the engine places each
         * byte once).  osc/rdma registers its windows with every access. */
        free(h);
        return NULL;
    }
    if (!access) {
        /* local access only: a handle that names no region, so every
         * peer's operation on it is refused */
        h->region = (em_region_handle_t){
            .id = 0, .key = 0, .base = (uint64_t)(uintptr_t)base, .len = size
        };
        return h;
    }
    if (em_engine_register_ex(m->engine, base, size, access, &h->region) != 0) {
        free(h);
        return NULL;
    }
    return h;
}

static int em_deregister_mem(struct mca_btl_base_module_t *btl,
                             mca_btl_base_registration_handle_t *h)
{
    em_btl_module_t *m = em_btl_mod(btl);
    int rc = h->region.id == 0 ? 0 : em_engine_deregister(m->engine, &h->region);
    free(h);
    return rc == 0 ? OPAL_SUCCESS : OPAL_ERR_BAD_PARAM;
}

static int em_register_error(struct mca_btl_base_module_t *btl,
                             mca_btl_base_module_error_cb_fn_t cbfunc)
{
    em_btl_mod(btl)->error_cb = cbfunc;
    return OPAL_SUCCESS;
}

/* btl_*_print_stats: a report the user asked for, one per rank and link,
 * whose numbers differ between ranks, so plain output and not a help topic
 * (mpirun would show the first rank's and count the others).  The same
 * counters are MPI_T performance variables (em_btl_pvar.c). */
static void print_stats(em_btl_module_t *m)
{
    const em_proto_stats_t *p = em_engine_proto_stats(m->engine);
    const em_engine_stats_t *e = em_engine_stats(m->engine);
    char frames[512], refused[320]; /* counters of up to 20 digits and the words */
    em_proto_stats_frames(p, frames, sizeof frames);
    em_proto_stats_refused(p, refused, sizeof refused);
    opal_output(0,
                "[%s] btl_%s stats: %s, "
                "msgs %llu/%llu, "
                "puts placed %llu rejected %llu, drops: key %llu magic %llu malformed %llu "
                "window %llu, backpressure %llu; payload bytes copied by ethermpi: tx %llu "
                "(sent from the sender's buffer: %llu), rx reassembly/out-of-order %llu, "
                "rx put placement %llu (handed over in place: %llu); refused: %s drop_tag %llu, "
                "puts_failed %llu (remote access error), rx buffers %llu bytes",
                opal_process_info.nodename, m->name, frames, (unsigned long long)p->msgs_sent,
                (unsigned long long)p->msgs_recv, (unsigned long long)e->puts_placed,
                (unsigned long long)p->puts_rejected, (unsigned long long)p->drop_job_key,
                (unsigned long long)p->drop_magic, (unsigned long long)p->drop_malformed,
                (unsigned long long)p->drop_window, (unsigned long long)e->tx_backpressure,
                (unsigned long long)e->tx_copy_bytes, (unsigned long long)e->tx_gather_bytes,
                (unsigned long long)p->rx_copy_bytes, (unsigned long long)e->put_bytes,
                (unsigned long long)e->recv_bytes, refused, (unsigned long long)m->drop_tag,
                (unsigned long long)p->puts_failed,
                (unsigned long long)em_engine_rx_mem(m->engine));
    opal_output(0,
                "[%s] btl_%s congestion control: cwnd cuts for loss %llu, for delay %llu; "
                "new frames held by cwnd %llu, by pacing %llu",
                opal_process_info.nodename, m->name, (unsigned long long)p->cc_loss_decreases,
                (unsigned long long)p->cc_delay_decreases, (unsigned long long)p->cc_cwnd_blocked,
                (unsigned long long)p->cc_paced);
    opal_output(
        0,
        "[%s] btl_%s sends: %llu payload bytes copied into our buffers by prepare_src/sendi, "
        "%llu messages "
        "(%llu bytes) sent from the application's buffer (btl_%s_inplace_min %d)",
        opal_process_info.nodename, m->name, (unsigned long long)m->packed_bytes,
        (unsigned long long)m->inplace_msgs, (unsigned long long)m->inplace_bytes, m->name,
        m->params->s.inplace_min);
    /* "refused:" lists name/value pairs only, as the stats line's, so that a
     * tool (tests/attack) reads every refusal of the one-sided path: gets
     * and atomics refused (region, key, bounds, access, alignment, length),
     * RMA messages the decoder refused, answers naming no request of ours,
     * requests left unanswered for lack of memory, and put frames refused
     * by reason (their sum is puts_rejected) */
    opal_output(0,
                "[%s] btl_%s one-sided (as the target): gets answered %llu, atomics applied %llu; "
                "refused: rma_refused %llu rma_bad_msg %llu rma_stale_rsp %llu rma_no_mem %llu "
                "put_bad_region %llu put_bad_key %llu put_out_of_bounds %llu put_no_access %llu",
                opal_process_info.nodename, m->name, (unsigned long long)e->rma_gets_served,
                (unsigned long long)e->rma_atomics_applied, (unsigned long long)e->rma_refused,
                (unsigned long long)e->rma_bad_msg, (unsigned long long)e->rma_stale_rsp,
                (unsigned long long)e->rma_no_mem, (unsigned long long)e->put_bad_region,
                (unsigned long long)e->put_bad_key, (unsigned long long)e->put_out_of_bounds,
                (unsigned long long)e->put_no_access);
    if (m->order && m->index == 0) {
        uint64_t kept = 0, dropped = 0;
        for (uint32_t i = 0; i < m->npeers; i++) {
            kept += m->order[i].o.kept;
            dropped += m->order[i].o.dropped;
        }
        opal_output(0,
                    "[%s] btl_%s links: %llu messages kept until their turn, %llu dropped "
                    "(no valid order number), order_overflow %llu peers",
                    opal_process_info.nodename, m->name, (unsigned long long)kept,
                    (unsigned long long)dropped, (unsigned long long)m->order_overflow);
    }
}

/* the drain at finalize ended with messages unacknowledged: say to whom */
static void warn_unacked(em_btl_module_t *m)
{
    /* one notice per process (mpirun aggregates them over the ranks), not
     * one line per peer */
    uint32_t msgs = 0, peers = 0, first = 0;
    for (uint32_t i = 0; i < m->nslots; i++) { /* the engine's numbers */
        uint32_t n = em_engine_pending(m->engine, (uint32_t)i);
        if (n && peers++ == 0)
            first = em_btl_vpid_of(m, i);
        msgs += n;
    }
    if (msgs)
        opal_show_help(HELP_FILE, "unacked", true, m->name, opal_process_info.nodename, msgs, peers,
                       first, m->name, m->params->s.linger_ms);
}

int em_btl_finalize(struct mca_btl_base_module_t *btl)
{
    em_btl_module_t *m = em_btl_mod(btl);
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
        em_btl_order_free(m->order, m->npeers);
    }
    m->order = NULL;
    if (m->engine) {
        /* what we sent must still arrive, and peers resending to us get
         * their ACK (em_engine_drain); bounded by btl_*_linger_ms */
        if (em_engine_drain(m->engine,
                            (uint64_t)(m->params->s.linger_ms > 0 ? m->params->s.linger_ms : 0) *
                                1000000u) != 0)
            warn_unacked(m);
        if (m->params->s.print_stats) {
            print_stats(m);
            em_btl_name_stats(m);
        }
        if (m->params->s.print_stats && m->params->print_link_stats)
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
    em_btl_name_close(m);
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
    b->btl_flags = MCA_BTL_FLAGS_SEND | MCA_BTL_FLAGS_PUT; /* + get, atomics below */
    b->btl_put_limit = 64 * 1024 * 1024; /* lowered at init to what one put can carry */
    b->btl_put_alignment = 0;
    b->btl_put_local_registration_threshold = SIZE_MAX; /* puts read local memory directly */
    b->btl_registration_handle_size = sizeof(struct mca_btl_base_registration_handle_t);
    b->btl_add_procs = em_add_procs;
    b->btl_del_procs = em_del_procs;
    b->btl_finalize = em_btl_finalize;
    b->btl_alloc = em_alloc;
    b->btl_free = em_free;
    b->btl_prepare_src = em_prepare_src;
    b->btl_send = em_send;
    b->btl_sendi = em_sendi;
    b->btl_put = em_put;
    em_btl_rma_defaults(b); /* get and atomics (em_btl_rma.c) */
    b->btl_dump = mca_btl_base_dump;
    b->btl_register_mem = em_register_mem;
    b->btl_deregister_mem = em_deregister_mem;
    b->btl_register_error = em_register_error;
}
