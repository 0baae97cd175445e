/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file emo_prov.h
 * The libfabric provider `ethermpi` (docs/ofi.md): an FI_EP_RDM endpoint with
 * FI_MSG, FI_TAGGED, FI_RMA and FI_ATOMIC over the ethermpi engine
 * (src/engine), one engine and one link per endpoint.  Internal declarations shared by the
 * provider's files; only fi_prov_ini() is exported.
 *
 * Names: the provider is `ethermpi` (fi_info -p ethermpi, FI_ETHERMPI_*);
 * its files and symbols are emo_* ("ethermpi OFI"), never ofi_*, which is
 * libfabric's own internal namespace (include/ofi_*.h, ofi_cq_init, ...).
 *
 * Objects: fabric -> domain -> {av, cq, eq (empty), mr} -> ep.  Memory
 * registrations matter only for FI_RMA and FI_ATOMIC (emo_rma.c: a
 * registration is a region in the domain's table, which its endpoints'
 * engines share); otherwise they are accepted and do nothing (mr_mode 0).
 * Progress is manual: fi_cq_read()/fi_cq_sread() drive the engine of every
 * endpoint bound to the CQ; fi_cq_sread/fi_cntr_wait sleep on the CQ's or
 * counter's wait object between progress calls (emo_wait.c, FI_WAIT_FD).
 * Threading: FI_THREAD_DOMAIN (the caller serialises every call on a
 * domain and its children: no lock is taken), FI_THREAD_COMPLETION and
 * FI_THREAD_SAFE (any thread, any time: every entry point takes the
 * domain's lock, emo_lock()); the level is the one the domain was opened
 * with (docs/design.md "Threads", docs/ofi.md).  fi_cq_signal may come
 * from another thread at every level (an eventfd write).
 *
 * Endpoint names: on a link with first contact (emo_name.c; every link,
 * the emd daemon's too) an endpoint is its link address, endpoint index and
 * nonce, and numbers its peers itself; with FI_ETHERMPI_NAMES=ids, the
 * engine's wire header names source and destination by a 32-bit id (below 2^24) that every process of a job must
 * agree on (emo_ep.c, pick_id: FI_ETHERMPI_ID, else the launcher's rank,
 * else random).
 */
#ifndef EMO_PROV_H
#define EMO_PROV_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

#include "engine/engine.h"
#include "engine/lock.h"
#include "transport/transport.h"
#include "emo_match.h"
#include "emo_wire.h"

#define EMO_PROV_NAME   "ethermpi"
#define EMO_FABRIC_NAME "ethermpi"
/** Provider version: ethermpi's 0.1 */
#define EMO_PROV_VERSION FI_VERSION(0, 1)
/** The libfabric API these sources are written to (Debian 12's libfabric). */
#define EMO_API_VERSION FI_VERSION(1, 17)
#define EMO_IOV_LIMIT   1
#define EMO_CQ_DEFAULT  1024
#define EMO_TX_SIZE     4096
#define EMO_RX_SIZE     4096
/** FI_OPT_MIN_MULTI_RECV until the application sets it: a multi-receive
 *  buffer with less room than this is released (MPICH sets its own, its
 *  largest active message) */
#define EMO_MIN_MULTI_RECV 64
/** Bytes of one rendezvous put operation (larger messages take several). */
#define EMO_PUT_CHUNK (4u << 20)

#define container_of_emo(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

extern struct fi_provider emo_prov;

/** Settings read once from FI_ETHERMPI_* (emo_prov.c, emo_params_load):
 *  the rows of the one settings table (src/transport/settings.h) that the
 *  provider offers, FI_ETHERMPI_<NAME> each. */
typedef em_settings_t emo_params_t;

extern emo_params_t emo_params;
void emo_params_load(void);
/** "" when the settings are valid, else the sentence naming the bad one
 *  (an endpoint then cannot be opened). */
const char *emo_params_error(void);
/** FI_ETHERMPI_LINK: "udp" (the default), "dpdk" or "emd". */
const char *emo_link_name(void);
/** Domains the settings name: one per device (interface, DPDK device). */
unsigned emo_domain_count(void);
/** Domain @p index's name: the link's for 0 ("udp"), "<link><index>" after. */
void emo_domain_name(unsigned index, char *buf, size_t len);
/** The index of the domain named @p name (NULL: 0), or -1. */
int emo_domain_index(const char *name);
/** ... as a link kind (EM_LINK_KIND_UDP when the name is unknown: refused
 *  by emo_params_error) */
em_link_kind_t emo_link_kind(void);
/** The eager limit in force: FI_ETHERMPI_EAGER_MAX, else the link's default. */
size_t emo_eager_max(void);
/** The inject size in force: the eager limit, at most 256 KiB (injects are copied). */
size_t emo_inject_max(void);
/** The engine's window for frames of @p frame_max bytes (FI_ETHERMPI_WINDOW,
 *  _WINDOW_KB and the link's default); -1 when they are out of range. */
int emo_window(uint32_t frame_max);

struct emo_fabric {
    struct fid_fabric fab;
};

struct emo_domain {
    struct fid_domain dom;
    struct emo_fabric *fab;
    unsigned index;  /**< which device of the settings (emo_domain_index): its endpoints' link */
    uint64_t mr_key; /**< the last key of a registration without FI_RMA */
    bool rma;        /**< opened from an FI_RMA or FI_ATOMIC info: registrations are regions */
    bool atomic;     /**< opened from an FI_ATOMIC info: fi_query_atomic answers */
    /** The regions of every endpoint of the domain (their engines share
     *  it: em_engine_use_regions): rendezvous receives' and, with FI_RMA,
     *  the registrations', which serve all the domain's endpoints */
    em_regions_t regions;
    unsigned neps, nmrs; /**< open endpoints and registrations: close refused (-FI_EBUSY) */
    /** Peers' reads its endpoints answer (EMO_OP_RSERVE), linked by
     *  emo_op::sv: their puts read a registration's memory until they are
     *  acknowledged, so closing that registration waits for them
     *  (emo_rma.c, mr_close) */
    struct emo_op *serving;
    /** FI_THREAD_SAFE / FI_THREAD_COMPLETION: held by every entry point of
     *  the domain and its children (recursive); off (no mutex, no atomic)
     *  for FI_THREAD_DOMAIN */
    em_lock_t lock;
};

/** The domain's lock around an entry point (a branch when it is off). */
static inline void emo_lock(struct emo_domain *d) { em_lock_take(&d->lock); }
static inline void emo_unlock(struct emo_domain *d) { em_lock_drop(&d->lock); }

/** A memory registration (emo_rma.c). */
struct emo_mr {
    struct fid_mr mr;
    struct emo_domain *dom;
    em_region_handle_t reg; /**< with FI_RMA and remote access: its region (id != 0) */
};

struct emo_eq {
    struct fid_eq eq;
};

/** One AV entry: the decoded address of a peer (a named one's id is
 *  EMO_ID_NONE: each bound endpoint's number for it is in its emo_av_map). */
struct emo_av_ent {
    emo_addr_t a;
    uint8_t used;
};

/** An endpoint removed from an AV (fi_av_remove): how many times this
 *  very endpoint (id and secret) was, the pair's incarnation with it
 *  (emo_peer_key). */
struct emo_av_gone {
    uint64_t secret;
    uint32_t epoch;
    uint32_t id;
};

struct emo_av {
    struct fid_av av;
    struct emo_domain *dom;
    enum fi_av_type type;
    struct emo_av_ent *tab; /**< fi_addr_t = index (FI_AV_TABLE and FI_AV_MAP alike) */
    size_t n, cap;
    size_t nfree;   /**< entries below n that fi_av_remove freed (an insert takes one) */
    size_t free_lo; /**< no free entry below this index */
    /** numbered addresses: job-wide id -> fi_addr (FI_ADDR_NOTAVAIL), n_by_id
     *  entries (an id inserted again gets its entry back) */
    fi_addr_t *by_id;
    uint32_t n_by_id; /**< ids below it have an entry (grows with the largest id inserted) */
    /** the endpoints bound to it, oldest first (each has its emo_av_map) */
    struct emo_ep **eps;
    unsigned neps, eps_cap;
    struct emo_av_gone *gone; /**< endpoints removed, one entry per id (the last) */
    size_t ngone, gone_cap;
};

/** Endpoints one AV serves at most: each holds a map of the AV's size
 *  (struct emo_av_map); fi_ep_bind of one more is refused (-FI_ENOSPC). */
#define EMO_AV_EPS_MAX 256u

/** An endpoint's numbers for its AV's entries (emo_av.c): a named endpoint
 *  numbers its peers itself, so endpoints sharing an AV read one fi_addr_t
 *  as different engine peers; a numbered one's numbers are the job-wide
 *  ids (every bound endpoint's map alike). */
struct emo_av_map {
    uint32_t *peer; /**< fi_addr_t -> peer number (EMO_ID_NONE: none), cap entries */
    size_t cap;     /**< as large as the AV's table once an entry was set */
    fi_addr_t *fa;  /**< peer number -> fi_addr_t (FI_ADDR_NOTAVAIL: in no entry), nfa */
    uint32_t nfa;
    /** the endpoint's own number -> fi_addr_t: kept apart, as a named
     *  endpoint's number lies outside its table (EM_PROTO_SELF_OUTSIDE) */
    fi_addr_t self_fa;
};

/** A CQ entry as kept (converted to the CQ's format when read). */
struct emo_cqe {
    struct fi_cq_tagged_entry e;
    fi_addr_t src;
};

struct emo_cq_err {
    struct emo_cq_err *next;
    struct fi_cq_err_entry e;
    fi_addr_t src;
    char msg[160]; /**< err_data: which peer, and why */
};

/** How a CQ or counter drives one bound endpoint (emo_ep_progress, given
 *  at bind time).  @return frames taken and operations completed. */
typedef int (*emo_progress_fn)(struct emo_ep *ep);

/** One endpoint bound to a CQ or a counter. */
typedef struct emo_ep_ref {
    struct emo_ep *ep;
    emo_progress_fn progress;
    int fd; /**< its link's wait descriptor in the set's epoll set, or -1 */
} emo_ep_ref_t;

/**
 * The endpoints bound to a CQ or a counter, and its wait object
 * (emo_wait.c): reading either drives their progress (manual progress),
 * and neither closes while one is bound.  No limit on their number.
 *
 * The wait object (FI_WAIT_FD / FI_WAIT_UNSPEC, or made when a
 * FI_WAIT_NONE CQ is first read with fi_cq_sread) is an epoll set holding
 * each bound endpoint's link descriptor (em_link_wait_fd: the UDP socket),
 * an eventfd written when a completion arrives while a waiter may sleep
 * (armed) or on fi_cq_signal, and a timerfd set to the engines' next
 * timer (retransmissions still happen while the caller sleeps), or to
 * EMO_WAIT_POLL_NS when an endpoint's link has no descriptor (DPDK, emd).
 * FI_GETWAIT hands out the epoll descriptor.
 */
typedef struct emo_ep_set {
    emo_ep_ref_t *v;
    unsigned n, cap;
    int epfd, evfd, tfd; /**< the wait object's descriptors; epfd -1: none */
    atomic_bool armed;   /**< a waiter may sleep on epfd: completions write evfd */
} emo_ep_set_t;

/** A waiter whose endpoints' links have no descriptor sleeps this long at
 *  most between progress calls (or less: the engines' next timer). */
#define EMO_WAIT_POLL_NS 50000u
/** ... and at least this long when an engine's timer is due already (the
 *  progress call before the sleep ran it). */
#define EMO_WAIT_MIN_NS 10000u

struct emo_cq {
    struct fid_cq cq;
    struct emo_domain *dom;
    enum fi_cq_format format;
    struct emo_cqe *ring;
    size_t cap, head, count; /**< grows: completions are never dropped */
    struct emo_cq_err *err_head, *err_tail;
    struct emo_cq_err *err_last; /**< the entry handed out last (its err_data stays valid) */
    emo_ep_set_t eps;
    enum fi_wait_obj wait_obj; /**< FI_WAIT_FD (its wait object made at open) or _NONE */
    int last_work;    /**< the work of the last read's progress: fi_cq_sread sleeps after 0 */
    uint64_t read_at; /**< when fi_cq_read last returned (cq_spin) */
    uint16_t
        spin_score;     /**< recent spins that ended with a completion, 0..EMO_SPIN_ONE (cq_spin) */
    uint16_t spin_skip; /**< eligible reads since the last spin while the score is low */
    uint64_t busy_at;   /**< when a read last found work (frames, completions): cq_yield */
    /** fi_cq_signal was called (maybe from another thread, the one
     *  exception to FI_THREAD_DOMAIN): the next fi_cq_sread returns
     *  -FI_EAGAIN at once if it finds nothing, and clears it */
    atomic_bool signaled;
};

/** A completion counter (emo_cntr.c). */
struct emo_cntr {
    struct fid_cntr cntr;
    uint64_t val, err;
    struct emo_domain *dom;
    emo_ep_set_t eps;          /**< driven by fi_cntr_read / fi_cntr_wait */
    enum fi_wait_obj wait_obj; /**< FI_WAIT_FD (its wait object made at open) or _NONE */
};

/** Kinds of operation (emo_op_t::kind). */
enum emo_op_kind {
    EMO_OP_EAGER = 1, /**< a send of a whole message (header + copy) */
    EMO_OP_RTS,       /**< a rendezvous send waiting for CTS, then its puts */
    EMO_OP_RRECV,     /**< a rendezvous receive waiting for FIN */
    EMO_OP_CTRL,      /**< a CTS or FIN message: no completion of its own */
    EMO_OP_WRITE,     /**< an RMA write: its puts (emo_rma.c) */
    EMO_OP_READ,      /**< an RMA read waiting for RDONE */
    EMO_OP_RSERVE,    /**< a peer's read we answer: its puts, no completion */
    EMO_OP_ATOMIC,    /**< a remote atomic: the engine's request, until its answer (emo_atomic.c) */
    EMO_OP_GET,       /**< an RMA read up to the eager limit: the engine's get (emo_rma.c) */
};

/** An operation in flight (sends, rendezvous receives, control messages). */
typedef struct emo_op {
    em_proto_op_t pop; /**< the engine's (eager, RTS, control) */
    struct emo_ep *ep;
    int kind;
    void *context;
    uint64_t cq_flags; /**< FI_SEND/FI_RECV | FI_MSG/FI_TAGGED | ... */
    bool want_cqe;     /**< write a completion on success */
    bool done_early;   /**< a send that completed when it was copied: its end at the
                            peer's ACK writes nothing (a failure is logged) */
    uint32_t peer;
    uint32_t cookie; /**< EMO_OP_RTS / EMO_OP_RRECV: their table cookie */
    uint64_t tag, data;
    size_t len;             /**< send: message bytes; recv: granted bytes */
    size_t olen;            /**< recv: bytes the sender had beyond the buffer (FI_ETRUNC) */
    void *buf;              /**< user buffer (rendezvous) */
    int status;             /**< first error of the operation (fi_errno, negative) */
    unsigned puts_left;     /**< rendezvous send: puts not yet completed */
    em_proto_op_t *puts;    /**< rendezvous send: one per EMO_PUT_CHUNK */
    em_region_handle_t reg; /**< rendezvous receive: its registration */
    struct emo_rx *multi;   /**< rendezvous receive into a multi-receive buffer: that
                                 buffer (its inflight counts this op), else NULL */
    bool watched;           /**< RTS waiting for CTS, RRECV waiting for FIN, READ waiting
                                 for RDONE, GET and ATOMIC waiting for their answer: a
                                 liveness watch of the peer is held (emo_watch) */
    /** EMO_OP_RSERVE: the registration its puts read from (region id and
     *  key), and its place in the domain's list of answers (emo_domain::serving) */
    struct emo_serve {
        struct emo_op *next, *prev;
        uint32_t id;
        uint64_t key;
    } sv;
    struct emo_op *cache_next; /**< kept in an op pool (emo_op_free): the next one */
    uint8_t small;             /**< from small pool small - 1 (in a chunk), 0: malloc'd */
    size_t held;               /**< bytes it counts in emo_ep::op_live (the send budget) */
    size_t msg_len;            /**< bytes of msg[] in use */
    size_t msg_cap;            /**< bytes of msg[] allocated (EMO_OP_LARGE: from the cache) */
    uint8_t msg[];             /**< what the engine sends: header (+ eager payload) */
} emo_op_t;

/** The source of unexpected messages whose sender was removed from the AV
 *  after they arrived (emo_ep_unset_peer): no endpoint id (ids are below
 *  FI_ETHERMPI_NPEERS <= EMO_NPEERS_MAX), so only receives from any source
 *  take them, and their source reads FI_ADDR_NOTAVAIL. */
#define EMO_PEER_GONE 0xFFFFFFFFu

/** Ops with msg[] of at least EMO_OP_LARGE bytes are allocated with room
 *  for one of EMO_OP_POOLS sizes: 32, 64, 128 and 256 KiB of message (none
 *  over the inject size, the last one the inject size), each with header
 *  and address, the smallest that holds the message; when freed they are
 *  kept per endpoint for the next copy, up to EMO_OP_CACHE_BYTES in all.
 *  The copies are injects (Open MPI's blocking sends, every MPICH send up
 *  to the inject size), first-contact messages and sends to ourselves;
 *  other eager sends copy nothing (emo_data.c).  What the caches keep is
 *  the high-water mark of copies in flight, as Open MPI's free lists keep
 *  theirs.  Freed one by one to malloc, 64-256 KiB copies made glibc map or
 *  trim and refault them on every send; 64 kept per size were too few for
 *  IMB's Uniband, 256 injects in flight (docs/ofi.md "Send buffers are
 *  reused"). */
#define EMO_OP_LARGE 1024u
/** Ops with less than EMO_OP_LARGE bytes of msg[] (headers, control
 *  messages, rendezvous receives, small inject copies: every small send)
 *  come from two per-endpoint free lists, rooms EMO_OP_SMALL_ROOM and
 *  EMO_OP_LARGE - 1 bytes, which grow EMO_OP_CHUNK ops at a time and are
 *  freed at close (emo_op_cache_drain): no malloc per send.  They keep
 *  their high-water mark, as the large pools do. */
#define EMO_OP_SMALL_ROOM  (EMO_HDR_LEN + EMO_ADDR_LEN)
#define EMO_OP_SMALL_POOLS 2u
#define EMO_OP_CHUNK       64u
#define EMO_OP_CACHE_MSG   32768u /* the smallest room (message bytes) */
#define EMO_OP_POOLS       4u     /* rooms: 32, 64, 128, 256 KiB of message */
#define EMO_OP_CACHE_BYTES (64u << 20)

/** The send budget: bytes of msg[] that the live ops of an endpoint may
 *  hold (copies of injects, first-contact and self sends; headers of the
 *  rest) before a send or write returns -FI_EAGAIN, after one progress
 *  pass.  An inject completes at once, so without it nothing held a
 *  sender that injects faster than the wire drains: Open MPI's blocking
 *  sends of 256 KiB grew a rank by 1.7 GB of copies in 3 s, every page
 *  of them faulted in (docs/ofi.md "Inject size and the send budget").  An
 *  endpoint holding nothing may always send one message, whatever its
 *  size. */
#define EMO_TX_BYTES (8u << 20)

/** A posted receive. */
typedef struct emo_rx {
    emo_qent_t q;
    void *buf;
    size_t len;
    void *context;
    uint64_t flags; /**< FI_COMPLETION etc. */
    bool tagged;
    bool watched; /**< posted for one peer: a liveness watch of it is held (emo_watch) */
    /* FI_MULTI_RECV (untagged only; emo_rdv.c "multi-receive buffers"):
     * messages are placed one after another from the start of buf */
    bool multi;        /**< a multi-receive buffer */
    bool released;     /**< no longer posted (full, canceled, peer failed): freed when
                            inflight reaches 0; the last completion says FI_MULTI_RECV */
    size_t off;        /**< bytes of buf handed out */
    uint32_t inflight; /**< rendezvous receives into it not yet completed */
    emo_hdr_t ph;      /**< the eager message being placed into buf as its frames arrive
                            (emo_rdv.c, "eager messages placed as they arrive"), once
                            it is off the posted queue */
} emo_rx_t;

/** An unexpected message (eager with its bytes, or an RTS). */
typedef struct emo_unexp {
    emo_qent_t q;
    uint8_t type;  /**< EMO_T_EAGER or EMO_T_RTS */
    uint8_t flags; /**< EMO_F_* */
    uint64_t data;
    uint64_t len;      /**< message bytes */
    uint32_t s_cookie; /**< RTS */
    uint8_t payload[]; /**< EAGER: len bytes */
} emo_unexp_t;

/** Counters (printed at close with FI_LOG_LEVEL=info). */
typedef struct emo_ep_stats {
    uint64_t dec_err[EMO_DEC_COUNT];
    uint64_t bad_cookie;     /**< CTS/FIN naming no operation of that peer */
    uint64_t bad_len;        /**< CTS/FIN lengths beyond what was asked */
    uint64_t unknown_peer;   /**< frames from ids in no AV, without a first-contact blob */
    uint64_t fc_peers;       /**< peers made from their first message (emo_contact.c) */
    uint64_t fc_bad_blob;    /**< first-contact blobs refused: malformed, wrong id or MTU */
    uint64_t fc_bad_key;     /**< ... frames whose pair key is not the blob's and ours */
    uint64_t fc_bad_source;  /**< ... frames not from the blob's link address */
    uint64_t fc_addr_in_use; /**< ... blobs naming the link address of a peer we have (or ours) */
    uint64_t fc_over_budget; /**< ... refused: FI_ETHERMPI_FIRST_CONTACT peers made already */
    uint64_t unexp_msgs, unexp_bytes_max;
    uint64_t unexp_refused;  /**< unexpected messages dropped: over FI_ETHERMPI_UNEXP_MB */
    uint64_t unexp_overflow; /**< peers failed for holding the most when it was exceeded */
    uint64_t eager_sent, rdv_sent, self_sent;
    uint64_t sends_early;     /**< sends completed when copied (FI_ETHERMPI_SEND_COPY_MAX) */
    uint64_t tx_budget_waits; /**< sends that found the send budget full (EMO_TX_BYTES) */
    uint64_t placed;          /**< eager messages of several frames received straight into their
                          receive's buffer */
    uint64_t rma_writes, rma_reads; /**< RMA operations started here */
    uint64_t reads_served;          /**< peers' reads answered */
    uint64_t reads_refused;         /**< ... refused: key, bounds or FI_REMOTE_READ */
    uint64_t reads_busy;            /**< ... refused: EMO_READS_MAX already in flight */
    uint64_t wdata_refused;         /**< WDATA to an endpoint without FI_REMOTE_WRITE */
    uint64_t atomics;               /**< atomic operations started here (to peers) */
    uint64_t atomics_self;          /**< ... to this endpoint itself (applied in the call) */
    uint64_t atomics_busy;          /**< ... refused -FI_EAGAIN: the engine's requests budget */
} emo_ep_stats_t;

/** Peers' reads an endpoint answers at once, at most (each holds the
 *  puts of its answer until they are acknowledged); more are refused with
 *  FI_EAGAIN, which fails that read at its initiator. */
#define EMO_READS_MAX 4096u

/** What an endpoint's engine is doing: progress must not re-enter, and
 *  callbacks during close write no completions. */
enum emo_ep_phase {
    EMO_EP_IDLE = 0, /**< no engine call on the stack */
    EMO_EP_PROGRESS, /**< inside em_engine_progress (or a drain): callbacks run */
    EMO_EP_CLOSING,  /**< the engine is being destroyed: callbacks only clean up */
};

struct emo_ep {
    struct fid_ep ep;
    struct emo_domain *dom;
    struct fi_info *info;
    struct emo_av *av;
    struct emo_av_map avm; /**< its numbers for the AV's entries, both ways */
    struct emo_cq *tx_cq, *rx_cq;
    struct emo_cntr *tx_cntr, *rx_cntr; /**< FI_SEND / FI_RECV counters (or NULL) */
    struct emo_cntr *other_cntr[4];     /**< FI_READ, FI_WRITE (count RMA), FI_REMOTE_READ,
                                             FI_REMOTE_WRITE (bound, never move) */
    bool tx_selective, rx_selective;
    uint64_t tx_op_flags, rx_op_flags;
    bool enabled;
    em_link_t *link;
    em_engine_t *eng;
    emo_addr_t self;
    uint32_t npeers;
    uint8_t *peer_set;   /**< npeers: EMO_PEER_AV / EMO_PEER_CONTACT = address and
                                     keys given to the engine (from the AV / a first message) */
    uint8_t *peer_heard; /**< npeers: 1 = the peer has our address (it acknowledged or
                                     sent us a message), EMO_HEARD_ANNOUNCED = a HELLO
                                     to it is ahead of what we send: no first-contact
                                     blob to it */
    emo_addr_t *fc;      /**< peers made by first contact (emo_contact.c) */
    size_t fc_n, fc_cap;
    uint8_t *peer_failed; /**< npeers */
    emo_queue_t posted_tag, unexp_tag, posted_msg, unexp_msg;
    uint64_t unexp_bytes;  /**< held in the unexpected queues: entries and payloads */
    uint64_t unexp_budget; /**< FI_ETHERMPI_UNEXP_MB in bytes; 0 = no bound */
    uint64_t *unexp_held;  /**< npeers: unexp_bytes per source */
    uint8_t *fail_pending; /**< npeers: 1 = to be failed after this progress call (a
                                callback decided it: emo_apply_failures) */
    uint32_t nfail_pending;
    /** the emd daemon is gone (FI_ETHERMPI_LINK=emd): 1 = every peer is to
     *  fail at the end of this progress call, 2 = they have been; why names
     *  the daemon's reason (the engine keeps the pointer as the peers'
     *  failure reason: it lives as long as the endpoint) */
    int link_dead;
    char link_dead_why[224];
    emo_op_t **ops;    /**< cookie table: index = (cookie & 0xFFFFF) - 1 */
    uint16_t *op_gen;  /**< ops_cap: each slot's generation (12 bits of the cookie) */
    uint32_t *op_next; /**< ops_cap: free slots' chain (index + 1 of the next, 0 = end) */
    uint32_t ops_cap;  /**< slots in ops, op_gen and op_next */
    uint32_t ops_free; /**< the first free slot (index + 1), 0 = none: the table grows */
    size_t eager_max;
    size_t inject_max;     /**< fi_inject*: at most this (emo_inject_max) */
    size_t send_copy_max;  /**< sends up to this complete when copied (do_send) */
    size_t min_multi_recv; /**< FI_OPT_MIN_MULTI_RECV: a multi-receive buffer with less
                                room left is released */
    /* freed large ops kept for the next (emo_op_new), one pool per room
     * size, smaller room first: a window of eager sends freed at once made
     * glibc trim and regrow its heap, a page fault per page of every large
     * send */
    struct emo_op_pool {
        size_t cap;     /**< msg[] room of its ops (header and address included);
                             0 = no such pool (emo_op_pools_init) */
        emo_op_t *head; /**< kept ops, linked by emo_op::cache_next */
    } op_pool[EMO_OP_POOLS];
    /* free lists of small ops (EMO_OP_SMALL_POOLS rooms), carved from
     * chunks of EMO_OP_CHUNK ops linked from op_chunks (freed at close) */
    struct emo_op_pool op_small[EMO_OP_SMALL_POOLS];
    void *op_chunks;
    size_t op_cached;        /**< bytes of msg[] room the pools keep (<= EMO_OP_CACHE_BYTES) */
    size_t op_live;          /**< bytes of msg[] room of the live ops (emo_op_new to
                                emo_op_free): the send budget, EMO_TX_BYTES */
    uint32_t reads_active;   /**< EMO_OP_RSERVE in flight */
    enum emo_ep_phase phase; /**< idle, progressing (no re-entry) or closing */
    emo_ep_stats_t st;
};

/** @p ep's peer number for AV entry @p fa, EMO_ID_NONE when none (no
 *  entry, removed, or the endpoint could not number it): the send path's
 *  one array read. */
static inline uint32_t emo_av_peer(const struct emo_ep *ep, fi_addr_t fa)
{
    return fa < ep->avm.cap ? ep->avm.peer[fa] : EMO_ID_NONE;
}
/** The AV entry @p ep numbers @p peer, or FI_ADDR_NOTAVAIL (FI_SOURCE). */
static inline fi_addr_t emo_av_fa(const struct emo_ep *ep, uint32_t peer)
{
    if (peer == ep->self.id)
        return ep->avm.self_fa;
    return peer < ep->avm.nfa ? ep->avm.fa[peer] : FI_ADDR_NOTAVAIL;
}

/* emo_op.c */
/** The op pools' room sizes for @p ep's inject size (endpoint open). */
void emo_op_pools_init(struct emo_ep *ep);
/** May a send whose op holds @p msg_len bytes of msg[] start now?  Over the
 *  send budget (EMO_TX_BYTES) it drives progress once (acknowledged sends
 *  free their ops) and asks again; false: the caller returns -FI_EAGAIN. */
bool emo_tx_room(struct emo_ep *ep, size_t msg_len);
/** Would @p msg_len more bytes of msg[] fit the send budget now?  (No
 *  progress, nothing counted: for a choice, not a wait.) */
bool emo_tx_fits(const struct emo_ep *ep, size_t msg_len);

/* emo_rdv.c */
/** Fail the peers a callback marked (ep->fail_pending: over the unexpected
 *  budget); called after each engine progress call. */
void emo_apply_failures(struct emo_ep *ep);
/** The operations waiting on @p peer (cookie table: rendezvous, reads)
 *  and the receives posted for it alone end with @p status (-FI_EIO: it
 *  failed; -FI_ECANCELED: it was removed from the AV). */
void emo_peer_ops_end(struct emo_ep *ep, uint32_t peer, int status);
/** @p peer was removed from the AV: its unexpected messages stay, from
 *  EMO_PEER_GONE (an eager one is delivered whole; an RTS, whose bytes are
 *  still at the sender, ends its receive with FI_ECANCELED). */
void emo_unexp_orphan(struct emo_ep *ep, uint32_t peer);

/* emo_prov.c */
int emo_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
int emo_no_control(struct fid *fid, int command, void *arg);
int emo_no_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops, void *context);
/** The struct fi_ops of one of our objects: its close, and its bind and
 *  control or emo_no_bind / emo_no_control where it has none (no object
 *  offers ops_open). */
#define EMO_FI_OPS(close_, bind_, control_)                                                        \
    {                                                                                              \
        .size = sizeof(struct fi_ops), .close = (close_), .bind = (bind_), .control = (control_),  \
        .ops_open = emo_no_ops_open                                                                \
    }
/** Make @p fid one of our objects: class @p fclass, the application's
 *  @p context, our @p ops (what every *_open does before it returns). */
static inline void emo_fid_init(struct fid *fid, size_t fclass, void *context, struct fi_ops *ops)
{
    fid->fclass = fclass;
    fid->context = context;
    fid->ops = ops;
}
int emo_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
                const struct fi_info *hints, struct fi_info **info);
