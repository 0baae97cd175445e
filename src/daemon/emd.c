/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file emd.c
 * `emd`, the per-node polling daemon (seed 000 §4.1-4.2; docs/daemon.md).
 *
 * One process per node owns the port (a DPDK primary, through link_dpdk) and
 * carries the frames of every MPI process on the node: it polls the port
 * and hands each received frame to its destination's rx ring (demultiplexed
 * on the endpoint id in the 8-byte emd shim header), and it drains the
 * processes' tx rings onto the port.  Processes attach over a unix socket
 * (daemon/emd_shm.h); a closed socket detaches them, so a killed process's
 * rings are reclaimed at once.
 *
 * Eager ACKs (seed 000: the daemon acknowledges eager traffic, so a
 * sender's window keeps moving while the receiving process computes): for
 * each (job, source, destination) flow of a client the daemon tracks the
 * next sequence number it expects (the protocol's ISN is 0 in every job,
 * and a flow lives no longer than its client's attachment); a sequenced
 * frame that is next in order and fits the client's rx ring advances it,
 * and after each port burst one standalone ACK per advanced flow goes back.
 * The process's own protocol acknowledges again later (the sender ignores
 * ACKs behind its window).  Safe because a frame is acknowledged only once
 * it is in the ring, which the client never drops (it refuses its own
 * loss injection when the daemon acknowledges; the daemon's --rx-loss
 * drops before the decision).  Off with --no-ack.
 *
 * Own queues (seed 000: rendezvous data on the MPI process's own queue;
 * daemon/emd_shm.h): on the memif wire, with hugepages, the daemon is a
 * DPDK primary with a file prefix (not --in-memory) and 1 + S*S queue
 * pairs; it hands each attaching process a slot (the lowest free one, up to
 * S = --rdv-slots), whose queues that process then drives itself as a DPDK
 * secondary: put frames never pass here.  When a slot's process detaches,
 * the slot's mbuf pools are reset (it may have died holding mbufs).  The
 * daemon still sees the process's own ACKs going out and moves its eager
 * flow state up to them (the puts it never saw took sequence numbers).
 *
 * Idle policy: spin while there is work and for --spin-us after it; then
 * sleep in ppoll() with a doubling timeout (up to --max-sleep-us), woken
 * early by a client's WAKE message.  The port cannot wake us, so a frame
 * arriving after a quiet spell waits up to max-sleep-us.
 *
 * Single-threaded.  Usage: emd --help.
 */
#include "daemon/emd_shm.h"
#include "link/link_dpdk.h"
#include "link/link_util.h"
#include "proto/wire.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define BURST 32
#define MAX_CLIENTS_LIMIT 1024
#define MAX_NODES 256

#define MAX_FLOWS 64
#define MAX_PENDING 16                 /* connections waiting for their ATTACH_REQ */
#define PENDING_NS 1000000000ull

/** A sender -> this client stream, as the daemon acknowledges it. */
struct flow {
    uint32_t job_key;
    uint16_t src, dst;            /* protocol endpoints (MPI vpids) */
    uint32_t rcv_nxt;             /* next sequence number expected */
    uint16_t src_ep;              /* where the ACK goes */
    uint8_t src_mac[6];
    uint8_t used, ack_owed;
};

struct client {
    int fd;                       /* -1: free */
    struct emd_shm_hdr *h;
    uint64_t size;
    uint16_t ep;
    uint32_t pid;
    uint32_t rx_tail;             /* our copy (we are the only rx producer) */
    uint32_t tx_head;             /* our copy (we are the only tx consumer) */
    int rx_dirty;
    struct flow *flows;           /* MAX_FLOWS, with --ack */
    unsigned nflows;
    uint16_t slot;                /* own-queue slot, or EMD_RDV_NO_SLOT */
};

static struct {
    const char *socket_path;
    char lock_path[300];
    int listen_fd, lock_fd;
    em_link_t *link;
    uint8_t mac[6];
    uint32_t mtu;                 /* client frame size = link MTU - shim */
    uint32_t rx_size, tx_slots;
    uint32_t max_clients;
    uint64_t spin_ns, max_sleep_ns;
    uint64_t instance;
    struct client *cl;
    uint16_t *ep2cl;              /* endpoint -> client index + 1 */
    uint16_t next_ep;
    uint8_t nodes[MAX_NODES][6];  /* peer table of the link: MACs seen as destinations */
    unsigned nnodes;
    struct pollfd *pfd;
    struct { int fd; uint64_t since; } pending[MAX_PENDING];
    int verbose;
    int ack;                      /* send eager ACKs on the clients' behalf */
    int yield;                    /* sched_yield() when a spin round found nothing */
    int tx_blocked;               /* this round, the port refused frames (or no mbuf) */
    double loss;                  /* testing: drop this fraction of port frames */
    uint64_t rng;
    char loss_path[300];          /* re-read on SIGHUP */
    /* own queues (rdv_slots 0: none, rdv_why says why) */
    uint16_t rdv_slots;
    uint8_t slot_used[EMD_RDV_SLOTS_MAX];
    char rdv_prefix[EMD_RDV_NAME_LEN], rdv_port[EMD_RDV_NAME_LEN], rdv_why[EMD_RDV_WHY_LEN];
    /* node totals */
    uint64_t rx_frames, rx_bad, rx_no_ep, tx_frames, local, attaches, detaches, loss_drops, acks;
    uint64_t put_frames, put_bytes, ack_resyncs;  /* puts the daemon carried; flows moved by the client's ACKs */
    uint64_t notes;               /* copies of ACKs the clients sent on their own queues */
    /* memif: the other end's queue layout (hello) */
    int hello;                    /* 1: check it (memif wire) */
    int peer_seen;                /* a hello or reply arrived */
    uint16_t peer_slots, peer_queues;
    int mismatch_logged;
} D;

static volatile sig_atomic_t stop_flag, dump_flag, hup_flag;
static void on_stop(int sig) { (void)sig; stop_flag = 1; }
static void on_usr1(int sig) { (void)sig; dump_flag = 1; }
static void on_hup(int sig) { (void)sig; hup_flag = 1; }

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...)
{
    char ts[32];
    time_t t = time(NULL);
    struct tm tm;
    strftime(ts, sizeof ts, "%H:%M:%S", localtime_r(&t, &tm));
    fprintf(stderr, "emd[%ld] %s: ", (long)getpid(), ts);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
}

/* ---------------------------------------------------------- clients -- */

static void detach(unsigned i, const char *why)
{
    struct client *c = &D.cl[i];
    if (c->fd < 0)
        return;
    if (D.verbose)
        logf_("endpoint %u (pid %u) detached: %s; rx %llu delivered, %llu dropped (ring full)",
              c->ep, c->pid, why,
              (unsigned long long)atomic_load(&c->h->st.rx_delivered),
              (unsigned long long)atomic_load(&c->h->st.rx_ring_full));
    D.ep2cl[c->ep] = 0;
    if (c->slot != EMD_RDV_NO_SLOT) {
        /* the slot's next owner starts with every mbuf free, whatever
         * this one held when it died */
        if (em_link_dpdk_rdv_reset(D.link, c->slot) != 0)
            logf_("warning: could not reset the pools of own-queue slot %u", c->slot);
        D.slot_used[c->slot] = 0;
        c->slot = EMD_RDV_NO_SLOT;
    }
    free(c->flows);
    c->flows = NULL;
    c->nflows = 0;
    munmap(c->h, c->size);
    close(c->fd);
    c->fd = -1;
    c->h = NULL;
    D.detaches++;
}

