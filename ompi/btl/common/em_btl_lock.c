/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file em_btl_lock.c
 * MPI_THREAD_MULTIPLE: the module functions with the component's lock
 * around them (docs/design.md, "Threads").  em_btl_init() swaps these in
 * only when Open MPI says threads are in use (enable_mpi_threads), so a
 * single-threaded job calls the plain functions and takes no lock.
 *
 * One lock per component, shared by its modules (links): the order state
 * of several links (em_btl_order) is shared by them too.  It is recursive
 * and held while the engine runs its callbacks into ob1, which answer on
 * the same thread with btl_send, btl_sendi, btl_put, btl_alloc, btl_free
 * (and osc/rdma's callbacks with btl_get and the atomics).
 */
#include "em_btl_internal.h"

/* the functions em_btl_module_defaults() installed, called under the lock
 * (the same for every module and component: they are this file's
 * siblings') */
static mca_btl_base_module_t plain;

#define LK(btl) (em_btl_mod(btl)->lk)

static int l_add_procs(struct mca_btl_base_module_t *btl, size_t nprocs, struct opal_proc_t **procs,
                       struct mca_btl_base_endpoint_t **peers, opal_bitmap_t *reachable)
{
    em_lock_take(LK(btl));
    int rc = plain.btl_add_procs(btl, nprocs, procs, peers, reachable);
    em_lock_drop(LK(btl));
    return rc;
}

static int l_del_procs(struct mca_btl_base_module_t *btl, size_t nprocs, struct opal_proc_t **procs,
                       struct mca_btl_base_endpoint_t **peers)
{
    em_lock_take(LK(btl));
    int rc = plain.btl_del_procs(btl, nprocs, procs, peers);
    em_lock_drop(LK(btl));
    return rc;
}

static int l_finalize(struct mca_btl_base_module_t *btl)
{
    em_lock_t *lk = LK(btl);
    em_lock_take(lk);
    int rc = plain.btl_finalize(btl);
    em_lock_drop(lk);
    return rc;
}

static mca_btl_base_descriptor_t *l_alloc(struct mca_btl_base_module_t *btl,
                                          struct mca_btl_base_endpoint_t *ep, uint8_t order,
                                          size_t size, uint32_t flags)
{
    em_lock_take(LK(btl));
    mca_btl_base_descriptor_t *d = plain.btl_alloc(btl, ep, order, size, flags);
    em_lock_drop(LK(btl));
    return d;
}

static int l_free(struct mca_btl_base_module_t *btl, mca_btl_base_descriptor_t *des)
{
    em_lock_take(LK(btl));
    int rc = plain.btl_free(btl, des);
    em_lock_drop(LK(btl));
    return rc;
}

static mca_btl_base_descriptor_t *l_prepare_src(struct mca_btl_base_module_t *btl,
                                                struct mca_btl_base_endpoint_t *ep,
                                                struct opal_convertor_t *conv, uint8_t order,
                                                size_t reserve, size_t *size, uint32_t flags)
{
    em_lock_take(LK(btl));
    mca_btl_base_descriptor_t *d = plain.btl_prepare_src(btl, ep, conv, order, reserve, size,
                                                         flags);
    em_lock_drop(LK(btl));
    return d;
}

static int l_send(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                  struct mca_btl_base_descriptor_t *des, mca_btl_base_tag_t tag)
{
    em_lock_take(LK(btl));
    int rc = plain.btl_send(btl, ep, des, tag);
    em_lock_drop(LK(btl));
    return rc;
}

static int l_sendi(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                   struct opal_convertor_t *conv, void *header, size_t header_size,
                   size_t payload_size, uint8_t order, uint32_t flags, mca_btl_base_tag_t tag,
                   mca_btl_base_descriptor_t **descriptor)
{
    em_lock_take(LK(btl));
    int rc = plain.btl_sendi(btl, ep, conv, header, header_size, payload_size, order, flags, tag,
                             descriptor);
    em_lock_drop(LK(btl));
    return rc;
}

static int l_put(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                 void *local_address, uint64_t remote_address,
                 mca_btl_base_registration_handle_t *local_handle,
                 mca_btl_base_registration_handle_t *remote_handle, size_t size, int flags,
                 int order, mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    em_lock_take(LK(btl));
    int rc = plain.btl_put(btl, ep, local_address, remote_address, local_handle, remote_handle,
                           size, flags, order, cbfunc, cbcontext, cbdata);
    em_lock_drop(LK(btl));
    return rc;
}

static int l_get(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                 void *local_address, uint64_t remote_address,
                 mca_btl_base_registration_handle_t *local_handle,
                 mca_btl_base_registration_handle_t *remote_handle, size_t size, int flags,
                 int order, mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    em_lock_take(LK(btl));
    int rc = plain.btl_get(btl, ep, local_address, remote_address, local_handle, remote_handle,
                           size, flags, order, cbfunc, cbcontext, cbdata);
    em_lock_drop(LK(btl));
    return rc;
}

static int l_atomic_op(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                       uint64_t remote_address, mca_btl_base_registration_handle_t *remote_handle,
                       mca_btl_base_atomic_op_t op, uint64_t operand, int flags, int order,
                       mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    em_lock_take(LK(btl));
    int rc = plain.btl_atomic_op(btl, ep, remote_address, remote_handle, op, operand, flags, order,
                                 cbfunc, cbcontext, cbdata);
    em_lock_drop(LK(btl));
    return rc;
}

static int l_atomic_fop(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                        void *local_address, uint64_t remote_address,
                        mca_btl_base_registration_handle_t *local_handle,
                        mca_btl_base_registration_handle_t *remote_handle,
                        mca_btl_base_atomic_op_t op, uint64_t operand, int flags, int order,
                        mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    em_lock_take(LK(btl));
    int rc = plain.btl_atomic_fop(btl, ep, local_address, remote_address, local_handle,
                                  remote_handle, op, operand, flags, order, cbfunc, cbcontext,
                                  cbdata);
    em_lock_drop(LK(btl));
    return rc;
}

static int l_atomic_cswap(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                          void *local_address, uint64_t remote_address,
                          mca_btl_base_registration_handle_t *local_handle,
                          mca_btl_base_registration_handle_t *remote_handle, uint64_t compare,
                          uint64_t value, int flags, int order,
                          mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    em_lock_take(LK(btl));
    int rc = plain.btl_atomic_cswap(btl, ep, local_address, remote_address, local_handle,
                                    remote_handle, compare, value, flags, order, cbfunc, cbcontext,
                                    cbdata);
    em_lock_drop(LK(btl));
    return rc;
}

static mca_btl_base_registration_handle_t *l_register_mem(struct mca_btl_base_module_t *btl,
                                                          struct mca_btl_base_endpoint_t *ep,
                                                          void *base, size_t size, uint32_t flags)
{
    em_lock_take(LK(btl));
    mca_btl_base_registration_handle_t *h = plain.btl_register_mem(btl, ep, base, size, flags);
    em_lock_drop(LK(btl));
    return h;
}

static int l_deregister_mem(struct mca_btl_base_module_t *btl,
                            mca_btl_base_registration_handle_t *h)
{
    em_lock_take(LK(btl));
    int rc = plain.btl_deregister_mem(btl, h);
    em_lock_drop(LK(btl));
    return rc;
}

static int l_register_error(struct mca_btl_base_module_t *btl,
                            mca_btl_base_module_error_cb_fn_t cbfunc)
{
    em_lock_take(LK(btl));
    int rc = plain.btl_register_error(btl, cbfunc);
    em_lock_drop(LK(btl));
    return rc;
}

int em_btl_use_lock(em_btl_module_t *m)
{
    if (em_lock_init(&m->lock, true) != 0)
        return -1;
    m->lk = &m->lock;
    mca_btl_base_module_t *b = &m->super;
    if (b->btl_send != l_send) /* not swapped yet (init runs once per process) */
        plain = *b;
    b->btl_add_procs = l_add_procs;
    b->btl_del_procs = l_del_procs;
    b->btl_finalize = l_finalize;
    b->btl_alloc = l_alloc;
    b->btl_free = l_free;
    b->btl_prepare_src = l_prepare_src;
    b->btl_send = l_send;
    b->btl_sendi = l_sendi;
    b->btl_put = l_put;
    b->btl_get = l_get;
    b->btl_atomic_op = l_atomic_op;
    b->btl_atomic_fop = l_atomic_fop;
    b->btl_atomic_cswap = l_atomic_cswap;
    b->btl_register_mem = l_register_mem;
    b->btl_deregister_mem = l_deregister_mem;
    b->btl_register_error = l_register_error;
    return 0;
}
