/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file wire.c
 * Encoding and validating decoding of the ethermpi headers (see wire.h for
 * the layout).  Byte order is explicit; the packed wire structs are only
 * read and written through memcpy so that unaligned frames are safe.
 */
#include "proto/wire.h"
#include "proto/hs_wire.h"

#include <endian.h>
#include <string.h>

size_t em_hdr_encode(const em_hdr_t *h, void *out)
{
    struct em_wire_hdr w = {
        .magic = EM_WIRE_MAGIC,
        .version = EM_WIRE_VERSION,
        .type = h->type,
        .flags = h->flags,
        .dst_index = htobe32(h->index),
        .key = htobe64(h->job_key),
        .len = htobe16(h->len),
        .tag = h->tag,
        .rsvd = 0,
        .seq = htobe32(h->seq),
        .ack = htobe32(h->ack),
        .sack = htobe64(h->sack),
        .msg_id = htobe32(h->msg_id),
        .msg_len = htobe32(h->msg_len),
        .frag_no = htobe16(h->frag_no),
        .frag_cnt = htobe16(h->frag_cnt),
    };
    memcpy(out, &w, sizeof w);
    if (h->type != EM_PT_PUT)
        return EM_HDR_LEN;
    struct em_wire_put_ext x = {
        .region = htobe32(h->region),
        .rsvd = 0,
        .key = htobe64(h->key),
        .offset = htobe64(h->offset),
    };
    memcpy((uint8_t *)out + EM_HDR_LEN, &x, sizeof x);
    return EM_HDR_LEN + EM_PUT_EXT_LEN;
}

static em_decode_err_t check_fragment(const em_hdr_t *h)
{
    if (h->frag_cnt == 0 || h->frag_no >= h->frag_cnt)
        return EM_DEC_MALFORMED;
    if (h->len > h->msg_len)
        return EM_DEC_MALFORMED;
    if (h->frag_cnt == 1 && h->len != h->msg_len)
        return EM_DEC_MALFORMED;
    return EM_DEC_OK;
}

em_decode_err_t em_hdr_decode(const void *frame, size_t frame_len, em_hdr_t *h)
{
    struct em_wire_hdr w;

    if (frame_len < 2)
        return EM_DEC_SHORT;
    const uint8_t *b = frame;
    if (b[0] != EM_WIRE_MAGIC)
        return EM_DEC_MAGIC;
    if (b[1] != EM_WIRE_VERSION)
        return EM_DEC_VERSION;
    if (frame_len < EM_HDR_LEN)
        return EM_DEC_SHORT;
    memcpy(&w, frame, sizeof w);

    *h = (em_hdr_t){
        .type = w.type,
        .flags = w.flags,
        .tag = w.tag,
        .job_key = be64toh(w.key),
        .index = be32toh(w.dst_index),
        .len = be16toh(w.len),
        .seq = be32toh(w.seq),
        .ack = be32toh(w.ack),
        .sack = be64toh(w.sack),
        .msg_id = be32toh(w.msg_id),
        .msg_len = be32toh(w.msg_len),
        .frag_no = be16toh(w.frag_no),
        .frag_cnt = be16toh(w.frag_cnt),
    };
    if (w.rsvd != 0 || (h->flags & ~EM_F_ALL) != 0)
        return EM_DEC_MALFORMED;

    switch (h->type) {
    case EM_PT_ACK:
    case EM_PT_NACK:
        /* control frames carry nothing but ACK state */
        if (h->len != 0 || h->msg_id != 0 || h->msg_len != 0 || h->frag_no != 0 ||
            h->frag_cnt != 0 || h->tag != 0)
            return EM_DEC_MALFORMED;
        return EM_DEC_OK;
    case EM_PT_DATA:
        if (frame_len < (size_t)EM_HDR_LEN + h->len)
            return EM_DEC_SHORT;
        return check_fragment(h);
    case EM_PT_PUT: {
        struct em_wire_put_ext x;
        if (frame_len < (size_t)EM_HDR_LEN + EM_PUT_EXT_LEN + h->len)
            return EM_DEC_SHORT;
        memcpy(&x, b + EM_HDR_LEN, sizeof x);
        if (x.rsvd != 0 || h->tag != 0)
            return EM_DEC_MALFORMED;
        h->region = be32toh(x.region);
        h->key = be64toh(x.key);
        h->offset = be64toh(x.offset);
        if (h->offset > UINT64_MAX - h->len)
            return EM_DEC_MALFORMED;
        return check_fragment(h);
    }
    default: return EM_DEC_MALFORMED;
    }
}

uint32_t em_wire_frame_len(const void *frame, size_t avail)
{
    const uint8_t *b = frame;
    /* a handshake frame shares magic and version, not this layout: its
     * bytes where a data header states its length are an index, so read as
     * a length they cut it into short pieces (a link_udp poll of an idle
     * link then lost every handshake frame it received); it is EM_HS_LEN
     * bytes, and equal handshake frames coalesced split at that length */
    if (em_hs_is(frame, avail))
        return avail >= EM_HS_LEN ? EM_HS_LEN : 0;
    if (avail < EM_HDR_LEN || b[0] != EM_WIRE_MAGIC || b[1] != EM_WIRE_VERSION)
        return 0;
    size_t at = offsetof(struct em_wire_hdr, len);
    uint32_t payload = (uint32_t)b[at] << 8 | b[at + 1];
    uint32_t total = (b[2] == EM_PT_PUT ? EM_HDR_LEN + EM_PUT_EXT_LEN : EM_HDR_LEN) + payload;
    return total <= avail ? total : 0;
}
