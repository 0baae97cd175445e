/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * em-check-fi: do two nodes talk through a libfabric provider, and how
 * fast?  No MPI: a client/server pair like fi_pingpong
 * (docs/deploy.md "Checking two nodes", ethermpi-check(1)).
 *
 *   server:  em-check-fi [-P PROV] [-p PORT] [--json]
 *   client:  em-check-fi [-P PROV] [-p PORT] [--sizes LIST] [--iters N]
 *                        [--repeats R] [--window W] [--json] SERVER_HOST
 *
 * The two exchange their endpoint names (and the client's settings) over
 * a TCP connection to SERVER_HOST:PORT (default 47591), then run, on an
 * FI_EP_RDM endpoint of provider PROV (default "ethermpi"; "tcp;ofi_rxm"
 * for the comparison): a tagged ping-pong (fi_tsend/fi_trecv; latency:
 * half the round trip) and a windowed stream client -> server of untagged
 * messages (fi_send/fi_recv; bandwidth), every byte checked against
 * check_pattern.h's pattern (server = rank 0, client = rank 1), medians of
 * the repeats.  The TCP connection also carries the "receives are posted"
 * signal of each window and, at the end, each side's count of wrong bytes.
 * Both print the result; both exit 0 only when every byte on both sides
 * was right (1: wrong data or a failed libfabric call, named; 2: usage).
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "check_pattern.h"

#define MAX_SIZES   32
#define MAX_REPEATS 64
#define MAX_WINDOW  64
#define MAX_REPORTS 5
#define TIMEOUT_S   30

#define DIE(...)                                                                                   \
    do {                                                                                           \
        fprintf(stderr, "em-check-fi: %s: ", g_rank ? "client" : "server");                        \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fputc('\n', stderr);                                                                       \
        exit(1);                                                                                   \
    } while (0)
#define FI(call)                                                                                   \
    do {                                                                                           \
        ssize_t r_ = (call);                                                                       \
        if (r_ < 0)                                                                                \
            DIE("%s failed: %s", #call, fi_strerror((int)-r_));                                    \
    } while (0)

/* what the client sends the server after connecting (host byte order:
 * the two ends run the same program on the same architecture) */
struct settings {
    uint32_t magic, nsizes, iters, repeats, window;
    uint64_t sizes[MAX_SIZES];
};
#define MAGIC 0x656d6368u

struct row {
    size_t size;
    double lat_us, bw_mbps;
    unsigned long long errors;
};

static int g_rank; /* 0 server, 1 client */
static int g_sock = -1;
static unsigned long long g_errors, g_checked;
static size_t g_flip;
static struct fid_ep *ep;
static struct fid_cq *cq;
static fi_addr_t peer;
static struct fi_context2 ctx[MAX_WINDOW + 2];
static int g_done; /* completions read and not yet waited for */

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void progress(void);

/* the TCP connection; a read keeps the endpoint progressing while it
 * waits (a provider with manual progress, as ethermpi's, sends and
 * acknowledges only inside libfabric calls) */
static void xfer(int send, void *buf, size_t len)
{
    for (size_t done = 0; done < len;) {
        struct pollfd pfd = { .fd = g_sock, .events = POLLIN };
        if (!send && cq && poll(&pfd, 1, 0) == 0) {
            progress();
            continue;
        }
        ssize_t n = send ? write(g_sock, (char *)buf + done, len - done)
                         : read(g_sock, (char *)buf + done, len - done);
        if (n == 0)
            DIE("the other side closed the TCP connection (did it fail? see its output)");
        if (n < 0 && errno != EINTR)
            DIE("TCP connection: %s", strerror(errno));
        if (n > 0)
            done += (size_t)n;
    }
}

static void oob_connect(const char *host, const char *port)
{
    struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = host ? 0 : AI_PASSIVE }, *ai;
    int rc = getaddrinfo(host, port, &hints, &ai);
    if (rc)
        DIE("%s port %s: %s", host ? host : "listening", port, gai_strerror(rc));
    int s = socket(ai->ai_family, SOCK_STREAM, 0), one = 1;
    if (s < 0)
        DIE("socket: %s", strerror(errno));
    if (host) {
        double end = now_s() + TIMEOUT_S;
        while (connect(s, ai->ai_addr, ai->ai_addrlen)) {
            if (now_s() > end)
                DIE("cannot reach the server at %s port %s: %s (is 'em-check-fi -p %s' "
                    "running there, and the port open?)",
                    host, port, strerror(errno), port);
            close(s);
            usleep(200000);
            s = socket(ai->ai_family, SOCK_STREAM, 0);
        }
        g_sock = s;
    } else {
        setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(s, ai->ai_addr, ai->ai_addrlen) || listen(s, 1))
            DIE("cannot listen on port %s: %s (another server there? -p PORT)", port,
                strerror(errno));
        printf("em-check-fi: server waiting on port %s\n", port);
        fflush(stdout);
        g_sock = accept(s, NULL, NULL);
        if (g_sock < 0)
            DIE("accept: %s", strerror(errno));
        close(s);
    }
    setsockopt(g_sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    freeaddrinfo(ai);
}

static void progress(void)
{
    struct fi_cq_tagged_entry e[8];
    ssize_t n = fi_cq_read(cq, e, 8);
    if (n > 0) {
        g_done += (int)n;
    } else if (n == -FI_EAVAIL) {
        struct fi_cq_err_entry x = { 0 };
        fi_cq_readerr(cq, &x, 0);
        DIE("completion error: %s", fi_strerror(x.err));
    } else if (n != -FI_EAGAIN) {
        DIE("fi_cq_read: %s", fi_strerror((int)-n));
    }
}

static void wait_for(int want, const char *what)
{
    double end = now_s() + TIMEOUT_S;
    while (g_done < want) {
        progress();
        if (now_s() > end)
            DIE("%s: %d of %d completions within %d s (the data path between the nodes does "
                "not carry: firewall, interface, provider settings)",
                what, g_done, want, TIMEOUT_S);
    }
    g_done -= want;
}

#define POST(c)                                                                                    \
    do {                                                                                           \
        ssize_t r_;                                                                                \
        while ((r_ = (c)) == -FI_EAGAIN)                                                           \
            progress();                                                                            \
        if (r_ < 0)                                                                                \
            DIE("%s: %s", #c, fi_strerror((int)-r_));                                              \
    } while (0)

static void verify(const unsigned char *b, size_t size, uint64_t iter, const char *what)
{
    unsigned want, got;
    long at = chk_verify(b, size, iter, 1 - g_rank, &want, &got);
    g_checked += size;
    if (at >= 0 && g_errors++ < MAX_REPORTS)
        fprintf(stderr,
                "em-check-fi: %s: WRONG DATA in %s: size %zu iteration %llu byte %ld: "
                "got 0x%02x, want 0x%02x\n",
                g_rank ? "client" : "server", what, size, (unsigned long long)iter, at, got, want);
}

static void fill(unsigned char *b, size_t size, uint64_t iter)
{
    chk_fill(b, size, iter, g_rank);
    if (g_flip == size && g_rank == 1 && iter == 0) {
        b[size / 2] ^= 0x10;
        fprintf(stderr,
                "em-check-fi: client: EM_CHECK_FLIP=%zu: byte %zu of the first message "
                "corrupted on purpose\n",
                size, size / 2);
    }
}

static double pingpong(size_t size, int iters, int rep, unsigned char *sb, unsigned char *rb)
{
    double t = 0;
    int warm = iters / 10 + 1; /* i < 0: warm-up rounds, not timed */
    for (int i = -warm; i < iters; i++) {
        uint64_t it = (uint64_t)rep * 1000003u + (uint64_t)(i + warm);
        fill(sb, size, it);
        if (g_rank == 1) {
            double t0 = now_s();
            POST(fi_trecv(ep, rb, size, NULL, peer, 7, 0, &ctx[0]));
            POST(fi_tsend(ep, sb, size, NULL, peer, 7, &ctx[1]));
            wait_for(2, "ping-pong");
            if (i >= 0)
                t += now_s() - t0;
        } else {
            POST(fi_trecv(ep, rb, size, NULL, peer, 7, 0, &ctx[0]));
            wait_for(1, "ping-pong");
            POST(fi_tsend(ep, sb, size, NULL, peer, 7, &ctx[1]));
            wait_for(1, "ping-pong");
        }
        verify(rb, size, it, "ping-pong");
    }
    return t / iters / 2 * 1e6;
}

/* client -> server, @p w messages per window; MB/s seen by the client */
static double stream(size_t size, int windows, int w, int rep, unsigned char *buf)
{
    char ready = 0;
    double t = 0;
    for (int k = -1; k < windows; k++) {
        uint64_t it0 = 500000000ull + (uint64_t)rep * 1000003u + (uint64_t)(k + 1) * (uint64_t)w;
        if (g_rank == 1) {
            for (int j = 0; j < w; j++)
                fill(buf + (size_t)j * size, size, it0 + (uint64_t)j);
            xfer(0, &ready, 1); /* the server's receives are posted */
            double t0 = now_s();
            for (int j = 0; j < w; j++)
                POST(fi_send(ep, buf + (size_t)j * size, size, NULL, peer, &ctx[j]));
            wait_for(w, "stream sends");
            xfer(0, &ready, 1); /* ... and complete */
            if (k >= 0)
                t += now_s() - t0;
        } else {
            for (int j = 0; j < w; j++)
                POST(fi_recv(ep, buf + (size_t)j * size, size, NULL, peer, &ctx[j]));
            xfer(1, &ready, 1);
            wait_for(w, "stream receives");
            xfer(1, &ready, 1);
            for (int j = 0; j < w; j++)
                verify(buf + (size_t)j * size, size, it0 + (uint64_t)j, "stream");
        }
    }
    return t > 0 ? (double)size * w * windows / t / 1e6 : 0;
}

static void measure(const struct settings *st, size_t size, struct row *r)
{
    int iters = chk_iters(size, (int)st->iters), w = chk_window(size, (int)st->window);
    w = w > MAX_WINDOW ? MAX_WINDOW : w;
    int windows = (int)((64u << 20) / ((size_t)w * size));
    windows = windows > 100 ? 100 : windows < 4 ? 4 : windows;
    unsigned char *sb = malloc(size), *rb = malloc(size), *wb = malloc(size * (size_t)w);
    if (!sb || !rb || !wb)
        DIE("out of memory for %zu-byte buffers", size);
    double lat[MAX_REPEATS], bw[MAX_REPEATS];
    unsigned long long e0 = g_errors;
    for (int rep = 0; rep < (int)st->repeats; rep++) {
        lat[rep] = pingpong(size, iters, rep, sb, rb);
        bw[rep] = stream(size, windows, w, rep, wb);
    }
    r->size = size;
    r->lat_us = chk_median(lat, (int)st->repeats);
    r->bw_mbps = chk_median(bw, (int)st->repeats);
    unsigned long long mine = g_errors - e0, theirs;
    xfer(1, &mine, sizeof mine);
    xfer(0, &theirs, sizeof theirs);
    r->errors = mine + theirs;
    free(sb);
    free(rb);
    free(wb);
}

static struct fi_info *open_ep(const char *prov, struct fid_fabric **fab, struct fid_domain **dom,
                               struct fid_av **av)
{
    struct fi_info *hints = fi_allocinfo(), *info;
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_MSG | FI_TAGGED;
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->fabric_attr->prov_name = strdup(prov);
    int rc = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
    if (rc)
        DIE("provider '%s' offers no FI_EP_RDM endpoint with FI_MSG|FI_TAGGED: %s (fi_info -p "
            "'%s' lists what it offers; for ethermpi: is libethermpi-fi.so installed where "
            "libfabric looks, or FI_PROVIDER_PATH set?)",
            prov, fi_strerror(-rc), prov);
    fi_freeinfo(hints);
    FI(fi_fabric(info->fabric_attr, fab, NULL));
    FI(fi_domain(*fab, info, dom, NULL));
    struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_TAGGED, .size = 256 };
    FI(fi_cq_open(*dom, &ca, &cq, NULL));
    struct fi_av_attr aa = { .type = FI_AV_TABLE, .count = 4 };
    FI(fi_av_open(*dom, &aa, av, NULL));
    FI(fi_endpoint(*dom, info, &ep, NULL));
    FI(fi_ep_bind(ep, &(*av)->fid, 0));
    FI(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
    FI(fi_enable(ep));
    return info;
}

/* names (and the client's settings) across the TCP connection */
static void exchange(struct fid_av *av, struct settings *st)
{
    char name[256], rname[256];
    size_t len = sizeof name;
    uint32_t l, rl;
    FI(fi_getname(&ep->fid, name, &len));
    l = (uint32_t)len;
    xfer(1, &l, sizeof l);
    xfer(1, name, len);
    xfer(0, &rl, sizeof rl);
    if (rl > sizeof rname)
        DIE("the other side's endpoint name is %u bytes (another program on that port?)", rl);
    xfer(0, rname, rl);
    if (fi_av_insert(av, rname, 1, &peer, 0, NULL) != 1)
        DIE("fi_av_insert of the other side's name failed (the same -P on both sides?)");
    if (g_rank == 1) {
        xfer(1, st, sizeof *st);
    } else {
        xfer(0, st, sizeof *st);
        if (st->magic != MAGIC || st->nsizes < 1 || st->nsizes > MAX_SIZES || st->repeats < 1 ||
            st->repeats > MAX_REPEATS)
            DIE("the client sent settings this server does not understand (another version "
                "of em-check-fi?)");
    }
}

static void usage(const char *why)
{
    fprintf(stderr,
            "em-check-fi: %s\nusage: em-check-fi [-P PROV] [-p PORT] [--json]    "
            "(server)\n       em-check-fi [-P PROV] [-p PORT] [--sizes LIST] [--iters N] "
            "[--repeats R] [--window W] [--json] SERVER_HOST\n",
            why);
    exit(2);
}

static const char *parse(int argc, char **argv, struct settings *st, const char **prov,
                         const char **port, int *json)
{
    const char *server = NULL;
    size_t sz[MAX_SIZES];
    st->nsizes = (uint32_t)chk_default_sizes(sz);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--json")) {
            *json = 1;
            continue;
        }
        if (a[0] != '-') {
            if (server)
                usage("one server host only");
            server = a;
            continue;
        }
        if (!v)
            usage(!strcmp(a, "-h") || !strcmp(a, "--help") ? "two-node check (ethermpi-check(1))"
                                                           : "option without value");
        i++;
        if (!strcmp(a, "-P"))
            *prov = v;
        else if (!strcmp(a, "-p"))
            *port = v;
        else if (!strcmp(a, "--sizes") &&
                 !(st->nsizes = (uint32_t)chk_parse_sizes(v, sz, MAX_SIZES)))
            usage("--sizes wants a list like 8,64,4k,1M");
        else if (!strcmp(a, "--iters"))
            st->iters = (uint32_t)atoi(v);
        else if (!strcmp(a, "--repeats"))
            st->repeats = (uint32_t)atoi(v);
        else if (!strcmp(a, "--window"))
            st->window = (uint32_t)atoi(v);
        else if (strcmp(a, "--sizes"))
            usage("unknown option");
    }
    if (st->repeats < 1 || st->repeats > MAX_REPEATS)
        usage("--repeats wants 1..64");
    for (uint32_t i = 0; i < st->nsizes; i++)
        st->sizes[i] = sz[i];
    return server;
}

