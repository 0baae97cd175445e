/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file emo_name.c
 * Named endpoints: the provider on wire v3's first contact (engine/contact.h,
 * docs/ofi.md "Addresses").
 *
 * On every link that can run first contact (tx_to and rx_from: kernel UDP,
 * and the device links once they have them), an endpoint is named by its
 * link address, its endpoint index behind that address and a random nonce
 * (emo_wire.h, version 3 address).  No id is agreed out of band: no
 * FI_ETHERMPI_ID, no launcher variable, no random draw.  Each endpoint
 * numbers its peers itself: an address inserted into its AV gets the
 * engine's number for it (its emo_av_map: endpoints that share the AV
 * each have their own, emo_av.c), and the handshake, run on the
 * first send, tells the peer what we call it.  A peer that sends to us
 * before we inserted it (Open MPI inserts lazily; any libfabric program
 * may) is taken as a stranger: its messages read FI_ADDR_NOTAVAIL as
 * their source until the application inserts its address, which then gets
 * the same number.
 *
 * Every link can, the emd daemon's too (link_emd.h "First contact");
 * FI_ETHERMPI_NAMES=ids keeps the numbered addresses (version 2, emo_ep.c's
 * pick_id) on any: a job uses one kind everywhere, and an address of the
 * other kind is refused at insert with the reason.
 *
 * Table size: the endpoint's per-peer arrays and its engine's table start
 * at EMO_NAMED_PEERS_START entries and double when a peer inserted into the
 * AV, or a stranger whose handshake completes, needs a number beyond them
 * (engine/contact.h "Sizing"; emo_name_grow below): a job's size is limited
 * by memory, and FI_ETHERMPI_NPEERS is not read.  The endpoint's own number
 * lies outside the table (EM_PROTO_SELF_OUTSIDE, engine/contact.h "Self").
 *
 * Threading: the arrays grow under the domain's lock, which every path
 * that reads them holds: fi_av_insert and fi_ep_bind (emo_name_resolve),
 * and progress (the handshake of a stranger, from em_engine_progress).
 */
#include "emo_prov.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "engine/contact.h"
#include "link/link_mux.h"

bool emo_named(const struct emo_ep *ep) { return ep->self.named != 0; }

int emo_name_setup(struct emo_ep *ep, char *err, size_t errlen)
{
    if (!em_link_has_contact(ep->link) || strcmp(emo_params.names, "ids") == 0)
        return 0; /* numbered (emo_ep.c) */
    uint64_t nonce = 0;
    while (!nonce)
        if (getrandom(&nonce, sizeof nonce, 0) != (ssize_t)sizeof nonce) {
            snprintf(err, errlen, "getrandom failed: no nonce for the endpoint's name");
            return -1;
        }
    if (emo_params.npeers > 0)
        FI_INFO(&emo_prov, FI_LOG_EP_CTRL,
                "FI_ETHERMPI_NPEERS is not used on the %s link: a named endpoint's peer "
                "table grows with its peers\n",
                ep->link->ops->name);
    if (emo_params.id >= 0)
        FI_INFO(&emo_prov, FI_LOG_EP_CTRL,
                "FI_ETHERMPI_ID is not used on the %s link: endpoints are named by "
                "their address\n",
                ep->link->ops->name);
    ep->self.named = 1;
    ep->self.nonce = nonce;
    /* on a shared device the endpoint index is the member's slot (its
     * address's last byte, link/link_mux.h); alone on its link, 0 */
    ep->self.ep_index = em_link_is_mux(ep->link) ? ep->link->local.bytes[ep->link->local.len - 1]
                                                 : 0;
    ep->npeers = EMO_NAMED_PEERS_START;  /* grows: emo_name_grow */
    ep->self.id = EM_PROTO_SELF_OUTSIDE; /* the engine's own number, above every peer's */
    FI_INFO(&emo_prov, FI_LOG_EP_CTRL, "named endpoint %u on the %s link\n", ep->self.ep_index,
            ep->link->ops->name);
    return 0;
}

/* make @p *t (@p elem bytes per entry, @p old entries) hold @p n, new ones 0 */
static int grow_one(void **t, size_t elem, uint32_t old, uint32_t n)
{
    uint8_t *nt = realloc(*t, (size_t)n * elem);
    if (!nt)
        return -1;
    memset(nt + (size_t)old * elem, 0, (size_t)(n - old) * elem);
    *t = nt;
    return 0;
}

