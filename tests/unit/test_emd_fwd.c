/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * emd's forwarding and eager ACKs, end to end over link_sim, no DPDK: two
 * daemons (emd_core) whose ports are the two nodes of a simulated wire,
 * and real clients on them (link_emd over a region, the engine, the
 * protocol), all in this thread.
 *   - messages and a put cross the daemons intact, in order; the daemon
 *     of the receiver acknowledges them eagerly on the flow the receiver's
 *     protocol registered, with random ISNs next to the 2^32 wrap (the ISN
 *     invariant: the daemon starts where the protocol says, assumes none);
 *   - put frames are counted by their class (set by the engine, carried by
 *     the slots and the shim), data frames are not;
 *   - two clients of one node talk through their daemon, not the wire;
 *   - over a wire that loses and duplicates frames (eager ACKs included),
 *     every message arrives exactly once and in order;
 *   - hostile and odd port frames (short, foreign magic, other version,
 *     unknown class, reserved bits, a length beyond the frame, endpoint 0,
 *     an endpoint nobody has, a bad hello) are counted and dropped, and the
 *     job next to them is not disturbed;
 *   - first contact (wire v3): clients that know each other only by name
 *     (address, endpoint, nonce) run the handshake through the daemons,
 *     across the wire and on one node; the daemons carry and count the
 *     handshake frames without any flow, and the flows the clients then
 *     register with the keys their handshake derived get eager ACKs;
 *   - a client cannot claim another's source: the source a received frame
 *     reports (rx_from) is the one its daemon saw, so a handshake naming
 *     another client's address is refused (hs_bad_source) and binds nothing;
 *   - udp framing (emd --framing udp): node ids are IPv4 + port (11.x, whose
 *     first byte an L2 check would take for a multicast MAC), the node table
 *     keys by them and gives the port link_dpdk's 14-byte udp blob, the
 *     clients publish udp addresses; a client of the other framing is
 *     refused at attach and at set_peer, naming both settings.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "daemon/emd_core.h"
#include "engine/contact.h"
#include "engine/engine.h"
#include "proto/hs_wire.h"
#include "link/link_emd.h"
#include "link/link_sim.h"
#include "link_test_util.h"

#define CMTU  1500u                     /* a client's frame */
#define PMTU  (CMTU + EMD_WIRE_HDR_LEN) /* the port's */
#define RXSZ  (1u << 18)
#define SLOTS 64u

static const uint8_t MACS[2][6] = { { 2, 0xe7, 0, 0, 0, 1 }, { 2, 0xe7, 0, 0, 0, 2 } };
/* udp framing: 11.0.0.1:29717 and 11.0.1.2:29717 */
static const uint8_t IPS[2][6] = { { 11, 0, 0, 1, 0x74, 0x15 }, { 11, 0, 1, 2, 0x74, 0x15 } };
static int UDP;                     /* the world runs udp framing */
static int NAMED;                   /* the clients know each other by name (first contact) */
#define NAMED_PEERS 8u              /* a named client's engine: its peer table (self above it) */
static em_link_addr_t LAST_BLOB[2]; /* what each daemon last gave its port's set_peer */
static unsigned UNREACH_ASKED;      /* set_peer calls for a node the port cannot reach */

/* ------------------------------------------------------------ port -- */

/* a daemon's port: link_sim under MAC addressing (node i has MAC ...:0i+1;
 * broadcast, the hello, goes to the other node) */
struct port {
    em_test_wrap_t w; /* inner: the node's link_sim link */
    unsigned node;
    uint8_t node_of[16];
};

