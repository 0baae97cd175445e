/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file ipudp.h
 * UDP/IPv4 framing of the kernel-bypass path: the headers a
 * frame carries in front of the ethermpi protocol when a link runs in
 * `udp` framing, so that routers and cloud virtual networks (which forward
 * unicast IPv4 only) carry it.  Pure code: no I/O, no DPDK; the link fills
 * in addresses it learnt elsewhere (modex, netlink: link/neigh.h).
 *
 * Frame (EM_IPUDP_HDR_LEN = 42 bytes of headers, then the protocol frame):
 *
 *    0               1               2               3
 *    0 1 2 3 4 5 6 7 0 1 2 3 4 5 6 7 0 1 2 3 4 5 6 7 0 1 2 3 4 5 6 7
 *   +---------------------------------------------------------------+
 *  0|            destination MAC (next hop: peer or gateway)        |
 *   +-------------------------------+-------------------------------+
 *  4|   destination MAC (cont.)     |          source MAC           |
 *   +-------------------------------+-------------------------------+
 *  8|                       source MAC (cont.)                      |
 *   +-------------------------------+---------------+---------------+
 * 12|     ethertype 0x0800 (IPv4)   | ver 4 | IHL 5 |  DSCP/ECN 0   |
 *   +-------------------------------+---------------+---------------+
 * 16|     IP total length           |     identification            |
 *   +-------------------------------+---------------+---------------+
 * 20|  flags DF=1, fragment off 0   |    TTL 64     |  protocol 17  |
 *   +-------------------------------+---------------+---------------+
 * 24|     IP header checksum        |   source IPv4 address ...     |
 *   +-------------------------------+-------------------------------+
 * 28|   ... source IPv4 address     |   destination IPv4 ...        |
 *   +-------------------------------+-------------------------------+
 * 32|   ... destination IPv4        |        UDP source port        |
 *   +-------------------------------+-------------------------------+
 * 36|     UDP destination port      |   UDP length (8 + payload)    |
 *   +-------------------------------+-------------------------------+
 * 40|     UDP checksum (0: none)    |   ethermpi frame (wire.h) ... |
 *   +-------------------------------+-------------------------------+
 *
 * Never fragmented: DF is set on send and a fragment (MF, or an offset) is
 * refused on receive; the link sizes its frames to the path MTU instead.
 * IPv4 options are refused (IHL must be 5).  The UDP checksum is computed
 * (in software, or by the NIC where it offloads it); a received zero UDP
 * checksum is accepted, as RFC 768 allows over IPv4.  All multi-byte
 * fields are big-endian; addresses in the host-order structs below.
 * Re-entrant: no state but what the caller passes.
 */
#ifndef EM_LINK_IPUDP_H
#define EM_LINK_IPUDP_H

#include <stddef.h>
#include <stdint.h>

#define EM_ETH_HDR_LEN   14u
#define EM_IPV4_HDR_LEN  20u
#define EM_UDP_HDR_LEN   8u
#define EM_IPUDP_HDR_LEN 42u
/** IP + UDP bytes inside an Ethernet payload (what a frame costs of the MTU). */
#define EM_IPUDP_OVERHEAD 28u
#define EM_ETHERTYPE_IPV4 0x0800u
#define EM_IPPROTO_UDP    17u
#define EM_IPUDP_TTL      64u
/** Default UDP port of the protocol and of the broadcast channel: below
 *  Linux's ephemeral range (32768..60999), so no kernel socket's
 *  automatically chosen port is ever taken for ours by the XDP filter. */
#define EM_UDP_PORT       29717u
#define EM_UDP_PORT_BCAST 29718u

struct em_wire_eth {
    uint8_t dst[6];
    uint8_t src[6];
    uint16_t type;
} __attribute__((packed));

struct em_wire_ipv4 {
    uint8_t ver_ihl;
    uint8_t tos;
    uint16_t total_len;
    uint16_t id;
    uint16_t frag; /**< flags (3 bits) + fragment offset (13 bits) */
    uint8_t ttl;
    uint8_t proto;
    uint16_t csum;
    uint32_t src;
    uint32_t dst;
} __attribute__((packed));

