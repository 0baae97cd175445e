/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file link_mux.h
 * Several endpoints of one process on one link: the link's sub-addresses.
 *
 * A DPDK port or a native AF_XDP queue is one process's, and a process may
 * want several endpoints on it (Open MPI opens one for `mtl ofi` and one
 * for `btl ofi`'s one-sided operations; any libfabric program may open as
 * many as it likes).  The mux turns one link (the base) into up to
 * EM_MUX_MEMBERS member links.  Each member is an em_link_t of its own,
 * with its own peer numbers, so each endpoint keeps its own engine.
 *
 * Addresses: a member's address is the base link's address followed by one
 * byte, the member's slot.  Frames: wire v3 names the sender by the
 * receiver's index for it (proto/wire.h, offset 4, 32 bits).  On a muxed
 * link the index's top byte is the receiving member's slot and the 24 bits
 * below are what that member's protocol calls the sender.  The sending
 * member writes the destination's slot into that byte as the frame leaves
 * (the protocol above writes indexes below 2^24 and never sees slots); the
 * receiving side reads it, clears it and hands the frame to that member.
 * So the index stays "what the receiver calls the sender", now unique
 * within the receiving link rather than within one endpoint, and lookup
 * stays one array access.
 *
 * Peer numbers on a muxed link are therefore below 2^24
 * (EM_MUX_INDEX_BITS), although the protocol's are 32 bits: a member's
 * set_peer refuses a peer number of 2^24 or above (-EINVAL), and the
 * indexes a member's protocol writes (em_proto_set_peer_index,
 * em_engine_set_peer_index: what each peer calls us) must stay below 2^24
 * too; a frame whose index has its top byte set is not sent (tx_burst
 * takes no frame from it on).  16,777,215 endpoints per job.
 *
 * Receive path: whichever member polls the base link sorts its burst.  Its
 * own frames it keeps in place (the base link's buffers, released when the
 * member releases them; no member polls the base again before that, so a
 * base link whose buffers live until its next burst stays correct).  The
 * frames of another member are copied into that member's inbox (a ring of
 * EM_MUX_INBOX frames, allocated when first needed); a full inbox drops the
 * frame and counts it, as a full receive queue would, and the protocol
 * resends it.  A frame naming a slot with no member, or too short to carry
 * an index, is dropped and counted.
 *
 * First contact (wire v3's handshake, proto/hs_wire.h): in first contact a
 * member's endpoint index is its slot.  A handshake frame (em_hs_is: magic
 * 0xE5, version 3, type 16..19) carries no wire index; the mux routes it
 * by its destination endpoint index (big-endian, offset 8) instead of the
 * index's top byte, and writes and clears nothing in it either way.  A
 * destination index that names no member (16 or above, or an empty slot)
 * is dropped and counted as rx_no_member.  A member's tx_to (only over a
 * base that has tx_to and rx_from; em_link_has_contact tells) takes
 * handshake frames only, whose destination endpoint index must be the
 * slot the address names (-EINVAL otherwise: the receiving mux would hand
 * the frame to another member), and has the base send them to the
 * address's device part.  A member's rx_from is the base's with the device
 * part of the address; for a frame another member sorted into its inbox,
 * the base judged the source at sorting time against the reply address the
 * handshake frame names (the address the handshake asks about), and
 * against any other address the answer comes from the base peer the
 * source is (false when it is none).
 *
 * Source addresses: the base link judges a frame's source address
 * (em_link_ops::rx_peer) at the moment the mux sorts it.  A member's
 * rx_peer answers with the member's peer the frame claims to be when that
 * peer's base address is the frame's source; otherwise with any member peer
 * at that address, or EM_LINK_PEER_UNKNOWN.  The sub-address (the sender's
 * slot) does not travel, so the check binds a frame to the sending process's
 * base address: every endpoint of that process shares it, and a stranger
 * elsewhere on the wire is refused as before.
 *
 * Threading: every member operation takes the mux's mutex (members may be
 * driven from different threads: libfabric endpoints of different domains).
 * Uncontended, that is one lock and unlock per call.  Members are opened
 * and closed from one thread at a time (the transport layer's rule).
 */
#ifndef EM_LINK_MUX_H
#define EM_LINK_MUX_H

#include <stdint.h>

#include "link/link.h"

/** Members of one mux (slots 0 .. EM_MUX_MEMBERS - 1). */
#define EM_MUX_MEMBERS 16u
/** Frames a member's inbox holds (frames another member received for it). */
#define EM_MUX_INBOX 256u
/** Index bits below the slot: a member's peers are numbered below 2^24. */
#define EM_MUX_INDEX_BITS 24u

typedef struct em_link_mux em_link_mux_t;

typedef struct em_link_mux_stats {
    uint64_t rx_own;        /**< frames the polling member kept in place */
    uint64_t rx_passed;     /**< frames copied into another member's inbox */
    uint64_t rx_inbox_full; /**< dropped: that member's inbox was full */
    uint64_t rx_no_member;  /**< dropped: the frame's slot has no member */
    uint64_t rx_short;      /**< dropped: too short to name a slot */
    uint64_t tx_frames;     /**< frames the members handed to the base link */
    uint64_t rx_hs;         /**< handshake frames sorted by their destination endpoint */
} em_link_mux_stats_t;

/**
 * A mux over @p base (taken: closed with the last member), recorded in
 * *@p registry (may be NULL), which is set to NULL when the mux goes with
 * its last member.  NULL: no memory, or a link that cannot be shared (one
 * that acknowledges for its endpoint: emd, whose daemon already gives each
 * endpoint an address of its own).
 */
em_link_mux_t *em_link_mux_create(em_link_t *base, em_link_mux_t **registry);
/**
 * A new member of @p m: an em_link_t with the base's MTU and flags and the
 * base address plus its slot byte.  NULL when all EM_MUX_MEMBERS slots are
 * taken or there is no memory (a sentence in @p err).  Closing the member
 * (em_link_close) frees its slot; closing the last one closes the base and
 * frees the mux.
 */
em_link_t *em_link_mux_join(em_link_mux_t *m, char *err, size_t errlen);
/** Close @p m (and its base) when it has no member (a join that failed). */
void em_link_mux_drop_if_empty(em_link_mux_t *m);
/** The base link under member @p l, or @p l itself when it is no member. */
em_link_t *em_link_mux_base(em_link_t *l);
/** The mux's counters (shared by its members), or NULL when @p l is no member. */
const em_link_mux_stats_t *em_link_mux_stats(const em_link_t *l);
/** 1 when @p l is a member of some mux. */
int em_link_is_mux(const em_link_t *l);

#endif
