/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ethermpi MPI benchmarks -- shared helpers.
 *
 * Every program in bench/mpi prints one machine-readable table:
 *
 *   # em-bench <name> transport-neutral v1
 *   # size_bytes <metric> <unit> [<metric2> <unit2> ...]
 *   <size> <value> [<value2> ...]
 *
 * Comment lines (starting with '#') may appear before the header line; the
 * first value column is the primary result.  See docs/benchmarks.md.
 */
#ifndef EM_BENCH_COMMON_H
#define EM_BENCH_COMMON_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

/* Sizes above this use the "large" iteration counts (as OSU does). */
#define EM_LARGE_THRESHOLD ((size_t)8192)

/* Upper bound on the sizes we accept, so int counts never overflow. */
#define EM_SIZE_LIMIT ((size_t)1 << 30)
/* -B: a byte budget per size may exceed one message (long runs to sample a
 * profile in: tools/cpu-cost) */
#define EM_BUDGET_LIMIT ((size_t)1 << 40)

enum em_tag {
    EM_TAG_DATA = 100,
    EM_TAG_ACK = 101,
    EM_TAG_VERIFY = 102,
    EM_TAG_RESULT = 103,
};

/* Option letters a program may accept (bitmask for em_setup). */
enum em_optmask {
    EM_OPT_SIZES = 1u << 0,   /* -m MIN:MAX */
    EM_OPT_ITERS = 1u << 1,   /* -i N[:M]   */
    EM_OPT_WARMUP = 1u << 2,  /* -w N[:M]   */
    EM_OPT_COUNT = 1u << 3,   /* -n N       */
    EM_OPT_WINDOW = 1u << 4,  /* -W N       */
    EM_OPT_BUDGET = 1u << 5,  /* -B BYTES   */
    EM_OPT_THREADS = 1u << 6, /* -T N: threads per rank */
};

/* Most threads per rank -T accepts. */
#define EM_MAX_THREADS 16

struct em_opts {
    size_t min_size;
    size_t max_size;
    long iters_small; /* timed iterations, size <= EM_LARGE_THRESHOLD */
    long iters_large; /* timed iterations, size >  EM_LARGE_THRESHOLD */
    long warmup_small;
    long warmup_large;
    long count;        /* messages / round trips per sender (-n) */
    long count_warmup; /* untimed messages before each count run */
    int window;        /* messages in flight (-W) */
    size_t budget;     /* bytes per size and direction for large sizes (-B) */
    int threads;       /* threads per rank (-T; programs without it: 1) */
    int quick;         /* -q was given */
    int corrupt;       /* -C: self-test, flip a received byte on purpose */
};

struct em_prog {
    const char *prog;  /* executable name, for messages */
    const char *bench; /* benchmark name in the header line */
    const char *summary;
    unsigned optmask;
    struct em_opts normal;
    struct em_opts quick;
    int min_ranks; /* em_setup refuses fewer ranks (exit 2); 0 = any */
    /* the program calls MPI from several threads: em_setup asks for
     * MPI_THREAD_MULTIPLE whatever EM_BENCH_THREAD says, and exits 1 naming
     * the level the MPI gave when it is less */
    int thread_multiple;
};

/* The option defaults the two benchmark families share.  Windowed bandwidth
 * (em_bw, em_bibw): sizes 1 B..4 MiB, 64 messages in flight, a byte budget
 * for large sizes.  Counted bursts (em_burst, em_pingpong): -n messages or
 * round trips per sender, sizes 0..16 KiB. */
#define EM_WINDOWED_NORMAL                                                                         \
    {                                                                                              \
        .min_size = 1, .max_size = 4u << 20, .iters_small = 100, .iters_large = 20,                \
        .warmup_small = 10, .warmup_large = 2, .window = 64, .budget = (size_t)128 << 20           \
    }
#define EM_WINDOWED_QUICK                                                                          \
    {                                                                                              \
        .min_size = 1, .max_size = 256u << 10, .iters_small = 10, .iters_large = 4,                \
        .warmup_small = 2, .warmup_large = 1, .window = 64, .budget = (size_t)16 << 20             \
    }
