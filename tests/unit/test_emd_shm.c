/*
 * The emd contract without DPDK: control-message and region validation,
 * the wire shim, and link_emd against a stand-in daemon (a thread that
 * speaks the attach protocol and plays with the rings directly): attach,
 * tx and rx through the rings, refusal of a corrupt region, a clear error
 * when no daemon runs, and the dead-daemon callback when its socket closes.
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

#include "daemon/emd_shm.h"
#include "link/link_emd.h"

static const uint8_t MAC[6] = { 0x02, 0xe7, 0, 0, 0, 1 };

static int dead_calls;
static char dead_why[256];
static void on_dead(void *ctx, const char *why)
{
    (void)ctx;
    dead_calls++;
    snprintf(dead_why, sizeof dead_why, "%s", why);
}

/* ------------------------------------------------------------- pure -- */

static void test_ctl_check(void **st)
{
    (void)st;
    struct emd_ctl_msg m, out;
    const char *why;
    emd_ctl_init(&m, EMD_CTL_ATTACH_OK);
    m.endpoint = 7;
    m.shm_size = 1u << 20;
    assert_int_equal(emd_ctl_check(&m, sizeof m, &out, &why), 0);
    assert_int_equal(out.endpoint, 7);
    assert_int_equal(emd_ctl_check(&m, sizeof m - 1, &out, &why), -1);
    struct emd_ctl_msg b = m;
    b.magic ^= 1;
    assert_int_equal(emd_ctl_check(&b, sizeof b, &out, &why), -1);
    b = m;
    b.version = 2;
    assert_int_equal(emd_ctl_check(&b, sizeof b, &out, &why), -1);
    assert_non_null(strstr(why, "version"));
    b = m;
    b.type = 99;
    assert_int_equal(emd_ctl_check(&b, sizeof b, &out, &why), -1);
    b = m;
    b.endpoint = 0;
    assert_int_equal(emd_ctl_check(&b, sizeof b, &out, &why), -1);
    b = m;
    b.shm_size = EMD_REGION_MAX + 1;
    assert_int_equal(emd_ctl_check(&b, sizeof b, &out, &why), -1);
    b = m;
    memset(b.text, 'x', sizeof b.text);   /* unterminated text is cut, not read past */
    assert_int_equal(emd_ctl_check(&b, sizeof b, &out, &why), 0);
    assert_int_equal(out.text[sizeof out.text - 1], 0);
}

