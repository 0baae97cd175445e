/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file emd_ctl.c
 * The control plane of emd (see emd_ctl.h): socket, credentials, attach,
 * control messages, detach, bulk-queue slot owners.
 */

#include "daemon/emd_ctl.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59
#endif

int emd_ctl_setup(emd_ctl_t *t)
{
    t->pfd = calloc(1 + t->core->max_clients + EMD_PENDING, sizeof *t->pfd);
    if (!t->pfd)
        return -1;
    for (unsigned i = 0; i < EMD_PENDING; i++)
        t->pending[i].fd = -1;
    for (unsigned k = 0; k < EMD_BULKQ_SLOTS_MAX; k++)
        t->slot_pidfd[k] = -1;
    /* the first endpoint id depends on the run (the instance is random): a
     * restarted daemon does not hand out the ids of the last run first, so
     * a late frame for a dead process rarely reaches a new one; any start
     * in 1..60000 leaves room before EMD_EP_CONTROL (0xFFFF) */
    if (!t->next_ep)
        t->next_ep = (uint16_t)(1 + (t->instance % 60000));
    return 0;
}

/* @p name as a decimal id (>= 0), or -1 when it is not one (a name) */
static long numeric_id(const char *name)
{
    char *e;
    long v = strtol(name, &e, 10);
    return *name && !*e && v >= 0 ? v : -1;
}

long emd_ctl_group(const char *name)
{
    long v = numeric_id(name); /* a number is taken as it is; else the name is looked up */
    const struct group *g = v < 0 ? getgrnam(name) : NULL;
    return g ? (long)g->gr_gid : v;
}

long emd_ctl_user(const char *name)
{
    long v = numeric_id(name);
    const struct passwd *p = v < 0 ? getpwnam(name) : NULL;
    return p ? (long)p->pw_uid : v;
}

/* ------------------------------------------------------------ socket -- */

