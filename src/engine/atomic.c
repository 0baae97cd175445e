/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file atomic.c
 * em_atomic_apply and the RMA wire codec (see atomic.h).
 *
 * Every element is read, computed and written with a compare-and-swap loop
 * on its bit pattern (READ is an atomic load, WRITE an atomic exchange):
 * the new value is computed from the value the CAS last saw, so an
 * element's update is atomic whatever else writes it with CPU atomics.
 */
#include "engine/atomic.h"

#include <string.h>

size_t em_atomic_type_size(unsigned type)
{
    switch (type) {
    case EM_ATYPE_INT32:
    case EM_ATYPE_UINT32:
    case EM_ATYPE_FLOAT: return 4;
    case EM_ATYPE_INT64:
    case EM_ATYPE_UINT64:
    case EM_ATYPE_DOUBLE: return 8;
    default: return 0;
    }
}

static bool is_float(unsigned type) { return type == EM_ATYPE_FLOAT || type == EM_ATYPE_DOUBLE; }

bool em_atomic_valid(unsigned op, unsigned type)
{
    if (op >= EM_AOP_COUNT_ || type >= EM_ATYPE_COUNT_)
        return false;
    switch (op) {
    case EM_AOP_BOR:
    case EM_AOP_BAND:
    case EM_AOP_BXOR:
    case EM_AOP_MSWAP: return !is_float(type);
    default: return true;
    }
}

bool em_atomic_has_compare(unsigned op) { return op >= EM_AOP_CSWAP && op <= EM_AOP_MSWAP; }

bool em_atomic_writes(unsigned op) { return op != EM_AOP_READ; }

/** A value of any type, as the bits of its element and as its number. */
typedef union {
    uint64_t u64;
    int64_t i64;
    uint32_t u32;
    int32_t i32;
    float f;
    double d;
} aval_t;

/* a < b and a == b as values of @p type (a NaN is neither: IEEE order). */
static bool lt(unsigned type, aval_t a, aval_t b)
{
    switch (type) {
    case EM_ATYPE_INT32: return a.i32 < b.i32;
    case EM_ATYPE_UINT32: return a.u32 < b.u32;
    case EM_ATYPE_INT64: return a.i64 < b.i64;
    case EM_ATYPE_UINT64: return a.u64 < b.u64;
    case EM_ATYPE_FLOAT: return a.f < b.f;
    default: return a.d < b.d;
    }
}

static bool eq(unsigned type, aval_t a, aval_t b)
{
    switch (type) {
    case EM_ATYPE_FLOAT: return a.f == b.f;
    case EM_ATYPE_DOUBLE: return a.d == b.d;
    default: return a.u64 == b.u64; /* the unused half is zero */
    }
}

static bool nonzero(unsigned type, aval_t a)
{
    switch (type) {
    case EM_ATYPE_FLOAT: return a.f != 0.0f;
    case EM_ATYPE_DOUBLE: return a.d != 0.0;
    default: return em_atomic_type_size(type) == 4 ? a.u32 != 0 : a.u64 != 0;
    }
}

static aval_t from_int(unsigned type, int64_t v)
{
    aval_t r = { 0 };
    switch (type) {
    case EM_ATYPE_FLOAT: r.f = (float)v; break;
    case EM_ATYPE_DOUBLE: r.d = (double)v; break;
    case EM_ATYPE_INT32:
    case EM_ATYPE_UINT32: r.u32 = (uint32_t)v; break;
    default: r.u64 = (uint64_t)v; break;
    }
    return r;
}

