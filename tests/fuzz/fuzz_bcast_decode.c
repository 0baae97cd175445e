/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz target: the broadcast channel's frame decoder (src/bcast/bcast_wire.h).
 * The first 4 input bytes choose what the receiver expects (member count and
 * vector length), the rest is the frame.  Properties beyond "no crash":
 * an accepted frame's elements fit inside it, its run fits inside the
 * vector, its sender is a member, and its header re-encodes to exactly the
 * bytes that were read.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bcast/bcast_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4)
        return 0;
    em_bc_expect_t ex = { .key = 0xC0FFEEu,
                          .channel = 3,
                          .members = (uint16_t)(data[0] % 8),
                          .vec_len = (uint32_t)data[1] << 16 | (uint32_t)data[2] << 8 | data[3] };
    const uint8_t *f = data + 4;
    size_t len = size - 4;
    em_bc_hdr_t h;
    int r = em_bc_decode(f, len, &ex, &h);
    if (r < 0 || r >= EM_BC_NREASONS)
        abort();
    if (r != EM_BC_OK)
        return 0;
    if (EM_BC_HDR_LEN + (size_t)h.count * EM_BC_ELEM_SIZE > len || h.count == 0)
        abort();
    if ((uint64_t)h.offset + h.count > ex.vec_len || h.sender >= ex.members)
        abort();
    uint8_t out[EM_BC_HDR_LEN];
    em_bc_encode_hdr(&h, out);
    if (memcmp(out, f, EM_BC_HDR_LEN) != 0)
        abort();
    double sum = 0;
    for (uint16_t i = 0; i < h.count; i++)
        sum += em_bc_get_f64(f + EM_BC_HDR_LEN + (size_t)i * EM_BC_ELEM_SIZE);
    (void)sum;
    return 0;
}