static struct emd_shm_hdr *make_region(uint64_t *size, uint32_t mtu, uint32_t rx, uint32_t tx)
{
    uint32_t ss;
    *size = emd_shm_size(mtu, rx, tx, &ss);
    assert_true(*size > 0);
    void *mem = mmap(NULL, *size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(mem != MAP_FAILED);
    emd_shm_init(mem, *size, mtu, rx, tx, 0x1234, 5, MAC);
    return mem;
}

static void test_region_check(void **st)
{
    (void)st;
    uint64_t size;
    const char *why;
    struct emd_shm_hdr *h = make_region(&size, 1492, 1u << 16, 32);
    assert_int_equal(emd_shm_check(h, size, 0x1234, 5, &why), 0);
    assert_int_equal(h->slot_size % 64, 0);
    assert_true(h->slot_size >= sizeof(struct emd_slot_hdr) + 1492);
    assert_true((uint64_t)h->rx_off + h->rx_size <= h->tx_off);
    assert_true((uint64_t)h->tx_off + (uint64_t)h->tx_slots * h->slot_size <= size);
    /* what ATTACH_OK said must match */
    assert_int_equal(emd_shm_check(h, size, 0x1235, 5, &why), -1);
    assert_int_equal(emd_shm_check(h, size, 0x1234, 6, &why), -1);
    assert_int_equal(emd_shm_check(h, size - 64, 0x1234, 5, &why), -1);
    assert_int_equal(emd_shm_check(h, 100, 0x1234, 5, &why), -1);
    /* every layout field is checked */
    struct { size_t off; uint32_t bad; } cases[] = {
        { offsetof(struct emd_shm_hdr, magic), 0 },
        { offsetof(struct emd_shm_hdr, version), 9 },
        { offsetof(struct emd_shm_hdr, hdr_size), 64 },
        { offsetof(struct emd_shm_hdr, slot_size), 64 },
        { offsetof(struct emd_shm_hdr, rx_size), 1000 },
        { offsetof(struct emd_shm_hdr, tx_slots), 1u << 20 },
        { offsetof(struct emd_shm_hdr, rx_off), 0 },
        { offsetof(struct emd_shm_hdr, tx_off), 512 },
        { offsetof(struct emd_shm_hdr, mtu), 20000 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint32_t keep;
        uint8_t *p = (uint8_t *)h + cases[i].off;
        memcpy(&keep, p, 4);
        memcpy(p, &cases[i].bad, 4);
        assert_int_equal(emd_shm_check(h, size, 0x1234, 5, &why), -1);
        memcpy(p, &keep, 4);
        assert_int_equal(emd_shm_check(h, size, 0x1234, 5, &why), 0);
    }
    munmap(h, size);
    uint32_t ss;
    assert_true(emd_shm_size(0, 1u << 16, 64, &ss) == 0);
    assert_true(emd_shm_size(1500, 100000, 64, &ss) == 0);            /* not a power of 2 */
    assert_true(emd_shm_size(1500, 1u << 12, 64, &ss) == 0);          /* too small */
    assert_true(emd_shm_size(1500, 1u << 16, 8, &ss) == 0);
    assert_true(emd_shm_size(EMD_MTU_MAX + 1, 1u << 16, 64, &ss) == 0);
    assert_true(emd_shm_size(EMD_MTU_MAX, EMD_RX_SIZE_MAX, 65536, &ss) == 0);   /* > 1 GiB */
}

static void test_loss_refused_with_daemon_acks(void **st)
{
    (void)st;
    uint64_t size;
    char err[512];
    struct emd_shm_hdr *h = make_region(&size, 1492, 1u << 16, 32);
    em_emd_cfg_t c = { .rx_loss = 0.05 };
    em_link_t *l = em_link_emd_from_region(h, size, 0x1234, 5, &c, err, sizeof err);
    assert_non_null(l);                 /* the daemon does not acknowledge: allowed */
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
    dead_calls = 0;
    em_emd_cfg_t c = { .dead_cb = on_dead };
    em_link_t *l = em_link_emd_from_region(h, size, 0x1234, 5, &c, err, sizeof err);
    assert_non_null(l);
    em_pkt_t *rx[8];
    atomic_store(&h->rx.tail, 17);                 /* not a record boundary */
    assert_int_equal(em_link_rx_burst(l, rx, 8), 0);
    assert_int_equal(dead_calls, 1);
    assert_non_null(strstr(dead_why, "corrupt"));
    em_link_close(l);
    /* more than the ring holds */
    memset(h, 0, size);
    emd_shm_init(h, size, 1492, 1u << 16, 32, 0x1234, 5, MAC);
    dead_calls = 0;
    l = em_link_emd_from_region(h, size, 0x1234, 5, &c, err, sizeof err);
    atomic_store(&h->rx.tail, (1u << 16) + 64);
    assert_int_equal(em_link_rx_burst(l, rx, 8), 0);
    assert_int_equal(dead_calls, 1);
    em_link_close(l);
    munmap(h, size);
}

static void test_wire_shim(void **st)
{
    (void)st;
    uint8_t f[64] = { 0 }, mac[6];
    uint16_t len, dst, src;
    emd_wire_encode(f, 40, 0x1234, 0xbeef, MAC);
    assert_int_equal(f[0], EMD_WIRE_MAGIC);
    assert_int_equal(f[4], 0x12);
    assert_int_equal(f[7], 0xef);
    assert_memory_equal(f + 8, MAC, 6);
    assert_int_equal(emd_wire_decode(f, 54, &len, &dst, &src, mac), 0);
    assert_int_equal(len, 40);
    assert_int_equal(dst, 0x1234);
    assert_int_equal(src, 0xbeef);
    assert_memory_equal(mac, MAC, 6);
    assert_int_equal(emd_wire_decode(f, 60, &len, &dst, &src, mac), 0);   /* padded frame */
    assert_int_equal(emd_wire_decode(f, 53, &len, &dst, &src, mac), -1);  /* truncated */
    assert_int_equal(emd_wire_decode(f, 13, &len, &dst, &src, mac), -1);
    f[0] = 0xE5;                                                           /* a direct-mode frame */
    assert_int_equal(emd_wire_decode(f, 54, &len, &dst, &src, mac), -1);
    emd_wire_encode(f, 0, 1, 1, MAC);
    assert_int_equal(emd_wire_decode(f, 54, &len, &dst, &src, mac), -1);
    emd_wire_encode(f, 8, 0, 1, MAC);
    assert_int_equal(emd_wire_decode(f, 54, &len, &dst, &src, mac), -1);
}

/* ---------------------------------------------- link_emd vs stand-in -- */

struct fake {
    char path[108];
    int lfd, cfd;
    int corrupt;                 /* send a region with a bad magic */
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
    union { struct cmsghdr c; char b[CMSG_SPACE(sizeof(int))]; } ctl;
    memset(&ctl, 0, sizeof ctl);
    struct iovec iov = { .iov_base = &ok, .iov_len = sizeof ok };
    struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b,
                         .msg_controllen = sizeof ctl.b };
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &mfd, sizeof(int));
    (void)sendmsg(f->cfd, &mh, 0);
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
    dead_calls = 0;
    em_emd_cfg_t c = { .socket_path = f.path, .dead_cb = on_dead };
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
    assert_int_equal(atomic_load(&f.h->tx.tail), 1);
    struct emd_slot_hdr sh;
    uint8_t *s = emd_tx_slot(f.h, 0);
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
    atomic_store(&f.h->tx.head, 16);

