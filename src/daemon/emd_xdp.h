/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file emd_xdp.h
 * emd's port on the native AF_XDP link (link/xdp/link_xdp.h, `emd --link
 * xdp --iface NAME`): one AF_XDP socket on one interface queue, no DPDK,
 * no hugepages, no EAL.  Opened the way the front ends open that link
 * (transport.h, EM_LINK_KIND_XDP) from the same settings (xdp_mode,
 * xdp_queue, xdp_busy_poll_us, xdp_prog, framing, udp_*, mtu).
 *
 * No bulk queues: they are DPDK queue pairs of the daemon's port that the
 * ranks drive as DPDK secondaries; an AF_XDP socket is one queue of one
 * process.  The ranks' rendezvous data goes through the daemon's rings.
 */
#ifndef EM_DAEMON_EMD_XDP_H
#define EM_DAEMON_EMD_XDP_H

#include <stddef.h>

#include "daemon/emd.h"
#include "transport/settings.h"

/** Why the ranks have no bulk queues on this port (the region's bulkq.why,
 *  at most EMD_BULKQ_WHY_LEN bytes): the cause and the way to get them. */
#define EMD_XDP_NO_BULKQ                                                                           \
    "emd --link xdp: an AF_XDP socket has no queues to hand out; emd --vdev has them"

/** The port's extras (emd_port_ops_t) over the xdp link: ctx is the link. */
extern const emd_port_ops_t emd_xdp_port_ops;

/**
 * Open the AF_XDP port on interface @p iface from the settings @p s (its
 * rx_loss is not the link's: the daemon drops before its eager ACKs) and
 * say how it ended up (zero copy, native XDP, ...) through e->log.
 * @p what gets a short name of the port for the logs ("xdp:eth0 queue 0").
 * @return the link, or NULL with the cause and fix in @p err.
 */
em_link_t *emd_xdp_open(struct emd *e, const em_settings_t *s, const char *iface, char *what,
                        size_t whatlen, char *err, size_t errlen);

#endif
