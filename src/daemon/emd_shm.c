/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file emd_shm.c
 * Layout, validation and wire-shim helpers shared by emd and link_emd
 * (see emd_shm.h).
 */
#include "daemon/emd_shm.h"

#include <stdio.h>
#include <string.h>

static int pow2(uint32_t v) { return v && !(v & (v - 1)); }

void emd_ctl_init(struct emd_ctl_msg *m, uint16_t type)
{
    memset(m, 0, sizeof *m);
    m->magic = EMD_CTL_MAGIC;
    m->version = EMD_VERSION;
    m->type = type;
}

int emd_ctl_check(const void *buf, size_t len, struct emd_ctl_msg *out, const char **why)
{
    if (len != sizeof *out) {
        *why = "control message of the wrong size";
        return -1;
    }
    memcpy(out, buf, sizeof *out);
    if (out->magic != EMD_CTL_MAGIC) {
        *why = "control message with a bad magic (not an emd peer)";
        return -1;
    }
    if (out->version != EMD_VERSION) {
        *why = "emd protocol version mismatch (daemon and client from different builds)";
        return -1;
    }
    if (out->type < EMD_CTL_ATTACH_REQ || out->type > EMD_CTL_STATUS_REQ) {
        *why = "control message of unknown type";
        return -1;
    }
    if (out->type == EMD_CTL_ATTACH_OK &&
        (out->endpoint == 0 || out->shm_size < EMD_SHM_HDR_SIZE || out->shm_size > EMD_REGION_MAX)) {
        *why = "ATTACH_OK with a bad endpoint or region size";
        return -1;
    }
    if (out->type == EMD_CTL_FLOW) {
        const struct emd_ctl_flow *f = &out->flow;
        int rsvd = 0;
        for (size_t i = 0; i < sizeof f->rsvd; i++)
            rsvd |= f->rsvd[i];
        if (f->self == f->peer || f->frame_max < 64 || f->frame_max > EMD_MTU_MAX || rsvd) {
            *why = "FLOW with equal endpoints, a bad frame size or reserved bytes set";
            return -1;
        }
        return 0;
    }
    out->text[sizeof out->text - 1] = 0;
    return 0;
}

int emd_status_check(const void *buf, size_t len, struct emd_ctl_status *out, const char **why)
{
    if (len != sizeof *out) {
        *why = "STATUS reply of the wrong size (daemon from another build?)";
        return -1;
    }
    memcpy(out, buf, sizeof *out);
    if (out->magic != EMD_CTL_MAGIC || out->type != EMD_CTL_STATUS) {
        *why = "not a STATUS reply";
        return -1;
    }
    if (out->version != EMD_VERSION || out->layout != EMD_STATUS_LAYOUT) {
        *why = "STATUS reply of another protocol version or layout (daemon from another build)";
        return -1;
    }
    if (out->count == 0 || out->count > EMD_STATUS_MAX) {
        *why = "STATUS reply with a bad counter count";
        return -1;
    }
    return 0;
}

uint64_t emd_shm_size(uint32_t mtu, uint32_t rx_size, uint32_t tx_slots, uint32_t *slot_size)
{
    if (mtu == 0 || mtu > EMD_MTU_MAX || !pow2(rx_size) || !pow2(tx_slots) ||
        rx_size < EMD_RX_SIZE_MIN || rx_size > EMD_RX_SIZE_MAX ||
        tx_slots < EMD_SLOTS_MIN || tx_slots > EMD_SLOTS_MAX)
        return 0;
    uint32_t ss = emd_rec_size(mtu);
    uint64_t size = EMD_SHM_RX_OFF + (uint64_t)rx_size + (uint64_t)ss * tx_slots;
    if (size > EMD_REGION_MAX)
        return 0;
    *slot_size = ss;
    return size;
}

