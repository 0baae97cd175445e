/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * halo - em_halo (src/halo) and the DDM-BDS sample application (apps/halo)
 * over a real BTL: table-mismatch errors, data of every pattern, and the
 * decomposed Jacobi run against the single-process reference.
 *
 * Built from several files (run-mpi-tests passes the extra sources):
 *   mpicc -O2 -std=c11 -Isrc/halo -Iapps/halo tests/mpi/halo.c src/halo/em_halo.c
 *         src/halo/halo_table.c apps/halo/stencil.c apps/halo/halo_solver.c -lm
 * Any number of ranks >= 2; the chain 0-1-...-(n-1) is used where a chain is
 * needed, the pair (0, 1) elsewhere (other ranks take part in the collective
 * setup with no neighbours, and must see EM_HALO_EPEER on a failure).
 */
#include "emt_common.h"

#include "halo/em_halo.h"
#include "halo_solver.h"

#define GUARD 64

/* -------------------------------------------------------- helpers -- */

/* A commit that must fail: code `want_mine` on the ranks in `who` (a
 * bitmask of ranks < 32), EM_HALO_EPEER elsewhere; every message must
 * contain the strings given for this rank (NULL-terminated). */
static void expect_commit_fails(em_halo_t *h, unsigned who, int want_mine,
                                const char *const *needles)
{
    int rc = em_halo_commit(h), want = (who >> emt.rank) & 1 ? want_mine : EM_HALO_EPEER;
    const char *msg = em_halo_errmsg(h);

    if (rc != want) {
        emt_detail("em_halo_commit returned %d (%s), expected %d (%s); message: %s", rc,
                   em_halo_strerror(rc), want, em_halo_strerror(want), msg);
        return;
    }
    if (want == EM_HALO_EPEER) {
        if (strstr(msg, "failed on rank") == NULL)
            emt_detail("EPEER message does not name the failing rank: %s", msg);
        return;
    }
    for (int i = 0; needles && needles[i]; i++)
        if (strstr(msg, needles[i]) == NULL)
            emt_detail("message lacks \"%s\": %s", needles[i], msg);
    if (emt.rank <= 1)
        printf("  msg   rank %d: %s\n", emt.rank, msg);
}

