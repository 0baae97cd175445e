/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file atomic.h
 * Remote atomics and RMA reads, once for every front end: the operations,
 * their types, the pure function that applies one at the target
 * (em_atomic_apply), and the wire format of the engine's request and
 * response messages (em_rma_*), which the engine (engine.h em_engine_get,
 * em_engine_atomic) sends on its reserved tag EM_ENGINE_TAG_RMA.
 *
 * Semantics of an element at the target, *at, with operand o, compare c,
 * the value before the operation returned as old (every op can fetch):
 *
 *   SUM       *at = *at + o        PROD  *at = *at * o
 *   MIN       *at = min(*at, o)    MAX   *at = max(*at, o)
 *   BOR/BAND/BXOR  *at = *at |,&,^ o             (integer types only)
 *   LOR/LAND/LXOR  *at = (*at != 0) ||,&&,!= (o != 0)   (1 or 0)
 *   READ      nothing is written (old = *at)
 *   WRITE     *at = o  (with a fetch: a swap)
 *   CSWAP     if (c == *at) *at = o;   CSWAP_NE: if (c != *at)
 *   CSWAP_LE  if (c <= *at) *at = o;   CSWAP_LT: c < *at
 *   CSWAP_GE  if (c >= *at) *at = o;   CSWAP_GT: c > *at
 *   MSWAP     *at = (o & c) | (*at & ~c)              (integer types only)
 *
 * These are libfabric's (FI_SUM ... FI_MSWAP, same meaning); Open MPI's
 * BTL set maps onto them: ADD = SUM, AND/OR/XOR = BAND/BOR/BXOR,
 * LAND/LOR/LXOR, SWAP = WRITE with a fetch, MIN, MAX, CSWAP.
 *
 * Each element is applied with one CPU atomic (a compare-and-swap loop on
 * the element's bit pattern, or an atomic load/exchange), so it is atomic
 * with respect to the target's own CPU atomics on the same element and to
 * other peers' remote atomics.  Elements are naturally aligned 4- or
 * 8-byte words; a request of several elements is not atomic as a whole
 * (as in libfabric: each element is).  Float comparisons (MIN, MAX,
 * CSWAP_*) compare values, CSWAP compares bit patterns (so -0.0 != 0.0 and
 * a NaN equals itself), as a CPU compare-and-swap does.
 */
#ifndef EM_ENGINE_ATOMIC_H
#define EM_ENGINE_ATOMIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum em_atomic_op {
    EM_AOP_SUM = 0,
    EM_AOP_PROD,
    EM_AOP_MIN,
    EM_AOP_MAX,
    EM_AOP_BOR,
    EM_AOP_BAND,
    EM_AOP_BXOR,
    EM_AOP_LOR,
    EM_AOP_LAND,
    EM_AOP_LXOR,
    EM_AOP_READ,
    EM_AOP_WRITE,
    EM_AOP_CSWAP,
    EM_AOP_CSWAP_NE,
    EM_AOP_CSWAP_LE,
    EM_AOP_CSWAP_LT,
    EM_AOP_CSWAP_GE,
    EM_AOP_CSWAP_GT,
    EM_AOP_MSWAP,
    EM_AOP_COUNT_ /**< number of ops (not an op) */
} em_atomic_op_t;

typedef enum em_atomic_type {
    EM_ATYPE_INT32 = 0,
    EM_ATYPE_UINT32,
    EM_ATYPE_INT64,
    EM_ATYPE_UINT64,
    EM_ATYPE_FLOAT,
    EM_ATYPE_DOUBLE,
    EM_ATYPE_COUNT_ /**< number of types (not a type) */
} em_atomic_type_t;

/** Most elements one request carries (operands + compare values of
 *  64 x 8 bytes fit one frame of a standard 1500-byte MTU). */
#define EM_ATOMIC_COUNT_MAX 64u

/** One atomic request (em_engine_atomic). */
typedef struct em_atomic_desc {
    uint8_t op;          /**< em_atomic_op_t */
    uint8_t type;        /**< em_atomic_type_t */
    uint16_t count;      /**< elements, 1 .. EM_ATOMIC_COUNT_MAX */
    const void *operand; /**< count elements (ignored by READ); read during the call only */
    const void *compare; /**< count elements for CSWAP* and MSWAP, else NULL */
} em_atomic_desc_t;

/** Bytes of one element of @p type (4 or 8), 0 for an unknown type. */
size_t em_atomic_type_size(unsigned type);
/** Does @p op apply to @p type (bitwise ops and MSWAP need an integer type)? */
bool em_atomic_valid(unsigned op, unsigned type);
/** Does @p op need compare values (CSWAP*, MSWAP)? */
bool em_atomic_has_compare(unsigned op);
/** Does @p op write the target (all but READ)? */
bool em_atomic_writes(unsigned op);

