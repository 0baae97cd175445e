/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * link_emd, the daemon's client link, without a daemon: over a region it
 * is given (loss refused with daemon ACKs, corrupt rx indices), against a
 * stand-in daemon thread that speaks the attach protocol and uses the ring
 * API (attach, tx and rx through the rings, refusal of a corrupt region, a
 * clear error when no daemon runs, the dead-daemon callback), and its
 * router against a stand-in bulk-queue link.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "emd_abi/emd_ctl_msg.h"
#include "emd_abi/emd_region.h"
#include "emd_abi/emd_ring.h"
#include "emd_abi/emd_wire.h"
#include "link/link_emd.h"
#include "proto/wire.h"
#include "util/clock.h"
#include "link_test_util.h"

#include "emd_fixture.h"

static void test_loss_refused_with_daemon_acks(void **st)
{
    (void)st;
    uint64_t size;
    char err[512];
    struct emd_shm_hdr *h = make_region(&size, 1492, 1u << 16, 32);
    em_emd_cfg_t c = { .rx_loss = 0.05 };
    em_link_t *l = em_link_emd_from_region(h, size, 0x1234, 5, &c, err, sizeof err);
    assert_non_null(l); /* the daemon does not acknowledge: allowed */
    em_link_close(l);
    h->flags |= EMD_SHM_F_DAEMON_ACKS;
    assert_null(em_link_emd_from_region(h, size, 0x1234, 5, &c, err, sizeof err));
    assert_non_null(strstr(err, "emd --rx-loss"));
    c.rx_loss = 0;
    l = em_link_emd_from_region(h, size, 0x1234, 5, &c, err, sizeof err);
    assert_non_null(l);
    em_link_close(l);
    munmap(h, size);
}

static void test_rx_corrupt_indices(void **st)
{
    (void)st;
    uint64_t size;
    char err[512];
    struct emd_shm_hdr *h = make_region(&size, 1492, 1u << 16, 32);
    cb_calls = 0;
    em_emd_cfg_t c = { .dead_cb = cb_record };
    em_link_t *l = em_link_emd_from_region(h, size, 0x1234, 5, &c, err, sizeof err);
    assert_non_null(l);
    em_pkt_t *rx[8];
    atomic_store(&h->rx.tail, 17); /* not a record boundary */
    assert_int_equal(em_link_rx_burst(l, rx, 8), 0);
    assert_int_equal(cb_calls, 1);
    assert_non_null(strstr(cb_last, "corrupt"));
    em_link_close(l);
    /* more than the ring holds */
    memset(h, 0, size);
    emd_shm_init(h, size, 1492, 1u << 16, 32, 0x1234, 5, MAC);
    cb_calls = 0;
    l = em_link_emd_from_region(h, size, 0x1234, 5, &c, err, sizeof err);
    atomic_store(&h->rx.tail, (1u << 16) + 64);
    assert_int_equal(em_link_rx_burst(l, rx, 8), 0);
    assert_int_equal(cb_calls, 1);
    em_link_close(l);
    munmap(h, size);
}

/* ---------------------------------------------- link_emd vs stand-in -- */

struct fake {
    char path[108];
    int lfd, cfd;
    int corrupt; /* send a region with a bad magic */
    struct emd_shm_hdr *h;
    uint64_t size;
};

