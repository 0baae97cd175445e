/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file emd_ctl_msg.h
 * The daemon contract's control part (emd_abi.h): the messages on the
 * daemon's unix socket (SOCK_SEQPACKET: fixed-size messages, boundaries
 * kept), the STATUS reply, and passing the region's memfd (SCM_RIGHTS).
 * Host byte order: both ends are on one host.
 *
 *   control socket                                  client          emd
 *      ATTACH_REQ {magic, version, pid}              ----------------->
 *      ATTACH_OK  {instance, endpoint, size} + memfd <-----------------
 *      (or ATTACH_ERR {status, text})
 *      WAKE  (the daemon sleeps; new tx slots)       ----------------->
 *      FLOW  {self, peer, keys, next seqs, frame_max} ----------------->
 *            (one per peer: the daemon may acknowledge that peer's
 *             in-order frames for the client; see struct emd_ctl_flow)
 *   closing the socket = detach: the daemon frees the endpoint at once,
 *   so a killed client's rings are reclaimed; a dead daemon shows up to the
 *   client as POLLHUP on the socket (or a stale heartbeat, if it hangs).
 *
 * Status counters (EMD_STATUS_FIELDS) travel by index, never by name: an
 * entry keeps its place and meaning (the bulk_slots* entries were printed
 * as rdv_slots* before the bulk-queue rename; same counters).
 */
#ifndef EM_EMD_ABI_EMD_CTL_MSG_H
#define EM_EMD_ABI_EMD_CTL_MSG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "emd_abi/emd_abi.h"

#define EMD_CTL_MAGIC 0x454D4443u /* "EMDC" */

/* ------------------------------------------------------------ control -- */

enum emd_ctl_type {
    EMD_CTL_ATTACH_REQ = 1,
    EMD_CTL_ATTACH_OK = 2,
    EMD_CTL_ATTACH_ERR = 3,
    EMD_CTL_WAKE = 4,
    EMD_CTL_FLOW = 5,
    EMD_CTL_STATUS_REQ = 6, /**< the first message of a connection: send the counters, close */
    EMD_CTL_STATUS = 7,     /**< the reply: a struct emd_ctl_status (not a struct emd_ctl_msg) */
};

/**
 * FLOW: the client's protocol endpoint @c self talks to @c peer; the daemon
 * may acknowledge @c peer's in-order sequenced frames to @c self once they
 * are in the client's rx ring, starting at @c rx_next, if they carry
 * @c rx_key and pass the protocol's stateless checks for @c frame_max; its
 * ACKs carry @c tx_key and @c tx_next.  Any values: the daemon assumes no
 * initial sequence number and no key format (keys up to 64 bits).  A second
 * FLOW for the same (self, peer) replaces the first.  What a client says
 * here only concerns frames sent to its own endpoint.
 *
 * @c peer_node / @c peer_ep: where @c peer's frames come from (the node id
 * and endpoint of its shim, as the client registered them for its own
 * source check).  The daemon acknowledges only frames whose shim names
 * exactly these: a frame with the right key and ids from anywhere else is
 * one the client refuses (drop_source), so acknowledging it would discard
 * the true frame as a duplicate.  Never all zero.
 */
struct emd_ctl_flow {
    uint64_t rx_key;       /**< key of the frames peer -> self */
    uint64_t tx_key;       /**< key of the frames self -> peer */
    uint32_t rx_next;      /**< next sequence number self expects from peer */
    uint32_t tx_next;      /**< self's next sequence number toward peer */
    uint32_t frame_max;    /**< self's largest frame, headers included */
    uint32_t self, peer;   /**< protocol endpoint ids (self != peer) */
    uint8_t peer_node[6];  /**< the peer's node id (emd_wire.h "Node ids") */
    uint16_t peer_ep;      /**< the peer's daemon endpoint (1..65535) */
    uint32_t remote_index; /**< the peer's number of self: self's frames to it, and the
                                daemon's ACKs for self, carry it (wire v3) */
    uint8_t rsvd[8];       /**< 0 */
};
_Static_assert(sizeof(struct emd_ctl_flow) == 56, "emd_ctl_flow is 56 bytes");
_Static_assert(offsetof(struct emd_ctl_flow, peer_node) == 36, "peer_node follows the ids");
_Static_assert(offsetof(struct emd_ctl_flow, remote_index) == 44, "remote_index follows peer_ep");

