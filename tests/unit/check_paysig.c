/* check_paysig.c: sk/paysig.h, the payment webhook signature of DESIGN.md 15: the
 * secrets file (comments, trimming, lengths, count), HMAC-SHA256 over t "." body against
 * an independent known answer (openssl dgst), several v1= with any
 * matching, t tolerance, malformed headers, the raw body. No network. */
#include <stdio.h>
#include <string.h>

#include "sk_test.h"
#include "sk/paysig.h"

#define SECRET "whsec-0123456789abcdef"
#define PKEYS(text) sk_test_keys(&sk_paysig_keyfile, (text))

START_TEST(keys_file_rules)
{
        char err[256];
        sk_keyfile_set_t *k = PKEYS("# rotation\n\n" SECRET "  \r\nsecond-secret-0123456789\n");

        ck_assert_uint_eq(sk_keyfile_set_count(k), 2);
        /* Reference counted: a verification's reference outlives the holder's. */
        ck_assert_ptr_eq(sk_keyfile_set_ref(k), k);
        sk_keyfile_set_free(k);
        ck_assert_uint_eq(sk_keyfile_set_count(k), 2);
        sk_keyfile_set_free(k);
        ck_assert_ptr_null(sk_keyfile_set_ref(NULL));
        ck_assert_ptr_null(sk_keyfile_set_parse(&sk_paysig_keyfile, "short\n", 6, err, sizeof(err)));
        ck_assert_ptr_nonnull(strstr(err, "line 1"));
        ck_assert_ptr_null(sk_keyfile_set_parse(&sk_paysig_keyfile, "# only a comment\n\n", 18, err, sizeof(err)));
        ck_assert_ptr_null(sk_keyfile_set_parse(&sk_paysig_keyfile, "", 0, err, sizeof(err)));
        sk_keyfile_set_free(NULL);
}
END_TEST

START_TEST(sign_known_answer)
{
        /* The known answer, computed once by openssl(1), an independent implementation:
         * printf '1700000000.{"a":"1"}' | openssl dgst -sha256 -hmac whsec-0123456789abcdef */
        char hex[65];

        ck_assert_int_eq(sk_paysig_sign(SECRET, strlen(SECRET), 1700000000, "{\"a\":\"1\"}", 9, hex), 0);
        ck_assert_str_eq(hex, "9c64ad905a41a14681877d5899a1dab9ae4bbd387fcc3085e2e6a3ac61067801");
}
END_TEST

START_TEST(verify_rules)
{
        sk_keyfile_set_t *k = PKEYS(SECRET "\n");
        const char *body = "{\"orderId\":\"1\"}", *why = NULL;
        char hex[65], other[65], hdr[400];
        int64_t now = 1700000000;

        ck_assert_int_eq(sk_paysig_sign(SECRET, strlen(SECRET), now, body, strlen(body), hex), 0);
        ck_assert_int_eq(sk_paysig_sign("not-the-secret-0123", 19, now, body, strlen(body), other), 0);
        snprintf(hdr, sizeof(hdr), "t=%lld,v1=%s", (long long)now, hex);
        ck_assert_int_eq(sk_paysig_verify(k, hdr, body, strlen(body), now, 300, &why), SK_PAYSIG_OK);
        /* the raw body: one byte more or changed is refused */
        ck_assert_int_eq(sk_paysig_verify(k, hdr, body, strlen(body) - 1, now, 300, &why), SK_PAYSIG_BAD);
        /* tolerance: 300 s either way, not 301 */
        ck_assert_int_eq(sk_paysig_verify(k, hdr, body, strlen(body), now + 300, 300, &why), SK_PAYSIG_OK);
        ck_assert_int_eq(sk_paysig_verify(k, hdr, body, strlen(body), now + 301, 300, &why), SK_PAYSIG_STALE);
        ck_assert_int_eq(sk_paysig_verify(k, hdr, body, strlen(body), now - 301, 300, &why), SK_PAYSIG_STALE);
        /* several v1 (any may match), spaces, unknown schemes ignored */
        snprintf(hdr, sizeof(hdr), " t=%lld , v0=xyz, v1=%s ,v1=%s", (long long)now, other, hex);
        ck_assert_int_eq(sk_paysig_verify(k, hdr, body, strlen(body), now, 300, &why), SK_PAYSIG_OK);
        snprintf(hdr, sizeof(hdr), "t=%lld,v1=%s", (long long)now, other);
        ck_assert_int_eq(sk_paysig_verify(k, hdr, body, strlen(body), now, 300, &why), SK_PAYSIG_BAD);
        /* upper-case hex is the same MAC */
        for (char *p = hex; *p; p++)
                if (*p >= 'a' && *p <= 'f')
                        *p = (char)(*p - 'a' + 'A');
        snprintf(hdr, sizeof(hdr), "t=%lld,v1=%s", (long long)now, hex);
        ck_assert_int_eq(sk_paysig_verify(k, hdr, body, strlen(body), now, 300, &why), SK_PAYSIG_OK);
        /* malformed */
        ck_assert_int_eq(sk_paysig_verify(k, NULL, body, 1, now, 300, &why), SK_PAYSIG_MALFORMED);
        ck_assert_int_eq(sk_paysig_verify(k, "", body, 1, now, 300, &why), SK_PAYSIG_MALFORMED);
        ck_assert_int_eq(sk_paysig_verify(k, "t=1700000000", body, 1, now, 300, &why), SK_PAYSIG_MALFORMED);
        ck_assert_int_eq(sk_paysig_verify(k, "v1=00", body, 1, now, 300, &why), SK_PAYSIG_MALFORMED);
        ck_assert_int_eq(sk_paysig_verify(k, "t=01700000000,v1=00", body, 1, now, 300, &why),
                         SK_PAYSIG_MALFORMED);
        ck_assert_int_eq(sk_paysig_verify(k, "t=-5,v1=00", body, 1, now, 300, &why), SK_PAYSIG_MALFORMED);
        ck_assert_int_eq(sk_paysig_verify(k, "t=1,t=2,v1=00", body, 1, now, 300, &why), SK_PAYSIG_MALFORMED);
        ck_assert_int_eq(sk_paysig_verify(k, "garbage", body, 1, now, 300, &why), SK_PAYSIG_MALFORMED);
        /* no keys: never OK */
        snprintf(hdr, sizeof(hdr), "t=%lld,v1=%s", (long long)now, hex);
        ck_assert_int_eq(sk_paysig_verify(NULL, hdr, body, strlen(body), now, 300, &why), SK_PAYSIG_BAD);
        sk_keyfile_set_free(k);
}
END_TEST

static Suite *paysig_suite(void)
{
        Suite *s = suite_create("paysig");
        TCase *tc = tcase_create("paysig");

        tcase_add_test(tc, keys_file_rules);
        tcase_add_test(tc, sign_known_answer);
        tcase_add_test(tc, verify_rules);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return sk_test_run(paysig_suite());
}
