/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * stencil.h - the numerical part of the DDM-BDS sample application: a 3-D
 * Jacobi sweep (7-point Laplace stencil) on an NX x NY x NZ grid of doubles,
 * its decomposition into slabs of z-planes, and the single-process
 * reference.  No MPI here.
 *
 * Layout: u[(z * NY + y) * NX + x]; a z-plane is NX * NY contiguous doubles.
 * The outer faces of the grid (x, y or z at 0 or at the end) are fixed
 * (Dirichlet) values; every step replaces each inner point by the mean of
 * its six neighbours, always summed in the same order (stencil_plane), so
 * a decomposed run reproduces the reference bit for bit.
 */
#ifndef EM_STENCIL_H
#define EM_STENCIL_H

#include <stddef.h>

struct grid {
    int nx, ny, nz;
};

/* Initial value of global point (x, y, z); the faces keep theirs forever. */
double stencil_init(const struct grid *g, int x, int y, int z);

/* New values of the inner points of one plane from the planes below, at
 * and above it.  Edge points of `out` are not written. */
void stencil_plane(int nx, int ny, const double *below, const double *mid, const double *above,
                   double *out);

/* The slab of inner planes (global z in 1 .. nz-2) that rank r of p owns:
 * first plane *z0, *count planes.  Returns 0, or -1 if p > nz - 2. */
int stencil_slab(const struct grid *g, int r, int p, int *z0, int *count);

/* Fills planes [zfirst, zfirst + nplanes) of the global grid into u. */
void stencil_fill(const struct grid *g, double *u, int zfirst, int nplanes);

/* Single-process reference: `steps` sweeps of the whole grid.  Returns a
 * malloc'ed grid (nz planes) or NULL when out of memory. */
double *stencil_reference(const struct grid *g, int steps);

#endif
