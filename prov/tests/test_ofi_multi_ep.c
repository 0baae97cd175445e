/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Several endpoints on one AV (fi_av(3); docs/ofi.md "Addresses",
 * prov/emo_av.c): two domains in one process over the kernel UDP link on
 * loopback, X with four endpoints on its AV and Y with three on its own.
 * The provider's sources are linked in (as ofi_named's), so that the test
 * drives every endpoint's progress and reads each one's peer numbers.
 *
 *   1. insert before bind: Y's AV gets X0..X2 before any endpoint is
 *      bound to it, and each Y endpoint numbers them at its fi_ep_bind;
 *      insert after bind: X's AV gets Y0..Y2 with X0..X2 bound, each
 *      numbering them (X1 met Y2 first as a stranger, so its numbers are
 *      not X0's: the fi_addr_t -> peer mapping is per endpoint); the
 *      stranger's messages come from FI_ADDR_NOTAVAIL, then from its
 *      fi_addr_t; an address inserted again gets its entry back;
 *   2. bind after inserts: X3 binds to X's AV last and numbers its entries;
 *   3. every X endpoint exchanges verified messages (eager and rendezvous)
 *      with every Y endpoint both ways, each seeing the other's fi_addr_t
 *      as the source;
 *   4. remove with several endpoints bound: X removes Y1 while X0 and X2
 *      have receives posted for Y1 alone and X1 a rendezvous send to it:
 *      all three end with FI_ECANCELED; every X endpoint's sends and
 *      directed receives naming the removed fi_addr_t are refused; Y0 and
 *      Y2 still reach all of them; Y1 inserted again takes its index back
 *      and every X endpoint talks to it again;
 *   5. close one endpoint (X2): the AV refuses to close while the others
 *      are bound, they keep exchanging with Y, and a removal and
 *      re-insertion after the close reaches only the endpoints still bound;
 *   6. refusals: a second AV on one endpoint, an AV of another domain, a
 *      numbered endpoint on an AV of named ones (each -FI_EINVAL);
 *   7. numbered endpoints (FI_ETHERMPI_NAMES=ids) share an AV too: every
 *      bound endpoint's number for an entry is its job-wide id; exchanges
 *      both ways verified; a removal cancels a receive posted for the
 *      peer on each bound endpoint.
 *
 * Usage: test_ofi_multi_ep
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_tagged.h>

#include "emo_rdv.h"

#include "ofi_check.h"
#include "ofi_pair.h"
#include "ofi_node.h"

#define BIG   (300u * 1024) /* rendezvous on UDP (eager up to 256 KiB) */
#define SMALL 3000u         /* eager, several frames */
#define NX    4             /* X0..X2 bound before X's inserts, X3 after */
#define NY    3

static struct ofi_node X[NX] = {
    { .name = "X0" }, { .name = "X1" }, { .name = "X2" }, { .name = "X3" }
};
static struct ofi_node Y[NY] = { { .name = "Y0" }, { .name = "Y1" }, { .name = "Y2" } };
static fi_addr_t XY[NY]; /* X's entries of Y's endpoints */
static fi_addr_t YX[NX]; /* Y's entries of X's endpoints */
static struct fi_context ctx[8];
static struct fi_info *INFO;
static unsigned SEED = 1; /* each message its own tag and bytes */

/* every open endpoint (the numbered ones of step 7 too) */
static struct ofi_node *OPEN[16];

static void track(struct ofi_node *n)
{
    for (unsigned i = 0; i < 16; i++)
        if (!OPEN[i]) {
            OPEN[i] = n;
            return;
        }
    CHECK(0, "more than 16 endpoints");
}

static void untrack(struct ofi_node *n)
{
    for (unsigned i = 0; i < 16; i++)
        if (OPEN[i] == n)
            OPEN[i] = NULL;
}

static void progress_all(void *arg)
{
    (void)arg;
    for (unsigned i = 0; i < 16; i++)
        if (OPEN[i] && OPEN[i]->e) /* (X3 is tracked before it opens) */
            (void)emo_ep_progress(OPEN[i]->e);
}

/* one completion of @p n within 10 s (everyone progresses): 1 ok, -1 error (*@p x) */
static int take(struct ofi_node *n, struct fi_cq_tagged_entry *e, fi_addr_t *src,
                struct fi_cq_err_entry *x)
{
    int r = ofi_node_take(n, progress_all, NULL, 10.0, e, src, x);
    CHECK(r != 0, "%s: no completion within 10 s", n->name);
    return r;
}

static void expect_ok(struct ofi_node *n, void *want, fi_addr_t *src)
{
    fi_addr_t s = ofi_node_expect_ok(n, progress_all, NULL, want);
    if (src)
        *src = s;
}

static void expect_canceled(struct ofi_node *n, void *want)
{
    struct fi_cq_tagged_entry e;
    struct fi_cq_err_entry x = { 0 };
    CHECK(take(n, &e, NULL, &x) == -1, "%s: a success where FI_ECANCELED was due", n->name);
    CHECK(x.op_context == want && x.err == FI_ECANCELED,
          "%s: error %d (%s) for %p, not FI_ECANCELED for %p", n->name, x.err, fi_strerror(x.err),
          x.op_context, want);
}

/* fi_tsend, retried while the handshake is under way (-FI_EAGAIN) */
static void send_to(struct ofi_node *n, fi_addr_t to, const void *buf, size_t len, uint64_t tag,
                    void *c)
{
    ofi_node_send(n, progress_all, NULL, to, buf, len, tag, c);
}

/* @p from sends @p len verified bytes to @p to through @p dest; @p to
 * must see them from @p src */
static void exchange(struct ofi_node *from, fi_addr_t dest, struct ofi_node *to, fi_addr_t src,
                     size_t len)
{
    unsigned seed = SEED++;
    uint8_t *s = malloc(len), *r = calloc(1, len);
    CHECK(s && r, "malloc");
    ofi_fill(s, len, seed);
    FI(fi_trecv(to->ep, r, len, NULL, FI_ADDR_UNSPEC, seed, 0, &ctx[0]));
    send_to(from, dest, s, len, seed, &ctx[1]);
    fi_addr_t got = FI_ADDR_UNSPEC;
    expect_ok(to, &ctx[0], &got);
    expect_ok(from, &ctx[1], NULL);
    CHECK(memcmp(s, r, len) == 0, "%s -> %s: %zu bytes differ", from->name, to->name, len);
    CHECK(got == src, "%s: the message from %s came from fi_addr_t %lld, not %lld", to->name,
          from->name, (long long)got, (long long)src);
    free(s);
    free(r);
}

/* every open X endpoint with every Y endpoint of @p ymask, both ways */
static void all_pairs(unsigned ymask)
{
    for (unsigned i = 0; i < NX; i++)
        for (unsigned j = 0; j < NY; j++) {
            if (!X[i].ep || !(ymask & 1u << j))
                continue;
            exchange(&X[i], XY[j], &Y[j], YX[i], SMALL);
            exchange(&Y[j], YX[i], &X[i], XY[j], (i + j) % 2 ? SMALL : BIG);
        }
}

/* every endpoint of @p v (n of them, open ones) has a number for entry @p fa */
static void numbered_by_all(struct ofi_node *v, unsigned n, fi_addr_t fa)
{
    for (unsigned i = 0; i < n; i++)
        if (v[i].ep)
            CHECK(emo_av_peer(v[i].e, fa) != EMO_ID_NONE, "%s has no number for entry %llu",
                  v[i].name, (unsigned long long)fa);
}

static void open_and_insert(void)
{
    ofi_node_open(&X[0], INFO);
    ofi_node_join(&X[1], &X[0], INFO);
    ofi_node_join(&X[2], &X[0], INFO);
    /* Y's AV gets X0..X2 before an endpoint is bound to it */
    FI(emo_fabric_open(INFO->fabric_attr, &Y[0].fab, NULL));
    FI(fi_domain(Y[0].fab, INFO, &Y[0].dom, NULL));
    struct fi_av_attr aa = { .type = FI_AV_TABLE };
    FI(fi_av_open(Y[0].dom, &aa, &Y[0].av, NULL));
    for (unsigned i = 0; i < 3; i++)
        YX[i] = ofi_node_insert(&Y[0], &X[i]);
    ofi_node_ep(&Y[0], INFO);
    ofi_node_join(&Y[1], &Y[0], INFO);
    ofi_node_join(&Y[2], &Y[0], INFO);
    for (unsigned i = 0; i < NX; i++)
        track(&X[i]);
    for (unsigned j = 0; j < NY; j++)
        track(&Y[j]);
    for (unsigned i = 0; i < 3; i++)
        numbered_by_all(Y, NY, YX[i]);
    if (!emo_named(X[0].e))
        return;
    /* Y2 reaches X1 first: a stranger to it */
    exchange(&Y[2], YX[1], &X[1], FI_ADDR_NOTAVAIL, SMALL);
    /* X's AV gets Y0..Y2 with X0..X2 bound */
    for (unsigned j = 0; j < NY; j++)
        XY[j] = ofi_node_insert(&X[0], &Y[j]);
    bool differ = false;
    for (unsigned j = 0; j < NY; j++) {
        numbered_by_all(X, 3, XY[j]);
        differ |= emo_av_peer(X[0].e, XY[j]) != emo_av_peer(X[1].e, XY[j]);
    }
    CHECK(differ, "X1 numbered Y2 first (a stranger), yet its numbers are X0's");
    exchange(&Y[2], YX[1], &X[1], XY[2], SMALL);
    CHECK(ofi_node_insert(&X[2], &Y[1]) == XY[1], "an address inserted again: another entry");
    /* X3 binds after the inserts */
    ofi_node_join(&X[3], &X[0], INFO);
    for (unsigned j = 0; j < NY; j++)
        numbered_by_all(X, NX, XY[j]);
    YX[3] = ofi_node_insert(&Y[1], &X[3]);
}

static void remove_with_several(void)
{
    static uint8_t r0[64], r2[64], big[BIG];
    uint64_t tag = 0xdead0000u + SEED++;
    FI(fi_trecv(X[0].ep, r0, sizeof r0, NULL, XY[1], tag, 0, &ctx[2]));
    FI(fi_trecv(X[2].ep, r2, sizeof r2, NULL, XY[1], tag, 0, &ctx[3]));
    FI(fi_tsend(X[1].ep, big, sizeof big, NULL, XY[1], tag, &ctx[4])); /* waits for CTS */
    fi_addr_t gone = XY[1];
    FI(fi_av_remove(X[0].av, &gone, 1, 0));
    expect_canceled(&X[0], &ctx[2]);
    expect_canceled(&X[2], &ctx[3]);
    expect_canceled(&X[1], &ctx[4]);
    uint8_t b = 0;
    for (unsigned i = 0; i < NX; i++) {
        CHECK(emo_av_peer(X[i].e, gone) == EMO_ID_NONE, "%s still numbers the removed entry",
              X[i].name);
        CHECK(fi_tsend(X[i].ep, &b, 1, NULL, gone, 0, &ctx[5]) == -FI_EINVAL,
              "%s: a send to the removed fi_addr_t was taken", X[i].name);
        CHECK(fi_trecv(X[i].ep, &b, 1, NULL, gone, 0, 0, &ctx[5]) == -FI_EINVAL,
              "%s: a receive from the removed fi_addr_t was posted", X[i].name);
    }
    all_pairs(1u << 0 | 1u << 2); /* Y0 and Y2 still reach every X endpoint */
    XY[1] = ofi_node_insert(&X[3], &Y[1]);
    CHECK(XY[1] == gone, "the freed index %llu did not come back (%llu)", (unsigned long long)gone,
          (unsigned long long)XY[1]);
    numbered_by_all(X, NX, XY[1]);
    all_pairs(1u << 1);
}

static void close_one(void)
{
    untrack(&X[2]);
    ofi_node_close(&X[2]);
    CHECK(fi_close(&X[0].av->fid) == -FI_EBUSY, "the AV closed with 3 endpoints bound");
    all_pairs(7);
    /* the AV's endpoint list lost X2: a removal and insert reach the others */
    fi_addr_t y0 = XY[0];
    FI(fi_av_remove(X[1].av, &y0, 1, 0));
    XY[0] = ofi_node_insert(&X[1], &Y[0]);
    numbered_by_all(X, NX, XY[0]);
    all_pairs(1u << 0);
}

/* numbered endpoints on the next ids of this process (PMI_RANK 0 of 2) */
static void set_numbered(bool on)
{
    static char *names;
    static int npeers;
    if (on) {
        names = emo_params.names;
        npeers = emo_params.npeers;
        emo_params.names = (char *)"ids";
        emo_params.npeers = 64;
    } else {
        emo_params.names = names;
        emo_params.npeers = npeers;
    }
}

static void refusals(void)
{
    struct fid_av *av2;
    struct fi_av_attr aa = { .type = FI_AV_TABLE };
    FI(fi_av_open(X[0].dom, &aa, &av2, NULL));
    CHECK(fi_ep_bind(X[1].ep, &av2->fid, 0) == -FI_EINVAL, "a second AV bound to X1");
    FI(fi_close(&av2->fid));
    struct fid_ep *z;
    FI(fi_endpoint(Y[0].dom, INFO, &z, NULL));
    CHECK(fi_ep_bind(z, &X[0].av->fid, 0) == -FI_EINVAL, "an AV of another domain bound");
    FI(fi_close(&z->fid));
    set_numbered(true);
    FI(fi_endpoint(X[0].dom, INFO, &z, NULL));
    CHECK(!emo_named(container_of_emo(z, struct emo_ep, ep)), "names=ids: a numbered endpoint");
    CHECK(fi_ep_bind(z, &X[0].av->fid, 0) == -FI_EINVAL,
          "a numbered endpoint bound to an AV of named ones");
    FI(fi_close(&z->fid));
    set_numbered(false);
}

static void numbered(void)
{
    set_numbered(true);
    struct ofi_node P[3] = { { .name = "P0" }, { .name = "P1" }, { .name = "P2" } };
    struct ofi_node Q[2] = { { .name = "Q0" }, { .name = "Q1" } };
    ofi_node_open(&P[0], INFO);
    ofi_node_join(&P[1], &P[0], INFO);
    ofi_node_join(&P[2], &P[0], INFO);
    ofi_node_open(&Q[0], INFO);
    ofi_node_join(&Q[1], &Q[0], INFO);
    for (unsigned i = 0; i < 3; i++)
        track(&P[i]);
    track(&Q[0]);
    track(&Q[1]);
    fi_addr_t pq[2], qp[3];
    for (unsigned j = 0; j < 2; j++)
        pq[j] = ofi_node_insert(&P[0], &Q[j]);
    for (unsigned i = 0; i < 3; i++)
        qp[i] = ofi_node_insert(&Q[1], &P[i]);
    for (unsigned i = 0; i < 3; i++)
        for (unsigned j = 0; j < 2; j++) {
            CHECK(!emo_named(P[i].e), "names=ids: numbered");
            CHECK(emo_av_peer(P[i].e, pq[j]) == Q[j].e->self.id,
                  "%s's number for %s is not its id %u", P[i].name, Q[j].name, Q[j].e->self.id);
            exchange(&P[i], pq[j], &Q[j], qp[i], SMALL);
            exchange(&Q[j], qp[i], &P[i], pq[j], BIG);
        }
    static uint8_t r[2][8];
    FI(fi_trecv(P[0].ep, r[0], 8, NULL, pq[1], 7, 0, &ctx[2]));
    FI(fi_trecv(P[2].ep, r[1], 8, NULL, pq[1], 7, 0, &ctx[3]));
    FI(fi_av_remove(P[1].av, &pq[1], 1, 0));
    expect_canceled(&P[0], &ctx[2]);
    expect_canceled(&P[2], &ctx[3]);
    exchange(&P[1], pq[0], &Q[0], qp[1], SMALL); /* the others still talk */
    for (unsigned i = 0; i < 3; i++)
        untrack(&P[i]);
    untrack(&Q[0]);
    untrack(&Q[1]);
    ofi_node_close(&Q[1]);
    ofi_node_close(&Q[0]);
    ofi_node_close(&P[2]);
    ofi_node_close(&P[1]);
    ofi_node_close(&P[0]);
    set_numbered(false);
}

int main(void)
{
    setenv("FI_ETHERMPI_IF_INCLUDE", "127.0.0.1", 0);
    ofi_node_plain_env();
    setenv("PMI_RANK", "0", 1); /* numbered endpoints (step 7): id 0 + 2k for the k-th */
    setenv("PMI_SIZE", "2", 1);
    emo_params_load();
    struct fi_info *hints = fi_allocinfo();
    CHECK(hints, "fi_allocinfo");
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_TAGGED | FI_SOURCE | FI_DIRECTED_RECV;
    hints->domain_attr->av_type = FI_AV_TABLE;
    FI(emo_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &INFO));
    fi_freeinfo(hints);
    open_and_insert();
    if (!emo_named(X[0].e)) {
        printf("SKIP: the UDP link cannot run first contact in this build\n");
        return 77;
    }
    printf("multi_ep: inserts before and after bind, a late bind ok\n");
    all_pairs(7);
    printf("multi_ep: %u x %u endpoints exchange both ways ok\n", NX, NY);
    remove_with_several();
    printf("multi_ep: remove and insert with %u endpoints bound ok\n", NX);
    close_one();
    printf("multi_ep: one endpoint closed, the others work ok\n");
    refusals();
    printf("multi_ep: refusals ok\n");
    for (unsigned i = 0; i < NX; i++)
        untrack(&X[i]);
    for (unsigned j = 0; j < NY; j++)
        untrack(&Y[j]);
    ofi_node_close(&X[3]);
    ofi_node_close(&X[1]);
    ofi_node_close(&X[0]);
    ofi_node_close(&Y[2]);
    ofi_node_close(&Y[1]);
    ofi_node_close(&Y[0]);
    numbered();
    printf("multi_ep: numbered endpoints sharing an AV ok\n");
    fi_freeinfo(INFO);
    printf("multi_ep: all ok\n");
    return 0;
}
