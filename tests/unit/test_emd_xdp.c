/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file test_emd_xdp.c
 * emd on its native AF_XDP port (emd --link xdp, daemon/emd_xdp.h): two
 * daemons on the two ends of a veth pair in a network namespace of its own.
 *  - What the port's options refuse, each naming the cause and the fix:
 *    --bulk-slots N with --link xdp, --link xdp without --iface, --iface
 *    without --link xdp, --vdev with --link xdp, an unknown --link.
 *  - Both daemons come up on the port ("ready: xdp:<if> queue 0") with no
 *    bulk queues, and say why.
 *  - A client that requires a bulk queue (bulk_mode on) is refused naming
 *    the daemon's port and the setting to change; one with auto attaches
 *    and is told why it has none.
 *  - Two engines, one on each daemon, exchange checked messages of 4 bytes
 *    to 20 KB (up to 14 frames) both ways: every frame crosses the AF_XDP
 *    port (the daemons' STATUS counts port rx and tx frames).
 *  - The port's counters: SIGUSR1 logs the daemon's "port: AF_XDP" line.
 *
 *   test_emd_xdp EMD XDP_DROP_OBJECT
 * Exit 77 (skipped) without root, veth or AF_XDP.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon/emd_ctl.h"
#include "engine/engine.h"
#include "link/link_emd.h"
#include "unit_check.h"

static const char *emd_bin, *prog;
static char dir[64];

/** Run emd with @p args (NULL-terminated), its output into @p log.  @return its pid. */
static pid_t spawn(const char *const *args, const char *log)
{
    const char *argv[32] = { emd_bin };
    int n = 1;
    for (; args[n - 1] && n < 31; n++)
        argv[n] = args[n - 1];
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fd, 1);
        dup2(fd, 2);
        execv(emd_bin, (char *const *)argv);
        _exit(127);
    }
    return pid;
}

/** emd @p args must exit 2 at once, saying @p a and @p b. */
static void refused(const char *what, const char *const *args, const char *a, const char *b)
{
    char log[128];
    int ws = 0;
    snprintf(log, sizeof log, "%s/refused.log", dir);
    pid_t pid = spawn(args, log);
    waitpid(pid, &ws, 0);
    CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 2, "%s: exit status %d, not 2", what,
          WIFEXITED(ws) ? WEXITSTATUS(ws) : -1);
    CHECK(file_has(log, a, b), "%s: the message does not name '%s'%s%s", what, a, b ? " and " : "",
          b ? b : "");
}

static char sock[2][100], logs[2][100];
static pid_t daemons[2];

/** Start the daemon on interface @p ifname.  @return 0, 77 (no AF_XDP here) or 1. */
static int start(int k, const char *ifname)
{
    snprintf(sock[k], sizeof sock[k], "%s/emd%d.sock", dir, k);
    snprintf(logs[k], sizeof logs[k], "%s/emd%d.log", dir, k);
    const char *args[] = { "--socket",   sock[k],      "--link", "xdp",      "--iface",
                           ifname,       "--xdp-prog", prog,     "--rx-kib", "1024",
                           "--tx-slots", "64",         "-v",     NULL };
    daemons[k] = spawn(args, logs[k]);
    for (double end = now_s() + 20; now_s() < end; usleep(50000)) {
        struct stat sb;
        if (stat(sock[k], &sb) == 0 && file_has(logs[k], "ready", NULL))
            return 0;
        int ws;
        if (waitpid(daemons[k], &ws, WNOHANG) == daemons[k]) {
            daemons[k] = 0;
            break;
        }
    }
    char cmd[160];
    snprintf(cmd, sizeof cmd, "cat %s", logs[k]);
    if (system(cmd) != 0) {}
    if (file_has(logs[k], "no native AF_XDP link", NULL) ||
        file_has(logs[k], "AF_XDP socket", NULL)) {
        printf("skipped: emd cannot open its AF_XDP port here (log above)\n");
        return 77;
    }
    CHECK(0, "emd on %s did not start (log above)", ifname);
    return 1;
}

static void stop(void)
{
    for (int k = 0; k < 2; k++)
        if (daemons[k] > 0) {
            kill(daemons[k], SIGTERM);
            int ws = 0;
            waitpid(daemons[k], &ws, 0);
            CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "emd %d: exit status %d at SIGTERM", k,
                  WIFEXITED(ws) ? WEXITSTATUS(ws) : -1);
            daemons[k] = 0;
        }
}

