/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The daemon's data plane (emd_core, no DPDK) over a capturing fake port:
 *   - the ring geometry is the daemon's: rewriting it in the region changes
 *     nothing, a frame still leaves from the real slot;
 *   - impossible indices doom the client, with the reason;
 *   - eager ACKs only on registered flows, from any ISN (wrapping), with the
 *     registered keys, only for frames that pass the protocol's stateless
 *     checks; an unregistered flow is never acknowledged;
 *   - the node table ages out idle entries and refuses when all are young;
 *     broadcast destinations are refused;
 *   - a forged hello with another layout does not decide for the real one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "daemon/emd_core.h"
#include "emd_abi/emd_ring.h"
#include "proto/wire.h"

#include "fake_port.h"

#define MTU      1000u
#define PORT_MTU (MTU + EMD_WIRE_HDR_LEN)
#define RX       (1u << 16)
#define SLOTS    16u

static const uint8_t MAC[6] = { 2, 0xe7, 0, 0, 0, 1 };
static const uint8_t NODE2[6] = { 2, 0xe7, 0, 0, 0, 2 };

struct cap {
    fake_port_t port;
    uint8_t sent[64][PORT_MTU];
    uint32_t sent_len[64];
    uint32_t sent_peer[64];
    unsigned nsent;
    uint8_t peer_mac[16][6];
};
static struct cap P;

static unsigned c_burst(em_link_t *l, em_pkt_t **p, unsigned n)
{
    for (unsigned k = 0; k < n; k++) {
        assert_true(P.nsent < 64);
        memcpy(P.sent[P.nsent], p[k]->data, p[k]->len);
        P.sent_len[P.nsent] = p[k]->len;
        P.sent_peer[P.nsent++] = p[k]->peer;
        fake_port_tx_free(l, p[k]);
    }
    return n;
}
static int c_peer(em_link_t *l, uint32_t peer, const em_link_addr_t *a)
{
    (void)l;
    assert_true(peer < 16);
    memcpy(P.peer_mac[peer], a->bytes, 6);
    return 0;
}
static const em_link_ops_t OPS = { .name = "cap",
                                   .tx_alloc = fake_port_tx_alloc,
                                   .tx_burst = c_burst,
                                   .tx_free = fake_port_tx_free,
                                   .rx_burst = fake_port_rx_burst,
                                   .rx_release = fake_port_rx_release,
                                   .flush = em_link_flush_none,
                                   .set_peer = c_peer,
                                   .close = fake_port_close };

static emd_core_t C;
static struct emd_shm_hdr *R[2];
static uint64_t SZ;
static emd_ring_t T[2]; /* the clients' ends of their tx rings */

static void setup(uint32_t max_nodes)
{
    memset(&P, 0, sizeof P);
    assert_int_equal(fake_port_init(&P.port, &OPS, PORT_MTU, 64), 0);
    memset(&C, 0, sizeof C);
    C.now_ns = 1000;
    assert_int_equal(emd_core_init(&C, &P.port.link, MAC, MTU, 2, 16, max_nodes, 1), 0);
    uint32_t ss;
    SZ = emd_shm_size(MTU, RX, SLOTS, &ss);
    for (unsigned k = 0; k < 2; k++) {
        R[k] = aligned_alloc(64, (SZ + 63) & ~63ull);
        memset(R[k], 0, SZ);
        emd_shm_init(R[k], SZ, MTU, RX, SLOTS, 7, (uint16_t)(10 + k), MAC);
        assert_int_equal(emd_core_attach(&C, k, 50 + (int)k, R[k], SZ, RX, SLOTS,
                                         (uint16_t)(10 + k), 100 + k, 0, EMD_BULKQ_NO_SLOT),
                         0);
        emd_ring_init_tx(&T[k], R[k]); /* the client's end of its tx ring */
    }
}

static void teardown(void)
{
    for (unsigned k = 0; k < 2; k++) {
        emd_core_forget(&C, k);
        free(R[k]);
    }
    emd_core_fini(&C);
}

