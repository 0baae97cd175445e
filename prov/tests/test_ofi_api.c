/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The provider through libfabric's own API, two processes over kernel UDP
 * on loopback (fork; addresses exchanged over pipes, as an MPI modex
 * would).  Checks: tagged eager messages matched in order, expected and
 * unexpected; ignore bits; eager messages of several frames into posted
 * receives (assembled in place) and one truncated; rendezvous of 1 MiB and of 4 MiB + 1 (two
 * puts), expected and unexpected; untagged fi_senddata with its CQ data;
 * truncation as FI_ETRUNC with olen; a multi-receive buffer (FI_MULTI_RECV:
 * eager and rendezvous, unexpected and expected, released by
 * FI_OPT_MIN_MULTI_RECV, canceled); FI_PEEK, FI_CLAIM and FI_ENOMSG (whose
 * error entry never writes through the caller's err_data); a
 * message to the endpoint itself; and a killed peer that nothing is sent
 * to: a receive posted for it ends as a CQ error (FI_EIO, the liveness
 * watch), not a hang, and later sends and receives fail at once.  (A send
 * to a dead peer: tests/unit/test_proto.c, test_live.c.)
 *
 * Usage: test_ofi_api [provider dir]  (else FI_PROVIDER_PATH must be set)
 */
#include <errno.h>
#include <signal.h>
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

static int me; /* 0 parent, 1 child; declared before the checks name it */
#define OFI_CHECK_WHO (me ? "[1] " : "[0] ")
#include "ofi_check.h"
#include "ofi_pair.h"

static struct fid_fabric *fab;
static struct fid_domain *dom;
static struct fid_ep *ep;
static struct fid_av *av;
static struct fid_cq *cq;
static struct fi_info *info;
static fi_addr_t peer, self_addr;
static int to_peer, from_peer; /* pipes */

/* Completions read while waiting for something else (manual progress: a
 * process must keep reading its CQ, e.g. to acknowledge, while it waits on
 * the pipe); wait_ctx takes them from here first. */
struct stashed {
    int is_err;
    struct fi_cq_tagged_entry e;
    struct fi_cq_err_entry x;
};
static struct stashed stash[64];
static int nstash;

static void progress_once(void)
{
    struct fi_cq_tagged_entry e;
    ssize_t n = fi_cq_read(cq, &e, 1);
    if (n == 1) {
        CHECK(nstash < 64, "stash full");
        stash[nstash++] = (struct stashed){ .e = e };
    } else if (n == -FI_EAVAIL) {
        struct fi_cq_err_entry x = { 0 };
        CHECK(fi_cq_readerr(cq, &x, 0) == 1, "readerr");
        CHECK(nstash < 64, "stash full");
        stash[nstash++] = (struct stashed){ .is_err = 1, .x = x };
    } else {
        CHECK(n == -FI_EAGAIN, "fi_cq_read = %zd", n);
    }
}

/* tell the other process we got here and wait until it did, progressing */
static void sync_peer(void) { ofi_sync_peer(to_peer, from_peer, progress_once); }

/* wait for the completion of @p ctx; @return 0, or the error's fi_errno
 * (with *err filled) when it completed with an error */
static int wait_ctx(void *ctx, struct fi_cq_tagged_entry *out, struct fi_cq_err_entry *err,
                    double timeout)
{
    for (int i = 0; i < nstash; i++) {
        struct stashed st = stash[i];
        void *c = st.is_err ? st.x.op_context : st.e.op_context;
        if (c != ctx)
            continue;
        memmove(&stash[i], &stash[i + 1], (size_t)(nstash - i - 1) * sizeof stash[0]);
        nstash--;
        if (st.is_err) {
            if (err)
                *err = st.x;
            return st.x.err;
        }
        if (out)
            *out = st.e;
        return 0;
    }
    double end = ofi_now_s() + timeout;
    while (ofi_now_s() < end) {
        struct fi_cq_tagged_entry e;
        ssize_t n = fi_cq_read(cq, &e, 1);
        if (n == 1) {
            CHECK(e.op_context == ctx, "completion of %p while waiting for %p", e.op_context, ctx);
            if (out)
                *out = e;
            return 0;
        }
        if (n == -FI_EAVAIL) {
            struct fi_cq_err_entry x = { 0 };
            CHECK(fi_cq_readerr(cq, &x, 0) == 1, "readerr");
            CHECK(x.op_context == ctx, "error of %p while waiting for %p: %s", x.op_context, ctx,
                  fi_strerror(x.err));
            if (err)
                *err = x;
            return x.err;
        }
        CHECK(n == -FI_EAGAIN, "fi_cq_read = %zd", n);
    }
    CHECK(0, "no completion of %p within %.0f s", ctx, timeout);
    return -1;
}

/* what fabtests' fi_getinfo_test checks (caps1-3, msg_ordering1-2):
 * domain-level caps stay out of tx/rx caps; an accepted order is in the
 * answer (the RMA ones hold trivially without FI_RMA); domain caps we lack
 * and FI_ORDER_DATA are refused */
static void getinfo_checks(void)
{
    struct fi_info *hints = fi_allocinfo(), *fi = NULL;
    hints->fabric_attr->prov_name = strdup("ethermpi");
    hints->tx_attr->msg_order = FI_ORDER_SAS | FI_ORDER_RAW;
    hints->rx_attr->msg_order = FI_ORDER_SAS | FI_ORDER_WAR;
    FI(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &fi));
    CHECK(!((fi->tx_attr->caps | fi->rx_attr->caps) & (FI_LOCAL_COMM | FI_REMOTE_COMM)),
          "domain caps in tx/rx caps");
    CHECK((fi->tx_attr->msg_order & (FI_ORDER_SAS | FI_ORDER_RAW)) == (FI_ORDER_SAS | FI_ORDER_RAW),
          "tx msg_order 0x%llx", (unsigned long long)fi->tx_attr->msg_order);
    CHECK(fi->rx_attr->msg_order & FI_ORDER_WAR, "rx msg_order");
    fi_freeinfo(fi);
    fi = NULL;
    hints->rx_attr->msg_order = FI_ORDER_DATA;
    CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &fi) == -FI_ENODATA,
          "FI_ORDER_DATA in rx_attr");
    hints->rx_attr->msg_order = 0;
    hints->domain_attr->caps = FI_SHARED_AV;
    CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &fi) == -FI_ENODATA,
          "domain caps FI_SHARED_AV");
    hints->domain_attr->caps = 0;
    /* a destination that names no host is refused (fabtests' 'fi_rdm
     * g00n13s' wants -FI_ENODATA; .invalid never resolves, RFC 6761); one
     * that does is answered (without dest_addr), a named source too */
    CHECK(fi_getinfo(FI_VERSION(1, 17), "g00n13s.invalid", NULL, 0, hints, &fi) == -FI_ENODATA,
          "a destination that names no host was answered");
    FI(fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", "9228", 0, hints, &fi));
    fi_freeinfo(fi);
    FI(fi_getinfo(FI_VERSION(1, 17), "localhost", NULL, FI_SOURCE, hints, &fi));
    fi_freeinfo(fi);
    fi_freeinfo(hints);
}

