/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file emo_wait.c
 * The endpoints bound to a CQ or a counter (emo_ep_set_t), and the wait
 * object that lets a caller sleep until they may have work: fi_cq_sread,
 * fi_cntr_wait, FI_GETWAIT and fi_trywait.
 *
 * The wait object is an epoll set of
 *  - each bound endpoint's link descriptor (em_link_wait_fd: the UDP
 *    receive socket), readable when frames wait in the kernel;
 *  - an eventfd, written when a completion is queued while a waiter may
 *    sleep (armed: fi_trywait said 0, or fi_cq_sread / fi_cntr_wait is
 *    about to sleep), and by fi_cq_signal;
 *  - a timerfd, set when armed to the bound engines' next timer
 *    (em_engine_next_deadline), so that retransmissions, delayed ACKs and
 *    liveness probes still go out while the caller sleeps, and to
 *    EMO_WAIT_POLL_NS from now when a bound link has no descriptor (DPDK,
 *    emd: polled rings), so that such a waiter sleeps in short steps
 *    instead of spinning.
 * A waiter sleeps only after a progress call that did nothing: a link may
 * hold frames in its own memory that its descriptor does not show
 * (link.h, wait_fd).
 *
 * Threading: FI_THREAD_DOMAIN; fi_cq_signal (emo_wait_kick) may come from
 * another thread (an eventfd write).
 */
#include "emo_prov.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "util/clock.h"

void emo_ep_set_init(emo_ep_set_t *s)
{
    memset(s, 0, sizeof *s);
    s->epfd = s->evfd = s->tfd = -1;
    atomic_init(&s->armed, false);
}

/* the wait object's descriptors, closed (those it has) */
static void close_fds(emo_ep_set_t *s)
{
    if (s->epfd >= 0)
        close(s->epfd);
    if (s->evfd >= 0)
        close(s->evfd);
    if (s->tfd >= 0)
        close(s->tfd);
    s->epfd = s->evfd = s->tfd = -1;
}

void emo_ep_set_fini(emo_ep_set_t *s)
{
    free(s->v);
    s->v = NULL;
    s->n = s->cap = 0;
    close_fds(s);
}

static int watch_fd(emo_ep_set_t *s, int fd)
{
    struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };
    if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev) != 0 && errno != EEXIST) {
        FI_WARN(&emo_prov, FI_LOG_CQ, "epoll_ctl(ADD, fd %d): %s\n", fd, strerror(errno));
        return -FI_EINVAL;
    }
    return 0;
}

/* put @p r's link descriptor in the wait object (if both exist); one
 * left out (none, or epoll refused it) makes the waiter poll in short
 * sleeps (emo_wait_arm) */
static void ref_watch(emo_ep_set_t *s, emo_ep_ref_t *r)
{
    r->fd = -1;
    int fd = em_link_wait_fd(r->ep->link);
    if (fd >= 0 && s->epfd >= 0 && watch_fd(s, fd) == 0)
        r->fd = fd;
}

int emo_ep_set_add(emo_ep_set_t *s, struct emo_ep *ep, emo_progress_fn progress)
{
    for (unsigned i = 0; i < s->n; i++)
        if (s->v[i].ep == ep)
            return 0;
    if (s->n == s->cap) {
        unsigned cap = s->cap ? s->cap * 2 : 8;
        emo_ep_ref_t *v = realloc(s->v, cap * sizeof *v);
        if (!v)
            return -FI_ENOMEM;
        s->v = v;
        s->cap = cap;
    }
    emo_ep_ref_t *r = &s->v[s->n++];
    r->ep = ep;
    r->progress = progress;
    ref_watch(s, r);
    return 0;
}

void emo_ep_set_remove(emo_ep_set_t *s, struct emo_ep *ep)
{
    for (unsigned i = 0; i < s->n; i++) {
        emo_ep_ref_t *r = &s->v[i];
        if (r->ep != ep)
            continue;
        if (r->fd >= 0)
            (void)epoll_ctl(s->epfd, EPOLL_CTL_DEL, r->fd, NULL);
        s->v[i] = s->v[--s->n];
        return;
    }
}

int emo_ep_set_progress(const emo_ep_set_t *s)
{
    int work = 0;
    for (unsigned i = 0; i < s->n; i++)
        work += s->v[i].progress(s->v[i].ep);
    return work;
}

int emo_wait_open(emo_ep_set_t *s)
{
    if (s->epfd >= 0)
        return 0;
    s->epfd = epoll_create1(EPOLL_CLOEXEC);
    s->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    s->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (s->epfd < 0 || s->evfd < 0 || s->tfd < 0 || watch_fd(s, s->evfd) != 0 ||
        watch_fd(s, s->tfd) != 0) {
        FI_WARN(&emo_prov, FI_LOG_CQ, "cannot make a wait object (epoll, eventfd, timerfd): %s\n",
                strerror(errno));
        int e = errno == EMFILE || errno == ENFILE ? -FI_EMFILE : -FI_ENOMEM;
        close_fds(s);
        return e;
    }
    /* the endpoints bound already */
    for (unsigned i = 0; i < s->n; i++)
        ref_watch(s, &s->v[i]);
    return 0;
}

