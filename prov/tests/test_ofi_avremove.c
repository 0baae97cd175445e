/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fi_av_remove (docs/ofi.md "Removing an address"): two ethermpi endpoints
 * in one process, A (id 0) and B (id 2), over the kernel UDP link on
 * loopback.  The provider's sources are linked in (as ofi_hostile's), so
 * that the test drives each endpoint's progress on its own (a peer that
 * makes no progress keeps operations in flight) and reads the counters
 * that say why a frame was refused.
 *
 *   1. a verified exchange both ways (eager and rendezvous);
 *   2. B's message that A holds unexpected, and B's later message still in
 *      A's socket (its frames are "stale" once A removes B);
 *   3. A's operations in flight to B (an eager send waiting for its ACK, a
 *      rendezvous send waiting for its CTS, a receive posted for B alone);
 *   4. A removes B: the three end at once with FI_ECANCELED; a send, a
 *      directed receive, a lookup and a second removal naming the removed
 *      fi_addr_t fail with -FI_EINVAL;
 *   5. A inserts B again: the freed index comes back; B's stale frames are
 *      refused by the next incarnation's pair key and counted, never
 *      delivered; the message held before the removal is delivered whole,
 *      from FI_ADDR_NOTAVAIL;
 *   6. B removes A (its stale send ends with FI_ECANCELED) and inserts it
 *      again; a fresh exchange both ways arrives verified;
 *   7. a new address takes the lowest free index.
 *
 * "replace": another endpoint under the removed one's id (a restarted
 * peer).  A and a child process C1 (id 3) exchange; C1 sends a message A
 * leaves in its socket, and exits; A removes C1 (a receive posted for it
 * alone ends with FI_ECANCELED); a second child C2, id 3 again with
 * another secret and port, gets C1's index back and exchanges with A,
 * verified, while C1's stale frames are refused and counted.
 *
 * Usage: test_ofi_avremove [replace]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include <rdma/fi_tagged.h>

#include "emo_rdv.h"

#include "ofi_check.h"
#include "ofi_pair.h"
#include "ofi_node.h"

#define BIG   (1u << 20) /* rendezvous */
#define SMALL 3000u      /* eager, several frames */

static struct ofi_node A = { .name = "A" }, B = { .name = "B" };
static struct fi_context ctx[32];

/* ofi_node_take's progress: @p arg's endpoint (a struct ofi_node, or NULL: none) */
static void progress_other(void *arg)
{
    struct ofi_node *other = arg;
    if (other)
        (void)emo_ep_progress(other->e);
}

/* One entry of @p n's CQ, driving its progress only: 1 with *@p e (and
 * the source in *@p src), -1 with the error in *@p x, 0 when none came
 * within @p secs.  @p other: progressed too (NULL: left alone). */
static int take(struct ofi_node *n, struct ofi_node *other, double secs,
                struct fi_cq_tagged_entry *e, fi_addr_t *src, struct fi_cq_err_entry *x)
{
    return ofi_node_take(n, progress_other, other, secs, e, src, x);
}

/* The completion of @p want on @p n, success, within 5 s (both progress). */
static void expect_ok(struct ofi_node *n, struct ofi_node *other, void *want, fi_addr_t *src)
{
    struct fi_cq_tagged_entry e;
    struct fi_cq_err_entry x;
    fi_addr_t s = FI_ADDR_UNSPEC;
    int r = take(n, other, 5.0, &e, &s, &x);
    CHECK(r == 1, "%s: no completion (%d: %s)", n->name, r, r < 0 ? fi_strerror(x.err) : "none");
    CHECK(e.op_context == want, "%s: completion of another operation", n->name);
    if (src)
        *src = s;
}

/* The error completion of @p want on @p n: FI_ECANCELED, at once (no
 * progress of the peer, 0.5 s at most of our own) */
