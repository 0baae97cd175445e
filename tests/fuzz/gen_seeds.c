/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Writes seed inputs for the fuzz targets into a directory: well-formed
 * frames of every type (decode_*.bin) and frame sequences for the receive
 * path (rx_*.bin).  Seeds start the fuzzers inside the interesting space.
 * Usage: gen_seeds OUTDIR
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "proto/wire.h"
#include "seed_file.h"

static size_t frame(uint8_t *b, uint8_t type, uint32_t seq, uint16_t len, uint16_t fno,
                    uint16_t fcnt, uint32_t mlen)
{
    em_hdr_t h = { .type = type,
                   .job_key = 0x0BADF00Du,
                   .index = 1, /* from the harness's peer 1 */
                   .seq = seq,
                   .ack = 0xFFFFFFF0u,
                   .len = len,
                   .frag_no = fno,
                   .frag_cnt = fcnt,
                   .msg_len = mlen,
                   .msg_id = 5 };
    if (type == EM_PT_ACK || type == EM_PT_NACK)
        h.len = h.frag_cnt = h.frag_no = 0, h.msg_len = h.msg_id = 0;
    if (type == EM_PT_PUT)
        h.region = 1, h.offset = 64;
    size_t n = em_hdr_encode(&h, b);
    memset(b + n, 0x5a, h.len);
    return n + h.len;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gen_seeds OUTDIR\n");
        return 2;
    }
    const char *d = argv[1];
    uint8_t b[2048], r[2048];
    int rc = 0;
    rc |= em_seed_write(d, "decode_data.bin", b, frame(b, EM_PT_DATA, 0xFFFFFFF0u, 20, 0, 1, 20));
    rc |= em_seed_write(d, "decode_frag.bin", b, frame(b, EM_PT_DATA, 3, 100, 1, 3, 300));
    rc |= em_seed_write(d, "decode_put.bin", b, frame(b, EM_PT_PUT, 7, 30, 0, 1, 30));
    rc |= em_seed_write(d, "decode_ack.bin", b, frame(b, EM_PT_ACK, 0, 0, 0, 0, 0));
    rc |= em_seed_write(d, "decode_nack.bin", b, frame(b, EM_PT_NACK, 0, 0, 0, 0, 0));
    /* a probe and its answer (real networks): flags at byte 3 */
    size_t pn = frame(b, EM_PT_ACK, 0, 0, 0, 0, 0);
    b[3] = EM_F_ACKNOW | EM_F_PROBED;
    rc |= em_seed_write(d, "decode_probe.bin", b, pn);

    /* a window of 101 frames (wider than the SACK bitmap): we send (harness
     * flag 4|8), the peer probes us, time passes so our timer fires and we
     * probe, the peer answers (PROBED) without our frames */
    {
        size_t n = 0;
        r[n++] = (uint8_t)(0 | (100 << 1));
        static const struct {
            uint8_t t;
            uint32_t s;
            uint16_t len, fcnt;
            uint8_t hfl, fl;
        } pseq[] = {
            { EM_PT_DATA, 0xFFFFFFF0u, 20, 1, 0, 0x0D },
            { EM_PT_DATA, 0xFFFFFFF1u, 20, 1, 0, 0x0D },
            { EM_PT_ACK, 0, 0, 0, EM_F_ACKNOW, 0x01 },
            { EM_PT_DATA, 0xFFFFFFF3u, 20, 1, EM_F_RETX, 0x31 },
            { EM_PT_ACK, 0, 0, 0, EM_F_PROBED, 0x01 },
            { EM_PT_ACK, 0, 0, 0, EM_F_PROBED | EM_F_SACK, 0x71 },
        };
        for (unsigned i = 0; i < sizeof pseq / sizeof pseq[0]; i++) {
            size_t fl = frame(b, pseq[i].t, pseq[i].s, pseq[i].len, 0, pseq[i].fcnt, pseq[i].len);
            b[3] = pseq[i].hfl;
            r[n++] = (uint8_t)(fl >> 8);
            r[n++] = (uint8_t)fl;
            r[n++] = pseq[i].fl;
            memcpy(r + n, b, fl);
            n += fl;
        }
        rc |= em_seed_write(d, "rx_probe.bin", r, n);
    }

    /* receive-path sequences: byte 0 = mode/window, then [len16][flags][frame] */
    for (int mode = 0; mode < 2; mode++) {
        size_t n = 0;
        r[n++] = (uint8_t)(mode | (15 << 1));
        static const struct {
            uint8_t t;
            uint32_t s;
            uint16_t len, fno, fcnt;
            uint32_t mlen;
            uint8_t fl;
        } seq[] = {
            { EM_PT_DATA, 0xFFFFFFF1u, 200, 1, 2, 456, 0x05 }, /* out of order */
            { EM_PT_DATA, 0xFFFFFFF0u, 256, 0, 2, 456, 0x07 }, /* fills the gap */
            { EM_PT_PUT, 0xFFFFFFF2u, 20, 0, 1, 20, 0x01 },    { EM_PT_ACK, 0, 0, 0, 0, 0, 0x23 },
            { EM_PT_DATA, 0xFFFFFFF3u, 5, 0, 1, 5, 0x01 },     { EM_PT_NACK, 0, 0, 0, 0, 0, 0x13 },
        };
        for (unsigned i = 0; i < sizeof seq / sizeof seq[0]; i++) {
            size_t fl = frame(b, seq[i].t, seq[i].s, seq[i].len, seq[i].fno, seq[i].fcnt,
                              seq[i].mlen);
            r[n++] = (uint8_t)(fl >> 8);
            r[n++] = (uint8_t)fl;
            r[n++] = seq[i].fl;
            memcpy(r + n, b, fl);
            n += fl;
        }
        rc |= em_seed_write(d, mode ? "rx_gbn.bin" : "rx_sr.bin", r, n);
    }
    return rc;
}