static void report(int json, const char *prov, const struct settings *st, struct row *rows,
                   const char *peer_host)
{
    const char *me = g_rank ? "client" : "server";
    if (json) {
        printf("{\"program\": \"em-check-fi\", \"role\": \"%s\", \"provider\": \"%s\", "
               "\"peer\": \"%s\", \"repeats\": %u, \"rows\": [",
               me, prov, peer_host, st->repeats);
        for (uint32_t i = 0; i < st->nsizes; i++)
            printf("%s\n  {\"size\": %zu, \"lat_us\": %.3f, \"bw_MBps\": %.2f, \"errors\": %llu}",
                   i ? "," : "", rows[i].size, rows[i].lat_us, rows[i].bw_mbps, rows[i].errors);
        printf("]}\n");
        return;
    }
    printf("em-check-fi: %s, provider %s, peer %s\n", me, prov, peer_host);
    printf("%10s %12s %14s  %s\n", "size_B", "latency_us", "bandwidth_MBps", "data");
    for (uint32_t i = 0; i < st->nsizes; i++)
        printf("%10zu %12.2f %14.1f  %s\n", rows[i].size, rows[i].lat_us, rows[i].bw_mbps,
               rows[i].errors ? "WRONG" : "ok");
    for (uint32_t i = 0; i < st->nsizes; i++)
        printf("RESULT size=%zu lat_us=%.3f bw_MBps=%.2f errors=%llu\n", rows[i].size,
               rows[i].lat_us, rows[i].bw_mbps, rows[i].errors);
}

