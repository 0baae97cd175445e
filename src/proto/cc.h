/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file cc.h
 * Congestion control of the protocol core: one controller per peer, used by
 * every link (the sender half, send.c, asks it before each new frame).
 *
 * What it controls, per peer:
 *   - a congestion window @c cwnd in bytes (frames counted with their
 *     headers), under the frame window: a new frame may go while the bytes
 *     in flight are below cwnd AND fewer than cfg.window frames are
 *     unacknowledged.  cwnd lies in [one full frame, window x frame_max];
 *   - a pacing time @c next_send: new frames leave no faster than
 *     pace_gain x cwnd / min_rtt, except that a burst of cc_pace_burst
 *     frames may go back to back after an idle period (a lone small message
 *     is never delayed); a frame due within cfg.cc_pace_slack_ns goes at
 *     once (a user-space sender cannot usefully wait less than a poll loop).
 *
 * Signals (docs/design.md "Congestion control" has the measurements):
 *   - loss (a fast retransmit, a NACK, a timeout), once per window of loss:
 *     a loss opens an episode that ends when the cumulative ACK passes what
 *     was in flight when it began; later losses inside it do not decrease
 *     cwnd again.  EM_CC_LOSS halves cwnd when the episode opens (AIMD);
 *     EM_CC_DELAY decreases it when the episode ends, in proportion to the
 *     fraction of its frames that were lost (DCTCP's rule, with loss in the
 *     place of ECN marks), capped at cc_max_md_pct: random loss costs a few
 *     per cent per round trip, a tail-dropped burst halves the window.
 *     A timeout alone never decreases cwnd (on a user-space transport it
 *     is most often a peer that did not poll in time); the frames it
 *     resends count in the episode's loss fraction.
 *     In EM_CC_DELAY a loss counts only when the last round trip's queueing
 *     reached cc_loss_qdelay_pct of the allowance (or no fresh verdict
 *     exists): random loss on an idle path is not congestion.
 *   - delay (EM_CC_DELAY, in the spirit of Swift): every RTT sample is
 *     compared with min_rtt + cc_target_ns (the lowest sample seen is the
 *     path's base RTT).  Below the target cwnd grows by one frame per round
 *     trip; above it cwnd shrinks by cc_beta_pct x (rtt - target) / rtt,
 *     capped at cc_max_md_pct, at most once per round trip.  The verdict
 *     is taken once per round trip on the round's lowest sample (noise from
 *     a peer slow to poll raises some samples, a standing queue all).  The
 *     allowance above min_rtt grows as cwnd shrinks (Swift's flow scaling,
 *     cc_fs_range_ns), so senders that learnt different base RTTs still
 *     share; it is halved by every loss decrease (a buffer shallower than
 *     the allowance, or a base RTT learnt behind a queue) and given back
 *     by 1/64 per loss-free round.
 *
 * Pure: no I/O, no allocation, no clock of its own (times are passed in).
 * Threading: the state is part of its em_proto_t and follows its rules
 * (proto.h): one thread, no re-entry concerns (no callbacks are made).
 */
#ifndef EM_PROTO_CC_H
#define EM_PROTO_CC_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/proto.h"

/** Congestion state towards one peer. */
typedef struct em_cc {
    uint64_t cwnd;         /**< congestion window, bytes */
    uint64_t cwnd_min;     /**< one full frame */
    uint64_t cwnd_max;     /**< window x frame_max */
    uint64_t inflight;     /**< bytes sent, not yet acknowledged nor SACKed */
    uint64_t ai_acc;       /**< bytes acknowledged towards the next additive increase */
    uint64_t min_rtt;      /**< lowest RTT sample (ns), 0 = none yet */
    uint64_t round_start;  /**< delay: start of the current round trip of samples */
    uint64_t round_min;    /**< delay: lowest sample of the current round (UINT64_MAX: none) */
    uint64_t next_send;    /**< pacing: earliest time of the next new frame */
    uint64_t since_ackreq; /**< bytes sent since the last frame that asked for an ACK */
    uint32_t ep_end;       /**< loss episode: ends when snd_una reaches this */
    uint32_t ep_frames;    /**< frames in flight when the episode began */
    uint32_t ep_lost;      /**< frames resent during the episode */
    uint8_t ep_active;     /**< a loss episode is open */
    uint8_t ep_cut;        /**< cwnd was already decreased for this episode */
    uint8_t ep_cong;       /**< delay: a loss of this episode came with a queue (congestive) */
    uint8_t slow_start;    /**< no decrease yet: grow by the bytes acked (doubling per RTT) */
    uint64_t last_q; /**< delay: queueing delay of the last round (its lowest sample - min_rtt) */
    uint64_t last_allow;    /**< delay: the allowance above min_rtt at the last verdict */
    uint64_t verdict_until; /**< delay: the last verdict is fresh until then */
    uint32_t tscale;        /**< delay: share of the queueing allowance in use, /1024 */
    uint8_t over;           /**< delay: the last round ended above the target (no growth) */
} em_cc_t;