int emo_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context);

/* emo_domain.c */
int emo_domain_open(struct fid_fabric *fabric, struct fi_info *info, struct fid_domain **dom,
                    void *context);
/** Queue a completion on @p cq (grows the ring; -FI_ENOMEM when it cannot). */
int emo_cq_write(struct emo_cq *cq, void *ctx, uint64_t flags, size_t len, void *buf, uint64_t data,
                 uint64_t tag, fi_addr_t src);
/** Queue an error completion; @p fmt describes it (err_data). */
int emo_cq_write_err(struct emo_cq *cq, void *ctx, uint64_t flags, int err, size_t len, size_t olen,
                     uint64_t tag, fi_addr_t src, const char *fmt, ...)
    __attribute__((format(printf, 9, 10)));

/* emo_av.c */
int emo_av_open(struct fid_domain *domain, struct fi_av_attr *attr, struct fid_av **av,
                void *context);
/** fi_ep_bind of @p av to @p ep: @p ep joins the AV's endpoints and numbers
 *  the entries inserted before (emo_name_resolve).  @return 0, or
 *  -FI_EINVAL (an AV already, another domain, the other kind of endpoint),
 *  -FI_ENOSPC (EMO_AV_EPS_MAX), -FI_ENOMEM, each said why. */
int emo_av_bind(struct emo_av *av, struct emo_ep *ep);
/** @p ep closes: it leaves its AV (its map goes; the other endpoints keep theirs). */
void emo_av_unbind(struct emo_ep *ep);
/** The AV entry of @p fa, or NULL. */
const emo_addr_t *emo_av_get(const struct emo_av *av, fi_addr_t fa);
/** The key of the pair of @p ep and the endpoint at @p a: emo_pair_key,
 *  moved to the pair's next incarnation each time @p ep's AV removed that
 *  very endpoint (docs/ofi.md "Removing an address"). */
