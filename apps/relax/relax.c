/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * relax: distributed asynchronous relaxation for Ax = b ([relax-dpdk]).
 *
 * Rank 0 is the convergence-judging rank; ranks 1..P are iterative ranks,
 * each owning a contiguous block of rows.  Transports for the x updates:
 *
 *   udp-bcast      em_bcast over kernel UDP broadcast (the paper's baseline)
 *   dpdk-bcast     em_bcast over link_dpdk, L2 broadcast, ethertype 0x88B6
 *   xdp-bcast      the same on the native AF_XDP link (no DPDK), interface
 *                  -i; its queue is one process's: one iterative rank per node
 *   mpi-allgather  reliable baseline: synchronous Jacobi, MPI_Allgatherv
 *
 * Asynchronous transports: an iterative rank relaxes its rows in place
 * (Gauss-Seidel inside its block, whatever x it has for the others),
 * broadcasts every k freshly computed elements in one frame (k = elements
 * per packet), and applies whatever updates have arrived after each frame.
 * After each sweep it reports its relative change to the judge over MPI.
 * The judge declares convergence when every rank's last two sweeps changed
 * x by less than the tolerance, stops everyone (MPI), gathers x and
 * verifies the true residual ||b - Ax|| / ||b|| from the generator
 * (system.h), independently of the ranks' stored rows.  Not converged:
 * every rank restarts from the gathered x with a tolerance ten times
 * tighter.  Control traffic (status, stop, gather, restart) is MPI; only
 * the x updates travel on the lossy channel.
 *
 * The judge sleeps between MPI polls (it needs no core of its own); every
 * iterative rank busy-polls, so run at most as many iterative ranks as
 * there are cores.
 *
 * Output (rank 0, stdout): "# em-relax v1" and one line of key=value pairs
 * (docs/relax.md).  Exit status 0 = solution verified, 1 = not verified or
 * an error (message on stderr), 2 = usage.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

#include "bcast/em_bcast.h"
#ifdef EM_BCAST_HAVE_DPDK
#include "link/link_dpdk.h"
#endif
#include "system.h"

enum { T_UDP = 1, T_DPDK = 2, T_MPI = 3, T_XDP = 4 };
enum { TAG_STATUS = 701, TAG_FINAL = 702, TAG_CTRL = 703 };
enum { CMD_STOP = 1 };
enum { NEXT_DONE = 0, NEXT_RESTART = 1 };

/* FINAL message: what an iterative rank reports when it stops */
enum {
    F_SWEEPS,
    F_SENT,
    F_SEND_FULL,
    F_RECEIVED,
    F_DROPPED,
    F_GAPS,
    F_REJECTED,
    F_LATE,
    F_OVER_TIME,
    F_OWN,
    F_COUNT
};

struct opts {
    int transport;
    const char *tname;
    uint32_t n, k, nnz;
    double ratio, tol, dtol, time_limit, loss_pct;
    uint64_t seed;
    const char *iface, *vdev, *eal_args;
    uint16_t port;
    int check_direct, max_restarts, quiet;
    int framing; /* dpdk-bcast, xdp-bcast: 1 = udp framing */
};

static int rank, size;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "relax: rank %d: ", rank);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: mpirun -np 1+P relax -t TRANSPORT [options]\n"
        "  rank 0 judges convergence; ranks 1..P iterate (one per core at most)\n"
        "  -t, --transport T   udp-bcast | dpdk-bcast | xdp-bcast | mpi-allgather\n"
        "  -n, --n N           unknowns (default 2000)\n"
        "  -k, --elements K    elements per packet, 0 = as many as a frame holds (default 0)\n"
        "  -s, --sparse NNZ    sparse: NNZ off-diagonal elements per row (default 0 = dense)\n"
        "  -r, --ratio R       off-diagonal row sum / diagonal, 0<R<1 (default 0.5)\n"
        "      --tol T         verified residual ||b-Ax||/||b|| must be <= T (default 1e-6)\n"
        "      --dtol D        judge's change tolerance per sweep (default T/100)\n"
        "  -T, --time-limit S  give up after S seconds (default 60)\n"
        "      --seed S        system seed (default 1)\n"
        "  -i, --iface IF      udp-bcast, xdp-bcast: interface (default eth0)\n"
        "  -p, --port P        udp-bcast: UDP port (default 47603)\n"
        "  -d, --vdev SPEC     dpdk-bcast: devargs or @FILE; %%h = host name, %%j = job key\n"
        "      --eal-args A    dpdk-bcast: extra EAL arguments\n"
        "      --framing F     dpdk-bcast, xdp-bcast: l2 (default) or udp (UDP/IPv4; across a\n"
        "                      router the updates fan out by unicast)\n"
        "      --loss PCT      dpdk-bcast, xdp-bcast: injected receive loss in %% (udp: set it on\n"
        "                      the wire, e.g. emcluster xdploss; the value is then only\n"
        "                      reported)\n"
        "      --check-direct  judge also solves directly (n <= 3000) and compares x\n"
        "      --max-restarts M  (default 5)\n"
        "  -q, --quiet         no progress lines on stderr\n");
}

