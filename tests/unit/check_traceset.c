/* check_traceset.c: the pure parts of sk/traceset.h (no network): the claim-record
 * parser of lua/claim.lua's T:c format and the in-memory trace index (find/add across
 * rehashes, no duplicates). */
#include <stdlib.h>
#include "sk_test.h"
#include "sk/traceset.h"

START_TEST(claim_parse_full_record)
{
        sk_claim_rec_t c;

        sk_claim_parse("{\"redrives\":3,\"failed\":2,\"consumed\":1,\"partition\":\"5\",\"offset\":\"9007199254740993\"}", &c);
        ck_assert_int_eq(c.redrives, 3);
        ck_assert_int_eq(c.failed, 2);
        ck_assert_int_eq(c.consumed, 1);
        ck_assert_int_eq(c.partition, 5);
        ck_assert_int_eq(c.offset, INT64_C(9007199254740993)); /* above 2^53: exact */
}
END_TEST

/* v5: claim.lua consume of a trace without a record writes only {"consumed":1}. */
START_TEST(claim_parse_short_record)
{
        sk_claim_rec_t c;

        sk_claim_parse("{\"consumed\":1}", &c);
        ck_assert_int_eq(c.redrives, 0);
        ck_assert_int_eq(c.failed, 0);
        ck_assert_int_eq(c.consumed, 1);
        ck_assert_int_eq(c.partition, -1);
        ck_assert_int_eq(c.offset, -1);
}
END_TEST

START_TEST(claim_parse_not_sent_yet)
{
        sk_claim_rec_t c;

        sk_claim_parse("{\"redrives\":1,\"failed\":0,\"consumed\":0,\"partition\":\"\",\"offset\":\"\"}", &c);
        ck_assert_int_eq(c.redrives, 1);
        ck_assert_int_eq(c.partition, -1);
        ck_assert_int_eq(c.offset, -1);
        sk_claim_parse("{\"redrives\":1,\"partition\":\"0\",\"offset\":\"0\"}", &c);
        ck_assert_int_eq(c.partition, 0);
        ck_assert_int_eq(c.offset, 0);
        ck_assert_int_eq(c.failed, 0);
}
END_TEST

START_TEST(claim_parse_missing_or_garbage)
{
        sk_claim_rec_t c;

        sk_claim_parse(NULL, &c);
        ck_assert_int_eq(c.redrives, 0);
        ck_assert_int_eq(c.partition, -1);
        sk_claim_parse("not json", &c);
        ck_assert_int_eq(c.failed, 0);
        ck_assert_int_eq(c.offset, -1);
        /* A partition without an offset is no re-drive record. */
        sk_claim_parse("{\"partition\":\"3\",\"offset\":\"x\"}", &c);
        ck_assert_int_eq(c.partition, -1);
        ck_assert_int_eq(c.offset, -1);
}
END_TEST

START_TEST(set_find_add_rehash)
{
        sk_traceset_t set;
        int64_t i;

        sk_traceset_init(&set);
        ck_assert_ptr_null(sk_traceset_get(&set, 42, 0));
        for (i = 1; i <= 20000; i++) {
                sk_trace_entry_t *e = sk_traceset_get(&set, i * 7919, 1);
                ck_assert_ptr_nonnull(e);
                ck_assert_int_eq(e->trace_id, i * 7919);
        }
        ck_assert_uint_eq(set.n, 20000);
        /* Finding again adds nothing. */
        for (i = 1; i <= 20000; i++)
                ck_assert_int_eq(sk_traceset_get(&set, i * 7919, 1)->trace_id, i * 7919);
        ck_assert_uint_eq(set.n, 20000);
        ck_assert_ptr_null(sk_traceset_get(&set, 7918, 0));
        ck_assert_ptr_null(sk_traceset_get(&set, INT64_MAX, 0));
        sk_traceset_free(&set);
        ck_assert_uint_eq(set.n, 0);
        sk_traceset_free(NULL);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("traceset");
        TCase *tc = tcase_create("claim");
        TCase *tc2 = tcase_create("index");

        tcase_add_test(tc, claim_parse_full_record);
        tcase_add_test(tc, claim_parse_short_record);
        tcase_add_test(tc, claim_parse_not_sent_yet);
        tcase_add_test(tc, claim_parse_missing_or_garbage);
        tcase_add_test(tc2, set_find_add_rehash);
        suite_add_tcase(s, tc);
        suite_add_tcase(s, tc2);
        return sk_test_run(s);
}
