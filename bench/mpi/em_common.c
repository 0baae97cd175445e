/* SPDX-License-Identifier: BSD-3-Clause */
/* ethermpi MPI benchmarks -- shared helpers (see em_common.h). */
#include "em_common.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *em_progname = "em_bench";

_Noreturn void em_mpi_fail(int rc, const char *what, const char *file, int line)
{
    char msg[MPI_MAX_ERROR_STRING + 1];
    int len = 0;
    int rank = -1;

    if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS)
        len = 0;
    msg[len] = '\0';
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    fprintf(stderr, "%s: rank %d: %s failed at %s:%d: %s (code %d)\n", em_progname, rank, what,
            file, line, msg, rc);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 2);
    exit(2); /* not reached unless MPI_Abort returns */
}

void em_set_progname(const char *name) { em_progname = name; }

_Noreturn void em_fail(const char *fmt, ...)
{
    va_list ap;
    int rank = -1;

    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    fprintf(stderr, "%s: rank %d: ", em_progname, rank);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 3);
    exit(3);
}

/* ---- option parsing --------------------------------------------------- */

/* Parses "4096", "4K", "4k", "2M", "1G" (binary multiples), at most @p limit. */
static int parse_bytes(const char *s, size_t limit, size_t *out)
{
    char *end = NULL;
    unsigned long long v;
    unsigned long long mult = 1;

    if (s == NULL || *s == '\0' || *s == '-')
        return -1;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0 || end == s)
        return -1;
    switch (*end) {
    case '\0': break;
    case 'k':
    case 'K':
        mult = 1ull << 10;
        end++;
        break;
    case 'm':
    case 'M':
        mult = 1ull << 20;
        end++;
        break;
    case 'g':
    case 'G':
        mult = 1ull << 30;
        end++;
        break;
    default: return -1;
    }
    if (*end != '\0')
        return -1;
    if (v > (unsigned long long)limit / mult)
        return -1;
    *out = (size_t)(v * mult);
    return 0;
}

/* A message size: at most EM_SIZE_LIMIT. */
static int parse_size(const char *s, size_t *out) { return parse_bytes(s, EM_SIZE_LIMIT, out); }

static int parse_long(const char *s, long min, long *out)
{
    char *end = NULL;
    long v;

    if (s == NULL || *s == '\0')
        return -1;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < min)
        return -1;
    *out = v;
    return 0;
}

/* "A:B" -> both, "A" -> first only, "A:" -> first, ":B" -> second. */
static int split_pair(const char *arg, char *a, char *b, size_t cap)
{
    const char *colon = strchr(arg, ':');
    size_t la;

    a[0] = b[0] = '\0';
    if (colon == NULL) {
        if (strlen(arg) >= cap)
            return -1;
        strcpy(a, arg);
        return 0;
    }
    la = (size_t)(colon - arg);
    if (la >= cap || strlen(colon + 1) >= cap)
        return -1;
    memcpy(a, arg, la);
    a[la] = '\0';
    strcpy(b, colon + 1);
    return 0;
}

