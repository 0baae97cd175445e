/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file cc.c
 * Per-peer congestion controller (see cc.h for the model and rules, and
 * docs/design.md "Congestion control" for the measurements behind the
 * defaults).  Integer arithmetic only: every product below is bounded
 * (frame bytes < 2^17, times < 2^40 ns in practice, percentages < 2^10).
 */
#include "proto/cc.h"

#include "proto/seq.h"

#include <string.h>

static uint64_t clamp_cwnd(const em_cc_t *c, uint64_t w)
{
    if (w < c->cwnd_min)
        return c->cwnd_min;
    if (w > c->cwnd_max)
        return c->cwnd_max;
    return w;
}

/** Decrease cwnd by @p pm per mille (capped at cc_max_md_pct). */
static void decrease(em_cc_t *c, const em_proto_cfg_t *cfg, uint64_t pm)
{
    uint64_t cap = (uint64_t)cfg->cc_max_md_pct * 10;
    if (pm > cap)
        pm = cap;
    c->cwnd = clamp_cwnd(c, c->cwnd - c->cwnd * pm / 1000);
    c->ai_acc = 0;
    c->slow_start = 0;
}

bool em_cc_cfg_ok(const em_proto_cfg_t *cfg)
{
    if (cfg->cc == EM_CC_OFF)
        return true;
    if (cfg->cc != EM_CC_LOSS && cfg->cc != EM_CC_DELAY)
        return false;
    if (cfg->cc_init_frames < 1 || cfg->cc_pace_burst < 1)
        return false;
    if (cfg->cc_pace_gain_pct != 0 && cfg->cc_pace_gain_pct < 100)
        return false;
    if (cfg->cc_max_md_pct < 1 || cfg->cc_max_md_pct > 90 || cfg->cc_beta_pct > 1000 ||
        cfg->cc_loss_gain_pct > 1000 || cfg->cc_loss_qdelay_pct > 1000)
        return false;
    /* 10 s (1 s of pacing slack): anything more is a unit mistake */
    return cfg->cc_target_ns <= 10000000000ull && cfg->cc_fs_range_ns <= 10000000000ull &&
           cfg->cc_pace_slack_ns <= 1000000000u;
}

void em_cc_init(em_cc_t *c, const em_proto_cfg_t *cfg)
{
    uint32_t init = cfg->cc_init_frames < cfg->window ? cfg->cc_init_frames : cfg->window;

    *c = (em_cc_t){
        .round_min = UINT64_MAX,
        .slow_start = 1,
        .tscale = 1024,
        .cwnd_min = cfg->frame_max,
        .cwnd_max = (uint64_t)cfg->window * cfg->frame_max,
    };
    c->cwnd = clamp_cwnd(c, (uint64_t)(init ? init : 1) * cfg->frame_max);
}

int em_cc_can_send(const em_cc_t *c, const em_proto_cfg_t *cfg, uint64_t now, uint64_t *wake)
{
    if (cfg->cc == EM_CC_OFF)
        return EM_CC_GO;
    if (c->inflight > 0 && c->inflight >= c->cwnd)
        return EM_CC_CWND;
    if (c->next_send > now + cfg->cc_pace_slack_ns) {
        *wake = c->next_send - cfg->cc_pace_slack_ns;
        return EM_CC_PACE;
    }
    return EM_CC_GO;
}

bool em_cc_want_ack(const em_cc_t *c, const em_proto_cfg_t *cfg, uint32_t bytes)
{
    /* At the full window the receiver's own policy (an ACK every window/2
     * frames) already does this: asking more only adds ACKs. */
    if (cfg->cc == EM_CC_OFF || c->cwnd >= c->cwnd_max)
        return false;
    return c->inflight + bytes >= c->cwnd || 2 * (c->since_ackreq + bytes) >= c->cwnd;
}

/** Integer square root (floor). */
static uint64_t isqrt(uint64_t x)
{
    uint64_t r = 0, bit = (uint64_t)1 << 62;

    while (bit > x)
        bit >>= 2;
    while (bit) {
        if (x >= r + bit) {
            x -= r + bit;
            r = (r >> 1) + bit;
        } else {
            r >>= 1;
        }
        bit >>= 2;
    }
    return r;
}

/**
 * Swift's flow scaling: extra target delay that grows as cwnd shrinks,
 * range x (1/sqrt(w) - 1/sqrt(w_max)) / (1 - 1/sqrt(w_max)), w in full
 * frames.  Flows of one incast that learned different base RTTs (the first
 * frames of simultaneous senders queue behind each other) then settle at
 * windows of the same order instead of the one with the highest target
 * taking the link.
 */
