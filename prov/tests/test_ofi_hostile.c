/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Hostile or stray rendezvous control messages reach the provider's
 * dispatcher (emo_handle_msg) of an endpoint with operations in its cookie
 * table: a CTS or FIN naming another peer's operation, a stale generation,
 * an index out of the table, the wrong kind, a length beyond what was
 * asked, and undecodable bytes.  Each must be refused and counted, leave
 * the operation in place, and write nothing.  No engine is needed: every
 * refusal happens before one would be used.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ofi_rdv.h"

static struct emo_ep ep;

static void send_hdr(uint16_t peer, const emo_hdr_t *h)
{
    uint8_t b[EMO_HDR_LEN];
    emo_hdr_encode(h, b);
    emo_handle_msg(&ep, peer, h->type, b, sizeof b);
}

static void test_refused(void **state)
{
    (void)state;
    memset(&ep, 0, sizeof ep);
    emo_queue_init(&ep.posted_tag);
    emo_queue_init(&ep.unexp_tag);
    emo_queue_init(&ep.posted_msg);
    emo_queue_init(&ep.unexp_msg);
    emo_op_t *rts = emo_op_new(&ep, EMO_OP_RTS, 0), *rr = emo_op_new(&ep, EMO_OP_RRECV, 0);
    assert_non_null(rts);
    assert_non_null(rr);
    rts->peer = 3;
    rts->len = 1000;
    rr->peer = 3;
    rr->len = 500;
    assert_int_equal(emo_cookie_add(&ep, rts), 0);
    assert_int_equal(emo_cookie_add(&ep, rr), 0);
    assert_int_not_equal(rts->cookie, rr->cookie);

    /* CTS from another peer, for the right cookie */
    emo_hdr_t cts = { .type = EMO_T_CTS,
                      .len = 100,
                      .s_cookie = rts->cookie,
                      .r_cookie = 77,
                      .region = 1,
                      .key = 5 };
    send_hdr(4, &cts);
    assert_int_equal(ep.st.bad_cookie, 1);
    /* stale generation, index beyond the table, the receive's cookie */
    cts.s_cookie = rts->cookie + (1u << 20);
    send_hdr(3, &cts);
    cts.s_cookie = 9999;
    send_hdr(3, &cts);
    cts.s_cookie = rr->cookie;
    send_hdr(3, &cts);
    assert_int_equal(ep.st.bad_cookie, 4);
    /* a grant beyond the message */
    cts.s_cookie = rts->cookie;
    cts.len = 1001;
    send_hdr(3, &cts);
    assert_int_equal(ep.st.bad_len, 1);
    /* FIN for the send's cookie, or from another peer */
    emo_hdr_t fin = { .type = EMO_T_FIN, .len = 500, .r_cookie = rts->cookie };
    send_hdr(3, &fin);
    fin.r_cookie = rr->cookie;
    send_hdr(5, &fin);
    assert_int_equal(ep.st.bad_cookie, 6);
    /* undecodable: short, wrong type for the engine tag */
    uint8_t junk[10] = { 0 };
    emo_handle_msg(&ep, 3, EMO_T_CTS, junk, sizeof junk);
    assert_int_equal(ep.st.dec_err[EMO_DEC_SHORT], 1);
    uint8_t b[EMO_HDR_LEN];
    emo_hdr_encode(&fin, b);
    emo_handle_msg(&ep, 3, EMO_T_CTS, b, sizeof b);
    assert_int_equal(ep.st.dec_err[EMO_DEC_TYPE], 1);
    /* both operations are still where they were */
    assert_ptr_equal(emo_cookie_get(&ep, rts->cookie, 3, EMO_OP_RTS), rts);
    assert_ptr_equal(emo_cookie_get(&ep, rr->cookie, 3, EMO_OP_RRECV), rr);
    /* a removed operation's cookie names nothing, and the slot's next
     * tenant gets another generation */
    uint32_t old = rts->cookie;
    emo_cookie_del(&ep, rts);
    assert_null(emo_cookie_get(&ep, old, 3, EMO_OP_RTS));
    emo_op_t *again = emo_op_new(&ep, EMO_OP_RTS, 0);
    again->peer = 3;
    assert_int_equal(emo_cookie_add(&ep, again), 0);
    assert_int_not_equal(again->cookie, old);
    assert_null(emo_cookie_get(&ep, old, 3, EMO_OP_RTS));
    emo_data_fini(&ep); /* frees the table's operations */
    emo_op_free(rts);
    free(ep.ops);
    free(ep.op_gen);
}

int main(void)
{
    const struct CMUnitTest tests[] = { cmocka_unit_test(test_refused) };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
