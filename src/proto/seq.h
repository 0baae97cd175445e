/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file seq.h
 * Wrap-safe 32-bit sequence-number arithmetic (serial-number arithmetic,
 * RFC 1982 style).  Every comparison of sequence numbers in ethermpi goes
 * through these helpers; never compare two sequence numbers with < or >.
 *
 * The sender's window, drawn on the 2^32 circle:
 *
 *        snd_una                 snd_nxt             snd_una + W
 *   ... --|=======================|-------------------|-- ...
 *         | sent, not yet acked   | may still send    | blocked
 *
 * and the receiver's (selective repeat):
 *
 *        rcv_nxt          rcv_nxt + W
 *   ... --|#..#.#..........|-- ...
 *   below: duplicate (re-ACK);  inside: deliver or buffer;  above: drop.
 *
 * Two numbers are comparable as long as they are less than 2^31 apart;
 * windows are at most EM_WINDOW_MAX (256) packets, far inside that.
 */
#ifndef EM_PROTO_SEQ_H
#define EM_PROTO_SEQ_H

#include <stdbool.h>
#include <stdint.h>

/** Signed distance from @p b to @p a (positive when a is "after" b). */
static inline int32_t em_seq_diff(uint32_t a, uint32_t b)
{
    return (int32_t)(a - b);
}

static inline bool em_seq_lt(uint32_t a, uint32_t b) { return em_seq_diff(a, b) < 0; }
static inline bool em_seq_le(uint32_t a, uint32_t b) { return em_seq_diff(a, b) <= 0; }
static inline bool em_seq_gt(uint32_t a, uint32_t b) { return em_seq_diff(a, b) > 0; }
static inline bool em_seq_ge(uint32_t a, uint32_t b) { return em_seq_diff(a, b) >= 0; }

/** True when @p s lies in the half-open range [lo, lo + n). */
static inline bool em_seq_in(uint32_t s, uint32_t lo, uint32_t n)
{
    return (uint32_t)(s - lo) < n;
}

#endif
