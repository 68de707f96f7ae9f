/* check_queue.c: the waiting room's pure rules and tokens (sk/queue.h, sk/queue_token.h,
 * sk/queue_room.h's member state; DESIGN.md 18): token sign/verify (expiry, wrong user,
 * wrong voucher, rotated key, unknown key, tampered and truncated text), the keys file,
 * the window arithmetic with the rate cap, pollAfterMs bounds, the title rule, and the
 * pre-queue order's randomness (χ² of the rank of the first and the last joiner over many
 * draws of the OS CSPRNG keys the join uses; the jitter tests use a fixed seed), and the
 * signatures of each thread's kept HMAC contexts against OpenSSL's one-shot HMAC() over more
 * keys than a thread keeps, in four threads at once. No network. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "sk_test.h"
#include "sk/queue.h"
#include "sk/queue_room.h"
#include "sk/queue_token.h"

#define K1 SK_TEST_QKEY1
#define K2 SK_TEST_QKEY2
#define QKEYS(text) sk_test_keys(&sk_qtoken_keyfile, (text))

static const sk_qtoken_t TOK = { .generation = "1f2e3d4c5b6a7980", .voucher_id = 386832052600700928,
                                 .user_id = 42, .position = 7, .expiry_ms = 1800000060000 };

START_TEST(token_sign_verify)
{
        sk_keyfile_set_t *k = QKEYS("# queue keys\n" K1 "\r\n" K2 "\n");
        char tok[SK_QTOKEN_MAX + 1], bad[SK_QTOKEN_MAX + 1];
        sk_qtoken_t out;
        int64_t now = TOK.expiry_ms - 1000;

        ck_assert_uint_eq(sk_keyfile_set_count(k), 2);
        ck_assert_int_eq(sk_qtoken_sign(k, &TOK, tok, sizeof(tok)), 0);
        {
                static const char head[] = "v1.k1.1f2e3d4c5b6a7980.386832052600700928.42.7.1800000060000.";
                ck_assert_msg(strncmp(tok, head, sizeof(head) - 1) == 0 &&
                              strlen(tok) == sizeof(head) - 1 + 43, "token %s", tok);
                /* known answer, computed independently:
                 * printf %s "<head without the last dot>" | openssl dgst -sha256 -hmac
                 * first-secret-0123456789abcdef -binary | base64 (url alphabet, no '=') */
                ck_assert_str_eq(tok + sizeof(head) - 1, "fGKqn-0StFm08aZ_mxq4QC4P-7YF2feuYTHCg1rVgaM");
        }
        ck_assert_int_eq(sk_qtoken_verify(k, tok, TOK.voucher_id, 42, now, &out), SK_QTOKEN_OK);
        ck_assert_str_eq(out.generation, TOK.generation);
        ck_assert_int_eq(out.position, 7);
        ck_assert_int_eq(out.expiry_ms, TOK.expiry_ms);
        /* expiry: at the instant of expiry it no longer buys */
        ck_assert_int_eq(sk_qtoken_verify(k, tok, TOK.voucher_id, 42, TOK.expiry_ms, NULL),
                         SK_QTOKEN_EXPIRED);
        /* another user, another voucher */
        ck_assert_int_eq(sk_qtoken_verify(k, tok, TOK.voucher_id, 43, now, NULL), SK_QTOKEN_WRONG);
        ck_assert_int_eq(sk_qtoken_verify(k, tok, TOK.voucher_id + 1, 42, now, NULL), SK_QTOKEN_WRONG);
        /* a field changed (the user id in the text) breaks the signature */
        snprintf(bad, sizeof(bad), "%s", tok);
        bad[strlen("v1.k1.1f2e3d4c5b6a7980.386832052600700928.4")] = '3';
        ck_assert_int_eq(sk_qtoken_verify(k, bad, TOK.voucher_id, 43, now, NULL), SK_QTOKEN_BAD_SIG);
        /* truncated anywhere: never OK */
        for (size_t n = 0; n < strlen(tok); n++) {
                snprintf(bad, sizeof(bad), "%.*s", (int)n, tok);
                ck_assert_int_ne(sk_qtoken_verify(k, bad, TOK.voucher_id, 42, now, NULL), SK_QTOKEN_OK);
        }
        ck_assert_int_eq(sk_qtoken_verify(k, NULL, TOK.voucher_id, 42, now, NULL), SK_QTOKEN_MALFORMED);
        ck_assert_int_eq(sk_qtoken_verify(k, "v1.k1.a.b", TOK.voucher_id, 42, now, NULL),
                         SK_QTOKEN_MALFORMED);
        sk_keyfile_set_free(k);
}
END_TEST