static unsigned p_burst(em_link_t *l, em_pkt_t **p, unsigned n)
{
    struct port *pt = (struct port *)l;
    for (unsigned i = 0; i < n; i++)
        p[i]->peer = pt->node_of[p[i]->peer];
    return em_link_tx_burst(pt->w.inner, p, n);
}
static int p_peer(em_link_t *l, uint32_t peer, const em_link_addr_t *a)
{
    struct port *pt = (struct port *)l;
    LAST_BLOB[pt->node] = *a;
    unsigned node;
    if (UDP) { /* link_dpdk's udp blob: MAC (any: ff), queue 0, IPv4, port */
        static const uint8_t head[8] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0 };
        if (a->len != 14 || peer >= 16 || memcmp(a->bytes, head, 8) != 0)
            return -1;
        node = memcmp(a->bytes + 8, IPS[0], 6) == 0   ? 0
               : memcmp(a->bytes + 8, IPS[1], 6) == 0 ? 1
                                                      : 2;
        UNREACH_ASKED += node == 2; /* no route to it (link_dpdk's next-hop lookup would fail) */
    } else if (a->len != 8 || peer >= 16) {
        return -1;
    } else {
        node = a->bytes[0] == 0xff ? 1 - pt->node : (unsigned)a->bytes[5] - 1;
    }
    if (node > 1)
        return -1;
    em_link_addr_t sa = { .len = 1, .bytes = { (uint8_t)node } };
    pt->node_of[peer] = (uint8_t)node;
    return em_link_set_peer(pt->w.inner, (uint32_t)node, &sa);
}
static void p_close(em_link_t *l) { (void)l; }
static const em_link_ops_t PORT_OPS = {
    .name = "port",
    .tx_alloc = em_test_wrap_tx_alloc,
    .tx_burst = p_burst,
    .tx_free = em_test_wrap_tx_free,
    .rx_burst = em_test_wrap_rx_burst,
    .rx_release = em_test_wrap_rx_release,
    .flush = em_test_wrap_flush,
    .set_peer = p_peer,
    .close = p_close,
};

/* ------------------------------------------------------------ world -- */

struct client {
    unsigned node, idx; /* its daemon, its client index there */
    struct emd_shm_hdr *region;
    uint64_t size;
    em_link_t *link;
    em_link_ops_t ops; /* link_emd's, with set_flow to the daemon */
    em_engine_t *eng;
    unsigned got, bad, done;
    uint32_t next_len;
};

static em_sim_t *SIM;
static struct port PORT[2];
static emd_core_t D[2];
static struct client CL[3]; /* 0, 1 on node 0; 2 on node 1 */

/* set_flow as the control socket would carry it (link_emd's EMD_CTL_FLOW):
 * the peer's address is the one its link published (numbered: engine peer
 * = client), or the one its handshake proved (named) */
static int to_daemon(em_link_t *l, uint32_t peer, const em_link_flow_t *f)
{
    for (unsigned k = 0; k < 3; k++)
        if (CL[k].link == l && peer < (NAMED ? NAMED_PEERS : 3)) {
            struct emd_ctl_flow m = { .rx_key = f->rx_key,
                                      .tx_key = f->tx_key,
                                      .rx_next = f->rx_next,
                                      .tx_next = f->tx_next,
                                      .frame_max = f->frame_max,
                                      .self = f->self,
                                      .peer = f->peer,
                                      .remote_index = f->remote_index };
            em_link_addr_t named = { 0 };
            em_conn_name_t nm;
            if (NAMED) {
                if (em_engine_contact_name(CL[k].eng, peer, &nm) != 0)
                    return -1;
                named.len = nm.addr_len;
                memcpy(named.bytes, nm.addr, nm.addr_len);
            }
            const em_link_addr_t *a = NAMED ? &named : &CL[peer].link->local;
            uint16_t slots, slot;
            int fr = emd_addr_framing(a->bytes, a->len, m.peer_node, &m.peer_ep);
            if (fr < 0 || (fr == EMD_FRAMING_L2 && emd_addr_decode(a->bytes, a->len, m.peer_node,
                                                                   &m.peer_ep, &slots, &slot) != 0))
                return -1;
            const char *why;
            return emd_core_add_flow(&D[CL[k].node], CL[k].idx, &m, &why);
        }
    return -1;
}

static uint8_t byte_at(unsigned m, size_t i) { return (uint8_t)(m * 131u + i * 7u + (i >> 8)); }

static void on_recv(void *u, uint32_t peer, uint8_t tag, const void *data, size_t len)
{
    struct client *c = u;
    (void)peer;
    const uint8_t *d = data;
    int ok = tag == (uint8_t)c->got && len == c->next_len;
    for (size_t i = 0; ok && i < len; i++)
        ok = d[i] == byte_at(c->got, i);
    c->bad += !ok;
    c->got++;
    c->next_len = c->next_len * 3 + 1 > 6000 ? 1 : c->next_len * 3 + 1;
}
static void on_complete(void *u, void *op, int st)
{
    struct client *c = u;
    (void)op;
    c->done += st == 0;
    c->bad += st != 0;
}