static void open_all(void)
{
    struct fi_info *hints = fi_allocinfo();
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_TAGGED | FI_MSG | FI_DIRECTED_RECV | FI_MULTI_RECV;
    hints->fabric_attr->prov_name = strdup("ethermpi");
    hints->domain_attr->av_type = me ? FI_AV_MAP : FI_AV_TABLE;
    FI(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info));
    fi_freeinfo(hints);
    CHECK(!strcmp(info->fabric_attr->prov_name, "ethermpi"), "provider %s",
          info->fabric_attr->prov_name);
    ofi_open_ep(info, info->domain_attr->av_type, 64, &fab, &dom, &cq, &av, &ep);
    FI(fi_enable(ep));
    char name[256], rname[256];
    size_t len = 0;
    CHECK(fi_getname(&ep->fid, name, &len) == -FI_ETOOSMALL && len > 0, "getname size");
    FI(fi_getname(&ep->fid, name, &len));
    CHECK(write(to_peer, name, len) == (ssize_t)len, "pipe");
    CHECK(read(from_peer, rname, len) == (ssize_t)len, "pipe");
    CHECK(fi_av_insert(av, rname, 1, &peer, 0, NULL) == 1, "av_insert peer");
    CHECK(fi_av_insert(av, name, 1, &self_addr, 0, NULL) == 1, "av_insert self");
    char garbage[256] = { 1, 2, 3 };
    CHECK(fi_av_insert(av, garbage, 1, NULL, 0, NULL) == 0, "a foreign address must be refused");
}