static aval_t arith(unsigned type, aval_t a, aval_t b, bool prod)
{
    aval_t r = { 0 };
    switch (type) {
    /* unsigned arithmetic: wraps, as two's complement hardware does */
    case EM_ATYPE_INT32:
    case EM_ATYPE_UINT32: r.u32 = prod ? a.u32 * b.u32 : a.u32 + b.u32; break;
    case EM_ATYPE_INT64:
    case EM_ATYPE_UINT64: r.u64 = prod ? a.u64 * b.u64 : a.u64 + b.u64; break;
    case EM_ATYPE_FLOAT: r.f = prod ? a.f * b.f : a.f + b.f; break;
    default: r.d = prod ? a.d * b.d : a.d + b.d; break;
    }
    return r;
}

/**
 * The new value of an element that holds @p cur: false when the op leaves
 * it as it is (READ, a failed compare).  Bitwise ops work on the bit
 * pattern (integer types only, checked before).
 */
static bool compute(unsigned op, unsigned type, aval_t cur, aval_t o, aval_t c, aval_t *nv)
{
    switch (op) {
    case EM_AOP_SUM: *nv = arith(type, cur, o, false); return true;
    case EM_AOP_PROD: *nv = arith(type, cur, o, true); return true;
    case EM_AOP_MIN: *nv = lt(type, o, cur) ? o : cur; return true;
    case EM_AOP_MAX: *nv = lt(type, cur, o) ? o : cur; return true;
    case EM_AOP_BOR: nv->u64 = cur.u64 | o.u64; return true;
    case EM_AOP_BAND: nv->u64 = cur.u64 & o.u64; return true;
    case EM_AOP_BXOR: nv->u64 = cur.u64 ^ o.u64; return true;
    case EM_AOP_LOR: *nv = from_int(type, nonzero(type, cur) || nonzero(type, o)); return true;
    case EM_AOP_LAND: *nv = from_int(type, nonzero(type, cur) && nonzero(type, o)); return true;
    case EM_AOP_LXOR: *nv = from_int(type, nonzero(type, cur) != nonzero(type, o)); return true;
    case EM_AOP_READ: return false;
    case EM_AOP_WRITE: *nv = o; return true;
    case EM_AOP_CSWAP: *nv = o; return c.u64 == cur.u64;
    case EM_AOP_CSWAP_NE: *nv = o; return c.u64 != cur.u64;
    case EM_AOP_CSWAP_LE: *nv = o; return lt(type, c, cur) || eq(type, c, cur);
    case EM_AOP_CSWAP_LT: *nv = o; return lt(type, c, cur);
    case EM_AOP_CSWAP_GE: *nv = o; return lt(type, cur, c) || eq(type, c, cur);
    case EM_AOP_CSWAP_GT: *nv = o; return lt(type, cur, c);
    case EM_AOP_MSWAP: nv->u64 = (o.u64 & c.u64) | (cur.u64 & ~c.u64); return true;
    default: return false;
    }
}

/* One element of @p esize bytes at @p p (unaligned), into a zeroed value. */
static aval_t load_elem(const void *p, size_t esize)
{
    aval_t v = { 0 };
    if (esize == 4)
        memcpy(&v.u32, p, 4);
    else
        memcpy(&v.u64, p, 8);
    return v;
}

static void store_elem(void *p, aval_t v, size_t esize)
{
    if (esize == 4)
        memcpy(p, &v.u32, 4);
    else
        memcpy(p, &v.u64, 8);
}

/* One element: the CAS loop; returns the value before. */
static aval_t apply_one(unsigned op, unsigned type, void *at, aval_t o, aval_t c)
{
    aval_t cur = { 0 }, nv = { 0 };
    if (em_atomic_type_size(type) == 4) {
        uint32_t *w = at;
        if (op == EM_AOP_WRITE) {
            cur.u32 = __atomic_exchange_n(w, o.u32, __ATOMIC_SEQ_CST);
            return cur;
        }
        cur.u32 = __atomic_load_n(w, __ATOMIC_SEQ_CST);
        while (compute(op, type, cur, o, c, &nv) &&
               !__atomic_compare_exchange_n(w, &cur.u32, nv.u32, false, __ATOMIC_SEQ_CST,
                                            __ATOMIC_SEQ_CST))
            nv = (aval_t){ 0 };
        return cur;
    }
    uint64_t *w = at;
    if (op == EM_AOP_WRITE) {
        cur.u64 = __atomic_exchange_n(w, o.u64, __ATOMIC_SEQ_CST);
        return cur;
    }
    cur.u64 = __atomic_load_n(w, __ATOMIC_SEQ_CST);
    while (compute(op, type, cur, o, c, &nv) &&
           !__atomic_compare_exchange_n(w, &cur.u64, nv.u64, false, __ATOMIC_SEQ_CST,
                                        __ATOMIC_SEQ_CST))
        ;
    return cur;
}

