/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * FI_RMA through libfabric's API (prov/emo_rma.c), two processes over
 * kernel UDP on loopback.  The child registers a read-write window of
 * 5 MiB and a read-only page and sends their keys over a pipe; the parent
 * then checks: fi_getinfo offers FI_RMA only with FI_MR_PROV_KEY, and to
 * an application that accepts nothing more (fabtests' getinfo caps4);
 * write then read back (small, and 4 MiB + 3 across two puts each
 * way); fi_writedata reaches the target's CQ with its data; fi_inject_write
 * completes nothing and a read after it sees it (RAW); a read up to
 * max_order_war_size is not changed by a write posted after it (WAR);
 * writes into the
 * read-only page, reads past the window's end and forged keys end as
 * FI_EACCES without touching the target; the FI_WRITE / FI_READ counters
 * count; fi_writedata into a region that refuses the write reports no
 * data at the target; after a refused write the pair's writes fail (the
 * put direction stays in error, as an IB QP's: docs/ofi.md) while reads
 * still work; RMA to the endpoint itself; closing a registration waits
 * for the answer to a read still in flight from it (the reader stopped:
 * the close fails it at FI_ETHERMPI_LINGER_MS, and the memory can be
 * unmapped at once: a resend from it would crash the target); and a read
 * from a killed target ends as FI_EIO, not a hang.
 *
 * Usage: test_ofi_rma [provider dir]  (else FI_PROVIDER_PATH must be set)
 */
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

static int me; /* 0 parent, 1 child */
#define OFI_CHECK_WHO (me ? "[1] " : "[0] ")
#include "ofi_check.h"
#include "ofi_pair.h"

#define WIN_LEN   ((size_t)5 << 20)
#define BIG       (((size_t)4 << 20) + 3)
#define WDATA_VAL 0xD00Dull
/* where each check writes in the window (apart: the child checks them) */
#define OFF_SMALL  (WIN_LEN - 2000)
#define OFF_BIG    7
#define OFF_WDATA  (((size_t)4 << 20) + 64)
#define OFF_INJECT (((size_t)4 << 20) + 4096)
#define OFF_WAR    (((size_t)4 << 20) + 512 * 1024)
/* the registration the target closes while it answers a read from it:
 * more than a window of the largest frames (64 x 64 KB), so part of the
 * answer has not even left when the close comes */
#define DOOMED_LEN ((size_t)8 << 20)
#define LINGER_MS  300

static struct fid_fabric *fab;
static struct fid_domain *dom;
static struct fid_ep *ep;
static struct fid_av *av;
static struct fid_cq *cq;
static struct fid_cntr *cntr;
static struct fi_info *info;
static fi_addr_t peer, self_addr;
static int to_peer, from_peer;
static uint8_t *win, *ro, *doomed;
static struct fid_mr *win_mr, *ro_mr, *doomed_mr;
static uint64_t win_key, ro_key, doomed_key; /* the child's, as the parent learns them */
static int wdata_seen;                       /* child: remote-write data entries read */

static void fill(uint8_t *b, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        b[i] = (uint8_t)(i * 31u + seed);
}

static int same(const uint8_t *b, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        if (b[i] != (uint8_t)(i * 31u + seed))
            return 0;
    return 1;
}

/* the child's reading: remote-write data entries are what it looks for */
static void progress_once(void)
{
    struct fi_cq_tagged_entry e; /* ofi_open_ep: FI_CQ_FORMAT_TAGGED */
    ssize_t n = fi_cq_read(cq, &e, 1);
    if (n == 1) {
        CHECK(e.flags == (FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA) && e.data == WDATA_VAL &&
                  e.len == 64 && !e.op_context,
              "remote write data entry: flags %lx data %lx len %zu", (unsigned long)e.flags,
              (unsigned long)e.data, e.len);
        wdata_seen++;
    } else {
        CHECK(n == -FI_EAGAIN, "fi_cq_read = %zd", n);
    }
}

static void sync_peer(void) { ofi_sync_peer(to_peer, from_peer, progress_once); }

/* wait for @p ctx's completion; @return 0 or the error's fi_errno */
static int wait_ctx(void *ctx, double timeout)
{
    for (double end = ofi_now_s() + timeout; ofi_now_s() < end;) {
        struct fi_cq_tagged_entry e; /* ofi_open_ep: FI_CQ_FORMAT_TAGGED */
        ssize_t n = fi_cq_read(cq, &e, 1);
        if (n == 1) {
            CHECK(e.op_context == ctx && (e.flags & FI_RMA), "completion of %p (flags %lx), not %p",
                  e.op_context, (unsigned long)e.flags, ctx);
            return 0;
        }
        if (n == -FI_EAVAIL) {
            struct fi_cq_err_entry x = { 0 };
            CHECK(fi_cq_readerr(cq, &x, 0) == 1 && x.op_context == ctx, "error entry");
            return x.err;
        }
        CHECK(n == -FI_EAGAIN, "fi_cq_read = %zd", n);
    }
    CHECK(0, "no completion of %p within %.0f s", ctx, timeout);
    return -1;
}

static struct fi_info *rma_info(uint64_t caps, uint64_t mr_mode, int *rc)
{
    struct fi_info *hints = fi_allocinfo(), *fi = NULL;
    CHECK(hints, "fi_allocinfo");
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = caps;
    hints->fabric_attr->prov_name = strdup("ethermpi");
    hints->domain_attr->mr_mode = (int)mr_mode;
    *rc = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &fi);
    fi_freeinfo(hints);
    return fi;
}

