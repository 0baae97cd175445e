/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Peer numbers above 16 bits: three engines of a job of 100,001 endpoints
 * (npeers 100,001), numbered 3, 70,000 and 100,000, over link_sim with
 * loss, duplication and reordering, with the source check on.  Each sends
 * every other one verified messages of 4 B - 20 KB (one frame to
 * fourteen); every message must arrive once, in order, whole, from the
 * sender's full 32-bit number (the sender writes that number into the
 * message too, and 70,000 and 100,000 taken to 16 bits are 4,464 and
 * 34,464, peers nobody set).  Then frames naming 70,000 from another
 * address, and naming 4,464, are refused by source.  And the links' peer
 * tables and address maps (link_util) with such numbers.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/engine.h"
#include "link/link_sim.h"
#include "link/link_util.h"
#include "proto/wire.h"

#define NEND   3
#define NPEERS 100001u
#define NMSG   30 /* per ordered pair */

static const uint32_t ID[NEND] = { 3, 70000, 100000 };

static em_sim_t *SIM;
static em_engine_t *E[NEND];

struct inbox {
    unsigned me;
    unsigned got[NEND]; /* messages received, by sender (index into ID) */
    unsigned bad;
};
static struct inbox IN[NEND];
static unsigned done_ops;

static int slot_of(uint32_t id)
{
    for (int i = 0; i < NEND; i++)
        if (ID[i] == id)
            return i;
    return -1;
}

static size_t size_of(unsigned seq) { return (size_t[]){ 4, 100, 1500, 9000, 20000 }[seq % 5]; }

static uint8_t pattern(unsigned from, unsigned to, unsigned seq, size_t i)
{
    return (uint8_t)(from * 31 + to * 17 + seq * 7 + i);
}

static void fill(uint8_t *b, unsigned from, unsigned to, unsigned seq)
{
    size_t len = size_of(seq);
    for (size_t i = 0; i < len; i++)
        b[i] = pattern(from, to, seq, i);
    memcpy(b, &ID[from], 4); /* the sender's number, in full */
}

static void on_recv(void *u, uint32_t peer, uint8_t tag, const void *d, size_t len)
{
    struct inbox *in = u;
    int from = slot_of(peer);
    if (from < 0 || (unsigned)from == in->me || tag != 9) {
        in->bad++;
        return;
    }
    unsigned seq = in->got[from]++;
    uint8_t *want = malloc(size_of(seq));
    fill(want, (unsigned)from, in->me, seq);
    if (len != size_of(seq) || memcmp(d, want, len) != 0)
        in->bad++;
    free(want);
}

static void on_complete(void *u, void *ctx, int status)
{
    (void)u, (void)ctx;
    assert_int_equal(status, 0);
    done_ops++;
}

static uint64_t pair_key(unsigned a, unsigned b)
{
    return 0xA5A5000000000000ull ^ ((uint64_t)ID[a < b ? a : b] << 24) ^ ID[a < b ? b : a];
}

static void world(double loss, double dup, double reorder)
{
    em_sim_cfg_t sc;
    em_sim_cfg_default(&sc);
    sc.mtu = 1500;
    sc.loss = loss;
    sc.dup = dup;
    sc.reorder = reorder;
    sc.seed = 5;
    SIM = em_sim_create(NEND, &sc);
    assert_non_null(SIM);
    for (unsigned n = 0; n < NEND; n++) {
        em_proto_cfg_t pc;
        em_proto_cfg_default(&pc);
        pc.self = ID[n];
        pc.npeers = NPEERS;
        pc.window = 8; /* small rings for the peers that go active */
        pc.frame_max = sc.mtu;
        pc.max_msg = 64 * 1024;
        pc.peers_need_set = 1;
        pc.bind_source = 1;
        if (n == 0)
            print_message("per-peer tables: %zu bytes x %u peers per engine\n",
                          em_engine_peer_bytes(&pc), NPEERS);
        memset(&IN[n], 0, sizeof IN[n]);
        IN[n].me = n;
        em_engine_ops_t ops = { .recv = on_recv, .complete = on_complete };
        int e;
        E[n] = em_engine_create(em_sim_link(SIM, n), &pc, &ops, &IN[n], &e);
        assert_non_null(E[n]);
    }
    for (unsigned x = 0; x < NEND; x++)
        for (unsigned y = 0; y < NEND; y++) {
            if (x == y)
                continue;
            assert_int_equal(em_engine_set_peer(E[x], ID[y], &em_sim_link(SIM, y)->local), 0);
            assert_int_equal(em_engine_set_peer_keys(E[x], ID[y], pair_key(x, y), 100 + x, 100 + y),
                             0);
            assert_int_equal(em_engine_set_peer_index(E[x], ID[y], ID[x]), 0);
        }
    done_ops = 0;
}

static void end_world(void)
{
    for (unsigned n = 0; n < NEND; n++)
        em_engine_destroy(E[n]);
    em_sim_destroy(SIM);
}

static void round_(void)
{
    em_sim_set_now(SIM, em_now_ns());
    for (unsigned n = 0; n < NEND; n++)
        (void)em_engine_progress(E[n]);
}

static uint8_t *BUF[NEND][NEND][NMSG];
static em_proto_op_t OPS[NEND][NEND][NMSG];