static void expect_canceled(struct ofi_node *n, void *want)
{
    struct fi_cq_tagged_entry e;
    struct fi_cq_err_entry x;
    int r = take(n, NULL, 0.5, &e, NULL, &x);
    CHECK(r == -1, "%s: expected an error completion, got %d", n->name, r);
    CHECK(x.op_context == want && x.err == FI_ECANCELED,
          "%s: error %d (%s) for context %p, not "
          "FI_ECANCELED for %p",
          n->name, x.err, fi_strerror(x.err), x.op_context, want);
}

/* @p from sends @p len bytes to @p to (tag @p tag); @p to receives them
 * from @p src_at_to alone; both completions, the bytes checked */
static void exchange(struct ofi_node *from, fi_addr_t dest, struct ofi_node *to,
                     fi_addr_t src_at_to, uint64_t tag, size_t len, unsigned seed)
{
    uint8_t *out = malloc(len), *in = calloc(1, len);
    CHECK(out && in, "malloc");
    ofi_fill(out, len, seed);
    FI(fi_trecv(to->ep, in, len, NULL, src_at_to, tag, 0, &ctx[0]));
    FI(fi_tsend(from->ep, out, len, NULL, dest, tag, &ctx[1]));
    fi_addr_t src;
    expect_ok(to, from, &ctx[0], &src);
    CHECK(src == src_at_to, "%s: source %llu, not %llu", to->name, (unsigned long long)src,
          (unsigned long long)src_at_to);
    expect_ok(from, to, &ctx[1], NULL);
    CHECK(memcmp(in, out, len) == 0, "%s -> %s: %zu bytes differ", from->name, to->name, len);
    free(out);
    free(in);
}

static void pump(struct ofi_node *n, double secs)
{
    for (double end = ofi_now_s() + secs; ofi_now_s() < end;)
        if (emo_ep_progress(n->e) == 0) {
            struct timespec ts = { 0, 50000 };
            nanosleep(&ts, NULL);
        }
}

/* what refused B's frames at A: unknown peer, first contact's key, the pair key */
static uint64_t refusals(const struct ofi_node *n)
{
    const em_proto_stats_t *p = em_engine_proto_stats(n->e->eng);
    return n->e->st.unknown_peer + n->e->st.fc_bad_key + p->drop_job_key + p->drop_source;
}