static void send_err(int fd, int status, const char *text)
{
    struct emd_ctl_msg m;
    emd_ctl_init(&m, EMD_CTL_ATTACH_ERR);
    m.status = (uint32_t)status;
    snprintf(m.text, sizeof m.text, "%s", text);
    (void)send(fd, &m, sizeof m, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/** A new connection: read ATTACH_REQ, make the region, answer with it. */
static void accept_client(int fd);

/** A connection whose ATTACH_REQ has not arrived yet (never waited for:
 *  the data path must not stand still for a silent connection). */
static void accept_pending(uint64_t now)
{
    int fd = accept4(D.listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0)
        return;
    struct pollfd p = { .fd = fd, .events = POLLIN };
    if (poll(&p, 1, 0) > 0) {          /* the request is usually there already */
        accept_client(fd);
        return;
    }
    for (unsigned i = 0; i < MAX_PENDING; i++)
        if (D.pending[i].fd < 0) {
            D.pending[i].fd = fd;
            D.pending[i].since = now;
            return;
        }
    send_err(fd, EBUSY, "too many attaching");
    close(fd);
}

/** Pending connection @p fd is readable: its ATTACH_REQ, or garbage. */
static void accept_client(int fd)
{
    uint8_t buf[sizeof(struct emd_ctl_msg) + 1];
    struct emd_ctl_msg m = { 0 };
    const char *why = "connection closed before a request";
    ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n <= 0 || emd_ctl_check(buf, (size_t)n, &m, &why) != 0 || m.type != EMD_CTL_ATTACH_REQ) {
        if (n > 0 && m.magic == EMD_CTL_MAGIC && m.type != EMD_CTL_ATTACH_REQ)
            why = "expected ATTACH_REQ";
        logf_("refused a client: %s", why);
        send_err(fd, EPROTO, "bad attach request");
        close(fd);
        return;
    }
    unsigned i;
    for (i = 0; i < D.max_clients && D.cl[i].fd >= 0; i++)
        ;
    if (i == D.max_clients) {
        logf_("refused pid %u: all %u client slots in use", m.pid, D.max_clients);
        send_err(fd, EBUSY, "too many clients");
        close(fd);
        return;
    }
    /* endpoint ids rotate through 1..65535 so that a reused id is rare:
     * a late frame for a dead process seldom reaches its successor (and
     * when it does, the protocol's job key and sequence checks drop it) */
    uint16_t ep = D.next_ep;
    for (unsigned tries = 0; D.ep2cl[ep] || ep == 0 || ep == EMD_EP_CONTROL; tries++) {
        ep++;
        if (tries > 70000) {
            send_err(fd, EBUSY, "no free endpoint");
            close(fd);
            return;
        }
    }
    D.next_ep = (uint16_t)(ep + 1);
    uint32_t ss;
    uint64_t size = emd_shm_size(D.mtu, D.rx_size, D.tx_slots, &ss);
    char name[32];
    snprintf(name, sizeof name, "emd-ep%u", ep);
    int mfd = memfd_create(name, MFD_CLOEXEC);
    void *mem = MAP_FAILED;
    if (mfd >= 0 && ftruncate(mfd, (off_t)size) == 0)
        mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
    if (mem == MAP_FAILED) {
        int e = errno;
        logf_("cannot make a %llu-byte region for pid %u: %s", (unsigned long long)size, m.pid, strerror(e));
        send_err(fd, e, "no memory for the rings");
        if (mfd >= 0)
            close(mfd);
        close(fd);
        return;
    }
    struct emd_shm_hdr *h = mem;
    emd_shm_init(h, size, D.mtu, D.rx_size, D.tx_slots, D.instance, ep, D.mac);
    if (D.ack)
        h->flags |= EMD_SHM_F_DAEMON_ACKS;
    atomic_store(&h->rx_loss_ppm, (uint32_t)(D.loss * 1e6));
    uint16_t slot = EMD_RDV_NO_SLOT;
    if (D.rdv_slots) {
        h->rdv.slots = D.rdv_slots;
        h->rdv.queues = (uint16_t)(1u + (unsigned)D.rdv_slots * D.rdv_slots);
        memcpy(h->rdv.prefix, D.rdv_prefix, sizeof h->rdv.prefix);
        memcpy(h->rdv.port, D.rdv_port, sizeof h->rdv.port);
        for (uint16_t k = 0; k < D.rdv_slots; k++)
            if (!D.slot_used[k]) {
                slot = k;
                break;
            }
        memset(h->rdv.why, 0, sizeof h->rdv.why);
        if (slot == EMD_RDV_NO_SLOT)
            snprintf(h->rdv.why, sizeof h->rdv.why, "all %u slots in use (emd --rdv-slots)", D.rdv_slots);
    } else {
        memset(h->rdv.why, 0, sizeof h->rdv.why);
        snprintf(h->rdv.why, sizeof h->rdv.why, "%s", D.rdv_why);
    }
    h->rdv.slot = slot;
    atomic_store(&h->heartbeat_ns, now_ns());

    struct emd_ctl_msg ok;
    emd_ctl_init(&ok, EMD_CTL_ATTACH_OK);
    ok.instance = D.instance;
    ok.shm_size = size;
    ok.endpoint = ep;
    union { struct cmsghdr c; char b[CMSG_SPACE(sizeof(int))]; } ctl;
    memset(&ctl, 0, sizeof ctl);
    struct iovec iov = { .iov_base = &ok, .iov_len = sizeof ok };
    struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b,
                         .msg_controllen = sizeof ctl.b };
    struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cm), &mfd, sizeof(int));
    ssize_t s = sendmsg(fd, &mh, MSG_NOSIGNAL);
    close(mfd);                    /* the mapping keeps the memory */
    if (s != (ssize_t)sizeof ok) {
        logf_("attach of pid %u failed while answering: %s", m.pid, strerror(errno));
        munmap(mem, size);
        close(fd);
        return;
    }
    struct client *c = &D.cl[i];
    *c = (struct client){ .fd = fd, .h = h, .size = size, .ep = ep, .pid = m.pid, .slot = slot };
    if (slot != EMD_RDV_NO_SLOT)
        D.slot_used[slot] = 1;
    if (D.ack)
        c->flows = calloc(MAX_FLOWS, sizeof *c->flows);   /* NULL: no ACKs for this one */
    D.ep2cl[ep] = (uint16_t)(i + 1);
    D.attaches++;
    if (D.verbose)
        logf_("pid %u attached as endpoint %u (%llu-byte region), own-queue slot %d", m.pid, ep,
              (unsigned long long)size, slot == EMD_RDV_NO_SLOT ? -1 : (int)slot);
}

