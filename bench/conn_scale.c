/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file conn_scale.c
 * Scale of peer state, measured in one process (no network):
 *
 *  1. wire v3's first contact (proto/conn.h): one endpoint inserts N peer
 *     names (as an MPI job's modex or an address vector would give them)
 *     and contacts every one; each peer is a table of its own that knows
 *     the endpoint.  Frames go through an in-memory FIFO (no loss): the
 *     time until all N are established both ways, the frames it took, and
 *     the endpoint's table memory per peer.
 *  2. the wire v2 protocol core (proto/proto.h "Memory"): the memory of
 *     one em_proto_t per peer it is created for (every peer idle), what
 *     sending one message to each adds (every peer active: its active
 *     part with the send ring), and what is left once every message is
 *     acknowledged and the peers stayed quiet for peer_idle_ns (every
 *     active part released: back to idle).  The same as the API states it
 *     (em_engine_peer_bytes, em_engine_peer_bytes_active: protocol and
 *     engine), and the totals of a table of N peers.  Exits 1 when an idle
 *     peer costs more than 256 bytes or a quiet peer kept its active part.
 *
 * Memory is the heap's own count (glibc mallinfo2: bytes in use, mmap()ed
 * blocks included), before and after.  Output: a table, and with -o FILE the same as JSON
 * (results/conn_scale.json, docs/benchmarks.md).
 *   conn_scale [-n PEERS] [-o FILE]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/engine.h"
#include "proto/conn.h"
#include "proto/proto.h"

static uint64_t mono_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}
static size_t heap_used(void)
{
    struct mallinfo2 m = mallinfo2();
    return m.uordblks + m.hblkhd; /* small blocks and mmap()ed large ones */
}

/* ------------------------------------------------------ 1. first contact -- */

#define ADDR_LEN 6 /* a MAC-sized link address: node n is bytes 0x02, then n */
struct fifo_frame {
    uint32_t from, to; /* node numbers; node 0 is the endpoint under test */
    uint8_t f[EM_HS_LEN];
};
struct fifo {
    struct fifo_frame *q;
    size_t head, tail, cap;
    uint64_t frames, established;
    uint64_t rng;
};
static struct fifo F;

static void addr_of(uint32_t n, uint8_t a[ADDR_LEN])
{
    a[0] = 2;
    a[1] = 0;
    memcpy(a + 2, &n, 4);
}
static uint32_t node_of(const uint8_t *a)
{
    uint32_t n;
    memcpy(&n, a + 2, 4);
    return n;
}
static void emit(void *u, const uint8_t *a, uint8_t alen, const void *f, size_t len)
{
    (void)alen;
    (void)len;
    if (F.tail - F.head == F.cap) {
        fprintf(stderr, "conn_scale: frame queue full\n");
        exit(1);
    }
    struct fifo_frame *x = &F.q[F.tail++ % F.cap];
    x->from = (uint32_t)(uintptr_t)u;
    x->to = node_of(a);
    memcpy(x->f, f, EM_HS_LEN);
    F.frames++;
}
static void est(void *u, uint32_t idx, bool again)
{
    (void)u;
    (void)idx;
    (void)again;
    F.established++;
}
static uint64_t r64(void *u)
{
    (void)u;
    F.rng ^= F.rng << 13;
    F.rng ^= F.rng >> 7;
    F.rng ^= F.rng << 17;
    return F.rng;
}

static em_conn_t *table(uint32_t n, uint32_t max_peers)
{
    em_conn_cfg_t cfg;
    em_conn_cfg_default(&cfg);
    cfg.ep = 0;
    cfg.addr_len = ADDR_LEN;
    addr_of(n, cfg.addr);
    cfg.nonce = 0x100000000ull + n;
    cfg.max_peers = max_peers;
    for (unsigned i = 0; i < EM_CONN_SECRET_LEN; i++)
        cfg.secret[i] = (uint8_t)(n * 7 + i);
    em_conn_ops_t ops = { .emit = emit, .established = est, .rand64 = r64 };
    em_conn_t *c = em_conn_create(&cfg, &ops, (void *)(uintptr_t)n);
    if (!c) {
        fprintf(stderr, "conn_scale: no table\n");
        exit(1);
    }
    return c;
}

struct wireup {
    double seconds, frames_per_peer, bytes_per_peer;
    size_t table_bytes, heap_bytes_per_peer;
    int ok;
};