uint64_t emo_peer_key(const struct emo_ep *ep, const emo_addr_t *a);

/* emo_ep.c */
int emo_ep_open(struct fid_domain *domain, struct fi_info *info, struct fid_ep **ep, void *context);
/** Give the engine @p id's address and keys from the AV (once).  @return 0 or -FI_*. */
int emo_ep_set_peer(struct emo_ep *ep, uint32_t id);
/** fi_av_remove took @p id's entry: its operations end with FI_ECANCELED,
 *  receives posted for it alone too, the messages it sent that wait
 *  unexpected stay (from EMO_PEER_GONE), and the engine forgets it
 *  (em_engine_reset_peer) until emo_ep_set_peer sets it again. */
void emo_ep_unset_peer(struct emo_ep *ep, uint32_t id);
/** Drive the engine once (re-entry safe).  @return frames taken and
 *  operations completed (0: nothing happened). */
int emo_ep_progress(struct emo_ep *ep);
/** Map an engine error (-EM_*) to a negative fi_errno. */
int emo_errno(int em_err);

/* emo_wait.c */
/** An empty set, no wait object yet. */
void emo_ep_set_init(emo_ep_set_t *s);
/** Free the set and close its wait object (the owner's close). */
void emo_ep_set_fini(emo_ep_set_t *s);
/** Add @p ep, driven by @p progress, to @p s (no-op when in it); its link's
 *  descriptor joins the wait object.  @return 0 or -FI_ENOMEM. */