static void client(unsigned k, unsigned node, unsigned idx, uint16_t ep)
{
    struct client *c = &CL[k];
    *c = (struct client){ .node = node, .idx = idx, .next_len = 1 };
    uint32_t ss;
    c->size = emd_shm_size(CMTU, RXSZ, SLOTS, &ss);
    c->region = aligned_alloc(64, (c->size + 63) & ~63ull);
    assert_non_null(c->region);
    memset(c->region, 0, c->size);
    emd_shm_init(c->region, c->size, CMTU, RXSZ, SLOTS, 99, ep, UDP ? IPS[node] : MACS[node]);
    c->region->flags |= EMD_SHM_F_DAEMON_ACKS | (UDP ? EMD_SHM_F_UDP : 0);
    atomic_store(&c->region->heartbeat_ns, 0);
    assert_int_equal(emd_core_attach(&D[node], idx, 100 + (int)k, c->region, c->size, RXSZ, SLOTS,
                                     ep, 1, 0, EMD_BULKQ_NO_SLOT),
                     0);
    char err[256];
    em_emd_cfg_t cfg = { .framing = UDP ? EMD_FRAMING_UDP : EMD_FRAMING_L2 };
    c->link = em_link_emd_from_region(c->region, c->size, 99, ep, &cfg, err, sizeof err);
    assert_non_null(c->link);
    assert_true(c->link->flags & EM_LINK_F_ACKS);
    c->ops = *c->link->ops;
    c->ops.set_flow = to_daemon;
    c->link->ops = &c->ops;
    em_proto_cfg_t pc;
    em_proto_cfg_default(&pc);
    pc.self = NAMED ? EM_PROTO_SELF_OUTSIDE : (uint32_t)k; /* named: above every slot */
    pc.npeers = NAMED ? NAMED_PEERS : 3;
    pc.peers_need_set = (uint8_t)NAMED; /* named: a peer is unset until its handshake */
    pc.bind_source = (uint8_t)NAMED;
    pc.frame_max = CMTU;
    int e;
    em_engine_ops_t ops = { .recv = on_recv, .complete = on_complete };
    c->eng = em_engine_create(c->link, &pc, &ops, c, &e);
    assert_non_null(c->eng);
    if (NAMED) {
        em_engine_contact_cfg_t cc = { .nonce = 0xa11ce000u + k, .accept_strangers = true };
        memset(cc.secret, (int)(0x30 + k), sizeof cc.secret);
        assert_true(em_link_has_contact(c->link));
        assert_int_equal(em_engine_contact_open(c->eng, &cc), 0);
    }
}

/* client @p k's name, as a peer would know it */
static em_conn_name_t name_of(unsigned k)
{
    em_conn_name_t n = { .addr_len = CL[k].link->local.len, .nonce = 0xa11ce000u + k };
    memcpy(n.addr, CL[k].link->local.bytes, n.addr_len);
    return n;
}

/* client @p a's engine knows client @p b, with the pair's key and ISNs */
static void pair(unsigned a, unsigned b, uint32_t isn_ab, uint32_t isn_ba)
{
    uint64_t key = 0x5eed0000u + a * 16 + b;
    assert_int_equal(em_engine_set_peer(CL[a].eng, (uint32_t)b, &CL[b].link->local), 0);
    assert_int_equal(em_engine_set_peer(CL[b].eng, (uint32_t)a, &CL[a].link->local), 0);
    assert_int_equal(em_engine_set_peer_keys(CL[a].eng, (uint32_t)b, key, isn_ab, isn_ba), 0);
    assert_int_equal(em_engine_set_peer_keys(CL[b].eng, (uint32_t)a, key, isn_ba, isn_ab), 0);
}

static void world_lossy(double loss, double dup)
{
    em_sim_cfg_t sc;
    em_sim_cfg_default(&sc);
    sc.mtu = PMTU;
    sc.latency_ns = 0;
    sc.reorder_ns = 0;
    sc.ns_per_kb = 0;
    sc.loss = loss;
    sc.dup = dup;
    SIM = em_sim_create(3, &sc); /* node 2: a forger on the wire */
    assert_non_null(SIM);
    for (unsigned n = 0; n < 2; n++) {
        PORT[n] = (struct port){ .w = { .link = { .ops = &PORT_OPS, .mtu = PMTU },
                                        .inner = em_sim_link(SIM, n) },
                                 .node = n };
        memset(&D[n], 0, sizeof D[n]);
        assert_int_equal(
            emd_core_init(&D[n], &PORT[n].w.link, UDP ? IPS[n] : MACS[n], CMTU, 2, 16, 16, 1), 0);
        D[n].framing = UDP ? EMD_FRAMING_UDP : EMD_FRAMING_L2;
    }
    client(0, 0, 0, 10);
    client(1, 0, 1, 11);
    client(2, 1, 0, 20);
}

