/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * raw_udp_pingpong: the floor under the rudp BTL.  Ping-pongs UDP datagrams
 * between two processes with plain sockets and no protocol at all: the
 * receiver busy-polls recv(MSG_DONTWAIT) as the rudp engine does, the
 * sender calls send() once per datagram.  What rudp's small-message
 * latency spends above this is ours (protocol, engine, BTL, ob1); what
 * this costs is the kernel's and the veth's.
 *
 *   raw_udp_pingpong -s PORT                  (echoes until told to quit,
 *                                              or 60 s without a datagram)
 *   raw_udp_pingpong -c ADDR:PORT [-i N] [-m MAX]
 *
 * The client prints an em-bench table: one-way latency = RTT/2, the mean
 * and the median of N round trips (after N/10 warm-up), for payloads of
 * 1 B up to MAX (default 1024) in powers of two.  Byte 0 of a datagram is
 * the opcode: 'P' ping (echoed), 'Q' quit.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_DGRAM 65507

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* busy-poll one datagram; @return its length, or -1 after @p idle_ns */
static ssize_t poll_recv(int fd, uint8_t *buf, uint64_t idle_ns)
{
    uint64_t t0 = now_ns();
    for (unsigned spin = 0;; spin++) {
        ssize_t n = recv(fd, buf, MAX_DGRAM, MSG_DONTWAIT);
        if (n >= 0)
            return n;
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            return -1;
        if ((spin & 1023) == 0 && now_ns() - t0 > idle_ns)
            return -1;
    }
}

static int server(int fd)
{
    static uint8_t buf[MAX_DGRAM];
    struct sockaddr_in from;
    /* the first datagram names the client; then poll as the engine does */
    socklen_t fl = sizeof from;
    ssize_t n = recvfrom(fd, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl);
    if (n < 1 || connect(fd, (struct sockaddr *)&from, fl) != 0)
        return 1;
    while (n >= 1 && buf[0] == 'P') {
        if (send(fd, buf, (size_t)n, 0) != n)
            return 1;
        n = poll_recv(fd, buf, 60000000000ull);
    }
    return n >= 1 && buf[0] == 'Q' ? 0 : 1;
}

static int client(int fd, long iters, size_t max)
{
    static uint8_t buf[MAX_DGRAM], rbuf[MAX_DGRAM];
    uint64_t *rtt = malloc((size_t)iters * sizeof *rtt);
    if (!rtt)
        return 1;
    memset(buf, 0xA5, sizeof buf);
    buf[0] = 'P';
    printf("# raw_udp_pingpong: plain UDP sockets, busy-polled recv, %ld round trips\n", iters);
    printf("# em-bench latency transport-neutral v1\n# size_bytes latency_mean_us "
           "latency_median_us\n");
    for (size_t size = 1; size <= max; size *= 2) {
        long warm = iters / 10;
        for (long i = -warm; i < iters; i++) {
            uint64_t t0 = now_ns();
            if (send(fd, buf, size, 0) != (ssize_t)size) {
                perror("send");
                return 1;
            }
            if (poll_recv(fd, rbuf, 5000000000ull) != (ssize_t)size) {
                fprintf(stderr, "raw_udp_pingpong: no echo of %zu B within 5 s\n", size);
                return 1;
            }
            if (i >= 0)
                rtt[i] = now_ns() - t0;
        }
        uint64_t sum = 0;
        for (long i = 0; i < iters; i++)
            sum += rtt[i];
        qsort(rtt, (size_t)iters, sizeof *rtt, cmp_u64);
        printf("%-10zu %10.3f %10.3f\n", size, (double)sum / (double)iters / 2000.0,
               (double)rtt[iters / 2] / 2000.0);
        fflush(stdout);
    }
    buf[0] = 'Q';
    (void)send(fd, buf, 1, 0);
    free(rtt);
    return 0;
}

int main(int argc, char **argv)
{
    const char *srv = NULL, *peer = NULL;
    long iters = 20000;
    size_t max = 1024;
    int o;
    while ((o = getopt(argc, argv, "s:c:i:m:h")) != -1) {
        switch (o) {
        case 's': srv = optarg; break;
        case 'c': peer = optarg; break;
        case 'i': iters = atol(optarg); break;
        case 'm': max = (size_t)atol(optarg); break;
        default:
            fprintf(stderr, "usage: raw_udp_pingpong -s PORT | -c ADDR:PORT [-i N] [-m MAX]\n");
            return o == 'h' ? 0 : 2;
        }
    }
    if (!srv == !peer || iters < 1 || max < 1 || max > MAX_DGRAM) {
        fprintf(stderr, "raw_udp_pingpong: give -s PORT or -c ADDR:PORT (MAX 1..%d)\n", MAX_DGRAM);
        return 2;
    }
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0) {
        perror("socket");
        return 1;
    }
    struct sockaddr_in a = { .sin_family = AF_INET };
    if (srv) {
        a.sin_port = htons((uint16_t)atoi(srv));
        if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0) {
            perror("bind");
            return 1;
        }
        return server(fd);
    }
    char host[64];
    const char *colon = strrchr(peer, ':');
    if (!colon || (size_t)(colon - peer) >= sizeof host) {
        fprintf(stderr, "raw_udp_pingpong: -c wants ADDR:PORT, got '%s'\n", peer);
        return 2;
    }
    memcpy(host, peer, (size_t)(colon - peer));
    host[colon - peer] = 0;
    a.sin_port = htons((uint16_t)atoi(colon + 1));
    if (inet_pton(AF_INET, host, &a.sin_addr) != 1 ||
        connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        fprintf(stderr, "raw_udp_pingpong: cannot use address '%s'\n", peer);
        return 2;
    }
    return client(fd, iters, max);
}
