/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * First contact in the engine (engine/contact.h): engines over link_sim
 * that know each other only by name (link address, endpoint 0, nonce),
 * each numbering its peers in its own order, so every frame's index is
 * the receiver's and never agreed out of band.  Sends to a peer whose
 * handshake is under way are taken and wait behind it.  Verified messages both
 * ways on a clean and on a lossy, duplicating, reordering wire; strangers
 * answered through the numbers their handshakes gave; a restarted peer
 * (new nonce, same address) that waits until the old one is quiet; a peer
 * removed and inserted again; a handshake frame naming another node's
 * address from a third node's; a peer that never answers; a peer that
 * does not progress for longer than the handshake's default back-off
 * (12 tries, ~3 s) and still connects, since the handshake waits as long
 * as the protocol waits for a silent peer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "engine/contact.h"
#include "engine/engine.h"
#include "link/link_sim.h"
#include "proto/hs_wire.h"

#define NODES  4
#define NPEERS 2  /* the engine's table at the start: it grows (contact.h "Sizing") */
#define NMSG   12 /* per ordered pair */
#define TAG    9

static em_sim_t *SIM;

struct node {
    unsigned me;
    em_engine_t *e;
    unsigned incarnation;
    uint32_t peer_of[NODES]; /* this node's number for node i (UINT32_MAX: none yet) */
    unsigned got[NODES];     /* verified messages, by sending node */
    unsigned bad;
    unsigned contacts, again, failed;
    uint32_t table; /* the owner's table size (on_grow) */
    unsigned grows;
    char last_fail[128];
};
static struct node N[NODES];
static unsigned done_ops, failed_ops;
static bool asleep[NODES];  /* not progressed (a rank busy elsewhere) */
static uint64_t pc_rto_max; /* em_proto_cfg_t rto_max_ns for make() (0: default) */
static uint32_t pc_retries; /* ... max_retries (0: default) */

static size_t size_of(unsigned seq) { return (size_t[]){ 4, 100, 1500, 3000, 9000 }[seq % 5]; }

static void fill(uint8_t *b, unsigned from, unsigned to, unsigned seq)
{
    size_t len = size_of(seq);
    for (size_t i = 0; i < len; i++)
        b[i] = (uint8_t)(from * 31 + to * 17 + seq * 7 + i);
    b[0] = (uint8_t)from;
}

/* which node is @p peer of node @p n, by the address its name holds */
static int node_of(struct node *n, uint32_t peer)
{
    em_conn_name_t nm;
    if (em_engine_contact_name(n->e, peer, &nm) != 0 || nm.addr_len != 1)
        return -1;
    return nm.addr[0] < NODES ? nm.addr[0] : -1;
}

static void on_recv(void *u, uint32_t peer, uint8_t tag, const void *d, size_t len)
{
    struct node *n = u;
    int from = node_of(n, peer);
    if (from < 0 || tag != TAG || len < 1 || ((const uint8_t *)d)[0] != from) {
        n->bad++;
        return;
    }
    unsigned seq = n->got[from]++;
    uint8_t *want = malloc(size_of(seq));
    fill(want, (unsigned)from, n->me, seq);
    if (len != size_of(seq) || memcmp(d, want, len) != 0)
        n->bad++;
    free(want);
    n->peer_of[from] = peer; /* a stranger's number: answer it there */
}

static void on_complete(void *u, void *ctx, int status)
{
    (void)u, (void)ctx;
    if (status == 0)
        done_ops++;
    else
        failed_ops++;
}

static void on_contact(void *u, uint32_t peer, bool again)
{
    struct node *n = u;
    n->contacts++;
    n->again += again;
    int from = node_of(n, peer);
    if (from >= 0)
        n->peer_of[from] = peer;
}

static void on_failed(void *u, uint32_t peer)
{
    struct node *n = u;
    n->failed++;
    const char *why = em_engine_fail_reason(n->e, peer);
    snprintf(n->last_fail, sizeof n->last_fail, "%s", why ? why : "");
}

static int admit_only = -1; /* admit: the one node whose name strangers may have (-1: any) */