static void parse(int argc, char **argv, struct opts *o)
{
    static const struct option lo[] = { { "transport", 1, 0, 't' },  { "n", 1, 0, 'n' },
                                        { "elements", 1, 0, 'k' },   { "sparse", 1, 0, 's' },
                                        { "ratio", 1, 0, 'r' },      { "tol", 1, 0, 1 },
                                        { "dtol", 1, 0, 2 },         { "time-limit", 1, 0, 'T' },
                                        { "seed", 1, 0, 3 },         { "iface", 1, 0, 'i' },
                                        { "port", 1, 0, 'p' },       { "vdev", 1, 0, 'd' },
                                        { "eal-args", 1, 0, 4 },     { "loss", 1, 0, 5 },
                                        { "check-direct", 0, 0, 6 }, { "max-restarts", 1, 0, 7 },
                                        { "quiet", 0, 0, 'q' },      { "help", 0, 0, 'h' },
                                        { "framing", 1, 0, 8 },      { 0, 0, 0, 0 } };
    *o = (struct opts){ .n = 2000,
                        .ratio = 0.5,
                        .tol = 1e-6,
                        .time_limit = 60,
                        .seed = 1,
                        .iface = "eth0",
                        .max_restarts = 5 };
    int c;
    char *end;
    while ((c = getopt_long(argc, argv, "t:n:k:s:r:T:i:p:d:qh", lo, NULL)) != -1) {
        errno = 0;
        switch (c) {
        case 't': o->tname = optarg; break;
        case 'n':
            o->n = (uint32_t)strtoul(optarg, &end, 10);
            if (*end || o->n < 2)
                goto bad;
            break;
        case 'k':
            o->k = (uint32_t)strtoul(optarg, &end, 10);
            if (*end)
                goto bad;
            break;
        case 's':
            o->nnz = (uint32_t)strtoul(optarg, &end, 10);
            if (*end)
                goto bad;
            break;
        case 'r':
            o->ratio = strtod(optarg, &end);
            if (*end || !(o->ratio > 0 && o->ratio < 1))
                goto bad;
            break;
        case 1:
            o->tol = strtod(optarg, &end);
            if (*end || !(o->tol > 0))
                goto bad;
            break;
        case 2:
            o->dtol = strtod(optarg, &end);
            if (*end || !(o->dtol > 0))
                goto bad;
            break;
        case 'T':
            o->time_limit = strtod(optarg, &end);
            if (*end || !(o->time_limit > 0))
                goto bad;
            break;
        case 3:
            o->seed = strtoull(optarg, &end, 0);
            if (*end)
                goto bad;
            break;
        case 'i': o->iface = optarg; break;
        case 'p': {
            unsigned long v = strtoul(optarg, &end, 10);
            if (*end || v == 0 || v > 65535)
                goto bad;
            o->port = (uint16_t)v;
            break;
        }
        case 'd': o->vdev = optarg; break;
        case 4: o->eal_args = optarg; break;
        case 5:
            o->loss_pct = strtod(optarg, &end);
            if (*end || o->loss_pct < 0 || o->loss_pct >= 100)
                goto bad;
            break;
        case 6: o->check_direct = 1; break;
        case 7: o->max_restarts = atoi(optarg); break;
        case 'q': o->quiet = 1; break;
        case 8:
            if (strcmp(optarg, "udp") && strcmp(optarg, "l2"))
                goto bad;
            o->framing = !strcmp(optarg, "udp");
            break;
        case 'h':
            if (rank == 0)
                usage(stdout);
            MPI_Finalize();
            exit(0);
        default: goto bad_nomsg;
        }
        continue;
    bad:
        if (rank == 0)
            fprintf(stderr, "relax: bad value '%s' for option -%c\n", optarg, c < 32 ? '-' : c);
    bad_nomsg:
        if (rank == 0)
            usage(stderr);
        MPI_Finalize();
        exit(2);
    }
    if (!o->tname || !strcmp(o->tname, "")) {
        if (rank == 0) {
            fprintf(stderr, "relax: choose a transport with -t (udp-bcast, dpdk-bcast, xdp-bcast, "
                            "mpi-allgather)\n");
            usage(stderr);
        }
        MPI_Finalize();
        exit(2);
    }
    if (!strcmp(o->tname, "udp-bcast") || !strcmp(o->tname, "udp"))
        o->transport = T_UDP, o->tname = "udp-bcast";
    else if (!strcmp(o->tname, "dpdk-bcast") || !strcmp(o->tname, "dpdk"))
        o->transport = T_DPDK, o->tname = "dpdk-bcast";
    else if (!strcmp(o->tname, "xdp-bcast") || !strcmp(o->tname, "xdp"))
        o->transport = T_XDP, o->tname = "xdp-bcast";
    else if (!strcmp(o->tname, "mpi-allgather") || !strcmp(o->tname, "mpi"))
        o->transport = T_MPI, o->tname = "mpi-allgather";
    else {
        if (rank == 0)
            fprintf(stderr,
                    "relax: unknown transport '%s' (udp-bcast, dpdk-bcast, xdp-bcast, "
                    "mpi-allgather)\n",
                    o->tname);
        MPI_Finalize();
        exit(2);
    }
    if (o->transport == T_DPDK && !o->vdev) {
        if (rank == 0)
            fprintf(stderr,
                    "relax: dpdk-bcast needs a device: -d DEVARGS or -d @FILE "
                    "(on the emulated cluster: -d @/run/ethermpi/<prefix>/dpdk/%%h.memif)\n");
        MPI_Finalize();
        exit(2);
    }
    if (o->nnz && o->nnz >= o->n) {
        if (rank == 0)
            fprintf(stderr, "relax: --sparse %u must be below n = %u\n", o->nnz, o->n);
        MPI_Finalize();
        exit(2);
    }
    if (!o->dtol)
        o->dtol = o->tol / 100;
}

