/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file emd_wire.c
 * The node-to-node shim, the hello and the modex address (see emd_wire.h):
 * packed big-endian structs, copied whole, fields checked before use.
 */
#include "emd_abi/emd_wire.h"

#include <endian.h>
#include <string.h>

const char *emd_wire_strerror(int err)
{
    switch (err) {
    case EMD_WIRE_OK: return "ok";
    case EMD_WIRE_SHORT: return "frame shorter than the emd shim";
    case EMD_WIRE_MAGIC_BAD: return "not an emd frame (bad magic)";
    case EMD_WIRE_VERSION_BAD:
        return "emd frame of another version (daemons from different builds)";
    case EMD_WIRE_LEN_BAD: return "emd shim length 0 or beyond the frame";
    case EMD_WIRE_DST_BAD: return "emd shim with destination endpoint 0";
    case EMD_WIRE_CLS_BAD: return "emd shim with an unknown class or reserved bits set";
    case EMD_WIRE_HELLO_BAD: return "emd hello with a bad kind, layout or reserved bytes";
    default: return "unknown emd wire error";
    }
}

void emd_wire_encode(uint8_t *p, const emd_shim_t *s)
{
    struct emd_wire_hdr w = {
        .magic = EMD_WIRE_MAGIC,
        .version = EMD_VERSION,
        .cls = s->cls,
        .rsvd = 0,
        .len = htobe16(s->len),
        .dst = htobe16(s->dst),
        .src = htobe16(s->src),
    };
    memcpy(w.src_mac, s->src_mac, 6);
    memcpy(p, &w, sizeof w);
}

int emd_wire_decode(const uint8_t *p, size_t frame_len, emd_shim_t *out)
{
    struct emd_wire_hdr w;
    if (frame_len < sizeof w)
        return EMD_WIRE_SHORT;
    memcpy(&w, p, sizeof w); /* one read; the checks use this copy */
    if (w.magic != EMD_WIRE_MAGIC)
        return EMD_WIRE_MAGIC_BAD;
    if (w.version != EMD_VERSION)
        return EMD_WIRE_VERSION_BAD;
    if (w.cls >= EMD_CLS_COUNT || w.rsvd)
        return EMD_WIRE_CLS_BAD;
    uint16_t len = be16toh(w.len);
    /* frames may carry padding (Ethernet minimum size): len bounds the payload */
    if (len == 0 || (size_t)len > frame_len - sizeof w)
        return EMD_WIRE_LEN_BAD;
    uint16_t dst = be16toh(w.dst);
    if (dst == 0)
        return EMD_WIRE_DST_BAD;
    out->cls = w.cls;
    out->len = len;
    out->dst = dst;
    out->src = be16toh(w.src);
    memcpy(out->src_mac, w.src_mac, 6);
    return EMD_WIRE_OK;
}

void emd_hello_encode(uint8_t *p, uint8_t kind, uint16_t slots, uint16_t queues)
{
    struct emd_hello h = {
        .version = EMD_VERSION, .kind = kind, .slots = htobe16(slots), .queues = htobe16(queues)
    };
    memcpy(h.magic, EMD_HELLO_MAGIC, 4);
    memcpy(p, &h, sizeof h);
}

int emd_hello_decode(const uint8_t *p, size_t len, uint8_t *kind, uint16_t *slots, uint16_t *queues)
{
    struct emd_hello h;
    if (len < sizeof h)
        return EMD_WIRE_SHORT;
    memcpy(&h, p, sizeof h);
    int rsvd = 0;
    for (size_t i = 0; i < sizeof h.rsvd; i++)
        rsvd |= h.rsvd[i];
    uint16_t s = be16toh(h.slots), q = be16toh(h.queues);
    if (memcmp(h.magic, EMD_HELLO_MAGIC, 4) != 0 || h.version != EMD_VERSION ||
        (h.kind != EMD_HELLO && h.kind != EMD_HELLO_REPLY) || rsvd || s > EMD_BULKQ_SLOTS_MAX ||
        q != emd_bulkq_queues(s))
        return EMD_WIRE_HELLO_BAD;
    *kind = h.kind;
    *slots = s;
    *queues = q;
    return EMD_WIRE_OK;
}