static bool on_admit(void *u, const em_conn_name_t *nm)
{
    (void)u;
    return admit_only < 0 || (nm->addr_len == 1 && nm->addr[0] == (uint8_t)admit_only);
}

static bool refuse_grow; /* on_grow: no memory */

/* the owner's tables grow with the engine's: here, only counted */
static int on_grow(void *u, uint32_t npeers)
{
    struct node *n = u;
    if (refuse_grow)
        return -1;
    assert_true(npeers > n->table);
    n->table = npeers;
    n->grows++;
    return 0;
}

static const em_engine_ops_t OPS = { .recv = on_recv,
                                     .complete = on_complete,
                                     .peer_failed = on_failed,
                                     .contact = on_contact,
                                     .admit = on_admit,
                                     .grow = on_grow };

static void make(unsigned i, bool strangers, uint32_t quiet_ms)
{
    struct node *n = &N[i];
    em_engine_destroy(n->e);
    unsigned inc = n->incarnation;
    memset(n, 0, sizeof *n);
    n->me = i;
    n->incarnation = inc;
    for (unsigned k = 0; k < NODES; k++)
        n->peer_of[k] = UINT32_MAX;
    em_proto_cfg_t pc;
    em_proto_cfg_default(&pc);
    pc.self = EM_PROTO_SELF_OUTSIDE;
    pc.npeers = NPEERS;
    n->table = NPEERS;
    pc.frame_max = 1500;
    pc.max_msg = 64 * 1024;
    pc.peers_need_set = 1;
    pc.bind_source = 1;
    if (pc_rto_max)
        pc.rto_max_ns = pc_rto_max;
    if (pc_retries)
        pc.max_retries = pc_retries;
    int err;
    n->e = em_engine_create(em_sim_link(SIM, i), &pc, &OPS, n, &err);
    assert_non_null(n->e);
    em_engine_contact_cfg_t cc = { .ep = 0,
                                   .nonce = 0x1000u + i * 16u + n->incarnation,
                                   .accept_strangers = strangers,
                                   .quiet_ms = quiet_ms };
    for (unsigned k = 0; k < sizeof cc.secret; k++)
        cc.secret[k] = (uint8_t)(i * 13 + k + n->incarnation);
    assert_int_equal(em_engine_contact_open(n->e, &cc), 0);
    assert_true(em_engine_contact_on(n->e));
}

static void world(double loss, double dup, double reorder)
{
    em_sim_cfg_t sc;
    em_sim_cfg_default(&sc);
    sc.mtu = 1500;
    sc.loss = loss;
    sc.dup = dup;
    sc.reorder = reorder;
    sc.reorder_ns = 200000;
    sc.seed = 11;
    SIM = em_sim_create(NODES, &sc);
    assert_non_null(SIM);
    memset(N, 0, sizeof N);
    done_ops = failed_ops = 0;
}

static void end_world(void)
{
    for (unsigned i = 0; i < NODES; i++) {
        em_engine_destroy(N[i].e);
        N[i].e = NULL;
    }
    em_sim_destroy(SIM);
    SIM = NULL;
    memset(asleep, 0, sizeof asleep);
    pc_rto_max = 0;
    pc_retries = 0;
    admit_only = -1;
    refuse_grow = false;
}

static void round_(void)
{
    em_sim_set_now(SIM, em_now_ns());
    for (unsigned i = 0; i < NODES; i++)
        if (N[i].e && !asleep[i])
            (void)em_engine_progress(N[i].e);
}

static void spin_ms(unsigned ms)
{
    uint64_t until = em_now_ns() + (uint64_t)ms * 1000000u;
    while (em_now_ns() < until)
        round_();
}

/* node @p at learns node @p who's name (its nonce too, unless @p no_nonce) */
static uint32_t insert(unsigned at, unsigned who, bool no_nonce)
{
    em_conn_name_t nm = { .addr_len = 1,
                          .addr = { (uint8_t)who },
                          .ep = 0,
                          .nonce = no_nonce ? 0 : 0x1000u + who * 16u + N[who].incarnation };
    uint32_t p;
    assert_int_equal(em_engine_contact_insert(N[at].e, &nm, &p), 0);
    assert_true(p < N[at].table); /* the owner grew before the number came */
    assert_int_equal(em_engine_npeers(N[at].e), N[at].table);
    N[at].peer_of[who] = p;
    return p;
}