static em_halo_t *create(void)
{
    em_halo_t *h = NULL;
    int rc = em_halo_create(MPI_COMM_WORLD, &h);

    if (rc != EM_HALO_OK) {
        fprintf(stderr, "halo: rank %d: em_halo_create: %s\n", emt.rank, em_halo_strerror(rc));
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return h;
}

static void destroy(em_halo_t **h)
{
    int rc = em_halo_free(h);

    if (rc != EM_HALO_OK)
        emt_detail("em_halo_free: %s", em_halo_errmsg(*h));
}

static void items(em_halo_item_t *it, unsigned char *base, const size_t *sizes, int n)
{
    size_t off = 0;

    for (int i = 0; i < n; i++) {
        it[i].addr = base + off;
        it[i].size = sizes[i];
        off += sizes[i] + GUARD;
    }
}

static size_t span_of(const size_t *sizes, int n)
{
    size_t s = 0;

    for (int i = 0; i < n; i++)
        s += sizes[i] + GUARD;
    return s;
}

/* ---------------------------------------------------- error cases -- */

static void check_count_mismatch(void)
{
    static const size_t sz[3] = { 64, 512, 4096 };
    unsigned char *buf = emt_alloc(span_of(sz, 3));
    em_halo_item_t it[3];
    em_halo_t *h = create();
    const char *const n0[] = { "neighbour rank 1", "rank 0 has 3 send item(s)",
                               "rank 1 has 2 receive item(s)", NULL };
    const char *const n1[] = { "neighbour rank 0", "rank 1 has 2 receive item(s)",
                               "rank 0 has 3 send item(s)", NULL };

    memset(buf, EMT_POISON, span_of(sz, 3));
    items(it, buf, sz, 3);
    if (emt.rank == 0)
        emt_mpi(em_halo_add_neighbor(h, 1, it, 3, NULL, 0) == EM_HALO_OK ? MPI_SUCCESS : 1,
                "em_halo_add_neighbor");
    else if (emt.rank == 1)
        emt_mpi(em_halo_add_neighbor(h, 0, NULL, 0, it, 2) == EM_HALO_OK ? MPI_SUCCESS : 1,
                "em_halo_add_neighbor");
    expect_commit_fails(h, 3u, EM_HALO_EMISMATCH, emt.rank == 0 ? n0 : n1);
    /* nothing moved, and nothing can */
    emt_verify_poison(buf, span_of(sz, 3), "receive items after the failed commit");
    if (em_halo_exchange(h) != EM_HALO_ESTATE)
        emt_detail("em_halo_exchange after a failed commit did not return EM_HALO_ESTATE");
    destroy(&h);
    free(buf);
    emt_report("count mismatch (3 send items vs 2 receive items): clear error on both ends");
}

static void check_size_mismatch(void)
{
    static const size_t s0[3] = { 64, 512, 70000 }, s1[3] = { 64, 256, 70000 };
    const size_t *mine = emt.rank == 1 ? s1 : s0;
    unsigned char *sb = emt_alloc(span_of(s0, 3)), *rb = emt_alloc(span_of(s0, 3));
    em_halo_item_t si[3], ri[3];
    em_halo_t *h = create();
    const char *const n0[] = { "neighbour rank 1",
                               "send item 1 is 512 bytes on rank 0, but receive item 1 is 256 "
                               "bytes on rank 1",
                               NULL };
    const char *const n1[] = { "neighbour rank 0",
                               "receive item 1 is 256 bytes on rank 1, but send item 1 is 512 "
                               "bytes on rank 0",
                               NULL };

    memset(rb, EMT_POISON, span_of(s0, 3));
    items(si, sb, s0, 3); /* sends agree; rank 1 receives item 1 with the wrong size */
    items(ri, rb, mine, 3);
    if (emt.rank <= 1)
        emt_mpi(em_halo_add_neighbor(h, 1 - emt.rank, si, 3, ri, 3) == EM_HALO_OK ? 0 : 1,
                "em_halo_add_neighbor");
    expect_commit_fails(h, 3u, EM_HALO_EMISMATCH, emt.rank == 0 ? n0 : n1);
    emt_verify_poison(rb, span_of(s0, 3), "receive items after the failed commit");
    destroy(&h);
    free(sb);
    free(rb);
    emt_report("wrong size (item 1: 512 vs 256 bytes): clear error on both ends, no data moved");
}

static void check_asymmetric(void)
{
    static const size_t sz[1] = { 128 };
    unsigned char *buf = emt_alloc(span_of(sz, 1));
    em_halo_item_t it[1];
    em_halo_t *h = create();
    const char *const n0[] = { "rank 0 has a boundary table for neighbour rank 1, but rank 1 "
                               "has none for rank 0",
                               NULL };

    items(it, buf, sz, 1);
    if (emt.rank == 0) /* rank 1 does not know about it: must not hang */
        emt_mpi(em_halo_add_neighbor(h, 1, it, 1, NULL, 0) == EM_HALO_OK ? 0 : 1,
                "em_halo_add_neighbor");
    expect_commit_fails(h, 3u, EM_HALO_ENEIGHBOR, n0);
    destroy(&h);
    free(buf);
    emt_report("one-sided neighbour (0 lists 1, 1 lists nobody): error on both, no hang");
}

static void check_local_errors(void)
{
    static const size_t sz[2] = { 256, 256 };
    unsigned char *buf = emt_alloc(span_of(sz, 2) + 256);
    em_halo_item_t it[2];
    em_halo_t *h = create();
    const char *const over[] = { "overlaps", "receive item 0 for neighbour rank 0",
                                 "receive item 1 for neighbour rank 0", NULL };
    const char *const zero[] = { "neighbour rank 1", "send item 0 has size 0", NULL };

    /* rank 1: two receive items sharing 128 bytes */
    items(it, buf, sz, 2);
    if (emt.rank == 1)
        it[1].addr = buf + 128;
    if (emt.rank <= 1)
        em_halo_add_neighbor(h, 1 - emt.rank, emt.rank == 0 ? it : NULL, emt.rank == 0 ? 2 : 0,
                             emt.rank == 1 ? it : NULL, emt.rank == 1 ? 2 : 0);
    expect_commit_fails(h, 2u, EM_HALO_EINVAL, over);
    destroy(&h);

    /* rank 0: a size-0 item is refused by add; commit then fails everywhere */
    h = create();
    items(it, buf, sz, 2);
    if (emt.rank == 0) {
        it[0].size = 0;
        if (em_halo_add_neighbor(h, 1, it, 2, NULL, 0) != EM_HALO_EINVAL)
            emt_detail("add_neighbor accepted an item of size 0");
    } else if (emt.rank == 1) {
        em_halo_add_neighbor(h, 0, NULL, 0, it, 2);
    }
    expect_commit_fails(h, 1u, EM_HALO_EINVAL, zero);
    destroy(&h);

    /* use before commit is a state error, not a hang */
    h = create();
    if (em_halo_exchange(h) != EM_HALO_ESTATE || em_halo_wait(h) != EM_HALO_ESTATE)
        emt_detail("exchange/wait before commit did not return EM_HALO_ESTATE");
    destroy(&h);
    free(buf);
    emt_report("local errors: overlapping receive items, size 0, use before commit");
}

/* ------------------------------------------------------------ data -- */

/* Sizes cover eager, both sides of the 64 KiB eager limit of our BTLs, and
 * the put rendezvous. */
static const size_t data_sizes[10] = { 1, 64, 1500, 9000, 65536, 65537, 70000, 200000, 8, 1048576 };
#define NDATA 10

static uint64_t item_seed(int from, int to, int item, int step)
{
    return emt_seed(0x4a10u + (uint64_t)from, (uint64_t)to, (uint64_t)item, (uint64_t)step);
}

/* Chain 0-1-...-(n-1), two-way, 10 items per neighbour and direction, two
 * handles (even and odd steps, separate receive areas), receives pre-posted
 * one step ahead as the application does. */
static void check_chain_data(int steps)
{
    int me = emt.rank, n = emt.size, nb[2] = { me - 1, me + 1 };
    size_t span = span_of(data_sizes, NDATA);
    unsigned char *send[2], *recv[2][2];
    em_halo_t *h[2];
    int rc = EM_HALO_OK;

    for (int d = 0; d < 2; d++) {
        send[d] = emt_alloc(span);
        for (int p = 0; p < 2; p++) {
            recv[p][d] = emt_alloc(span);
            memset(recv[p][d], EMT_POISON, span);
        }
    }
    for (int p = 0; p < 2; p++) {
        h[p] = create();
        for (int d = 0; d < 2; d++) {
            em_halo_item_t si[NDATA], ri[NDATA];

            if (nb[d] < 0 || nb[d] >= n)
                continue;
            items(si, send[d], data_sizes, NDATA);
            items(ri, recv[p][d], data_sizes, NDATA);
            if (em_halo_add_neighbor(h[p], nb[d], si, NDATA, ri, NDATA) != EM_HALO_OK)
                emt_detail("add_neighbor: %s", em_halo_errmsg(h[p]));
        }
        if ((rc = em_halo_commit(h[p])) != EM_HALO_OK)
            emt_detail("commit: %s", em_halo_errmsg(h[p]));
    }
    if (rc == EM_HALO_OK && (rc = em_halo_post_recvs(h[0])) != EM_HALO_OK)
        emt_detail("post_recvs: %s", em_halo_errmsg(h[0]));
    for (int k = 0; k < steps && rc == EM_HALO_OK; k++) {
        em_halo_t *x = h[k & 1], *y = h[(k + 1) & 1];

        for (int d = 0; d < 2; d++)
            for (int i = 0; i < NDATA; i++)
                if (nb[d] >= 0 && nb[d] < n) {
                    size_t off = span_of(data_sizes, i);

                    emt_fill(send[d] + off, data_sizes[i], item_seed(me, nb[d], i, k));
                }
        if ((k + 1 < steps && (rc = em_halo_post_recvs(y)) != EM_HALO_OK) ||
            (rc = em_halo_start_sends(x)) != EM_HALO_OK || (rc = em_halo_wait(x)) != EM_HALO_OK) {
            emt_detail("step %d: %s | %s", k, em_halo_errmsg(x), em_halo_errmsg(y));
            break;
        }
        for (int d = 0; d < 2; d++) {
            if (nb[d] < 0 || nb[d] >= n)
                continue;
            for (int i = 0; i < NDATA; i++) {
                size_t off = span_of(data_sizes, i);
                char what[96];

                snprintf(what, sizeof(what), "step %d item %d (%zu B) from rank %d", k, i,
                         data_sizes[i], nb[d]);
                emt_verify(recv[k & 1][d] + off, data_sizes[i], item_seed(nb[d], me, i, k), what);
                emt_verify_poison(recv[k & 1][d] + off + data_sizes[i], GUARD, what);
            }
        }
    }
    for (int p = 0; p < 2; p++)
        destroy(&h[p]);
    for (int d = 0; d < 2; d++) {
        free(send[d]);
        free(recv[0][d]);
        free(recv[1][d]);
    }
    emt_report("two-way chain of %d ranks: 10 items of 1 B..1 MiB per neighbour, %d steps, "
               "pre-posted, guards intact",
               n, steps);
}

/* Pair (0, 1): oneway (0 -> 1) then alternating (0 -> 1, 1 -> 0) with
 * separate handles; 3 repetitions each with fresh content. */
static void check_pair_patterns(void)
{
    static const size_t sz[4] = { 100, 9000, 80000, 3 };
    size_t span = span_of(sz, 4);
    unsigned char *sb = emt_alloc(span), *rb = emt_alloc(span);
    em_halo_item_t it[4];
    em_halo_t *fwd = create(), *back = create();
    int me = emt.rank, peer = 1 - me;

    if (me <= 1) {
        items(it, me == 0 ? sb : rb, sz, 4);
        em_halo_add_neighbor(fwd, peer, me == 0 ? it : NULL, me == 0 ? 4 : 0, me == 1 ? it : NULL,
                             me == 1 ? 4 : 0);
        items(it, me == 1 ? sb : rb, sz, 4);
        em_halo_add_neighbor(back, peer, me == 1 ? it : NULL, me == 1 ? 4 : 0, me == 0 ? it : NULL,
                             me == 0 ? 4 : 0);
    }
    if (em_halo_commit(fwd) != EM_HALO_OK || em_halo_commit(back) != EM_HALO_OK) {
        emt_detail("commit: %s | %s", em_halo_errmsg(fwd), em_halo_errmsg(back));
        goto out;
    }
    for (int k = 0; k < 6 && me <= 1; k++) {
        int alternating = k >= 3;

        memset(rb, EMT_POISON, span);
        if (me == 0)
            for (int i = 0; i < 4; i++)
                emt_fill(sb + span_of(sz, i), sz[i], item_seed(0, 1, i, k));
        if (me == 1 && em_halo_exchange(fwd) != EM_HALO_OK)
            emt_detail("oneway receive: %s", em_halo_errmsg(fwd));
        if (me == 0 && em_halo_exchange(fwd) != EM_HALO_OK)
            emt_detail("oneway send: %s", em_halo_errmsg(fwd));
        if (me == 1)
            for (int i = 0; i < 4; i++)
                emt_verify(rb + span_of(sz, i), sz[i], item_seed(0, 1, i, k), "0 -> 1 item");
        if (!alternating)
            continue;
        memset(rb, EMT_POISON, span);
        if (me == 1)
            for (int i = 0; i < 4; i++)
                emt_fill(sb + span_of(sz, i), sz[i], item_seed(1, 0, i, k));
        if (em_halo_exchange(back) != EM_HALO_OK)
            emt_detail("alternating stage 2: %s", em_halo_errmsg(back));
        if (me == 0)
            for (int i = 0; i < 4; i++) {
                emt_verify(rb + span_of(sz, i), sz[i], item_seed(1, 0, i, k), "1 -> 0 item");
                emt_verify_poison(rb + span_of(sz, i) + sz[i], GUARD, "1 -> 0 guard");
            }
    }
out:
    destroy(&fwd);
    destroy(&back);
    free(sb);
    free(rb);
    emt_report("one-way and alternating patterns between ranks 0 and 1");
}

/* ------------------------------------------------------ application -- */

static void check_app(int nx, int ny, int inner_per_rank, int steps, int nitems)
{
    struct grid g = { nx, ny, 2 + inner_per_rank * emt.size + 1 };
    struct halo_solve_opts o = { .steps = steps, .items = nitems };
    struct halo_solve_result res;
    char err[800], where[200];
    double maxdiff = 0;
    long bad;

    if (halo_solve(&g, MPI_COMM_WORLD, &o, &res, err, sizeof(err)) != 0) {
        emt_detail("halo_solve: %s", err);
        emt_report("jacobi %dx%dx%d, %d steps: run failed", nx, ny, g.nz, steps);
        return;
    }
    bad = halo_verify(&g, MPI_COMM_WORLD, 0, steps, &res, &maxdiff, where, sizeof(where));
    if (emt.rank == 0 && bad != 0)
        emt_detail("%ld points differ from the single-process reference, max |diff| %.3g; %s", bad,
                   maxdiff, where);
    /* control: the comparison must see a difference of one step */
    bad = halo_verify(&g, MPI_COMM_WORLD, 0, steps + 1, &res, &maxdiff, where, sizeof(where));
    if (emt.rank == 0 && bad <= 0)
        emt_detail("verification against steps + 1 found no difference: the check is blind");
    free(res.owned);
    emt_report("jacobi %dx%dx%d (%zu-byte planes, %d item(s)), %d steps: bit-exact vs one process",
               nx, ny, g.nz, (size_t)nx * (size_t)ny * sizeof(double), nitems, steps);
}

int main(int argc, char **argv)
{
    emt_init(&argc, &argv, "halo");
    emt_need_ranks(2, 0);
    emt_require_spread(2, 0, emt.size == 2 ? 1 : emt.size / 2);
    check_count_mismatch();
    check_size_mismatch();
    check_asymmetric();
    check_local_errors();
    check_chain_data((int)emt_arg(argc, argv, "--steps", 6));
    check_pair_patterns();
    /* eager planes (8 KiB), then planes above the 64 KiB eager limit (put) */
    check_app(32, 32, 3, 40, 1);
    check_app(96, 96, 2, 20, 3);
    return emt_finish();
}
