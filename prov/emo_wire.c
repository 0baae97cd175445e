/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file emo_wire.c
 * Encoding and checked decoding of the provider's message header and
 * address blob (layouts in emo_wire.h).  Wire structs are only touched
 * through memcpy, so unaligned buffers are safe.
 */
#include "emo_wire.h"
#include "util/pair_mix.h"

#include <endian.h>
#include <string.h>

void emo_hdr_encode(const emo_hdr_t *h, void *out)
{
    struct emo_wire_hdr w = {
        .magic = EMO_MAGIC,
        .version = EMO_VERSION,
        .type = h->type,
        .flags = h->flags,
        .rsvd0 = 0,
        .tag = htobe64(h->tag),
        .data = htobe64(h->data),
        .len = htobe64(h->len),
        .s_cookie = htobe32(h->s_cookie),
        .r_cookie = htobe32(h->r_cookie),
        .region = htobe32(h->region),
        .rsvd1 = 0,
        .key = htobe64(h->key),
    };
    memcpy(out, &w, sizeof w);
}

/* fields each type must leave zero, and the payload rule */
static emo_dec_err_t check_type(const emo_hdr_t *h, size_t payload)
{
    switch (h->type) {
    case EMO_T_EAGER:
        if (h->len != payload || h->s_cookie || h->r_cookie || h->region || h->key)
            return EMO_DEC_MALFORMED;
        return EMO_DEC_OK;
    case EMO_T_RTS:
        if (payload || h->s_cookie == 0 || h->r_cookie || h->region || h->key)
            return EMO_DEC_MALFORMED;
        return EMO_DEC_OK;
    case EMO_T_CTS:
        /* a zero-length grant names no region */
        if (payload || h->s_cookie == 0 || h->r_cookie == 0 || h->tag || h->data || h->flags ||
            (h->len && h->region == 0))
            return EMO_DEC_MALFORMED;
        return EMO_DEC_OK;
    case EMO_T_FIN:
        if (payload || h->s_cookie || h->r_cookie == 0 || h->region || h->key || h->tag ||
            h->data || h->flags)
            return EMO_DEC_MALFORMED;
        return EMO_DEC_OK;
    case EMO_T_READ:
        /* a read of 0 bytes lands nowhere: no region */
        if (payload || h->s_cookie == 0 || h->r_cookie || h->flags || (h->len && h->region == 0))
            return EMO_DEC_MALFORMED;
        return EMO_DEC_OK;
    case EMO_T_RDONE:
        if (payload || h->s_cookie || h->r_cookie == 0 || h->region || h->key || h->tag ||
            h->flags || h->data > EMO_RDONE_STATUS_MAX || (h->data && h->len))
            return EMO_DEC_MALFORMED;
        return EMO_DEC_OK;
    case EMO_T_HELLO:
        /* the address blob alone (decoded by emo_contact.c) */
        if (payload || h->flags != EMO_F_HELLO || h->len || h->tag || h->data || h->s_cookie ||
            h->r_cookie || h->region || h->key)
            return EMO_DEC_MALFORMED;
        return EMO_DEC_OK;
    case EMO_T_WDATA:
        /* tag and key name where the write went (the target checks it) */
        if (payload || h->s_cookie || h->r_cookie || h->region || h->flags != EMO_F_DATA)
            return EMO_DEC_MALFORMED;
        return EMO_DEC_OK;
    default: return EMO_DEC_TYPE;
    }
}

emo_dec_err_t emo_hdr_decode(uint8_t etag, const void *msg, size_t len, emo_hdr_t *h)
{
    struct emo_wire_hdr w;
    if (!msg || len < EMO_HDR_LEN)
        return EMO_DEC_SHORT;
    memcpy(&w, msg, sizeof w);
    if (w.magic != EMO_MAGIC || w.version != EMO_VERSION)
        return EMO_DEC_MAGIC;
    if (w.type != etag)
        return EMO_DEC_TYPE;
    if ((w.flags & ~EMO_F_ALL) || w.rsvd0 || w.rsvd1)
        return EMO_DEC_MALFORMED;
    uint32_t off = EMO_HDR_LEN;
    if (w.flags & EMO_F_HELLO) {
        if ((w.type != EMO_T_EAGER && w.type != EMO_T_RTS && w.type != EMO_T_HELLO) ||
            len < EMO_HDR_LEN + EMO_ADDR_LEN)
            return EMO_DEC_MALFORMED; /* only a message that opens a conversation has one */
        off += EMO_ADDR_LEN;
    }
    *h = (emo_hdr_t){
        .type = w.type,
        .flags = w.flags,
        .tag = be64toh(w.tag),
        .data = be64toh(w.data),
        .len = be64toh(w.len),
        .s_cookie = be32toh(w.s_cookie),
        .r_cookie = be32toh(w.r_cookie),
        .region = be32toh(w.region),
        .key = be64toh(w.key),
        .off = off,
    };
    return check_type(h, len - off);
}