/** Client @p k queues a frame of @p len bytes to (mac, ep) in its real next slot. */
static void tx(unsigned k, const uint8_t mac[6], uint16_t ep, const uint8_t *f, uint32_t len)
{
    assert_true(emd_slots_sp_room(&T[k]) > 0);
    uint8_t *s = emd_slots_sp_next(&T[k]);
    struct emd_slot_hdr sh = { .len = len, .endpoint = ep };
    memcpy(sh.mac, mac, 6);
    memcpy(s, &sh, sizeof sh);
    memcpy(s + sizeof sh, f, len);
    emd_slots_sp_enqueue(&T[k]);
}

/** A frame from node @p node, endpoint @p src, for endpoint @p dst arrives on the port. */
static void port_frame_from(const uint8_t node[6], uint16_t src, uint16_t dst, const em_hdr_t *h,
                            const char *payload)
{
    em_pkt_t *p = fake_port_take(&P.port);
    assert_non_null(p);
    size_t n = em_hdr_encode(h, p->data + EMD_WIRE_HDR_LEN);
    memcpy(p->data + EMD_WIRE_HDR_LEN + n, payload, h->len);
    emd_shim_t sh = { .cls = h->type == EM_PT_PUT ? EMD_CLS_BULK : EMD_CLS_DATA,
                      .len = (uint16_t)(n + h->len),
                      .dst = dst,
                      .src = src };
    memcpy(sh.src_mac, node, 6);
    emd_wire_encode(p->data, &sh);
    p->len = (uint32_t)(EMD_WIRE_HDR_LEN + n + h->len);
    fake_port_arrive(&P.port, p);
    (void)emd_core_poll_port(&C);
}

/** A frame from node 2 (endpoint 77) for endpoint @p dst arrives on the port. */
static void port_frame(uint16_t dst, const em_hdr_t *h, const char *payload)
{
    port_frame_from(NODE2, 77, dst, h, payload);
}

static em_hdr_t dat(uint64_t key, uint32_t seq, const char *s)
{
    uint16_t n = (uint16_t)strlen(s);
    em_hdr_t h = {
        .type = EM_PT_DATA, .index = 2, .seq = seq, .len = n, .msg_len = n, .frag_cnt = 1
    };
    h.job_key = key;
    return h;
}

/** A one-fragment DATA frame from rank 2 to rank 1 (endpoint 10) off the port. */
static void port_data(uint64_t key, uint32_t seq, const char *s)
{
    em_hdr_t h = dat(key, seq, s);
    port_frame(10, &h, s);
}

static void test_geometry_is_the_daemons(void **st)
{
    (void)st;
    setup(8);
    R[0]->tx_off = 0xfff00000u;
    R[0]->tx_slots = 1u << 31;
    R[0]->slot_size = 0x100000;
    R[0]->rx_off = 0x20000000;
    R[0]->rx_size = 1u << 31;
    tx(0, NODE2, 5, (const uint8_t *)"hello", 5);
    assert_int_equal(emd_core_drain(&C, 0), 1);
    assert_int_equal(P.nsent, 1);
    assert_int_equal(P.sent_len[0], EMD_WIRE_HDR_LEN + 5);
    assert_memory_equal(P.sent[0] + EMD_WIRE_HDR_LEN, "hello", 5);
    /* to a client on this node: into its real rx ring */
    tx(0, MAC, 11, (const uint8_t *)"local", 5);
    assert_int_equal(emd_core_drain(&C, 0), 1);
    assert_int_equal(atomic_load(&R[1]->rx.tail), emd_rec_size(5));
    assert_memory_equal((uint8_t *)R[1] + EMD_SHM_RX_OFF + 16, "local", 5);
    assert_int_equal(emd_core_take_doomed(&C), -1);
    teardown();
}

static void test_impossible_indices_doom(void **st)
{
    (void)st;
    setup(8);
    atomic_store(&R[0]->tx.tail, SLOTS + 1); /* more than the ring ahead */
    assert_int_equal(emd_core_drain(&C, 0), 0);
    assert_int_equal(emd_core_take_doomed(&C), 0);
    assert_non_null(strstr(C.cl[0].doomed, "tx.tail"));
    atomic_store(&R[1]->rx.head, 4096); /* ahead of the daemon's tail */
    em_hdr_t h = dat(9, 0, "x");
    port_frame(11, &h, "x");
    assert_non_null(C.cl[1].doomed);
    assert_non_null(strstr(C.cl[1].doomed, "rx.head"));
    assert_int_equal(atomic_load(&R[1]->rx.tail), 0); /* nothing written */
    teardown();
}

