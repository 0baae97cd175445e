/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file hs_wire.h
 * Wire version 3, first contact: the four handshake frames that give each
 * side of a pair the other's index in its own peer table (docs/design.md
 * "Wire v3: peers known by the wire").  All multi-byte fields big-endian;
 * code only touches the decoded host-order em_hs_t.
 *
 * A peer is named by its link address (as the receiving link reports a
 * frame's source), an endpoint index (which endpoint behind that address)
 * and a random 64-bit nonce (which incarnation of that endpoint).  No rank
 * travels.
 *
 * Handshake frame (EM_HS_LEN = 96 bytes, every type):
 *
 *    0               1               2               3
 *    0 1 2 3 4 5 6 7 0 1 2 3 4 5 6 7 0 1 2 3 4 5 6 7 0 1 2 3 4 5 6 7
 *   +---------------+---------------+---------------+---------------+
 *  0|  magic 0xE5   |  version 3    |     type      |  flags (0)    |
 *   +---------------+---------------+---------------+---------------+
 *  4|             source endpoint index (sender's)                  |
 *  8|          destination endpoint index (receiver's)              |
 * 12|                source nonce (sender's, 64 bits)               |
 * 16|                                                               |
 * 20|   destination nonce (the receiver's, as the sender knows it;  |
 * 24|   0 in INIT when the sender knows only the address and index) |
 *   +---------------------------------------------------------------+
 * 28|   source index: the sender's table index for the receiver     |
 *   |   (frames to the sender name it); none (all ones) in CHALLENGE |
 *   +---------------------------------------------------------------+
 * 32|   destination index: the receiver's index for the sender, as  |
 *   |   the sender knows it (an echo); none in INIT and CONFIRM      |
 *   +---------------------------------------------------------------+
 * 36|   initial sequence number of the sender's frames (random)      |
 *   +---------------------------------------------------------------+
 * 40|   token (64 bits, random): the key the sender wants on every   |
 * 44|   frame the receiver sends it                                  |
 *   +---------------------------------------------------------------+
 * 48|   cookie time (ms, the challenger's clock; CHALLENGE, CONFIRM) |
 *   +---------------------------------------------------------------+
 * 52|   cookie (64 bits): SipHash-2-4 under the challenger's secret  |
 * 56|   of the initiator's address and fields (CHALLENGE, CONFIRM)   |
 *   +---------------------------------------------------------------+
 * 60|                        reserved (0)                           |
 *   +---------------+-----------------------------------------------+
 * 64| reply addr len|  the sender's reply address: its link address |
 *   +---------------+  as the receiver's link sends to it (1..31    |
 * 68|  bytes, the rest up to byte 95 zero)                          |
 * ..|                                                               |
 * 92|                                                               |
 *   +---------------------------------------------------------------+
 *
 * Why the reply address travels: a link cannot always rebuild a sender's
 * address from a frame's source (the UDP link sends from another port than
 * it receives on; an L2 address names a queue the frame does not), so each
 * frame names where answers go.  The cookie covers that address, so a
 * CONFIRM proves that its sender receives there; the layer above also
 * checks that the frame's link source is consistent with it (the same
 * binding every data frame gets), so a third node cannot claim another's
 * address from its own.
 *
 * The exchange (A knows B's name; B needs no state until A proves it
 * receives at its address):
 *
 *     A                                              B
 *     | INIT  {A idx for B, A isn, A token}  ------> |  stateless: cookie of
 *     |                                              |  A's address + fields
 *     | <------ CHALLENGE {cookie, time}             |
 *     | CONFIRM {same fields, cookie echoed} ------> |  cookie valid: B binds
 *     |                                              |  its entry for A
 *     | <------ ACCEPT {B idx for A, B isn, B token} |
 *
 * INIT and CONFIRM are retransmitted until answered; B answers every valid
 * CONFIRM again (ACCEPT lost), and duplicates change nothing.  Both sides
 * may start at once: each side's CONFIRM binds the entry the other already
 * has for it.  The cookie makes an INIT cost its receiver nothing but the
 * answer, and a spoofed source address gets no entry (it never sees the
 * CHALLENGE).
 */
#ifndef EM_PROTO_HS_WIRE_H
#define EM_PROTO_HS_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define EM_HS_MAGIC   0xE5u
#define EM_HS_VERSION 3u
#define EM_HS_LEN     96u
/** Longest reply address (em_link_addr_t holds 31 bytes). */
#define EM_HS_ADDR_MAX 31u
/** "No index": the sender has none for the receiver yet (or none known). */
#define EM_HS_NO_INDEX 0xFFFFFFFFu

/** Handshake frame types (distinct from the data types 1-4 of wire.h, which
 *  share version 3). */
enum em_hs_type {
    EM_HS_INIT = 16,      /**< initiator -> responder: first contact */
    EM_HS_CHALLENGE = 17, /**< responder -> initiator: the cookie, no state kept */
    EM_HS_CONFIRM = 18,   /**< initiator -> responder: the INIT again, cookie echoed */
    EM_HS_ACCEPT = 19,    /**< responder -> initiator: its index, ISN and token */
};

/** The handshake frame exactly as on the wire (big-endian fields). */
struct em_hs_wire {
    uint8_t magic;
    uint8_t version;
    uint8_t type;
    uint8_t flags;
    uint32_t src_ep;
    uint32_t dst_ep;
    uint64_t src_nonce;
    uint64_t dst_nonce;
    uint32_t src_index;
    uint32_t dst_index;
    uint32_t isn;
    uint64_t token;
    uint32_t cookie_ms;
    uint64_t cookie;
    uint32_t rsvd;
    uint8_t addr_len;
    uint8_t addr[EM_HS_ADDR_MAX];
} __attribute__((packed));
_Static_assert(sizeof(struct em_hs_wire) == EM_HS_LEN, "handshake frame is 96 bytes");
_Static_assert(offsetof(struct em_hs_wire, src_ep) == 4, "diagram: source endpoint at 4");
_Static_assert(offsetof(struct em_hs_wire, src_nonce) == 12, "diagram: source nonce at 12");
_Static_assert(offsetof(struct em_hs_wire, dst_nonce) == 20, "diagram: destination nonce at 20");
_Static_assert(offsetof(struct em_hs_wire, src_index) == 28, "diagram: source index at 28");
_Static_assert(offsetof(struct em_hs_wire, dst_index) == 32, "diagram: destination index at 32");
_Static_assert(offsetof(struct em_hs_wire, isn) == 36, "diagram: ISN at 36");
_Static_assert(offsetof(struct em_hs_wire, token) == 40, "diagram: token at 40");
_Static_assert(offsetof(struct em_hs_wire, cookie_ms) == 48, "diagram: cookie time at 48");
_Static_assert(offsetof(struct em_hs_wire, cookie) == 52, "diagram: cookie at 52");
_Static_assert(offsetof(struct em_hs_wire, addr_len) == 64, "diagram: reply address at 64");

/** A decoded handshake frame, host byte order. */
typedef struct em_hs {
    uint8_t type;
    uint32_t src_ep, dst_ep;
    uint64_t src_nonce, dst_nonce;
    uint32_t src_index, dst_index;
    uint32_t isn;
    uint64_t token;
    uint32_t cookie_ms;
    uint64_t cookie;
    uint8_t addr_len;             /**< the sender's reply address: 1..EM_HS_ADDR_MAX */
    uint8_t addr[EM_HS_ADDR_MAX]; /**< (bytes past addr_len are zero on the wire) */
} em_hs_t;

/** Why a handshake frame was refused by the decoder (each one counted). */
typedef enum em_hs_dec {
    EM_HS_DEC_OK = 0,
    EM_HS_DEC_SHORT,     /**< not EM_HS_LEN bytes (a link may pad: longer is fine) */
    EM_HS_DEC_MAGIC,     /**< not an ethermpi frame */
    EM_HS_DEC_VERSION,   /**< ethermpi frame of another version */
    EM_HS_DEC_TYPE,      /**< not a handshake type */
    EM_HS_DEC_MALFORMED, /**< flags or reserved set, a zero nonce where one is required, an
                              index where the type has none, a missing cookie, a reply
                              address of no byte or more than EM_HS_ADDR_MAX, padding
                              after it not zero */
    EM_HS_DEC_COUNT
} em_hs_dec_t;

/** Is @p frame (at least 3 bytes) a v3 handshake frame?  (Magic, version, type only.) */
static inline int em_hs_is(const void *frame, size_t len)
{
    const uint8_t *b = frame;
    return len >= 3 && b[0] == EM_HS_MAGIC && b[1] == EM_HS_VERSION && b[2] >= EM_HS_INIT &&
           b[2] <= EM_HS_ACCEPT;
}

/** Encode @p h into @p out (EM_HS_LEN bytes).  @return EM_HS_LEN. */
size_t em_hs_encode(const em_hs_t *h, void *out);

/**
 * Decode and validate a handshake frame of @p len bytes: read once into a
 * private copy, every field checked that can be without state (see
 * em_hs_dec_t).  @return EM_HS_DEC_OK with @p h filled, or the reason.
 */
em_hs_dec_t em_hs_decode(const void *frame, size_t len, em_hs_t *h);

#endif