static void *fake_daemon(void *arg)
{
    struct fake *f = arg;
    f->cfd = accept(f->lfd, NULL, NULL);
    if (f->cfd < 0)
        return NULL;
    struct emd_ctl_msg m, req;
    const char *why;
    ssize_t n = recv(f->cfd, &m, sizeof m, 0);
    if (n != (ssize_t)sizeof m || emd_ctl_check(&m, (size_t)n, &req, &why) != 0)
        return NULL;
    uint32_t ss;
    f->size = emd_shm_size(1000, 1u << 16, 16, &ss);
    int mfd = memfd_create("test-emd", MFD_CLOEXEC);
    if (mfd < 0 || ftruncate(mfd, (off_t)f->size) != 0)
        return NULL;
    f->h = mmap(NULL, f->size, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
    emd_shm_init(f->h, f->size, 1000, 1u << 16, 16, 77, 9, MAC);
    atomic_store(&f->h->heartbeat_ns, 1);
    if (f->corrupt)
        f->h->magic = 0;
    struct emd_ctl_msg ok;
    emd_ctl_init(&ok, EMD_CTL_ATTACH_OK);
    ok.instance = 77;
    ok.endpoint = 9;
    ok.shm_size = f->size;
    (void)emd_send_fd(f->cfd, &ok, sizeof ok, mfd);
    close(mfd);
    return NULL;
}

static void fake_start(struct fake *f, pthread_t *t)
{
    snprintf(f->path, sizeof f->path, "/tmp/test_emd_%ld.sock", (long)getpid());
    unlink(f->path);
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    strcpy(sa.sun_path, f->path);
    f->lfd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    assert_true(f->lfd >= 0);
    assert_int_equal(bind(f->lfd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(f->lfd, 4), 0);
    assert_int_equal(pthread_create(t, NULL, fake_daemon, f), 0);
}

static void fake_stop(struct fake *f)
{
    if (f->cfd >= 0)
        close(f->cfd);
    close(f->lfd);
    unlink(f->path);
    if (f->h)
        munmap(f->h, f->size);
}

static void test_link_no_daemon(void **st)
{
    (void)st;
    char err[512];
    em_emd_cfg_t c = { .socket_path = "/tmp/no-such-emd-socket.sock" };
    assert_null(em_link_emd_open(&c, err, sizeof err));
    assert_non_null(strstr(err, "not running"));
}

static void test_link_corrupt_region(void **st)
{
    (void)st;
    struct fake f = { .cfd = -1, .corrupt = 1 };
    pthread_t t;
    fake_start(&f, &t);
    char err[512];
    em_emd_cfg_t c = { .socket_path = f.path };
    em_link_t *l = em_link_emd_open(&c, err, sizeof err);
    pthread_join(t, NULL);
    assert_null(l);
    assert_non_null(strstr(err, "magic"));
    fake_stop(&f);
}

static void test_link_rings_and_death(void **st)
{
    (void)st;
    struct fake f = { .cfd = -1 };
    pthread_t t;
    fake_start(&f, &t);
    char err[512] = "";
    cb_calls = 0;
    em_emd_cfg_t c = { .socket_path = f.path, .dead_cb = cb_record };
    em_link_t *l = em_link_emd_open(&c, err, sizeof err);
    pthread_join(t, NULL);
    assert_non_null(l);
    assert_int_equal(l->mtu, 1000);
    assert_int_equal(l->local.len, 8);
    assert_memory_equal(l->local.bytes, MAC, 6);
    assert_int_equal(l->local.bytes[7], 9);

    /* peers: endpoint 0 (a direct-mode address) is refused */
    em_link_addr_t a = { .len = 8, .bytes = { 2, 0xe7, 0, 0, 0, 2, 0, 0 } };
    assert_int_equal(em_link_set_peer(l, 3, &a), -EINVAL);
    a.bytes[7] = 4;
    assert_int_equal(em_link_set_peer(l, 3, &a), 0);

    /* tx: a frame with a gather payload lands in the tx ring in one piece */
    em_pkt_t *p = em_link_tx_alloc(l);
    assert_non_null(p);
    memcpy(p->data, "head", 4);
    p->len = 4;
    p->ext = (const uint8_t *)"-tail";
    p->ext_len = 5;
    p->peer = 3;
    assert_int_equal(em_link_tx_burst(l, &p, 1), 1);
    /* the stand-in daemon's ends of the rings (its geometry: the region's) */
    emd_ring_t dtx, drx;
    emd_ring_init(&dtx, &f.h->tx, (uint8_t *)f.h + f.h->tx_off, f.h->tx_slots, f.h->slot_size, 0);
    emd_ring_init(&drx, &f.h->rx, (uint8_t *)f.h + f.h->rx_off, f.h->rx_size, 0, 0);
    assert_int_equal(emd_slots_sc_avail(&dtx), 1);
    struct emd_slot_hdr sh;
    const uint8_t *s = emd_slots_sc_at(&dtx, 0);
    memcpy(&sh, s, sizeof sh);
    assert_int_equal(sh.len, 9);
    assert_int_equal(sh.endpoint, 4);
    assert_memory_equal(s + sizeof sh, "head-tail", 9);
    /* the ring holds 16: the 17th frame is refused until the daemon drains */
    em_pkt_t *ps[20];
    for (int i = 0; i < 20; i++) {
        ps[i] = em_link_tx_alloc(l);
        ps[i]->len = 1;
        ps[i]->peer = 3;
    }
    assert_int_equal(em_link_tx_burst(l, ps, 20), 15);
    for (int i = 15; i < 20; i++)
        em_link_tx_free(l, ps[i]);
    assert_int_equal(emd_slots_sc_avail(&dtx), 16);
    emd_slots_sc_dequeue(&dtx, 16);

    /* rx: two records (64 B each), lent in place */
    uint32_t size_rx = f.h->rx_size;
    struct emd_slot_hdr rh = { .endpoint = 4 };
    assert_int_equal(emd_recs_sp_put(&drx, rh, "abc", 3), EMD_RING_OK);
    assert_int_equal(emd_recs_sp_put(&drx, rh, "xy", 2), EMD_RING_OK);
    emd_recs_sp_publish(&drx);
    assert_int_equal(atomic_load(&f.h->rx.tail), 128);
    em_pkt_t *rx[8];
    unsigned n = em_link_rx_burst(l, rx, 8);
    assert_int_equal(n, 2);
    assert_int_equal(rx[0]->len, 3);
    assert_memory_equal(rx[0]->data, "abc", 3);
    assert_int_equal(rx[1]->len, 2);
    assert_int_equal(rx[1]->data - rx[0]->data, 64); /* in place, one record apart */
    em_link_rx_release(l, rx, n);
    assert_int_equal(atomic_load(&f.h->rx.head), 128);
    /* fill the lap up to 64 bytes before its end; a record that does not
     * fit there goes to 0 behind a filler (the wrap record) */
    static uint8_t big[1000];
    while (drx.cap - ((drx.mine + drx.pend) & (drx.cap - 1)) > 64 + 1024) {
        assert_int_equal(emd_recs_sp_put(&drx, rh, big, 1000), EMD_RING_OK); /* 1024 B each */
        emd_recs_sp_publish(&drx);
        while ((n = em_link_rx_burst(l, rx, 8)) > 0)
            em_link_rx_release(l, rx, n);
    }
    while (drx.cap - ((drx.mine + drx.pend) & (drx.cap - 1)) > 64) {
        assert_int_equal(emd_recs_sp_put(&drx, rh, "s", 1), EMD_RING_OK); /* 64 B each */
        emd_recs_sp_publish(&drx);
        while ((n = em_link_rx_burst(l, rx, 8)) > 0)
            em_link_rx_release(l, rx, n);
    }
    em_emd_stats_t es;
    em_link_emd_stats(l, &es);
    uint64_t before = es.rx_frames;
    uint32_t lap_end = drx.mine - (drx.mine & (drx.cap - 1)) + drx.cap;
    static uint8_t wrap[100] = "wrap";
    assert_int_equal(emd_recs_sp_put(&drx, rh, wrap, 100), EMD_RING_OK); /* 128 B > the 64 left */
    emd_recs_sp_publish(&drx);
    assert_int_equal(atomic_load(&f.h->rx.tail), lap_end + 128); /* filler, then at 0 */
    n = em_link_rx_burst(l, rx, 8);
    assert_int_equal(n, 1);
    assert_memory_equal(rx[0]->data, "wrap", 4);
    em_link_rx_release(l, rx, n);
    assert_int_equal(atomic_load(&f.h->rx.head), lap_end + 128);
    em_link_emd_stats(l, &es);
    assert_int_equal(es.rx_frames, before + 1);
    (void)size_rx;
    /* hostile: a record longer than the MTU cannot be stepped over: the
     * link stops (written by hand, as a broken daemon would) */
    rh.len = 5000;
    memcpy(drx.base + (drx.mine & (drx.cap - 1)), &rh, sizeof rh);
    atomic_store(&f.h->rx.tail, drx.mine + 128);
    assert_int_equal(em_link_rx_burst(l, rx, 8), 0);
    assert_int_equal(cb_calls, 1);
    assert_non_null(strstr(cb_last, "bad length"));
    em_link_emd_stats(l, &es);
    assert_int_equal(es.rx_bad, 1);
    em_link_close(l);

    /* a fresh attach; then the daemon goes away: noticed within the check period */
    close(f.cfd);
    f.cfd = -1;
    munmap(f.h, f.size);
    f.h = NULL;
    pthread_create(&t, NULL, fake_daemon, &f);
    cb_calls = 0;
    l = em_link_emd_open(&c, err, sizeof err);
    pthread_join(t, NULL);
    assert_non_null(l);
    close(f.cfd);
    f.cfd = -1;
    uint64_t t0 = em_clock_ns();
    do {
        (void)em_link_rx_burst(l, rx, 8);
    } while (!cb_calls && em_clock_ns() - t0 < 2000000000ull);
    assert_int_equal(cb_calls, 1);
    assert_non_null(strstr(cb_last, "closed"));
    assert_int_equal(em_link_flush(l), -EPIPE);
    assert_int_equal(em_link_tx_burst(l, &p, 0), 0);
    em_link_close(l);
    fake_stop(&f);
}

/* a stand-in for the bulk-queue link (link_bulkq): records what it is given */
struct fake_bulkq {
    em_link_t link;
    em_pkt_t pk[8];
    uint8_t buf[8][2048];
    unsigned nfree, sent, peers_set, refuse, rx_ready, released, closed;
    uint32_t last_peer;
    uint8_t last[2048], first[2048];
    uint32_t last_len, first_len;
};
static struct fake_bulkq fake;
static em_emd_bulkq_t fake_info;
static char note[600];

static em_pkt_t *f_alloc(em_link_t *l)
{
    (void)l;
    if (!fake.nfree)
        return NULL;
    em_pkt_t *p = &fake.pk[--fake.nfree];
    p->data = fake.buf[fake.nfree];
    p->len = 0;
    return p;
}
static void f_free(em_link_t *l, em_pkt_t *p)
{
    (void)l;
    (void)p;
    fake.nfree++;
}
static unsigned f_burst(em_link_t *l, em_pkt_t **p, unsigned n)
{
    (void)l;
    if (fake.refuse)
        return 0;
    for (unsigned i = 0; i < n; i++) {
        fake.sent++;
        fake.last_peer = p[i]->peer;
        fake.last_len = p[i]->len;
        memcpy(fake.last, p[i]->data, p[i]->len);
        if (fake.sent == 1) {
            fake.first_len = p[i]->len;
            memcpy(fake.first, p[i]->data, p[i]->len);
        }
        fake.nfree++;
    }
    return n;
}
static unsigned f_rx(em_link_t *l, em_pkt_t **p, unsigned max)
{
    (void)l;
    unsigned k = 0;
    for (; k < fake.rx_ready && k < max; k++) {
        em_pkt_t *q = &fake.pk[k];
        q->data = fake.buf[k];
        /* put frames of sequence 0, 1, 2... from protocol endpoint 0 */
        em_hdr_t h = { .type = EM_PT_PUT,
                       .job_key = 7,
                       .index = 0,
                       .len = 8,
                       .seq = k,
                       .msg_id = k + 1,
                       .msg_len = 8,
                       .frag_cnt = 1,
                       .region = 1,
                       .key = 2 };
        q->len = (uint32_t)em_hdr_encode(&h, q->data) + 8;
        q->cls = EM_PKT_BULK; /* what a bulk queue's shim says */
        p[k] = q;
    }
    fake.rx_ready = 0;
    return k;
}
static void f_release(em_link_t *l, em_pkt_t **p, unsigned n)
{
    (void)l;
    (void)p;
    fake.released += n;
}
static int f_peer(em_link_t *l, uint32_t peer, const em_link_addr_t *a)
{
    (void)l;
    (void)peer;
    fake.peers_set++;
    return a->len == EMD_ADDR_LEN_BULKQ ? 0 : -EINVAL;
}
static void f_close(em_link_t *l)
{
    (void)l;
    fake.closed++;
}
static const em_link_ops_t fake_ops = {
    .name = "fake-bulkq",
    .tx_alloc = f_alloc,
    .tx_burst = f_burst,
    .tx_free = f_free,
    .rx_burst = f_rx,
    .rx_release = f_release,
    .flush = em_link_flush_none,
    .set_peer = f_peer,
    .close = f_close,
};
static int fake_fail;
static em_link_t *fake_open(void *ctx, const em_emd_bulkq_t *info, char *err, size_t errlen)
{
    (void)ctx;
    fake_info = *info;
    if (fake_fail) {
        snprintf(err, errlen, "EAL said no");
        return NULL;
    }
    memset(&fake, 0, sizeof fake);
    fake.link.ops = &fake_ops;
    fake.link.mtu = info->mtu;
    fake.nfree = 8;
    return &fake.link;
}
static void on_note(void *ctx, const char *msg)
{
    (void)ctx;
    snprintf(note, sizeof note, "%s", msg);
}

static em_pkt_t *frame(em_link_t *l, uint32_t peer, uint8_t type, uint32_t len)
{
    em_pkt_t *p = em_link_tx_alloc(l);
    assert_non_null(p);
    memset(p->data, 0, len);
    p->data[0] = EM_WIRE_MAGIC;
    p->data[2] = type;
    p->len = len;
    p->peer = peer;
    /* the class the engine would set: the link routes by it, not by the bytes */
    p->cls = type == EM_PT_PUT ? EM_PKT_BULK : type == EM_PT_ACK ? EM_PKT_CTRL : EM_PKT_DATA;
    return p;
}

static void test_bulk_queue(void **st)
{
    (void)st;
    uint64_t size;
    char err[600];
    struct emd_shm_hdr *h = make_region(&size, 1492, 1u << 16, 32);
    em_emd_cfg_t c = { .bulk_open = fake_open, .note_cb = on_note };
    /* no bulk queue offered: AUTO says why, ON fails with the reason */
    snprintf(h->bulkq.why, sizeof h->bulkq.why,
             "no hugepages: echo 256 >/proc/sys/vm/nr_hugepages");
    note[0] = 0;
    em_link_t *l = em_link_emd_from_region(h, size, 0x1234, 5, &c, err, sizeof err);
    assert_non_null(l);
    assert_int_equal(l->local.len, EMD_ADDR_LEN);
    assert_non_null(strstr(note, "hugepages"));
    em_link_close(l);
    c.bulk_mode = EM_EMD_BULKQ_ON;
    assert_null(em_link_emd_from_region(h, size, 0x1234, 5, &c, err, sizeof err));
    assert_non_null(strstr(err, "nr_hugepages"));
    /* offered, but the open fails */
    fill_bulkq(&h->bulkq, 2, 1);
    fake_fail = 1;
    assert_null(em_link_emd_from_region(h, size, 0x1234, 5, &c, err, sizeof err));
    assert_non_null(strstr(err, "EAL said no"));
    c.bulk_mode = EM_EMD_BULKQ_AUTO;
    note[0] = 0;
    l = em_link_emd_from_region(h, size, 0x1234, 5, &c, err, sizeof err);
    assert_non_null(l);
    assert_non_null(strstr(note, "EAL said no"));
    assert_int_equal(l->local.len, EMD_ADDR_LEN);
    em_link_close(l);
    /* OFF: never opened */
    fake_fail = 0;
    c.bulk_mode = EM_EMD_BULKQ_OFF;
    memset(&fake_info, 0, sizeof fake_info);
    l = em_link_emd_from_region(h, size, 0x1234, 5, &c, err, sizeof err);
    assert_null(fake_info.port);
    em_link_close(l);
    /* opened: the address says slot 1 of 2, puts to a peer with a slot go
     * on the bulk queue, everything else through the ring */
    c.bulk_mode = EM_EMD_BULKQ_ON;
    l = em_link_emd_from_region(h, size, 0x1234, 5, &c, err, sizeof err);
    assert_non_null(l);
    assert_string_equal(fake_info.port, "net_memif0");
    assert_string_equal(fake_info.file_prefix, "emd-h5-n0");
    assert_int_equal(fake_info.slot, 1);
    assert_int_equal(fake_info.endpoint, 5);
    assert_int_equal(l->local.len, EMD_ADDR_LEN_BULKQ);
    assert_int_equal(l->local.bytes[9], 1);
    assert_int_equal(l->local.bytes[10], 2);
    static const uint8_t OTHER[6] = { 0x02, 0xe7, 0, 0, 0, 2 };
    em_link_addr_t a = { 0 };
    a.len = emd_addr_encode(a.bytes, OTHER, 9, 2, 0);
    assert_int_equal(em_link_set_peer(l, 0, &a), 0); /* peer 0: bulk queue */
    assert_int_equal(fake.peers_set, 1);
    a.len = emd_addr_encode(a.bytes, OTHER, 10, 0, 0);
    assert_int_equal(em_link_set_peer(l, 1, &a), 0); /* peer 1: no slot */
    a.len = emd_addr_encode(a.bytes, OTHER, 11, 3, 0);
    assert_int_equal(em_link_set_peer(l, 2, &a), 0); /* peer 2: another layout (said once) */
    a.len = emd_addr_encode(a.bytes, MAC, 12, 2, 0);
    assert_int_equal(em_link_set_peer(l, 3, &a), 0); /* peer 3: this node */
    assert_int_equal(fake.peers_set, 1);
    a.len = 10;
    assert_int_equal(em_link_set_peer(l, 4, &a), -EINVAL);
    em_pkt_t *b[6] = {
        frame(l, 0, EM_PT_PUT, 200), frame(l, 0, EM_PT_DATA, 100),
        frame(l, 1, EM_PT_PUT, 120), frame(l, 2, EM_PT_PUT, 130),
        frame(l, 3, EM_PT_PUT, 140), frame(l, 0, EM_PT_ACK, EM_HDR_LEN),
    };
    /* gather: part of the put's payload from the caller's memory */
    static const uint8_t payload[50] = { 7 };
    b[0]->len = 150;
    b[0]->ext = payload;
    b[0]->ext_len = 50;
    fake.refuse = 0;
    assert_int_equal(em_link_tx_burst(l, b, 6), 6);
    assert_int_equal(fake.sent, 2);        /* the put and the ACK */
    assert_int_equal(fake.first_len, 200); /* the put, gathered */
    assert_int_equal(fake.first[150], 7);
    assert_int_equal(fake.last_len, EM_HDR_LEN);
    assert_int_equal(fake.last_peer, 0);
    /* the other four, and a note of the ACK (for the daemon's flow state,
     * not to be sent): the daemon's ring */
    emd_ring_t dtx;
    emd_ring_init(&dtx, &h->tx, (uint8_t *)h + h->tx_off, h->tx_slots, h->slot_size, 0);
    assert_int_equal(emd_slots_sc_avail(&dtx), 5);
    struct emd_slot_hdr sh;
    memcpy(&sh, emd_slots_sc_at(&dtx, 4), sizeof sh);
    assert_int_equal(sh.flags, EMD_SLOT_F_NOTE);
    assert_int_equal(sh.cls, EMD_CLS_CTRL);
    assert_int_equal(sh.len, EM_HDR_LEN);
    memcpy(&sh, emd_slots_sc_at(&dtx, 0), sizeof sh);
    assert_int_equal(sh.flags, 0);
    assert_int_equal(sh.cls, EMD_CLS_DATA);
    memcpy(&sh, emd_slots_sc_at(&dtx, 1), sizeof sh);
    assert_int_equal(sh.cls, EMD_CLS_BULK); /* a put the bulk queue could not take */
    em_emd_stats_t s;
    em_link_emd_stats(l, &s);
    assert_int_equal(s.put_tx_bulk, 1);
    assert_int_equal(s.put_tx_bulk_bytes, 200);
    assert_int_equal(s.put_tx_daemon, 3);
    assert_int_equal(s.ack_tx_bulk, 1);
    assert_int_equal(s.bulk_queue, 1);
    /* the bulk queue refuses: the frame goes through the daemon after all */
    fake.refuse = 1;
    b[0] = frame(l, 0, EM_PT_PUT, 64);
    assert_int_equal(em_link_tx_burst(l, b, 1), 1);
    assert_int_equal(emd_slots_sc_avail(&dtx), 6);
    em_link_emd_stats(l, &s);
    assert_int_equal(s.bulk_tx_fallback, 1);
    assert_int_equal(fake.nfree, 8); /* its mbuf went back */
    /* rx: both sources, released together */
    fake.refuse = 0;
    fake.rx_ready = 3;
    em_pkt_t *rx[8];
    unsigned n = 0, sent_before = fake.sent;
    for (int i = 0; i < 2 && n == 0; i++)
        n = em_link_rx_burst(l, rx, 8);
    assert_int_equal(n, 3);
    em_link_rx_release(l, rx, n);
    assert_int_equal(fake.released, 3);
    em_link_emd_stats(l, &s);
    assert_int_equal(s.put_rx_bulk, 3);
    assert_int_equal(fake.sent, sent_before); /* receiving sends nothing */
    em_link_close(l);
    assert_int_equal(fake.closed, 1);
    /* all slots in use: ON names it */
    fill_bulkq(&h->bulkq, 2, EMD_BULKQ_NO_SLOT);
    snprintf(h->bulkq.why, sizeof h->bulkq.why, "all 2 slots in use (emd --bulk-slots)");
    assert_null(em_link_emd_from_region(h, size, 0x1234, 5, &c, err, sizeof err));
    assert_non_null(strstr(err, "slots in use"));
    munmap(h, size);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loss_refused_with_daemon_acks),
        cmocka_unit_test(test_rx_corrupt_indices),
        cmocka_unit_test(test_link_no_daemon),
        cmocka_unit_test(test_link_corrupt_region),
        cmocka_unit_test(test_link_rings_and_death),
        cmocka_unit_test(test_bulk_queue),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
