/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The unexpected queue's budget end to end, two processes over loopback
 * UDP (as test_ofi_api): the child floods tagged messages the parent never
 * posts a receive for, past the parent's FI_ETHERMPI_UNEXP_MB=1.  The
 * parent must fail the child (its memory held to the budget, the flood
 * purged), so that a receive posted for the child ends at once with
 * FI_EIO naming the budget, instead of the node running out of memory.
 * (The budget's arithmetic, and who is blamed: test_ofi_hostile.)
 *
 * Usage: test_ofi_budget [provider dir]  (else FI_PROVIDER_PATH must be set)
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

static struct fid_fabric *fab;
static struct fid_domain *dom;
static struct fid_ep *ep;
static struct fid_av *av;
static struct fid_cq *cq;
static fi_addr_t peer;
static int to_peer, from_peer;

/* completions are not waited for here: progress only */
static void progress_once(void)
{
    struct fi_cq_tagged_entry e;
    struct fi_cq_err_entry x = { 0 };
    if (fi_cq_read(cq, &e, 1) == -FI_EAVAIL)
        (void)fi_cq_readerr(cq, &x, 0);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        setenv("FI_PROVIDER_PATH", argv[1], 1);
    setenv("FI_ETHERMPI_IF_INCLUDE", "127.0.0.1", 0);
    pid_t child = ofi_fork_pair(&me, &to_peer, &from_peer);
    if (child < 0)
        return 1;
    if (me) {
        /* the flood goes unacknowledged once the parent failed us: do not
         * wait for it at close, nor retry for a minute */
        setenv("FI_ETHERMPI_LINGER_MS", "0", 1);
    } else {
        setenv("FI_ETHERMPI_UNEXP_MB", "1", 1);
    }
    struct fi_info *info = ofi_getinfo_ethermpi(FI_TAGGED | FI_DIRECTED_RECV, FI_AV_TABLE);
    ofi_open_ep(info, FI_AV_TABLE, 64, &fab, &dom, &cq, &av, &ep);
    FI(fi_enable(ep));
    peer = ofi_swap_names(ep, av, to_peer, from_peer);
    ofi_sync_peer(to_peer, from_peer, progress_once);

    if (me) {
        /* 1.6 MB for a 1 MiB budget, in injects of the inject size: no
         * completion to wait for, and the last ones are never acknowledged */
        static uint8_t b[65536];
        size_t isz = info->tx_attr->inject_size < sizeof b ? info->tx_attr->inject_size : sizeof b;
        memset(b, 0x5a, sizeof b);
        for (int i = 0; i < (int)(1600000 / isz) + 1; i++) {
            ssize_t rc;
            double end = ofi_now_s() + 10;
            while ((rc = fi_tinject(ep, b, isz, peer, 0x77)) == -FI_EAGAIN && ofi_now_s() < end)
                progress_once();
            CHECK(rc == 0, "inject %d: %s", i, fi_strerror((int)-rc));
        }
        ofi_sync_peer(to_peer, from_peer, progress_once); /* sent */
        ofi_sync_peer(to_peer, from_peer, progress_once); /* the parent checked */
    } else {
        ofi_sync_peer(to_peer, from_peer, progress_once);
        /* a receive for the child alone: the child is failed already or
         * soon (frames still in flight are judged as they come) */
        uint8_t r[64];
        struct fi_context c;
        struct fi_cq_err_entry x = { 0 };
        char why[512] = "";
        int err = 0;
        FI(fi_trecv(ep, r, sizeof r, NULL, peer, 0x78, 0, &c));
        for (double end = ofi_now_s() + 10; ofi_now_s() < end && !err;) {
            struct fi_cq_tagged_entry e;
            ssize_t n = fi_cq_read(cq, &e, 1);
            CHECK(n == -FI_EAGAIN || n == -FI_EAVAIL, "a completion for nothing sent (%zd)", n);
            if (n == -FI_EAVAIL) {
                CHECK(fi_cq_readerr(cq, &x, 0) == 1, "readerr");
                err = x.err;
                snprintf(why, sizeof why, "%s",
                         fi_cq_strerror(cq, x.prov_errno, x.err_data, NULL, 0));
            }
        }
        CHECK(err == FI_EIO && x.op_context == &c, "receive for the flooding peer: err %d", err);
        CHECK(strstr(why, "FI_ETHERMPI_UNEXP_MB") != NULL, "the error names no cause: %s", why);
        printf("flooding peer failed: %s\n", why);
        ofi_sync_peer(to_peer, from_peer, progress_once);
        waitpid(child, NULL, 0);
    }
    ofi_close_ep(ep, av, cq, dom, fab);
    fi_freeinfo(info);
    if (!me)
        printf("test_ofi_budget: all checks passed\n");
    return 0;
}