static void getinfo_checks(void)
{
    int rc;
    struct fi_info *fi = rma_info(FI_TAGGED | FI_RMA, FI_MR_VIRT_ADDR | FI_MR_ENDPOINT, &rc);
    CHECK(rc == -FI_ENODATA && !fi, "FI_RMA without FI_MR_PROV_KEY: %d", rc);
    fi = rma_info(FI_TAGGED | FI_RMA,
                  FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY, &rc);
    CHECK(rc == 0 && fi && (fi->caps & FI_RMA) && fi->domain_attr->mr_mode == FI_MR_PROV_KEY,
          "FI_RMA with the older modes (fabtests' caps4): %d", rc);
    fi_freeinfo(fi);
    fi = rma_info(FI_TAGGED, 0, &rc);
    CHECK(rc == 0 && fi && !(fi->caps & FI_RMA) && fi->domain_attr->mr_mode == 0,
          "FI_TAGGED alone: no FI_RMA, mr_mode 0");
    fi_freeinfo(fi);
    fi = rma_info(0, FI_MR_ENDPOINT | FI_MR_PROV_KEY | FI_MR_LOCAL, &rc);
    CHECK(rc == 0 && fi && (fi->caps & FI_RMA) && (fi->tx_attr->caps & FI_WRITE) &&
              (fi->rx_attr->caps & FI_REMOTE_READ) && fi->domain_attr->mr_mode == FI_MR_PROV_KEY,
          "any capability, modes accepted: FI_RMA with FI_MR_PROV_KEY");
    fi_freeinfo(fi);
}

static void open_all(void)
{
    int rc;
    info = rma_info(FI_TAGGED | FI_RMA, FI_MR_PROV_KEY, &rc);
    FI(rc);
    ofi_open_ep(info, FI_AV_TABLE, 64, &fab, &dom, &cq, &av, &ep);
    struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP };
    FI(fi_cntr_open(dom, &ca, &cntr, NULL));
    FI(fi_ep_bind(ep, &cntr->fid, FI_READ | FI_WRITE));
    FI(fi_enable(ep));
    uint8_t a[64], b[64];
    size_t alen = sizeof a;
    FI(fi_getname(&ep->fid, a, &alen));
    CHECK(write(to_peer, &alen, sizeof alen) == sizeof alen &&
              write(to_peer, a, alen) == (ssize_t)alen,
          "pipe");
    size_t blen;
    CHECK(read(from_peer, &blen, sizeof blen) == sizeof blen && blen <= sizeof b &&
              read(from_peer, b, blen) == (ssize_t)blen,
          "pipe");
    CHECK(fi_av_insert(av, b, 1, &peer, 0, NULL) == 1, "av_insert peer");
    CHECK(fi_av_insert(av, a, 1, &self_addr, 0, NULL) == 1, "av_insert self");
}

