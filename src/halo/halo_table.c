/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * halo_table.c - boundary-table descriptions and checks (see halo_table.h).
 */
#include "halo/halo_table.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static void put_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static void put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (24 - 8 * i));
}

static void put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (56 - 8 * i));
}

static uint16_t get_u16(const uint8_t *p) { return (uint16_t)((p[0] << 8) | p[1]); }

static uint32_t get_u32(const uint8_t *p)
{
    uint32_t v = 0;

    for (int i = 0; i < 4; i++)
        v = (v << 8) | p[i];
    return v;
}

static uint64_t get_u64(const uint8_t *p)
{
    uint64_t v = 0;

    for (int i = 0; i < 8; i++)
        v = (v << 8) | p[i];
    return v;
}

static void say(char *msg, size_t len, const char *fmt, ...)
{
    va_list ap;

    if (msg == NULL || len == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(msg, len, fmt, ap);
    va_end(ap);
}

size_t em_halo_desc_encode(const struct em_halo_sizes *t, uint8_t *buf, size_t cap)
{
    size_t len, off;

    if (t == NULL || buf == NULL || t->nsend > EM_HALO_MAX_ITEMS || t->nrecv > EM_HALO_MAX_ITEMS)
        return 0;
    len = EM_HALO_DESC_LEN(t->nsend, t->nrecv);
    if (len > cap)
        return 0;
    put_u32(buf, EM_HALO_DESC_MAGIC);
    put_u16(buf + 4, EM_HALO_DESC_VERSION);
    put_u16(buf + 6, 0);
    put_u32(buf + 8, t->nsend);
    put_u32(buf + 12, t->nrecv);
    off = EM_HALO_DESC_HDR_LEN;
    for (uint32_t i = 0; i < t->nsend; i++, off += 8)
        put_u64(buf + off, t->send[i]);
    for (uint32_t i = 0; i < t->nrecv; i++, off += 8)
        put_u64(buf + off, t->recv[i]);
    return len;
}

int em_halo_desc_decode(const uint8_t *buf, size_t len, struct em_halo_sizes *t,
                        uint64_t *sizes_out, size_t cap, char *why, size_t whylen)
{
    uint32_t magic, nsend, nrecv;
    uint16_t version, flags;
    size_t n;

    if (buf == NULL || len < EM_HALO_DESC_HDR_LEN) {
        say(why, whylen, "description of %zu bytes is shorter than its %d-byte header", len,
            EM_HALO_DESC_HDR_LEN);
        return EM_HALO_EPROTO;
    }
    magic = get_u32(buf);
    version = get_u16(buf + 4);
    flags = get_u16(buf + 6);
    nsend = get_u32(buf + 8);
    nrecv = get_u32(buf + 12);
    if (magic != EM_HALO_DESC_MAGIC) {
        say(why, whylen, "not a halo table description (magic 0x%08x)", (unsigned)magic);
        return EM_HALO_EPROTO;
    }
    if (version != EM_HALO_DESC_VERSION || flags != 0) {
        say(why, whylen, "description version %u flags 0x%x, this library speaks version %d",
            (unsigned)version, (unsigned)flags, EM_HALO_DESC_VERSION);
        return EM_HALO_EPROTO;
    }
    if (nsend > EM_HALO_MAX_ITEMS || nrecv > EM_HALO_MAX_ITEMS) {
        say(why, whylen, "description lists %u send and %u receive items (at most %d each)",
            (unsigned)nsend, (unsigned)nrecv, EM_HALO_MAX_ITEMS);
        return EM_HALO_EPROTO;
    }
    if (len != EM_HALO_DESC_LEN(nsend, nrecv)) {
        say(why, whylen, "description of %zu bytes, but %u + %u items need %zu", len,
            (unsigned)nsend, (unsigned)nrecv, EM_HALO_DESC_LEN(nsend, nrecv));
        return EM_HALO_EPROTO;
    }
    n = (size_t)nsend + nrecv;
    if (n > cap || (n > 0 && sizes_out == NULL)) {
        say(why, whylen, "description lists %zu items, room for %zu", n, cap);
        return EM_HALO_EPROTO;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t s = get_u64(buf + EM_HALO_DESC_HDR_LEN + 8 * i);

        if (s == 0 || s > EM_HALO_MAX_ITEM_SIZE) {
            say(why, whylen, "%s item %zu has size %llu (allowed 1..%llu)",
                i < nsend ? "send" : "receive", i < nsend ? i : i - nsend, (unsigned long long)s,
                (unsigned long long)EM_HALO_MAX_ITEM_SIZE);
            return EM_HALO_EPROTO;
        }
        sizes_out[i] = s;
    }
    t->nsend = nsend;
    t->nrecv = nrecv;
    t->send = sizes_out;
    t->recv = sizes_out + nsend;
    return EM_HALO_OK;
}

int em_halo_table_compare(int me, int peer, const struct em_halo_sizes *mine,
                          const struct em_halo_sizes *theirs, char *msg, size_t msglen)
{
    /* what I send, the peer receives, and the other way round; every
	 * count is compared before any item */
    const struct {
        const char *mine, *theirs;
        uint32_t n_mine, n_theirs;
        const uint64_t *a, *b;
    } dir[2] = {
        { "send", "receive", mine->nsend, theirs->nrecv, mine->send, theirs->recv },
        { "receive", "send", mine->nrecv, theirs->nsend, mine->recv, theirs->send },
    };

    for (int d = 0; d < 2; d++) {
        if (dir[d].n_mine != dir[d].n_theirs) {
            say(msg, msglen,
                "table mismatch with neighbour rank %d: rank %d has %u %s item(s) for it, "
                "but rank %d has %u %s item(s) for rank %d",
                peer, me, (unsigned)dir[d].n_mine, dir[d].mine, peer, (unsigned)dir[d].n_theirs,
                dir[d].theirs, me);
            return EM_HALO_EMISMATCH;
        }
    }
    for (int d = 0; d < 2; d++) {
        for (uint32_t i = 0; i < dir[d].n_mine; i++) {
            if (dir[d].a[i] == dir[d].b[i])
                continue;
            say(msg, msglen,
                "table mismatch with neighbour rank %d: %s item %u is %llu bytes on "
                "rank %d, but %s item %u is %llu bytes on rank %d",
                peer, dir[d].mine, (unsigned)i, (unsigned long long)dir[d].a[i], me, dir[d].theirs,
                (unsigned)i, (unsigned long long)dir[d].b[i], peer);
            return EM_HALO_EMISMATCH;
        }
    }
    return EM_HALO_OK;
}

static int span_cmp(const void *a, const void *b)
{
    const struct em_halo_span *x = a, *y = b;

    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    /* equal start: receives first, then by neighbour and index (stable messages) */
    if (x->is_recv != y->is_recv)
        return x->is_recv ? -1 : 1;
    if (x->peer != y->peer)
        return x->peer < y->peer ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

static void span_name(char *out, size_t len, const struct em_halo_span *s)
{
    snprintf(out, len, "%s item %d for neighbour rank %d ([%#llx, +%llu))",
             s->is_recv ? "receive" : "send", s->index, s->peer, (unsigned long long)s->addr,
             (unsigned long long)s->size);
}

int em_halo_check_overlap(struct em_halo_span *spans, size_t n, char *msg, size_t msglen)
{
    const struct em_halo_span *far_any = NULL, *far_recv = NULL;
    uint64_t end_any = 0, end_recv = 0;

    if (n > 1)
        qsort(spans, n, sizeof(*spans), span_cmp);
    for (size_t i = 0; i < n; i++) {
        const struct em_halo_span *s = &spans[i];
        const struct em_halo_span *hit = NULL;
        uint64_t end = (uint64_t)s->addr + s->size;

        if (s->is_recv && far_any != NULL && s->addr < end_any)
            hit = far_any;
        else if (!s->is_recv && far_recv != NULL && s->addr < end_recv)
            hit = far_recv;
        if (hit != NULL) {
            char a[160], b[160];

            span_name(a, sizeof(a), hit);
            span_name(b, sizeof(b), s);
            say(msg, msglen,
                "%s overlaps %s: a receive item must not share memory "
                "with any other item",
                a, b);
            return EM_HALO_EINVAL;
        }
        if (far_any == NULL || end > end_any) {
            end_any = end;
            far_any = s;
        }
        if (s->is_recv && (far_recv == NULL || end > end_recv)) {
            end_recv = end;
            far_recv = s;
        }
    }
    return EM_HALO_OK;
}
