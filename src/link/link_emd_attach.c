/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file link_emd_attach.c
 * Attaching to the node daemon (link_emd.h): the control socket's
 * ATTACH_REQ / ATTACH_OK, the shared region mapped and checked; or a region
 * a test already holds.  The link itself: link_emd.c.
 */
#include "link/link_emd.h"
#include "link/link_emd_int.h"
#include "emd_abi/emd_ctl_msg.h"
#include "emd_abi/emd_region.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

em_link_t *em_link_emd_from_region(void *region, uint64_t size, uint64_t instance,
                                   uint16_t endpoint, const em_emd_cfg_t *cfg, char *err,
                                   size_t errlen)
{
    const char *why = NULL;
    if (emd_shm_check(region, size, instance, endpoint, &why) != 0) {
        snprintf(err, errlen, "the emd shared region is unusable: %s", why);
        return NULL;
    }
    return em_link_emd_make(region, size, -1, endpoint, cfg, err, errlen);
}

em_link_t *em_link_emd_open(const em_emd_cfg_t *cfg, char *err, size_t errlen)
{
    const char *path = cfg->socket_path;
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    if (!path || !*path || strlen(path) >= sizeof sa.sun_path) {
        snprintf(err, errlen, "no usable emd socket path given ('%s')", path ? path : "");
        return NULL;
    }
    memcpy(sa.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, errlen, "socket(AF_UNIX): %s", strerror(errno));
        return NULL;
    }
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        int e = errno;
        if (e == ENOENT || e == ECONNREFUSED)
            snprintf(err, errlen,
                     "the emd daemon is not running on this node (%s at %s); start it "
                     "first (tools/emcluster emd start, or the ethermpi-emd service, see "
                     "docs/daemon.md), or use --mca btl_dpdk_mode direct",
                     e == ENOENT ? "no socket" : "nobody listens", path);
        else
            snprintf(err, errlen, "cannot connect to the emd daemon at %s: %s", path, strerror(e));
        close(fd);
        return NULL;
    }
    struct emd_ctl_msg m;
    emd_ctl_init(&m, EMD_CTL_ATTACH_REQ);
    m.pid = (uint32_t)getpid();
    if (send(fd, &m, sizeof m, MSG_NOSIGNAL) != (ssize_t)sizeof m) {
        snprintf(err, errlen, "cannot talk to the emd daemon at %s: %s", path, strerror(errno));
        close(fd);
        return NULL;
    }
    int memfd = -1;
    uint32_t tmo = cfg->attach_timeout_ms ? cfg->attach_timeout_ms : 5000;
    if (emd_ctl_recv(fd, &m, &memfd, tmo, err, errlen) != 0) {
        close(fd);
        return NULL;
    }
    if (m.type == EMD_CTL_ATTACH_ERR || m.type != EMD_CTL_ATTACH_OK || memfd < 0) {
        if (m.type == EMD_CTL_ATTACH_ERR)
            snprintf(err, errlen, "the emd daemon refused to attach this process: %s (%s)%s",
                     m.text, strerror((int)m.status),
                     m.status == EBUSY ? "; the node's daemon is full for this user or for all "
                                         "(its admin raises emd --max-clients, or --max-per-uid: "
                                         "each uid may hold 3/4 of the slots by default)"
                                       : "");
        else
            snprintf(err, errlen, "the emd daemon answered without a shared region");
        if (memfd >= 0)
            close(memfd);
        close(fd);
        return NULL;
    }
    struct stat stb;
    if (fstat(memfd, &stb) != 0 || (uint64_t)stb.st_size != m.shm_size) {
        snprintf(err, errlen, "the emd daemon's shared region has the wrong size");
        close(memfd);
        close(fd);
        return NULL;
    }
    void *mem = mmap(NULL, m.shm_size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
    close(memfd);
    if (mem == MAP_FAILED) {
        snprintf(err, errlen, "cannot map the emd shared region: %s", strerror(errno));
        close(fd);
        return NULL;
    }
    const char *why = NULL;
    struct emd_shm_hdr *h = mem;
    if (emd_shm_check(h, m.shm_size, m.instance, m.endpoint, &why) != 0 ||
        atomic_load(&h->state) != EMD_STATE_RUNNING) {
        snprintf(err, errlen, "the emd shared region is unusable: %s",
                 why ? why : "daemon not running");
        munmap(mem, m.shm_size);
        close(fd);
        return NULL;
    }
    em_link_t *l = em_link_emd_make(h, m.shm_size, fd, m.endpoint, cfg, err, errlen);
    if (!l) {
        munmap(mem, m.shm_size);
        close(fd);
    }
    return l;
}