static struct wireup first_contact(uint32_t n)
{
    struct wireup r = { 0 };
    F = (struct fifo){ .cap = (size_t)n * 4 + 16, .rng = 88172645463325252ull };
    F.q = malloc(F.cap * sizeof *F.q);
    em_conn_t **peer = calloc((size_t)n + 1, sizeof *peer);
    if (!F.q || !peer)
        exit(1);
    for (uint32_t i = 1; i <= n; i++) { /* each peer knows the endpoint */
        peer[i] = table(i, 1);
        em_conn_name_t x = { .addr_len = ADDR_LEN, .ep = 0, .nonce = 0x100000000ull };
        addr_of(0, x.addr);
        uint32_t idx;
        (void)em_conn_insert(peer[i], &x, &idx);
    }
    size_t h0 = heap_used();
    em_conn_t *ep = table(0, n);
    uint64_t t0 = mono_ns(), now = 1000000000ull;
    for (uint32_t i = 1; i <= n; i++) {
        em_conn_name_t x = { .addr_len = ADDR_LEN, .ep = 0, .nonce = 0x100000000ull + i };
        addr_of(i, x.addr);
        uint32_t idx;
        if (em_conn_insert(ep, &x, &idx) != 0 || em_conn_connect(ep, idx, now) != 0)
            exit(1);
    }
    while (F.head != F.tail) {
        struct fifo_frame *x = &F.q[F.head++ % F.cap];
        em_conn_t *to = x->to == 0 ? ep : x->to <= n ? peer[x->to] : NULL;
        if (to)
            (void)em_conn_rx(to, x->f, EM_HS_LEN, now);
    }
    r.seconds = (double)(mono_ns() - t0) / 1e9;
    r.table_bytes = em_conn_mem(ep);
    r.bytes_per_peer = (double)r.table_bytes / n;
    r.heap_bytes_per_peer = (heap_used() - h0) / n;
    r.frames_per_peer = (double)F.frames / n;
    r.ok = F.established == 2ull * n && em_conn_count(ep) == n;
    em_conn_destroy(ep);
    for (uint32_t i = 1; i <= n; i++)
        em_conn_destroy(peer[i]);
    free(peer);
    free(F.q);
    return r;
}

/* -------------------------------------------------- 2. the v2 core today -- */

static int quiet_emit(void *u, uint32_t peer, const void *h, size_t hl, const void *p, size_t pl)
{
    (void)u, (void)peer, (void)h, (void)hl, (void)p, (void)pl;
    return 0;
}
static void quiet_recv(void *u, uint32_t peer, uint8_t tag, const void *d, size_t len)
{
    (void)u, (void)peer, (void)tag, (void)d, (void)len;
}
static void quiet_done(void *u, void *ctx, int status) { (void)u, (void)ctx, (void)status; }

struct v2mem {
    uint32_t npeers;
    double idle_bytes_per_peer, active_bytes_per_peer, released_bytes_per_peer;
    size_t idle_total, active_total, released_total; /* heap bytes of the instance */
    uint64_t releases;
};

/** Peer @p k acknowledges our first frame to it (sequence 0 + 1). */
static void ack_from(em_proto_t *p, uint32_t k, uint64_t now)
{
    uint8_t b[EM_HDR_LEN];
    em_hdr_t h = { .type = EM_PT_ACK, .index = k, .ack = 1 };
    em_hdr_encode(&h, b);
    em_proto_rx(p, b, sizeof b, now);
}

static struct v2mem proto_v2(uint32_t npeers)
{
    struct v2mem r = { .npeers = npeers };
    em_proto_cfg_t cfg;
    em_proto_cfg_default(&cfg);
    cfg.self = 0;
    cfg.npeers = (uint32_t)npeers;
    em_proto_ops_t ops = { .emit = quiet_emit, .recv = quiet_recv, .complete = quiet_done };
    size_t h0 = heap_used();
    int err;
    em_proto_t *p = em_proto_create(&cfg, &ops, NULL, &err);
    if (!p)
        return r;
    r.idle_total = heap_used() - h0;
    r.idle_bytes_per_peer = (double)r.idle_total / npeers;
    em_proto_op_t *op = calloc(npeers, sizeof *op);
    if (!op)
        exit(1);
    size_t hop = heap_used() - h0 - r.idle_total; /* the ops are the caller's, not counted */
    static const char msg[64];
    for (uint32_t k = 1; k < npeers; k++)
        (void)em_proto_send(p, &op[k], (uint32_t)k, 1, msg, sizeof msg, NULL, 1000);
    r.active_total = heap_used() - h0 - hop;
    r.active_bytes_per_peer = (double)r.active_total / npeers;
    for (uint32_t k = 1; k < npeers; k++)
        ack_from(p, k, 2000);
    /* quiet from now: em_proto_poll() releases every active part */
    for (int i = 0; i < 16 && em_proto_active_peers(p); i++)
        em_proto_poll(p, em_proto_next_deadline(p));
    r.released_total = heap_used() - h0 - hop;
    r.released_bytes_per_peer = (double)r.released_total / npeers;
    r.releases = em_proto_stats(p)->peer_releases;
    em_proto_destroy(p);
    free(op);
    return r;
}

