/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file transport.h
 * Settings -> links + engine: the one factory every front end calls (the
 * rudp and dpdk BTLs, the libfabric provider).  A front end reads its
 * settings (settings.h) under its own names, picks the link kind, and
 * asks this layer for
 *   - link @p index of that kind (a comma list of interfaces, a ';' list
 *     of DPDK devices: one link each), with every option of the kind;
 *   - the protocol configuration for a link of a given frame size;
 *   - the defaults that depend on the link (window, eager limit).
 * What stays in a front end is only what its host framework owns: how it
 * publishes settings, its identity and keys, and its messages.
 *
 * Threading: open links from one thread at a time (the DPDK link's EAL
 * state is process-wide); the other functions are pure.
 */
#ifndef EM_TRANSPORT_H
#define EM_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "link/link.h"
#include "proto/proto.h"
#include "transport/settings.h"

/** The kinds of link a front end can ask for. */
typedef enum em_link_kind {
    EM_LINK_KIND_UDP = 0, /**< kernel UDP socket (link_udp) */
    EM_LINK_KIND_DPDK,    /**< a DPDK port this process owns (link_dpdk) */
    EM_LINK_KIND_EMD,     /**< the node daemon's port (link_emd, bulk queues) */
    EM_LINK_KIND_XDP,     /**< a native AF_XDP socket, no DPDK (link/xdp/link_xdp.h) */
} em_link_kind_t;

/** "udp", "dpdk", "emd", "xdp". */
const char *em_link_kind_name(em_link_kind_t k);
/** The kind named by the provider's `link` setting; -1 when unknown. */
int em_link_kind_parse(const char *name);
/** 1 when this build has links of kind @p k (DPDK, bulk queues and AF_XDP are optional). */
int em_link_kind_built(em_link_kind_t k);

struct em_emd_stats;

/** What a front end lends the factory: names for messages and callbacks. */
typedef struct em_transport_env {
    unsigned front; /**< enum em_front: whose names go into messages */
    /** %j in device specs: the job id (the BTLs: Open MPI's), "0" when NULL */
    const char *job;
    /** kernel UDP, index 0 with an empty if_include: pick the interface
     *  (the rudp BTL asks which one the tcp BTL would use); NULL = the
     *  first non-loopback IPv4 interface.  @return 0, or -1 with @p err. */
    int (*default_iface)(char *out, size_t outlen, char *err, size_t errlen);
    /** one-line notes about degraded modes chosen at run time (may be NULL) */
    void (*note)(void *ctx, const char *msg);
    /** the daemon is gone (emd link); may not return.  NULL: a line on stderr */
    void (*emd_dead)(void *ctx, const char *why);
    /** the emd link closes: its final counters (may be NULL) */
    void (*emd_closing)(void *ctx, const struct em_emd_stats *s);
    void *ctx;
    /** kernel UDP: the receive port (0: any free port); the others ignore it */
    uint16_t udp_port;
    /** Optional: where an open writes why it failed, 0 when it opens: on
     *  kernel UDP the link's code (em_udp_cfg_t::reason: -EM_EADDRINUSE
     *  when udp_port is taken), else -EM_ENOMEM or -EM_EINVAL.  A front
     *  end that explains a cause acts on this code, not on the text. */
    int *reason;
} em_transport_env_t;

/**
 * Open link @p index of kind @p kind from @p s: the index-th interface of
 * if_include (udp), the index-th device of vdev (dpdk), or the daemon's
 * (emd: index 0 only).
 * @return the link; NULL with an empty @p err when there is no link
 * @p index; NULL with a sentence naming the cause and the fix on failure.
 */
em_link_t *em_transport_open_link(const em_settings_t *s, em_link_kind_t kind,
                                  const em_transport_env_t *env, unsigned index, char *err,
                                  size_t errlen);

/**
 * Like em_transport_open_link, for a front end with several endpoints per
 * process (the libfabric provider): on a device that is one process's
 * (dpdk, xdp) every call for the same @p kind and @p index returns a new
 * member of one shared link (link/link_mux.h: addresses carry a slot byte;
 * up to EM_MUX_MEMBERS endpoints; the first call's @p env serves the
 * device); on the others, a link of its own (udp: a port each; emd: the
 * daemon gives each endpoint an address).  Close each with em_link_close;
 * the device closes with its last member.  Same threading rule as opening.
 */
em_link_t *em_transport_open_shared_link(const em_settings_t *s, em_link_kind_t kind,
                                         const em_transport_env_t *env, unsigned index, char *err,
                                         size_t errlen);

struct em_dpdk_cfg;
/**
 * The DPDK link configuration @p s names (device list expanded into
 * @p vdev with %j = env->job, framing, UDP options, loss injection, zero
 * copy, link wait); the caller adds what is its own (file prefix, extra
 * queues: emd).  @return 0, or -1 with a sentence in @p err.
 */
int em_transport_dpdk_cfg(const em_settings_t *s, const em_transport_env_t *env,
                          struct em_dpdk_cfg *c, char *vdev, size_t vdevlen, char *err,
                          size_t errlen);

/** How many links of @p kind @p s names: the entries of if_include (udp),
 *  the devices of vdev after expansion (dpdk; %j is @p job), 1 (emd).
 *  At least 1 (an empty list is one link with the default choice). */
unsigned em_transport_link_count(const em_settings_t *s, em_link_kind_t kind, const char *job);

/** The window in frames for a link of @p kind with frames of @p frame_max
 *  bytes (window, window_kb, the link's default); 0 when out of range. */
unsigned em_transport_window(const em_settings_t *s, em_link_kind_t kind, uint32_t frame_max);

/** Eager limit of the provider on kernel UDP: a rendezvous leg is a trip
 *  through both kernels, so eager pays up to 256 KiB (docs/ofi.md "Eager
 *  limit"); the rudp BTL's eager limit is the same for the same reason. */
#define EM_TRANSPORT_EAGER_UDP 262144u
/** ... and on the bypass links, where a leg costs well under a microsecond
 *  and the rendezvous' zero-copy put pays from 8 KiB on. */
#define EM_TRANSPORT_EAGER_BYPASS 8192u
/** The eager limit in force: eager_max, else the link's (above). */
size_t em_transport_eager_max(const em_settings_t *s, em_link_kind_t kind);

/**
 * The protocol configuration for a link of @p kind whose frames are
 * @p frame_max bytes: em_proto_cfg_default() with the settings applied
 * (window, recovery, timers, congestion control, receive budget, pacing
 * burst).  Identity fields (self, npeers, keys, isn, max_msg) are the
 * front end's to fill.
 * @return 0, or -1 with a sentence in @p err naming the setting.
 */
int em_transport_proto_cfg(const em_settings_t *s, em_link_kind_t kind, uint32_t frame_max,
                           em_proto_cfg_t *cfg, char *err, size_t errlen);

#endif
