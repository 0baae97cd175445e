/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file contact.h
 * First contact in the engine (wire v3, docs/design.md "Wire v3: peers
 * known by the wire"): an engine whose peers are known by name (link
 * address, endpoint index, nonce) instead of by numbers its owner agreed
 * out of band.  proto/conn.h's table runs the handshake over the link's
 * tx_to and rx_from (link.h); the engine's number for a peer IS the
 * peer's index in that table (bare slots, em_conn_cfg_t::no_generation),
 * so a data frame's index is looked up as before: one array access.
 *
 * What a handshake sets for a peer: its link address (the reply address
 * it proved), the index our frames to it carry (its index for us), both
 * initial sequence numbers, and the pair's key: the XOR of the two tokens
 * (one key per pair, the same both ways, as the protocol and emd's eager
 * ACKs want; both tokens travel in the handshake, so the XOR tells an
 * observer nothing it did not see).  Every later frame is judged as any
 * frame is: its key, and its link source against the peer's address.
 *
 * Handshake frames: received frames that em_hs_is() are taken before the
 * protocol sees them; one whose link source is not consistent with the
 * reply address it names is dropped (hs_bad_source) before the table reads
 * it, so a third node cannot claim another's address from its own.
 *
 * Self: an engine in contact mode is created with cfg.self =
 * EM_PROTO_SELF_OUTSIDE (proto.h), a number above every slot the
 * handshake table can have (EM_CONN_SLOTS_MAX), so every entry of its
 * table is a peer.  Decision, and why: self as the table's last entry
 * (npeers - 1) would have to move when the table grows, and
 * front ends hold it (the provider's AV maps, our number in the frames of
 * a numbered pair); slot 0 reserved for self would break "the engine's
 * number for a peer IS its slot" (one array access per data frame) or
 * waste a slot the handshake table hands out.  A number outside the table
 * never moves and costs nothing; front ends compare with it as before.
 *
 * Sizing: the engine is created with a small table (cfg.npeers, its start;
 * at least 1) and, when its owner gives ops.grow, grows by doubling when
 * the handshake table hands out a number at or above its size, up to
 * EM_CONN_SLOTS_MAX: at em_engine_contact_insert() (the owner's call, not
 * from a callback), and when a stranger's handshake completes (inside
 * em_engine_progress(), at its top level: em_conn_rx's callbacks run
 * outside every protocol call, where em_proto_grow() is allowed).  The
 * engine's arrays, the protocol's table and then the owner's (ops.grow)
 * grow together; a job's size is limited by memory, not by a setting.
 * Out of memory: insert says -EM_ENOMEM, a stranger is forgotten again
 * (hs_no_memory) and its data refused.  Without ops.grow (the BTLs, sized
 * to the job) the table stays as created: strangers beyond it are refused
 * (hs_full), insert says -EM_ENOMEM.
 *
 * Operations (send, sendv, put, get, atomic) to a peer whose handshake
 * has not completed start it and are taken: they wait in the peer's queue
 * (em_proto_hold_peer) and leave when it completes, as libfabric's rxd
 * queues behind its RTS.  The handshake gives up on a peer that stays
 * silent as long as the protocol gives a silent peer before failing it
 * (em_proto_cfg_t max_retries back-offs capped at rto_max_ns, ~60 s by
 * default; at least the table's default 12 tries, ~3 s): a peer that is
 * slow to start is not failed sooner by its handshake than by its data.
 * A peer whose handshake gives up or
 * whose address proves a new incarnation is failed: its operations end
 * with -EM_EPEERFAIL and ops.peer_failed is called; the reason is
 * em_engine_fail_reason().
 *
 * A live peer keeps its place: a handshake that would restart or rebind an
 * established peer is refused while that peer has been heard within
 * quiet_ms (conn.h, may_replace); a true restart's retries get through
 * once the old incarnation has been quiet that long.
 *
 * Threading: the engine's (one thread at a time).  Not from a callback:
 * em_engine_contact_open(), em_engine_contact_remove(), and an
 * em_engine_contact_insert() that would grow the table (-EM_EAGAIN).
 */
#ifndef EM_ENGINE_CONTACT_H
#define EM_ENGINE_CONTACT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"
#include "proto/conn.h"

typedef struct em_engine_contact_cfg {
    uint32_t ep;                        /**< our endpoint index behind the link address */
    uint64_t nonce;                     /**< our incarnation (random, not 0) */
    uint8_t secret[EM_CONN_SECRET_LEN]; /**< the cookie key (random) */
    bool accept_strangers;              /**< peers not inserted may bind (the libfabric model) */
    /** Strangers held at once (em_conn_cfg_t::max_strangers; 0 = no limit
     *  but the table's): what one host able to receive at many addresses
     *  can make a growing table hold before the owner inserts any. */
    uint32_t stranger_max;
    uint32_t quiet_ms; /**< a peer unheard this long may be replaced (0: 1000) */
    uint32_t ep_max;   /**< the largest endpoint index a peer has (em_conn_cfg_t::ep_max) */
} em_engine_contact_cfg_t;

/**
 * Turn first contact on, before any peer is added.  @return 0, or
 * -EM_EINVAL: the link has no tx_to / rx_from (em_link_has_contact), the
 * engine was not created with self = EM_PROTO_SELF_OUTSIDE, a peer was set already,
 * or a bad configuration; -EM_ENOMEM.
 */
int em_engine_contact_open(em_engine_t *e, const em_engine_contact_cfg_t *cfg);
/** Is first contact on? */
bool em_engine_contact_on(const em_engine_t *e);
/** Would an operation to @p peer leave now (first contact off, or its
 *  handshake done)?  False while it would wait behind the handshake: a
 *  front end that completes a send when it is copied must not then, for a
 *  removal before the handshake ends would cancel what was never sent. */
bool em_engine_contact_ready(const em_engine_t *e, uint32_t peer);

/**
 * A peer we know of by name (an address vector entry, a modex blob): no
 * traffic until the first send or em_engine_contact_connect().  The same
 * address and endpoint again give the same peer.  A partial name (nonce 0,
 * an address the link's covers op completes: kernel UDP's send port 0)
 * takes the full address its handshake's answer names (conn.h ops.extends).  @return 0 with *@p peer,
 * -EM_EINVAL (bad name; a known peer with another nonce: remove it first),
 * -EM_ENOMEM (no memory to grow the table, or a table without ops.grow is
 * full), -EM_EAGAIN (from a callback, a number beyond the table: "Sizing").
 */
int em_engine_contact_insert(em_engine_t *e, const em_conn_name_t *name, uint32_t *peer);
/** Start the handshake toward @p peer now (no-op once under way or done). */
int em_engine_contact_connect(em_engine_t *e, uint32_t peer);
/**
 * Forget @p peer: its operations end with -EM_ECANCELED (em_engine_reset_peer),
 * its frames from before are refused (their key is gone), and its number
 * may name another peer later.  @return 0 or -EM_EINVAL.
 */
int em_engine_contact_remove(em_engine_t *e, uint32_t peer);
/** @return 0 with @p peer's name (the nonce once proven), or -EM_EINVAL. */
int em_engine_contact_name(const em_engine_t *e, uint32_t peer, em_conn_name_t *out);
/** Where @p peer's handshake stands (EM_CONN_FREE: no such peer, or not in contact mode). */
em_conn_st_t em_engine_contact_state(const em_engine_t *e, uint32_t peer);
/** The table's counters, or NULL when first contact is off. */
const em_conn_stats_t *em_engine_contact_stats(const em_engine_t *e);
/** Bytes the table holds (0 when off). */
size_t em_engine_contact_mem(const em_engine_t *e);
/** One line of "name N" pairs: the table's counters and the engine's
 *  hs_bad_source / hs_tx_failed.  @return snprintf's value. */
int em_engine_contact_stats_format(const em_engine_t *e, char *buf, size_t len);

#endif
