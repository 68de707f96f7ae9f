/* check_keys.c: exact Redis key and field names (DESIGN.md 2, 4). */
#include <string.h>

#include "sk_test.h"
#include "sk/crc16.h"
#include "sk/keys.h"

START_TEST(voucher_keys)
{
        char buf[SK_KEY_MAX];

        ck_assert_uint_eq(sk_key_voucher(buf, "seckill", 42, 0, SK_KEY_META), strlen("seckill:{v:42:0}:meta"));
        ck_assert_str_eq(buf, "seckill:{v:42:0}:meta");
        sk_key_voucher(buf, "seckill", 42, 3, SK_KEY_STOCK);
        ck_assert_str_eq(buf, "seckill:{v:42:3}:stock");
        sk_key_voucher(buf, "seckill", 42, 15, SK_KEY_USERS);
        ck_assert_str_eq(buf, "seckill:{v:42:15}:users");
        sk_key_voucher(buf, "skt_x_1", INT64_C(9223372036854775807), 0, SK_KEY_TRACE);
        ck_assert_str_eq(buf, "skt_x_1:{v:9223372036854775807:0}:trace");
}
END_TEST

/* CRC-16/XMODEM of the decimal string mod n (DESIGN.md 4), checked against
 * sk_crc16 directly and against precomputed values. */
START_TEST(home_bucket)
{
        ck_assert_int_eq(sk_home_bucket(123456789, 1), 0);
        ck_assert_int_eq(sk_home_bucket(123456789, 0), 0);
        ck_assert_int_eq(sk_home_bucket(123456789, -3), 0);
        /* crc16("123456789") = 0x31C3 = 12739 */
        ck_assert_int_eq(sk_home_bucket(123456789, 16), 12739 % 16);
        ck_assert_int_eq(sk_home_bucket(123456789, 7), 12739 % 7);
        ck_assert_int_eq(sk_home_bucket(1, 4), sk_crc16("1", 1) % 4);
        ck_assert_int_eq(sk_home_bucket(INT64_C(9223372036854775807), 16),
                         sk_crc16("9223372036854775807", 19) % 16);
        for (int64_t u = 1; u < 2000; u++) {
                int h = sk_home_bucket(u, 5);
                ck_assert(h >= 0 && h < 5);
        }
}
END_TEST

/* Every bucket gets some users (spread, not a constant). */
START_TEST(home_bucket_spreads)
{
        int seen[16] = { 0 };

        for (int64_t u = 1; u <= 1000; u++)
                seen[sk_home_bucket(u, 16)]++;
        for (int b = 0; b < 16; b++)
                ck_assert_int_gt(seen[b], 20);
}
END_TEST

START_TEST(order_keys)
{
        char buf[SK_KEY_MAX];

        ck_assert_uint_eq(sk_key_order(buf, "seckill", 7), strlen("seckill:order:7"));
        ck_assert_str_eq(buf, "seckill:order:7");
        sk_key_order(buf, "seckill", INT64_C(1990653204235288577));
        ck_assert_str_eq(buf, "seckill:order:1990653204235288577");
}
END_TEST

START_TEST(trace_fields)
{
        char buf[SK_KEY_MAX];

        ck_assert_uint_eq(sk_field_trace(buf, 5, 0), 1);
        ck_assert_str_eq(buf, "5");
        ck_assert_uint_eq(sk_field_trace(buf, 5, 'r'), 3);
        ck_assert_str_eq(buf, "5:r");
        ck_assert_uint_eq(sk_field_trace(buf, 5, 'c'), 3);
        ck_assert_str_eq(buf, "5:c");
        sk_field_trace(buf, INT64_C(1990653204235288577), 'r');
        ck_assert_str_eq(buf, "1990653204235288577:r");
}
END_TEST

START_TEST(long_prefix_truncated_not_overflowed)
{
        char buf[SK_KEY_MAX + 8];
        char prefix[400];
        size_t n;

        memset(prefix, 'a', sizeof(prefix) - 1);
        prefix[sizeof(prefix) - 1] = '\0';
        memset(buf, 'Z', sizeof(buf));
        n = sk_key_voucher(buf, prefix, 1, 0, SK_KEY_META);
        ck_assert_uint_eq(n, SK_KEY_MAX - 1);
        ck_assert_uint_eq(strlen(buf), SK_KEY_MAX - 1);
        ck_assert_int_eq(buf[SK_KEY_MAX], 'Z');
}
END_TEST

/* sk_key_purchase gives the bytes of the single-key functions, for a short prefix (one
 * snprintf) and for a prefix too long for that (the single-key path, truncated alike). */
START_TEST(purchase_keys_match_single_keys)
{
        const char *prefixes[2] = { "seckill", NULL };
        char longp[SK_KEY_MAX + 20];

        memset(longp, 'p', sizeof(longp) - 1);
        longp[sizeof(longp) - 1] = '\0';
        prefixes[1] = longp;
        for (int p = 0; p < 2; p++) {
                char k[4][SK_KEY_MAX], kf[SK_KEY_MAX], want[SK_KEY_MAX];
                char *const kv[4] = { k[0], k[1], k[2], k[3] };

                sk_key_purchase(kv, kf, prefixes[p], 7253912345678901234LL, 3,
                                386871492329082881LL, "386871492329082881");
                for (int i = 0; i < 4; i++) {
                        sk_key_voucher(want, prefixes[p], 7253912345678901234LL, 3, (sk_key_kind_t)i);
                        ck_assert_str_eq(k[i], want);
                }
                sk_key_fence(want, prefixes[p], 7253912345678901234LL, 3, 386871492329082881LL);
                ck_assert_str_eq(kf, want);
        }
}
END_TEST


static Suite *keys_suite(void)
{
        Suite *s = suite_create("keys");
        TCase *tc = tcase_create("keys");

        tcase_add_test(tc, voucher_keys);
        tcase_add_test(tc, home_bucket);
        tcase_add_test(tc, home_bucket_spreads);
        tcase_add_test(tc, order_keys);
        tcase_add_test(tc, trace_fields);
        tcase_add_test(tc, long_prefix_truncated_not_overflowed);
        tcase_add_test(tc, purchase_keys_match_single_keys);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return sk_test_run(keys_suite());
}