static uint8_t *BUF[NODES][NODES][NMSG];
static em_proto_op_t OP[NODES][NODES][NMSG];

static void send_one(unsigned x, unsigned y, unsigned seq)
{
    uint8_t *b = BUF[x][y][seq] = malloc(size_of(seq));
    fill(b, x, y, seq);
    int rc;
    for (long i = 0; (rc = em_engine_send(N[x].e, &OP[x][y][seq], N[x].peer_of[y], TAG, b,
                                          size_of(seq), NULL)) == -EM_EAGAIN;
         i++) {
        assert_true(i < 2000000L);
        round_();
    }
    assert_int_equal(rc, 0);
}

static void wait_done(unsigned want)
{
    for (long i = 0; done_ops < want; i++) {
        assert_true(i < 5000000L);
        round_();
    }
}

static void free_bufs(void)
{
    for (unsigned x = 0; x < NODES; x++)
        for (unsigned y = 0; y < NODES; y++)
            for (unsigned s = 0; s < NMSG; s++) {
                free(BUF[x][y][s]);
                BUF[x][y][s] = NULL;
            }
}

/* every node inserts every other, each in its own order (so the numbers
 * differ), and all send to all at once (simultaneous first contact) */
static void all_to_all(double loss, double dup, double reorder)
{
    world(loss, dup, reorder);
    for (unsigned i = 0; i < NODES; i++)
        make(i, false, 0);
    for (unsigned x = 0; x < NODES; x++)
        for (unsigned k = 1; k < NODES; k++)
            insert(x, (x + NODES - k) % NODES, k == 2); /* a name without nonce too */
    for (unsigned seq = 0; seq < NMSG; seq++)
        for (unsigned x = 0; x < NODES; x++)
            for (unsigned y = 0; y < NODES; y++)
                if (x != y)
                    send_one(x, y, seq);
    wait_done(NODES * (NODES - 1) * NMSG);
    for (unsigned x = 0; x < NODES; x++) {
        assert_int_equal(N[x].bad, 0);
        assert_int_equal(N[x].failed, 0);
        assert_int_equal(N[x].contacts, NODES - 1);
        assert_int_equal(N[x].again, 0);
        for (unsigned y = 0; y < NODES; y++)
            assert_int_equal(N[x].got[y], x == y ? 0 : NMSG);
        const em_proto_stats_t *st = em_engine_proto_stats(N[x].e);
        /* a peer's frames that came before its ACCEPT (on a wire that
         * reorders and loses) are dropped and come again: those only */
        assert_int_equal(st->drop_source, em_engine_stats(N[x].e)->hs_early);
        if (reorder == 0 && loss == 0)
            assert_int_equal(st->drop_source, 0);
        assert_int_equal(st->drop_job_key, 0);
        assert_int_equal(em_engine_stats(N[x].e)->hs_bad_source, 0);
        char line[1024];
        em_engine_contact_stats_format(N[x].e, line, sizeof line);
        assert_non_null(strstr(line, "hs_bad_source 0"));
    }
    /* the numbers are each side's own: node 0 calls node 1 2, node 1 calls node 0 0 */
    assert_int_equal(N[0].peer_of[1], 2);
    assert_int_equal(N[1].peer_of[0], 0);
    if (loss > 0)
        assert_true(em_sim_stats(SIM)->lost > 0);
    free_bufs();
    end_world();
}

static void clean_wire(void **st)
{
    (void)st;
    all_to_all(0, 0, 0);
}

static void bad_wire(void **st)
{
    (void)st;
    all_to_all(0.15, 0.1, 0.2);
}

/* node 0 inserts nobody and takes strangers; it answers each through the
 * number its handshake gave */
