/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz target: the whole receive path (validation, window, out-of-order
 * buffer, reassembly, put dispatch, ACK processing) of one endpoint fed
 * with a sequence of frames.
 *
 * Input: byte 0 picks the recovery mode and window; then records of
 * [u16 length][flags][frame bytes].  Flag bit 0 stamps the right magic,
 * version, job key and destination into the frame so the fuzzer reaches
 * the stateful code quickly; bit 1 advances the clock (timers fire); bit 2
 * queues a send so that ACKs have something to acknowledge.
 * Checks: delivered messages and puts stay within the sizes the protocol
 * promises; put targets are bounds-checked by the callback as a real
 * engine would; ASan/UBSan catch memory errors.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define KEY 0x0BADF00Dull /* the seeds' key (gen_seeds.c) */
static uint8_t region[4096];
static size_t max_msg;

static int f_emit(void *u, uint32_t peer, const void *h, size_t hl, const void *p, size_t pl)
{
    if (peer == 0 || peer >= 4 || hl < EM_HDR_LEN)
        abort();
    return 0;
}
static void f_recv(void *u, uint32_t peer, uint8_t tag, const void *d, size_t len)
{
    if (len > max_msg || (len && !d))
        abort();
    uint8_t x = 0;
    for (size_t i = 0; i < len; i++)
        x ^= ((const uint8_t *)d)[i]; /* touch every byte: ASan checks the bounds */
    __asm__ volatile("" : : "r"(x));
}
static int f_put(void *u, uint32_t peer, const em_put_target_t *t, const void *d, size_t len)
{
    if (t->region != 1 || t->offset > sizeof region || len > sizeof region - t->offset)
        return -1;
    memcpy(region + t->offset, d, len);
    return 0;
}
static void f_complete(void *u, void *ctx, int st) { free(ctx); }

static const em_proto_ops_t OPS = {
    .emit = f_emit, .recv = f_recv, .put = f_put, .complete = f_complete
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    em_proto_cfg_t c;
    em_proto_cfg_default(&c);
    c.job_key = KEY;
    c.self = 0;
    c.npeers = 4;
    c.frame_max = 300;
    c.window = (uint16_t)(1 + (data[0] >> 1) % EM_WINDOW_MAX);
    c.recovery = (data[0] & 1) ? EM_RECOVERY_GBN : EM_RECOVERY_SR;
    c.rto_ns = 1000;
    c.rto_min_ns = 500;
    c.rto_max_ns = 4000;
    c.max_retries = 3;
    c.isn = 0xFFFFFFF0u;
    /* hostile-input paths: source binding, small receive budgets */
    c.bind_source = (data[0] & 0x80) != 0;
    c.rx_mem_max = 16384;
    c.max_msg = 2000;
    int err;
    em_proto_t *p = em_proto_create(&c, &OPS, NULL, &err);
    if (!p)
        abort();
    max_msg = em_proto_max_msg(p);
    uint64_t now = 0;
    size_t i = 1;
    uint8_t frame[1024];
    while (i + 3 <= size) {
        size_t len = (size_t)data[i] << 8 | data[i + 1];
        uint8_t fl = data[i + 2];
        i += 3;
        if (len > size - i)
            len = size - i;
        if (len > sizeof frame)
            len = sizeof frame;
        memcpy(frame, data + i, len);
        i += len;
        if ((fl & 1) && len >= EM_HDR_LEN) {
            frame[0] = EM_WIRE_MAGIC;
            frame[1] = EM_WIRE_VERSION;
            for (int b = 0; b < 8; b++) /* key at 8, big-endian */
                frame[8 + b] = (uint8_t)(KEY >> (56 - 8 * b));
            frame[4] = 0;
            frame[5] = 0; /* the index (our number of the sender) < 65536 */
        }
        if (fl & 2)
            now += 1000u * (fl >> 4);
        if (fl & 4) {
            em_proto_op_t *op = malloc(sizeof *op + 700);
            uint8_t *buf = (uint8_t *)(op + 1);
            memset(buf, fl, 700);
            if (em_proto_send(p, op, (uint32_t)(1 + fl % 3), fl, buf, (fl & 8) ? 700 : 10, op,
                              now) != 0)
                free(op);
        }
        /* the source address: mostly the claimed peer's, sometimes another */
        uint32_t from = len >= 8 ? (uint32_t)(frame[6] << 8 | frame[7]) : 0;
        if (fl & 0x40)
            from = (fl & 0x80) ? EM_SRC_UNKNOWN : from + 1;
        em_proto_rx_from(p, frame, len, from, now);
        em_proto_poll(p, now);
    }
    em_proto_destroy(p);
    return 0;
}
