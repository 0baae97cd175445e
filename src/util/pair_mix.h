/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file pair_mix.h
 * The mixer behind a pair's key: both ends of a pair publish a 64-bit
 * secret, and each computes the same key from the two secrets, ordered by
 * the ends' ids.  Two splitmix64-style rounds make the mix non-linear, so
 * that the pair keys seen on the wire tell nothing about other pairs.
 *
 * The BTLs (ompi/btl/common/em_btl_peer.c) and the libfabric provider
 * (prov/emo_wire.c) use the same mixer with their own constants.  The keys
 * are on the wire (every frame's job_key): the constant sets below must
 * never change, or ranks of two builds stop understanding each other;
 * tests/unit/test_pair_mix.c pins values of both.
 *
 * Header-only, pure: safe from any thread.
 */
#ifndef EM_UTIL_PAIR_MIX_H
#define EM_UTIL_PAIR_MIX_H

#include <stdint.h>

/** The constants of one user of the mixer. */
typedef struct em_pair_mix_k {
    uint64_t seed;     /**< xored into the lower-id end's secret */
    uint64_t add;      /**< added with the other secret in each round */
    unsigned shl, shr; /**< the feedback shifts of each round */
} em_pair_mix_k_t;

/** The BTLs' constants (wire-visible: never change them). */
#define EM_PAIR_MIX_BTL                                                                            \
    ((em_pair_mix_k_t){                                                                            \
        .seed = 0x9E3779B97F4A7C15ull, .add = 0x632BE59BD9B4E019ull, .shl = 6, .shr = 2 })
/** The libfabric provider's constants (wire-visible: never change them). */
#define EM_PAIR_MIX_OFI                                                                            \
    ((em_pair_mix_k_t){                                                                            \
        .seed = 0xA0761D6478BD642Full, .add = 0xE7037ED1A0B428DBull, .shl = 7, .shr = 3 })

/**
 * The key of the pair (secret @p a of the end with id @p ia, secret @p b
 * of the end with id @p ib): the same value whichever end computes it.
 */
static inline uint64_t em_pair_mix(uint64_t a, uint32_t ia, uint64_t b, uint32_t ib,
                                   em_pair_mix_k_t k)
{
    uint64_t lo = ia < ib ? a : b, hi = ia < ib ? b : a;
    uint64_t x = lo ^ k.seed;
    for (int r = 0; r < 2; r++) {
        x ^= hi + k.add + (x << k.shl) + (x >> k.shr);
        x ^= x >> 30;
        x *= 0xBF58476D1CE4E5B9ull;
        x ^= x >> 27;
        x *= 0x94D049BB133111EBull;
        x ^= x >> 31;
    }
    return x;
}

#endif