static void usage(const struct em_prog *p, FILE *f)
{
    const struct em_opts *d = &p->normal;
    const struct em_opts *q = &p->quick;

    fprintf(f, "usage: %s [options]\n  %s\n", p->prog, p->summary);
    if (p->optmask & EM_OPT_SIZES)
        fprintf(f,
                "  -m MIN:MAX  message sizes, K/M/G suffixes allowed "
                "(default %zu:%zu; MAX alone sets the maximum)\n",
                d->min_size, d->max_size);
    if (p->optmask & EM_OPT_ITERS)
        fprintf(f,
                "  -i N[:M]    timed iterations for sizes <= %zu (N) and "
                "larger (M) (default %ld:%ld)\n",
                EM_LARGE_THRESHOLD, d->iters_small, d->iters_large);
    if (p->optmask & EM_OPT_WARMUP)
        fprintf(f,
                "  -w N[:M]    warm-up iterations, small:large "
                "(default %ld:%ld)\n",
                d->warmup_small, d->warmup_large);
    if (p->optmask & EM_OPT_COUNT)
        fprintf(f,
                "  -n N        messages per sender per size (default %ld; "
                "%ld extra untimed warm-up)\n",
                d->count, d->count_warmup);
    if (p->optmask & EM_OPT_WINDOW)
        fprintf(f,
                "  -W N        messages in flight per iteration "
                "(default %d)\n",
                d->window);
    if (p->optmask & EM_OPT_BUDGET)
        fprintf(f,
                "  -B BYTES    for large sizes, cut iterations so one size "
                "moves about BYTES per direction (default %zu)\n",
                d->budget);
    if (p->optmask & EM_OPT_THREADS)
        fprintf(f, "  -T N        threads per rank, 1..%d (default %d)\n", EM_MAX_THREADS,
                d->threads > 0 ? d->threads : 1);
    fprintf(f, "  -q          quick mode for tests (sizes %zu:%zu", q->min_size, q->max_size);
    if (p->optmask & EM_OPT_ITERS)
        fprintf(f, ", iterations %ld:%ld", q->iters_small, q->iters_large);
    if (p->optmask & EM_OPT_COUNT)
        fprintf(f, ", -n %ld", q->count);
    fprintf(f, "); explicit options still win\n"
               "  -C          self-test: corrupt one received byte in the "
               "content check (the run must fail)\n"
               "  -h          this help\n"
               "Environment: EM_BENCH_THREAD=multiple asks for MPI_THREAD_MULTIPLE "
               "(single-threaded run; default: MPI_Init)\n");
}

size_t em_recv_area(const struct em_opts *o)
{
    const size_t cap = (size_t)64 << 20;
    size_t area = (size_t)o->window * o->max_size;
    if (area > cap)
        area = o->max_size > cap ? o->max_size : cap;
    return area;
}

static _Noreturn void setup_exit(int code)
{
    MPI_Finalize();
    exit(code);
}

struct em_opts em_setup(int *argc, char ***argv, const struct em_prog *p, int *rank, int *nranks)
{
    struct em_opts o;
    int have_min = 0, have_max = 0, have_is = 0, have_il = 0;
    int have_ws = 0, have_wl = 0, have_n = 0, have_win = 0, have_b = 0, have_t = 0;
    size_t min_size = 0, max_size = 0;
    long is = 0, il = 0, ws = 0, wl = 0, n = 0, win = 0, nthreads = 1;
    size_t budget = 0;
    int quick = 0, corrupt = 0, bad = 0, help = 0;
    char a[64], b[64];
    int c;