/** Control traffic: new clients, WAKEs, hang-ups.  @p timeout_ns 0: just look. */
static void poll_control(uint64_t timeout_ns)
{
    nfds_t n = 0;
    D.pfd[n++] = (struct pollfd){ .fd = D.listen_fd, .events = POLLIN };
    for (unsigned i = 0; i < D.max_clients; i++)
        D.pfd[n++] = (struct pollfd){ .fd = D.cl[i].fd, .events = POLLIN };  /* fd -1: ignored */
    for (unsigned i = 0; i < MAX_PENDING; i++)
        D.pfd[n++] = (struct pollfd){ .fd = D.pending[i].fd, .events = POLLIN };
    struct timespec ts = { .tv_sec = (time_t)(timeout_ns / 1000000000ull),
                           .tv_nsec = (long)(timeout_ns % 1000000000ull) };
    int r = ppoll(D.pfd, n, &ts, NULL);
    uint64_t now = now_ns();
    for (unsigned i = 0; i < MAX_PENDING; i++) {
        int fd = D.pending[i].fd;
        if (fd < 0)
            continue;
        if (r > 0 && D.pfd[1 + D.max_clients + i].revents) {
            D.pending[i].fd = -1;
            accept_client(fd);
        } else if (now - D.pending[i].since > PENDING_NS) {
            D.pending[i].fd = -1;
            logf_("refused a client: no attach request within %llu ms",
                  (unsigned long long)(PENDING_NS / 1000000u));
            close(fd);
        }
    }
    if (r <= 0)
        return;
    for (unsigned i = 0; i < D.max_clients; i++) {
        short re = D.pfd[i + 1].revents;
        if (D.cl[i].fd < 0 || !re)
            continue;
        if (re & POLLIN) {
            /* WAKE messages (their only job was to end the sleep), or EOF */
            struct emd_ctl_msg m;
            ssize_t k;
            while ((k = recv(D.cl[i].fd, &m, sizeof m, MSG_DONTWAIT)) > 0)
                ;
            if (k == 0) {
                detach(i, "socket closed (process exited or was killed)");
                continue;
            }
        }
        if (re & (POLLHUP | POLLERR | POLLNVAL))
            detach(i, "socket hang-up (process exited or was killed)");
    }
    if (D.pfd[0].revents & POLLIN)
        accept_pending(now);
}

/* ------------------------------------------------------------- data -- */

static int node_index(const uint8_t mac[6]);

static struct client *client_of(uint16_t ep)
{
    uint16_t i = D.ep2cl[ep];
    return i ? &D.cl[i - 1] : NULL;
}

/** Copy one frame into @p c's rx ring; 0 or -1 (ring full). */
static int deliver(struct client *c, const uint8_t *data, uint16_t len, uint16_t src_ep, const uint8_t *src_mac)
{
    struct emd_shm_hdr *h = c->h;
    uint32_t head = atomic_load_explicit(&h->rx.head, memory_order_acquire);
    uint32_t used = c->rx_tail - head;
    uint32_t need = emd_rec_size(len);
    uint32_t to_end = h->rx_size - (c->rx_tail & (h->rx_size - 1));
    uint32_t pad = need > to_end ? to_end : 0;       /* the record starts over at 0 */
    /* (a head the client corrupted makes used > rx_size: nothing fits) */
    if (used > h->rx_size || h->rx_size - used < pad + need) {
        atomic_fetch_add_explicit(&h->st.rx_ring_full, 1, memory_order_relaxed);
        return -1;
    }
    if (pad) {
        struct emd_slot_hdr w = { .len = EMD_REC_WRAP };
        memcpy(emd_rx_at(h, c->rx_tail), &w, sizeof w);
        c->rx_tail += pad;
    }
    uint8_t *s = emd_rx_at(h, c->rx_tail);
    struct emd_slot_hdr sh = { .len = len, .endpoint = src_ep };
    if (src_mac)
        memcpy(sh.mac, src_mac, 6);
    memcpy(s, &sh, sizeof sh);
    memcpy(s + sizeof sh, data, len);
    c->rx_tail += need;
    c->rx_dirty = 1;
    atomic_fetch_add_explicit(&h->st.rx_delivered, 1, memory_order_relaxed);
    return 0;
}

static void publish_rx(void)
{
    for (unsigned i = 0; i < D.max_clients; i++) {
        struct client *c = &D.cl[i];
        if (c->fd >= 0 && c->rx_dirty) {
            atomic_store_explicit(&c->h->rx.tail, c->rx_tail, memory_order_release);
            c->rx_dirty = 0;
        }
    }
}

static uint64_t rnd(void)
{
    D.rng ^= D.rng << 13;
    D.rng ^= D.rng >> 7;
    D.rng ^= D.rng << 17;
    return D.rng;
}

static struct flow *flow_of(struct client *c, const em_hdr_t *h)
{
    for (unsigned i = 0; i < c->nflows; i++) {
        struct flow *f = &c->flows[i];
        if (f->job_key == h->job_key && f->src == h->src && f->dst == h->dst)
            return f;
    }
    if (c->nflows == MAX_FLOWS)
        return NULL;                 /* the process's own ACKs carry the rest */
    struct flow *f = &c->flows[c->nflows++];
    *f = (struct flow){ .job_key = h->job_key, .src = h->src, .dst = h->dst, .used = 1 };
    return f;                        /* rcv_nxt = 0: the protocol's ISN */
}

/**
 * Deliver a frame to @p c, acknowledging it when it is the next in its flow.
 * @return 1 if the frame went into the ring.
 */
static int deliver_acked(struct client *c, const uint8_t *data, uint16_t len, uint16_t src_ep,
                         const uint8_t src_mac[6])
{
    em_hdr_t h;
    struct flow *f = NULL;
    if (c->flows && em_hdr_decode(data, len, &h) == EM_DEC_OK &&
        (h.type == EM_PT_DATA || h.type == EM_PT_PUT))
        f = flow_of(c, &h);
    if (!f)
        return deliver(c, data, len, src_ep, src_mac) == 0;
    int32_t d = (int32_t)(h.seq - f->rcv_nxt);
    f->src_ep = src_ep;
    memcpy(f->src_mac, src_mac, 6);
    if (d < 0) {
        /* acknowledged before, so it is in the ring already (or was
         * consumed): the sender missed our ACK, say it again */
        atomic_fetch_add_explicit(&c->h->st.rx_dups, 1, memory_order_relaxed);
        f->ack_owed = 1;
        return 0;
    }
    if (deliver(c, data, len, src_ep, src_mac) != 0)
        return 0;                    /* ring full: no ACK, the sender retransmits */
    if (d == 0) {
        f->rcv_nxt++;
        f->ack_owed = 1;
    }
    return 1;
}

