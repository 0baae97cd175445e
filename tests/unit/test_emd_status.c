/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * STATUS on a real emd (docs/deploy.md): emd runs on a net_null port with two
 * client slots.  Checks:
 *   - STATUS answers with the counters, and they move: attaches, clients,
 *     a frame a client sends to itself (local_frames, tx ring -> rx ring);
 *   - a STATUS connection never takes a client slot: with both slots
 *     attached, STATUS still answers and a third attach is refused;
 *   - the daemon reads nothing of a STATUS_REQ but its type (garbage after
 *     it is answered); a malformed first request (wrong size, wrong
 *     version) is refused with ATTACH_ERR EPROTO and counted in
 *     refused_requests, and the attached clients stay attached;
 *   - a connection that sends nothing is closed by the daemon (timeout);
 *   - a user the access rule refuses gets no counters (refused_credentials);
 *   - `emd --status SOCKET` and `ethermpi-info --emd EMD` print them.
 * Run as root (DPDK, setuid); skipped otherwise.
 * Usage: test_emd_status PATH-TO-EMD PATH-TO-ETHERMPI-INFO
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "daemon/emd_ctl.h"
#include "emd_abi/emd_ring.h"
#include "emd_harness.h"

/** Send @p len bytes of @p msg as the first message; @return the reply's length (type in *type,
 *  status in *status), 0 if the daemon closed without one, -1 on no reply in 3 s. */
static ssize_t first_msg(const void *msg, size_t len, uint16_t *type, uint32_t *status)
{
    int fd = emd_harness_connect();
    if (fd < 0)
        return -2;
    uint8_t buf[1024];
    struct pollfd p = { .fd = fd, .events = POLLIN };
    ssize_t n = -1;
    if (send(fd, msg, len, MSG_NOSIGNAL) == (ssize_t)len && poll(&p, 1, 3000) > 0)
        n = recv(fd, buf, sizeof buf, 0);
    close(fd);
    if (n >= 8)
        memcpy(type, buf + 6, 2);
    if (n == (ssize_t)sizeof(struct emd_ctl_msg)) {
        struct emd_ctl_msg m;
        memcpy(&m, buf, sizeof m);
        *status = m.status;
    }
    return n;
}

/** The daemon's counters now (fails the test if it does not answer). */
static struct emd_ctl_status status(void)
{
    struct emd_ctl_status s;
    char err[512];
    if (emd_status_query(sock, 3000, &s, err, sizeof err) != 0) {
        CHECK(0, "STATUS: %s", err);
        memset(&s, 0, sizeof s);
    }
    return s;
}

struct att {
    int fd;
    uint8_t *base;
    uint64_t size;
    uint16_t ep;
};

