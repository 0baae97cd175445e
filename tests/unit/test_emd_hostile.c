/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A real emd against a hostile client (security review C1/H1/L3/L4/M5,
 * experiment E3): emd runs on a net_null port; a well-behaved job (two
 * engines over link_emd, same-node traffic through the daemon) exchanges
 * checked messages while a hostile process, attached to the same daemon:
 *   - truncates / grows / reseals its memfd (must fail: sealed),
 *   - rewrites every layout field of its region, then its ring indices,
 *     and sends through the rewritten rings,
 *   - floods WAKE and sends a garbage control message,
 *   - attaches until the client slots run out,
 *   - closes a socket while staying alive, with its region still mapped,
 *   - connects as an unprivileged user through a socket an admin opened up.
 * Expected: every send of the good job completes with the right bytes, the
 * daemon stays up, logs and detaches the offender (naming pid and uid), and
 * refuses what it must.  Run as root (DPDK, setuid); skipped otherwise.
 * Usage: test_emd_hostile PATH-TO-EMD
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "emd_abi/emd_ctl_msg.h"
#include "emd_abi/emd_region.h"
#include "emd_abi/emd_ring.h"
#include "engine/engine.h"
#include "link/link_emd.h"
#include "emd_harness.h"

/* ----------------------------------------------------------- hostile -- */

/** Put one frame in the next tx slot of @p tx, a handle on the real layout
 *  (the daemon's, taken before the header was rewritten). */
static void hostile_slot(emd_ring_t *tx, uint16_t to_ep, const uint8_t mac[6])
{
    uint8_t *s = emd_slots_sp_next(tx);
    struct emd_slot_hdr sh = { .len = 200, .endpoint = to_ep };
    memcpy(sh.mac, mac, 6);
    memcpy(s, &sh, sizeof sh);
    memset(s + sizeof sh, 0xAB, 200);
}

/** The hostile process: @return its exit code (0: everything it tried failed as it should). */
static int hostile(void)
{
    int bad = 0, mfd, st;
    uint64_t size;
    uint16_t ep;
    int fd = emd_harness_attach(&mfd, &size, &ep, &st);
    if (fd < 0)
        return 10;
    /* H1: the memfd is sealed (EMD_HOSTILE_NO_TRUNCATE=1 skips this, to see
     * the next attacks on a daemon without the seal) */
    if (getenv("EMD_HOSTILE_NO_TRUNCATE"))
        ;
    else if (ftruncate(mfd, (off_t)size * 2) == 0 || errno != EPERM)
        bad |= 1;
    else if (ftruncate(mfd, 0) == 0 || errno != EPERM)
        bad |= 1;
    usleep(20000);
    if (fcntl(mfd, F_ADD_SEALS, F_SEAL_WRITE) == 0)
        bad |= 1;
    uint8_t *base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
    if (base == MAP_FAILED)
        return 11;
    struct emd_shm_hdr *h = (struct emd_shm_hdr *)base;
    uint32_t tx_slots = h->tx_slots;
    emd_ring_t tx;
    emd_ring_init_tx(&tx, h); /* the real layout, before the rewrite */
    uint8_t mac[6];
    memcpy(mac, h->mac, 6);
    /* C1: every layout field rewritten; frames sent to ourselves through the
     * real rings must still go where the daemon put the rings */
    h->tx_slots = 1u << 31;
    h->slot_size = 0x100000;
    h->tx_off = 0xfff00000u;
    h->rx_size = 1u << 31;
    h->rx_off = 0x20000000;
    h->mtu = 65535;
    h->total_size = 1ull << 40;
    h->hdr_size = 0;
    for (int k = 0; k < 8; k++)
        hostile_slot(&tx, ep, mac);
    emd_slots_sp_enqueue(&tx);
    /* WAKE flood (the daemon drains a bounded number per round) */
    struct emd_ctl_msg w;
    emd_ctl_init(&w, EMD_CTL_WAKE);
    uint64_t t0 = now_ms();
    unsigned wakes = 0;
    while (now_ms() - t0 < 1000)
        if (send(fd, &w, sizeof w, MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)sizeof w)
            wakes++;
        else
            usleep(100);
    /* the frames to ourselves arrived in our real rx ring */
    uint32_t rx_tail = atomic_load(&h->rx.tail);
    if (rx_tail == 0)
        bad |= 2;
    /* impossible indices: rx.head ahead of the tail, then another frame to us */
    atomic_store(&h->rx.head, rx_tail + 4096);
    hostile_slot(&tx, ep, mac);
    emd_slots_sp_enqueue(&tx);
    send(fd, &w, sizeof w, MSG_NOSIGNAL);
    /* a second region: a tx.tail far beyond the ring */
    int mfd2, fd2 = emd_harness_attach(&mfd2, &size, &ep, &st);
    if (fd2 >= 0) {
        struct emd_shm_hdr *h2 = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, mfd2, 0);
        atomic_store(&h2->tx.tail, tx_slots * 1000u + 3u);
        send(fd2, &w, sizeof w, MSG_NOSIGNAL);
    }
    /* a third: garbage on the control socket */
    int mfd3, fd3 = emd_harness_attach(&mfd3, &size, &ep, &st);
    if (fd3 >= 0) {
        char junk[64];
        memset(junk, 0x5a, sizeof junk);
        send(fd3, junk, 17, MSG_NOSIGNAL);
    }
    usleep(300000);
    /* attach until the slots run out: the daemon says so, and stays up */
    int fds[16], n = 0, full = 0;
    for (; n < 16; n++) {
        int m2;
        fds[n] = emd_harness_attach(&m2, &size, &ep, &st);
        if (fds[n] < 0) {
            full = st == EBUSY;
            break;
        }
        close(m2);
    }
    if (!full)
        bad |= 4;
    for (int k = 0; k < n; k++)
        close(fds[k]);
    /* M5-like: close a socket but stay alive, region mapped, and scribble on it */
    int mfd4, fd4 = emd_harness_attach(&mfd4, &size, &ep, &st);
    if (fd4 >= 0) {
        uint8_t *b4 = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, mfd4, 0);
        close(fd4);
        usleep(100000);
        if (b4 != MAP_FAILED)
            memset(b4, 0xff, size); /* our mapping: harmless to the daemon */
    }
    fprintf(stderr, "hostile: %u WAKEs sent in 1 s; slots ran out after %d attaches\n", wakes, n);
    usleep(200000);
    return bad;
}

