/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file ipudp.c
 * UDP/IPv4 framing (see ipudp.h): encode, checksums, validated decode.
 */
#include "link/ipudp.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

static uint16_t bswap16(uint16_t v) { return (uint16_t)(v << 8 | v >> 8); }

/* One's complement sum of @p len bytes read as big-endian 16-bit words
 * from buf[0] (a last odd byte is the high byte of a zero-padded word),
 * folded to 16 bits.  The words are added in host order 8 bytes at a time
 * and converted once: the one's complement sum does not depend on the byte
 * order it is computed in (RFC 1071, 2.(B)). */
static uint16_t piece_sum_be(const uint8_t *b, size_t len)
{
    /* 32-bit words into four 64-bit sums: no carry can be lost below
     * 2^32 words, and the independent sums keep the adders busy */
    uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    while (len >= 16) {
        uint32_t w[4];
        memcpy(w, b, 16);
        a0 += w[0];
        a1 += w[1];
        a2 += w[2];
        a3 += w[3];
        b += 16;
        len -= 16;
    }
    uint64_t acc = a0 + a1 + a2 + a3;
    while (len >= 4) {
        uint32_t w;
        memcpy(&w, b, 4);
        acc += w;
        b += 4;
        len -= 4;
    }
    if (len >= 2) {
        uint16_t w;
        memcpy(&w, b, 2);
        acc += w;
        b += 2;
        len -= 2;
    }
    if (len) {
        uint8_t pad[2] = { b[0], 0 };
        uint16_t w;
        memcpy(&w, pad, 2);
        acc += w;
    }
    acc = (acc & 0xFFFFFFFFu) + (acc >> 32); /* 64 -> 33 bits */
    acc = (acc & 0xFFFFFFFFu) + (acc >> 32);
    acc = (acc & 0xFFFF) + (acc >> 16); /* 32 -> 17 bits */
    acc = (acc & 0xFFFF) + (acc >> 16);
    uint16_t s = (uint16_t)acc;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    s = bswap16(s);
#endif
    return s;
}

void em_csum_add(em_csum_t *c, const void *buf, size_t len)
{
    uint16_t s = piece_sum_be(buf, len);
    if (c->odd) /* this piece starts at an odd offset: its bytes swap roles */
        s = bswap16(s);
    c->sum += s;
    c->odd ^= (unsigned)(len & 1);
}

uint16_t em_csum_fold(const em_csum_t *c)
{
    uint64_t s = c->sum;
    while (s >> 16)
        s = (s & 0xFFFF) + (s >> 16);
    return (uint16_t)s;
}

/* the pseudo header's sum (source, destination, protocol, UDP length) */
static void pseudo_sum(em_csum_t *c, const struct em_wire_ipv4 *ip, uint16_t udp_len_be)
{
    uint8_t ph[12];
    memcpy(ph, &ip->src, 4);
    memcpy(ph + 4, &ip->dst, 4);
    ph[8] = 0;
    ph[9] = EM_IPPROTO_UDP;
    memcpy(ph + 10, &udp_len_be, 2);
    em_csum_add(c, ph, sizeof ph);
}

int em_ipudp_encode(const em_ipudp_path_t *p, uint16_t ip_id, uint32_t payload_len, unsigned flags,
                    void *out)
{
    if (payload_len > 65535u - EM_IPUDP_OVERHEAD)
        return -1;
    struct em_wire_ipudp h;
    memcpy(h.eth.dst, p->dst_mac, 6);
    memcpy(h.eth.src, p->src_mac, 6);
    h.eth.type = htons(EM_ETHERTYPE_IPV4);
    h.ip.ver_ihl = 0x45;
    h.ip.tos = 0;
    h.ip.total_len = htons((uint16_t)(EM_IPUDP_OVERHEAD + payload_len));
    h.ip.id = htons(ip_id);
    h.ip.frag = htons(0x4000); /* DF: never fragmented on the way */
    h.ip.ttl = EM_IPUDP_TTL;
    h.ip.proto = EM_IPPROTO_UDP;
    h.ip.csum = 0;
    h.ip.src = htonl(p->src_ip);
    h.ip.dst = htonl(p->dst_ip);
    if (!(flags & EM_IPUDP_TX_IP_CSUM_HW)) {
        em_csum_t c = { 0, 0 };
        em_csum_add(&c, &h.ip, sizeof h.ip);
        h.ip.csum = htons((uint16_t)~em_csum_fold(&c));
    }
    h.udp.sport = htons(p->src_port);
    h.udp.dport = htons(p->dst_port);
    h.udp.len = htons((uint16_t)(EM_UDP_HDR_LEN + payload_len));
    h.udp.csum = 0;
    if (flags & EM_IPUDP_TX_UDP_CSUM_HW) {
        /* the NIC adds header and payload to the pseudo header's sum */
        em_csum_t c = { 0, 0 };
        pseudo_sum(&c, &h.ip, h.udp.len);
        h.udp.csum = htons(em_csum_fold(&c));
    }
    memcpy(out, &h, sizeof h);
    return 0;
}