START_TEST(token_rotation)
{
        sk_keyfile_set_t *old = QKEYS(K1 "\n");
        sk_keyfile_set_t *both = QKEYS(K2 "\n" K1 "\n");  /* k2 promoted, k1 still verifies */
        sk_keyfile_set_t *only2 = QKEYS(K2 "\n");
        sk_keyfile_set_t *evil = QKEYS("k1 another-secret-0123456789abcdef\n");
        char tok[SK_QTOKEN_MAX + 1], tok2[SK_QTOKEN_MAX + 1];
        int64_t now = TOK.expiry_ms - 1;

        ck_assert_int_eq(sk_qtoken_sign(old, &TOK, tok, sizeof(tok)), 0);
        ck_assert_int_eq(sk_qtoken_verify(both, tok, TOK.voucher_id, 42, now, NULL), SK_QTOKEN_OK);
        ck_assert_int_eq(sk_qtoken_sign(both, &TOK, tok2, sizeof(tok2)), 0);
        ck_assert_ptr_nonnull(strstr(tok2, "v1.k2."));
        ck_assert_int_eq(sk_qtoken_verify(only2, tok2, TOK.voucher_id, 42, now, NULL), SK_QTOKEN_OK);
        /* the old key retired: its tokens no longer buy */
        ck_assert_int_eq(sk_qtoken_verify(only2, tok, TOK.voucher_id, 42, now, NULL),
                         SK_QTOKEN_UNKNOWN_KEY);
        /* same kid, another secret */
        ck_assert_int_eq(sk_qtoken_verify(evil, tok, TOK.voucher_id, 42, now, NULL), SK_QTOKEN_BAD_SIG);
        sk_keyfile_set_free(old);
        sk_keyfile_set_free(both);
        sk_keyfile_set_free(only2);
        sk_keyfile_set_free(evil);
}
END_TEST

/* More keys than a thread keeps contexts for (queue_sig.c), one kid for all: each token
 * carries the one-shot HMAC() signature of its own secret, verifies under it, and under
 * every other secret is a bad signature; three rounds, so kept contexts are reused and
 * replaced. @p arg unused; NULL, or a message naming the first failure. */
#define NKEYS 12
static void *sig_rounds(void *arg)
{
        static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        sk_keyfile_set_t *k[NKEYS];
        char text[128], secret[64], tok[SK_QTOKEN_MAX + 1], want[44];
        const char *fail = NULL;

        (void)arg;
        for (int i = 0; i < NKEYS; i++) {
                snprintf(text, sizeof(text), "k1 secret-%02d-0123456789abcdef\n", i);
                k[i] = QKEYS(text);
        }
        for (int round = 0; round < 3 && !fail; round++)
                for (int i = 0; i < NKEYS && !fail; i++) {
                        unsigned char mac[EVP_MAX_MD_SIZE];
                        unsigned int mac_len = 0;
                        size_t head, o = 0;

                        if (sk_qtoken_sign(k[i], &TOK, tok, sizeof(tok)) != 0) {
                                fail = "sign failed";
                                break;
                        }
                        head = strlen(tok) - 43;
                        snprintf(secret, sizeof(secret), "secret-%02d-0123456789abcdef", i);
                        HMAC(EVP_sha256(), secret, (int)strlen(secret), (const unsigned char *)tok,
                             head - 1, mac, &mac_len);
                        for (int b = 0; b < 33; b += 3) {
                                unsigned v = (unsigned)mac[b] << 16 |
                                             (unsigned)(b + 1 < 32 ? mac[b + 1] : 0) << 8 |
                                             (unsigned)(b + 2 < 32 ? mac[b + 2] : 0);
                                for (int c = 0; c < 4 && o < 43; c++)
                                        want[o++] = B64[(v >> (18 - 6 * c)) & 63];
                        }
                        want[43] = '\0';
                        if (mac_len != 32 || strcmp(tok + head, want) != 0)
                                fail = "signature differs from HMAC()";
                        for (int j = 0; j < NKEYS && !fail; j++)
                                if (sk_qtoken_verify(k[j], tok, TOK.voucher_id, 42, TOK.expiry_ms - 1, NULL) !=
                                    (i == j ? SK_QTOKEN_OK : SK_QTOKEN_BAD_SIG))
                                        fail = "verified under the wrong secret, or not under its own";
                }
        for (int i = 0; i < NKEYS; i++)
                sk_keyfile_set_free(k[i]);
        return (void *)fail;
}

