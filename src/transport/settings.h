/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file settings.h
 * The one table of ethermpi's settings, shared by every front end.
 *
 * Each setting is written here once: its name, type, default, range or
 * choices, help text and ompi_info level.  The front ends only publish it
 * under their own names:
 *
 *   table name     Open MPI 4.1 BTLs            libfabric provider
 *   "window"       btl_rudp_window,             FI_ETHERMPI_WINDOW
 *                  btl_dpdk_window              (fi_info -e lists it)
 *
 * and read the values into an em_settings_t, which the factory
 * (transport.h) turns into links and an engine configuration.  A setting
 * names the front ends that offer it (em_setting_t::fronts): a link's
 * settings belong to the front ends that can open that link.
 *
 * Defaults that depend on the link (the window, the provider's eager
 * limit) are -1 ("the link's") in the table and resolved by transport.h,
 * so that the rule is written once too.  The protocol's timers default to
 * what the core itself defaults to (em_proto_cfg_default), so that the
 * core's numbers are not typed again here (em_settings_default).
 *
 * Pure C: no I/O, no allocation; safe from any thread (the table is const).
 */
#ifndef EM_TRANSPORT_SETTINGS_H
#define EM_TRANSPORT_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>

/** Which front ends offer a setting (em_setting_t::fronts). */
enum em_front {
    EM_FRONT_RUDP = 1u << 0, /**< the rudp BTL: btl_rudp_<name> */
    EM_FRONT_DPDK = 1u << 1, /**< the dpdk BTL: btl_dpdk_<name> */
    EM_FRONT_OFI = 1u << 2,  /**< the libfabric provider: FI_ETHERMPI_<NAME> */
    EM_FRONT_EMD = 1u << 3,  /**< the node daemon's port: emd --<name-with-dashes> */
};
#define EM_FRONT_BTLS (EM_FRONT_RUDP | EM_FRONT_DPDK)
#define EM_FRONT_ALL  (EM_FRONT_BTLS | EM_FRONT_OFI) /**< the MPI-facing front ends */

/** A setting's type; the storage in em_settings_t is int, bool, char * or double. */
typedef enum em_set_type {
    EM_SET_INT = 0,
    EM_SET_BOOL,
    EM_SET_STRING,
    EM_SET_DOUBLE,
} em_set_type_t;

/** The values of every setting (one struct for all front ends). */
typedef struct em_settings {
    /* protocol, every front end */
    int window;     /**< frames in flight per peer, 1-256; 0 = from window_kb; -1 = the link's */
    int window_kb;  /**< window 0: about this many KiB in flight per peer */
    char *recovery; /**< "sr" or "gbn" */
    char *cc;       /**< "loss", "delay" or "off" */
    int rto_us, rto_min_us, rto_max_us, retries, ack_delay_us;
    int rx_mem_mb; /**< receive buffers (reassembly, out of order) per link, MiB */
    int linger_ms; /**< close/finalize waits this long at most for its sends' ACKs */
    int mtu;       /**< frame bytes; 0 = the link's */
    /* the BTLs' glue */
    bool random_isn, print_stats, same_node;
    int order_max_held, order_max_mb, inplace_min;
    /* link selection */
    char *link;           /**< provider: "udp", "dpdk", "emd" or "xdp"; rudp BTL: "udp" or "xdp" */
    char *xdp_mode;       /**< AF_XDP: "auto", "zerocopy" or "copy" */
    int xdp_queue;        /**< AF_XDP: interface queue (the first) */
    int xdp_queues;       /**< AF_XDP: sockets on queues [xdp_queue, +xdp_queues) */
    int xdp_busy_poll_us; /**< AF_XDP: SO_BUSY_POLL microseconds (0 off) */
    char *xdp_prog; /**< AF_XDP: the filter object; "" = EM_XDP_PROG, else the installed one */
    char *mode;     /**< dpdk BTL: "direct" (dpdk link) or "daemon" (emd link) */
    /* kernel UDP link */
    char *if_include;
    int sock_buf;
    bool gso, gro;
    /* DPDK link */
    char *vdev, *eal_args;
    double rx_loss;
    int loss_seed, link_wait_ms;
    bool zero_copy;
    char *framing; /**< "l2" or "udp" (dpdk and emd links) */
    int udp_port;
    char *udp_addr;
    bool udp_checksum;
    /* the node daemon's link */
    char *emd_socket;
    int emd_heartbeat_ms;
    char *bulk_queue; /**< "auto", "on" or "off" */
    /* the provider's own */
    int live_us, unexp_mb, cq_spin_ns, yield_us, eager_max, send_copy_max;
    int id, npeers, first_contact;
    char *names; /**< "wire" (named endpoints, first contact, where the link can) or "ids" */
} em_settings_t;

