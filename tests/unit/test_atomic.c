/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * em_atomic_apply (src/engine/atomic.c): every op on every type against a
 * reference written per type with C's own operators, several elements per
 * call, with and without the fetch; invalid combinations and misaligned
 * targets refused; the RMA codec's round trip and its length checks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "engine/atomic.h"

#define N 5

/* The reference: new value of cur under (op, o, c); *w = false when the
 * op leaves it.  One body per C type. */
#define REF_INT(T)                                                                                 \
    static T ref_##T(unsigned op, T cur, T o, T c, int *w)                                         \
    {                                                                                              \
        *w = 1;                                                                                    \
        switch (op) {                                                                              \
        case EM_AOP_SUM: return (T)(cur + o);                                                      \
        case EM_AOP_PROD: return (T)(cur * o);                                                     \
        case EM_AOP_MIN: return o < cur ? o : cur;                                                 \
        case EM_AOP_MAX: return o > cur ? o : cur;                                                 \
        case EM_AOP_BOR: return cur | o;                                                           \
        case EM_AOP_BAND: return cur & o;                                                          \
        case EM_AOP_BXOR: return cur ^ o;                                                          \
        case EM_AOP_LOR: return (T)(cur || o);                                                     \
        case EM_AOP_LAND: return (T)(cur && o);                                                    \
        case EM_AOP_LXOR: return (T)(!cur != !o);                                                  \
        case EM_AOP_WRITE: return o;                                                               \
        case EM_AOP_CSWAP: *w = c == cur; return o;                                                \
        case EM_AOP_CSWAP_NE: *w = c != cur; return o;                                             \
        case EM_AOP_CSWAP_LE: *w = c <= cur; return o;                                             \
        case EM_AOP_CSWAP_LT: *w = c < cur; return o;                                              \
        case EM_AOP_CSWAP_GE: *w = c >= cur; return o;                                             \
        case EM_AOP_CSWAP_GT: *w = c > cur; return o;                                              \
        case EM_AOP_MSWAP: return (T)((o & c) | (cur & ~c));                                       \
        default: *w = 0; return cur;                                                               \
        }                                                                                          \
    }
#define REF_FLT(T)                                                                                 \
    static T ref_##T(unsigned op, T cur, T o, T c, int *w)                                         \
    {                                                                                              \
        *w = 1;                                                                                    \
        switch (op) {                                                                              \
        case EM_AOP_SUM: return cur + o;                                                           \
        case EM_AOP_PROD: return cur * o;                                                          \
        case EM_AOP_MIN: return o < cur ? o : cur;                                                 \
        case EM_AOP_MAX: return o > cur ? o : cur;                                                 \
        case EM_AOP_LOR: return (T)(cur != 0 || o != 0);                                           \
        case EM_AOP_LAND: return (T)(cur != 0 && o != 0);                                          \
        case EM_AOP_LXOR: return (T)((cur != 0) != (o != 0));                                      \
        case EM_AOP_WRITE: return o;                                                               \
        case EM_AOP_CSWAP: *w = memcmp(&c, &cur, sizeof c) == 0; return o;                         \
        case EM_AOP_CSWAP_NE: *w = memcmp(&c, &cur, sizeof c) != 0; return o;                      \
        case EM_AOP_CSWAP_LE: *w = c <= cur; return o;                                             \
        case EM_AOP_CSWAP_LT: *w = c < cur; return o;                                              \
        case EM_AOP_CSWAP_GE: *w = c >= cur; return o;                                             \
        case EM_AOP_CSWAP_GT: *w = c > cur; return o;                                              \
        default: *w = 0; return cur;                                                               \
        }                                                                                          \
    }
REF_INT(int32_t)
REF_INT(uint32_t)
REF_INT(int64_t)
REF_INT(uint64_t)
REF_FLT(float)
REF_FLT(double)