static void strangers(void **st)
{
    (void)st;
    world(0.1, 0.05, 0.1);
    make(0, true, 0);
    for (unsigned i = 1; i < NODES; i++) {
        make(i, false, 0);
        insert(i, 0, true); /* address and endpoint only */
    }
    for (unsigned i = 1; i < NODES; i++)
        send_one(i, 0, 0);
    wait_done(NODES - 1);
    for (long k = 0; N[0].got[1] + N[0].got[2] + N[0].got[3] < NODES - 1; k++) {
        assert_true(k < 2000000L);
        round_();
    }
    assert_int_equal(N[0].contacts, NODES - 1);
    /* three strangers, a table of 2 at the start: it grew inside progress */
    assert_true(N[0].grows >= 1);
    assert_int_equal(em_engine_npeers(N[0].e), N[0].table);
    for (unsigned i = 1; i < NODES; i++) {
        assert_true(N[0].peer_of[i] < N[0].table);
        send_one(0, i, 0);
    }
    wait_done(2 * (NODES - 1));
    for (long k = 0; N[1].got[0] + N[2].got[0] + N[3].got[0] < NODES - 1; k++) {
        assert_true(k < 2000000L);
        round_();
    }
    for (unsigned i = 0; i < NODES; i++)
        assert_int_equal(N[i].bad, 0);
    /* a node that does not take strangers refuses one */
    make(3, false, 0);
    insert(2, 3, false);
    N[2].got[3] = 0;
    uint32_t p23 = N[2].peer_of[3];
    em_proto_op_t op;
    uint8_t b[4] = { 2 };
    assert_int_equal(em_engine_send(N[2].e, &op, p23, TAG, b, 4, NULL), 0); /* queued */
    spin_ms(50);
    assert_true(em_engine_contact_stats(N[3].e)->hs_stranger >= 1);
    assert_int_equal(N[3].contacts, 0);
    /* one that takes strangers but whose owner admits node 1's name only
     * (the BTLs: names their job published): node 2 is still refused,
     * node 1 binds and its message arrives */
    admit_only = 1;
    make(3, true, 0);
    spin_ms(1000); /* node 2's handshake retries */
    assert_true(em_engine_contact_stats(N[3].e)->hs_stranger >= 1);
    assert_int_equal(N[3].contacts, 0);
    insert(1, 3, false);
    send_one(1, 3, 0);
    for (long k = 0; N[3].got[1] < 1; k++) {
        assert_true(k < 2000000L);
        round_();
    }
    assert_int_equal(N[3].contacts, 1);
    assert_int_equal(N[3].bad, 0);
    free_bufs();
    end_world();
}

/* node 1 restarts (new nonce, same address): node 0 keeps the old one
 * while it is heard, then fails it and takes the new one (a new peer: node
 * 0 takes strangers, else its owner would insert the new name) */
static void restart(void **st)
{
    (void)st;
    world(0, 0, 0);
    make(0, true, 100);
    make(1, false, 0);
    insert(0, 1, true); /* no nonce: the first proven binds, a later one is a restart */
    insert(1, 0, false);
    send_one(0, 1, 0);
    send_one(1, 0, 0);
    wait_done(2);
    uint32_t old = N[0].peer_of[1];
    N[1].incarnation++;
    make(1, false, 0); /* the old engine is gone: it falls quiet */
    insert(1, 0, false);
    send_one(1, 0, 1); /* waits until node 0 takes the new incarnation */
    wait_done(3);
    for (long k = 0; N[0].got[1] < 2; k++) {
        assert_true(k < 2000000L);
        round_();
    }
    assert_int_equal(N[0].failed, 1);
    assert_non_null(strstr(N[0].last_fail, "restarted"));
    /* a stranger's slot is freed at its restart: the new one may take it */
    (void)old;
    assert_int_equal(em_engine_contact_state(N[0].e, N[0].peer_of[1]), EM_CONN_ESTABLISHED);
    assert_int_equal(em_engine_contact_stats(N[0].e)->hs_restarts, 1);
    assert_true(em_engine_contact_stats(N[0].e)->hs_replace_refused >= 1); /* while heard */
    assert_int_equal(N[0].bad + N[1].bad, 0);
    send_one(0, 1, 2); /* the new incarnation answers through that number */
    wait_done(4);
    free_bufs();
    end_world();
}

