/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file ofi_check.h
 * The provider tests' two assertions, written once: CHECK(cond, fmt, ...)
 * prints where and why and exits 1; FI(call) checks a libfabric call's
 * return value and names the call and fi_strerror() of its error.
 *
 * A test that runs two processes names the failing one by defining
 * OFI_CHECK_WHO (a const char * expression, e.g. "[child] ") before it
 * includes this header; the default is empty.
 */
#ifndef EM_OFI_CHECK_H
#define EM_OFI_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>

#include <rdma/fi_errno.h>

#ifndef OFI_CHECK_WHO
#define OFI_CHECK_WHO ""
#endif

#define CHECK(c, ...)                                                                              \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "%sFAIL %s:%d: ", OFI_CHECK_WHO, __FILE__, __LINE__);                  \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)
#define FI(call)                                                                                   \
    do {                                                                                           \
        ssize_t r_ = (call);                                                                       \
        CHECK(r_ >= 0, "%s = %zd (%s)", #call, r_, fi_strerror((int)-r_));                         \
    } while (0)

#endif
