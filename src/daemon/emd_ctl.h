/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file emd_ctl.h
 * The control plane of `emd`, without DPDK: the unix socket clients attach
 * through, who may attach (SO_PEERCRED), the shared regions (sealed
 * memfds), control messages (WAKE, FLOW), detaching, and the bulk-queue
 * slots' owners.  emd.c runs the loop; emd_core.h is the data plane.
 *
 * Who may attach (docs/daemon.md "Who may attach"): root, the daemon's own
 * uid, the uid given with --uid, and members of the group given with
 * --group (primary or supplementary group, SO_PEERGROUPS); without --group,
 * members of the daemon's group.  The socket file is made with mode 0660,
 * owner --uid (or the daemon's), group --group (or the daemon's), before
 * listen(): nobody can connect before it has them.  Everyone else is
 * refused with a log line naming pid, uid and gid.  Limits: pending
 * connections per uid (EMD_PENDING_PER_UID), clients per uid (--max-per-uid),
 * control messages handled per client per round (EMD_CTL_BUDGET).
 *
 * STATUS (emd_abi/emd_ctl_msg.h, docs/daemon.md "Reading the counters"): a connection
 * the rule admits whose first message is a STATUS_REQ gets one struct
 * emd_ctl_status and is closed; it never takes a client slot.  A first
 * message that is not a well-formed ATTACH_REQ or STATUS_REQ (size, magic,
 * version, type) is refused with ATTACH_ERR EPROTO and counted
 * (refused_requests).  The daemon reads nothing of a STATUS_REQ but its
 * type.
 *
 * Threading: the daemon's one thread.
 */
#ifndef EM_DAEMON_EMD_CTL_H
#define EM_DAEMON_EMD_CTL_H

#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/types.h>

#include "daemon/emd_core.h"

#define EMD_PENDING         16u /* connections waiting for their ATTACH_REQ */
#define EMD_PENDING_PER_UID 4u
#define EMD_PENDING_NS      1000000000ull
#define EMD_CTL_BUDGET      64u        /* control messages per client per round */
#define EMD_PER_UID_AUTO    UINT32_MAX /* --max-per-uid not given */

typedef struct emd_ctl {
    emd_core_t *core;
    char lock_path[300];
    int listen_fd, lock_fd;
    uint32_t rx_size, tx_slots;
    uint64_t instance;
    uint16_t next_ep;
    int verbose;
    /* who may attach: -1 = not given */
    long allow_uid, allow_gid;
    uint32_t max_per_uid; /* 0: no limit; EMD_PER_UID_AUTO: emd.c resolves it to the share */
    struct {
        int fd;
        uint64_t since;
        uid_t uid;
        pid_t pid;
        gid_t gid;
    } pending[EMD_PENDING];
    struct pollfd *pfd; /* 1 + max_clients + EMD_PENDING */
    /* bulk queues (bulk_slots 0: none, bulk_why says why) */
    uint16_t bulk_slots;
    uint8_t slot_used[EMD_BULKQ_SLOTS_MAX];
    int slot_pidfd[EMD_BULKQ_SLOTS_MAX]; /* a detached holder still alive: released when it exits */
    pid_t
        slot_pid[EMD_BULKQ_SLOTS_MAX]; /* the holder (SO_PEERCRED), while attached or waited for */
    char bulk_prefix[EMD_BULKQ_NAME_LEN], bulk_port[EMD_BULKQ_NAME_LEN],
        bulk_why[EMD_BULKQ_WHY_LEN];
    /** the port's extras (NULL: none): bulk slots' pool reset, STATUS's port counters */
    const emd_port_ops_t *port;
    void *port_ctx;
    void (*log)(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
    /* totals */
    uint64_t attaches, detaches, refused_cred, refused_busy, bad_ctl, flows_added, slots_held;
    uint64_t refused_req, status_reqs;
    uint64_t refused_uid_share; /* of refused_busy: the uid holds --max-per-uid clients */
} emd_ctl_t;

/** Set up (after emd_core_init; the caller fills the fields above first). @return 0 or -1. */
int emd_ctl_setup(emd_ctl_t *t);
/**
 * Take @p path's lock file (one daemon per socket; opened with O_NOFOLLOW,
 * refused unless a regular file of ours) and remove a stale socket.
 * @return 0, or -1 with @p err.
 */
int emd_ctl_claim(emd_ctl_t *t, const char *path, char *err, size_t errlen);
/** Make the socket with its owner, group and mode, then listen.  @return 0 or -1 with @p err. */
int emd_ctl_listen(emd_ctl_t *t, const char *path, char *err, size_t errlen);
/** Control traffic: attaches, WAKE/FLOW, hang-ups.  @p timeout_ns 0: just look. */
void emd_ctl_poll(emd_ctl_t *t, uint64_t timeout_ns);
/** Detach client @p i, saying @p why (logged with pid and uid when @p loud or verbose). */
void emd_ctl_detach(emd_ctl_t *t, unsigned i, const char *why, int loud);
/** Detach the clients the data plane doomed; release bulk-queue slots whose holder exited. */
void emd_ctl_reap(emd_ctl_t *t);
/** Fill a STATUS reply with the node's counters (emd_status.c). */
void emd_ctl_status_fill(const emd_ctl_t *t, struct emd_ctl_status *s);
/**
 * Client side: ask the daemon at @p path for its counters, waiting up to
 * @p timeout_ms for the reply (emd_status.c).
 * @return 0, or -1 with the cause and what to do in @p err.
 */
int emd_status_query(const char *path, int timeout_ms, struct emd_ctl_status *out, char *err,
                     size_t errlen);
/** Print @p s as "name value" lines on @p f (the counters this build knows). */
void emd_status_print(const struct emd_ctl_status *s, FILE *f);

/** Parse a group name or number.  @return the gid, or -1. */
long emd_ctl_group(const char *name);
/** Parse a user name or number.  @return the uid, or -1. */
long emd_ctl_user(const char *name);

#endif
