/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file system.h
 * The linear system of the relaxation solver: Ax = b, generated from a seed
 * so that any process can rebuild any row (or all of them) without
 * communication.  That is what makes the judge's verification independent:
 * it recomputes ||b - Ax|| / ||b|| from the generator, never from the
 * iterative ranks' stored rows.
 *
 * Off-diagonal elements are in [0, 1) (all positive, so the Jacobi
 * iteration matrix has spectral radius = ratio exactly for the row sums:
 * convergence takes about log(tol)/log(ratio) sweeps, as in the paper's
 * ~21 sweeps); a_ii = (sum of the row's off-diagonal elements) / ratio,
 * ratio < 1, so A is strictly diagonally dominant.  b_i in [1, 2).
 *   dense:  every a_ij, j != i
 *   sparse: nnz off-diagonal elements per row at pseudo-random columns
 */
#ifndef RELAX_SYSTEM_H
#define RELAX_SYSTEM_H

#include <stdint.h>

typedef struct relax_sys {
    uint32_t n;
    uint32_t nnz; /**< off-diagonal elements per row; 0 = dense */
    double ratio; /**< off-diagonal row sum / diagonal, in (0, 1) */
    uint64_t seed;
} relax_sys_t;

/** The rows [first, first+count) of A and b, as one rank stores them. */
typedef struct relax_rows {
    uint32_t first, count, n;
    double *a;     /**< dense: count x n, diagonal stored as 0 */
    uint32_t *col; /**< sparse: count x nnz column indices */
    double *val;   /**< sparse: count x nnz values */
    uint32_t nnz;
    double *diag; /**< count */
    double *b;    /**< count */
} relax_rows_t;

/** Build rows; @return 0 or -1 (out of memory). */
int relax_rows_build(const relax_sys_t *s, uint32_t first, uint32_t count, relax_rows_t *r);
void relax_rows_free(relax_rows_t *r);

/** sum_{j != i} a_ij x_j for local row @p li. */
double relax_offdiag_dot(const relax_rows_t *r, uint32_t li, const double *x);

/** ||b - Ax||_2 / ||b||_2, computed from the generator (matrix-free). */
double relax_residual(const relax_sys_t *s, const double *x);

/** Solve Ax = b directly (Gaussian elimination, partial pivoting; O(n^3),
 *  n^2 doubles of memory).  @return 0, or -1 (out of memory / singular). */
int relax_direct_solve(const relax_sys_t *s, double *x);

#endif
