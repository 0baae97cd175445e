/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz target: everything emd and link_emd read from the other process.
 * The first input byte picks what the rest is:
 *   0  a control message         (emd_ctl_check)
 *   1  a region header           (emd_shm_check over a valid region whose
 *                                 header the input overwrites)
 *   2  a frame after Ethernet    (emd_wire_decode)
 *   3  the rx ring as a daemon   (link_emd's rx_burst/rx_release: u32 start,
 *      could have left it         u32 length, then the ring's bytes from start
 *                                 on, wrapping at the end)
 *   4  a peer's address          (emd_addr_decode: the modex blob)
 *   5  another daemon's hello    (emd_hello_decode)
 * (mode 1 covers the bulk-queue block too: it is part of the header, and an
 * accepted header is also opened as a link whose bulk-queue opener checks
 * what it is handed)
 * Properties beyond "no crash": what is accepted is in bounds (slots inside
 * the region, lengths inside the frame, lent frames inside their slot).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emd_abi/emd_ctl_msg.h"
#include "emd_abi/emd_region.h"
#include "emd_abi/emd_ring.h"
#include "emd_abi/emd_wire.h"
#include "link/link_emd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MTU     256u
#define RX_SIZE (1u << 16)
#define SLOTS   16u

static uint8_t region[1u << 17] __attribute__((aligned(64)));

static uint64_t fresh_region(void)
{
    static const uint8_t mac[6] = { 2, 0xe7, 0, 0, 0, 1 };
    uint32_t ss;
    uint64_t sz = emd_shm_size(MTU, RX_SIZE, SLOTS, &ss);
    if (sz == 0 || sz > sizeof region)
        abort();
    memset(region, 0, (size_t)sz);
    emd_shm_init((struct emd_shm_hdr *)region, sz, MTU, RX_SIZE, SLOTS, 42, 3, mac);
    return sz;
}

static void ctl(const uint8_t *d, size_t n)
{
    struct emd_ctl_msg m;
    const char *why;
    if (emd_ctl_check(d, n, &m, &why) != 0)
        return;
    /* FLOW's bytes overlap text (checked field by field instead) */
    if (m.type < EMD_CTL_ATTACH_REQ || m.type > EMD_CTL_STATUS_REQ ||
        (m.type != EMD_CTL_FLOW && m.text[sizeof m.text - 1]))
        abort();
    if (m.type == EMD_CTL_ATTACH_OK && (m.endpoint == 0 || m.shm_size > EMD_REGION_MAX))
        abort();
}

static void quiet(void *ctx, const char *why);

/* the bulk-queue opener: what it is handed must be what the checks allow */
static em_link_t *check_bulkq(void *ctx, const em_emd_bulkq_t *r, char *err, size_t errlen)
{
    (void)ctx;
    if (!r->slots || r->slots > EMD_BULKQ_SLOTS_MAX || r->slot >= r->slots || !r->endpoint ||
        strlen(r->file_prefix) >= EMD_BULKQ_NAME_LEN || strlen(r->port) >= EMD_BULKQ_NAME_LEN ||
        !r->file_prefix[0] || !r->port[0] || strpbrk(r->file_prefix, " /;") ||
        strpbrk(r->port, " /;"))
        abort();
    snprintf(err, errlen, "fuzzing: no bulk queue");
    return NULL;
}

static void header(const uint8_t *d, size_t n)
{
    uint64_t sz = fresh_region();
    struct emd_shm_hdr *h = (struct emd_shm_hdr *)region;
    memcpy(region, d, n < EMD_SHM_HDR_SIZE ? n : EMD_SHM_HDR_SIZE);
    const char *why;
    if (emd_shm_check(h, sz, h->instance, h->endpoint, &why) != 0)
        return;
    if ((uint64_t)h->rx_off + h->rx_size > h->tx_off ||
        (uint64_t)h->tx_off + (uint64_t)h->tx_slots * h->slot_size > sz ||
        h->slot_size < sizeof(struct emd_slot_hdr) + h->mtu || h->rx_off < EMD_SHM_HDR_SIZE)
        abort();
    const struct emd_bulkq_info *r = &h->bulkq;
    if (r->slots > EMD_BULKQ_SLOTS_MAX || memchr(r->why, 0, sizeof r->why) == NULL ||
        (r->slots == 0 && (r->slot != EMD_BULKQ_NO_SLOT || r->queues)) ||
        (r->slots &&
         (r->queues != 1u + (unsigned)r->slots * r->slots ||
          (r->slot != EMD_BULKQ_NO_SLOT && r->slot >= r->slots) ||
          !memchr(r->prefix, 0, sizeof r->prefix) || !memchr(r->port, 0, sizeof r->port))))
        abort();
    /* open it as a link: the bulk-queue opener sees only checked values */
    char err[600];
    int udp = (h->flags & EMD_SHM_F_UDP) != 0; /* the job asks the daemon's framing */
    em_emd_cfg_t cfg = { .dead_cb = quiet,
                         .bulk_open = check_bulkq,
                         .note_cb = quiet,
                         .bulk_mode = (n > 8 && (d[8] & 1)) ? EM_EMD_BULKQ_ON : EM_EMD_BULKQ_AUTO,
                         .framing = udp ? EMD_FRAMING_UDP : EMD_FRAMING_L2 };
    em_link_t *l = em_link_emd_from_region(region, sz, h->instance, h->endpoint, &cfg, err,
                                           sizeof err);
    if (l) {
        if (l->local.len !=
            (udp ? EMD_ADDR_LEN_UDP : EMD_ADDR_LEN)) /* check_bulkq never gives a link */
            abort();
        em_link_close(l);
    } else if (!memchr(err, 0, sizeof err)) {
        abort();
    }
}