int main(int argc, char **argv)
{
    struct settings st = { .magic = MAGIC, .repeats = 3 };
    const char *prov = "ethermpi", *port = "47591";
    int json = 0;
    const char *server = parse(argc, argv, &st, &prov, &port, &json);
    g_rank = server ? 1 : 0;
    g_flip = chk_flip_size();
    /* The ethermpi provider takes its endpoint id from FI_ETHERMPI_ID, else
     * from an MPI launcher's rank, else at random below
     * FI_ETHERMPI_NPEERS; two ids that collide are refused.  This pair has
     * no launcher, so it names them: server 0, client 1 (kept when the
     * caller set one).  To go once endpoint ids leave the wire. */
    setenv("FI_ETHERMPI_ID", g_rank ? "1" : "0", 0);
    struct fid_fabric *fab;
    struct fid_domain *dom;
    struct fid_av *av;
    /* the endpoint first: a provider that cannot open says so at once,
     * not after the other side has come */
    struct fi_info *info = open_ep(prov, &fab, &dom, &av);
    oob_connect(server, port);
    exchange(av, &st);
    if (info->ep_attr->max_msg_size)
        for (uint32_t i = 0; i < st.nsizes; i++)
            if (st.sizes[i] > info->ep_attr->max_msg_size)
                DIE("size %llu is above provider %s's largest message (%zu B): --sizes",
                    (unsigned long long)st.sizes[i], prov, info->ep_attr->max_msg_size);
    struct row rows[MAX_SIZES];
    unsigned long long bad = 0;
    for (uint32_t i = 0; i < st.nsizes; i++) {
        measure(&st, (size_t)st.sizes[i], &rows[i]);
        bad += rows[i].errors;
    }
    /* the server prints the client's timings (only the client times) */
    if (g_rank == 1)
        xfer(1, rows, sizeof(struct row) * st.nsizes);
    else
        xfer(0, rows, sizeof(struct row) * st.nsizes);
    report(json, info->fabric_attr->prov_name, &st, rows, server ? server : "(the client)");
    if (bad)
        fprintf(stderr, "em-check-fi: %s: FAILED: %llu message(s) arrived with wrong bytes\n",
                g_rank ? "client" : "server", bad);
    fflush(stdout);
    /* both done before either closes: the last ACKs reach the other side */
    char c = 0;
    xfer(1, &c, 1);
    xfer(0, &c, 1);
    FI(fi_close(&ep->fid));
    FI(fi_close(&av->fid));
    FI(fi_close(&cq->fid));
    FI(fi_close(&dom->fid));
    FI(fi_close(&fab->fid));
    fi_freeinfo(info);
    close(g_sock);
    return bad ? 1 : 0;
}
