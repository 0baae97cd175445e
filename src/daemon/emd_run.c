/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file emd_run.c
 * The daemon's loop and what it does between rounds (emd.h): heartbeat,
 * idle policy, sleeping flags, the counters' log lines, the loss file, the
 * memif hello wait.  DPDK-free: the port's extras come through
 * emd_port_ops_t.
 */
#include "daemon/emd.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FOR_CLIENTS(e, i)                                                                          \
    for (unsigned i = 0; i < (e)->core.max_clients; i++)                                           \
        if ((e)->core.cl[i].fd >= 0)

/** The latest bulk-queue activity any client reported (0: none; never later than @p now). */
static uint64_t bulk_activity(const struct emd *e, uint64_t now)
{
    uint64_t t = 0;
    if (!e->ctl.bulk_slots)
        return 0;
    FOR_CLIENTS(e, i)
    if (e->core.cl[i].slot != EMD_BULKQ_NO_SLOT) {
        uint64_t v = atomic_load_explicit(&e->core.cl[i].h->bulk_active_ns, memory_order_relaxed);
        if (v > t)
            t = v;
    }
    return t > now ? now : t; /* (client-written: a future stamp would keep us spinning) */
}

static void set_sleeping(struct emd *e, uint32_t v)
{
    FOR_CLIENTS(e, i)
    atomic_store(&e->core.cl[i].h->daemon_sleeping, v);
}

static void heartbeat(struct emd *e, uint64_t now)
{
    uint32_t ppm = (uint32_t)(e->core.loss.p * 1e6);
    FOR_CLIENTS(e, i)
    {
        struct emd_shm_hdr *h = e->core.cl[i].h;
        atomic_store_explicit(&h->heartbeat_ns, now, memory_order_relaxed);
        atomic_store_explicit(&h->rx_loss_ppm, ppm, memory_order_relaxed);
        atomic_store_explicit(&h->st.port_rx_loss, e->core.loss_drops, memory_order_relaxed);
    }
}

