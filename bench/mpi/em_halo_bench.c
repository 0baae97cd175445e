/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * em_halo -- [bds]'s boundary-exchange benchmark on the em_halo library.
 *
 * Two ranks (0 and 1, "PC1" and "PC2") exchange ITEMS boundary items of
 * SIZE bytes, REPS times, with one of [bds]'s patterns (-p):
 *
 *   oneway       0 -> 1 every repetition
 *   twoway       0 -> 1 and 1 -> 0 at the same time every repetition
 *   alternating  stage 1: 0 -> 1, then stage 2: 1 -> 0, every repetition
 *
 * Items live in an "application array" with a 64-byte gap between them, and
 * are described once per size (em_halo_add_neighbor + em_halo_commit); the
 * repetitions only start and complete persistent requests.  Receives are
 * always pre-posted: twoway uses two receive areas (even and odd
 * repetitions) so the next repetition's receives are posted before the
 * current one is waited for; oneway uses D areas (-D, default 4) and a
 * zero-byte credit per repetition from 1 to 0 (rank 0 sends repetition k
 * only when 1 has re-posted the area of k - D), otherwise the sender would
 * run ahead and its data would arrive unexpected (copied twice) on every
 * transport.
 *
 * Clock, as in the seed: at the rank that receives the last data (1 for
 * oneway and twoway, 0 for alternating), from the completion of the last
 * warm-up repetition to the completion of the last repetition.  MB/s =
 * 10^6 bytes per second of item data, both directions counted for twoway
 * and alternating.
 */
#ifndef _GNU_SOURCE
#define _POSIX_C_SOURCE 200809L /* getopt */
#endif
#include "em_common.h"
#include "halo/em_halo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GAP        64 /* bytes between items in the array */
#define MAX_SIZES  64
#define TAG_CREDIT 7
#define TAG_RESULT 8
#define MAX_DEPTH  16 /* oneway receive areas (-D) */

enum pattern { P_ONEWAY, P_TWOWAY, P_ALTERNATING };
static const char *const pattern_name[] = { "oneway", "twoway", "alternating" };

static const size_t default_sizes[] = { 64,   128,  256,  512,  1024, 1500,
                                        2048, 3000, 4500, 6000, 7500, 9000 };
static const size_t quick_sizes[] = { 64, 512, 1500, 4500, 9000 };

static int g_rank;

#define HALO(h, call)                                                                              \
    do {                                                                                           \
        int hrc_ = (call);                                                                         \
        if (hrc_ != EM_HALO_OK)                                                                    \
            em_fail("%s: %s", #call, em_halo_errmsg(h));                                           \
    } while (0)

struct opts {
    enum pattern pat;
    int items, depth;
    long reps, warm;
    size_t sizes[MAX_SIZES];
    int nsizes;
    int quick, corrupt;
};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: em_halo -p oneway|twoway|alternating [options]\n"
            "  [bds]'s boundary-exchange benchmark (2 ranks), MB/s (10^6 B/s)\n"
            "  -p PATTERN  oneway, twoway or alternating (required)\n"
            "  -k N        items per repetition (default 10)\n"
            "  -n N        timed repetitions (default 10000; quick 1000)\n"
            "  -w N        warm-up repetitions (default n/10, at least 1)\n"
            "  -D N        oneway: receive areas = repetitions in flight (default 4, 2..%d)\n"
            "  -s LIST     item sizes in bytes, comma separated (default "
            "64,128,256,512,1024,1500,2048,3000,4500,6000,7500,9000;\n"
            "              quick 64,512,1500,4500,9000)\n"
            "  -q          quick mode (tests); explicit options still win\n"
            "  -C          self-test: corrupt one received byte (the run must fail)\n"
            "  -h          this help\n",
            MAX_DEPTH);
}

static long parse_count(const char *s, const char *what, long min, long max)
{
    char *end;
    long v = strtol(s, &end, 10);

    if (*s == '\0' || *end != '\0' || v < min || v > max)
        em_fail("bad %s '%s' (a number %ld..%ld)", what, s, min, max);
    return v;
}