/** One control message (fixed size; SOCK_SEQPACKET keeps the boundaries). */
struct emd_ctl_msg {
    uint32_t magic;   /**< EMD_CTL_MAGIC */
    uint16_t version; /**< EMD_VERSION */
    uint16_t type;    /**< enum emd_ctl_type */
    union {
        struct {
            uint32_t pid;      /**< ATTACH_REQ: the client's pid (diagnostics; the daemon
                                        uses SO_PEERCRED's) */
            uint32_t status;   /**< ATTACH_ERR: an errno value */
            uint64_t instance; /**< ATTACH_OK: random id of this daemon run */
            uint64_t shm_size; /**< ATTACH_OK: bytes of the region (= the memfd's size) */
            uint16_t endpoint; /**< ATTACH_OK: the client's endpoint id (1..65535) */
            uint16_t rsvd[3];
            char text[24]; /**< ATTACH_ERR: reason (NUL-terminated); else 0 */
        };
        struct emd_ctl_flow flow; /**< FLOW */
    };
};
_Static_assert(sizeof(struct emd_ctl_msg) == 64, "emd_ctl_msg is 64 bytes");

/**
 * STATUS (docs/daemon.md "Reading the counters"): a client the access rule
 * admits connects, sends a STATUS_REQ (a struct emd_ctl_msg whose fields
 * past the type the daemon ignores), and gets one struct emd_ctl_status;
 * then the daemon closes the connection.  The connection never takes a
 * client slot: it is a pending connection (EMD_PENDING, one second) until
 * its request is read.  Host byte order, like every control message (both
 * ends are on one host).  Counter @c i of @c v is EMD_STATUS_FIELDS' entry
 * @c i; @c count says how many the daemon filled (a newer daemon may add
 * entries at the end, never reorder them; a reader shows min(count, its
 * own) entries).  A change of meaning bumps @c layout.
 *
 * The counters: X(name, meaning).  Totals since the daemon started, except
 * those marked "now".
 */
#define EMD_STATUS_FIELDS(X)                                                                       \
    X(clients, "clients attached now")                                                             \
    X(attaches, "attaches accepted")                                                               \
    X(detaches, "clients detached")                                                                \
    X(rx_frames, "frames received from the port")                                                  \
    X(rx_bad, "received frames refused (bad shim header)")                                         \
    X(rx_no_endpoint, "received frames for no attached endpoint")                                  \
    X(rx_loss_drops, "received frames dropped by --rx-loss (testing)")                             \
    X(rx_ring_full, "received frames dropped: the client's rx ring was full")                      \
    X(tx_frames, "frames sent to the port")                                                        \
    X(tx_port_full, "sends the port refused (tx queue full)")                                      \
    X(local_frames, "frames carried between clients of this node")                                 \
    X(eager_acks, "eager ACKs sent for the clients")                                               \
    X(ack_refused, "in-order frames not acknowledged (checks failed)")                             \
    X(flows, "eager-ACK flows registered now")                                                     \
    X(flows_added, "flow registrations accepted")                                                  \
    X(flows_refused, "flow registrations refused")                                                 \
    X(refused_credentials, "connections refused by the access rule (--uid/--group)")               \
    X(refused_limits, "attaches refused by limits (--max-clients, --max-per-uid, pending)")        \
    X(refused_requests, "connections refused: malformed first request")                            \
    X(bad_control, "control messages refused from attached clients")                               \
    X(doomed_clients, "clients detached for bad rings or messages")                                \
    X(nodes, "nodes in the node table now")                                                        \
    X(nodes_full, "sends refused: node table full")                                                \
    X(nodes_evicted, "node table entries aged out and reused")                                     \
    X(tx_bad_mac, "sends to broadcast/multicast refused")                                          \
    X(hello_bad, "memif hellos refused")                                                           \
    X(hello_conflict, "memif hellos with a conflicting layout")                                    \
    X(hello_replies_skipped, "memif hello replies skipped (rate)")                                 \
    X(bulk_slots, "bulk-queue slots configured")                                                   \
    X(bulk_slots_used, "bulk-queue slots in use now")                                              \
    X(bulk_slots_held, "bulk-queue slots kept for a live detached holder")                         \
    X(put_frames, "put frames carried by the daemon")                                              \
    X(put_bytes, "put bytes carried by the daemon")                                                \
    X(ack_resyncs, "eager flows moved by the clients' own ACKs")                                   \
    X(notes, "notes of bulk-queue ACKs")                                                           \
    X(status_requests, "STATUS requests answered (this one included)")                             \
    X(nodes_unreachable,                                                                           \
      "sends refused: the port could not reach the node (udp: no route or ARP answer)")            \
    X(ack_wrong_source, "in-order frames not acknowledged: key and ids right, another source")     \
    X(refused_uid_share, "attaches refused: the uid holds its share (--max-per-uid)")              \
    X(nodes_uid_full, "sends refused: the sender's uid holds its share of the node table")         \
    X(handshakes, "first-contact handshake frames carried (wire v3)")

