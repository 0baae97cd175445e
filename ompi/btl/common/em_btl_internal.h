/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file em_btl_internal.h
 * What the files of the common BTL share and nothing else sees (em_btl.h is
 * the components' interface).  The module is split along its seams:
 *   em_btl.c       component side: parameters checked, links opened, one
 *                  engine per link, modex published, progress
 *   em_btl_ops.c   the BTL 3.1 module functions (add_procs, alloc, send,
 *                  sendi, put, registration, finalize) and descriptor pools
 *   em_btl_peer.c  engine callbacks (delivery, completion, peer failure),
 *                  modex entries, pair keys, the order over several links
 *   em_btl_name.c  named links: first contact, the peers' names, strangers
 *   em_btl_rma.c   one-sided: get and atomics over the engine, every
 *                  one-sided operation to ourselves applied in place
 *   em_btl_lock.c  the module functions with the component's lock around
 *                  them (MPI_THREAD_MULTIPLE)
 * Threading: as em_btl.h; below MPI_THREAD_MULTIPLE one thread at a time,
 * with it every function here runs with the component's lock held.
 */
#ifndef EM_BTL_INTERNAL_H
#define EM_BTL_INTERNAL_H

#include <stddef.h>

#include "em_btl.h"

#define HELP_FILE EM_BTL_HELP_FILE

/** The struct of type @p type whose member @p member is at @p ptr. */
#define container_of(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

/** Our module behind Open MPI's base module (super is its first member). */
static inline em_btl_module_t *em_btl_mod(struct mca_btl_base_module_t *b)
{
    return container_of(b, em_btl_module_t, super);
}

/* em_btl_ops.c */
/** Return a send descriptor to its size class's free list. */
void em_btl_frag_put(em_btl_module_t *m, em_btl_frag_t *f);
/** A put/get/atomic descriptor from the free list (NULL: out of memory). */
em_btl_rdma_t *em_btl_rdma_get(em_btl_module_t *m);
/** Return a put/get/atomic descriptor to the free list. */
void em_btl_rdma_put(em_btl_module_t *m, em_btl_rdma_t *r);
/** em_btl_rdma_get() with the operation's endpoint, local buffer and
 *  completion callback filled in (NULL: out of memory). */
em_btl_rdma_t *em_btl_rdma_start(em_btl_module_t *m, struct mca_btl_base_endpoint_t *ep,
                                 void *local_address,
                                 mca_btl_base_registration_handle_t *local_handle,
                                 mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                                 void *cbdata);
/** OPAL's code for an engine status (0, -EM_EACCES, -EM_EPEERFAIL ...). */
int em_btl_opal_status(int status);

/* em_btl_rma.c */
/** Set @p b's one-sided functions, flags and limits (get, atomics) and
 *  put to ourselves; before registration of the MCA parameters. */
void em_btl_rma_defaults(mca_btl_base_module_t *b);
/** After the engine exists: limits that depend on it (get_limit). */
void em_btl_rma_limits(em_btl_module_t *m);
/** btl_put to this process: the bytes copied in place. */
int em_btl_put_self(em_btl_module_t *m, struct mca_btl_base_endpoint_t *ep, void *local_address,
                    uint64_t remote_address, mca_btl_base_registration_handle_t *local_handle,
                    mca_btl_base_registration_handle_t *remote_handle, size_t size,
                    mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata);
/** btl_finalize: drain, print stats, destroy the engine, free everything. */
int em_btl_finalize(struct mca_btl_base_module_t *btl);

/* em_btl_lock.c */
/** MPI_THREAD_MULTIPLE: give @p m (the first module, before its siblings
 *  copy it) a lock and the locked module functions.  @return 0 or -1. */
int em_btl_use_lock(em_btl_module_t *m);

/* em_btl_peer.c */
/** Callbacks the engine of every module calls. */
extern const em_engine_ops_t em_btl_engine_ops;
/** A process's modex entry, checked; NULL when it has none we can use
 *  (the caller frees it). */
struct em_btl_modex *em_btl_read_modex(em_btl_module_t *m, const opal_process_name_t *name);
/** The order state of @p peer when its messages carry order numbers, else NULL. */
em_order_t *em_btl_numbered(em_btl_module_t *m, uint32_t peer);
/** Give the engine @p vpid's address and pair keys from @p mx.
 *  @return 0, or -1 when the entry does not fit this module. */
int em_btl_set_peer_from(em_btl_module_t *m, uint32_t vpid, const struct em_btl_modex *mx);
/** Free the per-peer order states (NULL is fine). */
void em_btl_order_free(struct em_btl_order *o, uint32_t npeers);
/* em_btl_name.c (named links: first contact) */
/** Is module @p m's link named (first contact), by its link and the
 *  btl_<name>_names setting? */
bool em_btl_link_named(const em_btl_module_t *m, const em_link_t *link);
/** After the engine exists: first contact on, our name drawn, the number
 *  -> vpid table.  @return 0, or -1 with @p err. */
int em_btl_name_open(em_btl_module_t *m, char *err, size_t errlen);
/** Free what em_btl_name_open and the strangers' map took. */
void em_btl_name_close(em_btl_module_t *m);
/** Engine callbacks: a handshake completed; may a stranger bind? */
void em_btl_cb_contact(void *u, uint32_t peer, bool again);
bool em_btl_cb_admit(void *u, const struct em_conn_name *name);
/** Peer @p proc's link is named and ours numbered, or the reverse: say so. */
void em_btl_names_mismatch(em_btl_module_t *m, const opal_proc_t *proc);
/** btl_<name>_print_stats: the handshake's counters (named links). */
void em_btl_name_stats(em_btl_module_t *m);
/** Named links: put @p ep's name from its modex entry @p mx into the
 *  engine (no traffic until the first operation) and map the engine's
 *  number back to it.  @return 0, or -1 after a message saying why. */
int em_btl_insert_named(em_btl_module_t *m, struct mca_btl_base_endpoint_t *ep,
                        const struct em_btl_modex *mx);

/** The vpid behind the engine's peer number @p peer (EM_BTL_NO_VPID: none). */
static inline uint32_t em_btl_vpid_of(const em_btl_module_t *m, uint32_t peer)
{
    if (!m->named)
        return peer < m->npeers ? peer : EM_BTL_NO_VPID;
    return peer < m->nslots ? m->slot_vpid[peer] : EM_BTL_NO_VPID;
}

#endif