static void addr(const uint8_t *d, size_t n)
{
    uint8_t mac[6];
    uint16_t ep, slots, slot;
    int fr = emd_addr_framing(d, n, mac, &ep);
    if (fr == EMD_FRAMING_UDP) { /* udp: a valid node id, and it encodes back the same */
        uint8_t back[EMD_ADDR_LEN_UDP];
        if (n != EMD_ADDR_LEN_UDP || ep == 0 || !emd_node_unicast(fr, mac) ||
            emd_addr_encode_udp(back, mac, ep) != n || memcmp(back, d, n) != 0)
            abort();
        return;
    }
    if (emd_addr_decode(d, n, mac, &ep, &slots, &slot) != 0)
        return;
    if (fr != EMD_FRAMING_L2)
        abort();
    if (ep == 0 || (n != EMD_ADDR_LEN && n != EMD_ADDR_LEN_BULKQ) || slots > EMD_BULKQ_SLOTS_MAX ||
        (n == EMD_ADDR_LEN && slots != 0) || (slots && slot >= slots) || memcmp(mac, d, 6) != 0)
        abort();
    uint8_t back[EMD_ADDR_LEN_BULKQ];
    if (emd_addr_encode(back, mac, ep, slots, slot) != n || memcmp(back, d, n) != 0)
        abort();
}

static void wire(const uint8_t *d, size_t n)
{
    emd_shim_t sh;
    int r = emd_wire_decode(d, n, &sh);
    if (r != EMD_WIRE_OK) {
        if (r < EMD_WIRE_SHORT || r > EMD_WIRE_HELLO_BAD || !emd_wire_strerror(r)[0])
            abort(); /* every refusal has a reason */
        return;
    }
    if ((size_t)sh.len + EMD_WIRE_HDR_LEN > n || sh.dst == 0 || sh.len == 0 ||
        sh.cls >= EMD_CLS_COUNT)
        abort();
    uint8_t back[EMD_WIRE_HDR_LEN];
    emd_wire_encode(back, &sh);
    if (memcmp(back, d, EMD_WIRE_HDR_LEN) != 0)
        abort(); /* decode then encode gives the same bytes */
}

static void quiet(void *ctx, const char *why)
{
    (void)ctx;
    (void)why;
}

static void ring(const uint8_t *d, size_t n)
{
    uint64_t sz = fresh_region();
    struct emd_shm_hdr *h = (struct emd_shm_hdr *)region;
    char err[256];
    em_emd_cfg_t cfg = { .rx_loss = (n && d[0] & 1) ? 0.5 : 0, .dead_cb = quiet };
    uint32_t start = 0, len = 0;
    if (n >= 8) {
        memcpy(&start, d, 4);
        memcpy(&len, d + 4, 4);
        d += 8;
        n -= 8;
    }
    start &= ~63u; /* the daemon's positions are record boundaries */
    /* a hostile daemon: any bytes anywhere in the ring, any indices */
    uint8_t *ring_base = region + h->rx_off;
    for (size_t i = 0; i < n && i < RX_SIZE; i++)
        ring_base[(start + (uint32_t)i) & (RX_SIZE - 1)] = d[i];
    atomic_store(&h->rx.head, start);
    atomic_store(&h->rx.tail, start + len);
    em_link_t *l = em_link_emd_from_region(region, sz, 42, 3, &cfg, err, sizeof err);
    if (!l)
        abort();
    for (int round = 0; round < 4; round++) {
        em_pkt_t *p[32];
        unsigned k = em_link_rx_burst(l, p, 32);
        for (unsigned i = 0; i < k; i++) {
            const uint8_t *lo = region + h->rx_off, *hi = region + h->rx_off + h->rx_size;
            if (p[i]->data < lo || p[i]->data + p[i]->len > hi || p[i]->len > MTU || p[i]->len == 0)
                abort();
        }
        if (k)
            em_link_rx_release(l, p, k);
    }
    em_link_close(l);
}

static void hello(const uint8_t *d, size_t n)
{
    uint8_t kind, back[16];
    uint16_t slots, queues;
    if (emd_hello_decode(d, n, &kind, &slots, &queues) != EMD_WIRE_OK)
        return;
    if (slots > EMD_BULKQ_SLOTS_MAX || queues != emd_bulkq_queues(slots) ||
        (kind != EMD_HELLO && kind != EMD_HELLO_REPLY))
        abort();
    emd_hello_encode(back, kind, slots, queues);
    if (memcmp(back, d, 16) != 0)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    switch (data[0] % 6) {
    case 0: ctl(data + 1, size - 1); break;
    case 1: header(data + 1, size - 1); break;
    case 2: wire(data + 1, size - 1); break;
    case 3: ring(data + 1, size - 1); break;
    case 4: addr(data + 1, size - 1); break;
    default: hello(data + 1, size - 1); break;
    }
    return 0;
}
