/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file test_ofi_wait.c
 * Wait objects (prov/emo_wait.c) and CQs with many endpoints.  Two
 * processes over loopback UDP (ids 0 and 1), CQ and counter opened with
 * FI_WAIT_UNSPEC:
 *
 *  1. fi_cq_sread of 300 ms on an empty CQ returns -FI_EAGAIN after about
 *     300 ms, having used well under 100 ms of CPU (getrusage): it slept.
 *  2. a message the peer sends 200 ms later wakes an fi_cq_sread of up to
 *     5 s, which returns it; again little CPU.
 *  3. FI_GETWAIT gives a descriptor; after fi_trywait said 0, it polls
 *     readable when the peer's message comes; fi_trywait then says
 *     -FI_EAGAIN, and fi_cq_read returns the message.
 *  4. fi_cntr_wait of 300 ms that nothing satisfies: -FI_ETIMEDOUT, little CPU.
 *  5. (one process) 12 endpoints bound to one CQ, each sending to itself:
 *     all 24 completions are read from it (the set of bound endpoints had
 *     a cap of 8).
 *
 * Usage: test_ofi_wait [PROVIDER_PATH]   (~1.5 s)
 */
#define OFI_CHECK_WHO (is_child ? "[child] " : "[parent] ")
static int is_child;

#include "ofi_check.h"
#include "ofi_pair.h"

#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rdma/fi_cm.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_tagged.h>

static struct fid_fabric *fab;
static struct fid_domain *dom;
static struct fid_cq *cq;
static struct fid_av *av;
static struct fid_ep *ep;
static struct fid_cntr *cntr;
static struct fi_info *info;

/* user + system CPU time of this process, seconds */
static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
           ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) * 1e-6;
}

static void progress(void)
{
    struct fi_cq_tagged_entry e;
    (void)fi_cq_read(cq, &e, 1);
}

/* read one entry within @p s seconds (polling) and return its tag */
static uint64_t read_one(double s)
{
    struct fi_cq_tagged_entry e;
    double end = ofi_now_s() + s;
    for (;;) {
        ssize_t n = fi_cq_read(cq, &e, 1);
        if (n == 1)
            return e.tag;
        CHECK(n == -FI_EAGAIN, "fi_cq_read = %zd (%s)", n, fi_strerror((int)-n));
        CHECK(ofi_now_s() < end, "no completion within %.1f s", s);
    }
}

static void open_pair(void)
{
    info = ofi_getinfo_ethermpi(FI_TAGGED | FI_MSG, FI_AV_TABLE);
    FI(fi_fabric(info->fabric_attr, &fab, NULL));
    FI(fi_domain(fab, info, &dom, NULL));
    struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_TAGGED,
                             .size = 64,
                             .wait_obj = FI_WAIT_UNSPEC };
    FI(fi_cq_open(dom, &ca, &cq, NULL));
    struct fi_av_attr aa = { .type = FI_AV_TABLE };
    FI(fi_av_open(dom, &aa, &av, NULL));
    struct fi_cntr_attr na = { .events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_UNSPEC };
    FI(fi_cntr_open(dom, &na, &cntr, NULL));
    FI(fi_endpoint(dom, info, &ep, NULL));
    FI(fi_ep_bind(ep, &av->fid, 0));
    FI(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
    FI(fi_ep_bind(ep, &cntr->fid, FI_RECV));
    FI(fi_enable(ep));
}

static void close_pair(void)
{
    fi_close(&ep->fid);
    fi_close(&cntr->fid);
    fi_close(&av->fid);
    fi_close(&cq->fid);
    fi_close(&dom->fid);
    fi_close(&fab->fid);
    fi_freeinfo(info);
}

