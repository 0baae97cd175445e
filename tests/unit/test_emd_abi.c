/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The daemon contract (src/emd_abi/) without a daemon or a link: control
 * messages, the region's checks, the ring API both sides use (laps,
 * fillers, full, hostile indices), fd passing, the wire shim, the
 * bulk-queue block, addresses, the hello.
 */
#include <errno.h>
#include <sys/stat.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "emd_abi/emd_ctl_msg.h"
#include "emd_abi/emd_region.h"
#include "emd_abi/emd_ring.h"
#include "emd_abi/emd_wire.h"
#include "proto/wire.h"

#include "emd_fixture.h"

static void test_ctl_check(void **st)
{
    (void)st;
    struct emd_ctl_msg m, out;
    const char *why;
    emd_ctl_init(&m, EMD_CTL_ATTACH_OK);
    m.endpoint = 7;
    m.shm_size = 1u << 20;
    assert_int_equal(emd_ctl_check(&m, sizeof m, &out, &why), 0);
    assert_int_equal(out.endpoint, 7);
    assert_int_equal(emd_ctl_check(&m, sizeof m - 1, &out, &why), -1);
    struct emd_ctl_msg b = m;
    b.magic ^= 1;
    assert_int_equal(emd_ctl_check(&b, sizeof b, &out, &why), -1);
    b = m;
    b.version = EMD_VERSION + 1;
    assert_int_equal(emd_ctl_check(&b, sizeof b, &out, &why), -1);
    assert_non_null(strstr(why, "version"));
    b = m;
    b.type = 99;
    assert_int_equal(emd_ctl_check(&b, sizeof b, &out, &why), -1);
    b = m;
    b.endpoint = 0;
    assert_int_equal(emd_ctl_check(&b, sizeof b, &out, &why), -1);
    b = m;
    b.shm_size = EMD_REGION_MAX + 1;
    assert_int_equal(emd_ctl_check(&b, sizeof b, &out, &why), -1);
    b = m;
    memset(b.text, 'x', sizeof b.text); /* unterminated text is cut, not read past */
    assert_int_equal(emd_ctl_check(&b, sizeof b, &out, &why), 0);
    assert_int_equal(out.text[sizeof out.text - 1], 0);
}