/* ------------------------------------------------------------ the job -- */

static struct {
    em_engine_t *e[2];
    unsigned recv_ok, recv_bad, done, failed, completed[2];
} J;
static char note[600];

static void fill(uint8_t *b, size_t len, uint32_t seed)
{
    for (size_t i = 0; i < len; i++)
        b[i] = (uint8_t)(seed * 31u + i * 7u);
    memcpy(b, &seed, 4);
}

static void j_recv(void *u, uint32_t peer, uint8_t tag, const void *d, size_t len)
{
    (void)u, (void)peer;
    static uint8_t want[20004];
    uint32_t seed = 0;
    if (len >= 4 && len <= sizeof want) {
        memcpy(&seed, d, 4);
        fill(want, len, seed);
    }
    if (len >= 4 && len <= sizeof want && tag == seed % 200u && memcmp(want, d, len) == 0)
        J.recv_ok++;
    else
        J.recv_bad++;
}

static void j_done(void *u, void *ctx, int status)
{
    (void)u;
    J.completed[(intptr_t)ctx]++;
    if (status)
        J.failed++;
    else
        J.done++;
}

static const em_engine_ops_t JOPS = { .recv = j_recv, .complete = j_done };

static void on_note(void *ctx, const char *msg)
{
    (void)ctx;
    snprintf(note, sizeof note, "%s", msg);
}

/** The clients: a bulk queue required is refused; then one engine per daemon. */
static int job_open(em_link_t *l[2])
{
    char err[512] = "";
    em_emd_cfg_t c = { .socket_path = sock[0],
                       .bulk_mode = EM_EMD_BULKQ_ON,
                       .bulk_setting = "FI_ETHERMPI_BULK_QUEUE" };
    em_link_t *x = em_link_emd_open(&c, err, sizeof err);
    CHECK(!x, "a client that requires a bulk queue attached");
    if (x)
        em_link_close(x);
    CHECK(strstr(err, "FI_ETHERMPI_BULK_QUEUE on") && strstr(err, "emd --link xdp") &&
              strstr(err, "to auto or off"),
          "the refusal does not name the setting, the daemon's port and the fix: %s", err);
    for (int k = 0; k < 2; k++) {
        em_emd_cfg_t ck = { .socket_path = sock[k], .note_cb = on_note };
        note[0] = 0;
        l[k] = em_link_emd_open(&ck, err, sizeof err);
        CHECK(l[k], "client on daemon %d: %s", k, err);
        if (!l[k])
            return -1;
        CHECK(strstr(note, "no bulk queue") && strstr(note, "emd --link xdp"),
              "client %d was not told why it has no bulk queue: '%s'", k, note);
    }
    for (int k = 0; k < 2; k++) {
        em_proto_cfg_t cfg;
        em_proto_cfg_default(&cfg);
        cfg.job_key = 0x7d9;
        cfg.self = (uint32_t)k;
        cfg.npeers = 2;
        cfg.frame_max = l[k]->mtu;
        int e;
        J.e[k] = em_engine_create(l[k], &cfg, &JOPS, NULL, &e);
        CHECK(J.e[k], "engine %d: error %d", k, e);
        if (!J.e[k])
            return -1;
    }
    for (int k = 0; k < 2; k++)
        if (em_engine_set_peer(J.e[k], (uint32_t)(1 - k), &l[1 - k]->local) != 0)
            return -1;
    return 0;
}

