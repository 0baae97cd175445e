/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file bcast_wire.h
 * Wire format of the lossy broadcast channel (em_bcast; the design of
 * [relax-dpdk], docs/references.md).  It has
 * nothing to do with the reliable protocol's header (proto/wire.h): frames
 * of the channel travel under their own ethertype (0x88B6) or UDP port, so
 * the two never mix.  Every multi-byte field is big-endian.  As in
 * proto/wire.h, the codec reads and writes the packed struct
 * em_bc_wire_hdr (through memcpy, so unaligned frames are safe) with
 * htobe / betoh, every field offset is asserted against the diagram below,
 * and the rest of the code only touches the decoded host-order em_bc_hdr.
 *
 * Header (EM_BC_HDR_LEN = 24 bytes), then `count` elements:
 *
 *    0               1               2               3
 *    0 1 2 3 4 5 6 7 0 1 2 3 4 5 6 7 0 1 2 3 4 5 6 7 0 1 2 3 4 5 6 7
 *   +---------------+---------------+---------------+---------------+
 *  0|  magic 0xEB   |  version 1    |  elem type    |  reserved (0) |
 *   +---------------+---------------+---------------+---------------+
 *  4|                  job key (random, per job)                    |
 *   +-------------------------------+-------------------------------+
 *  8|          channel id           |       sender (member id)      |
 *   +-------------------------------+-------------------------------+
 * 12|         sequence number (per sender and channel, +1/frame)    |
 *   +---------------------------------------------------------------+
 * 16|        element offset (index of the first element carried)    |
 *   +-------------------------------+-------------------------------+
 * 20|        element count (>= 1)   |         reserved (0)          |
 *   +-------------------------------+-------------------------------+
 * 24|  count elements, each EM_BC_ELEM_SIZE(type) bytes, big-endian |
 *   |  (type 1 = IEEE-754 binary64: the 8 bytes of the double in    |
 *   |   network order)                                              |
 *
 * A frame may be longer than header + elements only when it is no longer
 * than EM_BC_MIN_FRAME (Ethernet pads short frames to 60 bytes = 14-byte
 * Ethernet header + 46); any other length mismatch makes it malformed.
 * Elements per frame: (frame payload - 24) / 8, i.e. 184 at an Ethernet MTU
 * of 1500 (181 over UDP/IPv4, as in the paper) and 1122 at 9000 (1118).
 */
#ifndef EM_BCAST_WIRE_H
#define EM_BCAST_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define EM_BC_MAGIC     0xEBu
#define EM_BC_VERSION   1u
#define EM_BC_HDR_LEN   24u
#define EM_BC_MIN_FRAME 46u /**< Ethernet minimum payload (padding allowed up to here) */

/** Element types (field "elem type"). */
enum em_bc_type {
    EM_BC_T_F64 = 1, /**< IEEE-754 binary64, big-endian */
};
#define EM_BC_ELEM_SIZE 8u /**< bytes per element of every type defined so far */

/** The header exactly as on the wire (big-endian fields, no padding). */
struct em_bc_wire_hdr {
    uint8_t magic;
    uint8_t version;
    uint8_t type;
    uint8_t rsvd0;
    uint32_t key;
    uint16_t channel;
    uint16_t sender;
    uint32_t seq;
    uint32_t offset;
    uint16_t count;
    uint16_t rsvd1;
} __attribute__((packed));
_Static_assert(sizeof(struct em_bc_wire_hdr) == EM_BC_HDR_LEN, "bcast header is 24 bytes");
_Static_assert(offsetof(struct em_bc_wire_hdr, type) == 2, "diagram: elem type at 2");
_Static_assert(offsetof(struct em_bc_wire_hdr, rsvd0) == 3, "diagram: reserved at 3");
_Static_assert(offsetof(struct em_bc_wire_hdr, key) == 4, "diagram: job key at 4");
_Static_assert(offsetof(struct em_bc_wire_hdr, channel) == 8, "diagram: channel id at 8");
_Static_assert(offsetof(struct em_bc_wire_hdr, sender) == 10, "diagram: sender at 10");
_Static_assert(offsetof(struct em_bc_wire_hdr, seq) == 12, "diagram: sequence number at 12");
_Static_assert(offsetof(struct em_bc_wire_hdr, offset) == 16, "diagram: element offset at 16");
_Static_assert(offsetof(struct em_bc_wire_hdr, count) == 20, "diagram: element count at 20");
_Static_assert(offsetof(struct em_bc_wire_hdr, rsvd1) == 22, "diagram: reserved at 22");

/** Decoded header, host order (the magic, version and reserved fields are
 *  checked by em_bc_decode and not kept). */
typedef struct em_bc_hdr {
    uint8_t type;     /**< element type, enum em_bc_type */
    uint32_t key;     /**< the job's key */
    uint16_t channel; /**< channel id */
    uint16_t sender;  /**< member id of the sender, < members */
    uint32_t seq;     /**< per sender and channel, +1 per frame (wraps: util/seq.h) */
    uint32_t offset;  /**< index of the first element carried */
    uint16_t count;   /**< elements carried, >= 1 */
} em_bc_hdr_t;

/** What a receiver accepts: frames that do not match are rejected. */
typedef struct em_bc_expect {
    uint32_t key;
    uint16_t channel;
    uint16_t members; /**< senders are 0 .. members-1 */
    uint32_t vec_len; /**< offset + count must be <= vec_len */
} em_bc_expect_t;

/** Decode results; every value but OK is a reason a frame is rejected. */
enum em_bc_dec {
    EM_BC_OK = 0,
    EM_BC_ESHORT, /**< shorter than the header */
    EM_BC_EMAGIC,
    EM_BC_EVERSION,
    EM_BC_ETYPE,    /**< unknown element type */
    EM_BC_ERSVD,    /**< a reserved field is not 0 */
    EM_BC_EKEY,     /**< another job's frame */
    EM_BC_ECHANNEL, /**< another channel */
    EM_BC_ESENDER,  /**< sender id >= members */
    EM_BC_ECOUNT,   /**< count 0 */
    EM_BC_ELEN,     /**< frame length does not match count, or more elements than
                           this channel's frames hold (its cfg.mtu; em_bcast_poll) */
    EM_BC_ERANGE,   /**< offset + count beyond the vector */
    EM_BC_NREASONS
};

/** Short name of a decode result ("short", "magic", ...). */
const char *em_bc_dec_name(int r);

/**
 * Validate and decode the frame at @p buf (@p len bytes) against @p ex.
 * Every field is checked before any is used; on EM_BC_OK the elements
 * start at buf + EM_BC_HDR_LEN and h->count of them fit inside @p len.
 */
int em_bc_decode(const uint8_t *buf, size_t len, const em_bc_expect_t *ex, em_bc_hdr_t *h);

/** Write the header (EM_BC_HDR_LEN bytes) for @p h at @p buf. */
void em_bc_encode_hdr(const em_bc_hdr_t *h, uint8_t *buf);

/** Store / load one binary64 element in network order. */
void em_bc_put_f64(uint8_t *p, double v);
double em_bc_get_f64(const uint8_t *p);

#endif
