/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file eal.c
 * EAL, once per process: its arguments (the caller's CPU affinity, a unique
 * file prefix, hugepages when there are some, one --vdev per device), the
 * machine-wide lock around taking hugepages, and its cleanup with the last
 * port.  Process-global state, unlocked: one thread opens and closes ports.
 */
#include "link/dpdk/dpdk_internal.h"
#include "util/procfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_errno.h>
#include <rte_lcore.h>

#define MAX_ARGS 48

static int eal_started;      /* EAL runs once per process */
static int eal_foreign;      /* EAL was started by another DPDK user of the process */
static int eal_ports;        /* ports open; EAL is cleaned up with the last */
static int eal_gone;         /* cleaned up: EAL cannot start again */
static char eal_vdevs[2048]; /* the device list EAL was started with */
static unsigned memif_left;  /* memif ports left running (port.c) */

/** Remove @p dir and the plain files in it (EAL's runtime directory). */
static void remove_dir(const char *dir)
{
    DIR *dp = opendir(dir);
    struct dirent *e;
    char path[PATH_MAX + 256];
    if (!dp)
        return;
    while ((e = readdir(dp)))
        if (e->d_name[0] != '.') {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
    closedir(dp);
    rmdir(dir);
}

long em_link_dpdk_hugepages_free(void)
{
    return (long)em_proc_field("/proc/meminfo", "HugePages_Free:", 10, 0);
}

void em_dpdk_eal_hold(void) { eal_ports++; }

int em_dpdk_eal_last_port(void) { return eal_ports == 1; }

void em_dpdk_eal_keep_memif(void) { memif_left++; }

/* the last port closed: EAL goes too (no hugepage files are left: EAL
 * runs --in-memory or --no-huge --no-shconf), and so does the runtime
 * directory EAL creates (and never removes) under /var/run/dpdk */
void em_dpdk_eal_release(void)
{
    if (--eal_ports > 0 || eal_foreign)
        return;
    char rundir[PATH_MAX];
    snprintf(rundir, sizeof rundir, "%s", rte_eal_get_runtime_dir());
    /* with memif ports left running, EAL must stay: their interrupt
     * handlers still use its memory (cleanup detaches it) */
    if (!memif_left)
        rte_eal_cleanup();
    eal_gone = 1;
    remove_dir(rundir);
}

/** "--lcores=0@(a,b,...)": EAL's main thread keeps the affinity it has now. */
static void lcores_arg(char *buf, size_t len)
{
    cpu_set_t set;
    size_t n = (size_t)snprintf(buf, len, "--lcores=0@(");
    int first = 1;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        for (int c = 0; c < CPU_SETSIZE && n + 8 < len; c++)
            if (CPU_ISSET(c, &set)) {
                n += (size_t)snprintf(buf + n, len - n, "%s%d", first ? "" : ",", c);
                first = 0;
            }
    }
    if (first)
        n += (size_t)snprintf(buf + n, len - n, "0");
    snprintf(buf + n, len - n, ")");
}

/*
 * Without EAL arguments we take hugepages when at least 128 are free.  Two
 * processes of a node (two ranks with em_bcast, a rank and a daemon) that
 * look at the same moment both see them free, and the second one's EAL
 * then fails for memory.  The look and the mapping (rte_eal_init with -m)
 * are therefore done under one machine-wide lock, so the next process sees
 * what the first took.  Best effort: a lock we cannot open or get within
 * 20 s is skipped.
 *
 * The lock file is <lock dir>/eal-memory.lock, next to the AF_XDP guard's
 * (em_dpdk_lock_dir(): /run/ethermpi/locks), not in /tmp: a service with
 * PrivateTmp= has a /tmp of its own, where a lock shared with the ranks
 * would lock nothing.  It is opened read-only with O_NOFOLLOW (never
 * written: any user may share it, none can redirect it).  The directory
 * is root's: tmpfiles.d/ethermpi.conf makes it and the file at boot, so
 * every user can open it; a root process makes them when missing.  A
 * user who can neither open nor create it goes on without the lock, as
 * the AF_XDP guard does without its directory (the race it closes then
 * shows as an EAL memory error, which says what to do).
 */
#define EAL_MEM_LOCK_NAME "eal-memory.lock"

static int eal_mem_lock(void)
{
    char path[300];
    if (snprintf(path, sizeof path, "%s/" EAL_MEM_LOCK_NAME, em_dpdk_lock_dir()) >=
        (int)sizeof path)
        return -1;
    /* an existing file needs no write access to the directory */
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT && em_dpdk_lock_dir_make() == 0)
        fd = open(path, O_RDONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1; /* no lock: best effort, as above */
    for (int i = 0; i < 2000; i++) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0)
            return fd;
        if (errno != EWOULDBLOCK && errno != EINTR)
            break;
        nanosleep(&(struct timespec){ .tv_nsec = 10000000 }, NULL);
    }
    close(fd);
    return -1;
}