void emo_wait_kick(emo_ep_set_t *s)
{
    if (s->evfd < 0)
        return;
    uint64_t one = 1;
    /* EAGAIN: the counter is full, i.e. readable already */
    while (write(s->evfd, &one, sizeof one) < 0 && errno == EINTR)
        ;
}

int emo_wait_arm(emo_ep_set_t *s, uint64_t until_ns)
{
    if (s->epfd < 0)
        return -FI_EINVAL;
    uint64_t v;
    while (read(s->evfd, &v, sizeof v) < 0 && errno == EINTR)
        ;
    uint64_t te = UINT64_MAX; /* the engines' next timer */
    bool poll = false;        /* a link the epoll set does not watch */
    for (unsigned i = 0; i < s->n; i++) {
        const struct emo_ep *ep = s->v[i].ep;
        uint64_t d = ep->eng ? em_engine_next_deadline(ep->eng) : UINT64_MAX;
        if (d < te)
            te = d;
        poll |= s->v[i].fd < 0 && ep->link;
    }
    uint64_t now = em_clock_ns();
    /* a timer due already was run by the progress call just made (the
     * engine's deadline is a lower bound, recomputed lazily): look again
     * shortly, not at once, or the waiter would spin on the timerfd */
    if (te != UINT64_MAX && te < now + EMO_WAIT_MIN_NS)
        te = now + EMO_WAIT_MIN_NS;
    if (poll && now + EMO_WAIT_POLL_NS < te)
        te = now + EMO_WAIT_POLL_NS;
    uint64_t t = until_ns < te ? until_ns : te;
    /* absolute on CLOCK_MONOTONIC (em_now_ns's clock); a time passed fires
     * at once; all zero would disarm it, hence at least 1 ns */
    struct itimerspec its = { 0 };
    if (t != UINT64_MAX) {
        if (t == 0)
            t = 1;
        its.it_value.tv_sec = (time_t)(t / 1000000000u);
        its.it_value.tv_nsec = (long)(t % 1000000000u);
    }
    if (timerfd_settime(s->tfd, TFD_TIMER_ABSTIME, &its, NULL) != 0) {
        FI_WARN(&emo_prov, FI_LOG_CQ, "timerfd_settime: %s\n", strerror(errno));
        return -FI_EINVAL;
    }
    atomic_store(&s->armed, true);
    return 0;
}

int emo_wait_sleep(emo_ep_set_t *s)
{
    if (s->epfd < 0)
        return -FI_EINVAL;
    struct epoll_event ev[8];
    int r = epoll_wait(s->epfd, ev, 8, -1); /* the timer bounds it */
    atomic_store(&s->armed, false);
    if (r < 0 && errno != EINTR) {
        FI_WARN(&emo_prov, FI_LOG_CQ, "epoll_wait: %s\n", strerror(errno));
        return -FI_EINVAL;
    }
    return 0;
}

int emo_trywait(struct fid_fabric *fabric, struct fid **fids, int count)
{
    (void)fabric;
    for (int i = 0; i < count; i++) {
        emo_ep_set_t *s;
        bool ready = false;
        switch (fids[i]->fclass) {
        case FI_CLASS_CQ: {
            struct emo_cq *cq = container_of_emo(fids[i], struct emo_cq, cq.fid);
            s = &cq->eps;
            if (!cq->count && !cq->err_head && emo_ep_set_progress(s) == 0)
                ready = cq->count || cq->err_head;
            else
                ready = true;
            break;
        }
        case FI_CLASS_CNTR:
            s = &container_of_emo(fids[i], struct emo_cntr, cntr.fid)->eps;
            ready = emo_ep_set_progress(s) > 0; /* it may have moved */
            break;
        default: return -FI_EINVAL; /* no wait sets (fi_wait_open) */
        }
        if (s->epfd < 0)
            return -FI_EINVAL; /* FI_WAIT_NONE: nothing to wait on */
        if (ready)
            return -FI_EAGAIN;
        int rc = emo_wait_arm(s, UINT64_MAX);
        if (rc)
            return rc;
    }
    return 0;
}

int emo_wait_control(emo_ep_set_t *s, enum fi_wait_obj wait_obj, int command, void *arg)
{
    switch (command) {
    case FI_GETWAIT:
        if (!arg)
            return -FI_EINVAL;
        if (wait_obj != FI_WAIT_FD || s->epfd < 0)
            return -FI_ENODATA; /* FI_WAIT_NONE: no wait object to give */
        *(int *)arg = s->epfd;
        return 0;
    case FI_GETWAITOBJ:
        if (!arg)
            return -FI_EINVAL;
        *(enum fi_wait_obj *)arg = wait_obj;
        return 0;
    default: return -FI_ENOSYS;
    }
}
