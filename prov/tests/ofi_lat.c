/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Two-process tagged ping-pong through libfabric, for links whose ends
 * must open at the same time (a memif cable: fi_pingpong opens the
 * server's endpoint before the client starts).  Each process writes its
 * address to DIR/ofi_lat.<rank> and reads the other's, so both open their
 * endpoints at once, as MPI ranks do in MPI_Init.  Data are checked.
 *
 * Usage: ofi_lat RANK DIR [ITERS] [SIZE...]     (RANK 0 or 1)
 * Prints: "size_bytes latency_us" lines (half the round trip, median-free
 * mean over ITERS after ITERS/10 warm-up rounds).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#define DIE(...)                                                                                   \
    do {                                                                                           \
        fprintf(stderr, "ofi_lat: " __VA_ARGS__);                                                  \
        fputc('\n', stderr);                                                                       \
        exit(1);                                                                                   \
    } while (0)
#define OFI_CHECK_WHO "ofi_lat: "
#include "ofi_check.h"
#include "ofi_pair.h"

static struct fid_ep *ep;
static struct fid_cq *cq;

static int done; /* completions read and not yet waited for */

static void progress(void)
{
    struct fi_cq_tagged_entry e;
    ssize_t n = fi_cq_read(cq, &e, 1);
    if (n == 1) {
        done++;
    } else if (n == -FI_EAVAIL) {
        struct fi_cq_err_entry x = { 0 };
        fi_cq_readerr(cq, &x, 0);
        DIE("completion error: %s", x.err_data ? (char *)x.err_data : fi_strerror(x.err));
    } else if (n != -FI_EAGAIN) {
        DIE("fi_cq_read: %s", fi_strerror((int)-n));
    }
}

static void wait_one(void)
{
    double end = ofi_now_s() + 30;
    while (!done) {
        progress();
        if (ofi_now_s() > end)
            DIE("no completion within 30 s");
    }
    done--;
}

/* post, progressing while the provider says "again" */
#define POST(c)                                                                                    \
    do {                                                                                           \
        ssize_t r_;                                                                                \
        while ((r_ = (c)) == -FI_EAGAIN)                                                           \
            progress();                                                                            \
        if (r_ < 0)                                                                                \
            DIE("%s: %s", #c, fi_strerror((int)-r_));                                              \
    } while (0)

int main(int argc, char **argv)
{
    if (argc < 3)
        DIE("usage: ofi_lat RANK DIR [ITERS] [SIZE...]");
    int rank = atoi(argv[1]);
    const char *dir = argv[2];
    int iters = argc > 3 ? atoi(argv[3]) : 1000;
    char idv[8];
    snprintf(idv, sizeof idv, "%d", rank);
    setenv("FI_ETHERMPI_ID", idv, 0);
    struct fi_info *hints = fi_allocinfo(), *info;
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_TAGGED;
    hints->fabric_attr->prov_name = strdup(getenv("OFI_LAT_PROVIDER") ? getenv("OFI_LAT_PROVIDER")
                                                                      : "ethermpi");
    FI(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info));
    struct fid_fabric *fab;
    struct fid_domain *dom;
    struct fid_av *av;
    ofi_open_ep(info, FI_AV_TABLE, 0, &fab, &dom, &cq, &av, &ep); /* CQ: the default size */
    FI(fi_enable(ep));
    char name[256], path[1024], tmp[1100];
    size_t len = sizeof name;
    FI(fi_getname(&ep->fid, name, &len));
    snprintf(path, sizeof path, "%s/ofi_lat.%d", dir, rank);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f || fwrite(name, 1, len, f) != len || fclose(f) || rename(tmp, path))
        DIE("cannot write %s", path);
    snprintf(path, sizeof path, "%s/ofi_lat.%d", dir, 1 - rank);
    char rname[256];
    size_t rlen = 0;
    for (double end = ofi_now_s() + 60; !rlen; usleep(10000)) {
        if (ofi_now_s() > end)
            DIE("no address from rank %d in %s", 1 - rank, path);
        if ((f = fopen(path, "rb"))) {
            rlen = fread(rname, 1, sizeof rname, f);
            fclose(f);
        }
    }
    fi_addr_t peer;
    if (fi_av_insert(av, rname, 1, &peer, 0, NULL) != 1)
        DIE("fi_av_insert failed");
    static const size_t def[] = { 8, 64, 1024, 4096, 65536 };
    int nsz = argc > 4 ? argc - 4 : 5;
    if (rank == 0)
        printf("# ofi_lat %s: size_bytes latency_us (half round trip, %d iterations)\n",
               info->fabric_attr->prov_name, iters);
    for (int s = 0; s < nsz; s++) {
        size_t sz = argc > 4 ? (size_t)atol(argv[4 + s]) : def[s];
        unsigned char *sb = malloc(sz + 1), *rb = malloc(sz + 1);
        int warm = iters / 10 + 1;
        double t0 = 0;
        for (int i = 0; i < warm + iters; i++) {
            if (i == warm)
                t0 = ofi_now_s();
            memset(sb, (unsigned char)i, sz);
            if (rank == 0) {
                POST(fi_tsend(ep, sb, sz, NULL, peer, 1, NULL));
                POST(fi_trecv(ep, rb, sz, NULL, FI_ADDR_UNSPEC, 1, 0, NULL));
                wait_one();
                wait_one();
            } else {
                POST(fi_trecv(ep, rb, sz, NULL, FI_ADDR_UNSPEC, 1, 0, NULL));
                wait_one();
                POST(fi_tsend(ep, sb, sz, NULL, peer, 1, NULL));
                wait_one();
            }
            if (sz && (rb[0] != (unsigned char)i || rb[sz - 1] != (unsigned char)i))
                DIE("size %zu iteration %d: wrong data", sz, i);
        }
        if (rank == 0)
            printf("%zu %.2f\n", sz, (ofi_now_s() - t0) / iters / 2 * 1e6);
        free(sb);
        free(rb);
    }
    fflush(stdout);
    /* let the last ACKs leave before closing; rank 0 (the memif server
     * end on the emulated cluster) closes last: DPDK 22.11's memif client
     * can crash in rx_burst once the server end is gone */
    snprintf(path, sizeof path, "%s/ofi_lat.done", dir);
    for (double end = ofi_now_s() + (rank ? 0.2 : 5); ofi_now_s() < end;) {
        struct fi_cq_tagged_entry e;
        (void)fi_cq_read(cq, &e, 1);
        if (!rank && access(path, F_OK) == 0)
            break;
    }
    if (rank && (f = fopen(path, "w")))
        fclose(f);
    ofi_close_ep(ep, av, cq, dom, fab);
    fi_freeinfo(info);
    fi_freeinfo(hints);
    return 0;
}