static void sleep_us(long us)
{
    struct timespec ts = { 0, us * 1000 };
    nanosleep(&ts, NULL);
}

/* Wait for @p rq, sleeping between tests: a rank waiting for the judge
 * (which is verifying on a shared core) must not busy-poll. */
static void wait_sleeping(MPI_Request *rq)
{
    int done = 0;
    for (;;) {
        MPI_Test(rq, &done, MPI_STATUS_IGNORE);
        if (done)
            return;
        sleep_us(50);
    }
}

/* ------------------------------------------------------------------ iterative ranks -- */

struct iter {
    const struct opts *o;
    int P, me; /* iterative ranks, my index 0..P-1 */
    uint32_t first, count;
    relax_rows_t rows;
    double *x; /* the whole shared vector */
    em_bcast_t *bc;
    uint32_t k;
    double sweeps;
    MPI_Comm icomm;
    double t0;
};

static void block_of(uint32_t n, int P, int r, uint32_t *first, uint32_t *count)
{
    uint64_t a = (uint64_t)n * (uint64_t)r / (uint64_t)P,
             b = (uint64_t)n * (uint64_t)(r + 1) / (uint64_t)P;
    *first = (uint32_t)a;
    *count = (uint32_t)(b - a);
}

static void apply_update(void *arg, uint16_t sender, uint32_t offset, uint32_t count,
                         const double *vals)
{
    (void)sender;
    memcpy((double *)arg + offset, vals, count * sizeof(double));
}

