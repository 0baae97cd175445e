/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file region.h
 * Registry of memory regions a peer may write into with a put.  A region is
 * named on the wire by (id, key): the id indexes the table, the 64-bit key
 * is random per registration, so a stale or forged (id, key) pair, or an
 * offset outside [0, len), is refused before a byte is written.  A region
 * also says what peers may do with it (EM_REGION_WRITE: puts land in it,
 * atomics other than READ change it; EM_REGION_READ: the owner may copy
 * out of it for a peer, an RMA read or an atomic's fetched values).
 *
 * Threading: owned by one engine, single-threaded.
 */
#ifndef EM_ENGINE_REGION_H
#define EM_ENGINE_REGION_H

#include <stddef.h>
#include <stdint.h>

/** What a peer needs to write into a region (travels in the MPI rendezvous). */
typedef struct em_region_handle {
    uint32_t id; /**< table slot + 1 (0 is never valid) */
    uint32_t rsvd;
    uint64_t key;  /**< random, changes on every registration */
    uint64_t base; /**< the owner's base address (only used to compute offsets) */
    uint64_t len;
} em_region_handle_t;

/** Why a put was refused (counted by the engine). */
typedef enum em_region_check {
    EM_REGION_OK = 0,
    EM_REGION_BAD_ID,
    EM_REGION_BAD_KEY,
    EM_REGION_OUT_OF_BOUNDS,
    EM_REGION_NO_ACCESS, /**< the region does not allow this (a put into a read-only one) */
} em_region_check_t;

/** Registration flags (em_regions_add_ex). */
enum em_region_flags {
    EM_REGION_WRITE = 1u, /**< peers may put into it */
    EM_REGION_READ = 2u,  /**< peers may read it (the owner copies it out for them) */
    /** the key has 48 random bits (bits 48..63 zero), so that id and key
     *  fit one 64-bit word: the libfabric provider's FI_MR_PROV_KEY keys,
     *  (id << 48) | key (prov/emo_rma.c) */
    EM_REGION_KEY48 = 4u,
};
#define EM_REGION_KEY48_MASK ((UINT64_C(1) << 48) - 1)

typedef struct em_regions {
    struct em_region_slot *slots;
    uint32_t cap;
    uint32_t free_head; /**< index + 1 of the first free slot, 0 = none */
    uint32_t used;
} em_regions_t;

void em_regions_init(em_regions_t *r);
void em_regions_fini(em_regions_t *r);
/** Register [base, base + len) under a random key (getrandom).
 *  @return 0, -EM_ENOMEM, or -EM_EAGAIN when getrandom failed (no weak
 *  fallback key: the registration fails). */
int em_regions_add(em_regions_t *r, void *base, size_t len, em_region_handle_t *out);
/** em_regions_add() with @p flags (enum em_region_flags; em_regions_add is
 *  EM_REGION_WRITE).  A region needs WRITE or READ: @return -EM_EINVAL else. */
int em_regions_add_ex(em_regions_t *r, void *base, size_t len, unsigned flags,
                      em_region_handle_t *out);
/** Remove a registration.  @return 0 or -EM_EINVAL (unknown id or key). */
int em_regions_remove(em_regions_t *r, uint32_t id, uint64_t key);
/**
 * Validate a put of @p len bytes at @p offset into region (@p id, @p key).
 * @return EM_REGION_OK with *@p dst set to where the bytes go, or the reason.
 */
em_region_check_t em_regions_check(const em_regions_t *r, uint32_t id, uint64_t key,
                                   uint64_t offset, size_t len, uint8_t **dst);
/** em_regions_check() for an access of kind @p access (EM_REGION_WRITE or
 *  EM_REGION_READ; em_regions_check is WRITE). */
em_region_check_t em_regions_check_ex(const em_regions_t *r, uint32_t id, uint64_t key,
                                      uint64_t offset, size_t len, unsigned access, uint8_t **dst);

#endif
