/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file devargs.h
 * Reading DPDK devargs strings ("net_memif0,role=server,socket=/x"), for
 * the pieces of the DPDK link (dpdk_internal.h).  DPDK-free.
 */
#ifndef EM_DPDK_DEVARGS_H
#define EM_DPDK_DEVARGS_H

#include <stddef.h>

#pragma GCC visibility push(hidden)

/** Item @p index of the ';'-separated device list, or -1 past its end. */
int em_dpdk_vdev_item(const char *list, unsigned index, char *out, size_t len);

/** The value of "key=" in a comma-separated devargs string ("a=1,key=v"):
 *  1 with it in @p out, 0 when absent, empty or longer than @p len - 1. */
int em_dpdk_devarg(const char *devargs, const char *key, char *out, size_t len);

/**
 * A memif server end (devargs "net_memif...,role=server,socket=PATH,
 * socket-abstract=no") whose socket file is left from a process that has
 * exited (memif ports are never closed: port.c) makes the next server on
 * that path fail to bind.  Removes PATH when it is a socket nobody listens
 * on (connect refused).  @return 1 if removed, 0 otherwise.
 */
int em_dpdk_memif_remove_stale_socket(const char *devargs);

#pragma GCC visibility pop

#endif