/* Five elements that hit every branch: equal, less, greater, zero, negative. */
#define CHECK(T, TYPE)                                                                             \
    do {                                                                                           \
        T cur[N] = { (T)7, (T)-3, (T)0, (T)12, (T)5 };                                             \
        T o[N] = { (T)3, (T)4, (T)0, (T)-6, (T)5 };                                                \
        T c[N] = { (T)7, (T)-3, (T)1, (T)20, (T)4 };                                               \
        for (unsigned op = 0; op < EM_AOP_COUNT_; op++) {                                          \
            if (!em_atomic_valid(op, TYPE)) {                                                      \
                T at[N];                                                                           \
                memcpy(at, cur, sizeof at);                                                        \
                assert_int_equal(em_atomic_apply(op, TYPE, at, o, c, NULL, N), -1);                \
                assert_memory_equal(at, cur, sizeof at);                                           \
                refused++;                                                                         \
                continue;                                                                          \
            }                                                                                      \
            for (int fetch = 0; fetch < 2; fetch++) {                                              \
                T at[N], old[N], want[N];                                                          \
                memcpy(at, cur, sizeof at);                                                        \
                memset(old, 0x5a, sizeof old);                                                     \
                for (unsigned i = 0; i < N; i++) {                                                 \
                    int w;                                                                         \
                    T nv = ref_##T(op, cur[i], o[i], c[i], &w);                                    \
                    want[i] = w ? nv : cur[i];                                                     \
                }                                                                                  \
                assert_int_equal(em_atomic_apply(op, TYPE, at, o, c, fetch ? old : NULL, N), 0);   \
                assert_memory_equal(at, want, sizeof at);                                          \
                if (fetch)                                                                         \
                    assert_memory_equal(old, cur, sizeof old);                                     \
                applied++;                                                                         \
            }                                                                                      \
        }                                                                                          \
    } while (0)

static void every_op_every_type(void **state)
{
    (void)state;
    unsigned applied = 0, refused = 0;
    CHECK(int32_t, EM_ATYPE_INT32);
    CHECK(uint32_t, EM_ATYPE_UINT32);
    CHECK(int64_t, EM_ATYPE_INT64);
    CHECK(uint64_t, EM_ATYPE_UINT64);
    CHECK(float, EM_ATYPE_FLOAT);
    CHECK(double, EM_ATYPE_DOUBLE);
    /* 4 integer types x 19 ops + 2 float types x 15 (no bitwise, MSWAP) */
    assert_int_equal(applied, 2 * (4 * 19 + 2 * 15));
    assert_int_equal(refused, 2 * 4);
}

static void refusals(void **state)
{
    (void)state;
    uint64_t buf[4] = { 0 };
    uint64_t one = 1;
    /* misaligned targets: nothing written */
    assert_int_equal(
        em_atomic_apply(EM_AOP_SUM, EM_ATYPE_UINT64, (uint8_t *)buf + 4, &one, NULL, NULL, 1), -1);
    assert_int_equal(
        em_atomic_apply(EM_AOP_SUM, EM_ATYPE_UINT32, (uint8_t *)buf + 2, &one, NULL, NULL, 1), -1);
    /* unknown op or type, and CSWAP without compare values */
    assert_int_equal(em_atomic_apply(EM_AOP_COUNT_, EM_ATYPE_UINT64, buf, &one, NULL, NULL, 1), -1);
    assert_int_equal(em_atomic_apply(EM_AOP_SUM, EM_ATYPE_COUNT_, buf, &one, NULL, NULL, 1), -1);
    assert_int_equal(em_atomic_apply(EM_AOP_CSWAP, EM_ATYPE_UINT64, buf, &one, NULL, NULL, 1), -1);
    uint64_t zero[4] = { 0 };
    assert_memory_equal(buf, zero, sizeof buf);
    /* 4-byte elements at a 4-byte (not 8-byte) boundary are fine */
    uint32_t one32 = 1;
    assert_int_equal(
        em_atomic_apply(EM_AOP_SUM, EM_ATYPE_UINT32, (uint8_t *)buf + 4, &one32, NULL, NULL, 1), 0);
    assert_int_not_equal(buf[0], 0);
}

