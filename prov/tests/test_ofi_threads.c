/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file test_ofi_threads.c
 * FI_THREAD_SAFE (docs/ofi.md "Threads"):
 *
 *  1. fi_getinfo answers with the threading level the hints ask for
 *     (SAFE, COMPLETION, DOMAIN), and FI_THREAD_DOMAIN when they ask none.
 *  2. Two processes (fork, FI_ETHERMPI_ID 0 and 1, loopback UDP), each with
 *     one FI_THREAD_SAFE domain, endpoint and CQ, and four threads that at
 *     once post tagged receives, send tagged messages of 1 B .. 20 000 B to
 *     the other process and read the one shared CQ: any thread may reap
 *     another's completion (each operation's context has a done flag).
 *     Every message's bytes are checked.  Under ThreadSanitizer
 *     (tools/run-tests) a missing lock is a reported race.
 *
 * Usage: test_ofi_threads [PROVIDER_PATH]   (~1 s)
 */
#define OFI_CHECK_WHO (is_child ? "[child] " : "[parent] ")
static int is_child;

#include "ofi_check.h"
#include "ofi_pair.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include <rdma/fi_tagged.h>

#define NT      4
#define PER     150
#define MSG_MAX 20000

static struct fid_fabric *fab;
static struct fid_domain *dom;
static struct fid_cq *cq;
static struct fid_av *av;
static struct fid_ep *ep;
static fi_addr_t peer;

struct op {
    atomic_int done;
    size_t len; /* received */
};

static size_t msg_len(int t, int seq)
{
    return 1 + ((size_t)seq * 2477u + (size_t)t * 613u) % MSG_MAX;
}
static uint8_t msg_byte(int from, int t, int seq, size_t i)
{
    return (uint8_t)(i * 13u + (unsigned)seq * 5u + (unsigned)t * 3u + (unsigned)from * 101u);
}

/* read the shared CQ once: whichever thread's operation completed */
static void reap(void)
{
    struct fi_cq_tagged_entry e[8];
    ssize_t n = fi_cq_read(cq, e, 8);
    if (n == -FI_EAVAIL) {
        struct fi_cq_err_entry x = { 0 };
        fi_cq_readerr(cq, &x, 0);
        CHECK(0, "a completion with error %d (%s)", x.err, fi_strerror(x.err));
    }
    CHECK(n >= 0 || n == -FI_EAGAIN, "fi_cq_read = %zd", n);
    for (ssize_t i = 0; i < n; i++) {
        struct op *o = e[i].op_context;
        o->len = e[i].len;
        atomic_store(&o->done, 1);
    }
}

static void wait_done(struct op *o, double end)
{
    while (!atomic_load(&o->done)) {
        reap();
        CHECK(ofi_now_s() < end, "an operation did not complete within 30 s");
    }
}

static void *worker(void *u)
{
    int t = (int)(intptr_t)u, me = is_child, from = !is_child;
    static _Thread_local uint8_t sbuf[MSG_MAX], rbuf[MSG_MAX];
    double end = ofi_now_s() + 30;
    for (int seq = 0; seq < PER; seq++) {
        struct op r = { 0 }, s = { 0 };
        uint64_t tag = (uint64_t)t << 32 | (uint64_t)seq;
        size_t len = msg_len(t, seq);
        memset(rbuf, 0, len);
        FI(fi_trecv(ep, rbuf, MSG_MAX, NULL, peer, tag, 0, &r));
        for (size_t i = 0; i < len; i++)
            sbuf[i] = msg_byte(me, t, seq, i);
        ssize_t rc;
        while ((rc = fi_tsend(ep, sbuf, len, NULL, peer, tag, &s)) == -FI_EAGAIN)
            reap();
        FI(rc);
        wait_done(&s, end);
        wait_done(&r, end);
        CHECK(r.len == len, "thread %d message %d: %zu bytes, want %zu", t, seq, r.len, len);
        for (size_t i = 0; i < len; i++)
            CHECK(rbuf[i] == msg_byte(from, t, seq, i),
                  "thread %d message %d: byte %zu is 0x%02x, want 0x%02x", t, seq, i, rbuf[i],
                  msg_byte(from, t, seq, i));
    }
    return NULL;
}

static void progress(void) { reap(); }

/* the threading level fi_getinfo answers when the hints ask for @p want */
static enum fi_threading answered(enum fi_threading want)
{
    struct fi_info *hints = fi_allocinfo(), *info = NULL;
    CHECK(hints, "fi_allocinfo");
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_TAGGED;
    hints->fabric_attr->prov_name = strdup("ethermpi");
    hints->domain_attr->threading = want;
    FI(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info));
    enum fi_threading got = info->domain_attr->threading;
    fi_freeinfo(info);
    fi_freeinfo(hints);
    return got;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        setenv("FI_PROVIDER_PATH", argv[1], 1);
    setenv("FI_ETHERMPI_IF_INCLUDE", "127.0.0.1", 0);

    /* the settings are read once per process (at the first fi_getinfo):
     * fork first, so that each has its own FI_ETHERMPI_ID */
    int to, from;
    pid_t pid = ofi_fork_pair(&is_child, &to, &from);
    CHECK(pid >= 0, "fork or pipe failed");
    /* 1. the level asked for */
    CHECK(answered(FI_THREAD_SAFE) == FI_THREAD_SAFE, "FI_THREAD_SAFE not offered");
    CHECK(answered(FI_THREAD_COMPLETION) == FI_THREAD_COMPLETION,
          "FI_THREAD_COMPLETION not offered");
    CHECK(answered(FI_THREAD_DOMAIN) == FI_THREAD_DOMAIN, "FI_THREAD_DOMAIN not offered");
    CHECK(answered(FI_THREAD_UNSPEC) == FI_THREAD_DOMAIN,
          "no level asked: FI_THREAD_DOMAIN expected");

    /* 2. four threads per process on one FI_THREAD_SAFE domain */
    struct fi_info *hints = fi_allocinfo(), *info = NULL;
    CHECK(hints, "fi_allocinfo");
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_TAGGED;
    hints->fabric_attr->prov_name = strdup("ethermpi");
    hints->domain_attr->av_type = FI_AV_TABLE;
    hints->domain_attr->threading = FI_THREAD_SAFE;
    FI(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info));
    fi_freeinfo(hints);
    ofi_open_ep(info, FI_AV_TABLE, 256, &fab, &dom, &cq, &av, &ep);
    FI(fi_enable(ep));
    peer = ofi_swap_names(ep, av, to, from);
    ofi_sync_peer(to, from, progress);

    pthread_t th[NT];
    for (int t = 0; t < NT; t++)
        CHECK(pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t) == 0, "pthread_create");
    for (int t = 0; t < NT; t++)
        pthread_join(th[t], NULL);
    ofi_sync_peer(to, from, progress); /* the other's last ACKs */

    ofi_close_ep(ep, av, cq, dom, fab);
    fi_freeinfo(info);
    if (is_child)
        return 0;
    int st = 0;
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
          "the child failed (status 0x%x)", st);
    printf("test_ofi_threads: %d threads x %d messages each way, all checks passed\n", NT, PER);
    return 0;
}