    /* rx: two records (64 B each), lent in place */
    uint32_t size_rx = f.h->rx_size;
    struct emd_slot_hdr rh = { .len = 3, .endpoint = 4 };
    memcpy(emd_rx_at(f.h, 0), &rh, sizeof rh);
    memcpy(emd_rx_at(f.h, 0) + sizeof rh, "abc", 3);
    rh.len = 2;
    memcpy(emd_rx_at(f.h, 64), &rh, sizeof rh);
    atomic_store(&f.h->rx.tail, 128);
    em_pkt_t *rx[8];
    unsigned n = em_link_rx_burst(l, rx, 8);
    assert_int_equal(n, 2);
    assert_int_equal(rx[0]->len, 3);
    assert_memory_equal(rx[0]->data, "abc", 3);
    assert_int_equal(rx[1]->len, 2);
    assert_int_equal(rx[1]->data - rx[0]->data, 64);        /* in place, one record apart */
    em_link_rx_release(l, rx, n);
    assert_int_equal(atomic_load(&f.h->rx.head), 128);
    /* a wrap record fills the rest of the lap; the next record is at 0 */
    struct emd_slot_hdr wr = { .len = EMD_REC_WRAP };
    memcpy(emd_rx_at(f.h, 128), &wr, sizeof wr);
    rh.len = 4;
    memcpy(emd_rx_at(f.h, size_rx), &rh, sizeof rh);
    memcpy(emd_rx_at(f.h, size_rx) + sizeof rh, "wrap", 4);
    atomic_store(&f.h->rx.tail, size_rx + 64);
    n = em_link_rx_burst(l, rx, 8);
    assert_int_equal(n, 1);
    assert_memory_equal(rx[0]->data, "wrap", 4);
    em_link_rx_release(l, rx, n);
    assert_int_equal(atomic_load(&f.h->rx.head), size_rx + 64);
    em_emd_stats_t es;
    em_link_emd_stats(l, &es);
    assert_int_equal(es.rx_frames, 3);
    /* a record longer than the MTU cannot be stepped over: the link stops */
    rh.len = 5000;
    memcpy(emd_rx_at(f.h, size_rx + 64), &rh, sizeof rh);
    atomic_store(&f.h->rx.tail, size_rx + 128);
    assert_int_equal(em_link_rx_burst(l, rx, 8), 0);
    assert_int_equal(dead_calls, 1);
    assert_non_null(strstr(dead_why, "bad length"));
    em_link_emd_stats(l, &es);
    assert_int_equal(es.rx_bad, 1);
    em_link_close(l);

    /* a fresh attach; then the daemon goes away: noticed within the check period */
    close(f.cfd);
    f.cfd = -1;
    munmap(f.h, f.size);
    f.h = NULL;
    pthread_create(&t, NULL, fake_daemon, &f);
    dead_calls = 0;
    l = em_link_emd_open(&c, err, sizeof err);
    pthread_join(t, NULL);
    assert_non_null(l);
    close(f.cfd);
    f.cfd = -1;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        (void)em_link_rx_burst(l, rx, 8);
        clock_gettime(CLOCK_MONOTONIC, &t1);
    } while (!dead_calls && t1.tv_sec - t0.tv_sec < 2);
    assert_int_equal(dead_calls, 1);
    assert_non_null(strstr(dead_why, "closed"));
    assert_int_equal(em_link_flush(l), -EPIPE);
    assert_int_equal(em_link_tx_burst(l, &p, 0), 0);
    em_link_close(l);
    fake_stop(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ctl_check),
        cmocka_unit_test(test_region_check),
        cmocka_unit_test(test_wire_shim),
        cmocka_unit_test(test_loss_refused_with_daemon_acks),
        cmocka_unit_test(test_rx_corrupt_indices),
        cmocka_unit_test(test_link_no_daemon),
        cmocka_unit_test(test_link_corrupt_region),
        cmocka_unit_test(test_link_rings_and_death),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