#define EMD_STATUS_ENUM_(name, text) EMD_ST_##name,
enum emd_status_index { EMD_STATUS_FIELDS(EMD_STATUS_ENUM_) EMD_ST_COUNT };
#undef EMD_STATUS_ENUM_

#define EMD_STATUS_LAYOUT 1u  /* meaning of v[]: bump when one changes */
#define EMD_STATUS_MAX    64u /* room in the reply; EMD_ST_COUNT <= this */
_Static_assert(EMD_ST_COUNT <= EMD_STATUS_MAX, "more counters than the reply holds");

/** The STATUS reply (fixed size). */
struct emd_ctl_status {
    uint32_t magic;             /**< EMD_CTL_MAGIC */
    uint16_t version;           /**< EMD_VERSION */
    uint16_t type;              /**< EMD_CTL_STATUS */
    uint16_t layout;            /**< EMD_STATUS_LAYOUT */
    uint16_t count;             /**< counters filled in v (1..EMD_STATUS_MAX) */
    uint32_t rsvd;              /**< 0 */
    uint64_t instance;          /**< random id of this daemon run (as in ATTACH_OK) */
    uint64_t v[EMD_STATUS_MAX]; /**< the counters; unused entries 0 */
};
_Static_assert(sizeof(struct emd_ctl_status) == 536, "emd_ctl_status is 536 bytes");

/* --------------------------------------------------------- functions -- */

/** Fill a control message of @p type (all other fields 0). */
void emd_ctl_init(struct emd_ctl_msg *m, uint16_t type);
/**
 * Validate a received control message of @p len bytes (FLOW: self != peer,
 * frame_max from 64 to EMD_MTU_MAX, a peer address (node id not all zero,
 * endpoint not 0), reserved bytes 0).
 * @return 0, or -1 with the reason in @p why (a static string).
 */
int emd_ctl_check(const void *buf, size_t len, struct emd_ctl_msg *out, const char **why);

/**
 * Validate a received STATUS reply of @p len bytes (size, magic, version,
 * type, layout, 1 <= count <= EMD_STATUS_MAX).
 * @return 0, or -1 with the reason in @p why (a static string).
 */
int emd_status_check(const void *buf, size_t len, struct emd_ctl_status *out, const char **why);

/**
 * Send the @p len-byte message @p msg on @p sock with descriptor @p fd
 * attached (SCM_RIGHTS; MSG_NOSIGNAL).  @return 0, or -1 (errno).
 */
int emd_send_fd(int sock, const void *msg, size_t len, int fd);
/**
 * Receive one message of at most @p cap bytes into @p buf, and the one
 * descriptor that may come with it (@p fd: -1 when none; any other
 * descriptors or truncated control data are closed/refused).
 * @return the message's bytes (0: the peer closed), or -1 (errno).
 */
ssize_t emd_recv_fd(int sock, void *buf, size_t cap, int *fd);
/**
 * The client's side of one exchange: wait up to @p timeout_ms for the
 * daemon's answer on @p sock, receive it with the descriptor that may come
 * with it (@p memfd, -1 when none) and check it (emd_ctl_check) into @p m.
 * @return 0, or -1 with the cause in @p err (a hung or closed daemon, or a
 * malformed answer; @p memfd is closed and set to -1 then).
 */
int emd_ctl_recv(int sock, struct emd_ctl_msg *m, int *memfd, uint32_t timeout_ms, char *err,
                 size_t errlen);

#endif