static int parse_sizes(const char *s, size_t *out)
{
    int n = 0;
    const char *p = s;

    while (*p) {
        char *end;
        unsigned long long v = strtoull(p, &end, 10);

        if (end == p || v == 0 || v > (1ull << 26) || n == MAX_SIZES)
            return -1;
        out[n++] = (size_t)v;
        if (*end == ',')
            end++;
        else if (*end != '\0')
            return -1;
        p = end;
    }
    return n;
}

static struct opts parse(int argc, char **argv)
{
    struct opts o = { .pat = P_ONEWAY, .items = 10, .depth = 4 };
    int c, have_p = 0, help = 0, bad = 0;
    long n = -1, w = -1;
    const char *sizes = NULL;

    opterr = 0;
    while ((c = getopt(argc, argv, "p:k:n:w:s:D:qCh")) != -1) {
        switch (c) {
        case 'p':
            have_p = 1;
            if (!strcmp(optarg, "oneway"))
                o.pat = P_ONEWAY;
            else if (!strcmp(optarg, "twoway"))
                o.pat = P_TWOWAY;
            else if (!strcmp(optarg, "alternating"))
                o.pat = P_ALTERNATING;
            else
                bad = 1;
            break;
        case 'k': o.items = (int)parse_count(optarg, "-k", 1, EM_HALO_MAX_ITEMS); break;
        case 'n': n = parse_count(optarg, "-n", 1, 100000000); break;
        case 'w': w = parse_count(optarg, "-w", 1, 100000000); break;
        case 's': sizes = optarg; break;
        case 'D': o.depth = (int)parse_count(optarg, "-D", 2, MAX_DEPTH); break;
        case 'q': o.quick = 1; break;
        case 'C': o.corrupt = 1; break;
        case 'h': help = 1; break;
        default: bad = 1; break;
        }
    }
    if (help || bad || !have_p || optind < argc) {
        if (g_rank == 0)
            usage(help ? stdout : stderr);
        MPI_Finalize();
        exit(help ? 0 : 2);
    }
    o.reps = n > 0 ? n : (o.quick ? 1000 : 10000);
    o.warm = w > 0 ? w : (o.reps / 10 > 0 ? o.reps / 10 : 1);
    if (sizes) {
        o.nsizes = parse_sizes(sizes, o.sizes);
        if (o.nsizes <= 0)
            em_fail("bad -s '%s' (comma-separated sizes 1..%llu)", sizes, 1ull << 26);
    } else if (o.quick) {
        o.nsizes = (int)(sizeof(quick_sizes) / sizeof(quick_sizes[0]));
        memcpy(o.sizes, quick_sizes, sizeof(quick_sizes));
    } else {
        o.nsizes = (int)(sizeof(default_sizes) / sizeof(default_sizes[0]));
        memcpy(o.sizes, default_sizes, sizeof(default_sizes));
    }
    return o;
}

/* ---- the application array -------------------------------------------- */

static size_t stride_of(size_t size) { return ((size + 63) & ~(size_t)63) + GAP; }

static void items_in(unsigned char *area, size_t size, int n, em_halo_item_t *it)
{
    for (int i = 0; i < n; i++) {
        it[i].addr = area + (size_t)i * stride_of(size);
        it[i].size = size;
    }
}

static unsigned char pat_byte(size_t off, int item, size_t size, int dir)
{
    unsigned x = (unsigned)off * 2654435761u ^ (unsigned)item * 40503u ^ (unsigned)size * 97u ^
                 (unsigned)(dir + 1) * 0x9e3779b9u;

    x ^= x >> 15;
    return (unsigned char)(x ^ (x >> 7));
}

static void fill(unsigned char *area, size_t size, int n, int dir)
{
    for (int i = 0; i < n; i++)
        for (size_t b = 0; b < size; b++)
            area[(size_t)i * stride_of(size) + b] = pat_byte(b, i, size, dir);
}

