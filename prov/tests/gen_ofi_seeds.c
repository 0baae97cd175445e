/* SPDX-License-Identifier: BSD-3-Clause */
/* Seeds for fuzz_ofi_wire: one valid message of each type and an address. */
#include <stdio.h>
#include <string.h>

#include "emo_wire.h"

static int put(const char *dir, const char *name, const void *b, size_t n)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(b, 1, n, f) != n)
        return 1;
    return fclose(f) != 0;
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    uint8_t b[1 + EMO_HDR_LEN + EMO_ADDR_LEN];
    int rc = 0;
    emo_hdr_t hs[8] = {
        { .type = EMO_T_EAGER, .flags = EMO_F_TAGGED | EMO_F_DATA, .tag = 5, .data = 9, .len = 16 },
        { .type = EMO_T_RTS,
          .flags = EMO_F_TAGGED,
          .tag = 5,
          .len = 1 << 20,
          .s_cookie = 0x100001 },
        { .type = EMO_T_CTS,
          .len = 1 << 20,
          .s_cookie = 0x100001,
          .r_cookie = 0x100002,
          .region = 1,
          .key = 0xABCDEF },
        { .type = EMO_T_FIN, .len = 1 << 20, .r_cookie = 0x100002 },
        { .type = EMO_T_READ,
          .len = 4096,
          .s_cookie = 0x100003,
          .region = 2,
          .key = 0x1234,
          .tag = 64,
          .data = (1ull << 48) | 0x5678 },
        { .type = EMO_T_RDONE, .len = 4096, .r_cookie = 0x100003 },
        { .type = EMO_T_WDATA,
          .flags = EMO_F_DATA,
          .len = 64,
          .data = 42,
          .tag = 4096,
          .key = (UINT64_C(3) << 48) | 0x123456789ABCull },
        { .type = EMO_T_HELLO, .flags = EMO_F_HELLO },
    };
    const char *names[8] = { "ofi_eager.bin", "ofi_rts.bin",   "ofi_cts.bin",   "ofi_fin.bin",
                             "ofi_read.bin",  "ofi_rdone.bin", "ofi_wdata.bin", "ofi_hello.bin" };
    for (int i = 0; i < 8; i++) {
        b[0] = hs[i].type;
        emo_hdr_encode(&hs[i], b + 1);
        size_t n = 1 + EMO_HDR_LEN;
        if (hs[i].type == EMO_T_EAGER) {
            memset(b + n, 0x5A, 16);
            n += 16;
        }
        if (hs[i].type == EMO_T_HELLO) { /* the sender's address follows */
            emo_addr_t a = { .id = 2, .frame_max = 1500, .secret = 7, .isn = 9 };
            emo_addr_encode(&a, b + n);
            n += EMO_ADDR_LEN;
        }
        rc |= put(argv[1], names[i], b, n);
    }
    emo_addr_t a = { .id = 3,
                     .frame_max = 1472,
                     .secret = 77,
                     .isn = 5,
                     .link = { .len = 6, .bytes = { 10, 0, 0, 1, 0, 80 } } };
    uint8_t ab[1 + EMO_ADDR_LEN];
    ab[0] = 0xAD;
    emo_addr_encode(&a, ab + 1);
    rc |= put(argv[1], "ofi_addr.bin", ab, sizeof ab);
    /* a named address (version 3: endpoint index and nonce, no id) */
    emo_addr_t na = { .named = 1,
                      .ep_index = 1,
                      .nonce = 0x5eedull,
                      .frame_max = 9000,
                      .link = { .len = 8, .bytes = { 2, 0, 0, 0, 0, 1, 0, 0 } } };
    emo_addr_encode(&na, ab + 1);
    rc |= put(argv[1], "ofi_addr_named.bin", ab, sizeof ab);
    return rc;
}
