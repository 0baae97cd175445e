/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * First contact (prov/emo_contact.c) through libfabric's API: two processes
 * over kernel UDP on loopback; the child inserts the parent's address, the
 * parent does NOT insert the child's (as Open MPI's mtl ofi, which inserts
 * a peer only when it first sends to it).
 *
 *   mode "accept" (default budget): the child's eager message and its
 *     rendezvous message (the parent must answer CTS to a peer it never
 *     inserted) arrive; FI_SOURCE says FI_ADDR_NOTAVAIL; then the parent
 *     inserts the child (accepted: the same endpoint) and both directions
 *     work, FI_SOURCE now naming the inserted address; the child's
 *     completion counter (FI_SEND | FI_RECV) counts its 4 operations.
 *   mode "refuse" (FI_ETHERMPI_FIRST_CONTACT=0 in the parent): the child's
 *     message does not arrive within 2 s (so the test above cannot pass
 *     without first contact); once the parent inserts the child, the
 *     retransmission arrives.
 *
 * Usage: test_ofi_contact [provider dir] [accept|refuse]
 */
#include <signal.h>
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

static int me; /* 0 parent, 1 child; declared before the checks name it */
#define OFI_CHECK_WHO (me ? "[child] " : "[parent] ")
#include "ofi_check.h"
#include "ofi_pair.h"

static struct fid_fabric *fab;
static struct fid_domain *dom;
static struct fid_ep *ep;
static struct fid_av *av;
static struct fid_cq *cq;
static struct fid_cntr *cntr; /* FI_SEND | FI_RECV: the child checks its count */
static int to_peer, from_peer;
static char rname[256];
static size_t rlen;

static void open_all(void)
{
    struct fi_info *info = ofi_getinfo_ethermpi(FI_TAGGED | FI_SOURCE, FI_AV_TABLE);
    ofi_open_ep(info, FI_AV_TABLE, 64, &fab, &dom, &cq, &av, &ep);
    fi_freeinfo(info); /* the provider keeps its own copy (fi_dupinfo) */
    struct fi_cntr_attr cta = { .events = FI_CNTR_EVENTS_COMP };
    FI(fi_cntr_open(dom, &cta, &cntr, NULL));
    FI(fi_ep_bind(ep, &cntr->fid, FI_SEND | FI_RECV | FI_READ | FI_WRITE));
    FI(fi_enable(ep));
    char name[256];
    size_t len = sizeof name;
    FI(fi_getname(&ep->fid, name, &len));
    CHECK(write(to_peer, name, len) == (ssize_t)len, "pipe");
    rlen = len;
    CHECK(read(from_peer, rname, len) == (ssize_t)len, "pipe");
}

/* poll the CQ for @p ctx until @p timeout; @return 1 with *@p e and *@p src, 0 on timeout */
static int wait_for(void *ctx, struct fi_cq_tagged_entry *e, fi_addr_t *src, double timeout)
{
    double end = ofi_now_s() + timeout;
    while (ofi_now_s() < end) {
        fi_addr_t s = 0;
        ssize_t n = fi_cq_readfrom(cq, e, 1, &s);
        if (n == 1) {
            CHECK(e->op_context == ctx, "completion of %p, not %p", e->op_context, ctx);
            if (src)
                *src = s;
            return 1;
        }
        if (n == -FI_EAVAIL) {
            struct fi_cq_err_entry x = { 0 };
            fi_cq_readerr(cq, &x, 0);
            CHECK(0, "error completion: %s", fi_strerror(x.err));
        }
        CHECK(n == -FI_EAGAIN, "fi_cq_readfrom = %zd", n);
    }
    return 0;
}

static void progress_only(void)
{
    struct fi_cq_tagged_entry e;
    (void)fi_cq_read(cq, &e, 0);
}

static void sync_peer(void) { ofi_sync_peer(to_peer, from_peer, progress_only); }

static uint8_t big[65536], rbig[65536];

