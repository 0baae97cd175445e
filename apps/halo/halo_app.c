/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * em_halo_app - the DDM-BDS sample program ([bds], Fig. 15): a 3-D
 * Jacobi (7-point) sweep decomposed along z over a chain of ranks, ghost
 * planes exchanged with em_halo, checked against a single-process run, and
 * the time spent computing and synchronising printed separately.
 *
 *   em_halo_app [-x NX] [-y NY] [-z NZ] [-t STEPS] [-k ITEMS] [-V] [-q]
 *
 * Output: comment lines (per-rank times, verification), then the em-bench
 * table "halo-app": size_bytes = bytes of one boundary plane, columns
 * sync_s (primary) and compute_s, both in seconds, means over the ranks.
 * Exit status: 0, 1 if the result differs from the reference, 2 on a usage
 * or setup error (the message says why).
 */
#ifndef _GNU_SOURCE
#define _POSIX_C_SOURCE 200809L /* getopt */
#endif
#include "halo_solver.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: em_halo_app [-x NX] [-y NY] [-z NZ] [-t STEPS] [-k ITEMS] [-V] [-q]\n"
               "  3-D Jacobi on NX x NY x NZ doubles, split along z over the ranks (a chain),\n"
               "  boundary planes exchanged with em_halo; prints sync and compute time\n"
               "  -x/-y/-z N  grid (default 128 x 128 x 66: 64 inner planes, 128 KiB planes)\n"
               "  -t STEPS    Jacobi sweeps (default 200)\n"
               "  -k ITEMS    boundary items per plane (default 1 = the whole plane)\n"
               "  -V          skip the check against the single-process reference\n"
               "  -q          quick: 64 x 64 x 34, 50 steps (explicit options still win)\n"
               "  -h          this help\n");
}

static int num(const char *s, int min, int max, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);

    if (*s == '\0' || *end != '\0' || v < min || v > max)
        return -1;
    *out = (int)v;
    return 0;
}

int main(int argc, char **argv)
{
    struct grid g = { 0, 0, 0 };
    struct halo_solve_opts o = { .steps = -1, .items = 1 };
    struct halo_solve_result res;
    int me, p, c, quick = 0, verify = 1, bad = 0, help = 0, rc;
    char err[800];
    double mine[2], sum[2], *all = NULL;

    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    opterr = 0;
    while ((c = getopt(argc, argv, "x:y:z:t:k:Vqh")) != -1) {
        switch (c) {
        case 'x': bad |= num(optarg, 3, 1 << 14, &g.nx); break;
        case 'y': bad |= num(optarg, 3, 1 << 14, &g.ny); break;
        case 'z': bad |= num(optarg, 3, 1 << 20, &g.nz); break;
        case 't': bad |= num(optarg, 0, 1 << 28, &o.steps); break;
        case 'k': bad |= num(optarg, 1, 4096, &o.items); break;
        case 'V': verify = 0; break;
        case 'q': quick = 1; break;
        case 'h': help = 1; break;
        default: bad = 1; break;
        }
    }
    if (help || bad || optind < argc) {
        if (me == 0)
            usage(help ? stdout : stderr);
        MPI_Finalize();
        return help ? 0 : 2;
    }
    if (g.nx == 0)
        g.nx = quick ? 64 : 128;
    if (g.ny == 0)
        g.ny = quick ? 64 : 128;
    if (g.nz == 0)
        g.nz = quick ? 34 : 66;
    if (o.steps < 0)
        o.steps = quick ? 50 : 200;
    if ((size_t)g.nx * (size_t)g.ny * (size_t)g.nz > ((size_t)1 << 31) / sizeof(double)) {
        if (me == 0)
            fprintf(stderr, "em_halo_app: grid %dx%dx%d is too large (at most 2 GiB)\n", g.nx, g.ny,
                    g.nz);
        MPI_Finalize();
        return 2;
    }

    rc = halo_solve(&g, MPI_COMM_WORLD, &o, &res, err, sizeof(err));
    if (rc != 0) {
        /* every rank fails here together (the setup is collective) */
        fprintf(stderr, "em_halo_app: rank %d: %s\n", me, err);
        MPI_Finalize();
        return 2;
    }
    mine[0] = res.sync_s;
    mine[1] = res.compute_s;
    MPI_Reduce(mine, sum, 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (me == 0 && (all = malloc(sizeof(double) * 2 * (size_t)p)) == NULL)
        MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Gather(mine, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (me == 0) {
        printf("# em_halo_app: %d ranks, grid %d x %d x %d doubles split along z, %d steps, "
               "%d item(s) per boundary plane, plane %zu bytes\n",
               p, g.nx, g.ny, g.nz, o.steps, o.items, (size_t)g.nx * (size_t)g.ny * sizeof(double));
        for (int r = 0; r < p; r++)
            printf("# rank %d: sync %.6f s, compute %.6f s\n", r, all[2 * r], all[2 * r + 1]);
        fflush(stdout);
    }
    free(all);
    if (verify) {
        double maxdiff = 0.0;
        char where[200];
        long nbad = halo_verify(&g, MPI_COMM_WORLD, 0, o.steps, &res, &maxdiff, where,
                                sizeof(where));

        MPI_Bcast(&nbad, 1, MPI_LONG, 0, MPI_COMM_WORLD);
        if (me == 0) {
            if (nbad == 0)
                printf("# verify: identical to the single-process reference "
                       "(bit-exact, tolerance 0)\n");
            else if (nbad < 0)
                fprintf(stderr, "em_halo_app: out of memory for the reference run\n");
            else
                fprintf(stderr,
                        "em_halo_app: result differs from the single-process "
                        "reference at %ld points, max |diff| %.3g; %s\n",
                        nbad, maxdiff, where);
        }
        if (nbad != 0) {
            free(res.owned);
            MPI_Finalize();
            return 1;
        }
    }
    if (me == 0) {
        double row[2] = { sum[0] / p, sum[1] / p };

        printf("# em-bench halo-app transport-neutral v1\n");
        printf("# size_bytes sync_s s compute_s s\n");
        printf("%-10zu %14.6f %14.6f\n", (size_t)g.nx * (size_t)g.ny * sizeof(double), row[0],
               row[1]);
        fflush(stdout);
    }
    free(res.owned);
    MPI_Finalize();
    return 0;
}
