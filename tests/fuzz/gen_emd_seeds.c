/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Seeds for fuzz_emd (one valid input per mode): gen_emd_seeds OUTDIR.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emd_abi/emd_ctl_msg.h"
#include "emd_abi/emd_region.h"
#include "emd_abi/emd_wire.h"
#include "seed_file.h"

static void put(const char *dir, const char *name, const void *p, size_t n)
{
    if (em_seed_write(dir, name, p, n) != 0)
        exit(1);
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    uint8_t buf[2048];
    /* 0: ATTACH_OK */
    struct emd_ctl_msg m;
    emd_ctl_init(&m, EMD_CTL_ATTACH_OK);
    m.endpoint = 3;
    m.shm_size = 1u << 16;
    buf[0] = 0;
    memcpy(buf + 1, &m, sizeof m);
    put(argv[1], "emd_ctl.bin", buf, 1 + sizeof m);
    /* 1: a valid header (mtu 256, 16/16 slots, as the target builds) */
    static uint8_t region[1u << 17];
    static const uint8_t mac[6] = { 2, 0xe7, 0, 0, 0, 1 };
    uint32_t ss;
    uint64_t sz = emd_shm_size(256, 1u << 16, 16, &ss);
    emd_shm_init((struct emd_shm_hdr *)region, sz, 256, 1u << 16, 16, 42, 3, mac);
    buf[0] = 1;
    memcpy(buf + 1, region, EMD_SHM_HDR_SIZE);
    put(argv[1], "emd_hdr.bin", buf, 1 + EMD_SHM_HDR_SIZE);
    /* 2: a frame */
    buf[0] = 2;
    emd_shim_t sh = { .cls = EMD_CLS_BULK, .len = 20, .dst = 3, .src = 4 };
    memcpy(sh.src_mac, mac, 6);
    emd_wire_encode(buf + 1, &sh);
    memset(buf + 1 + EMD_WIRE_HDR_LEN, 0xab, 20);
    put(argv[1], "emd_wire.bin", buf, 1 + EMD_WIRE_HDR_LEN + 20);
    /* 3: rx records just before the ring's end: 100 B (128 B record), a
     * wrap filler (64 B), then 60 B (128 B) at offset 0 */
    buf[0] = 3;
    uint32_t start = (1u << 16) - 192, len = 320;
    memcpy(buf + 1, &start, 4);
    memcpy(buf + 5, &len, 4);
    memset(buf + 9, 0, len);
    struct emd_slot_hdr r1 = { .len = 100, .endpoint = 4 }, w = { .len = EMD_REC_WRAP },
                        r2 = { .len = 60, .endpoint = 4 };
    memcpy(buf + 9, &r1, sizeof r1);
    memcpy(buf + 9 + 128, &w, sizeof w);
    memcpy(buf + 9 + 192, &r2, sizeof r2);
    put(argv[1], "emd_ring.bin", buf, 9 + len);
    /* 1 again: a header whose bulk-queue block offers slot 1 of 4 */
    struct emd_shm_hdr *h = (struct emd_shm_hdr *)region;
    h->bulkq.slots = 4;
    h->bulkq.slot = 1;
    h->bulkq.queues = 17;
    memset(h->bulkq.why, 0, sizeof h->bulkq.why);
    snprintf(h->bulkq.prefix, sizeof h->bulkq.prefix, "emd-node0");
    snprintf(h->bulkq.port, sizeof h->bulkq.port, "net_memif0");
    buf[0] = 1;
    memcpy(buf + 1, region, EMD_SHM_HDR_SIZE);
    put(argv[1], "emd_hdr_bulkq.bin", buf, 1 + EMD_SHM_HDR_SIZE);
    /* 4: a 12-byte address (endpoint 3, slot 2 of 4) */
    buf[0] = 4;
    put(argv[1], "emd_addr.bin", buf, 1u + emd_addr_encode(buf + 1, mac, 3, 4, 2));
    /* 4: a udp address (10.77.1.2:29717, endpoint 3; udp framing) */
    static const uint8_t node[6] = { 10, 77, 1, 2, 0x74, 0x15 };
    put(argv[1], "emd_addr_udp.bin", buf, 1u + emd_addr_encode_udp(buf + 1, node, 3));
    /* 1: a region header of a udp daemon */
    memset(region, 0, sizeof region);
    emd_shm_init((struct emd_shm_hdr *)region, sz, 256, 1u << 16, 16, 42, 3, node);
    ((struct emd_shm_hdr *)region)->flags |= EMD_SHM_F_UDP;
    buf[0] = 1;
    memcpy(buf + 1, region, EMD_SHM_HDR_SIZE);
    put(argv[1], "emd_hdr_udp.bin", buf, 1 + EMD_SHM_HDR_SIZE);
    /* 5: a hello (4 slots, 17 queue pairs) */
    buf[0] = 5;
    emd_hello_encode(buf + 1, EMD_HELLO, 4, 17);
    put(argv[1], "emd_hello.bin", buf, 1 + sizeof(struct emd_hello));
    return 0;
}