void em_ipudp_udp_csum_set(void *hdr, const em_csum_piece_t *pieces, unsigned n)
{
    struct em_wire_ipudp h;
    memcpy(&h, hdr, sizeof h);
    em_csum_t c = { 0, 0 };
    pseudo_sum(&c, &h.ip, h.udp.len);
    h.udp.csum = 0;
    em_csum_add(&c, &h.udp, sizeof h.udp);
    for (unsigned i = 0; i < n; i++)
        em_csum_add(&c, pieces[i].buf, pieces[i].len);
    uint16_t v = (uint16_t)~em_csum_fold(&c);
    if (v == 0)
        v = 0xFFFF; /* 0 means "no checksum" */
    v = htons(v);
    memcpy((uint8_t *)hdr + offsetof(struct em_wire_ipudp, udp.csum), &v, 2);
}

em_ipudp_err_t em_ipudp_decode(const void *frame, size_t len, uint32_t my_ip, uint16_t my_port,
                               unsigned flags, em_ipudp_rx_t *out)
{
    struct em_wire_ipudp h;
    if (len < sizeof h)
        return EM_IPUDP_SHORT;
    memcpy(&h, frame, sizeof h); /* each header byte read once */
    if (ntohs(h.eth.type) != EM_ETHERTYPE_IPV4)
        return EM_IPUDP_NOT_IPV4;
    if (h.ip.ver_ihl >> 4 != 4)
        return EM_IPUDP_VERSION;
    if ((h.ip.ver_ihl & 0xF) != 5)
        return EM_IPUDP_OPTIONS;
    if (ntohs(h.ip.frag) & 0x3FFF) /* MF or an offset; DF and the reserved bit are fine */
        return EM_IPUDP_FRAGMENT;
    if (h.ip.proto != EM_IPPROTO_UDP)
        return EM_IPUDP_NOT_UDP;
    uint16_t tot = ntohs(h.ip.total_len);
    if (tot < EM_IPUDP_OVERHEAD || (size_t)tot + EM_ETH_HDR_LEN > len)
        return EM_IPUDP_IP_LEN;
    if (!(flags & EM_IPUDP_RX_IP_CSUM_OK)) {
        em_csum_t c = { 0, 0 };
        em_csum_add(&c, &h.ip, sizeof h.ip);
        if (em_csum_fold(&c) != 0xFFFF)
            return EM_IPUDP_IP_CSUM;
    }
    if (ntohs(h.udp.len) != tot - EM_IPV4_HDR_LEN)
        return EM_IPUDP_UDP_LEN;
    uint32_t dst = ntohl(h.ip.dst);
    if (my_ip && dst != my_ip)
        return EM_IPUDP_ADDR;
    if (ntohs(h.udp.dport) != my_port)
        return EM_IPUDP_PORT;
    const uint8_t *payload = (const uint8_t *)frame + sizeof h;
    uint32_t plen = (uint32_t)tot - EM_IPUDP_OVERHEAD;
    if (h.udp.csum != 0 && !(flags & EM_IPUDP_RX_UDP_CSUM_OK)) {
        em_csum_t c = { 0, 0 };
        pseudo_sum(&c, &h.ip, h.udp.len);
        em_csum_add(&c, &h.udp, sizeof h.udp);
        em_csum_add(&c, payload, plen);
        if (em_csum_fold(&c) != 0xFFFF)
            return EM_IPUDP_UDP_CSUM;
    }
    memcpy(out->src_mac, h.eth.src, 6);
    out->src_ip = ntohl(h.ip.src);
    out->dst_ip = dst;
    out->src_port = ntohs(h.udp.sport);
    out->dst_port = ntohs(h.udp.dport);
    out->payload = payload;
    out->payload_len = plen;
    return EM_IPUDP_OK;
}

