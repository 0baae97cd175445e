/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file link_util.h
 * Small pieces shared by the link implementations.
 */
#ifndef EM_LINK_UTIL_H
#define EM_LINK_UTIL_H

#include <stddef.h>
#include <stdint.h>

/**
 * Make the peer table *@p tab (*@p n entries of @p elem bytes) hold index
 * @p peer, growing it (doubling, new entries zeroed) when needed.
 * @return 0 or -ENOMEM.
 */
int em_peer_table_reserve(void **tab, uint32_t *n, size_t elem, uint16_t peer);

/** The value of "key=" in a comma-separated devargs string ("a=1,key=v"):
 *  1 with it in @p out, 0 when absent, empty or longer than @p len - 1. */
int em_devarg(const char *devargs, const char *key, char *out, size_t len);

/** MTU of kernel interface @p ifname (SIOCGIFMTU), 0 when unknown. */
uint32_t em_if_mtu(const char *ifname);

/** Free hugepages of the default size (/proc/meminfo), 0 when unknown. */
long em_hugepages_free(void);

/**
 * A memif server end (devargs "net_memif...,role=server,socket=PATH,
 * socket-abstract=no") whose socket file is left from a process that has
 * exited (memif ports are never closed: link_dpdk.c) makes the next server
 * on that path fail to bind.  Removes PATH when it is a socket nobody
 * listens on (connect refused).  @return 1 if removed, 0 otherwise.
 */
int em_memif_remove_stale_socket(const char *devargs);

#endif
