/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The send budget end to end (EMO_TX_BYTES, prov/emo_prov.h), two
 * processes over loopback UDP (as test_ofi_budget): an inject completes
 * at once, so a sender that injects faster than its peer acknowledges
 * must be stopped by -FI_EAGAIN, not grow without bound (Open MPI's
 * blocking sends of 256 KiB grew a rank by 1.7 GB in 3 s).  The parent
 * injects messages of the inject size while the child, asleep on its
 * pipe, acknowledges nothing: fi_tinject must answer -FI_EAGAIN once
 * about EMO_TX_BYTES are held.  Then the child wakes and takes every
 * message while the parent injects the rest, retrying on -FI_EAGAIN:
 * all arrive, in order, with their content.
 *
 * Usage: test_ofi_sendbudget [provider dir]  (else FI_PROVIDER_PATH must be set)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

static int me;
#define OFI_CHECK_WHO (me ? "[1] " : "[0] ")
#include "ofi_check.h"
#include "ofi_pair.h"

/* The provider's EMO_TX_BYTES (prov/emo_prov.h; this test loads the
 * provider through libfabric and links none of it) */
#define TX_BYTES (8u << 20)
/* messages sent in all: three budgets' worth */
static int total;

static struct fid_fabric *fab;
static struct fid_domain *dom;
static struct fid_ep *ep;
static struct fid_av *av;
static struct fid_cq *cq;
static fi_addr_t peer;
static int to_peer, from_peer;

static void progress_once(void)
{
    struct fi_cq_tagged_entry e;
    struct fi_cq_err_entry x = { 0 };
    if (fi_cq_read(cq, &e, 1) == -FI_EAVAIL) {
        CHECK(fi_cq_readerr(cq, &x, 0) == 1, "readerr");
        CHECK(0, "an error completion: %s", fi_strerror(x.err));
    }
}

static void fill(uint8_t *b, size_t n, int i)
{
    for (size_t k = 0; k < n; k++)
        b[k] = (uint8_t)(i * 31 + k * 7);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        setenv("FI_PROVIDER_PATH", argv[1], 1);
    setenv("FI_ETHERMPI_IF_INCLUDE", "127.0.0.1", 0);
    pid_t child = ofi_fork_pair(&me, &to_peer, &from_peer);
    if (child < 0)
        return 1;
    struct fi_info *info = ofi_getinfo_ethermpi(FI_TAGGED | FI_DIRECTED_RECV, FI_AV_TABLE);
    size_t sz = info->tx_attr->inject_size;
    CHECK(sz >= 1024 && sz <= TX_BYTES / 8, "inject size %zu", sz);
    total = (int)(3 * (size_t)TX_BYTES / sz) + 1;
    ofi_open_ep(info, FI_AV_TABLE, 64, &fab, &dom, &cq, &av, &ep);
    FI(fi_enable(ep));
    peer = ofi_swap_names(ep, av, to_peer, from_peer);
    ofi_sync_peer(to_peer, from_peer, progress_once);
    uint8_t *b = malloc(sz);
    CHECK(b, "malloc");

    if (!me) {
        /* the child sleeps on its pipe: nothing is acknowledged */
        int i = 0;
        ssize_t rc = 0;
        fill(b, sz, 0);
        for (; i < total && (rc = fi_tinject(ep, b, sz, peer, (uint64_t)i)) == 0; i++)
            fill(b, sz, i + 1); /* the buffer is ours again at once: change it */
        CHECK(rc == -FI_EAGAIN, "inject %d: %s (the budget never said EAGAIN)", i,
              fi_strerror((int)-rc));
        size_t held = (size_t)i * sz;
        printf("held to the budget after %d injects of %zu B (%zu B)\n", i, sz, held);
        CHECK(i >= 1 && held <= TX_BYTES + sz, "%d injects of %zu B: %zu B held", i, sz, held);
        CHECK(held >= TX_BYTES / 2, "stopped early: %zu B", held);
        char c = 'g';
        CHECK(write(to_peer, &c, 1) == 1, "pipe"); /* wake the child */
        for (double end = ofi_now_s() + 30; i < total;) {
            rc = fi_tinject(ep, b, sz, peer, (uint64_t)i);
            if (rc == -FI_EAGAIN) {
                progress_once();
                CHECK(ofi_now_s() < end, "inject %d still refused after 30 s", i);
                continue;
            }
            CHECK(rc == 0, "inject %d: %s", i, fi_strerror((int)-rc));
            fill(b, sz, ++i);
        }
        ofi_sync_peer(to_peer, from_peer, progress_once); /* all taken */
        int st;
        CHECK(waitpid(child, &st, 0) == child && WIFEXITED(st) && WEXITSTATUS(st) == 0,
              "the receiving child failed");
    } else {
        char c;
        CHECK(read(from_peer, &c, 1) == 1, "pipe"); /* asleep until the parent is held */
        uint8_t *want = malloc(sz);
        CHECK(want, "malloc");
        for (int i = 0; i < total; i++) {
            struct fi_context ctx;
            FI(fi_trecv(ep, b, sz, NULL, peer, (uint64_t)i, 0, &ctx));
            struct fi_cq_tagged_entry e;
            ssize_t n;
            double end = ofi_now_s() + 30;
            while ((n = fi_cq_read(cq, &e, 1)) == -FI_EAGAIN)
                CHECK(ofi_now_s() < end, "message %d did not come within 30 s", i);
            CHECK(n == 1 && e.op_context == &ctx && e.len == sz && e.tag == (uint64_t)i,
                  "message %d: n %zd len %zu tag %llu", i, n, (size_t)e.len,
                  (unsigned long long)e.tag);
            fill(want, sz, i);
            CHECK(memcmp(b, want, sz) == 0, "message %d: content differs", i);
        }
        free(want);
        ofi_sync_peer(to_peer, from_peer, progress_once);
    }
    free(b);
    ofi_close_ep(ep, av, cq, dom, fab);
    fi_freeinfo(info);
    if (!me)
        printf("test_ofi_sendbudget: all checks passed\n");
    return 0;
}