static void exchange(double loss, double dup, double reorder)
{
    world(loss, dup, reorder);
    for (unsigned seq = 0; seq < NMSG; seq++)
        for (unsigned x = 0; x < NEND; x++)
            for (unsigned y = 0; y < NEND; y++) {
                if (x == y)
                    continue;
                uint8_t *b = BUF[x][y][seq] = malloc(size_of(seq));
                fill(b, x, y, seq);
                int rc;
                while ((rc = em_engine_send(E[x], &OPS[x][y][seq], ID[y], 9, b, size_of(seq),
                                            NULL)) == -EM_EAGAIN)
                    round_();
                assert_int_equal(rc, 0);
            }
    const unsigned want = NEND * (NEND - 1) * NMSG;
    for (long i = 0; done_ops < want; i++) {
        assert_true(i < 5000000L);
        round_();
    }
    for (unsigned n = 0; n < NEND; n++) {
        assert_int_equal(IN[n].bad, 0);
        for (unsigned f = 0; f < NEND; f++)
            assert_int_equal(IN[n].got[f], f == n ? 0 : NMSG);
        const em_proto_stats_t *st = em_engine_proto_stats(E[n]);
        assert_int_equal(st->drop_endpoint, 0);
        assert_int_equal(st->drop_source, 0);
        assert_int_equal(st->drop_job_key, 0);
    }
    if (loss > 0)
        assert_true(em_sim_stats(SIM)->lost > 0);
    for (unsigned x = 0; x < NEND; x++)
        for (unsigned y = 0; y < NEND; y++)
            for (unsigned seq = 0; seq < NMSG; seq++) {
                free(BUF[x][y][seq]);
                BUF[x][y][seq] = NULL;
            }
}

static void clean(void **state)
{
    (void)state;
    exchange(0, 0, 0);
    end_world();
}

static void lossy(void **state)
{
    (void)state;
    exchange(0.05, 0.01, 0.02);
    end_world();
}

/* node 0 (peer 3) sends 100,000 an ACK naming 70,000 (index 70,000, the
 * pair's key): its address is not 70,000's, so it is refused by source;
 * the same with index 4,464 (70,000 in 16 bits), a peer nobody set */
static void forged(void **state)
{
    (void)state;
    exchange(0, 0, 0);
    const uint32_t claim[2] = { 70000, 70000 & 0xFFFFu };
    for (unsigned k = 0; k < 2; k++) {
        em_link_t *x = em_sim_link(SIM, 0);
        em_pkt_t *p = em_link_tx_alloc(x);
        assert_non_null(p);
        em_hdr_t h = { .type = EM_PT_ACK, .index = claim[k], .job_key = pair_key(1, 2), .ack = 1 };
        p->len = (uint32_t)em_hdr_encode(&h, p->data);
        p->peer = ID[2];
        assert_int_equal(em_link_tx_burst(x, &p, 1), 1);
        uint64_t before = em_engine_proto_stats(E[2])->drop_source;
        for (int i = 0; i < 100; i++)
            round_();
        assert_int_equal(em_engine_proto_stats(E[2])->drop_source, before + 1);
    }
    end_world();
}

/* the links' peer tables and source-address maps hold 32-bit peers */
static void tables(void **state)
{
    (void)state;
    uint32_t *tab = NULL, n = 0;
    assert_int_equal(em_peer_table_reserve((void **)&tab, &n, sizeof *tab, 100000), 0);
    assert_true(n > 100000);
    for (uint32_t i = 0; i < n; i++)
        assert_int_equal(tab[i], 0);
    assert_int_equal(em_peer_table_reserve((void **)&tab, &n, sizeof *tab, EM_LINK_PEER_UNKNOWN),
                     -EINVAL);
    free(tab);
    /* past 2^31 the doubling must not wrap (it looped forever in 32 bits):
     * a table too large for memory is refused at once */
    void *big = NULL;
    n = 0;
    assert_int_equal(em_peer_table_reserve(&big, &n, SIZE_MAX / 4, 0xFFFFFFFEu), -ENOMEM);
    assert_int_equal(n, 0);
    em_addr_map_t m = { 0 };
    assert_int_equal(em_addr_map_put(&m, 11, 100000), 0);
    assert_int_equal(em_addr_map_put(&m, 12, 0xFFFFFFFEu), 0);
    assert_int_equal(em_addr_map_put(&m, 13, 70000 & 0xFFFFu), 0);
    assert_int_equal(em_addr_map_get(&m, 11), 100000);
    assert_int_equal(em_addr_map_get(&m, 12), 0xFFFFFFFEu);
    assert_int_equal(em_addr_map_get(&m, 13), 4464);
    assert_int_equal(em_addr_map_get(&m, 14), EM_LINK_PEER_UNKNOWN);
    em_addr_map_del(&m, 11, 100000);
    assert_int_equal(em_addr_map_get(&m, 11), EM_LINK_PEER_UNKNOWN);
    assert_int_equal(em_addr_map_get(&m, 12), 0xFFFFFFFEu);
    em_addr_map_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(clean),
        cmocka_unit_test(lossy),
        cmocka_unit_test(forged),
        cmocka_unit_test(tables),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
