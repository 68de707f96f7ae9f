/* check_msg.c: the order message codec (sk/msg.h): round trip, 64-bit ids preserved,
 * and every poison shape rejected with a reason. No network. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "sk/msg.h"

static sk_order_msg_t sample(void)
{
        sk_order_msg_t m = {
                .trace_id = 1990653204235288577LL,
                .order_id = 1990653204235288578LL,
                .user_id = 42,
                .voucher_id = INT64_MAX,
                .bucket = 3,
                .home = 15,
                .before_qty = 10,
                .deduct_qty = 1,
                .after_qty = 9,
                .ts_ms = 1764436869123LL,
        };
        return m;
}

static sk_err_t parse(const char *s, sk_order_msg_t *m, char *errstr, size_t n)
{
        return sk_msg_parse(s, strlen(s), m, errstr, n);
}

START_TEST(round_trip)
{
        sk_order_msg_t in = sample(), out;
        char buf[SK_MSG_MAX], errstr[256] = "";
        size_t len = sk_msg_format(&in, buf, sizeof(buf));

        ck_assert_uint_gt(len, 0);
        ck_assert_uint_eq(len, strlen(buf));
        ck_assert_int_eq(sk_msg_parse(buf, len, &out, errstr, sizeof(errstr)), SK_OK);
        ck_assert(memcmp(&in, &out, sizeof(in)) == 0);
}
END_TEST

START_TEST(format_is_canonical)
{
        sk_order_msg_t in = sample();
        char buf[SK_MSG_MAX];

        sk_msg_format(&in, buf, sizeof(buf));
        ck_assert_str_eq(buf,
                         "{\"traceId\":\"1990653204235288577\",\"orderId\":\"1990653204235288578\","
                         "\"userId\":\"42\",\"voucherId\":\"9223372036854775807\",\"bucket\":3,"
                         "\"home\":15,\"beforeQty\":10,"
                         "\"deductQty\":1,\"afterQty\":9,\"ts\":1764436869123}");
}
END_TEST

START_TEST(big_id_preserved)
{
        sk_order_msg_t m;
        char errstr[256] = "";
        const char *s = "{\"traceId\":\"1990653204235288577\",\"orderId\":\"9223372036854775807\","
                        "\"userId\":\"1990653204235288579\",\"voucherId\":\"1\",\"beforeQty\":1,"
                        "\"deductQty\":1,\"afterQty\":0,\"ts\":0,\"extra\":[1,2]}";

        ck_assert_int_eq(parse(s, &m, errstr, sizeof(errstr)), SK_OK);
        ck_assert(m.trace_id == 1990653204235288577LL);
        ck_assert(m.order_id == INT64_MAX);
        ck_assert(m.user_id == 1990653204235288579LL);
        ck_assert(m.voucher_id == 1);
        ck_assert(m.after_qty == 0);
        ck_assert_int_eq(m.bucket, 0); /* a message written before buckets: bucket 0 */
        ck_assert_int_eq(m.home, 0);
}
END_TEST