/* node 0 removes node 1 and inserts it again: node 1 is told (again) */
static void remove_and_insert(void **st)
{
    (void)st;
    world(0, 0, 0);
    make(0, false, 0);
    make(1, false, 50);
    insert(0, 1, false);
    insert(1, 0, false);
    send_one(0, 1, 0);
    wait_done(1);
    uint32_t p = N[0].peer_of[1];
    assert_int_equal(em_engine_contact_remove(N[0].e, p), 0);
    em_proto_op_t op;
    uint8_t b[4] = { 0 };
    assert_int_equal(em_engine_send(N[0].e, &op, p, TAG, b, 4, NULL), -EM_EINVAL);
    insert(0, 1, false);
    send_one(0, 1, 1);
    wait_done(2);
    for (long k = 0; N[1].got[0] < 2; k++) {
        assert_true(k < 2000000L);
        round_();
    }
    assert_int_equal(N[1].again, 1);
    assert_int_equal(N[1].bad, 0);
    assert_true(em_engine_contact_stats(N[1].e)->hs_replace_refused >= 1); /* while heard */
    assert_int_equal(em_engine_contact_stats(N[1].e)->hs_rebinds, 1);
    send_one(1, 0, 2); /* node 1's side took the new parameters too */
    wait_done(3);
    free_bufs();
    end_world();
}

/* node 2 sends node 0 an INIT naming node 1's address: dropped by source */
static void claimed_address(void **st)
{
    (void)st;
    world(0, 0, 0);
    make(0, true, 0);
    make(1, false, 0);
    make(2, false, 0);
    em_hs_t h = { .type = EM_HS_INIT,
                  .src_ep = 0,
                  .dst_ep = 0,
                  .src_nonce = 77,
                  .src_index = 1,
                  .dst_index = EM_HS_NO_INDEX,
                  .isn = 5,
                  .token = 9,
                  .addr_len = 1,
                  .addr = { 1 } };
    em_link_t *l2 = em_sim_link(SIM, 2);
    em_pkt_t *pkt = em_link_tx_alloc(l2);
    assert_non_null(pkt);
    pkt->len = (uint32_t)em_hs_encode(&h, pkt->data);
    assert_int_equal(l2->ops->tx_to(l2, pkt, &em_sim_link(SIM, 0)->local), 0);
    spin_ms(5);
    assert_int_equal(em_engine_stats(N[0].e)->hs_bad_source, 1);
    assert_int_equal(em_engine_contact_stats(N[0].e)->hs_tx[1], 0); /* no CHALLENGE */
    end_world();
}

/* a name nobody answers: the sends wait, then the peer fails with the reason */
static void no_answer(void **st)
{
    (void)st;
    world(0, 0, 0);
    pc_rto_max = 100000000ull; /* a protocol that gives a silent peer 0.4 s: */
    pc_retries = 4;            /* the handshake keeps its own 12 tries */
    make(0, false, 0);
    em_sim_set_dead(SIM, 3, true);
    em_conn_name_t nm = { .addr_len = 1, .addr = { 3 }, .ep = 0 };
    uint32_t p;
    assert_int_equal(em_engine_contact_insert(N[0].e, &nm, &p), 0);
    em_proto_op_t op;
    uint8_t b[4] = { 0 };
    /* taken and queued behind the handshake, which gives up: it ends failed */
    assert_int_equal(em_engine_send(N[0].e, &op, p, TAG, b, 4, NULL), 0);
    uint64_t until = em_now_ns() + 10000000000ull; /* 12 tries take about 3 s */
    while (failed_ops == 0) {
        assert_true(em_now_ns() < until);
        round_();
    }
    assert_int_equal(done_ops, 0);
    assert_int_equal(em_engine_send(N[0].e, &op, p, TAG, b, 4, NULL), -EM_EPEERFAIL);
    assert_int_equal(N[0].failed, 1);
    assert_non_null(strstr(N[0].last_fail, "no answer to first contact"));
    assert_int_equal(em_engine_contact_stats(N[0].e)->hs_gave_up, 1);
    end_world();
}

/* a peer that does not progress for 4 s (past the handshake's own 12
 * tries, ~3 s) while a send to it waits: it is not failed (the protocol
 * gives a silent peer 10 s here), and the message arrives once it runs */
