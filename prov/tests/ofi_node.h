/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file ofi_node.h
 * The node of the endpoint tests that link the provider's sources in and
 * drive each endpoint's progress themselves (test_ofi_avremove,
 * test_ofi_named, test_ofi_multi_ep), written once: an enabled endpoint
 * with its own CQ, either on a fabric, domain and AV of its own
 * (ofi_node_open) or on another node's domain and AV (ofi_node_join:
 * several endpoints sharing one AV); inserting a peer's name, closing, and
 * the bytes a test sends.
 *
 * Include after emo_prov.h (or emo_rdv.h), ofi_check.h and ofi_pair.h.
 */
#ifndef EM_OFI_NODE_H
#define EM_OFI_NODE_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

struct ofi_node {
    const char *name;
    struct fid_fabric *fab;
    struct fid_domain *dom;
    struct fid_cq *cq;
    struct fid_av *av;
    struct fid_ep *ep;
    struct emo_ep *e; /**< the provider's endpoint behind ep */
    uint8_t addr[EMO_ADDR_LEN];
    bool joined; /**< fab, dom and av are another node's (ofi_node_join) */
};

/* @p n's CQ and endpoint on its dom and av, bound, enabled, named */
static inline void ofi_node_ep(struct ofi_node *n, struct fi_info *info)
{
    struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_TAGGED, .size = 64 };
    FI(fi_cq_open(n->dom, &ca, &n->cq, NULL));
    FI(fi_endpoint(n->dom, info, &n->ep, NULL));
    FI(fi_ep_bind(n->ep, &n->av->fid, 0));
    FI(fi_ep_bind(n->ep, &n->cq->fid, FI_TRANSMIT | FI_RECV));
    FI(fi_enable(n->ep));
    size_t len = sizeof n->addr;
    FI(fi_getname(&n->ep->fid, n->addr, &len));
    n->e = container_of_emo(n->ep, struct emo_ep, ep);
}

/** Open @p n on a fabric, domain and FI_AV_TABLE AV of its own.  Any failure ends the test. */
static inline void ofi_node_open(struct ofi_node *n, struct fi_info *info)
{
    FI(emo_fabric_open(info->fabric_attr, &n->fab, NULL));
    FI(fi_domain(n->fab, info, &n->dom, NULL));
    struct fi_av_attr aa = { .type = FI_AV_TABLE };
    FI(fi_av_open(n->dom, &aa, &n->av, NULL));
    n->joined = false;
    ofi_node_ep(n, info);
}

/** Open @p n on @p on's domain, bound to @p on's AV (closed before @p on). */
static inline void ofi_node_join(struct ofi_node *n, const struct ofi_node *on,
                                 struct fi_info *info)
{
    n->fab = on->fab;
    n->dom = on->dom;
    n->av = on->av;
    n->joined = true;
    ofi_node_ep(n, info);
}

/** Close @p n's endpoint and CQ, and what it owns (its AV's other
 *  endpoints closed first); @p n is empty again, its name kept. */
static inline void ofi_node_close(struct ofi_node *n)
{
    FI(fi_close(&n->ep->fid));
    FI(fi_close(&n->cq->fid));
    if (!n->joined) {
        FI(fi_close(&n->av->fid));
        FI(fi_close(&n->dom->fid));
        FI(fi_close(&n->fab->fid));
    }
    const char *name = n->name;
    memset(n, 0, sizeof *n);
    n->name = name;
}

/** Insert @p peer's name into @p n's AV.  @return its fi_addr_t. */
static inline fi_addr_t ofi_node_insert(struct ofi_node *n, const struct ofi_node *peer)
{
    fi_addr_t fa = FI_ADDR_NOTAVAIL;
    CHECK(fi_av_insert(n->av, peer->addr, 1, &fa, 0, NULL) == 1, "%s: fi_av_insert of %s", n->name,
          peer->name);
    return fa;
}

/** The @p len bytes of message @p seed (two seeds that differ modulo 256
 *  differ in every byte). */
static inline void ofi_fill(uint8_t *b, size_t len, unsigned seed)
{
    for (size_t i = 0; i < len; i++)
        b[i] = (uint8_t)(seed * 131 + i * 7);
}

#endif
