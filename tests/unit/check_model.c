/* check_model.c: the model constants of sk/model.h: each stored code's SQL spelling
 * (SK_SQL_*, pasted into SQL text) is the number of its C enum constant, and the
 * business codes keep the numbers of DESIGN.md 3. */
#include <stdlib.h>

#include "sk_test.h"
#include "sk/model.h"

static long sql_num(const char *s)
{
        char *end;
        long v = strtol(s, &end, 10);

        ck_assert_msg(end != s && *end == '\0', "not a number: \"%s\"", s);
        return v;
}

START_TEST(sql_spellings_match_enums)
{
        ck_assert_int_eq(sql_num(SK_SQL_ORDER_UNPAID), SK_ORDER_UNPAID);
        ck_assert_int_eq(sql_num(SK_SQL_ORDER_PAID), SK_ORDER_PAID);
        ck_assert_int_eq(sql_num(SK_SQL_ORDER_CANCELLED), SK_ORDER_CANCELLED);
        ck_assert_int_eq(sql_num(SK_SQL_ORDER_CLOSED), SK_ORDER_CLOSED);
        ck_assert_int_eq(sql_num(SK_SQL_OUTCOME_CREATED), SK_OUTCOME_CREATED);
        ck_assert_int_eq(sql_num(SK_SQL_OUTCOME_FAILED), SK_OUTCOME_FAILED);
        ck_assert_int_eq(sql_num(SK_SQL_LOG_DEDUCT), SK_LOG_DEDUCT);
        ck_assert_int_eq(sql_num(SK_SQL_LOG_RESTORE), SK_LOG_RESTORE);
        ck_assert_int_eq(sql_num(SK_SQL_BIZ_OK), SK_BIZ_OK);
        ck_assert_int_eq(sql_num(SK_SQL_BIZ_TIMEOUT), SK_BIZ_TIMEOUT);
        ck_assert_int_eq(sql_num(SK_SQL_BIZ_FAIL), SK_BIZ_FAIL);
        ck_assert_int_eq(sql_num(SK_SQL_BIZ_CANCEL), SK_BIZ_CANCEL);
        ck_assert_int_eq(sql_num(SK_SQL_BIZ_CLOSE), SK_BIZ_CLOSE);
        ck_assert_int_eq(sql_num(SK_SQL_RECON_PENDING), SK_RECON_PENDING);
        ck_assert_int_eq(sql_num(SK_SQL_RECON_ERROR), SK_RECON_ERROR);
        ck_assert_int_eq(sql_num(SK_SQL_RECON_INCONSISTENT), SK_RECON_INCONSISTENT);
        ck_assert_int_eq(sql_num(SK_SQL_RECON_CONSISTENT), SK_RECON_CONSISTENT);
        ck_assert_str_eq(SK_SQL_ORDER_ACTIVE, "(1, 2)");
        ck_assert_str_eq(SK_SQL_ORDER_ENDED, "(3, 4)");
        ck_assert_str_eq(SK_SQL_BIZ_ORDER_END, "(4, 5)");
}
END_TEST

START_TEST(business_codes)
{
        ck_assert_int_eq(SK_CODE_BAD_INPUT, 10001);
        ck_assert_int_eq(SK_CODE_NOT_STARTED, 10002);
        ck_assert_int_eq(SK_CODE_ENDED, 10003);
        ck_assert_int_eq(SK_CODE_NOT_FOUND, 10004);
        ck_assert_int_eq(SK_CODE_SOLD_OUT, 10005);
        ck_assert_int_eq(SK_CODE_ALREADY_PURCHASED, 10006);
        ck_assert_int_eq(SK_CODE_OFFLINE, 10011);
        ck_assert_int_eq(SK_CODE_EXPIRED, 10012);
        ck_assert_int_eq(SK_CODE_PAUSED, 10013);
        ck_assert_int_eq(SK_CODE_ORDER_CLOSED, 10021);
        ck_assert_int_eq(SK_CODE_PAY_MISMATCH, 10023);
        ck_assert_int_eq(SK_CODE_PAY_DUPLICATE, 10024);
        ck_assert_int_eq(SK_CODE_PAY_TXN_REUSED, 10025);
        ck_assert_int_eq(SK_PAYMENT_APPLIED, atoi(SK_SQL_PAYMENT_APPLIED));
        ck_assert_int_eq(SK_PAYMENT_REFUND_DUE, atoi(SK_SQL_PAYMENT_REFUND_DUE));
        ck_assert_int_eq(SK_CODE_ORDER_PAID, 10022);
        ck_assert_int_eq(SK_BUCKETS_MAX, 16);
}
END_TEST

static Suite *model_suite(void)
{
        Suite *s = suite_create("model");
        TCase *tc = tcase_create("constants");

        tcase_add_test(tc, sql_spellings_match_enums);
        tcase_add_test(tc, business_codes);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return sk_test_run(model_suite());
}
