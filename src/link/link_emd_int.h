/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file link_emd_int.h
 * What link_emd.c and link_emd_attach.c share and nobody else.
 */
#ifndef EM_LINK_EMD_INT_H
#define EM_LINK_EMD_INT_H

#include <stddef.h>
#include <stdint.h>

#include "emd_abi/emd_region.h"
#include "link/link_emd.h"

/**
 * The link over region @p h of @p size bytes (already checked by
 * emd_shm_check), endpoint @p endpoint, control socket @p fd (-1: a test's
 * region).  @return it, or NULL with the reason in @p err (the caller
 * keeps the region and the socket).
 */
em_link_t *em_link_emd_make(struct emd_shm_hdr *h, uint64_t size, int fd, uint16_t endpoint,
                            const em_emd_cfg_t *cfg, char *err, size_t errlen);

#endif
