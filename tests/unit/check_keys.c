/* check_keys.c: exact Redis key and field names (DESIGN.md 2, 4). */
#include <string.h>

#include "sk_test.h"
#include "sk/keys.h"

START_TEST(voucher_keys)
{
        char buf[SK_KEY_MAX];

        ck_assert_uint_eq(sk_key_voucher(buf, "seckill", 42, SK_KEY_META), strlen("seckill:{v:42}:meta"));
        ck_assert_str_eq(buf, "seckill:{v:42}:meta");
        sk_key_voucher(buf, "seckill", 42, SK_KEY_STOCK);
        ck_assert_str_eq(buf, "seckill:{v:42}:stock");
        sk_key_voucher(buf, "seckill", 42, SK_KEY_USERS);
        ck_assert_str_eq(buf, "seckill:{v:42}:users");
        sk_key_voucher(buf, "skt_x_1", INT64_C(9223372036854775807), SK_KEY_TRACE);
        ck_assert_str_eq(buf, "skt_x_1:{v:9223372036854775807}:trace");
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
        n = sk_key_voucher(buf, prefix, 1, SK_KEY_META);
        ck_assert_uint_eq(n, SK_KEY_MAX - 1);
        ck_assert_uint_eq(strlen(buf), SK_KEY_MAX - 1);
        ck_assert_int_eq(buf[SK_KEY_MAX], 'Z');
}
END_TEST

static Suite *keys_suite(void)
{
        Suite *s = suite_create("keys");
        TCase *tc = tcase_create("keys");

        tcase_add_test(tc, voucher_keys);
        tcase_add_test(tc, order_keys);
        tcase_add_test(tc, trace_fields);
        tcase_add_test(tc, long_prefix_truncated_not_overflowed);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return sk_test_run(keys_suite());
}