int emo_ep_set_add(emo_ep_set_t *s, struct emo_ep *ep, emo_progress_fn progress);
/** Remove @p ep from @p s (no-op when not in it; the order is not kept). */
void emo_ep_set_remove(emo_ep_set_t *s, struct emo_ep *ep);
/** Drive each endpoint of @p s once.  @return the sum of their work. */
int emo_ep_set_progress(const emo_ep_set_t *s);
/** Make @p s's wait object (no-op when it has one).  @return 0 or -FI_*. */
int emo_wait_open(emo_ep_set_t *s);
/** Before sleeping on the wait object: clear its eventfd, set its timer to
 *  the earliest of @p until_ns (em_now_ns clock; UINT64_MAX: none), the
 *  engines' next timer and, with a link without descriptor, now +
 *  EMO_WAIT_POLL_NS; then completions wake it (armed).  @return 0 or -FI_*. */
int emo_wait_arm(emo_ep_set_t *s, uint64_t until_ns);
/** Sleep until the wait object is readable (armed first).  @return 0 or -FI_*. */
int emo_wait_sleep(emo_ep_set_t *s);
/** Write the eventfd (fi_cq_signal; emo_wait_signal). */
void emo_wait_kick(emo_ep_set_t *s);
/** A completion was written: wake a sleeper, if one may sleep (armed). */
static inline void emo_wait_signal(emo_ep_set_t *s)
{
    if (atomic_load_explicit(&s->armed, memory_order_relaxed) && atomic_exchange(&s->armed, false))
        emo_wait_kick(s);
}
/** fi_control of a CQ or counter with wait object @p wait_obj: FI_GETWAIT
 *  (the epoll descriptor, FI_WAIT_FD only) and FI_GETWAITOBJ. */
