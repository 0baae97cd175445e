/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Addressing by node and service (docs/ofi.md "Addresses"): libfabric's
 * in-band sequence, as fabtests run it without -b, between two endpoints
 * on two domains of one process over the kernel UDP link on loopback.
 * The provider's sources are linked in (as ofi_named's), so that the test
 * drives each endpoint's progress itself.
 *
 *   1. the server's fi_getinfo(NULL, service, FI_SOURCE) has a src_addr;
 *      its endpoint receives on that port (its fi_getname says so), and a
 *      second endpoint asking for the same port is refused;
 *   2. the client's fi_getinfo("127.0.0.1", service, 0) has a dest_addr
 *      (a partial name: nonce 0); fi_av_insert takes it;
 *   3. the client sends its own address to it: the handshake to the
 *      partial name completes (the client's table counts one extended
 *      name), the server gets the message from FI_ADDR_NOTAVAIL, inserts
 *      the address it carries and answers through that fi_addr_t;
 *   4. verified messages both ways, eager and rendezvous, each side's
 *      FI_SOURCE naming the other's fi_addr_t;
 *   5. the same service with FI_SOURCE on a node: src_addr carries that
 *      node's IPv4; a node that does not resolve gives no answer;
 *   6. an endpoint that numbers its peers (FI_ETHERMPI_NAMES=ids) refuses
 *      the partial name (the L2 links refuse it likewise: emo_name.c).
 *
 * Usage: test_ofi_nodesvc
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rdma/fi_tagged.h>

#include "emo_rdv.h"
#include "engine/contact.h"

#include "ofi_check.h"
#include "ofi_pair.h"
#include "ofi_node.h"

#define BIG   (300u * 1024) /* rendezvous on UDP (eager up to 256 KiB) */
#define SMALL 3000u         /* eager, several frames */

static struct ofi_node S = { .name = "server" }, C = { .name = "client" };
static struct fi_context ctx[4];

static void progress_both(void *arg)
{
    (void)arg;
    (void)emo_ep_progress(S.e);
    (void)emo_ep_progress(C.e);
}

/* the completion of @p want on @p n, success, within 10 s; its source */
static fi_addr_t expect_ok(struct ofi_node *n, void *want)
{
    return ofi_node_expect_ok(n, progress_both, NULL, want);
}

/* @p from sends @p len bytes (@p s) to @p dest, @p to receives them into
 * @p r; @return the source @p to saw */
static fi_addr_t move(struct ofi_node *from, fi_addr_t dest, struct ofi_node *to, const void *s,
                      void *r, size_t len, uint64_t tag)
{
    FI(fi_trecv(to->ep, r, len, NULL, FI_ADDR_UNSPEC, tag, 0, &ctx[0]));
    double end = ofi_now_s() + 10;
    ssize_t rc;
    while ((rc = fi_tsend(from->ep, s, len, NULL, dest, tag, &ctx[1])) == -FI_EAGAIN) {
        progress_both(NULL);
        CHECK(ofi_now_s() < end, "%s: a send waited 10 s", from->name);
    }
    FI(rc);
    fi_addr_t src = expect_ok(to, &ctx[0]);
    (void)expect_ok(from, &ctx[1]);
    CHECK(memcmp(s, r, len) == 0, "%s -> %s: %zu bytes differ", from->name, to->name, len);
    return src;
}

/* verified bytes from @p from to @p to; @return the source @p to saw */
static fi_addr_t exchange(struct ofi_node *from, fi_addr_t dest, struct ofi_node *to, size_t len,
                          unsigned seed)
{
    uint8_t *s = malloc(len), *r = calloc(1, len);
    CHECK(s && r, "malloc");
    ofi_fill(s, len, seed);
    fi_addr_t src = move(from, dest, to, s, r, len, seed);
    free(s);
    free(r);
    return src;
}

/* a UDP port free on loopback now */
static unsigned free_port(void)
{
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t sl = sizeof sa;
    CHECK(fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
              getsockname(fd, (struct sockaddr *)&sa, &sl) == 0,
          "a free UDP port");
    close(fd);
    return ntohs(sa.sin_port);
}

static struct fi_info *getinfo(const char *node, const char *service, uint64_t flags)
{
    struct fi_info *hints = fi_allocinfo(), *info = NULL;
    CHECK(hints, "fi_allocinfo");
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_TAGGED | FI_SOURCE;
    hints->domain_attr->av_type = FI_AV_TABLE;
    int rc = emo_getinfo(FI_VERSION(1, 17), node, service, flags, hints, &info);
    fi_freeinfo(hints);
    return rc == 0 ? info : NULL;
}

/* the receive port of address blob @p a (kernel UDP: IPv4, receive port, send port) */
static unsigned rx_port(const void *a)
{
    emo_addr_t x;
    CHECK(emo_addr_decode(a, EMO_ADDR_LEN, &x) == 0 && x.link.len == 8, "a UDP address");
    uint16_t p;
    memcpy(&p, x.link.bytes + 4, 2);
    return ntohs(p);
}

