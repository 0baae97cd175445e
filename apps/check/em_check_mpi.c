/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * em-check-mpi: do two nodes talk over this MPI path, and how fast?
 * (docs/deploy.md "Checking two nodes", ethermpi-check(1))
 *
 * Exactly 2 ranks, one per node (mpirun -np 2 --map-by node, srun -N2 -n2).
 * For each size: a ping-pong (latency: half the round trip) and a windowed
 * stream rank 0 -> rank 1 (bandwidth: W messages in flight, then a 4-byte
 * ack), every byte of every message checked against a pattern depending on
 * size, iteration and sender (check_pattern.h).  Each is measured
 * --repeats times; the median of the repeats is printed.  Filling and
 * checking the buffers is kept outside the timed parts.
 *
 * Options: --sizes LIST (default 8 B .. 4 MiB), --iters N, --repeats R
 * (default 3), --window W (default 64), --json (one JSON document instead
 * of the table and the RESULT lines).  EM_CHECK_FLIP=SIZE (testing the
 * check) corrupts one byte rank 1 sends at that size.
 *
 * Exit: 0 when every byte arrived right, 1 on a wrong byte (where: size,
 * iteration, offset, wanted and got, printed by the rank that saw it),
 * 2 on a usage error (not 2 ranks, bad option).
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_pattern.h"

#define MAX_SIZES   32
#define MAX_REPEATS 64
#define MAX_REPORTS 5 /* wrong bytes printed per rank */

struct opts {
    size_t sizes[MAX_SIZES];
    int nsizes, iters, repeats, window, json;
};

struct row {
    size_t size;
    double lat_us, lat_min_us, bw_mbps;
    unsigned long long bytes_checked, errors;
};

static int g_rank;
static unsigned long long g_errors, g_checked;
static size_t g_flip; /* EM_CHECK_FLIP, 0 = off */

static void usage_exit(const char *why)
{
    if (g_rank == 0)
        fprintf(stderr,
                "em-check-mpi: %s\nusage: mpirun -np 2 --map-by node em-check-mpi [--sizes "
                "LIST] [--iters N] [--repeats R] [--window W] [--json]\n",
                why);
    MPI_Finalize();
    exit(2);
}

static void parse(int argc, char **argv, struct opts *o)
{
    o->nsizes = chk_default_sizes(o->sizes);
    o->iters = 0;
    o->repeats = 3;
    o->window = 0;
    o->json = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--json")) {
            o->json = 1;
            continue;
        }
        if (!v)
            usage_exit(!strcmp(a, "-h") || !strcmp(a, "--help")
                           ? "two-node check (ethermpi-check(1))"
                           : "option without value");
        if (!strcmp(a, "--sizes")) {
            if (!(o->nsizes = chk_parse_sizes(v, o->sizes, MAX_SIZES)))
                usage_exit("--sizes wants a list like 8,64,4k,1M (1 B .. 1 GiB)");
        } else if (!strcmp(a, "--iters")) {
            o->iters = atoi(v);
        } else if (!strcmp(a, "--repeats")) {
            o->repeats = atoi(v);
        } else if (!strcmp(a, "--window")) {
            o->window = atoi(v);
        } else {
            usage_exit("unknown option");
        }
        i++;
    }
    if (o->repeats < 1 || o->repeats > MAX_REPEATS || o->iters < 0 || o->window < 0)
        usage_exit("--repeats wants 1..64, --iters and --window a positive count");
}

/* checks a received message; the first MAX_REPORTS wrong ones are printed */
static void verify(const unsigned char *b, size_t size, uint64_t iter, int from, const char *what)
{
    unsigned want, got;
    long at = chk_verify(b, size, iter, from, &want, &got);
    g_checked += size;
    if (at < 0)
        return;
    if (g_errors++ < MAX_REPORTS)
        fprintf(stderr,
                "em-check-mpi: rank %d: WRONG DATA in %s from rank %d: size %zu iteration %llu "
                "byte %ld: got 0x%02x, want 0x%02x\n",
                g_rank, what, from, size, (unsigned long long)iter, at, got, want);
}

static void fill(unsigned char *b, size_t size, uint64_t iter)
{
    chk_fill(b, size, iter, g_rank);
    if (g_flip == size && g_rank == 1 && iter == 0) {
        b[size / 2] ^= 0x10;
        fprintf(stderr,
                "em-check-mpi: rank 1: EM_CHECK_FLIP=%zu: byte %zu of the first message "
                "corrupted on purpose\n",
                size, size / 2);
    }
}

