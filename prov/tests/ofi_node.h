/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file ofi_node.h
 * The node of the endpoint tests that link the provider's sources in and
 * drive each endpoint's progress themselves (test_ofi_avremove,
 * test_ofi_named, test_ofi_multi_ep), written once: an enabled endpoint
 * with its own CQ, either on a fabric, domain and AV of its own
 * (ofi_node_open) or on another node's domain and AV (ofi_node_join:
 * several endpoints sharing one AV); inserting a peer's name, closing,
 * the bytes a test sends, and waiting for completions and for a send to be
 * taken while the test drives progress (ofi_node_take, ofi_node_expect_ok,
 * ofi_node_send; also test_ofi_nodesvc).
 *
 * Include after emo_prov.h (or emo_rdv.h), ofi_check.h and ofi_pair.h.
 */
#ifndef EM_OFI_NODE_H
#define EM_OFI_NODE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
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

/* The process as a plain libfabric program starts it: no launcher
 * variable, no id or table setting, the default names; no linger at close */
static inline void ofi_node_plain_env(void)
{
    static const char *const vars[] = { "FI_ETHERMPI_ID",   "FI_ETHERMPI_NPEERS",   "PMIX_RANK",
                                        "PMI_RANK",         "OMPI_COMM_WORLD_RANK", "SLURM_PROCID",
                                        "FI_ETHERMPI_NAMES" };
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        unsetenv(vars[i]);
    setenv("FI_ETHERMPI_LINGER_MS", "0", 1);
}

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

/** What the waits below call before each read of a CQ: the test's own
 *  progress of the endpoints it drives (NULL: none but the read's). */
typedef void (*ofi_progress_fn)(void *arg);

/** One entry of @p n's CQ within @p secs, calling @p progress(@p arg)
 *  before each read: 1 with *@p e (its source in *@p src when not NULL),
 *  -1 with the error entry in *@p x, 0 when none came in time. */
static inline int ofi_node_take(struct ofi_node *n, ofi_progress_fn progress, void *arg,
                                double secs, struct fi_cq_tagged_entry *e, fi_addr_t *src,
                                struct fi_cq_err_entry *x)
{
    double end = ofi_now_s() + secs;
    do {
        if (progress)
            progress(arg);
        ssize_t r = fi_cq_readfrom(n->cq, e, 1, src);
        if (r == 1)
            return 1;
        if (r == -FI_EAVAIL) {
            memset(x, 0, sizeof *x);
            CHECK(fi_cq_readerr(n->cq, x, 0) == 1, "%s: fi_cq_readerr", n->name);
            return -1;
        }
        CHECK(r == -FI_EAGAIN, "%s: fi_cq_read = %zd", n->name, r);
    } while (ofi_now_s() < end);
    return 0;
}

/** The completion of @p want on @p n, a success, within 10 s (progress as
 *  ofi_node_take).  @return its source. */
static inline fi_addr_t ofi_node_expect_ok(struct ofi_node *n, ofi_progress_fn progress, void *arg,
                                           void *want)
{
    struct fi_cq_tagged_entry e;
    struct fi_cq_err_entry x = { 0 };
    fi_addr_t s = FI_ADDR_UNSPEC;
    int r = ofi_node_take(n, progress, arg, 10.0, &e, &s, &x);
    CHECK(r == 1, "%s: %s", n->name, r < 0 ? fi_strerror(x.err) : "no completion within 10 s");
    CHECK(e.op_context == want, "%s: completion of another operation", n->name);
    return s;
}

/** fi_tsend from @p n, retried while the peer's handshake is under way
 *  (-FI_EAGAIN), progress as ofi_node_take, for 10 s at most. */
static inline void ofi_node_send(struct ofi_node *n, ofi_progress_fn progress, void *arg,
                                 fi_addr_t to, const void *buf, size_t len, uint64_t tag, void *c)
{
    double end = ofi_now_s() + 10;
    ssize_t r;
    while ((r = fi_tsend(n->ep, buf, len, NULL, to, tag, c)) == -FI_EAGAIN) {
        if (progress)
            progress(arg);
        CHECK(ofi_now_s() < end, "%s: a send waited 10 s for its peer's handshake", n->name);
    }
    FI(r);
}

/** @p from sends @p len verified bytes (seed and tag @p seed) to @p to at
 *  @p dest, on contexts @p c[0] (the receive) and @p c[1] (the send), both
 *  completing with success; @return the source @p to saw. */
static inline fi_addr_t ofi_node_exchange(struct ofi_node *from, fi_addr_t dest,
                                          struct ofi_node *to, size_t len, unsigned seed,
                                          ofi_progress_fn progress, void *arg,
                                          struct fi_context c[2])
{
    uint8_t *s = malloc(len), *r = calloc(1, len);
    CHECK(s && r, "malloc");
    ofi_fill(s, len, seed);
    FI(fi_trecv(to->ep, r, len, NULL, FI_ADDR_UNSPEC, seed, 0, &c[0]));
    ofi_node_send(from, progress, arg, dest, s, len, seed, &c[1]);
    fi_addr_t src = ofi_node_expect_ok(to, progress, arg, &c[0]);
    (void)ofi_node_expect_ok(from, progress, arg, &c[1]);
    CHECK(memcmp(s, r, len) == 0, "%s -> %s: %zu bytes differ", from->name, to->name, len);
    free(s);
    free(r);
    return src;
}

#endif
