/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of em_halo's MPI-free part (src/halo/halo_table.c): the table
 * description codec, the pairwise table comparison and the overlap check.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "halo/halo_table.h"

static const uint64_t ten_sends[10] = { 64, 128, 256, 512, 1024, 1500, 3000, 4500, 7500, 9000 };

static struct em_halo_sizes sizes(uint32_t ns, const uint64_t *s, uint32_t nr, const uint64_t *r)
{
    struct em_halo_sizes t = { ns, nr, s, r };

    return t;
}

static void test_roundtrip(void **state)
{
    uint8_t buf[EM_HALO_DESC_LEN(10, 3)];
    uint64_t out[16];
    const uint64_t recv[3] = { 1, 2, 0x7fffffff };
    struct em_halo_sizes t = sizes(10, ten_sends, 3, recv), d;
    char why[200];

    (void)state;
    assert_int_equal(em_halo_desc_encode(&t, buf, sizeof(buf)), sizeof(buf));
    /* magic "EMH1", version 1, flags 0, counts big-endian */
    assert_memory_equal(buf, "EMH1\0\1\0\0\0\0\0\12\0\0\0\3", 16);
    assert_int_equal(em_halo_desc_decode(buf, sizeof(buf), &d, out, 16, why, sizeof(why)),
                     EM_HALO_OK);
    assert_int_equal(d.nsend, 10);
    assert_int_equal(d.nrecv, 3);
    for (int i = 0; i < 10; i++)
        assert_int_equal(d.send[i], ten_sends[i]);
    for (int i = 0; i < 3; i++)
        assert_int_equal(d.recv[i], recv[i]);
    /* does not fit */
    assert_int_equal(em_halo_desc_encode(&t, buf, sizeof(buf) - 1), 0);
}

static void test_decode_rejects(void **state)
{
    uint8_t buf[EM_HALO_DESC_LEN(2, 1)], bad[sizeof(buf)];
    const uint64_t s[2] = { 8, 16 }, r[1] = { 32 };
    struct em_halo_sizes t = sizes(2, s, 1, r), d;
    uint64_t out[8];
    char why[200];

    (void)state;
    assert_int_equal(em_halo_desc_encode(&t, buf, sizeof(buf)), sizeof(buf));
    /* short */
    assert_int_equal(em_halo_desc_decode(buf, 15, &d, out, 8, why, sizeof(why)), EM_HALO_EPROTO);
    assert_non_null(strstr(why, "shorter"));
    /* one size missing / one byte extra */
    assert_int_equal(em_halo_desc_decode(buf, sizeof(buf) - 8, &d, out, 8, why, sizeof(why)),
                     EM_HALO_EPROTO);
    /* wrong magic */
    memcpy(bad, buf, sizeof(buf));
    bad[0] ^= 1;
    assert_int_equal(em_halo_desc_decode(bad, sizeof(bad), &d, out, 8, why, sizeof(why)),
                     EM_HALO_EPROTO);
    assert_non_null(strstr(why, "magic"));
    /* other version, flags */
    memcpy(bad, buf, sizeof(buf));
    bad[5] = 2;
    assert_int_equal(em_halo_desc_decode(bad, sizeof(bad), &d, out, 8, why, sizeof(why)),
                     EM_HALO_EPROTO);
    memcpy(bad, buf, sizeof(buf));
    bad[7] = 1;
    assert_int_equal(em_halo_desc_decode(bad, sizeof(bad), &d, out, 8, why, sizeof(why)),
                     EM_HALO_EPROTO);
    /* huge count (would overflow a naive length computation) */
    memcpy(bad, buf, sizeof(buf));
    bad[8] = 0xff;
    assert_int_equal(em_halo_desc_decode(bad, sizeof(bad), &d, out, 8, why, sizeof(why)),
                     EM_HALO_EPROTO);
    /* size 0 and size above INT_MAX */
    memcpy(bad, buf, sizeof(buf));
    memset(bad + 16, 0, 8);
    assert_int_equal(em_halo_desc_decode(bad, sizeof(bad), &d, out, 8, why, sizeof(why)),
                     EM_HALO_EPROTO);
    assert_non_null(strstr(why, "send item 0 has size 0"));
    memcpy(bad, buf, sizeof(buf));
    bad[16 + 16 + 3] = 1; /* receive item 0: 2^32 + 32 */
    assert_int_equal(em_halo_desc_decode(bad, sizeof(bad), &d, out, 8, why, sizeof(why)),
                     EM_HALO_EPROTO);
    assert_non_null(strstr(why, "receive item 0"));
    /* no room */
    assert_int_equal(em_halo_desc_decode(buf, sizeof(buf), &d, out, 2, why, sizeof(why)),
                     EM_HALO_EPROTO);
    /* NULL message buffer is allowed */
    assert_int_equal(em_halo_desc_decode(buf, 3, &d, out, 8, NULL, 0), EM_HALO_EPROTO);
}