/** One row of the table. */
typedef struct em_setting {
    const char *name; /**< lower case: btl_<component>_<name>, FI_ETHERMPI_<NAME> */
    em_set_type_t type;
    unsigned fronts;     /**< enum em_front bits */
    unsigned char level; /**< ompi_info level, 1 (user, basic) .. 9 (developer, all) */
    size_t offset;       /**< of its value in em_settings_t */
    /** The default as text ("loss", "5000", "0.0", "1"), or NULL for a
     *  protocol timer that takes the core's (em_settings_default) */
    const char *dflt;
    long min, max;       /**< EM_SET_INT: the accepted range, inclusive */
    const char *choices; /**< EM_SET_STRING: "a|b|c", or NULL for free text */
    const char *help;
} em_setting_t;

/** sizeof(em_settings_t) as this library was built: a front end built
 *  against another layout (a component from another release) must not
 *  hand the library its struct (em_settings_default would overrun it). */
size_t em_settings_size(void);
/** 1 when the caller's em_settings_t is this library's (call with sizeof). */
#define EM_SETTINGS_ABI_OK() (em_settings_size() == sizeof(em_settings_t))

/** The table, in the order ompi_info and fi_info -e list it. */
const em_setting_t *em_settings_table(size_t *n);
/** The row named @p name, or NULL. */
const em_setting_t *em_setting_find(const char *name);

/** Every setting at its default (strings point at static text). */
void em_settings_default(em_settings_t *s);
/** The value of row @p d in @p s. */
void *em_setting_ptr(em_settings_t *s, const em_setting_t *d);
const void *em_setting_cptr(const em_settings_t *s, const em_setting_t *d);

/** The name under which front end @p front publishes @p d:
 *  "btl_rudp_window", "btl_dpdk_window", "FI_ETHERMPI_WINDOW", emd's
 *  "--link-wait-ms". */
void em_setting_fullname(const em_setting_t *d, unsigned front, char *buf, size_t len);

/** Render the value of @p d in @p s as text (as the default is written). */
void em_setting_format(const em_settings_t *s, const em_setting_t *d, char *buf, size_t len);

/**
 * Parse @p text into @p d's value in @p s (as the provider's string
 * parameters and tools read them): integers in decimal, booleans as
 * 0/1/true/false/yes/no/on/off, doubles with strtod.  Strings are stored
 * as the pointer @p text (the caller keeps it alive).
 * @return 0, or -1 with a sentence in @p err naming @p name.
 */
int em_setting_parse(em_settings_t *s, const em_setting_t *d, const char *text, const char *name,
                     char *err, size_t errlen);

/**
 * The index of @p val among row @p d's choices ("l2|udp": "udp" is 1), or
 * -1 when it is none of them or the row has no choices; NULL or "" is the
 * row's default.  The front-end layer maps indexes to its enums (framing,
 * bulk_queue, recovery, link), whose order the choices follow (checked by
 * tests/transport/test_settings.c).
 */
int em_setting_choice_of(const em_setting_t *d, const char *val);
/** em_setting_choice_of() of setting @p name's value in @p s. */
int em_setting_choice(const em_settings_t *s, const char *name);

/**
 * Strings as the front ends hand them over: Open MPI stores an empty value
 * as NULL.  A NULL string becomes "", and an empty one of a row with
 * choices (cc, framing, ...) becomes its default: empty means default.
 */
void em_settings_normalize(em_settings_t *s);

/**
 * Check every setting of front end @p front against its range or choices.
 * @return 0, or -1 with a sentence naming the setting as @p front
 * publishes it, the value and what is accepted.
 */
int em_settings_check(const em_settings_t *s, unsigned front, char *err, size_t errlen);

#endif