/* One asynchronous round: relax, broadcast, apply, report each sweep,
 * until the judge says stop (checked every 256 frames and every sweep). */
static void async_round(struct iter *it)
{
    int cmd = 0, stopped = 0, st_pending = 0;
    double st[2];
    MPI_Request ctrl, streq = MPI_REQUEST_NULL;
    MPI_Irecv(&cmd, 1, MPI_INT, 0, TAG_CTRL, MPI_COMM_WORLD, &ctrl);
    uint32_t end = it->first + it->count;
    double *x = it->x;
    while (!stopped) {
        double maxd = 0, maxx = 0;
        unsigned blocks = 0;
        for (uint32_t i0 = it->first; i0 < end && !stopped; i0 += it->k) {
            uint32_t m = end - i0 < it->k ? end - i0 : it->k;
            for (uint32_t i = i0; i < i0 + m; i++) {
                uint32_t li = i - it->first;
                double v = (it->rows.b[li] - relax_offdiag_dot(&it->rows, li, x)) /
                           it->rows.diag[li];
                double d = fabs(v - x[i]);
                if (d > maxd)
                    maxd = d;
                if (fabs(v) > maxx)
                    maxx = fabs(v);
                x[i] = v;
            }
            if (it->bc) {
                (void)em_bcast_send(it->bc, i0, x + i0, m); /* -EAGAIN: lost, counted */
                em_bcast_poll(it->bc, apply_update, x, 0);
            }
            if (++blocks % 256 == 0) {
                int f = 0;
                MPI_Test(&ctrl, &f, MPI_STATUS_IGNORE);
                stopped = f;
            }
        }
        if (stopped)
            break;
        it->sweeps++;
        if (st_pending) {
            int f = 0;
            MPI_Test(&streq, &f, MPI_STATUS_IGNORE);
            st_pending = !f;
        }
        if (!st_pending) {
            st[0] = it->sweeps;
            st[1] = maxx > 0 ? maxd / maxx : maxd;
            MPI_Isend(st, 2, MPI_DOUBLE, 0, TAG_STATUS, MPI_COMM_WORLD, &streq);
            st_pending = 1;
        }
        int f = 0;
        MPI_Test(&ctrl, &f, MPI_STATUS_IGNORE);
        stopped = f;
    }
    if (st_pending)
        MPI_Wait(&streq, MPI_STATUS_IGNORE);
}

/* one synchronous round (mpi-allgather): Jacobi sweeps until the global
 * change is below dtol or the time is up; @return 1 if over time */
static int sync_round(struct iter *it, double dtol, const int *counts, const int *displs,
                      double *xn)
{
    double *x = it->x;
    for (;;) {
        double loc[3] = { 0, 0, 0 }, glob[3];
        for (uint32_t li = 0; li < it->count; li++) {
            uint32_t i = it->first + li;
            double v = (it->rows.b[li] - relax_offdiag_dot(&it->rows, li, x)) / it->rows.diag[li];
            double d = fabs(v - x[i]);
            if (d > loc[0])
                loc[0] = d;
            if (fabs(v) > loc[1])
                loc[1] = fabs(v);
            xn[li] = v;
        }
        loc[2] = MPI_Wtime() - it->t0 > it->o->time_limit ? 1 : 0;
        MPI_Allgatherv(xn, (int)it->count, MPI_DOUBLE, x, counts, displs, MPI_DOUBLE, it->icomm);
        MPI_Allreduce(loc, glob, 3, MPI_DOUBLE, MPI_MAX, it->icomm);
        it->sweeps++;
        double rel = glob[1] > 0 ? glob[0] / glob[1] : glob[0];
        if (rel < dtol)
            return 0;
        if (glob[2] > 0)
            return 1;
    }
}