/* rte_eal_init failed: a sentence naming the cause and the fix */
static void explain_failure(const em_dpdk_cfg_t *cfg, const char *extra, char *err, size_t errlen)
{
    int e = rte_errno;
    const char *hint = "";
    if (e == EACCES || e == EPERM)
        /* what each route needs without root: docs/deploy.md "Direct
         * mode and its privileges" (CAP_SYS_ADMIN is not among them) */
        hint = " (not root: on AF_XDP a rank needs CAP_NET_RAW, CAP_NET_ADMIN, CAP_BPF and "
               "CAP_IPC_LOCK and the EAL arguments --no-huge --no-shconf -m 256; a vfio-pci NIC "
               "needs read/write on /dev/vfio/<group>, CAP_IPC_LOCK and --iova-mode=va; or use "
               "daemon mode (emd), where ranks need no privilege: docs/deploy.md)";
    else if (e == ENOMEM)
        hint =
            " (not enough memory: with hugepages reserve more, e.g. "
            "echo 256 > /proc/sys/vm/nr_hugepages, or pass --no-huge -m 256 in the EAL arguments)";
    else if (e == EALREADY)
        hint = " (EAL was already initialised by something else in this process)";
    snprintf(err, errlen, "DPDK EAL failed to start: %s%s; EAL arguments: %s%s%s", rte_strerror(e),
             hint, extra, cfg->vdev && *cfg->vdev ? " --vdev=" : "", cfg->vdev ? cfg->vdev : "");
}

/* every device of the ';' list @p vdev is a port EAL already probed (by
 * its name, the devargs up to the first ','); an empty list is not */
static int all_probed(const char *vdev)
{
    char item[1024], name[RTE_ETH_NAME_MAX_LEN];
    unsigned n = 0;
    uint16_t port;
    for (; vdev && em_dpdk_vdev_item(vdev, n, item, sizeof item) == 0; n++) {
        size_t k = strcspn(item, ",");
        snprintf(name, sizeof name, "%.*s", (int)(k < sizeof name ? k : sizeof name - 1), item);
        if (rte_eth_dev_get_port_by_name(name, &port) != 0)
            return 0;
    }
    return n > 0;
}

int em_dpdk_eal_start(const em_dpdk_cfg_t *cfg, char *err, size_t errlen)
{
    static char store[2048];
    static char lcores[512], prefix[128];
    char *argv[MAX_ARGS];
    int argc = 0;

    if (eal_started) {
        /* a further port of the device list EAL was started with, or a
         * port another user of the process opened (an em_bcast channel on
         * one of the dpdk BTL's devices, whose list may name more, or
         * expand %j otherwise): every device named must already be up */
        if (!eal_gone &&
            (0 == strcmp(eal_vdevs, cfg->vdev ? cfg->vdev : "") || all_probed(cfg->vdev)))
            return 0;
        snprintf(err, errlen,
                 "DPDK is already initialised in this process with the devices '%.300s', and "
                 "'%.300s' is not among them (EAL probes devices once per process: name every "
                 "device in the first device list opened)",
                 eal_gone ? "(none: EAL was shut down)" : eal_vdevs, cfg->vdev ? cfg->vdev : "");
        return -1;
    }
    argv[argc++] = "ethermpi";
    if (cfg->file_prefix && *cfg->file_prefix)
        snprintf(prefix, sizeof prefix, "--file-prefix=%s", cfg->file_prefix);
    else
        snprintf(prefix, sizeof prefix, "--file-prefix=em%ld", (long)getpid());
    argv[argc++] = prefix;
    lcores_arg(lcores, sizeof lcores);
    argv[argc++] = lcores;
    if (!cfg->telemetry)
        argv[argc++] = "--no-telemetry";
    argv[argc++] = "--log-level=*:error";
    const char *extra = cfg->eal_args;
    int mem_lock = -1;
    if (!extra || !*extra) {
        /* hugepages when there are some, else plain memory; either way no
         * files: --in-memory / --no-shconf leave nothing in /dev/hugepages
         * or /var/run/dpdk after a crash */
        mem_lock = eal_mem_lock();
        extra = em_link_dpdk_hugepages_free() >= 128 ? "--in-memory -m 256"
                                                     : "--no-huge --no-shconf -m 256";
    }
    snprintf(store, sizeof store, "%s", extra);
    for (char *tok = strtok(store, " "); tok && argc < MAX_ARGS - 3; tok = strtok(NULL, " "))
        argv[argc++] = tok;
    if (cfg->vdev && *cfg->vdev) {
        /* "dev0;dev1": one --vdev each, probed in this order */
        static char vargs[EM_DPDK_MAX_PORTS][1100];
        argv[argc++] = "--no-pci";
        char item[1024];
        for (unsigned nv = 0; nv < EM_DPDK_MAX_PORTS && argc < MAX_ARGS - 2 &&
                              em_dpdk_vdev_item(cfg->vdev, nv, item, sizeof item) == 0;
             nv++) {
            em_dpdk_memif_remove_stale_socket(
                item); /* an exited server's (ports stay open to the end) */
            snprintf(vargs[nv], sizeof vargs[nv], "--vdev=%s", item);
            argv[argc++] = vargs[nv];
        }
    }
    argv[argc] = NULL;
    /* EAL already up (no lcore before it): rte_eal_init would only print
     * "FATAL: already called initialization" and fail with EALREADY */
    int init_rc = rte_lcore_count() > 0 ? (rte_errno = EALREADY, -1) : rte_eal_init(argc, argv);
    if (mem_lock >= 0)
        close(mem_lock); /* our pages are mapped (or none were taken) */
    if (init_rc < 0 && rte_errno == EALREADY) {
        /* started by another DPDK user of the process (an application's
         * own DPDK: this code exists once per process, in libethermpi.so):
         * it owns EAL and cleans it up, not us */
        eal_started = 1;
        eal_foreign = 1;
        snprintf(eal_vdevs, sizeof eal_vdevs, "%s", cfg->vdev ? cfg->vdev : "");
        return 0;
    }
    if (init_rc < 0) {
        explain_failure(cfg, extra, err, errlen);
        return -1;
    }
    eal_started = 1;
    snprintf(eal_vdevs, sizeof eal_vdevs, "%s", cfg->vdev ? cfg->vdev : "");
    return 0;
}