int emo_wait_control(emo_ep_set_t *s, enum fi_wait_obj wait_obj, int command, void *arg);
/** fi_trywait (the fabric's): -FI_EAGAIN when one of @p fids has
 *  completions or progress made some, 0 when all are armed to sleep. */
int emo_trywait(struct fid_fabric *fabric, struct fid **fids, int count);

/* emo_cntr.c */
int emo_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr, struct fid_cntr **cntr,
                  void *context);
/** One completion: @p status 0 counts in the value, else in the error count (NULL: none). */
void emo_cntr_inc(struct emo_cntr *c, int status);

/* emo_rma.c */
extern struct fi_ops_rma emo_rma_ops;
extern struct fi_ops_mr emo_mr_ops;

/* emo_atomic.c */
extern struct fi_ops_atomic emo_atomic_ops;
/** fi_query_atomic of domain @p d (@p flags 0, FI_FETCH_ATOMIC or
 *  FI_COMPARE_ATOMIC).  @return 0 with @p attr set, or -FI_EOPNOTSUPP /
 *  -FI_EINVAL. */
int emo_query_atomic(const struct emo_domain *d, enum fi_datatype dt, enum fi_op op,
                     struct fi_atomic_attr *attr, uint64_t flags);
/** The endpoint's atomics counters and the engine's, at close (FI_LOG_LEVEL=info). */
void emo_atomic_stats(const struct emo_ep *ep);

