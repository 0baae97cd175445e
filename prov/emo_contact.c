/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file emo_contact.c
 * First contact: a message from a peer that is not in this endpoint's AV.
 *
 * The engine accepts frames only from peers whose link address and pair
 * key it has.  The BTL looks an unknown sender up in the launcher's modex;
 * a provider has no modex, and Open MPI's mtl ofi inserts a peer into the
 * AV only when it first sends to it, so a rank may receive from a peer it
 * never inserted.  Therefore a sender puts its own address blob after the
 * header of every message (EAGER or RTS) to a peer that has not yet shown
 * that it knows us (emo_wire.h, EMO_F_HELLO), and the receiver, asked by
 * the engine to resolve an unknown sender, builds the peer from the frame.
 * One-sided operations carry no blob (puts, READ, the engine's atomic
 * requests): the first of them to such a peer goes behind a HELLO message
 * (emo_announce), which the engine delivers first; Open MPI 5's btl/ofi,
 * under osc/rdma, inserts a peer only when it first targets it, so a
 * window's owner is read or updated by peers it never inserted.
 *
 * Rules (each refusal counted in emo_ep_stats_t, the frame then dropped
 * unacknowledged, as from any unknown peer):
 *  - only the first fragment of an EAGER, RTS or HELLO message carries the blob,
 *    decoded by emo_addr_decode (bounded, versioned, reserved bytes zero);
 *    its endpoint id is the frame's source id, not ours (fc_bad_blob);
 *    its frame size is not below ours (fc_bad_blob);
 *  - the frame's pair key is the one both secrets give: the sender had our
 *    address (from the launcher), an off-path forger does not (fc_bad_key);
 *  - the blob's link address is no peer's we have (an AV entry, an earlier
 *    first contact, ourselves) (fc_addr_in_use): the link learns a new
 *    peer's address before it can judge the frame's source, and one
 *    address is one peer to it, so a forged blob naming a live peer's
 *    address would take that peer's frames away from it;
 *  - the frame's link source address is the blob's link address (the
 *    link's rx_peer binding, as for every peer) (fc_bad_source);
 *  - at most FI_ETHERMPI_FIRST_CONTACT peers are made this way (default
 *    FI_ETHERMPI_NPEERS, 0 = never) (fc_over_budget).
 * A peer made this way is not in the application's AV: FI_SOURCE reports
 * FI_ADDR_NOTAVAIL for it until the application inserts the same address
 * (FI_AV_TABLE promises consecutive indices in insertion order, so the
 * provider must not take one); that insert gets an ordinary entry, and an
 * insert of another endpoint under the same id is refused (-FI_EADDRINUSE).
 *
 * Threading: inside em_engine_progress() (the resolve callback).
 */
#include "emo_rdv.h"

#include <stdlib.h>
#include <string.h>

#include "proto/wire.h"

/* the first-contact blob of protocol frame @p f from @p peer: @return 0
 * with *@p a and the frame's pair key in *@p key; 1: the frame carries no
 * blob; -1: it carries one that is malformed or names another endpoint */
static int hello_in_frame(const void *f, size_t flen, uint32_t peer, emo_addr_t *a, uint64_t *key)
{
    em_hdr_t h;
    if (em_hdr_decode(f, flen, &h) != EM_DEC_OK || h.type != EM_PT_DATA || h.frag_no != 0 ||
        h.index != peer || (h.tag != EMO_T_EAGER && h.tag != EMO_T_RTS && h.tag != EMO_T_HELLO) ||
        h.len < EMO_HDR_LEN + EMO_ADDR_LEN)
        return 1;
    const uint8_t *m = (const uint8_t *)f + em_hdr_len(h.type); /* h.len bytes, checked */
    struct emo_wire_hdr w;
    memcpy(&w, m, sizeof w);
    if (w.magic != EMO_MAGIC || w.version != EMO_VERSION || w.type != h.tag ||
        !(w.flags & EMO_F_HELLO))
        return 1;
    if (emo_addr_decode(m + EMO_HDR_LEN, EMO_ADDR_LEN, a) != 0 || a->id != peer)
        return -1;
    *key = h.job_key;
    return 0;
}

static int same_link(const em_link_addr_t *a, const em_link_addr_t *b)
{
    return a->len == b->len && memcmp(a->bytes, b->bytes, a->len) == 0;
}

/* Is @p l the link address of a peer of @p ep (or its own)?  A scan: first
 * contact is rare and bounded by its budget, the AV by the application. */
static int address_in_use(const struct emo_ep *ep, const em_link_addr_t *l)
{
    if (same_link(l, &ep->self.link))
        return 1;
    for (size_t i = 0; ep->av && i < ep->av->n; i++)
        if (ep->av->tab[i].used && same_link(l, &ep->av->tab[i].a.link))
            return 1;
    for (size_t i = 0; i < ep->fc_n; i++)
        if (same_link(l, &ep->fc[i].link))
            return 1;
    return 0;
}

const emo_addr_t *emo_contact_get(const struct emo_ep *ep, uint32_t id)
{
    if (id >= ep->npeers || ep->peer_set[id] != EMO_PEER_CONTACT)
        return NULL;
    for (size_t i = 0; i < ep->fc_n; i++)
        if (ep->fc[i].id == id)
            return &ep->fc[i];
    return NULL;
}

int emo_contact(struct emo_ep *ep, uint32_t peer)
{
    if (emo_named(ep))
        return -1; /* strangers come by handshake (emo_name.c), never by blob */
    size_t flen = 0;
    const void *f = em_engine_rx_frame(ep->eng, &flen);
    emo_addr_t a;
    uint64_t key = 0;
    int rc = f ? hello_in_frame(f, flen, peer, &a, &key) : 1;
    if (rc > 0)
        return -1; /* an ordinary frame from an unknown peer */
    if (rc < 0 || a.id == ep->self.id || a.frame_max < ep->link->mtu) {
        ep->st.fc_bad_blob++;
        return -1;
    }
    if (key != emo_peer_key(ep, &a)) { /* (of the pair's incarnation) */
        ep->st.fc_bad_key++;
        return -1;
    }
    if (address_in_use(ep, &a.link)) {
        ep->st.fc_addr_in_use++;
        return -1;
    }
    size_t budget = emo_params.first_contact >= 0 ? (size_t)emo_params.first_contact : ep->npeers;
    if (ep->fc_n >= budget) {
        ep->st.fc_over_budget++;
        FI_WARN_SPARSE(&emo_prov, FI_LOG_AV,
                       "endpoint %u is not in the AV and the first-"
                       "contact budget (FI_ETHERMPI_FIRST_CONTACT=%zu) is spent: its messages "
                       "wait until the application inserts its address\n",
                       peer, budget);
        return -1;
    }
    if (ep->fc_n == ep->fc_cap) {
        size_t cap = ep->fc_cap ? ep->fc_cap * 2 : 16;
        emo_addr_t *t = realloc(ep->fc, cap * sizeof *t);
        if (!t)
            return -1;
        ep->fc = t;
        ep->fc_cap = cap;
    }
    /* the link learns the address first: only then can it say whether the
     * frame came from there (a refused address stays in the link's table
     * but no keys are set, so nothing is accepted from or sent to it) */
    if (em_engine_set_peer(ep->eng, peer, &a.link) != 0) {
        ep->st.fc_bad_blob++;
        return -1;
    }
    if (em_engine_rx_source(ep->eng) != peer) {
        ep->st.fc_bad_source++;
        return -1;
    }
    if (em_engine_set_peer_keys(ep->eng, peer, key, ep->self.isn, a.isn) != 0 ||
        em_engine_set_peer_index(ep->eng, peer, ep->self.id) != 0) { /* as emo_ep_set_peer */
        ep->st.fc_bad_blob++;
        return -1;
    }
    ep->fc[ep->fc_n++] = a;
    ep->peer_set[peer] = EMO_PEER_CONTACT;
    ep->peer_heard[peer] = 1; /* it has our address: no blob in our answers */
    ep->st.fc_peers++;
    FI_INFO(&emo_prov, FI_LOG_AV,
            "endpoint %u reached us first (not in the AV): accepted "
            "from the address its message carries\n",
            peer);
    return 0;
}

void emo_contact_forget(struct emo_ep *ep, uint32_t id)
{
    for (size_t i = 0; i < ep->fc_n; i++)
        if (ep->fc[i].id == id) {
            ep->fc[i] = ep->fc[--ep->fc_n];
            return;
        }
}

int emo_announce(struct emo_ep *ep, uint32_t peer)
{
    if (peer == ep->self.id || peer >= ep->npeers || ep->peer_heard[peer])
        return 0;
    size_t n = EMO_HDR_LEN + EMO_ADDR_LEN;
    emo_op_t *c = emo_op_new(ep, EMO_OP_CTRL, n);
    if (!c)
        return -FI_EAGAIN;
    c->peer = peer;
    emo_hdr_t h = { .type = EMO_T_HELLO, .flags = EMO_F_HELLO };
    emo_hdr_encode(&h, c->msg);
    emo_addr_encode(&ep->self, c->msg + EMO_HDR_LEN);
    int rc = em_engine_send(ep->eng, &c->pop, peer, EMO_T_HELLO, c->msg, n, c);
    if (rc) {
        emo_op_free(c);
        return emo_errno(rc);
    }
    /* what we send after it arrives after it: no blob needed any more
     * (its acknowledgement, or a message from the peer, makes this 1) */
    ep->peer_heard[peer] = EMO_HEARD_ANNOUNCED;
    return 0;
}
