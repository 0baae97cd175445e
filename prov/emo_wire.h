/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file emo_wire.h
 * The provider's own wire formats, carried inside engine messages (the
 * engine's header, keys, sequence numbers and fragmentation come first;
 * src/proto/wire.h).  The engine message's 8-bit tag is the type below.
 *
 * Message header (EMO_HDR_LEN = 56 bytes, big-endian), at the start of
 * every engine message the provider sends:
 *
 *    0               1               2               3
 *    0 1 2 3 4 5 6 7 0 1 2 3 4 5 6 7 0 1 2 3 4 5 6 7 0 1 2 3 4 5 6 7
 *   +---------------+---------------+---------------+---------------+
 *  0|  magic 0xEF   |  version 1    |     type      |     flags     |
 *   +---------------+---------------+---------------+---------------+
 *  4|                         reserved (0)                          |
 *   +---------------------------------------------------------------+
 *  8|                 tag (64 bits; 0 for FI_MSG traffic)           |
 *   +---------------------------------------------------------------+
 * 16|          remote CQ data (64 bits; EMO_F_DATA, else 0)         |
 *   +---------------------------------------------------------------+
 * 24|  length (64): EAGER payload bytes after this header; RTS the  |
 *   |  whole message; CTS the bytes the receiver takes; FIN written |
 *   +---------------------------------------------------------------+
 * 32|       sender's cookie (RTS, CTS echo it; else 0)              |
 *   +---------------------------------------------------------------+
 * 36|       receiver's cookie (CTS, FIN echo it; else 0)            |
 *   +---------------------------------------------------------------+
 * 40|       region id (CTS; else 0)                                 |
 *   +---------------------------------------------------------------+
 * 44|                         reserved (0)                          |
 *   +---------------------------------------------------------------+
 * 48|       region key (64 bits; CTS; else 0)                       |
 *   +---------------------------------------------------------------+
 *
 * Rendezvous (messages longer than the eager limit): the sender sends RTS;
 * when a receive matches it, the receiver registers its buffer with the
 * engine and answers CTS (region id + random key: never a raw address);
 * the sender puts the bytes there (the engine checks region, key and
 * bounds before a byte is written) and then sends FIN.  The engine keeps
 * each peer's frames in order, so FIN arrives after the last put byte was
 * placed.  A cookie names an operation in its owner's table (index +
 * generation) and is checked against the peer before it is used.
 *
 * RMA (prov/emo_rma.c; FI_RMA with FI_MR_PROV_KEY): a write is puts
 * alone, into the target's registered region named by the application's
 * key, (region id << 48) | 48-bit region key; fi_writedata adds WDATA
 * after them (length = bytes written, data = the remote CQ data, flag
 * EMO_F_DATA, tag = offset in the target's region, key = the application's
 * key), which the target reports as an FI_REMOTE_WRITE completion only if
 * that region takes such a write (else its puts were refused).  A read
 * up to the eager limit, and every atomic, is the engine's own request
 * and answer (its tag EM_ENGINE_TAG_RMA, src/engine/atomic.h), not a
 * message of ours.  A longer read
 * sends READ: length = bytes, sender's cookie = the read, region + key =
 * where the initiator registered its buffer for the answer, tag = offset
 * in the target's region, data = the target's key.  The target checks key,
 * bounds and FI_REMOTE_READ (em_engine_region_at) and puts the bytes into
 * the initiator's region, then sends RDONE
 * (receiver's cookie = the read, length = bytes placed, data = 0, or the
 * fi_errno, positive, of a refusal: the read then fails with it).
 *
 * First contact (flag EMO_F_HELLO, EAGER, RTS and HELLO only): the sender's
 * address blob (below, EMO_ADDR_LEN bytes) follows the header, then the
 * EAGER payload; `length` still counts the payload alone.  A sender sets
 * it on every message to a peer until that peer has acknowledged one of
 * its messages or sent it one, so that a receiver that never inserted the
 * sender (Open MPI inserts peers lazily) can build the peer from the frame
 * (emo_contact.c; like libfabric rxd's RTS, which carries the source
 * address).  CTS and FIN answer a message, and never carry it.  One-sided
 * operations (puts, READ, the engine's atomic requests) cannot carry it:
 * before the first of them to a peer that has not shown it knows us, the
 * sender sends HELLO (flag EMO_F_HELLO, the blob, every other field 0,
 * nothing for the application), which the engine delivers ahead of them
 * (emo_contact.c, emo_announce; Open MPI 5's btl/ofi inserts a peer only
 * when it first targets it).
 *
 * Address blob (fi_getname; EMO_ADDR_LEN = 56 bytes, big-endian):
 *   0 magic 0xEF, 1 version 2, 2..3 endpoint id (its low 16 bits),
 *   4..7 frame_max, 8..15 secret, 16..19 initial sequence number,
 *   20..21 the endpoint id's high 16 bits (below EMO_NPEERS_MAX >> 16),
 *   22..23 reserved, 24 link address length, 25..55 link address bytes.
 * Bytes 20..21 were reserved (zero) before ids were 32 bits: an address
 * with an id below 65536 reads the same to both, and a build that still
 * takes 16-bit ids refuses a larger one rather than misread it.
 *
 * Named address (version 3: endpoints known by the wire, first contact;
 * every link with tx_to / rx_from, docs/ofi.md "Addresses"), same size:
 *   0 magic 0xEF, 1 version 3, 2..3 reserved, 4..7 frame_max, 8..15 the
 *   endpoint's nonce (random, not 0), 16..19 its endpoint index behind the
 *   link address (the shared link's slot; 0 on a link of its own),
 *   20..23 reserved, 24 link address length, 25..55 link address bytes.
 * No id, secret or sequence number: the handshake (engine/contact.h) gives
 * each side its own number for the other, the pair's key and ISNs.
 *
 * Partial name (fi_getinfo's node and service, docs/ofi.md "Addresses"):
 * the same layout with nonce 0 ("not known yet"), endpoint index 0,
 * frame_max all ones (not known: no MTU check) and, on kernel UDP, the
 * link address IPv4, receive port (the service), send port 0.  The
 * handshake to it completes it (proto/conn.h ops.extends, link.h covers);
 * a link without covers refuses it at insert.
 */
#ifndef EMO_WIRE_H
#define EMO_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "link/link.h"

/** Endpoint ids are below this (FI_ETHERMPI_NPEERS at most): 2^24, so that
 *  every link takes them, a muxed one too (link/link_mux.h: its peers are
 *  numbered below 2^24), and EM_SRC_UNKNOWN is never one. */
#define EMO_NPEERS_MAX (1u << 24)

#define EMO_MAGIC   0xEFu
#define EMO_VERSION 1u
/* The address blob's version: 2 since wire version 3 (proto/wire.h), whose
 * frames a version 1 endpoint drops; fi_av_insert refuses another
 * version's address with a reason, so the two never form one job. */
#define EMO_ADDR_VERSION 2u
/** The named address's version (first contact). */
#define EMO_ADDR_VERSION_NAMED 3u
/** emo_addr_t::id of a named address no endpoint has numbered (as decoded,
 *  and in the AV); also "no number" in an endpoint's AV map. */
#define EMO_ID_NONE  0xFFFFFFFFu
#define EMO_HDR_LEN  56u
#define EMO_ADDR_LEN 56u

enum emo_type {
    EMO_T_EAGER = 1, /**< whole message follows the header */
    EMO_T_RTS = 2,   /**< rendezvous request: length, sender's cookie */
    EMO_T_CTS = 3,   /**< clear to send: region + key, granted length */
    EMO_T_FIN = 4,   /**< the put is done: receiver's cookie, bytes written */
    EMO_T_READ = 5,  /**< RMA read request (emo_rma.c) */
    EMO_T_RDONE = 6, /**< RMA read answered: the initiator's cookie, bytes, status */
    EMO_T_WDATA = 7, /**< RMA write's remote CQ data, after its puts */
    EMO_T_HELLO = 8, /**< first contact alone: the sender's address, before one-sided ops */
};
/** Largest status an RDONE may carry (an fi_errno: FI_EACCES, FI_EAGAIN ...). */
#define EMO_RDONE_STATUS_MAX 4096u

enum emo_flags {
    EMO_F_TAGGED = 0x01, /**< tagged (fi_tsend) traffic: match the tagged queues */
    EMO_F_DATA = 0x02,   /**< remote CQ data is meaningful */
    EMO_F_HELLO = 0x04,  /**< the sender's address blob follows the header (first contact) */
};
#define EMO_F_ALL (EMO_F_TAGGED | EMO_F_DATA | EMO_F_HELLO)

struct emo_wire_hdr {
    uint8_t magic, version, type, flags;
    uint32_t rsvd0;
    uint64_t tag;
    uint64_t data;
    uint64_t len;
    uint32_t s_cookie;
    uint32_t r_cookie;
    uint32_t region;
    uint32_t rsvd1;
    uint64_t key;
} __attribute__((packed));
_Static_assert(sizeof(struct emo_wire_hdr) == EMO_HDR_LEN, "message header is 56 bytes");
_Static_assert(offsetof(struct emo_wire_hdr, tag) == 8, "diagram: tag at 8");
_Static_assert(offsetof(struct emo_wire_hdr, len) == 24, "diagram: length at 24");
_Static_assert(offsetof(struct emo_wire_hdr, s_cookie) == 32, "diagram: cookies at 32");
_Static_assert(offsetof(struct emo_wire_hdr, key) == 48, "diagram: key at 48");

/** Decoded header (host order). */
typedef struct emo_hdr {
    uint8_t type, flags;
    uint64_t tag, data, len;
    uint32_t s_cookie, r_cookie, region;
    uint64_t key;
    uint32_t off; /**< payload offset: EMO_HDR_LEN, + EMO_ADDR_LEN with EMO_F_HELLO */
} emo_hdr_t;

/** Why a message was refused (counted per reason by the endpoint). */
typedef enum emo_dec_err {
    EMO_DEC_OK = 0,
    EMO_DEC_SHORT,     /**< shorter than the header */
    EMO_DEC_MAGIC,     /**< foreign magic or version */
    EMO_DEC_TYPE,      /**< unknown type, or the engine tag is not the type */
    EMO_DEC_MALFORMED, /**< reserved bits, lengths or fields inconsistent with the type */
    EMO_DEC_COUNT
} emo_dec_err_t;

/** Encode @p h into @p out (EMO_HDR_LEN bytes). */
void emo_hdr_encode(const emo_hdr_t *h, void *out);
/**
 * Decode and check the message @p msg of @p len bytes that the engine
 * delivered with tag @p etag.  On EMO_DEC_OK, *@p h is filled and an
 * EAGER message's payload is exactly h->len bytes at offset h->off (after
 * the header, and after the address blob of a first-contact message; the
 * blob itself is judged by emo_contact.c, not here).
 */
emo_dec_err_t emo_hdr_decode(uint8_t etag, const void *msg, size_t len, emo_hdr_t *h);
/** A short name of @p e for counters and logs. */
const char *emo_dec_err_name(emo_dec_err_t e);

/** A provider address (what fi_getname gives and fi_av_insert takes). */
typedef struct emo_addr {
    /** numbered: the engine endpoint id, below EMO_NPEERS_MAX (every
     *  table's index of it: what the frames it is sent name it by,
     *  wire.h); named: an endpoint's own number for the peer (its engine's
     *  peer, from the handshake table: emo_name_resolve), EMO_ID_NONE as
     *  decoded and in the AV, which endpoints share (each keeps its
     *  numbers in its emo_av_map) */
    uint32_t id;
    uint8_t named;       /**< 1: a named address (version 3) */
    uint32_t ep_index;   /**< named: its endpoint index behind the link address */
    uint64_t nonce;      /**< named: its incarnation */
    uint32_t frame_max;  /**< the owner's link MTU */
    uint64_t secret;     /**< random per endpoint: the pair key is mixed from two */
    uint32_t isn;        /**< random first sequence number of the owner's frames */
    em_link_addr_t link; /**< link-level address (IP:port, MAC + queue, ...) */
} emo_addr_t;

void emo_addr_encode(const emo_addr_t *a, uint8_t out[EMO_ADDR_LEN]);
/** @return 0, or -1 when @p len or any field is wrong. */
int emo_addr_decode(const void *buf, size_t len, emo_addr_t *a);

/** The pair key of endpoints (@p a, id @p ia) and (@p b, id @p ib): both
 *  sides compute the same value (ordered by id). */
uint64_t emo_pair_key(uint64_t a, uint32_t ia, uint64_t b, uint32_t ib);
/** The pair key @p key of incarnation @p epoch (0: @p key itself): both
 *  sides of the pair compute the same value for the same epoch. */
uint64_t emo_pair_key_epoch(uint64_t key, uint32_t epoch);

#endif
