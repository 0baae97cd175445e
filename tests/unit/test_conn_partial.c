/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file test_conn_partial.c
 * Partial names (proto/conn.h ops.extends): a peer inserted before all of
 * its address is known (kernel UDP: IPv4 and receive port from a node and
 * service, send port 0, nonce 0).  Addresses here are three bytes, host,
 * receive port, send port (as link_udp's are IPv4, receive port, send
 * port); a frame goes to the table whose host and receive port it names.
 *
 *   - the handshake to a partial name completes: the entry takes the
 *     server's full reply address and nonce, counted once (hs_extended);
 *     the server's full name inserted later is the same peer;
 *   - forged CHALLENGEs that would bind the entry are refused, and the
 *     real answer binds it afterwards: one from another host, one that does
 *     not echo our INIT's nonce, one naming an address another entry has;
 *   - a table without ops.extends matches addresses byte for byte: the
 *     real answer does not bind a partial name.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "proto/conn.h"

#define MS   1000000ull
#define QMAX 64

enum { CLIENT = 0, SERVER = 1, NT = 2 };

static const uint8_t ADDR[NT][3] = { { 1, 5, 6 }, { 2, 9, 10 } };

static struct {
    em_conn_t *t[NT];
    struct {
        uint8_t to[3];
        uint8_t b[EM_HS_LEN];
    } q[QMAX];
    unsigned nq, established[NT];
    uint64_t rng, now;
    em_hs_t last_init; /* the client's last INIT */
} W;

static void emit(void *u, const uint8_t *a, uint8_t alen, const void *f, size_t len)
{
    (void)u;
    assert_int_equal(alen, 3);
    assert_int_equal(len, EM_HS_LEN);
    assert_true(W.nq < QMAX);
    memcpy(W.q[W.nq].to, a, 3);
    memcpy(W.q[W.nq].b, f, EM_HS_LEN);
    W.nq++;
    em_hs_t h;
    if (em_hs_decode(f, len, &h) == EM_HS_DEC_OK && h.type == EM_HS_INIT && (uintptr_t)u == CLIENT)
        W.last_init = h;
}
static void on_est(void *u, uint32_t idx, bool again)
{
    (void)idx;
    (void)again;
    W.established[(uintptr_t)u]++;
}
static uint64_t r64(void *u)
{
    (void)u;
    W.rng = W.rng * 6364136223846793005ull + 1442695040888963407ull;
    return W.rng >> 1 | 1;
}
/* link_udp's covers, on three bytes */
static bool extends(void *u, const uint8_t *p, uint8_t plen, const uint8_t *f, uint8_t flen)
{
    (void)u;
    return plen == 3 && flen == 3 && p[2] == 0 && f[2] != 0 && memcmp(p, f, 2) == 0;
}

static void make(bool with_extends)
{
    em_conn_ops_t ops = { .emit = emit, .established = on_est, .rand64 = r64 };
    if (with_extends)
        ops.extends = extends;
    memset(&W, 0, sizeof W);
    W.rng = 42;
    W.now = 1000 * MS;
    for (unsigned n = 0; n < NT; n++) {
        em_conn_cfg_t cfg;
        em_conn_cfg_default(&cfg);
        cfg.ep = 0;
        cfg.addr_len = 3;
        memcpy(cfg.addr, ADDR[n], 3);
        cfg.nonce = 0x100 + n;
        cfg.accept_strangers = true;
        for (unsigned i = 0; i < EM_CONN_SECRET_LEN; i++)
            cfg.secret[i] = (uint8_t)(n * 17 + i);
        W.t[n] = em_conn_create(&cfg, &ops, (void *)(uintptr_t)n);
        assert_non_null(W.t[n]);
    }
}

static int teardown(void **st)
{
    (void)st;
    for (unsigned n = 0; n < NT; n++)
        em_conn_destroy(W.t[n]);
    memset(&W, 0, sizeof W);
    return 0;
}

/* deliver what is queued (and what that sends) to the addressed tables */
static void run(void)
{
    for (unsigned i = 0; i < W.nq; i++) {
        W.now += MS / 10;
        for (unsigned n = 0; n < NT; n++)
            if (memcmp(W.q[i].to, ADDR[n], 2) == 0)
                (void)em_conn_rx(W.t[n], W.q[i].b, EM_HS_LEN, W.now);
    }
    W.nq = 0;
}

static em_conn_name_t partial_server(void)
{
    return (em_conn_name_t){ .addr_len = 3, .addr = { 2, 9, 0 }, .ep = 0, .nonce = 0 };
}

/* the client inserts the server's partial name and sends its INIT (held) */
static uint32_t start(void)
{
    em_conn_name_t nm = partial_server();
    uint32_t idx;
    assert_int_equal(em_conn_insert(W.t[CLIENT], &nm, &idx), 0);
    assert_int_equal(em_conn_connect(W.t[CLIENT], idx, W.now), 0);
    assert_int_equal(W.nq, 1);
    assert_int_equal(W.last_init.type, EM_HS_INIT);
    return idx;
}

