/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file incast.c
 * N -> 1 through a shared bottleneck (see incast.h).
 */
#include "sim/incast.h"

#include <stdlib.h>
#include <string.h>

#define QMAX 16

struct incast {
    em_simnet_t *net;
    const em_incast_cfg_t *ic;
    uint8_t *buf;
    em_proto_op_t ops[EM_INCAST_MAX_SENDERS + 1][QMAX];
    unsigned next_op[EM_INCAST_MAX_SENDERS + 1];
    uint64_t rx_bytes[EM_INCAST_MAX_SENDERS + 1]; /* whole messages, per sender */
    int failed;
};

static void send_one(struct incast *x, unsigned s)
{
    em_proto_op_t *op = &x->ops[s][x->next_op[s]++ % x->ic->queued];
    int rc = em_proto_send(em_simnet_proto(x->net, s), op, 0, 1, x->buf, x->ic->msg_bytes, NULL,
                           em_simnet_now(x->net));
    if (rc != 0)
        x->failed++;
}

static void on_recv(void *u, unsigned node, uint32_t from, uint8_t tag, const void *d, size_t len)
{
    struct incast *x = u;
    (void)tag;
    (void)d;
    if (node == 0 && from <= x->ic->senders)
        x->rx_bytes[from] += len;
}

static void on_complete(void *u, unsigned node, void *ctx, int status)
{
    struct incast *x = u;
    (void)ctx;
    if (status == -EM_ECANCELED) /* teardown at the end of the run */
        return;
    if (status != 0) {
        x->failed++;
        return;
    }
    if (node >= 1)
        send_one(x, node);
}

static bool never(void *u)
{
    (void)u;
    return false;
}

void em_incast_cfg_default(em_incast_cfg_t *ic)
{
    *ic = (em_incast_cfg_t){
        .senders = 8, .msg_bytes = 65536, .queued = 4, .duration_ns = 20000000
    };
}

static void summarise(struct incast *x, const em_sim_cfg_t *sc, em_incast_result_t *r)
{
    const em_incast_cfg_t *ic = x->ic;
    double sum = 0, sum2 = 0, min = -1;

    for (unsigned s = 1; s <= ic->senders; s++) {
        const em_proto_stats_t *ps = em_proto_stats(em_simnet_proto(x->net, s));
        double b = (double)x->rx_bytes[s];
        r->data_frames += ps->tx_data_frames;
        r->retransmits += ps->retransmits;
        r->timeouts += ps->timeouts;
        sum += b;
        sum2 += b * b;
        if (min < 0 || b < min)
            min = b;
    }
    const em_sim_stats_t *ss = em_sim_stats(em_simnet_sim(x->net));
    r->bn_dropped = ss->bn_dropped;
    r->bn_max_queue = ss->bn_max_queue;
    r->delivered_bytes = em_proto_stats(em_simnet_proto(x->net, 0))->rx_payload_bytes;
    double rate = 1e12 / (double)sc->bn_ns_per_kb; /* bytes per second */
    r->goodput_frac = (double)r->delivered_bytes / (rate * (double)ic->duration_ns * 1e-9);
    r->retx_frac = r->data_frames ? (double)r->retransmits / (double)r->data_frames : 0;
    r->jain = sum2 > 0 ? sum * sum / (ic->senders * sum2) : 0;
    r->min_share = sum > 0 ? min * ic->senders / sum : 0;
    r->failed = x->failed;
}

int em_incast_run(const em_proto_cfg_t *pc, const em_sim_cfg_t *sc, const em_incast_cfg_t *ic,
                  em_incast_result_t *r)
{
    static const em_simnet_cb_t cb = { .recv = on_recv, .complete = on_complete };

    memset(r, 0, sizeof *r);
    if (ic->senders < 1 || ic->senders > EM_INCAST_MAX_SENDERS || ic->queued < 1 ||
        ic->queued > QMAX || sc->bn_ns_per_kb == 0 || sc->bn_node != 0)
        return -1;
    struct incast *x = calloc(1, sizeof *x);
    if (!x)
        return -1;
    x->ic = ic;
    x->buf = calloc(1, ic->msg_bytes ? ic->msg_bytes : 1);
    x->net = x->buf ? em_simnet_create(ic->senders + 1, pc, sc, &cb, x) : NULL;
    if (!x->net) {
        free(x->buf);
        free(x);
        return -1;
    }
    for (unsigned s = 1; s <= ic->senders; s++)
        for (unsigned q = 0; q < ic->queued; q++)
            send_one(x, s);
    em_simnet_run(x->net, never, x, ic->duration_ns);
    summarise(x, sc, r);
    em_simnet_destroy(x->net);
    free(x->buf);
    free(x);
    return 0;
}