/** One standalone ACK per flow that advanced in this burst. */
static void send_acks(void)
{
    em_pkt_t *batch[BURST];
    unsigned nb = 0;
    for (unsigned i = 0; i < D.max_clients; i++) {
        struct client *c = &D.cl[i];
        if (c->fd < 0 || !c->flows)
            continue;
        for (unsigned k = 0; k < c->nflows; k++) {
            struct flow *f = &c->flows[k];
            if (!f->ack_owed)
                continue;
            int ni = node_index(f->src_mac);
            em_pkt_t *p = ni >= 0 ? em_link_tx_alloc(D.link) : NULL;
            if (!p)
                continue;            /* try again after the next burst */
            em_hdr_t a = { .type = EM_PT_ACK, .job_key = f->job_key, .src = f->dst, .dst = f->src,
                           .ack = f->rcv_nxt };
            emd_wire_encode(p->data, EM_HDR_LEN, f->src_ep, c->ep, D.mac);
            p->len = EMD_WIRE_HDR_LEN + (uint32_t)em_hdr_encode(&a, p->data + EMD_WIRE_HDR_LEN);
            p->peer = (uint16_t)ni;
            f->ack_owed = 0;
            atomic_fetch_add_explicit(&c->h->st.acks_sent, 1, memory_order_relaxed);
            batch[nb++] = p;
            if (nb == BURST) {
                unsigned sent = em_link_tx_burst(D.link, batch, nb);
                for (unsigned j = sent; j < nb; j++)
                    em_link_tx_free(D.link, batch[j]);   /* a later ACK covers it */
                D.acks += sent;
                nb = 0;
            }
        }
    }
    if (nb) {
        unsigned sent = em_link_tx_burst(D.link, batch, nb);
        for (unsigned j = sent; j < nb; j++)
            em_link_tx_free(D.link, batch[j]);
        D.acks += sent;
    }
}

/** A put frame carried by the daemon (its own queue would have spared us). */
static void count_put(struct client *c, const uint8_t *f, uint32_t len)
{
    if (len >= EM_HDR_LEN && f[0] == EM_WIRE_MAGIC && f[2] == EM_PT_PUT) {
        D.put_frames++;
        D.put_bytes += len;
        atomic_fetch_add_explicit(&c->h->st.put_frames, 1, memory_order_relaxed);
    }
}

/**
 * A frame the client sends carries its protocol's cumulative ACK for the
 * reverse flow: everything below it has reached the process, whichever way
 * (frames on its own queue never pass here).  Move that flow's eager-ACK
 * state up to it, else the daemon would wait forever for sequence numbers
 * it never sees.  (A client that lies only hurts its own flows.)
 */
static void resync_flow(struct client *c, const uint8_t *f, uint32_t len)
{
    em_hdr_t h;
    if (!c->flows || em_hdr_decode(f, len, &h) != EM_DEC_OK)
        return;
    for (unsigned i = 0; i < c->nflows; i++) {
        struct flow *fl = &c->flows[i];
        if (fl->job_key == h.job_key && fl->src == h.dst && fl->dst == h.src) {
            int32_t ahead = (int32_t)(h.ack - fl->rcv_nxt);
            if (ahead > 0 && ahead < (1 << 24)) {
                fl->rcv_nxt = h.ack;
                D.ack_resyncs++;
            }
            return;
        }
    }
}

static uint16_t our_queues(void)
{
    return (uint16_t)(D.rdv_slots ? 1u + (unsigned)D.rdv_slots * D.rdv_slots : 1u);
}

/** A hello (or its reply) to every node on the wire: our queue layout. */
static void send_hello(uint8_t kind)
{
    static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
    int ni = node_index(bcast);
    em_pkt_t *p = ni >= 0 ? em_link_tx_alloc(D.link) : NULL;
    if (!p)
        return;
    emd_wire_encode(p->data, (uint16_t)sizeof(struct emd_hello), EMD_EP_CONTROL, 0, D.mac);
    emd_hello_encode(p->data + EMD_WIRE_HDR_LEN, kind, D.rdv_slots, our_queues());
    p->len = EMD_WIRE_HDR_LEN + (uint32_t)sizeof(struct emd_hello);
    p->peer = (uint16_t)ni;
    if (em_link_tx_burst(D.link, &p, 1) != 1)
        em_link_tx_free(D.link, p);
}

static void handle_hello(const uint8_t *f, uint16_t len)
{
    uint8_t kind;
    uint16_t slots, queues;
    if (emd_hello_decode(f, len, &kind, &slots, &queues) != 0) {
        D.rx_bad++;
        return;
    }
    D.peer_seen = 1;
    D.peer_slots = slots;
    D.peer_queues = queues;
    if (queues != our_queues() && !D.mismatch_logged) {
        /* (a daemon that starts so finds out and exits; this one serves on) */
        logf_("error: the daemon at the other end of the cable has %u queue pairs (--rdv-slots %u), "
              "this one %u (--rdv-slots %u): their own queues do not pair up; restart both with the "
              "same --rdv-slots", queues, slots, our_queues(), D.rdv_slots);
        D.mismatch_logged = 1;
    }
    if (kind == EMD_HELLO)
        send_hello(EMD_HELLO_REPLY);
}

/** Port -> rx rings.  @return frames handled. */
static unsigned poll_port(void)
{
    em_pkt_t *pk[BURST];
    unsigned n = em_link_rx_burst(D.link, pk, BURST);
    int acks = 0;
    for (unsigned i = 0; i < n; i++) {
        uint16_t len, dst, src;
        uint8_t smac[6];
        if (emd_wire_decode(pk[i]->data, pk[i]->len, &len, &dst, &src, smac) != 0 || len > D.mtu) {
            D.rx_bad++;
            continue;
        }
        if (dst == EMD_EP_CONTROL) {
            handle_hello(pk[i]->data + EMD_WIRE_HDR_LEN, len);
            continue;
        }
        if (D.loss > 0 && (double)(rnd() >> 11) / 9007199254740992.0 < D.loss) {
            D.loss_drops++;
            continue;
        }
        struct client *c = client_of(dst);
        if (!c) {
            D.rx_no_ep++;          /* the process is gone (or never was) */
            continue;
        }
        count_put(c, pk[i]->data + EMD_WIRE_HDR_LEN, len);
        if (c->flows) {
            (void)deliver_acked(c, pk[i]->data + EMD_WIRE_HDR_LEN, len, src, smac);
            acks = 1;
        } else {
            (void)deliver(c, pk[i]->data + EMD_WIRE_HDR_LEN, len, src, smac);
        }
    }
    if (n) {
        em_link_rx_release(D.link, pk, n);
        publish_rx();              /* the frames are in the rings before any ACK leaves */
        if (acks)
            send_acks();
        D.rx_frames += n;
    }
    return n;
}

/** Index of node @p mac in the link's peer table (added on first use); -1: full. */
static int node_index(const uint8_t mac[6])
{
    for (unsigned i = 0; i < D.nnodes; i++)
        if (memcmp(D.nodes[i], mac, 6) == 0)
            return (int)i;
    if (D.nnodes == MAX_NODES)
        return -1;
    em_link_addr_t a = { .len = 8 };
    memcpy(a.bytes, mac, 6);
    if (em_link_set_peer(D.link, (uint16_t)D.nnodes, &a) != 0)
        return -1;
    memcpy(D.nodes[D.nnodes], mac, 6);
    return (int)D.nnodes++;
}

