/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file test_ofi_yield.c
 * A caller that polls an empty CQ in a loop gives the core to a process
 * that shares it once nothing has come for FI_ETHERMPI_YIELD_US
 * (prov/emo_cq.c cq_yield): Open MPI's mtl ofi waits for a blocking send
 * that way, never yielding, and with more ranks than cores the receiver
 * that send waits for could not run (docs/ofi.md "Ranks sharing cores").
 *
 * Two runs, each in a process of its own (the provider reads its
 * parameters once): FI_ETHERMPI_YIELD_US=50, then 0.  In each, a
 * competitor process that spins and this poller are pinned to
 * the same CPU; the poller reads an empty CQ in a loop for 400 ms.  The
 * competitor's share of the CPU the two got meanwhile (its CPU time over
 * both's) is about half without the yield (the scheduler's fair share) and
 * nearly all of it with the yield.  Checked: with the yield
 * at least 0.75, and at least 0.2 above the share without it.
 *
 * Usage: test_ofi_yield [PROVIDER_PATH]   (~1 s)
 */
#include "ofi_check.h"
#include "ofi_pair.h"

#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

static void pin_cpu0(void)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(0, &s);
    CHECK(sched_setaffinity(0, sizeof s, &s) == 0, "sched_setaffinity");
}

/* the competitor: spins until killed */
static void spin(void)
{
    pin_cpu0();
    for (volatile uint64_t n = 0;; n++)
        ;
}

static double cpu_s(clockid_t c)
{
    struct timespec t;
    CHECK(clock_gettime(c, &t) == 0, "clock_gettime");
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* One run with FI_ETHERMPI_YIELD_US=@p yield_us: the competitor's share of
 * the CPU the two of them got (its CPU time over its own plus the poller's)
 * while this process polls an empty CQ; written to @p out.  A share of
 * what the two got, not of the wall time: other load on the core (other
 * tests, a busy host) takes from both alike and leaves the split as the
 * yield makes it. */
static void one_run(const char *yield_us, double *out)
{
    setenv("FI_ETHERMPI_YIELD_US", yield_us, 1);
    struct fi_info *info = ofi_getinfo_ethermpi(FI_TAGGED | FI_MSG, FI_AV_TABLE);
    struct fid_fabric *fab;
    struct fid_domain *dom;
    struct fid_cq *cq;
    struct fid_av *av;
    struct fid_ep *ep;
    ofi_open_ep(info, FI_AV_TABLE, 64, &fab, &dom, &cq, &av, &ep);
    FI(fi_enable(ep));
    pin_cpu0();
    pid_t comp = fork();
    CHECK(comp >= 0, "fork");
    if (comp == 0)
        spin();
    clockid_t cc;
    CHECK(clock_getcpuclockid(comp, &cc) == 0, "clock_getcpuclockid");
    usleep(20000);
    double c0 = cpu_s(cc), s0 = cpu_s(CLOCK_THREAD_CPUTIME_ID), t0 = ofi_now_s();
    struct fi_cq_tagged_entry e;
    while (ofi_now_s() - t0 < 0.4)
        CHECK(fi_cq_read(cq, &e, 1) == -FI_EAGAIN, "an empty CQ read returned something");
    double comp_s = cpu_s(cc) - c0, self_s = cpu_s(CLOCK_THREAD_CPUTIME_ID) - s0;
    *out = comp_s + self_s > 0 ? comp_s / (comp_s + self_s) : 0;
    kill(comp, SIGKILL);
    waitpid(comp, NULL, 0);
    ofi_close_ep(ep, av, cq, dom, fab);
    fi_freeinfo(info);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        setenv("FI_PROVIDER_PATH", argv[1], 1);
    setenv("FI_ETHERMPI_IF_INCLUDE", "127.0.0.1", 0);
    setenv("FI_ETHERMPI_ID", "0", 1);
    static const char *const runs[2] = { "50", "0" };
    double share[2];
    for (int i = 0; i < 2; i++) {
        double *out = mmap(NULL, sizeof *out, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                           -1, 0);
        CHECK(out != MAP_FAILED, "mmap");
        *out = -1;
        pid_t pid = fork();
        CHECK(pid >= 0, "fork");
        if (pid == 0) {
            one_run(runs[i], out);
            _exit(0);
        }
        int st;
        CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
              "the run with FI_ETHERMPI_YIELD_US=%s failed", runs[i]);
        share[i] = *out;
        printf("FI_ETHERMPI_YIELD_US=%s: a spinning process on our core got %.2f of the CPU we "
               "two got while we polled\n",
               runs[i], share[i]);
    }
    CHECK(share[0] >= 0.75, "with the yield the other process got only %.2f of the core", share[0]);
    CHECK(share[0] >= share[1] + 0.2, "the yield gave the other process %.2f, without it %.2f",
          share[0], share[1]);
    printf("test_ofi_yield: all checks passed\n");
    return 0;
}
