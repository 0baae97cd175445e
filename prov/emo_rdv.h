/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file emo_rdv.h
 * Receive side, rendezvous and operation bookkeeping shared by emo_rdv.c,
 * emo_op.c and emo_data.c (see emo_rdv.c).
 */
#ifndef EMO_RDV_H
#define EMO_RDV_H

#include "emo_prov.h"

/* emo_op.c */
emo_op_t *emo_op_new(struct emo_ep *ep, int kind, size_t msg_len);
void emo_op_free(emo_op_t *op);
/** Free the ops kept for reuse (endpoint close). */
void emo_op_cache_drain(struct emo_ep *ep);

/* emo_rdv.c */
/** Give @p op a cookie (index + generation).  @return 0 or a negative fi_errno. */
int emo_cookie_add(struct emo_ep *ep, emo_op_t *op);
/** The operation @p cookie names, if it belongs to @p peer and is of @p kind;
 *  else NULL, counted in bad_cookie (a stale or forged CTS/FIN). */
emo_op_t *emo_cookie_get(struct emo_ep *ep, uint32_t cookie, uint32_t peer, int kind);
void emo_cookie_del(struct emo_ep *ep, emo_op_t *op);
fi_addr_t emo_src(struct emo_ep *ep, uint32_t peer);
/** A send finished with @p status (0 or a negative fi_errno). */
void emo_complete_tx(emo_op_t *op, int status);
/** An eager send whose bytes the provider now holds completes at once
 *  (its counter, and its CQ entry if it wants one); its end at the peer's
 *  ACK then writes nothing (emo_op_t::done_early). */
void emo_complete_early(emo_op_t *op);
/** One put (or the hold) of a rendezvous send, an RMA write or an answered
 *  read is done. */
void emo_put_done(emo_op_t *op, int status);
/** Queue the puts of @p len bytes from @p buf to offset @p off of @p peer's
 *  region @p rh, in EMO_PUT_CHUNK pieces, for @p op (RTS, WRITE, RSERVE).
 *  op->puts_left ends as 1 + the puts queued: the caller drops that hold
 *  with emo_put_done(op, 0) after what must follow the puts.
 *  @return 0, or the first error (op->status; no put queued after it). */
int emo_put_chunks(struct emo_ep *ep, emo_op_t *op, uint32_t peer, const em_region_handle_t *rh,
                   uint64_t off, const void *buf, size_t len);
/** The puts emo_put_chunks() queued for @p op read their bytes from @p buf
 *  from now on (a copy of the buffer they were queued from: an inject
 *  write, sent before it is copied; em_proto_op_rebase).  Call before any
 *  put can complete: in the call that queued them. */
void emo_put_chunks_rebase(emo_op_t *op, const void *buf);
/** Send a header-only control message (CTS, FIN, READ, RDONE, WDATA). */
int emo_send_ctrl(struct emo_ep *ep, uint32_t peer, const emo_hdr_t *h, emo_op_t *parent);
/** The peer id of @p fa, its engine state set up.  @return 0 or -FI_*. */
int emo_dest_peer(struct emo_ep *ep, fi_addr_t fa, uint32_t *peer);
/** RMA messages from @p peer (emo_rma.c). */
void emo_on_read(struct emo_ep *ep, uint32_t peer, const emo_hdr_t *h);
void emo_on_rdone(struct emo_ep *ep, uint32_t peer, const emo_hdr_t *h);
void emo_on_wdata(struct emo_ep *ep, uint32_t peer, const emo_hdr_t *h);
/** An FI_MR_PROV_KEY key (emo_rma.c): (region id << 48) | a 48-bit region key. */
#define EMO_RKEY_ID_SHIFT 48
static inline void emo_rkey_split(uint64_t rkey, uint32_t *id, uint64_t *key)
{
    *id = (uint32_t)(rkey >> EMO_RKEY_ID_SHIFT);
    *key = rkey & EM_REGION_KEY48_MASK;
}
/** The engine completed @p op, a get or an atomic (EMO_OP_GET,
 *  EMO_OP_ATOMIC), with @p status (a negative fi_errno or 0; its answer
 *  came, or the peer failed): its completion, then it is freed. */
void emo_answered(emo_op_t *op, int status);
/** An answered read (EMO_OP_RSERVE) no longer reads its registration. */
void emo_serve_end(emo_op_t *op);
/** Hand message (@p type EAGER or RTS) to receive @p rx. */
void emo_deliver(struct emo_ep *ep, const emo_rx_t *rx, uint32_t peer, uint8_t type, uint8_t wflags,
                 uint64_t tag, uint64_t data, uint64_t len, uint32_t s_cookie, const void *payload);
/** Place a message in multi-receive buffer @p m (emo_rdv.c, "multi-receive
 *  buffers").  @return true when that released and freed @p m. */
bool emo_multi_deliver(struct emo_ep *ep, emo_rx_t *m, uint32_t peer, uint8_t type, uint8_t wflags,
                       uint64_t tag, uint64_t data, uint64_t len, uint32_t s_cookie,
                       const void *payload);
/** Endpoint close: @p op no longer holds its multi-receive buffer (freed
 *  when it was the last holder of a released one). */
void emo_multi_forget(emo_op_t *op);
/** A message (engine tag @p etag) from @p peer: decode and dispatch. */
void emo_handle_msg(struct emo_ep *ep, uint32_t peer, uint8_t etag, const void *data, size_t len);
void emo_unexp_release(struct emo_ep *ep, emo_unexp_t *u);

/** The endpoint waits for @p peer (a directed receive, a rendezvous step):
 *  watch its liveness (src/proto/live.c).  @return true when a watch is
 *  held (drop it with emo_unwatch). */
bool emo_watch(struct emo_ep *ep, uint32_t peer);
/** Drop the watch *@p watched says is held (and clear it). */
void emo_unwatch(struct emo_ep *ep, uint32_t peer, bool *watched);
/** Posted receives for @p peer alone end with @p status: FI_EIO (the peer
 *  failed) or FI_ECANCELED (it was removed from the AV) (emo_data.c). */
void emo_fail_posted_from(struct emo_ep *ep, uint32_t peer, int status);

#endif