/** One client's tx ring -> port (or straight to a client on this node). */
static unsigned drain_client(unsigned ci)
{
    struct client *c = &D.cl[ci];
    struct emd_shm_hdr *h = c->h;
    uint32_t tail = atomic_load_explicit(&h->tx.tail, memory_order_acquire);
    uint32_t avail = tail - c->tx_head;
    if (avail == 0)
        return 0;
    if (avail > h->tx_slots) {
        atomic_fetch_add_explicit(&h->st.tx_bad, 1, memory_order_relaxed);
        detach(ci, "corrupt tx ring indices");
        return 0;
    }
    if (avail > BURST)
        avail = BURST;
    em_pkt_t *batch[BURST];
    uint32_t slot_of[BURST];
    unsigned nb = 0, done = 0;
    for (uint32_t k = 0; k < avail; k++) {
        uint32_t idx = c->tx_head + k;
        const uint8_t *s = emd_tx_slot(h, idx);
        struct emd_slot_hdr sh;
        memcpy(&sh, s, sizeof sh);   /* one read of what the client wrote; checked below */
        if (sh.len == 0 || sh.len > D.mtu || sh.endpoint == 0) {
            atomic_fetch_add_explicit(&h->st.tx_bad, 1, memory_order_relaxed);
            continue;
        }
        resync_flow(c, s + sizeof sh, sh.len);
        if (sh.flags & EMD_SLOT_F_NOTE) {
            D.notes++;               /* its frame went on the client's own queue */
            continue;
        }
        count_put(c, s + sizeof sh, sh.len);
        if (memcmp(sh.mac, D.mac, 6) == 0) {          /* on this node */
            struct client *dc = client_of(sh.endpoint);
            if (dc)
                (void)deliver(dc, s + sizeof sh, (uint16_t)sh.len, c->ep, D.mac);
            else
                D.rx_no_ep++;
            D.local++;
            continue;
        }
        int ni = node_index(sh.mac);
        em_pkt_t *p = ni >= 0 ? em_link_tx_alloc(D.link) : NULL;
        if (ni < 0) {
            atomic_fetch_add_explicit(&h->st.tx_bad, 1, memory_order_relaxed);
            continue;
        }
        if (!p) {                     /* no mbuf: stop here, the rest waits */
            avail = k;
            D.tx_blocked = 1;
            break;
        }
        emd_wire_encode(p->data, (uint16_t)sh.len, sh.endpoint, c->ep, D.mac);
        memcpy(p->data + EMD_WIRE_HDR_LEN, s + sizeof sh, sh.len);
        p->len = EMD_WIRE_HDR_LEN + sh.len;
        p->peer = (uint16_t)ni;
        slot_of[nb] = k;
        batch[nb++] = p;
    }
    if (nb) {
        unsigned sent = em_link_tx_burst(D.link, batch, nb);
        for (unsigned j = sent; j < nb; j++)
            em_link_tx_free(D.link, batch[j]);
        if (sent < nb) {
            /* the port is full: resume at the first frame it refused (a
             * same-node frame after it is delivered again: the protocol
             * drops the duplicate) */
            avail = slot_of[sent];
            D.tx_blocked = 1;
        }
        D.tx_frames += sent;
        atomic_fetch_add_explicit(&h->st.tx_sent, sent, memory_order_relaxed);
        done = sent;
    }
    publish_rx();                     /* same-node deliveries */
    c->tx_head += avail;
    atomic_store_explicit(&h->tx.head, c->tx_head, memory_order_release);
    return avail ? avail : done;
}

/** The latest own-queue activity any client reported (0: none). */
static uint64_t own_activity(void)
{
    uint64_t t = 0;
    if (!D.rdv_slots)
        return 0;
    for (unsigned i = 0; i < D.max_clients; i++)
        if (D.cl[i].fd >= 0 && D.cl[i].slot != EMD_RDV_NO_SLOT) {
            uint64_t v = atomic_load_explicit(&D.cl[i].h->own_active_ns, memory_order_relaxed);
            if (v > t)
                t = v;
        }
    return t;
}

static void set_sleeping(uint32_t v)
{
    for (unsigned i = 0; i < D.max_clients; i++)
        if (D.cl[i].fd >= 0)
            atomic_store(&D.cl[i].h->daemon_sleeping, v);
}

static int tx_pending(void)
{
    for (unsigned i = 0; i < D.max_clients; i++)
        if (D.cl[i].fd >= 0 &&
            atomic_load(&D.cl[i].h->tx.tail) != D.cl[i].tx_head)
            return 1;
    return 0;
}

static void heartbeat(uint64_t now)
{
    for (unsigned i = 0; i < D.max_clients; i++)
        if (D.cl[i].fd >= 0)
            atomic_store_explicit(&D.cl[i].h->heartbeat_ns, now, memory_order_relaxed);
}

static void dump_stats(void)
{
    const em_dpdk_stats_t *ps = em_link_dpdk_stats(D.link);
    unsigned nc = 0;
    uint64_t full = 0;
    for (unsigned i = 0; i < D.max_clients; i++)
        if (D.cl[i].fd >= 0) {
            nc++;
            full += atomic_load(&D.cl[i].h->st.rx_ring_full);
        }
    logf_("stats: %u clients (%llu attaches, %llu detaches); port rx %llu frames (%llu bad, %llu for "
          "no endpoint, %llu dropped by loss injection), tx %llu (port full %llu), same-node %llu, "
          "eager ACKs %llu; rx ring full drops (attached clients) %llu",
          nc, (unsigned long long)D.attaches, (unsigned long long)D.detaches,
          (unsigned long long)D.rx_frames, (unsigned long long)D.rx_bad,
          (unsigned long long)D.rx_no_ep, (unsigned long long)D.loss_drops,
          (unsigned long long)D.tx_frames, (unsigned long long)ps->tx_full,
          (unsigned long long)D.local, (unsigned long long)D.acks, (unsigned long long)full);
    if (!D.rdv_slots) {
        logf_("own queues: none (%s); puts carried by the daemon: %llu frames, %llu bytes", D.rdv_why,
              (unsigned long long)D.put_frames, (unsigned long long)D.put_bytes);
        return;
    }
    em_dpdk_port_stats_t q;
    unsigned used = 0;
    for (unsigned k = 0; k < D.rdv_slots; k++)
        used += D.slot_used[k];
    if (em_link_dpdk_port_stats(D.link, &q) == 0)
        logf_("own queues: %u slots (%u in use), %u queue pairs; ranks' own queues rx %llu frames "
              "%llu bytes, tx %llu frames %llu bytes (memif counts queues < 16); puts carried by "
              "the daemon: %llu frames, %llu bytes; eager flows moved by clients' ACKs %llu (notes of "
              "own-queue ACKs %llu)",
              D.rdv_slots, used, 1u + (unsigned)D.rdv_slots * D.rdv_slots,
              (unsigned long long)(q.rx_pkts - q.q0_rx_pkts), (unsigned long long)(q.rx_bytes - q.q0_rx_bytes),
              (unsigned long long)(q.tx_pkts - q.q0_tx_pkts), (unsigned long long)(q.tx_bytes - q.q0_tx_bytes),
              (unsigned long long)D.put_frames, (unsigned long long)D.put_bytes,
              (unsigned long long)D.ack_resyncs, (unsigned long long)D.notes);
}

