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

enum em_tag {
    EM_TAG_DATA = 100,
    EM_TAG_ACK = 101,
    EM_TAG_VERIFY = 102,
    EM_TAG_RESULT = 103,
};

/* Option letters a program may accept (bitmask for em_setup). */
enum em_optmask {
    EM_OPT_SIZES = 1u << 0,  /* -m MIN:MAX */
    EM_OPT_ITERS = 1u << 1,  /* -i N[:M]   */
    EM_OPT_WARMUP = 1u << 2, /* -w N[:M]   */
    EM_OPT_COUNT = 1u << 3,  /* -n N       */
    EM_OPT_WINDOW = 1u << 4, /* -W N       */
    EM_OPT_BUDGET = 1u << 5, /* -B BYTES   */
};

struct em_opts {
    size_t min_size;
    size_t max_size;
    long iters_small;   /* timed iterations, size <= EM_LARGE_THRESHOLD */
    long iters_large;   /* timed iterations, size >  EM_LARGE_THRESHOLD */
    long warmup_small;
    long warmup_large;
    long count;         /* messages / round trips per sender (-n) */
    long count_warmup;  /* untimed messages before each count run */
    int window;         /* messages in flight (-W) */
    size_t budget;      /* bytes per size and direction for large sizes (-B) */
    int quick;          /* -q was given */
    int corrupt;        /* -C: self-test, flip a received byte on purpose */
};

struct em_prog {
    const char *prog;   /* executable name, for messages */
    const char *bench;  /* benchmark name in the header line */
    const char *summary;
    unsigned optmask;
    struct em_opts normal;
    struct em_opts quick;
    int min_ranks;      /* em_setup refuses fewer ranks (exit 2); 0 = any */
};

/* Error path for MPI calls: print the MPI error string and abort the job. */
#define EM_CHECK(call)                                                      \
    do {                                                                    \
        int em_rc_ = (call);                                                \
        if (em_rc_ != MPI_SUCCESS)                                          \
            em_mpi_fail(em_rc_, #call, __FILE__, __LINE__);                 \
    } while (0)

/* MPI_Init, error handler, option parsing.  Returns the options; on bad
 * options or -h every rank finalizes and exits itself. */
struct em_opts em_setup(int *argc, char ***argv, const struct em_prog *p,
                        int *rank, int *nranks);

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
/* Iterations for windowed bandwidth tests: for large sizes the count is cut
 * so that size*window*iters stays near the byte budget (at least 1). */
long em_bw_iters(const struct em_opts *o, size_t size);
long em_bw_warmup(const struct em_opts *o, size_t size);

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
void em_verify_exchange(const struct em_opts *o, int me, int a, int b,
                        size_t size, unsigned char *sbuf, unsigned char *rbuf);

/* Table output (rank 0 only). */
void em_print_header(const char *bench, int ncols, const char *const *metrics,
                     const char *const *units);
void em_print_row(size_t size, int ncols, const double *values);

/* Sorts v in place and returns the median (n > 0). */
double em_median(double *v, size_t n);
double em_mean(const double *v, size_t n);

#endif