static uint64_t flow_scale(const em_cc_t *c, const em_proto_cfg_t *cfg)
{
    if (cfg->cc_fs_range_ns == 0 || c->cwnd_max <= c->cwnd_min)
        return 0;
    /* 2^16 / sqrt(w) = sqrt(2^32 x frame / cwnd); frame < 2^17 */
    uint64_t q = isqrt((c->cwnd_min << 32) / c->cwnd);
    uint64_t qmax = isqrt((c->cwnd_min << 32) / c->cwnd_max);
    if (q <= qmax)
        return 0;
    return cfg->cc_fs_range_ns * (q - qmax) / (65536 - qmax);
}

/** Time for @p bytes at the pacing rate gain% x cwnd / rtt. */
static uint64_t pace_ns(const em_cc_t *c, const em_proto_cfg_t *cfg, uint64_t bytes, uint64_t rtt)
{
    return bytes * rtt * 100 / (c->cwnd * cfg->cc_pace_gain_pct);
}

uint32_t em_cc_room(const em_cc_t *c, const em_proto_cfg_t *cfg, uint64_t now)
{
    if (cfg->cc == EM_CC_OFF)
        return UINT32_MAX;
    uint64_t frame = c->cwnd_min; /* one full frame */
    uint64_t frames;
    if (c->inflight == 0) /* a lone frame may always go */
        frames = c->cwnd > frame ? c->cwnd / frame : 1;
    else
        frames = c->cwnd > c->inflight ? (c->cwnd - c->inflight) / frame : 0;
    uint64_t rtt = c->min_rtt;
    if (rtt && cfg->cc_pace_gain_pct) {
        uint64_t ahead = now + cfg->cc_pace_slack_ns; /* em_cc_can_send()'s slack */
        if (c->next_send > ahead)
            return 0;
        if (rtt > 10000000000ull)
            rtt = 10000000000ull;
        /* the token bucket of em_cc_on_send(): one frame now, one more per
         * frame time the pacing clock lags, at most cc_pace_burst */
        uint64_t per = pace_ns(c, cfg, frame, rtt);
        uint64_t credit = 1 + (per ? (ahead - c->next_send) / per : cfg->cc_pace_burst);
        if (credit > cfg->cc_pace_burst)
            credit = cfg->cc_pace_burst;
        if (frames > credit)
            frames = credit;
    }
    return frames > UINT32_MAX ? UINT32_MAX : (uint32_t)frames;
}

void em_cc_on_send(em_cc_t *c, const em_proto_cfg_t *cfg, uint32_t bytes, bool first,
                   bool was_sacked, bool ack_req, uint64_t now)
{
    if (cfg->cc == EM_CC_OFF)
        return;
    if (first || was_sacked)
        c->inflight += bytes;
    if (first)
        c->since_ackreq = ack_req ? 0 : c->since_ackreq + bytes;
    /* Pace over the path's base RTT, not srtt: on a user-space transport
     * srtt includes the time until the peer process polls (milliseconds on
     * a loaded host), which says nothing about how fast the wire drains. */
    uint64_t rtt = c->min_rtt;
    if (rtt == 0 || cfg->cc_pace_gain_pct == 0)
        return;
    if (rtt > 10000000000ull)
        rtt = 10000000000ull;
    /* Token bucket: the pacing clock may lag `now` by at most the time of
     * cc_pace_burst full frames, so after a pause that many go at once. */
    uint64_t credit = pace_ns(c, cfg, (uint64_t)cfg->cc_pace_burst * c->cwnd_min, rtt);
    uint64_t base = c->next_send;
    if (now > credit && base < now - credit)
        base = now - credit;
    c->next_send = base + pace_ns(c, cfg, bytes, rtt);
}

void em_cc_on_sacked(em_cc_t *c, uint32_t bytes)
{
    c->inflight = c->inflight > bytes ? c->inflight - bytes : 0;
}

/** The cumulative ACK passed the end of the loss episode. */
static void end_episode(em_cc_t *c, const em_proto_cfg_t *cfg, em_proto_stats_t *st)
{
    c->ep_active = 0;
    if (c->ep_cut || cfg->cc != EM_CC_DELAY || c->ep_lost == 0 || !c->ep_cong)
        return;
    /* DCTCP's rule with loss as the mark: cut by gain x fraction lost. */
    uint64_t frac_pm = (uint64_t)c->ep_lost * 1000 / c->ep_frames;
    if (frac_pm > 1000)
        frac_pm = 1000;
    uint64_t pm = frac_pm * cfg->cc_loss_gain_pct / 100;
    if (pm == 0)
        return;
    decrease(c, cfg, pm);
    st->cc_loss_decreases++;
    /* Loss means the buffer is shallower than the queueing the target
     * allows (or the base RTT was learnt behind a queue): halve the
     * allowance; loss-free rounds give it back (on_ack). */
    c->tscale /= 2;
}