    em_progname = p->prog;
    /* EM_BENCH_THREAD=multiple: ask for MPI_THREAD_MULTIPLE (the benchmark
     * stays single-threaded: what the transport's locks cost such a job,
     * docs/measurements/2026-11-29-thread-safety-cost.md) */
    const char *lvl = getenv("EM_BENCH_THREAD");
    if (p->thread_multiple || (lvl && 0 == strcmp(lvl, "multiple"))) {
        int provided = MPI_THREAD_SINGLE;
        EM_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided));
        if (provided != MPI_THREAD_MULTIPLE) {
            fprintf(stderr,
                    "%s: MPI_THREAD_MULTIPLE asked for (%s), the MPI provided level %d only\n",
                    p->prog,
                    p->thread_multiple ? "the program calls MPI from threads"
                                       : "EM_BENCH_THREAD=multiple",
                    provided);
            setup_exit(1);
        }
    } else {
        if (lvl && *lvl && 0 != strcmp(lvl, "single")) {
            fprintf(stderr, "%s: EM_BENCH_THREAD=%s: 'single' or 'multiple'\n", p->prog, lvl);
            exit(2);
        }
        EM_CHECK(MPI_Init(argc, argv));
    }
    EM_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    EM_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, rank));
    EM_CHECK(MPI_Comm_size(MPI_COMM_WORLD, nranks));

    for (int i = 1; i < *argc; i++) /* --help as well as -h */
        if (0 == strcmp((*argv)[i], "--help"))
            help = 1;
    opterr = 0;
    optind = 1;
    while (!bad && !help && (c = getopt(*argc, *argv, "m:i:w:n:W:B:T:qCh")) != -1) {
        switch (c) {
        case 'm':
            if (!(p->optmask & EM_OPT_SIZES) || split_pair(optarg, a, b, sizeof a)) {
                bad = 1;
                break;
            }
            if (strchr(optarg, ':') == NULL) {
                /* "MAX" */
                if (parse_size(a, &max_size))
                    bad = 1;
                else
                    have_max = 1;
                break;
            }
            if (a[0] != '\0') {
                if (parse_size(a, &min_size))
                    bad = 1;
                else
                    have_min = 1;
            }
            if (b[0] != '\0') {
                if (parse_size(b, &max_size))
                    bad = 1;
                else
                    have_max = 1;
            }
            break;
        case 'i':
        case 'w': {
            long *s = c == 'i' ? &is : &ws, *l = c == 'i' ? &il : &wl;
            int *hs = c == 'i' ? &have_is : &have_ws;
            int *hl = c == 'i' ? &have_il : &have_wl;
            unsigned need = c == 'i' ? EM_OPT_ITERS : EM_OPT_WARMUP;
            long lo = c == 'i' ? 1 : 0;

            if (!(p->optmask & need) || split_pair(optarg, a, b, sizeof a)) {
                bad = 1;
                break;
            }
            if (a[0] != '\0') {
                if (parse_long(a, lo, s))
                    bad = 1;
                else
                    *hs = 1;
            }
            if (b[0] != '\0') {
                if (parse_long(b, lo, l))
                    bad = 1;
                else
                    *hl = 1;
            }
            break;
        }
        case 'n':
            if (!(p->optmask & EM_OPT_COUNT) || parse_long(optarg, 1, &n))
                bad = 1;
            else
                have_n = 1;
            break;
        case 'W':
            if (!(p->optmask & EM_OPT_WINDOW) || parse_long(optarg, 1, &win) || win > 4096)
                bad = 1;
            else
                have_win = 1;
            break;
        case 'B':
            if (!(p->optmask & EM_OPT_BUDGET) || parse_bytes(optarg, EM_BUDGET_LIMIT, &budget) ||
                budget == 0)
                bad = 1;
            else
                have_b = 1;
            break;
        case 'T':
            if (!(p->optmask & EM_OPT_THREADS) || parse_long(optarg, 1, &nthreads) ||
                nthreads > EM_MAX_THREADS)
                bad = 1;
            else
                have_t = 1;
            break;
        case 'q': quick = 1; break;
        case 'C': corrupt = 1; break;
        case 'h': help = 1; break;
        default: bad = 1; break;
        }
    }
    if (!bad && optind < *argc)
        bad = 1;

    o = quick ? p->quick : p->normal;
    o.quick = quick;
    o.corrupt = corrupt;
    if (have_min)
        o.min_size = min_size;
    if (have_max)
        o.max_size = max_size;
    if (have_is)
        o.iters_small = is;
    if (have_il)
        o.iters_large = il;
    if (have_ws)
        o.warmup_small = ws;
    if (have_wl)
        o.warmup_large = wl;
    if (have_n) {
        o.count = n;
        o.count_warmup = n / 10;
    }
    if (have_win)
        o.window = (int)win;
    if (have_b)
        o.budget = budget;
    if (o.threads < 1)
        o.threads = 1;
    if (have_t)
        o.threads = (int)nthreads;
    if (!bad && o.min_size > o.max_size)
        bad = 1;

    if (help) {
        if (*rank == 0)
            usage(p, stdout);
        setup_exit(0);
    }
    if (bad) {
        if (*rank == 0) {
            fprintf(stderr, "%s: invalid arguments\n", p->prog);
            usage(p, stderr);
        }
        setup_exit(2);
    }
    if (*nranks < p->min_ranks) {
        if (*rank == 0)
            fprintf(stderr, "%s: needs at least %d ranks\n", p->prog, p->min_ranks);
        setup_exit(2);
    }
    return o;
}