void emd_dump_stats(const struct emd *e)
{
    const emd_core_t *c = &e->core;
    emd_port_stats_t ps = { 0 };
    if (e->port && e->port->stats)
        e->port->stats(e->port_ctx, &ps);
    unsigned nc = 0;
    uint64_t full = 0;
    FOR_CLIENTS(e, i)
    {
        nc++;
        full += atomic_load(&c->cl[i].h->st.rx_ring_full);
    }
    e->log(
        "stats: %u clients (%llu attaches, %llu detaches); port rx %llu frames (%llu bad, %llu for "
        "no endpoint, %llu dropped by loss injection), tx %llu (port full %llu), same-node %llu, "
        "eager ACKs %llu, first-contact handshakes %llu; rx ring full drops (attached clients) "
        "%llu",
        nc, (unsigned long long)e->ctl.attaches, (unsigned long long)e->ctl.detaches,
        (unsigned long long)c->rx_frames, (unsigned long long)c->rx_bad,
        (unsigned long long)c->rx_no_ep, (unsigned long long)c->loss_drops,
        (unsigned long long)c->tx_frames, (unsigned long long)ps.tx_full,
        (unsigned long long)c->local, (unsigned long long)c->acks,
        (unsigned long long)c->handshakes, (unsigned long long)full);
    e->log("refusals: attaches refused %llu (credentials) %llu (limits; %llu the uid's share); "
           "clients detached for bad rings or messages %llu (bad control messages %llu); flows "
           "registered %llu, refused %llu; in-order frames not acknowledged (checks failed) %llu "
           "(%llu from another source); node table full %llu (%llu the uid's share), aged out "
           "%llu; "
           "tx to broadcast/multicast refused %llu; hellos bad %llu, conflicting %llu, replies "
           "skipped "
           "%llu; bulk-queue slots kept for live holders %llu",
           (unsigned long long)e->ctl.refused_cred, (unsigned long long)e->ctl.refused_busy,
           (unsigned long long)e->ctl.refused_uid_share, (unsigned long long)c->doomed_clients,
           (unsigned long long)e->ctl.bad_ctl, (unsigned long long)e->ctl.flows_added,
           (unsigned long long)c->flows_refused, (unsigned long long)c->ack_refused,
           (unsigned long long)c->ack_wrong_source, (unsigned long long)c->nodes_full,
           (unsigned long long)c->nodes_uid_full, (unsigned long long)c->nodes_evicted,
           (unsigned long long)c->tx_bad_mac, (unsigned long long)c->hello_bad,
           (unsigned long long)c->hello_conflict, (unsigned long long)c->hello_replies_skipped,
           (unsigned long long)e->ctl.slots_held);
    if (e->port && e->port->describe) {
        char line[1024]; /* the AF_XDP port's: its counters, then per queue */
        e->port->describe(e->port_ctx, line, sizeof line);
        e->log("port: %s", line);
    }
    if (!e->ctl.bulk_slots) {
        e->log("bulk queues: none (%s); puts carried by the daemon: %llu frames, %llu bytes",
               e->ctl.bulk_why, (unsigned long long)c->put_frames,
               (unsigned long long)c->put_bytes);
        return;
    }
    unsigned used = 0;
    for (unsigned k = 0; k < e->ctl.bulk_slots; k++)
        used += e->ctl.slot_used[k];
    if (ps.bulk_known)
        e->log(
            "bulk queues: %u slots (%u in use), %u queue pairs; ranks' bulk queues rx %llu frames "
            "%llu bytes, tx %llu frames %llu bytes (memif counts queues < 16); puts carried by "
            "the daemon: %llu frames, %llu bytes; eager flows moved by clients' ACKs %llu (notes "
            "of "
            "bulk-queue ACKs %llu)",
            e->ctl.bulk_slots, used, emd_bulkq_queues(e->ctl.bulk_slots),
            (unsigned long long)ps.bulk_rx_frames, (unsigned long long)ps.bulk_rx_bytes,
            (unsigned long long)ps.bulk_tx_frames, (unsigned long long)ps.bulk_tx_bytes,
            (unsigned long long)c->put_frames, (unsigned long long)c->put_bytes,
            (unsigned long long)c->ack_resyncs, (unsigned long long)c->notes);
}

/** Testing: the loss fraction in <socket>.loss (emcluster emd loss), on SIGHUP. */
void emd_read_loss_file(struct emd *e)
{
    FILE *f = fopen(e->loss_path, "r");
    double v = 0;
    if (f) {
        if (fscanf(f, "%lf", &v) != 1 || v < 0 || v >= 1)
            v = 0;
        fclose(f);
    }
    e->core.loss.p = v;
    e->log("receive loss now %.4f (%s)", v, f ? e->loss_path : "no loss file");
}

/** One round of work: the port, then every client's tx ring.  @return frames handled. */
unsigned emd_work_round(struct emd *e, uint64_t now)
{
    e->core.tx_blocked = 0;
    e->core.now_ns = now;
    unsigned work = emd_core_poll_port(&e->core);
    FOR_CLIENTS(e, i)
    work += emd_core_drain(&e->core, i);
    if (emd_core_take_doomed(&e->core) >= 0)
        emd_ctl_reap(&e->ctl); /* a safe point: no pass holds a region */
    return work;
}

