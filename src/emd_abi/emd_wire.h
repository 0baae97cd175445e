/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file emd_wire.h
 * What crosses the cable between two nodes in daemon mode: the shim every
 * frame carries after its Ethernet header (written by a daemon, or by a
 * process on its bulk queue), the daemons' hello, and a client's address
 * in the modex.  Part of the daemon contract (src/emd_abi/, see
 * emd_region.h for why it is a layer of its own); no DPDK, no daemon code.
 *
 * Shim (EMD_WIRE_HDR_LEN = 16 bytes, big-endian fields, after the Ethernet
 * header):
 *
 *    0               1               2               3
 *    0 1 2 3 4 5 6 7 0 1 2 3 4 5 6 7 0 1 2 3 4 5 6 7 0 1 2 3 4 5 6 7
 *   +---------------+---------------+---------------+---------------+
 *  0|  magic 0xED   |  EMD_VERSION  |  frame class  | reserved (0)  |
 *   +---------------+---------------+---------------+---------------+
 *  4|   length of the frame after   |     destination endpoint      |
 *   |   the shim (authoritative)    |                               |
 *   +-------------------------------+-------------------------------+
 *  8|        source endpoint        |   source node MAC (6 bytes:   |
 *   +-------------------------------+                               |
 * 12|    where ACKs go back to)                                     |
 *   +---------------------------------------------------------------+
 *
 * The magic is not the protocol's 0xE5, so a direct-mode receiver drops a
 * daemon frame as foreign.  The frame class (enum emd_cls) is the sender's
 * word for what the frame is (message data, bulk put data, control): the
 * daemons and links route and count by it and never read the protocol
 * frame for that.  It is a claim of the sending process, trusted for
 * nothing but routing and counting.  Ethernet may pad a frame: the length
 * field bounds the payload.
 */
#ifndef EM_EMD_ABI_EMD_WIRE_H
#define EM_EMD_ABI_EMD_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "emd_abi/emd_abi.h"

#define EMD_WIRE_MAGIC   0xEDu
#define EMD_WIRE_HDR_LEN 16u

/** Frame classes (the values of em_pkt_t::cls in link/link.h; link_emd asserts it). */
enum emd_cls {
    EMD_CLS_DATA = 0, /**< sequenced message data (and anything unclassified) */
    EMD_CLS_BULK = 1, /**< put (rendezvous) data: the bulk queue's traffic */
    EMD_CLS_CTRL = 2, /**< standalone ACK/NACK */
    EMD_CLS_COUNT = 3,
};

/** The shim exactly as on the wire (big-endian fields). */
struct emd_wire_hdr {
    uint8_t magic;      /**< EMD_WIRE_MAGIC */
    uint8_t version;    /**< EMD_VERSION */
    uint8_t cls;        /**< enum emd_cls */
    uint8_t rsvd;       /**< 0 */
    uint16_t len;       /**< frame bytes that follow */
    uint16_t dst;       /**< destination endpoint (EMD_EP_CONTROL: a hello) */
    uint16_t src;       /**< source endpoint */
    uint8_t src_mac[6]; /**< source node */
} __attribute__((packed));
_Static_assert(sizeof(struct emd_wire_hdr) == EMD_WIRE_HDR_LEN, "the shim is 16 bytes");
_Static_assert(offsetof(struct emd_wire_hdr, cls) == 2, "diagram: class at 2");
_Static_assert(offsetof(struct emd_wire_hdr, len) == 4, "diagram: length at 4");
_Static_assert(offsetof(struct emd_wire_hdr, dst) == 6, "diagram: destination at 6");
_Static_assert(offsetof(struct emd_wire_hdr, src) == 8, "diagram: source at 8");
_Static_assert(offsetof(struct emd_wire_hdr, src_mac) == 10, "diagram: source MAC at 10");

/** A decoded shim, host byte order. */
typedef struct emd_shim {
    uint8_t cls;
    uint16_t len, dst, src;
    uint8_t src_mac[6];
} emd_shim_t;

