/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file test_name_map.c
 * proto/name_map.h: names to values, every part of a name compared.  The
 * BTLs find the vpid of a peer that completed first contact before
 * add_procs named it this way; a name that differs from a published one in
 * any part (address, endpoint index, nonce) must find nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "proto/name_map.h"

/* an address of 6 bytes (a MAC) or 12 (the udp link's IPv4 + ports) */
static em_conn_name_t name_of(uint32_t i)
{
    em_conn_name_t n = { .addr_len = (i & 1) ? 6 : 12, .ep = i % 3, .nonce = 0x9e37u * i + 1 };
    for (unsigned k = 0; k < n.addr_len; k++)
        n.addr[k] = (uint8_t)(i >> (8 * (k % 4)));
    return n;
}

static void test_every_name_found_and_nothing_else(void **st)
{
    (void)st;
    const uint32_t N = 5000;
    em_name_map_t *m = em_name_map_create(N);
    assert_non_null(m);
    for (uint32_t i = 0; i < N; i++) {
        em_conn_name_t n = name_of(i);
        assert_int_equal(em_name_map_put(m, &n, i + 7), 0);
    }
    assert_int_equal(em_name_map_count(m), N);
    for (uint32_t i = 0; i < N; i++) {
        em_conn_name_t n = name_of(i);
        uint32_t v = 0;
        assert_true(em_name_map_get(m, &n, &v));
        assert_int_equal(v, i + 7);
        /* another nonce (a restart), endpoint or address byte: nobody */
        em_conn_name_t o = n;
        o.nonce ^= 1;
        assert_false(em_name_map_get(m, &o, &v));
        o = n;
        o.ep += 3;
        assert_false(em_name_map_get(m, &o, &v));
        o = n;
        o.addr[o.addr_len - 1] ^= 0x80;
        assert_false(em_name_map_get(m, &o, &v));
        o = n;
        o.addr_len--;
        assert_false(em_name_map_get(m, &o, &v));
    }
    em_name_map_destroy(m);
}

static void test_conflicts_capacity_bad_names(void **st)
{
    (void)st;
    em_name_map_t *m = em_name_map_create(2);
    assert_non_null(m);
    em_conn_name_t a = name_of(1), b = name_of(2), c = name_of(3);
    assert_int_equal(em_name_map_put(m, &a, 1), 0);
    assert_int_equal(em_name_map_put(m, &a, 1), 0);          /* the same pair again */
    assert_int_equal(em_name_map_put(m, &a, 2), -EM_EINVAL); /* one name, two peers */
    assert_int_equal(em_name_map_put(m, &b, 2), 0);
    assert_int_equal(em_name_map_put(m, &c, 3), -EM_ENOMEM); /* beyond cap */
    em_conn_name_t bad = c;
    bad.addr_len = 0;
    assert_int_equal(em_name_map_put(m, &bad, 4), -EM_EINVAL);
    bad.addr_len = EM_CONN_ADDR_MAX + 1;
    uint32_t v;
    assert_false(em_name_map_get(m, &bad, &v));
    assert_true(em_name_map_get(m, &a, &v) && v == 1);
    assert_int_equal(em_name_map_count(m), 2);
    em_name_map_destroy(m);
    assert_false(em_name_map_get(NULL, &a, &v));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_name_found_and_nothing_else),
        cmocka_unit_test(test_conflicts_capacity_bad_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