/* emo_contact.c */
enum { EMO_PEER_AV = 1, EMO_PEER_CONTACT = 2 };
/** Inside the engine's resolve callback: make @p peer (in no AV) from the
 *  first-contact blob of the frame being judged.  @return 0, or -1 (counted). */
int emo_contact(struct emo_ep *ep, uint32_t peer);
/** Forget the first contact of @p id (fi_av_remove of its address). */
void emo_contact_forget(struct emo_ep *ep, uint32_t id);
/** The address a first contact gave for @p id, or NULL. */
const emo_addr_t *emo_contact_get(const struct emo_ep *ep, uint32_t id);
/** peer_heard value: a HELLO went to the peer ahead of what follows it */
#define EMO_HEARD_ANNOUNCED 2
/** Before a one-sided operation to @p peer (whose frames carry no address):
 *  unless the peer has shown it knows us, send it HELLO, our address
 *  (emo_wire.h), once.  @return 0 or a negative fi_errno. */
int emo_announce(struct emo_ep *ep, uint32_t peer);

/* emo_name.c: named endpoints (first contact) */
/** A named endpoint holds at most this many strangers (peers whose
 *  handshake completed before the application inserted their address)
 *  unless FI_ETHERMPI_FIRST_CONTACT says another number: its table grows
 *  with its peers, and a host that receives at many addresses of its own
 *  (each port and endpoint index a name) could otherwise make it hold
 *  millions.  65,536 strangers cost about 20 MB; a job whose ranks hear
 *  from more peers than that before inserting them sets the variable
 *  higher (refusals: hs_strangers_full in the close-time counters). */
