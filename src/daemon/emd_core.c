/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file emd_core.c
 * The data plane of emd (see emd_core.h): set-up and the clients (attach,
 * forget, doom).  No DPDK, no sockets: the port is an em_link_t.
 *
 * Reading client memory: the region is shared with a process that may
 * rewrite any byte at any time.  So: the geometry is the daemon's (the ring
 * handles in struct emd_client, filled here from the arguments, never from
 * the region); rx.head and tx.tail are loaded once per use and bounded
 * (emd_ring.h); a tx slot's header is copied once and checked; a frame is
 * copied once (into an mbuf, or into another client's ring) and anything
 * the daemon must understand in it is decoded from a private copy.
 */
#include "daemon/emd_core_int.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static void nolog(const char *fmt, ...) { (void)fmt; }

int emd_core_init(emd_core_t *c, em_link_t *link, const uint8_t mac[6], uint32_t mtu,
                  uint32_t max_clients, uint32_t max_flows, uint32_t max_nodes, int ack)
{
    c->link = link;
    memcpy(c->mac, mac, 6);
    c->mtu = mtu;
    c->ack = ack;
    c->max_clients = max_clients;
    c->max_flows = max_flows ? max_flows : EMD_FLOWS_DEFAULT;
    if (c->max_flows > EMD_FLOWS_MAX)
        c->max_flows = EMD_FLOWS_MAX;
    c->max_nodes = max_nodes ? max_nodes : EMD_NODES_DEFAULT;
    if (c->max_nodes > 65535u)
        c->max_nodes = 65535u;
    c->max_nodes_per_uid = emd_uid_share(c->max_nodes); /* emd --max-per-uid 0 lifts it */
    if (!c->loss.rng)
        c->loss.rng = EM_LOSS_SEED_DEFAULT;
    if (!c->log)
        c->log = nolog;
    c->cl = calloc(max_clients, sizeof *c->cl);
    c->ep2cl = calloc(65536, sizeof *c->ep2cl);
    c->nodes = calloc(c->max_nodes, sizeof *c->nodes);
    if (!c->cl || !c->ep2cl || !c->nodes) {
        emd_core_fini(c);
        return -1;
    }
    for (unsigned i = 0; i < max_clients; i++) {
        c->cl[i].fd = -1;
        c->cl[i].slot = EMD_BULKQ_NO_SLOT;
    }
    return 0;
}

void emd_core_fini(emd_core_t *c)
{
    if (c->cl)
        for (unsigned i = 0; i < c->max_clients; i++) {
            free(c->cl[i].flows);
            free(c->cl[i].by_dst);
        }
    free(c->cl);
    free(c->ep2cl);
    free(c->nodes);
    c->cl = NULL;
    c->ep2cl = NULL;
    c->nodes = NULL;
}

int emd_core_attach(emd_core_t *c, unsigned i, int fd, struct emd_shm_hdr *h, uint64_t size,
                    uint32_t rx_size, uint32_t tx_slots, uint16_t ep, uint32_t pid, uint32_t uid,
                    uint16_t slot)
{
    uint32_t ss = 0;
    uint64_t want = emd_shm_size(c->mtu, rx_size, tx_slots, &ss);
    if (i >= c->max_clients || want == 0 || want != size || ep == 0 || ep == EMD_EP_CONTROL)
        return -1;
    struct emd_client *cl = &c->cl[i];
    *cl = (struct emd_client){ .fd = fd,
                               .h = h,
                               .size = size,
                               .mtu = c->mtu,
                               .ep = ep,
                               .pid = pid,
                               .uid = uid,
                               .slot = slot };
    /* the geometry emd_shm_init laid out, from the arguments */
    uint8_t *base = (uint8_t *)h;
    emd_ring_init(&cl->rx, &h->rx, base + EMD_SHM_RX_OFF, rx_size, 0, 0);
    emd_ring_init(&cl->tx, &h->tx, base + EMD_SHM_RX_OFF + rx_size, tx_slots, ss, 0);
    if (c->ack) {
        /* open addressing, at most half full */
        unsigned cap = 64;
        while (cap < 2 * c->max_flows)
            cap <<= 1;
        cl->flows = calloc(cap, sizeof *cl->flows);
        cl->by_dst = calloc(cap, sizeof *cl->by_dst);
        if (!cl->flows || !cl->by_dst) { /* no memory: no eager ACKs for this one */
            free(cl->flows);
            free(cl->by_dst);
            cl->flows = NULL;
            cl->by_dst = NULL;
        }
        cl->flow_cap = cl->flows ? cap : 0;
    }
    c->ep2cl[ep] = (uint16_t)(i + 1);
    return 0;
}

void emd_core_forget(emd_core_t *c, unsigned i)
{
    struct emd_client *cl = &c->cl[i];
    if (cl->ep && c->ep2cl[cl->ep] == i + 1)
        c->ep2cl[cl->ep] = 0;
    free(cl->flows);
    free(cl->by_dst);
    *cl = (struct emd_client){ .fd = -1, .slot = EMD_BULKQ_NO_SLOT };
}

void emd_core_doom(emd_core_t *c, unsigned i, const char *why)
{
    struct emd_client *cl = &c->cl[i];
    if (cl->fd < 0 || cl->doomed)
        return;
    cl->doomed = why;
    c->doomed_clients++;
}

int emd_core_take_doomed(emd_core_t *c)
{
    for (unsigned i = 0; i < c->max_clients; i++)
        if (c->cl[i].fd >= 0 && c->cl[i].doomed)
            return (int)i;
    return -1;
}
