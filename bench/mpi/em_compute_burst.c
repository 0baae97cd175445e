/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * em_compute_burst -- [dpdk-btl]'s case for the node daemon: the receiver
 * (rank 0) computes for 100 ms without any MPI call while the sender
 * (rank 1) bursts -n eager messages (default 10,000 of 256 B) at it; then
 * the receiver takes them all.  Reports, per size:
 *
 *   completion   s      from the common start (after a barrier) until the
 *                       receiver has the last message (>= 0.1 s)
 *   drops        count  frames lost before the protocol saw them (dpdk BTL:
 *                       daemon rx ring overflow, injected loss), both ranks
 *   retransmits  count  protocol retransmissions, both ranks
 *   timeouts     count  retransmit timer expiries, both ranks
 *   sender_done  s      when the sender's MPI_Waitall returned (eager sends
 *                       complete locally, so this is the sender's own cost)
 *
 * The counters come from the dpdk BTL (em_btl_dpdk_counters, looked up in
 * the loaded component); with any other transport they read -1.
 */
#include "em_common.h"
#include "util/clock.h"

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define COMPUTE_NS 100000000ull /* 100 ms */

static const struct em_prog prog = {
    .prog = "em_compute_burst",
    .bench = "compute-burst",
    .summary = "receiver computes 100 ms without MPI calls while the sender bursts -n eager "
               "messages; completion time, drops, retransmits",
    .optmask = EM_OPT_SIZES | EM_OPT_COUNT,
    .normal = { .min_size = 256, .max_size = 256, .count = 10000 },
    .quick = { .min_size = 256, .max_size = 256, .count = 1000 },
};

typedef int (*counters_fn)(uint64_t *out, int n);

static int find_dpdk(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    const char *n = info->dlpi_name;
    size_t l = n ? strlen(n) : 0;
    if (l >= 15 && strcmp(n + l - 15, "mca_btl_dpdk.so") == 0) {
        snprintf(data, 4096, "%s", n);
        return 1;
    }
    return 0;
}

/* The dpdk BTL's counters, if that component is loaded (after MPI_Init). */
static counters_fn lookup_counters(void)
{
    char path[4096] = "";
    dl_iterate_phdr(find_dpdk, path);
    if (!path[0])
        return NULL;
    void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    return h ? (counters_fn)(uintptr_t)dlsym(h, "em_btl_dpdk_counters") : NULL;
}

static uint64_t now_ns(void) { return em_clock_ns(); }

/* Work the compiler cannot remove, with no MPI call inside. */
static double compute(uint64_t ns)
{
    volatile double acc = 1.0;
    uint64_t t0 = now_ns();
    while (now_ns() - t0 < ns)
        for (int i = 0; i < 1000; i++)
            acc = acc * 1.0000001 + 1e-9;
    return acc;
}

int main(int argc, char **argv)
{
    int rank, nranks;
    struct em_opts o = em_setup(&argc, &argv, &prog, &rank, &nranks);
    size_t sizes[64];
    size_t nsizes = em_sizes(&o, sizes, 64);

    if (nranks != 2) {
        if (rank == 0)
            fprintf(stderr, "em_compute_burst: needs exactly 2 ranks\n");
        MPI_Finalize();
        return 2;
    }
    long n = o.count;
    counters_fn counters = lookup_counters();
    unsigned char *buf = em_alloc(o.max_size * (size_t)n + 1);
    MPI_Request *req = malloc(sizeof *req * (size_t)n);
    if (!req)
        em_fail("out of memory");

    if (rank == 0) {
        static const char *const metric[] = { "completion", "drops", "retransmits", "timeouts",
                                              "sender_done" };
        static const char *const unit[] = { "s", "count", "count", "count", "s" };
        printf("# em_compute_burst: receiver rank 0 computes %.0f ms, rank 1 sends %ld messages "
               "per size; counters %s\n",
               COMPUTE_NS / 1e6, n,
               counters ? "from the dpdk BTL" : "unavailable (not the dpdk BTL): -1");
        em_print_header(prog.bench, 5, metric, unit);
    }

    for (size_t k = 0; k < nsizes; k++) {
        size_t size = sizes[k];
        uint64_t c0[5] = { 0 }, c1[5] = { 0 };
        int have = counters && counters(c0, 5) == 5;
        EM_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        double t0 = MPI_Wtime();
        if (rank == 1) {
            for (long i = 0; i < n; i++) {
                unsigned char *m = buf + (size_t)i * size;
                em_fill(m, size, (unsigned)(i & 0xff));
                EM_CHECK(
                    MPI_Isend(m, (int)size, MPI_BYTE, 0, EM_TAG_DATA, MPI_COMM_WORLD, &req[i]));
            }
            EM_CHECK(MPI_Waitall((int)n, req, MPI_STATUSES_IGNORE));
        } else {
            (void)compute(COMPUTE_NS);
            for (long i = 0; i < n; i++)
                EM_CHECK(MPI_Irecv(buf + (size_t)i * size, (int)size, MPI_BYTE, 1, EM_TAG_DATA,
                                   MPI_COMM_WORLD, &req[i]));
            EM_CHECK(MPI_Waitall((int)n, req, MPI_STATUSES_IGNORE));
        }
        double done = MPI_Wtime() - t0, sender_done = done;
        if (rank == 0) {
            if (o.corrupt && size)
                buf[0] ^= 0xff; /* -C: the check below must catch this */
            for (long i = 0; i < n; i += (n / 16) + 1) {
                size_t bad = em_check(buf + (size_t)i * size, size, (unsigned)(i & 0xff));
                if (bad != (size_t)-1)
                    em_fail("content mismatch: message %ld of %zu B, byte %zu", i, size, bad);
            }
        }
        /* the sender's sends complete before their ACKs arrive: count
         * retransmits once both ranks are through */
        EM_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        have = have && counters(c1, 5) == 5;
        if (rank == 1)
            EM_CHECK(MPI_Send(&done, 1, MPI_DOUBLE, 0, EM_TAG_RESULT, MPI_COMM_WORLD));
        else
            EM_CHECK(MPI_Recv(&sender_done, 1, MPI_DOUBLE, 1, EM_TAG_RESULT, MPI_COMM_WORLD,
                              MPI_STATUS_IGNORE));
        double local[3] = { -1, -1, -1 }, sum[3];
        if (have)
            for (int j = 0; j < 3; j++)
                local[j] = (double)(c1[j + 1] - c0[j + 1]);
        int all_have = 0;
        EM_CHECK(MPI_Allreduce(&have, &all_have, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
        EM_CHECK(MPI_Reduce(local, sum, 3, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD));
        if (rank == 0)
            printf("%-10zu %14.6f %14.0f %14.0f %14.0f %14.6f\n", size, done,
                   all_have ? sum[0] : -1.0, all_have ? sum[1] : -1.0, all_have ? sum[2] : -1.0,
                   sender_done);
        fflush(stdout);
    }
    free(req);
    MPI_Finalize();
    return 0;
}