struct em_wire_udp {
    uint16_t sport;
    uint16_t dport;
    uint16_t len;
    uint16_t csum;
} __attribute__((packed));

/** The three headers exactly as on the wire. */
struct em_wire_ipudp {
    struct em_wire_eth eth;
    struct em_wire_ipv4 ip;
    struct em_wire_udp udp;
} __attribute__((packed));
_Static_assert(sizeof(struct em_wire_eth) == EM_ETH_HDR_LEN, "Ethernet header is 14 bytes");
_Static_assert(sizeof(struct em_wire_ipv4) == EM_IPV4_HDR_LEN, "IPv4 header is 20 bytes");
_Static_assert(sizeof(struct em_wire_udp) == EM_UDP_HDR_LEN, "UDP header is 8 bytes");
_Static_assert(sizeof(struct em_wire_ipudp) == EM_IPUDP_HDR_LEN, "headers are 42 bytes");
_Static_assert(offsetof(struct em_wire_ipudp, ip) == 14, "diagram: IPv4 at 14");
_Static_assert(offsetof(struct em_wire_ipudp, ip.frag) == 20, "diagram: fragment field at 20");
_Static_assert(offsetof(struct em_wire_ipudp, ip.csum) == 24, "diagram: IP checksum at 24");
_Static_assert(offsetof(struct em_wire_ipudp, ip.src) == 26, "diagram: source address at 26");
_Static_assert(offsetof(struct em_wire_ipudp, udp) == 34, "diagram: UDP at 34");
_Static_assert(offsetof(struct em_wire_ipudp, udp.csum) == 40, "diagram: UDP checksum at 40");

/** One direction of a UDP path (host order). */
typedef struct em_ipudp_path {
    uint8_t src_mac[6];
    uint8_t dst_mac[6]; /**< the next hop's: the peer, or the gateway toward it */
    uint32_t src_ip, dst_ip;
    uint16_t src_port, dst_port;
} em_ipudp_path_t;

/** em_ipudp_encode flags: which checksums the NIC fills in. */
enum em_ipudp_tx_flags {
    EM_IPUDP_TX_IP_CSUM_HW = 0x1, /**< leave the IP checksum 0 (offloaded) */
    EM_IPUDP_TX_UDP_CSUM_HW =
        0x2, /**< UDP checksum field = pseudo-header sum (offload convention) */
};

/**
 * Write the 42 header bytes for @p payload_len bytes of UDP payload into
 * @p out: IP checksum computed (unless offloaded), UDP checksum left 0
 * (set it with em_ipudp_udp_csum_set, or leave it 0), or with
 * EM_IPUDP_TX_UDP_CSUM_HW the pseudo-header sum a NIC expects.
 * @return 0, or -1 when @p payload_len does not fit an IPv4 datagram.
 */
int em_ipudp_encode(const em_ipudp_path_t *p, uint16_t ip_id, uint32_t payload_len, unsigned flags,
                    void *out);

/** A piece of the UDP payload (the payload may be scattered). */
typedef struct em_csum_piece {
    const void *buf;
    size_t len;
} em_csum_piece_t;

/**
 * Compute the UDP checksum of the datagram whose headers (as written by
 * em_ipudp_encode) are at @p hdr and whose payload is the @p n pieces, in
 * order, and store it (0 is sent as 0xFFFF).
 */
void em_ipudp_udp_csum_set(void *hdr, const em_csum_piece_t *pieces, unsigned n);

/** Internet checksum primitives (RFC 1071): a running sum over bytes. */
typedef struct em_csum {
    uint64_t sum;
    unsigned odd; /**< an odd number of bytes so far: the next byte is a low byte */
} em_csum_t;
void em_csum_add(em_csum_t *c, const void *buf, size_t len);
/** The folded one's complement sum (not complemented). */
uint16_t em_csum_fold(const em_csum_t *c);

/**
 * A path's headers prepared once (em_ipudp_template_init), so that each
 * frame costs a 42-byte copy, three length/id stores and the payload's sum:
 * the constant fields' partial checksums are kept.  The bytes written are
 * exactly em_ipudp_encode's plus em_ipudp_udp_csum_set's.
 */