/* ---- sizes and iteration counts ---------------------------------------- */

size_t em_sizes(const struct em_opts *o, size_t *out, size_t cap)
{
    size_t n = 0;
    size_t s;

    if (o->min_size == 0 && n < cap)
        out[n++] = 0;
    for (s = 1; s <= o->max_size && n < cap; s *= 2) {
        if (s >= o->min_size)
            out[n++] = s;
        if (s > EM_SIZE_LIMIT / 2)
            break;
    }
    return n;
}

long em_iters(const struct em_opts *o, size_t size)
{
    return size > EM_LARGE_THRESHOLD ? o->iters_large : o->iters_small;
}

long em_warmup(const struct em_opts *o, size_t size)
{
    return size > EM_LARGE_THRESHOLD ? o->warmup_large : o->warmup_small;
}

long em_budget_iters(const struct em_opts *o, size_t size)
{
    long it = em_iters(o, size);
    double per_iter = (double)size * (double)o->window;
    long fit;

    if (size <= EM_LARGE_THRESHOLD || per_iter <= 0.0)
        return it;
    fit = (long)((double)o->budget / per_iter);
    if (fit < 1)
        fit = 1;
    return fit < it ? fit : it;
}

long em_budget_warmup(const struct em_opts *o, size_t size)
{
    long w = em_warmup(o, size);
    long it = em_budget_iters(o, size);

    if (size <= EM_LARGE_THRESHOLD)
        return w;
    /* keep warm-up at most a tenth of the timed part, but at least one */
    if (w > it / 10)
        w = it / 10;
    return w < 1 ? 1 : w;
}

/* ---- buffers and content ------------------------------------------------ */

unsigned char *em_alloc(size_t bytes)
{
    void *p = NULL;
    long page = sysconf(_SC_PAGESIZE);
    size_t align = page > 0 ? (size_t)page : 4096;

    if (bytes == 0)
        bytes = 1;
    if (posix_memalign(&p, align, bytes) != 0 || p == NULL)
        em_fail("cannot allocate %zu bytes", bytes);
    memset(p, 0, bytes); /* touch every page before any timing */
    return p;
}

static unsigned char em_byte(size_t i, size_t size, unsigned dir)
{
    uint32_t x = (uint32_t)i * 2654435761u;

    x ^= (uint32_t)size * 40503u;
    x ^= (uint32_t)(dir + 1u) * 0x9e3779b9u;
    x ^= x >> 15;
    return (unsigned char)(x ^ (x >> 8));
}

void em_fill(unsigned char *buf, size_t size, unsigned dir)
{
    for (size_t i = 0; i < size; i++)
        buf[i] = em_byte(i, size, dir);
}

void em_poison(unsigned char *buf, size_t size, unsigned dir)
{
    for (size_t i = 0; i < size; i++)
        buf[i] = (unsigned char)~em_byte(i, size, dir);
}

size_t em_check(const unsigned char *buf, size_t size, unsigned dir)
{
    for (size_t i = 0; i < size; i++)
        if (buf[i] != em_byte(i, size, dir))
            return i;
    return SIZE_MAX;
}

