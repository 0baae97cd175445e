/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Writes seeds for fuzz_rma into DIR: a fetch-and-add and a get that the
 * target serves (region patched in), a compare-and-swap of 4-byte
 * elements, and answers to the initiator's two requests.
 */
#include <string.h>

#include "engine/atomic.h"
#include "seed_file.h"

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    unsigned char req[512], rsp[128];
    size_t n = 0, k;
    uint64_t ops[2] = { 5, 6 };
    uint32_t o32[3] = { 1, 2, 3 }, c32[3] = { 0, 2, 9 };
    em_atomic_desc_t add = {
        .op = EM_AOP_SUM, .type = EM_ATYPE_UINT64, .count = 2, .operand = ops
    };
    em_atomic_desc_t cas = {
        .op = EM_AOP_CSWAP, .type = EM_ATYPE_UINT32, .count = 3, .operand = o32, .compare = c32
    };
    req[n++] = 1; /* patch the region in */
    k = em_rma_encode_req(req + n + 1, 1, 0, 0, 8, &add, true, 0);
    req[n] = (unsigned char)k;
    n += 1 + k;
    k = em_rma_encode_req(req + n + 1, 2, 0, 0, 16, NULL, false, 64);
    req[n] = (unsigned char)k;
    n += 1 + k;
    k = em_rma_encode_req(req + n + 1, 3, 0, 0, 4, &cas, false, 0);
    req[n] = (unsigned char)k;
    n += 1 + k;
    size_t m = 0;
    memset(rsp, 0, sizeof rsp);
    rsp[m++] = 2; /* the get's id */
    rsp[m++] = 8 + 16;
    em_rma_put_hdr(rsp + m, EM_RMA_GET_RSP, 0, 0);
    m += 8 + 16;
    rsp[m++] = 8;
    em_rma_put_hdr(rsp + m, EM_RMA_ATOMIC_RSP, 6, 1); /* refused, stale id */
    m += 8;
    return em_seed_write(argv[1], "rma_req.bin", req, n) |
           em_seed_write(argv[1], "rma_rsp.bin", rsp, m);
}