/* 5: more endpoints on one CQ than the old cap (8), each sending to itself */
static void many_eps(void)
{
    enum { N = 12 };
    info = ofi_getinfo_ethermpi(FI_TAGGED | FI_MSG, FI_AV_TABLE);
    FI(fi_fabric(info->fabric_attr, &fab, NULL));
    FI(fi_domain(fab, info, &dom, NULL));
    struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_TAGGED,
                             .size = 64,
                             .wait_obj = FI_WAIT_UNSPEC };
    FI(fi_cq_open(dom, &ca, &cq, NULL));
    struct fid_av *avs[N];
    struct fid_ep *eps[N];
    uint64_t sbuf[N], rbuf[N];
    for (int i = 0; i < N; i++) {
        struct fi_av_attr aa = { .type = FI_AV_TABLE };
        FI(fi_av_open(dom, &aa, &avs[i], NULL));
        FI(fi_endpoint(dom, info, &eps[i], NULL));
        FI(fi_ep_bind(eps[i], &avs[i]->fid, 0));
        int rc = fi_ep_bind(eps[i], &cq->fid, FI_TRANSMIT | FI_RECV);
        CHECK(rc == 0, "binding endpoint %d to the CQ: %d (%s)", i + 1, rc, fi_strerror(-rc));
        FI(fi_enable(eps[i]));
        char name[256];
        size_t len = sizeof name;
        FI(fi_getname(&eps[i]->fid, name, &len));
        fi_addr_t self = FI_ADDR_UNSPEC;
        CHECK(fi_av_insert(avs[i], name, 1, &self, 0, NULL) == 1, "inserting our own address");
        FI(fi_trecv(eps[i], &rbuf[i], sizeof rbuf[i], NULL, FI_ADDR_UNSPEC, 100 + (uint64_t)i, 0,
                    &rbuf[i]));
        sbuf[i] = 1000 + (uint64_t)i;
        FI(fi_tsend(eps[i], &sbuf[i], sizeof sbuf[i], NULL, self, 100 + (uint64_t)i, &sbuf[i]));
    }
    int sends = 0, recvs = 0;
    double end = ofi_now_s() + 10;
    while (sends + recvs < 2 * N) {
        struct fi_cq_tagged_entry e;
        ssize_t n = fi_cq_sread(cq, &e, 1, NULL, 100);
        if (n == -FI_EAGAIN) {
            CHECK(ofi_now_s() < end, "%d sends and %d receives of %d each in 10 s", sends, recvs,
                  N);
            continue;
        }
        CHECK(n == 1, "fi_cq_sread = %zd (%s)", n, fi_strerror((int)-n));
        if (e.flags & FI_RECV) {
            int i = (int)(e.tag - 100);
            CHECK(i >= 0 && i < N && rbuf[i] == 1000 + (uint64_t)i, "receive %d got %llu", i,
                  (unsigned long long)(i >= 0 && i < N ? rbuf[i] : 0));
            recvs++;
        } else
            sends++;
    }
    for (int i = 0; i < N; i++) {
        FI(fi_close(&eps[i]->fid));
        FI(fi_close(&avs[i]->fid));
    }
    FI(fi_close(&cq->fid));
    fi_close(&dom->fid);
    fi_close(&fab->fid);
    fi_freeinfo(info);
    printf("%d endpoints on one CQ: %d sends and %d receives completed\n", N, sends, recvs);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        setenv("FI_PROVIDER_PATH", argv[1], 1);
    setenv("FI_ETHERMPI_IF_INCLUDE", "127.0.0.1", 0);
    /* 5 in a process of its own, before the provider reads its settings:
     * an explicit FI_ETHERMPI_ID names one endpoint, so random ids */
    pid_t many = fork();
    CHECK(many >= 0, "fork failed");
    if (many == 0) {
        unsetenv("FI_ETHERMPI_ID");
        many_eps();
        return 0;
    }
    int st = 0;
    CHECK(waitpid(many, &st, 0) == many && WIFEXITED(st) && WEXITSTATUS(st) == 0,
          "the endpoints-on-one-CQ process failed (status %d)", st);
    int to, from;
    pid_t pid = ofi_fork_pair(&is_child, &to, &from);
    CHECK(pid >= 0, "fork or pipe failed");
    open_pair();
    fi_addr_t peer = ofi_swap_names(ep, av, to, from);
    ofi_sync_peer(to, from, progress);
    uint64_t sb = 7, rb = 0;

    if (is_child) {
        /* 2: send after the parent went to sleep in fi_cq_sread */
        ofi_sync_peer(to, from, progress);
        usleep(200000);
        FI(fi_tsend(ep, &sb, sizeof sb, NULL, peer, 1, NULL));
        (void)read_one(5);
        /* 3: the same, for the parent's descriptor */
        ofi_sync_peer(to, from, progress);
        usleep(100000);
        FI(fi_tsend(ep, &sb, sizeof sb, NULL, peer, 2, NULL));
        (void)read_one(5);
        ofi_sync_peer(to, from, progress); /* the parent has both: close */
        close_pair();
        return 0;
    }

    /* 1: an empty CQ sleeps out the timeout */
    struct fi_cq_tagged_entry e;
    FI(fi_trecv(ep, &rb, sizeof rb, NULL, FI_ADDR_UNSPEC, 1, 0, &rb));
    double t0 = ofi_now_s(), c0 = cpu_s();
    ssize_t n = fi_cq_sread(cq, &e, 1, NULL, 300);
    double dt = ofi_now_s() - t0, dc = cpu_s() - c0;
    printf("sread of 300 ms on an empty CQ: %zd after %.1f ms, %.1f ms of CPU\n", n, dt * 1e3,
           dc * 1e3);
    CHECK(n == -FI_EAGAIN, "an empty CQ's sread = %zd (%s)", n, fi_strerror((int)-n));
    CHECK(dt >= 0.29, "the sread returned after %.1f ms, before its 300 ms", dt * 1e3);
    CHECK(dc < 0.1, "the sread used %.1f ms of CPU in %.1f ms: it did not sleep", dc * 1e3,
          dt * 1e3);

    /* 2: the peer's message wakes a sleeping sread */
    ofi_sync_peer(to, from, progress);
    t0 = ofi_now_s();
    c0 = cpu_s();
    n = fi_cq_sread(cq, &e, 1, NULL, 5000);
    dt = ofi_now_s() - t0;
    dc = cpu_s() - c0;
    printf("sread woken by a message: %zd after %.1f ms, %.1f ms of CPU\n", n, dt * 1e3, dc * 1e3);
    CHECK(n == 1 && e.tag == 1 && rb == 7, "sread = %zd, tag %llu, data %llu", n,
          (unsigned long long)e.tag, (unsigned long long)rb);
    CHECK(dt < 3, "the message took %.1f ms to wake the sread", dt * 1e3);
    CHECK(dc < 0.1 || dc < dt / 3, "the sread used %.1f ms of CPU in %.1f ms", dc * 1e3, dt * 1e3);

    /* 3: FI_GETWAIT's descriptor, armed by fi_trywait, polls readable */
    int fd = -1;
    int rc = fi_control(&cq->fid, FI_GETWAIT, &fd);
    CHECK(rc == 0 && fd >= 0, "FI_GETWAIT = %d (%s), fd %d", rc, fi_strerror(-rc), fd);
    rb = 0;
    FI(fi_trecv(ep, &rb, sizeof rb, NULL, FI_ADDR_UNSPEC, 2, 0, &rb));
    struct fid *fids[1] = { &cq->fid };
    /* -FI_EAGAIN is allowed whenever progress did some work (a delayed ACK
     * of the last message going out): callers retry, as libfabric's
     * fi_trywait(3) tells them to; it must settle at 0 with nothing to do */
    for (int k = 0; (rc = fi_trywait(fab, fids, 1)) == -FI_EAGAIN && k < 200; k++)
        usleep(1000);
    CHECK(rc == 0, "fi_trywait on an empty CQ = %d (%s)", rc, fi_strerror(-rc));
    ofi_sync_peer(to, from, progress);
    struct pollfd pf = { .fd = fd, .events = POLLIN };
    t0 = ofi_now_s();
    int pr = poll(&pf, 1, 5000);
    printf("FI_GETWAIT descriptor readable after %.1f ms\n", (ofi_now_s() - t0) * 1e3);
    CHECK(pr == 1, "the wait descriptor did not become readable within 5 s (%d)", pr);
    rc = fi_trywait(fab, fids, 1);
    CHECK(rc == -FI_EAGAIN, "fi_trywait with a message at hand = %d, not -FI_EAGAIN", rc);
    CHECK(read_one(2) == 2 && rb == 7, "the message after the wait: data %llu",
          (unsigned long long)rb);

    /* 4: a counter wait that nothing satisfies sleeps too */
    uint64_t v = fi_cntr_read(cntr);
    t0 = ofi_now_s();
    c0 = cpu_s();
    rc = fi_cntr_wait(cntr, v + 1, 300);
    dt = ofi_now_s() - t0;
    dc = cpu_s() - c0;
    printf("cntr_wait of 300 ms: %d after %.1f ms, %.1f ms of CPU\n", rc, dt * 1e3, dc * 1e3);
    CHECK(rc == -FI_ETIMEDOUT, "fi_cntr_wait = %d (%s)", rc, fi_strerror(-rc));
    CHECK(dc < 0.1, "the counter wait used %.1f ms of CPU: it did not sleep", dc * 1e3);

    ofi_sync_peer(to, from, progress);
    close_pair();
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
          "the child failed (status %d)", st);
    printf("test_ofi_wait: all checks passed\n");
    return 0;
}
