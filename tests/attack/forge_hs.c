/* SPDX-License-Identifier: BSD-3-Clause */
/* em_forge's handshake classes: see forge_hs.h. */
#include "forge_hs.h"

#include "link/link_mux.h"
#include "proto/hs_wire.h"
#include "util/clock.h"

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

int forge_hs_bind(forge_hs_t *f, int fd, const char *ifname)
{
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", ifname);
    ifr.ifr_addr.sa_family = AF_INET;
    if (ioctl(fd, SIOCGIFADDR, &ifr) < 0) {
        fprintf(stderr, "em_forge: no IPv4 address on %s: %s\n", ifname, strerror(errno));
        return -1;
    }
    struct sockaddr_in sa;
    memcpy(&sa, &ifr.ifr_addr, sizeof sa);
    sa.sin_port = 0;
    socklen_t sl = sizeof sa;
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &sl) < 0) {
        fprintf(stderr, "em_forge: cannot bind the injecting socket: %s\n", strerror(errno));
        return -1;
    }
    f->fd = fd;
    memcpy(f->own, &sa.sin_addr.s_addr, 4); /* receives and sends on one port */
    memcpy(f->own + 4, &sa.sin_port, 2);
    memcpy(f->own + 6, &sa.sin_port, 2);
    return 0;
}

/* A frame of @p type from @p addr (8 bytes) as endpoint @p ep, nonce @p nonce,
 * to the victim; the fields the decoder requires for the type set. */
static em_hs_t frame(const forge_hs_t *f, uint8_t type, const uint8_t *addr, uint32_t ep,
                     uint64_t nonce)
{
    em_hs_t h = { .type = type,
                  .src_ep = ep,
                  .dst_ep = f->victim_ep,
                  .src_nonce = nonce ? nonce : 1,
                  .dst_nonce = f->victim_nonce,
                  .src_index = (uint32_t)f->rnd() & 0xffff,
                  .dst_index = EM_HS_NO_INDEX,
                  .isn = (uint32_t)f->rnd(),
                  .token = f->rnd() | 1,
                  .addr_len = 8 };
    memcpy(h.addr, addr, 8);
    switch (type) {
    case EM_HS_INIT: break;
    case EM_HS_CHALLENGE: /* the responder commits nothing */
        h.src_index = EM_HS_NO_INDEX;
        h.dst_index = (uint32_t)f->rnd() & 0xffff;
        h.isn = 0;
        h.token = 0;
        h.cookie_ms = (uint32_t)(em_clock_ns() / 1000000u);
        h.cookie = f->rnd() | 1;
        break;
    case EM_HS_CONFIRM:
        h.cookie_ms = (uint32_t)(em_clock_ns() / 1000000u);
        h.cookie = f->rnd() | 1; /* a guess */
        break;
    default: /* ACCEPT */ h.dst_index = (uint32_t)f->rnd() & 0xffff; break;
    }
    return h;
}

int forge_hs_learn(forge_hs_t *f, double timeout_s)
{
    em_hs_t init = frame(f, EM_HS_INIT, f->own, 0, f->rnd());
    init.dst_nonce = 0; /* an INIT may know only the address and index */
    uint8_t b[EM_HS_LEN + 64];
    em_hs_encode(&init, b);
    uint64_t end = em_clock_ns() + (uint64_t)(timeout_s * 1e9);
    while (em_clock_ns() < end) { /* again every 100 ms: lost on the way, or early */
        if (sendto(f->fd, b, EM_HS_LEN, 0, (const struct sockaddr *)&f->victim, sizeof f->victim) !=
            (ssize_t)EM_HS_LEN) {
            fprintf(stderr, "em_forge: cannot send the INIT: %s\n", strerror(errno));
            return -1;
        }
        struct pollfd p = { .fd = f->fd, .events = POLLIN };
        while (poll(&p, 1, 100) > 0) {
            uint8_t r[256];
            em_hs_t h;
            ssize_t n = recv(f->fd, r, sizeof r, MSG_DONTWAIT);
            if (n > 0 && em_hs_decode(r, (size_t)n, &h) == EM_HS_DEC_OK &&
                h.type == EM_HS_CHALLENGE && h.dst_nonce == init.src_nonce) {
                f->victim_nonce = h.src_nonce;
                f->victim_ep = h.src_ep;
                return 0;
            }
        }
    }
    fprintf(stderr,
            "em_forge: no CHALLENGE from the victim in %.0f s (named endpoints with "
            "first contact on?)\n",
            timeout_s);
    return -1;
}

size_t forge_hs_frame(const forge_hs_t *f, int rebind, unsigned k, uint8_t *out)
{
    em_hs_t h;
    if (rebind) { /* the live peer's name from elsewhere: INIT, CONFIRM, ACCEPT */
        static const uint8_t types[3] = { EM_HS_INIT, EM_HS_CONFIRM, EM_HS_ACCEPT };
        h = frame(f, types[k % 3], f->claimed, 0, f->rnd());
        if (h.type == EM_HS_INIT)
            h.dst_nonce = 0;
    } else
        switch (k % 4) {
        case 0: /* a stranger beyond the endpoints one address has */
            h = frame(f, EM_HS_CONFIRM, f->own, EM_MUX_MEMBERS + (uint32_t)(f->rnd() & 0xff),
                      f->rnd());
            break;
        case 1: h = frame(f, EM_HS_CHALLENGE, f->own, 0, f->rnd()); break;
        case 2: h = frame(f, EM_HS_ACCEPT, f->own, 0, f->rnd()); break;
        default: /* a new stranger with a guessed cookie */
            h = frame(f, EM_HS_CONFIRM, f->own, (uint32_t)(f->rnd() % EM_MUX_MEMBERS), f->rnd());
            break;
        }
    return em_hs_encode(&h, out);
}
