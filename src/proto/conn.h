/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file conn.h
 * Wire v3's peer table and first-contact handshake (hs_wire.h; design:
 * docs/design.md "Wire v3: peers known by the wire").
 *
 * One table per endpoint.  A peer is its name (link address, endpoint
 * index, nonce) and its index in this table; the handshake tells each side
 * the other's index, initial sequence number and token, so that every later
 * frame names the receiver's index (O(1) lookup) and carries the token the
 * receiver chose (checked with the frame's source address).  Indexes are 32
 * bits: a 24-bit slot and an 8-bit generation that changes when a slot is
 * reused (em_conn_remove), so a frame naming a removed peer's index finds
 * nothing.  Tables grow with the peers inserted or accepted, up to
 * max_peers: a job's size is limited by memory, not by a field width.
 *
 * Addresses: every handshake frame names its sender's reply address
 * (hs_wire.h): answers go there, the cookie covers it, and an entry made
 * or bound by a handshake has it as its name's address.  The table never
 * sees where a frame came from; the layer above drops handshake frames
 * whose link source is not consistent with the reply address they name
 * (as it binds every data frame to its peer's address), before
 * em_conn_rx().  An entry inserted by a partial name (an address the peer's
 * answer completes, nonce 0: ops.extends) takes the full address from the
 * CHALLENGE that answers its INIT; any other answer must name the entry's
 * address exactly.
 *
 * What a stranger costs: an INIT costs its receiver one CHALLENGE and no
 * state (the cookie is computed, not stored).  Only a CONFIRM whose cookie
 * proves that its sender receives at its reply address creates an entry,
 * and only when the table takes strangers (accept_strangers) and has room
 * (max_peers, and max_strangers for entries the owner never inserted: a
 * host that does receive at many addresses of its own, each port and
 * endpoint index a name, cannot make a growing table hold more strangers
 * than that).  Nothing a handshake frame says changes an established peer
 * unless its cookie is valid for that peer's address and the layer above
 * says the peer's current incarnation has gone quiet (ops.may_replace): a
 * restart (a new nonce from the same address and endpoint) fails the old
 * peer (a stranger's slot is freed at once, so restarts cannot use up the
 * table), a rebind (the same nonce, new index, token or ISN, always by a
 * CONFIRM) replaces its parameters.  So a third node that read a CHALLENGE off the wire cannot
 * take a live peer's place.
 *
 * Pure C like the protocol core: no I/O, no clock of its own (the caller
 * passes @c now in nanoseconds), randomness from the caller's @c rand64.
 * Memory: the table and its hash index grow on em_conn_insert and on an
 * accepted stranger, never on the data path.
 *
 * Threading: single-threaded, like em_proto_t.  Callbacks run inside
 * em_conn_rx() and em_conn_poll(); from a callback the caller may call the
 * accessors and em_conn_connect(), not em_conn_rx(), em_conn_poll(),
 * em_conn_remove() or em_conn_destroy().
 */
#ifndef EM_PROTO_CONN_H
#define EM_PROTO_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/hs_wire.h"
#include "proto/proto.h" /* enum em_err */

/** Longest link address (em_link_addr_t holds 31 bytes). */
#define EM_CONN_ADDR_MAX 31u
/** Most slots a table can have (24-bit slot; all ones is "no index"). */
#define EM_CONN_SLOTS_MAX 0x00FFFFFEu
/** The secret a table's cookies are keyed with (SipHash-2-4's key). */
#define EM_CONN_SECRET_LEN 16u

/** A peer's name: what an address vector entry or a modex blob holds. */
typedef struct em_conn_name {
    uint8_t addr_len;               /**< 1..EM_CONN_ADDR_MAX */
    uint8_t addr[EM_CONN_ADDR_MAX]; /**< its link address, as our link reports its frames' source */
    uint32_t ep;                    /**< its endpoint index behind that address */
    uint64_t nonce; /**< its incarnation; 0: not known yet (the first proven binds) */
} em_conn_name_t;

/** States of an entry (em_conn_state()). */
typedef enum em_conn_st {
    EM_CONN_FREE = 0,     /**< no peer (removed, or never used) */
    EM_CONN_KNOWN,        /**< inserted; no handshake yet */
    EM_CONN_INIT_SENT,    /**< we started: INIT sent, waiting for its CHALLENGE */
    EM_CONN_CONFIRM_SENT, /**< CONFIRM sent, waiting for ACCEPT */
    EM_CONN_ESTABLISHED,  /**< both indexes known: frames flow both ways */
    EM_CONN_FAILED,       /**< gave up, or the peer restarted; the slot waits for em_conn_remove */
} em_conn_st_t;

/** Why a data frame's (index, source, token) was refused (em_conn_check). */
typedef enum em_conn_chk {
    EM_CONN_CHK_OK = 0,
    EM_CONN_CHK_INDEX,  /**< no such slot, or another generation (a removed peer) */
    EM_CONN_CHK_STATE,  /**< the slot's peer is not established (or failed) */
    EM_CONN_CHK_SOURCE, /**< the frame came from another address than the peer's */
    EM_CONN_CHK_TOKEN,  /**< the frame's key is not the token we gave that peer */
    EM_CONN_CHK_COUNT
} em_conn_chk_t;

typedef struct em_conn_cfg {
    uint8_t addr_len;                   /**< our reply address (1..EM_CONN_ADDR_MAX): */
    uint8_t addr[EM_CONN_ADDR_MAX];     /**< our link address, as peers' links send to it */
    uint32_t ep;                        /**< our endpoint index */
    uint64_t nonce;                     /**< our incarnation (random, not 0) */
    uint8_t secret[EM_CONN_SECRET_LEN]; /**< cookie key (random per table) */
    uint32_t max_peers;                 /**< table size limit (<= EM_CONN_SLOTS_MAX) */
    bool accept_strangers;              /**< peers not inserted may bind by handshake */
    /** Strangers held at once (entries made by a handshake and not
     *  inserted since; em_conn_insert of a stranger's name makes it a
     *  peer like the others): 0 = no limit but max_peers. */
    uint32_t max_strangers;
    /** Indexes are the bare 24-bit slot, never a generation: for a data
     *  path that refuses a removed peer's frames by their key (each entry
     *  draws its own token) and whose index's top byte carries something
     *  else (the shared link's member slot).  em_conn_check then tells a
     *  reused slot's old peer from the new one by token only. */
    bool no_generation;
    /** The largest endpoint index a peer may have (0: no limit below
     *  EM_HS_NO_INDEX): a front end whose endpoints share an address at
     *  most N ways sets N - 1, so that one address cannot mint more
     *  strangers than it has endpoints (hs_bad_ep). */
    uint32_t ep_max;
    uint64_t hs_rto_ns;      /**< first handshake retransmission */
    uint64_t hs_rto_max_ns;  /**< back-off cap */
    uint32_t hs_tries;       /**< INIT/CONFIRM sends before giving up */
    uint32_t cookie_life_ms; /**< how long a CHALLENGE's cookie is good */
} em_conn_cfg_t;

/** Defaults: 5 ms doubling to 500 ms, 12 tries (about 3.5 s), cookies 2 s. */
void em_conn_cfg_default(em_conn_cfg_t *cfg);

typedef struct em_conn_ops {
    /** Put handshake frame @p f (@p len bytes) on the wire to link address @p addr. */
    void (*emit)(void *uctx, const uint8_t *addr, uint8_t addr_len, const void *f, size_t len);
    /** @p index is established (both sides' parameters known); @p again: it was
     *  established before with other parameters (the peer bound us anew). */
    void (*established)(void *uctx, uint32_t index, bool again);
    /** @p index failed: no answer within hs_tries, or a new incarnation appeared. */
    void (*failed)(void *uctx, uint32_t index, const char *why);
    /** 64 unpredictable bits (tokens, ISNs). */
    uint64_t (*rand64)(void *uctx);
    /**
     * Optional.  A proven CONFIRM would fail established @p index (a new
     * incarnation at its address) or replace its parameters (it bound us
     * anew): may it?  Say yes only when the peer's current incarnation has
     * been quiet (nothing heard from it for a while): a live peer keeps its
     * place, and the claimant's retries succeed once the old one is gone.
     * NULL: always.
     */
    bool (*may_replace)(void *uctx, uint32_t index);
    /**
     * Optional (partial names).  Does reply address @p full extend the
     * address @p part an entry was inserted with?  A partial name is what
     * an application knows of a peer before it answers (e.g. an IPv4
     * address and receive port, from a node and service): its nonce is 0
     * and its address lacks what only the peer's answer tells (kernel
     * UDP's send port).  Asked only for a CHALLENGE that answers our INIT
     * (it names our index, endpoint and nonce) to an entry whose nonce is
     * still 0, whose reply address differs from the entry's, and is named
     * by no other entry; yes: the entry takes @p full as its address (and
     * the CHALLENGE's nonce, as any unknown nonce is taken), so the rest
     * of the handshake, and every later frame, goes by the full address.
     * NULL: addresses match byte for byte only.
     */
    bool (*extends)(void *uctx, const uint8_t *part, uint8_t part_len, const uint8_t *full,
                    uint8_t full_len);
    /**
     * Optional.  A stranger (no entry at its address and endpoint) proved
     * with a CONFIRM that it receives at its reply address, and the table
     * takes strangers: may @p name (that address, its endpoint index and
     * nonce) bind?  The owner checks it against what it knows out of band
     * (the BTL: the names its job published in the modex).  No: counted in
     * hs_stranger, no state kept.  NULL: every stranger may.
     */
    bool (*admit)(void *uctx, const em_conn_name_t *name);
} em_conn_ops_t;

/** Counters: every refused frame is counted once, by reason. */
typedef struct em_conn_stats {
    uint64_t hs_rx[4];                /**< handshake frames accepted, by type - EM_HS_INIT */
    uint64_t hs_tx[4];                /**< handshake frames sent, by type - EM_HS_INIT */
    uint64_t hs_dec[EM_HS_DEC_COUNT]; /**< decoder refusals, by em_hs_dec_t */
    uint64_t hs_not_us;               /**< for another endpoint index or incarnation of ours */
    uint64_t hs_cookie_bad;           /**< CONFIRM whose cookie does not match (forged or
                                             from another address) */
    uint64_t hs_cookie_old;           /**< CONFIRM whose cookie is past cookie_life_ms */
    uint64_t hs_stranger;             /**< CONFIRM from a peer not inserted, strangers off
                                             or not admitted (ops.admit) */
    uint64_t hs_full;                 /**< CONFIRM refused: max_peers reached */
    uint64_t hs_strangers_full;       /**< CONFIRM from a stranger refused: max_strangers held */
    uint64_t hs_bad_ep;               /**< handshake frames whose sender's endpoint index is
                                             above ep_max */
    uint64_t hs_unexpected;           /**< CHALLENGE/ACCEPT for no handshake of ours (index,
                                             state, address or nonces do not match) */
    uint64_t hs_restarts;             /**< peers failed because a new incarnation proved itself */
    uint64_t hs_replace_refused;      /**< proven CONFIRMs that would have failed or rebound a
                                             peer that is still heard (may_replace said no) */
    uint64_t hs_rebinds;              /**< established peers that bound us anew */
    uint64_t hs_gave_up;              /**< handshakes that got no answer */
    uint64_t hs_extended;             /**< partial names that took their peer's full
                                             address from its answer (ops.extends) */
    uint64_t chk[EM_CONN_CHK_COUNT];  /**< data-path checks, by em_conn_chk_t (OK included) */
} em_conn_stats_t;

typedef struct em_conn em_conn_t;

/** A table.  @return NULL on bad configuration (nonce 0, ep all ones, no
 *  reply address) or no memory. */
em_conn_t *em_conn_create(const em_conn_cfg_t *cfg, const em_conn_ops_t *ops, void *uctx);
void em_conn_destroy(em_conn_t *c);

/**
 * Add a peer we know of (an address vector insert, a modex entry): no
 * traffic.  The same address and endpoint again return the same index
 * (its nonce learned if it was 0).  @return 0 with *index, -EM_EINVAL (bad
 * name, or a known peer with another nonce), -EM_ENOMEM (max_peers or memory).
 */
int em_conn_insert(em_conn_t *c, const em_conn_name_t *name, uint32_t *index);
/** Start the handshake toward @p index (KNOWN; otherwise nothing to do).  @return 0 or -EM_EINVAL. */
int em_conn_connect(em_conn_t *c, uint32_t index, uint64_t now);
/**
 * A data frame of @p index's arrived while our handshake toward it is
 * under way (the peer bound us; its ACCEPT was lost or is late): send our
 * INIT or CONFIRM again now, unless one left within hs_rto_ns (so frames
 * cannot make us send faster than that), without counting a try.
 * @return 1 sent, 0 nothing to do.
 */
int em_conn_hurry(em_conn_t *c, uint32_t index, uint64_t now);
/** Forget @p index: its slot is reused under another generation. */
int em_conn_remove(em_conn_t *c, uint32_t index);

/**
 * A handshake frame (em_hs_is()) of @p len bytes arrived (its link source
 * already found consistent with the reply address it names).  Decoded,
 * checked, answered; refusals counted.
 * @return 0 accepted, or the em_hs_dec_t / -1 (refused by state) it was refused for.
 */
int em_conn_rx(em_conn_t *c, const void *f, size_t len, uint64_t now);
/** Retransmit due handshake frames, give up on silent peers.
 *  @return the next deadline (UINT64_MAX: none). */
uint64_t em_conn_poll(em_conn_t *c, uint64_t now);

/**
 * The data path's check of a v3 frame: it names @p index, came from
 * @p addr, carries @p token.  O(1).  Counted in stats.chk.
 */
em_conn_chk_t em_conn_check(em_conn_t *c, uint32_t index, const uint8_t *addr, uint8_t addr_len,
                            uint64_t token);

/** What a sender needs toward an established @p index. */
typedef struct em_conn_peer {
    uint32_t remote_index; /**< the peer's index for us: every frame to it names it */
    uint64_t tx_token;     /**< the key our frames to it carry (its token) */
    uint64_t rx_token;     /**< the key its frames to us carry (ours) */
    uint32_t tx_isn;       /**< our first sequence number toward it */
    uint32_t rx_isn;       /**< its first sequence number toward us */
} em_conn_peer_t;

em_conn_st_t em_conn_state(const em_conn_t *c, uint32_t index);
/** @return 0 with *out, or -EM_EINVAL if @p index is not established. */
int em_conn_peer(const em_conn_t *c, uint32_t index, em_conn_peer_t *out);
/** @return 0 with the name of @p index, or -EM_EINVAL. */
int em_conn_name(const em_conn_t *c, uint32_t index, em_conn_name_t *out);
/** Peers in the table (any state but FREE). */
uint32_t em_conn_count(const em_conn_t *c);
/** Bytes the table holds (entries, hash index, pending list). */
size_t em_conn_mem(const em_conn_t *c);
const em_conn_stats_t *em_conn_stats(const em_conn_t *c);
/** "name N" pairs of every counter, one line (tests and logs read them by name). */
int em_conn_stats_format(const em_conn_t *c, char *buf, size_t len);

#endif