START_TEST(kept_contexts_sign_as_hmac)
{
        pthread_t th[4];
        void *res;

        res = sig_rounds(NULL);
        ck_assert_msg(res == NULL, "one thread: %s", (const char *)res);
        for (int i = 0; i < 4; i++)
                ck_assert_int_eq(pthread_create(&th[i], NULL, sig_rounds, NULL), 0);
        for (int i = 0; i < 4; i++) {
                ck_assert_int_eq(pthread_join(th[i], &res), 0);
                ck_assert_msg(res == NULL, "thread %d: %s", i, (const char *)res);
        }
}
END_TEST

START_TEST(keys_file_rules)
{
        char err[256];

        ck_assert_ptr_null(sk_keyfile_set_parse(&sk_qtoken_keyfile, "k1 short\n", 9, err, sizeof(err)));
        ck_assert_ptr_null(strstr(err, "short"));        /* never the secret */
        ck_assert_ptr_null(sk_keyfile_set_parse(&sk_qtoken_keyfile, "# none\n", 7, err, sizeof(err)));
        ck_assert_ptr_null(sk_keyfile_set_parse(&sk_qtoken_keyfile, "nokid-0123456789abcdef\n", 23, err, sizeof(err)));
        ck_assert_ptr_null(sk_keyfile_set_parse(&sk_qtoken_keyfile, K1 "\n" K1 "\n", strlen(K1) * 2 + 2, err, sizeof(err)));
        ck_assert_ptr_nonnull(strstr(err, "twice"));
        sk_keyfile_set_free(NULL);
        ck_assert_ptr_null(sk_keyfile_set_ref(NULL));
}
END_TEST

START_TEST(window_arithmetic)
{
        sk_queue_advance_in_t in = { .up_to = 0, .members = 100, .units_left = 5,
                                     .overbook_pct = 125, .now_ms = 100000, .open = 1 };
        int64_t mark;

        ck_assert_int_eq(sk_queue_window(5, 125), 7);    /* ceil(6.25) */
        ck_assert_int_eq(sk_queue_window(4, 125), 5);
        ck_assert_int_eq(sk_queue_window(5, 100), 5);
        ck_assert_int_eq(sk_queue_window(0, 125), 0);
        ck_assert_int_eq(sk_queue_window(-1, 125), 0);   /* no reading yet */
        ck_assert_int_eq(sk_queue_admit_count(&in, NULL), 7);
        in.up_to = 7;
        ck_assert_int_eq(sk_queue_admit_count(&in, NULL), 0);   /* window full */
        in.used = 2;                                           /* 2 bought: 3 units left */
        in.units_left = 3;
        ck_assert_int_eq(sk_queue_admit_count(&in, NULL), 0);   /* live 5 > window 4 */
        in.expired = 3;                                        /* live 2 < window 4 */
        ck_assert_int_eq(sk_queue_admit_count(&in, NULL), 2);
        in.members = 8;                                        /* only one member waits */
        ck_assert_int_eq(sk_queue_admit_count(&in, NULL), 1);
        in.open = 0;                                           /* not begun / closed / ended */
        ck_assert_int_eq(sk_queue_admit_count(&in, NULL), 0);
        /* rate cap: a one-second bucket */
        in = (sk_queue_advance_in_t){ .members = 1000, .units_left = 1000, .overbook_pct = 100,
                                      .rate = 10, .now_ms = 50000, .open = 1 };
        ck_assert_int_eq(sk_queue_admit_count(&in, &mark), 10);
        ck_assert_int_eq(mark, 50000);
        in.up_to = 10;
        in.rate_at_ms = mark;
        ck_assert_int_eq(sk_queue_admit_count(&in, &mark), 0);
        in.now_ms = 50250;
        ck_assert_int_eq(sk_queue_admit_count(&in, &mark), 2);
        ck_assert_int_eq(mark, 50200);
}
END_TEST

