/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * proto_sim: the protocol on the simulated link.  For each recovery mode,
 * window size and loss rate it measures
 *   - goodput of a one-way stream (sender -> receiver, 64 KiB messages,
 *     at most 8 messages queued) in simulated time: protocol efficiency
 *     with the link's bandwidth and latency (10 Gbit/s, 5 us by default);
 *   - small-message latency: 64 B ping-pong, one-way = RTT/2, median and
 *     99th percentile, in simulated microseconds;
 *   - retransmissions per delivered frame;
 *   - CPU cost: wall-clock nanoseconds of protocol + simulator work per
 *     delivered frame (a guide only: the machine is shared and noisy).
 * and then the incast scenario (src/sim/incast.h): 8 senders stream to one
 * receiver through a shared 10 Gbit/s bottleneck with a 64-frame buffer, for
 * each congestion-control mode (off, loss, delay): goodput as a fraction of
 * the bottleneck, retransmissions per data frame, per-sender fairness.
 * Prints tables and writes JSON (-o FILE, default results/proto_sim.json;
 * format in docs/benchmarks.md).
 * Usage: proto_sim [-q] [-o FILE] [-m MTU] [-s SEED] [-c off|loss|delay]
 *   -c: congestion control of the stream/latency table (default: the
 *       protocol's default, loss); the incast always runs all three.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim/incast.h"
#include "sim/simnet.h"
#include "util/clock.h"

struct st {
    em_simnet_t *net;
    /* stream */
    uint8_t *buf;
    size_t msg;
    unsigned to_send, queued, done, received;
    em_proto_op_t ops[8];
    unsigned op_next;
    /* ping-pong */
    unsigned pp_left;
    uint64_t pp_start;
    double *rtt;
    unsigned nrtt;
    em_proto_op_t pp_op[2];
};

static double wall(void) { return (double)em_clock_ns() * 1e-9; }

static void stream_fill(struct st *s)
{
    while (s->queued - s->done < 8 && s->queued < s->to_send) {
        em_proto_op_t *op = &s->ops[s->op_next++ % 8];
        if (em_proto_send(em_simnet_proto(s->net, 1), op, 0, 1, s->buf, s->msg, NULL,
                          em_simnet_now(s->net)) != 0) {
            fprintf(stderr, "send failed\n");
            exit(1);
        }
        s->queued++;
    }
}

static void s_recv(void *u, unsigned node, uint32_t from, uint8_t tag, const void *d, size_t len)
{
    struct st *s = u;
    if (tag == 1) {
        s->received++;
        return;
    }
    /* ping-pong: node 1 pings, node 0 echoes */
    if (node == 0) {
        em_proto_send(em_simnet_proto(s->net, 0), &s->pp_op[0], 1, 2, s->buf, len, NULL,
                      em_simnet_now(s->net));
        return;
    }
    s->rtt[s->nrtt++] = (double)(em_simnet_now(s->net) - s->pp_start);
    if (--s->pp_left) {
        s->pp_start = em_simnet_now(s->net);
        em_proto_send(em_simnet_proto(s->net, 1), &s->pp_op[1], 0, 2, s->buf, len, NULL,
                      s->pp_start);
    }
}

static void s_complete(void *u, unsigned node, void *ctx, int status)
{
    struct st *s = u;
    if (status == -EM_ECANCELED) /* teardown after the measurement */
        return;
    if (status != 0) {
        fprintf(stderr, "operation failed: %s\n", em_strerror(status));
        exit(1);
    }
    if (node == 1 && s->to_send) {
        s->done++;
        stream_fill(s);
    }
}

static bool stream_done(void *u)
{
    struct st *s = u;
    return s->received == s->to_send && s->done == s->to_send;
}
static bool pp_done(void *u) { return ((struct st *)u)->pp_left == 0; }

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

struct result {
    const char *mode;
    unsigned window;
    double loss, gbps, lat_med_us, lat_p99_us, retx_per_frame, cpu_ns_per_frame;
};

static const char *const CC_NAME[] = { "off", "loss", "delay" };

static struct result run(em_recovery_t mode, unsigned window, double loss, unsigned mtu,
                         uint64_t seed, unsigned nmsg, unsigned npp, em_cc_mode_t cc)
{
    static const em_simnet_cb_t cb = { .recv = s_recv, .complete = s_complete };
    struct st s = { .msg = 65536 };
    em_proto_cfg_t pc;
    em_sim_cfg_t sc;
    em_proto_cfg_default(&pc);
    pc.recovery = mode;
    pc.window = (uint16_t)window;
    pc.cc = cc;
    em_sim_cfg_default(&sc);
    sc.mtu = mtu;
    sc.loss = loss;
    sc.seed = seed;
    s.buf = calloc(1, s.msg);
    s.rtt = calloc(npp, sizeof *s.rtt);

    /* stream */
    s.net = em_simnet_create(2, &pc, &sc, &cb, &s);
    s.to_send = nmsg;
    double w0 = wall();
    stream_fill(&s);
    em_simnet_run(s.net, stream_done, &s, UINT64_MAX);
    double w1 = wall();
    uint64_t t = em_simnet_now(s.net);
    const em_proto_stats_t *ps = em_proto_stats(em_simnet_proto(s.net, 1));
    struct result r = {
        .mode = mode == EM_RECOVERY_SR ? "sr" : "gbn",
        .window = window,
        .loss = loss,
        .gbps = (double)nmsg * s.msg * 8 / (double)t,
        .retx_per_frame = (double)ps->retransmits / (double)ps->tx_data_frames,
        .cpu_ns_per_frame = (w1 - w0) * 1e9 / (double)ps->tx_data_frames,
    };
    em_simnet_destroy(s.net);

    /* ping-pong, 64 B */
    s.to_send = 0;
    s.net = em_simnet_create(2, &pc, &sc, &cb, &s);
    s.pp_left = npp;
    s.pp_start = 0;
    em_proto_send(em_simnet_proto(s.net, 1), &s.pp_op[1], 0, 2, s.buf, 64, NULL, 0);
    em_simnet_run(s.net, pp_done, &s, UINT64_MAX);
    qsort(s.rtt, s.nrtt, sizeof *s.rtt, cmpd);
    r.lat_med_us = s.rtt[s.nrtt / 2] / 2 / 1000;
    r.lat_p99_us = s.rtt[(size_t)(s.nrtt * 0.99)] / 2 / 1000;
    em_simnet_destroy(s.net);
    free(s.buf);
    free(s.rtt);
    return r;
}

struct incast_row {
    em_cc_mode_t cc;
    em_incast_result_t r;
};

/** The 8 -> 1 incast for each cc mode; prints a table, fills @p rows[3]. */
static void incast(unsigned mtu, uint64_t seed, uint64_t duration_ns, struct incast_row *rows)
{
    em_proto_cfg_t pc;
    em_sim_cfg_t sc;
    em_incast_cfg_t ic;
    em_proto_cfg_default(&pc);
    em_sim_cfg_default(&sc);
    em_incast_cfg_default(&ic);
    sc.mtu = mtu;
    sc.seed = seed;
    sc.bn_ns_per_kb = 800; /* 10 Gbit/s, as each sender's own wire */
    sc.bn_queue = 64;
    sc.bn_node = 0;
    ic.duration_ns = duration_ns;

    printf("\nincast: %u senders -> 1 through a shared 10 Gbit/s bottleneck, %u-frame buffer "
           "(tail drop), %u B messages x %u outstanding per sender, %.0f ms simulated\n\n",
           ic.senders, sc.bn_queue, ic.msg_bytes, ic.queued, duration_ns / 1e6);
    printf("| cc | goodput %% of bottleneck | retx %% of data frames | Jain fairness | "
           "min share | drops | timeouts | max queue |\n");
    printf("|----|------:|------:|------:|------:|------:|------:|------:|\n");
    for (int m = 0; m < 3; m++) {
        rows[m].cc = (em_cc_mode_t)m;
        pc.cc = (em_cc_mode_t)m;
        if (em_incast_run(&pc, &sc, &ic, &rows[m].r) != 0 || rows[m].r.failed) {
            fprintf(stderr, "incast run failed (cc %s)\n", CC_NAME[m]);
            exit(1);
        }
        const em_incast_result_t *r = &rows[m].r;
        printf("| %-5s | %5.1f | %6.2f | %5.3f | %5.2f | %5" PRIu64 " | %5" PRIu64 " | %3u |\n",
               CC_NAME[m], r->goodput_frac * 100, r->retx_frac * 100, r->jain, r->min_share,
               r->bn_dropped, r->timeouts, r->bn_max_queue);
    }
}

static em_cc_mode_t parse_cc(const char *a)
{
    for (int m = 0; m < 3; m++)
        if (!strcmp(a, CC_NAME[m]))
            return (em_cc_mode_t)m;
    fprintf(stderr, "proto_sim: -c takes off, loss or delay\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *out = "results/proto_sim.json";
    unsigned mtu = 1500, nmsg = 256, npp = 20000;
    uint64_t seed = 1, incast_ns = 20000000;
    em_proto_cfg_t def;
    em_proto_cfg_default(&def);
    em_cc_mode_t cc = def.cc;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-q")) {
            nmsg = 48;
            npp = 3000;
            incast_ns = 5000000;
        } else if (!strcmp(argv[i], "-o") && i + 1 < argc)
            out = argv[++i];
        else if (!strcmp(argv[i], "-m") && i + 1 < argc)
            mtu = (unsigned)atoi(argv[++i]);
        else if (!strcmp(argv[i], "-s") && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "-c") && i + 1 < argc)
            cc = parse_cc(argv[++i]);
        else {
            fprintf(stderr,
                    "usage: proto_sim [-q] [-o FILE] [-m MTU] [-s SEED] [-c off|loss|delay]\n");
            return 2;
        }
    }
    static const unsigned windows[] = { 4, 10, 16, 32, 64 };
    static const double losses[] = { 0.0, 0.01, 0.05 };
    struct result res[2 * 5 * 3];
    unsigned n = 0;

    printf("proto_sim: simulated link 10 Gbit/s, 5 us one-way, MTU %u, 64 KiB stream x %u, "
           "64 B ping-pong x %u, seed %" PRIu64 ", cc %s\n\n",
           mtu, nmsg, npp, seed, CC_NAME[cc]);
    printf("| mode | window | loss | goodput Gbit/s | lat median us | lat p99 us | retx/frame | "
           "cpu ns/frame |\n");
    printf("|------|-------:|-----:|---------------:|--------------:|-----------:|-----------:|----"
           "---------:|\n");
    for (int m = 0; m < 2; m++)
        for (unsigned w = 0; w < 5; w++)
            for (unsigned l = 0; l < 3; l++) {
                struct result r = run(m ? EM_RECOVERY_GBN : EM_RECOVERY_SR, windows[w], losses[l],
                                      mtu, seed, nmsg, npp, cc);
                res[n++] = r;
                printf("| %-4s | %6u | %3.0f%% | %14.3f | %13.2f | %10.2f | %10.4f | %12.0f |\n",
                       r.mode, r.window, r.loss * 100, r.gbps, r.lat_med_us, r.lat_p99_us,
                       r.retx_per_frame, r.cpu_ns_per_frame);
                fflush(stdout);
            }
    struct incast_row inc[3];
    incast(mtu, seed, incast_ns, inc);

    FILE *f = fopen(out, "w");
    if (!f) {
        perror(out);
        return 1;
    }
    fprintf(f, "[\n");
    for (unsigned i = 0; i < n; i++)
        fprintf(f,
                "  {\"kind\": \"stream\", \"cc\": \"%s\", \"mode\": \"%s\", \"window\": %u, "
                "\"loss\": %.2f, \"mtu\": %u, "
                "\"goodput_gbps\": %.4f, \"latency_median_us\": %.3f, \"latency_p99_us\": %.3f, "
                "\"retransmits_per_frame\": %.5f, \"cpu_ns_per_frame\": %.1f},\n",
                CC_NAME[cc], res[i].mode, res[i].window, res[i].loss, mtu, res[i].gbps,
                res[i].lat_med_us, res[i].lat_p99_us, res[i].retx_per_frame,
                res[i].cpu_ns_per_frame);
    for (unsigned i = 0; i < 3; i++) {
        const em_incast_result_t *r = &inc[i].r;
        fprintf(f,
                "  {\"kind\": \"incast\", \"cc\": \"%s\", \"senders\": 8, \"mtu\": %u, "
                "\"bottleneck_gbps\": 10, \"buffer_frames\": 64, \"duration_ms\": %.1f, "
                "\"goodput_fraction\": %.4f, \"retransmit_fraction\": %.5f, "
                "\"jain_fairness\": %.4f, \"min_share\": %.4f, \"data_frames\": %" PRIu64 ", "
                "\"retransmits\": %" PRIu64 ", \"timeouts\": %" PRIu64 ", "
                "\"bottleneck_drops\": %" PRIu64 ", \"max_queue_frames\": %u}%s\n",
                CC_NAME[inc[i].cc], mtu, incast_ns / 1e6, r->goodput_frac, r->retx_frac, r->jain,
                r->min_share, r->data_frames, r->retransmits, r->timeouts, r->bn_dropped,
                r->bn_max_queue, i + 1 < 3 ? "," : "");
    }
    fprintf(f, "]\n");
    fclose(f);
    printf("\nwrote %s\n", out);
    return 0;
}