int em_atomic_apply(unsigned op, unsigned type, void *at, const void *operand, const void *compare,
                    void *old, unsigned count)
{
    size_t es = em_atomic_type_size(type);
    if (!em_atomic_valid(op, type) || ((uintptr_t)at & (es - 1)) != 0)
        return -1;
    if ((op != EM_AOP_READ && !operand) || (em_atomic_has_compare(op) && !compare))
        return -1;
    for (unsigned i = 0; i < count; i++) {
        aval_t o = { 0 }, c = { 0 };
        if (op != EM_AOP_READ)
            o = load_elem((const uint8_t *)operand + i * es, es);
        if (em_atomic_has_compare(op))
            c = load_elem((const uint8_t *)compare + i * es, es);
        aval_t prev = apply_one(op, type, (uint8_t *)at + i * es, o, c);
        if (old)
            store_elem((uint8_t *)old + i * es, prev, es);
    }
    return 0;
}

/* ---- wire codec ---- */

static void be16(uint8_t *b, uint16_t v)
{
    b[0] = (uint8_t)(v >> 8);
    b[1] = (uint8_t)v;
}
static void be32(uint8_t *b, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        b[i] = (uint8_t)(v >> (24 - 8 * i));
}
static void be64(uint8_t *b, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(v >> (56 - 8 * i));
}
static uint16_t rd16(const uint8_t *b) { return (uint16_t)((b[0] << 8) | b[1]); }
static uint32_t rd32(const uint8_t *b)
{
    return ((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) | ((uint32_t)b[2] << 8) | b[3];
}
static uint64_t rd64(const uint8_t *b) { return ((uint64_t)rd32(b) << 32) | rd32(b + 4); }

void em_rma_elems_to_be(uint8_t *dst, const void *src, size_t esize, unsigned count)
{
    for (unsigned i = 0; i < count; i++) {
        aval_t v = load_elem((const uint8_t *)src + i * esize, esize);
        if (esize == 4)
            be32(dst + i * esize, v.u32);
        else
            be64(dst + i * esize, v.u64);
    }
}

void em_rma_elems_from_be(void *dst, const uint8_t *src, size_t esize, unsigned count)
{
    for (unsigned i = 0; i < count; i++) {
        aval_t v = { 0 };
        if (esize == 4)
            v.u32 = rd32(src + i * esize);
        else
            v.u64 = rd64(src + i * esize);
        store_elem((uint8_t *)dst + i * esize, v, esize);
    }
}

void em_rma_put_hdr(uint8_t *b, uint8_t kind, uint8_t op_or_status, uint32_t req_id)
{
    b[0] = EM_RMA_MAGIC;
    b[1] = EM_RMA_VERSION;
    b[2] = kind;
    b[3] = op_or_status;
    be32(b + 4, req_id);
}

size_t em_rma_atomic_req_len(const em_atomic_desc_t *d)
{
    size_t es = em_atomic_type_size(d->type);
    if (!em_atomic_valid(d->op, d->type) || d->count == 0 || d->count > EM_ATOMIC_COUNT_MAX)
        return 0;
    return EM_RMA_REQ_LEN + (size_t)d->count * es * (em_atomic_has_compare(d->op) ? 2 : 1);
}

size_t em_rma_encode_req(uint8_t *b, uint32_t req_id, uint32_t region, uint64_t key,
                         uint64_t offset, const em_atomic_desc_t *d, bool fetch, uint32_t get_len)
{
    em_rma_put_hdr(b, d ? EM_RMA_ATOMIC_REQ : EM_RMA_GET_REQ, d ? d->op : 0, req_id);
    b[8] = d ? d->type : 0;
    b[9] = d && fetch ? EM_RMA_F_FETCH : 0;
    be16(b + 10, d ? d->count : 0);
    be32(b + 12, region);
    be64(b + 16, key);
    be64(b + 24, offset);
    if (!d) {
        be32(b + 32, get_len);
        return EM_RMA_GET_REQ_LEN;
    }
    size_t es = em_atomic_type_size(d->type), n = (size_t)d->count * es;
    /* READ carries operands too (zeros): one layout for every op */
    if (d->operand)
        em_rma_elems_to_be(b + EM_RMA_REQ_LEN, d->operand, es, d->count);
    else
        memset(b + EM_RMA_REQ_LEN, 0, n);
    if (em_atomic_has_compare(d->op))
        em_rma_elems_to_be(b + EM_RMA_REQ_LEN + n, d->compare, es, d->count);
    return em_rma_atomic_req_len(d);
}

static em_rma_dec_t decode_req(const uint8_t *b, size_t len, em_rma_msg_t *m)
{
    size_t hl = m->kind == EM_RMA_GET_REQ ? EM_RMA_GET_REQ_LEN : EM_RMA_REQ_LEN;
    if (len < hl)
        return EM_RMA_DEC_SHORT;
    m->type = b[8];
    m->flags = b[9];
    m->count = rd16(b + 10);
    m->region = rd32(b + 12);
    m->key = rd64(b + 16);
    m->offset = rd64(b + 24);
    if (m->kind == EM_RMA_GET_REQ) {
        m->get_len = rd32(b + 32);
        if (m->op || m->type || m->flags || m->count)
            return EM_RMA_DEC_OP;
        return len == hl ? EM_RMA_DEC_OK : EM_RMA_DEC_TRAILING;
    }
    if (!em_atomic_valid(m->op, m->type) || (m->flags & ~EM_RMA_F_FETCH))
        return EM_RMA_DEC_OP;
    if (m->count == 0 || m->count > EM_ATOMIC_COUNT_MAX)
        return EM_RMA_DEC_COUNT;
    size_t n = (size_t)m->count * em_atomic_type_size(m->type);
    size_t need = hl + n * (em_atomic_has_compare(m->op) ? 2 : 1);
    if (len < need)
        return EM_RMA_DEC_SHORT;
    if (len > need)
        return EM_RMA_DEC_TRAILING;
    m->operand = b + hl;
    m->compare = em_atomic_has_compare(m->op) ? b + hl + n : NULL;
    return EM_RMA_DEC_OK;
}

em_rma_dec_t em_rma_decode(const void *buf, size_t len, em_rma_msg_t *m)
{
    const uint8_t *b = buf;
    memset(m, 0, sizeof *m);
    if (len < EM_RMA_RSP_LEN)
        return EM_RMA_DEC_SHORT;
    if (b[0] != EM_RMA_MAGIC || b[1] != EM_RMA_VERSION)
        return EM_RMA_DEC_MAGIC;
    m->kind = b[2];
    m->op = b[3];
    m->req_id = rd32(b + 4);
    switch (m->kind) {
    case EM_RMA_GET_REQ:
    case EM_RMA_ATOMIC_REQ: return decode_req(b, len, m);
    case EM_RMA_GET_RSP:
    case EM_RMA_ATOMIC_RSP:
        m->data = b + EM_RMA_RSP_LEN;
        m->data_len = len - EM_RMA_RSP_LEN;
        return EM_RMA_DEC_OK;
    default: return EM_RMA_DEC_KIND;
    }
}