static void test_eager_acks_only_registered_and_checked(void **st)
{
    (void)st;
    setup(8);
    const uint64_t RXK = 0x1111222233334444ull & 0xffffffffu, TXK = 0x55667788u;
    /* not registered: delivered, never acknowledged (no ISN assumed) */
    port_data(RXK, 0, "a");
    assert_int_equal(P.nsent, 0);
    assert_int_equal(atomic_load(&R[0]->st.rx_delivered), 1);
    struct emd_ctl_flow f = { .rx_key = RXK,
                              .tx_key = TXK,
                              .rx_next = 0xfffffffeu,
                              .tx_next = 0x1234,
                              .frame_max = MTU,
                              .self = 1,
                              .peer = 2,
                              .peer_ep = 77,
                              .remote_index = 7 }; /* not 1: the daemon must not assume it */
    memcpy(f.peer_node, NODE2, 6);
    const char *why;
    assert_int_equal(emd_core_add_flow(&C, 0, &f, &why), 0);
    /* the next in order with the right key and ids, from another endpoint of
     * node 2 and from another node: the rank's source check drops them
     * (drop_source), so no ACK, or the true frame would be a "duplicate" */
    em_hdr_t forged = dat(RXK, 0xfffffffeu, "z");
    port_frame_from(NODE2, 78, 10, &forged, "z");
    uint8_t other[6];
    memcpy(other, NODE2, 6);
    other[5] ^= 0x40;
    port_frame_from(other, 77, 10, &forged, "z");
    assert_int_equal(P.nsent, 0);
    assert_int_equal(C.ack_wrong_source, 2);
    assert_int_equal(C.ack_refused, 2);
    C.ack_refused = 0;
    /* in order, right key: delivered and acknowledged with the registered key */
    port_data(RXK, 0xfffffffeu, "b");
    assert_int_equal(P.nsent, 1);
    em_hdr_t a;
    assert_int_equal(
        em_hdr_decode(P.sent[0] + EMD_WIRE_HDR_LEN, P.sent_len[0] - EMD_WIRE_HDR_LEN, &a),
        EM_DEC_OK);
    assert_int_equal(a.type, EM_PT_ACK);
    assert_true((uint64_t)a.job_key == TXK);
    assert_int_equal(a.index, 7); /* the peer's number of the client (FLOW's remote_index) */
    assert_int_equal(a.ack, 0xffffffffu);
    assert_int_equal(a.seq, 0x1234);
    assert_memory_equal(P.peer_mac[P.sent_peer[0]], NODE2, 6);
    /* wrong key: delivered (the rank refuses it), not acknowledged */
    port_data(0xbad, 0xffffffffu, "c");
    assert_int_equal(P.nsent, 1);
    /* a message length the rank refuses: not acknowledged */
    em_hdr_t big = dat(RXK, 0xffffffffu, "d");
    big.msg_len = 5000;
    big.frag_cnt = 2;
    port_frame(10, &big, "d");
    assert_int_equal(P.nsent, 1);
    assert_int_equal(C.ack_refused, 2);
    /* the next in order (across the wrap) is */
    port_data(RXK, 0xffffffffu, "e");
    assert_int_equal(P.nsent, 2);
    assert_int_equal(
        em_hdr_decode(P.sent[1] + EMD_WIRE_HDR_LEN, P.sent_len[1] - EMD_WIRE_HDR_LEN, &a),
        EM_DEC_OK);
    assert_int_equal(a.ack, 0);
    /* a duplicate: dropped, acknowledged again */
    uint64_t before = atomic_load(&R[0]->st.rx_delivered);
    port_data(RXK, 0xfffffffeu, "b");
    assert_int_equal(atomic_load(&R[0]->st.rx_delivered), before);
    assert_int_equal(P.nsent, 3);
    /* the client's own frames move the flow (its ACK) and the seq it says */
    em_hdr_t out = { .type = EM_PT_ACK, .index = 7, .seq = 0x2000, .ack = 5 };
    out.job_key = (uint32_t)TXK;
    uint8_t b[EM_HDR_LEN];
    /* ... not one to another address, or naming another index */
    out.ack = 9;
    em_hdr_encode(&out, b);
    tx(0, NODE2, 78, b, EM_HDR_LEN);
    emd_core_drain(&C, 0);
    out.index = 1;
    em_hdr_encode(&out, b);
    tx(0, NODE2, 77, b, EM_HDR_LEN);
    emd_core_drain(&C, 0);
    out.index = 7;
    out.ack = 5;
    em_hdr_encode(&out, b);
    tx(0, NODE2, 77, b, EM_HDR_LEN);
    emd_core_drain(&C, 0);
    port_data(RXK, 5, "f");
    assert_int_equal(em_hdr_decode(P.sent[P.nsent - 1] + EMD_WIRE_HDR_LEN,
                                   P.sent_len[P.nsent - 1] - EMD_WIRE_HDR_LEN, &a),
                     EM_DEC_OK);
    assert_int_equal(a.type, EM_PT_ACK);
    assert_int_equal(a.ack, 6);
    assert_int_equal(a.seq, 0x2000);
    /* the peer moved (FLOW again, another endpoint): the client's frames are
     * matched to the flow by the new address only */
    f.peer_ep = 78;
    f.rx_next = 6;
    assert_int_equal(emd_core_add_flow(&C, 0, &f, &why), 0);
    out.ack = 20;
    em_hdr_encode(&out, b);
    tx(0, NODE2, 77, b, EM_HDR_LEN); /* the old address: moves nothing */
    emd_core_drain(&C, 0);
    out.ack = 8;
    em_hdr_encode(&out, b);
    tx(0, NODE2, 78, b, EM_HDR_LEN);
    emd_core_drain(&C, 0);
    em_hdr_t moved = dat(RXK, 8, "g");
    port_frame_from(NODE2, 78, 10, &moved, "g");
    assert_int_equal(em_hdr_decode(P.sent[P.nsent - 1] + EMD_WIRE_HDR_LEN,
                                   P.sent_len[P.nsent - 1] - EMD_WIRE_HDR_LEN, &a),
                     EM_DEC_OK);
    assert_int_equal(a.ack, 9);
    /* bad registrations are refused */
    f.frame_max = MTU + 1;
    assert_int_equal(emd_core_add_flow(&C, 0, &f, &why), -1);
    teardown();
}