int emo_name_grow(void *u, uint32_t npeers)
{
    struct emo_ep *ep = u;
    uint32_t old = ep->npeers;
    /* each array grown keeps its entries; ep->npeers moves last, so a
     * failure part way leaves larger arrays and the old size (a later
     * growth reallocates them again) */
    if (npeers <= old || grow_one((void **)&ep->peer_set, 1, old, npeers) != 0 ||
        grow_one((void **)&ep->peer_heard, 1, old, npeers) != 0 ||
        grow_one((void **)&ep->peer_failed, 1, old, npeers) != 0 ||
        grow_one((void **)&ep->fail_pending, 1, old, npeers) != 0 ||
        grow_one((void **)&ep->unexp_held, sizeof *ep->unexp_held, old, npeers) != 0)
        return -1;
    ep->npeers = npeers;
    FI_INFO(&emo_prov, FI_LOG_EP_CTRL, "endpoint %u: peer table grows to %u\n", ep->self.ep_index,
            npeers);
    return 0;
}

int emo_name_open(struct emo_ep *ep, char *err, size_t errlen)
{
    em_engine_contact_cfg_t cc = { .ep = ep->self.ep_index,
                                   .nonce = ep->self.nonce,
                                   /* strangers: any endpoint may send to ours (fi_av(3)),
                                    * unless FI_ETHERMPI_FIRST_CONTACT is 0; at most
                                    * that many held at once (default EMO_STRANGERS_MAX) */
                                   .accept_strangers = emo_params.first_contact != 0,
                                   .stranger_max = emo_params.first_contact > 0
                                                       ? (uint32_t)emo_params.first_contact
                                                       : EMO_STRANGERS_MAX,
                                   /* a process's endpoints on one address: the shared
                                    * link's slots (one on a link of its own) */
                                   .ep_max = EM_MUX_MEMBERS - 1 };
    if (getrandom(cc.secret, sizeof cc.secret, 0) != (ssize_t)sizeof cc.secret) {
        snprintf(err, errlen, "getrandom failed: no cookie secret");
        return -1;
    }
    int rc = em_engine_contact_open(ep->eng, &cc);
    if (rc != 0) {
        snprintf(err, errlen, "first contact: %s", em_strerror(rc));
        return -1;
    }
    return 0;
}

static bool is_self(const struct emo_ep *ep, const emo_addr_t *a)
{
    return a->ep_index == ep->self.ep_index && a->nonce == ep->self.nonce &&
           a->link.len == ep->self.link.len &&
           memcmp(a->link.bytes, ep->self.link.bytes, a->link.len) == 0;
}

int emo_name_partial(const char *node, const char *service, bool passive, void **out)
{
    struct addrinfo hints = { .ai_family = AF_INET,
                              .ai_socktype = SOCK_DGRAM,
                              .ai_flags = passive ? AI_PASSIVE : 0 },
                    *res = NULL;
    if (getaddrinfo(node, service, &hints, &res) != 0 || !res)
        return -FI_ENODATA;
    const struct sockaddr_in *sin = (const struct sockaddr_in *)res->ai_addr;
    emo_addr_t a = { .named = 1, .id = EMO_ID_NONE, .frame_max = UINT32_MAX };
    a.link.len = 8; /* IPv4, receive port, send port 0 (link_udp_open.c covers) */
    memcpy(a.link.bytes, &sin->sin_addr.s_addr, 4);
    memcpy(a.link.bytes + 4, &sin->sin_port, 2);
    freeaddrinfo(res);
    if (!(*out = calloc(1, EMO_ADDR_LEN)))
        return -FI_ENOMEM;
    emo_addr_encode(&a, *out);
    return 0;
}

uint16_t emo_name_src_port(const void *src_addr, size_t len)
{
    emo_addr_t a;
    if (!src_addr || len != EMO_ADDR_LEN || emo_addr_decode(src_addr, len, &a) != 0 || !a.named ||
        a.nonce || a.link.len != 8)
        return 0;
    uint16_t port;
    memcpy(&port, a.link.bytes + 4, 2);
    return ntohs(port);
}

