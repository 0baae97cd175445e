/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file hs_wire.c
 * Encoding and validating decoding of the wire v3 handshake frame
 * (hs_wire.h).  Packed wire structs only through memcpy: unaligned frames
 * are safe; the frame is read once, into a private copy.
 */
#include "proto/hs_wire.h"

#include <endian.h>
#include <string.h>

size_t em_hs_encode(const em_hs_t *h, void *out)
{
    struct em_hs_wire w = {
        .magic = EM_HS_MAGIC,
        .version = EM_HS_VERSION,
        .type = h->type,
        .flags = 0,
        .src_ep = htobe32(h->src_ep),
        .dst_ep = htobe32(h->dst_ep),
        .src_nonce = htobe64(h->src_nonce),
        .dst_nonce = htobe64(h->dst_nonce),
        .src_index = htobe32(h->src_index),
        .dst_index = htobe32(h->dst_index),
        .isn = htobe32(h->isn),
        .token = htobe64(h->token),
        .cookie_ms = htobe32(h->cookie_ms),
        .cookie = htobe64(h->cookie),
        .rsvd = 0,
        .addr_len = h->addr_len,
    };
    if (h->addr_len <= EM_HS_ADDR_MAX)
        memcpy(w.addr, h->addr, h->addr_len);
    memcpy(out, &w, sizeof w);
    return EM_HS_LEN;
}

/* What each type must carry (and must not): hs_wire.h's diagram. */
static int consistent(const em_hs_t *h)
{
    int has_src = h->src_index != EM_HS_NO_INDEX, has_dst = h->dst_index != EM_HS_NO_INDEX;
    int has_cookie = h->cookie_ms != 0 || h->cookie != 0;
    if (h->src_nonce == 0)
        return 0;
    switch (h->type) {
    case EM_HS_INIT: return has_src && !has_dst && !has_cookie && h->token != 0;
    case EM_HS_CHALLENGE:
        /* the responder commits nothing: no index, ISN or token of its own */
        return !has_src && has_dst && h->dst_nonce != 0 && h->isn == 0 && h->token == 0;
    case EM_HS_CONFIRM: return has_src && !has_dst && h->dst_nonce != 0 && h->token != 0;
    case EM_HS_ACCEPT:
        return has_src && has_dst && h->dst_nonce != 0 && !has_cookie && h->token != 0;
    default: return 0;
    }
}

em_hs_dec_t em_hs_decode(const void *frame, size_t len, em_hs_t *h)
{
    struct em_hs_wire w = { 0 };
    memcpy(&w, frame, len < sizeof w ? len : sizeof w);
    if (len < 2)
        return EM_HS_DEC_SHORT;
    if (w.magic != EM_HS_MAGIC)
        return EM_HS_DEC_MAGIC;
    if (w.version != EM_HS_VERSION)
        return EM_HS_DEC_VERSION;
    if (len < EM_HS_LEN)
        return EM_HS_DEC_SHORT;
    if (w.type < EM_HS_INIT || w.type > EM_HS_ACCEPT)
        return EM_HS_DEC_TYPE;
    *h = (em_hs_t){
        .type = w.type,
        .src_ep = be32toh(w.src_ep),
        .dst_ep = be32toh(w.dst_ep),
        .src_nonce = be64toh(w.src_nonce),
        .dst_nonce = be64toh(w.dst_nonce),
        .src_index = be32toh(w.src_index),
        .dst_index = be32toh(w.dst_index),
        .isn = be32toh(w.isn),
        .token = be64toh(w.token),
        .cookie_ms = be32toh(w.cookie_ms),
        .cookie = be64toh(w.cookie),
        .addr_len = w.addr_len,
    };
    if (w.flags != 0 || w.rsvd != 0 || !consistent(h) || w.addr_len == 0 ||
        w.addr_len > EM_HS_ADDR_MAX)
        return EM_HS_DEC_MALFORMED;
    for (unsigned i = w.addr_len; i < EM_HS_ADDR_MAX; i++)
        if (w.addr[i])
            return EM_HS_DEC_MALFORMED;
    memcpy(h->addr, w.addr, w.addr_len);
    return EM_HS_DEC_OK;
}