static void fill(uint8_t *b, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        b[i] = (uint8_t)(i * 7 + seed + (i >> 12));
}

static int same(const uint8_t *b, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        if (b[i] != (uint8_t)(i * 7 + seed + (i >> 12)))
            return 0;
    return 1;
}

static void send_wait(const void *buf, size_t len, uint64_t tag)
{
    struct fi_context c;
    FI(fi_tsend(ep, buf, len, NULL, peer, tag, &c));
    int rc = wait_ctx(&c, NULL, NULL, 20);
    CHECK(rc == 0, "send of %zu bytes tag %lx: %s", len, (unsigned long)tag, fi_strerror(rc));
}

static void recv_wait(void *buf, size_t len, uint64_t tag, uint64_t ignore, size_t expect_len,
                      uint64_t expect_tag)
{
    struct fi_context c;
    struct fi_cq_tagged_entry e;
    FI(fi_trecv(ep, buf, len, NULL, FI_ADDR_UNSPEC, tag, ignore, &c));
    int rc = wait_ctx(&c, &e, NULL, 20);
    CHECK(rc == 0, "recv tag %lx: %s", (unsigned long)tag, fi_strerror(rc));
    CHECK(e.len == expect_len && e.tag == expect_tag && (e.flags & FI_RECV) &&
              (e.flags & FI_TAGGED),
          "recv: len %zu tag %lx flags %lx", e.len, (unsigned long)e.tag, (unsigned long)e.flags);
}

static uint8_t big[(4u << 20) + 1], rbig[(4u << 20) + 1];

static void child_sends(void)
{
    uint8_t m[100];
    /* 1: unexpected eager, two of one tag (order), then an expected one */
    fill(m, 16, 1);
    send_wait(m, 16, 0x10);
    fill(m, 16, 2);
    send_wait(m, 16, 0x10);
    sync_peer();
    sync_peer(); /* the parent posted tag 0x11 */
    fill(m, 16, 3);
    send_wait(m, 16, 0x11);
    /* 2: ignore bits */
    fill(m, 8, 4);
    send_wait(m, 8, 0x1AB);
    /* 2b: eager messages of several frames into posted receives (placed
     * as their frames arrive), one longer than its receive (truncated) */
    sync_peer(); /* the parent posted 0x30 and 0x31 */
    fill(big, 200000, 16);
    send_wait(big, 200000, 0x30);
    fill(big, 150000, 17);
    send_wait(big, 150000, 0x31);
    /* 3: rendezvous, expected then unexpected (the parent posts late) */
    sync_peer();
    fill(big, 1u << 20, 5);
    send_wait(big, 1u << 20, 0x20);
    fill(big, sizeof big, 6);
    send_wait(big, sizeof big, 0x21);
    /* 4: untagged with remote CQ data */
    struct fi_context c;
    fill(m, 32, 7);
    FI(fi_senddata(ep, m, 32, NULL, 0xC0FFEE, peer, &c));
    CHECK(wait_ctx(&c, NULL, NULL, 20) == 0, "senddata");
    /* 4b: into a multi-receive buffer (parent_multi): 100 B and a
     * rendezvous of 300000 B before it is posted, 50 B and 10000 B after */
    fill(m, 100, 12);
    FI(fi_send(ep, m, 100, NULL, peer, &c));
    CHECK(wait_ctx(&c, NULL, NULL, 20) == 0, "multi: send 1");
    struct fi_context cb;
    fill(big, 300000, 13);
    FI(fi_send(ep, big, 300000, NULL, peer, &cb));
    sync_peer(); /* the parent posts its buffer */
    CHECK(wait_ctx(&cb, NULL, NULL, 20) == 0, "multi: send 2 (rendezvous)");
    fill(m, 50, 14);
    FI(fi_send(ep, m, 50, NULL, peer, &c));
    CHECK(wait_ctx(&c, NULL, NULL, 20) == 0, "multi: send 3");
    uint8_t *m4 = malloc(10000);
    fill(m4, 10000, 15);
    FI(fi_send(ep, m4, 10000, NULL, peer, &c));
    CHECK(wait_ctx(&c, NULL, NULL, 20) == 0, "multi: send 4");
    free(m4);
    /* 5: truncation; 6: a message for the parent's probe */
    fill(m, 100, 8);
    send_wait(m, 100, 0x30);
    fill(m, 40, 9);
    send_wait(m, 40, 0x55);
    sync_peer(); /* done: the parent kills us now */
    for (;;)
        pause();
}

