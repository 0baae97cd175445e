/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * First contact against hand-made frames (prov/emo_contact.c's rules): one
 * process opens an ethermpi endpoint (id 0, FI_ETHERMPI_FIRST_CONTACT=1)
 * over loopback UDP and, from a plain UDP socket, sends it single-frame
 * EAGER messages with a first-contact blob, as endpoints that the receiver
 * never inserted:
 *   id 2: a wrong pair key (a sender that never had our address) -> refused
 *   id 3: the blob's link address is not the frame's source     -> refused
 *   id 1: everything right                                      -> delivered
 *         (the control: the refusals above are not the test's own mistakes)
 *   id 4: everything right, but the budget (1 peer) is spent    -> refused
 * and first of all a live peer, id 5 on a socket of its own and in the AV,
 * whose address a forger's first contact (id 6, from the forger's socket,
 * the right pair key for its own secret) names: refused without touching
 * the live peer's binding (fc_addr_in_use), so id 5's next message still
 * arrives.  Before that check the link learnt the forged address first and
 * the live peer's frames no longer matched it.
 *
 * Usage: test_ofi_contact_forge [provider dir]
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "emo_wire.h"
#include "proto/wire.h"

#include "ofi_check.h"
#include "ofi_pair.h"

static struct fid_fabric *fab;
static struct fid_domain *dom;
static struct fid_ep *ep;
static struct fid_cq *cq;
static struct fid_av *av;
static emo_addr_t me;       /* the receiver's address (from fi_getname) */
static int sock, live_sock; /* the forger's socket; the live peer's */
static struct sockaddr_in sock_addr, live_addr;

/* what one forged frame says beyond the defaults */
struct forgery {
    int from;                       /* socket it leaves from (default: the forger's) */
    const struct sockaddr_in *blob; /* the address its blob names (default: that socket's) */
    uint32_t seq_off;               /* nth message of that endpoint */
};
static struct forgery F;

static void open_ep(void)
{
    struct fi_info *hints = fi_allocinfo(), *info;
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_TAGGED;
    hints->fabric_attr->prov_name = strdup("ethermpi");
    FI(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info));
    fi_freeinfo(hints);
    ofi_open_ep(info, FI_AV_TABLE, 64, &fab, &dom, &cq, &av, &ep);
    fi_freeinfo(info); /* the provider keeps its own copy (fi_dupinfo) */
    FI(fi_enable(ep));
    uint8_t name[EMO_ADDR_LEN];
    size_t len = sizeof name;
    FI(fi_getname(&ep->fid, name, &len));
    CHECK(emo_addr_decode(name, len, &me) == 0 && me.link.len == 8, "own address");
}

/* one EAGER message of 8 bytes, tag @p tag, from endpoint @p id; @p key_xor
 * spoils the pair key, @p port_delta the blob's link port */
static void forge(uint16_t id, uint64_t tag, uint64_t key_xor, int port_delta)
{
    uint64_t secret = 0x1234567800000000ull | id;
    uint32_t isn = 1000u * id;
    emo_addr_t a = { .id = id, .frame_max = me.frame_max, .secret = secret, .isn = isn };
    /* link_udp's address: IPv4, receive port, send port; the plain socket
     * receives and sends on one port, so both are its port */
    a.link.len = 8;
    const struct sockaddr_in *ba = F.blob ? F.blob : &sock_addr;
    memcpy(a.link.bytes, &ba->sin_addr.s_addr, 4);
    uint16_t port = htons((uint16_t)(ntohs(ba->sin_port) + port_delta));
    memcpy(a.link.bytes + 4, &port, 2);
    memcpy(a.link.bytes + 6, &port, 2);
    uint8_t frame[EM_HDR_LEN + EMO_HDR_LEN + EMO_ADDR_LEN + 8];
    size_t plen = EMO_HDR_LEN + EMO_ADDR_LEN + 8;
    emo_hdr_t mh = {
        .type = EMO_T_EAGER, .flags = EMO_F_TAGGED | EMO_F_HELLO, .tag = tag, .len = 8
    };
    emo_hdr_encode(&mh, frame + EM_HDR_LEN);
    emo_addr_encode(&a, frame + EM_HDR_LEN + EMO_HDR_LEN);
    memcpy(frame + EM_HDR_LEN + EMO_HDR_LEN + EMO_ADDR_LEN, "forged!", 8);
    em_hdr_t h = { .type = EM_PT_DATA,
                   .tag = EMO_T_EAGER,
                   .index = id, /* our ids are every table's indexes (wire v3) */
                   .job_key = emo_pair_key(me.secret, me.id, secret, id) ^ key_xor,
                   .len = (uint16_t)plen,
                   .seq = isn + F.seq_off,
                   .ack = me.isn,
                   .msg_id = F.seq_off,
                   .msg_len = (uint32_t)plen,
                   .frag_no = 0,
                   .frag_cnt = 1 };
    em_hdr_encode(&h, frame);
    struct sockaddr_in to = { .sin_family = AF_INET };
    memcpy(&to.sin_addr.s_addr, me.link.bytes, 4);
    memcpy(&to.sin_port, me.link.bytes + 4, 2);
    CHECK(sendto(F.from ? F.from : sock, frame, sizeof frame, 0, (struct sockaddr *)&to,
                 sizeof to) == (ssize_t)sizeof frame,
          "sendto");
}

