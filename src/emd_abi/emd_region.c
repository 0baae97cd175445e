/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file emd_region.c
 * The shared region's layout and the client's checks of it (emd_region.h).
 */
#include "emd_abi/emd_region.h"

#include <stdio.h>
#include <string.h>

static int pow2(uint32_t v) { return v && !(v & (v - 1)); }

uint64_t emd_shm_size(uint32_t mtu, uint32_t rx_size, uint32_t tx_slots, uint32_t *slot_size)
{
    if (mtu == 0 || mtu > EMD_MTU_MAX || !pow2(rx_size) || !pow2(tx_slots) ||
        rx_size < EMD_RX_SIZE_MIN || rx_size > EMD_RX_SIZE_MAX || tx_slots < EMD_SLOTS_MIN ||
        tx_slots > EMD_SLOTS_MAX)
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
    h->bulkq.slot = EMD_BULKQ_NO_SLOT; /* no bulk queue until the daemon gives one */
    snprintf(h->bulkq.why, sizeof h->bulkq.why, "the daemon offers no bulk queues");
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

int emd_bulkq_check(const struct emd_bulkq_info *r, const char **why)
{
    if (strnlen(r->why, sizeof r->why) == sizeof r->why) {
        *why = "bulk-queue block with an unterminated reason";
        return -1;
    }
    if (r->slots == 0) {
        if (r->slot != EMD_BULKQ_NO_SLOT || r->queues != 0) {
            *why = "bulk-queue block: a slot or queues without bulk queues";
            return -1;
        }
        return 0;
    }
    if (r->slots > EMD_BULKQ_SLOTS_MAX || r->queues != emd_bulkq_queues(r->slots)) {
        *why = "bulk-queue block with a bad queue layout";
        return -1;
    }
    if (r->slot != EMD_BULKQ_NO_SLOT && r->slot >= r->slots) {
        *why = "bulk-queue block with a slot beyond the layout";
        return -1;
    }
    if (!good_name(r->prefix, sizeof r->prefix) || !good_name(r->port, sizeof r->port)) {
        *why = "bulk-queue block with a bad EAL file prefix or port name";
        return -1;
    }
    return 0;
}

int emd_shm_check(const struct emd_shm_hdr *h, uint64_t size, uint64_t instance, uint16_t endpoint,
                  const char **why)
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
    if (h->instance != instance || h->endpoint != endpoint || h->endpoint == 0 ||
        h->total_size != size) {
        *why = "shared region does not match the ATTACH_OK message";
        return -1;
    }
    uint32_t ss = 0;
    uint64_t want = emd_shm_size(h->mtu, h->rx_size, h->tx_slots, &ss);
    if (want == 0 || want != size || ss != h->slot_size || h->mtu < 64) {
        *why = "shared region with inconsistent ring sizes";
        return -1;
    }
    if (h->rx_off != EMD_SHM_RX_OFF ||
        (uint64_t)h->tx_off != EMD_SHM_RX_OFF + (uint64_t)h->rx_size) {
        *why = "shared region with bad ring offsets";
        return -1;
    }
    return emd_bulkq_check(&h->bulkq, why);
}
