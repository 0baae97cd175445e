/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file proto_cap.h
 * One protocol endpoint driven by hand (test_proto, test_hostile): its
 * callbacks (CAP_OPS, user context a struct cap) record what the protocol
 * does, every frame it emits decoded, and the test feeds it frames it
 * crafts as if a peer sent them (cap_frame).  Each test creates the
 * endpoint with its own configuration.  Header-only, for cmocka programs
 * (the callbacks assert); include after cmocka.h.
 */
#ifndef EM_TESTS_PROTO_CAP_H
#define EM_TESTS_PROTO_CAP_H

#include <stdint.h>
#include <string.h>

#include "proto/proto.h"

#define CAP_MAXF 512 /* frames one test may see emitted */

struct cap_out {
    em_hdr_t h;
    uint8_t payload[2048];
    uint32_t peer;
};

struct cap {
    struct cap_out f[CAP_MAXF]; /* emitted, in order */
    unsigned nf;
    int refuse; /* emit returns -EAGAIN while > 0 */
    unsigned nrecv;
    uint32_t last_peer; /* of the last delivery */
    uint8_t last_tag;
    size_t last_len; /* of the last delivery or put */
    uint8_t last_data[8192];
    const void *last_ptr;
    unsigned ncomplete;
    int last_status;
    void *last_ctx;
    unsigned nfailed;
    unsigned nput;
    em_put_target_t last_put;
    int put_rc; /* what put returns */
    unsigned nresolve;
    /** ops.resolve's answer (the test's, e.g. setting the peer first);
     *  NULL: EM_SRC_UNKNOWN, the frame is judged as it came. */
    uint32_t (*on_resolve)(struct cap *c, uint32_t peer);
    /* ops.place (CAP_OPS_PLACE): the buffer it gives (NULL: none) and the
     * skip it asks for; what it was asked, and how place_end ended */
    uint8_t *place_buf;
    size_t place_skip;
    unsigned nplace, nplace_end;
    size_t place_head_len, place_msg_len;
    int place_status;
};

static int cap_emit(void *u, uint32_t peer, const void *hdr, size_t hlen, const void *pl,
                    size_t plen)
{
    struct cap *c = u;
    uint8_t buf[4096];
    if (c->refuse > 0) {
        c->refuse--;
        return -EM_EAGAIN;
    }
    assert_true(c->nf < CAP_MAXF && hlen + plen <= sizeof buf);
    memcpy(buf, hdr, hlen);
    if (plen)
        memcpy(buf + hlen, pl, plen);
    struct cap_out *o = &c->f[c->nf++];
    assert_int_equal(em_hdr_decode(buf, hlen + plen, &o->h), EM_DEC_OK);
    memcpy(o->payload, buf + em_hdr_len(o->h.type), o->h.len);
    o->peer = peer;
    return 0;
}

static void cap_recv(void *u, uint32_t peer, uint8_t tag, const void *d, size_t len)
{
    struct cap *c = u;
    c->nrecv++;
    c->last_peer = peer;
    c->last_tag = tag;
    c->last_len = len;
    c->last_ptr = d;
    if (len <= sizeof c->last_data)
        memcpy(c->last_data, d, len);
}

static int cap_put(void *u, uint32_t peer, const em_put_target_t *t, const void *d, size_t len)
{
    struct cap *c = u;
    c->nput++;
    c->last_put = *t;
    c->last_len = len;
    if (len <= sizeof c->last_data)
        memcpy(c->last_data, d, len);
    return c->put_rc;
}

static void cap_complete(void *u, void *ctx, int status)
{
    struct cap *c = u;
    c->ncomplete++;
    c->last_status = status;
    c->last_ctx = ctx;
}

static void cap_failed(void *u, uint32_t peer) { ((struct cap *)u)->nfailed++; }

static uint32_t cap_resolve(void *u, uint32_t peer)
{
    struct cap *c = u;
    c->nresolve++;
    return c->on_resolve ? c->on_resolve(c, peer) : EM_SRC_UNKNOWN;
}

static const em_proto_ops_t CAP_OPS = {
    .emit = cap_emit,
    .recv = cap_recv,
    .put = cap_put,
    .complete = cap_complete,
    .peer_failed = cap_failed,
    .resolve = cap_resolve,
};

static void *cap_place(void *u, uint32_t peer, uint8_t tag, const void *head, size_t head_len,
                       size_t msg_len, size_t *skip, void **ctx)
{
    struct cap *c = u;
    c->nplace++;
    c->place_head_len = head_len;
    c->place_msg_len = msg_len;
    *skip = c->place_skip;
    *ctx = c;
    return c->place_buf;
}

static void cap_place_end(void *u, uint32_t peer, void *ctx, int status)
{
    struct cap *c = u;
    assert_ptr_equal(ctx, c);
    c->nplace_end++;
    c->place_status = status;
}

/** CAP_OPS with ops.place: the test sets place_buf / place_skip. */
static const em_proto_ops_t CAP_OPS_PLACE = {
    .emit = cap_emit,
    .recv = cap_recv,
    .put = cap_put,
    .complete = cap_complete,
    .peer_failed = cap_failed,
    .resolve = cap_resolve,
    .place = cap_place,
    .place_end = cap_place_end,
};

/** The last frame emitted (the test must have seen one). */
static inline const struct cap_out *cap_last(const struct cap *c)
{
    assert_true(c->nf > 0);
    return &c->f[c->nf - 1];
}

/** Frame @p h in wire form into @p b (@p size bytes): job key @p key and
 *  index 1 (from our peer 1) where @p h leaves them 0, then h.len payload bytes
 *  from @p payload (NULL: 'z's).  @return the frame's length. */
static inline size_t cap_frame(em_hdr_t h, uint64_t key, const void *payload, uint8_t *b,
                               size_t size)
{
    if (!h.job_key)
        h.job_key = key;
    if (!h.index)
        h.index = 1;
    assert_true(size >= (size_t)EM_HDR_LEN + EM_PUT_EXT_LEN + h.len);
    size_t n = em_hdr_encode(&h, b);
    if (payload)
        memcpy(b + n, payload, h.len);
    else
        memset(b + n, 'z', h.len);
    return n + h.len;
}

#endif