static void world(void) { world_lossy(0, 0); }

static void end_world(void)
{
    for (unsigned k = 0; k < 3; k++) {
        em_engine_destroy(CL[k].eng);
        em_link_close(CL[k].link);
        emd_core_forget(&D[CL[k].node], CL[k].idx);
        free(CL[k].region);
    }
    for (unsigned n = 0; n < 2; n++)
        emd_core_fini(&D[n]);
    em_sim_destroy(SIM);
    UDP = 0;
    NAMED = 0;
}

/* one round: the sim's clock, both daemons (port, then tx rings), every engine */
static void round_(void)
{
    em_sim_set_now(SIM, em_now_ns());
    for (unsigned n = 0; n < 2; n++) {
        D[n].now_ns = em_now_ns();
        (void)emd_core_poll_port(&D[n]);
        for (unsigned i = 0; i < 2; i++)
            (void)emd_core_drain(&D[n], i);
    }
    for (unsigned k = 0; k < 3; k++)
        (void)em_engine_progress(CL[k].eng);
}

/* @p n messages from client @p a to client @p b, its engine's peer @p peer
 * (lengths 1, 4, 13, ... up to 6000: multi-frame ones too) */
static void send_msgs_to(unsigned a, uint32_t peer, unsigned b, unsigned n)
{
    static em_proto_op_t op[64];
    static uint8_t buf[64][6000];
    uint32_t len = 1;
    assert_true(n <= 64);
    for (unsigned m = 0; m < n; m++) {
        for (uint32_t i = 0; i < len; i++)
            buf[m][i] = byte_at(m, i);
        assert_int_equal(em_engine_send(CL[a].eng, &op[m], peer, (uint8_t)m, buf[m], len, NULL), 0);
        len = len * 3 + 1 > 6000 ? 1 : len * 3 + 1;
    }
    uint64_t t0 = em_now_ns();
    while ((CL[b].got < n || CL[a].done < n) && em_now_ns() - t0 < 5000000000ull)
        round_();
    assert_int_equal(CL[b].got, n);
    assert_int_equal(CL[a].done, n);
    assert_int_equal(CL[b].bad + CL[a].bad, 0);
}

static void send_msgs(unsigned a, unsigned b, unsigned n) { send_msgs_to(a, (uint32_t)b, b, n); }

static void test_across_with_eager_acks_and_wrapping_isns(void **st)
{
    (void)st;
    world();
    /* ISNs 6 and 3 short of the wrap: a daemon assuming 0 would take the
     * first frames for duplicates 6 behind and drop them */
    pair(0, 2, 0xfffffffau, 0xfffffffdu);
    assert_int_equal(D[1].cl[0].nflows, 1); /* the receiver registered its flow */
    assert_int_equal(D[0].cl[0].nflows, 1);
    send_msgs(0, 2, 24);
    assert_true(D[1].acks > 0); /* node 1's daemon acknowledged for client 2 */
    assert_int_equal(D[1].ack_refused, 0);
    assert_int_equal(D[1].rx_bad + D[1].rx_no_ep + D[1].rx_ring_full, 0);
    assert_int_equal(D[0].tx_frames > 0, 1);
    assert_int_equal(D[0].put_frames + D[1].put_frames, 0); /* messages are not bulk */
    /* a put: its frames are bulk by class, counted at both daemons */
    static uint8_t target[8192], src[5000];
    for (size_t i = 0; i < sizeof src; i++)
        src[i] = (uint8_t)(i * 13);
    em_region_handle_t h;
    assert_int_equal(em_engine_register(CL[2].eng, target, sizeof target, &h), 0);
    em_proto_op_t op;
    unsigned done0 = CL[0].done;
    assert_int_equal(em_engine_put(CL[0].eng, &op, 2, &h, 100, src, sizeof src, NULL), 0);
    uint64_t t0 = em_now_ns();
    while (CL[0].done == done0 && em_now_ns() - t0 < 5000000000ull)
        round_();
    assert_int_equal(CL[0].done, done0 + 1);
    assert_memory_equal(target + 100, src, sizeof src);
    unsigned frames = (unsigned)((sizeof src + CMTU - 73) / (CMTU - 72)); /* 48 + 24 header bytes */
    assert_int_equal(D[0].put_frames, frames);
    assert_int_equal(D[1].put_frames, frames);
    em_emd_stats_t es;
    em_link_emd_stats(CL[2].link, &es);
    assert_int_equal(es.put_rx_daemon, frames); /* the class reached the receiving link too */
    end_world();
}

