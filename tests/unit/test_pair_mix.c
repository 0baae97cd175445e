/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The pair-key mixer (src/util/pair_mix.h) with the BTLs' and the
 * provider's constants.  The keys are on the wire, so the expected values
 * are pinned: they were computed by the two private mixers the BTL and the
 * provider had before they shared this one, and must never change.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "util/pair_mix.h"

static const struct {
    uint64_t a;
    uint32_t ia;
    uint64_t b;
    uint32_t ib;
    uint64_t btl, ofi; /* the key with EM_PAIR_MIX_BTL, EM_PAIR_MIX_OFI */
} pinned[] = {
    { 0, 0, 0, 1, 0x0DB00D3D0DB56F2Cull, 0xE1F04D67CE4CF093ull },
    { 111, 1, 222, 2, 0xB2AE8B75E0C01C35ull, 0x24EC7B3C5174CAF2ull },
    { 0x0123456789ABCDEFull, 7, 0xFEDCBA9876543210ull, 3, 0x75E31E944FA3A4E5ull,
      0xB63273263CDD1146ull },
    { ~0ull, 65535, 1, 0, 0x0F70E6CAFABDCEEFull, 0x33292AF9737515CEull },
};

static void test_pinned_values(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof pinned / sizeof pinned[0]; i++) {
        uint64_t btl = em_pair_mix(pinned[i].a, pinned[i].ia, pinned[i].b, pinned[i].ib,
                                   EM_PAIR_MIX_BTL);
        uint64_t ofi = em_pair_mix(pinned[i].a, pinned[i].ia, pinned[i].b, pinned[i].ib,
                                   EM_PAIR_MIX_OFI);
        assert_true(btl == pinned[i].btl);
        assert_true(ofi == pinned[i].ofi);
    }
}

static void test_both_sides_agree(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof pinned / sizeof pinned[0]; i++) {
        uint64_t k = em_pair_mix(pinned[i].b, pinned[i].ib, pinned[i].a, pinned[i].ia,
                                 EM_PAIR_MIX_BTL);
        assert_true(k == pinned[i].btl);
    }
    /* another pair (one secret differs): another key */
    assert_true(em_pair_mix(111, 1, 333, 2, EM_PAIR_MIX_BTL) != pinned[1].btl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pinned_values),
        cmocka_unit_test(test_both_sides_agree),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
