/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file test_xdp_guard.c
 * The AF_XDP ownership guard: devargs parsing, one owner per interface
 * queue (a second one is refused with the owner's pid, a released or dead
 * owner's lock is free again), the interface lock (a queue owner keeps
 * every other queue's guard from treating the interface's XDP program as a
 * leftover), lock files planted as symlinks (refused, the target untouched),
 * unknown interfaces.  Uses loopback, which
 * exists in every network namespace, and a private lock directory; the
 * leftover-program removal is exercised by the af_xdp MPI suite (a killed
 * rank's program is removed by the next job).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "link/dpdk/xdp_guard.h"

static char dir[] = "/tmp/em_xdp_guard_XXXXXX";

static void test_devargs(void **st)
{
    char ifname[16];
    unsigned q = 99;
    assert_int_equal(em_xdp_devargs_iface("net_af_xdp0,iface=eth1,start_queue=3,queue_count=1",
                                          ifname, sizeof ifname, &q),
                     1);
    assert_string_equal(ifname, "eth1");
    assert_int_equal(q, 3);
    assert_int_equal(em_xdp_devargs_iface("net_af_xdp,iface=veth0", ifname, sizeof ifname, &q), 1);
    assert_string_equal(ifname, "veth0");
    assert_int_equal(q, 0);
    /* "xiface=" is not "iface=", and other PMDs are not af_xdp */
    assert_int_equal(em_xdp_devargs_iface("net_af_xdp0,xiface=eth0", ifname, sizeof ifname, &q), 0);
    assert_int_equal(em_xdp_devargs_iface("net_memif0,iface=eth0", ifname, sizeof ifname, &q), 0);
    assert_int_equal(em_xdp_devargs_iface(NULL, ifname, sizeof ifname, &q), 0);
    /* a name longer than the buffer is refused, not truncated */
    assert_int_equal(
        em_xdp_devargs_iface("net_af_xdp0,iface=averyveryverylongname", ifname, sizeof ifname, &q),
        0);
}

static void test_one_owner(void **st)
{
    char err[256];
    em_xdp_guard_t a, b;
    assert_int_equal(em_xdp_guard_acquire("lo", 0, &a, err, sizeof err), 0);
    assert_true(a.lock_fd >= 0);
    assert_int_equal(em_xdp_guard_acquire("lo", 0, &b, err, sizeof err), -1);
    char pid[32];
    snprintf(pid, sizeof pid, "pid %ld", (long)getpid());
    assert_non_null(strstr(err, pid));
    /* another queue of the same interface is another owner */
    assert_int_equal(em_xdp_guard_acquire("lo", 1, &b, err, sizeof err), 0);
    em_xdp_guard_release(&b);
    em_xdp_guard_release(&a);
    assert_int_equal(a.lock_fd, -1);
    assert_int_equal(em_xdp_guard_acquire("lo", 0, &b, err, sizeof err), 0);
    em_xdp_guard_release(&b);
}

/* A child process that owns queue @p queue of lo until it is killed (by
 * SIGKILL, holding the lock, like a crashed rank). */
static pid_t spawn_owner(unsigned queue)
{
    int to_parent[2];
    assert_int_equal(pipe(to_parent), 0);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        char err[256];
        em_xdp_guard_t g;
        char c = em_xdp_guard_acquire("lo", queue, &g, err, sizeof err) == 0 ? 'y' : 'n';
        if (write(to_parent[1], &c, 1) != 1)
            _exit(2);
        pause();
        _exit(0);
    }
    char c = 0;
    assert_int_equal(read(to_parent[0], &c, 1), 1);
    assert_int_equal(c, 'y');
    close(to_parent[0]);
    close(to_parent[1]);
    return child;
}

static void test_dead_owner_frees_the_queue(void **st)
{
    char err[256];
    pid_t child = spawn_owner(5);
    em_xdp_guard_t g;
    assert_int_equal(em_xdp_guard_acquire("lo", 5, &g, err, sizeof err), -1);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    assert_int_equal(em_xdp_guard_acquire("lo", 5, &g, err, sizeof err), 0);
    em_xdp_guard_release(&g);
}

/* The XDP program is the interface's: while a queue of it has a live owner,
 * a guard for another queue must not look for leftovers (it would detach
 * the owner's program); once no owner is left, it does. */
