/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * halo_solver.h - the DDM-BDS sample application's parallel part: the grid
 * of stencil.h decomposed into slabs of z-planes along a chain of ranks,
 * each slab with one ghost plane on each side, the ghost planes kept up to
 * date with em_halo (one boundary table per neighbour, described once).
 */
#ifndef EM_HALO_SOLVER_H
#define EM_HALO_SOLVER_H

#include <mpi.h>

#include "stencil.h"

struct halo_solve_opts {
    int steps;
    int items; /* items a boundary plane is split into (1 = whole plane) */
};

struct halo_solve_result {
    int z0, count;    /* this rank's slab (global first plane, planes) */
    double *owned;    /* count planes after the last step (malloc'ed) */
    double compute_s; /* time in the sweeps */
    double sync_s;    /* time in em_halo calls (post, start, wait) */
    double setup_s;   /* em_halo_create/add/commit */
};

/*
 * Runs opts->steps Jacobi sweeps over `comm` (collective).  Returns 0, or
 * an em_halo_rc / -1 with a message in err (every rank fails together when
 * the boundary tables do not match).
 */
int halo_solve(const struct grid *g, MPI_Comm comm, const struct halo_solve_opts *opts,
               struct halo_solve_result *res, char *err, size_t errlen);

/*
 * Gathers every rank's slab on `root` and compares it with
 * stencil_reference() bit for bit (collective).  On root: returns the
 * number of differing points (0 = bit-exact) and the largest absolute
 * difference in *maxdiff; -1 if the reference could not be computed.
 */
long halo_verify(const struct grid *g, MPI_Comm comm, int root, int steps,
                 const struct halo_solve_result *res, double *maxdiff, char *where, size_t wlen);

#endif