/* post a receive for @p tag, forge it (a few times, as retransmissions),
 * @return 1 if it was delivered within @p timeout */
static int delivered(uint16_t id, uint64_t tag, uint64_t key_xor, int port_delta, double timeout)
{
    struct fi_context c;
    uint8_t b[8];
    FI(fi_trecv(ep, b, sizeof b, NULL, FI_ADDR_UNSPEC, tag, 0, &c));
    double end = ofi_now_s() + timeout, next = 0;
    while (ofi_now_s() < end) {
        if (ofi_now_s() >= next) {
            forge(id, tag, key_xor, port_delta);
            next = ofi_now_s() + 0.2;
        }
        struct fi_cq_tagged_entry e;
        ssize_t n = fi_cq_read(cq, &e, 1);
        if (n == 1) {
            CHECK(e.op_context == &c && e.len == 8 && !memcmp(b, "forged!", 8), "delivery");
            return 1;
        }
        CHECK(n == -FI_EAGAIN, "fi_cq_read = %zd", n);
    }
    FI(fi_cancel(&ep->fid, &c));
    for (double e2 = ofi_now_s() + 2; ofi_now_s() < e2;) { /* take the cancel's entry */
        struct fi_cq_tagged_entry e;
        if (fi_cq_read(cq, &e, 1) == -FI_EAVAIL) {
            struct fi_cq_err_entry x = { 0 };
            fi_cq_readerr(cq, &x, 0);
            break;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && argv[1][0])
        setenv("FI_PROVIDER_PATH", argv[1], 1);
    setenv("FI_ETHERMPI_IF_INCLUDE", "127.0.0.1", 0);
    /* the numbered addresses' first-contact blob (the daemon link's path);
     * named endpoints' first contact is engine_contact's and ofi_named's */
    setenv("FI_ETHERMPI_NAMES", "ids", 1);
    setenv("FI_ETHERMPI_ID", "0", 1);
    setenv("FI_ETHERMPI_NPEERS", "16", 1);
    setenv("FI_ETHERMPI_FIRST_CONTACT", "1", 1);
    open_ep();
    sock = socket(AF_INET, SOCK_DGRAM, 0);
    sock_addr = (struct sockaddr_in){ .sin_family = AF_INET };
    sock_addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t sl = sizeof sock_addr;
    CHECK(sock >= 0 && bind(sock, (struct sockaddr *)&sock_addr, sizeof sock_addr) == 0 &&
              getsockname(sock, (struct sockaddr *)&sock_addr, &sl) == 0,
          "socket");
    live_sock = socket(AF_INET, SOCK_DGRAM, 0);
    live_addr = (struct sockaddr_in){ .sin_family = AF_INET };
    live_addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sl = sizeof live_addr;
    CHECK(live_sock >= 0 && bind(live_sock, (struct sockaddr *)&live_addr, sizeof live_addr) == 0 &&
              getsockname(live_sock, (struct sockaddr *)&live_addr, &sl) == 0,
          "socket");
    /* the live peer, in the AV (the blob forge() would send for id 5) */
    emo_addr_t live = {
        .id = 5, .frame_max = me.frame_max, .secret = 0x1234567800000000ull | 5, .isn = 5000
    };
    live.link.len = 8;
    memcpy(live.link.bytes, &live_addr.sin_addr.s_addr, 4);
    memcpy(live.link.bytes + 4, &live_addr.sin_port, 2);
    memcpy(live.link.bytes + 6, &live_addr.sin_port, 2);
    uint8_t blob[EMO_ADDR_LEN];
    emo_addr_encode(&live, blob);
    fi_addr_t fa;
    CHECK(fi_av_insert(av, blob, 1, &fa, 0, NULL) == 1, "fi_av_insert of the live peer");
    F = (struct forgery){ .from = live_sock, .blob = &live_addr };
    CHECK(delivered(5, 0x5, 0, 0, 5.0), "the live peer's first message was not delivered");
    F = (struct forgery){ .blob = &live_addr }; /* the forger names the live peer's address */
    CHECK(!delivered(6, 0x6, 0, 0, 1.0),
          "a first contact naming a live peer's address made a peer");
    F = (struct forgery){ .from = live_sock, .blob = &live_addr, .seq_off = 1 };
    CHECK(delivered(5, 0x8, 0, 0, 5.0), "the live peer lost its binding to a forged first contact");
    F = (struct forgery){ 0 };
    CHECK(!delivered(2, 0x2, 0x5A5A, 0, 1.0), "a frame with a wrong pair key made a peer");
    CHECK(!delivered(3, 0x3, 0, 1, 1.0), "a blob naming another link address made a peer");
    CHECK(delivered(1, 0x1, 0, 0, 5.0), "a well-formed first contact was not delivered (the "
                                        "refusals above prove nothing)");
    CHECK(!delivered(4, 0x4, 0, 0, 1.0), "a peer beyond FI_ETHERMPI_FIRST_CONTACT=1 was made");
    ofi_close_ep(ep, av, cq, dom, fab);
    close(live_sock);
    close(sock);
    printf("test_ofi_contact_forge: a live peer's address, wrong key, wrong source, over "
           "budget refused; "
           "a well-formed one delivered\n");
    return 0;
}
