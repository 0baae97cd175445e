/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What test_emd_abi.c and test_link_emd.c share: a node MAC, a region laid
 * out as the daemon lays it out, a bulk-queue block.
 */
#ifndef EM_TESTS_EMD_FIXTURE_H
#define EM_TESTS_EMD_FIXTURE_H

static const uint8_t MAC[6] = { 0x02, 0xe7, 0, 0, 0, 1 };

/** A fresh region (shared anonymous memory), instance 0x1234, endpoint 5. */
static struct emd_shm_hdr *make_region(uint64_t *size, uint32_t mtu, uint32_t rx, uint32_t tx)
{
    uint32_t ss;
    *size = emd_shm_size(mtu, rx, tx, &ss);
    assert_true(*size > 0);
    void *mem = mmap(NULL, *size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(mem != MAP_FAILED);
    emd_shm_init(mem, *size, mtu, rx, tx, 0x1234, 5, MAC);
    return mem;
}

static void fill_bulkq(struct emd_bulkq_info *r, uint16_t slots, uint16_t slot)
{
    memset(r, 0, sizeof *r);
    r->slots = slots;
    r->slot = slot;
    r->queues = slots ? (uint16_t)(1u + (unsigned)slots * slots) : 0;
    if (slots) {
        snprintf(r->prefix, sizeof r->prefix, "emd-h5-n0");
        snprintf(r->port, sizeof r->port, "net_memif0");
    }
}

#endif