/** Testing: the loss fraction in <socket>.loss (emcluster emd loss), on SIGHUP. */
static void read_loss_file(void)
{
    FILE *f = fopen(D.loss_path, "r");
    double v = 0;
    if (f) {
        if (fscanf(f, "%lf", &v) != 1 || v < 0 || v >= 1)
            v = 0;
        fclose(f);
    }
    D.loss = v;
    logf_("receive loss now %.4f (%s)", v, f ? D.loss_path : "no loss file");
}

static void run(void)
{
    uint64_t last_work = now_ns(), last_hb = 0, sleep_ns = 0, last_ctl = 0;
    uint64_t loss_seen = 0;
    while (!stop_flag) {
        D.tx_blocked = 0;
        unsigned work = poll_port();
        for (unsigned i = 0; i < D.max_clients; i++)
            if (D.cl[i].fd >= 0)
                work += drain_client(i);
        uint64_t now = now_ns();
        if (work) {
            last_work = now;
            sleep_ns = 0;
        }
        if (now - last_hb >= 1000000ull) {          /* 1 ms */
            heartbeat(now);
            last_hb = now;
            uint32_t ppm = (uint32_t)(D.loss * 1e6);
            for (unsigned i = 0; i < D.max_clients; i++)
                if (D.cl[i].fd >= 0 && atomic_load_explicit(&D.cl[i].h->rx_loss_ppm, memory_order_relaxed) != ppm)
                    atomic_store_explicit(&D.cl[i].h->rx_loss_ppm, ppm, memory_order_relaxed);
            uint64_t l = D.loss_drops;
            if (l != loss_seen) {
                loss_seen = l;
                for (unsigned i = 0; i < D.max_clients; i++)
                    if (D.cl[i].fd >= 0)
                        atomic_store_explicit(&D.cl[i].h->st.port_rx_loss, l, memory_order_relaxed);
            }
        }
        if (dump_flag) {
            dump_flag = 0;
            dump_stats();
        }
        if (hup_flag) {
            hup_flag = 0;
            read_loss_file();
        }
        if (now - last_work < D.spin_ns) {
            if (now - last_ctl >= 1000000ull) {     /* control traffic once a ms while busy */
                poll_control(0);
                last_ctl = now;
            }
            /* nothing this round: let a rank that shares our core run
             * (what mpi_yield_when_idle does for the ranks) */
            if (!work && D.yield)
                sched_yield();
            continue;
        }
        /* a client busy on its own queues is in a rendezvous, whose eager
         * frames pass here: keep spinning for them */
        uint64_t own = own_activity();
        if (own && own > last_work && own + D.spin_ns > now) {
            last_work = own;
            if (D.yield)
                sched_yield();
            continue;
        }
        /* idle: announce the sleep, look once more (a client that added a
         * frame before seeing the flag is caught here), then sleep */
        set_sleeping(1);
        if (tx_pending()) {
            set_sleeping(0);
            if (!D.tx_blocked)
                continue;             /* just queued: serve it now */
            /* frames wait that could not go out (port full, or a peer's
             * end of the cable is gone): nap briefly instead of spinning,
             * and keep serving the control socket (detaches!) */
            poll_control(20000);
            last_ctl = now_ns();
            continue;
        }
        sleep_ns = sleep_ns ? sleep_ns * 2 : 10000;  /* 10 us, doubling */
        if (sleep_ns > D.max_sleep_ns)
            sleep_ns = D.max_sleep_ns;
        poll_control(sleep_ns);
        last_ctl = now_ns();
        set_sleeping(0);
    }
}

/* ------------------------------------------------------------ setup -- */

/** Take the per-socket lock (one daemon per socket) and clear stale files. */
static int claim_socket(const char *path, char *err, size_t errlen)
{
    snprintf(D.lock_path, sizeof D.lock_path, "%s.lock", path);
    D.lock_fd = open(D.lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (D.lock_fd < 0) {
        snprintf(err, errlen, "cannot open %s: %s", D.lock_path, strerror(errno));
        return -1;
    }
    if (flock(D.lock_fd, LOCK_EX | LOCK_NB) != 0) {
        char pid[32] = "?";
        ssize_t n = pread(D.lock_fd, pid, sizeof pid - 1, 0);
        if (n > 0)
            pid[strcspn(pid, "\n")] = 0;
        snprintf(err, errlen, "another emd (pid %s) already serves %s", n > 0 ? pid : "?", path);
        return -1;
    }
    char buf[32];
    int len = snprintf(buf, sizeof buf, "%ld\n", (long)getpid());
    if (ftruncate(D.lock_fd, 0) != 0 || pwrite(D.lock_fd, buf, (size_t)len, 0) != len)
        logf_("warning: cannot write the pid into %s", D.lock_path);
    /* we hold the lock, so a socket file left there is a dead daemon's */
    if (unlink(path) == 0)
        logf_("removed the stale socket %s of an earlier run", path);
    return 0;
}

static int listen_on(const char *path, char *err, size_t errlen)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    if (strlen(path) >= sizeof sa.sun_path) {
        snprintf(err, errlen, "socket path too long: %s", path);
        return -1;
    }
    memcpy(sa.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 64) != 0) {
        snprintf(err, errlen, "cannot listen on %s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    chmod(path, 0660);
    D.listen_fd = fd;
    return 0;
}


static int hugetlbfs_mounted(void)
{
    FILE *f = fopen("/proc/mounts", "r");
    char line[512];
    int found = 0;
    if (!f)
        return 0;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, " hugetlbfs ") != NULL;
    fclose(f);
    return found;
}

/* hugepages the own-queue daemon needs (2 MB pages): its port pool
 * (8191 mbufs of ~9.5 KB) and the slots' pools */
#define RDV_HUGEPAGES_MIN 96

/**
 * Can the ranks have own queues?  Sets D.rdv_slots to 0 and D.rdv_why when
 * not.  @return the EAL arguments to use: the given ones, or for own
 * queues a hugepage-backed primary with the file prefix (link_dpdk adds
 * it), or "" (link_dpdk's default: in memory, no files).
 */
static const char *rdv_possible(const char *vdev, const char *eal_args, const char *prefix)
{
    const char *why = NULL;
    static char hp[EMD_RDV_WHY_LEN];
    if (D.rdv_slots == 0)
        why = "emd --rdv-slots 0";
    else if (strncmp(vdev, "net_memif", 9) != 0 || strchr(vdev, ';'))
        why = strstr(vdev, "af_xdp") ? "the af_xdp wire (DPDK secondaries cannot rx/tx on it)"
                                     : "not a memif wire (no per-process queues without rte_flow)";
    else if (strstr(eal_args, "--in-memory") || strstr(eal_args, "--no-shconf") ||
             strstr(eal_args, "--no-huge"))
        why = "the daemon runs --in-memory/--no-shconf/--no-huge (DPDK secondaries cannot attach)";
    else if (!*eal_args && (!hugetlbfs_mounted() || em_hugepages_free() < RDV_HUGEPAGES_MIN)) {
        snprintf(hp, sizeof hp, "no hugepages: echo 256 >/proc/sys/vm/nr_hugepages; "
                 "mount -t hugetlbfs nodev /dev/hugepages");
        why = hp;
    }
    if (why) {
        D.rdv_slots = 0;
        snprintf(D.rdv_why, sizeof D.rdv_why, "%s", why);
        return eal_args;
    }
    (void)prefix;
    return *eal_args ? eal_args : "--proc-type=primary";
}

