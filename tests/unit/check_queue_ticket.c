/* check_queue_ticket.c: the waiting room's signed position tickets (sk/queue_ticket.h,
 * DESIGN.md 18 "Polling costs little"): sign/verify, a pre-queue ticket (position 0),
 * expiry, wrong user and voucher, tampered, truncated and malformed text, a rotated key
 * (no longer the first: refused), another secret under the same kid, and that a ticket is
 * never an admission nor an admission a ticket. No network. */
#include <stdio.h>
#include <string.h>

#include "sk_test.h"
#include "sk/queue_ticket.h"
#include "sk/queue_token.h"

#define K1 SK_TEST_QKEY1
#define K2 SK_TEST_QKEY2
#define QKEYS(text) sk_test_keys(&sk_qtoken_keyfile, (text))

static const sk_qticket_t TIC = { .generation = "1f2e3d4c5b6a7980", .voucher_id = 386832052600700928,
                                  .user_id = 42, .position = 7, .expiry_ms = 1800000060000 };

#define WANT "t1.k1.1f2e3d4c5b6a7980.386832052600700928.42.7.1800000060000."

START_TEST(ticket_sign_verify)
{
        sk_keyfile_set_t *k = QKEYS(K1 "\n");
        char tic[SK_QTICKET_MAX + 1], bad[SK_QTICKET_MAX + 4];
        sk_qticket_t out, pre = TIC;
        int64_t now = TIC.expiry_ms - 1000;

        ck_assert_int_eq(sk_qticket_sign(k, &TIC, tic, sizeof(tic)), 0);
        ck_assert_msg(strncmp(tic, WANT, strlen(WANT)) == 0 && strlen(tic) == strlen(WANT) + 43,
                      "ticket text: %s", tic);
        ck_assert_int_eq(sk_qticket_verify(k, tic, TIC.voucher_id, 42, now, &out), SK_QTOKEN_OK);
        ck_assert_str_eq(out.generation, TIC.generation);
        ck_assert(out.voucher_id == TIC.voucher_id && out.user_id == 42 && out.position == 7 &&
                  out.expiry_ms == TIC.expiry_ms);
        /* expiry: now >= expiry is expired */
        ck_assert_int_eq(sk_qticket_verify(k, tic, TIC.voucher_id, 42, TIC.expiry_ms, NULL), SK_QTOKEN_EXPIRED);
        /* another user, another voucher */
        ck_assert_int_eq(sk_qticket_verify(k, tic, TIC.voucher_id, 43, now, NULL), SK_QTOKEN_WRONG);
        ck_assert_int_eq(sk_qticket_verify(k, tic, TIC.voucher_id + 1, 42, now, NULL), SK_QTOKEN_WRONG);
        /* tampered: the position moved forward, a signature bit, the generation */
        snprintf(bad, sizeof(bad), "%s", tic);
        bad[strlen("t1.k1.1f2e3d4c5b6a7980.386832052600700928.42.")] = '1';
        ck_assert_int_eq(sk_qticket_verify(k, bad, TIC.voucher_id, 42, now, NULL), SK_QTOKEN_BAD_SIG);
        snprintf(bad, sizeof(bad), "%s", tic);
        bad[strlen(bad) - 1] = bad[strlen(bad) - 1] == 'A' ? 'B' : 'A';
        ck_assert_int_eq(sk_qticket_verify(k, bad, TIC.voucher_id, 42, now, NULL), SK_QTOKEN_BAD_SIG);
        snprintf(bad, sizeof(bad), "%s", tic);
        bad[6] = bad[6] == '1' ? '2' : '1';
        ck_assert_int_eq(sk_qticket_verify(k, bad, TIC.voucher_id, 42, now, NULL), SK_QTOKEN_BAD_SIG);
        /* truncated at every length, and malformed */
        for (size_t n = 0; n < strlen(tic); n++) {
                snprintf(bad, sizeof(bad), "%.*s", (int)n, tic);
                ck_assert_int_ne(sk_qticket_verify(k, bad, TIC.voucher_id, 42, now, NULL), SK_QTOKEN_OK);
        }
        ck_assert_int_eq(sk_qticket_verify(k, NULL, TIC.voucher_id, 42, now, NULL), SK_QTOKEN_MALFORMED);
        ck_assert_int_eq(sk_qticket_verify(k, "t1.k1.a.b", TIC.voucher_id, 42, now, NULL), SK_QTOKEN_MALFORMED);
        snprintf(bad, sizeof(bad), "%s.x", tic);
        ck_assert_int_eq(sk_qticket_verify(k, bad, TIC.voucher_id, 42, now, NULL), SK_QTOKEN_MALFORMED);
        /* a pre-queue member's ticket: position 0 */
        pre.position = 0;
        ck_assert_int_eq(sk_qticket_sign(k, &pre, tic, sizeof(tic)), 0);
        ck_assert_int_eq(sk_qticket_verify(k, tic, TIC.voucher_id, 42, now, &out), SK_QTOKEN_OK);
        ck_assert(out.position == 0);
        /* bad fields are not signed */
        pre.position = -1;
        ck_assert_int_eq(sk_qticket_sign(k, &pre, tic, sizeof(tic)), -1);
        pre = TIC;
        snprintf(pre.generation, sizeof(pre.generation), "XYZ");
        ck_assert_int_eq(sk_qticket_sign(k, &pre, tic, sizeof(tic)), -1);
        ck_assert_int_eq(sk_qticket_sign(NULL, &TIC, tic, sizeof(tic)), -1);
        sk_keyfile_set_free(k);
}
END_TEST