int emd_ctl_claim(emd_ctl_t *t, const char *path, char *err, size_t errlen)
{
    snprintf(t->lock_path, sizeof t->lock_path, "%s.lock", path);
    /* O_NOFOLLOW: a symlink planted there is refused, never followed (we
     * run as root and truncate the file) */
    t->lock_fd = open(t->lock_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    struct stat sb;
    if (t->lock_fd < 0 || fstat(t->lock_fd, &sb) != 0 || !S_ISREG(sb.st_mode) ||
        sb.st_uid != geteuid() || sb.st_nlink != 1) {
        snprintf(err, errlen, "cannot use the lock file %s: %s", t->lock_path,
                 t->lock_fd < 0 ? strerror(errno)
                                : "not a regular file of ours with one link (remove it and check "
                                  "who can write into the socket's directory)");
        if (t->lock_fd >= 0)
            close(t->lock_fd);
        t->lock_fd = -1;
        return -1;
    }
    if (flock(t->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        char pid[32] = "?";
        ssize_t n = pread(t->lock_fd, pid, sizeof pid - 1, 0);
        if (n > 0)
            pid[strcspn(pid, "\n")] = 0;
        snprintf(err, errlen, "another emd (pid %s) already serves %s", n > 0 ? pid : "?", path);
        return -1;
    }
    char buf[32];
    int len = snprintf(buf, sizeof buf, "%ld\n", (long)getpid());
    if (ftruncate(t->lock_fd, 0) != 0 || pwrite(t->lock_fd, buf, (size_t)len, 0) != len)
        t->log("warning: cannot write the pid into %s", t->lock_path);
    /* we hold the lock, so a socket file left there is a dead daemon's */
    struct stat ss;
    if (lstat(path, &ss) == 0 && S_ISSOCK(ss.st_mode) && unlink(path) == 0)
        t->log("removed the stale socket %s of an earlier run", path);
    return 0;
}

int emd_ctl_listen(emd_ctl_t *t, const char *path, char *err, size_t errlen)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    if (strlen(path) >= sizeof sa.sun_path) {
        snprintf(err, errlen, "socket path too long: %s", path);
        return -1;
    }
    memcpy(sa.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    /* the file is born 0660 (umask), gets its owner and group, and only then
     * does listen() make it connectable: no window with other rights.  The
     * mode is set while the daemon still owns the file: after a chown to
     * --uid, a chmod would need CAP_FOWNER, which the service does not have */
    mode_t old = umask(0117);
    int b = fd >= 0 ? bind(fd, (struct sockaddr *)&sa, sizeof sa) : -1;
    umask(old);
    uid_t uid = t->allow_uid >= 0 ? (uid_t)t->allow_uid : (uid_t)-1;
    gid_t gid = t->allow_gid >= 0 ? (gid_t)t->allow_gid : (gid_t)-1;
    if (b != 0 || chmod(path, 0660) != 0 || chown(path, uid, gid) != 0 || listen(fd, 64) != 0) {
        snprintf(err, errlen, "cannot listen on %s: %s", path, strerror(errno));
        if (b == 0)
            unlink(path);
        if (fd >= 0)
            close(fd);
        return -1;
    }
    t->listen_fd = fd;
    return 0;
}

/* ----------------------------------------------------------- clients -- */

static void send_err(int fd, int status, const char *text)
{
    struct emd_ctl_msg m;
    emd_ctl_init(&m, EMD_CTL_ATTACH_ERR);
    m.status = (uint32_t)status;
    snprintf(m.text, sizeof m.text, "%s", text);
    (void)send(fd, &m, sizeof m, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/** Does the rule let this peer attach? */
static int allowed(const emd_ctl_t *t, int fd, uid_t uid, gid_t gid)
{
    if (uid == 0 || uid == geteuid() || (t->allow_uid >= 0 && uid == (uid_t)t->allow_uid))
        return 1;
    gid_t want = t->allow_gid >= 0 ? (gid_t)t->allow_gid : getegid();
    if (gid == want)
        return 1;
    gid_t groups[256];
    socklen_t gl = sizeof groups;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &gl) == 0)
        for (size_t k = 0; k < gl / sizeof groups[0]; k++)
            if (groups[k] == want)
                return 1;
    return 0;
}

static unsigned clients_of_uid(const emd_ctl_t *t, uid_t uid)
{
    unsigned n = 0;
    for (unsigned i = 0; i < t->core->max_clients; i++)
        n += t->core->cl[i].fd >= 0 && t->core->cl[i].uid == uid;
    return n;
}

/** Release bulk-queue slot @p k now (its holder is gone). */
static void slot_free(emd_ctl_t *t, uint16_t k)
{
    /* the slot's next owner starts with every mbuf free, whatever the last
     * one held when it died */
    if (t->port && t->port->slot_reset && t->port->slot_reset(t->port_ctx, k) != 0)
        t->log("warning: could not reset the pools of bulk-queue slot %u", k);
    if (t->slot_pidfd[k] >= 0)
        close(t->slot_pidfd[k]);
    t->slot_pidfd[k] = -1;
    t->slot_pid[k] = 0;
    t->slot_used[k] = 0;
}

/** Is process @p pid (or the one behind @p pidfd) still alive? */
static int holder_alive(int pidfd, pid_t pid)
{
    if (pidfd >= 0) {
        struct pollfd p = { .fd = pidfd, .events = POLLIN };
        return poll(&p, 1, 0) == 0; /* readable = exited */
    }
    return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}

void emd_ctl_detach(emd_ctl_t *t, unsigned i, const char *why, int loud)
{
    struct emd_client *c = &t->core->cl[i];
    if (c->fd < 0)
        return;
    if (loud || t->verbose)
        t->log("endpoint %u (pid %u, uid %u) detached: %s; rx %llu delivered, %llu dropped (ring "
               "full)",
               c->ep, c->pid, c->uid, why, (unsigned long long)atomic_load(&c->h->st.rx_delivered),
               (unsigned long long)atomic_load(&c->h->st.rx_ring_full));
    uint16_t k = c->slot;
    if (k != EMD_BULKQ_NO_SLOT && k < EMD_BULKQ_SLOTS_MAX) {
        /* an bulk-queue holder is a DPDK secondary: closing its socket does
         * not stop it using the queues, so the slot waits for its exit */
        if (holder_alive(t->slot_pidfd[k], t->slot_pid[k])) {
            t->slots_held++;
            t->log("bulk-queue slot %u stays taken until pid %u exits (it detached alive)", k,
                   (unsigned)t->slot_pid[k]);
        } else {
            slot_free(t, k);
        }
    }
    munmap(c->h, c->size);
    close(c->fd);
    emd_core_forget(t->core, i);
    t->detaches++;
}

void emd_ctl_reap(emd_ctl_t *t)
{
    int i;
    while ((i = emd_core_take_doomed(t->core)) >= 0)
        emd_ctl_detach(t, (unsigned)i, t->core->cl[i].doomed, 1);
    for (uint16_t k = 0; k < t->bulk_slots && k < EMD_BULKQ_SLOTS_MAX; k++) {
        if (!t->slot_used[k])
            continue;
        int attached = 0;
        for (unsigned c = 0; c < t->core->max_clients && !attached; c++)
            attached = t->core->cl[c].fd >= 0 && t->core->cl[c].slot == k;
        if (!attached && !holder_alive(t->slot_pidfd[k], t->slot_pid[k])) {
            t->log("bulk-queue slot %u free again (pid %u exited)", k, (unsigned)t->slot_pid[k]);
            slot_free(t, k);
        }
    }
}

/** A sealed memfd of @p size bytes, mapped.  @return the fd, or -1 (errno). */
static int make_region(uint16_t ep, uint64_t size, void **mem)
{
    char name[32];
    snprintf(name, sizeof name, "emd-ep%u", ep);
    int mfd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    *mem = MAP_FAILED;
    /* sealed before the client gets it: it can neither shrink it (our
     * next access would be a SIGBUS) nor grow it, nor change the seals */
    if (mfd >= 0 && ftruncate(mfd, (off_t)size) == 0 &&
        fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0)
        *mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
    if (*mem == MAP_FAILED) {
        int e = errno;
        if (mfd >= 0)
            close(mfd);
        errno = e;
        return -1;
    }
    return mfd;
}

/** The free endpoint id after the last one given (rotating through 1..65534). */
static uint16_t next_endpoint(emd_ctl_t *t)
{
    uint16_t ep = t->next_ep;
    for (unsigned tries = 0; t->core->ep2cl[ep] || ep == 0 || ep == EMD_EP_CONTROL; tries++) {
        ep++;
        if (tries > 70000)
            return 0;
    }
    t->next_ep = (uint16_t)(ep + 1);
    return ep;
}

/** Fill the region's bulk-queue block; @return the slot given (or none). */
static uint16_t give_slot(emd_ctl_t *t, struct emd_shm_hdr *h, pid_t pid)
{
    uint16_t slot = EMD_BULKQ_NO_SLOT;
    memset(h->bulkq.why, 0, sizeof h->bulkq.why);
    if (t->bulk_slots) {
        h->bulkq.slots = t->bulk_slots;
        h->bulkq.queues = emd_bulkq_queues(t->bulk_slots);
        memcpy(h->bulkq.prefix, t->bulk_prefix, sizeof h->bulkq.prefix);
        memcpy(h->bulkq.port, t->bulk_port, sizeof h->bulkq.port);
        for (uint16_t k = 0; k < t->bulk_slots; k++)
            if (!t->slot_used[k]) {
                slot = k;
                break;
            }
        if (slot == EMD_BULKQ_NO_SLOT)
            snprintf(h->bulkq.why, sizeof h->bulkq.why, "all %u slots in use (emd --bulk-slots)",
                     t->bulk_slots);
    } else {
        snprintf(h->bulkq.why, sizeof h->bulkq.why, "%s", t->bulk_why);
    }
    h->bulkq.slot = slot;
    if (slot != EMD_BULKQ_NO_SLOT) {
        t->slot_used[slot] = 1;
        t->slot_pid[slot] = pid;
        /* the holder's pidfd, taken now (not at detach: the pid may be
         * reused by then); -1 (old kernel): kill(pid, 0) instead */
        t->slot_pidfd[slot] = pid > 0 ? pidfd_open(pid, 0) : -1;
    }
    return slot;
}

static int send_ok(int fd, uint64_t instance, uint64_t size, uint16_t ep, int mfd)
{
    struct emd_ctl_msg ok;
    emd_ctl_init(&ok, EMD_CTL_ATTACH_OK);
    ok.instance = instance;
    ok.shm_size = size;
    ok.endpoint = ep;
    return emd_send_fd(fd, &ok, sizeof ok, mfd);
}

/** Answer a STATUS_REQ on @p fd with the counters, then close it. */
static void status_reply(emd_ctl_t *t, int fd, pid_t pid, uid_t uid)
{
    struct emd_ctl_status s;
    t->status_reqs++;
    emd_ctl_status_fill(t, &s);
    /* the socket's buffer is empty: one 536-byte message fits; never wait */
    if (send(fd, &s, sizeof s, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)sizeof s)
        t->log("STATUS reply to pid %d uid %u not sent: %s", (int)pid, (unsigned)uid,
               strerror(errno));
    else if (t->verbose)
        t->log("STATUS answered for pid %d uid %u", (int)pid, (unsigned)uid);
    close(fd);
}

/** Pending connection @p fd (peer @p pid/@p uid) is readable: its ATTACH_REQ, or garbage. */
static void attach(emd_ctl_t *t, int fd, pid_t pid, uid_t uid)
{
    emd_core_t *core = t->core;
    uint8_t buf[sizeof(struct emd_ctl_msg) + 1];
    struct emd_ctl_msg m = { 0 };
    const char *why = "connection closed before a request";
    ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    int ok = n > 0 && emd_ctl_check(buf, (size_t)n, &m, &why) == 0;
    if (ok && m.type == EMD_CTL_STATUS_REQ) {
        status_reply(t, fd, pid, uid);
        return;
    }
    if (!ok || m.type != EMD_CTL_ATTACH_REQ) {
        if (ok)
            why = "expected ATTACH_REQ or STATUS_REQ";
        if (n > 0)
            t->refused_req++;
        t->log("refused pid %d uid %u: %s", (int)pid, (unsigned)uid, why);
        send_err(fd, EPROTO, "bad request");
        close(fd);
        return;
    }
    unsigned i;
    for (i = 0; i < core->max_clients && core->cl[i].fd >= 0; i++)
        ;
    uint16_t ep = 0;
    int over_share = t->max_per_uid && clients_of_uid(t, uid) >= t->max_per_uid;
    const char *busy = i == core->max_clients     ? "too many clients"
                       : over_share               ? "uid share full"
                       : !(ep = next_endpoint(t)) ? "no free endpoint"
                                                  : NULL;
    if (busy) {
        t->refused_busy++;
        t->refused_uid_share += over_share && i < core->max_clients;
        t->log("refused pid %d uid %u: %s (emd --max-clients %u, --max-per-uid %u)", (int)pid,
               (unsigned)uid, busy, core->max_clients, t->max_per_uid);
        send_err(fd, EBUSY, busy);
        close(fd);
        return;
    }
    uint32_t ss;
    uint64_t size = emd_shm_size(core->mtu, t->rx_size, t->tx_slots, &ss);
    void *mem;
    int mfd = make_region(ep, size, &mem);
    if (mfd < 0) {
        int e = errno;
        t->log("cannot make a %llu-byte region for pid %d: %s", (unsigned long long)size, (int)pid,
               strerror(e));
        send_err(fd, e, "no memory for the rings");
        close(fd);
        return;
    }
    struct emd_shm_hdr *h = mem;
    emd_shm_init(h, size, core->mtu, t->rx_size, t->tx_slots, t->instance, ep, core->mac);
    if (core->ack)
        h->flags |= EMD_SHM_F_DAEMON_ACKS;
    if (core->framing == EMD_FRAMING_UDP)
        h->flags |= EMD_SHM_F_UDP;
    atomic_store(&h->rx_loss_ppm, (uint32_t)(core->loss.p * 1e6));
    uint16_t slot = give_slot(t, h, pid);
    atomic_store(&h->heartbeat_ns, em_clock_ns());
    int sent = send_ok(fd, t->instance, size, ep, mfd);
    int e = errno;
    close(mfd); /* the mapping keeps the memory */
    if (sent != 0 || emd_core_attach(core, i, fd, h, size, t->rx_size, t->tx_slots, ep,
                                     (uint32_t)pid, (uint32_t)uid, slot) != 0) {
        t->log("attach of pid %d failed while answering: %s", (int)pid,
               sent ? strerror(e) : "no memory");
        if (slot != EMD_BULKQ_NO_SLOT)
            slot_free(t, slot);
        munmap(mem, size);
        close(fd);
        return;
    }
    t->attaches++;
    if (t->verbose)
        t->log("pid %d (uid %u) attached as endpoint %u (%llu-byte region), bulk-queue slot %d",
               (int)pid, (unsigned)uid, ep, (unsigned long long)size,
               slot == EMD_BULKQ_NO_SLOT ? -1 : (int)slot);
}

/** A new connection: check who it is, then wait for (or read) its ATTACH_REQ. */
static void accept_pending(emd_ctl_t *t, uint64_t now)
{
    int fd = accept4(t->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0)
        return;
    struct ucred cr;
    socklen_t cl = sizeof cr;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) != 0) {
        t->log("refused a client: no peer credentials (%s)", strerror(errno));
        close(fd);
        return;
    }
    if (!allowed(t, fd, cr.uid, cr.gid)) {
        t->refused_cred++;
        t->log("refused pid %d uid %u gid %u: not allowed to attach (emd --uid/--group; see "
               "docs/daemon.md \"Who may attach\")",
               (int)cr.pid, (unsigned)cr.uid, (unsigned)cr.gid);
        /* read what it sent first: closing a unix socket with unread data
         * resets the connection, and the client would not see the reason */
        char junk[sizeof(struct emd_ctl_msg)];
        struct pollfd jp = { .fd = fd, .events = POLLIN };
        if (poll(&jp, 1, 10) > 0)
            (void)recv(fd, junk, sizeof junk, MSG_DONTWAIT);
        send_err(fd, EACCES, "not allowed to attach");
        close(fd);
        return;
    }
    unsigned same = 0, free_i = EMD_PENDING;
    for (unsigned i = 0; i < EMD_PENDING; i++) {
        if (t->pending[i].fd < 0 && free_i == EMD_PENDING)
            free_i = i;
        same += t->pending[i].fd >= 0 && t->pending[i].uid == cr.uid;
    }
    struct pollfd p = { .fd = fd, .events = POLLIN };
    if (poll(&p, 1, 0) > 0) { /* the request is usually there already */
        attach(t, fd, cr.pid, cr.uid);
        return;
    }
    if (free_i == EMD_PENDING || same >= EMD_PENDING_PER_UID) {
        t->refused_busy++;
        t->log("refused pid %d uid %u: too many connections waiting to attach", (int)cr.pid,
               (unsigned)cr.uid);
        send_err(fd, EBUSY, "too many attaching");
        close(fd);
        return;
    }
    t->pending[free_i].fd = fd;
    t->pending[free_i].since = now;
    t->pending[free_i].uid = cr.uid;
    t->pending[free_i].pid = cr.pid;
    t->pending[free_i].gid = cr.gid;
}