/* the same endpoint removed and inserted again (1 to 7) */
static void same_endpoint(struct fi_info *info)
{
    ofi_node_open(&A, info);
    ofi_node_open(&B, info);
    CHECK(A.e->self.id == 0 && B.e->self.id == 2, "ids %u and %u", A.e->self.id, B.e->self.id);
    fi_addr_t ab = ofi_node_insert(&A, &B), ba = ofi_node_insert(&B, &A);
    CHECK(ab == 0 && ba == 0, "first inserts at %llu, %llu", (unsigned long long)ab,
          (unsigned long long)ba);

    /* 1 */
    exchange(&A, ab, &B, ba, 1, SMALL, 1);
    exchange(&B, ba, &A, ab, 2, BIG, 2);

    /* 2: held unexpected at A, then one left in A's socket */
    static uint8_t kept[SMALL], stale[64], got[SMALL];
    ofi_fill(kept, sizeof kept, 7);
    memset(stale, 'S', sizeof stale);
    uint64_t unexp0 = A.e->st.unexp_msgs;
    FI(fi_tsend(B.ep, kept, sizeof kept, NULL, ba, 0x77, &ctx[2]));
    expect_ok(&B, &A, &ctx[2], NULL);
    CHECK(A.e->st.unexp_msgs == unexp0 + 1, "A holds no unexpected message");
    FI(fi_tsend(B.ep, stale, sizeof stale, NULL, ba, 0x88, &ctx[3]));
    pump(&B, 0.02);
    uint64_t ref0 = refusals(&A); /* A makes no progress until 5 */

    /* 3: in flight from A; B makes no progress from here to 6 */
    static uint8_t e1[SMALL], big[BIG], r1[64];
    FI(fi_tsend(A.ep, e1, sizeof e1, NULL, ab, 0x91, &ctx[4]));
    FI(fi_tsend(A.ep, big, sizeof big, NULL, ab, 0x92, &ctx[5]));
    FI(fi_trecv(A.ep, r1, sizeof r1, NULL, ab, 0x93, 0, &ctx[6]));
    CHECK(em_engine_pending(A.e->eng, 2) >= 2, "A's sends are not in flight");

    /* 4 */
    fi_addr_t gone = ab;
    FI(fi_av_remove(A.av, &gone, 1, 0));
    CHECK(em_engine_pending(A.e->eng, 2) == 0, "A still has messages to B after the removal");
    CHECK(fi_tsend(A.ep, e1, 8, NULL, gone, 0x94, &ctx[7]) == -FI_EINVAL, "send to a removed "
                                                                          "address");
    CHECK(fi_trecv(A.ep, r1, 8, NULL, gone, 0x94, 0, &ctx[7]) == -FI_EINVAL,
          "directed receive from a removed address");
    CHECK(fi_av_remove(A.av, &gone, 1, 0) == -FI_EINVAL, "second removal");
    uint8_t name[EMO_ADDR_LEN];
    size_t nlen = sizeof name;
    CHECK(fi_av_lookup(A.av, gone, name, &nlen) == -FI_EINVAL, "lookup of a removed address");
    CHECK(fi_av_remove(A.av, &gone, 1, 1) == -FI_EBADFLAGS, "removal with flags");

    /* 5 */
    ab = ofi_node_insert(&A, &B);
    CHECK(ab == gone, "the freed index %llu was not reused (got %llu)", (unsigned long long)gone,
          (unsigned long long)ab);
    expect_canceled(&A, &ctx[4]);
    expect_canceled(&A, &ctx[5]);
    expect_canceled(&A, &ctx[6]);
    pump(&A, 0.1); /* B's stale frames (and B's resends of them) reached A since 4 */
    CHECK(refusals(&A) > ref0, "A counted no refusal of B's stale frames");
    CHECK(em_engine_proto_stats(A.e->eng)->drop_job_key > 0,
          "no stale frame was refused by the new incarnation's key");
    CHECK(A.e->st.unexp_msgs == unexp0 + 1, "a stale frame of B's was delivered");
    fi_addr_t src = 0;
    FI(fi_trecv(A.ep, got, sizeof got, NULL, FI_ADDR_UNSPEC, 0x77, 0, &ctx[8]));
    expect_ok(&A, NULL, &ctx[8], &src);
    CHECK(memcmp(got, kept, sizeof kept) == 0, "the message held before the removal changed");
    CHECK(src == FI_ADDR_NOTAVAIL, "its source is %llu, not FI_ADDR_NOTAVAIL",
          (unsigned long long)src);

    /* 6 */
    gone = ba;
    FI(fi_av_remove(B.av, &gone, 1, 0));
    expect_canceled(&B, &ctx[3]);
    ba = ofi_node_insert(&B, &A);
    CHECK(ba == gone, "B: the freed index was not reused");
    exchange(&A, ab, &B, ba, 3, SMALL, 3);
    exchange(&B, ba, &A, ab, 4, SMALL, 4);
    exchange(&A, ab, &B, ba, 5, BIG, 5);
    exchange(&B, ba, &A, ab, 6, BIG, 6);
    CHECK(A.e->st.unexp_msgs == unexp0 + 1, "a stale message of B's was delivered");

    /* 7: one more entry, then the lowest free index is taken again */
    fi_addr_t self = ofi_node_insert(&A, &A);
    CHECK(self == 1, "a new address took %llu, not 1", (unsigned long long)self);
    FI(fi_av_remove(A.av, &self, 1, 0));
    FI(fi_av_remove(A.av, &ab, 1, 0));
    CHECK(ofi_node_insert(&A, &B) == 0 && ofi_node_insert(&A, &A) == 1,
          "free indexes taken out of order");

    unsigned long long refused = (unsigned long long)refusals(&A);
    ofi_node_close(&A);
    ofi_node_close(&B);
    printf("test_ofi_avremove: operations in flight canceled, removed addresses refused, stale "
           "frames refused (%llu) and the held message kept, re-inserted pair verified, "
           "indexes reused\n",
           refused);
}