/* one repeat of the ping-pong: the mean half round trip in us */
static double pingpong(size_t size, int iters, int rep, unsigned char *sb, unsigned char *rb)
{
    int peer = 1 - g_rank;
    double t = 0;
    int warm = iters / 10 + 1; /* i < 0: warm-up rounds, not timed */
    for (int i = -warm; i < iters; i++) {
        uint64_t it = (uint64_t)rep * 1000003u + (uint64_t)(i + warm);
        fill(sb, size, it);
        if (g_rank == 0) {
            double t0 = MPI_Wtime();
            MPI_Send(sb, (int)size, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
            MPI_Recv(rb, (int)size, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (i >= 0)
                t += MPI_Wtime() - t0;
        } else {
            MPI_Recv(rb, (int)size, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(sb, (int)size, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
        }
        verify(rb, size, it, peer, "ping-pong");
    }
    return t / iters / 2 * 1e6;
}

/* one repeat of the stream: MB/s (10^6 bytes) seen by rank 0 */
static double stream(size_t size, int windows, int w, int rep, unsigned char *buf)
{
    MPI_Request req[64];
    double t = 0;
    int ack = 0;
    for (int k = -1; k < windows; k++) { /* k = -1: warm-up, not timed */
        uint64_t it0 = 500000000ull + (uint64_t)rep * 1000003u + (uint64_t)(k + 1) * (uint64_t)w;
        if (g_rank == 0) {
            for (int j = 0; j < w; j++)
                fill(buf + (size_t)j * size, size, it0 + (uint64_t)j);
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            for (int j = 0; j < w; j++)
                MPI_Isend(buf + (size_t)j * size, (int)size, MPI_BYTE, 1, 2, MPI_COMM_WORLD,
                          &req[j]);
            MPI_Waitall(w, req, MPI_STATUSES_IGNORE);
            MPI_Recv(&ack, 1, MPI_INT, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (k >= 0)
                t += MPI_Wtime() - t0;
        } else {
            for (int j = 0; j < w; j++)
                MPI_Irecv(buf + (size_t)j * size, (int)size, MPI_BYTE, 0, 2, MPI_COMM_WORLD,
                          &req[j]);
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Waitall(w, req, MPI_STATUSES_IGNORE);
            MPI_Send(&ack, 1, MPI_INT, 0, 3, MPI_COMM_WORLD);
            for (int j = 0; j < w; j++)
                verify(buf + (size_t)j * size, size, it0 + (uint64_t)j, 0, "stream");
        }
    }
    return t > 0 ? (double)size * w * windows / t / 1e6 : 0;
}

static void measure(const struct opts *o, size_t size, struct row *r)
{
    int iters = chk_iters(size, o->iters), w = chk_window(size, o->window);
    if (w > 64)
        w = 64;
    int windows = (int)((64u << 20) / ((size_t)w * size));
    windows = windows > 100 ? 100 : windows < 4 ? 4 : windows;
    unsigned char *sb = malloc(size), *rb = malloc(size), *wb = malloc(size * (size_t)w);
    if (!sb || !rb || !wb) {
        fprintf(stderr, "em-check-mpi: rank %d: out of memory for %zu-byte buffers\n", g_rank,
                size);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    double lat[MAX_REPEATS], bw[MAX_REPEATS];
    unsigned long long e0 = g_errors, c0 = g_checked;
    for (int rep = 0; rep < o->repeats; rep++) {
        lat[rep] = pingpong(size, iters, rep, sb, rb);
        bw[rep] = stream(size, windows, w, rep, wb);
    }
    r->size = size;
    r->lat_us = chk_median(lat, o->repeats);
    r->lat_min_us = lat[0];
    r->bw_mbps = chk_median(bw, o->repeats);
    unsigned long long mine[2] = { g_errors - e0, g_checked - c0 }, all[2];
    MPI_Allreduce(mine, all, 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    r->errors = all[0];
    r->bytes_checked = all[1];
    free(sb);
    free(rb);
    free(wb);
}

/* the string value of MPI_T control variable @p name ("" when unset or
 * unknown) */
static void cvar_string(const char *name, char *out, int outlen)
{
    int idx, count;
    MPI_T_cvar_handle h;
    out[0] = 0;
    if (MPI_T_cvar_get_index(name, &idx) != MPI_SUCCESS)
        return;
    if (MPI_T_cvar_handle_alloc(idx, NULL, &h, &count) != MPI_SUCCESS)
        return;
    char *buf = calloc(1, (size_t)(count > 0 ? count : 1) + 1);
    if (buf && count > 0 && MPI_T_cvar_read(h, buf) == MPI_SUCCESS)
        snprintf(out, (size_t)outlen, "%s", buf);
    free(buf);
    MPI_T_cvar_handle_free(&h);
}

/* which BTL carries rank 0 <-> rank 1 traffic, as far as can be known:
 * with pml ob1 and one network BTL in the btl list (self, vader, sm only
 * reach the same node), that one; otherwise the list, said to be a list */
static void path_of(char *carrier, size_t len, char *btl, char *pml, int same_host)
{
    char b[512], p[128];
    cvar_string("btl", b, sizeof b);
    cvar_string("pml", p, sizeof p);
    snprintf(btl, 512, "%s", b[0] ? b : "(not set: Open MPI's default list)");
    snprintf(pml, 128, "%s", p[0] ? p : "(not set)");
    if (p[0] && strcmp(p, "ob1")) {
        snprintf(carrier, len, "pml %s (no BTL)", p);
        return;
    }
    char net[512] = "", *save = NULL;
    int nnet = 0;
    for (char *t = strtok_r(b, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (!strcmp(t, "self") || !strcmp(t, "vader") || !strcmp(t, "sm"))
            continue;
        nnet++;
        snprintf(net, sizeof net, "%s", t);
    }
    if (same_host)
        snprintf(carrier, len, "shared memory or loopback (both ranks on one host)");
    else if (nnet == 1 && net[0] != '^')
        snprintf(carrier, len, "%s", net);
    else
        snprintf(carrier, len, "not known (btl list %s; one network BTL in the list tells)",
                 b[0] ? btl : "unset");
}

static void print_table(const struct opts *o, struct row *rows, const char *h0, const char *h1,
                        const char *carrier, const char *btl, const char *pml, int same)
{
    printf("em-check-mpi: rank 0 on %s, rank 1 on %s\n", h0, h1);
    if (same)
        printf("em-check-mpi: WARNING: both ranks run on host %s: this measured one host, not "
               "two nodes talking (mpirun --map-by node with two hosts, srun -N2)\n",
               h0);
    printf("em-check-mpi: carried by: %s (btl %s, pml %s)\n", carrier, btl, pml);
    printf("%10s %12s %14s %14s  %s\n", "size_B", "latency_us", "bandwidth_MBps", "bytes_checked",
           "data");
    for (int i = 0; i < o->nsizes; i++)
        printf("%10zu %12.2f %14.1f %14llu  %s\n", rows[i].size, rows[i].lat_us, rows[i].bw_mbps,
               rows[i].bytes_checked, rows[i].errors ? "WRONG" : "ok");
    for (int i = 0; i < o->nsizes; i++)
        printf("RESULT size=%zu lat_us=%.3f bw_MBps=%.2f bytes_checked=%llu errors=%llu\n",
               rows[i].size, rows[i].lat_us, rows[i].bw_mbps, rows[i].bytes_checked,
               rows[i].errors);
}

static void print_json(const struct opts *o, struct row *rows, const char *h0, const char *h1,
                       const char *carrier, const char *btl, const char *pml, int same)
{
    printf("{\"program\": \"em-check-mpi\", \"hosts\": [\"%s\", \"%s\"], \"same_host\": %s, "
           "\"carried_by\": \"%s\", \"btl\": \"%s\", \"pml\": \"%s\", \"repeats\": %d, "
           "\"rows\": [",
           h0, h1, same ? "true" : "false", carrier, btl, pml, o->repeats);
    for (int i = 0; i < o->nsizes; i++)
        printf("%s\n  {\"size\": %zu, \"lat_us\": %.3f, \"bw_MBps\": %.2f, \"bytes_checked\": "
               "%llu, \"errors\": %llu, \"lat_min_us\": %.3f}",
               i ? "," : "", rows[i].size, rows[i].lat_us, rows[i].bw_mbps, rows[i].bytes_checked,
               rows[i].errors, rows[i].lat_min_us);
    printf("]}\n");
}

int main(int argc, char **argv)
{
    int n, prov;
    MPI_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &prov);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (n != 2)
        usage_exit("needs exactly 2 ranks, one per node (mpirun -np 2 --map-by node, "
                   "srun -N2 -n2)");
    struct opts o;
    parse(argc, argv, &o);
    g_flip = chk_flip_size();
    char hosts[2][MPI_MAX_PROCESSOR_NAME] = { { 0 } }, me[MPI_MAX_PROCESSOR_NAME] = { 0 };
    int len;
    MPI_Get_processor_name(me, &len);
    MPI_Gather(me, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, hosts, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0,
               MPI_COMM_WORLD);
    MPI_Bcast(hosts, 2 * MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, MPI_COMM_WORLD);
    int same = !strcmp(hosts[0], hosts[1]);
    struct row rows[MAX_SIZES];
    unsigned long long bad = 0;
    for (int i = 0; i < o.nsizes; i++) {
        measure(&o, o.sizes[i], &rows[i]);
        bad += rows[i].errors;
    }
    if (g_rank == 0) {
        char carrier[600], btl[512], pml[128];
        path_of(carrier, sizeof carrier, btl, pml, same);
        if (same)
            fprintf(stderr,
                    "em-check-mpi: WARNING: both ranks run on host %s: not a two-node "
                    "check\n",
                    hosts[0]);
        (o.json ? print_json : print_table)(&o, rows, hosts[0], hosts[1], carrier, btl, pml, same);
        if (bad)
            fprintf(stderr,
                    "em-check-mpi: FAILED: %llu message(s) arrived with wrong bytes "
                    "(first ones above)\n",
                    bad);
        fflush(stdout);
    }
    MPI_T_finalize();
    MPI_Finalize();
    return bad ? 1 : 0;
}
