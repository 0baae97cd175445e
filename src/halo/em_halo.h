/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * em_halo.h - zero-copy-minded boundary exchange for domain decomposition
 * ([bds], "DDM-BDS"), on top of MPI so it runs over any BTL.
 *
 * The model:
 *  - The application keeps its own array.  For every neighbour it describes
 *    ONCE a boundary table: the send items and the receive items, each an
 *    address and a size inside that array (em_halo_add_neighbor).
 *  - em_halo_commit() checks the tables against the neighbours' (item
 *    counts and sizes must match pairwise) before any data moves, and then
 *    creates one persistent MPI request per item (MPI_Send_init /
 *    MPI_Recv_init on a private duplicate of the communicator).
 *  - Each step only starts and completes those requests (MPI_Startall /
 *    MPI_Waitall): no per-step setup, no packing, no intermediate buffer in
 *    this library.  Receives can be pre-posted (em_halo_post_recvs) so that
 *    arriving data is matched at once and written straight into the
 *    application's array (see docs/halo.md for the copies per path).
 *
 * Patterns: a pair with send items on one side only is one-way; with send
 * and receive items on both sides two-way; "alternating" is two handles
 * (A->B and B->A) used one after the other.
 *
 * Threading: a handle is used by one thread at a time (MPI_THREAD_SINGLE is
 * enough).  Every function returns an em_halo_rc value (0 = EM_HALO_OK);
 * after an error em_halo_errmsg() has a one-line explanation.
 *
 * Collective calls: em_halo_create(), em_halo_commit() and em_halo_free()
 * must be called by every rank of the communicator (ranks without
 * neighbours too), in the same order for all handles.
 */
#ifndef EM_HALO_H
#define EM_HALO_H

#include <mpi.h>
#include <stddef.h>

#include "halo/halo_table.h" /* enum em_halo_rc, EM_HALO_MAX_ITEMS */

typedef struct em_halo em_halo_t;

/** One boundary item: `size` bytes at `addr` in the application's array. */
typedef struct em_halo_item {
    void *addr;
    size_t size;
} em_halo_item_t;

/**
 * Creates a handle on a private duplicate of `comm` (collective over comm).
 * @return EM_HALO_OK, EM_HALO_EINVAL (out NULL), EM_HALO_ENOMEM, EM_HALO_EMPI.
 * On error *out is NULL and there is no handle to ask for a message; the
 * codes are described by em_halo_strerror().
 */
int em_halo_create(MPI_Comm comm, em_halo_t **out);

/**
 * Adds the boundary table for neighbour `rank` (a rank of the handle's
 * communicator): nsend send items and nrecv receive items (either may be
 * 0, not both).  The item arrays are copied; the memory they describe must
 * stay valid until em_halo_free().  Send item i travels to the neighbour's
 * receive item i for this rank.  Local errors (bad rank, neighbour given
 * twice, NULL address, size 0 or > INT_MAX, more than EM_HALO_MAX_ITEMS
 * items, call after commit) return EM_HALO_EINVAL / EM_HALO_ESTATE.
 */
int em_halo_add_neighbor(em_halo_t *h, int rank, const em_halo_item_t *send, int nsend,
                         const em_halo_item_t *recv, int nrecv);

/**
 * Checks and freezes the tables (collective over the communicator):
 *  1. local checks: receive items overlapping other items;
 *  2. the neighbour relation must be symmetric (rank A lists B iff B lists A);
 *  3. each pair exchanges its table descriptions (counts and sizes) and both
 *     ends compare them;
 *  4. the persistent requests are created.
 * Every rank returns the same success/failure: a rank whose own check failed
 * returns that code (EM_HALO_EINVAL, EM_HALO_ENEIGHBOR, EM_HALO_EMISMATCH,
 * EM_HALO_EPROTO) with a message naming the neighbour, the item index and
 * both sizes; the other ranks return EM_HALO_EPEER naming the first failing
 * rank.  No data has moved when it fails; the handle can then only be freed.
 */
int em_halo_commit(em_halo_t *h);

/** Starts every receive of the handle (pre-posting).  From now until the
 * matching em_halo_wait() the application must not touch receive items. */
int em_halo_post_recvs(em_halo_t *h);

/** Starts every send.  Send items must not change until em_halo_wait(). */
int em_halo_start_sends(em_halo_t *h);

/** Completes every started receive and send. */
int em_halo_wait(em_halo_t *h);

/** One whole step: post the receives (unless already posted), start the
 * sends, wait for all. */
int em_halo_exchange(em_halo_t *h);

/** Frees the handle, its requests and its communicator (MPI_Comm_free is
 * collective: every rank frees its handles in the same order); *h becomes
 * NULL.  Must not be called while operations are started and not waited for
 * (returns EM_HALO_ESTATE and frees nothing).  NULL or *h == NULL: no-op. */
int em_halo_free(em_halo_t **h);

/** The last error's explanation ("" if none). */
const char *em_halo_errmsg(const em_halo_t *h);

/** Short text for a return code. */
const char *em_halo_strerror(int rc);

/** Counters: completed steps (em_halo_wait calls that completed sends or
 * receives) and bytes per step in each direction. */
struct em_halo_info {
    int neighbors;
    int send_items, recv_items;
    size_t send_bytes, recv_bytes; /* per step */
    long waits;
};
int em_halo_get_info(const em_halo_t *h, struct em_halo_info *info);

#endif /* EM_HALO_H */