/* Items must carry the pattern, the gaps between them must keep 0xa5. */
static void check(const unsigned char *area, size_t size, int n, int dir, int from)
{
    size_t st = stride_of(size);

    for (int i = 0; i < n; i++) {
        for (size_t b = 0; b < st; b++) {
            unsigned char got = area[(size_t)i * st + b];
            unsigned char want = b < size ? pat_byte(b, i, size, dir) : 0xa5;

            if (got != want)
                em_fail("content mismatch: %s of item %d (%zu bytes) from rank %d, "
                        "byte %zu is 0x%02x, expected 0x%02x",
                        b < size ? "data" : "gap after the data", i, size, from,
                        b < size ? b : b - size, got, want);
        }
    }
}

/* ---- the patterns ------------------------------------------------------- */

struct run {
    enum pattern pat;
    int me, peer, items;
    size_t size;
    int depth; /* oneway: receive areas / handles in use */
    unsigned char *sarea, *rarea[MAX_DEPTH];
    em_halo_t *h[MAX_DEPTH]; /* oneway: one per area; twoway: parity; alternating: fwd, back */
    MPI_Comm ccomm;          /* oneway credits */
};

static em_halo_t *make_handle(int peer, unsigned char *sarea, unsigned char *rarea, int items,
                              size_t size)
{
    em_halo_t *h;
    em_halo_item_t *s = calloc((size_t)items, sizeof(*s));
    em_halo_item_t *r = calloc((size_t)items, sizeof(*r));
    int rc;

    if (s == NULL || r == NULL)
        em_fail("out of memory");
    rc = em_halo_create(MPI_COMM_WORLD, &h);
    if (rc != EM_HALO_OK)
        em_fail("em_halo_create: %s", em_halo_strerror(rc));
    if (sarea)
        items_in(sarea, size, items, s);
    if (rarea)
        items_in(rarea, size, items, r);
    if (peer >= 0)
        HALO(h, em_halo_add_neighbor(h, peer, s, sarea ? items : 0, r, rarea ? items : 0));
    HALO(h, em_halo_commit(h));
    free(s);
    free(r);
    return h;
}

static void setup(struct run *R)
{
    int me = R->me, active = me <= 1;
    int peer = active ? R->peer : -1;

    switch (R->pat) {
    case P_ONEWAY: /* 0 sends, 1 receives into `depth` areas */
        for (int p = 0; p < R->depth; p++)
            R->h[p] = make_handle(peer, me == 0 ? R->sarea : NULL, me == 1 ? R->rarea[p] : NULL,
                                  R->items, R->size);
        break;
    case P_TWOWAY:
        for (int p = 0; p < 2; p++)
            R->h[p] = make_handle(peer, active ? R->sarea : NULL, active ? R->rarea[p] : NULL,
                                  R->items, R->size);
        break;
    case P_ALTERNATING: /* h[0]: 0 -> 1, h[1]: 1 -> 0 */
        R->h[0] = make_handle(peer, me == 0 ? R->sarea : NULL, me == 1 ? R->rarea[0] : NULL,
                              R->items, R->size);
        R->h[1] = make_handle(peer, me == 1 ? R->sarea : NULL, me == 0 ? R->rarea[0] : NULL,
                              R->items, R->size);
        break;
    }
}

/* Runs n repetitions; returns the clock (seconds) from the end of
 * repetition `warm - 1` to the end of the last one at the measuring rank
 * (0 elsewhere). */