void em_cc_on_ack(em_cc_t *c, const em_proto_cfg_t *cfg, em_proto_stats_t *st, uint64_t acked,
                  uint64_t unsacked, uint64_t rtt, uint64_t srtt, uint32_t snd_una, uint64_t now)
{
    if (cfg->cc == EM_CC_OFF)
        return;
    c->inflight = c->inflight > unsacked ? c->inflight - unsacked : 0;
    if (c->ep_active && em_seq_ge(snd_una, c->ep_end))
        end_episode(c, cfg, st);
    bool grow = !c->ep_active;

    if (rtt) {
        if (c->min_rtt == 0 || rtt < c->min_rtt)
            c->min_rtt = rtt;
        if (rtt < c->round_min)
            c->round_min = rtt;
        /* One verdict per round trip, on the lowest sample of the round: a
         * standing queue raises every sample, a passing burst or a peer
         * that was slow to poll raises only some of them. */
        if (cfg->cc == EM_CC_DELAY && now - c->round_start >= (srtt ? srtt : rtt)) {
            uint64_t target = c->min_rtt + cfg->cc_target_ns + flow_scale(c, cfg);
            if (cfg->cc_adapt_target) {
                target = c->min_rtt + (cfg->cc_target_ns + flow_scale(c, cfg)) * c->tscale / 1024;
                if (!c->ep_active && c->tscale < 1024)
                    c->tscale += 16; /* back to 1 in 64 loss-free rounds */
            }
            c->over = c->round_min > target;
            c->last_q = c->round_min - c->min_rtt;
            c->last_allow = target - c->min_rtt;
            c->verdict_until = now + 2 * (srtt ? srtt : rtt);
            if (c->over) {
                decrease(c, cfg,
                         (uint64_t)cfg->cc_beta_pct * 10 * (c->round_min - target) / c->round_min);
                st->cc_delay_decreases++;
            }
            c->round_start = now;
            c->round_min = UINT64_MAX;
        }
    }
    if (c->over)
        grow = false;
    if (!grow)
        return;
    if (c->slow_start) { /* until the first decrease: cwnd doubles per round trip */
        c->cwnd = clamp_cwnd(c, c->cwnd + acked);
        return;
    }
    /* additive increase: one full frame per window's worth of bytes acked */
    c->ai_acc += acked;
    if (c->ai_acc >= c->cwnd) {
        c->ai_acc -= c->cwnd;
        c->cwnd = clamp_cwnd(c, c->cwnd + c->cwnd_min);
    }
}

/**
 * Delay mode: was this loss congestion?  Only when the last round trip's
 * queueing delay reached cc_loss_qdelay_pct of the allowance: a tail drop
 * at a full queue comes with a long queue; a frame lost at random on an
 * uncongested path (or reordered past the SACK rule) does not.  Without a
 * fresh verdict (no RTT sample for two round trips: every frame resent,
 * Karn) every loss counts, so a collapse can never go unanswered.
 */
static bool congestive(const em_cc_t *c, const em_proto_cfg_t *cfg, uint64_t now)
{
    if (cfg->cc != EM_CC_DELAY || cfg->cc_loss_qdelay_pct == 0 || c->min_rtt == 0 ||
        now > c->verdict_until)
        return true;
    return c->last_q * 100 >= c->last_allow * cfg->cc_loss_qdelay_pct;
}

void em_cc_on_loss(em_cc_t *c, const em_proto_cfg_t *cfg, em_proto_stats_t *st, unsigned n,
                   bool timeout, uint32_t snd_una, uint32_t snd_nxt, uint64_t now)
{
    if (cfg->cc == EM_CC_OFF || n == 0)
        return;
    if (!c->ep_active) {
        uint32_t frames = snd_nxt - snd_una;
        c->ep_active = 1;
        c->ep_cut = 0;
        c->ep_cong = 0;
        c->ep_end = snd_nxt;
        c->ep_frames = frames ? frames : 1;
        c->ep_lost = 0;
    }
    c->ep_lost += n;
    if (congestive(c, cfg, now))
        c->ep_cong = 1;
    /* A timeout alone never cuts: on a user-space transport it is most
     * often a peer that did not poll in time (1,000+ spurious
     * timeouts in a zero-loss bandwidth run), and a real tail drop is
     * seen by SACK first (the incast is the same without timeout cuts).
     * The retransmit timer's back-off already slows a sender that hears
     * nothing. */
    if (c->ep_cut || !c->ep_cong || timeout)
        return;
    if (cfg->cc == EM_CC_LOSS) { /* AIMD: halve at once */
        decrease(c, cfg, (uint64_t)cfg->cc_max_md_pct * 10);
        c->ep_cut = 1;
        st->cc_loss_decreases++;
    }
}

void em_cc_flush(em_cc_t *c)
{
    c->inflight = 0;
    c->since_ackreq = 0;
    c->ep_active = 0;
    c->ep_cut = 0;
    c->ep_cong = 0;
}

int em_cc_mode_parse(const char *name)
{
    if (!name || 0 == strcmp(name, "loss"))
        return EM_CC_LOSS;
    if (0 == strcmp(name, "delay"))
        return EM_CC_DELAY;
    if (0 == strcmp(name, "off"))
        return EM_CC_OFF;
    return -1;
}
