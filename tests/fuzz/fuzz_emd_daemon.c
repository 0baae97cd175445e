/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz target: the daemon's side of the emd contract (emd_core), against
 * clients that rewrite any byte of their shared region between two daemon
 * calls, and a wire that delivers any frame.  No DPDK: the port is a fake
 * link.  Three clients, each on a region of exactly its size (heap, so ASan
 * sees one byte past it).  The input is a program of operations:
 *
 *   0 k off len bytes   write bytes into client k's region at off (any byte:
 *                       geometry fields, indices, slot headers, stats)
 *   1 k tail head       set client k's tx.tail and rx.head
 *   2 k how ep len bytes  a tx slot at the client's tail: destination this
 *                       node / another node / broadcast (how), endpoint,
 *                       frame bytes (a protocol header when how & 4)
 *   3 k                 the daemon drains client k
 *   4 dst src len bytes a frame on the port for endpoint dst (a protocol
 *                       header of a registered flow when len's top bit is set)
 *   5 k flow            client k registers a flow (struct emd_ctl_flow bytes)
 *   6 dt                the clock moves; doomed clients are detached and
 *                       fresh ones attached in their place
 *   7 k                 the client consumes its rx ring (head = tail)
 *
 * Properties beyond "no crash, no ASan report": the daemon's geometry of
 * each client never changes whatever the region says; a client is doomed
 * only for an index that is really impossible; every frame handed to the
 * port fits the port; the node table stays within its bound; a doomed
 * client gets nothing more.  Bounded: 512 operations per input.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/emd_core.h"
#include "proto/wire.h"

#include "../unit/fake_port.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* (not CHECK(): the builds define NDEBUG) */
#define CHECK(x)                                                                                   \
    do {                                                                                           \
        if (!(x)) {                                                                                \
            fprintf(stderr, "fuzz_emd_daemon: %s:%d: %s\n", __FILE__, __LINE__, #x);               \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

#define MTU      256u /* client frame bytes */
#define PORT_MTU (MTU + EMD_WIRE_HDR_LEN)
#define RX_SIZE  (1u << 16)
#define SLOTS    16u
#define NCL      3u
#define NODES    4u
#define POOL     48u

static const uint8_t MAC[6] = { 2, 0xe7, 0, 0, 0, 1 };
static const uint8_t OTHER[6] = { 2, 0xe7, 0, 0, 0, 2 };

static emd_core_t C;

/* ------------------------------------------------------------ fake port -- */

struct fake {
    fake_port_t port;
    uint8_t peers[65536 / 8]; /* which link peer ids were set */
    unsigned refuse;          /* tx_burst refuses this many next */
    uint64_t sent;
};
static struct fake F;

static unsigned f_burst(em_link_t *l, em_pkt_t **p, unsigned n)
{
    unsigned k = 0;
    for (; k < n; k++) {
        if (F.refuse) {
            F.refuse--;
            break;
        }
        CHECK(p[k]->len <= PORT_MTU);
        CHECK(F.peers[p[k]->peer / 8] & (1u << (p[k]->peer % 8)));
        fake_port_tx_free(l, p[k]);
        F.sent++;
    }
    return k;
}
static int f_peer(em_link_t *l, uint32_t peer, const em_link_addr_t *a)
{
    (void)l;
    CHECK(peer < NODES);
    /* the blob the framing calls for: L2 MAC + queue; udp link_dpdk's 14
     * bytes with a node id a client may name (never broadcast/multicast) */
    if (C.framing == EMD_FRAMING_UDP)
        CHECK(a->len == 14 && a->bytes[0] == 0xff &&
              emd_node_unicast(EMD_FRAMING_UDP, a->bytes + 8));
    else
        CHECK(a->len == 8);
    F.peers[peer / 8] |= (uint8_t)(1u << (peer % 8));
    return 0;
}
static const em_link_ops_t FAKE_OPS = { .name = "fake",
                                        .tx_alloc = fake_port_tx_alloc,
                                        .tx_burst = f_burst,
                                        .tx_free = fake_port_tx_free,
                                        .rx_burst = fake_port_rx_burst,
                                        .rx_release = fake_port_rx_release,
                                        .flush = em_link_flush_none,
                                        .set_peer = f_peer,
                                        .close = fake_port_close };

/* --------------------------------------------------------------- input -- */

struct in {
    const uint8_t *p;
    size_t n;
};
static unsigned u8(struct in *in)
{
    if (!in->n)
        return 0;
    in->n--;
    return *in->p++;
}
static uint32_t u32(struct in *in)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v = v << 8 | u8(in);
    return v;
}
static size_t take(struct in *in, uint8_t *out, size_t want)
{
    size_t n = want < in->n ? want : in->n;
    memcpy(out, in->p, n);
    in->p += n;
    in->n -= n;
    return n;
}

/* ------------------------------------------------------------- clients -- */

static struct emd_shm_hdr *region[NCL];
static uint64_t region_size;
static uint16_t next_ep = 1;

static void attach(unsigned k)
{
    uint32_t ss;
    region_size = emd_shm_size(MTU, RX_SIZE, SLOTS, &ss);
    region[k] = aligned_alloc(64, (region_size + 63) & ~63ull);
    CHECK(region[k]);
    memset(region[k], 0, region_size);
    uint16_t ep;
    do
        ep = (uint16_t)(next_ep++ % 60000u + 1u);
    while (C.ep2cl[ep]);
    emd_shm_init(region[k], region_size, MTU, RX_SIZE, SLOTS, 42, ep, MAC);
    CHECK(emd_core_attach(&C, k, 100 + (int)k, region[k], region_size, RX_SIZE, SLOTS, ep, 1000 + k,
                          1000, EMD_BULKQ_NO_SLOT) == 0);
}

static void detach(unsigned k)
{
    emd_core_forget(&C, k);
    free(region[k]);
    region[k] = NULL;
}

static void check(void)
{
    for (unsigned k = 0; k < NCL; k++) {
        const struct emd_client *cl = &C.cl[k];
        CHECK(cl->fd >= 0);
        /* the daemon's ring handles keep the geometry it laid out */
        const uint8_t *base = (const uint8_t *)region[k];
        CHECK(cl->rx.base == base + EMD_SHM_RX_OFF && cl->rx.cap == RX_SIZE &&
              cl->rx.slot_size == 0);
        CHECK(cl->tx.base == base + EMD_SHM_RX_OFF + RX_SIZE && cl->tx.cap == SLOTS &&
              cl->tx.slot_size == emd_rec_size(MTU));
        CHECK(cl->rx.pend == 0 && cl->size == region_size && cl->mtu == MTU);
        CHECK(C.ep2cl[cl->ep] == k + 1);
        CHECK(cl->nflows <= C.max_flows);
    }
    CHECK(C.nnodes <= NODES);
    CHECK(F.port.nfree <= POOL);
}

/* a protocol header into @p out (room for EM_HDR_LEN + EM_PUT_EXT_LEN) */
static size_t proto_hdr(struct in *in, uint8_t *out, uint32_t index)
{
    em_hdr_t h = { .type = (u8(in) & 1) ? EM_PT_PUT : EM_PT_DATA, .index = index };
    h.job_key = u8(in) & 1 ? 0x1234 : u32(in);
    h.seq = u8(in) & 1 ? (uint32_t)(u8(in) - 2) + 0xfffffff0u : u32(in);
    h.ack = u32(in);
    h.len = (uint16_t)(u8(in) % 64);
    h.frag_cnt = (uint16_t)(1 + u8(in) % 4);
    h.frag_no = (uint16_t)(u8(in) % h.frag_cnt);
    h.msg_len = u8(in) & 1 ? u32(in) : h.len;
    return em_hdr_encode(&h, out);
}

static void op_tx_slot(struct in *in, unsigned k)
{
    struct emd_shm_hdr *h = region[k];
    /* the client's end of its tx ring, from wherever its tail stands now
     * (the real layout; a hostile client need not check the room) */
    emd_ring_t tx;
    emd_ring_init(&tx, &h->tx, (uint8_t *)h + EMD_SHM_RX_OFF + RX_SIZE, SLOTS, emd_rec_size(MTU),
                  atomic_load(&h->tx.tail));
    uint8_t *s = emd_slots_sp_next(&tx);
    unsigned how = u8(in);
    struct emd_slot_hdr sh = { .endpoint = (uint16_t)(u8(in) % 8),
                               .flags = how & 8 ? EMD_SLOT_F_NOTE : 0,
                               .cls = (uint8_t)(u8(in) %
                                                (EMD_CLS_COUNT + 1)) }; /* one class unknown */
    static const uint8_t bc[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
    uint8_t other[6];
    memcpy(other, OTHER, 6);
    other[5] = (uint8_t)(how >> 4);
    memcpy(sh.mac, (how & 3) == 0 ? MAC : (how & 3) == 1 ? other : (how & 3) == 2 ? bc : OTHER, 6);
    uint8_t frame[MTU];
    size_t n = 0;
    if (how & 4)
        n = proto_hdr(in, frame, u8(in) % 4);
    size_t want = u8(in) % MTU;
    n += take(in, frame + n, want > MTU - n ? MTU - n : want);
    sh.len = (uint32_t)(n ? n : 1);
    if (u8(in) == 0xff)
        sh.len = u32(in); /* lies about the length */
    memcpy(s, &sh, sizeof sh);
    memcpy(s + sizeof sh, frame, n);
    emd_slots_sp_enqueue(&tx);
}

static void op_port(struct in *in)
{
    em_pkt_t *p = fake_port_take(&F.port);
    if (!p)
        return;
    uint16_t dst = (uint16_t)(u8(in) % 8);
    if (dst == 7)
        dst = EMD_EP_CONTROL;
    uint16_t src = (uint16_t)u8(in);
    unsigned l = u8(in);
    uint8_t *f = p->data + EMD_WIRE_HDR_LEN;
    size_t n = 0;
    if (l & 0x80)
        n = proto_hdr(in, f, u8(in) % 4);
    n += take(in, f + n, (l & 0x7f) < MTU - n ? (l & 0x7f) : MTU - n);
    if (!n)
        f[n++] = 0;
    uint8_t smac[6];
    memcpy(smac, OTHER, 6);
    smac[5] = (uint8_t)u8(in);
    emd_shim_t sh = { .cls = (uint8_t)(l & 0x80 ? EMD_CLS_BULK : EMD_CLS_DATA),
                      .len = (uint16_t)n,
                      .dst = dst,
                      .src = src };
    memcpy(sh.src_mac, smac, 6);
    emd_wire_encode(p->data, &sh);
    p->len = (uint32_t)(EMD_WIRE_HDR_LEN + n);
    fake_port_arrive(&F.port, p);
    (void)emd_core_poll_port(&C);
}

static void run_op(struct in *in, unsigned op)
{
    unsigned k = u8(in) % NCL;
    struct emd_shm_hdr *h = region[k];
    const char *why;
    switch (op % 8) {
    case 0: {
        uint32_t off = u32(in) % (uint32_t)region_size;
        uint8_t b[64];
        size_t n = take(in, b, u8(in) % sizeof b);
        if (n > region_size - off)
            n = region_size - off;
        memcpy((uint8_t *)h + off, b, n);
        break;
    }
    case 1:
        atomic_store(&h->tx.tail, u32(in));
        atomic_store(&h->rx.head, u32(in));
        break;
    case 2: op_tx_slot(in, k); break;
    case 3:
        F.refuse = u8(in) % 3;
        (void)emd_core_drain(&C, k);
        F.refuse = 0;
        break;
    case 4: op_port(in); break;
    case 5: {
        struct emd_ctl_flow f;
        memset(&f, 0, sizeof f);
        if (u8(in) & 1) { /* a plausible one */
            f = (struct emd_ctl_flow){ .rx_key = 0x1234,
                                       .tx_key = 0x1234,
                                       .rx_next = u32(in),
                                       .tx_next = u32(in),
                                       .frame_max = MTU,
                                       .self = 1,
                                       .peer = (uint32_t)(u8(in) % 4),
                                       .remote_index = u8(in) % 4 };
        } else {
            take(in, (uint8_t *)&f, sizeof f);
        }
        (void)emd_core_add_flow(&C, k, &f, &why);
        break;
    }
    case 6:
        C.now_ns += (uint64_t)u8(in) * 20000000ull;
        for (int d; (d = emd_core_take_doomed(&C)) >= 0;) {
            detach((unsigned)d);
            attach((unsigned)d);
        }
        break;
    case 7: atomic_store(&h->rx.head, atomic_load(&h->rx.tail)); break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    memset(&F, 0, sizeof F);
    CHECK(fake_port_init(&F.port, &FAKE_OPS, PORT_MTU, POOL) == 0);
    memset(&C, 0, sizeof C);
    C.now_ns = 1;
    if (emd_core_init(&C, &F.port.link, MAC, MTU, NCL, 16, NODES, 1) != 0)
        return 0;
    C.framing = size % 2 ? EMD_FRAMING_UDP
                         : EMD_FRAMING_L2; /* udp framing: node ids are IPv4 + port */
    for (unsigned k = 0; k < NCL; k++)
        attach(k);
    struct in in = { data, size };
    for (unsigned ops = 0; ops < 512 && in.n; ops++) {
        run_op(&in, u8(&in));
        check();
    }
    for (unsigned k = 0; k < NCL; k++)
        detach(k);
    emd_core_fini(&C);
    return 0;
}
