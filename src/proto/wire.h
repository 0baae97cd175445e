/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file wire.h
 * The ethermpi wire format: one fixed base header on every frame, plus a
 * put extension on PUT frames.  All multi-byte fields are big-endian on the
 * wire; code only ever touches the decoded host-order struct em_hdr.
 *
 * Base header (EM_HDR_LEN = 48 bytes):
 *
 *    0               1               2               3
 *    0 1 2 3 4 5 6 7 0 1 2 3 4 5 6 7 0 1 2 3 4 5 6 7 0 1 2 3 4 5 6 7
 *   +---------------+---------------+---------------+---------------+
 *  0|  magic 0xE5   |  version 3    |     type      |     flags     |
 *   +---------------+---------------+---------------+---------------+
 *  4|   receiver's index for the sender (32 bits): the sender's     |
 *   |   slot in the receiver's peer table, as the receiver gave it  |
 *   +---------------------------------------------------------------+
 *  8|   pair key (64 bits): mixed from the two endpoints' random     |
 * 12|   secrets, published through the launcher (modex); both ways  |
 *   +-------------------------------+---------------+---------------+
 * 16|   payload length (this frame) |      tag      |  reserved (0) |
 *   +-------------------------------+---------------+---------------+
 * 20|                  sequence number (sender's)                   |
 *   +---------------------------------------------------------------+
 * 24|   cumulative ACK: next sequence number the sender expects     |
 *   |   from the receiver of this frame                             |
 *   +---------------------------------------------------------------+
 * 28|   SACK bitmap: bit i set = (ACK + 1 + i) received and buffered |
 * 32|                           (64 bits)                           |
 *   +---------------------------------------------------------------+
 * 36|                         message id                            |
 *   +---------------------------------------------------------------+
 * 40|                 message length (all fragments)                |
 *   +-------------------------------+-------------------------------+
 * 44|        fragment number        |        fragment count         |
 *   +-------------------------------+-------------------------------+
 *
 * Put extension (PUT frames only, EM_PUT_EXT_LEN = 24 bytes, at offset 48):
 *
 * 48|                 region id (receiver's registry)               |
 * 52|                        reserved (0)                           |
 * 56|                     region key (64 bits)                      |
 * 64|      offset of this frame's first byte in the region (64)     |
 *
 * Flags: EM_F_ACKNOW on a standalone ACK is a probe ("answer now"); the
 * answer carries EM_F_PROBED (docs/design.md "Retransmit timeouts: probe
 * first").  Added within version 2 (real networks): a build without the flag
 * refuses such frames as malformed, and the BTL's modex version keeps
 * such builds out of one job.
 *
 * Version 2 (hostile input): the 32-bit key derived from the job id became a
 * 64-bit key per pair of endpoints, mixed from two random secrets (never
 * from the job id), at offset 8; the ISNs are random too (docs/design.md,
 * "Threat model").
 *
 * Version 3 (peers known by the wire, docs/design.md "Wire v3"): the two
 * 16-bit endpoint numbers at offset 4 (source and destination, a job rank
 * inside Open MPI) became one 32-bit index: what the receiver calls the
 * sender in its own peer table.  The sender's owner sets it per peer
 * (em_proto_set_peer_index(): today from numbering both sides share,
 * later from what wire v3's handshake, conn.h, tells it).  The receiver
 * finds the sending peer with one bounds-checked array access and
 * then checks that peer's pair key and source address as before.  No rank
 * travels and nothing names the receiver: the link address already
 * delivered the frame to it, and a frame that reached the wrong endpoint
 * fails the pair key there.  Two 16-bit fields became one 32-bit field, so
 * no byte was freed: the header stays 48 bytes, every other field keeps
 * its offset, and the one reserved byte (19) must still be zero.  Version
 * 3 is shared with the handshake frames (hs_wire.h, types 16-19, their own
 * layout), which are told apart by type before this decoder runs; to it
 * they are malformed.  On a link several endpoints of one process share
 * (link/link_mux.h: a DPDK port, an AF_XDP queue) the index's top byte
 * names the receiving endpoint (its slot, part of its link address) and
 * the 24 bits below what that endpoint calls the sender; the link writes
 * and clears that byte, the protocol sees indexes below 2^24.
 *
 * The payload follows the header(s).  Frames may be longer than header +
 * payload (Ethernet pads to 60 bytes); the length field is authoritative.
 *
 * No raw pointer of ours travels: a put names (region id, key, offset) and
 * the receiver checks key and bounds before writing a byte.  (Open MPI's ob1
 * headers inside messages do carry pointers: only a peer bound to its
 * address and pair key can deliver a message.)
 */
#ifndef EM_PROTO_WIRE_H
#define EM_PROTO_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define EM_WIRE_MAGIC   0xE5u
#define EM_WIRE_VERSION 3u
#define EM_HDR_LEN      48u
#define EM_PUT_EXT_LEN  24u

/** Packet types. */
enum em_pkt_type {
    EM_PT_DATA = 1, /**< fragment of a message (sequenced) */
    EM_PT_PUT = 2,  /**< fragment of a put into a remote region (sequenced) */
    EM_PT_ACK = 3,  /**< standalone ACK (+SACK), consumes no sequence number */
    EM_PT_NACK = 4, /**< Go-Back-N: "resend from ACK", consumes no sequence number */
};

/** Flag bits; any other bit set makes the frame malformed. */
enum em_pkt_flags {
    EM_F_RETX = 0x01,   /**< this frame is a retransmission */
    EM_F_SACK = 0x02,   /**< the SACK bitmap is meaningful */
    EM_F_ACKNOW = 0x04, /**< acknowledge without delay (last frame of a put, or of a
                             message sent with EM_SEND_ACK_LAST: the sender's
                             completion, and so MPI's FIN, waits on it) */
    EM_F_REMERR = 0x08, /**< remote access error: the sender of this frame refused a
                             put of ours (region, key or bounds).  Sticky: set on every
                             frame after the refusal, so the ACK that covers the refused
                             frame carries it (like IBV_WC_REM_ACCESS_ERR) */
    EM_F_PROBED = 0x10, /**< the ACK fields of this frame were taken after a probe of the
                             destination arrived (a standalone ACK with EM_F_ACKNOW, sent
                             on a retransmit timeout): a frame the destination sent before
                             its probe that this ACK does not cover was lost, if the network
                             kept the order (a late ACK is no loss) */
};
#define EM_F_ALL (EM_F_RETX | EM_F_SACK | EM_F_ACKNOW | EM_F_REMERR | EM_F_PROBED)

/** The base header exactly as on the wire (big-endian fields). */
struct em_wire_hdr {
    uint8_t magic;
    uint8_t version;
    uint8_t type;
    uint8_t flags;
    uint32_t dst_index;
    uint64_t key;
    uint16_t len;
    uint8_t tag;
    uint8_t rsvd;
    uint32_t seq;
    uint32_t ack;
    uint64_t sack;
    uint32_t msg_id;
    uint32_t msg_len;
    uint16_t frag_no;
    uint16_t frag_cnt;
} __attribute__((packed));
_Static_assert(sizeof(struct em_wire_hdr) == EM_HDR_LEN, "base header is 48 bytes");
_Static_assert(offsetof(struct em_wire_hdr, dst_index) == 4, "diagram: receiver's index at 4");
_Static_assert(offsetof(struct em_wire_hdr, key) == 8, "diagram: pair key at 8");
_Static_assert(offsetof(struct em_wire_hdr, len) == 16, "diagram: length at 16");
_Static_assert(offsetof(struct em_wire_hdr, rsvd) == 19, "diagram: reserved byte at 19");
_Static_assert(offsetof(struct em_wire_hdr, seq) == 20, "diagram: sequence number at 20");
_Static_assert(offsetof(struct em_wire_hdr, ack) == 24, "diagram: ACK at 24");
_Static_assert(offsetof(struct em_wire_hdr, sack) == 28, "diagram: SACK at 28");
_Static_assert(offsetof(struct em_wire_hdr, msg_id) == 36, "diagram: message id at 36");
_Static_assert(offsetof(struct em_wire_hdr, frag_no) == 44, "diagram: fragment number at 44");

/** The put extension exactly as on the wire (big-endian fields). */
struct em_wire_put_ext {
    uint32_t region;
    uint32_t rsvd;
    uint64_t key;
    uint64_t offset;
} __attribute__((packed));
_Static_assert(sizeof(struct em_wire_put_ext) == EM_PUT_EXT_LEN, "put extension is 24 bytes");
_Static_assert(offsetof(struct em_wire_put_ext, key) == 8, "diagram: region key at 48 + 8");

/** The type (enum em_pkt_type) of a header the protocol encoded itself
 *  (emit's @c hdr), for the engine to set the link's frame class. */
static inline uint8_t em_wire_type(const void *hdr)
{
    return ((const struct em_wire_hdr *)hdr)->type;
}

/** A decoded header, host byte order. */
typedef struct em_hdr {
    uint8_t type;
    uint8_t flags;
    uint8_t tag;
    uint64_t job_key; /**< the pair's key (wire field "key"; the name is v1's) */
    /** The receiver's index for the sender (wire field at offset 4): on a
     *  frame we receive, our own peer number of its sender; on one we send,
     *  what the peer calls us (em_proto_set_peer_index()). */
    uint32_t index;
    uint16_t len;
    uint32_t seq;
    uint32_t ack;
    uint64_t sack;
    uint32_t msg_id;
    uint32_t msg_len;
    uint16_t frag_no;
    uint16_t frag_cnt;
    /* put extension: meaningful for EM_PT_PUT only */
    uint32_t region;
    uint64_t key;
    uint64_t offset;
} em_hdr_t;

/** Why a frame was refused by the decoder. */
typedef enum em_decode_err {
    EM_DEC_OK = 0,
    EM_DEC_SHORT,     /**< shorter than the headers it claims */
    EM_DEC_MAGIC,     /**< not an ethermpi frame */
    EM_DEC_VERSION,   /**< ethermpi frame of another protocol version */
    EM_DEC_MALFORMED, /**< fields inconsistent (type, flags, lengths, fragments) */
} em_decode_err_t;

/** Header length of a frame of @p type (base + extension). */
static inline size_t em_hdr_len(uint8_t type)
{
    return type == EM_PT_PUT ? EM_HDR_LEN + EM_PUT_EXT_LEN : EM_HDR_LEN;
}

/**
 * Encode @p h into @p out (which must hold em_hdr_len(h->type) bytes).
 * @return the number of bytes written.
 */
size_t em_hdr_encode(const em_hdr_t *h, void *out);

/**
 * Decode and validate the headers of a frame of @p frame_len bytes.
 * Checks everything that can be checked without protocol state: magic,
 * version, type, flags, reserved bytes, payload length against the frame,
 * fragment number < count, payload against message length, offset overflow.
 * The index, the key and the source address are checked by the protocol
 * (it knows them).
 * @return EM_DEC_OK, with @p h filled, or the reason for refusal.
 */
em_decode_err_t em_hdr_decode(const void *frame, size_t frame_len, em_hdr_t *h);

/**
 * The length of the frame that starts at @p frame: its headers plus the
 * payload length its base header states, read from magic, version, type
 * and length only.  For a link that must split a buffer of coalesced
 * frames without being told the segment size (link_udp's recvfrom poll);
 * each frame split out still goes through em_hdr_decode.
 * Handshake frames (hs_wire.h) share the version but not this layout:
 * for one (em_hs_is()) the length is EM_HS_LEN.
 * @return the length, or 0 if @p frame is not of this wire version or
 *         states more than @p avail bytes.
 */
uint32_t em_wire_frame_len(const void *frame, size_t avail);

#endif