static int run_iterative(const struct opts *o, uint32_t key, MPI_Comm icomm)
{
    struct iter it = { .o = o, .P = size - 1, .me = rank - 1, .icomm = icomm };
    block_of(o->n, it.P, it.me, &it.first, &it.count);
    relax_sys_t sys = { .n = o->n, .nnz = o->nnz, .ratio = o->ratio, .seed = o->seed };
    char err[1024] = "";
    int ok = 1;
    it.x = calloc(o->n, sizeof *it.x);
    if (!it.x || relax_rows_build(&sys, it.first, it.count, &it.rows) != 0) {
        snprintf(err, sizeof err, "out of memory for %u rows of n = %u (%s)", it.count, o->n,
                 o->nnz ? "sparse" : "dense");
        ok = 0;
    }
    uint32_t maxk = UINT32_MAX;
    /* a single iterative rank has nobody to tell: no channel, so P = 1 is
     * the pure compute baseline of every transport */
    if (ok && o->transport != T_MPI && it.P > 1) {
        char vdev[1024] = "", prefix[64], job[32];
        snprintf(job, sizeof job, "r%08x", key);
        em_bcast_cfg_t c = { .kind = o->transport == T_UDP   ? EM_BCAST_UDP
                                     : o->transport == T_XDP ? EM_BCAST_XDP
                                                             : EM_BCAST_DPDK,
                             .key = key,
                             .channel = 1,
                             .self = (uint16_t)it.me,
                             .members = (uint16_t)it.P,
                             .vec_len = o->n,
                             .iface = o->iface,
                             .port = o->port,
                             .eal_args = o->eal_args,
                             .rx_loss = o->loss_pct / 100.0,
                             .loss_seed = key ^ (uint64_t)rank * 7919,
                             .link_wait_ms = 30000,
                             .framing = o->framing };
        if (o->transport == T_DPDK) {
#ifdef EM_BCAST_HAVE_DPDK
            if (em_link_dpdk_devargs(o->vdev, job, vdev, sizeof vdev, err, sizeof err) != 0)
                ok = 0;
#endif
            snprintf(prefix, sizeof prefix, "emrelax%ld", (long)getpid());
            c.vdev = vdev;
            c.file_prefix = prefix;
        }
        if (ok) {
            it.bc = em_bcast_open(&c, err, sizeof err);
            if (!it.bc)
                ok = 0;
            else
                maxk = em_bcast_max_elems(it.bc);
        }
    }
    /* udp framing: every member's address, so that members behind a
     * router get the updates by unicast (em_bcast_set_members) */
    if ((o->transport == T_DPDK || o->transport == T_XDP) && o->framing && it.P > 1) {
        uint32_t mine = ok && it.bc ? em_bcast_local_ipv4(it.bc) : 0;
        uint32_t *all = calloc((size_t)it.P, sizeof *all);
        if (!all)
            die("out of memory");
        MPI_Allgather(&mine, 1, MPI_UINT32_T, all, 1, MPI_UINT32_T, icomm);
        if (ok && em_bcast_set_members(it.bc, all, (uint16_t)it.P, 0, err, sizeof err) < 0)
            ok = 0;
        free(all);
    }
    if (!ok)
        fprintf(stderr, "relax: rank %d: %s\n", rank, err);
    /* everyone learns whether setup worked everywhere, and the frame limit */
    double in[2] = { ok ? 0 : 1, -(double)maxk }, out[2];
    MPI_Allreduce(in, out, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (out[0] > 0)
        goto fail;
    maxk = (uint32_t)(-out[1]);
    it.k = o->k ? o->k : maxk;
    if (maxk == UINT32_MAX && !o->k)
        it.k = 184; /* no channel (one iterative rank) */
    if (o->transport == T_MPI)
        it.k = it.count ? it.count : 1;
    if (it.k > maxk || it.k == 0) {
        if (rank == 1)
            fprintf(stderr,
                    "relax: %u elements per packet do not fit in one frame (at most %u here)\n",
                    o->k, maxk);
        goto fail;
    }
    int *counts = NULL, *displs = NULL;
    double *xn = NULL;
    if (o->transport == T_MPI) {
        counts = malloc((size_t)it.P * sizeof *counts);
        displs = malloc((size_t)it.P * sizeof *displs);
        xn = malloc((it.count ? it.count : 1) * sizeof *xn);
        if (!counts || !displs || !xn)
            die("out of memory");
        for (int r = 0; r < it.P; r++) {
            uint32_t f, c;
            block_of(o->n, it.P, r, &f, &c);
            counts[r] = (int)c;
            displs[r] = (int)f;
        }
    }
    MPI_Barrier(MPI_COMM_WORLD); /* setup done: the clock starts */
    it.t0 = MPI_Wtime();
    double dtol = o->dtol;
    for (;;) {
        int over = 0;
        if (o->transport == T_MPI)
            over = sync_round(&it, dtol, counts, displs, xn);
        else
            async_round(&it); /* the judge applies dtol */
        double fin[F_COUNT] = { 0 };
        fin[F_SWEEPS] = it.sweeps;
        fin[F_OVER_TIME] = over;
        if (it.bc) {
            const em_bcast_stats_t *s = em_bcast_stats(it.bc);
            fin[F_SENT] = (double)s->sent;
            fin[F_SEND_FULL] = (double)s->send_full;
            fin[F_RECEIVED] = (double)s->received;
            fin[F_DROPPED] = (double)s->dropped;
            fin[F_GAPS] = (double)s->gaps;
            fin[F_REJECTED] = (double)s->rejected;
            fin[F_LATE] = (double)s->late;
            fin[F_OWN] = (double)s->own;
        }
        MPI_Send(fin, F_COUNT, MPI_DOUBLE, 0, TAG_FINAL, MPI_COMM_WORLD);
        MPI_Request rq;
        MPI_Igatherv(it.x + it.first, (int)it.count, MPI_DOUBLE, NULL, NULL, NULL, MPI_DOUBLE, 0,
                     MPI_COMM_WORLD, &rq);
        wait_sleeping(&rq);
        double next[2];
        MPI_Ibcast(next, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD, &rq);
        wait_sleeping(&rq); /* the judge verifies meanwhile */
        if ((int)next[0] != NEXT_RESTART)
            break;
        dtol = next[1];
        MPI_Ibcast(it.x, (int)o->n, MPI_DOUBLE, 0, MPI_COMM_WORLD, &rq);
        wait_sleeping(&rq);
    }
    free(counts);
    free(displs);
    free(xn);
    em_bcast_close(it.bc);
    relax_rows_free(&it.rows);
    free(it.x);
    return 0;
fail:
    em_bcast_close(it.bc);
    relax_rows_free(&it.rows);
    free(it.x);
    return 1;
}

/* ------------------------------------------------------------------------- judge -- */

static int run_judge(const struct opts *o)
{
    int P = size - 1;
    double in[2] = { 0, -(double)UINT32_MAX }, out[2];
    MPI_Allreduce(in, out, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (out[0] > 0) {
        fprintf(stderr, "relax: setup failed on an iterative rank (its message is above)\n");
        return 1;
    }
    uint32_t maxk = (uint32_t)(-out[1]);
    uint32_t k = o->k ? o->k : maxk == UINT32_MAX ? 184 : maxk;
    if (o->transport != T_MPI && k > maxk)
        return 1; /* rank 1 said why */
    relax_sys_t sys = { .n = o->n, .nnz = o->nnz, .ratio = o->ratio, .seed = o->seed };
    double *x = malloc(o->n * sizeof *x);
    int *counts = malloc((size_t)size * sizeof *counts),
        *displs = malloc((size_t)size * sizeof *displs);
    double *fin = calloc((size_t)P * F_COUNT, sizeof *fin);
    if (!x || !counts || !displs || !fin)
        die("out of memory");
    counts[0] = displs[0] = 0;
    for (int r = 0; r < P; r++) {
        uint32_t f, c;
        block_of(o->n, P, r, &f, &c);
        counts[r + 1] = (int)c;
        displs[r + 1] = (int)f;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime(), t_iter = 0, t_verify = 0;
    double dtol = o->dtol, res = INFINITY;
    int restarts = 0, verified = 0, over_time = 0;
    double judged = 0; /* mean sweep number of the reports that decided convergence */
    for (;;) {
        double ts = MPI_Wtime();
        if (o->transport != T_MPI) {
            /* wait until every rank's last two sweeps changed x by < dtol */
            int *below = calloc((size_t)P, sizeof *below);
            double *last_sweep = calloc((size_t)P, sizeof *last_sweep);
            if (!below || !last_sweep)
                die("out of memory");
            for (;;) {
                int flag = 0;
                MPI_Status s;
                MPI_Iprobe(MPI_ANY_SOURCE, TAG_STATUS, MPI_COMM_WORLD, &flag, &s);
                if (flag) {
                    double st[2];
                    MPI_Recv(st, 2, MPI_DOUBLE, s.MPI_SOURCE, TAG_STATUS, MPI_COMM_WORLD,
                             MPI_STATUS_IGNORE);
                    int r = s.MPI_SOURCE - 1;
                    below[r] = st[1] < dtol ? below[r] + 1 : 0;
                    last_sweep[r] = st[0];
                    int all = 1;
                    for (int q = 0; q < P; q++)
                        all &= below[q] >= 2;
                    if (all)
                        break;
                    continue;
                }
                if (MPI_Wtime() - t0 > o->time_limit) {
                    over_time = 1;
                    break;
                }
                sleep_us(100);
            }
            judged = 0;
            for (int q = 0; q < P; q++)
                judged += last_sweep[q] / P;
            free(below);
            free(last_sweep);
            int cmd = CMD_STOP;
            for (int r = 1; r <= P; r++)
                MPI_Send(&cmd, 1, MPI_INT, r, TAG_CTRL, MPI_COMM_WORLD);
        }
        /* collect every rank's FINAL (status messages still in flight first) */
        for (int r = 1; r <= P; r++) {
            for (;;) {
                int flag = 0;
                MPI_Status s;
                MPI_Iprobe(r, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &s);
                if (!flag) {
                    sleep_us(100);
                    continue;
                }
                if (s.MPI_TAG == TAG_FINAL) {
                    MPI_Recv(fin + (size_t)(r - 1) * F_COUNT, F_COUNT, MPI_DOUBLE, r, TAG_FINAL,
                             MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    if (fin[(size_t)(r - 1) * F_COUNT + F_OVER_TIME] > 0)
                        over_time = 1;
                    break;
                }
                double st[2];
                MPI_Recv(st, 2, MPI_DOUBLE, r, s.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
        }
        MPI_Request rq;
        MPI_Igatherv(NULL, 0, MPI_DOUBLE, x, counts, displs, MPI_DOUBLE, 0, MPI_COMM_WORLD, &rq);
        wait_sleeping(&rq);
        double tv = MPI_Wtime();
        t_iter += tv - ts;
        res = relax_residual(&sys, x);
        t_verify += MPI_Wtime() - tv;
        verified = res <= o->tol;
        if (MPI_Wtime() - t0 > o->time_limit)
            over_time = 1;
        int again = !verified && !over_time && restarts < o->max_restarts;
        if (!o->quiet)
            fprintf(stderr,
                    "relax: judge: round %d: residual %.3e (tolerance %.1e) after %.3f s%s\n",
                    restarts + 1, res, o->tol, MPI_Wtime() - t0,
                    verified ? ": verified"
                    : again  ? ": not converged, restarting"
                             : "");
        double next[2] = { again ? NEXT_RESTART : NEXT_DONE, dtol / 10 };
        MPI_Ibcast(next, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD, &rq);
        wait_sleeping(&rq);
        if (!again)
            break;
        dtol /= 10;
        restarts++;
        MPI_Ibcast(x, (int)o->n, MPI_DOUBLE, 0, MPI_COMM_WORLD, &rq);
        wait_sleeping(&rq);
    }
    double t_total = MPI_Wtime() - t0;
    double sum[F_COUNT] = { 0 };
    for (int r = 0; r < P; r++)
        for (int f = 0; f < F_COUNT; f++)
            sum[f] += fin[(size_t)r * F_COUNT + f];
    double err_direct = -1;
    if (o->check_direct) {
        if (o->n > 3000) {
            fprintf(stderr, "relax: --check-direct is limited to n <= 3000 (O(n^3)); skipped\n");
        } else {
            double *xd = malloc(o->n * sizeof *xd);
            if (!xd || relax_direct_solve(&sys, xd) != 0)
                die("direct solve failed (out of memory or singular)");
            double md = 0, mx = 0;
            for (uint32_t i = 0; i < o->n; i++) {
                if (fabs(x[i] - xd[i]) > md)
                    md = fabs(x[i] - xd[i]);
                if (fabs(xd[i]) > mx)
                    mx = fabs(xd[i]);
            }
            err_direct = md / mx;
            free(xd);
        }
    }
    printf("# em-relax v1\n");
    printf("relax transport=%s n=%u ranks=%d elements_per_packet=%u sparse=%u loss_pct=%g "
           "time_s=%.6f iter_s=%.6f verify_s=%.6f iterations=%.2f sweeps_judged=%.2f restarts=%d "
           "residual=%.3e "
           "tol=%.1e verified=%d sent=%.0f send_full=%.0f received=%.0f dropped=%.0f gaps=%.0f "
           "rejected=%.0f late=%.0f own=%.0f err_direct=%.3e\n",
           o->tname, o->n, P, o->transport == T_MPI ? 0 : k, o->nnz, o->loss_pct, t_total, t_iter,
           t_verify, sum[F_SWEEPS] / P, o->transport == T_MPI ? sum[F_SWEEPS] / P : judged,
           restarts, res, o->tol, verified, sum[F_SENT], sum[F_SEND_FULL], sum[F_RECEIVED],
           sum[F_DROPPED], sum[F_GAPS], sum[F_REJECTED], sum[F_LATE], sum[F_OWN], err_direct);
    fflush(stdout);
    if (!verified)
        fprintf(stderr,
                "relax: NOT converged: residual %.3e > tolerance %.1e after %d restart(s) "
                "and %.1f s%s\n",
                res, o->tol, restarts, t_total, over_time ? " (time limit reached; raise -T)" : "");
    free(x);
    free(counts);
    free(displs);
    free(fin);
    return verified ? 0 : 1;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    struct opts o;
    parse(argc, argv, &o);
    if (size < 2) {
        if (rank == 0)
            fprintf(stderr, "relax: needs at least 2 ranks (rank 0 judges, ranks 1.. iterate)\n");
        MPI_Finalize();
        return 2;
    }
    if ((uint32_t)(size - 1) > o.n) {
        if (rank == 0)
            fprintf(stderr, "relax: %d iterative ranks for n = %u: more ranks than rows\n",
                    size - 1, o.n);
        MPI_Finalize();
        return 2;
    }
    uint32_t key = 0;
    if (rank == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        key = (uint32_t)(ts.tv_nsec ^ (ts.tv_sec << 20) ^ (uint32_t)getpid() * 2654435761u);
        if (!key)
            key = 1;
    }
    MPI_Bcast(&key, 1, MPI_UINT32_T, 0, MPI_COMM_WORLD);
    MPI_Comm icomm;
    MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? MPI_UNDEFINED : 1, rank, &icomm);
    int rc = rank == 0 ? run_judge(&o) : run_iterative(&o, key, icomm);
    if (icomm != MPI_COMM_NULL)
        MPI_Comm_free(&icomm);
    int worst = 0;
    MPI_Request rq;
    MPI_Iallreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &rq);
    wait_sleeping(&rq);
    MPI_Finalize();
    return worst;
}