static void test_same_node_through_the_daemon(void **st)
{
    (void)st;
    world();
    pair(0, 1, 0x7ffffffeu, 12345u);
    uint64_t wire = em_sim_stats(SIM)->sent;
    send_msgs(0, 1, 10);
    assert_true(D[0].local > 0);
    assert_int_equal(em_sim_stats(SIM)->sent, wire); /* nothing went on the wire */
    end_world();
}

static void test_lossy_wire_exactly_once(void **st)
{
    (void)st;
    /* 10 % loss and 5 % duplicates between the daemons: the eager ACKs
     * get lost too, frames arrive twice and after gaps; every message
     * still arrives once, in order (send_msgs checks contents and order) */
    world_lossy(0.10, 0.05);
    pair(0, 2, 0xfffffff0u, 0x10u);
    send_msgs(0, 2, 40);
    assert_true(D[1].acks > 0);
    assert_true(em_sim_stats(SIM)->lost > 0 && em_sim_stats(SIM)->duplicated > 0);
    assert_int_equal(D[1].rx_bad + D[1].rx_ring_full, 0);
    end_world();
}

/* one raw frame from the forger (node 2) to node 1's port */
static void forge(const uint8_t *f, uint32_t len)
{
    em_link_t *l = em_sim_link(SIM, 2);
    em_link_addr_t a = { .len = 1, .bytes = { 1 } };
    assert_int_equal(em_link_set_peer(l, 1, &a), 0);
    em_pkt_t *p = em_link_tx_alloc(l);
    assert_non_null(p);
    memcpy(p->data, f, len);
    p->len = len;
    p->peer = 1;
    assert_int_equal(em_link_tx_burst(l, &p, 1), 1);
}

static void test_hostile_port_frames(void **st)
{
    (void)st;
    world();
    pair(0, 2, 1000u, 0xffffffffu);
    emd_shim_t ok = { .cls = EMD_CLS_DATA, .len = 48, .dst = 20, .src = 10 };
    memcpy(ok.src_mac, MACS[0], 6);
    uint8_t f[128];
    struct {
        unsigned at;
        uint8_t v;
        uint32_t len;
        int no_ep;
    } bad[] = {
        { 0, 0xE5, 64, 0 },            /* a direct-mode frame (protocol magic) */
        { 1, EMD_VERSION - 1, 64, 0 }, /* another version */
        { 2, EMD_CLS_COUNT, 64, 0 },   /* unknown class */
        { 3, 1, 64, 0 },               /* reserved bits */
        { 5, 200, 64, 0 },             /* a length beyond the frame */
        { 7, 0, 64, 0 },               /* endpoint 0 */
        { 0, EMD_WIRE_MAGIC, 10, 0 },  /* shorter than the shim */
        { 7, 99, 64, 1 },              /* nobody's endpoint */
    };
    uint64_t bad0 = D[1].rx_bad, noep0 = D[1].rx_no_ep;
    unsigned want_bad = 0, want_noep = 0;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(f, 0x11, sizeof f);
        emd_wire_encode(f, &ok);
        f[bad[i].at] = bad[i].v;
        forge(f, bad[i].len);
        want_bad += !bad[i].no_ep;
        want_noep += bad[i].no_ep;
    }
    /* a hello that is not one, to the control endpoint */
    emd_shim_t hs = { .cls = EMD_CLS_CTRL, .len = 16, .dst = EMD_EP_CONTROL };
    emd_wire_encode(f, &hs);
    memset(f + EMD_WIRE_HDR_LEN, 0x42, 16);
    forge(f, EMD_WIRE_HDR_LEN + 16);
    want_bad++;
    /* a good shim around garbage for client 2: delivered, never acknowledged */
    emd_wire_encode(f, &ok);
    memset(f + EMD_WIRE_HDR_LEN, 0x99, 48);
    forge(f, EMD_WIRE_HDR_LEN + 48);
    round_();
    assert_int_equal(D[1].rx_bad - bad0, want_bad);
    assert_int_equal(D[1].hello_bad, 1);
    assert_int_equal(D[1].rx_no_ep - noep0, want_noep);
    assert_int_equal(D[1].acks, 0);
    assert_null(D[1].cl[0].doomed);
    /* the job next to it runs as before */
    send_msgs(0, 2, 12);
    assert_int_equal(em_engine_proto_stats(CL[2].eng)->drop_magic >= 1,
                     1); /* the garbage, refused by the client */
    end_world();
}