START_TEST(ticket_keys)
{
        sk_keyfile_set_t *k1 = QKEYS(K1 "\n");
        sk_keyfile_set_t *rot = QKEYS(K2 "\n" K1 "\n");       /* k2 promoted */
        sk_keyfile_set_t *evil = QKEYS("k1 another-secret-0123456789abcdef\n");
        char tic[SK_QTICKET_MAX + 1], tok[SK_QTOKEN_MAX + 1];
        sk_qtoken_t t = { .voucher_id = TIC.voucher_id, .user_id = 42, .position = 7,
                          .expiry_ms = TIC.expiry_ms };
        int64_t now = TIC.expiry_ms - 1000;

        ck_assert_int_eq(sk_qticket_sign(k1, &TIC, tic, sizeof(tic)), 0);
        /* signed under k1, which is no longer the first key: refused (the poll reads Redis) */
        ck_assert_int_eq(sk_qticket_verify(rot, tic, TIC.voucher_id, 42, now, NULL), SK_QTOKEN_UNKNOWN_KEY);
        /* same kid, another secret */
        ck_assert_int_eq(sk_qticket_verify(evil, tic, TIC.voucher_id, 42, now, NULL), SK_QTOKEN_BAD_SIG);
        /* a ticket is not an admission, an admission is not a ticket */
        ck_assert_int_ne(sk_qtoken_verify(k1, tic, TIC.voucher_id, 42, now, NULL), SK_QTOKEN_OK);
        snprintf(t.generation, sizeof(t.generation), "%s", TIC.generation);
        ck_assert_int_eq(sk_qtoken_sign(k1, &t, tok, sizeof(tok)), 0);
        ck_assert_int_ne(sk_qticket_verify(k1, tok, TIC.voucher_id, 42, now, NULL), SK_QTOKEN_OK);
        tok[0] = 't';   /* an admission's text relabelled: its signature is not the ticket's */
        ck_assert_int_ne(sk_qticket_verify(k1, tok, TIC.voucher_id, 42, now, NULL), SK_QTOKEN_OK);
        sk_keyfile_set_free(k1);
        sk_keyfile_set_free(rot);
        sk_keyfile_set_free(evil);
}
END_TEST

static Suite *ticket_suite(void)
{
        Suite *s = suite_create("queue_ticket");
        TCase *tc = tcase_create("queue_ticket");

        tcase_add_test(tc, ticket_sign_verify);
        tcase_add_test(tc, ticket_keys);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return sk_test_run(ticket_suite());
}
