/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file test_ofi_spin.c
 * The CQ spin (FI_ETHERMPI_CQ_SPIN_NS, prov/emo_cq.c cq_spin) spends core
 * time only while it pays.  One process, one endpoint on loopback UDP, a
 * receive posted that nothing will match, FI_ETHERMPI_CQ_SPIN_NS = 1 ms:
 *
 *  1. 400 empty reads in a polling loop.  A spin that never pays would
 *     hold each read for the whole 1 ms (400 ms); the adaptive spin stops
 *     after a few unrewarded spins and retries once in 64 reads, so the
 *     loop takes a few tens of ms at most.  It must have spun at all
 *     (at least 4 ms: the first spins are tried).
 *
 * That spins which pay keep going is shown by the benchmarks
 * (docs/ofi-measurements.md, "Latency under MPICH"): it needs a peer that
 * answers within the spin.
 *
 * Usage: test_ofi_spin [PROVIDER_PATH]   (~0.1 s)
 */
#include "ofi_check.h"
#include "ofi_pair.h"

#include <stdio.h>
#include <string.h>

#include <rdma/fi_cm.h>
#include <rdma/fi_tagged.h>

static struct fid_fabric *fab;
static struct fid_domain *dom;
static struct fid_cq *cq;
static struct fid_av *av;
static struct fid_ep *ep;
static struct fi_info *info;

/* one fi_cq_read of an empty CQ, timed */
static double empty_read_s(void)
{
    struct fi_cq_tagged_entry e;
    double t0 = ofi_now_s();
    ssize_t n = fi_cq_read(cq, &e, 1);
    CHECK(n == -FI_EAGAIN, "an empty CQ read %zd", n);
    return ofi_now_s() - t0;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        setenv("FI_PROVIDER_PATH", argv[1], 1);
    setenv("FI_ETHERMPI_IF_INCLUDE", "127.0.0.1", 0);
    setenv("FI_ETHERMPI_CQ_SPIN_NS", "1000000", 1);
    setenv("FI_ETHERMPI_ID", "0", 1);
    info = ofi_getinfo_ethermpi(FI_TAGGED | FI_MSG, FI_AV_TABLE);
    ofi_open_ep(info, FI_AV_TABLE, 64, &fab, &dom, &cq, &av, &ep);
    FI(fi_enable(ep));
    char name[256];
    size_t len = sizeof name;
    FI(fi_getname(&ep->fid, name, &len));
    fi_addr_t self = FI_ADDR_UNSPEC;
    CHECK(fi_av_insert(av, name, 1, &self, 0, NULL) == 1, "inserting our own address");

    /* 1. nothing will come: the spin must give up */
    char b[64];
    int rctx;
    FI(fi_trecv(ep, b, sizeof b, NULL, FI_ADDR_UNSPEC, 0x77, 0, &rctx));
    double t0 = ofi_now_s(), spun = 0;
    for (int i = 0; i < 400; i++)
        spun += empty_read_s();
    double loop = ofi_now_s() - t0;
    printf("400 empty reads with a 1 ms spin: %.1f ms\n", loop * 1e3);
    CHECK(spun >= 0.004, "the spin never ran (%.1f ms in 400 reads)", spun * 1e3);
    CHECK(loop < 0.080, "400 unrewarded reads took %.1f ms: the spin did not back off", loop * 1e3);

    FI(fi_cancel(&ep->fid, &rctx));
    ofi_close_ep(ep, av, cq, dom, fab);
    fi_freeinfo(info);
    printf("test_ofi_spin: all checks passed\n");
    return 0;
}