/** Attach by hand and map the region.  @return 0, or the daemon's ATTACH_ERR status (or < 0). */
static int raw_attach(struct att *a)
{
    int mfd, st = -1;
    a->fd = emd_harness_attach(&mfd, &a->size, &a->ep, &st);
    if (a->fd < 0)
        return st;
    a->base = mmap(NULL, a->size, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
    close(mfd);
    return a->base == MAP_FAILED ? -1 : 0;
}

/** Client @p a sends one 200-byte frame to its own endpoint through its tx ring. */
static void send_self(struct att *a)
{
    struct emd_shm_hdr *h = (struct emd_shm_hdr *)a->base;
    emd_ring_t tx;
    emd_ring_init_tx(&tx, h);
    uint8_t *s = emd_slots_sp_next(&tx);
    struct emd_slot_hdr sh = { .len = 200, .endpoint = a->ep };
    memcpy(sh.mac, h->mac, 6);
    memcpy(s, &sh, sizeof sh);
    memset(s + sizeof sh, 0x5A, 200);
    emd_slots_sp_enqueue(&tx);
    struct emd_ctl_msg w;
    emd_ctl_init(&w, EMD_CTL_WAKE);
    (void)send(a->fd, &w, sizeof w, MSG_NOSIGNAL);
}

/** Run @p cmd; @return its output (static), or "" */
static const char *run(const char *cmd)
{
    static char out[16384];
    out[0] = 0;
    FILE *p = popen(cmd, "r");
    if (!p)
        return out;
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = 0;
    pclose(p);
    return out;
}

/** Malformed first requests: refused with EPROTO, counted, nothing else changes. */
static void malformed(void)
{
    struct emd_ctl_status before = status();
    struct emd_ctl_msg m;
    uint16_t type = 0;
    uint32_t st = 0;
    uint8_t big[sizeof m + 16] = { 0 };
    emd_ctl_init(&m, EMD_CTL_STATUS_REQ);
    ssize_t n = first_msg(&m, sizeof m - 1, &type, &st); /* too short */
    CHECK(n == (ssize_t)sizeof m && type == EMD_CTL_ATTACH_ERR && st == EPROTO,
          "short STATUS_REQ: reply %zd bytes, type %u, status %u", n, type, st);
    memcpy(big, &m, sizeof m);
    n = first_msg(big, sizeof big, &type, &st); /* too long */
    CHECK(n == (ssize_t)sizeof m && type == EMD_CTL_ATTACH_ERR && st == EPROTO,
          "long STATUS_REQ: reply %zd bytes, type %u, status %u", n, type, st);
    m.version = EMD_VERSION - 1; /* old version */
    n = first_msg(&m, sizeof m, &type, &st);
    CHECK(n == (ssize_t)sizeof m && type == EMD_CTL_ATTACH_ERR && st == EPROTO,
          "STATUS_REQ of version %u: reply %zd bytes, type %u", EMD_VERSION - 1, n, type);
    emd_ctl_init(&m, EMD_CTL_STATUS); /* a reply's type as a request */
    n = first_msg(&m, sizeof m, &type, &st);
    CHECK(n == (ssize_t)sizeof m && type == EMD_CTL_ATTACH_ERR,
          "STATUS as a request: reply %zd bytes", n);
    /* the daemon reads only the type: garbage after it is answered */
    emd_ctl_init(&m, EMD_CTL_STATUS_REQ);
    memset((uint8_t *)&m + 8, 0xEE, sizeof m - 8);
    n = first_msg(&m, sizeof m, &type, &st);
    CHECK(n == (ssize_t)sizeof(struct emd_ctl_status) && type == EMD_CTL_STATUS,
          "STATUS_REQ with garbage past its type: reply %zd bytes, type %u", n, type);
    struct emd_ctl_status after = status();
    CHECK(after.v[EMD_ST_refused_requests] == before.v[EMD_ST_refused_requests] + 4,
          "refused_requests %llu -> %llu (4 malformed sent)",
          (unsigned long long)before.v[EMD_ST_refused_requests],
          (unsigned long long)after.v[EMD_ST_refused_requests]);
    CHECK(after.v[EMD_ST_clients] == before.v[EMD_ST_clients] &&
              after.v[EMD_ST_detaches] == before.v[EMD_ST_detaches] &&
              after.instance == before.instance,
          "malformed requests changed the clients (%llu -> %llu attached)",
          (unsigned long long)before.v[EMD_ST_clients],
          (unsigned long long)after.v[EMD_ST_clients]);
    CHECK(after.v[EMD_ST_status_requests] == before.v[EMD_ST_status_requests] + 2,
          "status_requests %llu -> %llu (2 answered between)",
          (unsigned long long)before.v[EMD_ST_status_requests],
          (unsigned long long)after.v[EMD_ST_status_requests]);
}

/** A connection that sends nothing is closed by the daemon within ~1 s. */
static void silent(void)
{
    int fd = emd_harness_connect();
    uint64_t t0 = now_ms();
    struct pollfd p = { .fd = fd, .events = POLLIN };
    char b[64];
    int closed = fd >= 0 && poll(&p, 1, 4000) > 0 && recv(fd, b, sizeof b, MSG_DONTWAIT) == 0;
    CHECK(closed, "a silent connection was not closed by the daemon within 4 s");
    fprintf(stderr, "silent connection closed after %llu ms\n",
            (unsigned long long)(now_ms() - t0));
    if (fd >= 0)
        close(fd);
}

static int nobody_status(void)
{
    struct emd_ctl_status s;
    char err[512];
    int rc = emd_status_query(sock, 3000, &s, err, sizeof err);
    return rc != 0 && strstr(err, "not allowed") ? 0 : 1;
}

/** A user the rule refuses gets no counters, and is counted. */
static void refused_user(void)
{
    struct emd_ctl_status before = status();
    int ws = emd_harness_as_nobody(nobody_status);
    CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "uid 65534 got the counters, or no reason (%d)",
          ws);
    struct emd_ctl_status after = status();
    CHECK(after.v[EMD_ST_refused_credentials] == before.v[EMD_ST_refused_credentials] + 1,
          "refused_credentials %llu -> %llu",
          (unsigned long long)before.v[EMD_ST_refused_credentials],
          (unsigned long long)after.v[EMD_ST_refused_credentials]);
}