/** Client @p i's socket is readable: up to EMD_CTL_BUDGET messages, or EOF. */
static void client_msgs(emd_ctl_t *t, unsigned i)
{
    struct emd_client *c = &t->core->cl[i];
    for (unsigned k = 0; k < EMD_CTL_BUDGET && c->fd >= 0; k++) {
        uint8_t buf[sizeof(struct emd_ctl_msg) + 1];
        ssize_t n = recv(c->fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n == 0) {
            emd_ctl_detach(t, i, "socket closed (process exited or was killed)", 0);
            return;
        }
        if (n < 0)
            return; /* drained (or EAGAIN) */
        struct emd_ctl_msg m;
        const char *why = NULL;
        if (emd_ctl_check(buf, (size_t)n, &m, &why) != 0 ||
            (m.type != EMD_CTL_WAKE && m.type != EMD_CTL_FLOW)) {
            t->bad_ctl++;
            emd_core_doom(t->core, i, why ? why : "unexpected control message");
            return;
        }
        if (m.type == EMD_CTL_FLOW) {
            if (emd_core_add_flow(t->core, i, &m.flow, &why) == 0)
                t->flows_added++;
            else if (t->verbose)
                t->log("endpoint %u (pid %u): flow %u -> %u not acknowledged by the daemon: %s",
                       c->ep, c->pid, m.flow.peer, m.flow.self, why);
        }
        /* WAKE: its only job was to end the sleep */
    }
}

