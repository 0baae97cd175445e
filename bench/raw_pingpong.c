/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * raw_pingpong: the floor under the dpdk BTL.  Ping-pongs raw L2 frames
 * (our ethertype, broadcast destination) through link_dpdk on the same PMD
 * the BTL uses, with no protocol at all, so a table can show how close the
 * BTL gets to what the wire itself does.
 *
 *   raw_pingpong --server --vdev DEVARGS            (echoes until told to quit,
 *                                                    or 120 s without a frame)
 *   raw_pingpong --client --vdev DEVARGS [-q] [-i N]
 *
 * The client prints an em-bench table: one-way latency = RTT/2, median of N
 * round trips (after warm-up), for payloads of 0 B up to the link MTU.
 * Frame payload byte 0 is the opcode: 'P' ping (echoed), 'Q' quit.
 * "@FILE" and "%h" in DEVARGS work as for the dpdk BTL's btl_dpdk_vdev;
 * "%j" becomes "raw".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "link/link_dpdk.h"
#include "util/clock.h"

static uint64_t now_ns(void) { return em_clock_ns(); }

static int send_one(em_link_t *l, uint8_t op, uint32_t len)
{
    em_pkt_t *p = em_link_tx_alloc(l);
    if (!p)
        return -1;
    memset(p->data, 0xA5, len);
    if (len)
        p->data[0] = op;
    p->len = len;
    p->peer = 0;
    while (em_link_tx_burst(l, &p, 1) != 1)
        ;
    return 0;
}

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int server = 0, quick = 0, iters = 10000;
    const char *vdev_arg = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--server"))
            server = 1;
        else if (!strcmp(argv[i], "--client"))
            server = 0;
        else if (!strcmp(argv[i], "--vdev") && i + 1 < argc)
            vdev_arg = argv[++i];
        else if (!strcmp(argv[i], "-q"))
            quick = 1;
        else if (!strcmp(argv[i], "-i") && i + 1 < argc)
            iters = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: raw_pingpong --server|--client --vdev DEVARGS [-q] [-i N]\n");
            return 2;
        }
    }
    if (!vdev_arg) {
        fprintf(stderr, "raw_pingpong: --vdev is required\n");
        return 2;
    }
    if (quick)
        iters = 1000;
    char vdev[1024], err[1024], prefix[64];
    if (em_link_dpdk_devargs(vdev_arg, "raw", vdev, sizeof vdev, err, sizeof err) != 0) {
        fprintf(stderr, "raw_pingpong: %s\n", err);
        return 1;
    }
    snprintf(prefix, sizeof prefix, "emraw%ld", (long)getpid());
    em_dpdk_cfg_t c = {
        .vdev = vdev, .file_prefix = prefix, .nb_mbufs = 4095, .link_wait_ms = 30000
    };
    em_link_t *l = em_link_dpdk_open(&c, err, sizeof err);
    if (!l) {
        fprintf(stderr, "raw_pingpong: %s\n", err);
        return 1;
    }
    em_link_addr_t bcast = { .len = 8, .bytes = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0 } };
    em_link_set_peer(l, 0, &bcast);
    em_pkt_t *pk[32];
    int rc = 0;

    if (server) {
        uint64_t last = now_ns();
        for (int quit = 0; !quit;) {
            unsigned n = em_link_rx_burst(l, pk, 32);
            for (unsigned i = 0; i < n; i++) {
                if (pk[i]->len && pk[i]->data[0] == 'Q')
                    quit = 1;
                else
                    send_one(l, 'P', pk[i]->len);
            }
            em_link_rx_release(l, pk, n);
            if (n)
                last = now_ns();
            else if (now_ns() - last > 120000000000ull) {
                fprintf(stderr, "raw_pingpong: no frame for 120 s, exiting\n");
                rc = 1;
                break;
            }
        }
    } else {
        double *rtt = malloc(sizeof(double) * (size_t)iters);
        uint32_t sizes[16];
        int ns = 0;
        for (uint32_t s = 1; s < l->mtu && ns < 15; s *= 2)
            sizes[ns++] = s;
        sizes[ns++] = l->mtu;
        printf("# raw_pingpong: %s, MTU %u, %d round trips per size\n", vdev, l->mtu, iters);
        printf("# em-bench latency transport-neutral v1\n# size_bytes latency us\n");
        for (int k = 0; k < ns && rc == 0; k++) {
            int warm = iters / 10 + 10;
            for (int it = -warm; it < iters; it++) {
                uint64_t t0 = now_ns();
                send_one(l, 'P', sizes[k]);
                unsigned n = 0;
                while ((n = em_link_rx_burst(l, pk, 1)) == 0) {
                    if (now_ns() - t0 > 5000000000ull) {
                        fprintf(stderr, "raw_pingpong: no echo within 5 s (size %u)\n", sizes[k]);
                        rc = 1;
                        break;
                    }
                }
                uint64_t t1 = now_ns();
                if (n && pk[0]->len != sizes[k]) {
                    fprintf(stderr, "raw_pingpong: echo of %u bytes for %u\n", pk[0]->len,
                            sizes[k]);
                    rc = 1;
                }
                if (n)
                    em_link_rx_release(l, pk, n);
                if (rc)
                    break;
                if (it >= 0)
                    rtt[it] = (double)(t1 - t0);
            }
            if (rc)
                break;
            qsort(rtt, (size_t)iters, sizeof *rtt, cmpd);
            printf("%u %.3f\n", sizes[k], rtt[iters / 2] / 2000.0);
            fflush(stdout);
        }
        send_one(l, 'Q', 1);
        free(rtt);
    }
    em_link_close(l);
    return rc;
}