#define EM_WINDOWED_OPTS                                                                           \
    (EM_OPT_SIZES | EM_OPT_ITERS | EM_OPT_WARMUP | EM_OPT_WINDOW | EM_OPT_BUDGET)
/* The whole em_prog of a windowed-bandwidth / counted-burst program named
 * "em_" NAME whose table is NAME. */
#define EM_WINDOWED_PROG(name, summ)                                                               \
    {                                                                                              \
        .prog = "em_" name, .bench = name, .summary = summ, .optmask = EM_WINDOWED_OPTS,           \
        .normal = EM_WINDOWED_NORMAL, .quick = EM_WINDOWED_QUICK, .min_ranks = 2                   \
    }
#define EM_COUNTED_PROG(name, summ)                                                                \
    {                                                                                              \
        .prog = "em_" name, .bench = name, .summary = summ,                                        \
        .optmask = EM_OPT_SIZES | EM_OPT_COUNT, .normal = EM_COUNTED_NORMAL,                       \
        .quick = EM_COUNTED_QUICK, .min_ranks = 2                                                  \
    }
#define EM_COUNTED_NORMAL                                                                          \
    {                                                                                              \
        .min_size = 0, .max_size = 16u << 10, .count = 10000, .count_warmup = 1000                 \
    }
#define EM_COUNTED_QUICK                                                                           \
    {                                                                                              \
        .min_size = 0, .max_size = 4u << 10, .count = 1000, .count_warmup = 100                    \
    }