static void recv_checked(const struct em_opts *o, unsigned char *rbuf, size_t size, int from,
                         unsigned dir, int inject)
{
    MPI_Status st;
    int count = -1;
    size_t bad;

    em_poison(rbuf, size, dir);
    /* Receive into room for one extra byte so an over-long message shows
     * up as a wrong count rather than an MPI truncation error. */
    EM_CHECK(MPI_Recv(rbuf, (int)size + 1, MPI_BYTE, from, EM_TAG_VERIFY, MPI_COMM_WORLD, &st));
    EM_CHECK(MPI_Get_count(&st, MPI_BYTE, &count));
    if (count != (int)size)
        em_fail("length mismatch: message of %zu bytes from rank %d "
                "arrived with %d bytes",
                size, from, count);
    if (inject && o->corrupt && size > 0)
        rbuf[size / 2] ^= 0x5a; /* -C self-test */
    bad = em_check(rbuf, size, dir);
    if (bad != SIZE_MAX)
        em_fail("content mismatch: message of %zu bytes from rank %d, byte "
                "%zu is 0x%02x, expected 0x%02x",
                size, from, bad, (unsigned)rbuf[bad], (unsigned)em_byte(bad, size, dir));
}

void em_verify_exchange(const struct em_opts *o, int me, int a, int b, size_t size,
                        unsigned char *sbuf, unsigned char *rbuf)
{
    if (me == a) {
        em_fill(sbuf, size, 0);
        EM_CHECK(MPI_Send(sbuf, (int)size, MPI_BYTE, b, EM_TAG_VERIFY, MPI_COMM_WORLD));
        recv_checked(o, rbuf, size, b, 1, 0);
    } else if (me == b) {
        recv_checked(o, rbuf, size, a, 0, 1);
        em_fill(sbuf, size, 1);
        EM_CHECK(MPI_Send(sbuf, (int)size, MPI_BYTE, a, EM_TAG_VERIFY, MPI_COMM_WORLD));
    }
}

/* ---- output -------------------------------------------------------------- */

void em_print_header(const char *bench, int ncols, const char *const *metrics,
                     const char *const *units)
{
    printf("# em-bench %s transport-neutral v1\n# size_bytes", bench);
    for (int i = 0; i < ncols; i++)
        printf(" %s %s", metrics[i], units[i]);
    printf("\n");
    fflush(stdout);
}

void em_print_row(size_t size, int ncols, const double *values)
{
    printf("%-10zu", size);
    for (int i = 0; i < ncols; i++)
        printf(" %14.3f", values[i]);
    printf("\n");
    fflush(stdout);
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;

    return (a > b) - (a < b);
}

double em_median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_double);
    if (n % 2 == 1)
        return v[n / 2];
    return 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double em_mean(const double *v, size_t n)
{
    double s = 0.0;

    for (size_t i = 0; i < n; i++)
        s += v[i];
    return n ? s / (double)n : 0.0;
}

void em_bench_begin(struct em_bench *b, int *argc, char ***argv, const struct em_prog *p,
                    size_t (*rbuf_size)(const struct em_opts *o))
{
    b->prog = p;
    b->o = em_setup(argc, argv, p, &b->rank, &b->nranks);
    b->nsizes = em_sizes(&b->o, b->sizes, sizeof b->sizes / sizeof b->sizes[0]);
    b->sbuf = em_alloc(b->o.max_size + 1);
    b->rbuf = em_alloc((rbuf_size ? rbuf_size(&b->o) : b->o.max_size) + 1);
}

void em_bench_end(struct em_bench *b)
{
    EM_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    free(b->sbuf);
    free(b->rbuf);
    MPI_Finalize();
}

void em_bench_header(const struct em_bench *b, int ncols, const char *const *metrics,
                     const char *const *units, const char *fmt, ...)
{
    va_list ap;

    if (b->rank != 0)
        return;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    em_print_header(b->prog->bench, ncols, metrics, units);
}

void em_bench_verify_pair(struct em_bench *b, size_t size)
{
    if (b->rank <= 1)
        em_verify_exchange(&b->o, b->rank, 0, 1, size, b->sbuf, b->rbuf);
    EM_CHECK(MPI_Barrier(MPI_COMM_WORLD));
}

