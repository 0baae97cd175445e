/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The relaxation solver's generated systems (apps/relax/system.h): the rows
 * a rank stores, the matrix-free residual and the direct solve agree, for
 * dense and sparse systems.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "system.h"

static void check(uint32_t n, uint32_t nnz)
{
    relax_sys_t s = { .n = n, .nnz = nnz, .ratio = 0.5, .seed = 11 };
    double *xd = malloc(n * sizeof *xd), *x = calloc(n, sizeof *x);
    assert_int_equal(relax_direct_solve(&s, xd), 0);
    assert_true(relax_residual(&s, xd) < 1e-13);
    double zero = relax_residual(&s, x);
    assert_true(fabs(zero - 1.0) < 1e-15); /* x = 0: ||b|| / ||b|| */
    /* Jacobi with the rows split over 3 "ranks" converges to the direct solution */
    relax_rows_t r[3];
    for (int k = 0; k < 3; k++)
        assert_int_equal(relax_rows_build(&s, n * k / 3, n * (k + 1) / 3 - n * k / 3, &r[k]), 0);
    double *xn = malloc(n * sizeof *xn);
    for (int sweep = 0; sweep < 60; sweep++) {
        for (int k = 0; k < 3; k++)
            for (uint32_t li = 0; li < r[k].count; li++)
                xn[r[k].first + li] = (r[k].b[li] - relax_offdiag_dot(&r[k], li, x)) /
                                      r[k].diag[li];
        memcpy(x, xn, n * sizeof *x);
    }
    double md = 0;
    for (uint32_t i = 0; i < n; i++)
        md = fmax(md, fabs(x[i] - xd[i]));
    assert_true(md < 1e-12);
    assert_true(relax_residual(&s, x) < 1e-12);
    /* a wrong x is caught */
    x[n / 2] += 1e-3;
    assert_true(relax_residual(&s, x) > 1e-6);
    for (int k = 0; k < 3; k++)
        relax_rows_free(&r[k]);
    free(xd);
    free(x);
    free(xn);
}

static void test_dense(void **st)
{
    (void)st;
    check(300, 0);
}
static void test_sparse(void **st)
{
    (void)st;
    check(500, 7);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dense),
        cmocka_unit_test(test_sparse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
