/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file xdp_guard.c
 * AF_XDP interface-queue ownership and leftover-program removal (see
 * xdp_guard.h).
 */
#include "link/dpdk/xdp_guard.h"
#include "link/dpdk/devargs.h"
#include "link/link_util.h"

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef EM_HAVE_LIBBPF
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/ethtool.h>
#include <linux/if_link.h>
#include <linux/sockios.h>
#endif

/* Overridable for tests (EM_LOCK_DIR); the default is shared by every
 * network namespace of the host, which is what makes the netns part of
 * the file name necessary. */
const char *em_dpdk_lock_dir(void)
{
    const char *d = getenv("EM_LOCK_DIR");
    return d && *d ? d : "/run/ethermpi/locks";
}

static int mkdir_p(const char *path)
{
    char buf[256];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        return -1;
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(buf, 0755) == 0 || errno == EEXIST ? 0 : -1;
}

int em_dpdk_lock_dir_make(void) { return mkdir_p(em_dpdk_lock_dir()); }

int em_xdp_devargs_iface(const char *devargs, char *ifname, size_t len, unsigned *queue)
{
    char q[16];
    if (!devargs || strncmp(devargs, "net_af_xdp", 10) != 0)
        return 0;
    if (!em_dpdk_devarg(devargs, "iface", ifname, len))
        return 0;
    *queue = 0;
    if (em_dpdk_devarg(devargs, "start_queue", q, sizeof q)) {
        char *end;
        unsigned long v = strtoul(q, &end, 10);
        if (*end == 0 && v < 4096)
            *queue = (unsigned)v;
    }
    return 1;
}

#ifdef EM_HAVE_LIBBPF
/* Programs a dead ethermpi/DPDK owner can have left behind: our filter
 * (tools/bpf/xdp_drop.bpf.c), libbpf's default AF_XDP program and libxdp's
 * dispatcher that carries it.  Kernel program names hold 15 characters. */
static int known_program(const char *name)
{
    static const char *const known[] = { "emc_xdp_drop_sb", "emc_xdp_drop_mb", "xsk_def_prog",
                                         "xdp_dispatcher" };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strcmp(name, known[i]) == 0)
            return 1;
    return 0;
}

/* Called with the interface lock held exclusively: no live guard owns any
 * queue of @p ifname, so a known program still attached is a leftover. */
static int remove_leftover(const char *ifname, int ifindex, em_xdp_guard_t *g, char *err,
                           size_t errlen)
{
    struct bpf_xdp_query_opts q;
    memset(&q, 0, sizeof q);
    q.sz = sizeof q;
    if (bpf_xdp_query(ifindex, 0, &q) != 0 || q.prog_id == 0)
        return 0; /* nothing attached (or no way to tell: let the PMD try) */
    char name[BPF_OBJ_NAME_LEN] = "?";
    /* the fd pins the program we looked at: the detach below names it, so
     * a program attached meanwhile by someone else is never removed */
    int fd = bpf_prog_get_fd_by_id(q.prog_id);
    if (fd >= 0) {
        struct bpf_prog_info info;
        __u32 il = sizeof info;
        memset(&info, 0, sizeof info);
        if (bpf_obj_get_info_by_fd(fd, &info, &il) == 0)
            snprintf(name, sizeof name, "%s", info.name);
    }
    if (!known_program(name)) {
        snprintf(err, errlen,
                 "interface %s already has an XDP program ('%s', id %u) that "
                 "ethermpi did not load; AF_XDP needs its own (remove it with "
                 "'ip link set dev %s xdp off' if it is not needed)",
                 ifname, name, q.prog_id, ifname);
        if (fd >= 0)
            close(fd);
        return -1;
    }
    if (fd < 0) {
        snprintf(err, errlen, "cannot open the XDP program '%s' (id %u) left on %s: %s", name,
                 q.prog_id, ifname, strerror(errno));
        return -1;
    }
    __u32 modes[3] = { 0, 0, 0 };
    int n = 0;
    switch (q.attach_mode) {
    case XDP_ATTACHED_DRV: modes[n++] = XDP_FLAGS_DRV_MODE; break;
    case XDP_ATTACHED_SKB: modes[n++] = XDP_FLAGS_SKB_MODE; break;
    case XDP_ATTACHED_HW: modes[n++] = XDP_FLAGS_HW_MODE; break;
    default:
        if (q.drv_prog_id)
            modes[n++] = XDP_FLAGS_DRV_MODE;
        if (q.skb_prog_id)
            modes[n++] = XDP_FLAGS_SKB_MODE;
        if (q.hw_prog_id)
            modes[n++] = XDP_FLAGS_HW_MODE;
    }
    LIBBPF_OPTS(bpf_xdp_attach_opts, opts, .old_prog_fd = fd); /* XDP_FLAGS_REPLACE */
    for (int i = 0; i < n; i++) {
        int rc = bpf_xdp_detach(ifindex, modes[i], &opts);
        if (rc != 0) {
            snprintf(err, errlen,
                     "cannot remove the XDP program '%s' (id %u) a crashed process "
                     "left on %s: %s",
                     name, q.prog_id, ifname,
                     rc == -EEXIST ? "another program was attached meanwhile" : strerror(-rc));
            close(fd);
            return -1;
        }
    }
    close(fd);
    g->detached++;
    return 0;
}
#endif

