/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file region.c
 * Registered-region table (see region.h).  Slots live in a growable array;
 * free slots form a list threaded through the array.
 */
#include "engine/region.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "proto/proto.h"

struct em_region_slot {
    uint8_t *base;
    uint64_t len;
    uint64_t key;       /**< 0 = slot free */
    uint32_t next_free; /**< index + 1 */
    uint8_t access;     /**< EM_REGION_WRITE | EM_REGION_READ */
};

/* A region key from the kernel's generator, or 0 when it failed: no
 * guessable fallback (security review L5): the registration fails instead. */
static uint64_t random_key(void)
{
    uint64_t k = 0;
    for (int tries = 0; k == 0 && tries < 16; tries++) {
        ssize_t got = getrandom(&k, sizeof k, 0);
        if (got != (ssize_t)sizeof k) {
            k = 0;
            if (!(got < 0 && errno == EINTR))
                return 0;
        }
    }
    return k;
}

void em_regions_init(em_regions_t *r) { memset(r, 0, sizeof *r); }

void em_regions_fini(em_regions_t *r)
{
    free(r->slots);
    memset(r, 0, sizeof *r);
}

int em_regions_add(em_regions_t *r, void *base, size_t len, em_region_handle_t *out)
{
    return em_regions_add_ex(r, base, len, EM_REGION_WRITE, out);
}

int em_regions_add_ex(em_regions_t *r, void *base, size_t len, unsigned flags,
                      em_region_handle_t *out)
{
    if (!(flags & (EM_REGION_WRITE | EM_REGION_READ)) ||
        (flags & ~(unsigned)(EM_REGION_WRITE | EM_REGION_READ | EM_REGION_KEY48)))
        return -EM_EINVAL;
    if (!r->free_head) {
        uint32_t nc = r->cap ? r->cap * 2 : 64;
        struct em_region_slot *ns = realloc(r->slots, nc * sizeof *ns);
        if (!ns)
            return -EM_ENOMEM;
        memset(ns + r->cap, 0, (nc - r->cap) * sizeof *ns);
        for (uint32_t i = r->cap; i < nc; i++)
            ns[i].next_free = i + 1 < nc ? i + 2 : 0;
        r->free_head = r->cap + 1;
        r->slots = ns;
        r->cap = nc;
    }
    uint64_t key = 0;
    for (int i = 0; key == 0 && i < 4; i++) {
        key = random_key();
        if (key == 0)
            return -EM_EAGAIN; /* getrandom failed: no key we could trust */
        if (flags & EM_REGION_KEY48)
            key &= EM_REGION_KEY48_MASK; /* (0 after the mask: draw again) */
    }
    if (key == 0)
        return -EM_EAGAIN;
    uint32_t idx = r->free_head - 1;
    struct em_region_slot *s = &r->slots[idx];
    r->free_head = s->next_free;
    s->base = base;
    s->len = len;
    s->key = key;
    s->next_free = 0;
    s->access = (uint8_t)(flags & (EM_REGION_WRITE | EM_REGION_READ));
    r->used++;
    *out = (em_region_handle_t){
        .id = idx + 1, .key = s->key, .base = (uint64_t)(uintptr_t)base, .len = len
    };
    return 0;
}

int em_regions_remove(em_regions_t *r, uint32_t id, uint64_t key)
{
    if (id == 0 || id > r->cap || r->slots[id - 1].key == 0 || r->slots[id - 1].key != key)
        return -EM_EINVAL;
    struct em_region_slot *s = &r->slots[id - 1];
    memset(s, 0, sizeof *s);
    s->next_free = r->free_head;
    r->free_head = id;
    r->used--;
    return 0;
}

em_region_check_t em_regions_check(const em_regions_t *r, uint32_t id, uint64_t key,
                                   uint64_t offset, size_t len, uint8_t **dst)
{
    return em_regions_check_ex(r, id, key, offset, len, EM_REGION_WRITE, dst);
}

em_region_check_t em_regions_check_ex(const em_regions_t *r, uint32_t id, uint64_t key,
                                      uint64_t offset, size_t len, unsigned access, uint8_t **dst)
{
    if (id == 0 || id > r->cap || r->slots[id - 1].key == 0)
        return EM_REGION_BAD_ID;
    const struct em_region_slot *s = &r->slots[id - 1];
    if (s->key != key)
        return EM_REGION_BAD_KEY;
    if ((s->access & access) != access || access == 0)
        return EM_REGION_NO_ACCESS;
    if (offset > s->len || len > s->len - offset)
        return EM_REGION_OUT_OF_BOUNDS;
    *dst = s->base + offset;
    return EM_REGION_OK;
}
