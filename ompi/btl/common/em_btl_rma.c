/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file em_btl_rma.c
 * One-sided operations of the BTL 3.1 interface for osc/rdma: btl_get and
 * the 32/64-bit atomics (btl_atomic_op, btl_atomic_fop, btl_atomic_cswap)
 * over the engine's em_engine_get() and em_engine_atomic(), which the
 * target's engine applies inside a registered region with the key, bounds
 * and access checks puts have, exactly once (docs/design.md "One-sided
 * MPI").  Their completion is remote: the target applied it (an atomic)
 * or answered with the bytes (a get).
 *
 * To this process (osc/rdma reaches its own window through the BTL it
 * selected, as it reaches every other rank) every one-sided operation,
 * put included, is applied in place, with the same region checks, and
 * completes inside the call, as vader's do.
 *
 * Atomics apply Open MPI's integer MIN and MAX as signed, the FLOAT flag's
 * types as IEEE float (with 32BIT) or double; the operand's low 32 bits
 * are a 32-bit operation's value.
 */
#include "em_btl_internal.h"

#include <string.h>

#include "opal/mca/btl/base/base.h"

int em_btl_opal_status(int status)
{
    switch (status) {
    case 0: return OPAL_SUCCESS;
    /* a refused put, get or atomic (region, key, bounds, access,
     * alignment) is a remote access error (IB: IBV_WC_REM_ACCESS_ERR) */
    case -EM_EACCES: return OPAL_ERR_PERM;
    case -EM_EINVAL: return OPAL_ERR_BAD_PARAM;
    case -EM_ENOMEM:
    case -EM_EAGAIN: return OPAL_ERR_OUT_OF_RESOURCE;
    default: return OPAL_ERR_UNREACH; /* peer failed, or the engine is gone */
    }
}

/* What a call that the engine refused returns to the caller. */
static int sync_status(int rc)
{
    switch (rc) {
    case -EM_EAGAIN:
    case -EM_ENOMEM: return OPAL_ERR_OUT_OF_RESOURCE; /* osc/rdma retries later */
    case -EM_EINVAL: return OPAL_ERR_NOT_AVAILABLE;
    default: return OPAL_ERR_UNREACH;
    }
}

static bool map_op(mca_btl_base_atomic_op_t op, uint8_t *out)
{
    switch (op) {
    case MCA_BTL_ATOMIC_ADD: *out = EM_AOP_SUM; return true;
    case MCA_BTL_ATOMIC_AND: *out = EM_AOP_BAND; return true;
    case MCA_BTL_ATOMIC_OR: *out = EM_AOP_BOR; return true;
    case MCA_BTL_ATOMIC_XOR: *out = EM_AOP_BXOR; return true;
    case MCA_BTL_ATOMIC_LAND: *out = EM_AOP_LAND; return true;
    case MCA_BTL_ATOMIC_LOR: *out = EM_AOP_LOR; return true;
    case MCA_BTL_ATOMIC_LXOR: *out = EM_AOP_LXOR; return true;
    case MCA_BTL_ATOMIC_SWAP: *out = EM_AOP_WRITE; return true;
    case MCA_BTL_ATOMIC_MIN: *out = EM_AOP_MIN; return true;
    case MCA_BTL_ATOMIC_MAX: *out = EM_AOP_MAX; return true;
    default: return false;
    }
}

static uint8_t map_type(int flags)
{
    bool f = flags & MCA_BTL_ATOMIC_FLAG_FLOAT;
    if (flags & MCA_BTL_ATOMIC_FLAG_32BIT)
        return f ? EM_ATYPE_FLOAT : EM_ATYPE_INT32;
    return f ? EM_ATYPE_DOUBLE : EM_ATYPE_INT64;
}

/* The element's bytes of @p v: the low 32 bits, or all 64. */
static const void *elem(uint8_t type, const uint64_t *v, uint32_t *v32)
{
    if (em_atomic_type_size(type) == 8)
        return v;
    *v32 = (uint32_t)*v;
    return v32;
}

/* ---------------------------------------------------------------- to self */

/* Where (remote_address, len) is in our own region @p h, checked as a peer's
 * access would be; NULL when refused. */
static uint8_t *self_at(em_btl_module_t *m, const mca_btl_base_registration_handle_t *h,
                        uint64_t remote_address, size_t len, unsigned access)
{
    uint8_t *at;
    if (remote_address < h->region.base ||
        em_engine_region_at(m->engine, h->region.id, h->region.key, remote_address - h->region.base,
                            len, access, &at) != 0)
        return NULL;
    return at;
}

int em_btl_put_self(em_btl_module_t *m, struct mca_btl_base_endpoint_t *ep, void *local_address,
                    uint64_t remote_address, mca_btl_base_registration_handle_t *local_handle,
                    mca_btl_base_registration_handle_t *remote_handle, size_t size,
                    mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    uint8_t *at = self_at(m, remote_handle, remote_address, size, EM_REGION_WRITE);
    if (at && size)
        memmove(at, local_address, size);
    cbfunc(&m->super, ep, local_address, local_handle, cbcontext, cbdata,
           at ? OPAL_SUCCESS : OPAL_ERR_PERM);
    return OPAL_SUCCESS;
}

static int atomic_self(em_btl_module_t *m, struct mca_btl_base_endpoint_t *ep, void *result,
                       uint64_t remote_address, mca_btl_base_registration_handle_t *local_handle,
                       mca_btl_base_registration_handle_t *remote_handle, const em_atomic_desc_t *d,
                       mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    size_t es = em_atomic_type_size(d->type);
    unsigned access = EM_REGION_WRITE | (result ? EM_REGION_READ : 0);
    uint8_t *at = self_at(m, remote_handle, remote_address, es, access);
    int rc = at && em_atomic_apply(d->op, d->type, at, d->operand, d->compare, result, 1) == 0
                 ? OPAL_SUCCESS
                 : OPAL_ERR_PERM; /* refused, or misaligned: as the target would */
    cbfunc(&m->super, ep, result, local_handle, cbcontext, cbdata, rc);
    return OPAL_SUCCESS;
}

/* ----------------------------------------------------------- over the wire */

static int atomic_any(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                      void *result, uint64_t remote_address,
                      mca_btl_base_registration_handle_t *local_handle,
                      mca_btl_base_registration_handle_t *remote_handle, em_atomic_desc_t *d,
                      mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    em_btl_module_t *m = em_btl_mod(btl);
    if (ep->failed)
        return OPAL_ERR_UNREACH;
    if (!remote_handle || remote_address < remote_handle->region.base ||
        !em_atomic_valid(d->op, d->type))
        return !remote_handle || remote_address < remote_handle->region.base
                   ? OPAL_ERR_BAD_PARAM
                   : OPAL_ERR_NOT_AVAILABLE; /* a bitwise op on a float */
    if (ep->self)
        return atomic_self(m, ep, result, remote_address, local_handle, remote_handle, d, cbfunc,
                           cbcontext, cbdata);
    em_btl_rdma_t *r = em_btl_rdma_start(m, ep, result, local_handle, cbfunc, cbcontext, cbdata);
    if (!r)
        return OPAL_ERR_OUT_OF_RESOURCE;
    int rc = em_engine_atomic(m->engine, &r->op, ep->peer, &remote_handle->region,
                              remote_address - remote_handle->region.base, d, result, &r->kind);
    if (rc != 0) {
        em_btl_rdma_put(m, r);
        return sync_status(rc);
    }
    return OPAL_SUCCESS;
}

static int em_atomic_op(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                        uint64_t remote_address, mca_btl_base_registration_handle_t *remote_handle,
                        mca_btl_base_atomic_op_t op, uint64_t operand, int flags, int order,
                        mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    (void)order;
    uint32_t o32;
    em_atomic_desc_t d = { .type = map_type(flags), .count = 1 };
    if (!map_op(op, &d.op))
        return OPAL_ERR_NOT_AVAILABLE;
    d.operand = elem(d.type, &operand, &o32);
    /* no fetch: its completion still says the target applied it */
    return atomic_any(btl, ep, NULL, remote_address, NULL, remote_handle, &d, cbfunc, cbcontext,
                      cbdata);
}

static int em_atomic_fop(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                         void *local_address, uint64_t remote_address,
                         mca_btl_base_registration_handle_t *local_handle,
                         mca_btl_base_registration_handle_t *remote_handle,
                         mca_btl_base_atomic_op_t op, uint64_t operand, int flags, int order,
                         mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    (void)order;
    uint32_t o32;
    em_atomic_desc_t d = { .type = map_type(flags), .count = 1 };
    if (!map_op(op, &d.op) || !local_address)
        return OPAL_ERR_NOT_AVAILABLE;
    d.operand = elem(d.type, &operand, &o32);
    return atomic_any(btl, ep, local_address, remote_address, local_handle, remote_handle, &d,
                      cbfunc, cbcontext, cbdata);
}

static int em_atomic_cswap(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                           void *local_address, uint64_t remote_address,
                           mca_btl_base_registration_handle_t *local_handle,
                           mca_btl_base_registration_handle_t *remote_handle, uint64_t compare,
                           uint64_t value, int flags, int order,
                           mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    (void)order;
    uint32_t o32, c32;
    /* compares bit patterns: the type only sets the width */
    em_atomic_desc_t d = { .op = EM_AOP_CSWAP,
                           .type = (flags & MCA_BTL_ATOMIC_FLAG_32BIT) ? EM_ATYPE_UINT32
                                                                       : EM_ATYPE_UINT64,
                           .count = 1 };
    if (!local_address)
        return OPAL_ERR_NOT_AVAILABLE;
    d.operand = elem(d.type, &value, &o32);
    d.compare = elem(d.type, &compare, &c32);
    return atomic_any(btl, ep, local_address, remote_address, local_handle, remote_handle, &d,
                      cbfunc, cbcontext, cbdata);
}

static int em_get(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                  void *local_address, uint64_t remote_address,
                  mca_btl_base_registration_handle_t *local_handle,
                  mca_btl_base_registration_handle_t *remote_handle, size_t size, int flags,
                  int order, mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                  void *cbdata)
{
    (void)flags, (void)order;
    em_btl_module_t *m = em_btl_mod(btl);
    if (ep->failed)
        return OPAL_ERR_UNREACH;
    if (!remote_handle || remote_address < remote_handle->region.base || size > btl->btl_get_limit)
        return OPAL_ERR_BAD_PARAM;
    if (ep->self) {
        uint8_t *at = self_at(m, remote_handle, remote_address, size, EM_REGION_READ);
        if (at && size)
            memmove(local_address, at, size);
        cbfunc(btl, ep, local_address, local_handle, cbcontext, cbdata,
               at ? OPAL_SUCCESS : OPAL_ERR_PERM);
        return OPAL_SUCCESS;
    }
    em_btl_rdma_t *r = em_btl_rdma_start(m, ep, local_address, local_handle, cbfunc, cbcontext,
                                         cbdata);
    if (!r)
        return OPAL_ERR_OUT_OF_RESOURCE;
    int rc = em_engine_get(m->engine, &r->op, ep->peer, &remote_handle->region,
                           remote_address - remote_handle->region.base, local_address, size,
                           &r->kind);
    if (rc != 0) {
        em_btl_rdma_put(m, r);
        return sync_status(rc);
    }
    return OPAL_SUCCESS;
}

void em_btl_rma_defaults(mca_btl_base_module_t *b)
{
    b->btl_flags |= MCA_BTL_FLAGS_GET | MCA_BTL_FLAGS_ATOMIC_OPS | MCA_BTL_FLAGS_ATOMIC_FOPS;
    /* GLOB: the target applies every atomic with CPU atomics (engine/atomic.h),
     * so ours are atomic with respect to the target's own CPU atomics, and
     * to those of other processes on its node, on the same word */
    b->btl_atomic_flags = MCA_BTL_ATOMIC_SUPPORTS_ADD | MCA_BTL_ATOMIC_SUPPORTS_AND |
                          MCA_BTL_ATOMIC_SUPPORTS_OR | MCA_BTL_ATOMIC_SUPPORTS_XOR |
                          MCA_BTL_ATOMIC_SUPPORTS_LAND | MCA_BTL_ATOMIC_SUPPORTS_LOR |
                          MCA_BTL_ATOMIC_SUPPORTS_LXOR | MCA_BTL_ATOMIC_SUPPORTS_SWAP |
                          MCA_BTL_ATOMIC_SUPPORTS_MIN | MCA_BTL_ATOMIC_SUPPORTS_MAX |
                          MCA_BTL_ATOMIC_SUPPORTS_32BIT | MCA_BTL_ATOMIC_SUPPORTS_FLOAT |
                          MCA_BTL_ATOMIC_SUPPORTS_CSWAP | MCA_BTL_ATOMIC_SUPPORTS_GLOB;
    b->btl_get_limit = EM_ENGINE_GET_MAX; /* lowered at init to what one answer carries */
    b->btl_get_alignment = 0;
    b->btl_get_local_registration_threshold = SIZE_MAX; /* written in place, no registration */
    b->btl_get = em_get;
    b->btl_atomic_op = em_atomic_op;
    b->btl_atomic_fop = em_atomic_fop;
    b->btl_atomic_cswap = em_atomic_cswap;
}

void em_btl_rma_limits(em_btl_module_t *m)
{
    size_t g = em_engine_get_max(m->engine);
    if (m->super.btl_get_limit > g)
        m->super.btl_get_limit = g;
}
