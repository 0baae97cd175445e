/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz target: wire v3's first contact (proto/hs_wire.h, proto/conn.h).
 * The input is a list of records, each [op][reply address][96 bytes]:
 * the frame goes to a table (endpoint 7, a fixed nonce and secret, two
 * peers inserted and one contacted, strangers accepted, room for 6).  A
 * frame the decoder takes is first made to name that one-byte reply
 * address (op bit 5: left as it is).  op bit 0: first turn the frame into a
 * CONFIRM carrying the cookie of the last CHALLENGE the table sent to that
 * address (so the fuzzer reaches binding, restarts and a full table); bit
 * 1: the clock moves 1 s first; bit 2: the table polls (retransmissions,
 * giving up); bit 6: the table's peers count as still heard (may_replace
 * says no).  A shorter tail goes to the decoder alone.
 * Properties beyond "no crash": what the decoder accepts re-encodes to the
 * bytes it read; the table never holds more than its room; every
 * established peer passes the data-path check with its own address and
 * token, and fails it from any other address.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/conn.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REC        (2 + EM_HS_LEN)
#define ROOM       6u
#define FUZZ_EP    7u
#define FUZZ_NONCE 0x5eed5eed5eed5eedull

static struct {
    em_hs_t last_ch[256]; /* the last CHALLENGE sent to each address */
    uint8_t have_ch[256];
    uint64_t rng;
    int heard;
} S;

static bool may_replace(void *u, uint32_t idx)
{
    (void)u;
    (void)idx;
    return !S.heard;
}

static void emit(void *u, const uint8_t *a, uint8_t alen, const void *f, size_t len)
{
    (void)u;
    em_hs_t h;
    /* the table only ever sends well-formed frames, to an address it read
     * from a frame that decoded (1..EM_CONN_ADDR_MAX bytes; op bit 5 lets
     * a frame through with its own, longer one) */
    if (alen < 1 || alen > EM_CONN_ADDR_MAX || len != EM_HS_LEN ||
        em_hs_decode(f, len, &h) != EM_HS_DEC_OK)
        abort();
    if (alen == 1 && h.type == EM_HS_CHALLENGE) {
        S.last_ch[a[0]] = h;
        S.have_ch[a[0]] = 1;
    }
}
static uint64_t r64(void *u)
{
    (void)u;
    S.rng = S.rng * 6364136223846793005ull + 1442695040888963407ull;
    return S.rng;
}

static void check_decoder(const uint8_t *f, size_t len)
{
    em_hs_t h;
    uint8_t out[EM_HS_LEN];
    if (em_hs_decode(f, len, &h) != EM_HS_DEC_OK)
        return;
    if (em_hs_encode(&h, out) != EM_HS_LEN || memcmp(out, f, EM_HS_LEN) != 0)
        abort();
}

static void check_table(em_conn_t *c)
{
    if (em_conn_count(c) > ROOM)
        abort();
    for (uint32_t gen = 0; gen < 4; gen++)
        for (uint32_t slot = 0; slot < ROOM + 2; slot++) {
            uint32_t idx = gen << 24 | slot;
            em_conn_peer_t p;
            em_conn_name_t n;
            if (em_conn_state(c, idx) != EM_CONN_ESTABLISHED)
                continue;
            if (em_conn_peer(c, idx, &p) != 0 || em_conn_name(c, idx, &n) != 0)
                abort();
            if (em_conn_check(c, idx, n.addr, n.addr_len, p.rx_token) != EM_CONN_CHK_OK)
                abort();
            uint8_t other[EM_CONN_ADDR_MAX];
            memcpy(other, n.addr, n.addr_len);
            other[0] ^= 0x80;
            if (em_conn_check(c, idx, other, n.addr_len, p.rx_token) != EM_CONN_CHK_SOURCE)
                abort();
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    memset(&S, 0, sizeof S);
    S.rng = 1;
    em_conn_cfg_t cfg;
    em_conn_cfg_default(&cfg);
    cfg.ep = FUZZ_EP;
    cfg.addr_len = 1;
    cfg.addr[0] = 0xEE;
    cfg.nonce = FUZZ_NONCE;
    cfg.max_peers = ROOM;
    cfg.accept_strangers = true;
    cfg.hs_tries = 3;
    memset(cfg.secret, 0x42, sizeof cfg.secret);
    em_conn_ops_t ops = { .emit = emit, .rand64 = r64, .may_replace = may_replace };
    em_conn_t *c = em_conn_create(&cfg, &ops, NULL);
    if (!c)
        abort();
    uint64_t now = 1000000000ull;
    uint32_t i1, i2;
    em_conn_name_t n1 = { .addr_len = 1, .addr = { 1 }, .ep = FUZZ_EP, .nonce = 0x1111 };
    em_conn_name_t n2 = { .addr_len = 1, .addr = { 2 }, .ep = FUZZ_EP, .nonce = 0 };
    if (em_conn_insert(c, &n1, &i1) != 0 || em_conn_insert(c, &n2, &i2) != 0 ||
        em_conn_connect(c, i1, now) != 0)
        abort();
    size_t off = 0;
    for (; off + REC <= size; off += REC) {
        uint8_t op = data[off], a = data[off + 1];
        uint8_t f[EM_HS_LEN];
        memcpy(f, data + off + 2, EM_HS_LEN);
        check_decoder(f, sizeof f);
        if (op & 2)
            now += 1000000000ull;
        S.heard = (op & 0x40) != 0;
        em_hs_t h;
        if (!(op & 0x20) && em_hs_decode(f, sizeof f, &h) == EM_HS_DEC_OK) {
            memset(h.addr, 0, sizeof h.addr);
            h.addr_len = 1;
            h.addr[0] = a;
            em_hs_encode(&h, f);
        }
        if ((op & 1) && S.have_ch[a] && em_hs_decode(f, sizeof f, &h) == EM_HS_DEC_OK &&
            h.src_index != EM_HS_NO_INDEX) {
            h.type = EM_HS_CONFIRM;
            h.dst_index = EM_HS_NO_INDEX;
            h.dst_nonce = FUZZ_NONCE;
            h.cookie = S.last_ch[a].cookie;
            h.cookie_ms = S.last_ch[a].cookie_ms;
            em_hs_encode(&h, f);
        }
        (void)em_conn_rx(c, f, sizeof f, now);
        if (op & 4)
            (void)em_conn_poll(c, now);
        if ((op & 0x18) == 0x18) /* now and then a removal: slots and generations reused */
            (void)em_conn_remove(c, (uint32_t)(data[off + 2] & 3) << 24 | (data[off + 3] % ROOM));
        check_table(c);
    }
    if (off < size)
        check_decoder(data + off, size - off);
    em_conn_destroy(c);
    return 0;
}