uint8_t emd_addr_encode(uint8_t *out, const uint8_t mac[6], uint16_t ep, uint16_t slots,
                        uint16_t slot)
{
    struct emd_addr_wire w = { .ep = htobe16(ep),
                               .format = EMD_ADDR_BULKQ_V1,
                               .slot = (uint8_t)slot,
                               .slots = (uint8_t)slots };
    memcpy(w.mac, mac, 6);
    uint8_t len = slots ? EMD_ADDR_LEN_BULKQ : EMD_ADDR_LEN;
    memcpy(out, &w, len);
    return len;
}

int emd_addr_decode(const uint8_t *a, size_t len, uint8_t mac[6], uint16_t *ep, uint16_t *slots,
                    uint16_t *slot)
{
    struct emd_addr_wire w = { .format = EMD_ADDR_BULKQ_V1, .slot = 0, .slots = 0 };
    if (len != EMD_ADDR_LEN && len != EMD_ADDR_LEN_BULKQ)
        return -1;
    memcpy(&w, a, len);
    uint16_t e = be16toh(w.ep);
    if (e == 0)
        return -1; /* a direct-mode address (queue 0) */
    if (len == EMD_ADDR_LEN_BULKQ && (w.format != EMD_ADDR_BULKQ_V1 || w.slots == 0 ||
                                      w.slots > EMD_BULKQ_SLOTS_MAX || w.slot >= w.slots || w.rsvd))
        return -1;
    memcpy(mac, w.mac, 6);
    *ep = e;
    *slots = len == EMD_ADDR_LEN_BULKQ ? w.slots : 0;
    *slot = len == EMD_ADDR_LEN_BULKQ ? w.slot : EMD_BULKQ_NO_SLOT;
    return 0;
}

uint8_t emd_addr_encode_udp(uint8_t *out, const uint8_t node[6], uint16_t ep)
{
    struct emd_addr_udp_wire w = { .ep = htobe16(ep), .format = EMD_ADDR_UDP_V1 };
    memcpy(&w.ip, node, 4); /* the node id is big-endian already */
    memcpy(&w.port, node + 4, 2);
    memcpy(out, &w, sizeof w);
    return EMD_ADDR_LEN_UDP;
}

int emd_addr_framing(const uint8_t *a, size_t len, uint8_t node[6], uint16_t *ep)
{
    struct emd_addr_udp_wire w;
    if (len != EMD_ADDR_LEN_UDP)
        return len == EMD_ADDR_LEN ? EMD_FRAMING_L2 : -1;
    memcpy(&w, a, sizeof w); /* one read; checked below */
    if (w.format != EMD_ADDR_UDP_V1)
        return w.format == EMD_ADDR_BULKQ_V1 ? EMD_FRAMING_L2 : -1;
    uint8_t id[6];
    memcpy(id, &w.ip, 4);
    memcpy(id + 4, &w.port, 2);
    uint16_t e = be16toh(w.ep);
    if (e == 0 || w.rsvd[0] || w.rsvd[1] || w.rsvd[2] || !emd_node_unicast(EMD_FRAMING_UDP, id))
        return -1;
    memcpy(node, id, 6);
    *ep = e;
    return EMD_FRAMING_UDP;
}

int emd_node_unicast(int framing, const uint8_t node[6])
{
    if (framing != EMD_FRAMING_UDP)
        return !(node[0] & 1);
    uint32_t ip = (uint32_t)node[0] << 24 | (uint32_t)node[1] << 16 | (uint32_t)node[2] << 8 |
                  node[3];
    uint16_t port = (uint16_t)(node[4] << 8 | node[5]);
    return ip != 0 && ip != 0xFFFFFFFFu && ip >> 28 != 0xE && port != 0;
}