/* Each poison shape, with a fragment the reason must contain. */
static const struct {
        const char *json;
        const char *reason;
} poison[] = {
        { "", "empty" },
        { "not json", "JSON" },
        { "{\"traceId\":\"1\"", "JSON" },
        { "[1,2,3]", "object" },
        { "\"str\"", "object" },
        { "{}", "missing field traceId" },
        /* missing each field in turn */
        { "{\"orderId\":\"2\",\"userId\":\"3\",\"voucherId\":\"4\",\"beforeQty\":1,\"deductQty\":1,\"afterQty\":0,\"ts\":1}", "missing field traceId" },
        { "{\"traceId\":\"1\",\"userId\":\"3\",\"voucherId\":\"4\",\"beforeQty\":1,\"deductQty\":1,\"afterQty\":0,\"ts\":1}", "missing field orderId" },
        { "{\"traceId\":\"1\",\"orderId\":\"2\",\"voucherId\":\"4\",\"beforeQty\":1,\"deductQty\":1,\"afterQty\":0,\"ts\":1}", "missing field userId" },
        { "{\"traceId\":\"1\",\"orderId\":\"2\",\"userId\":\"3\",\"beforeQty\":1,\"deductQty\":1,\"afterQty\":0,\"ts\":1}", "missing field voucherId" },
        { "{\"traceId\":\"1\",\"orderId\":\"2\",\"userId\":\"3\",\"voucherId\":\"4\",\"deductQty\":1,\"afterQty\":0,\"ts\":1}", "missing field beforeQty" },
        { "{\"traceId\":\"1\",\"orderId\":\"2\",\"userId\":\"3\",\"voucherId\":\"4\",\"beforeQty\":1,\"afterQty\":0,\"ts\":1}", "missing field deductQty" },
        { "{\"traceId\":\"1\",\"orderId\":\"2\",\"userId\":\"3\",\"voucherId\":\"4\",\"beforeQty\":1,\"deductQty\":1,\"ts\":1}", "missing field afterQty" },
        { "{\"traceId\":\"1\",\"orderId\":\"2\",\"userId\":\"3\",\"voucherId\":\"4\",\"beforeQty\":1,\"deductQty\":1,\"afterQty\":0}", "missing field ts" },
        /* ids: numbers, non-canonical, out of range */
        { "{\"traceId\":1,\"orderId\":\"2\",\"userId\":\"3\",\"voucherId\":\"4\",\"beforeQty\":1,\"deductQty\":1,\"afterQty\":0,\"ts\":1}", "traceId is not a string" },
        { "{\"traceId\":\"01\",\"orderId\":\"2\",\"userId\":\"3\",\"voucherId\":\"4\",\"beforeQty\":1,\"deductQty\":1,\"afterQty\":0,\"ts\":1}", "traceId is not a canonical" },
        { "{\"traceId\":\"1\",\"orderId\":\"-2\",\"userId\":\"3\",\"voucherId\":\"4\",\"beforeQty\":1,\"deductQty\":1,\"afterQty\":0,\"ts\":1}", "orderId is not a canonical" },
        { "{\"traceId\":\"1\",\"orderId\":\"2\",\"userId\":\" 3\",\"voucherId\":\"4\",\"beforeQty\":1,\"deductQty\":1,\"afterQty\":0,\"ts\":1}", "userId is not a canonical" },
        { "{\"traceId\":\"1\",\"orderId\":\"2\",\"userId\":\"3\",\"voucherId\":\"9223372036854775808\",\"beforeQty\":1,\"deductQty\":1,\"afterQty\":0,\"ts\":1}", "voucherId is not a canonical" },
        { "{\"traceId\":\"0\",\"orderId\":\"2\",\"userId\":\"3\",\"voucherId\":\"4\",\"beforeQty\":1,\"deductQty\":1,\"afterQty\":0,\"ts\":1}", "traceId is not a canonical" },
        { "{\"traceId\":\"\",\"orderId\":\"2\",\"userId\":\"3\",\"voucherId\":\"4\",\"beforeQty\":1,\"deductQty\":1,\"afterQty\":0,\"ts\":1}", "traceId is not a canonical" },
        { "{\"traceId\":\"1e3\",\"orderId\":\"2\",\"userId\":\"3\",\"voucherId\":\"4\",\"beforeQty\":1,\"deductQty\":1,\"afterQty\":0,\"ts\":1}", "traceId is not a canonical" },
        { "{\"traceId\":null,\"orderId\":\"2\",\"userId\":\"3\",\"voucherId\":\"4\",\"beforeQty\":1,\"deductQty\":1,\"afterQty\":0,\"ts\":1}", "traceId is not a string" },
        /* quantities */
        { "{\"traceId\":\"1\",\"orderId\":\"2\",\"userId\":\"3\",\"voucherId\":\"4\",\"beforeQty\":\"1\",\"deductQty\":1,\"afterQty\":0,\"ts\":1}", "beforeQty is not a number" },
        { "{\"traceId\":\"1\",\"orderId\":\"2\",\"userId\":\"3\",\"voucherId\":\"4\",\"beforeQty\":1,\"deductQty\":1.5,\"afterQty\":0,\"ts\":1}", "deductQty is not an integer" },
        { "{\"traceId\":\"1\",\"orderId\":\"2\",\"userId\":\"3\",\"voucherId\":\"4\",\"beforeQty\":1,\"deductQty\":0,\"afterQty\":1,\"ts\":1}", "deductQty 0 < 1" },
        { "{\"traceId\":\"1\",\"orderId\":\"2\",\"userId\":\"3\",\"voucherId\":\"4\",\"beforeQty\":0,\"deductQty\":1,\"afterQty\":-1,\"ts\":1}", "negative quantity" },
        { "{\"traceId\":\"1\",\"orderId\":\"2\",\"userId\":\"3\",\"voucherId\":\"4\",\"beforeQty\":-1,\"deductQty\":1,\"afterQty\":-2,\"ts\":1}", "negative quantity" },
        { "{\"traceId\":\"1\",\"orderId\":\"2\",\"userId\":\"3\",\"voucherId\":\"4\",\"beforeQty\":5,\"deductQty\":1,\"afterQty\":3,\"ts\":1}", "afterQty 3 != beforeQty 5 - deductQty 1" },
        { "{\"traceId\":\"1\",\"orderId\":\"2\",\"userId\":\"3\",\"voucherId\":\"4\",\"beforeQty\":1e300,\"deductQty\":1,\"afterQty\":0,\"ts\":1}", "beforeQty is out of range" },
        { "{\"traceId\":\"1\",\"orderId\":\"2\",\"userId\":\"3\",\"voucherId\":\"4\",\"beforeQty\":9007199254740993,\"deductQty\":1,\"afterQty\":0,\"ts\":1}", "beforeQty is out of range" },
        { "{\"traceId\":\"1\",\"orderId\":\"2\",\"userId\":\"3\",\"voucherId\":\"4\",\"beforeQty\":1,\"deductQty\":1,\"afterQty\":0,\"ts\":-5}", "negative ts" },
        { "{\"traceId\":\"1\",\"orderId\":\"2\",\"userId\":\"3\",\"voucherId\":\"4\",\"beforeQty\":1,\"deductQty\":1,\"afterQty\":0,\"ts\":true}", "ts is not a number" },
        /* bucket and home (optional, 0..15) */
        { "{\"traceId\":\"1\",\"orderId\":\"2\",\"userId\":\"3\",\"voucherId\":\"4\",\"bucket\":16,\"beforeQty\":1,\"deductQty\":1,\"afterQty\":0,\"ts\":1}", "bucket 16 outside 0..15" },
        { "{\"traceId\":\"1\",\"orderId\":\"2\",\"userId\":\"3\",\"voucherId\":\"4\",\"home\":-1,\"beforeQty\":1,\"deductQty\":1,\"afterQty\":0,\"ts\":1}", "home -1 outside 0..15" },
        { "{\"traceId\":\"1\",\"orderId\":\"2\",\"userId\":\"3\",\"voucherId\":\"4\",\"bucket\":\"1\",\"beforeQty\":1,\"deductQty\":1,\"afterQty\":0,\"ts\":1}", "bucket is not a number" },
        { "{\"traceId\":\"1\",\"orderId\":\"2\",\"userId\":\"3\",\"voucherId\":\"4\",\"bucket\":1,\"bucket\":2,\"beforeQty\":1,\"deductQty\":1,\"afterQty\":0,\"ts\":1}", "bucket given 2 times" },
        /* ambiguity */
        { "{\"traceId\":\"1\\u00002\",\"orderId\":\"2\",\"userId\":\"3\",\"voucherId\":\"4\",\"beforeQty\":1,\"deductQty\":1,\"afterQty\":0,\"ts\":1}", "NUL escape" },
        { "{\"traceId\":\"1\",\"traceId\":\"7\",\"orderId\":\"2\",\"userId\":\"3\",\"voucherId\":\"4\",\"beforeQty\":1,\"deductQty\":1,\"afterQty\":0,\"ts\":1}", "traceId given 2 times" },
};