static void assert_bound_to_server(uint32_t idx)
{
    assert_int_equal(em_conn_state(W.t[CLIENT], idx), EM_CONN_ESTABLISHED);
    em_conn_name_t got;
    assert_int_equal(em_conn_name(W.t[CLIENT], idx, &got), 0);
    assert_int_equal(got.addr_len, 3);
    assert_memory_equal(got.addr, ADDR[SERVER], 3);
    assert_int_equal(got.nonce, 0x100 + SERVER);
    assert_int_equal(em_conn_stats(W.t[CLIENT])->hs_extended, 1);
    assert_int_equal(W.established[CLIENT], 1);
    assert_int_equal(W.established[SERVER], 1);
}

static void test_partial_name_completes(void **st)
{
    (void)st;
    make(true);
    uint32_t idx = start();
    run();
    assert_bound_to_server(idx);
    /* the server took the client as a stranger at its full address */
    em_conn_name_t c = { .addr_len = 3, .ep = 0, .nonce = 0x100 + CLIENT };
    memcpy(c.addr, ADDR[CLIENT], 3);
    uint32_t sidx;
    assert_int_equal(em_conn_insert(W.t[SERVER], &c, &sidx), 0);
    assert_int_equal(em_conn_state(W.t[SERVER], sidx), EM_CONN_ESTABLISHED);
    /* the server's full name is the same peer */
    em_conn_name_t s = { .addr_len = 3, .ep = 0, .nonce = 0x100 + SERVER };
    memcpy(s.addr, ADDR[SERVER], 3);
    uint32_t again;
    assert_int_equal(em_conn_insert(W.t[CLIENT], &s, &again), 0);
    assert_int_equal(again, idx);
    assert_int_equal(em_conn_count(W.t[CLIENT]), 1);
}

/* a CHALLENGE to the client's INIT, from reply address @p from */
static int forge(const uint8_t from[3], uint64_t dst_nonce)
{
    em_hs_t h = { .type = EM_HS_CHALLENGE,
                  .src_ep = 0,
                  .dst_ep = 0,
                  .src_nonce = 0xBAD,
                  .dst_nonce = dst_nonce,
                  .src_index = EM_HS_NO_INDEX,
                  .dst_index = W.last_init.src_index,
                  .cookie_ms = 1,
                  .cookie = 0x5555,
                  .addr_len = 3 };
    memcpy(h.addr, from, 3);
    uint8_t f[EM_HS_LEN];
    em_hs_encode(&h, f);
    return em_conn_rx(W.t[CLIENT], f, sizeof f, W.now);
}

static void test_forged_answers_refused(void **st)
{
    (void)st;
    make(true);
    uint32_t idx = start();
    em_hs_t init = W.last_init;
    W.nq = 0; /* the INIT is held: the forgers answer first */
    uint64_t unexpected = em_conn_stats(W.t[CLIENT])->hs_unexpected;
    static const uint8_t other_host[3] = { 3, 9, 10 }, other_rx[3] = { 2, 8, 10 };
    assert_int_not_equal(forge(other_host, init.src_nonce), 0); /* echoes the INIT, elsewhere */
    assert_int_not_equal(forge(other_rx, init.src_nonce), 0);   /* the host, another port */
    /* the server's address, our INIT not echoed: no nonce (the decoder
     * refuses it) or another (not for us) */
    assert_int_not_equal(forge(ADDR[SERVER], 0), 0);
    assert_int_not_equal(forge(ADDR[SERVER], init.src_nonce + 1), 0);
    assert_int_equal(em_conn_stats(W.t[CLIENT])->hs_not_us, 1);
    /* an address another entry has: no entry may take it twice */
    em_conn_name_t taken = { .addr_len = 3, .addr = { 2, 9, 11 }, .ep = 0, .nonce = 0x77 };
    uint32_t tidx;
    assert_int_equal(em_conn_insert(W.t[CLIENT], &taken, &tidx), 0);
    assert_int_not_equal(forge(taken.addr, init.src_nonce), 0);
    assert_int_equal(em_conn_stats(W.t[CLIENT])->hs_unexpected, unexpected + 3);
    assert_int_equal(em_conn_stats(W.t[CLIENT])->hs_extended, 0);
    assert_int_equal(em_conn_state(W.t[CLIENT], idx), EM_CONN_INIT_SENT);
    em_conn_name_t got;
    assert_int_equal(em_conn_name(W.t[CLIENT], idx, &got), 0);
    assert_int_equal(got.nonce, 0);
    assert_memory_equal(got.addr, partial_server().addr, 3);
    assert_int_equal(W.nq, 0); /* no CONFIRM went anywhere */
    assert_int_equal(em_conn_remove(W.t[CLIENT], tidx), 0);
    /* the real server's answer binds it */
    assert_int_equal(em_conn_poll(W.t[CLIENT], W.now + 10 * MS) != UINT64_MAX, 1);
    assert_int_equal(W.nq, 1); /* the INIT again */
    run();
    assert_bound_to_server(idx);
}

static void test_without_extends_bytes_match(void **st)
{
    (void)st;
    make(false);
    uint32_t idx = start();
    run();
    assert_int_equal(em_conn_state(W.t[CLIENT], idx), EM_CONN_INIT_SENT);
    assert_int_equal(em_conn_stats(W.t[CLIENT])->hs_unexpected, 1);
    assert_int_equal(em_conn_stats(W.t[CLIENT])->hs_extended, 0);
    assert_int_equal(W.established[CLIENT], 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_partial_name_completes, teardown),
        cmocka_unit_test_teardown(test_forged_answers_refused, teardown),
        cmocka_unit_test_teardown(test_without_extends_bytes_match, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