/* Error path for MPI calls: print the MPI error string and abort the job. */
#define EM_CHECK(call)                                                                             \
    do {                                                                                           \
        int em_rc_ = (call);                                                                       \
        if (em_rc_ != MPI_SUCCESS)                                                                 \
            em_mpi_fail(em_rc_, #call, __FILE__, __LINE__);                                        \
    } while (0)

/* MPI_Init, error handler, option parsing.  Returns the options; on bad
 * options or -h every rank finalizes and exits itself. */
struct em_opts em_setup(int *argc, char ***argv, const struct em_prog *p, int *rank, int *nranks);

_Noreturn void em_mpi_fail(int rc, const char *what, const char *file, int line);
_Noreturn void em_fail(const char *fmt, ...);
/** The program name em_fail and em_mpi_fail print (em_setup sets it too). */
void em_set_progname(const char *name);

/* Bytes of receive buffer for a window of messages up to o->max_size: one
 * slot per window entry, but at most 64 MiB (slots then wrap), and never
 * less than one message. */
size_t em_recv_area(const struct em_opts *o);

/* The sizes to measure: 0 (if in range), then powers of two. */
size_t em_sizes(const struct em_opts *o, size_t *out, size_t cap);

long em_iters(const struct em_opts *o, size_t size);
long em_warmup(const struct em_opts *o, size_t size);
/* Iterations under a byte budget (-B): for large sizes the count is cut so
 * that size*window*iters stays near the budget (at least 1).  The windowed
 * bandwidth tests, and em_latency with a window of 1; the warm-up is at
 * most a tenth of the cut count. */
long em_budget_iters(const struct em_opts *o, size_t size);
long em_budget_warmup(const struct em_opts *o, size_t size);

/* Page-aligned, zero-touched buffer of at least max(bytes,1) bytes. */
unsigned char *em_alloc(size_t bytes);

/* Deterministic content for a message: depends on size and direction, so a
 * stale buffer from an earlier size or the other direction never passes. */
void em_fill(unsigned char *buf, size_t size, unsigned dir);
/* Pre-fill a receive buffer with the complement of what should arrive. */
void em_poison(unsigned char *buf, size_t size, unsigned dir);
/* Index of the first wrong byte, or SIZE_MAX if all bytes are right. */
size_t em_check(const unsigned char *buf, size_t size, unsigned dir);

/* One checked round trip between ranks a and b (a sends first, then b
 * replies with different content).  Called by a and b only; any other
 * rank must not call it.  Aborts the job on a content or length mismatch. */
void em_verify_exchange(const struct em_opts *o, int me, int a, int b, size_t size,
                        unsigned char *sbuf, unsigned char *rbuf);

/* Table output (rank 0 only). */
void em_print_header(const char *bench, int ncols, const char *const *metrics,
                     const char *const *units);
void em_print_row(size_t size, int ncols, const double *values);

/* The skeleton every size-sweeping benchmark shares: em_setup, the sizes,
 * a send buffer of max_size + 1 bytes and a receive buffer of
 * rbuf_bytes + 1 bytes (em_bench_begin), and the closing barrier, frees
 * and MPI_Finalize (em_bench_end). */
struct em_bench {
    const struct em_prog *prog;
    struct em_opts o;
    int rank, nranks;
    size_t sizes[64];
    size_t nsizes;
    unsigned char *sbuf, *rbuf;
};

/* rbuf_bytes 0 means o.max_size (one message); it is computed after the
 * options are parsed by calling rbuf_size(o) when that is not NULL. */
void em_bench_begin(struct em_bench *b, int *argc, char ***argv, const struct em_prog *p,
                    size_t (*rbuf_size)(const struct em_opts *o));
void em_bench_end(struct em_bench *b);

/* em_bench_begin for the windowed programs: the receive buffer is the
 * receive area (em_recv_area, its size in *area) and the result is an
 * array of per_window * o.window requests (exits on failure). */
MPI_Request *em_bench_window_begin(struct em_bench *b, int *argc, char ***argv,
                                   const struct em_prog *p, int per_window, size_t *area);

/* Rank 0 only: the description line and the one-column bandwidth (MB/s)
 * header of a windowed program; pair is e.g. "0 -> 1", note follows
 * "window N" (e.g. " each way"). */
void em_bench_window_header(const struct em_bench *b, const char *pair, const char *note);

/* Rank 0 only: the description line and header of a many-to-one program
 * (pattern N-1:1; role of rank 0, e.g. "receiver"; what each other rank
 * does per size, e.g. "messages per sender"). */
void em_bench_counted_header(const struct em_bench *b, const char *const *metrics,
                             const char *const *units, const char *role, const char *what);

/* One round of a timed loop (a round trip, a window, ...). */
typedef void (*em_round_fn)(struct em_bench *b, size_t size, void *ctx);

/* Runs warm untimed rounds, then iters timed ones; returns the seconds the
 * timed ones took (MPI_Wtime). */
double em_bench_time(struct em_bench *b, size_t size, long warm, long iters, em_round_fn round,
                     void *ctx);

/* The receive slots and requests a windowed round works with. */
struct em_window {
    MPI_Request *req; /* per_window * o.window requests */
    size_t slots;     /* receive slots of the current size (em_recv_slots) */
};

/* A windowed-bandwidth program: ranks 0 and 1 run round0 / round1 (ctx is
 * the struct em_window), per_window request sets per window, directions
 * byte streams counted in the MB/s; pair and note go to the description
 * (em_bench_window_header).  Returns main's exit status. */
struct em_windowed {
    const struct em_prog *prog;
    int per_window, directions;
    const char *pair, *note;
    em_round_fn round0, round1;
};
int em_windowed_main(int argc, char **argv, const struct em_windowed *w);

/* A content check of this size between rank 0 and every other rank, one
 * after the other (the many-to-one programs). */
void em_bench_verify_all(struct em_bench *b, size_t size);

/* Rank 0 only: the "# ..." description line (printf format) and the
 * table header of ncols metrics. */
void em_bench_header(const struct em_bench *b, int ncols, const char *const *metrics,
                     const char *const *units, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Ranks 0 and 1 do one checked round trip of this size, then all ranks
 * meet at a barrier. */
void em_bench_verify_pair(struct em_bench *b, size_t size);

/* Receive slots of this size that fit the receive area, at most o->window
 * (a window of receives wraps over them). */
size_t em_recv_slots(const struct em_opts *o, size_t area, size_t size);

/* Posts o->window non-blocking receives of size bytes from peer into the
 * receive area (slot w % slots), requests in req[0 .. window-1]. */
void em_post_window_recvs(const struct em_opts *o, unsigned char *area, size_t slots, size_t size,
                          int peer, MPI_Request *req);

/* Sorts v in place and returns the median (n > 0). */
double em_median(double *v, size_t n);
double em_mean(const double *v, size_t n);

#endif