static void child(void)
{
    fi_addr_t parent;
    struct fi_context c;
    struct fi_cq_tagged_entry e;
    CHECK(fi_av_insert(av, rname, 1, &parent, 0, NULL) == 1, "insert parent");
    uint8_t m[16] = "first contact!!";
    FI(fi_tsend(ep, m, sizeof m, NULL, parent, 1, &c));
    CHECK(wait_for(&c, &e, NULL, 30), "eager send to the parent never completed");
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (uint8_t)(i * 13 + 1);
    FI(fi_tsend(ep, big, sizeof big, NULL, parent, 2, &c));
    CHECK(wait_for(&c, &e, NULL, 30), "rendezvous send to the parent never completed");
    FI(fi_trecv(ep, m, sizeof m, NULL, FI_ADDR_UNSPEC, 3, 0, &c));
    CHECK(wait_for(&c, &e, NULL, 30) && !memcmp(m, "reply", 6), "reply from the parent");
    FI(fi_tsend(ep, m, sizeof m, NULL, parent, 4, &c));
    CHECK(wait_for(&c, &e, NULL, 30), "second send to the parent");
    /* the counter: 3 sends and 1 receive completed, no error */
    CHECK(fi_cntr_read(cntr) == 4 && fi_cntr_readerr(cntr) == 0, "counter %lu, errors %lu",
          (unsigned long)fi_cntr_read(cntr), (unsigned long)fi_cntr_readerr(cntr));
    CHECK(fi_cntr_wait(cntr, 5, 100) == -FI_ETIMEDOUT, "fi_cntr_wait beyond the count");
    sync_peer();
}

static void parent(int refuse)
{
    struct fi_context c;
    struct fi_cq_tagged_entry e;
    fi_addr_t src = 0, kid;
    uint8_t m[16];
    FI(fi_trecv(ep, m, sizeof m, NULL, FI_ADDR_UNSPEC, 1, 0, &c));
    if (refuse) {
        CHECK(!wait_for(&c, &e, NULL, 2), "a message from a peer in no AV arrived although "
                                          "FI_ETHERMPI_FIRST_CONTACT=0");
        CHECK(fi_av_insert(av, rname, 1, &kid, 0, NULL) == 1, "insert the child");
        CHECK(wait_for(&c, &e, &src, 30), "the child's message after the insert");
        CHECK(src == kid, "FI_SOURCE %lu, inserted as %lu", (unsigned long)src, (unsigned long)kid);
        printf("refuse: no delivery before the insert, delivered after it\n");
        return;
    }
    CHECK(wait_for(&c, &e, &src, 30), "no message from a peer the parent never inserted");
    CHECK(e.len == sizeof m && !memcmp(m, "first contact!!", 16), "eager payload");
    CHECK(src == FI_ADDR_NOTAVAIL, "FI_SOURCE of a peer in no AV: %lu", (unsigned long)src);
    FI(fi_trecv(ep, rbig, sizeof rbig, NULL, FI_ADDR_UNSPEC, 2, 0, &c));
    CHECK(wait_for(&c, &e, NULL, 30) && e.len == sizeof rbig, "rendezvous from the child");
    for (size_t i = 0; i < sizeof rbig; i++)
        CHECK(rbig[i] == (uint8_t)(i * 13 + 1), "rendezvous byte %zu", i);
    /* now the application inserts it: an ordinary entry (index 0 of the table) */
    CHECK(fi_av_insert(av, rname, 1, &kid, 0, NULL) == 1 && kid == 0, "insert the child");
    FI(fi_tsend(ep, "reply", 6, NULL, kid, 3, &c));
    CHECK(wait_for(&c, &e, NULL, 30), "reply send");
    FI(fi_trecv(ep, m, sizeof m, NULL, FI_ADDR_UNSPEC, 4, 0, &c));
    CHECK(wait_for(&c, &e, &src, 30) && src == kid, "FI_SOURCE after the insert: %lu",
          (unsigned long)src);
    printf("accept: eager + rendezvous from a peer in no AV, then both ways after the insert\n");
}

int main(int argc, char **argv)
{
    if (argc > 1 && argv[1][0])
        setenv("FI_PROVIDER_PATH", argv[1], 1);
    int refuse = argc > 2 && !strcmp(argv[2], "refuse");
    setenv("FI_ETHERMPI_IF_INCLUDE", "127.0.0.1", 0);
    pid_t pid = ofi_fork_pair(&me, &to_peer, &from_peer);
    if (pid < 0)
        return 1;
    if (!me && refuse)
        setenv("FI_ETHERMPI_FIRST_CONTACT", "0", 1);
    open_all();
    if (me) {
        child();
        return 0;
    }
    parent(refuse);
    if (!refuse)
        sync_peer();
    else
        usleep(300000); /* let the child's send complete */
    int st = 0;
    if (refuse)
        kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    CHECK(refuse || (WIFEXITED(st) && WEXITSTATUS(st) == 0), "the child failed");
    fi_close(&ep->fid); /* the endpoint first: it holds the AV, the CQ and the counter */
    fi_close(&av->fid);
    fi_close(&cq->fid);
    fi_close(&cntr->fid);
    fi_close(&dom->fid);
    fi_close(&fab->fid);
    printf("test_ofi_contact %s: all checks passed\n", refuse ? "refuse" : "accept");
    return 0;
}
