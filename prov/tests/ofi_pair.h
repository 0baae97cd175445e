/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file ofi_pair.h
 * What the provider's endpoint tests do alike, written once: a monotonic
 * clock in seconds, opening one RDM endpoint with its fabric, domain, CQ
 * and AV, closing them again in the order the provider requires, and the
 * two-process set-up (fork, a pipe each way, FI_ETHERMPI_ID 0 and 1) with
 * a barrier over those pipes that keeps progressing the CQ.
 *
 * Include after ofi_check.h (CHECK, FI).  Single-threaded tests only.
 * Also: ofi_getinfo_ethermpi(), the hints every test asks the provider with.
 */
#ifndef EM_OFI_PAIR_H
#define EM_OFI_PAIR_H

#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

/** CLOCK_MONOTONIC in seconds, for the tests' time limits. */
static inline double ofi_now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/**
 * fi_getinfo for an ethermpi RDM endpoint with @p caps and an AV of
 * @p av_type (API 1.17, the oldest target).  Any failure ends the test.
 * The caller frees the answer with fi_freeinfo().
 */
static inline struct fi_info *ofi_getinfo_ethermpi(uint64_t caps, enum fi_av_type av_type)
{
    struct fi_info *hints = fi_allocinfo(), *info = NULL;
    CHECK(hints, "fi_allocinfo");
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = caps;
    hints->fabric_attr->prov_name = strdup("ethermpi");
    hints->domain_attr->av_type = av_type;
    FI(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info));
    fi_freeinfo(hints);
    return info;
}

/**
 * Open the fabric, domain, a tagged CQ of @p cq_size entries, an AV of
 * @p av_type and an endpoint of @p info, and bind the AV and the CQ
 * (transmit and receive) to the endpoint.  The endpoint is not enabled:
 * the caller may bind more (a counter) before fi_enable().  Any failure
 * ends the test (FI).
 */
static inline void ofi_open_ep(struct fi_info *info, enum fi_av_type av_type, size_t cq_size,
                               struct fid_fabric **fab, struct fid_domain **dom, struct fid_cq **cq,
                               struct fid_av **av, struct fid_ep **ep)
{
    FI(fi_fabric(info->fabric_attr, fab, NULL));
    FI(fi_domain(*fab, info, dom, NULL));
    struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_TAGGED, .size = cq_size };
    FI(fi_cq_open(*dom, &ca, cq, NULL));
    struct fi_av_attr aa = { .type = av_type };
    FI(fi_av_open(*dom, &aa, av, NULL));
    FI(fi_endpoint(*dom, info, ep, NULL));
    FI(fi_ep_bind(*ep, &(*av)->fid, 0));
    FI(fi_ep_bind(*ep, &(*cq)->fid, FI_TRANSMIT | FI_RECV));
}

/** Close what ofi_open_ep() opened: the endpoint first (it holds the AV and the CQ). */
static inline void ofi_close_ep(struct fid_ep *ep, struct fid_av *av, struct fid_cq *cq,
                                struct fid_domain *dom, struct fid_fabric *fab)
{
    fi_close(&ep->fid);
    fi_close(&av->fid);
    fi_close(&cq->fid);
    fi_close(&dom->fid);
    fi_close(&fab->fid);
}

/**
 * Fork the test's second process, with a pipe each way between the two,
 * and set FI_ETHERMPI_ID to 0 in the parent and 1 in the child.
 * @return the child's pid in the parent, 0 in the child, -1 when a pipe or
 * the fork failed; *@p child is 1 in the child, 0 in the parent, and
 * *@p to / *@p from the pipe ends to write to and read from the other.
 */
static inline pid_t ofi_fork_pair(int *child, int *to, int *from)
{
    int p2c[2], c2p[2];
    if (pipe(p2c) || pipe(c2p))
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0)
        (void)prctl(PR_SET_PDEATHSIG, SIGKILL); /* a parent that fails a check ends us too */
    *child = pid == 0;
    setenv("FI_ETHERMPI_ID", *child ? "1" : "0", 1);
    *to = *child ? c2p[1] : p2c[1];
    *from = *child ? p2c[0] : c2p[0];
    return pid;
}

/**
 * A barrier over the pipes: tell the other process we got here and wait
 * (60 s at most) until it did, calling @p progress meanwhile (manual
 * progress: a process must keep reading its CQ, e.g. to acknowledge).
 */
static inline void ofi_sync_peer(int to, int from, void (*progress)(void))
{
    char c = 'x';
    CHECK(write(to, &c, 1) == 1, "pipe write");
    struct pollfd pf = { .fd = from, .events = POLLIN };
    double end = ofi_now_s() + 60;
    while (poll(&pf, 1, 0) == 0) {
        progress();
        CHECK(ofi_now_s() < end, "the other process did not sync within 60 s");
    }
    CHECK(read(from, &c, 1) == 1, "pipe read: the other process died");
}

/**
 * Swap endpoint names with the other process over the pipes and insert
 * its name into @p av.  @return the other endpoint's fi_addr_t.  Any
 * failure ends the test.
 */
static inline fi_addr_t ofi_swap_names(struct fid_ep *ep, struct fid_av *av, int to, int from)
{
    char name[256], rname[256];
    size_t len = sizeof name;
    FI(fi_getname(&ep->fid, name, &len));
    CHECK(write(to, name, len) == (ssize_t)len, "pipe write");
    CHECK(read(from, rname, len) == (ssize_t)len, "pipe read");
    fi_addr_t peer = FI_ADDR_UNSPEC;
    CHECK(fi_av_insert(av, rname, 1, &peer, 0, NULL) == 1, "av_insert");
    return peer;
}

#endif