size_t em_recv_slots(const struct em_opts *o, size_t area, size_t size)
{
    size_t slots = size ? area / size : (size_t)o->window;

    return slots > (size_t)o->window ? (size_t)o->window : slots;
}

void em_post_window_recvs(const struct em_opts *o, unsigned char *area, size_t slots, size_t size,
                          int peer, MPI_Request *req)
{
    for (int w = 0; w < o->window; w++)
        EM_CHECK(MPI_Irecv(area + ((size_t)w % slots) * size, (int)size, MPI_BYTE, peer,
                           EM_TAG_DATA, MPI_COMM_WORLD, &req[w]));
}

MPI_Request *em_bench_window_begin(struct em_bench *b, int *argc, char ***argv,
                                   const struct em_prog *p, int per_window, size_t *area)
{
    em_bench_begin(b, argc, argv, p, em_recv_area);
    *area = em_recv_area(&b->o);
    MPI_Request *req = calloc((size_t)per_window * (size_t)b->o.window, sizeof *req);
    if (req == NULL)
        em_fail("out of memory");
    return req;
}

void em_bench_window_header(const struct em_bench *b, const char *pair, const char *note)
{
    static const char *const metric[] = { "bandwidth" };
    static const char *const unit[] = { "MB/s" };
    const struct em_opts *o = &b->o;

    em_bench_header(b, 1, metric, unit,
                    "# %s: %d ranks (%s measured), window %d%s, iterations %ld:%ld, "
                    "warm-up %ld:%ld, large-size budget %zu B%s\n",
                    b->prog->prog, b->nranks, pair, o->window, note, o->iters_small, o->iters_large,
                    o->warmup_small, o->warmup_large, o->budget, o->quick ? ", quick" : "");
}

double em_bench_time(struct em_bench *b, size_t size, long warm, long iters, em_round_fn round,
                     void *ctx)
{
    for (long i = 0; i < warm; i++)
        round(b, size, ctx);
    double t0 = MPI_Wtime();
    for (long i = 0; i < iters; i++)
        round(b, size, ctx);
    return MPI_Wtime() - t0;
}

void em_bench_verify_all(struct em_bench *b, size_t size)
{
    for (int s = 1; s < b->nranks; s++)
        if (b->rank == 0 || b->rank == s)
            em_verify_exchange(&b->o, b->rank, s, 0, size, b->sbuf, b->rbuf);
}

int em_windowed_main(int argc, char **argv, const struct em_windowed *wp)
{
    struct em_bench b;
    size_t area;
    struct em_window w = { .req = em_bench_window_begin(&b, &argc, &argv, wp->prog, wp->per_window,
                                                        &area) };

    em_bench_window_header(&b, wp->pair, wp->note);
    for (size_t k = 0; k < b.nsizes; k++) {
        size_t size = b.sizes[k];
        long iters = em_budget_iters(&b.o, size);

        w.slots = em_recv_slots(&b.o, area, size);
        em_bench_verify_pair(&b, size);
        if (b.rank > 1)
            continue;
        double t = em_bench_time(&b, size, em_budget_warmup(&b.o, size), iters,
                                 b.rank ? wp->round1 : wp->round0, &w);
        if (b.rank == 0) {
            double mbs = wp->directions * (double)size * (double)b.o.window * (double)iters / t /
                         1e6;
            em_print_row(size, 1, &mbs);
        }
    }
    free(w.req);
    em_bench_end(&b);
    return 0;
}

void em_bench_counted_header(const struct em_bench *b, const char *const *metrics,
                             const char *const *units, const char *role, const char *what)
{
    const struct em_opts *o = &b->o;

    em_bench_header(b, 2, metrics, units,
                    "# %s: pattern %d:1 (%d ranks, %s rank 0), %ld %s per size (+%ld warm-up)%s\n",
                    b->prog->prog, b->nranks - 1, b->nranks, role, o->count, what, o->count_warmup,
                    o->quick ? ", quick" : "");
}
