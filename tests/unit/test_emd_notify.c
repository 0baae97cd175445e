/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * emd under systemd's Type=notify (sd_notify(3); data/ethermpi-emd.service.in),
 * without systemd: the test binds the datagram socket a service manager
 * would, names it in NOTIFY_SOCKET (and WATCHDOG_USEC, as WatchdogSec=
 * does), and runs emd on a net_null port without hugepages.  Checks:
 *   - READY=1 arrives, and by then the control socket accepts connections;
 *   - its STATUS= names the port, the framing and 0 clients, and a client
 *     that attaches is counted in a later STATUS=;
 *   - WATCHDOG=1 comes from the running loop, repeatedly;
 *   - SIGTERM: STOPPING=1, and the daemon exits 0.
 * Skipped (77) when emd is not built, emd was built without libsystemd
 * (then it sends nothing, by design), or not root (DPDK).
 * Usage: test_emd_notify [PATH-TO-EMD]
 */
#include <poll.h>

#include "emd_harness.h"

static int nfd = -1;
static char ndir[64], npath[100];

/** The next notification within @p ms, into @p buf; @return its length, or -1. */
static ssize_t next_msg(char *buf, size_t len, int ms)
{
    struct pollfd p = { .fd = nfd, .events = POLLIN };
    if (poll(&p, 1, ms) <= 0)
        return -1;
    ssize_t n = recv(nfd, buf, len - 1, 0);
    if (n >= 0)
        buf[n] = 0;
    return n;
}

/** Wait up to @p ms for a notification holding @p what (and @p also, unless NULL). */
static int wait_msg(const char *what, const char *also, int ms, char *got, size_t len)
{
    uint64_t end = now_ms() + (uint64_t)ms;
    got[0] = 0;
    while (now_ms() < end) {
        if (next_msg(got, len, (int)(end - now_ms())) < 0)
            break;
        if (strstr(got, what) && (!also || strstr(got, also)))
            return 1;
    }
    return 0;
}

static int bind_notify(void)
{
    snprintf(ndir, sizeof ndir, "/tmp/emd-notify.XXXXXX");
    if (!mkdtemp(ndir))
        return -1;
    snprintf(npath, sizeof npath, "%s/notify", ndir);
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", npath);
    nfd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (nfd < 0 || bind(nfd, (struct sockaddr *)&sa, sizeof sa) != 0)
        return -1;
    setenv("NOTIFY_SOCKET", npath, 1);
    setenv("WATCHDOG_USEC", "400000", 1); /* WatchdogSec=0.4: a ping every 200 ms */
    unsetenv("WATCHDOG_PID");
    return 0;
}

static void unbind_notify(void)
{
    if (nfd >= 0)
        close(nfd);
    unlink(npath);
    rmdir(ndir);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "skipped: emd is not built (no DPDK)\n");
        return 77;
    }
#ifndef EM_HAVE_SYSTEMD
    (void)argv;
    fprintf(stderr, "skipped: emd is built without libsystemd (sd_notify is a no-op)\n");
    return 77;
#else
    int rc = emd_harness_enter(argc, 1);
    if (rc)
        return rc;
    uint64_t t0 = now_ms();
    if (bind_notify() != 0) {
        fprintf(stderr, "cannot bind the notify socket %s: %s\n", npath, strerror(errno));
        unbind_notify();
        return 1;
    }
    pid_t emd = start_emd(argv[1], "emd-notify", "2", NULL);
    if (emd < 0) {
        unbind_notify();
        return 1;
    }
    char got[1024];
    CHECK(wait_msg("READY=1", NULL, 5000, got, sizeof got), "no READY=1 (last: '%s')", got);
    int fd = emd_harness_connect();
    CHECK(fd >= 0, "READY=1 sent, but the control socket does not accept: %s", strerror(errno));
    if (fd >= 0)
        close(fd);
    CHECK(strstr(got, "STATUS=serving 0 clients") && strstr(got, "port net_null0") &&
              strstr(got, "l2 framing") && strstr(got, sock),
          "READY=1 without a STATUS= naming port, framing, socket and clients: '%s'", got);
    /* a client: a later STATUS= counts it */
    int mfd = -1, st = 0;
    uint64_t size = 0;
    uint16_t ep = 0;
    int cfd = emd_harness_attach(&mfd, &size, &ep, &st);
    CHECK(cfd >= 0, "attach failed (%d)", st);
    if (mfd >= 0)
        close(mfd);
    CHECK(wait_msg("STATUS=serving 1 client:", NULL, 3000, got, sizeof got),
          "no STATUS= with the client attached (last: '%s')", got);
    /* the loop pings the watchdog: two pings within a second */
    int pings = 0;
    uint64_t end = now_ms() + 1000;
    while (now_ms() < end && pings < 2)
        pings += wait_msg("WATCHDOG=1", NULL, (int)(end - now_ms()), got, sizeof got);
    CHECK(pings == 2, "%d WATCHDOG=1 in a second with WATCHDOG_USEC=400000", pings);
    if (cfd >= 0)
        close(cfd);
    stop_emd(emd); /* SIGTERM, exit 0; what it sent waits in our socket */
    CHECK(wait_msg("STOPPING=1", NULL, 2000, got, sizeof got), "no STOPPING=1 after SIGTERM");
    unbind_notify();
    (void)emd_harness_as_nobody; /* (the harness's; not needed here) */
    return emd_harness_finish(t0, "ready|stopping", 0);
#endif
}