#define EMO_STRANGERS_MAX 65536u
/** A named endpoint's peer table at the start; it doubles as peers come
 *  (emo_name_grow). */
#define EMO_NAMED_PEERS_START 16u
/** Is @p ep named (version 3 addresses, first contact)? */
bool emo_named(const struct emo_ep *ep);
/** After the link opened: a link with first contact names the endpoint
 *  (nonce, endpoint index, table size, self number); else nothing (the
 *  caller numbers it).  @return 0 or -1 with a sentence in @p err. */
int emo_name_setup(struct emo_ep *ep, char *err, size_t errlen);
/** After the engine is made: turn its first contact on (named only). */
int emo_name_open(struct emo_ep *ep, char *err, size_t errlen);
/** Give named AV address @p a the endpoint's number for it (a->id), once.
 *  @return 0, -FI_ENOMEM (table full) or -FI_EADDRINUSE (a restarted
 *  endpoint whose old incarnation is still held), each with a warning. */
int emo_name_resolve(struct emo_ep *ep, emo_addr_t *a);
/** fi_getinfo's @p node and @p service (numeric or names, IPv4) as a partial
 *  name (emo_wire.h) in a new EMO_ADDR_LEN-byte *@p out; @p node NULL with
 *  @p passive: any address.  @return 0, -FI_ENODATA (does not resolve) or
 *  -FI_ENOMEM. */
