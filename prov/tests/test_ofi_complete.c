/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * When a send completes (docs/ofi.md "When a send completes"), two
 * processes over loopback UDP, frames of 1500 bytes and 2 in flight.
 * After one message each way (first contact done), the child blocks on
 * its pipe, so nothing the parent sends next is acknowledged.  Meanwhile:
 *   - a send of 8000 B (under FI_ETHERMPI_SEND_COPY_MAX) whose caller
 *     asked for no completion level must complete at once: it was copied.
 *     Only 2 of its 6 frames can leave before the call returns; the
 *     parent then scribbles its buffer, so the other 4 must come from the
 *     copy;
 *   - the same with FI_TRANSMIT_COMPLETE (fi_tsendmsg) or
 *     FI_DELIVERY_COMPLETE (the endpoint's op flags, as hints set them)
 *     must not: it waits for the peer's ACK;
 *   - a send above the copy limit must not either (it leaves from the
 *     caller's buffer, which is the caller's again only at the ACK).
 * Then the parent wakes the child: all four arrive with the bytes they
 * had when sent, and the three waiting sends complete.  Run "nocopy"
 * (FI_ETHERMPI_SEND_COPY_MAX=0) it checks that no send, not even an
 * empty one, completes before its ACK.
 *
 * Usage: test_ofi_complete [provider dir] [copy]|[nocopy]
 */
#include <stdbool.h>
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

#define SMALL 8000        /* under the copy limit (default 8192): 6 frames */
#define LARGE (32 * 1024) /* above it, under the UDP eager limit */

static struct fid_fabric *fab;
static struct fid_domain *dom;
static struct fid_ep *ep;
static struct fid_av *av;
static struct fid_cq *cq;
static fi_addr_t peer;
static int to_peer, from_peer;

/* contexts whose send completions arrived */
static struct fi_context c_early, c_tc, c_dc, c_large;
static int got_early, got_tc, got_dc, got_large, got_other;

static void progress_once(void)
{
    struct fi_cq_tagged_entry e;
    ssize_t n = fi_cq_read(cq, &e, 1);
    if (n == -FI_EAVAIL) {
        struct fi_cq_err_entry x = { 0 };
        CHECK(fi_cq_readerr(cq, &x, 0) == 1, "readerr");
        CHECK(0, "an error completion: %s", fi_strerror(x.err));
    }
    if (n != 1)
        return;
    CHECK(e.flags & FI_SEND, "a completion that is not a send's");
    got_early += e.op_context == &c_early;
    got_tc += e.op_context == &c_tc;
    got_dc += e.op_context == &c_dc;
    got_large += e.op_context == &c_large;
    got_other += e.op_context != &c_early && e.op_context != &c_tc && e.op_context != &c_dc &&
                 e.op_context != &c_large;
}

static void progress_for(double s)
{
    for (double end = ofi_now_s() + s; ofi_now_s() < end;)
        progress_once();
}

static void fill(uint8_t *b, size_t n, int i)
{
    for (size_t k = 0; k < n; k++)
        b[k] = (uint8_t)(i * 31 + k * 7);
}

/* the child is about to block on its pipe: wait for its word (no progress:
 * frames sent after it cannot be taken until the child wakes) */
static void wait_child_asleep(void)
{
    char c;
    CHECK(read(from_peer, &c, 1) == 1 && c == 's', "pipe: the child died");
}

static void sender(bool copy)
{
    static uint8_t small[SMALL], tc[SMALL], dc[SMALL], large[LARGE];
    fill(small, sizeof small, 1);
    fill(tc, sizeof tc, 2);
    fill(dc, sizeof dc, 3);
    fill(large, sizeof large, 4);
    wait_child_asleep(); /* no ACK can come for anything sent now */
    if (!copy) {
        static struct fi_context c_empty;
        FI(fi_tsend(ep, NULL, 0, NULL, peer, 5, &c_empty));
    }
    FI(fi_tsend(ep, small, sizeof small, NULL, peer, 1, &c_early));
    if (copy) {
        progress_once();
        CHECK(got_early == 1, "the small send did not complete at once while its peer slept");
        memset(small, 0, sizeof small); /* ours again: its later frames must come from the copy */
    }
    struct iovec iov = { .iov_base = tc, .iov_len = sizeof tc };
    struct fi_msg_tagged m = {
        .msg_iov = &iov, .iov_count = 1, .addr = peer, .tag = 2, .context = &c_tc
    };
    FI(fi_tsendmsg(ep, &m, FI_TRANSMIT_COMPLETE | FI_COMPLETION));
    /* the endpoint's op flags, as an application's hints set them */
    uint64_t fl = FI_TRANSMIT | FI_DELIVERY_COMPLETE;
    FI(fi_control(&ep->fid, FI_SETOPSFLAG, &fl));
    FI(fi_tsend(ep, dc, sizeof dc, NULL, peer, 3, &c_dc));
    fl = FI_TRANSMIT;
    FI(fi_control(&ep->fid, FI_SETOPSFLAG, &fl));
    FI(fi_tsend(ep, large, sizeof large, NULL, peer, 4, &c_large));
    progress_for(0.3);
    if (!copy)
        CHECK(got_early == 0, "FI_ETHERMPI_SEND_COPY_MAX=0, yet a send completed before its ACK");
    CHECK(got_other == 0,
          "an empty send (FI_ETHERMPI_SEND_COPY_MAX=0) or an unknown context completed");
    CHECK(got_tc == 0, "FI_TRANSMIT_COMPLETE send completed before the peer acknowledged");
    CHECK(got_dc == 0, "FI_DELIVERY_COMPLETE send completed before the peer acknowledged");
    CHECK(got_large == 0, "a send above the copy limit completed before the peer acknowledged");
    char c = 'g';
    CHECK(write(to_peer, &c, 1) == 1, "pipe"); /* wake the child */
    for (double end = ofi_now_s() + 30; !(got_early && got_tc && got_dc && got_large);) {
        progress_once();
        CHECK(ofi_now_s() < end, "sends still incomplete after 30 s: %d %d %d %d", got_early,
              got_tc, got_dc, got_large);
    }
    CHECK(got_early == 1 && got_tc == 1 && got_dc == 1 && got_large == 1,
          "one completion each: %d %d %d %d", got_early, got_tc, got_dc, got_large);
}

/* one message each way: first contact is over, so the sends under test
 * leave from the caller's buffer */
static void warm_up(void)
{
    uint8_t out = 7, in = 0;
    struct fi_context rc, sc;
    FI(fi_trecv(ep, &in, 1, NULL, peer, 99, 0, &rc));
    FI(fi_tsend(ep, &out, 1, NULL, peer, 99, &sc));
    int seen = 0;
    for (double end = ofi_now_s() + 30; seen < 2;) {
        struct fi_cq_tagged_entry e;
        ssize_t n = fi_cq_read(cq, &e, 1);
        CHECK(n == 1 || n == -FI_EAGAIN, "warm-up: %s", fi_strerror((int)-n));
        seen += n == 1 && (e.op_context == &rc || e.op_context == &sc);
        CHECK(ofi_now_s() < end, "warm-up message did not come within 30 s");
    }
    CHECK(in == 7, "warm-up content");
}

static void receiver(bool copy)
{
    char c = 's';
    CHECK(write(to_peer, &c, 1) == 1, "pipe"); /* from now on no progress until woken */
    CHECK(read(from_peer, &c, 1) == 1, "pipe");
    static uint8_t b[LARGE], want[LARGE];
    /* tags 1-4, and nocopy's empty message (tag 5, sent first: it waits
     * in the unexpected queue meanwhile) */
    static const size_t len[] = { SMALL, SMALL, SMALL, LARGE, 0 };
    for (int i = 0; i < (copy ? 4 : 5); i++) {
        struct fi_context ctx;
        FI(fi_trecv(ep, b, sizeof b, NULL, peer, (uint64_t)(i + 1), 0, &ctx));
        struct fi_cq_tagged_entry e;
        ssize_t n;
        double end = ofi_now_s() + 30;
        while ((n = fi_cq_read(cq, &e, 1)) == -FI_EAGAIN)
            CHECK(ofi_now_s() < end, "message %d did not come within 30 s", i + 1);
        CHECK(n == 1 && e.op_context == &ctx && e.len == len[i], "message %d: n %zd len %zu", i + 1,
              n, (size_t)e.len);
        fill(want, len[i], i + 1);
        CHECK(memcmp(b, want, len[i]) == 0, "message %d: content differs", i + 1);
    }
}

int main(int argc, char **argv)
{
    if (argc > 1)
        setenv("FI_PROVIDER_PATH", argv[1], 1);
    bool copy = !(argc > 2 && strcmp(argv[2], "nocopy") == 0);
    if (!copy)
        setenv("FI_ETHERMPI_SEND_COPY_MAX", "0", 1);
    setenv("FI_ETHERMPI_MTU", "1500", 1);
    setenv("FI_ETHERMPI_WINDOW", "2", 1);
    setenv("FI_ETHERMPI_IF_INCLUDE", "127.0.0.1", 0);
    pid_t child = ofi_fork_pair(&me, &to_peer, &from_peer);
    if (child < 0)
        return 1;
    struct fi_info *info = ofi_getinfo_ethermpi(FI_TAGGED | FI_DIRECTED_RECV, FI_AV_TABLE);
    CHECK(info->tx_attr->inject_size >= LARGE, "inject size %zu", info->tx_attr->inject_size);
    ofi_open_ep(info, FI_AV_TABLE, 64, &fab, &dom, &cq, &av, &ep);
    FI(fi_enable(ep));
    peer = ofi_swap_names(ep, av, to_peer, from_peer);
    ofi_sync_peer(to_peer, from_peer, progress_once);
    warm_up();
    if (!me) {
        sender(copy);
        ofi_sync_peer(to_peer, from_peer, progress_once); /* all taken */
        int st;
        CHECK(waitpid(child, &st, 0) == child && WIFEXITED(st) && WEXITSTATUS(st) == 0,
              "the receiving child failed");
    } else {
        receiver(copy);
        ofi_sync_peer(to_peer, from_peer, progress_once);
    }
    ofi_close_ep(ep, av, cq, dom, fab);
    fi_freeinfo(info);
    if (!me)
        printf("test_ofi_complete (%s): all checks passed\n", copy ? "copy" : "nocopy");
    return 0;
}