/* register @p len bytes at @p buf for @p access (usable at once: no
 * FI_MR_ENDPOINT; binding and enabling as an FI_MR_ENDPOINT application
 * would are accepted and change nothing) */
static struct fid_mr *reg(void *buf, size_t len, uint64_t access)
{
    struct fid_mr *mr;
    FI(fi_mr_reg(dom, buf, len, access, 0, 0, 0, &mr, NULL));
    uint64_t key = fi_mr_key(mr);
    CHECK(key != FI_KEY_NOTAVAIL && key != 0, "no key");
    FI(fi_mr_bind(mr, &ep->fid, 0));
    FI(fi_mr_enable(mr));
    CHECK(fi_mr_key(mr) == key, "enable changed the key");
    return mr;
}

/* progress for @p s seconds */
static void progress_for(double s)
{
    for (double end = ofi_now_s() + s; ofi_now_s() < end;)
        progress_once();
}

/* The parent reads DOOMED_LEN bytes from the doomed registration and stops
 * itself (SIGSTOP) before the answer can be acknowledged.  Closing the
 * registration must wait for that answer (FI_ETHERMPI_LINGER_MS, then the
 * reader is failed); once the close returns the memory is unmapped, and
 * a resend from it would end this process with SIGSEGV. */
static pid_t parent_pid;
/* the child's exit, a failed check included: the parent may be stopped */
static void wake_parent(void) { kill(parent_pid, SIGCONT); }

static void child_closes_doomed(void)
{
    parent_pid = getppid();
    atexit(wake_parent);
    char c = 0;
    struct pollfd pf = { .fd = from_peer, .events = POLLIN };
    for (double end = ofi_now_s() + 30; poll(&pf, 1, 0) == 0;) {
        progress_once(); /* the READ arrives, the answer goes out */
        CHECK(ofi_now_s() < end, "the parent did not stop within 30 s");
    }
    CHECK(read(from_peer, &c, 1) == 1 && c == 'S', "pipe: the parent stops");
    progress_for(0.05); /* a window of the answer left; the rest waits for ACKs */
    double t0 = ofi_now_s();
    FI(fi_close(&doomed_mr->fid));
    double dt = ofi_now_s() - t0;
    CHECK(dt >= LINGER_MS * 0.8e-3 && dt < 5,
          "closing a registration with an answer in flight from it took %.3f s, want about "
          "FI_ETHERMPI_LINGER_MS",
          dt);
    CHECK(munmap(doomed, DOOMED_LEN) == 0, "munmap");
    CHECK(kill(getppid(), SIGCONT) == 0, "SIGCONT");
    progress_for(0.3); /* retransmit timeouts: nothing may read the unmapped memory */
    printf("closing a registration waited %.3f s for its answer in flight\n", dt);
}