START_TEST(poison_rejected)
{
        sk_order_msg_t m = sample(), before = sample();
        char errstr[256] = "";

        ck_assert_int_eq(parse(poison[_i].json, &m, errstr, sizeof(errstr)), SK_EINVAL);
        ck_assert_msg(strstr(errstr, poison[_i].reason) != NULL,
                      "case %d: reason \"%s\" lacks \"%s\"", _i, errstr, poison[_i].reason);
        ck_assert(memcmp(&m, &before, sizeof(m)) == 0); /* output untouched */
}
END_TEST

START_TEST(length_is_respected)
{
        sk_order_msg_t in = sample(), out;
        char buf[SK_MSG_MAX + 8], errstr[256] = "";
        size_t len = sk_msg_format(&in, buf, sizeof(buf));

        /* Trailing bytes beyond len are not part of the message. */
        memcpy(buf + len, "garbage", 8);
        ck_assert_int_eq(sk_msg_parse(buf, len, &out, errstr, sizeof(errstr)), SK_OK);
        /* A prefix is not a message. */
        ck_assert_int_eq(sk_msg_parse(buf, len - 1, &out, errstr, sizeof(errstr)), SK_EINVAL);
        ck_assert_int_eq(sk_msg_parse(NULL, 0, &out, errstr, sizeof(errstr)), SK_EINVAL);
}
END_TEST

START_TEST(format_truncates_safely)
{
        sk_order_msg_t in = sample();
        char buf[16];
        size_t len = sk_msg_format(&in, buf, sizeof(buf));

        ck_assert_uint_eq(len, sizeof(buf) - 1);
        ck_assert_uint_eq(strlen(buf), sizeof(buf) - 1);
}
END_TEST

static Suite *msg_suite(void)
{
        Suite *s = suite_create("msg");
        TCase *tc;

        tc = tcase_create("round_trip");
        tcase_add_test(tc, round_trip);
        tcase_add_test(tc, format_is_canonical);
        tcase_add_test(tc, big_id_preserved);
        tcase_add_test(tc, length_is_respected);
        tcase_add_test(tc, format_truncates_safely);
        suite_add_tcase(s, tc);

        tc = tcase_create("poison");
        tcase_add_loop_test(tc, poison_rejected, 0, (int)(sizeof(poison) / sizeof(poison[0])));
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        SRunner *sr = srunner_create(msg_suite());
        int failed;

        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