/**
 * Apply @p op on @p count elements of @p type at @p at (naturally
 * aligned), in order, each with one CPU atomic.  @p operand and
 * @p compare (as em_atomic_desc_t says; host order) need not be aligned;
 * @p old (may be NULL) receives each element's value before the operation.
 * @return 0, or -1 for an invalid op/type or a misaligned @p at (nothing
 * applied).
 */
int em_atomic_apply(unsigned op, unsigned type, void *at, const void *operand, const void *compare,
                    void *old, unsigned count);

/* ---- wire format (engine-private; here for the fuzz target and tests) ----
 *
 * Every message on EM_ENGINE_TAG_RMA starts with the same 8 bytes
 * (big-endian):
 *
 *   0 magic 0xEA   1 version 1   2 kind   3 op (REQ) / status (RSP)
 *   4..7 request id (the initiator's: slot index + generation)
 *
 * Requests (kind GET_REQ, ATOMIC_REQ), EM_RMA_REQ_LEN = 32 bytes:
 *   8 type   9 flags (bit 0: fetch the old values)   10..11 count
 *   12..15 region id   16..23 region key   24..31 offset in the region
 *   GET_REQ: type 0, flags 0, op 0, and 32..35 the length to read, so
 *   that its header is 36 bytes; ATOMIC_REQ: count operands, then, for
 *   ops with compare values, count compare values, each element
 *   big-endian of its type's size.
 * Responses (kind GET_RSP, ATOMIC_RSP), EM_RMA_RSP_LEN = 8 bytes: status
 *   0 or a positive EM_E* code (EM_EACCES: refused; EM_EINVAL: not
 *   understood), then on success the bytes read (GET) or the count old
 *   values (a fetching ATOMIC, big-endian elements).
 */
#define EM_RMA_MAGIC       0xEAu
#define EM_RMA_VERSION     1u
#define EM_RMA_RSP_LEN     8u
#define EM_RMA_REQ_LEN     32u
#define EM_RMA_GET_REQ_LEN 36u
#define EM_RMA_F_FETCH     1u

enum em_rma_kind {
    EM_RMA_GET_REQ = 1,
    EM_RMA_GET_RSP = 2,
    EM_RMA_ATOMIC_REQ = 3,
    EM_RMA_ATOMIC_RSP = 4,
};

/** Why a message was refused by the decoder (counted by the engine). */
typedef enum em_rma_dec {
    EM_RMA_DEC_OK = 0,
    EM_RMA_DEC_SHORT,    /**< shorter than its header or than its operands */
    EM_RMA_DEC_MAGIC,    /**< magic or version */
    EM_RMA_DEC_KIND,     /**< unknown kind */
    EM_RMA_DEC_OP,       /**< unknown op or type, op not valid for type, flags */
    EM_RMA_DEC_COUNT,    /**< count 0 or above EM_ATOMIC_COUNT_MAX */
    EM_RMA_DEC_TRAILING, /**< bytes after the request's operands */
    EM_RMA_DEC_COUNT_,
} em_rma_dec_t;

typedef struct em_rma_msg {
    uint8_t kind, op, type, flags; /**< op: the status of a response */
    uint16_t count;
    uint32_t req_id;
    uint32_t region;
    uint64_t key, offset;
    uint32_t get_len;       /**< GET_REQ */
    const uint8_t *operand; /**< ATOMIC_REQ: count big-endian elements */
    const uint8_t *compare; /**< ATOMIC_REQ with compare values, else NULL */
    const uint8_t *data;    /**< responses: what follows the header */
    size_t data_len;
} em_rma_msg_t;

/** Decode @p len bytes at @p buf (any kind), checking every length.
 *  @return EM_RMA_DEC_OK with *@p m filled, or why not. */
em_rma_dec_t em_rma_decode(const void *buf, size_t len, em_rma_msg_t *m);
/** Bytes of an ATOMIC_REQ of @p d (0: invalid desc). */
size_t em_rma_atomic_req_len(const em_atomic_desc_t *d);
/** Encode the 8-byte common header. */
void em_rma_put_hdr(uint8_t *b, uint8_t kind, uint8_t op_or_status, uint32_t req_id);
/** Encode a request (GET_REQ: @p d NULL, @p get_len bytes) into @p b, which
 *  holds em_rma_atomic_req_len(d) or EM_RMA_GET_REQ_LEN bytes.
 *  @return the bytes written. */
size_t em_rma_encode_req(uint8_t *b, uint32_t req_id, uint32_t region, uint64_t key,
                         uint64_t offset, const em_atomic_desc_t *d, bool fetch, uint32_t get_len);
/** Host-order elements of @p esize bytes to big-endian and back. */
void em_rma_elems_to_be(uint8_t *dst, const void *src, size_t esize, unsigned count);
void em_rma_elems_from_be(void *dst, const uint8_t *src, size_t esize, unsigned count);

#endif
