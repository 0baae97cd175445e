/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Named endpoints (docs/ofi.md "Addresses", prov/emo_name.c): three
 * ethermpi endpoints in one process over the kernel UDP link on loopback,
 * with no FI_ETHERMPI_ID and no launcher variable: each is named by its
 * address and numbers its peers itself through the first-contact
 * handshake.  The provider's sources are linked in (as ofi_avremove's), so
 * that the test drives each endpoint's progress on its own.
 *
 *   1. the names are version 3 addresses, distinct;
 *   2. a small send to a peer whose handshake is not done does not
 *      complete when copied (it completes at the peer's ACK);
 *      A and B insert each other, in different orders around other
 *      inserts (their numbers for each other differ), and exchange
 *      verified messages both ways, eager and rendezvous;
 *   3. C sends to A, which never inserted C: the message arrives from
 *      FI_ADDR_NOTAVAIL; A inserts C and C's next message comes from that
 *      fi_addr_t; A answers C through it;
 *   4. inserting an address again gives the same fi_addr_t;
 *   5. A removes B (the removed fi_addr_t is refused) and inserts it again:
 *      a fresh exchange both ways arrives verified (B takes A's new
 *      handshake once A's old pair is quiet);
 *   6. an address inserted twice before fi_ep_bind: removing one entry
 *      leaves the other reaching the peer;
 *   7. with FI_ETHERMPI_NAMES=ids the same link gives numbered addresses.
 *
 * Usage: test_ofi_named
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/fi_tagged.h>

#include "emo_rdv.h"
#include "engine/contact.h"

#include "ofi_check.h"
#include "ofi_pair.h"
#include "ofi_node.h"

#define BIG   (300u * 1024) /* rendezvous on UDP (eager up to 256 KiB) */
#define SMALL 3000u         /* eager, several frames */

static struct ofi_node A = { .name = "A" }, B = { .name = "B" }, C = { .name = "C" };
static struct ofi_node *ALL[] = { &A, &B, &C };
static struct fi_context ctx[8];
static struct fi_info *INFO;

static void progress_all(void *arg)
{
    (void)arg;
    for (unsigned i = 0; i < 3; i++)
        if (ALL[i]->e)
            (void)emo_ep_progress(ALL[i]->e);
}

/* The completion of @p want on @p n, success, within 10 s (everyone progresses). */
static void expect_ok(struct ofi_node *n, void *want, fi_addr_t *src)
{
    fi_addr_t s = ofi_node_expect_ok(n, progress_all, NULL, want);
    if (src)
        *src = s;
}

/* @p from sends @p len verified bytes to @p to; @return the source @p to saw */
static fi_addr_t exchange(struct ofi_node *from, fi_addr_t dest, struct ofi_node *to, size_t len,
                          unsigned seed)
{
    return ofi_node_exchange(from, dest, to, len, seed, progress_all, NULL, ctx);
}

static void names_and_pairs(void)
{
    for (unsigned i = 0; i < 3; i++) {
        CHECK(ALL[i]->addr[1] == EMO_ADDR_VERSION_NAMED, "%s: not a named address (version %u)",
              ALL[i]->name, ALL[i]->addr[1]);
        CHECK(emo_named(ALL[i]->e), "%s: not named", ALL[i]->name);
    }
    CHECK(memcmp(A.addr, B.addr, EMO_ADDR_LEN) && memcmp(B.addr, C.addr, EMO_ADDR_LEN),
          "two endpoints share a name");
    /* A numbers C before B; B numbers A first */
    fi_addr_t a_c = ofi_node_insert(&A, &C), a_b = ofi_node_insert(&A, &B);
    fi_addr_t b_a = ofi_node_insert(&B, &A);
    CHECK(a_c == 0 && a_b == 1 && b_a == 0, "fi_addr_t are not in insertion order");
    CHECK(emo_av_peer(A.e, a_b) != emo_av_peer(B.e, b_a),
          "A's number for B and B's for A should differ here");
    /* a small send waits behind its handshake: it may not complete when
     * copied (an fi_av_remove then would cancel what never left) */
    uint8_t x[8] = "behind";
    FI(fi_tsend(A.ep, x, sizeof x, NULL, a_c, 99, &ctx[3]));
    struct fi_cq_tagged_entry ce;
    CHECK(fi_cq_read(A.cq, &ce, 1) == -FI_EAGAIN,
          "A: a send to a peer whose handshake is not done completed at once");
    uint8_t y[8];
    FI(fi_trecv(C.ep, y, sizeof y, NULL, FI_ADDR_UNSPEC, 99, 0, &ctx[4]));
    expect_ok(&A, &ctx[3], NULL);
    expect_ok(&C, &ctx[4], NULL);
    CHECK(memcmp(x, y, sizeof x) == 0, "C: the held send's bytes");
    CHECK(exchange(&A, a_b, &B, SMALL, 1) == b_a, "B: message from A not from its fi_addr_t");
    CHECK(exchange(&B, b_a, &A, BIG, 2) == a_b, "A: message from B not from its fi_addr_t");
    CHECK(exchange(&A, a_b, &B, BIG, 3) == b_a, "B: rendezvous from A: wrong source");
    CHECK(ofi_node_insert(&A, &B) == a_b, "the same address inserted again got another fi_addr_t");
}

static void stranger(void)
{
    /* C sends to A: A has C's address (step 1 inserted it), so take a
     * fresh endpoint D in C's place that A has never seen */
    struct ofi_node D = { .name = "D" };
    ofi_node_open(&D, INFO);
    ALL[2] = &D;
    fi_addr_t d_a = ofi_node_insert(&D, &A);
    CHECK(exchange(&D, d_a, &A, SMALL, 4) == FI_ADDR_NOTAVAIL,
          "A: a message from a peer it never inserted should come from FI_ADDR_NOTAVAIL");
    fi_addr_t a_d = ofi_node_insert(&A, &D);
    CHECK(exchange(&D, d_a, &A, 100, 5) == a_d, "A: once inserted, the stranger's fi_addr_t");
    CHECK(exchange(&A, a_d, &D, SMALL, 6) == 0, "D: A's answer from A's fi_addr_t");
    const em_conn_stats_t *cs = em_engine_contact_stats(A.e->eng);
    CHECK(cs && cs->hs_rx[2] >= 1, "A: no CONFIRM taken from the stranger");
    ofi_node_close(&D);
    ALL[2] = &C;
}

static void remove_and_insert(void)
{
    fi_addr_t a_b = 1, b_a = 0;
    FI(fi_av_remove(A.av, &a_b, 1, 0));
    uint8_t x = 0;
    CHECK(fi_tsend(A.ep, &x, 1, NULL, a_b, 0, &ctx[2]) == -FI_EINVAL,
          "a send to a removed fi_addr_t is refused");
    fi_addr_t again = ofi_node_insert(&A, &B);
    CHECK(again == a_b, "the freed fi_addr_t comes back (%llu)", (unsigned long long)again);
    CHECK(exchange(&A, again, &B, SMALL, 7) == b_a, "B: after A's re-insert, from A");
    CHECK(exchange(&B, b_a, &A, BIG, 8) == again, "A: after its re-insert, from B");
    const em_conn_stats_t *cs = em_engine_contact_stats(B.e->eng);
    CHECK(cs && cs->hs_rebinds == 1, "B: A's new handshake is a rebind (%llu)",
          cs ? (unsigned long long)cs->hs_rebinds : 0ull);
}

/* an address inserted twice before fi_ep_bind: both entries name one peer,
 * and removing one leaves the other working (the number is not freed) */
static void twice_before_bind(void)
{
    struct ofi_node E = { .name = "E" };
    FI(emo_fabric_open(INFO->fabric_attr, &E.fab, NULL));
    FI(fi_domain(E.fab, INFO, &E.dom, NULL));
    struct fi_av_attr aa = { .type = FI_AV_TABLE };
    FI(fi_av_open(E.dom, &aa, &E.av, NULL));
    fi_addr_t b1 = ofi_node_insert(&E, &B), b2 = ofi_node_insert(&E, &B);
    CHECK(b1 != b2, "two inserts before the bind are two entries");
    ofi_node_ep(&E, INFO); /* the endpoint, bound to the AV now */
    ALL[2] = &E;
    FI(fi_av_remove(E.av, &b2, 1, 0));
    fi_addr_t c = ofi_node_insert(&E, &C); /* may take b2's entry, never b1's peer */
    CHECK(c != b1, "a new address took the entry still in use");
    CHECK(emo_av_peer(E.e, c) != emo_av_peer(E.e, b1),
          "a new address got the number of a peer still inserted");
    ofi_node_insert(&B, &E);
    (void)exchange(&E, b1, &B, 100, 9); /* b1 still reaches B */
    ofi_node_close(&E);
    ALL[2] = &C;
}

static void numbered_still_there(void)
{
    /* (the settings are read once per process: set them as FI_ETHERMPI_NAMES=ids
     * and FI_ETHERMPI_ID=5 would) */
    char *was = emo_params.names;
    emo_params.names = (char *)"ids";
    emo_params.id = 5;
    struct ofi_node N = { .name = "N" };
    ofi_node_open(&N, INFO);
    CHECK(N.addr[1] == EMO_ADDR_VERSION && !emo_named(N.e), "names=ids: a numbered address");
    fi_addr_t fa = FI_ADDR_NOTAVAIL;
    CHECK(fi_av_insert(N.av, A.addr, 1, &fa, 0, NULL) == 0,
          "a numbered endpoint refuses a named address");
    ofi_node_close(&N);
    emo_params.names = was;
    emo_params.id = -1;
}

int main(void)
{
    setenv("FI_ETHERMPI_IF_INCLUDE", "127.0.0.1", 0);
    ofi_node_plain_env();
    emo_params_load();
    struct fi_info *hints = fi_allocinfo();
    CHECK(hints, "fi_allocinfo");
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_TAGGED | FI_SOURCE;
    hints->domain_attr->av_type = FI_AV_TABLE;
    FI(emo_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &INFO));
    fi_freeinfo(hints);
    for (unsigned i = 0; i < 3; i++)
        ofi_node_open(ALL[i], INFO);
    if (!emo_named(A.e)) {
        printf("SKIP: the UDP link cannot run first contact in this build\n");
        return 77;
    }
    names_and_pairs();
    printf("named: pairs ok\n");
    stranger();
    printf("named: stranger ok\n");
    remove_and_insert();
    printf("named: remove and insert ok\n");
    twice_before_bind();
    printf("named: an address inserted twice before the bind ok\n");
    for (unsigned i = 0; i < 3; i++)
        ofi_node_close(ALL[i]);
    numbered_still_there();
    fi_freeinfo(INFO);
    printf("named: all ok\n");
    return 0;
}