void emd_ctl_poll(emd_ctl_t *t, uint64_t timeout_ns)
{
    emd_core_t *core = t->core;
    nfds_t n = 0;
    t->pfd[n++] = (struct pollfd){ .fd = t->listen_fd, .events = POLLIN };
    for (unsigned i = 0; i < core->max_clients; i++)
        t->pfd[n++] = (struct pollfd){ .fd = core->cl[i].fd, .events = POLLIN }; /* -1: ignored */
    for (unsigned i = 0; i < EMD_PENDING; i++)
        t->pfd[n++] = (struct pollfd){ .fd = t->pending[i].fd, .events = POLLIN };
    struct timespec ts = { .tv_sec = (time_t)(timeout_ns / 1000000000ull),
                           .tv_nsec = (long)(timeout_ns % 1000000000ull) };
    int r = ppoll(t->pfd, n, &ts, NULL);
    uint64_t now = em_clock_ns();
    for (unsigned i = 0; i < EMD_PENDING; i++) {
        int fd = t->pending[i].fd;
        if (fd < 0)
            continue;
        if (r > 0 && t->pfd[1 + core->max_clients + i].revents) {
            t->pending[i].fd = -1;
            attach(t, fd, t->pending[i].pid, t->pending[i].uid);
        } else if (now - t->pending[i].since > EMD_PENDING_NS) {
            t->pending[i].fd = -1;
            t->log("refused pid %d uid %u: no attach request within %llu ms",
                   (int)t->pending[i].pid, (unsigned)t->pending[i].uid,
                   (unsigned long long)(EMD_PENDING_NS / 1000000u));
            close(fd);
        }
    }
    if (r <= 0)
        return;
    for (unsigned i = 0; i < core->max_clients; i++) {
        short re = t->pfd[i + 1].revents;
        if (core->cl[i].fd < 0 || !re || t->pfd[i + 1].fd != core->cl[i].fd)
            continue;
        if (re & POLLIN)
            client_msgs(t, i);
        if (core->cl[i].fd >= 0 && (re & (POLLHUP | POLLERR | POLLNVAL)) && !(re & POLLIN))
            emd_ctl_detach(t, i, "socket hang-up (process exited or was killed)", 0);
    }
    if (t->pfd[0].revents & POLLIN)
        accept_pending(t, now);
    emd_ctl_reap(t);
}
