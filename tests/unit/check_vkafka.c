/* check_vkafka.c: sk_key_partition and sk_voucher_partitions (sk/vkafka.h, DESIGN.md 5)
 * against values of the Java client (org.apache.kafka.common.utils.Utils:
 * toPositive(murmur2(key bytes)) % n, kafka-clients 3.9.1), which is what librdkafka's
 * murmur2_random partitioner must give for a keyed message. No network. */
#include <string.h>
#include "sk_test.h"
#include "sk/vkafka.h"

static int32_t part(const char *key, int32_t n)
{
        return sk_key_partition(key, strlen(key), n);
}

START_TEST(java_client_values)
{
        static const struct { const char *key; int32_t p6, p16, p100; } v[] = {
                { "1", 3, 15, 59 },
                { "42", 4, 12, 72 },
                { "9223372036854775807", 3, 13, 41 },
                { "1234567890123456789", 2, 8, 88 },
                { "1234567890123456789:0", 2, 10, 14 },
                { "1234567890123456789:15", 2, 8, 60 },
                { "kafka", 4, 4, 80 },
                { "seckill", 2, 2, 90 },
        };
        for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
                ck_assert_msg(part(v[i].key, 6) == v[i].p6, "%s %% 6", v[i].key);
                ck_assert_msg(part(v[i].key, 16) == v[i].p16, "%s %% 16", v[i].key);
                ck_assert_msg(part(v[i].key, 100) == v[i].p100, "%s %% 100", v[i].key);
        }
        ck_assert_int_eq(part("1", 1), 0);
        ck_assert_int_eq(sk_key_partition(NULL, 0, 6), 0);
        ck_assert_int_eq(sk_key_partition("1", 1, 0), 0);
}
END_TEST

START_TEST(voucher_partitions)
{
        int32_t out[SK_VKAFKA_MAXPARTS];
        size_t n;

        /* "1234567890123456789" -> 8, ":0" -> 10 of 16 partitions. */
        n = sk_voucher_partitions(INT64_C(1234567890123456789), 1, 16, out);
        ck_assert_uint_eq(n, 2);
        ck_assert_int_eq(out[0], 8);
        ck_assert_int_eq(out[1], 10);
        /* Of 6 partitions both keys land on 2: one partition. */
        n = sk_voucher_partitions(INT64_C(1234567890123456789), 1, 6, out);
        ck_assert_uint_eq(n, 1);
        ck_assert_int_eq(out[0], 2);
        /* 16 buckets over 100 partitions: distinct, ascending, in range. */
        n = sk_voucher_partitions(INT64_C(1234567890123456789), 16, 100, out);
        ck_assert_uint_ge(n, 2);
        ck_assert_uint_le(n, SK_VKAFKA_MAXPARTS);
        for (size_t i = 0; i < n; i++) {
                ck_assert_int_lt(out[i], 100);
                if (i)
                        ck_assert_int_lt(out[i - 1], out[i]);
        }
        /* Bucket counts out of range are clamped, never overflow the output. */
        n = sk_voucher_partitions(42, 1000, 1000, out);
        ck_assert_uint_le(n, SK_VKAFKA_MAXPARTS);
        n = sk_voucher_partitions(42, 0, 6, out);
        ck_assert_uint_eq(n, part("42", 6) == part("42:0", 6) ? 1 : 2);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("vkafka");
        TCase *tc = tcase_create("partition");

        tcase_add_test(tc, java_client_values);
        tcase_add_test(tc, voucher_partitions);
        suite_add_tcase(s, tc);
        return sk_test_run(s);
}
