/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file emd.h
 * One `emd` daemon as an object: the data plane (emd_core.h), the control
 * plane (emd_ctl.h), the idle policy and the loop (emd_run.c).  DPDK-free:
 * the port is an em_link_t plus optional emd_port_ops_t; emd.c (main, the
 * options, the DPDK port) makes one, tests could make several.
 *
 * Idle policy: spin while there is work and for spin_ns after it; then
 * sleep in ppoll() with a doubling timeout (up to max_sleep_ns), woken
 * early by a client's WAKE message.  The port cannot wake us, so a frame
 * arriving after a quiet spell waits up to max_sleep_ns.
 *
 * Threading: one thread.  The stop/dump/hup flags may be set from a signal
 * handler.
 */
#ifndef EM_DAEMON_EMD_H
#define EM_DAEMON_EMD_H

#include <signal.h>
#include <stdint.h>

#include "daemon/emd_core.h"
#include "daemon/emd_ctl.h"

struct emd {
    emd_core_t core;            /**< data plane */
    emd_ctl_t ctl;              /**< control plane */
    const emd_port_ops_t *port; /**< the port's extras (NULL: none) */
    void *port_ctx;
    uint64_t spin_ns, max_sleep_ns;
    int yield;                             /**< sched_yield() when a spin round found nothing */
    char loss_path[300];                   /**< re-read on hup (testing) */
    volatile sig_atomic_t stop, dump, hup; /**< set by signal handlers */
    void (*log)(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
    /** called by emd_run about every 100 ms (NULL: none): emd.c tells the
     *  service manager it is alive and whom it serves (sd_notify) */
    void (*tick)(struct emd *e, uint64_t now);
};

/** Serve until e->stop (the loop: port, tx rings, control socket, idle policy). */
void emd_run(struct emd *e);
/** One round of work: the port, then every client's tx ring.  @return frames handled. */
unsigned emd_work_round(struct emd *e, uint64_t now);
/** Log the counters (SIGUSR1, and at stop). */
void emd_dump_stats(const struct emd *e);
/** Testing: the loss fraction in e->loss_path (emcluster emd loss), on SIGHUP. */
void emd_read_loss_file(struct emd *e);
/**
 * memif: wait up to @p wait_ms for the other end's hello (ours every 100
 * ms).  @return 0 (same layout), or -1 after saying why on stderr.
 */
int emd_wait_hello(struct emd *e, uint32_t wait_ms);
/** Stop serving: clients see the stop and are detached; the socket file goes. */
void emd_shutdown(struct emd *e, const char *sock);

#endif