static void test_first_contact_through_the_daemons(void **st)
{
    (void)st;
    NAMED = 1;
    world();
    /* client 0 knows clients 2 (the other node) and 1 (its own) by name
     * only; they know nobody, and take it as a stranger */
    uint32_t p2, p1;
    em_conn_name_t n2 = name_of(2), n1 = name_of(1);
    assert_int_equal(em_engine_contact_insert(CL[0].eng, &n2, &p2), 0);
    assert_int_equal(em_engine_contact_insert(CL[0].eng, &n1, &p1), 0);
    assert_int_equal(D[0].cl[0].nflows + D[1].cl[0].nflows, 0); /* no flow before a handshake */
    send_msgs_to(0, p2, 2, 24);
    assert_int_equal(em_engine_contact_state(CL[0].eng, p2), EM_CONN_ESTABLISHED);
    /* INIT, CHALLENGE, CONFIRM, ACCEPT crossed both daemons (retries may add some) */
    assert_true(D[0].handshakes >= 4 && D[1].handshakes >= 4);
    /* both registered the pair's flow with the keys their handshake gave,
     * and node 1's daemon acknowledged client 2's frames on it */
    assert_int_equal(D[0].cl[0].nflows, 1);
    assert_int_equal(D[1].cl[0].nflows, 1);
    assert_true(D[1].acks > 0);
    assert_int_equal(D[0].ack_refused + D[1].ack_refused, 0);
    assert_int_equal(D[0].ack_wrong_source + D[1].ack_wrong_source, 0);
    assert_int_equal(D[1].rx_bad + D[1].rx_no_ep + D[1].rx_ring_full, 0);
    assert_int_equal(em_engine_stats(CL[2].eng)->hs_bad_source, 0);
    /* the same on one node: the daemon carries it from ring to ring */
    uint64_t hs0 = D[0].handshakes, local0 = D[0].local, tx0 = D[0].tx_frames;
    CL[0].done = 0;
    send_msgs_to(0, p1, 1, 10);
    assert_true(D[0].handshakes >= hs0 + 4);
    assert_true(D[0].local >= local0 + 4 + 10);
    assert_int_equal(D[0].tx_frames, tx0); /* node 0 sent nothing to its port */
    assert_int_equal(D[0].cl[1].nflows, 1);
    /* and back, over the peer numbers the handshakes gave */
    CL[0].got = 0;
    CL[0].next_len = 1;
    CL[2].done = 0;
    uint32_t back = NAMED_PEERS;
    em_conn_name_t nm;
    for (uint32_t q = 0; q < NAMED_PEERS; q++)
        if (em_engine_contact_name(CL[2].eng, q, &nm) == 0 && nm.nonce == name_of(0).nonce)
            back = q; /* client 2's number for client 0, the stranger it bound */
    assert_true(back < NAMED_PEERS);
    send_msgs_to(2, back, 0, 8);
    end_world();
}

static void test_first_contact_udp_framing(void **st)
{
    (void)st;
    UDP = 1; /* node ids are IPv4 + port: the handshake's reply addresses are udp addresses */
    NAMED = 1;
    world();
    uint32_t p2;
    em_conn_name_t n2 = name_of(2);
    assert_int_equal(n2.addr_len, EMD_ADDR_LEN_UDP);
    assert_int_equal(em_engine_contact_insert(CL[0].eng, &n2, &p2), 0);
    send_msgs_to(0, p2, 2, 12);
    assert_true(D[0].handshakes >= 4 && D[1].handshakes >= 4);
    assert_int_equal(D[1].cl[0].nflows, 1);
    assert_true(D[1].acks > 0);
    assert_int_equal(D[0].tx_bad_mac + D[1].rx_bad + D[1].ack_refused, 0);
    end_world();
}

/* a handshake INIT from client @p from's link (tx_to) to client @p to whose
 * reply address names client @p claim's */
static void raw_init(unsigned from, unsigned to, unsigned claim)
{
    em_hs_t h = { .type = EM_HS_INIT,
                  .src_nonce = 0xbad0000u + claim,
                  .src_index = 3,
                  .dst_index = EM_HS_NO_INDEX,
                  .isn = 5,
                  .token = 0x7070,
                  .addr_len = CL[claim].link->local.len };
    memcpy(h.addr, CL[claim].link->local.bytes, h.addr_len);
    em_link_t *l = CL[from].link;
    em_pkt_t *p = em_link_tx_alloc(l);
    assert_non_null(p);
    p->len = (uint32_t)em_hs_encode(&h, p->data);
    p->cls = EM_PKT_CTRL;
    assert_int_equal(l->ops->tx_to(l, p, &CL[to].link->local), 0);
}