/* the blocking reads' timeouts: fi_eq_sread waits out a finite timeout
 * (no event can come; it returned at once), and fi_cq_signal wakes the
 * next fi_cq_sread (it was ignored: the sread slept its whole timeout) */
static void wait_checks(void)
{
    struct fi_eq_attr ea = { .size = 8, .wait_obj = FI_WAIT_UNSPEC };
    struct fid_eq *eq;
    uint32_t ev;
    uint8_t ebuf[64];
    FI(fi_eq_open(fab, &ea, &eq, NULL));
    double t0 = ofi_now_s();
    CHECK(fi_eq_sread(eq, &ev, ebuf, sizeof ebuf, 200, 0) == -FI_EAGAIN, "eq_sread");
    CHECK(ofi_now_s() - t0 >= 0.15, "fi_eq_sread(200 ms) returned after %.3f s", ofi_now_s() - t0);
    FI(fi_close(&eq->fid));
    struct fi_cq_tagged_entry e;
    FI(fi_cq_signal(cq));
    t0 = ofi_now_s();
    CHECK(fi_cq_sread(cq, &e, 1, NULL, 3000) == -FI_EAGAIN, "cq_sread after signal");
    CHECK(ofi_now_s() - t0 < 1.5, "fi_cq_signal ignored: fi_cq_sread slept %.3f s",
          ofi_now_s() - t0);
}

/* FI_MULTI_RECV: one buffer takes the child's four untagged messages (two
 * waiting as unexpected, one of them a rendezvous; two arriving after),
 * each at the next 8-byte boundary; the room left after the fourth is
 * under FI_OPT_MIN_MULTI_RECV, so the buffer is released, and the last
 * completion, and only it, says FI_MULTI_RECV.  Then a buffer canceled
 * while posted ends as FI_ECANCELED with FI_MULTI_RECV. */