/* Open (creating) a lock file without following a symlink planted at its
 * name, and only if it is a plain file with one link: the pid written into
 * it must never truncate or overwrite another file (a root process).
 * @return the fd, -1 with errno (ELOOP/EINVAL: not a plain file). */
static int open_lock_file(const char *path)
{
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1) {
        close(fd);
        errno = EINVAL;
        return -1;
    }
    return fd;
}

static void write_pid(int fd)
{
    char pid[32];
    int pl = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)pl, 0) != pl) {
        /* the lock still works; only the pid in error messages is lost */
    }
}

/* The interface lock: shared by every queue owner for the life of its port,
 * exclusive only for the moment of a cleanup.  Sets g->if_lock_fd and
 * g->cleanup (1: no queue of the interface is owned by anyone else, so an
 * attached known program is a leftover).  @return 0, -1 with @p err. */
static int lock_interface(const char *path, const char *ifname, em_xdp_guard_t *g, char *err,
                          size_t errlen)
{
    int fd = open_lock_file(path);
    if (fd < 0) {
        snprintf(err, errlen,
                 "cannot use the lock file %s: %s (remove it if it is a symlink "
                 "or not a plain file)",
                 path, errno == ELOOP || errno == EINVAL ? "not a plain file" : strerror(errno));
        return -1;
    }
    g->if_lock_fd = fd;
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
        g->cleanup = 1;
        return 0; /* converted to shared after the cleanup */
    }
    /* another queue's owner holds it shared (or is cleaning up for a moment) */
    for (int i = 0; i < 2000; i++) {
        if (flock(fd, LOCK_SH | LOCK_NB) == 0)
            return 0;
        usleep(1000);
    }
    snprintf(err, errlen,
             "the AF_XDP interface lock of %s (%s) stays held exclusively; "
             "a cleanup of a crashed owner seems stuck",
             ifname, path);
    return -1;
}

