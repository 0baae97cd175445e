/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * How the provider resolves its link-dependent defaults from the
 * FI_ETHERMPI_* values (prov/ofi_prov.c): the window (frames in flight per
 * peer; kernel UDP sizes it in bytes at the link's frame size, the bypass
 * links keep 64 frames) and the eager limit.  emo_params is set directly,
 * as fi_param_get would have filled it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ofi_prov.h"

static void set(const char *link, int window, int window_kb, int eager)
{
    memset(&emo_params, 0, sizeof emo_params);
    emo_params.link = (char *)link;
    emo_params.window = window;
    emo_params.window_kb = window_kb;
    emo_params.eager_max = eager;
}

static void test_window(void **state)
{
    (void)state;
    /* unset on kernel UDP: 384 KiB at the link's frame size */
    set("udp", -1, 384, -1);
    assert_int_equal(emo_window(1472), EM_WINDOW_MAX); /* MTU 1500 */
    assert_int_equal(emo_window(8972), 64);            /* MTU 9000 */
    set(NULL, -1, 192, -1);                            /* no link named: udp */
    assert_int_equal(emo_window(1472), 134);
    /* unset on the bypass links: 64 frames whatever the frame size */
    set("dpdk", -1, 384, -1);
    assert_int_equal(emo_window(1500), 64);
    set("emd", -1, 384, -1);
    assert_int_equal(emo_window(9000), 64);
    /* 0 = sized in bytes on any link; a number is taken as it is */
    set("dpdk", 0, 384, -1);
    assert_int_equal(emo_window(3402), 116);
    set("udp", 16, 384, -1);
    assert_int_equal(emo_window(1472), 16);
    /* out of range: refused (the endpoint's open names both variables) */
    set("udp", (int)EM_WINDOW_MAX + 1, 384, -1);
    assert_int_equal(emo_window(1472), -1);
    set("udp", 0, 0, -1);
    assert_int_equal(emo_window(1472), -1);
    set("udp", -1, -5, -1);
    assert_int_equal(emo_window(1472), -1);
}

static void test_eager(void **state)
{
    (void)state;
    set("udp", -1, 384, -1);
    assert_int_equal(emo_eager_max(), 262144); /* the rudp BTL's */
    set("dpdk", -1, 384, -1);
    assert_int_equal(emo_eager_max(), 8192);
    set("udp", -1, 384, 0);
    assert_int_equal(emo_eager_max(), 0);
    set("dpdk", -1, 384, -1);
    assert_int_equal(emo_inject_max(), 8192); /* the eager limit ... */
    set("emd", -1, 384, 100000);
    assert_int_equal(emo_eager_max(), 100000);
    assert_int_equal(emo_inject_max(), 100000);
    set("udp", -1, 384, 4194304);
    assert_int_equal(emo_eager_max(), 4194304);
    assert_int_equal(emo_inject_max(), 262144); /* ... but an inject is a copy: 256 KiB at most */
}

int main(void)
{
    const struct CMUnitTest tests[] = { cmocka_unit_test(test_window),
                                        cmocka_unit_test(test_eager) };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