int emo_name_resolve(struct emo_ep *ep, emo_addr_t *a)
{
    if (a->id != EMO_ID_NONE)
        return 0;
    if (!a->nonce && !ep->link->ops->covers) {
        FI_WARN(&emo_prov, FI_LOG_AV,
                "an address from fi_getinfo's node and service (a partial name) given to an "
                "endpoint on the %s link, whose addresses are a MAC and queue that a node and "
                "service cannot give: exchange addresses out of band (fi_getname, then "
                "fi_av_insert; fabtests -b or -E), or use the kernel UDP link\n",
                emo_link_name());
        return -FI_EINVAL;
    }
    if (is_self(ep, a)) {
        a->id = ep->self.id;
        return 0;
    }
    em_conn_name_t nm = { .addr_len = a->link.len, .ep = a->ep_index, .nonce = a->nonce };
    memcpy(nm.addr, a->link.bytes, a->link.len);
    uint32_t peer;
    int rc = em_engine_contact_insert(ep->eng, &nm, &peer);
    if (rc == -EM_ENOMEM) {
        FI_WARN(&emo_prov, FI_LOG_AV,
                "out of memory: this endpoint's peer table (%u entries) could not grow to take "
                "another peer; give the process more memory (ulimit -v, cgroup limits)\n",
                ep->npeers);
        return -FI_ENOMEM;
    }
    if (rc == -EM_EAGAIN) /* from inside progress, where the table cannot grow */
        return -FI_EAGAIN;
    if (rc != 0) {
        FI_WARN(&emo_prov, FI_LOG_AV,
                "cannot take this address (%s): an endpoint at it restarted (another "
                "nonce) while this endpoint still holds the one before (fi_av_remove the "
                "old address first), or the link refused it\n",
                em_strerror(rc));
        return -FI_EADDRINUSE;
    }
    a->id = peer;
    ep->peer_heard[peer] = 1; /* the handshake named us: no first-contact blob */
    return 0;
}

void emo_name_contact(void *u, uint32_t peer, bool again)
{
    struct emo_ep *ep = u;
    if (peer >= ep->npeers)
        return;
    if (ep->phase == EMO_EP_CLOSING)
        return;
    /* a number that named a peer which failed (a stranger's restart frees
     * its slot; a rebind revives a failed pair): that peer's operations
     * ended then; its unexpected messages stay, from nobody */
    if (ep->peer_failed[peer]) {
        emo_unexp_orphan(ep, peer);
        ep->peer_failed[peer] = 0;
    }
    if (ep->fail_pending[peer]) {
        ep->fail_pending[peer] = 0;
        ep->nfail_pending--;
    }
    ep->peer_heard[peer] = 1;
    if (!ep->peer_set[peer])
        ep->peer_set[peer] = emo_av_fa(ep, peer) != FI_ADDR_NOTAVAIL ? EMO_PEER_AV
                                                                     : EMO_PEER_CONTACT;
    if (again)
        emo_peer_ops_end(ep, peer, -FI_ECANCELED); /* it forgot us: what waits on it ends */
}

void emo_name_stats(const struct emo_ep *ep)
{
    char line[1024], me[EMO_LABEL_LEN];
    em_engine_contact_stats_format(ep->eng, line, sizeof line);
    FI_INFO(&emo_prov, FI_LOG_EP_CTRL, "endpoint %s first contact: %s\n", emo_ep_label(ep, me),
            line);
}

/* Why an address and not the number: a named endpoint's own number is
 * EM_PROTO_SELF_OUTSIDE (engine/contact.h "Self"), the same in every
 * process of a job, so
 * the close-time counters of two ranks could not be told apart (the
 * attack test reads the victim's by its address, tests/attack). */
const char *emo_ep_label(const struct emo_ep *ep, char *buf)
{
    const em_link_addr_t *a = &ep->self.link;
    if (!emo_named(ep)) {
        snprintf(buf, EMO_LABEL_LEN, "%u", ep->self.id);
        return buf;
    }
    if (emo_link_kind() == EM_LINK_KIND_UDP && a->len >= 6) {
        char ip[INET_ADDRSTRLEN] = "?";
        uint16_t port;
        inet_ntop(AF_INET, a->bytes, ip, sizeof ip);
        memcpy(&port, a->bytes + 4, 2);
        snprintf(buf, EMO_LABEL_LEN, "%s:%u#%u", ip, ntohs(port), ep->self.ep_index);
        return buf;
    }
    size_t n = 0;
    for (unsigned i = 0; i < a->len && n + 4 < EMO_LABEL_LEN - 12; i++)
        n += (size_t)snprintf(buf + n, EMO_LABEL_LEN - n, i ? ":%02x" : "%02x", a->bytes[i]);
    snprintf(buf + n, EMO_LABEL_LEN - n, "#%u", ep->self.ep_index);
    return buf;
}
