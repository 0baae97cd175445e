/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file lock.h
 * The one lock a front end puts around an engine (or around several engines
 * that share state) when its caller may enter from several threads at once
 * (MPI_THREAD_MULTIPLE, FI_THREAD_SAFE): docs/design.md, "Threads".
 *
 * The engine and the protocol take no lock of their own; the front end
 * takes this one at every entry point (send, put, registration, progress,
 * close) and holds it while the engine runs its callbacks.  It is
 * recursive: a callback (a message delivered to Open MPI's ob1, which
 * answers it at once with btl_send or btl_put) re-enters the front end on
 * the same thread, and em_engine_progress() called from a callback returns
 * 0 at once anyway.  Progress takes it with em_lock_try(): a thread that
 * finds another one progressing returns at once (that one is doing the
 * work) instead of queueing behind it.
 *
 * Off (em_lock_init(l, false)): every call is one predictable branch and
 * no atomic operation, for the single-threaded job that asked for no
 * thread level.  Front ends that can do better swap in their locked entry
 * points only when the lock is on (the BTLs do), so the single-threaded
 * job does not even pay the branch.
 */
#ifndef EM_ENGINE_LOCK_H
#define EM_ENGINE_LOCK_H

#include <pthread.h>
#include <stdbool.h>

typedef struct em_lock {
    pthread_mutex_t mu; /* recursive; initialised only when on */
    bool on;
} em_lock_t;

/** @p on false: a lock that does nothing.  @return 0 or a positive errno. */
static inline int em_lock_init(em_lock_t *l, bool on)
{
    l->on = false;
    if (!on)
        return 0;
    pthread_mutexattr_t a;
    int rc = pthread_mutexattr_init(&a);
    if (rc)
        return rc;
    rc = pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    if (!rc)
        rc = pthread_mutex_init(&l->mu, &a);
    pthread_mutexattr_destroy(&a);
    if (!rc)
        l->on = true;
    return rc;
}

static inline void em_lock_fini(em_lock_t *l)
{
    if (l->on)
        pthread_mutex_destroy(&l->mu);
    l->on = false;
}

static inline void em_lock_take(em_lock_t *l)
{
    if (l->on)
        pthread_mutex_lock(&l->mu);
}

/** @return true when the caller holds the lock now (always, when off; also
 *  when this thread held it already: it is recursive). */
static inline bool em_lock_try(em_lock_t *l)
{
    return !l->on || pthread_mutex_trylock(&l->mu) == 0;
}

static inline void em_lock_drop(em_lock_t *l)
{
    if (l->on)
        pthread_mutex_unlock(&l->mu);
}

#endif
