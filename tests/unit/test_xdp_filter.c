/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The AF_XDP filter (tools/bpf/xdp_drop.bpf.c, built with -DEMC_XDP_TEST so
 * that "to the socket" returns XDP_TX instead of a redirect) run by the
 * kernel on crafted frames (BPF_PROG_TEST_RUN): our ethertypes and IPv4/UDP
 * to our two ports go to the socket; other UDP ports, TCP, ARP, fragments
 * and truncated frames stay with the kernel.  Needs root (skip: 77).
 * Usage: test_xdp_filter OBJECT
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <cmocka.h>
#include <linux/bpf.h>

#include "link/ipudp.h"

static const char *obj_path;
static int prog_fd = -1;
static struct bpf_object *obj;

static int verdict(const uint8_t *frame, size_t len)
{
    uint8_t out[2048];
    LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .data_size_in = (uint32_t)len,
                .data_out = out, .data_size_out = sizeof out, .repeat = 1);
    int rc = bpf_prog_test_run_opts(prog_fd, &o);
    assert_int_equal(rc, 0);
    return (int)o.retval;
}

static size_t udp_frame(uint8_t *f, uint16_t port, uint16_t frag, int options)
{
    em_ipudp_path_t p = {
        .src_ip = 0x0A4D0001u, .dst_ip = 0x0A4D0102u, .src_port = port, .dst_port = port
    };
    memset(f, 0, 128);
    em_ipudp_encode(&p, 1, 32, 0, f);
    f[20] = (uint8_t)(frag >> 8);
    f[21] = (uint8_t)frag;
    if (options) { /* IHL 6: 4 bytes of options before the UDP header */
        memmove(f + 38, f + 34, 8 + 32);
        memset(f + 34, 1, 4); /* NOPs */
        f[14] = 0x46;
    }
    return 60 + 32;
}

static void test_verdicts(void **state)
{
    (void)state;
    uint8_t f[128];
    size_t n;
    memset(f, 0, sizeof f);
    f[12] = 0x88;
    f[13] = 0xB5;
    assert_int_equal(verdict(f, 60), XDP_TX);
    f[13] = 0xB6;
    assert_int_equal(verdict(f, 60), XDP_TX);
    f[12] = 0x08;
    f[13] = 0x06; /* ARP */
    assert_int_equal(verdict(f, 60), XDP_PASS);
    n = udp_frame(f, EM_UDP_PORT, 0x4000, 0);
    assert_int_equal(verdict(f, n), XDP_TX);
    n = udp_frame(f, EM_UDP_PORT_BCAST, 0x4000, 0);
    assert_int_equal(verdict(f, n), XDP_TX);
    n = udp_frame(f, EM_UDP_PORT, 0x4000, 1); /* options: never ours, the kernel's */
    assert_int_equal(verdict(f, n), XDP_PASS);
    n = udp_frame(f, 53, 0x4000, 0); /* DNS: the kernel's */
    assert_int_equal(verdict(f, n), XDP_PASS);
    n = udp_frame(f, EM_UDP_PORT + 2, 0x4000, 0);
    assert_int_equal(verdict(f, n), XDP_PASS);
    n = udp_frame(f, EM_UDP_PORT, 0x2000, 0); /* MF: a fragment */
    assert_int_equal(verdict(f, n), XDP_PASS);
    n = udp_frame(f, EM_UDP_PORT, 0x0010, 0); /* an offset */
    assert_int_equal(verdict(f, n), XDP_PASS);
    n = udp_frame(f, EM_UDP_PORT, 0x4000, 0);
    f[23] = 6; /* TCP to the same port */
    assert_int_equal(verdict(f, n), XDP_PASS);
    n = udp_frame(f, EM_UDP_PORT, 0x4000, 0);
    assert_int_equal(verdict(f, 36), XDP_PASS); /* cut inside the UDP header */
    assert_int_equal(verdict(f, 14), XDP_PASS); /* Ethernet header alone */
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_xdp_filter OBJECT\n");
        return 2;
    }
    if (geteuid() != 0) {
        printf("SKIP: needs root (BPF_PROG_TEST_RUN)\n");
        return 77;
    }
    obj_path = argv[1];
    obj = bpf_object__open_file(obj_path, NULL);
    if (!obj || bpf_object__load(obj) != 0) {
        fprintf(stderr, "cannot load %s\n", obj_path);
        return 1;
    }
    struct bpf_program *prog = bpf_object__find_program_by_name(obj, "emc_xdp_drop_sb");
    if (!prog) {
        fprintf(stderr, "no program emc_xdp_drop_sb in %s\n", obj_path);
        return 1;
    }
    prog_fd = bpf_program__fd(prog);
    const struct CMUnitTest tests[] = { cmocka_unit_test(test_verdicts) };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    bpf_object__close(obj);
    return rc;
}
