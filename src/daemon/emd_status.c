/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file emd_status.c
 * STATUS (emd_abi/emd_ctl_msg.h, emd_ctl.h): the daemon fills the reply from its own
 * totals (never from the clients' writable regions); `emd --status SOCKET`
 * asks for it and prints "name value" lines.
 */

#include "daemon/emd_ctl.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define EMD_STATUS_NAME_(name, text) #name,
static const char *const status_names[EMD_ST_COUNT] = { EMD_STATUS_FIELDS(EMD_STATUS_NAME_) };
#undef EMD_STATUS_NAME_

void emd_ctl_status_fill(const emd_ctl_t *t, struct emd_ctl_status *s)
{
    const emd_core_t *c = t->core;
    memset(s, 0, sizeof *s);
    s->magic = EMD_CTL_MAGIC;
    s->version = EMD_VERSION;
    s->type = EMD_CTL_STATUS;
    s->layout = EMD_STATUS_LAYOUT;
    s->count = EMD_ST_COUNT;
    s->instance = t->instance;
    uint64_t *v = s->v;
    uint64_t clients = 0, flows = 0, used = 0;
    for (unsigned i = 0; i < c->max_clients; i++)
        if (c->cl[i].fd >= 0) {
            clients++;
            flows += c->cl[i].nflows; /* the daemon's own table, not the region */
        }
    for (unsigned k = 0; k < t->bulk_slots && k < EMD_BULKQ_SLOTS_MAX; k++)
        used += t->slot_used[k];
    v[EMD_ST_clients] = clients;
    v[EMD_ST_attaches] = t->attaches;
    v[EMD_ST_detaches] = t->detaches;
    v[EMD_ST_rx_frames] = c->rx_frames;
    v[EMD_ST_rx_bad] = c->rx_bad;
    v[EMD_ST_rx_no_endpoint] = c->rx_no_ep;
    v[EMD_ST_rx_loss_drops] = c->loss_drops;
    v[EMD_ST_rx_ring_full] = c->rx_ring_full;
    v[EMD_ST_tx_frames] = c->tx_frames;
    v[EMD_ST_local_frames] = c->local;
    v[EMD_ST_eager_acks] = c->acks;
    v[EMD_ST_ack_refused] = c->ack_refused;
    v[EMD_ST_flows] = flows;
    v[EMD_ST_flows_added] = t->flows_added;
    v[EMD_ST_flows_refused] = c->flows_refused;
    v[EMD_ST_refused_credentials] = t->refused_cred;
    v[EMD_ST_refused_limits] = t->refused_busy;
    v[EMD_ST_refused_requests] = t->refused_req;
    v[EMD_ST_bad_control] = t->bad_ctl;
    v[EMD_ST_doomed_clients] = c->doomed_clients;
    v[EMD_ST_nodes] = c->nnodes;
    v[EMD_ST_nodes_full] = c->nodes_full;
    v[EMD_ST_nodes_evicted] = c->nodes_evicted;
    v[EMD_ST_tx_bad_mac] = c->tx_bad_mac;
    v[EMD_ST_hello_bad] = c->hello_bad;
    v[EMD_ST_hello_conflict] = c->hello_conflict;
    v[EMD_ST_hello_replies_skipped] = c->hello_replies_skipped;
    v[EMD_ST_bulk_slots] = t->bulk_slots;
    v[EMD_ST_bulk_slots_used] = used;
    v[EMD_ST_bulk_slots_held] = t->slots_held;
    v[EMD_ST_put_frames] = c->put_frames;
    v[EMD_ST_put_bytes] = c->put_bytes;
    v[EMD_ST_ack_resyncs] = c->ack_resyncs;
    v[EMD_ST_notes] = c->notes;
    v[EMD_ST_status_requests] = t->status_reqs;
    v[EMD_ST_nodes_unreachable] = c->nodes_unreachable;
    v[EMD_ST_ack_wrong_source] = c->ack_wrong_source;
    v[EMD_ST_refused_uid_share] = t->refused_uid_share;
    v[EMD_ST_nodes_uid_full] = c->nodes_uid_full;
    v[EMD_ST_handshakes] = c->handshakes;
    if (t->port && t->port->stats) { /* tx_port_full (the port's counters) */
        emd_port_stats_t ps = { 0 };
        t->port->stats(t->port_ctx, &ps);
        v[EMD_ST_tx_port_full] = ps.tx_full;
    }
}

int emd_status_query(const char *path, int timeout_ms, struct emd_ctl_status *out, char *err,
                     size_t errlen)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    if (strlen(path) >= sizeof sa.sun_path) {
        snprintf(err, errlen, "socket path too long: %s", path);
        return -1;
    }
    memcpy(sa.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        int e = errno;
        snprintf(err, errlen, "cannot connect to %s: %s%s", path, strerror(e),
                 e == EACCES ? " (not in the socket's group: emd --group, docs/deploy.md)"
                 : e == ENOENT || e == ECONNREFUSED ? " (emd not running, or another --socket)"
                                                    : "");
        if (fd >= 0)
            close(fd);
        return -1;
    }
    struct emd_ctl_msg m;
    emd_ctl_init(&m, EMD_CTL_STATUS_REQ);
    uint8_t buf[sizeof *out + 1];
    struct pollfd p = { .fd = fd, .events = POLLIN };
    ssize_t n = -1;
    if (send(fd, &m, sizeof m, MSG_NOSIGNAL) == (ssize_t)sizeof m && poll(&p, 1, timeout_ms) > 0)
        n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    close(fd);
    const char *why = NULL;
    if (n <= 0) {
        snprintf(err, errlen,
                 "no STATUS reply from %s within %d ms (an emd older than STATUS, or "
                 "not an emd)",
                 path, timeout_ms);
        return -1;
    }
    if (n == (ssize_t)sizeof m) { /* a refusal: ATTACH_ERR with its reason */
        struct emd_ctl_msg e;
        if (emd_ctl_check(buf, (size_t)n, &e, &why) == 0 && e.type == EMD_CTL_ATTACH_ERR) {
            snprintf(err, errlen, "%s refused STATUS: %s (%s)", path, e.text,
                     strerror((int)e.status));
            return -1;
        }
    }
    if (emd_status_check(buf, (size_t)n, out, &why) != 0) {
        snprintf(err, errlen, "%s: %s", path, why);
        return -1;
    }
    return 0;
}

void emd_status_print(const struct emd_ctl_status *s, FILE *f)
{
    fprintf(f, "instance %llu\n", (unsigned long long)s->instance);
    unsigned n = s->count < EMD_ST_COUNT ? s->count : EMD_ST_COUNT;
    for (unsigned i = 0; i < n; i++)
        fprintf(f, "%s %llu\n", status_names[i], (unsigned long long)s->v[i]);
}