typedef struct em_ipudp_template {
    uint8_t hdr[EM_IPUDP_HDR_LEN]; /**< lengths, id and checksums 0 */
    uint32_t ip_sum;               /**< IP header's constant fields */
    uint32_t udp_sum;              /**< pseudo header's addresses and protocol, the ports */
    unsigned flags;                /**< enum em_ipudp_tx_flags */
} em_ipudp_template_t;

void em_ipudp_template_init(em_ipudp_template_t *t, const em_ipudp_path_t *p, unsigned flags);

/**
 * Write the headers for a payload of the @p n pieces (@p payload_len bytes
 * in all) into @p out; @p udp_csum 0: no UDP checksum (sent as 0).  With
 * EM_IPUDP_TX_UDP_CSUM_HW the pseudo-header sum goes in its place.
 * @return 0, or -1 when the payload does not fit an IPv4 datagram.
 */
int em_ipudp_template_write(const em_ipudp_template_t *t, uint16_t ip_id, uint32_t payload_len,
                            const em_csum_piece_t *pieces, unsigned n, int udp_csum, void *out);

/** Why a received frame was refused. */
typedef enum em_ipudp_err {
    EM_IPUDP_OK = 0,
    EM_IPUDP_SHORT,    /**< shorter than the three headers */
    EM_IPUDP_NOT_IPV4, /**< another ethertype (ARP, our L2 ethertypes, VLAN...) */
    EM_IPUDP_VERSION,  /**< IP version is not 4 */
    EM_IPUDP_OPTIONS,  /**< IHL != 5: IPv4 options (never sent by us) */
    EM_IPUDP_FRAGMENT, /**< MF set or fragment offset != 0: we never fragment */
    EM_IPUDP_NOT_UDP,  /**< IP protocol is not UDP */
    EM_IPUDP_IP_LEN,   /**< IP total length below 28 or beyond the frame */
    EM_IPUDP_IP_CSUM,  /**< bad IP header checksum */
    EM_IPUDP_UDP_LEN,  /**< UDP length != IP total length - 20 */
    EM_IPUDP_ADDR,     /**< destination IP is not ours */
    EM_IPUDP_PORT,     /**< destination port is not ours */
    EM_IPUDP_UDP_CSUM, /**< bad UDP checksum */
    EM_IPUDP_NERR
} em_ipudp_err_t;

/** em_ipudp_decode flags: what the NIC already verified. */
enum em_ipudp_rx_flags {
    EM_IPUDP_RX_IP_CSUM_OK = 0x1,
    EM_IPUDP_RX_UDP_CSUM_OK = 0x2,
};

/** A decoded frame (host order); payload points into the frame. */
typedef struct em_ipudp_rx {
    uint8_t src_mac[6];
    uint32_t src_ip, dst_ip;
    uint16_t src_port, dst_port;
    const uint8_t *payload;
    uint32_t payload_len;
} em_ipudp_rx_t;

/**
 * Validate a received frame of @p len bytes (Ethernet padding allowed: the
 * IP total length is authoritative) addressed to @p my_ip (0: any) and
 * @p my_port.  Reads each header byte once.
 * @return EM_IPUDP_OK with @p out filled, or the reason for refusal.
 */
em_ipudp_err_t em_ipudp_decode(const void *frame, size_t len, uint32_t my_ip, uint16_t my_port,
                               unsigned flags, em_ipudp_rx_t *out);

/** A short name for a refusal reason ("fragment", "udp_csum", ...). */
const char *em_ipudp_err_name(em_ipudp_err_t e);

/** Refused frames by reason (the link's counters). */
typedef struct em_ipudp_counters {
    uint64_t refused[EM_IPUDP_NERR];
} em_ipudp_counters_t;

static inline void em_ipudp_count(em_ipudp_counters_t *c, em_ipudp_err_t e)
{
    if (e > EM_IPUDP_OK && e < EM_IPUDP_NERR)
        c->refused[e]++;
}

/** "a.b.c.d" of a host-order address into @p buf (16 bytes). */
void em_ipv4_str(uint32_t ip, char *buf, size_t len);

#endif
