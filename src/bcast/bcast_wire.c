/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file bcast_wire.c
 * Encoding and validation of the broadcast channel's frames (bcast_wire.h).
 */
#include "bcast/bcast_wire.h"

#include <string.h>

static uint16_t ld16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static uint32_t ld32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static void st16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static void st32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}

const char *em_bc_dec_name(int r)
{
    static const char *const names[EM_BC_NREASONS] = {
        "ok", "short", "magic", "version", "type", "reserved", "key", "channel",
        "sender", "count", "length", "range",
    };
    return r >= 0 && r < EM_BC_NREASONS ? names[r] : "?";
}

int em_bc_decode(const uint8_t *buf, size_t len, const em_bc_expect_t *ex, em_bc_hdr_t *h)
{
    if (len < EM_BC_HDR_LEN)
        return EM_BC_ESHORT;
    if (buf[0] != EM_BC_MAGIC)
        return EM_BC_EMAGIC;
    if (buf[1] != EM_BC_VERSION)
        return EM_BC_EVERSION;
    if (buf[2] != EM_BC_T_F64)
        return EM_BC_ETYPE;
    if (buf[3] != 0 || ld16(buf + 22) != 0)
        return EM_BC_ERSVD;
    uint32_t key = ld32(buf + 4);
    uint16_t channel = ld16(buf + 8), sender = ld16(buf + 10);
    uint32_t seq = ld32(buf + 12), offset = ld32(buf + 16);
    uint16_t count = ld16(buf + 20);
    if (key != ex->key)
        return EM_BC_EKEY;
    if (channel != ex->channel)
        return EM_BC_ECHANNEL;
    if (sender >= ex->members)
        return EM_BC_ESENDER;
    if (count == 0)
        return EM_BC_ECOUNT;
    size_t need = EM_BC_HDR_LEN + (size_t)count * EM_BC_ELEM_SIZE;
    if (len < need || (len > need && len > EM_BC_MIN_FRAME))
        return EM_BC_ELEN;
    if (offset > ex->vec_len || count > ex->vec_len - offset)
        return EM_BC_ERANGE;
    h->type = buf[2];
    h->key = key;
    h->channel = channel;
    h->sender = sender;
    h->seq = seq;
    h->offset = offset;
    h->count = count;
    return EM_BC_OK;
}

void em_bc_encode_hdr(const em_bc_hdr_t *h, uint8_t *buf)
{
    buf[0] = EM_BC_MAGIC;
    buf[1] = EM_BC_VERSION;
    buf[2] = h->type;
    buf[3] = 0;
    st32(buf + 4, h->key);
    st16(buf + 8, h->channel);
    st16(buf + 10, h->sender);
    st32(buf + 12, h->seq);
    st32(buf + 16, h->offset);
    st16(buf + 20, h->count);
    st16(buf + 22, 0);
}

void em_bc_put_f64(uint8_t *p, double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    for (int i = 7; i >= 0; i--, u >>= 8)
        p[i] = (uint8_t)u;
}

double em_bc_get_f64(const uint8_t *p)
{
    uint64_t u = 0;
    for (int i = 0; i < 8; i++)
        u = u << 8 | p[i];
    double v;
    memcpy(&v, &u, sizeof v);
    return v;
}