static void usage(FILE *f)
{
    fprintf(f,
        "usage: emd --socket PATH --vdev SPEC [options]\n"
        "  The ethermpi node daemon: owns the DPDK port, serves the node's MPI processes\n"
        "  (dpdk BTL, --mca btl_dpdk_mode daemon).  See docs/daemon.md.\n"
        "  --socket PATH      control socket the processes attach to (%%h = host name)\n"
        "  --vdev SPEC        DPDK devargs, or @FILE (first line); %%h = host name,\n"
        "                     %%j = \"emd\"; empty: the first port EAL finds\n"
        "  --eal-args ARGS    extra EAL arguments (default: see link_dpdk)\n"
        "  --mtu N            L2 payload bytes (0 = largest)\n"
        "  --rx-kib N         per-process rx ring in KiB, power of 2 (default 16384: 16 MiB,\n"
        "                     e.g. 50,000 frames of 256 B or 1,800 of 9000 B)\n"
        "  --tx-slots N       per-process tx ring slots, power of 2 (default 1024)\n"
        "  --max-clients N    processes at once (default 64)\n"
        "  --spin-us N        keep polling this long after the last frame (default 50)\n"
        "  --max-sleep-us N   longest idle sleep (default 200)\n"
        "  --rx-loss P        testing: drop this fraction of received frames (seeded); SIGHUP\n"
        "                     re-reads it from SOCKET.loss (emcluster emd loss)\n"
        "  --no-ack           do not acknowledge eager frames for the processes\n"
        "  --no-yield         never sched_yield() while spinning (a core of its own)\n"
        "  --loss-seed N      seed of --rx-loss\n"
        "  --link-wait-ms N   wait this long for the port's link (default 30000)\n"
        "  --rdv-slots N      own queues: up to N processes get queues of their own for\n"
        "                     rendezvous data (1 + N*N queue pairs; memif wire and\n"
        "                     hugepages only; both daemons of a cable must agree);\n"
        "                     0 = none, puts go through the daemon (default 4)\n"
        "  --file-prefix P    EAL file prefix (default emd-%%h); the ranks attach to it as\n"
        "                     DPDK secondaries\n"
        "  -v, --verbose      log attaches and detaches\n"
        "  SIGUSR1 logs the counters; SIGTERM/SIGINT stop (clients see the stop).\n");
}

