/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz target: the engine's RMA messages (src/engine/rma.c, atomic.c), as
 * a peer may send them on the engine's tag: requests a target decodes,
 * checks and applies, and answers an initiator matches to its requests.
 * Input: byte 0 is a set of patches so that the fuzzer reaches past the
 * random numbers (bit 0: the region id and key of the target's region;
 * bit 1: the request id of the initiator's outstanding get; bit 2: that
 * of its atomic), then messages of 1 + n bytes (n = the length byte).
 * Properties beyond "no crash": each message moves exactly one of the
 * engine's RMA counters (served, applied, refused, bad, stale) or, for a
 * good answer, completes one request once; the region's guard bytes on
 * both sides are never written; after the engine ends, each of its two
 * requests has completed exactly once.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"
#include "link/link_sim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static unsigned done[2];

static void on_recv(void *u, uint32_t peer, uint8_t tag, const void *d, size_t len)
{
    (void)u, (void)peer, (void)tag, (void)d, (void)len;
    abort(); /* nothing on the RMA tag reaches the owner */
}

static void on_complete(void *u, void *ctx, int status)
{
    (void)u, (void)status;
    unsigned *c = ctx;
    if (++*c > 1)
        abort();
}

static uint64_t moved(const em_engine_stats_t *s)
{
    return s->rma_gets_served + s->rma_atomics_applied + s->rma_refused + s->rma_bad_msg +
           s->rma_stale_rsp;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    em_sim_cfg_t sc;
    em_sim_cfg_default(&sc);
    em_sim_t *sim = em_sim_create(2, &sc);
    em_proto_cfg_t pc;
    em_proto_cfg_default(&pc);
    pc.npeers = 2;
    pc.frame_max = sc.mtu;
    em_engine_ops_t ops = { .recv = on_recv, .complete = on_complete };
    int err;
    em_engine_t *e = em_engine_create(em_sim_link(sim, 0), &pc, &ops, NULL, &err);
    if (!e)
        abort();
    (void)em_engine_set_peer(e, 1, &em_sim_link(sim, 1)->local);
    static _Alignas(64) uint8_t mem[64 + 256 + 64];
    memset(mem, 0xa5, sizeof mem);
    em_region_handle_t h;
    if (em_engine_register_ex(e, mem + 64, 256, EM_REGION_WRITE | EM_REGION_READ, &h) != 0)
        abort();
    /* two requests of our own to peer 1: their ids are slots 0 and 1 */
    em_proto_op_t op[2];
    uint8_t gbuf[16];
    uint64_t one = 1, res[2];
    em_atomic_desc_t d = { .op = EM_AOP_SUM, .type = EM_ATYPE_UINT64, .count = 2, .operand = &one };
    uint64_t two[2] = { 1, 2 };
    d.operand = two;
    done[0] = done[1] = 0;
    if (em_engine_get(e, &op[0], 1, &h, 0, gbuf, sizeof gbuf, &done[0]) != 0 ||
        em_engine_atomic(e, &op[1], 1, &h, 0, &d, res, &done[1]) != 0)
        abort();
    uint8_t patch = data[0];
    size_t i = 1;
    static uint8_t msg[256];
    while (i < size) {
        size_t n = data[i++];
        if (n > size - i)
            n = size - i;
        memcpy(msg, data + i, n);
        i += n;
        if ((patch & 1) && n >= EM_RMA_REQ_LEN) {
            uint8_t good[EM_RMA_GET_REQ_LEN];
            em_rma_encode_req(good, 0, h.id, h.key, 0, NULL, false, 0);
            memcpy(msg + 12, good + 12, 12); /* region id and key */
        }
        if ((patch & 6) && n >= 8) {
            /* a fresh engine's slots 0 and 1, generation 0 */
            memset(msg + 4, 0, 4);
            msg[7] = (patch & 2) ? 0 : 1;
        }
        uint64_t before = moved(em_engine_stats(e));
        unsigned d0 = done[0] + done[1];
        em_rma_recv(e, 1, msg, n);
        uint64_t after = moved(em_engine_stats(e));
        unsigned d1 = done[0] + done[1];
        /* a good answer only marks its request answered (it completes once
         * its own send is acknowledged, never here), so it moves nothing */
        if (after - before > 1 || d1 != d0)
            abort();
        for (size_t k = 0; k < 64; k++)
            if (mem[k] != 0xa5 || mem[64 + 256 + k] != 0xa5)
                abort();
    }
    em_engine_destroy(e);
    em_sim_destroy(sim);
    if (done[0] != 1 || done[1] != 1)
        abort();
    return 0;
}