/** Why a shim or hello was refused (each counted by the caller where it counts). */
enum emd_wire_err {
    EMD_WIRE_OK = 0,
    EMD_WIRE_SHORT,       /**< shorter than the shim (or the hello) */
    EMD_WIRE_MAGIC_BAD,   /**< not a daemon frame */
    EMD_WIRE_VERSION_BAD, /**< another EMD_VERSION (daemons from different builds) */
    EMD_WIRE_LEN_BAD,     /**< length 0, or beyond the frame */
    EMD_WIRE_DST_BAD,     /**< destination endpoint 0 */
    EMD_WIRE_CLS_BAD,     /**< unknown class, or reserved bits set */
    EMD_WIRE_HELLO_BAD,   /**< a hello with a bad kind, layout or reserved bytes */
};

/** A sentence for an enum emd_wire_err. */
const char *emd_wire_strerror(int err);

/** Write the shim at @p p (EMD_WIRE_HDR_LEN bytes). */
void emd_wire_encode(uint8_t *p, const emd_shim_t *s);
/**
 * Decode the shim at the start of a @p frame_len-byte frame into @p out.
 * @return EMD_WIRE_OK, or the reason (nothing in @p out is meaningful then).
 */
int emd_wire_decode(const uint8_t *p, size_t frame_len, emd_shim_t *out);

/*
 * The daemons of a memif cable check at start that their ports have the
 * same number of queue pairs (memif pairs queue i with queue i; a server
 * with more queues than its client reads ring 0 through the extra ones).
 * Each sends a hello to the broadcast address, with the shim's destination
 * EMD_EP_CONTROL (an endpoint never given to a client), and answers one.
 *
 *    0      4        5      6            8             10          16
 *   +------+--------+------+------------+-------------+-----------+
 *   |"EMDH"|version | kind | slots (be) | queues (be) | rsvd (0)  |
 *   +------+--------+------+------------+-------------+-----------+
 */
#define EMD_EP_CONTROL  0xFFFFu
#define EMD_HELLO_MAGIC "EMDH"
enum emd_hello_kind { EMD_HELLO = 1, EMD_HELLO_REPLY = 2 };

/** The hello body after the shim, as on the wire (big-endian fields). */
struct emd_hello {
    uint8_t magic[4]; /**< "EMDH" */
    uint8_t version;  /**< EMD_VERSION */
    uint8_t kind;     /**< enum emd_hello_kind */
    uint16_t slots;   /**< bulk-queue slots in effect (emd --bulk-slots; 0: none) */
    uint16_t queues;  /**< queue pairs of the port */
    uint8_t rsvd[6];  /**< 0 */
} __attribute__((packed));
_Static_assert(sizeof(struct emd_hello) == 16, "emd_hello is 16 bytes");
_Static_assert(offsetof(struct emd_hello, slots) == 6, "diagram: slots at 6");
_Static_assert(offsetof(struct emd_hello, queues) == 8, "diagram: queues at 8");

/** Write a hello at @p p (sizeof(struct emd_hello) bytes). */
void emd_hello_encode(uint8_t *p, uint8_t kind, uint16_t slots, uint16_t queues);
/** @return EMD_WIRE_OK with the fields, or EMD_WIRE_SHORT / EMD_WIRE_HELLO_BAD. */
int emd_hello_decode(const uint8_t *p, size_t len, uint8_t *kind, uint16_t *slots,
                     uint16_t *queues);

/*
 * Node ids (udp framing, `emd --framing`): 6 bytes that name a node's daemon.
 * L2 framing: its port's MAC.  udp framing: its IPv4 address and UDP port,
 * big-endian (a.b.c.d, port high, port low), which is what the node table
 * keys peers by and what a daemon's udp link sends to (the next hop's MAC
 * comes from the kernel, link/neigh.h).  The shim's src_mac, a slot's mac,
 * the region's mac and the modex address's first 6 bytes all carry the
 * node id of the framing in use; clients treat it as opaque.
 *
 * A client's address in the modex (em_link_addr_t): node id (6), endpoint
 * (2, big-endian) and 4 more bytes when it has a bulk queue (the format
 * EMD_ADDR_BULKQ_V1, its slot, S, 0) or when its daemon runs udp framing
 * (EMD_ADDR_UDP_V1, 0, 0, 0: struct emd_addr_udp_wire).  8 bytes: L2, no
 * bulk queue (puts to it go through the daemons).  An older build refuses
 * the udp format (unknown format byte): never a wrong guess.
 */