/* ---------------------------------------------------------- good job -- */

struct good {
    em_engine_t *e[2];
    uint64_t recv_ok, recv_bad, done, failed;
    unsigned completed[2];
};
static struct good G;

static void fill(uint8_t *b, size_t len, uint32_t seed)
{
    for (size_t i = 0; i < len; i++)
        b[i] = (uint8_t)(seed * 31u + i * 7u);
}

/* every owner tag (0 .. 254; 255 is the engine's own, EM_ENGINE_TAG_RMA) */
static uint8_t tag_of(uint32_t seed) { return (uint8_t)(seed % EM_ENGINE_TAG_RMA); }

static void g_recv(void *u, uint32_t peer, uint8_t tag, const void *d, size_t len)
{
    (void)u;
    (void)peer;
    uint32_t seed;
    uint8_t tmp[8192];
    if (len < 4 || len > sizeof tmp) {
        G.recv_bad++;
        return;
    }
    memcpy(&seed, d, 4);
    fill(tmp, len, seed);
    memcpy(tmp, &seed, 4);
    if (memcmp(tmp, d, len) == 0 && tag == tag_of(seed))
        G.recv_ok++;
    else
        G.recv_bad++;
}
static void g_done(void *u, void *ctx, int status)
{
    (void)u;
    G.completed[(intptr_t)ctx]++;
    if (status)
        G.failed++;
    else
        G.done++;
}
static const em_engine_ops_t GOPS = { .recv = g_recv, .complete = g_done };

static int good_open(void)
{
    char err[512];
    em_link_t *l[2];
    for (int k = 0; k < 2; k++) {
        em_emd_cfg_t c = { .socket_path = sock, .bulk_mode = EM_EMD_BULKQ_OFF };
        l[k] = em_link_emd_open(&c, err, sizeof err);
        if (!l[k]) {
            fprintf(stderr, "good client: %s\n", err);
            return -1;
        }
    }
    for (int k = 0; k < 2; k++) {
        em_proto_cfg_t cfg;
        em_proto_cfg_default(&cfg);
        cfg.job_key = 0x600d;
        cfg.self = (uint32_t)k;
        cfg.npeers = 2;
        cfg.isn = 0x7ffffff0u; /* any ISN (the daemon is told, never assumes) */
        cfg.frame_max = l[k]->mtu;
        int e;
        G.e[k] = em_engine_create(l[k], &cfg, &GOPS, NULL, &e);
        if (!G.e[k])
            return -1;
    }
    for (int k = 0; k < 2; k++)
        if (em_engine_set_peer(G.e[k], (uint32_t)(1 - k), &l[1 - k]->local) != 0)
            return -1;
    return 0;
}

static unsigned sent_total;
static int hostile_status = -1;

/** Send checked messages both ways for as long as the hostile process works
 *  (and at least @p min each way), then let every send complete. */
static pid_t emd_pid;
static int emd_status = -1;