static void parent_multi(void)
{
    static uint8_t mb[1u << 20];
    size_t min = 740000, got = sizeof min;
    FI(fi_setopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min, sizeof min));
    min = 0;
    FI(fi_getopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min, &got));
    CHECK(min == 740000 && got == sizeof min, "FI_OPT_MIN_MULTI_RECV reads back %zu", min);
    struct fi_context c;
    struct iovec iov = { .iov_base = mb, .iov_len = sizeof mb };
    struct fi_msg msg = { .msg_iov = &iov, .iov_count = 1, .addr = FI_ADDR_UNSPEC, .context = &c };
    sync_peer(); /* 100 B and the 300000 B RTS wait as unexpected */
    FI(fi_recvmsg(ep, &msg, FI_MULTI_RECV | FI_COMPLETION));
    /* placed in order: 0, 104 (8-aligned), 300104, 300160 */
    static const size_t len[4] = { 100, 300000, 50, 10000 }, at[4] = { 0, 104, 300104, 300160 };
    static const unsigned seed[4] = { 12, 13, 14, 15 };
    int seen[4] = { 0 }, released = 0;
    for (int k = 0; k < 4; k++) {
        struct fi_cq_tagged_entry e;
        CHECK(wait_ctx(&c, &e, NULL, 30) == 0, "multi: completion %d", k);
        CHECK(!released, "multi: a completion after the one that released the buffer");
        int i = 0;
        while (i < 4 && (uint8_t *)e.buf != mb + at[i])
            i++;
        CHECK(i < 4 && !seen[i], "multi: completion at offset %td", (uint8_t *)e.buf - mb);
        seen[i] = 1;
        CHECK(e.len == len[i] && (e.flags & FI_RECV) && (e.flags & FI_MSG) &&
                  same(mb + at[i], len[i], seed[i]),
              "multi: message %d: len %zu flags %lx", i, e.len, (unsigned long)e.flags);
        released = (e.flags & FI_MULTI_RECV) != 0;
    }
    CHECK(released, "multi: the last completion does not release the buffer");
    FI(fi_recvmsg(ep, &msg, FI_MULTI_RECV | FI_COMPLETION));
    FI(fi_cancel(&ep->fid, &c));
    struct fi_cq_err_entry x;
    CHECK(wait_ctx(&c, NULL, &x, 5) == FI_ECANCELED && (x.flags & FI_MULTI_RECV),
          "multi: canceled buffer: flags %lx", (unsigned long)x.flags);
}

/* several-frame eager messages into posted receives (assembled in place):
 * one whole (from any source), one cut to its receive's 100000 bytes */
static void parent_eager_in_place(void)
{
    struct fi_context c, cw;
    struct fi_cq_tagged_entry e;
    struct fi_cq_err_entry x;
    memset(rbig, 0, 300000);
    FI(fi_trecv(ep, rbig, 200000, NULL, FI_ADDR_UNSPEC, 0x30, 0, &c));
    FI(fi_trecv(ep, rbig + 200000, 100000, NULL, peer, 0x31, 0, &cw));
    sync_peer();
    CHECK(wait_ctx(&c, &e, NULL, 20) == 0 && e.len == 200000 && same(rbig, 200000, 16),
          "expected eager of 200000 B (several frames)");
    CHECK(wait_ctx(&cw, NULL, &x, 20) == FI_ETRUNC && x.len == 100000 && x.olen == 50000 &&
              same(rbig + 200000, 100000, 17),
          "eager of 150000 B into 100000: len %zu olen %zu", x.len, x.olen);
}

