/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * em_forge: a hostile third node for tests/attack/run-attack-tests.
 *
 * It watches the traffic of a running MPI job between two ranks the way an
 * on-path sniffer would (a packet socket on the victim's switch port), and
 * injects forged ethermpi frames into the job from ANOTHER node's network
 * namespace: over UDP for the rudp BTL, as raw Ethernet frames (ethertype
 * 0x88B5) for the dpdk BTL on AF_XDP.  Every forged header is built with
 * the project's own encoder (em_hdr_encode, src/proto/wire.h) starting from
 * a decoded real frame, so the forger follows the wire format when it
 * changes (key width, new fields): whatever the real frame carries and the
 * class does not change, the forged frame carries too.
 *
 * Why the switch port and not the victim's namespace: on AF_XDP the frames
 * a rank receives are redirected to its socket before any packet socket of
 * its namespace sees them, and its transmissions bypass the packet taps;
 * the bridge port in the switch namespace sees both directions for every
 * transport.  The sniffer re-reads the live traffic between rounds, so the
 * sequence and ACK numbers it sprays stay near the real ones however fast
 * the job runs.
 *
 * Daemon mode (--mode emd): the frames of emd (src/daemon) carry its shim
 * (struct emd_wire_hdr: endpoints and the source node's MAC) between the
 * Ethernet header and the ethermpi frame; the forger decodes and encodes it
 * with emd_wire_decode / emd_wire_encode, the daemon's own functions.
 *
 * Usage (as root; run inside the switch namespace, e.g. ip netns exec P-sw):
 *   em_forge --mode udp|l2|emd --class CLASS --sniff-if IF --inject-ns PATH
 *            [--inject-if eth0] [--from ADDR] [--src 0] [--dst 1] [--seconds 3]
 *            [--interval-us 5000] [--max-frames 20000]
 *
 *   --sniff-if IF     packet socket on IF in the current namespace (the
 *                     victim's switch port, e.g. n1l0)
 *   --inject-ns PATH  the forger node's namespace (/run/netns/P-n2): the
 *                     injecting socket is opened there, so every forged
 *                     frame comes from that node's address
 *   --from ADDR       the claimed rank's source address: an IPv4 address
 *                     (--mode udp) or a MAC (l2, emd); the sniffer keeps
 *                     the frames that come from it.  Wire v3 frames name
 *                     their sender only by the receiver's index for it,
 *                     which on named peers (first contact) each side
 *                     numbers itself: in a two-rank job both directions
 *                     carry index 0, so only the source tells them apart
 *   --src S --dst D   the rank whose identity is claimed, and the victim;
 *                     without --from the sniffer keeps frames of index S
 *                     (numbered peers: the index is the sender's rank); D
 *                     is for the log
 *
 * Classes (each says what it tests; run-attack-tests maps each to the drop
 * counter that must prove it was refused):
 *   badkey   DATA frames claiming rank S with a WRONG job key (random keys):
 *            a stranger guessing.  Proof: the job-key drop counter.
 *   spoof    DATA frames claiming rank S with the RIGHT key (sniffed), from
 *            the forger's address: an ob1 MATCH header for the job's own
 *            communicator/tag and junk data, sequence numbers sprayed
 *            around the real ones.  Proof: the source-address drop counter.
 *            Also in --mode emd: the claimed endpoint in the shim, the
 *            forger's MAC as the shim's node; the daemon must not
 *            acknowledge them (else the true frame is a duplicate).
 *   tag255   as spoof with wire tag 255 (past Open MPI's active-message
 *            table).  Proof: source (or tag) drop counter.
 *   ack      forged standalone ACK, SACK (bitmap all ones) and NACK frames
 *            with ACK numbers sprayed around the real ones: would complete
 *            the victim's sends that were never delivered.  Proof: source
 *            (or window) drop counter.
 *   fin      as spoof with an ob1 FIN header (tag 73) whose fragment
 *            pointer is bogus: ob1 calls through it.  Proof: source counter.
 *   huge     first fragments (frag 0 of 65535) claiming ~65535 x payload
 *            bytes, a new message id each: reassembly buffers.  Proof:
 *            source (or budget) counter.
 *   flood    right-key DATA frames, each from a NEW source address (random
 *            source MACs on L2, a new UDP source port per frame): address
 *            tables.  Proof: source counter.
 *   rmareq   one-fragment DATA frames on the engine's tag 255 claiming rank
 *            S, right pair key: GET and ATOMIC requests built with the
 *            engine's encoder (em_rma_encode_req, engine/atomic.h) at the
 *            region a real request named (decoded with em_rma_decode):
 *            wrong key, out of bounds, 4 GiB long, the neighbour region id,
 *            an offset that wraps, 64 swaps out of bounds, misaligned.
 *            Proof: source counter (the engine's rma_refused or
 *            rma_bad_msg would count one that got past the protocol).
 *            tests/attack/README.md says what the code did before.
 *   rmaput   PUT frames from a real one (region, key, offset): wrong key,
 *            out of bounds, an offset that wraps, the neighbour region.
 *            Proof: source, or malformed for the wrapping offsets (the
 *            decoder refuses them before any state is looked at).
 *            Both wait 5 s at most for a real request or PUT frame (the
 *            job's one-sided traffic, attack_job's 'rma'), else exit 3.
 *   emdflood (--mode emd) frames of the real flow (key, ranks, endpoints)
 *            already delivered (sequence numbers just below the real one),
 *            each from a new random source MAC in the Ethernet header and
 *            the shim: the daemon answers every one with an eager ACK to
 *            that MAC, which takes a slot of its node table (256, never
 *            evicted): afterwards it cannot reach a node it has not talked
 *            to yet.  Proof: a new job with such a node still runs.
 *   hsmint, hsrebind  (--mode udp, named endpoints) forged first-contact
 *            handshake frames: forge_hs.h says what each sends.
 *
 * Output: "em_forge: class C: N frames sent in R rounds (seq ~X, ack ~Y)".
 * Exit 0 after sending, 2 usage, 3 no frame of the job seen, 1 other errors.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "emd_abi/emd_wire.h"
#include "forge_hs.h"
#include "engine/atomic.h"
#include "engine/engine.h"
#include "proto/wire.h"
#include "util/clock.h"
#include "util/loss.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define EM_ETHERTYPE  0x88B5
#define FRAME_MAX     9216
#define SPRAY         80 /* forged frames per round */
#define SPRAY_BEHIND  8  /* of which this many below the real number */
#define OB1_TAG_MATCH 65 /* MCA_BTL_TAG_PML (0x40) + 1 */
#define OB1_TAG_FIN   73 /* MCA_BTL_TAG_PML (0x40) + 9 */
#define USER_TAG      7  /* the first tag tests/attack/attack_job.c uses */

/* Open MPI 4.1 pml/ob1 headers as ob1 puts them in a BTL payload (host
 * byte order, x86-64 natural alignment); our own structs, from the layout
 * of ompi/mca/pml/ob1/pml_ob1_hdr.h. */
struct ob1_match_hdr {
    uint8_t type; /* MCA_PML_OB1_HDR_TYPE_MATCH */
    uint8_t flags;
    uint16_t ctx; /* communicator context id (MPI_COMM_WORLD: 0) */
    int32_t src;  /* sender's rank */
    int32_t tag;  /* user tag */
    uint16_t seq; /* per-peer message sequence */
    uint8_t pad[2];
};
_Static_assert(sizeof(struct ob1_match_hdr) == 16, "ob1 match header is 16 bytes");

struct ob1_fin_hdr {
    uint8_t type; /* MCA_PML_OB1_HDR_TYPE_FIN */
    uint8_t flags;
    uint8_t pad[6];
    int64_t size;  /* bytes completed, or an error code */
    uint64_t frag; /* opal_ptr_t: the completed RDMA fragment, a raw pointer */
};
_Static_assert(sizeof(struct ob1_fin_hdr) == 24, "ob1 FIN header is 24 bytes");

enum cls {
    C_BADKEY,
    C_SPOOF,
    C_TAG255,
    C_ACK,
    C_FIN,
    C_HUGE,
    C_FLOOD,
    C_RMAREQ,
    C_RMAPUT,
    C_EMDFLOOD,
    C_HSMINT,
    C_HSREBIND,
    C_COUNT
};
static const char *const cls_names[C_COUNT] = {
    "badkey", "spoof",  "tag255", "ack",      "fin",    "huge",
    "flood",  "rmareq", "rmaput", "emdflood", "hsmint", "hsrebind",
};

struct opts {
    int l2;   /* 1: raw Ethernet (dpdk), 0: UDP (rudp) */
    int shim; /* 1: emd's shim after the Ethernet header */
    enum cls cls;
    const char *sniff_if;
    const char *inject_ns;
    const char *inject_if;
    unsigned src, dst;
    int from_set;           /* --from: frames are picked by source address */
    uint8_t from_mac[6];    /* l2, emd */
    struct in_addr from_ip; /* udp */
    double seconds;
    unsigned interval_us;
    unsigned long max_frames;
};

/* What the sniffer learned from the job's real frames src -> dst. */
struct tmpl {
    int have_data; /* a DATA/PUT frame seen: seq is meaningful */
    int have_any;
    em_hdr_t data; /* the latest DATA/PUT header */
    em_hdr_t any;  /* the latest header of any type (its ack) */
    uint8_t dst_mac[6];
    struct sockaddr_in dst_addr; /* UDP: the victim's address and port */
    int locked;                  /* the real sender's address is known: */
    uint8_t src_mac[6];          /* frames from any other address (ours, */
    struct sockaddr_in src_addr; /* forged) are not templates */
    uint16_t from_rx_port;       /* UDP: the claimed rank's receive port (frames to it) */
    uint16_t shim_dst, shim_src; /* emd mode: the real frame's endpoints */
    int have_put;                /* a real PUT frame seen: put is its header, */
    em_hdr_t put;                /* region, key and offset a live region's */
    int have_req;                /* a real GET/ATOMIC request (tag 255) seen: */
    uint32_t req_region;         /* the region it names (the victim's window */
    uint64_t req_key, req_off;   /* or osc rdma's state), its key and offset */
};

static em_loss_t rng; /* the forged fields' random values (util/loss.h's stream) */

static uint64_t rnd(void) { return em_loss_next(&rng); }

static double now_s(void) { return (double)em_clock_ns() * 1e-9; }

static void usage(FILE *f)
{
    fprintf(f, "usage: em_forge --mode udp|l2|emd --class CLASS --sniff-if IF --inject-ns PATH\n"
               "                [--inject-if eth0] [--src 0] [--dst 1] [--seconds 3]\n"
               "                [--interval-us 5000] [--max-frames 20000]\n"
               "classes:");
    for (int c = 0; c < C_COUNT; c++)
        fprintf(f, " %s", cls_names[c]);
    fprintf(f, "\n(see the comment at the top of tests/attack/em_forge.c)\n");
}

static int parse_args(int argc, char **argv, struct opts *o)
{
    *o = (struct opts){ .cls = C_COUNT,
                        .inject_if = "eth0",
                        .src = 0,
                        .dst = 1,
                        .seconds = 3.0,
                        .interval_us = 5000,
                        .max_frames = 20000,
                        .l2 = -1 };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            exit(0);
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "em_forge: option %s needs a value\n", a);
            return -1;
        }
        const char *v = argv[++i];
        if (!strcmp(a, "--mode")) {
            o->l2 = !strcmp(v, "l2") || !strcmp(v, "emd") ? 1 : !strcmp(v, "udp") ? 0 : -1;
            o->shim = !strcmp(v, "emd");
        } else if (!strcmp(a, "--class")) {
            for (int c = 0; c < C_COUNT; c++)
                if (!strcmp(v, cls_names[c]))
                    o->cls = (enum cls)c;
        } else if (!strcmp(a, "--sniff-if")) {
            o->sniff_if = v;
        } else if (!strcmp(a, "--inject-ns")) {
            o->inject_ns = v;
        } else if (!strcmp(a, "--inject-if")) {
            o->inject_if = v;
        } else if (!strcmp(a, "--from")) {
            unsigned b[6];
            if (sscanf(v, "%x:%x:%x:%x:%x:%x", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5]) == 6) {
                for (int k = 0; k < 6; k++)
                    o->from_mac[k] = (uint8_t)b[k];
            } else if (inet_pton(AF_INET, v, &o->from_ip) != 1) {
                fprintf(stderr, "em_forge: --from %s is neither a MAC nor an IPv4 address\n", v);
                return -1;
            }
            o->from_set = 1;
        } else if (!strcmp(a, "--src")) {
            o->src = (unsigned)strtoul(v, NULL, 0);
        } else if (!strcmp(a, "--dst")) {
            o->dst = (unsigned)strtoul(v, NULL, 0);
        } else if (!strcmp(a, "--seconds")) {
            o->seconds = atof(v);
        } else if (!strcmp(a, "--interval-us")) {
            o->interval_us = (unsigned)strtoul(v, NULL, 0);
        } else if (!strcmp(a, "--max-frames")) {
            o->max_frames = strtoul(v, NULL, 0);
        } else {
            fprintf(stderr, "em_forge: unknown option %s\n", a);
            return -1;
        }
    }
    if (o->l2 < 0 || o->cls == C_COUNT || !o->sniff_if || !o->inject_ns || o->seconds <= 0) {
        fprintf(stderr, "em_forge: --mode, --class, --sniff-if and --inject-ns are required\n");
        return -1;
    }
    if ((o->cls == C_EMDFLOOD && !o->shim) ||
        (o->shim && o->cls != C_EMDFLOOD && o->cls != C_SPOOF)) {
        fprintf(stderr, "em_forge: --mode emd takes the classes emdflood and spoof; emdflood "
                        "only goes with --mode emd\n");
        return -1;
    }
    if ((o->cls == C_HSMINT || o->cls == C_HSREBIND) && (o->l2 || !o->from_set)) {
        fprintf(stderr, "em_forge: the handshake classes need --mode udp and --from\n");
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------- sniffing -- */

static int open_sniffer(const char *ifname)
{
    int fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK, htons(ETH_P_ALL));
    if (fd < 0) {
        perror("em_forge: packet socket (root needed)");
        return -1;
    }
    struct sockaddr_ll sll = { .sll_family = AF_PACKET,
                               .sll_protocol = htons(ETH_P_ALL),
                               .sll_ifindex = (int)if_nametoindex(ifname) };
    if (sll.sll_ifindex == 0 || bind(fd, (struct sockaddr *)&sll, sizeof sll) < 0) {
        fprintf(stderr, "em_forge: cannot sniff on %s: %s\n", ifname, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

/* The ethermpi frame inside an Ethernet frame (L2: right after the Ethernet
 * header; UDP: the IPv4/UDP payload), or NULL. */
static const uint8_t *em_frame_of(const uint8_t *f, size_t n, int l2, size_t *em_len,
                                  struct sockaddr_in *dst, struct sockaddr_in *src)
{
    if (n < 14)
        return NULL;
    uint16_t et = (uint16_t)(f[12] << 8 | f[13]);
    if (l2) {
        if (et != EM_ETHERTYPE)
            return NULL;
        *em_len = n - 14;
        return f + 14;
    }
    if (et != ETH_P_IP || n < 14 + sizeof(struct iphdr) + sizeof(struct udphdr))
        return NULL;
    struct iphdr ip;
    memcpy(&ip, f + 14, sizeof ip);
    size_t ihl = (size_t)ip.ihl * 4;
    if (ip.protocol != IPPROTO_UDP || ihl < sizeof ip || n < 14 + ihl + sizeof(struct udphdr))
        return NULL;
    struct udphdr uh;
    memcpy(&uh, f + 14 + ihl, sizeof uh);
    *dst = (struct sockaddr_in){ .sin_family = AF_INET,
                                 .sin_port = uh.dest,
                                 .sin_addr.s_addr = ip.daddr };
    *src = (struct sockaddr_in){ .sin_family = AF_INET,
                                 .sin_port = uh.source,
                                 .sin_addr.s_addr = ip.saddr };
    *em_len = n - 14 - ihl - sizeof uh;
    return f + 14 + ihl + sizeof uh;
}

/* Read every frame queued on the sniffer; keep the latest src -> dst ones. */
static void sniff(int fd, const struct opts *o, struct tmpl *t)
{
    static uint8_t f[FRAME_MAX + 64];
    for (;;) {
        ssize_t n = recv(fd, f, sizeof f, MSG_TRUNC);
        if (n < 0)
            return;
        if ((size_t)n > sizeof f)
            continue;
        size_t em_len = 0;
        struct sockaddr_in dst, src;
        memset(&src, 0, sizeof src);
        const uint8_t *em = em_frame_of(f, (size_t)n, o->l2, &em_len, &dst, &src);
        emd_shim_t sh;
        if (em && o->shim) {
            if (emd_wire_decode(em, em_len, &sh) != EMD_WIRE_OK)
                continue;
            em += EMD_WIRE_HDR_LEN;
            em_len = sh.len;
        }
        em_hdr_t h;
        if (!em || em_hdr_decode(em, em_len, &h) != EM_DEC_OK)
            continue;
        if (!o->l2 && o->from_set && dst.sin_addr.s_addr == o->from_ip.s_addr)
            t->from_rx_port = dst.sin_port; /* the victim's frames to the claimed rank */
        /* the claimed rank's frames: by their source address (--from); else
         * by index, which numbered peers make the sender's rank (the sniffer
         * sees the victim's port, so in a two-rank job index S is S -> D) */
        if (o->from_set ? (o->l2 ? memcmp(f + 6, o->from_mac, 6) != 0
                                 : src.sin_addr.s_addr != o->from_ip.s_addr)
                        : h.index != o->src)
            continue;
        /* the first frame comes before any injection: its sender is the
         * real rank; our own forged frames pass this port too, skip them */
        if (t->locked && (memcmp(f + 6, t->src_mac, 6) != 0 ||
                          src.sin_addr.s_addr != t->src_addr.sin_addr.s_addr ||
                          src.sin_port != t->src_addr.sin_port))
            continue;
        if (!t->locked) {
            memcpy(t->src_mac, f + 6, 6);
            t->src_addr = src;
            t->locked = 1;
        }
        memcpy(t->dst_mac, f, 6);
        if (!o->l2)
            t->dst_addr = dst;
        t->shim_dst = sh.dst;
        t->shim_src = sh.src;
        t->any = h;
        t->have_any = 1;
        if (h.type == EM_PT_DATA || h.type == EM_PT_PUT) {
            t->data = h;
            t->have_data = 1;
        }
        if (h.type == EM_PT_PUT) {
            t->put = h;
            t->have_put = 1;
        }
        /* a one-fragment message on the engine's tag: decoded with the
         * engine's own decoder; a request names a live region of the victim */
        em_rma_msg_t m;
        if (h.type == EM_PT_DATA && h.tag == EM_ENGINE_TAG_RMA && h.frag_cnt == 1 &&
            em_rma_decode(em + EM_HDR_LEN, h.len, &m) == EM_RMA_DEC_OK &&
            (m.kind == EM_RMA_GET_REQ || m.kind == EM_RMA_ATOMIC_REQ)) {
            t->req_region = m.region;
            t->req_key = m.key;
            t->req_off = m.offset;
            t->have_req = 1;
        }
    }
}

/* ------------------------------------------------------------ injecting -- */

struct injector {
    int l2;
    int shim;
    int fd; /* L2: packet socket; UDP: datagram socket */
    int ifindex;
    uint8_t mac[6]; /* the forger node's own MAC */
};

static int open_injector(const struct opts *o, struct injector *in)
{
    int ns = open(o->inject_ns, O_RDONLY | O_CLOEXEC);
    if (ns < 0 || setns(ns, CLONE_NEWNET) < 0) {
        fprintf(stderr, "em_forge: cannot enter %s: %s\n", o->inject_ns, strerror(errno));
        return -1;
    }
    close(ns);
    in->l2 = o->l2;
    in->shim = o->shim;
    in->ifindex = (int)if_nametoindex(o->inject_if);
    if (in->ifindex == 0) {
        fprintf(stderr, "em_forge: no interface %s in %s\n", o->inject_if, o->inject_ns);
        return -1;
    }
    in->fd = o->l2 ? socket(AF_PACKET, SOCK_RAW, htons(EM_ETHERTYPE))
                   : socket(AF_INET, SOCK_DGRAM, 0);
    if (in->fd < 0) {
        perror("em_forge: injecting socket");
        return -1;
    }
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", o->inject_if);
    if (ioctl(in->fd, SIOCGIFHWADDR, &ifr) < 0) {
        perror("em_forge: SIOCGIFHWADDR");
        return -1;
    }
    memcpy(in->mac, ifr.ifr_hwaddr.sa_data, 6);
    return 0;
}

/* Send one ethermpi frame from the forger node.  @p fresh_src: from a new
 * source address (random MAC, or a new UDP socket and so a new port). */
static int inject(struct injector *in, const struct tmpl *t, const uint8_t *em, size_t len,
                  int fresh_src)
{
    if (!in->l2) {
        int fd = in->fd;
        if (fresh_src && (fd = socket(AF_INET, SOCK_DGRAM, 0)) < 0)
            return -1;
        ssize_t r = sendto(fd, em, len, MSG_DONTWAIT, (const struct sockaddr *)&t->dst_addr,
                           sizeof t->dst_addr);
        if (fresh_src)
            close(fd);
        return r == (ssize_t)len ? 0 : -1;
    }
    uint8_t f[FRAME_MAX + 14 + EMD_WIRE_HDR_LEN];
    size_t off = 14 + (in->shim ? EMD_WIRE_HDR_LEN : 0);
    size_t n = off + len;
    memcpy(f, t->dst_mac, 6);
    if (fresh_src) {
        uint64_t r = rnd();
        memcpy(f + 6, &r, 6);
        f[6] = (uint8_t)((f[6] & 0xfc) | 0x02); /* unicast, locally administered */
    } else {
        memcpy(f + 6, in->mac, 6);
    }
    f[12] = EM_ETHERTYPE >> 8;
    f[13] = EM_ETHERTYPE & 0xff;
    if (in->shim) { /* the claimed endpoints, the frame's own source MAC */
        emd_shim_t sh = {
            .cls = EMD_CLS_DATA, .len = (uint16_t)len, .dst = t->shim_dst, .src = t->shim_src
        };
        memcpy(sh.src_mac, f + 6, 6);
        emd_wire_encode(f + 14, &sh);
    }
    memcpy(f + off, em, len);
    if (n < 60) {
        memset(f + n, 0, 60 - n);
        n = 60;
    }
    struct sockaddr_ll sll = { .sll_family = AF_PACKET,
                               .sll_ifindex = in->ifindex,
                               .sll_halen = 6 };
    memcpy(sll.sll_addr, t->dst_mac, 6);
    ssize_t r = sendto(in->fd, f, n, MSG_DONTWAIT, (struct sockaddr *)&sll, sizeof sll);
    return r == (ssize_t)n ? 0 : -1;
}

/* ------------------------------------------------------------- forging -- */

/* A one-fragment DATA frame from the template: claimed source, victim, the
 * right key, sequence number base + k - SPRAY_BEHIND. */
static em_hdr_t data_frame(const struct tmpl *t, unsigned k, uint8_t tag, uint16_t len)
{
    em_hdr_t h = t->data; /* the key and every field we do not set */
    h.type = EM_PT_DATA;
    h.flags = 0;
    h.tag = tag;
    h.len = len;
    h.seq = t->data.seq + k - SPRAY_BEHIND;
    h.ack = t->any.ack;
    h.sack = 0;
    h.msg_id = t->data.msg_id + 1 + k;
    h.msg_len = len;
    h.frag_no = 0;
    h.frag_cnt = 1;
    return h;
}

/* Far past the end of any region the job registers (windows and receive
 * buffers of at most a few MiB), and an offset where any length wraps. */
#define OFF_OUT  (1ull << 40)
#define OFF_WRAP (UINT64_MAX - 7)

/* Request @p k of class rmareq into @p body (a GET or ATOMIC request as
 * the engine encodes it, em_rma_encode_req), aimed at the sniffed region;
 * its length.  No variant is a request the engine may serve: each has a
 * wrong key, a region that is not the sniffed one, an offset out of
 * bounds or misaligned, or a length beyond what one answer carries. */
static size_t forge_rma_req(const struct tmpl *t, unsigned k, uint8_t *body)
{
    uint64_t wrong = t->req_key ^ (rnd() | 1), ops[EM_ATOMIC_COUNT_MAX], cmp[EM_ATOMIC_COUNT_MAX];
    for (unsigned i = 0; i < EM_ATOMIC_COUNT_MAX; i++) {
        ops[i] = rnd();
        cmp[i] = rnd();
    }
    em_atomic_desc_t add = { .op = EM_AOP_SUM, .type = EM_ATYPE_INT64, .count = 1, .operand = ops };
    em_atomic_desc_t cas = {
        .op = EM_AOP_CSWAP, .type = EM_ATYPE_UINT64, .count = 1, .operand = ops, .compare = cmp
    };
    em_atomic_desc_t swap = {
        .op = EM_AOP_WRITE, .type = EM_ATYPE_UINT64, .count = EM_ATOMIC_COUNT_MAX, .operand = ops
    };
    uint32_t id = (uint32_t)rnd(), r = t->req_region;
    uint64_t key = t->req_key, aligned = t->req_off & ~7ull;
    switch (k % 8) {
    case 0: /* a read of the live region with a wrong key */
        return em_rma_encode_req(body, id, r, wrong, t->req_off, NULL, false, 64);
    case 1: /* the right key, out of bounds */
        return em_rma_encode_req(body, id, r, key, OFF_OUT, NULL, false, 64);
    case 2: /* the right key, a huge length (4 GiB - 1) */
        return em_rma_encode_req(body, id, r, key, 0, NULL, false, UINT32_MAX);
    case 3: /* the neighbour region id, a random key */
        return em_rma_encode_req(body, id, r + 1, rnd(), 0, NULL, false, 4096);
    case 4: /* a fetch-and-add with a wrong key */
        return em_rma_encode_req(body, id, r, wrong, aligned, &add, true, 0);
    case 5: /* a compare-and-swap whose offset wraps */
        return em_rma_encode_req(body, id, r, key, OFF_WRAP, &cas, true, 0);
    case 6: /* 64 swaps (512 bytes) out of bounds */
        return em_rma_encode_req(body, id, r, key, OFF_OUT, &swap, true, 0);
    default: /* the right key, a misaligned 8-byte element */
        return em_rma_encode_req(body, id, r, key, aligned | 3, &add, false, 0);
    }
}

/* PUT frame @p k of class rmaput, from the latest real PUT header: the
 * sniffed region with a wrong key, the right key out of bounds or at an
 * offset that wraps, or the neighbour region. */
static em_hdr_t forge_put(const struct tmpl *t, unsigned k, uint16_t len)
{
    em_hdr_t h = t->put;
    h.flags = 0;
    h.len = len;
    h.seq = t->put.seq + k - SPRAY_BEHIND;
    h.ack = t->any.ack;
    h.sack = 0;
    h.msg_id = t->put.msg_id + 1 + k;
    h.msg_len = len;
    h.frag_no = 0;
    h.frag_cnt = 1;
    switch (k % 4) {
    case 0: h.key ^= rnd() | 1; break;
    case 1: h.offset = OFF_OUT; break;
    case 2: h.offset = OFF_WRAP; break; /* the decoder's overflow check */
    default:
        h.region++;
        h.key = rnd();
        h.offset = 0;
        break;
    }
    return h;
}

/* Build forged frame number @p k of a round into @p out; its length. */
static size_t forge(enum cls c, const struct tmpl *t, unsigned k, uint8_t *out)
{
    uint8_t body[1088]; /* the longest RMA request: 32 + 2 x 64 x 8 bytes */
    _Static_assert(sizeof body >= EM_RMA_REQ_LEN + 2 * EM_ATOMIC_COUNT_MAX * 8, "body");
    uint16_t blen = 256;
    for (size_t i = 0; i < sizeof body; i += 8) {
        uint64_t r = rnd();
        memcpy(body + i, &r, 8);
    }
    struct ob1_match_hdr mh = { .type = OB1_TAG_MATCH,
                                .ctx = 0,
                                .src = (int32_t)t->data.index, /* the claimed rank */
                                .tag = USER_TAG,
                                .seq = (uint16_t)rnd() };
    memcpy(body, &mh, sizeof mh);
    em_hdr_t h;
    switch (c) {
    case C_BADKEY: /* a stranger's guess: any key but the job's */
        h = data_frame(t, k, OB1_TAG_MATCH, blen);
        h.job_key ^= (__typeof__(h.job_key))(rnd() | 1);
        break;
    case C_SPOOF:
    case C_FLOOD: /* right key, claimed rank, forger's address(es) */
        h = data_frame(t, k, OB1_TAG_MATCH, blen);
        break;
    case C_TAG255: /* one past Open MPI's active-message table */
        h = data_frame(t, k, 255, blen);
        break;
    case C_FIN: { /* ob1 FIN whose fragment pointer is garbage */
        struct ob1_fin_hdr fh = { .type = OB1_TAG_FIN,
                                  .size = 320 * 1024,
                                  .frag = 0x0000414141414140ull + (k << 4) };
        memcpy(body, &fh, sizeof fh);
        blen = sizeof fh;
        h = data_frame(t, k, OB1_TAG_FIN, blen);
        break;
    }
    case C_RMAREQ: /* a GET or ATOMIC request on the engine's tag */
        blen = (uint16_t)forge_rma_req(t, k, body);
        h = data_frame(t, k, EM_ENGINE_TAG_RMA, blen);
        break;
    case C_RMAPUT: /* into a live region, refused by key, bounds or id */
        h = forge_put(t, k, blen);
        break;
    case C_EMDFLOOD: /* the real flow, already delivered: the daemon ACKs it */
        h = data_frame(t, k, OB1_TAG_MATCH, blen);
        h.seq = t->data.seq - 1 - (k % 16);
        h.msg_id = t->data.msg_id;
        break;
    case C_HUGE: /* first of 65535 fragments: ~65535 x 1 KiB claimed */
        blen = 1024;
        h = data_frame(t, k, OB1_TAG_MATCH, blen);
        h.frag_cnt = 65535;
        h.msg_len = 65535u * blen;
        break;
    case C_ACK: /* ACK, SACK (all ones) and NACK around the real ACK */
    default:
        h = t->any;
        h.type = (k % 3 == 2) ? EM_PT_NACK : EM_PT_ACK;
        h.flags = (k % 3 == 1) ? EM_F_SACK : 0;
        h.sack = (k % 3 == 1) ? ~0ull : 0;
        h.ack = t->any.ack + k - SPRAY_BEHIND;
        h.seq = t->have_data ? t->data.seq : t->any.seq;
        h.tag = 0;
        h.len = 0;
        h.msg_id = 0;
        h.msg_len = 0;
        h.frag_no = 0;
        h.frag_cnt = 0;
        blen = 0;
        break;
    }
    h.index = t->data.index; /* the victim's index for the claimed rank */
    size_t hl = em_hdr_encode(&h, out);
    memcpy(out + hl, body, blen);
    return hl + blen;
}

/* The one-sided classes aim at a region the job uses: wait (5 s at most)
 * for a real request (rmareq) or PUT frame (rmaput) that names one.  -1
 * when none came: the job keeps no one-sided traffic. */
static int wait_region(int sfd, const struct opts *o, struct tmpl *t)
{
    if (o->cls != C_RMAREQ && o->cls != C_RMAPUT)
        return 0;
    double t0 = now_s();
    while (!(o->cls == C_RMAREQ ? t->have_req : t->have_put)) {
        sniff(sfd, o, t);
        if (now_s() - t0 > 5.0) {
            fprintf(stderr,
                    "em_forge: class %s: no %s from rank %u to rank %u seen on %s in 5 s "
                    "(does the job keep one-sided traffic? attack_job's argument 'rma')\n",
                    cls_names[o->cls],
                    o->cls == C_RMAREQ ? "GET/ATOMIC request (tag 255)" : "PUT frame", o->src,
                    o->dst, o->sniff_if);
            return -1;
        }
        usleep(1000);
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct opts o;
    if (parse_args(argc, argv, &o) < 0) {
        usage(stderr);
        return 2;
    }
    uint64_t seed = 0;
    if (getrandom(&seed, sizeof seed, 0) != sizeof seed || !seed)
        seed = EM_LOSS_SEED_DEFAULT ^ (uint64_t)getpid();
    em_loss_init(&rng, 0, seed);
    int sfd = open_sniffer(o.sniff_if); /* in the current (switch) namespace */
    struct injector in;
    if (sfd < 0 || open_injector(&o, &in) < 0)
        return 1;
    struct tmpl t;
    memset(&t, 0, sizeof t);
    double t0 = now_s();
    while (!(t.have_data && t.have_any)) { /* one real frame of the job */
        sniff(sfd, &o, &t);
        if (now_s() - t0 > 5.0) {
            fprintf(stderr,
                    "em_forge: no frame from rank %u to rank %u seen on %s in 5 s "
                    "(is the job running on that link?)\n",
                    o.src, o.dst, o.sniff_if);
            return 3;
        }
        usleep(1000);
    }
    if (wait_region(sfd, &o, &t) < 0)
        return 3;
    int hs = o.cls == C_HSMINT || o.cls == C_HSREBIND;
    forge_hs_t fh = { .victim = t.dst_addr, .rnd = rnd };
    memcpy(fh.claimed, &t.src_addr.sin_addr.s_addr, 4);
    memcpy(fh.claimed + 4, t.from_rx_port ? &t.from_rx_port : &t.src_addr.sin_port, 2);
    memcpy(fh.claimed + 6, &t.src_addr.sin_port, 2);
    if (hs && (forge_hs_bind(&fh, in.fd, o.inject_if) < 0 || forge_hs_learn(&fh, 3.0) < 0))
        return 3;
    unsigned long sent = 0, failed = 0, rounds = 0;
    uint8_t frame[FRAME_MAX];
    t0 = now_s();
    while (now_s() - t0 < o.seconds && sent < o.max_frames) {
        sniff(sfd, &o, &t); /* stay near the real numbers */
        for (unsigned k = 0; k < SPRAY && sent < o.max_frames; k++) {
            size_t n = hs ? forge_hs_frame(&fh, o.cls == C_HSREBIND, k, frame)
                          : forge(o.cls, &t, k, frame);
            if (inject(&in, &t, frame, n, o.cls == C_FLOOD || o.cls == C_EMDFLOOD) == 0)
                sent++;
            else
                failed++;
        }
        rounds++;
        usleep(o.interval_us);
    }
    printf("em_forge: class %s: %lu frames sent in %lu rounds (%lu refused by the socket; "
           "last real seq %lu, ack %lu, key 0x%llx",
           cls_names[o.cls], sent, rounds, failed, (unsigned long)t.data.seq,
           (unsigned long)t.any.ack, (unsigned long long)t.data.job_key);
    if (o.cls == C_RMAREQ)
        printf("; region %u, key 0x%llx", t.req_region, (unsigned long long)t.req_key);
    if (o.cls == C_RMAPUT)
        printf("; region %u, key 0x%llx", t.put.region, (unsigned long long)t.put.key);
    printf(")\n");
    return sent ? 0 : 1;
}
