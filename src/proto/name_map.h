/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file name_map.h
 * A map from peer names (proto/conn.h em_conn_name_t: link address,
 * endpoint index, nonce; all three compared) to 32-bit values, for a front
 * end that learns who a stranger is by its name: the Open MPI BTLs map a
 * peer that completed first contact before add_procs named it to its vpid
 * (ompi/btl/common/em_btl_peer.c).
 *
 * Open addressing in a power-of-two table at most half full, sized once
 * for the number of names given at creation: lookups end at the first
 * empty cell, so a name that is in no entry (a stranger's claim) costs a
 * few probes.  The names put in come from a trusted source (a launcher's
 * modex), so the hash is not keyed.  Pure C, no I/O; one thread at a time.
 *
 * Why not the handshake table's own name index (conn.c): that index holds
 * names strangers claim, so its hash is keyed (SipHash with the table's
 * secret) against collision flooding, it grows as strangers come, and it
 * keys on address and endpoint without the nonce, so that a restarted
 * peer (a new nonce at the same place) finds its old entry.  This map
 * answers another question (is this exact name, nonce included, one the
 * job published, and whose?) over a set fixed up front from a trusted
 * source; sharing one table would give one of the two the wrong key or
 * the wrong cost.
 */
#ifndef EM_PROTO_NAME_MAP_H
#define EM_PROTO_NAME_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/conn.h"

typedef struct em_name_map em_name_map_t;

/** A map for up to @p cap names.  NULL: no memory (or @p cap above 2^30). */
em_name_map_t *em_name_map_create(uint32_t cap);
void em_name_map_destroy(em_name_map_t *m);

/**
 * Put @p name -> @p value.  @return 0 (also when the same pair is there
 * already), -EM_EINVAL: a bad name (address length 0 or above
 * EM_CONN_ADDR_MAX), or the name is there with another value (two peers
 * published one name: the caller refuses it), -EM_ENOMEM: @p cap names
 * are in.
 */
int em_name_map_put(em_name_map_t *m, const em_conn_name_t *name, uint32_t value);

/** @return true with *@p value for @p name (address, endpoint and nonce
 *  equal), false: no such name. */
bool em_name_map_get(const em_name_map_t *m, const em_conn_name_t *name, uint32_t *value);

/** Names in the map. */
uint32_t em_name_map_count(const em_name_map_t *m);

#endif