const char *emo_dec_err_name(emo_dec_err_t e)
{
    static const char *const n[EMO_DEC_COUNT] = { "ok", "short", "magic", "type", "malformed" };
    return (unsigned)e < EMO_DEC_COUNT ? n[e] : "?";
}

void emo_addr_encode(const emo_addr_t *a, uint8_t out[EMO_ADDR_LEN])
{
    /* both versions: magic, version, frame_max at 4, the link address at 24 */
    uint32_t fm = htobe32(a->frame_max);
    uint8_t l = a->link.len <= sizeof a->link.bytes ? a->link.len : 0;
    memset(out, 0, EMO_ADDR_LEN);
    out[0] = EMO_MAGIC;
    out[1] = a->named ? EMO_ADDR_VERSION_NAMED : EMO_ADDR_VERSION;
    memcpy(out + 4, &fm, 4);
    out[24] = l;
    memcpy(out + 25, a->link.bytes, l);
    if (a->named) { /* nonce at 8, endpoint index at 16 */
        uint64_t nonce = htobe64(a->nonce);
        uint32_t ep = htobe32(a->ep_index);
        memcpy(out + 8, &nonce, 8);
        memcpy(out + 16, &ep, 4);
        return;
    }
    /* numbered: id at 2 (and its high half at 20), secret at 8, ISN at 16 */
    uint16_t id = htobe16((uint16_t)a->id), id_hi = htobe16((uint16_t)(a->id >> 16));
    uint32_t isn = htobe32(a->isn);
    uint64_t sec = htobe64(a->secret);
    memcpy(out + 2, &id, 2);
    memcpy(out + 8, &sec, 8);
    memcpy(out + 16, &isn, 4);
    memcpy(out + 20, &id_hi, 2);
}

/* the link address at 24.., bytes past it zero: @return 0 or -1 */
static int link_decode(const uint8_t *b, em_link_addr_t *l)
{
    if (b[24] == 0 || b[24] > sizeof l->bytes)
        return -1;
    for (size_t i = 25u + b[24]; i < EMO_ADDR_LEN; i++)
        if (b[i])
            return -1; /* bytes past the link address must be zero */
    memset(l, 0, sizeof *l);
    l->len = b[24];
    memcpy(l->bytes, b + 25, b[24]);
    return 0;
}

static int addr_decode_named(const uint8_t *b, emo_addr_t *a)
{
    uint32_t fm, ep, rsvd4;
    uint16_t rsvd2;
    uint64_t nonce;
    memcpy(&rsvd2, b + 2, 2);
    memcpy(&fm, b + 4, 4);
    memcpy(&nonce, b + 8, 8);
    memcpy(&ep, b + 16, 4);
    memcpy(&rsvd4, b + 20, 4);
    memset(a, 0, sizeof *a);
    if (rsvd2 || rsvd4 || link_decode(b, &a->link) != 0)
        return -1;
    a->named = 1;
    a->id = EMO_ID_NONE;
    a->frame_max = be32toh(fm);
    a->nonce = be64toh(nonce);
    a->ep_index = be32toh(ep);
    /* nonce 0: a partial name (emo_wire.h), which a link may complete */
    return a->ep_index != EMO_ID_NONE && a->frame_max >= 64 ? 0 : -1;
}

int emo_addr_decode(const void *buf, size_t len, emo_addr_t *a)
{
    const uint8_t *b = buf;
    uint16_t id, id_hi, rsvd;
    uint32_t fm, isn;
    uint64_t sec;
    if (!buf || len != EMO_ADDR_LEN || b[0] != EMO_MAGIC)
        return -1;
    if (b[1] == EMO_ADDR_VERSION_NAMED)
        return addr_decode_named(b, a);
    if (b[1] != EMO_ADDR_VERSION)
        return -1;
    memcpy(&id, b + 2, 2);
    memcpy(&fm, b + 4, 4);
    memcpy(&sec, b + 8, 8);
    memcpy(&isn, b + 16, 4);
    memcpy(&id_hi, b + 20, 2);
    memcpy(&rsvd, b + 22, 2);
    memset(a, 0, sizeof *a);
    if (rsvd || link_decode(b, &a->link) != 0)
        return -1;
    a->id = (uint32_t)be16toh(id_hi) << 16 | be16toh(id);
    a->frame_max = be32toh(fm);
    a->secret = be64toh(sec);
    a->isn = be32toh(isn);
    if (a->id >= EMO_NPEERS_MAX || a->frame_max < 64)
        return -1;
    return 0;
}

uint64_t emo_pair_key(uint64_t a, uint32_t ia, uint64_t b, uint32_t ib)
{
    /* same value from both sides; the mixer: src/util/pair_mix.h */
    return em_pair_mix(a, ia, b, ib, EM_PAIR_MIX_OFI);
}

uint64_t emo_pair_key_epoch(uint64_t key, uint32_t epoch)
{
    /* the key and the epoch through the same mixer (ordered as ids 0, 1) */
    return epoch ? em_pair_mix(key, 0, epoch, 1, EM_PAIR_MIX_OFI) : key;
}