static void late_peer(void **st)
{
    (void)st;
    world(0, 0, 0);
    pc_rto_max = 1000000000ull;
    pc_retries = 10;
    make(0, false, 0);
    make(1, false, 0);
    insert(0, 1, false);
    insert(1, 0, false);
    asleep[1] = true;
    send_one(0, 1, 0);
    spin_ms(4000);
    assert_int_equal(N[0].failed, 0);
    assert_int_equal(done_ops + failed_ops, 0);
    asleep[1] = false;
    wait_done(1);
    assert_int_equal(N[1].got[0], 1);
    assert_int_equal(N[1].bad, 0);
    assert_int_equal(N[0].failed + N[1].failed, 0);
    assert_int_equal(em_engine_contact_stats(N[0].e)->hs_gave_up, 0);
    free_bufs();
    end_world();
}

/* the owner has no memory to grow: an insert beyond the table says
 * -EM_ENOMEM, a stranger beyond it is forgotten again (hs_no_memory); both
 * work once memory comes back */
static void growth_refused(void **st)
{
    (void)st;
    world(0, 0, 0);
    for (unsigned i = 0; i < NODES; i++)
        make(i, i == 0, 0);
    insert(0, 1, false);
    insert(0, 2, false); /* the table of 2 is full */
    refuse_grow = true;
    em_conn_name_t nm = { .addr_len = 1, .addr = { 3 }, .nonce = 0x1000u + 3 * 16u };
    uint32_t p;
    assert_int_equal(em_engine_contact_insert(N[0].e, &nm, &p), -EM_ENOMEM);
    assert_int_equal(em_engine_npeers(N[0].e), NPEERS);
    /* node 3 sends to node 0, which has no room for the stranger */
    insert(3, 0, false);
    assert_int_equal(em_engine_contact_connect(N[3].e, N[3].peer_of[0]), 0);
    for (long k = 0; em_engine_stats(N[0].e)->hs_no_memory == 0; k++) {
        assert_true(k < 2000000L);
        round_();
    }
    assert_int_equal(N[0].contacts, 0);
    assert_int_equal(em_engine_npeers(N[0].e), NPEERS);
    char line[1024];
    em_engine_contact_stats_format(N[0].e, line, sizeof line);
    assert_non_null(strstr(line, "hs_no_memory 1"));
    /* memory again: the insert grows the table (the protocol's grew
     * already for the stranger; the engine's size follows the owner's) */
    refuse_grow = false;
    insert(0, 3, false);
    assert_int_equal(em_engine_npeers(N[0].e), 2 * NPEERS);
    insert(1, 0, false);
    send_one(0, 1, 0);
    wait_done(1);
    free_bufs();
    end_world();
}

/* a link without tx_to / rx_from, or an engine numbered otherwise, refuses */
static void refusals(void **st)
{
    (void)st;
    world(0, 0, 0);
    em_proto_cfg_t pc;
    em_proto_cfg_default(&pc);
    pc.self = 0;
    pc.npeers = NPEERS;
    pc.peers_need_set = 1;
    int err;
    em_engine_t *e = em_engine_create(em_sim_link(SIM, 0), &pc, &OPS, &N[0], &err);
    assert_non_null(e);
    em_engine_contact_cfg_t cc = { .nonce = 1 };
    /* self is not EM_PROTO_SELF_OUTSIDE */
    assert_int_equal(em_engine_contact_open(e, &cc), -EM_EINVAL);
    em_engine_destroy(e);
    pc.self = EM_PROTO_SELF_OUTSIDE;
    e = em_engine_create(em_sim_link(SIM, 0), &pc, &OPS, &N[0], &err);
    cc.nonce = 0;
    assert_int_equal(em_engine_contact_open(e, &cc), -EM_EINVAL); /* nonce 0 */
    assert_false(em_engine_contact_on(e));
    em_engine_destroy(e);
    end_world();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(clean_wire),        cmocka_unit_test(bad_wire),
        cmocka_unit_test(strangers),         cmocka_unit_test(restart),
        cmocka_unit_test(remove_and_insert), cmocka_unit_test(claimed_address),
        cmocka_unit_test(no_answer),         cmocka_unit_test(late_peer),
        cmocka_unit_test(refusals),          cmocka_unit_test(growth_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
