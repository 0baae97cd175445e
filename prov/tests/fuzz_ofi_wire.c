/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz target: the provider's decoders (prov/emo_wire.c), which read every
 * message a peer sends and every address an application inserts.  Input
 * byte 0 chooses the engine tag (the claimed type) or, when 0xAD, the
 * address decoder; the rest is the message.  Properties beyond "no crash":
 * a message that decodes re-encodes to the same 56 header bytes, its
 * fields obey its type's rules (EAGER: length = payload; CTS: a non-zero
 * grant names a region; FIN: no key; READ: a non-zero read names a
 * region; RDONE: a status or a length, never both; WDATA: carries data
 * and names no region of its own, its key and offset being the write's),
 * and an address that decodes re-encodes to the same bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "emo_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t sel = data[0];
    const uint8_t *m = data + 1;
    size_t n = size - 1;
    if (sel == 0xAD) {
        emo_addr_t a;
        if (emo_addr_decode(m, n, &a) == 0) {
            uint8_t again[EMO_ADDR_LEN];
            emo_addr_encode(&a, again);
            if (n != EMO_ADDR_LEN || memcmp(again, m, EMO_ADDR_LEN) != 0)
                abort();
        }
        return 0;
    }
    emo_hdr_t h;
    emo_dec_err_t e = emo_hdr_decode(sel, m, n, &h);
    if ((unsigned)e >= EMO_DEC_COUNT)
        abort();
    if (e != EMO_DEC_OK)
        return 0;
    uint8_t again[EMO_HDR_LEN];
    emo_hdr_encode(&h, again);
    if (memcmp(again, m, EMO_HDR_LEN) != 0 || h.type != sel)
        abort();
    switch (h.type) {
    case EMO_T_EAGER:
        if (h.len != n - h.off ||
            h.off != EMO_HDR_LEN + ((h.flags & EMO_F_HELLO) ? EMO_ADDR_LEN : 0))
            abort();
        break;
    case EMO_T_CTS:
        if ((h.len && !h.region) || !h.s_cookie || !h.r_cookie || h.flags)
            abort();
        break;
    case EMO_T_FIN:
        if (h.key || h.region || !h.r_cookie || h.flags)
            abort();
        break;
    case EMO_T_RTS:
        if (!h.s_cookie || n != h.off)
            abort();
        break;
    case EMO_T_READ:
        if ((h.len && !h.region) || !h.s_cookie || h.r_cookie || h.flags || n != h.off)
            abort();
        break;
    case EMO_T_RDONE:
        if (!h.r_cookie || h.key || h.region || h.flags || h.data > EMO_RDONE_STATUS_MAX ||
            (h.data && h.len))
            abort();
        break;
    case EMO_T_WDATA:
        if (h.flags != EMO_F_DATA || h.region || h.s_cookie || h.r_cookie)
            abort();
        break;
    case EMO_T_HELLO:
        if (h.flags != EMO_F_HELLO || h.len || n != h.off || h.off != EMO_HDR_LEN + EMO_ADDR_LEN)
            abort();
        break;
    default: abort();
    }
    return 0;
}