static int parse_u32(const char *s, uint32_t *out)
{
    char *e;
    errno = 0;
    unsigned long v = strtoul(s, &e, 10);
    if (errno || *e || e == s || v > 0xffffffffu)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "socket", required_argument, NULL, 's' }, { "vdev", required_argument, NULL, 'd' },
        { "eal-args", required_argument, NULL, 'e' }, { "mtu", required_argument, NULL, 'm' },
        { "rx-kib", required_argument, NULL, 'R' }, { "tx-slots", required_argument, NULL, 'T' },
        { "max-clients", required_argument, NULL, 'C' }, { "spin-us", required_argument, NULL, 'S' },
        { "max-sleep-us", required_argument, NULL, 'Z' }, { "rx-loss", required_argument, NULL, 'l' },
        { "loss-seed", required_argument, NULL, 'L' }, { "link-wait-ms", required_argument, NULL, 'w' },
        { "verbose", no_argument, NULL, 'v' }, { "no-ack", no_argument, NULL, 'A' },
        { "no-yield", no_argument, NULL, 'Y' }, { "help", no_argument, NULL, 'h' },
        { "rdv-slots", required_argument, NULL, 'Q' }, { "file-prefix", required_argument, NULL, 'P' },
        { 0, 0, 0, 0 }
    };
    const char *sock_spec = NULL, *vdev_spec = "", *eal_args = "", *prefix_spec = "emd-%h";
    uint32_t rdv_slots = 4;
    uint32_t mtu = 0, spin_us = 50, max_sleep_us = 200, loss_seed = 0, link_wait = 30000;
    double rx_loss = 0;
    uint32_t rx_kib = 16384;
    D.tx_slots = 1024;
    D.max_clients = 64;
    int o, bad = 0;
    while ((o = getopt_long(argc, argv, "vh", opts, NULL)) != -1) {
        switch (o) {
        case 's': sock_spec = optarg; break;
        case 'd': vdev_spec = optarg; break;
        case 'e': eal_args = optarg; break;
        case 'm': bad |= parse_u32(optarg, &mtu); break;
        case 'R': bad |= parse_u32(optarg, &rx_kib); break;
        case 'T': bad |= parse_u32(optarg, &D.tx_slots); break;
        case 'C': bad |= parse_u32(optarg, &D.max_clients); break;
        case 'S': bad |= parse_u32(optarg, &spin_us); break;
        case 'Z': bad |= parse_u32(optarg, &max_sleep_us); break;
        case 'L': bad |= parse_u32(optarg, &loss_seed); break;
        case 'w': bad |= parse_u32(optarg, &link_wait); break;
        case 'Q': bad |= parse_u32(optarg, &rdv_slots); break;
        case 'P': prefix_spec = optarg; break;
        case 'l': {
            char *e;
            rx_loss = strtod(optarg, &e);
            bad |= (*e || rx_loss < 0 || rx_loss >= 1) ? -1 : 0;
            break;
        }
        case 'v': D.verbose = 1; break;
        case 'A': D.ack = -1; break;
        case 'Y': D.yield = -1; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (bad || !sock_spec || optind != argc || D.max_clients == 0 || D.max_clients > MAX_CLIENTS_LIMIT ||
        max_sleep_us == 0 || rdv_slots > EMD_RDV_SLOTS_MAX) {
        fprintf(stderr, "emd: bad or missing arguments\n");
        usage(stderr);
        return 2;
    }
    char err[512], sock[256], vdev[1024];
    if (em_dpdk_devargs(sock_spec, "emd", sock, sizeof sock, err, sizeof err) != 0 ||
        em_dpdk_devargs(vdev_spec, "emd", vdev, sizeof vdev, err, sizeof err) != 0) {
        fprintf(stderr, "emd: %s\n", err);
        return 1;
    }
    D.socket_path = sock;
    D.ack = D.ack == -1 ? 0 : 1;
    D.yield = D.yield == -1 ? 0 : 1;
    D.loss = rx_loss;
    D.rng = loss_seed ? loss_seed : 0x9E3779B97F4A7C15ull;
    snprintf(D.loss_path, sizeof D.loss_path, "%s.loss", sock);
    D.spin_ns = (uint64_t)spin_us * 1000u;
    D.max_sleep_ns = (uint64_t)max_sleep_us * 1000u;
    (void)prctl(PR_SET_TIMERSLACK, 1000UL);   /* short sleeps mean short */
    if (claim_socket(sock, err, sizeof err) != 0) {
        fprintf(stderr, "emd: %s\n", err);
        return 1;
    }
    struct sigaction sa = { .sa_handler = on_stop };
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    sa.sa_handler = on_hup;
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    char prefix[EMD_RDV_NAME_LEN];
    if (em_dpdk_devargs(prefix_spec, "emd", prefix, sizeof prefix, err, sizeof err) != 0) {
        fprintf(stderr, "emd: %s\n", err);
        return 1;
    }
    D.rdv_slots = (uint16_t)rdv_slots;
    const char *eal = rdv_possible(vdev, eal_args, prefix);
    em_dpdk_cfg_t cfg = { .vdev = vdev, .eal_args = eal, .file_prefix = prefix, .mtu = mtu,
                          .link_wait_ms = link_wait, .rdv_slots = D.rdv_slots };
    D.link = em_link_dpdk_open(&cfg, err, sizeof err);
    if (!D.link) {
        fprintf(stderr, "emd: %s\n", err);
        return 1;
    }
    if (D.link->mtu <= EMD_WIRE_HDR_LEN + 64) {
        fprintf(stderr, "emd: the port's MTU (%u) is too small\n", D.link->mtu);
        em_link_close(D.link);
        return 1;
    }
    D.mtu = D.link->mtu - EMD_WIRE_HDR_LEN;
    memcpy(D.mac, D.link->local.bytes, 6);
    if (D.rdv_slots) {
        snprintf(D.rdv_prefix, sizeof D.rdv_prefix, "%s", prefix);
        em_link_dpdk_port_name(D.link, D.rdv_port, sizeof D.rdv_port);
        struct emd_rdv_info probe = { .slots = D.rdv_slots, .slot = 0,
                                      .queues = (uint16_t)(1u + (unsigned)D.rdv_slots * D.rdv_slots) };
        memcpy(probe.prefix, D.rdv_prefix, sizeof probe.prefix);
        memcpy(probe.port, D.rdv_port, sizeof probe.port);
        const char *why = NULL;
        if (emd_rdv_check(&probe, &why) != 0) {   /* what the clients will check */
            fprintf(stderr, "emd: own queues: %s (prefix '%s', port '%s')\n", why, prefix, D.rdv_port);
            em_link_close(D.link);
            return 2;
        }
    }
    uint32_t ss;
    /* what arrives while a process computes must fit: the compute-burst
     * experiment's 10,000 eager frames of 256 B take 3.2 MB */
    D.rx_size = rx_kib <= (EMD_RX_SIZE_MAX >> 10) ? rx_kib << 10 : 0;
    if (emd_shm_size(D.mtu, D.rx_size, D.tx_slots, &ss) == 0) {
        fprintf(stderr, "emd: bad ring sizes (powers of 2: rx %u..%u KiB, tx %u..%u slots)\n",
                EMD_RX_SIZE_MIN >> 10, EMD_RX_SIZE_MAX >> 10, EMD_SLOTS_MIN, EMD_SLOTS_MAX);
        em_link_close(D.link);
        return 2;
    }
    if (getrandom(&D.instance, sizeof D.instance, 0) != sizeof D.instance)
        D.instance = now_ns() ^ ((uint64_t)getpid() << 32);
    D.cl = calloc(D.max_clients, sizeof *D.cl);
    D.ep2cl = calloc(65536, sizeof *D.ep2cl);
    D.pfd = calloc(D.max_clients + 1 + MAX_PENDING, sizeof *D.pfd);
    for (unsigned i = 0; i < MAX_PENDING; i++)
        D.pending[i].fd = -1;
    if (!D.cl || !D.ep2cl || !D.pfd) {
        fprintf(stderr, "emd: out of memory\n");
        em_link_close(D.link);
        return 1;
    }
    for (unsigned i = 0; i < D.max_clients; i++)
        D.cl[i].fd = -1;
    D.next_ep = (uint16_t)(1 + (D.instance % 60000));
    /* memif: both ends must have the same queue pairs (own queues pair up
     * by index); ask the other end before serving anyone */
    D.hello = strncmp(vdev, "net_memif", 9) == 0;
    if (D.hello) {
        uint64_t t0 = now_ns(), last = 0;
        while (!D.peer_seen && !stop_flag && now_ns() - t0 < (uint64_t)link_wait * 1000000ull) {
            if (now_ns() - last >= 100000000ull) {     /* every 100 ms */
                send_hello(EMD_HELLO);
                last = now_ns();
            }
            if (!poll_port())
                usleep(1000);
        }
        if (!D.peer_seen) {
            fprintf(stderr, "emd: no answer from the daemon at the other end of the memif cable within "
                    "%u ms (is it an older emd?  both ends must be this version)\n", link_wait);
            em_link_close(D.link);
            return 1;
        }
        if (D.peer_queues != our_queues()) {
            fprintf(stderr, "emd: the daemon at the other end of the memif cable has %u queue pairs "
                    "(--rdv-slots %u), this one %u (--rdv-slots %u%s%s): own queues pair up by index, "
                    "so both must be started with the same --rdv-slots (and both with hugepages)\n",
                    D.peer_queues, D.peer_slots, our_queues(), D.rdv_slots,
                    D.rdv_slots ? "" : ": ", D.rdv_slots ? "" : D.rdv_why);
            em_link_close(D.link);
            return 2;
        }
    }
    if (listen_on(sock, err, sizeof err) != 0) {
        fprintf(stderr, "emd: %s\n", err);
        em_link_close(D.link);
        return 1;
    }
    logf_("ready: %s, MAC %02x:%02x:%02x:%02x:%02x:%02x, frame %u bytes, socket %s, rings: rx %u KiB, "
          "tx %u slots%s",
          vdev[0] ? vdev : "(first port)", D.mac[0], D.mac[1], D.mac[2], D.mac[3], D.mac[4], D.mac[5],
          D.mtu, sock, D.rx_size >> 10, D.tx_slots, D.ack ? ", eager ACKs" : "");
    if (D.rdv_slots)
        logf_("own queues: %u slots, %u queue pairs on %s, DPDK primary with --file-prefix=%s "
              "(ranks attach as secondaries)", D.rdv_slots, 1u + (unsigned)D.rdv_slots * D.rdv_slots,
              D.rdv_port, D.rdv_prefix);
    else
        logf_("own queues: none: %s; rendezvous data goes through the daemon", D.rdv_why);
    run();
    logf_("stopping");
    dump_stats();
    for (unsigned i = 0; i < D.max_clients; i++)
        if (D.cl[i].fd >= 0) {
            atomic_store(&D.cl[i].h->state, EMD_STATE_STOPPED);
            detach(i, "daemon stopping");
        }
    close(D.listen_fd);
    unlink(sock);
    em_link_close(D.link);
    close(D.lock_fd);              /* the lock file stays: flock, not its existence, is the lock */
    return 0;
}