/* the daemons only: their ports and rings, no client */
static void daemons_only(void)
{
    for (int r = 0; r < 3; r++) {
        em_sim_set_now(SIM, em_now_ns());
        for (unsigned n = 0; n < 2; n++) {
            (void)emd_core_poll_port(&D[n]);
            for (unsigned i = 0; i < 2; i++)
                (void)emd_core_drain(&D[n], i);
        }
    }
}

static void test_forged_source_refused(void **st)
{
    (void)st;
    NAMED = 1;
    world();
    /* rx_from reports what the daemon saw: client 1's frame, claiming client
     * 0's address, is consistent with client 1's only (across the wire and
     * on one node) */
    for (unsigned to = 2; to != 3; to = to == 2 ? 0 : 3) {
        raw_init(1, to, to == 2 ? 0 : 2);
        daemons_only();
        em_pkt_t *pk[4];
        em_link_t *l = CL[to].link;
        assert_int_equal(em_link_rx_burst(l, pk, 4), 1);
        assert_true(em_hs_is(pk[0]->data, pk[0]->len));
        assert_true(l->ops->rx_from(l, pk[0], &CL[1].link->local));
        assert_false(l->ops->rx_from(l, pk[0], &CL[to == 2 ? 0 : 2].link->local));
        em_link_rx_release(l, pk, 1);
    }
    assert_int_equal(D[0].handshakes, 2); /* both from client 1's ring, ... */
    assert_int_equal(D[1].handshakes, 1); /* ... one from node 0's port */
    /* the engine drops such a frame before its table reads it: no answer */
    uint64_t sent0 = D[0].tx_frames;
    raw_init(1, 2, 0);
    for (int r = 0; r < 5; r++)
        round_();
    assert_int_equal(em_engine_stats(CL[2].eng)->hs_bad_source, 1);
    assert_int_equal(D[1].tx_frames, 0); /* client 2 answered nothing */
    assert_int_equal(D[0].tx_frames, sent0 + 1);
    /* the same frame with its true reply address is answered (a CHALLENGE) */
    raw_init(1, 2, 1);
    for (int r = 0; r < 5; r++)
        round_();
    assert_int_equal(em_engine_stats(CL[2].eng)->hs_bad_source, 1);
    assert_int_equal(D[1].tx_frames, 1);
    assert_int_equal(D[1].handshakes, 4);
    /* tx_to refuses an address that is not the daemon's kind */
    em_link_addr_t bad = { .len = 3 };
    em_pkt_t *p = em_link_tx_alloc(CL[1].link);
    p->len = 8;
    assert_int_equal(CL[1].link->ops->tx_to(CL[1].link, p, &bad), -EINVAL);
    em_link_tx_free(CL[1].link, p);
    end_world();
}