const char *em_ipudp_err_name(em_ipudp_err_t e)
{
    static const char *const names[EM_IPUDP_NERR] = {
        [EM_IPUDP_OK] = "ok",
        [EM_IPUDP_SHORT] = "short",
        [EM_IPUDP_NOT_IPV4] = "not_ipv4",
        [EM_IPUDP_VERSION] = "ip_version",
        [EM_IPUDP_OPTIONS] = "ip_options",
        [EM_IPUDP_FRAGMENT] = "fragment",
        [EM_IPUDP_NOT_UDP] = "not_udp",
        [EM_IPUDP_IP_LEN] = "ip_len",
        [EM_IPUDP_IP_CSUM] = "ip_csum",
        [EM_IPUDP_UDP_LEN] = "udp_len",
        [EM_IPUDP_ADDR] = "ip_addr",
        [EM_IPUDP_PORT] = "udp_port",
        [EM_IPUDP_UDP_CSUM] = "udp_csum",
    };
    return (unsigned)e < EM_IPUDP_NERR ? names[e] : "?";
}

void em_ipv4_str(uint32_t ip, char *buf, size_t len)
{
    snprintf(buf, len, "%u.%u.%u.%u", ip >> 24, (ip >> 16) & 0xFF, (ip >> 8) & 0xFF, ip & 0xFF);
}

void em_ipudp_template_init(em_ipudp_template_t *t, const em_ipudp_path_t *p, unsigned flags)
{
    (void)em_ipudp_encode(p, 0, 0, flags & EM_IPUDP_TX_IP_CSUM_HW, t->hdr);
    struct em_wire_ipudp h;
    memcpy(&h, t->hdr, sizeof h);
    h.ip.total_len = 0;
    h.ip.csum = 0;
    h.udp.len = 0;
    memcpy(t->hdr, &h, sizeof h);
    em_csum_t c = { 0, 0 };
    em_csum_add(&c, &h.ip, sizeof h.ip); /* without length and id (both 0 here) */
    t->ip_sum = em_csum_fold(&c);
    em_csum_t u = { 0, 0 };
    pseudo_sum(&u, &h.ip, 0);              /* without the UDP length */
    em_csum_add(&u, &h.udp, sizeof h.udp); /* the ports (length and checksum 0) */
    t->udp_sum = em_csum_fold(&u);
    t->flags = flags;
}

static uint16_t fold32(uint32_t s)
{
    s = (s & 0xFFFF) + (s >> 16);
    s = (s & 0xFFFF) + (s >> 16);
    return (uint16_t)s;
}

int em_ipudp_template_write(const em_ipudp_template_t *t, uint16_t ip_id, uint32_t payload_len,
                            const em_csum_piece_t *pieces, unsigned n, int udp_csum, void *out)
{
    if (payload_len > 65535u - EM_IPUDP_OVERHEAD)
        return -1;
    uint8_t *o = out;
    memcpy(o, t->hdr, EM_IPUDP_HDR_LEN);
    uint16_t tot = (uint16_t)(EM_IPUDP_OVERHEAD + payload_len);
    uint16_t ulen = (uint16_t)(EM_UDP_HDR_LEN + payload_len);
    uint16_t v = htons(tot);
    memcpy(o + offsetof(struct em_wire_ipudp, ip.total_len), &v, 2);
    v = htons(ip_id);
    memcpy(o + offsetof(struct em_wire_ipudp, ip.id), &v, 2);
    v = htons(ulen);
    memcpy(o + offsetof(struct em_wire_ipudp, udp.len), &v, 2);
    if (!(t->flags & EM_IPUDP_TX_IP_CSUM_HW)) {
        v = htons((uint16_t)~fold32(t->ip_sum + tot + ip_id));
        memcpy(o + offsetof(struct em_wire_ipudp, ip.csum), &v, 2);
    }
    if (t->flags & EM_IPUDP_TX_UDP_CSUM_HW) {
        /* the pseudo header alone: its addresses and protocol (in udp_sum
         * with the ports, which the NIC adds itself: take them out) */
        em_csum_t c = { 0, 0 };
        pseudo_sum(&c, (const struct em_wire_ipv4 *)(o + EM_ETH_HDR_LEN), htons(ulen));
        v = htons(em_csum_fold(&c));
        memcpy(o + offsetof(struct em_wire_ipudp, udp.csum), &v, 2);
    } else if (udp_csum) {
        em_csum_t c = { t->udp_sum + 2u * ulen, 0 }; /* UDP length: pseudo header and header */
        for (unsigned i = 0; i < n; i++)
            em_csum_add(&c, pieces[i].buf, pieces[i].len);
        uint16_t s = (uint16_t)~em_csum_fold(&c);
        v = htons(s ? s : 0xFFFF);
        memcpy(o + offsetof(struct em_wire_ipudp, udp.csum), &v, 2);
    }
    return 0;
}