START_TEST(poll_after_bounds)
{
        uint64_t rng = 12345;   /* fixed seed: tests only */
        int64_t ahead[] = { 0, 1, 10, 100, 1000, 100000, INT64_MAX / 2 };

        for (size_t i = 0; i < sizeof(ahead) / sizeof(ahead[0]); i++)
                for (int j = 0; j < 1000; j++) {
                        int ms = sk_queue_poll_after_ms(ahead[i], 7, &rng);
                        ck_assert_int_ge(ms, 800);
                        ck_assert_int_le(ms, 36000);
                }
        /* near the front: <= 1.2 s; far back: >= 24 s */
        for (int j = 0; j < 1000; j++) {
                ck_assert_int_le(sk_queue_poll_after_ms(1, 100, &rng), 1200);
                ck_assert_int_ge(sk_queue_poll_after_ms(1000000, 1, &rng), 24000);
        }
        /* pre-queue: spread over [begin, begin + members / rate] */
        for (int j = 0; j < 1000; j++) {
                int64_t ms = sk_queue_prequeue_poll_ms(0, 10000, 20000, 20000, &rng);
                ck_assert_int_ge(ms, 10000);
                ck_assert_int_le(ms, 11000);
        }
        ck_assert_int_eq(sk_queue_prequeue_poll_ms(10000, 10000, 0, 20000, &rng), 1000);
        for (int j = 0; j < 1000; j++) {
                int64_t ms = sk_queue_not_open_retry_ms(0, 5000, &rng);
                ck_assert_int_ge(ms, 5000);
                ck_assert_int_le(ms, 65000);
        }
}
END_TEST

START_TEST(title_rule)
{
        char err[128], long_title[4 * 130];

        ck_assert_int_eq(sk_queue_title_check("", err, sizeof(err)), 0);
        ck_assert_int_eq(sk_queue_title_check("Café \xE2\x98\x95 sale", err, sizeof(err)), 0);
        ck_assert_int_eq(sk_queue_title_check("a\tb", err, sizeof(err)), -1);
        ck_assert_int_eq(sk_queue_title_check("a\xC2\x85" "b", err, sizeof(err)), -1);   /* C1 NEL */
        ck_assert_int_eq(sk_queue_title_check("\xC0\xAF", err, sizeof(err)), -1);        /* overlong */
        ck_assert_int_eq(sk_queue_title_check("\xED\xA0\x80", err, sizeof(err)), -1);    /* surrogate */
        ck_assert_int_eq(sk_queue_title_check("\xE2\x98", err, sizeof(err)), -1);        /* truncated */
        long_title[0] = '\0';
        for (int i = 0; i < 128; i++)
                strcat(long_title, "\xE2\x98\x95");
        ck_assert_int_eq(sk_queue_title_check(long_title, err, sizeof(err)), 0);
        strcat(long_title, "x");
        ck_assert_int_eq(sk_queue_title_check(long_title, err, sizeof(err)), -1);
}
END_TEST