#define EMD_ADDR_LEN       8u
#define EMD_ADDR_LEN_BULKQ 12u
#define EMD_ADDR_LEN_UDP   12u
#define EMD_ADDR_BULKQ_V1  1u
#define EMD_ADDR_UDP_V1    2u

/** Framing of a daemon's node ids (emd --framing; emd_addr_decode's @p framing). */
enum emd_framing { EMD_FRAMING_L2 = 0, EMD_FRAMING_UDP = 1 };

/** The address as in the modex (big-endian endpoint); the last 4 bytes only with a bulk queue. */
struct emd_addr_wire {
    uint8_t mac[6]; /**< the node (its port's MAC) */
    uint16_t ep;    /**< endpoint, never 0 */
    uint8_t format; /**< EMD_ADDR_BULKQ_V1 */
    uint8_t slot;   /**< the process's bulk slot, < slots */
    uint8_t slots;  /**< S of its daemon, 1..EMD_BULKQ_SLOTS_MAX */
    uint8_t rsvd;   /**< 0 */
} __attribute__((packed));
_Static_assert(sizeof(struct emd_addr_wire) == EMD_ADDR_LEN_BULKQ, "the address is 12 bytes");
_Static_assert(offsetof(struct emd_addr_wire, ep) == 6, "endpoint at 6");
_Static_assert(offsetof(struct emd_addr_wire, format) == EMD_ADDR_LEN, "bulk-queue part at 8");

/** The address of a client whose daemon runs udp framing (big-endian; no bulk queue). */
struct emd_addr_udp_wire {
    uint32_t ip;     /**< the node's IPv4 address */
    uint16_t port;   /**< the node's UDP port (its daemon's) */
    uint16_t ep;     /**< endpoint, never 0 */
    uint8_t format;  /**< EMD_ADDR_UDP_V1 */
    uint8_t rsvd[3]; /**< 0 */
} __attribute__((packed));
_Static_assert(sizeof(struct emd_addr_udp_wire) == EMD_ADDR_LEN_UDP, "the udp address is 12 bytes");
_Static_assert(offsetof(struct emd_addr_udp_wire, port) == 4, "port at 4 (node id: bytes 0..5)");
_Static_assert(offsetof(struct emd_addr_udp_wire, ep) == 6, "endpoint at 6, as in L2");
_Static_assert(offsetof(struct emd_addr_udp_wire, format) == 8, "format at 8, as in L2");

/** Fill @p out (>= EMD_ADDR_LEN_BULKQ bytes); slots 0: no bulk queue. @return the length. */
uint8_t emd_addr_encode(uint8_t *out, const uint8_t mac[6], uint16_t ep, uint16_t slots,
                        uint16_t slot);
/**
 * Decode a peer's address: endpoint != 0; for 12 bytes the format, S in
 * 1..EMD_BULKQ_SLOTS_MAX, slot < S, the last byte 0.  @p slots = 0 for an
 * 8-byte address.  @return 0, or -1 (not a daemon-mode address).
 */
int emd_addr_decode(const uint8_t *a, size_t len, uint8_t mac[6], uint16_t *ep, uint16_t *slots,
                    uint16_t *slot);
/** Fill @p out (EMD_ADDR_LEN_UDP bytes) for node id @p node (IPv4 + port). @return the length. */
uint8_t emd_addr_encode_udp(uint8_t *out, const uint8_t node[6], uint16_t ep);
/**
 * The framing of a peer's address: EMD_FRAMING_UDP for a valid udp
 * address (endpoint != 0, reserved bytes 0, IPv4 not 0, port not 0),
 * EMD_FRAMING_L2 for what emd_addr_decode takes, -1 otherwise.  For a udp
 * address the node id goes to @p node and the endpoint to @p ep.
 */
int emd_addr_framing(const uint8_t *a, size_t len, uint8_t node[6], uint16_t *ep);
/** A node id a daemon may send to: L2, a unicast MAC; udp, an IPv4
 *  address that is not 0, broadcast or multicast, and a port not 0. */
int emd_node_unicast(int framing, const uint8_t node[6]);

#endif
