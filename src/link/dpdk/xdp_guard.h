/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file xdp_guard.h
 * One live owner per AF_XDP interface queue, and recovery from a crashed
 * one.
 *
 * DPDK's af_xdp PMD attaches an XDP program to the interface when its
 * queue is set up and detaches it when the port is closed.  A process that
 * dies without closing (SIGKILL, an MPI abort) leaves the program
 * attached, and the next start fails with "XDP program already attached".
 * The guard, taken before the port is probed:
 *  - holds an flock on /run/ethermpi/locks/afxdp-<netns>-<iface>-q<queue>.lock
 *    for the life of the port (the kernel drops it when the process dies),
 *    so a second live user of the same queue gets a clear error naming the
 *    owner's pid instead of stealing its frames;
 *  - the XDP program is the interface's, shared by all its queues, so every
 *    queue owner also holds /run/ethermpi/locks/afxdp-<netns>-<iface>.lock
 *    shared.  Only a guard that gets that lock exclusively (no queue of
 *    the interface has a live owner) treats an attached XDP program that
 *    ethermpi or DPDK loaded (known program names) as a crashed owner's
 *    leftover and detaches it, naming the program it looked at (a program
 *    attached meanwhile is not removed).  Then it keeps the lock shared.
 *    A program anyone else loaded is left alone and reported.  emcluster's
 *    xdploss filter (tools/bpf/xdp_drop.bpf.c) is the same object the
 *    PMD loads from the node's device file, so it is replaced like a
 *    leftover: the rank's program carries the same loss.
 *  - lock files are opened with O_NOFOLLOW and used only if they are plain
 *    files with one link: a symlink planted in the lock directory cannot
 *    make a root process truncate another file.
 */
#ifndef EM_LINK_XDP_GUARD_H
#define EM_LINK_XDP_GUARD_H

#include <stddef.h>

typedef struct em_xdp_guard {
    int lock_fd;       /**< the queue lock (exclusive); -1: no lock held */
    int if_lock_fd;    /**< the interface lock (shared); valid when lock_fd is */
    unsigned detached; /**< leftover programs removed at acquire */
    unsigned cleanup;  /**< 1: at acquire no other queue of the interface had a
                            live owner, so leftovers were looked for */
} em_xdp_guard_t;

/**
 * Parse "iface=" and "start_queue=" out of af_xdp devargs.
 * @return 1 if @p devargs names a net_af_xdp device (then @p ifname and
 * @p queue are set), 0 otherwise.
 */
int em_xdp_devargs_iface(const char *devargs, char *ifname, size_t len, unsigned *queue);

/**
 * Take ownership of @p ifname queue @p queue in this network namespace and
 * remove a crashed owner's XDP program.  @return 0, or -1 with a sentence
 * in @p err (queue owned by a live process, no such interface, a foreign
 * XDP program attached, a lock file that is a symlink or not a plain file).  Without permission to create the lock directory
 * it returns 0 with no lock (the PMD then reports what it cannot do).
 */
int em_xdp_guard_acquire(const char *ifname, unsigned queue, em_xdp_guard_t *g, char *err,
                         size_t errlen);
void em_xdp_guard_release(em_xdp_guard_t *g);

/**
 * The directory of ethermpi's machine-wide lock files: /run/ethermpi/locks
 * (EM_LOCK_DIR overrides it, for tests), shared by every network namespace
 * of the host.  The AF_XDP guard's locks and EAL's hugepage lock live
 * there.
 */
const char *em_dpdk_lock_dir(void);
/**
 * Create em_dpdk_lock_dir() (and its parents, mode 0755) if missing.
 * @return 0, or -1 with errno (typically EACCES: a user other than root
 * where /run/ethermpi is root's; the caller then goes on without its lock).
 */
int em_dpdk_lock_dir_make(void);

/**
 * After the PMD failed to set up a queue on @p ifname (DPDK says only
 * "Invalid argument"): if the interface MTU is beyond what AF_XDP can
 * carry here (@p frame_max bytes of MTU: one page-sized UMEM chunk), write
 * the cause and the fix into @p buf and return 1; else return 0.  On a
 * veth the kernel refuses a native XDP program once the peer's MTU is
 * above a page less XDP headroom ("Peer MTU is too large to set XDP").
 */
int em_xdp_explain_mtu(const char *ifname, unsigned frame_max, char *buf, size_t len);

#endif