static void test_udp_framing_keys_by_ip_and_port(void **st)
{
    (void)st;
    UDP = 1;
    world();
    /* the clients publish udp addresses: node id = IPv4 + port, endpoint */
    uint8_t id[6];
    uint16_t ep;
    assert_int_equal(CL[2].link->local.len, EMD_ADDR_LEN_UDP);
    assert_int_equal(emd_addr_framing(CL[2].link->local.bytes, CL[2].link->local.len, id, &ep),
                     EMD_FRAMING_UDP);
    assert_memory_equal(id, IPS[1], 6);
    assert_int_equal(ep, 20);
    pair(0, 2, 0xfffffff0u, 77u);
    send_msgs(0, 2, 24);
    /* node 0's daemon keyed node 1 by (IP, port) and gave the port the udp blob */
    assert_int_equal(D[0].nnodes, 1);
    assert_memory_equal(D[0].nodes[0].mac, IPS[1], 6);
    assert_int_equal(LAST_BLOB[0].len, 14);
    assert_memory_equal(LAST_BLOB[0].bytes + 8, IPS[1], 6);
    assert_int_equal(D[1].nnodes, 1); /* its eager ACKs went back the same way */
    assert_memory_equal(D[1].nodes[0].mac, IPS[0], 6);
    assert_true(D[1].acks > 0);
    assert_int_equal(D[0].tx_bad_mac + D[1].rx_bad + D[1].rx_no_ep, 0);
    /* same node: through the daemon, not the wire */
    pair(0, 1, 5u, 6u);
    uint64_t local0 = D[0].local;
    send_msgs(1, 0, 6);
    assert_true(D[0].local >= local0 + 6); /* (the wire may still carry the last exchange's ACKs) */
    /* an L2 peer address, or a udp one naming a multicast group, is refused */
    em_link_addr_t a = { 0 };
    a.len = emd_addr_encode(a.bytes, MACS[1], 20, 0, 0);
    assert_int_equal(em_link_set_peer(CL[0].link, 2, &a), -EINVAL);
    static const uint8_t mcast[6] = { 224, 0, 0, 1, 0x74, 0x15 };
    a.len = emd_addr_encode_udp(a.bytes, mcast, 20);
    assert_int_equal(em_link_set_peer(CL[0].link, 2, &a), -EINVAL);
    /* a node the port cannot reach: asked once, then refused without asking
     * (a retransmitting client must not stall the loop in lookups) */
    static const uint8_t far[6] = { 11, 0, 9, 9, 0x74, 0x15 };
    a.len = emd_addr_encode_udp(a.bytes, far, 20);
    assert_int_equal(em_engine_set_peer(CL[1].eng, 2, &a), 0);
    assert_int_equal(em_engine_set_peer_keys(CL[1].eng, 2, 0x5eed, 1u, 2u), 0);
    static em_proto_op_t op[4];
    static const uint8_t msg[8] = "lost";
    uint64_t unreach0 = D[0].nodes_unreachable;
    UNREACH_ASKED = 0;
    for (unsigned m = 0; m < 4; m++)
        assert_int_equal(em_engine_send(CL[1].eng, &op[m], 2, 1, msg, sizeof msg, NULL), 0);
    for (unsigned r = 0; r < 50; r++)
        round_();
    assert_int_equal(UNREACH_ASKED, 1);
    assert_true(D[0].nodes_unreachable >= unreach0 + 4);
    end_world();
}

static void test_framing_mismatch_refused(void **st)
{
    (void)st;
    UDP = 0;
    world(); /* L2 daemons */
    em_link_addr_t a = { 0 };
    a.len = emd_addr_encode_udp(a.bytes, IPS[1], 20);
    assert_int_equal(em_link_set_peer(CL[0].link, 2, &a), -EINVAL); /* a udp peer */
    /* a job asking udp of an L2 daemon, and the reverse: refused at attach, naming both */
    for (int daemon_udp = 0; daemon_udp < 2; daemon_udp++) {
        uint32_t ss;
        uint64_t size = emd_shm_size(CMTU, RXSZ, SLOTS, &ss);
        struct emd_shm_hdr *h = aligned_alloc(64, (size + 63) & ~63ull);
        assert_non_null(h);
        memset(h, 0, size);
        emd_shm_init(h, size, CMTU, RXSZ, SLOTS, 99, 30, daemon_udp ? IPS[0] : MACS[0]);
        h->flags |= daemon_udp ? EMD_SHM_F_UDP : 0;
        char err[512] = "";
        em_emd_cfg_t cfg = { .framing = daemon_udp ? EMD_FRAMING_L2 : EMD_FRAMING_UDP };
        assert_null(em_link_emd_from_region(h, size, 99, 30, &cfg, err, sizeof err));
        assert_non_null(strstr(err, daemon_udp ? "btl_dpdk_framing l2" : "btl_dpdk_framing udp"));
        assert_non_null(strstr(err, daemon_udp ? "--framing udp" : "--framing l2"));
        cfg.framing = daemon_udp ? EMD_FRAMING_UDP : EMD_FRAMING_L2; /* matching: attaches */
        em_link_t *l = em_link_emd_from_region(h, size, 99, 30, &cfg, err, sizeof err);
        assert_non_null(l);
        assert_int_equal(l->local.len, daemon_udp ? EMD_ADDR_LEN_UDP : EMD_ADDR_LEN);
        em_link_close(l);
        free(h);
    }
    end_world();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_across_with_eager_acks_and_wrapping_isns),
        cmocka_unit_test(test_same_node_through_the_daemon),
        cmocka_unit_test(test_lossy_wire_exactly_once),
        cmocka_unit_test(test_hostile_port_frames),
        cmocka_unit_test(test_first_contact_through_the_daemons),
        cmocka_unit_test(test_forged_source_refused),
        cmocka_unit_test(test_first_contact_udp_framing),
        cmocka_unit_test(test_udp_framing_keys_by_ip_and_port),
        cmocka_unit_test(test_framing_mismatch_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
