/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file test_settings.c
 * The settings table and the factory's rules (src/transport/): every row
 * is well formed and its default valid; checks name the setting as each
 * front end publishes it; the link-dependent defaults (window, eager
 * limit) and the protocol configuration follow the settings.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "emd_abi/emd_wire.h"
#include "link/link_dpdk.h"
#include "link/link_emd.h"
#include "transport/transport.h"

static void test_rows_are_well_formed(void **st)
{
    (void)st;
    size_t n;
    const em_setting_t *t = em_settings_table(&n);
    assert_true(n >= 40);
    em_settings_t s;
    em_settings_default(&s);
    for (size_t i = 0; i < n; i++) {
        assert_non_null(t[i].name);
        assert_true(strlen(t[i].name) < 32);
        for (const char *p = t[i].name; *p; p++) /* lower case: FI_ names are its upper case */
            assert_true((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_');
        assert_true(t[i].fronts != 0 &&
                    (t[i].fronts & ~(unsigned)(EM_FRONT_ALL | EM_FRONT_EMD)) == 0);
        /* emd publishes only what its port shares with the front ends: the
         * DPDK port's settings (the dpdk BTL's) or the AF_XDP link's (the
         * provider's and the rudp BTL's, emd --link xdp) */
        if (t[i].fronts & EM_FRONT_EMD)
            assert_true((t[i].fronts & EM_FRONT_DPDK) ||
                        (strncmp(t[i].name, "xdp_", 4) == 0 && (t[i].fronts & EM_FRONT_OFI)));
        assert_true(t[i].level >= 1 && t[i].level <= 9);
        assert_true(t[i].help && strlen(t[i].help) > 20);
        assert_true(t[i].offset < sizeof(em_settings_t));
        for (size_t j = 0; j < i; j++) /* one row per name */
            assert_string_not_equal(t[i].name, t[j].name);
        assert_ptr_equal(em_setting_find(t[i].name), &t[i]);
        if (t[i].type == EM_SET_INT) {
            int v = *(const int *)em_setting_cptr(&s, &t[i]);
            assert_true(t[i].min <= v && v <= t[i].max);
        }
        /* a default written in the table parses (a typo would become 0) */
        if (t[i].dflt) {
            em_settings_t x;
            char err[128];
            if (em_setting_parse(&x, &t[i], t[i].dflt, t[i].name, err, sizeof err) != 0)
                fail_msg("the default of %s does not parse: %s", t[i].name, err);
        }
    }
    assert_null(em_setting_find("no_such_setting"));
    /* the defaults pass every front end's check */
    char err[256] = "";
    assert_int_equal(em_settings_check(&s, EM_FRONT_RUDP, err, sizeof err), 0);
    assert_int_equal(em_settings_check(&s, EM_FRONT_DPDK, err, sizeof err), 0);
    assert_int_equal(em_settings_check(&s, EM_FRONT_OFI, err, sizeof err), 0);
    assert_int_equal(em_settings_check(&s, EM_FRONT_EMD, err, sizeof err), 0);
}

/* The defaults users get, as they are published (ompi_info, fi_info -e).
 * A default is a promise to every job: changing one is a decision that
 * belongs in the CHANGELOG, and this list makes it one a reviewer sees.
 * Every row of the table must be here, and nothing else. */
static const char *const published[][2] = {
    { "window", "-1" },
    { "window_kb", "384" },
    { "recovery", "sr" },
    { "cc", "loss" },
    { "rto_us", "1000" },
    { "rto_min_us", "200" },
    { "rto_max_us", "1000000" },
    { "retries", "70" },
    { "ack_delay_us", "20" },
    { "rx_mem_mb", "256" },
    { "linger_ms", "5000" },
    { "mtu", "0" },
    { "random_isn", "1" },
    { "print_stats", "0" },
    { "same_node", "0" },
    { "order_max_held", "16384" },
    { "order_max_mb", "64" },
    { "inplace_min", "16384" },
    { "link", "udp" },
    { "mode", "direct" },
    { "if_include", "" },
    { "sock_buf", "4194304" },
    { "gso", "1" },
    { "gro", "1" },
    { "xdp_mode", "auto" },
    { "xdp_queue", "0" },
    { "xdp_queues", "1" },
    { "xdp_busy_poll_us", "0" },
    { "xdp_prog", "" },
    { "vdev", "" },
    { "eal_args", "" },
    { "rx_loss", "0" },
    { "loss_seed", "0" },
    { "link_wait_ms", "20000" },
    { "zero_copy", "1" },
    { "framing", "l2" },
    { "udp_port", "0" },
    { "udp_addr", "" },
    { "udp_checksum", "1" },
    { "emd_socket", "/run/ethermpi/emd/%h.sock" },
    { "emd_heartbeat_ms", "3000" },
    { "bulk_queue", "auto" },
    { "live_us", "-1" },
    { "unexp_mb", "1024" },
    { "cq_spin_ns", "2000" },
    { "yield_us", "50" },
    { "eager_max", "-1" },
    { "send_copy_max", "8192" },
    { "id", "-1" },
    { "names", "auto" },
    { "npeers", "0" },
    { "first_contact", "-1" },
};

static void test_published_defaults(void **st)
{
    (void)st;
    size_t n, np = sizeof published / sizeof published[0];
    (void)em_settings_table(&n);
    em_settings_t s;
    em_settings_default(&s);
    assert_int_equal(n, np);
    for (size_t i = 0; i < np; i++) {
        const em_setting_t *d = em_setting_find(published[i][0]);
        if (!d)
            fail_msg("%s is published but not in the table", published[i][0]);
        char v[256];
        em_setting_format(&s, d, v, sizeof v);
        if (strcmp(v, published[i][1]) != 0)
            fail_msg("%s defaults to '%s', published '%s'", published[i][0], v, published[i][1]);
    }
}

static void test_protocol_defaults_are_the_cores(void **st)
{
    (void)st;
    em_settings_t s;
    em_proto_cfg_t p;
    em_settings_default(&s);
    em_proto_cfg_default(&p);
    assert_int_equal((uint64_t)s.rto_us * 1000u, p.rto_ns);
    assert_int_equal((uint64_t)s.rto_max_us * 1000u, p.rto_max_ns);
    assert_int_equal(s.retries, p.max_retries);
    assert_int_equal((uint64_t)s.rx_mem_mb << 20, p.rx_mem_max);
    assert_string_equal(s.cc, "loss");
    assert_int_equal(em_cc_mode_parse(s.cc), (int)p.cc);
    assert_string_equal(s.recovery, "sr");
}

static void test_check_names_the_front_ends_setting(void **st)
{
    (void)st;
    em_settings_t s;
    char err[256];
    em_settings_default(&s);
    s.window = 300;
    assert_int_equal(em_settings_check(&s, EM_FRONT_RUDP, err, sizeof err), -1);
    assert_non_null(strstr(err, "btl_rudp_window"));
    assert_int_equal(em_settings_check(&s, EM_FRONT_OFI, err, sizeof err), -1);
    assert_non_null(strstr(err, "FI_ETHERMPI_WINDOW"));
    em_settings_default(&s);
    s.cc = "fast";
    assert_int_equal(em_settings_check(&s, EM_FRONT_DPDK, err, sizeof err), -1);
    assert_non_null(strstr(err, "btl_dpdk_cc"));
    assert_non_null(strstr(err, "loss|delay|off"));
    em_settings_default(&s);
    s.framing = "ip";
    assert_int_equal(em_settings_check(&s, EM_FRONT_OFI, err, sizeof err), -1);
    assert_non_null(strstr(err, "FI_ETHERMPI_FRAMING"));
    assert_int_equal(em_settings_check(&s, EM_FRONT_EMD, err, sizeof err), -1);
    assert_non_null(strstr(err, "--framing"));
    /* the rudp BTL offers it too (its native AF_XDP link) */
    assert_int_equal(em_settings_check(&s, EM_FRONT_RUDP, err, sizeof err), -1);
    assert_non_null(strstr(err, "btl_rudp_framing"));
    /* ... but a front end that does not offer a setting does not check it */
    em_settings_default(&s);
    s.mode = "neither";
    assert_int_equal(em_settings_check(&s, EM_FRONT_RUDP, err, sizeof err), 0);
    assert_int_equal(em_settings_check(&s, EM_FRONT_DPDK, err, sizeof err), -1);
    em_settings_default(&s);
    s.window = 0;
    s.window_kb = 0;
    assert_int_equal(em_settings_check(&s, EM_FRONT_OFI, err, sizeof err), -1);
    assert_non_null(strstr(err, "FI_ETHERMPI_WINDOW_KB"));
}

static void test_parse_and_format(void **st)
{
    (void)st;
    em_settings_t s;
    char err[128], buf[64];
    em_settings_default(&s);
    const em_setting_t *gso = em_setting_find("gso"), *loss = em_setting_find("rx_loss"),
                       *w = em_setting_find("window");
    assert_int_equal(em_setting_parse(&s, gso, "off", "gso", err, sizeof err), 0);
    assert_false(s.gso);
    assert_int_equal(em_setting_parse(&s, gso, "maybe", "gso", err, sizeof err), -1);
    assert_int_equal(em_setting_parse(&s, loss, "0.05", "rx_loss", err, sizeof err), 0);
    assert_true(s.rx_loss > 0.049 && s.rx_loss < 0.051);
    assert_int_equal(em_setting_parse(&s, w, "12x", "FI_ETHERMPI_WINDOW", err, sizeof err), -1);
    assert_non_null(strstr(err, "FI_ETHERMPI_WINDOW"));
    assert_int_equal(em_setting_parse(&s, w, "12", "w", err, sizeof err), 0);
    em_setting_format(&s, w, buf, sizeof buf);
    assert_string_equal(buf, "12");
    em_setting_fullname(em_setting_find("emd_heartbeat_ms"), EM_FRONT_OFI, buf, sizeof buf);
    assert_string_equal(buf, "FI_ETHERMPI_EMD_HEARTBEAT_MS");
    em_setting_fullname(em_setting_find("emd_heartbeat_ms"), EM_FRONT_DPDK, buf, sizeof buf);
    assert_string_equal(buf, "btl_dpdk_emd_heartbeat_ms");
}

static void test_link_dependent_defaults(void **st)
{
    (void)st;
    em_settings_t s;
    em_settings_default(&s);
    /* kernel UDP: sized from window_kb (384 KiB): all 256 at MTU 1500, 64 at 9000 */
    assert_int_equal(em_transport_window(&s, EM_LINK_KIND_UDP, 1472), EM_WINDOW_MAX);
    assert_int_equal(em_transport_window(&s, EM_LINK_KIND_UDP, 8972), 64);
    /* the bypass links: 64 frames */
    assert_int_equal(em_transport_window(&s, EM_LINK_KIND_DPDK, 1500), 64);
    assert_int_equal(em_transport_window(&s, EM_LINK_KIND_EMD, 9000), 64);
    s.window = 16;
    assert_int_equal(em_transport_window(&s, EM_LINK_KIND_UDP, 1472), 16);
    s.window = 0;
    s.window_kb = 0;
    assert_int_equal(em_transport_window(&s, EM_LINK_KIND_DPDK, 1500), 0);
    em_settings_default(&s);
    assert_int_equal(em_transport_eager_max(&s, EM_LINK_KIND_UDP), EM_TRANSPORT_EAGER_UDP);
    assert_int_equal(em_transport_eager_max(&s, EM_LINK_KIND_DPDK), EM_TRANSPORT_EAGER_BYPASS);
    s.eager_max = 0;
    assert_int_equal(em_transport_eager_max(&s, EM_LINK_KIND_UDP), 0);
}

static void test_proto_cfg_follows_the_settings(void **st)
{
    (void)st;
    em_settings_t s;
    em_proto_cfg_t c;
    char err[256];
    em_settings_default(&s);
    s.rto_us = 250;
    s.retries = 9;
    s.recovery = "gbn";
    s.cc = "off";
    s.rx_mem_mb = 0;
    assert_int_equal(em_transport_proto_cfg(&s, EM_LINK_KIND_DPDK, 1500, &c, err, sizeof err), 0);
    assert_int_equal(c.rto_ns, 250000);
    assert_int_equal(c.max_retries, 9);
    assert_int_equal(c.recovery, EM_RECOVERY_GBN);
    assert_int_equal(c.cc, EM_CC_OFF);
    assert_int_equal(c.rx_mem_max, 0);
    assert_int_equal(c.window, 64);
    assert_int_equal(c.frame_max, 1500);
    assert_true(c.cc_pace_burst >= 1 && c.cc_pace_burst <= c.window);
    /* live_us -1: a watched peer fails within a sender's bound */
    assert_int_equal(c.live_idle_ns, (uint64_t)s.rto_max_us * 1000u);
    s.cc = "fast";
    assert_int_equal(em_transport_proto_cfg(&s, EM_LINK_KIND_UDP, 1472, &c, err, sizeof err), -1);
    assert_non_null(strstr(err, "fast"));
}

static void test_link_errors_name_the_setting(void **st)
{
    (void)st;
    em_settings_t s;
    char err[256];
    em_settings_default(&s);
    const em_transport_env_t env = { .front = EM_FRONT_OFI };
    /* the daemon link with no socket: the cause and the setting's name */
    s.emd_socket = "";
    assert_null(em_transport_open_link(&s, EM_LINK_KIND_EMD, &env, 0, err, sizeof err));
    assert_non_null(strstr(err, "FI_ETHERMPI_EMD_SOCKET"));
    /* the daemon link has one link: index 1 is "no such link", not an error */
    assert_null(em_transport_open_link(&s, EM_LINK_KIND_EMD, &env, 1, err, sizeof err));
    assert_string_equal(err, "");
    s.framing = "ip";
    s.emd_socket = "/nonexistent/emd.sock";
    assert_null(em_transport_open_link(&s, EM_LINK_KIND_EMD, &env, 0, err, sizeof err));
    assert_non_null(strstr(err, "FI_ETHERMPI_FRAMING"));
    assert_int_equal(em_link_kind_parse("dpdk"), EM_LINK_KIND_DPDK);
    assert_int_equal(em_link_kind_parse("tcp"), -1);
    /* a build without DPDK refuses its link by name; a DPDK build has it */
    em_settings_default(&s);
    if (!em_link_kind_built(EM_LINK_KIND_DPDK)) {
        assert_null(em_transport_open_link(&s, EM_LINK_KIND_DPDK, &env, 0, err, sizeof err));
        assert_non_null(strstr(err, "not part of this build"));
    }
    assert_true(em_link_kind_built(EM_LINK_KIND_UDP) && em_link_kind_built(EM_LINK_KIND_EMD));
    /* interface lists: an empty entry ends the list, for counting and opening alike */
    s.if_include = "lo,,lo";
    assert_int_equal(em_transport_link_count(&s, EM_LINK_KIND_UDP, NULL), 1);
    assert_null(em_transport_open_link(&s, EM_LINK_KIND_UDP, &env, 1, err, sizeof err));
    assert_string_equal(err, "");
    s.if_include = "lo,lo";
    assert_int_equal(em_transport_link_count(&s, EM_LINK_KIND_UDP, NULL), 2);
    s.if_include = "";
    assert_int_equal(em_transport_link_count(&s, EM_LINK_KIND_UDP, NULL), 1);
    /* the AF_XDP link: its interfaces from the same list; none named, an error that names
     * the setting (or, in a build without it, says so) */
    s.if_include = "lo,lo";
    assert_int_equal(em_transport_link_count(&s, EM_LINK_KIND_XDP, NULL), 2);
    s.if_include = "";
    assert_null(em_transport_open_link(&s, EM_LINK_KIND_XDP, &env, 0, err, sizeof err));
    assert_true(strstr(err, "FI_ETHERMPI_IF_INCLUDE") || strstr(err, "no native AF_XDP"));
    /* the rudp BTL opens it too, under its own names; a filter named by an
     * unreadable @FILE fails with the file's name before anything is opened */
    const em_transport_env_t btl = { .front = EM_FRONT_RUDP };
    assert_null(em_transport_open_link(&s, EM_LINK_KIND_XDP, &btl, 0, err, sizeof err));
    assert_true(strstr(err, "btl_rudp_if_include") || strstr(err, "no native AF_XDP"));
    if (em_link_kind_built(EM_LINK_KIND_XDP)) {
        s.if_include = "lo";
        s.xdp_prog = "@/nonexistent/%h.xdpprog";
        assert_null(em_transport_open_link(&s, EM_LINK_KIND_XDP, &btl, 0, err, sizeof err));
        assert_non_null(strstr(err, "/nonexistent/"));
    }
}

/* Who sees the native AF_XDP link's settings: the front ends that can open
 * it (the provider and the rudp BTL), not the dpdk BTL, whose links are DPDK's
 * and the daemon's. */
static void test_xdp_settings_fronts(void **st)
{
    (void)st;
    static const char *const rows[] = { "link",       "xdp_mode",         "xdp_queue",
                                        "xdp_queues", "xdp_busy_poll_us", "xdp_prog",
                                        "if_include" };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const em_setting_t *d = em_setting_find(rows[i]);
        assert_non_null(d);
        assert_true((d->fronts & EM_FRONT_RUDP) && (d->fronts & EM_FRONT_OFI));
        assert_false(d->fronts & EM_FRONT_DPDK);
    }
    em_settings_t s;
    char err[256];
    em_settings_default(&s);
    s.xdp_mode = "fast";
    assert_int_equal(em_settings_check(&s, EM_FRONT_RUDP, err, sizeof err), -1);
    assert_non_null(strstr(err, "btl_rudp_xdp_mode"));
}

/* The factory maps a choice's index to an enum: the table's order must be
 * the enums' (a reordered choices string would silently swap modes). */
static void test_choices_follow_the_enums(void **st)
{
    (void)st;
    const em_setting_t *fr = em_setting_find("framing"), *bq = em_setting_find("bulk_queue"),
                       *rec = em_setting_find("recovery"), *link = em_setting_find("link");
    assert_int_equal(em_setting_choice_of(fr, "l2"), EM_DPDK_FRAMING_L2);
    assert_int_equal(em_setting_choice_of(fr, "udp"), EM_DPDK_FRAMING_UDP);
    assert_int_equal(em_setting_choice_of(fr, "udp"), EMD_FRAMING_UDP);
    assert_int_equal(em_setting_choice_of(bq, "auto"), EM_EMD_BULKQ_AUTO);
    assert_int_equal(em_setting_choice_of(bq, "on"), EM_EMD_BULKQ_ON);
    assert_int_equal(em_setting_choice_of(bq, "off"), EM_EMD_BULKQ_OFF);
    assert_int_equal(em_setting_choice_of(rec, "sr"), EM_RECOVERY_SR);
    assert_int_equal(em_setting_choice_of(rec, "gbn"), EM_RECOVERY_GBN);
    for (int k = EM_LINK_KIND_UDP; k <= EM_LINK_KIND_XDP; k++)
        assert_int_equal(em_setting_choice_of(link, em_link_kind_name((em_link_kind_t)k)), k);
    /* empty is the default; an unknown value and a row without choices are -1 */
    assert_int_equal(em_setting_choice_of(fr, ""), EM_DPDK_FRAMING_L2);
    assert_int_equal(em_setting_choice_of(rec, NULL), EM_RECOVERY_SR);
    assert_int_equal(em_setting_choice_of(fr, "ip"), -1);
    assert_int_equal(em_setting_choice_of(em_setting_find("vdev"), "x"), -1);
}

static void test_empty_strings_are_defaults(void **st)
{
    (void)st;
    em_settings_t s;
    char err[256];
    em_settings_default(&s);
    s.cc = NULL; /* Open MPI's empty value */
    s.framing = "";
    s.if_include = NULL;
    em_settings_normalize(&s);
    assert_string_equal(s.cc, "loss");
    assert_string_equal(s.framing, "l2");
    assert_string_equal(s.if_include, "");
    assert_int_equal(em_settings_check(&s, EM_FRONT_DPDK, err, sizeof err), 0);
}

/* The front ends' open hands the kernel UDP link's reason code up: a
 * receive port another socket has is -EM_EADDRINUSE (the provider names
 * the cause by it), an open that works writes 0, and a link that fails
 * for another cause (the daemon link without a socket) -EM_EINVAL. */
static void test_taken_udp_port_reason(void **st)
{
    (void)st;
    em_settings_t s;
    char err[256];
    em_settings_default(&s);
    s.if_include = "lo";
    int taker = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    assert_true(taker >= 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t sl = sizeof sa;
    assert_int_equal(bind(taker, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(getsockname(taker, (struct sockaddr *)&sa, &sl), 0);
    int reason = 12345;
    em_transport_env_t env = { .front = EM_FRONT_OFI,
                               .udp_port = ntohs(sa.sin_port),
                               .reason = &reason };
    assert_null(em_transport_open_shared_link(&s, EM_LINK_KIND_UDP, &env, 0, err, sizeof err));
    assert_int_equal(reason, -EM_EADDRINUSE);
    env.udp_port = 0;
    em_link_t *l = em_transport_open_shared_link(&s, EM_LINK_KIND_UDP, &env, 0, err, sizeof err);
    assert_non_null(l);
    assert_int_equal(reason, 0);
    em_link_close(l);
    s.emd_socket = "";
    assert_null(em_transport_open_link(&s, EM_LINK_KIND_EMD, &env, 0, err, sizeof err));
    assert_int_equal(reason, -EM_EINVAL);
    close(taker);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows_are_well_formed),
        cmocka_unit_test(test_protocol_defaults_are_the_cores),
        cmocka_unit_test(test_check_names_the_front_ends_setting),
        cmocka_unit_test(test_parse_and_format),
        cmocka_unit_test(test_link_dependent_defaults),
        cmocka_unit_test(test_proto_cfg_follows_the_settings),
        cmocka_unit_test(test_link_errors_name_the_setting),
        cmocka_unit_test(test_taken_udp_port_reason),
        cmocka_unit_test(test_xdp_settings_fronts),
        cmocka_unit_test(test_published_defaults),
        cmocka_unit_test(test_empty_strings_are_defaults),
        cmocka_unit_test(test_choices_follow_the_enums),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
