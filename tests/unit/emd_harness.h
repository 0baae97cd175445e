/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file emd_harness.h
 * A real emd for a test (test_emd_hostile, test_emd_status): a scratch
 * directory with its socket and log, the daemon started on net_null
 * without hugepages, attaching to it by hand (no link_emd), a step run as
 * user nobody; CHECK and file_has come from unit_check.h.
 * Header-only, for one test program each (every name is static).
 */
#ifndef EM_TESTS_EMD_HARNESS_H
#define EM_TESTS_EMD_HARNESS_H

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "emd_abi/emd_ctl_msg.h"
#include "unit_check.h"
#include "util/clock.h"

static char dir[64], sock[100], logpath[128];

static uint64_t now_ms(void) { return em_clock_ns() / 1000000u; }

/** Does one line of the daemon's log hold @p a (and @p b, unless NULL)? */
static int log_has(const char *a, const char *b) { return file_has(logpath, a, b); }

/**
 * Make the scratch directory /tmp/<name>.XXXXXX, start @p emd there with
 * at most @p max_clients clients (and @p extra, a NULL-terminated list of
 * more arguments, at most 4), and wait for it to say "ready".
 * @return its pid, or -1 after printing its log.
 */
static pid_t start_emd(const char *emd, const char *name, const char *max_clients,
                       const char *const *extra)
{
    snprintf(dir, sizeof dir, "/tmp/%s.XXXXXX", name);
    if (!mkdtemp(dir))
        return -1;
    snprintf(sock, sizeof sock, "%s/emd.sock", dir);
    snprintf(logpath, sizeof logpath, "%s/emd.log", dir);
    signal(SIGPIPE, SIG_IGN);
    const char *argv[32] = { emd,
                             "--socket",
                             sock,
                             "--vdev",
                             "net_null0",
                             "--eal-args",
                             "--no-huge --no-shconf -m 128",
                             "--bulk-slots",
                             "0",
                             "--max-clients",
                             max_clients,
                             "--rx-kib",
                             "1024",
                             "--tx-slots",
                             "16",
                             "-v" };
    int argc = 16;
    for (int i = 0; extra && extra[i] && i < 4; i++)
        argv[argc++] = extra[i];
    pid_t pid = fork();
    if (pid == 0) {
        int lf = open(logpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(lf, 2);
        dup2(lf, 1);
        execv(emd, (char *const *)argv);
        _exit(127);
    }
    for (int i = 0; i < 300; i++) {
        struct stat sb;
        if (stat(sock, &sb) == 0 && log_has("ready", NULL))
            return pid;
        if (waitpid(pid, NULL, WNOHANG) == pid)
            break;
        usleep(50000);
    }
    fprintf(stderr, "emd did not start; its log:\n");
    char cmd[256];
    snprintf(cmd, sizeof cmd, "cat %s >&2", logpath);
    if (system(cmd) != 0) {}
    return -1;
}

/** What main checks first: 0 when the test can run; 2 when it was not
 *  given @p want_args arguments (meson gives the emd binary, ...); 77
 *  (meson's "skipped", said on stderr) when not root: the daemon needs
 *  DPDK and the tests switch users. */
static int emd_harness_enter(int argc, int want_args)
{
    if (argc != want_args + 1)
        return 2;
    if (geteuid() == 0)
        return 0;
    fprintf(stderr, "skipped: needs root (DPDK, setuid)\n");
    return 77;
}

/** A new connection to the daemon's control socket, or -1 (errno set). */
static int emd_harness_connect(void)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", sock);
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

/**
 * Connect and attach by hand.  @return the socket (and *memfd, *size, *ep),
 * or -1 with *status = the daemon's ATTACH_ERR status, -ETIMEDOUT (no reply
 * in 5 s) or -errno (no connection).
 */
static int emd_harness_attach(int *memfd, uint64_t *size, uint16_t *ep, int *status)
{
    int fd = emd_harness_connect();
    if (fd < 0) {
        *status = -errno;
        return -1;
    }
    struct emd_ctl_msg m;
    emd_ctl_init(&m, EMD_CTL_ATTACH_REQ);
    m.pid = 1; /* a lie: the daemon uses SO_PEERCRED */
    (void)send(fd, &m, sizeof m, MSG_NOSIGNAL);
    struct pollfd p = { .fd = fd, .events = POLLIN };
    *memfd = -1;
    if (poll(&p, 1, 5000) <= 0 || emd_recv_fd(fd, &m, sizeof m, memfd) != (ssize_t)sizeof m) {
        *status = -ETIMEDOUT;
        close(fd);
        return -1;
    }
    if (m.type != EMD_CTL_ATTACH_OK || *memfd < 0) {
        *status = (int)m.status;
        if (*memfd >= 0)
            close(*memfd);
        close(fd);
        return -1;
    }
    *size = m.shm_size;
    *ep = m.endpoint;
    return fd;
}

/** Run @p fn in a child as user and group nobody (65534, no other groups)
 *  while the daemon's socket is open to everyone, as an admin's mistake
 *  would leave it: only the daemon's own rule stands in the way.
 *  @return the child's wait status (exit 3: it could not switch users). */
static int emd_harness_as_nobody(int (*fn)(void))
{
    chmod(dir, 0711);
    chmod(sock, 0666);
    pid_t p = fork();
    if (p == 0) {
        if (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0)
            _exit(3);
        _exit(fn());
    }
    int ws = -1;
    if (p > 0)
        waitpid(p, &ws, 0);
    chmod(sock, 0660);
    chmod(dir, 0700);
    return ws;
}

/** Stop @p emd with SIGTERM and CHECK that it exits 0. */
static void stop_emd(pid_t emd)
{
    int ws = 0;
    kill(emd, SIGTERM);
    waitpid(emd, &ws, 0);
    CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "emd did not stop cleanly (%d)", ws);
}

/**
 * The test's verdict: the daemon's log lines matching @p log_re (always
 * when @p show_log, else only on failure), "passed"/"FAILED" with the time
 * since @p t0, and the scratch directory removed when passed (kept for a
 * look when not).
 * @return the exit status, 0 or 1.
 */
static int emd_harness_finish(uint64_t t0, const char *log_re, int show_log)
{
    char cmd[300];
    if (show_log || failures) {
        snprintf(cmd, sizeof cmd, "grep -E '%s' %s >&2", log_re, logpath);
        if (system(cmd) != 0) {}
    }
    fprintf(stderr, "%s in %.1f s\n", failures ? "FAILED" : "passed",
            (double)(now_ms() - t0) / 1000.0);
    if (!failures) {
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        if (system(cmd) != 0) {}
    }
    return failures ? 1 : 0;
}

#endif