int emo_name_partial(const char *node, const char *service, bool passive, void **out);
/** The receive port (host order) a partial name in fi_info's src_addr
 *  asks for, or 0 (none: any free port). */
uint16_t emo_name_src_port(const void *src_addr, size_t len);
/** The engine's contact callback: @p peer's handshake completed. */
void emo_name_contact(void *u, uint32_t peer, bool again);
/** em_engine_ops_t::grow: @p ep's per-peer arrays to @p npeers entries
 *  (under the domain's lock: every caller of the engine holds it).
 *  @return 0 or -1 (no memory: the arrays keep their size). */
int emo_name_grow(void *u, uint32_t npeers);
/** The first-contact counters at close (FI_LOG_LEVEL=info). */
void emo_name_stats(const struct emo_ep *ep);
/** Room for emo_ep_label's text. */
#define EMO_LABEL_LEN 96
/** How log lines name @p ep ("endpoint %s"): a numbered endpoint by its
 *  id; a named one by its address, which tells the processes of a job
 *  apart (they all number themselves alike): kernel UDP "IPv4:receive
 *  port#endpoint index", the other links their address bytes in hex
 *  before the '#'.  @return @p buf (EMO_LABEL_LEN bytes). */
const char *emo_ep_label(const struct emo_ep *ep, char *buf);

/* emo_data.c */
extern const em_engine_ops_t emo_engine_ops;
extern struct fi_ops_msg emo_msg_ops;
extern struct fi_ops_tagged emo_tagged_ops;
/** Cancel a posted receive with @p context (fi_cancel). */
ssize_t emo_cancel(struct emo_ep *ep, void *context);
/** Free every queued entry and operation (close). */
void emo_data_fini(struct emo_ep *ep);

#endif