/* ---- another endpoint under the removed one's id ------------------------ */

/* A child process (its pipes @p to, @p from) with endpoint C: endpoint
 * k = 1 of a process of rank 1, id 1 + 1 x 2 = 3, whichever child it is
 * (the parent opened one endpoint before forking: ids are per process).
 * It swaps names with A, receives tag 0x10 (seed @p n) from A alone,
 * answers tag 0x11 (seed 10 + @p n); the first child then sends tag 0x12,
 * which A does not take before removing it (its frames stay in A's
 * socket), and closes; the second waits for A's word. */
static void child(struct fi_info *info, int n, int to, int from)
{
    struct ofi_node C = { .name = n == 1 ? "C1" : "C2" };
    setenv("PMI_RANK", "1", 1);
    ofi_node_open(&C, info);
    CHECK(C.e->self.id == 3, "%s: id %u, not 3", C.name, C.e->self.id);
    CHECK(write(to, C.addr, sizeof C.addr) == (ssize_t)sizeof C.addr, "pipe write");
    CHECK(read(from, A.addr, sizeof A.addr) == (ssize_t)sizeof A.addr, "pipe read");
    fi_addr_t ca = ofi_node_insert(&C, &A);
    static uint8_t in[SMALL], out[SMALL], want[SMALL];
    ofi_fill(want, sizeof want, (unsigned)n);
    FI(fi_trecv(C.ep, in, sizeof in, NULL, ca, 0x10, 0, &ctx[0]));
    expect_ok(&C, NULL, &ctx[0], NULL);
    CHECK(memcmp(in, want, sizeof in) == 0, "%s: A's message differs", C.name);
    ofi_fill(out, sizeof out, 10u + (unsigned)n);
    FI(fi_tsend(C.ep, out, sizeof out, NULL, ca, 0x11, &ctx[1]));
    expect_ok(&C, NULL, &ctx[1], NULL);
    if (n == 1) {
        FI(fi_tsend(C.ep, "stale", 6, NULL, ca, 0x12, &ctx[2]));
        pump(&C, 0.02);
    }
    char c = 'x';
    CHECK(write(to, &c, 1) == 1, "pipe write");
    if (n == 2)
        CHECK(read(from, &c, 1) == 1, "pipe read");
    ofi_node_close(&C);
    exit(0);
}

/* Fork child @p n; swap names with it; @return its pid (pipes in *@p to, *@p from). */
static pid_t spawn(struct fi_info *info, int n, int *to, int *from, struct ofi_node *c)
{
    int p2c[2], c2p[2];
    CHECK(pipe(p2c) == 0 && pipe(c2p) == 0, "pipe");
    pid_t pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0) {
        (void)prctl(PR_SET_PDEATHSIG, SIGKILL);
        child(info, n, c2p[1], p2c[0]);
    }
    *to = p2c[1];
    *from = c2p[0];
    CHECK(read(*from, c->addr, sizeof c->addr) == (ssize_t)sizeof c->addr, "child %d died", n);
    CHECK(write(*to, A.addr, sizeof A.addr) == (ssize_t)sizeof A.addr, "pipe write");
    return pid;
}

/* A's side of child @p n's exchange with peer @p fa: A's progress only */
static void a_exchange(fi_addr_t fa, int n)
{
    static uint8_t out[SMALL], in[SMALL], want[SMALL];
    ofi_fill(out, sizeof out, (unsigned)n);
    ofi_fill(want, sizeof want, 10u + (unsigned)n);
    FI(fi_trecv(A.ep, in, sizeof in, NULL, fa, 0x11, 0, &ctx[10]));
    FI(fi_tsend(A.ep, out, sizeof out, NULL, fa, 0x10, &ctx[11]));
    expect_ok(&A, NULL, &ctx[11], NULL);
    fi_addr_t src;
    expect_ok(&A, NULL, &ctx[10], &src);
    CHECK(src == fa && memcmp(in, want, sizeof in) == 0, "A: child %d's answer differs", n);
}

