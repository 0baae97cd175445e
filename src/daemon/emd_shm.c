/**
 * @file emd_shm.c
 * Layout, validation and wire-shim helpers shared by emd and link_emd
 * (see emd_shm.h).
 */
#include "daemon/emd_shm.h"

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
    if (out->type < EMD_CTL_ATTACH_REQ || out->type > EMD_CTL_WAKE) {
        *why = "control message of unknown type";
        return -1;
    }
    if (out->type == EMD_CTL_ATTACH_OK &&
        (out->endpoint == 0 || out->shm_size < EMD_SHM_HDR_SIZE || out->shm_size > EMD_REGION_MAX)) {
        *why = "ATTACH_OK with a bad endpoint or region size";
        return -1;
    }
    out->text[sizeof out->text - 1] = 0;
    return 0;
}

uint64_t emd_shm_size(uint32_t mtu, uint32_t rx_size, uint32_t tx_slots, uint32_t *slot_size)
{
    if (mtu == 0 || mtu > EMD_MTU_MAX || !pow2(rx_size) || !pow2(tx_slots) ||
        rx_size < EMD_RX_SIZE_MIN || rx_size > EMD_RX_SIZE_MAX ||
        tx_slots < EMD_SLOTS_MIN || tx_slots > EMD_SLOTS_MAX)
        return 0;
    uint32_t ss = emd_rec_size(mtu);
    uint64_t size = EMD_SHM_HDR_SIZE + 64u + (uint64_t)rx_size + (uint64_t)ss * tx_slots;
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
    h->rx_off = 512u;                       /* header rounded up to a cache line multiple */
    h->tx_off = 512u + rx_size;
    h->total_size = size;
    h->instance = instance;
    h->mtu = mtu;
    h->endpoint = endpoint;
    memcpy(h->mac, mac, 6);
    atomic_store(&h->state, EMD_STATE_RUNNING);
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
    if (h->instance != instance || h->endpoint != endpoint || h->total_size != size) {
        *why = "shared region does not match the ATTACH_OK message";
        return -1;
    }
    uint32_t ss = 0;
    uint64_t want = emd_shm_size(h->mtu, h->rx_size, h->tx_slots, &ss);
    if (want == 0 || want != size || ss != h->slot_size || h->mtu < 64) {
        *why = "shared region with inconsistent ring sizes";
        return -1;
    }
    if (h->rx_off != 512u || (uint64_t)h->tx_off != 512u + (uint64_t)h->rx_size) {
        *why = "shared region with bad ring offsets";
        return -1;
    }
    return 0;
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