static void test_region_check(void **st)
{
    (void)st;
    uint64_t size;
    const char *why;
    struct emd_shm_hdr *h = make_region(&size, 1492, 1u << 16, 32);
    assert_int_equal(emd_shm_check(h, size, 0x1234, 5, &why), 0);
    assert_int_equal(h->slot_size % 64, 0);
    assert_true(h->slot_size >= sizeof(struct emd_slot_hdr) + 1492);
    assert_true((uint64_t)h->rx_off + h->rx_size <= h->tx_off);
    assert_true((uint64_t)h->tx_off + (uint64_t)h->tx_slots * h->slot_size <= size);
    /* what ATTACH_OK said must match */
    assert_int_equal(emd_shm_check(h, size, 0x1235, 5, &why), -1);
    assert_int_equal(emd_shm_check(h, size, 0x1234, 6, &why), -1);
    assert_int_equal(emd_shm_check(h, size - 64, 0x1234, 5, &why), -1);
    assert_int_equal(emd_shm_check(h, 100, 0x1234, 5, &why), -1);
    h->endpoint = 0; /* never given out (a direct-mode address) */
    assert_int_equal(emd_shm_check(h, size, 0x1234, 0, &why), -1);
    h->endpoint = 5;
    /* every layout field is checked */
    struct {
        size_t off;
        uint32_t bad;
    } cases[] = {
        { offsetof(struct emd_shm_hdr, magic), 0 },
        { offsetof(struct emd_shm_hdr, version), 9 },
        { offsetof(struct emd_shm_hdr, hdr_size), 64 },
        { offsetof(struct emd_shm_hdr, slot_size), 64 },
        { offsetof(struct emd_shm_hdr, rx_size), 1000 },
        { offsetof(struct emd_shm_hdr, tx_slots), 1u << 20 },
        { offsetof(struct emd_shm_hdr, rx_off), 0 },
        { offsetof(struct emd_shm_hdr, tx_off), 512 },
        { offsetof(struct emd_shm_hdr, mtu), 20000 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint32_t keep;
        uint8_t *p = (uint8_t *)h + cases[i].off;
        memcpy(&keep, p, 4);
        memcpy(p, &cases[i].bad, 4);
        assert_int_equal(emd_shm_check(h, size, 0x1234, 5, &why), -1);
        memcpy(p, &keep, 4);
        assert_int_equal(emd_shm_check(h, size, 0x1234, 5, &why), 0);
    }
    munmap(h, size);
    uint32_t ss;
    assert_true(emd_shm_size(0, 1u << 16, 64, &ss) == 0);
    assert_true(emd_shm_size(1500, 100000, 64, &ss) == 0);   /* not a power of 2 */
    assert_true(emd_shm_size(1500, 1u << 12, 64, &ss) == 0); /* too small */
    assert_true(emd_shm_size(1500, 1u << 16, 8, &ss) == 0);
    assert_true(emd_shm_size(EMD_MTU_MAX + 1, 1u << 16, 64, &ss) == 0);
    assert_true(emd_shm_size(EMD_MTU_MAX, EMD_RX_SIZE_MAX, 65536, &ss) == 0); /* > 1 GiB */
}

/* ------------------------------------------------------------ rings -- */

/* One region and both ends of its two rings, as the daemon (d) and a
 * client (c) take them: the daemon consumes tx and produces rx. */
struct rings {
    uint64_t size;
    struct emd_shm_hdr *h;
    emd_ring_t dtx, drx, ctx, crx;
};

static void rings_open(struct rings *r, uint32_t mtu)
{
    struct emd_shm_hdr *h = r->h = make_region(&r->size, mtu, 1u << 16, 16);
    emd_ring_init(&r->dtx, &h->tx, (uint8_t *)h + EMD_SHM_RX_OFF + h->rx_size, h->tx_slots,
                  h->slot_size, 0);
    emd_ring_init(&r->drx, &h->rx, (uint8_t *)h + EMD_SHM_RX_OFF, h->rx_size, 0, 0);
    emd_ring_init_tx(&r->ctx, h);
    emd_ring_init_rx(&r->crx, h);
}

static void test_ring_slots(void **st)
{
    (void)st;
    struct rings rg;
    rings_open(&rg, 256);
    /* three laps of 16 slots, in odd batches: every slot arrives once, in order */
    uint32_t sent = 0, got = 0;
    while (got < 48) {
        for (uint32_t k = 0, room = emd_slots_sp_room(&rg.ctx); k < room && k < 5 && sent < 48;
             k++, sent++)
            memcpy(emd_slots_sp_next(&rg.ctx), &sent, 4);
        emd_slots_sp_enqueue(&rg.ctx);
        int64_t av = emd_slots_sc_avail(&rg.dtx);
        assert_true(av >= 0 && av <= 16);
        for (uint32_t k = 0; k < (uint32_t)av && k < 3; k++, got++) {
            uint32_t v;
            memcpy(&v, emd_slots_sc_at(&rg.dtx, k), 4);
            assert_int_equal(v, got);
        }
        emd_slots_sc_dequeue(&rg.dtx, av < 3 ? (uint32_t)av : 3u);
    }
    assert_false(emd_slots_sc_pending(&rg.dtx));
    /* full: no room until the consumer gives slots back */
    for (int k = 0; k < 16; k++)
        (void)emd_slots_sp_next(&rg.ctx);
    assert_int_equal(emd_slots_sp_room(&rg.ctx), 0);
    assert_int_equal(emd_slots_sp_enqueue(&rg.ctx), 16);
    assert_int_equal(emd_slots_sp_room(&rg.ctx), 0);
    /* hostile indices: a tail beyond the ring is corrupt; a head beyond the tail leaves no room */
    atomic_store(&rg.h->tx.tail, rg.dtx.mine + 17);
    assert_int_equal(emd_slots_sc_avail(&rg.dtx), EMD_RING_CORRUPT);
    atomic_store(&rg.h->tx.head, rg.ctx.mine + 5);
    assert_int_equal(emd_slots_sp_room(&rg.ctx), 0);
    munmap(rg.h, rg.size);
}

static void test_ring_records(void **st)
{
    (void)st;
    struct rings rg;
    rings_open(&rg, 1000);
    static uint8_t frame[1000];
    struct emd_slot_hdr sh = { .endpoint = 7, .cls = EMD_CLS_BULK };
    /* two laps of records of every size class, consumed in bursts:
     * contents, order and the filler at each lap's end */
    uint32_t put = 0, taken = 0, len = 1;
    while (taken < 400) {
        for (int k = 0; k < 8; k++) {
            memset(frame, (int)(put & 0xff), 1000);
            int r = emd_recs_sp_put(&rg.drx, sh, frame, len);
            if (r == EMD_RING_FULL)
                break;
            assert_int_equal(r, EMD_RING_OK);
            put++;
            len = len * 7 % 1000 + 1;
        }
        emd_recs_sp_publish(&rg.drx);
        int64_t av = emd_recs_sc_avail(&rg.crx);
        assert_true(av >= 0);
        uint32_t avail = (uint32_t)av;
        struct emd_slot_hdr got;
        uint8_t *f;
        while (emd_recs_sc_take(&rg.crx, &avail, 1000, &got, &f) == 1) {
            assert_int_equal(got.endpoint, 7);
            assert_int_equal(got.cls, EMD_CLS_BULK);
            assert_int_equal(f[0], taken & 0xff);
            assert_int_equal(f[got.len - 1], taken & 0xff);
            taken++;
        }
        assert_int_equal(avail, 0);
        emd_recs_sc_release(&rg.crx);
    }
    assert_true(rg.drx.mine > (2u << 16)); /* it did wrap, twice */
    /* full: the producer says so, never overwrites */
    int r;
    unsigned n = 0;
    while ((r = emd_recs_sp_put(&rg.drx, sh, frame, 1000)) == EMD_RING_OK)
        n++;
    assert_int_equal(r, EMD_RING_FULL);
    assert_true(n >= 63 && n <= 64);
    /* hostile head: not on a record boundary, or ahead of the tail */
    atomic_store(&rg.h->rx.head, rg.crx.mine + 8);
    assert_int_equal(emd_recs_sp_put(&rg.drx, sh, frame, 1), EMD_RING_CORRUPT);
    atomic_store(&rg.h->rx.head, rg.drx.mine + rg.drx.pend + 64);
    assert_int_equal(emd_recs_sp_put(&rg.drx, sh, frame, 1), EMD_RING_CORRUPT);
    /* hostile tail for the consumer: beyond the ring */
    atomic_store(&rg.h->rx.tail, rg.crx.mine + (1u << 16) + 64);
    assert_int_equal(emd_recs_sc_avail(&rg.crx), EMD_RING_CORRUPT);
    assert_non_null(strstr(emd_ring_strerror(EMD_RING_BAD_LEN), "length"));
    munmap(rg.h, rg.size);
}

/* -------------------------------------------------------- fd passing -- */

static void test_fd_passing(void **st)
{
    (void)st;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
    int mfd = memfd_create("t", MFD_CLOEXEC);
    assert_true(mfd >= 0);
    assert_int_equal(ftruncate(mfd, 4096), 0);
    struct emd_ctl_msg m, got;
    emd_ctl_init(&m, EMD_CTL_ATTACH_OK);
    m.shm_size = 4096;
    assert_int_equal(emd_send_fd(sv[0], &m, sizeof m, mfd), 0);
    int fd = -2;
    assert_int_equal(emd_recv_fd(sv[1], &got, sizeof got, &fd), (ssize_t)sizeof got);
    assert_true(fd >= 0 && fd != mfd);
    struct stat sb;
    assert_int_equal(fstat(fd, &sb), 0);
    assert_int_equal(sb.st_size, 4096);
    assert_int_equal(got.shm_size, 4096);
    close(fd);
    /* a message without a descriptor: fd -1 */
    assert_int_equal(send(sv[0], &m, sizeof m, 0), (ssize_t)sizeof m);
    assert_int_equal(emd_recv_fd(sv[1], &got, sizeof got, &fd), (ssize_t)sizeof got);
    assert_int_equal(fd, -1);
    /* a message longer than the buffer: refused, its descriptor closed */
    uint8_t big[200] = { 0 };
    assert_int_equal(emd_send_fd(sv[0], big, sizeof big, mfd), 0);
    assert_int_equal(emd_recv_fd(sv[1], &got, sizeof got, &fd), -1);
    assert_int_equal(fd, -1);
    close(mfd);
    close(sv[0]);
    close(sv[1]);
}

static void test_wire_shim(void **st)
{
    (void)st;
    uint8_t f[64] = { 0 };
    emd_shim_t in = { .cls = EMD_CLS_BULK, .len = 40, .dst = 0x1234, .src = 0xbeef }, out;
    memcpy(in.src_mac, MAC, 6);
    emd_wire_encode(f, &in);
    assert_int_equal(f[0], EMD_WIRE_MAGIC);
    assert_int_equal(f[2], EMD_CLS_BULK);
    assert_int_equal(f[6], 0x12); /* big-endian */
    assert_int_equal(f[9], 0xef);
    assert_memory_equal(f + 10, MAC, 6);
    assert_int_equal(emd_wire_decode(f, 56, &out), EMD_WIRE_OK);
    assert_int_equal(out.len, 40);
    assert_int_equal(out.dst, 0x1234);
    assert_int_equal(out.src, 0xbeef);
    assert_int_equal(out.cls, EMD_CLS_BULK);
    assert_memory_equal(out.src_mac, MAC, 6);
    assert_int_equal(emd_wire_decode(f, 60, &out), EMD_WIRE_OK);      /* padded frame */
    assert_int_equal(emd_wire_decode(f, 55, &out), EMD_WIRE_LEN_BAD); /* truncated */
    assert_int_equal(emd_wire_decode(f, 15, &out), EMD_WIRE_SHORT);
    f[3] = 1; /* reserved */
    assert_int_equal(emd_wire_decode(f, 56, &out), EMD_WIRE_CLS_BAD);
    f[3] = 0;
    f[2] = EMD_CLS_COUNT; /* unknown class */
    assert_int_equal(emd_wire_decode(f, 56, &out), EMD_WIRE_CLS_BAD);
    f[2] = 0;
    f[1] = EMD_VERSION - 1;
    assert_int_equal(emd_wire_decode(f, 56, &out), EMD_WIRE_VERSION_BAD);
    f[0] = 0xE5; /* a direct-mode frame */
    assert_int_equal(emd_wire_decode(f, 56, &out), EMD_WIRE_MAGIC_BAD);
    in.len = 0;
    emd_wire_encode(f, &in);
    assert_int_equal(emd_wire_decode(f, 56, &out), EMD_WIRE_LEN_BAD);
    in.len = 8;
    in.dst = 0;
    emd_wire_encode(f, &in);
    assert_int_equal(emd_wire_decode(f, 56, &out), EMD_WIRE_DST_BAD);
    assert_non_null(strstr(emd_wire_strerror(EMD_WIRE_DST_BAD), "endpoint 0"));
}

static void test_bulkq_check(void **st)
{
    (void)st;
    struct emd_bulkq_info r;
    const char *why;
    fill_bulkq(&r, 4, 3);
    assert_int_equal(emd_bulkq_check(&r, &why), 0);
    fill_bulkq(&r, 4, EMD_BULKQ_NO_SLOT); /* all slots taken */
    assert_int_equal(emd_bulkq_check(&r, &why), 0);
    fill_bulkq(&r, 0, EMD_BULKQ_NO_SLOT); /* no bulk queues */
    snprintf(r.why, sizeof r.why, "the af_xdp wire");
    assert_int_equal(emd_bulkq_check(&r, &why), 0);
    fill_bulkq(&r, 0, 0); /* a slot without a layout */
    assert_int_equal(emd_bulkq_check(&r, &why), -1);
    fill_bulkq(&r, 0, EMD_BULKQ_NO_SLOT);
    r.queues = 5;
    assert_int_equal(emd_bulkq_check(&r, &why), -1);
    fill_bulkq(&r, 4, 4); /* slot beyond S */
    assert_int_equal(emd_bulkq_check(&r, &why), -1);
    assert_non_null(strstr(why, "slot"));
    fill_bulkq(&r, 4, 0);
    r.queues = 16; /* not 1 + S*S */
    assert_int_equal(emd_bulkq_check(&r, &why), -1);
    fill_bulkq(&r, EMD_BULKQ_SLOTS_MAX + 1, 0);
    assert_int_equal(emd_bulkq_check(&r, &why), -1);
    fill_bulkq(&r, EMD_BULKQ_SLOTS_MAX, EMD_BULKQ_SLOTS_MAX - 1);
    assert_int_equal(emd_bulkq_check(&r, &why), 0);
    /* the names become EAL arguments: non-empty, terminated, harmless */
    const char *bad[] = { "", "a b", "x;rm", "--in-memory x", "../p", "a/b" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fill_bulkq(&r, 2, 0);
        snprintf(r.prefix, sizeof r.prefix, "%s", bad[i]);
        assert_int_equal(emd_bulkq_check(&r, &why), -1);
        fill_bulkq(&r, 2, 0);
        snprintf(r.port, sizeof r.port, "%s", bad[i]);
        assert_int_equal(emd_bulkq_check(&r, &why), -1);
    }
    fill_bulkq(&r, 2, 0);
    memset(r.prefix, 'a', sizeof r.prefix); /* unterminated */
    assert_int_equal(emd_bulkq_check(&r, &why), -1);
    fill_bulkq(&r, 2, 0);
    memset(r.why, 'a', sizeof r.why);
    assert_int_equal(emd_bulkq_check(&r, &why), -1);
    /* and it is part of the region check */
    uint64_t size;
    struct emd_shm_hdr *h = make_region(&size, 1492, 1u << 16, 32);
    assert_int_equal(h->bulkq.slot, EMD_BULKQ_NO_SLOT); /* a fresh region offers no bulk queue */
    assert_int_equal(emd_shm_check(h, size, 0x1234, 5, &why), 0);
    fill_bulkq(&h->bulkq, 4, 1);
    assert_int_equal(emd_shm_check(h, size, 0x1234, 5, &why), 0);
    h->bulkq.slot = 9;
    assert_int_equal(emd_shm_check(h, size, 0x1234, 5, &why), -1);
    munmap(h, size);
}

static void test_addr(void **st)
{
    (void)st;
    uint8_t a[16], mac[6];
    uint16_t ep, slots, slot;
    assert_int_equal(emd_addr_encode(a, MAC, 0x1234, 0, 0), EMD_ADDR_LEN);
    assert_int_equal(emd_addr_decode(a, 8, mac, &ep, &slots, &slot), 0);
    assert_int_equal(ep, 0x1234);
    assert_int_equal(slots, 0);
    assert_int_equal(slot, EMD_BULKQ_NO_SLOT);
    assert_memory_equal(mac, MAC, 6);
    assert_int_equal(emd_addr_encode(a, MAC, 7, 4, 3), EMD_ADDR_LEN_BULKQ);
    assert_int_equal(emd_addr_decode(a, 12, mac, &ep, &slots, &slot), 0);
    assert_int_equal(ep, 7);
    assert_int_equal(slots, 4);
    assert_int_equal(slot, 3);
    assert_int_equal(emd_addr_decode(a, 10, mac, &ep, &slots, &slot), -1); /* length */
    uint8_t b[12];
    struct {
        int at;
        uint8_t v;
    } bad[] = {
        { 8, 2 },  /* unknown format */
        { 9, 4 },  /* slot = S */
        { 10, 0 }, /* S = 0 */
        { 10, EMD_BULKQ_SLOTS_MAX + 1 },
        { 11, 1 }, /* reserved byte */
        { 6, 0 },  /* endpoint 0 (with [7] below) */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memcpy(b, a, 12);
        b[bad[i].at] = bad[i].v;
        if (bad[i].at == 6)
            b[7] = 0;
        assert_int_equal(emd_addr_decode(b, 12, mac, &ep, &slots, &slot), -1);
    }
    emd_addr_encode(a, MAC, 0, 0, 0); /* a direct-mode address */
    assert_int_equal(emd_addr_decode(a, 8, mac, &ep, &slots, &slot), -1);
}

/* udp framing: node id = IPv4 + port, packed big-endian */
static void test_addr_udp(void **st)
{
    (void)st;
    static const uint8_t ID[6] = { 10, 77, 1, 2, 0x74, 0x15 }; /* 10.77.1.2:29717 */
    uint8_t a[16], id[6], mac[6];
    uint16_t ep, slots, slot;
    assert_int_equal(emd_addr_encode_udp(a, ID, 0x1234), EMD_ADDR_LEN_UDP);
    static const uint8_t wire[12] = {
        10, 77, 1, 2, 0x74, 0x15, 0x12, 0x34, EMD_ADDR_UDP_V1, 0, 0, 0
    };
    assert_memory_equal(a, wire, 12); /* the diagram, byte by byte */
    assert_int_equal(emd_addr_framing(a, 12, id, &ep), EMD_FRAMING_UDP);
    assert_memory_equal(id, ID, 6);
    assert_int_equal(ep, 0x1234);
    /* the L2 decoder never takes it for a bulk-queue address */
    assert_int_equal(emd_addr_decode(a, 12, mac, &ep, &slots, &slot), -1);
    /* L2 addresses are L2 */
    uint8_t l2[12];
    assert_int_equal(emd_addr_framing(l2, emd_addr_encode(l2, MAC, 3, 0, 0), id, &ep),
                     EMD_FRAMING_L2);
    assert_int_equal(emd_addr_framing(l2, emd_addr_encode(l2, MAC, 3, 4, 1), id, &ep),
                     EMD_FRAMING_L2);
    uint8_t b[12];
    struct {
        int at;
        uint8_t v;
    } bad[] = {
        { 8, 3 },              /* unknown format */
        { 9, 1 },   { 11, 1 }, /* reserved bytes */
        { 6, 0 },              /* endpoint 0 (with [7] below) */
        { 0, 224 },            /* multicast */
        { 0, 0 },              /* 0.77.1.2: with [1..3] below, 0.0.0.0 */
        { 4, 0 },              /* port 0 (with [5] below) */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memcpy(b, a, 12);
        b[bad[i].at] = bad[i].v;
        if (bad[i].at == 6 || bad[i].at == 4)
            b[bad[i].at + 1] = 0;
        if (bad[i].at == 0 && bad[i].v == 0)
            memset(b, 0, 4);
        assert_int_equal(emd_addr_framing(b, 12, id, &ep), -1);
    }
    memset(b, 0xff, 4); /* broadcast */
    assert_int_equal(emd_addr_framing(b, 12, id, &ep), -1);
    assert_int_equal(emd_addr_framing(a, 10, id, &ep), -1); /* length */
    /* node ids a daemon sends to */
    assert_true(emd_node_unicast(EMD_FRAMING_UDP, ID));
    static const uint8_t odd[6] = {
        11, 0, 0, 1, 0x74, 0x15
    }; /* an odd first byte is fine in udp */
    assert_true(emd_node_unicast(EMD_FRAMING_UDP, odd));
    assert_false(emd_node_unicast(EMD_FRAMING_L2, odd)); /* ... a group MAC in L2 */
    assert_true(emd_node_unicast(EMD_FRAMING_L2, MAC));
}

static void test_hello(void **st)
{
    (void)st;
    uint8_t b[32];
    uint8_t kind;
    uint16_t slots, queues;
    emd_hello_encode(b, EMD_HELLO, 4, 17);
    assert_int_equal(emd_hello_decode(b, 16, &kind, &slots, &queues), 0);
    assert_int_equal(kind, EMD_HELLO);
    assert_int_equal(slots, 4);
    assert_int_equal(queues, 17);
    emd_hello_encode(b, EMD_HELLO_REPLY, 0, 1); /* no bulk queues: one queue pair */
    assert_int_equal(emd_hello_decode(b, 16, &kind, &slots, &queues), 0);
    assert_int_equal(emd_hello_decode(b, 15, &kind, &slots, &queues), EMD_WIRE_SHORT); /* short */
    struct {
        int at;
        uint8_t v;
    } bad[] = {
        { 0, 'X' },
        { 4, EMD_VERSION + 1 },
        { 5, 3 },
        { 9, 2 } /* queues != 1 + S*S */,
        { 7, EMD_BULKQ_SLOTS_MAX + 1 },
        { 15, 1 },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        emd_hello_encode(b, EMD_HELLO, 0, 1);
        b[bad[i].at] = bad[i].v;
        assert_int_equal(emd_hello_decode(b, 16, &kind, &slots, &queues), EMD_WIRE_HELLO_BAD);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ctl_check),   cmocka_unit_test(test_region_check),
        cmocka_unit_test(test_ring_slots),  cmocka_unit_test(test_ring_records),
        cmocka_unit_test(test_fd_passing),  cmocka_unit_test(test_wire_shim),
        cmocka_unit_test(test_bulkq_check), cmocka_unit_test(test_addr),
        cmocka_unit_test(test_addr_udp),    cmocka_unit_test(test_hello),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