static void child_ok(pid_t pid, int n)
{
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "child %d failed", n);
}

static void replaced_endpoint(struct fi_info *info)
{
    ofi_node_open(&A, info);
    struct ofi_node C1 = { .name = "C1" }, C2 = { .name = "C2" };
    int to, from;
    pid_t p1 = spawn(info, 1, &to, &from, &C1);
    fi_addr_t fa = ofi_node_insert(&A, &C1);
    a_exchange(fa, 1);
    /* in flight: a receive from C1 alone; C1's message 0x12 stays in A's socket */
    static uint8_t r[64];
    FI(fi_trecv(A.ep, r, sizeof r, NULL, fa, 0x13, 0, &ctx[12]));
    char c;
    CHECK(read(from, &c, 1) == 1, "child 1 died");
    child_ok(p1, 1);
    uint64_t ref0 = refusals(&A), unexp0 = A.e->st.unexp_msgs;
    fi_addr_t gone = fa;
    FI(fi_av_remove(A.av, &gone, 1, 0));
    expect_canceled(&A, &ctx[12]);
    close(to);
    close(from);

    pid_t p2 = spawn(info, 2, &to, &from, &C2);
    emo_addr_t a1, a2;
    CHECK(emo_addr_decode(C1.addr, EMO_ADDR_LEN, &a1) == 0 &&
              emo_addr_decode(C2.addr, EMO_ADDR_LEN, &a2) == 0,
          "children's addresses");
    CHECK(a1.id == a2.id && a1.secret != a2.secret, "the children are not two endpoints under "
                                                    "one id");
    fa = ofi_node_insert(&A, &C2);
    CHECK(fa == gone, "C2 did not get the freed index");
    a_exchange(fa, 2);
    pump(&A, 0.05);
    CHECK(refusals(&A) > ref0, "A counted no refusal of C1's stale frames");
    CHECK(A.e->st.unexp_msgs == unexp0, "C1's stale message was delivered");
    c = 'x';
    CHECK(write(to, &c, 1) == 1, "pipe write");
    child_ok(p2, 2);
    unsigned long long refused = (unsigned long long)(refusals(&A) - ref0);
    ofi_node_close(&A);
    printf("test_ofi_avremove replace: another endpoint under the removed one's id took its "
           "index and talked, the old one's frames refused (%llu)\n",
           refused);
}

int main(int argc, char **argv)
{
    setenv("FI_ETHERMPI_IF_INCLUDE", "127.0.0.1", 0);
    /* numbered endpoints (the daemon link's path: ids, key epochs); a named
     * endpoint's removal is ofi_named's */
    setenv("FI_ETHERMPI_NAMES", "ids", 1);
    unsetenv("FI_ETHERMPI_ID");
    setenv("PMI_RANK", "0", 1); /* endpoint k of this process: id 0 + 2k */
    setenv("PMI_SIZE", "2", 1);
    setenv("FI_ETHERMPI_NPEERS", "8", 1);
    setenv("FI_ETHERMPI_SEND_COPY_MAX", "0", 1); /* sends complete at the ACK */
    setenv("FI_ETHERMPI_LINGER_MS", "0", 1);
    struct fi_info *hints = fi_allocinfo(), *info = NULL;
    CHECK(hints, "fi_allocinfo");
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_TAGGED | FI_DIRECTED_RECV | FI_SOURCE;
    hints->domain_attr->av_type = FI_AV_TABLE;
    FI(emo_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info));
    fi_freeinfo(hints);
    if (argc > 1 && strcmp(argv[1], "replace") == 0)
        replaced_endpoint(info);
    else
        same_endpoint(info);
    fi_freeinfo(info);
    return 0;
}