/* Injected receive loss (emd --rx-loss): drawn from util/loss.h's seeded
 * stream, once per port frame that is not a hello, so the same seed drops
 * the same frames; a fraction of 0 never draws. */
static void test_rx_loss_is_the_seeded_stream(void **st)
{
    (void)st;
    setup(8);
    em_loss_init(&C.loss, 0.25, 42);
    em_loss_t ref;
    em_loss_init(&ref, 0.25, 42);
    unsigned want = 0;
    for (uint32_t i = 0; i < 400; i++) {
        want += em_loss_drop(&ref);
        port_data(0x1234, i, "z"); /* endpoint 10: client 0 */
    }
    assert_true(want > 60 && want < 140); /* about a quarter */
    assert_int_equal(C.loss_drops, want);
    assert_int_equal(atomic_load(&R[0]->st.rx_delivered), 400 - want);
    uint64_t rng = C.loss.rng;
    C.loss.p = 0;
    port_data(0x1234, 400, "z");
    assert_int_equal(C.loss_drops, want);
    assert_true(C.loss.rng == rng);
    teardown();
}

static void test_node_table_ages_and_refuses_broadcast(void **st)
{
    (void)st;
    setup(2);
    C.max_nodes_per_uid = C.max_nodes; /* as emd --max-per-uid 0: the table's own limits */
    uint8_t m[6];
    memcpy(m, NODE2, 6);
    for (uint8_t i = 0; i < 3; i++) {
        m[5] = (uint8_t)(10 + i);
        tx(0, m, 5, (const uint8_t *)"x", 1);
    }
    emd_core_drain(&C, 0);
    assert_int_equal(P.nsent, 2);
    assert_int_equal(C.nodes_full, 1);
    C.now_ns += 2000000000ull; /* both idle for 2 s */
    tx(0, m, 5, (const uint8_t *)"x", 1);
    emd_core_drain(&C, 0);
    assert_int_equal(P.nsent, 3);
    assert_int_equal(C.nodes_evicted, 1);
    assert_memory_equal(P.peer_mac[P.sent_peer[2]], m, 6);
    static const uint8_t bc[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
    tx(0, bc, 5, (const uint8_t *)"x", 1);
    emd_core_drain(&C, 0);
    assert_int_equal(P.nsent, 3);
    assert_int_equal(C.tx_bad_mac, 1);
    teardown();
}

/* one uid naming ever new nodes holds at most 3/4 of the table; another
 * uid still gets the rest */
static void test_node_table_share_per_uid(void **st)
{
    (void)st;
    setup(4);
    assert_int_equal(C.max_nodes_per_uid, 3);
    C.cl[1].uid = 1000; /* client 0 is uid 0 */
    uint8_t m[6];
    memcpy(m, NODE2, 6);
    for (uint8_t i = 0; i < 5; i++) {
        m[5] = (uint8_t)(10 + i);
        tx(0, m, 5, (const uint8_t *)"x", 1);
    }
    emd_core_drain(&C, 0);
    assert_int_equal(P.nsent, 3);
    assert_int_equal(C.nodes_uid_full, 2);
    assert_int_equal(C.nodes_full, 0);
    m[5] = 99;
    tx(1, m, 5, (const uint8_t *)"y", 1);
    emd_core_drain(&C, 1);
    assert_int_equal(P.nsent, 4);
    assert_memory_equal(P.peer_mac[P.sent_peer[3]], m, 6);
    /* uid 0's entries age out: it may name new nodes again (up to its share) */
    C.now_ns += 2000000000ull;
    m[5] = 50;
    tx(0, m, 5, (const uint8_t *)"x", 1);
    emd_core_drain(&C, 0);
    assert_int_equal(P.nsent, 5);
    teardown();
}

static void hello(uint16_t slots, uint8_t last)
{
    em_pkt_t *p = fake_port_take(&P.port);
    assert_non_null(p);
    uint8_t smac[6];
    memcpy(smac, NODE2, 6);
    smac[5] = last;
    emd_shim_t sh = { .cls = EMD_CLS_CTRL,
                      .len = (uint16_t)sizeof(struct emd_hello),
                      .dst = EMD_EP_CONTROL };
    memcpy(sh.src_mac, smac, 6);
    emd_wire_encode(p->data, &sh);
    emd_hello_encode(p->data + EMD_WIRE_HDR_LEN, EMD_HELLO_REPLY, slots,
                     (uint16_t)(slots ? 1 + slots * slots : 1));
    p->len = EMD_WIRE_HDR_LEN + (uint32_t)sizeof(struct emd_hello);
    fake_port_arrive(&P.port, p);
    (void)emd_core_poll_port(&C);
}

static void test_forged_hello_does_not_decide(void **st)
{
    (void)st;
    setup(8);
    C.bulk_slots = 4;
    hello(7, 0x66); /* forged, first */
    assert_int_equal(C.peer_queues, 50);
    hello(4, 2); /* the real one */
    assert_int_equal(C.peer_queues, 17);
    hello(7, 0x66); /* counted, changes nothing */
    assert_int_equal(C.peer_queues, 17);
    assert_int_equal(C.hello_conflict, 1);
    teardown();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_geometry_is_the_daemons),
        cmocka_unit_test(test_impossible_indices_doom),
        cmocka_unit_test(test_eager_acks_only_registered_and_checked),
        cmocka_unit_test(test_rx_loss_is_the_seeded_stream),
        cmocka_unit_test(test_node_table_ages_and_refuses_broadcast),
        cmocka_unit_test(test_node_table_share_per_uid),
        cmocka_unit_test(test_forged_hello_does_not_decide),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
