/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file emd_ctl_msg.c
 * Control messages, the STATUS reply and fd passing (emd_ctl_msg.h).
 */
#include "emd_abi/emd_ctl_msg.h"
#include "emd_abi/emd_region.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

void emd_ctl_init(struct emd_ctl_msg *m, uint16_t type)
{
    memset(m, 0, sizeof *m);
    m->magic = EMD_CTL_MAGIC;
    m->version = EMD_VERSION;
    m->type = type;
}

int emd_ctl_check(const void *buf, size_t len, struct emd_ctl_msg *out, const char **why)
{
    if (len != sizeof *out) {
        *why = "control message of the wrong size";
        return -1;
    }
    memcpy(out, buf, sizeof *out);
    if (out->magic != EMD_CTL_MAGIC) {
        *why = "control message with a bad magic (not an emd peer)";
        return -1;
    }
    if (out->version != EMD_VERSION) {
        *why = "emd protocol version mismatch (daemon and client from different builds)";
        return -1;
    }
    if (out->type < EMD_CTL_ATTACH_REQ || out->type > EMD_CTL_STATUS_REQ) {
        *why = "control message of unknown type";
        return -1;
    }
    if (out->type == EMD_CTL_ATTACH_OK && (out->endpoint == 0 || out->shm_size < EMD_SHM_HDR_SIZE ||
                                           out->shm_size > EMD_REGION_MAX)) {
        *why = "ATTACH_OK with a bad endpoint or region size";
        return -1;
    }
    if (out->type == EMD_CTL_FLOW) {
        const struct emd_ctl_flow *f = &out->flow;
        int rsvd = 0;
        for (size_t i = 0; i < sizeof f->rsvd; i++)
            rsvd |= f->rsvd[i];
        int node = 0;
        for (size_t i = 0; i < sizeof f->peer_node; i++)
            node |= f->peer_node[i];
        if (f->self == f->peer || f->frame_max < 64 || f->frame_max > EMD_MTU_MAX || rsvd) {
            *why = "FLOW with equal endpoints, a bad frame size or reserved bytes set";
            return -1;
        }
        if (!node || f->peer_ep == 0) {
            *why = "FLOW without the peer's address (node id and endpoint)";
            return -1;
        }
        return 0;
    }
    out->text[sizeof out->text - 1] = 0;
    return 0;
}

int emd_status_check(const void *buf, size_t len, struct emd_ctl_status *out, const char **why)
{
    if (len != sizeof *out) {
        *why = "STATUS reply of the wrong size (daemon from another build?)";
        return -1;
    }
    memcpy(out, buf, sizeof *out);
    if (out->magic != EMD_CTL_MAGIC || out->type != EMD_CTL_STATUS) {
        *why = "not a STATUS reply";
        return -1;
    }
    if (out->version != EMD_VERSION || out->layout != EMD_STATUS_LAYOUT) {
        *why = "STATUS reply of another protocol version or layout (daemon from another build)";
        return -1;
    }
    if (out->count == 0 || out->count > EMD_STATUS_MAX) {
        *why = "STATUS reply with a bad counter count";
        return -1;
    }
    return 0;
}

int emd_send_fd(int sock, const void *msg, size_t len, int fd)
{
    union {
        struct cmsghdr c;
        char b[CMSG_SPACE(sizeof(int))];
    } ctl;
    memset(&ctl, 0, sizeof ctl);
    struct iovec iov = { .iov_base = (void *)msg, .iov_len = len };
    struct msghdr mh = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b, .msg_controllen = sizeof ctl.b
    };
    struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cm), &fd, sizeof(int));
    ssize_t n = sendmsg(sock, &mh, MSG_NOSIGNAL);
    if (n >= 0 && (size_t)n != len) {
        errno = EMSGSIZE;
        return -1;
    }
    return n < 0 ? -1 : 0;
}

ssize_t emd_recv_fd(int sock, void *buf, size_t cap, int *fd)
{
    /* room for a few descriptors: any beyond the one we take are closed,
     * never leaked into this process */
    union {
        struct cmsghdr c;
        char b[CMSG_SPACE(4 * sizeof(int))];
    } ctl;
    struct iovec iov = { .iov_base = buf, .iov_len = cap };
    struct msghdr mh = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b, .msg_controllen = sizeof ctl.b
    };
    ssize_t n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
    *fd = -1;
    if (n < 0)
        return -1;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS || c->cmsg_len < CMSG_LEN(0))
            continue;
        size_t nfd = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t k = 0; k < nfd; k++) {
            int f;
            memcpy(&f, CMSG_DATA(c) + k * sizeof(int), sizeof f);
            if (*fd < 0)
                *fd = f;
            else
                close(f);
        }
    }
    if (mh.msg_flags & (MSG_CTRUNC | MSG_TRUNC)) {
        if (*fd >= 0)
            close(*fd);
        *fd = -1;
        errno = EMSGSIZE;
        return -1;
    }
    return n;
}

int emd_ctl_recv(int fd, struct emd_ctl_msg *m, int *memfd, uint32_t timeout_ms, char *err,
                 size_t errlen)
{
    struct pollfd p = { .fd = fd, .events = POLLIN };
    int r = poll(&p, 1, (int)timeout_ms);
    if (r <= 0) {
        snprintf(err, errlen, "the emd daemon did not answer within %u ms (hung, or overloaded?)",
                 timeout_ms);
        return -1;
    }
    uint8_t buf[sizeof *m + 1];
    ssize_t n = emd_recv_fd(fd, buf, sizeof buf, memfd);
    if (n <= 0) {
        snprintf(err, errlen, "the emd daemon closed the connection during attach%s%s",
                 n < 0 ? ": " : "", n < 0 ? strerror(errno) : "");
        goto bad;
    }
    const char *why = NULL;
    if (emd_ctl_check(buf, (size_t)n, m, &why) != 0) {
        snprintf(err, errlen, "bad answer from the emd daemon: %s", why);
        goto bad;
    }
    return 0;
bad:
    if (*memfd >= 0)
        close(*memfd);
    *memfd = -1;
    return -1;
}
