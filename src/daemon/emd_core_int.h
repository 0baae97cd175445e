/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file emd_core_int.h
 * What the data plane's files (emd_core.c, emd_fwd.c, emd_ack.c,
 * emd_peer.c) share with each other and nobody else.  Same threading as
 * emd_core.h.
 */
#ifndef EM_DAEMON_EMD_CORE_INT_H
#define EM_DAEMON_EMD_CORE_INT_H

#include "daemon/emd_core.h"

/* A sender retransmits only what is in its window (at most 64 frames, the
 * protocol's EM_WINDOW_MAX) and our rcv_nxt never passes its snd_nxt: a
 * true duplicate is at most this far behind. */
#define EMD_DUP_REACH 64

/** The attached, not doomed client with endpoint @p ep, or NULL. */
static inline struct emd_client *emd_client_of(emd_core_t *c, uint16_t ep)
{
    uint16_t i = c->ep2cl[ep];
    if (!i)
        return NULL;
    struct emd_client *cl = &c->cl[i - 1];
    return cl->doomed ? NULL : cl;
}

static inline unsigned emd_index_of(const emd_core_t *c, const struct emd_client *cl)
{
    return (unsigned)(cl - c->cl);
}

/* emd_fwd.c */
/** Copy one frame into @p cl's rx ring; 0, or -1 (ring full, or the client doomed). */
int emd_deliver(emd_core_t *c, struct emd_client *cl, const uint8_t *data, uint16_t len,
                const emd_shim_t *from);
/** A bulk (put) frame the daemon carried (its bulk queue would have spared us). */
void emd_count_bulk(emd_core_t *c, struct emd_client *cl, uint8_t cls, uint32_t len);

/* emd_ack.c */
/**
 * Deliver a frame to @p cl, acknowledging it when it is the next in a
 * registered flow and passes that flow's checks.  @p data is daemon memory.
 */
void emd_deliver_acked(emd_core_t *c, struct emd_client *cl, const uint8_t *data, uint16_t len,
                       const emd_shim_t *from);
/** One standalone ACK per flow that advanced in this burst. */
void emd_send_acks(emd_core_t *c);
/** Move @p cl's eager state by the ACK a frame it sends to (@p mac, @p ep)
 *  carries (@p hdr: a private copy). */
void emd_resync_flow(emd_core_t *c, struct emd_client *cl, const uint8_t mac[6], uint16_t ep,
                     const uint8_t *hdr, uint32_t len);

/* emd_peer.c */
/** A hello from the wire (dst EMD_EP_CONTROL). */
void emd_handle_hello(emd_core_t *c, const uint8_t *f, uint16_t len, const uint8_t smac[6]);

#endif