static void child_serves(void)
{
    win = calloc(1, WIN_LEN);
    ro = malloc(4096);
    doomed = mmap(NULL, DOOMED_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(win && ro && doomed != MAP_FAILED, "malloc");
    fill(ro, 4096, 77);
    fill(doomed, DOOMED_LEN, 5);
    win_mr = reg(win, WIN_LEN, FI_REMOTE_WRITE | FI_REMOTE_READ);
    ro_mr = reg(ro, 4096, FI_REMOTE_READ);
    doomed_mr = reg(doomed, DOOMED_LEN, FI_REMOTE_READ);
    uint64_t keys[3] = { fi_mr_key(win_mr), fi_mr_key(ro_mr), fi_mr_key(doomed_mr) };
    CHECK(write(to_peer, keys, sizeof keys) == sizeof keys, "pipe");
    sync_peer(); /* the parent's checks run meanwhile; we progress */
    CHECK(wdata_seen == 1, "remote write data entries: %d, want 1 (the refused one has none)",
          wdata_seen);
    CHECK(same(ro, 4096, 77), "the read-only page was written");
    CHECK(same(win + OFF_SMALL, 1000, 1), "small write not in the window");
    CHECK(same(win + OFF_BIG, BIG, 2), "big write not in the window");
    for (size_t i = WIN_LEN - 8; i < WIN_LEN; i++)
        CHECK(win[i] == 0, "a refused write past the end touched the window's tail");
    sync_peer();
    child_closes_doomed();
    CHECK(fi_close(&dom->fid) == -FI_EBUSY, "domain closed under its endpoint");
    fi_close(&ep->fid);
    fi_close(&cntr->fid);
    fi_close(&av->fid);
    fi_close(&cq->fid);
    CHECK(fi_close(&dom->fid) == -FI_EBUSY, "domain closed under its registrations");
    fi_close(&win_mr->fid);
    fi_close(&ro_mr->fid);
    FI(fi_close(&dom->fid));
    pause(); /* killed by the parent */
}

/* an RMA read into (or write from) @p buf of @p len bytes at offset @p off
 * of the registration @p key at @p to; @return 0 or the fi_errno */
static int rma(bool read, void *buf, size_t len, fi_addr_t to, uint64_t off, uint64_t key)
{
    struct fi_context c;
    ssize_t rc = read ? fi_read(ep, buf, len, NULL, to, off, key, &c)
                      : fi_write(ep, buf, len, NULL, to, off, key, &c);
    CHECK(rc == 0, "fi_%s posted: %s", read ? "read" : "write", fi_strerror((int)-rc));
    return wait_ctx(&c, 30);
}

/* An inject of the inject size: no completion, the buffer is the
 * caller's again at return (changed at once here), and a read behind it
 * sees what was written (RAW).  Under ofi_rma_window2 (2 frames of 1500
 * bytes in flight) nearly all its frames leave after the return, from the
 * provider's copy (em_proto_op_rebase). */
static void check_inject_write(void)
{
    size_t isz = info->tx_attr->inject_size;
    CHECK(isz >= 8 && OFF_INJECT + isz <= OFF_SMALL, "inject size %zu", isz);
    uint8_t *v = malloc(isz), *r = malloc(isz);
    CHECK(v && r, "malloc");
    fill(v, isz, 5);
    FI(fi_inject_write(ep, v, isz, peer, OFF_INJECT, win_key));
    memset(v, 0, isz); /* the caller's again at return */
    CHECK(rma(true, r, isz, peer, OFF_INJECT, win_key) == 0 && same(r, isz, 5),
          "read after inject_write of %zu B", isz);
    free(v);
    free(r);
}

/* WAR (FI_ORDER_WAR up to max_order_war_size): a read posted before a
 * write to its last bytes returns them as they were before the write,
 * even when its answer takes many frames and the write lands before the
 * answer's last frame has left (under ofi_rma_window2 the answer leaves
 * two frames at a time, the one-frame write at once) */
static void check_war(uint8_t *buf, uint8_t *back)
{
    size_t len = info->ep_attr->max_order_war_size;
    CHECK(len >= 4096, "WAR up to %zu B", len);
    if (len > 65536)
        len = 65536;
    fill(buf, len, 11);
    CHECK(rma(false, buf, len, peer, OFF_WAR, win_key) == 0, "WAR: first write");
    struct fi_context cr, cw;
    memset(back, 0, len);
    fill(buf + len, len, 12);
    FI(fi_read(ep, back, len, NULL, peer, OFF_WAR, win_key, &cr));
    FI(fi_write(ep, buf + len, 1024, NULL, peer, OFF_WAR + len - 1024, win_key, &cw));
    for (int got = 0; got < 2; got++) {
        struct fi_cq_tagged_entry e;
        ssize_t n;
        double end = ofi_now_s() + 30;
        while ((n = fi_cq_read(cq, &e, 1)) == -FI_EAGAIN)
            CHECK(ofi_now_s() < end, "WAR: no completion within 30 s");
        CHECK(n == 1 && (e.op_context == &cr || e.op_context == &cw), "WAR: completion %zd", n);
    }
    CHECK(same(back, len, 11), "WAR: a read of %zu B saw the write posted after it", len);
}

static void parent_checks(pid_t child)
{
    CHECK(read(from_peer, &win_key, sizeof win_key) == sizeof win_key &&
              read(from_peer, &ro_key, sizeof ro_key) == sizeof ro_key &&
              read(from_peer, &doomed_key, sizeof doomed_key) == sizeof doomed_key,
          "pipe: keys");
    uint8_t *buf = malloc(BIG), *back = malloc(BIG);
    CHECK(buf && back, "malloc");
    int ok_w = 0, ok_r = 0, bad_w = 0, bad_r = 0;
    /* small, then two puts each way (EMO_PUT_CHUNK is 4 MiB) */
    fill(buf, 1000, 1);
    CHECK(rma(false, buf, 1000, peer, OFF_SMALL, win_key) == 0, "small write");
    ok_w++;
    CHECK(rma(true, back, 1000, peer, OFF_SMALL, win_key) == 0 && same(back, 1000, 1),
          "small read back");
    ok_r++;
    fill(buf, BIG, 2);
    CHECK(rma(false, buf, BIG, peer, OFF_BIG, win_key) == 0, "big write");
    ok_w++;
    memset(back, 0, BIG);
    CHECK(rma(true, back, BIG, peer, OFF_BIG, win_key) == 0 && same(back, BIG, 2), "big read back");
    ok_r++;
    /* remote CQ data */
    struct fi_context c;
    FI(fi_writedata(ep, buf, 64, NULL, WDATA_VAL, peer, OFF_WDATA, win_key, &c));
    CHECK(wait_ctx(&c, 10) == 0, "writedata");
    ok_w++;
    check_inject_write();
    ok_r++;
    ok_w++;
    check_war(buf, back);
    ok_w += 2;
    ok_r++;
    /* refused: each must fail, and touch nothing */
    CHECK(rma(false, buf, 16, peer, 0, ro_key) == FI_EACCES, "write into a read-only page");
    bad_w++;
    CHECK(rma(true, back, 4096, peer, 0, ro_key) == 0 && same(back, 4096, 77),
          "read-only page read");
    ok_r++;
    CHECK(rma(true, back, 16, peer, WIN_LEN - 8, win_key) == FI_EACCES, "read past the end");
    bad_r++;
    CHECK(rma(false, buf, 16, peer, WIN_LEN - 8, win_key) == FI_EACCES, "write past the end");
    bad_w++;
    CHECK(rma(true, back, 16, peer, 0, win_key ^ 0x1) == FI_EACCES, "read with a forged key");
    bad_r++;
    CHECK(rma(false, buf, 16, peer, 0, win_key ^ ((uint64_t)1 << 40)) == FI_EACCES,
          "write with a forged key");
    bad_w++;
    CHECK(rma(true, back, 16, peer, 0, ro_key + ((uint64_t)1 << 48)) == FI_EACCES,
          "read naming the wrong region");
    bad_r++;
    /* writedata into the read-only page: refused, and no data at the target */
    FI(fi_writedata(ep, buf, 64, NULL, WDATA_VAL, peer, 0, ro_key, &c));
    CHECK(wait_ctx(&c, 10) == FI_EACCES, "writedata into a read-only page");
    bad_w++;
    /* the pair's put direction is in error now: a good write fails too,
     * though its bytes may be placed (docs/ofi.md "Limits"; so not where
     * the child checks), and reads are answered as before */
    CHECK(rma(false, buf, 16, peer, OFF_INJECT + 64, win_key) == FI_EACCES,
          "a write after a refused one");
    bad_w++;
    CHECK(rma(true, back, 1000, peer, OFF_SMALL, win_key) == 0 && same(back, 1000, 1),
          "a read after a refused write");
    ok_r++;
    /* RMA to ourselves, through our own registration */
    uint8_t *mine = calloc(1, 4096);
    CHECK(mine, "calloc");
    struct fid_mr *mr = reg(mine, 4096, FI_REMOTE_WRITE | FI_REMOTE_READ);
    fill(buf, 512, 3);
    CHECK(rma(false, buf, 512, self_addr, 64, fi_mr_key(mr)) == 0 && same(mine + 64, 512, 3),
          "write to self");
    ok_w++;
    CHECK(rma(true, back, 512, self_addr, 64, fi_mr_key(mr)) == 0 && same(back, 512, 3),
          "read from self");
    ok_r++;
    CHECK(rma(false, buf, 8, self_addr, 4092, fi_mr_key(mr)) == FI_EACCES, "self: past the end");
    bad_w++;
    fi_close(&mr->fid);
    /* counters: one FI_READ | FI_WRITE counter sees every RMA completion */
    CHECK(fi_cntr_read(cntr) == (uint64_t)(ok_w + ok_r) &&
              fi_cntr_readerr(cntr) == (uint64_t)(bad_w + bad_r),
          "counter %lu / %lu, want %d / %d", (unsigned long)fi_cntr_read(cntr),
          (unsigned long)fi_cntr_readerr(cntr), ok_w + ok_r, bad_w + bad_r);
    sync_peer(); /* the child checks its window and its CQ */
    sync_peer();
    /* a read whose answer the target cannot finish: we stop before we
     * acknowledge it; the target closes the registration, which fails us
     * after FI_ETHERMPI_LINGER_MS, and wakes us: the read ends FI_EIO */
    uint8_t *dbuf = malloc(DOOMED_LEN);
    CHECK(dbuf, "malloc");
    FI(fi_read(ep, dbuf, DOOMED_LEN, NULL, peer, 0, doomed_key, &c));
    CHECK(write(to_peer, "S", 1) == 1, "pipe");
    raise(SIGSTOP);
    int st = wait_ctx(&c, 30);
    CHECK(st == FI_EIO || (st == 0 && same(dbuf, DOOMED_LEN, 5)),
          "a read the target gave up answering: %d (%s), want FI_EIO, or success with the data "
          "when the whole answer had left before we stopped",
          st, fi_strerror(st));
    printf("the read the target gave up answering: %s\n", st ? fi_strerror(st) : "complete");
    free(dbuf);
    /* the target dies: a read from it ends (liveness watch), it does not hang */
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    double t0 = ofi_now_s();
    ssize_t rc = fi_read(ep, back, 16, NULL, peer, 0, win_key, &c);
    if (rc == 0)
        CHECK(wait_ctx(&c, 30) == FI_EIO, "read from a killed target");
    else
        CHECK(rc == -FI_EIO, "read from a killed target: %zd", rc);
    printf("killed target: the read failed after %.2f s\n", ofi_now_s() - t0);
    free(mine);
    free(buf);
    free(back);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        setenv("FI_PROVIDER_PATH", argv[1], 1);
    setenv("FI_ETHERMPI_IF_INCLUDE", "127.0.0.1", 0);
    setenv("FI_ETHERMPI_RETRIES", "12", 0);
    setenv("FI_ETHERMPI_RTO_MAX_US", "250000", 0);
    char linger[16];
    snprintf(linger, sizeof linger, "%d", LINGER_MS);
    setenv("FI_ETHERMPI_LINGER_MS", linger, 0);
    pid_t pid = ofi_fork_pair(&me, &to_peer, &from_peer);
    if (pid < 0)
        return 1;
    if (!me)
        getinfo_checks();
    open_all();
    if (me) {
        child_serves();
        return 0;
    }
    parent_checks(pid);
    fi_close(&ep->fid);
    fi_close(&cntr->fid);
    fi_close(&av->fid);
    fi_close(&cq->fid);
    fi_close(&dom->fid);
    fi_close(&fab->fid);
    fi_freeinfo(info);
    printf("test_ofi_rma: all checks passed\n");
    return 0;
}