static void test_compare_ok(void **state)
{
    const uint64_t r[2] = { 100, 200 };
    struct em_halo_sizes mine = sizes(10, ten_sends, 2, r);
    struct em_halo_sizes theirs = sizes(2, r, 10, ten_sends);
    char msg[300] = "";

    (void)state;
    assert_int_equal(em_halo_table_compare(0, 1, &mine, &theirs, msg, sizeof(msg)), EM_HALO_OK);
    assert_int_equal(em_halo_table_compare(1, 0, &theirs, &mine, msg, sizeof(msg)), EM_HALO_OK);
    /* one-way pairs: one side only sends */
    mine = sizes(10, ten_sends, 0, NULL);
    theirs = sizes(0, NULL, 10, ten_sends);
    assert_int_equal(em_halo_table_compare(0, 1, &mine, &theirs, msg, sizeof(msg)), EM_HALO_OK);
    assert_int_equal(em_halo_table_compare(1, 0, &theirs, &mine, msg, sizeof(msg)), EM_HALO_OK);
}

/* Rank me's table against peer's is refused with exactly this message. */
static void mismatch_says(int me, int peer, const struct em_halo_sizes *mine,
                          const struct em_halo_sizes *theirs, const char *want)
{
    char msg[300];

    assert_int_equal(em_halo_table_compare(me, peer, mine, theirs, msg, sizeof(msg)),
                     EM_HALO_EMISMATCH);
    assert_string_equal(msg, want);
}

static void test_compare_count_mismatch(void **state)
{
    struct em_halo_sizes a = sizes(10, ten_sends, 0, NULL); /* rank 3 sends 10 */
    struct em_halo_sizes b = sizes(0, NULL, 9, ten_sends);  /* rank 4 expects 9 */

    (void)state;
    mismatch_says(3, 4, &a, &b,
                  "table mismatch with neighbour rank 4: rank 3 has 10 send "
                  "item(s) for it, but rank 4 has 9 receive item(s) for rank 3");
    mismatch_says(4, 3, &b, &a,
                  "table mismatch with neighbour rank 3: rank 4 has 9 receive "
                  "item(s) for it, but rank 3 has 10 send item(s) for rank 4");
}

static void test_compare_size_mismatch(void **state)
{
    uint64_t other[10];
    struct em_halo_sizes a, b;
    char msg[300];

    (void)state;
    memcpy(other, ten_sends, sizeof(other));
    other[7] = 7000; /* item 7: 4500 vs 7000 */
    a = sizes(10, ten_sends, 10, ten_sends);
    b = sizes(10, ten_sends, 10, other);
    /* rank 0 sends item 7 with 4500, rank 1 receives 7000 */
    mismatch_says(0, 1, &a, &b,
                  "table mismatch with neighbour rank 1: send item 7 is 4500 "
                  "bytes on rank 0, but receive item 7 is 7000 bytes on rank 1");
    mismatch_says(1, 0, &b, &a,
                  "table mismatch with neighbour rank 0: receive item 7 is 7000 "
                  "bytes on rank 1, but send item 7 is 4500 bytes on rank 0");
    /* the first differing item is named, not a later one */
    other[2] = 1;
    assert_int_equal(em_halo_table_compare(1, 0, &b, &a, msg, sizeof(msg)), EM_HALO_EMISMATCH);
    assert_non_null(strstr(msg, "receive item 2 is 1 bytes"));
    /* a short message buffer truncates, never overflows */
    assert_int_equal(em_halo_table_compare(1, 0, &b, &a, msg, 10), EM_HALO_EMISMATCH);
    assert_int_equal(strlen(msg), 9);
}