/** @p n checked messages each way, at most 24 in flight per side. */
static void job_run(unsigned n)
{
    static em_proto_op_t ops[2][32];
    static uint8_t bufs[2][32][20004];
    unsigned sent[2] = { 0, 0 };
    for (double end = now_s() + 60; now_s() < end;) {
        /* a send completes when the daemon acknowledged it (link_acks),
         * which may be before the other rank's engine read it: wait for
         * the receives too */
        if (sent[0] == n && sent[1] == n && J.completed[0] == n && J.completed[1] == n &&
            J.recv_ok + J.recv_bad >= 2 * n)
            break;
        for (int k = 0; k < 2; k++) {
            while (sent[k] < n && sent[k] - J.completed[k] < 24u) {
                unsigned i = sent[k] % 32u;
                uint32_t seed = sent[k] * 2u + (uint32_t)k;
                size_t len = 4 + (seed * 7919u) % 20000u;
                fill(bufs[k][i], len, seed);
                if (em_engine_send(J.e[k], &ops[k][i], (uint32_t)(1 - k), (uint8_t)(seed % 200u),
                                   bufs[k][i], len, (void *)(intptr_t)k) != 0)
                    break;
                sent[k]++;
            }
            em_engine_progress(J.e[k]);
        }
    }
    CHECK(J.done == 2 * n && J.failed == 0, "%u of %u sends completed (%u failed)", J.done, 2 * n,
          J.failed);
    CHECK(J.recv_ok == 2 * n && J.recv_bad == 0, "%u of %u messages received right (%u wrong)",
          J.recv_ok, 2 * n, J.recv_bad);
}

/** Both daemons' STATUS: frames went through the port both ways. */
static void port_counted(void)
{
    for (int k = 0; k < 2; k++) {
        struct emd_ctl_status s;
        char err[512];
        if (emd_status_query(sock[k], 3000, &s, err, sizeof err) != 0) {
            CHECK(0, "STATUS of daemon %d: %s", k, err);
            continue;
        }
        CHECK(s.v[EMD_ST_rx_frames] > 0 && s.v[EMD_ST_tx_frames] > 0,
              "daemon %d: port rx %llu, tx %llu frames", k,
              (unsigned long long)s.v[EMD_ST_rx_frames], (unsigned long long)s.v[EMD_ST_tx_frames]);
        kill(daemons[k], SIGUSR1);
    }
    usleep(300000);
    for (int k = 0; k < 2; k++)
        CHECK(file_has(logs[k], "port: AF_XDP", "tx "), "daemon %d logged no port counters", k);
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    emd_bin = argv[1];
    prog = argv[2];
    if (geteuid() != 0 || unshare(CLONE_NEWNET) != 0) {
        printf("skipped: needs root (a network namespace of its own)\n");
        return 77;
    }
    if (system("ip link add xa type veth peer name xb 2>/dev/null && ip link set lo up && "
               "ip link set xa up && ip link set xb up") != 0) {
        printf("skipped: cannot make a veth pair\n");
        return 77;
    }
    snprintf(dir, sizeof dir, "/tmp/emd_xdp.XXXXXX");
    if (!mkdtemp(dir))
        return 1;
    signal(SIGPIPE, SIG_IGN);
    char s0[100];
    snprintf(s0, sizeof s0, "%s/x.sock", dir);
    const char *bulk[] = { "--socket",     s0,  "--link", "xdp", "--iface", "xa",
                           "--bulk-slots", "2", NULL };
    refused("--bulk-slots 2 --link xdp", bulk, "--bulk-slots", "Drop --bulk-slots");
    const char *noif[] = { "--socket", s0, "--link", "xdp", NULL };
    refused("--link xdp without --iface", noif, "--iface NAME", NULL);
    const char *ifonly[] = { "--socket", s0, "--iface", "xa", NULL };
    refused("--iface without --link xdp", ifonly, "add --link xdp", NULL);
    const char *vdev[] = { "--socket", s0,       "--link",    "xdp", "--iface",
                           "xa",       "--vdev", "net_null0", NULL };
    refused("--vdev with --link xdp", vdev, "--vdev", "--iface");
    const char *badlink[] = { "--socket", s0, "--link", "udp", NULL };
    refused("--link udp", badlink, "--link must be dpdk", "xdp");
    int rc = start(0, "xa");
    if (rc == 0)
        rc = start(1, "xb");
    if (rc == 0) {
        for (int k = 0; k < 2; k++)
            CHECK(file_has(logs[k], "ready: xdp:x", "queue 0") &&
                      file_has(logs[k], "bulk queues: none", "emd --link xdp"),
                  "daemon %d: no 'ready' line on the xdp port, or bulk queues not explained", k);
        em_link_t *l[2] = { NULL, NULL };
        if (job_open(l) == 0) {
            job_run(300);
            port_counted();
        }
        for (int k = 0; k < 2; k++) {
            if (J.e[k])
                em_engine_destroy(J.e[k]);
            if (l[k])
                em_link_close(l[k]);
        }
    }
    stop();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) {}
    if (rc == 77)
        return 77;
    printf("%s\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}
