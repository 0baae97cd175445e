/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file name_map.c
 * Peer names to 32-bit values (name_map.h).
 */
#include "proto/name_map.h"

#include <stdlib.h>
#include <string.h>

struct cell {
    em_conn_name_t name;
    uint32_t value;
    uint8_t used;
};

struct em_name_map {
    struct cell *c;
    uint32_t mask; /* cells - 1 */
    uint32_t cap, n;
};

/* FNV-1a over the address, the endpoint index and the nonce */
static uint64_t hash_of(const em_conn_name_t *nm)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned i = 0; i < nm->addr_len; i++)
        h = (h ^ nm->addr[i]) * 0x100000001b3ull;
    for (unsigned i = 0; i < 4; i++)
        h = (h ^ ((nm->ep >> (8 * i)) & 0xFFu)) * 0x100000001b3ull;
    for (unsigned i = 0; i < 8; i++)
        h = (h ^ ((nm->nonce >> (8 * i)) & 0xFFu)) * 0x100000001b3ull;
    return h ^ (h >> 29);
}

static bool same(const em_conn_name_t *a, const em_conn_name_t *b)
{
    return a->addr_len == b->addr_len && a->ep == b->ep && a->nonce == b->nonce &&
           memcmp(a->addr, b->addr, a->addr_len) == 0;
}

static bool name_ok(const em_conn_name_t *nm)
{
    return nm->addr_len >= 1 && nm->addr_len <= EM_CONN_ADDR_MAX;
}

em_name_map_t *em_name_map_create(uint32_t cap)
{
    if (cap > (1u << 30))
        return NULL;
    uint32_t cells = 2;
    while (cells < 2 * (cap ? cap : 1))
        cells *= 2;
    em_name_map_t *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->c = calloc(cells, sizeof *m->c);
    if (!m->c) {
        free(m);
        return NULL;
    }
    m->mask = cells - 1;
    m->cap = cap;
    return m;
}

void em_name_map_destroy(em_name_map_t *m)
{
    if (!m)
        return;
    free(m->c);
    free(m);
}

/* the cell holding @p nm, or the empty cell where it would go */
static struct cell *probe(const em_name_map_t *m, const em_conn_name_t *nm)
{
    uint32_t i = (uint32_t)hash_of(nm) & m->mask;
    while (m->c[i].used && !same(&m->c[i].name, nm))
        i = (i + 1) & m->mask; /* at most half full: an empty cell comes */
    return &m->c[i];
}

int em_name_map_put(em_name_map_t *m, const em_conn_name_t *name, uint32_t value)
{
    if (!name_ok(name))
        return -EM_EINVAL;
    struct cell *c = probe(m, name);
    if (c->used)
        return c->value == value ? 0 : -EM_EINVAL;
    if (m->n >= m->cap)
        return -EM_ENOMEM;
    memset(&c->name, 0, sizeof c->name);
    c->name.addr_len = name->addr_len;
    memcpy(c->name.addr, name->addr, name->addr_len);
    c->name.ep = name->ep;
    c->name.nonce = name->nonce;
    c->value = value;
    c->used = 1;
    m->n++;
    return 0;
}

bool em_name_map_get(const em_name_map_t *m, const em_conn_name_t *name, uint32_t *value)
{
    if (!m || !name_ok(name))
        return false;
    const struct cell *c = probe(m, name);
    if (!c->used)
        return false;
    *value = c->value;
    return true;
}

uint32_t em_name_map_count(const em_name_map_t *m) { return m ? m->n : 0; }