static struct em_halo_span sp(uintptr_t a, uint64_t n, int peer, int idx, int recv)
{
    struct em_halo_span s = { a, n, peer, idx, recv };

    return s;
}

/* em_halo_check_overlap cases: spans {addr, bytes, peer, item, recv}, the
 * verdict, and up to two phrases the refusal must contain. */
static const struct overlap_case {
    const char *what;
    struct em_halo_span s[3];
    size_t n;
    int want;
    const char *says[2];
} overlap_cases[] = {
    { "disjoint, any order",
      { { 0x3000, 0x100, 1, 0, 1 }, { 0x1000, 0x100, 1, 0, 0 }, { 0x2000, 0x1000, 2, 0, 1 } },
      3,
      EM_HALO_OK,
      { NULL } },
    { "send items may share memory (one plane to two neighbours)",
      { { 0x1000, 0x100, 1, 0, 0 }, { 0x1000, 0x100, 2, 0, 0 }, { 0x1080, 0x100, 2, 1, 0 } },
      3,
      EM_HALO_OK,
      { NULL } },
    { "two receive items overlapping",
      { { 0x1000, 0x100, 1, 0, 1 }, { 0x10ff, 0x100, 2, 3, 1 } },
      2,
      EM_HALO_EINVAL,
      { "receive item 0 for neighbour rank 1", "receive item 3 for neighbour rank 2" } },
    /* the sweep must remember the long item across the short one */
    { "a receive inside a long send item, a short send in between",
      { { 0x1000, 0x1000, 1, 0, 0 }, { 0x1100, 0x10, 1, 1, 0 }, { 0x1800, 0x10, 2, 0, 1 } },
      3,
      EM_HALO_EINVAL,
      { "send item 0 for neighbour rank 1" } },
    { "a send inside a long receive item, a send in between",
      { { 0x1000, 0x1000, 1, 0, 1 }, { 0x0f00, 0x80, 1, 1, 0 }, { 0x1f00, 0x10, 2, 0, 0 } },
      3,
      EM_HALO_EINVAL,
      { NULL } },
    { "same start",
      { { 0x1000, 8, 1, 0, 0 }, { 0x1000, 8, 1, 0, 1 } },
      2,
      EM_HALO_EINVAL,
      { NULL } },
    { "empty", { { 0 } }, 0, EM_HALO_OK, { NULL } },
    { "single", { { 0x1000, 8, 1, 0, 0 } }, 1, EM_HALO_OK, { NULL } },
};

static void test_overlap(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof overlap_cases / sizeof overlap_cases[0]; k++) {
        const struct overlap_case *c = &overlap_cases[k];
        struct em_halo_span s[3];
        char msg[400] = "";

        memcpy(s, c->s, sizeof s);
        print_message("  %s\n", c->what);
        assert_int_equal(em_halo_check_overlap(s, c->n, msg, sizeof(msg)), c->want);
        for (int m = 0; m < 2; m++)
            if (c->says[m])
                assert_non_null(strstr(msg, c->says[m]));
    }
}

/* Brute force against the sweep on many small random layouts. */
static void test_overlap_random(void **state)
{
    uint32_t x = 12345;

    (void)state;
    for (int round = 0; round < 20000; round++) {
        struct em_halo_span s[6];
        int n = 1 + (int)(x % 6), want = EM_HALO_OK;
        char msg[400];

        for (int i = 0; i < n; i++) {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            s[i] = sp(64 + (x % 64), 1 + (x >> 8) % 16, 1, i, (int)((x >> 16) & 1));
        }
        for (int i = 0; i < n; i++)
            for (int j = i + 1; j < n; j++)
                if ((s[i].is_recv || s[j].is_recv) && s[i].addr < s[j].addr + s[j].size &&
                    s[j].addr < s[i].addr + s[i].size)
                    want = EM_HALO_EINVAL;
        assert_int_equal(em_halo_check_overlap(s, (size_t)n, msg, sizeof(msg)), want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_decode_rejects),
        cmocka_unit_test(test_compare_ok),
        cmocka_unit_test(test_compare_count_mismatch),
        cmocka_unit_test(test_compare_size_mismatch),
        cmocka_unit_test(test_overlap),
        cmocka_unit_test(test_overlap_random),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
