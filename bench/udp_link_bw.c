/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * udp_link_bw: the ceiling of link_udp on a path, no protocol: how many
 * frame bytes per second one sender pushes through the kernel to one
 * receiver, with GSO/GRO on or off and the receive batch size given.  The
 * numbers in docs/design.md "link_udp: what each offload bought" come
 * from it (run in two emcluster nodes).  Frames are sent like the BTL
 * sends them: a 44-byte header in the link's buffer plus the payload
 * gathered from the caller's memory.
 *
 *   udp_link_bw --server --iface eth0 --port P [--no-gro] [--rx-batch N] [-t SECS]
 *   udp_link_bw --client --iface eth0 --peer A.B.C.D:P [--no-gso] [--burst N] [-t SECS]
 *   (both: [--sock-buf BYTES]; a clamped buffer is warned about)
 *
 * The server prints "rx MB/s frames/s" over the time between its first and
 * last frame (it stops after -t seconds or 1 s without a frame).  The
 * client sends bursts of --burst full-size frames as fast as the socket
 * takes them; without flow control the receiver may drop, which is what
 * the receive side's cost shows as.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "link/link_udp.h"
#include "util/clock.h"

static double now_s(void) { return (double)em_clock_ns() * 1e-9; }

/* CPU seconds (user + system) this process used: with a loaded machine
 * the rate per CPU second is the figure that compares offloads */
static double cpu_s(void)
{
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return (double)(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
           (double)(r.ru_utime.tv_usec + r.ru_stime.tv_usec) * 1e-6;
}

static int usage(void)
{
    fprintf(stderr, "usage: udp_link_bw --server|--client --iface IF [--port P] [--peer IP:P] "
                    "[--no-gso] [--no-gro] [--rx-batch N] [--burst N] [--sock-buf B] [-t SECS]\n");
    return 2;
}

static int server(em_link_t *l, double secs)
{
    double t0 = 0, t1 = 0, last = now_s(), c0 = 0, c1 = 0;
    unsigned long long bytes = 0, frames = 0;
    for (;;) {
        em_pkt_t *pk[64];
        unsigned n = em_link_rx_burst(l, pk, 64);
        double t = now_s();
        if (n) {
            if (!t0) {
                t0 = t;
                c0 = cpu_s();
            }
            t1 = last = t;
            for (unsigned i = 0; i < n; i++)
                bytes += pk[i]->len;
            frames += n;
            em_link_rx_release(l, pk, n);
        }
        if ((t0 && t - t0 > secs) || t - last > (t0 ? 1.0 : 30.0))
            break;
    }
    c1 = cpu_s();
    const em_udp_stats_t *s = em_link_udp_stats(l);
    double d = t1 > t0 ? t1 - t0 : 1e-9;
    printf("rx %.1f MB/s %.1f MB/cpu-s (%llu frames in %llu datagrams, %.2f s)\n",
           (double)bytes / d / 1e6, (double)bytes / (c1 - c0 > 1e-6 ? c1 - c0 : 1e-6) / 1e6, frames,
           (unsigned long long)s->rx_dgrams, d);
    return 0;
}

static int client(em_link_t *l, const char *peer, unsigned burst, double secs)
{
    char ip[64];
    snprintf(ip, sizeof ip, "%s", peer);
    char *colon = strchr(ip, ':');
    if (!colon)
        return usage();
    *colon = 0;
    em_link_addr_t a = { .len = 6 };
    uint16_t port = htons((uint16_t)atoi(colon + 1));
    if (inet_pton(AF_INET, ip, a.bytes) != 1)
        return usage();
    memcpy(a.bytes + 4, &port, 2);
    if (em_link_set_peer(l, 0, &a) != 0)
        return 1;
    uint32_t hdr = 44, pay = l->mtu - hdr;
    uint8_t *payload = calloc(1, pay);
    em_pkt_t *pk[256];
    unsigned long long frames = 0;
    double t0 = now_s(), c0 = cpu_s();
    while (now_s() - t0 < secs) {
        unsigned n = 0;
        while (n < burst) {
            em_pkt_t *p = em_link_tx_alloc(l);
            if (!p)
                break;
            memset(p->data, 0x5A, hdr);
            p->len = hdr;
            p->ext = payload;
            p->ext_len = pay;
            p->peer = 0;
            pk[n++] = p;
        }
        unsigned k = em_link_tx_burst(l, pk, n);
        for (unsigned i = k; i < n; i++)
            em_link_tx_free(l, pk[i]);
        frames += k;
    }
    const em_udp_stats_t *s = em_link_udp_stats(l);
    double c = cpu_s() - c0;
    printf("tx %.1f MB/s %.1f MB/cpu-s (%llu frames in %llu sends, %llu GSO)\n",
           (double)frames * l->mtu / (now_s() - t0) / 1e6,
           (double)frames * l->mtu / (c > 1e-6 ? c : 1e-6) / 1e6, frames,
           (unsigned long long)s->tx_dgrams, (unsigned long long)s->tx_gso_sends);
    free(payload);
    return 0;
}

int main(int argc, char **argv)
{
    em_udp_cfg_t c = { 0 };
    int srv = -1;
    const char *peer = NULL;
    unsigned burst = 64;
    double secs = 3;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--server"))
            srv = 1;
        else if (!strcmp(a, "--client"))
            srv = 0;
        else if (!strcmp(a, "--no-gso"))
            c.no_gso = 1;
        else if (!strcmp(a, "--no-gro"))
            c.no_gro = 1;
        else if (!v)
            return usage();
        else if (!strcmp(a, "--iface")) {
            c.iface = v;
            i++;
        } else if (!strcmp(a, "--port")) {
            c.port = (uint16_t)atoi(v);
            i++;
        } else if (!strcmp(a, "--peer")) {
            peer = v;
            i++;
        } else if (!strcmp(a, "--rx-batch")) {
            c.rx_batch = (unsigned)atoi(v);
            i++;
        } else if (!strcmp(a, "--burst")) {
            burst = (unsigned)atoi(v);
            i++;
        } else if (!strcmp(a, "--sock-buf")) {
            c.sock_buf = atoi(v);
            i++;
        } else if (!strcmp(a, "-t")) {
            secs = atof(v);
            i++;
        } else
            return usage();
    }
    if (srv < 0 || (!srv && !peer) || burst < 1 || burst > 256)
        return usage();
    char err[512];
    em_link_t *l = em_link_udp_open(&c, err, sizeof err);
    if (!l) {
        fprintf(stderr, "udp_link_bw: %s\n", err);
        return 1;
    }
    if (em_link_udp_buf_warning(l, err, sizeof err))
        fprintf(stderr, "udp_link_bw: warning: %s\n", err);
    int rc = srv ? server(l, secs) : client(l, peer, burst, secs);
    em_link_close(l);
    return rc;
}