void emd_shm_init(struct emd_shm_hdr *h, uint64_t size, uint32_t mtu, uint32_t rx_size,
                  uint32_t tx_slots, uint64_t instance, uint16_t endpoint, const uint8_t mac[6])
{
    uint32_t ss = 0;
    (void)emd_shm_size(mtu, rx_size, tx_slots, &ss);
    h->magic = EMD_SHM_MAGIC;
    h->version = EMD_VERSION;
    h->hdr_size = EMD_SHM_HDR_SIZE;
    h->slot_size = ss;
    h->rx_size = rx_size;
    h->tx_slots = tx_slots;
    h->rx_off = EMD_SHM_RX_OFF;
    h->tx_off = EMD_SHM_RX_OFF + rx_size;
    h->total_size = size;
    h->instance = instance;
    h->mtu = mtu;
    h->endpoint = endpoint;
    memcpy(h->mac, mac, 6);
    h->rdv.slot = EMD_RDV_NO_SLOT;          /* no own queue until the daemon gives one */
    snprintf(h->rdv.why, sizeof h->rdv.why, "the daemon offers no own queues");
    atomic_store(&h->state, EMD_STATE_RUNNING);
}

/* a name that goes into EAL arguments: non-empty, terminated, harmless */
static int good_name(const char *s, size_t cap)
{
    size_t n = strnlen(s, cap);
    if (n == 0 || n == cap)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.'))
            return 0;
    }
    return 1;
}

int emd_rdv_check(const struct emd_rdv_info *r, const char **why)
{
    if (strnlen(r->why, sizeof r->why) == sizeof r->why) {
        *why = "own-queue block with an unterminated reason";
        return -1;
    }
    if (r->slots == 0) {
        if (r->slot != EMD_RDV_NO_SLOT || r->queues != 0) {
            *why = "own-queue block: a slot or queues without own queues";
            return -1;
        }
        return 0;
    }
    if (r->slots > EMD_RDV_SLOTS_MAX || r->queues != 1u + (uint32_t)r->slots * r->slots) {
        *why = "own-queue block with a bad queue layout";
        return -1;
    }
    if (r->slot != EMD_RDV_NO_SLOT && r->slot >= r->slots) {
        *why = "own-queue block with a slot beyond the layout";
        return -1;
    }
    if (!good_name(r->prefix, sizeof r->prefix) || !good_name(r->port, sizeof r->port)) {
        *why = "own-queue block with a bad EAL file prefix or port name";
        return -1;
    }
    return 0;
}

uint8_t emd_addr_encode(uint8_t *out, const uint8_t mac[6], uint16_t ep, uint16_t slots, uint16_t slot)
{
    memcpy(out, mac, 6);
    out[6] = (uint8_t)(ep >> 8);
    out[7] = (uint8_t)ep;
    if (slots == 0)
        return EMD_ADDR_LEN;
    out[8] = EMD_ADDR_RDV_V1;
    out[9] = (uint8_t)slot;
    out[10] = (uint8_t)slots;
    out[11] = 0;
    return EMD_ADDR_LEN_RDV;
}

int emd_addr_decode(const uint8_t *a, size_t len, uint8_t mac[6], uint16_t *ep, uint16_t *slots,
                    uint16_t *slot)
{
    if (len != EMD_ADDR_LEN && len != EMD_ADDR_LEN_RDV)
        return -1;
    uint16_t e = (uint16_t)(a[6] << 8 | a[7]);
    if (e == 0)
        return -1;                          /* a direct-mode address (queue 0) */
    uint16_t s = 0, sl = EMD_RDV_NO_SLOT;
    if (len == EMD_ADDR_LEN_RDV) {
        if (a[8] != EMD_ADDR_RDV_V1 || a[10] == 0 || a[10] > EMD_RDV_SLOTS_MAX || a[9] >= a[10] ||
            a[11] != 0)
            return -1;
        s = a[10];
        sl = a[9];
    }
    memcpy(mac, a, 6);
    *ep = e;
    *slots = s;
    *slot = sl;
    return 0;
}

