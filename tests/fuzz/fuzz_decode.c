/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz target: the header decoder.  Property checked beyond "no crash":
 * whatever the decoder accepts re-encodes to exactly the bytes it read, and
 * the lengths it accepts fit inside the frame.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    em_hdr_t h;
    uint8_t out[EM_HDR_LEN + EM_PUT_EXT_LEN];

    if (em_hdr_decode(data, size, &h) != EM_DEC_OK)
        return 0;
    size_t hl = em_hdr_len(h.type);
    if (hl + h.len > size)
        abort();
    if (h.frag_cnt && h.frag_no >= h.frag_cnt)
        abort();
    if (em_hdr_encode(&h, out) != hl || memcmp(out, data, hl) != 0)
        abort();
    return 0;
}