/** The two printers: emd --status and ethermpi-info. */
static void printers(const char *emd, const char *info)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "'%s' --status '%s' 2>&1", emd, sock);
    const char *out = run(cmd);
    CHECK(strstr(out, "\nclients 2\n") && strstr(out, "\nattaches 2\n") &&
              strstr(out, "\nlocal_frames "),
          "emd --status printed:\n%s", out);
    snprintf(cmd, sizeof cmd, "python3 '%s' --emd-socket '%s' --emd '%s' 2>&1", info, sock, emd);
    out = run(cmd);
    CHECK(strstr(out, "counters (emd --status):") && strstr(out, "status_requests") &&
              strstr(out, "refused_requests"),
          "ethermpi-info printed:\n%s", out);
    snprintf(cmd, sizeof cmd, "'%s' --status '%s/none.sock' 2>&1; echo rc=$?", emd, dir);
    out = run(cmd);
    CHECK(strstr(out, "cannot connect") && strstr(out, "rc=1"),
          "emd --status without a daemon:\n%s", out);
}

int main(int argc, char **argv)
{
    int rc = emd_harness_enter(argc, 2);
    if (rc)
        return rc;
    uint64_t t0 = now_ms();
    static const char *const one_uid[] = { "--max-per-uid", "0", NULL }; /* root takes both */
    pid_t emd = start_emd(argv[1], "emd-status", "2", one_uid);
    if (emd < 0)
        return 1;
    struct emd_ctl_status s0 = status();
    CHECK(s0.count == EMD_ST_COUNT && s0.v[EMD_ST_clients] == 0 && s0.v[EMD_ST_attaches] == 0 &&
              s0.v[EMD_ST_status_requests] == 1,
          "fresh daemon: count %u, %llu clients, %llu status requests", s0.count,
          (unsigned long long)s0.v[EMD_ST_clients],
          (unsigned long long)s0.v[EMD_ST_status_requests]);
    /* both client slots taken: STATUS still answers, a third attach is refused */
    struct att a[3];
    CHECK(raw_attach(&a[0]) == 0 && raw_attach(&a[1]) == 0, "two attaches failed");
    int third = raw_attach(&a[2]);
    CHECK(third == EBUSY, "a third attach with --max-clients 2 was not refused busy (%d)", third);
    struct emd_ctl_status s1 = status();
    CHECK(s1.v[EMD_ST_clients] == 2 && s1.v[EMD_ST_attaches] == 2 &&
              s1.v[EMD_ST_refused_limits] == 1,
          "after 2 attaches and a refusal: %llu clients, %llu attaches, %llu refused by limits",
          (unsigned long long)s1.v[EMD_ST_clients], (unsigned long long)s1.v[EMD_ST_attaches],
          (unsigned long long)s1.v[EMD_ST_refused_limits]);
    /* traffic: frames through the daemon move local_frames */
    if (a[0].fd >= 0) {
        for (int k = 0; k < 5; k++)
            send_self(&a[0]);
        uint64_t t = now_ms();
        struct emd_ctl_status s2 = status();
        while (s2.v[EMD_ST_local_frames] < s1.v[EMD_ST_local_frames] + 5 && now_ms() - t < 3000) {
            usleep(20000);
            s2 = status();
        }
        CHECK(s2.v[EMD_ST_local_frames] == s1.v[EMD_ST_local_frames] + 5,
              "local_frames %llu -> %llu after 5 frames to ourselves",
              (unsigned long long)s1.v[EMD_ST_local_frames],
              (unsigned long long)s2.v[EMD_ST_local_frames]);
    }
    malformed();
    silent();
    refused_user();
    printers(argv[1], argv[2]);
    CHECK(waitpid(emd, NULL, WNOHANG) == 0, "emd died");
    for (int k = 0; k < 2; k++)
        if (a[k].fd >= 0)
            close(a[k].fd);
    stop_emd(emd);
    return emd_harness_finish(t0, "refused|STATUS", 0);
}