static double run_pattern(struct run *R, long n, long warm)
{
    double t0 = 0, t1 = 0;
    int me = R->me;
    em_halo_t **h = R->h;

    if (me > 1) { /* bystanders: only the start barrier */
        EM_CHECK(MPI_Barrier(R->ccomm));
        return 0.0;
    }
    switch (R->pat) {
    case P_ONEWAY: {
        long d = R->depth;

        if (me == 1)
            for (long p = 0; p < d && p < n; p++)
                HALO(h[p], em_halo_post_recvs(h[p]));
        EM_CHECK(MPI_Barrier(R->ccomm));
        for (long k = 0; k < n; k++) {
            em_halo_t *x = h[k % d];

            if (me == 0) {
                if (k >= d) {
                    HALO(x, em_halo_wait(x)); /* sends of k - d */
                    EM_CHECK(
                        MPI_Recv(NULL, 0, MPI_BYTE, 1, TAG_CREDIT, R->ccomm, MPI_STATUS_IGNORE));
                }
                HALO(x, em_halo_start_sends(x));
            } else {
                HALO(x, em_halo_wait(x));
                if (k + d < n) {
                    HALO(x, em_halo_post_recvs(x));
                    EM_CHECK(MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_CREDIT, R->ccomm));
                }
                if (k == warm - 1)
                    t0 = MPI_Wtime();
            }
        }
        if (me == 0) {
            for (long k = n - d < 0 ? 0 : n - d; k < n; k++)
                HALO(h[k % d], em_halo_wait(h[k % d]));
        }
        t1 = MPI_Wtime();
        return me == 1 ? t1 - t0 : 0.0;
    }
    case P_TWOWAY:
        HALO(h[0], em_halo_post_recvs(h[0]));
        EM_CHECK(MPI_Barrier(R->ccomm));
        for (long k = 0; k < n; k++) {
            em_halo_t *x = h[k & 1], *y = h[(k + 1) & 1];

            if (k + 1 < n)
                HALO(y, em_halo_post_recvs(y));
            HALO(x, em_halo_start_sends(x));
            HALO(x, em_halo_wait(x));
            if (k == warm - 1)
                t0 = MPI_Wtime();
        }
        t1 = MPI_Wtime();
        return me == 1 ? t1 - t0 : 0.0;
    case P_ALTERNATING:
        if (me == 0)
            HALO(h[1], em_halo_post_recvs(h[1]));
        else
            HALO(h[0], em_halo_post_recvs(h[0]));
        EM_CHECK(MPI_Barrier(R->ccomm));
        for (long k = 0; k < n; k++) {
            if (me == 0) {
                HALO(h[0], em_halo_start_sends(h[0]));
                HALO(h[1], em_halo_wait(h[1])); /* stage 2 arrived */
                HALO(h[0], em_halo_wait(h[0]));
                if (k + 1 < n)
                    HALO(h[1], em_halo_post_recvs(h[1]));
                if (k == warm - 1)
                    t0 = MPI_Wtime();
            } else {
                HALO(h[0], em_halo_wait(h[0])); /* stage 1 arrived */
                if (k + 1 < n)
                    HALO(h[0], em_halo_post_recvs(h[0]));
                HALO(h[1], em_halo_start_sends(h[1]));
                HALO(h[1], em_halo_wait(h[1]));
            }
        }
        t1 = MPI_Wtime();
        return me == 0 ? t1 - t0 : 0.0;
    }
    return 0.0;
}

/* One verified pass of two repetitions (both receive areas of oneway and
 * twoway are used). */
static void verify(struct run *R, int corrupt)
{
    int me = R->me;
    size_t span = (size_t)R->items * stride_of(R->size);

    if (me <= 1) {
        fill(R->sarea, R->size, R->items, me);
        for (int a = 0; a < R->depth; a++)
            memset(R->rarea[a], 0xa5, span);
    }
    /* enough repetitions to use every receive area once */
    run_pattern(R, R->pat == P_ONEWAY ? R->depth : 2, 1);
    if (me > 1)
        return;
    {
        int receives = R->pat != P_ONEWAY || me == 1;
        int areas = R->pat == P_ALTERNATING ? 1 : R->pat == P_TWOWAY ? 2 : R->depth;

        if (!receives)
            return;
        if (corrupt)
            R->rarea[0][span / 2 - span / 2 % stride_of(R->size)] ^= 0x5a;
        for (int a = 0; a < areas; a++)
            check(R->rarea[a], R->size, R->items, R->peer, R->peer);
    }
}

