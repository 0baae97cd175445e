/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file bcast_wire.c
 * Encoding and validation of the broadcast channel's frames (bcast_wire.h).
 * Byte order is explicit (htobe / betoh); the packed wire struct is only
 * copied in and out with memcpy, so unaligned frames are safe.
 */
#include "bcast/bcast_wire.h"

#include <endian.h>
#include <string.h>

const char *em_bc_dec_name(int r)
{
    static const char *const names[EM_BC_NREASONS] = {
        "ok",  "short",   "magic",  "version", "type",   "reserved",
        "key", "channel", "sender", "count",   "length", "range",
    };
    return r >= 0 && r < EM_BC_NREASONS ? names[r] : "?";
}

int em_bc_decode(const uint8_t *buf, size_t len, const em_bc_expect_t *ex, em_bc_hdr_t *h)
{
    struct em_bc_wire_hdr w;

    if (len < EM_BC_HDR_LEN)
        return EM_BC_ESHORT;
    memcpy(&w, buf, sizeof w);
    if (w.magic != EM_BC_MAGIC)
        return EM_BC_EMAGIC;
    if (w.version != EM_BC_VERSION)
        return EM_BC_EVERSION;
    if (w.type != EM_BC_T_F64)
        return EM_BC_ETYPE;
    if (w.rsvd0 != 0 || w.rsvd1 != 0)
        return EM_BC_ERSVD;
    em_bc_hdr_t d = {
        .type = w.type,
        .key = be32toh(w.key),
        .channel = be16toh(w.channel),
        .sender = be16toh(w.sender),
        .seq = be32toh(w.seq),
        .offset = be32toh(w.offset),
        .count = be16toh(w.count),
    };
    if (d.key != ex->key)
        return EM_BC_EKEY;
    if (d.channel != ex->channel)
        return EM_BC_ECHANNEL;
    if (d.sender >= ex->members)
        return EM_BC_ESENDER;
    if (d.count == 0)
        return EM_BC_ECOUNT;
    size_t need = EM_BC_HDR_LEN + (size_t)d.count * EM_BC_ELEM_SIZE;
    if (len < need || (len > need && len > EM_BC_MIN_FRAME))
        return EM_BC_ELEN;
    if (d.offset > ex->vec_len || d.count > ex->vec_len - d.offset)
        return EM_BC_ERANGE;
    *h = d;
    return EM_BC_OK;
}

void em_bc_encode_hdr(const em_bc_hdr_t *h, uint8_t *buf)
{
    struct em_bc_wire_hdr w = {
        .magic = EM_BC_MAGIC,
        .version = EM_BC_VERSION,
        .type = h->type,
        .rsvd0 = 0,
        .key = htobe32(h->key),
        .channel = htobe16(h->channel),
        .sender = htobe16(h->sender),
        .seq = htobe32(h->seq),
        .offset = htobe32(h->offset),
        .count = htobe16(h->count),
        .rsvd1 = 0,
    };
    memcpy(buf, &w, sizeof w);
}

void em_bc_put_f64(uint8_t *p, double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    u = htobe64(u);
    memcpy(p, &u, sizeof u);
}

double em_bc_get_f64(const uint8_t *p)
{
    uint64_t u;
    memcpy(&u, p, sizeof u);
    u = be64toh(u);
    double v;
    memcpy(&v, &u, sizeof v);
    return v;
}
