/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz target: em_halo's table-description decoder (src/halo/halo_table.c),
 * the one parser em_halo runs on bytes a peer sent.  Properties checked
 * beyond "no crash": an accepted description has counts and sizes in range,
 * re-encodes to exactly the bytes read, and compares equal with its mirror
 * image (my sends = your receives) from both ends.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "halo/halo_table.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static uint64_t sizes[2 * EM_HALO_MAX_ITEMS];
    static uint8_t out[EM_HALO_DESC_LEN(EM_HALO_MAX_ITEMS, EM_HALO_MAX_ITEMS)];
    struct em_halo_sizes t, mirror;
    char why[256], msg[512];

    why[0] = '\0';
    if (em_halo_desc_decode(data, size, &t, sizes, 2 * EM_HALO_MAX_ITEMS, why, sizeof(why)) !=
        EM_HALO_OK) {
        if (why[0] == '\0' || memchr(why, '\0', sizeof(why)) == NULL)
            abort(); /* a rejection always says why */
        return 0;
    }
    if (t.nsend > EM_HALO_MAX_ITEMS || t.nrecv > EM_HALO_MAX_ITEMS ||
        size != EM_HALO_DESC_LEN(t.nsend, t.nrecv))
        abort();
    for (uint32_t i = 0; i < t.nsend; i++)
        if (t.send[i] == 0 || t.send[i] > EM_HALO_MAX_ITEM_SIZE)
            abort();
    for (uint32_t i = 0; i < t.nrecv; i++)
        if (t.recv[i] == 0 || t.recv[i] > EM_HALO_MAX_ITEM_SIZE)
            abort();
    if (em_halo_desc_encode(&t, out, sizeof(out)) != size || memcmp(out, data, size) != 0)
        abort();
    mirror.nsend = t.nrecv;
    mirror.nrecv = t.nsend;
    mirror.send = t.recv;
    mirror.recv = t.send;
    if (em_halo_table_compare(0, 1, &t, &mirror, msg, sizeof(msg)) != EM_HALO_OK ||
        em_halo_table_compare(1, 0, &mirror, &t, msg, sizeof(msg)) != EM_HALO_OK)
        abort();
    /* a self-neighbour with identical send and receive tables also matches
	 * only when the counts agree */
    if (em_halo_table_compare(0, 0, &t, &t, msg, sizeof(msg)) == EM_HALO_OK && t.nsend != t.nrecv)
        abort();
    return 0;
}
