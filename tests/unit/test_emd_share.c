/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file test_emd_share.c
 * One user cannot hold a shared node's daemon (emd_core.h "Shares"): a real
 * emd with --max-clients 4 and the default per-uid limit (3/4: 3 slots).
 * User nobody takes every slot it can and keeps them; its fourth attach is
 * refused busy as "uid share full" and counted (refused_uid_share); root
 * still attaches into the slot that stays free; only then is the daemon
 * full for everyone ("too many clients", not counted as a share refusal).
 * With --max-per-uid 0 the same user takes all four.
 *
 *   test_emd_share EMD
 */
#include "daemon/emd_ctl.h"
#include "emd_harness.h"

static int ready_pipe[2], hold_pipe[2];

/** As nobody: attach until refused, report how, hold the slots until told. */
static int greedy(void)
{
    int fds[8], n = 0, st = 0;
    while (n < 8) {
        int mfd;
        uint64_t size;
        uint16_t ep;
        fds[n] = emd_harness_attach(&mfd, &size, &ep, &st);
        if (fds[n] < 0)
            break;
        close(mfd);
        n++;
    }
    int report[2] = { n, st };
    if (write(ready_pipe[1], report, sizeof report) != (ssize_t)sizeof report)
        return 1;
    char b;
    if (read(hold_pipe[0], &b, 1) < 0) {} /* until the parent closes it */
    for (int i = 0; i < n; i++)
        close(fds[i]);
    return 0;
}

static struct emd_ctl_status status(void)
{
    struct emd_ctl_status s = { 0 };
    char err[512];
    if (emd_status_query(sock, 3000, &s, err, sizeof err) != 0)
        fprintf(stderr, "status: %s\n", err);
    return s;
}

/** Run greedy() as nobody in the background; *got = its attaches, *why = its refusal. */
static pid_t start_greedy(int *got, int *why)
{
    if (pipe(ready_pipe) != 0 || pipe(hold_pipe) != 0)
        return -1;
    pid_t p = fork();
    if (p == 0) {
        close(hold_pipe[1]);
        _exit(emd_harness_as_nobody(greedy) == 0 ? 0 : 1);
    }
    close(hold_pipe[0]);
    int report[2] = { -1, 0 };
    struct pollfd pf = { .fd = ready_pipe[0], .events = POLLIN };
    if (poll(&pf, 1, 10000) > 0 && read(ready_pipe[0], report, sizeof report) == sizeof report) {}
    *got = report[0];
    *why = report[1];
    return p;
}

static void end_greedy(pid_t p)
{
    close(hold_pipe[1]);
    close(ready_pipe[0]);
    close(ready_pipe[1]);
    int ws;
    waitpid(p, &ws, 0);
}

int main(int argc, char **argv)
{
    int rc = emd_harness_enter(argc, 1);
    if (rc)
        return rc;
    uint64_t t0 = now_ms();
    static const char *const allow[] = { "--uid", "nobody", NULL };
    pid_t emd = start_emd(argv[1], "emd-share", "4", allow);
    if (emd < 0)
        return 1;
    int got, why;
    pid_t g = start_greedy(&got, &why);
    CHECK(got == 3 && why == EBUSY, "nobody attached %d times (refused with %d), want 3 and EBUSY",
          got, why);
    CHECK(log_has("refused", "uid share full"), "the refusal does not name the uid's share");
    struct emd_ctl_status s = status();
    CHECK(s.v[EMD_ST_refused_uid_share] == 1 && s.v[EMD_ST_clients] == 3,
          "refused_uid_share %llu, clients %llu (want 1 and 3)",
          (unsigned long long)s.v[EMD_ST_refused_uid_share],
          (unsigned long long)s.v[EMD_ST_clients]);
    /* another user still gets the slot nobody could not take */
    int mfd, st = 0;
    uint64_t size;
    uint16_t ep;
    int fd = emd_harness_attach(&mfd, &size, &ep, &st);
    CHECK(fd >= 0, "root could not attach next to nobody's share (%d)", st);
    if (fd >= 0)
        close(mfd);
    int fd2 = emd_harness_attach(&mfd, &size, &ep, &st);
    CHECK(fd2 < 0 && st == EBUSY, "a fifth attach with --max-clients 4 was not refused (%d)", st);
    s = status();
    CHECK(s.v[EMD_ST_refused_uid_share] == 1 && s.v[EMD_ST_refused_limits] == 2,
          "after the full daemon: refused_uid_share %llu (want 1), refused_limits %llu (want 2)",
          (unsigned long long)s.v[EMD_ST_refused_uid_share],
          (unsigned long long)s.v[EMD_ST_refused_limits]);
    if (fd >= 0)
        close(fd);
    end_greedy(g);
    stop_emd(emd);
    char cmd[100];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) {}

    /* --max-per-uid 0: a node with one user; it may take every slot */
    static const char *const nolimit[] = { "--uid", "nobody", "--max-per-uid", "0", NULL };
    emd = start_emd(argv[1], "emd-share", "4", nolimit);
    if (emd < 0)
        return 1;
    g = start_greedy(&got, &why);
    CHECK(got == 4 && why == EBUSY, "with --max-per-uid 0 nobody attached %d times (want 4)", got);
    end_greedy(g);
    stop_emd(emd);
    return emd_harness_finish(t0, "refused|attached", 0);
}