void emd_run(struct emd *e)
{
    uint64_t last_work = em_clock_ns(), last_hb = 0, sleep_ns = 0, last_ctl = 0, last_tick = 0;
    while (!e->stop) {
        unsigned work = emd_work_round(e, em_clock_ns());
        uint64_t now = em_clock_ns();
        if (work) {
            last_work = now;
            sleep_ns = 0;
        }
        if (now - last_hb >= 1000000ull) { /* 1 ms */
            heartbeat(e, now);
            last_hb = now;
        }
        if (e->tick && now - last_tick >= 100000000ull) { /* 100 ms */
            e->tick(e, now);
            last_tick = now;
        }
        if (e->dump) {
            e->dump = 0;
            emd_dump_stats(e);
        }
        if (e->hup) {
            e->hup = 0;
            emd_read_loss_file(e);
        }
        if (now - last_work < e->spin_ns) {
            if (now - last_ctl >= 1000000ull) { /* control traffic once a ms while busy */
                emd_ctl_poll(&e->ctl, 0);
                last_ctl = now;
            }
            /* nothing this round: let a rank that shares our core run
             * (what mpi_yield_when_idle does for the ranks) */
            if (!work && e->yield)
                sched_yield();
            continue;
        }
        /* a client busy on its bulk queues is in a rendezvous, whose eager
         * frames pass here: keep spinning for them */
        uint64_t bulk = bulk_activity(e, now);
        if (bulk && bulk > last_work && bulk + e->spin_ns > now) {
            last_work = bulk;
            if (e->yield)
                sched_yield();
            continue;
        }
        /* idle: announce the sleep, look once more (a client that added a
         * frame before seeing the flag is caught here), then sleep */
        set_sleeping(e, 1);
        if (emd_core_tx_pending(&e->core)) {
            set_sleeping(e, 0);
            if (!e->core.tx_blocked)
                continue; /* just queued: serve it now */
            /* frames wait that could not go out (port full, or a peer's
             * end of the cable is gone): nap briefly instead of spinning,
             * and keep serving the control socket (detaches!) */
            emd_ctl_poll(&e->ctl, 20000);
            last_ctl = em_clock_ns();
            continue;
        }
        sleep_ns = sleep_ns ? sleep_ns * 2 : 10000; /* 10 us, doubling */
        if (sleep_ns > e->max_sleep_ns)
            sleep_ns = e->max_sleep_ns;
        emd_ctl_poll(&e->ctl, sleep_ns);
        last_ctl = em_clock_ns();
        set_sleeping(e, 0);
    }
}

/**
 * memif: wait for the other end's hello (ours every 100 ms).  A hello with
 * another layout is not believed at once (anyone on the wire can send one):
 * a matching one within a second wins; else the mismatch is real.
 * @return 0, or -1 after saying why on stderr.
 */
int emd_wait_hello(struct emd *e, uint32_t link_wait)
{
    uint64_t t0 = em_clock_ns(), last = 0, mismatch_since = 0;
    while (!e->stop && em_clock_ns() - t0 < (uint64_t)link_wait * 1000000ull) {
        e->core.now_ns = em_clock_ns();
        if (e->core.now_ns - last >= 100000000ull) { /* every 100 ms */
            emd_core_send_hello(&e->core, EMD_HELLO);
            last = e->core.now_ns;
        }
        if (!emd_core_poll_port(&e->core))
            usleep(1000);
        if (e->core.peer_seen && e->core.peer_queues == emd_core_queues(&e->core))
            return 0;
        if (e->core.peer_seen && !mismatch_since)
            mismatch_since = em_clock_ns();
        if (mismatch_since && em_clock_ns() - mismatch_since > 1000000000ull)
            break;
    }
    if (!e->core.peer_seen) {
        fprintf(stderr,
                "emd: no answer from the daemon at the other end of the memif cable within "
                "%u ms (is it an older emd?  both ends must be this version)\n",
                link_wait);
        return -1;
    }
    fprintf(stderr,
            "emd: the daemon at the other end of the memif cable has %u queue pairs "
            "(--bulk-slots %u), this one %u (--bulk-slots %u%s%s): bulk queues pair up by index, "
            "so both must be started with the same --bulk-slots (and both with hugepages)\n",
            e->core.peer_queues, e->core.peer_slots, emd_core_queues(&e->core), e->ctl.bulk_slots,
            e->ctl.bulk_slots ? "" : ": ", e->ctl.bulk_slots ? "" : e->ctl.bulk_why);
    return -1;
}

void emd_shutdown(struct emd *e, const char *sock)
{
    FOR_CLIENTS(e, i)
    {
        atomic_store(&e->core.cl[i].h->state, EMD_STATE_STOPPED);
        emd_ctl_detach(&e->ctl, i, "daemon stopping", 0);
    }
    if (e->ctl.listen_fd >= 0)
        close(e->ctl.listen_fd);
    e->ctl.listen_fd = -1;
    if (sock)
        unlink(sock);
}
