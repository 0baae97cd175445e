/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file link_udp_text.c
 * What a user reads of a kernel UDP link (link_udp.h): the socket buffer
 * warning and an address as text.  Kept out of link_udp.c (the data
 * path); reads the link only through em_link_udp_info().
 */
#include "link/link_udp.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

int em_link_udp_buf_warning(const em_link_t *l, char *buf, size_t len)
{
    em_udp_info_t info;
    em_link_udp_info(l, &info);
    const em_udp_info_t *i = &info;
    int rcv = i->rcvbuf < i->rcvbuf_req, snd = i->sndbuf < i->sndbuf_req;
    if (!rcv && !snd)
        return 0;
    char fix[128];
    snprintf(fix, sizeof fix, "%s%.0d%s%s%.0d", rcv ? "net.core.rmem_max=" : "",
             rcv ? i->rcvbuf_req : 0, rcv && snd ? " " : "", snd ? "net.core.wmem_max=" : "",
             snd ? i->sndbuf_req : 0);
    snprintf(buf, len,
             "the kernel granted UDP socket buffers of %d KiB (receive) and %d KiB "
             "(send) where %d KiB were asked for, so bursts beyond that are dropped and resent "
             "(lost bandwidth); raise the limit on every node (as root: sysctl -w %s) or lower "
             "btl_rudp_sock_buf",
             i->rcvbuf / 1024, i->sndbuf / 1024, i->rcvbuf_req / 1024, fix);
    return 1;
}

void em_link_udp_addr_str(const em_link_addr_t *a, char *buf, size_t len)
{
    char ip[INET_ADDRSTRLEN] = "?";
    uint16_t port = 0, from = 0;
    if (a->len == 6 || a->len == 8) {
        inet_ntop(AF_INET, a->bytes, ip, sizeof ip);
        memcpy(&port, a->bytes + 4, 2);
        memcpy(&from, a->bytes + (a->len == 8 ? 6 : 4), 2);
    }
    if (from != port)
        snprintf(buf, len, "%s:%u (sends from port %u)", ip, ntohs(port), ntohs(from));
    else
        snprintf(buf, len, "%s:%u", ip, ntohs(port));
}
