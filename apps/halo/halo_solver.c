/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * halo_solver.c - slabs + ghost planes over em_halo (halo_solver.h).
 *
 * Two arrays (Jacobi reads one, writes the other) and one em_halo handle
 * per array: handle p moves the boundary planes of array p into the
 * neighbours' ghost planes of array p.  Step k reads array k%2 and writes
 * array (k+1)%2:
 *
 *   sweep all owned planes into dst                      (compute)
 *   post the receives of handle src (ghosts of src are   (sync)
 *     not read any more; they get step k+1's planes)
 *   start the sends of handle dst, wait for handle dst   (sync)
 *
 * so every receive is posted before the neighbour can send into it (the
 * neighbour sends step k+1's planes only after it got ours of step k).
 */
#include "halo_solver.h"

#include "halo/em_halo.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void plane_items(double *plane, size_t plane_bytes, int items, em_halo_item_t *it)
{
    size_t per = plane_bytes / (size_t)items, off = 0;

    for (int i = 0; i < items; i++) {
        size_t n = i == items - 1 ? plane_bytes - off : per;

        it[i].addr = (unsigned char *)plane + off;
        it[i].size = n;
        off += n;
    }
}

/* Handle for array u (count + 2 planes, ghosts at 0 and count + 1). */
static int make_handle(MPI_Comm comm, int me, int p, double *u, int count, size_t plane, int items,
                       em_halo_t **out, char *err, size_t errlen)
{
    size_t pb = plane * sizeof(double);
    em_halo_item_t *s = calloc((size_t)items, sizeof(*s));
    em_halo_item_t *r = calloc((size_t)items, sizeof(*r));
    em_halo_t *h = NULL;
    int rc;

    if (s == NULL || r == NULL) {
        free(s);
        free(r);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    rc = em_halo_create(comm, &h);
    if (rc != EM_HALO_OK) {
        snprintf(err, errlen, "em_halo_create: %s", em_halo_strerror(rc));
        free(s);
        free(r);
        return rc;
    }
    if (me > 0) { /* neighbour below: my first plane, its ghost */
        plane_items(u + plane, pb, items, s);
        plane_items(u, pb, items, r);
        rc = em_halo_add_neighbor(h, me - 1, s, items, r, items);
    }
    if (rc == EM_HALO_OK && me < p - 1) { /* neighbour above */
        plane_items(u + (size_t)count * plane, pb, items, s);
        plane_items(u + (size_t)(count + 1) * plane, pb, items, r);
        rc = em_halo_add_neighbor(h, me + 1, s, items, r, items);
    }
    free(s);
    free(r);
    if (rc != EM_HALO_OK) {
        /* still take part in the collective check, so nobody waits for us */
        snprintf(err, errlen, "%s", em_halo_errmsg(h));
        em_halo_commit(h);
        em_halo_free(&h);
        return rc;
    }
    rc = em_halo_commit(h);
    if (rc != EM_HALO_OK) {
        snprintf(err, errlen, "%s", em_halo_errmsg(h));
        em_halo_free(&h);
        return rc;
    }
    *out = h;
    return 0;
}

int halo_solve(const struct grid *g, MPI_Comm comm, const struct halo_solve_opts *opts,
               struct halo_solve_result *res, char *err, size_t errlen)
{
    size_t plane = (size_t)g->nx * (size_t)g->ny;
    int me, p, z0, count, rc = 0;
    double *u[2] = { NULL, NULL };
    em_halo_t *h[2] = { NULL, NULL }, *cur;
    double t0, t1, t2;

    memset(res, 0, sizeof(*res));
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &p);
    if (g->nx < 3 || g->ny < 3 || stencil_slab(g, me, p, &z0, &count) != 0) {
        snprintf(err, errlen,
                 "grid %dx%dx%d cannot be split over %d ranks (need nx, ny >= 3 "
                 "and at least one inner z-plane per rank: nz - 2 >= %d)",
                 g->nx, g->ny, g->nz, p, p);
        return -1;
    }
    if (opts->items < 1 || (size_t)opts->items > plane * sizeof(double) ||
        opts->items > EM_HALO_MAX_ITEMS) {
        snprintf(err, errlen, "cannot split a plane of %zu bytes into %d items",
                 plane * sizeof(double), opts->items);
        return -1;
    }
    res->z0 = z0;
    res->count = count;
    for (int a = 0; a < 2; a++) {
        u[a] = malloc((size_t)(count + 2) * plane * sizeof(double));
        if (u[a] == NULL) {
            snprintf(err, errlen, "out of memory for a slab of %d planes", count + 2);
            MPI_Abort(comm, 1);
        }
        /* ghosts too: the initial values are a function of the position */
        stencil_fill(g, u[a], z0 - 1, count + 2);
    }
    t0 = MPI_Wtime();
    for (int a = 0; a < 2 && rc == 0; a++)
        rc = make_handle(comm, me, p, u[a], count, plane, opts->items, &h[a], err, errlen);
    if (rc != 0) {
        em_halo_free(&h[0]);
        free(u[0]);
        free(u[1]);
        return rc;
    }
    res->setup_s = MPI_Wtime() - t0;

    t0 = MPI_Wtime();
    cur = h[1];
    rc = em_halo_post_recvs(h[1]);
    res->sync_s += MPI_Wtime() - t0;
    for (int k = 0; k < opts->steps && rc == EM_HALO_OK; k++) {
        int s = k & 1, d = s ^ 1;

        t0 = MPI_Wtime();
        for (int j = 1; j <= count; j++)
            stencil_plane(g->nx, g->ny, u[s] + (size_t)(j - 1) * plane, u[s] + (size_t)j * plane,
                          u[s] + (size_t)(j + 1) * plane, u[d] + (size_t)j * plane);
        t1 = MPI_Wtime();
        cur = h[s];
        if (k + 1 < opts->steps)
            rc = em_halo_post_recvs(h[s]);
        if (rc == EM_HALO_OK) {
            cur = h[d];
            rc = em_halo_start_sends(h[d]);
        }
        if (rc == EM_HALO_OK)
            rc = em_halo_wait(h[d]);
        t2 = MPI_Wtime();
        res->compute_s += t1 - t0;
        res->sync_s += t2 - t1;
    }
    if (opts->steps == 0 && rc == EM_HALO_OK) {
        /* nothing computed: complete the pre-posted receives by one exchange */
        cur = h[1];
        rc = em_halo_exchange(h[1]);
    }
    if (rc != EM_HALO_OK) {
        /* an MPI failure in the middle of the run: the job cannot go on */
        fprintf(stderr, "halo: rank %d: %s\n", me, em_halo_errmsg(cur));
        MPI_Abort(comm, 2);
    }
    {
        int last = opts->steps & 1;

        res->owned = malloc((size_t)count * plane * sizeof(double));
        if (res->owned == NULL)
            MPI_Abort(comm, 1);
        memcpy(res->owned, u[last] + plane, (size_t)count * plane * sizeof(double));
    }
    em_halo_free(&h[0]);
    em_halo_free(&h[1]);
    free(u[0]);
    free(u[1]);
    return 0;
}

long halo_verify(const struct grid *g, MPI_Comm comm, int root, int steps,
                 const struct halo_solve_result *res, double *maxdiff, char *where, size_t wlen)
{
    size_t plane = (size_t)g->nx * (size_t)g->ny;
    int me, p;
    int *counts = NULL, *displs = NULL;
    double *all = NULL, *ref;
    long bad = 0;

    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &p);
    *maxdiff = 0.0;
    if (where && wlen)
        where[0] = '\0';
    if (me == root) {
        counts = malloc(sizeof(int) * (size_t)p);
        displs = malloc(sizeof(int) * (size_t)p);
        all = malloc((size_t)(g->nz - 2) * plane * sizeof(double));
        if (counts == NULL || displs == NULL || all == NULL)
            MPI_Abort(comm, 1);
        for (int r = 0; r < p; r++) {
            int z0, c;

            stencil_slab(g, r, p, &z0, &c);
            counts[r] = (int)((size_t)c * plane);
            displs[r] = (int)((size_t)(z0 - 1) * plane);
        }
    }
    MPI_Gatherv(res->owned, (int)((size_t)res->count * plane), MPI_DOUBLE, all, counts, displs,
                MPI_DOUBLE, root, comm);
    if (me != root)
        return 0;
    ref = stencil_reference(g, steps);
    if (ref == NULL) {
        bad = -1;
    } else {
        for (size_t i = 0; i < (size_t)(g->nz - 2) * plane; i++) {
            double a = all[i], b = ref[plane + i];

            if (memcmp(&a, &b, sizeof(double)) != 0) {
                double d = fabs(a - b);

                if (bad == 0 && where && wlen) {
                    size_t z = i / plane + 1, y = (i % plane) / (size_t)g->nx,
                           x = i % (size_t)g->nx;

                    snprintf(where, wlen,
                             "first difference at x=%zu y=%zu z=%zu: "
                             "%.17g instead of %.17g",
                             x, y, z, a, b);
                }
                bad++;
                if (d > *maxdiff || isnan(d))
                    *maxdiff = d;
            }
        }
    }
    free(ref);
    free(all);
    free(counts);
    free(displs);
    return bad;
}
