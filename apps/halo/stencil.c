/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * stencil.c - Jacobi sweep, slabs and the reference (stencil.h).
 */
#include "stencil.h"

#include <stdlib.h>
#include <string.h>

double stencil_init(const struct grid *g, int x, int y, int z)
{
    int face = x == 0 || y == 0 || z == 0 || x == g->nx - 1 || y == g->ny - 1 || z == g->nz - 1;

    if (face) /* a "hot" corner region and a cold rest, plus a ripple */
        return (double)((x * 3 + y * 5 + z * 7) % 11) / 10.0 + (z == 0 ? 1.0 : 0.0);
    return (double)((x * 13 + y * 7 + z * 3) % 17) / 16.0;
}

void stencil_plane(int nx, int ny, const double *below, const double *mid, const double *above,
                   double *out)
{
    const double sixth = 1.0 / 6.0;

    for (int y = 1; y < ny - 1; y++) {
        size_t row = (size_t)y * (size_t)nx;

        for (int x = 1; x < nx - 1; x++) {
            size_t i = row + (size_t)x;
            double s = mid[i - 1] + mid[i + 1];

            s += mid[i - (size_t)nx];
            s += mid[i + (size_t)nx];
            s += below[i];
            s += above[i];
            out[i] = s * sixth;
        }
    }
}

int stencil_slab(const struct grid *g, int r, int p, int *z0, int *count)
{
    int m = g->nz - 2, base, extra;

    if (p < 1 || r < 0 || r >= p || m < p)
        return -1;
    base = m / p;
    extra = m % p;
    *count = base + (r < extra ? 1 : 0);
    *z0 = 1 + r * base + (r < extra ? r : extra);
    return 0;
}

void stencil_fill(const struct grid *g, double *u, int zfirst, int nplanes)
{
    size_t plane = (size_t)g->nx * (size_t)g->ny;

    for (int j = 0; j < nplanes; j++)
        for (int y = 0; y < g->ny; y++)
            for (int x = 0; x < g->nx; x++)
                u[(size_t)j * plane + (size_t)y * (size_t)g->nx + (size_t)x] = stencil_init(
                    g, x, y, zfirst + j);
}

double *stencil_reference(const struct grid *g, int steps)
{
    size_t plane = (size_t)g->nx * (size_t)g->ny, n = plane * (size_t)g->nz;
    double *a = malloc(n * sizeof(double)), *b = malloc(n * sizeof(double));

    if (a == NULL || b == NULL) {
        free(a);
        free(b);
        return NULL;
    }
    stencil_fill(g, a, 0, g->nz);
    memcpy(b, a, n * sizeof(double));
    for (int k = 0; k < steps; k++) {
        for (int z = 1; z < g->nz - 1; z++)
            stencil_plane(g->nx, g->ny, a + (size_t)(z - 1) * plane, a + (size_t)z * plane,
                          a + (size_t)(z + 1) * plane, b + (size_t)z * plane);
        double *t = a;
        a = b;
        b = t;
    }
    free(b);
    return a;
}
