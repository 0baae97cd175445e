/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz target: the order layer under the BTL glue (src/engine/order.c),
 * which parses the 4-byte order number in front of every message from a
 * peer with several links.  The input is a script: each step either
 * delivers one of the next 64 messages a correct sender numbered (any
 * order, duplicates allowed: as two links and a misbehaving peer could),
 * or a raw message taken from the input bytes (anything at all).
 * Properties beyond "no crash": what is handed on is exactly the sender's
 * messages 0, 1, 2, ... in order, each once and intact; raw bytes can only
 * be handed on when they carry the number whose turn it is; the counters
 * add up; nothing kept is behind the turn; a reset frees everything.
 */
#include <stdint.h>
#include <stdlib.h>

#if UINTPTR_MAX <= 0xffffffffu
#error "fuzz_order marks raw messages in the upper half of a 64-bit pointer"
#endif
#include <string.h>

#include "engine/order.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define WINDOW 64u
#define NMSG   4096u

struct state {
    uint32_t start;    /* the first number */
    uint32_t next_idx; /* the sender's next message handed on, as expected */
    uint64_t delivered;
    uint8_t kept[NMSG]; /* the sender's messages now kept (early), not yet handed on */
};

static void fill(uint8_t *b, uint32_t idx, size_t len)
{
    for (size_t i = 0; i < len; i++)
        b[i] = (uint8_t)(idx * 31u + i);
}

static int sink(void *ctx, void *origin, uint8_t tag, const uint8_t *d, size_t len)
{
    struct state *s = ctx;
    (void)tag;
    s->delivered++;
    uint64_t o = (uint64_t)(uintptr_t)origin;
    if (o >> 32) { /* a raw message: handed on only in the turn of its number */
        if ((uint32_t)o != s->start + s->next_idx)
            abort();
        s->next_idx++;
        return 0;
    }
    uint32_t idx = (uint32_t)o - 1;
    if (idx != s->next_idx || len != idx % 40u)
        abort();
    s->kept[idx] = 0;
    uint8_t want[40];
    fill(want, idx, len);
    if (len && memcmp(d, want, len) != 0)
        abort();
    s->next_idx++;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4)
        return 0;
    static struct state st;
    memset(&st, 0, sizeof st);
    st.start = (uint32_t)data[0] << 24 | (uint32_t)data[1] << 16 | (uint32_t)data[2] << 8 | data[3];
    em_order_t rx = { .rx_next = st.start };
    size_t p = 4;
    uint8_t msg[EM_ORDER_HDR + 40];
    while (p < size) {
        uint8_t op = data[p++];
        uint64_t before = st.delivered, kept = rx.kept, dropped = rx.dropped;
        uint32_t turn = rx.rx_next;
        int rc;
        if (op < 0xc0) {
            /* the sender's message (its next unsent + op % 64), numbered */
            uint32_t idx = st.next_idx + (op % WINDOW);
            if (idx >= NMSG)
                continue;
            em_order_t tx = { .tx_next = st.start + idx };
            size_t len = idx % 40u;
            em_order_stamp(&tx, msg);
            fill(msg + EM_ORDER_HDR, idx, len);
            int was_kept = st.kept[idx];
            uint32_t next_before = st.next_idx;
            rc = em_order_rx(&rx, (void *)(uintptr_t)(idx + 1), 65, msg, EM_ORDER_HDR + len, sink,
                             &st);
            /* in its turn: handed on; a copy of a kept one: dropped; early:
             * kept (or dropped when a raw message holds its number) */
            if ((idx == next_before) != (rc == EM_ORDER_DELIVERED) ||
                (was_kept && rc != EM_ORDER_DROPPED))
                abort();
            if (rc == EM_ORDER_KEPT)
                st.kept[idx] = 1;
        } else {
            /* raw: the next (op & 0x3f) input bytes are a message */
            size_t len = op & 0x3fu;
            if (len > size - p)
                len = size - p;
            uint32_t num = len >= 4 ? (uint32_t)data[p] << 24 | (uint32_t)data[p + 1] << 16 |
                                          (uint32_t)data[p + 2] << 8 | data[p + 3]
                                    : 0;
            rc = em_order_rx(&rx, (void *)(uintptr_t)(1ull << 32 | num), 66, data + p, len, sink,
                             &st);
            /* its turn: handed on; too short: dropped */
            if ((len >= 4 && num == turn && rc != EM_ORDER_DELIVERED) ||
                (len < 4 && rc != EM_ORDER_DROPPED))
                abort();
            p += len;
        }
        /* counters add up: each call delivers >= 1, keeps 1 or drops 1 */
        if ((rc == EM_ORDER_DELIVERED) != (st.delivered > before) ||
            (rc == EM_ORDER_KEPT) != (rx.kept == kept + 1) ||
            (rc == EM_ORDER_DROPPED) != (rx.dropped == dropped + 1) ||
            (uint32_t)(rx.rx_next - turn) != (uint32_t)(st.delivered - before))
            abort();
        if (rx.nheld > rx.kept)
            abort();
    }
    /* the sender's next messages, in order, are all handed on (or were
     * taken by raw messages with their numbers): the order goes on */
    for (uint32_t k = 0; k < 2 * WINDOW && st.next_idx < NMSG; k++) {
        uint32_t idx = st.next_idx, turn = rx.rx_next;
        if (st.kept[idx]) /* its turn came: the kept copy should have been handed on */
            abort();
        em_order_t tx = { .tx_next = st.start + idx };
        size_t len = idx % 40u;
        em_order_stamp(&tx, msg);
        fill(msg + EM_ORDER_HDR, idx, len);
        if (em_order_rx(&rx, (void *)(uintptr_t)(idx + 1), 65, msg, EM_ORDER_HDR + len, sink,
                        &st) != EM_ORDER_DELIVERED ||
            rx.rx_next == turn)
            abort();
    }
    em_order_reset(&rx);
    if (rx.nheld != 0)
        abort();
    return 0;
}