static void parent_checks(pid_t child)
{
    uint8_t b[100];
    struct fi_context c;
    struct fi_cq_err_entry x;
    wait_checks();
    getinfo_checks();
    sync_peer(); /* both 0x10 messages are unexpected now */
    recv_wait(b, sizeof b, 0x10, 0, 16, 0x10);
    CHECK(same(b, 16, 1), "first 0x10 message out of order or corrupt");
    recv_wait(b, sizeof b, 0x10, 0, 16, 0x10);
    CHECK(same(b, 16, 2), "second 0x10 message corrupt");
    FI(fi_trecv(ep, b, sizeof b, NULL, peer, 0x11, 0, &c));
    sync_peer();
    CHECK(wait_ctx(&c, NULL, NULL, 20) == 0 && same(b, 16, 3), "expected eager (directed)");
    recv_wait(b, sizeof b, 0x100, 0xFF, 8, 0x1AB);
    CHECK(same(b, 8, 4), "ignore-bits message corrupt");
    parent_eager_in_place();
    /* rendezvous: 1 MiB posted first, 4 MiB + 1 arriving unexpected */
    FI(fi_trecv(ep, rbig, sizeof rbig, NULL, FI_ADDR_UNSPEC, 0x20, 0, &c));
    sync_peer();
    CHECK(wait_ctx(&c, NULL, NULL, 30) == 0 && same(rbig, 1u << 20, 5), "rendezvous 1 MiB");
    usleep(200000);
    recv_wait(rbig, sizeof rbig, 0x21, 0, sizeof rbig, 0x21);
    CHECK(same(rbig, sizeof rbig, 6), "rendezvous 4 MiB + 1 corrupt");
    struct fi_cq_tagged_entry e;
    FI(fi_recv(ep, b, sizeof b, NULL, FI_ADDR_UNSPEC, &c));
    CHECK(wait_ctx(&c, &e, NULL, 20) == 0, "untagged recv");
    CHECK(e.len == 32 && e.data == 0xC0FFEE && (e.flags & FI_REMOTE_CQ_DATA) &&
              (e.flags & FI_MSG) && same(b, 32, 7),
          "senddata: len %zu data %lx", e.len, (unsigned long)e.data);
    parent_multi();
    FI(fi_trecv(ep, b, 50, NULL, FI_ADDR_UNSPEC, 0x30, 0, &c));
    CHECK(wait_ctx(&c, NULL, &x, 20) == FI_ETRUNC && x.len == 50 && x.olen == 50,
          "truncation: len %zu olen %zu", x.len, x.olen);
    /* probe: nothing for 0x77; 0x55 arrives, is claimed, then received */
    struct fi_msg_tagged tm = { .msg_iov = &(struct iovec){ b, sizeof b },
                                .iov_count = 1,
                                .addr = FI_ADDR_UNSPEC,
                                .tag = 0x77,
                                .context = &c };
    FI(fi_trecvmsg(ep, &tm, FI_PEEK));
    CHECK(wait_ctx(&c, NULL, &x, 5) == FI_ENOMSG, "peek of nothing");
    /* the same, read with an uninitialised-looking entry (fabtests'
     * fi_rdm_tagged_peek does so): a FI_ENOMSG entry has no err_data and
     * must never write through the caller's err_data (it crashed at exit) */
    FI(fi_trecvmsg(ep, &tm, FI_PEEK));
    for (double end = ofi_now_s() + 5;;) {
        struct fi_cq_tagged_entry te;
        ssize_t n = fi_cq_read(cq, &te, 1);
        if (n == -FI_EAVAIL)
            break;
        CHECK(n == -FI_EAGAIN && ofi_now_s() < end, "peek of nothing: no error entry (%zd)", n);
    }
    memset(&x, 0, sizeof x);
    x.err_data = (void *)(uintptr_t)0x10; /* would fault if written */
    x.err_data_size = 4096;
    CHECK(fi_cq_readerr(cq, &x, 0) == 1 && x.err == FI_ENOMSG && x.op_context == &c &&
              x.err_data_size == 0,
          "peek of nothing, garbage err_data: err %d size %zu", x.err, x.err_data_size);
    tm.tag = 0x55;
    int got = -1;
    for (double end = ofi_now_s() + 20; got != 0 && ofi_now_s() < end;) {
        FI(fi_trecvmsg(ep, &tm, FI_PEEK | FI_CLAIM));
        got = wait_ctx(&c, &e, &x, 5);
    }
    CHECK(got == 0 && e.len == 40 && e.tag == 0x55, "peek+claim");
    memset(b, 0, sizeof b);
    FI(fi_trecvmsg(ep, &tm, FI_CLAIM));
    CHECK(wait_ctx(&c, &e, NULL, 5) == 0 && e.len == 40 && same(b, 40, 9), "claimed recv");
    /* to itself */
    uint8_t s[64];
    fill(s, sizeof s, 10);
    struct fi_context c2;
    FI(fi_trecv(ep, b, sizeof b, NULL, FI_ADDR_UNSPEC, 0x99, 0, &c2));
    FI(fi_tsend(ep, s, sizeof s, NULL, self_addr, 0x99, &c));
    CHECK(wait_ctx(&c2, NULL, NULL, 5) == 0 && same(b, 64, 10), "self recv");
    CHECK(wait_ctx(&c, NULL, NULL, 5) == 0, "self send");
    /* the FI_INJECT op flag frees the buffer at once but the send still
     * completes (fabtests' fi_msg_inject -A inject -N); fi_tinject never
     * completes: its receive arrives, and no send completion before the
     * next send's */
    struct iovec iov = { .iov_base = s, .iov_len = 16 };
    struct fi_msg_tagged sm = {
        .msg_iov = &iov, .iov_count = 1, .addr = self_addr, .tag = 0x9a, .context = &c
    };
    FI(fi_trecv(ep, b, sizeof b, NULL, FI_ADDR_UNSPEC, 0x9a, 0, &c2));
    FI(fi_tsendmsg(ep, &sm, FI_INJECT));
    memset(s, 0, 16);
    CHECK(wait_ctx(&c2, NULL, NULL, 5) == 0 && same(b, 16, 10), "FI_INJECT self recv");
    CHECK(wait_ctx(&c, NULL, NULL, 5) == 0, "send with the FI_INJECT flag: no completion");
    fill(s, sizeof s, 11);
    FI(fi_trecv(ep, b, sizeof b, NULL, FI_ADDR_UNSPEC, 0x9b, 0, &c2));
    FI(fi_tinject(ep, s, 16, self_addr, 0x9b));
    CHECK(wait_ctx(&c2, NULL, NULL, 5) == 0 && same(b, 16, 11), "tinject self recv");
    FI(fi_trecv(ep, b, sizeof b, NULL, FI_ADDR_UNSPEC, 0x9c, 0, &c2));
    FI(fi_tsend(ep, s, 16, NULL, self_addr, 0x9c, &c));
    CHECK(wait_ctx(&c2, NULL, NULL, 5) == 0, "self recv after tinject"); /* fails on a stray cqe */
    CHECK(wait_ctx(&c, NULL, NULL, 5) == 0, "self send after tinject");
    /* the peer dies: its operations end as CQ errors */
    sync_peer();
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    double t0 = ofi_now_s();
    /* nothing is sent to it: only a receive waits, and the liveness watch
     * (src/proto/live.c) must notice (with FI_ETHERMPI_LIVE_US=0 this
     * waits in vain: the check fails after 30 s) */
    FI(fi_trecv(ep, b, sizeof b, NULL, peer, 0x42, 0, &c2));
    CHECK(wait_ctx(&c2, NULL, &x, 30) == FI_EIO, "receive posted for the dead peer");
    CHECK(x.err_data && x.err_data_size > 0, "error entry names no cause");
    printf("killed peer: the receive waiting for it failed after %.2f s: %s\n", ofi_now_s() - t0,
           fi_cq_strerror(cq, x.prov_errno, x.err_data, NULL, 0));
    CHECK(fi_tsend(ep, s, sizeof s, NULL, peer, 0x43, &c) == -FI_EIO, "send after failure");
    FI(fi_trecv(ep, b, sizeof b, NULL, peer, 0x44, 0, &c2));
    CHECK(wait_ctx(&c2, NULL, &x, 1) == FI_EIO, "receive posted after the failure");
}

int main(int argc, char **argv)
{
    if (argc > 1)
        setenv("FI_PROVIDER_PATH", argv[1], 1);
    setenv("FI_ETHERMPI_IF_INCLUDE", "127.0.0.1", 0);
    /* fail a silent peer within seconds, not the default minute (12
     * timeouts of up to 0.25 s: a loaded machine may not run a process
     * for a while, and that must not read as a dead peer) */
    setenv("FI_ETHERMPI_RETRIES", "12", 0);
    setenv("FI_ETHERMPI_RTO_MAX_US", "250000", 0);
    pid_t pid = ofi_fork_pair(&me, &to_peer, &from_peer);
    if (pid < 0)
        return 1;
    open_all();
    if (me) {
        child_sends();
        return 0;
    }
    parent_checks(pid);
    ofi_close_ep(ep, av, cq, dom, fab);
    fi_freeinfo(info);
    printf("test_ofi_api: all checks passed\n");
    return 0;
}
