/* check_fuzz_regressions.c: every crash found by the libFuzzer harnesses of tests/fuzz/
 * (bench/fuzz.sh) becomes a test here, with the input that found it.
 * No network; plain asserts, so they also fail (rather than crash) without ASan. */
#include <stdint.h>
#include <string.h>

#include "sk_test.h"
#include "sk/ids.h"
#include "sk/msg.h"
#include "sk/traceset.h"

/* fuzz_id_parse, crash 1 (heap-buffer-overflow in sk_id_format, ids.c): a negative id
 * with 19 digits formats as 20 characters plus the NUL, one byte more than the
 * documented buffer size SK_ID_STRLEN. Found with the 8-byte input
 * 0x8000000000000000 (INT64_MIN); any value <= -1000000000000000000 does it. Negative
 * ids are never valid, but sk_id_format documents that it prints them (for logs), and
 * a BIGINT column can hold one. */
START_TEST(id_format_negative_fits_buffer)
{
        static const int64_t vals[] = { INT64_MIN, INT64_MIN + 1, -1000000000000000000LL,
                                        -999999999999999999LL, -1, INT64_MAX };
        struct {
                char buf[SK_ID_STRLEN];
                char guard[8];
        } out;
        size_t i, n;

        for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
                memset(&out, 'G', sizeof(out));
                n = sk_id_format(vals[i], out.buf);
                ck_assert_msg(n < SK_ID_STRLEN, "value #%zu: %zu characters do not fit SK_ID_STRLEN %d",
                              i, n, SK_ID_STRLEN);
                ck_assert_msg(memcmp(out.guard, "GGGGGGGG", 8) == 0,
                              "value #%zu: sk_id_format wrote past SK_ID_STRLEN bytes", i);
                ck_assert_uint_eq(strlen(out.buf), n);
        }
}
END_TEST

/* fuzz_conf_parse, crash 2 (UBSan: signed integer overflow in json_numstr, traceset.c,
 * "999999999999999999 * 10 cannot be represented in type 'long'"): a claim record read
 * back from Redis whose "partition" or "offset" string has 19 digits above INT64_MAX.
 * Redis may hold anything (DESIGN.md 4: T:c is data, not code). Without a sanitizer the
 * wrapped value happens to be negative and is mapped to -1, so this test fails only in
 * the -DSK_SANITIZE=ON build (scripts/test.sh's sanitizer pass), where UBSan aborts. */
START_TEST(claim_parse_huge_numbers)
{
        static const char huge[] =
                "{\"redrives\":1,\"failed\":0,\"consumed\":1,"
                "\"partition\":\"9999999999999999999\",\"offset\":\"9999999999999999999\"}";
        static const char huge_offset[] =
                "{\"partition\":\"3\",\"offset\":\"9300000000000000000\"}";
        static const char max_offset[] =
                "{\"partition\":\"3\",\"offset\":\"9223372036854775807\"}";
        sk_claim_rec_t c;

        sk_claim_parse(huge, &c);
        ck_assert_int_eq(c.partition, -1);
        ck_assert_int_eq(c.offset, -1);
        ck_assert_int_eq(c.redrives, 1);
        ck_assert_int_eq(c.consumed, 1);
        sk_claim_parse(huge_offset, &c);
        ck_assert_int_eq(c.partition, -1);
        ck_assert_int_eq(c.offset, -1);
        sk_claim_parse(max_offset, &c);
        ck_assert_int_eq(c.partition, 3);
        ck_assert(c.offset == INT64_MAX);
}
END_TEST

/* The seeds of fuzz_msg_parse's corpus that probe the parser's edges: they must stay
 * clean rejections (or, for the first, a clean parse). Not crashes; kept so a change of
 * parser keeps the behaviour the fuzzer started from. */
START_TEST(msg_parse_fuzz_seeds)
{
        static const char ok[] =
                "{\"traceId\":\"385485010666258433\",\"orderId\":\"385485010666258432\","
                "\"userId\":\"1001\",\"voucherId\":\"385484893854892032\",\"beforeQty\":80,"
                "\"deductQty\":1,\"afterQty\":79,\"ts\":1795974171810}";
        static const char *const bad[] = {
                "{\"traceId\":\"1\",\"orderId\":\"2\",\"userId\":\"3\",\"voucherId\":\"4\",\"beforeQty\":1,"
                "\"deductQty\":1,\"afterQty\":0,\"ts\":0,\"traceId\":\"5\"}",
                "{\"traceId\":1,\"orderId\":\"2\",\"userId\":\"3\",\"voucherId\":\"4\",\"beforeQty\":1e300,"
                "\"deductQty\":1.5,\"afterQty\":-0,\"ts\":-1}",
                "{\"traceId\":\"1\",\"orderId\":\"2\",\"userId\":\"3\",\"voucherId\":\"4\",\"beforeQty\":"
                "9007199254740993,\"deductQty\":1,\"afterQty\":9007199254740992,\"ts\":0}",
                "[]", "{", "\"x\"", "nul",
        };
        sk_order_msg_t m;
        char errstr[128];
        size_t i;

        ck_assert_int_eq(sk_msg_parse(ok, strlen(ok), &m, errstr, sizeof(errstr)), SK_OK);
        ck_assert_int_eq(m.after_qty, 79);
        for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                errstr[0] = '\0';
                ck_assert_msg(sk_msg_parse(bad[i], strlen(bad[i]), &m, errstr, sizeof(errstr)) == SK_EINVAL,
                              "accepted bad seed #%zu", i);
                ck_assert_msg(errstr[0] != '\0', "no reason for bad seed #%zu", i);
        }
}
END_TEST

static Suite *fuzz_regressions_suite(void)
{
        Suite *s = suite_create("fuzz_regressions");
        TCase *tc = tcase_create("ids");

        tcase_add_test(tc, id_format_negative_fits_buffer);
        suite_add_tcase(s, tc);
        tc = tcase_create("claim");
        tcase_add_test(tc, claim_parse_huge_numbers);
        suite_add_tcase(s, tc);
        tc = tcase_create("msg");
        tcase_add_test(tc, msg_parse_fuzz_seeds);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return sk_test_run(fuzz_regressions_suite());
}