/** Verdict of em_cc_can_send(). */
enum em_cc_verdict {
    EM_CC_GO = 0,   /**< the frame may go now */
    EM_CC_CWND = 1, /**< the congestion window is full: wait for an ACK */
    EM_CC_PACE = 2, /**< pacing: wait until the time returned in *wake */
};

/** Reset @p c for a peer with no traffic yet. */
void em_cc_init(em_cc_t *c, const em_proto_cfg_t *cfg);

/**
 * May a new frame go now?  Always EM_CC_GO when cc is off.  A frame may
 * always go when nothing is in flight (a lone message is never held back
 * by cwnd), and after an idle period the first cc_pace_burst frames leave
 * back to back.
 * @return an em_cc_verdict; for EM_CC_PACE *@p wake is when to try again.
 */
int em_cc_can_send(const em_cc_t *c, const em_proto_cfg_t *cfg, uint64_t now, uint64_t *wake);

/**
 * How many more full frames em_cc_can_send() would let go back to back at
 * @p now (the congestion window's free bytes, and pacing's credit).
 * UINT32_MAX when cc is off.  For callers that must know whether a whole
 * message leaves at once (an inline send).
 */
uint32_t em_cc_room(const em_cc_t *c, const em_proto_cfg_t *cfg, uint64_t now);

/**
 * Should a new frame of @p bytes ask for an immediate ACK (EM_F_ACKNOW)?
 * True when it fills the congestion window, or half a window went out since
 * the last request: keeps the ACK clock going when cwnd is smaller than the
 * receiver's ACK batch (ack_every frames).  Never when cc is off or cwnd
 * is at its maximum (the receiver then ACKs every window/2 frames anyway).
 */
bool em_cc_want_ack(const em_cc_t *c, const em_proto_cfg_t *cfg, uint32_t bytes);

/**
 * A DATA/PUT frame of @p bytes was emitted.  @p first: first transmission
 * (it now counts in flight); @p was_sacked: a retransmission of a frame the
 * peer had reported held (it counts in flight again); @p ack_req: it
 * carried EM_F_ACKNOW.  Advances the pacing time (paced over min_rtt;
 * no pacing before the first RTT sample).
 */
void em_cc_on_send(em_cc_t *c, const em_proto_cfg_t *cfg, uint32_t bytes, bool first,
                   bool was_sacked, bool ack_req, uint64_t now);

/** A frame of @p bytes in flight was SACKed (it left the network). */
void em_cc_on_sacked(em_cc_t *c, uint32_t bytes);

/**
 * Cumulative progress: @p acked bytes newly acknowledged, of which
 * @p unsacked were still counted in flight.  @p rtt is this ACK's RTT
 * sample (0: none, e.g. Karn), @p srtt the smoothed RTT, @p snd_una the new
 * cumulative ACK (ends a loss episode when it passes its end).  Decreases
 * are counted in @p st.
 */
void em_cc_on_ack(em_cc_t *c, const em_proto_cfg_t *cfg, em_proto_stats_t *st, uint64_t acked,
                  uint64_t unsacked, uint64_t rtt, uint64_t srtt, uint32_t snd_una, uint64_t now);

/**
 * @p n frames were resent because they were presumed lost; @p timeout when
 * the retransmit timer fired.  @p snd_una / @p snd_nxt: the window now.
 */
void em_cc_on_loss(em_cc_t *c, const em_proto_cfg_t *cfg, em_proto_stats_t *st, unsigned n,
                   bool timeout, uint32_t snd_una, uint32_t snd_nxt, uint64_t now);

/** Everything in flight was dropped (peer failed, instance torn down). */
void em_cc_flush(em_cc_t *c);

/** @return true when the cc fields of @p cfg are valid (see em_proto_create()). */
bool em_cc_cfg_ok(const em_proto_cfg_t *cfg);

#endif