static void codec(void **state)
{
    (void)state;
    uint8_t b[EM_RMA_REQ_LEN + 2 * EM_ATOMIC_COUNT_MAX * 8];
    uint64_t o[3] = { 1, 0x0102030405060708ull, UINT64_MAX }, c[3] = { 9, 8, 7 };
    em_atomic_desc_t d = {
        .op = EM_AOP_CSWAP, .type = EM_ATYPE_UINT64, .count = 3, .operand = o, .compare = c
    };
    size_t n = em_rma_encode_req(b, 0x10002, 5, 0xabcdefull, 64, &d, true, 0);
    assert_int_equal(n, EM_RMA_REQ_LEN + 48);
    assert_int_equal(n, em_rma_atomic_req_len(&d));
    assert_int_equal(b[EM_RMA_REQ_LEN + 8], 0x01); /* big-endian on the wire */
    em_rma_msg_t m;
    assert_int_equal(em_rma_decode(b, n, &m), EM_RMA_DEC_OK);
    assert_int_equal(m.kind, EM_RMA_ATOMIC_REQ);
    assert_int_equal(m.req_id, 0x10002);
    assert_int_equal(m.region, 5);
    assert_int_equal(m.key, 0xabcdefull);
    assert_int_equal(m.offset, 64);
    assert_int_equal(m.count, 3);
    assert_int_equal(m.flags, EM_RMA_F_FETCH);
    uint64_t back[3];
    em_rma_elems_from_be(back, m.operand, 8, 3);
    assert_memory_equal(back, o, sizeof o);
    em_rma_elems_from_be(back, m.compare, 8, 3);
    assert_memory_equal(back, c, sizeof c);
    /* every truncation is short; one byte more is trailing */
    for (size_t k = 0; k < n; k++)
        assert_int_equal(em_rma_decode(b, k, &m), EM_RMA_DEC_SHORT);
    assert_int_equal(em_rma_decode(b, n + 1, &m), EM_RMA_DEC_TRAILING);
    /* a float with a bitwise op, count 0, too many, a bad magic, a kind */
    uint8_t x[sizeof b];
    memcpy(x, b, n);
    x[3] = EM_AOP_BOR;
    x[8] = EM_ATYPE_DOUBLE;
    assert_int_equal(em_rma_decode(x, n, &m), EM_RMA_DEC_OP);
    memcpy(x, b, n);
    x[10] = x[11] = 0;
    assert_int_equal(em_rma_decode(x, n, &m), EM_RMA_DEC_COUNT);
    x[11] = EM_ATOMIC_COUNT_MAX + 1;
    assert_int_equal(em_rma_decode(x, n, &m), EM_RMA_DEC_COUNT);
    memcpy(x, b, n);
    x[0] = 0;
    assert_int_equal(em_rma_decode(x, n, &m), EM_RMA_DEC_MAGIC);
    memcpy(x, b, n);
    x[2] = 9;
    assert_int_equal(em_rma_decode(x, n, &m), EM_RMA_DEC_KIND);
    /* get request */
    n = em_rma_encode_req(b, 7, 1, 2, 3, NULL, false, 4096);
    assert_int_equal(n, EM_RMA_GET_REQ_LEN);
    assert_int_equal(em_rma_decode(b, n, &m), EM_RMA_DEC_OK);
    assert_int_equal(m.kind, EM_RMA_GET_REQ);
    assert_int_equal(m.get_len, 4096);
    /* an answer */
    em_rma_put_hdr(b, EM_RMA_GET_RSP, 6, 7);
    assert_int_equal(em_rma_decode(b, 8 + 5, &m), EM_RMA_DEC_OK);
    assert_int_equal(m.op, 6);
    assert_int_equal(m.data_len, 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_op_every_type),
        cmocka_unit_test(refusals),
        cmocka_unit_test(codec),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