int em_xdp_guard_acquire(const char *ifname, unsigned queue, em_xdp_guard_t *g, char *err,
                         size_t errlen)
{
    g->lock_fd = -1;
    g->if_lock_fd = -1;
    g->detached = 0;
    g->cleanup = 0;
    int ifindex = (int)if_nametoindex(ifname);
    if (ifindex == 0) {
        snprintf(err, errlen, "no network interface '%s' in this network namespace", ifname);
        return -1;
    }
    if (em_dpdk_lock_dir_make() != 0)
        return 0; /* no permission: no guard; DPDK itself will say what it cannot do */
    struct stat st;
    unsigned long long ns = stat("/proc/self/ns/net", &st) == 0 ? (unsigned long long)st.st_ino : 0;
    char path[512];
    snprintf(path, sizeof path, "%s/afxdp-%llu-%s-q%u.lock", em_dpdk_lock_dir(), ns, ifname, queue);
    int fd = open_lock_file(path);
    if (fd < 0) {
        if (errno != ELOOP && errno != EINVAL)
            return 0; /* cannot create it: no guard, as without the directory */
        snprintf(err, errlen,
                 "the AF_XDP lock file %s is a symlink or not a plain file; "
                 "remove it (someone may be trying to make a root process overwrite a file)",
                 path);
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        char pid[32] = "";
        ssize_t r = pread(fd, pid, sizeof pid - 1, 0);
        if (r > 0)
            pid[strcspn(pid, "\n")] = 0;
        else
            snprintf(pid, sizeof pid, "?");
        close(fd);
        snprintf(err, errlen,
                 "AF_XDP queue %u of %s is in use by another ethermpi process "
                 "(pid %s); in direct mode each process needs its own interface queue",
                 queue, ifname, pid);
        return -1;
    }
    write_pid(fd);
    g->lock_fd = fd;
    snprintf(path, sizeof path, "%s/afxdp-%llu-%s.lock", em_dpdk_lock_dir(), ns, ifname);
    if (lock_interface(path, ifname, g, err, errlen) != 0) {
        em_xdp_guard_release(g);
        return -1;
    }
#ifdef EM_HAVE_LIBBPF
    /* the XDP program is the interface's, shared by all its queues: only
     * when no other queue has a live owner is an attached one a leftover */
    if (g->cleanup && remove_leftover(ifname, ifindex, g, err, errlen) != 0) {
        em_xdp_guard_release(g);
        return -1;
    }
#endif
    if (g->cleanup && flock(g->if_lock_fd, LOCK_SH) != 0) {
        snprintf(err, errlen, "cannot share the interface lock %s: %s", path, strerror(errno));
        em_xdp_guard_release(g);
        return -1;
    }
    return 0;
}

void em_xdp_guard_release(em_xdp_guard_t *g)
{
    if (g && g->lock_fd >= 0) {
        /* drops the flocks; the files stay for the next owner */
        if (g->if_lock_fd >= 0)
            close(g->if_lock_fd);
        g->if_lock_fd = -1;
        close(g->lock_fd);
        g->lock_fd = -1;
    }
}

/* the kernel driver behind @p ifname ("veth", "mlx5_core", ...) or "" */
static void if_driver(const char *ifname, char *drv, size_t len)
{
    struct ethtool_drvinfo di = { .cmd = ETHTOOL_GDRVINFO };
    struct ifreq ifr;
    drv[0] = 0;
    memset(&ifr, 0, sizeof ifr);
    snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", ifname);
    ifr.ifr_data = (void *)&di;
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return;
    if (ioctl(fd, SIOCETHTOOL, &ifr) == 0)
        snprintf(drv, len, "%.*s", (int)sizeof di.driver, di.driver);
    close(fd);
}

int em_xdp_explain_mtu(const char *ifname, unsigned frame_max, char *buf, size_t len)
{
    unsigned mtu = em_if_mtu(ifname);
    if (!mtu || mtu <= frame_max)
        return 0;
    char drv[48];
    if_driver(ifname, drv, sizeof drv);
    /* under 450 bytes: callers append it to DPDK's words in 512-byte buffers */
    if (strcmp(drv, "veth") == 0)
        snprintf(buf, len,
                 "%s is a veth with MTU %u, and the kernel attaches XDP to a veth only "
                 "while the peer's MTU fits a page less XDP headroom (3506 bytes: \"Peer MTU is "
                 "too large to set XDP\"); DPDK 22.11's AF_XDP also carries at most %u-byte "
                 "frames.  Set both ends to MTU %u or less (ip link set dev %s mtu %u; emcluster "
                 "up --mtu %u), or use rudp or a DPDK/memif port at MTU %u",
                 ifname, mtu, frame_max, frame_max, ifname, frame_max, frame_max, mtu);
    else
        snprintf(buf, len,
                 "%s (driver %s) has MTU %u, but DPDK 22.11's AF_XDP carries at most "
                 "%u-byte frames (one page-sized UMEM chunk) and most drivers refuse native XDP "
                 "above a page per frame.  Set the MTU to %u or less on every node (ip link set "
                 "dev %s mtu %u), or use the NIC through its own DPDK PMD",
                 ifname, *drv ? drv : "unknown", mtu, frame_max, frame_max, ifname, frame_max);
    return 1;
}