/* The rank (0-based) of joiner @p who among @p m members ordered by their keys. */
static int rank_of(const uint64_t *key, int m, int who)
{
        int r = 0;

        for (int i = 0; i < m; i++)
                if (key[i] < key[who])
                        r++;
        return r;
}

START_TEST(prequeue_order_is_uniform)
{
        enum { M = 10, TRIALS = 20000 };
        long first[M] = { 0 }, last[M] = { 0 };
        double e = (double)TRIALS / M, c1 = 0, c2 = 0;

        for (int t = 0; t < TRIALS; t++) {
                uint64_t key[M];
                for (int i = 0; i < M; i++) {
                        ck_assert_int_eq(sk_queue_prekey_draw(&key[i]), 0);
                        ck_assert(key[i] < SK_QUEUE_PREKEY_LIMIT);
                }
                first[rank_of(key, M, 0)]++;
                last[rank_of(key, M, M - 1)]++;
        }
        for (int i = 0; i < M; i++) {
                c1 += (first[i] - e) * (first[i] - e) / e;
                c2 += (last[i] - e) * (last[i] - e) / e;
        }
        /* χ², 9 degrees of freedom: P(χ² > 45) < 1e-6, so a fair draw fails practically never,
         * while joining early (or late) helping by a few percent fails it */
        ck_assert_msg(c1 < 45.0, "first joiner's rank not uniform: chi2 = %.1f", c1);
        ck_assert_msg(c2 < 45.0, "last joiner's rank not uniform: chi2 = %.1f", c2);
}
END_TEST

START_TEST(member_state)
{
        sk_qroom_view_t v = { .tag = SK_QVIEW_MEMBER, .now_ms = 100000, .begun = 0, .position = 0,
                              .up_to = 0, .admit_ms = -1, .units_left = -1 };
        int64_t until = 0;

        ck_assert_int_eq(sk_qroom_state(&v, 60, 200000, &until), SK_QSTATE_PREQUEUE);
        v.begun = 1;
        v.position = 3;
        v.units_left = 2;
        ck_assert_int_eq(sk_qroom_state(&v, 60, 200000, &until), SK_QSTATE_WAITING);
        v.units_left = 0;
        ck_assert_int_eq(sk_qroom_state(&v, 60, 200000, &until), SK_QSTATE_SOLD_OUT);
        v.up_to = 3;
        v.admit_ms = 90000;
        ck_assert_int_eq(sk_qroom_state(&v, 60, 200000, &until), SK_QSTATE_ADMITTED);
        ck_assert_int_eq(until, 150000);
        v.now_ms = 150000;
        ck_assert_int_eq(sk_qroom_state(&v, 60, 200000, &until), SK_QSTATE_EXPIRED);
        v.used = 1;
        ck_assert_int_eq(sk_qroom_state(&v, 60, 200000, &until), SK_QSTATE_USED);
        v.now_ms = 200000;
        ck_assert_int_eq(sk_qroom_state(&v, 60, 200000, &until), SK_QSTATE_ENDED);
        v.tag = SK_QVIEW_NOTMEMBER;
        ck_assert_int_eq(sk_qroom_state(&v, 60, 200000, &until), SK_QSTATE_NONE);
        ck_assert_str_eq(sk_qstate_name(SK_QSTATE_SOLD_OUT), "sold_out");
}
END_TEST

static Suite *queue_suite(void)
{
        Suite *s = suite_create("queue");
        TCase *tc = tcase_create("queue");

        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, token_sign_verify);
        tcase_add_test(tc, token_rotation);
        tcase_add_test(tc, kept_contexts_sign_as_hmac);
        tcase_add_test(tc, keys_file_rules);
        tcase_add_test(tc, window_arithmetic);
        tcase_add_test(tc, poll_after_bounds);
        tcase_add_test(tc, title_rule);
        tcase_add_test(tc, prequeue_order_is_uniform);
        tcase_add_test(tc, member_state);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return sk_test_run(queue_suite());
}
