/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file em_btl.h
 * Glue between Open MPI's BTL 3.1 interface and the ethermpi engine, shared
 * by the `rudp` and `dpdk` components: each component supplies only its
 * link (how to open it, its parameters) and its component struct.
 *
 * Mapping:
 *   ob1 send/sendi (active messages, tag) -> em_engine_send (one message)
 *   ob1 put + registration handles        -> em_engine_put into a region
 *                                            named by (id, key, offset)
 *   osc/rdma get, atomics (op, fop, cswap) -> em_engine_get, em_engine_atomic
 *                                            (em_btl_rma.c); to ourselves
 *                                            applied in place
 *   component progress                    -> em_engine_progress
 *   peer declared failed                  -> pending ops complete with
 *                                            OPAL_ERR_UNREACH, error callback
 *                                            (FATAL) so the job ends, not hangs
 * Peers: by default (btl_<name>_names auto or wire), on a link that runs wire v3's first
 * contact (em_link_has_contact: kernel UDP, AF_XDP, DPDK), each module is
 * named by its link address, an
 * endpoint index and a random nonce, which its modex entry carries; the
 * module's engine numbers its peers itself (the handshake table's slots,
 * engine/contact.h), the handshake gives each pair its keys and sequence
 * numbers, and no vpid travels on the wire (docs/design.md "BTLs on first
 * contact").  With btl_<name>_names ids,
 * peers are numbered by vpid: each process draws a random 64-bit secret and
 * initial sequence number (getrandom) and publishes them in its modex entry;
 * every frame between two processes carries their pair key (mixed from
 * both secrets).  Either way each process's frames are bound to the
 * address it published (docs/design.md, "Threat model").
 *
 * Threading: every level up to MPI_THREAD_MULTIPLE.  Below it no lock is
 * taken; with it (Open MPI's enable_mpi_threads) the module functions are
 * the locked ones of em_btl_lock.c and progress takes the lock with a
 * try (docs/design.md, "Threads").
 */
#ifndef EM_BTL_H
#define EM_BTL_H

#include "opal_config.h"

#include "opal/mca/base/mca_base_var.h"
#include "opal/mca/btl/btl.h"
#include "opal/mca/btl/base/base.h"
#include "opal/util/proc.h"

#include "engine/engine.h"
#include "engine/lock.h"
#include "engine/order.h"
#include "proto/name_map.h"
#include "transport/transport.h"

/** The components' help file (opal_show_help topics), installed in Open
 *  MPI's help directory and next to the components. */
#define EM_BTL_HELP_FILE "help-mpi-btl-ethermpi.txt"

/** Most links (modules) one component opens in a process. */
#define EM_BTL_MAX_LINKS 4

/** What a process publishes through the modex: one entry per link,
 *  link i of every process being module i's (e.g. the first and second
 *  memif cable, eth0 and eth1). */
struct em_btl_modex {
    uint32_t version; /**< EM_BTL_MODEX_VERSION */
    uint32_t count;   /**< links in use, 1..EM_BTL_MAX_LINKS */
    /** numbered links only (nonce 0 below): random (getrandom), never
     *  derived from the job id; 0 when every link is named */
    uint64_t secret;
    uint32_t isn; /**< numbered links: random first sequence number of the publisher's frames */
    uint32_t rsvd;
    struct {
        uint32_t frame_max; /**< the publisher's link MTU */
        uint32_t ep;        /**< named: the endpoint index behind addr (0) */
        uint64_t nonce;     /**< named: the module's incarnation (random, never 0);
                                 0: a numbered link (by vpid, keys from secret) */
        em_link_addr_t addr;
    } link[EM_BTL_MAX_LINKS];
};
/* 4: frames may carry EM_F_PROBED (liveness probes), which version 3 refuses;
 * 5: a link_udp address carries the send port (8 bytes), which version 4
 * refuses;
 * 6: wire version 3 (proto/wire.h: the receiver's 32-bit index instead of
 *    two 16-bit ids), which a version 5 build drops as another version:
 *    the two never form one job (em_btl_read_modex says why);
 * 7: each link's name (endpoint index, nonce): named links run the
 *    first-contact handshake, which a version 6 build does not answer */
#define EM_BTL_MODEX_VERSION 7u

/** An endpoint's engine number before the peer is known (named links). */
#define EM_BTL_NO_PEER 0xFFFFFFFFu
/** A slot of a named module's engine that names no process. */
#define EM_BTL_NO_VPID 0xFFFFFFFFu

/** Registration handle: exactly what travels to the peer in the rendezvous. */
struct mca_btl_base_registration_handle_t {
    em_region_handle_t region;
};

struct mca_btl_base_endpoint_t {
    opal_proc_t *proc;
    uint32_t vpid; /**< the peer's vpid (the index of this endpoint) */
    /** the engine's number for it: the vpid on a numbered link; on a named
     *  one the handshake table's slot (EM_BTL_NO_PEER until add_procs
     *  inserted its name or its handshake named it) */
    uint32_t peer;
    uint8_t failed;
    /** numbered: address and keys given to the engine (add_procs or first
     *  frame); named: its name is in the engine (peer is set) */
    uint8_t resolved;
    uint8_t self; /**< this process: one-sided operations are applied in place */
    /** a rank of this node added for one-sided operations only (osc/rdma
     *  needs one BTL that reaches every rank of a window; messages go over
     *  vader, whose exclusivity is higher); refuses sends unless same_node */
    uint8_t rma_only;
};

/**
 * Several links: messages to one peer leave in one order (ob1's) but travel
 * on independent engines, so they can arrive in another.  ob1 accepts that
 * in principle, but Open MPI 4.1's convertor does not: positioning a
 * receive convertor of a non-contiguous datatype at an earlier offset
 * overflows its static stack (docs/design.md, "Several links: one order").
 * So with two or more links every active message carries a 4-byte
 * big-endian order number per (sender, receiver), and the receiver hands
 * messages to ob1 in that order, keeping early ones (copied) until the gap
 * is filled.  Puts carry no number: their completion, not their order, is
 * what ob1 waits for.
 */
enum { EM_BTL_ORDER_UNKNOWN = 0, EM_BTL_ORDER_OFF, EM_BTL_ORDER_ON };

struct em_btl_order {
    em_order_t o; /* numbers, early messages (engine/order.h) */
    uint8_t on;   /* EM_BTL_ORDER_ON: both sides have several links */
};

enum em_btl_op_kind { EM_BTL_OP_SEND = 1, EM_BTL_OP_PUT = 2 };

/**
 * A send descriptor with its buffer.  One segment: the whole message, in
 * buf.  Two (em_prepare_src() of a large contiguous message): ob1's header
 * in buf, then the application's data where it lies, sent with
 * em_engine_sendv() and held until the peer acknowledged it.
 */
typedef struct em_btl_frag {
    mca_btl_base_descriptor_t base; /* must be first: ob1 hands it back */
    mca_btl_base_segment_t seg[2];
    em_proto_op_t op;
    int kind; /* EM_BTL_OP_SEND; the engine's op_ctx points here */
    struct mca_btl_base_endpoint_t *ep;
    struct em_btl_frag *next_free;
    uint32_t cap;                    /* bytes in buf */
    uint8_t cls;                     /* size class it returns to */
    uint8_t order_hdr[EM_ORDER_HDR]; /* room for the order number, right before buf */
    uint8_t buf[];
} em_btl_frag_t;

/** A put, get or atomic in flight. */
typedef struct em_btl_rdma {
    em_proto_op_t op;
    int kind; /* EM_BTL_OP_PUT (every one: they complete alike) */
    struct mca_btl_base_endpoint_t *ep;
    mca_btl_base_rdma_completion_fn_t cbfunc;
    void *cbcontext, *cbdata;
    void *local_address;
    mca_btl_base_registration_handle_t *local_handle;
    struct em_btl_rdma *next_free;
} em_btl_rdma_t;

/** A component's settings (src/transport/settings.h), published as its
 *  MCA parameters by em_btl_register_params. */
typedef struct em_btl_params {
    em_settings_t s;     /**< the values (defaults from the table) */
    unsigned front;      /**< EM_FRONT_RUDP or EM_FRONT_DPDK: whose names */
    em_link_kind_t kind; /**< the link kind the component opens (set before em_btl_init) */
    /** Optional, set by the component: print its link's own counters too
     *  (with print_stats; rudp: GSO/GRO).  NULL = none. */
    void (*print_link_stats)(em_link_t *link);
} em_btl_params_t;

/** Opens a component's link; writes a user-facing reason on failure. */
/** Open link @p index (0, 1, ...).  NULL with an empty @p err: there is no
 *  such link (the component has fewer); NULL with a sentence: failure. */
typedef em_link_t *(*em_btl_link_open_fn)(unsigned index, char *err, size_t errlen);

typedef struct em_btl_module {
    mca_btl_base_module_t super;
    const char *name; /**< component name ("rudp", "dpdk") */
    em_btl_params_t *params;
    em_link_t *link;
    em_engine_t *engine;
    uint32_t npeers;                     /**< processes in the job (vpids) */
    struct mca_btl_base_endpoint_t *eps; /**< indexed by vpid */
    /* named links (first contact): */
    uint8_t named;         /**< peers known by name (see above) */
    uint32_t ep_index;     /**< our endpoint index behind the link address */
    uint64_t nonce;        /**< our incarnation (random, never 0) */
    uint32_t nslots;       /**< the engine's peer numbers 0..nslots-1 (its own is nslots) */
    uint32_t *slot_vpid;   /**< engine number -> vpid (EM_BTL_NO_VPID: none yet) */
    em_name_map_t *names;  /**< the job's names -> vpid (built at the first stranger) */
    uint64_t drop_unnamed; /**< messages from an engine number that names no process */
    mca_btl_base_module_error_cb_fn_t error_cb;
    em_btl_frag_t *free_frags[2];
    uint32_t frag_cap[2]; /**< buffer size per class: one frame, max_send_size */
    em_btl_rdma_t *free_rdma;
    void **chunks; /**< everything allocated, for finalize */
    size_t nchunks, chunks_cap;
    int finalizing;
    unsigned index;             /**< which of the process's links (modex entry) */
    struct em_btl_module *next; /**< the component's next module (next link) */
    struct em_btl_order *order; /**< per peer, shared by the modules; NULL with one link */
    uint64_t secret;            /**< this process's secret (same on every module) */
    uint32_t isn;               /**< this process's first sequence number */
    uint64_t drop_tag;          /**< messages with a tag outside Open MPI's table (H3) */
    uint64_t order_overflow;    /**< peers failed for keeping too many early messages */
    uint64_t packed_bytes;      /**< payload bytes packed (copied) into our send buffers */
    uint64_t inplace_msgs;      /**< messages sent from the application's buffer ... */
    uint64_t inplace_bytes;     /**< ... and their payload bytes (no copy by the glue) */
    em_lock_t lock;             /**< the component's lock: the first module's is the one used */
    em_lock_t *lk;              /**< the first module's lock under MPI_THREAD_MULTIPLE, else NULL */
} em_btl_module_t;

/**
 * The component version block: Open MPI's MCA_BTL_DEFAULT_VERSION stamps
 * Open MPI's own version, so ompi_info said "Component v4.1.4"; this one
 * gives ethermpi's (EM_VERSION_* from meson's project version).
 */
#ifndef EM_VERSION_MAJOR
#define EM_VERSION_MAJOR   0
#define EM_VERSION_MINOR   0
#define EM_VERSION_RELEASE 0
#endif
#define EM_BTL_VERSION(name)                                                                       \
    MCA_BTL_BASE_VERSION_3_1_0,                                                                    \
        .mca_component_name = name,                                                                \
        MCA_BASE_MAKE_VERSION(component, EM_VERSION_MAJOR, EM_VERSION_MINOR, EM_VERSION_RELEASE)

/**
 * Define the exported component struct mca_btl_<name>_component of an em
 * BTL: every one is the same but for its callbacks <name>_open, _close,
 * _register, _init and _progress, which the component file defines.
 */
#define EM_BTL_COMPONENT(name)                                                                     \
    __attribute__((visibility("default")))                                      \
    mca_btl_base_component_3_0_0_t mca_btl_##name##_component = {               \
        .btl_version = {                                                        \
            EM_BTL_VERSION(#name),                                              \
            .mca_open_component = name##_open,                                  \
            .mca_close_component = name##_close,                                \
            .mca_register_component_params = name##_register,                   \
        },                                                                      \
        .btl_data = { .param_field = MCA_BASE_METADATA_PARAM_CHECKPOINT },      \
        .btl_init = name##_init,                                                \
        .btl_progress = name##_progress,                                        \
    }

/** Register the settings of front end @p front (EM_FRONT_RUDP or
 *  EM_FRONT_DPDK) as component @p c's MCA parameters, their values landing
 *  in @p p->s (em_btl_mca.c). */
int em_btl_register_params(mca_base_component_t *c, em_btl_params_t *p, unsigned front);

/** Register the counters of @p head and its sibling modules as component
 *  @p c's MPI_T performance variables btl_<component>_<counter>
 *  (em_btl_pvar.c). */
int em_btl_register_pvars(mca_base_component_t *c, em_btl_module_t *head);

/** Defaults for the base BTL parameters (eager limit etc.) before registration. */
void em_btl_module_defaults(mca_btl_base_module_t *m);

/**
 * Component init: open the links (open_link(0), open_link(1), ... until it
 * reports no more), one module with its own engine per link (@p m is the
 * first; ob1 stripes over them), and publish every link's address.
 * @p enable_mpi_threads: the job asked for MPI_THREAD_MULTIPLE; the
 * modules then take the component's lock (em_btl_lock.c).
 * @return the module array or NULL (component disqualified; a help message
 *         has been printed).
 */
mca_btl_base_module_t **em_btl_init(em_btl_module_t *m, mca_btl_base_component_t *comp,
                                    const char *name, em_btl_params_t *params,
                                    em_btl_link_open_fn open_link, int *num_btls,
                                    bool enable_mpi_threads);

/**
 * Opt-in: true when the `btl` selection of this job names
 * @p name explicitly (--mca btl self,vader,rudp).  An exclusion list
 * ("^tcp") or no selection (the default job: every component installed)
 * names nothing.  An installed component that was neither named nor
 * configured (its device or interface parameter set) steps aside silently,
 * so installing ethermpi changes no existing job.
 */
bool em_btl_named(const char *name);

/** Component progress: drives the engines of @p m and its sibling modules;
 *  under MPI_THREAD_MULTIPLE only if no other thread is progressing them
 *  (it returns 0 then). */
int em_btl_progress(em_btl_module_t *m);

/** Add the help-file directory (next to the component .so) to Open MPI's search path. */
void em_btl_add_help_dir(const void *symbol_in_component);

#endif