int emd_shm_check(const struct emd_shm_hdr *h, uint64_t size, uint64_t instance,
                  uint16_t endpoint, const char **why)
{
    if (size < EMD_SHM_HDR_SIZE) {
        *why = "shared region smaller than its header";
        return -1;
    }
    if (h->magic != EMD_SHM_MAGIC) {
        *why = "shared region with a bad magic";
        return -1;
    }
    if (h->version != EMD_VERSION || h->hdr_size != EMD_SHM_HDR_SIZE) {
        *why = "shared region layout version mismatch (daemon and client from different builds)";
        return -1;
    }
    if (h->instance != instance || h->endpoint != endpoint || h->endpoint == 0 || h->total_size != size) {
        *why = "shared region does not match the ATTACH_OK message";
        return -1;
    }
    uint32_t ss = 0;
    uint64_t want = emd_shm_size(h->mtu, h->rx_size, h->tx_slots, &ss);
    if (want == 0 || want != size || ss != h->slot_size || h->mtu < 64) {
        *why = "shared region with inconsistent ring sizes";
        return -1;
    }
    if (h->rx_off != EMD_SHM_RX_OFF || (uint64_t)h->tx_off != EMD_SHM_RX_OFF + (uint64_t)h->rx_size) {
        *why = "shared region with bad ring offsets";
        return -1;
    }
    return emd_rdv_check(&h->rdv, why);
}

void emd_wire_encode(uint8_t *p, uint16_t len, uint16_t dst, uint16_t src, const uint8_t src_mac[6])
{
    p[0] = EMD_WIRE_MAGIC;
    p[1] = EMD_VERSION;
    p[2] = (uint8_t)(len >> 8);
    p[3] = (uint8_t)len;
    p[4] = (uint8_t)(dst >> 8);
    p[5] = (uint8_t)dst;
    p[6] = (uint8_t)(src >> 8);
    p[7] = (uint8_t)src;
    memcpy(p + 8, src_mac, 6);
}

int emd_wire_decode(const uint8_t *p, size_t frame_len, uint16_t *len, uint16_t *dst, uint16_t *src,
                    uint8_t src_mac[6])
{
    if (frame_len < EMD_WIRE_HDR_LEN || p[0] != EMD_WIRE_MAGIC || p[1] != EMD_VERSION)
        return -1;
    uint16_t l = (uint16_t)(p[2] << 8 | p[3]);
    /* frames may carry padding (Ethernet minimum size): len bounds the payload */
    if (l == 0 || (size_t)l > frame_len - EMD_WIRE_HDR_LEN)
        return -1;
    *len = l;
    *dst = (uint16_t)(p[4] << 8 | p[5]);
    *src = (uint16_t)(p[6] << 8 | p[7]);
    memcpy(src_mac, p + 8, 6);
    return *dst ? 0 : -1;
}

void emd_hello_encode(uint8_t *p, uint8_t kind, uint16_t slots, uint16_t queues)
{
    memset(p, 0, sizeof(struct emd_hello));
    memcpy(p, EMD_HELLO_MAGIC, 4);
    p[4] = EMD_VERSION;
    p[5] = kind;
    p[6] = (uint8_t)(slots >> 8);
    p[7] = (uint8_t)slots;
    p[8] = (uint8_t)(queues >> 8);
    p[9] = (uint8_t)queues;
}

int emd_hello_decode(const uint8_t *p, size_t len, uint8_t *kind, uint16_t *slots, uint16_t *queues)
{
    if (len < sizeof(struct emd_hello) || memcmp(p, EMD_HELLO_MAGIC, 4) != 0 || p[4] != EMD_VERSION ||
        (p[5] != EMD_HELLO && p[5] != EMD_HELLO_REPLY))
        return -1;
    for (int i = 10; i < 16; i++)
        if (p[i])
            return -1;
    uint16_t s = (uint16_t)(p[6] << 8 | p[7]), q = (uint16_t)(p[8] << 8 | p[9]);
    if (s > EMD_RDV_SLOTS_MAX || q != (s ? 1u + (unsigned)s * s : 1u))
        return -1;
    *kind = p[5];
    *slots = s;
    *queues = q;
    return 0;
}