int main(int argc, char **argv)
{
    uint32_t n = 100000;
    const char *out = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc)
            n = (uint32_t)strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "-o") && i + 1 < argc)
            out = argv[++i];
        else {
            fprintf(stderr, "usage: conn_scale [-n PEERS] [-o FILE]\n");
            return 2;
        }
    }
    if (n == 0 || n > EM_CONN_SLOTS_MAX)
        return 2;
    struct wireup w = first_contact(n);
    printf("wire v3 first contact: %u peers established both ways in %.3f s (%.2f frames per "
           "peer); the endpoint's table: %zu bytes, %.1f bytes per peer (heap: %zu)\n",
           n, w.seconds, w.frames_per_peer, w.table_bytes, w.bytes_per_peer, w.heap_bytes_per_peer);
    uint32_t sizes[] = { 256, 4096, 65535, n };
    struct v2mem v[4];
    int ok = w.ok;
    for (int i = 0; i < 4; i++) {
        v[i] = proto_v2(sizes[i]);
        printf("wire v2 core (em_proto_t, default window): %u peers: %.0f bytes per idle peer, "
               "%.0f per active peer (one 64-byte message in flight), %.0f once released "
               "(%llu releases)\n",
               v[i].npeers, v[i].idle_bytes_per_peer, v[i].active_bytes_per_peer,
               v[i].released_bytes_per_peer, (unsigned long long)v[i].releases);
        if (v[i].releases != v[i].npeers - 1 || v[i].released_total > v[i].idle_total) {
            fprintf(stderr, "conn_scale: %u peers: quiet peers kept their active part\n",
                    v[i].npeers);
            ok = 0;
        }
    }
    em_proto_cfg_t dc;
    em_proto_cfg_default(&dc);
    size_t idle = em_engine_peer_bytes(&dc), active = idle + em_engine_peer_bytes_active(&dc);
    const struct v2mem *t = &v[3];
    double mib = 1024.0 * 1024.0;
    printf("per peer (protocol + engine, default window %u): %zu bytes idle, %zu active "
           "(with its send ring); a table of %u peers: %.1f MiB idle, %.1f MiB all active "
           "(heap: %.1f, %.1f)\n",
           dc.window, idle, active, n, (double)idle * n / mib, (double)active * n / mib,
           (double)t->idle_total / mib, (double)t->active_total / mib);
    if (idle > 256) {
        fprintf(stderr, "conn_scale: an idle peer costs %zu bytes, over 256\n", idle);
        ok = 0;
    }
    if (out) {
        FILE *f = fopen(out, "w");
        if (!f) {
            perror(out);
            return 1;
        }
        fprintf(f,
                "{\n  \"first_contact\": {\"peers\": %u, \"seconds\": %.4f, "
                "\"frames_per_peer\": %.3f, \"table_bytes\": %zu, \"bytes_per_peer\": %.1f, "
                "\"heap_bytes_per_peer\": %zu, \"all_established\": %s},\n  \"proto_v2\": [",
                n, w.seconds, w.frames_per_peer, w.table_bytes, w.bytes_per_peer,
                w.heap_bytes_per_peer, w.ok ? "true" : "false");
        for (int i = 0; i < 4; i++)
            fprintf(f,
                    "%s\n    {\"peers\": %u, \"idle_bytes_per_peer\": %.0f, "
                    "\"active_bytes_per_peer\": %.0f, \"released_bytes_per_peer\": %.0f, "
                    "\"releases\": %llu}",
                    i ? "," : "", v[i].npeers, v[i].idle_bytes_per_peer, v[i].active_bytes_per_peer,
                    v[i].released_bytes_per_peer, (unsigned long long)v[i].releases);
        fprintf(f,
                "\n  ],\n  \"per_peer\": {\"window\": %u, \"idle_bytes\": %zu, "
                "\"active_bytes\": %zu, \"table_peers\": %u, \"table_idle_bytes\": %zu, "
                "\"table_active_bytes\": %zu, \"table_idle_heap_bytes\": %zu, "
                "\"table_active_heap_bytes\": %zu}\n}\n",
                dc.window, idle, active, n, idle * n, active * n, t->idle_total, t->active_total);
        fclose(f);
    }
    return ok ? 0 : 1;
}
