/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A named endpoint's peer table grows (prov/emo_name.c, engine/contact.h
 * "Sizing"): no FI_ETHERMPI_NPEERS in the environment, five ethermpi
 * endpoints in one process over the kernel UDP link on loopback, each on
 * a domain and AV of its own; the provider's sources are linked in, so the
 * test drives every endpoint's progress and reads its table's size.
 *
 *   1. H starts with EMO_NAMED_PEERS_START entries.  It inserts P0 (its
 *      number 0), then 40 names of endpoints that do not exist (inserted,
 *      never sent to), then PL (number 41, well beyond the start): the
 *      table doubled on the inserts (the endpoint's arrays and the
 *      engine's alike).  H exchanges verified messages, eager and
 *      rendezvous, both ways with P0 and with PL: the peers at both ends
 *      of the table.
 *   2. S fills its starting table with names (numbers 0 .. start-1), then
 *      T, which S never inserted, sends to S: T's handshake makes it a
 *      stranger at number `start`, so the table grows inside progress.
 *      The message arrives (from FI_ADDR_NOTAVAIL); S inserts T, gets the
 *      same number, and answers T through it.
 *   3. FI_THREAD_SAFE: on G's domain one thread inserts 3,000 names (the
 *      table grows from 16 to 4,096 under the domain's lock) while another
 *      exchanges verified messages between G and Q through the CQs, every
 *      progress call under the lock as the provider's own; then R,
 *      inserted last (number 3,001), exchanges with G both ways.
 *
 * Usage: test_ofi_grow
 */
#include <arpa/inet.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_tagged.h>

#include "emo_rdv.h"
#include "engine/contact.h"

#include "ofi_check.h"
#include "ofi_pair.h"
#include "ofi_node.h"

#define BIG     (300u * 1024) /* rendezvous on UDP (eager up to 256 KiB) */
#define SMALL   3000u         /* eager, several frames */
#define FILLERS 40u

static struct ofi_node H = { .name = "H" }, P0 = { .name = "P0" }, PL = { .name = "PL" },
                       S = { .name = "S" }, T = { .name = "T" };
static struct ofi_node *ALL[] = { &H, &P0, &PL, &S, &T };
static struct ofi_node G = { .name = "G" }, Q = { .name = "Q" }, R = { .name = "R" };
static struct ofi_node *SAFE[] = { &G, &Q, &R };
static struct fi_context ctx[4];

static void progress_all(void *arg)
{
    (void)arg;
    for (unsigned i = 0; i < sizeof ALL / sizeof ALL[0]; i++)
        if (ALL[i]->e)
            (void)emo_ep_progress(ALL[i]->e);
}

/* @p from sends @p len verified bytes to @p to; @return the source @p to saw */
static fi_addr_t exchange(struct ofi_node *from, fi_addr_t dest, struct ofi_node *to, size_t len,
                          unsigned seed)
{
    return ofi_node_exchange(from, dest, to, len, seed, progress_all, NULL, ctx);
}

/* Insert into @p n the name of an endpoint that does not exist: @p like's
 * address with receive port @p port and send port @p sport (below 1024:
 * no socket of ours has them) and a nonce of its own.  Nothing is sent to
 * it. */
static void insert_filler(struct ofi_node *n, const struct ofi_node *like, uint16_t port,
                          uint16_t sport)
{
    emo_addr_t a;
    CHECK(emo_addr_decode(like->addr, EMO_ADDR_LEN, &a) == 0 && a.named && a.link.len == 8,
          "%s: not a named kernel UDP address", like->name);
    uint16_t be = htons(port);
    memcpy(a.link.bytes + 4, &be, 2);
    be = htons(sport);
    memcpy(a.link.bytes + 6, &be, 2);
    a.nonce = 0x5eed0000u + port + ((uint64_t)sport << 16);
    uint8_t buf[EMO_ADDR_LEN];
    emo_addr_encode(&a, buf);
    fi_addr_t fa;
    CHECK(fi_av_insert(n->av, buf, 1, &fa, 0, NULL) == 1, "%s: fi_av_insert of filler %u", n->name,
          port);
}

/* @p n's table, the endpoint's and its engine's: one size */
static uint32_t table_of(const struct ofi_node *n)
{
    CHECK(n->e->npeers == em_engine_npeers(n->e->eng), "%s: endpoint %u entries, engine %u",
          n->name, n->e->npeers, em_engine_npeers(n->e->eng));
    return n->e->npeers;
}

static void both_ends(void)
{
    CHECK(table_of(&H) == EMO_NAMED_PEERS_START, "H: the table starts at %u entries, not %u",
          table_of(&H), EMO_NAMED_PEERS_START);
    fi_addr_t h_p0 = ofi_node_insert(&H, &P0);
    for (uint16_t i = 0; i < FILLERS; i++)
        insert_filler(&H, &P0, (uint16_t)(100 + i), 7);
    fi_addr_t h_pl = ofi_node_insert(&H, &PL);
    uint32_t n0 = emo_av_peer(H.e, h_p0), nl = emo_av_peer(H.e, h_pl);
    CHECK(n0 == 0 && nl == FILLERS + 1, "H numbers P0 %u and PL %u, not 0 and %u", n0, nl,
          FILLERS + 1);
    CHECK(table_of(&H) > nl, "H: table of %u entries holds number %u", table_of(&H), nl);
    CHECK(table_of(&H) == 64, "H: 42 peers from 16 should double to 64 entries, not %u",
          table_of(&H));
    fi_addr_t p0_h = ofi_node_insert(&P0, &H), pl_h = ofi_node_insert(&PL, &H);
    CHECK(exchange(&H, h_p0, &P0, SMALL, 1) == p0_h, "P0: message from H not from its fi_addr_t");
    CHECK(exchange(&H, h_pl, &PL, SMALL, 2) == pl_h, "PL: message from H not from its fi_addr_t");
    CHECK(exchange(&P0, p0_h, &H, BIG, 3) == h_p0, "H: message from P0 not from its fi_addr_t");
    CHECK(exchange(&PL, pl_h, &H, BIG, 4) == h_pl, "H: message from PL not from its fi_addr_t");
    CHECK(exchange(&H, h_pl, &PL, BIG, 5) == pl_h, "PL: rendezvous from H");
    printf("ok: H's table grew to %u entries on inserts; P0 (0) and PL (%u) exchange both ways\n",
           table_of(&H), nl);
}

static void stranger_grows(void)
{
    for (uint16_t i = 0; i < EMO_NAMED_PEERS_START; i++)
        insert_filler(&S, &T, (uint16_t)(300 + i), 7);
    CHECK(table_of(&S) == EMO_NAMED_PEERS_START, "S: %u names should fill the table, not grow it",
          EMO_NAMED_PEERS_START);
    fi_addr_t t_s = ofi_node_insert(&T, &S);
    /* S never inserted T: its message comes from no AV entry */
    CHECK(exchange(&T, t_s, &S, SMALL, 6) == FI_ADDR_NOTAVAIL,
          "S: a stranger's message should come from FI_ADDR_NOTAVAIL");
    CHECK(table_of(&S) == 2 * EMO_NAMED_PEERS_START,
          "S: the stranger's handshake should double the table, %u entries", table_of(&S));
    fi_addr_t s_t = ofi_node_insert(&S, &T);
    CHECK(emo_av_peer(S.e, s_t) == EMO_NAMED_PEERS_START, "S numbers T %u, not %u",
          emo_av_peer(S.e, s_t), EMO_NAMED_PEERS_START);
    CHECK(exchange(&T, t_s, &S, BIG, 7) == s_t, "S: T's message not from its fi_addr_t");
    CHECK(exchange(&S, s_t, &T, SMALL, 8) == t_s, "T: S's answer not from its fi_addr_t");
    printf("ok: stranger T took number %u; S's table grew to %u entries in progress\n",
           EMO_NAMED_PEERS_START, table_of(&S));
}

/* progress of the FI_THREAD_SAFE nodes, each under its domain's lock (as
 * the provider's own calls take it) */
static void progress_safe(void *arg)
{
    (void)arg;
    for (unsigned i = 0; i < sizeof SAFE / sizeof SAFE[0]; i++)
        if (SAFE[i]->e) {
            emo_lock(SAFE[i]->e->dom);
            (void)emo_ep_progress(SAFE[i]->e);
            emo_unlock(SAFE[i]->e->dom);
        }
}

#define SAFE_FILLERS 3000u
static atomic_bool inserted;

static void *inserter(void *arg)
{
    (void)arg;
    for (unsigned i = 0; i < SAFE_FILLERS; i++)
        insert_filler(&G, &Q, (uint16_t)(1 + i % 1000), (uint16_t)(1 + i / 1000));
    atomic_store(&inserted, true);
    return NULL;
}

/* @p from sends @p len verified bytes to @p to, progress under the lock */
static void exchange_safe(struct ofi_node *from, fi_addr_t dest, struct ofi_node *to, size_t len,
                          unsigned seed, struct fi_context *c)
{
    uint8_t *s = malloc(len), *r = calloc(1, len);
    CHECK(s && r, "malloc");
    ofi_fill(s, len, seed);
    FI(fi_trecv(to->ep, r, len, NULL, FI_ADDR_UNSPEC, seed, 0, &c[0]));
    ofi_node_send(from, progress_safe, NULL, dest, s, len, seed, &c[1]);
    (void)ofi_node_expect_ok(to, progress_safe, NULL, &c[0]);
    (void)ofi_node_expect_ok(from, progress_safe, NULL, &c[1]);
    CHECK(memcmp(s, r, len) == 0, "%s -> %s: %zu bytes differ", from->name, to->name, len);
    free(s);
    free(r);
}

static void threads_grow(struct fi_info *info)
{
    enum fi_threading was = info->domain_attr->threading;
    info->domain_attr->threading = FI_THREAD_SAFE;
    for (unsigned i = 0; i < sizeof SAFE / sizeof SAFE[0]; i++)
        ofi_node_open(SAFE[i], info);
    info->domain_attr->threading = was;
    fi_addr_t g_q = ofi_node_insert(&G, &Q), q_g = ofi_node_insert(&Q, &G);
    static struct fi_context c[2];
    exchange_safe(&G, g_q, &Q, SMALL, 20, c); /* the pair's handshake first */
    pthread_t th;
    CHECK(pthread_create(&th, NULL, inserter, NULL) == 0, "pthread_create");
    unsigned rounds = 0;
    for (; rounds < 1000000 && (!atomic_load(&inserted) || rounds < 4); rounds++) {
        exchange_safe(&G, g_q, &Q, SMALL, 21 + rounds, c);
        exchange_safe(&Q, q_g, &G, SMALL, 22 + rounds, c);
    }
    pthread_join(th, NULL);
    emo_lock(G.e->dom);
    uint32_t table = table_of(&G);
    emo_unlock(G.e->dom);
    CHECK(table == 4096, "G: %u peers from 16 should double to 4096 entries, not %u",
          SAFE_FILLERS + 1, table);
    fi_addr_t g_r = ofi_node_insert(&G, &R), r_g = ofi_node_insert(&R, &G);
    CHECK(emo_av_peer(G.e, g_r) == SAFE_FILLERS + 1, "G numbers R %u, not %u",
          emo_av_peer(G.e, g_r), SAFE_FILLERS + 1);
    exchange_safe(&G, g_r, &R, BIG, 30, c);
    exchange_safe(&R, r_g, &G, BIG, 31, c);
    exchange_safe(&G, g_q, &Q, BIG, 32, c);
    printf("ok: %u exchanges while another thread grew G's table to %u; R (%u) both ways\n",
           2 * rounds, table, SAFE_FILLERS + 1);
    for (unsigned i = sizeof SAFE / sizeof SAFE[0]; i-- > 0;)
        ofi_node_close(SAFE[i]);
}

int main(void)
{
    setenv("FI_ETHERMPI_IF_INCLUDE", "127.0.0.1", 0);
    /* the table's size comes from its peers, not from a setting */
    ofi_node_plain_env();
    emo_params_load();
    struct fi_info *hints = fi_allocinfo(), *info = NULL;
    CHECK(hints, "fi_allocinfo");
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_TAGGED | FI_SOURCE;
    hints->domain_attr->av_type = FI_AV_TABLE;
    FI(emo_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info));
    fi_freeinfo(hints);
    for (unsigned i = 0; i < sizeof ALL / sizeof ALL[0]; i++)
        ofi_node_open(ALL[i], info);
    if (!emo_named(H.e)) {
        printf("SKIP: the UDP link cannot run first contact in this build\n");
        return 77;
    }
    both_ends();
    stranger_grows();
    for (unsigned i = sizeof ALL / sizeof ALL[0]; i-- > 0;)
        ofi_node_close(ALL[i]);
    threads_grow(info);
    fi_freeinfo(info);
    printf("ofi_grow: ok\n");
    return 0;
}