static void test_live_queue_blocks_cleanup(void **st)
{
    char err[256];
    em_xdp_guard_t a, b, c;
    assert_int_equal(em_xdp_guard_acquire("lo", 0, &a, err, sizeof err), 0);
    assert_int_equal(a.cleanup, 1); /* alone on the interface */
    assert_int_equal(em_xdp_guard_acquire("lo", 1, &b, err, sizeof err), 0);
    assert_int_equal(b.cleanup, 0); /* queue 0 is live: hands off */
    assert_int_equal(b.detached, 0);
    em_xdp_guard_release(&a);
    assert_int_equal(em_xdp_guard_acquire("lo", 2, &c, err, sizeof err), 0);
    assert_int_equal(c.cleanup, 0); /* queue 1 still live */
    em_xdp_guard_release(&c);
    em_xdp_guard_release(&b);
    assert_int_equal(b.if_lock_fd, -1);

    /* the same across processes, and a dead owner no longer counts */
    pid_t child = spawn_owner(0);
    assert_int_equal(em_xdp_guard_acquire("lo", 1, &b, err, sizeof err), 0);
    assert_int_equal(b.cleanup, 0);
    em_xdp_guard_release(&b);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    assert_int_equal(em_xdp_guard_acquire("lo", 1, &b, err, sizeof err), 0);
    assert_int_equal(b.cleanup, 1);
    em_xdp_guard_release(&b);
}

/* A symlink planted at a lock file's name (queue or interface lock) is
 * refused with a sentence; the file it points to keeps its content. */
static void test_symlinked_lock_refused(void **st)
{
    char err[256], victim[300], link[300], got[32] = "";
    snprintf(victim, sizeof victim, "%s/victim", dir);
    FILE *f = fopen(victim, "w");
    assert_non_null(f);
    fputs("precious\n", f);
    fclose(f);
    struct stat ns;
    assert_int_equal(stat("/proc/self/ns/net", &ns), 0);
    const char *names[] = { "q7", NULL };
    for (int i = 0; i < 2; i++) {
        if (names[i])
            snprintf(link, sizeof link, "%s/afxdp-%llu-lo-%s.lock", dir,
                     (unsigned long long)ns.st_ino, names[i]);
        else
            snprintf(link, sizeof link, "%s/afxdp-%llu-lo.lock", dir,
                     (unsigned long long)ns.st_ino);
        unlink(link);
        assert_int_equal(symlink(victim, link), 0);
        em_xdp_guard_t g;
        assert_int_equal(em_xdp_guard_acquire("lo", 7, &g, err, sizeof err), -1);
        assert_non_null(strstr(err, "not a plain file"));
        assert_int_equal(g.lock_fd, -1);
        assert_int_equal(unlink(link), 0);
        f = fopen(victim, "r");
        assert_non_null(f);
        assert_non_null(fgets(got, sizeof got, f));
        fclose(f);
        assert_string_equal(got, "precious\n");
    }
    em_xdp_guard_t g;
    assert_int_equal(em_xdp_guard_acquire("lo", 7, &g, err, sizeof err), 0);
    em_xdp_guard_release(&g);
}

static void test_unknown_interface(void **st)
{
    char err[256];
    em_xdp_guard_t g;
    assert_int_equal(em_xdp_guard_acquire("em-no-such-if", 0, &g, err, sizeof err), -1);
    assert_non_null(strstr(err, "no network interface 'em-no-such-if'"));
    assert_int_equal(g.lock_fd, -1);
}

/* an MTU beyond AF_XDP's frames is explained with the fix (lo: MTU 65536,
 * no ethtool driver); an MTU that fits gets no explanation */
static void test_mtu_explained(void **st)
{
    (void)st;
    char buf[512];
    assert_int_equal(em_xdp_explain_mtu("lo", 3402, buf, sizeof buf), 1);
    assert_non_null(strstr(buf, "MTU 65536"));
    assert_non_null(strstr(buf, "ip link set dev lo mtu 3402"));
    assert_true(strlen(buf) < 450);
    assert_int_equal(em_xdp_explain_mtu("lo", 65536, buf, sizeof buf), 0);
    assert_int_equal(em_xdp_explain_mtu("nosuchif0", 3402, buf, sizeof buf), 0);
}

int main(void)
{
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    setenv("EM_LOCK_DIR", dir, 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_devargs),
        cmocka_unit_test(test_one_owner),
        cmocka_unit_test(test_dead_owner_frees_the_queue),
        cmocka_unit_test(test_live_queue_blocks_cleanup),
        cmocka_unit_test(test_symlinked_lock_refused),
        cmocka_unit_test(test_unknown_interface),
        cmocka_unit_test(test_mtu_explained),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return rc;
}