static void teardown(struct run *R)
{
    for (int p = 0; p < MAX_DEPTH; p++)
        if (R->h[p] != NULL)
            HALO(R->h[p], em_halo_free(&R->h[p]));
}

int main(int argc, char **argv)
{
    struct opts o;
    int nranks;
    size_t maxsize = 0;
    struct run R;
    double *vals;

    em_set_progname("em_halo");
    EM_CHECK(MPI_Init(&argc, &argv));
    EM_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    EM_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &g_rank));
    EM_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &nranks));
    o = parse(argc, argv);
    if (nranks < 2) {
        if (g_rank == 0)
            fprintf(stderr, "em_halo: needs at least 2 ranks (ranks 0 and 1 are measured)\n");
        MPI_Finalize();
        return 2;
    }
    for (int i = 0; i < o.nsizes; i++)
        if (o.sizes[i] > maxsize)
            maxsize = o.sizes[i];
    memset(&R, 0, sizeof(R));
    R.pat = o.pat;
    R.me = g_rank;
    R.peer = g_rank == 0 ? 1 : 0;
    R.items = o.items;
    R.sarea = em_alloc((size_t)o.items * stride_of(maxsize));
    R.depth = o.pat == P_ONEWAY ? o.depth : 2;
    for (int a = 0; a < R.depth; a++)
        R.rarea[a] = em_alloc((size_t)o.items * stride_of(maxsize));
    EM_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &R.ccomm));
    vals = calloc((size_t)o.nsizes, sizeof(*vals));
    if (vals == NULL)
        em_fail("out of memory");

    if (g_rank == 0) {
        char bench[32];
        static const char *const metric[] = { "throughput" };
        static const char *const unit[] = { "MB/s" };

        printf("# em_halo: pattern %s, %d ranks (0 <-> 1 measured), %d items x %ld "
               "repetitions (+%ld warm-up), persistent pre-posted requests (em_halo), "
               "%d receive areas%s\n",
               pattern_name[o.pat], nranks, o.items, o.reps, o.warm, R.depth,
               o.quick ? ", quick" : "");
        printf("# clock at rank %d (receives the last data); MB/s = 10^6 B/s of item data%s\n",
               o.pat == P_ALTERNATING ? 0 : 1, o.pat == P_ONEWAY ? "" : ", both directions");
        snprintf(bench, sizeof(bench), "halo-%s", pattern_name[o.pat]);
        em_print_header(bench, 1, metric, unit);
    }
    for (int s = 0; s < o.nsizes; s++) {
        double secs, mbs = 0.0;
        int measurer = o.pat == P_ALTERNATING ? 0 : 1;
        double dirs = o.pat == P_ONEWAY ? 1.0 : 2.0;

        R.size = o.sizes[s];
        setup(&R);
        verify(&R, o.corrupt);
        EM_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        secs = run_pattern(&R, o.warm + o.reps, o.warm);
        if (g_rank == measurer)
            mbs = secs > 0 ? (double)o.reps * o.items * (double)R.size * dirs / secs / 1e6 : 0.0;
        if (measurer != 0) {
            if (g_rank == measurer)
                EM_CHECK(MPI_Send(&mbs, 1, MPI_DOUBLE, 0, TAG_RESULT, R.ccomm));
            else if (g_rank == 0)
                EM_CHECK(MPI_Recv(&mbs, 1, MPI_DOUBLE, measurer, TAG_RESULT, R.ccomm,
                                  MPI_STATUS_IGNORE));
        }
        teardown(&R);
        if (g_rank == 0)
            em_print_row(R.size, 1, &mbs);
        vals[s] = mbs;
    }
    free(vals);
    EM_CHECK(MPI_Comm_free(&R.ccomm));
    MPI_Finalize();
    return 0;
}
