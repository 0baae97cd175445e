/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file system.c
 * Generated diagonally dominant systems (system.h).
 */
#include "system.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t mix(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double unit(uint64_t h) { return (double)(h >> 11) * (1.0 / 9007199254740992.0); }

/* Row i's key; element t of the row (dense: t = column; sparse: t = slot)
 * is one splitmix step away from it, so regenerating a row costs one hash
 * per element. */
static uint64_t row_key(const relax_sys_t *s, uint32_t i) { return mix(s->seed ^ mix(i)); }

static double elem_k(uint64_t key, uint32_t t)
{
    return unit(mix(key + (uint64_t)t * 0xD1B54A32D192ED03ull));
}

static double elem(const relax_sys_t *s, uint32_t i, uint32_t t)
{
    return elem_k(row_key(s, i), t);
}

static uint32_t sparse_col(const relax_sys_t *s, uint32_t i, uint32_t t)
{
    uint32_t c = (uint32_t)(mix(s->seed ^ 0x5bd1e995ull ^ mix(((uint64_t)i << 32) | t)) % s->n);
    if (c == i)
        c = (i + 1 + t) % s->n; /* never the diagonal (n >= 2) */
    return c;
}

static double rhs(const relax_sys_t *s, uint32_t i)
{
    return 1.0 + unit(mix(s->seed ^ 0xB0B0B0B0ull ^ mix(i)));
}

/* Sum of the off-diagonal elements of row i, always in the same order. */
static double row_sum(const relax_sys_t *s, uint32_t i)
{
    double sum = 0;
    uint64_t key = row_key(s, i);
    if (s->nnz == 0) {
        for (uint32_t j = 0; j < s->n; j++)
            if (j != i)
                sum += elem_k(key, j);
    } else {
        for (uint32_t t = 0; t < s->nnz; t++)
            sum += elem_k(key, t);
    }
    return sum;
}

int relax_rows_build(const relax_sys_t *s, uint32_t first, uint32_t count, relax_rows_t *r)
{
    memset(r, 0, sizeof *r);
    r->first = first;
    r->count = count;
    r->n = s->n;
    r->nnz = s->nnz;
    size_t rows = count ? count : 1;
    r->diag = malloc(rows * sizeof *r->diag);
    r->b = malloc(rows * sizeof *r->b);
    if (s->nnz == 0) {
        r->a = malloc(rows * s->n * sizeof *r->a);
    } else {
        r->col = malloc(rows * s->nnz * sizeof *r->col);
        r->val = malloc(rows * s->nnz * sizeof *r->val);
    }
    if (!r->diag || !r->b || (s->nnz == 0 ? !r->a : (!r->col || !r->val))) {
        relax_rows_free(r);
        return -1;
    }
    for (uint32_t li = 0; li < count; li++) {
        uint32_t i = first + li;
        uint64_t key = row_key(s, i);
        if (s->nnz == 0) {
            double *row = r->a + (size_t)li * s->n;
            for (uint32_t j = 0; j < s->n; j++)
                row[j] = j == i ? 0.0 : elem_k(key, j);
        } else {
            for (uint32_t t = 0; t < s->nnz; t++) {
                r->col[(size_t)li * s->nnz + t] = sparse_col(s, i, t);
                r->val[(size_t)li * s->nnz + t] = elem_k(key, t);
            }
        }
        r->diag[li] = row_sum(s, i) / s->ratio;
        r->b[li] = rhs(s, i);
    }
    return 0;
}

void relax_rows_free(relax_rows_t *r)
{
    free(r->a);
    free(r->col);
    free(r->val);
    free(r->diag);
    free(r->b);
    memset(r, 0, sizeof *r);
}

double relax_offdiag_dot(const relax_rows_t *r, uint32_t li, const double *x)
{
    if (r->nnz == 0) {
        const double *row = r->a + (size_t)li * r->n;
        double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        uint32_t j = 0;
        for (; j + 4 <= r->n; j += 4) {
            s0 += row[j] * x[j];
            s1 += row[j + 1] * x[j + 1];
            s2 += row[j + 2] * x[j + 2];
            s3 += row[j + 3] * x[j + 3];
        }
        for (; j < r->n; j++)
            s0 += row[j] * x[j];
        return (s0 + s1) + (s2 + s3);
    }
    const uint32_t *c = r->col + (size_t)li * r->nnz;
    const double *v = r->val + (size_t)li * r->nnz;
    double sum = 0;
    for (uint32_t t = 0; t < r->nnz; t++)
        sum += v[t] * x[c[t]];
    return sum;
}

double relax_residual(const relax_sys_t *s, const double *x)
{
    double rr = 0, bb = 0;
    for (uint32_t i = 0; i < s->n; i++) {
        double ax = 0, sum = 0;
        uint64_t key = row_key(s, i);
        if (s->nnz == 0) {
            for (uint32_t j = 0; j < s->n; j++)
                if (j != i) {
                    double a = elem_k(key, j);
                    sum += a;
                    ax += a * x[j];
                }
        } else {
            for (uint32_t t = 0; t < s->nnz; t++) {
                double a = elem_k(key, t);
                sum += a;
                ax += a * x[sparse_col(s, i, t)];
            }
        }
        ax += sum / s->ratio * x[i];
        double bi = rhs(s, i), d = bi - ax;
        rr += d * d;
        bb += bi * bi;
    }
    return sqrt(rr) / sqrt(bb);
}

int relax_direct_solve(const relax_sys_t *s, double *x)
{
    size_t n = s->n;
    double *a = calloc(n * n, sizeof *a), *b = malloc(n * sizeof *b);
    if (!a || !b) {
        free(a);
        free(b);
        return -1;
    }
    for (uint32_t i = 0; i < n; i++) {
        double *row = a + (size_t)i * n;
        if (s->nnz == 0) {
            for (uint32_t j = 0; j < n; j++)
                if (j != i)
                    row[j] = elem(s, i, j);
        } else {
            for (uint32_t t = 0; t < s->nnz; t++)
                row[sparse_col(s, i, t)] += elem(s, i, t);
        }
        row[i] += row_sum(s, i) / s->ratio;
        b[i] = rhs(s, i);
    }
    int rc = 0;
    for (size_t k = 0; k < n && rc == 0; k++) {
        size_t p = k;
        for (size_t i = k + 1; i < n; i++)
            if (fabs(a[i * n + k]) > fabs(a[p * n + k]))
                p = i;
        if (a[p * n + k] == 0) {
            rc = -1;
            break;
        }
        if (p != k) {
            for (size_t j = 0; j < n; j++) {
                double t = a[k * n + j];
                a[k * n + j] = a[p * n + j];
                a[p * n + j] = t;
            }
            double t = b[k];
            b[k] = b[p];
            b[p] = t;
        }
        for (size_t i = k + 1; i < n; i++) {
            double f = a[i * n + k] / a[k * n + k];
            if (f == 0)
                continue;
            for (size_t j = k; j < n; j++)
                a[i * n + j] -= f * a[k * n + j];
            b[i] -= f * b[k];
        }
    }
    for (size_t k = n; rc == 0 && k-- > 0;) {
        double sum = b[k];
        for (size_t j = k + 1; j < n; j++)
            sum -= a[k * n + j] * x[j];
        x[k] = sum / a[k * n + k];
    }
    free(a);
    free(b);
    return rc;
}