static void good_run(unsigned min, pid_t hostile_pid)
{
    static em_proto_op_t ops[2][64];
    static uint8_t bufs[2][64][6000];
    unsigned sent[2] = { 0, 0 };
    uint64_t t0 = now_ms();
    int hostile_done = 0;
    while (now_ms() - t0 < 90000 && waitpid(emd_pid, &emd_status, WNOHANG) == 0) {
        int more = !hostile_done || sent[0] < min || sent[1] < min;
        if (!more && G.completed[0] == sent[0] && G.completed[1] == sent[1])
            break;
        for (int k = 0; k < 2; k++) {
            /* at most 48 in flight per side (64 op slots, FIFO completion) */
            while (more && sent[k] - G.completed[k] < 48u) {
                unsigned i = sent[k] % 64u;
                uint32_t seed = sent[k] * 2u + (uint32_t)k;
                size_t len = 4 + (seed * 997u) % 5000u;
                fill(bufs[k][i], len, seed);
                memcpy(bufs[k][i], &seed, 4);
                if (em_engine_send(G.e[k], &ops[k][i], (uint32_t)(1 - k), tag_of(seed), bufs[k][i],
                                   len, (void *)(intptr_t)k) != 0)
                    break;
                sent[k]++;
            }
            em_engine_progress(G.e[k]);
        }
        if (!hostile_done && waitpid(hostile_pid, &hostile_status, WNOHANG) == hostile_pid)
            hostile_done = 1;
    }
    sent_total = sent[0] + sent[1];
}

/* -------------------------------------------------------------- main -- */

static int nobody_attach(void)
{
    int mfd, st;
    uint64_t size;
    uint16_t ep;
    int fd = emd_harness_attach(&mfd, &size, &ep, &st);
    return fd < 0 && st == EACCES ? 0 : 1;
}

/** An unprivileged user cannot attach through a socket an admin made 0666 by mistake. */
static void unprivileged(void)
{
    int ws = emd_harness_as_nobody(nobody_attach);
    CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0,
          "uid 65534 attached, or was not refused by the rule (%d)", ws);
    CHECK(log_has("refused", "uid 65534"), "no log line for the refused uid");
}

int main(int argc, char **argv)
{
    int rc = emd_harness_enter(argc, 1);
    if (rc)
        return rc;
    uint64_t t0 = now_ms();
    /* one uid (root) is both the good job and the hostile client: the slots
     * must run out for all, not for the uid's share (test_emd_share) */
    static const char *const more[] = { "--max-sleep-us", "200", "--max-per-uid", "0", NULL };
    pid_t emd = start_emd(argv[1], "emd-hostile", "8", more);
    if (emd < 0)
        return 1;
    emd_pid = emd;
    CHECK(good_open() == 0, "the good job could not attach");
    pid_t hp = fork();
    if (hp == 0)
        _exit(hostile());
    if (!failures)
        good_run(3000, hp);
    else
        waitpid(hp, &hostile_status, 0);
    int ws = hostile_status;
    CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0,
          "the hostile client's attempts were not all refused "
          "(exit %d: 1 memfd not sealed, 2 real rings not used, 4 slots never ran out)",
          WIFEXITED(ws) ? WEXITSTATUS(ws) : -1);
    CHECK(sent_total >= 6000 && G.done == sent_total && G.failed == 0,
          "good job: %u sent, %llu done, %llu failed", sent_total, (unsigned long long)G.done,
          (unsigned long long)G.failed);
    CHECK(G.recv_ok == sent_total && G.recv_bad == 0, "good job: %llu messages right, %llu wrong",
          (unsigned long long)G.recv_ok, (unsigned long long)G.recv_bad);
    fprintf(stderr, "good job: %u messages sent and checked while the hostile client worked\n",
            sent_total);
    if (emd_status == -1 && waitpid(emd, &emd_status, WNOHANG) == 0)
        emd_status = -1;
    CHECK(emd_status == -1, "emd died (%s %d)", WIFSIGNALED(emd_status) ? "signal" : "exit",
          WIFSIGNALED(emd_status) ? WTERMSIG(emd_status) : WEXITSTATUS(emd_status));
    char hpid[32];
    snprintf(hpid, sizeof hpid, "pid %d, uid 0", (int)hp);
    CHECK(log_has("corrupt rx ring index", hpid),
          "no detach for the corrupt rx.head with pid and uid");
    CHECK(log_has("corrupt tx ring index", hpid), "no detach for the corrupt tx.tail");
    CHECK(log_has("detached: control message", hpid), "no detach for the garbage control message");
    CHECK(log_has("refused", "too many clients"), "no refusal when the slots ran out");
    unprivileged();
    if (emd_status != -1) {
        fprintf(stderr, "FAILED\n");
        return 1;
    }
    kill(emd, SIGUSR1);
    usleep(200000);
    stop_emd(emd);
    return emd_harness_finish(t0, "detached|refused|stats|refusals", 1);
}
