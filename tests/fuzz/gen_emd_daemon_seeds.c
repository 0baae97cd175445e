/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Seeds for fuzz_emd_daemon (programs of operations, see its header):
 * gen_emd_daemon_seeds OUTDIR writes a well-behaved exchange (flows, port
 * frames of registered flows, tx to another node and to this node, rings
 * consumed) and a hostile one (geometry and indices rewritten, lying slot
 * lengths, broadcast destinations, a doomed client replaced).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "seed_file.h"

static uint8_t buf[4096];
static size_t n;

static void b(unsigned v) { buf[n++] = (uint8_t)v; }
static void w(uint32_t v)
{
    b(v >> 24);
    b(v >> 16);
    b(v >> 8);
    b(v);
}

static void put(const char *dir, const char *name)
{
    if (em_seed_write(dir, name, buf, n) != 0)
        exit(1);
    n = 0;
}

/* a protocol header as proto_hdr() reads it: DATA, key 0x1234, seq given */
static void hdr(uint32_t seq, unsigned len)
{
    b(0); /* DATA */
    b(1); /* key 0x1234 */
    b(0); /* seq explicit */
    w(seq);
    w(0); /* ack */
    b(len);
    b(0); /* frag_cnt 1 */
    b(0); /* frag_no */
    b(0); /* msg_len = len */
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    /* good: client 0 registers peer 2 from 0xfffffff0 (a wrapping ISN) */
    b(5);
    b(0);
    b(1);
    w(0xfffffff0u);
    w(7);
    b(2);
    for (uint32_t s = 0; s < 20; s++) {
        b(4);
        b(0);
        b(1);
        b(0x80 | 8);
        b(2); /* op, k (unused), dst ep 1, src, len|hdr, peer 2 */
        hdr(0xfffffff0u + s, 8);
        for (int i = 0; i < 8; i++)
            b(i);
        b(2); /* smac */
    }
    b(7);
    b(0);
    /* tx: to another node with a header, to this node, then drain */
    b(2);
    b(1);
    b(4 | 1);
    b(1);
    b(2);
    hdr(5, 4);
    b(4);
    b(1);
    b(2);
    b(3);
    b(4);
    b(0);
    b(2);
    b(1);
    b(0);
    b(2);
    b(16);
    for (int i = 0; i < 16; i++)
        b(i);
    b(0);
    b(3);
    b(1);
    b(0);
    b(6);
    b(0);
    b(1);
    put(argv[1], "emdd_good.bin");

    /* hostile: rewrite the geometry fields, set impossible indices, a lying
     * slot length, a broadcast destination, then drain and replace */
    b(0);
    b(2);
    w(12);
    b(24);
    for (int i = 0; i < 24; i++)
        b(0xff);
    b(2);
    b(2);
    b(2);
    b(1);
    b(8);
    for (int i = 0; i < 8; i++)
        b(i);
    b(0xff);
    w(0x7fffffff);
    b(3);
    b(2);
    b(0);
    b(1);
    b(1);
    w(0x80000000u);
    w(0x12345678u);
    b(3);
    b(1);
    b(0);
    b(4);
    b(0);
    b(2);
    b(3);
    b(16);
    for (int i = 0; i < 16; i++)
        b(0xee);
    b(9);
    b(6);
    b(0);
    b(200);
    b(4);
    b(0);
    b(7);
    b(0);
    b(16);
    b('E');
    b('M');
    b('D');
    b('H');
    b(3);
    b(1);
    b(0);
    b(9);
    b(0);
    b(99);
    for (int i = 0; i < 6; i++)
        b(0);
    b(1);
    put(argv[1], "emdd_hostile.bin");
    return 0;
}