static void in_band(const char *service, unsigned port)
{
    struct fi_info *si = getinfo(NULL, service, FI_SOURCE);
    CHECK(si && si->src_addr && si->src_addrlen == EMO_ADDR_LEN && !si->dest_addr,
          "server: fi_getinfo(NULL, %s, FI_SOURCE) has a source address", service);
    ofi_node_open(&S, si);
    CHECK(rx_port(S.addr) == port, "server: receives on %u, not the service %u", rx_port(S.addr),
          port);
    struct fid_ep *ep2 = NULL;
    int rc = fi_endpoint(S.dom, si, &ep2, NULL);
    /* the link's reason code (port taken), passed up as FI_EADDRINUSE */
    CHECK(rc == -FI_EADDRINUSE, "a second endpoint on port %u: %d (%s), not -FI_EADDRINUSE", port,
          rc, fi_strerror(-rc));
    printf("nodesvc: the server receives on its service, a second endpoint is refused\n");

    struct fi_info *ci = getinfo("127.0.0.1", service, 0);
    CHECK(ci && ci->dest_addr && ci->dest_addrlen == EMO_ADDR_LEN && !ci->src_addr,
          "client: fi_getinfo(127.0.0.1, %s, 0) has a destination address", service);
    emo_addr_t d;
    CHECK(emo_addr_decode(ci->dest_addr, EMO_ADDR_LEN, &d) == 0 && d.named && !d.nonce &&
              d.ep_index == 0 && rx_port(ci->dest_addr) == port,
          "the destination is a partial name of port %u", port);
    ofi_node_open(&C, ci);
    fi_addr_t c_s = FI_ADDR_NOTAVAIL;
    CHECK(fi_av_insert(C.av, ci->dest_addr, 1, &c_s, 0, NULL) == 1, "client: inserts dest_addr");

    /* fabtests' in-band exchange: the client's address in its first message */
    uint8_t got[EMO_ADDR_LEN] = { 0 };
    fi_addr_t src = move(&C, c_s, &S, C.addr, got, EMO_ADDR_LEN, 1);
    CHECK(src == FI_ADDR_NOTAVAIL, "server: the uninserted client's message came from %llu",
          (unsigned long long)src);
    const em_conn_stats_t *cs = em_engine_contact_stats(C.e->eng);
    CHECK(cs && cs->hs_extended == 1, "client: %llu names extended, want 1",
          cs ? (unsigned long long)cs->hs_extended : 0ull);
    fi_addr_t s_c = FI_ADDR_NOTAVAIL;
    CHECK(fi_av_insert(S.av, got, 1, &s_c, 0, NULL) == 1, "server: inserts the client's address");
    printf("nodesvc: the handshake to the partial name completed, the server inserted the "
           "client\n");

    CHECK(exchange(&S, s_c, &C, SMALL, 2) == c_s, "client: FI_SOURCE is not the server's");
    CHECK(exchange(&C, c_s, &S, SMALL, 3) == s_c, "server: FI_SOURCE is not the client's");
    CHECK(exchange(&S, s_c, &C, BIG, 4) == c_s, "client: FI_SOURCE (rendezvous)");
    CHECK(exchange(&C, c_s, &S, BIG, 5) == s_c, "server: FI_SOURCE (rendezvous)");
    /* the server's full address (fi_getname) is the same peer as the partial name */
    fi_addr_t again = FI_ADDR_NOTAVAIL;
    CHECK(fi_av_insert(C.av, S.addr, 1, &again, 0, NULL) == 1 && again == c_s,
          "client: the server's full address is another fi_addr_t (%llu, not %llu)",
          (unsigned long long)again, (unsigned long long)c_s);
    printf("nodesvc: verified messages both ways, FI_SOURCE right on both sides\n");
    ofi_node_close(&C);
    ofi_node_close(&S);
    fi_freeinfo(ci);
    fi_freeinfo(si);
}

static void node_forms(const char *service, unsigned port)
{
    struct fi_info *i = getinfo("127.0.0.1", service, FI_SOURCE);
    CHECK(i && i->src_addr && !i->dest_addr, "fi_getinfo(127.0.0.1, %s, FI_SOURCE)", service);
    emo_addr_t a;
    CHECK(emo_addr_decode(i->src_addr, EMO_ADDR_LEN, &a) == 0 &&
              memcmp(a.link.bytes, "\x7f\0\0\x01", 4) == 0 && rx_port(i->src_addr) == port,
          "the source names 127.0.0.1:%u", port);
    fi_freeinfo(i);
    CHECK(!getinfo("no-such-host.invalid", service, 0), "an unknown node was answered");
    printf("nodesvc: a node with FI_SOURCE, an unknown node ok\n");
}

/* an endpoint that numbers its peers (FI_ETHERMPI_NAMES=ids, as the emd
 * link's) refuses a partial name: it cannot reach a peer by node and service */
static void numbered_refuses(const char *service)
{
    struct fi_info *ci = getinfo("127.0.0.1", service, 0);
    CHECK(ci && ci->dest_addr, "client: a destination address");
    char *was = emo_params.names;
    emo_params.names = (char *)"ids";
    emo_params.id = 5;
    struct ofi_node N = { .name = "numbered" };
    ofi_node_open(&N, ci);
    CHECK(!emo_named(N.e), "names=ids: a numbered endpoint");
    fi_addr_t fa = FI_ADDR_NOTAVAIL;
    CHECK(fi_av_insert(N.av, ci->dest_addr, 1, &fa, 0, NULL) == 0,
          "a numbered endpoint took a partial name");
    ofi_node_close(&N);
    emo_params.names = was;
    emo_params.id = -1;
    fi_freeinfo(ci);
    printf("nodesvc: a numbered endpoint refuses a partial name\n");
}

int main(void)
{
    setenv("FI_ETHERMPI_IF_INCLUDE", "127.0.0.1", 0);
    ofi_node_plain_env();
    unsetenv("FI_ETHERMPI_LINK"); /* kernel UDP: the link node/service addressing is for */
    emo_params_load();
    unsigned port = free_port();
    char service[16];
    snprintf(service, sizeof service, "%u", port);
    struct fi_info *probe = getinfo(NULL, NULL, 0);
    CHECK(probe, "fi_getinfo");
    fi_freeinfo(probe);
    in_band(service, port);
    node_forms(service, port);
    numbered_refuses(service);
    printf("nodesvc: all ok\n");
    return 0;
}
