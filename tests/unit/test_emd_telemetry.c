/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * emd keeps DPDK's telemetry on (ranks turn it off): a real emd on a
 * net_null port, with a file prefix of its own, answers on
 * /run/dpdk/<prefix>/dpdk_telemetry.v2 (DPDK's runtime dir for root) as
 * dpdk-telemetry.py -f <prefix> would ask it (docs/daemon.md "Telemetry"):
 *   - on connect, the greeting: JSON naming the DPDK version;
 *   - "/ethdev/list": a JSON list holding port 0;
 *   - "/ethdev/stats,0": the port's counters (ipackets, opackets, ...),
 *     ipackets grows (net_null receives endlessly);
 *   - after SIGTERM the socket is gone (DPDK's runtime dir is cleaned).
 * Skipped (77) when emd is not built (no DPDK) or not root.
 * Usage: test_emd_telemetry PATH-TO-EMD
 */
#include <ctype.h>

#include "emd_harness.h"

static char tpath[100];

/** Send @p cmd (NULL: only read) and read one answer into @p buf. */
static ssize_t ask(int fd, const char *cmd, char *buf, size_t len)
{
    if (cmd && send(fd, cmd, strlen(cmd), 0) < 0)
        return -1;
    struct pollfd p = { .fd = fd, .events = POLLIN };
    if (poll(&p, 1, 3000) <= 0)
        return -1;
    ssize_t n = recv(fd, buf, len - 1, 0);
    buf[n > 0 ? n : 0] = 0;
    return n;
}

/** The number after "key": in @p json, or -1. */
static long long num_after(const char *json, const char *key)
{
    const char *k = strstr(json, key);
    if (!k)
        return -1;
    k += strlen(key);
    return isdigit((unsigned char)*k) ? strtoll(k, NULL, 10) : -1;
}

/** A JSON object: '{' ... '}', braces balanced outside strings. */
static int json_object(const char *s)
{
    int depth = 0, in_str = 0;
    if (*s != '{')
        return 0;
    for (; *s; s++) {
        if (in_str) {
            if (*s == '\\' && s[1])
                s++;
            else if (*s == '"')
                in_str = 0;
        } else if (*s == '"') {
            in_str = 1;
        } else if (*s == '{' || *s == '[') {
            depth++;
        } else if (*s == '}' || *s == ']') {
            if (--depth < 0)
                return 0;
            if (depth == 0)
                return s[1] == 0;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "skipped: emd is not built (no DPDK)\n");
        return 77;
    }
    int rc = emd_harness_enter(argc, 1);
    if (rc)
        return rc;
    uint64_t t0 = now_ms();
    /* a prefix of our own: a default emd-<host> daemon may be running */
    char prefix[40];
    snprintf(prefix, sizeof prefix, "emd-tel%ld", (long)getpid());
    snprintf(tpath, sizeof tpath, "/run/dpdk/%s/dpdk_telemetry.v2", prefix);
    const char *extra[] = { "--file-prefix", prefix, NULL };
    pid_t emd = start_emd(argv[1], "emd-telemetry", "2", extra);
    if (emd < 0)
        return 1;

    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", tpath);
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    int conn = fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
    CHECK(conn, "no telemetry socket %s: %s (emd started with --no-telemetry?)", tpath,
          strerror(errno));
    if (conn) {
        char buf[16384];
        CHECK(ask(fd, NULL, buf, sizeof buf) > 0 && json_object(buf) &&
                  strstr(buf, "\"version\":\"DPDK "),
              "greeting is not DPDK's JSON: '%s'", buf);
        CHECK(ask(fd, "/ethdev/list", buf, sizeof buf) > 0 && json_object(buf) &&
                  strstr(buf, "{\"/ethdev/list\":[0"),
              "/ethdev/list does not list port 0: '%s'", buf);
        CHECK(ask(fd, "/ethdev/stats,0", buf, sizeof buf) > 0 && json_object(buf) &&
                  strstr(buf, "{\"/ethdev/stats\":{") && num_after(buf, "\"opackets\":") >= 0,
              "/ethdev/stats,0 holds no port counters: '%s'", buf);
        long long rx1 = num_after(buf, "\"ipackets\":");
        usleep(200000);
        CHECK(ask(fd, "/ethdev/stats,0", buf, sizeof buf) > 0, "no second answer");
        long long rx2 = num_after(buf, "\"ipackets\":");
        fprintf(stderr, "telemetry %s: ipackets %lld, 0.2 s later %lld\n", tpath, rx1, rx2);
        CHECK(rx1 >= 0 && rx2 > rx1, "ipackets of the net_null port did not grow (%lld, %lld)", rx1,
              rx2);
    }
    if (fd >= 0)
        close(fd);
    stop_emd(emd);
    struct stat sb;
    CHECK(stat(tpath, &sb) != 0, "%s left behind after emd stopped", tpath);
    (void)emd_harness_as_nobody; /* (the harness's; not needed here) */
    (void)emd_harness_attach;
    return emd_harness_finish(t0, "ready|stopping", 0);
}
