/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file loss.h
 * Injected frame loss for tests and experiments, in one place: a seeded
 * xorshift64 stream (reproducible: the same seed drops the same frames)
 * and the drop decision.  Links and the daemon that offer an `rx_loss` /
 * `loss_seed` option keep one em_loss_t and ask em_loss_drop() per frame;
 * the simulated network (link_sim) also draws its reordering and
 * duplication from the same kind of stream (em_loss_unit).
 *
 * Not a source of randomness for anything but fault injection (not
 * cryptographic, not for keys).  Header-only; one em_loss_t per thread.
 */
#ifndef EM_UTIL_LOSS_H
#define EM_UTIL_LOSS_H

#include <stdbool.h>
#include <stdint.h>

/** The seed used when the caller passes 0 (xorshift must not start at 0). */
#define EM_LOSS_SEED_DEFAULT 0x9E3779B97F4A7C15ull

typedef struct em_loss {
    double p;     /**< probability a frame is dropped, 0 = never */
    uint64_t rng; /**< xorshift64 state, never 0 */
} em_loss_t;

/** Drop with probability @p p (0..1) from a stream seeded with @p seed (0 = default). */
static inline void em_loss_init(em_loss_t *l, double p, uint64_t seed)
{
    l->p = p;
    l->rng = seed ? seed : EM_LOSS_SEED_DEFAULT;
}

/** The next 64 random bits of the stream (xorshift64, shifts 13/7/17). */
static inline uint64_t em_loss_next(em_loss_t *l)
{
    l->rng ^= l->rng << 13;
    l->rng ^= l->rng >> 7;
    l->rng ^= l->rng << 17;
    return l->rng;
}

/** A uniform double in [0, 1) with 53 random bits. */
static inline double em_loss_unit(em_loss_t *l)
{
    return (double)(em_loss_next(l) >> 11) / 9007199254740992.0; /* 2^53 */
}

/** True when this frame is to be dropped (never draws when p is 0). */
static inline bool em_loss_drop(em_loss_t *l) { return l->p > 0 && em_loss_unit(l) < l->p; }

/** The same for a rate in parts per million read at run time (0 = never). */
static inline bool em_loss_drop_ppm(em_loss_t *l, uint32_t ppm)
{
    return ppm && em_loss_next(l) % 1000000u < ppm;
}

#endif
