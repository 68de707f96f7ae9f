/* check_dswitch.c: the degrade switch's pure parts (sk/dswitch.h, DESIGN.md 12): mode
 * and state names, and sk_dsw_next, the move a front attempts for each state, mode,
 * breaker and Redis health (redis_only never leaves redis; db_only never leaves db;
 * draining waits its time). */
#include "sk_test.h"
#include "sk/dswitch.h"

static sk_dsw_row_t row(int state, int mode, int64_t age_ms)
{
        sk_dsw_row_t r = { .voucher_id = 7, .mode = mode, .own_mode = -1, .state = state,
                           .epoch = 3, .age_ms = age_ms, .buckets = 1 };
        return r;
}

START_TEST(names)
{
        int m = -1;

        ck_assert_str_eq(sk_dsw_state_str(SK_DSW_DRAINING), "draining");
        ck_assert_str_eq(sk_dsw_state_str(SK_DSW_REBUILDING), "rebuilding");
        ck_assert_str_eq(sk_dsw_state_str(9), "?");
        ck_assert_str_eq(sk_dsw_mode_str(SK_DSW_REDIS_ONLY), "redis_only");
        ck_assert_int_eq(sk_dsw_mode_parse("db-only", &m), 0);
        ck_assert_int_eq(m, SK_DSW_DB_ONLY);
        ck_assert_int_eq(sk_dsw_mode_parse("redis_only", &m), 0);
        ck_assert_int_eq(m, SK_DSW_REDIS_ONLY);
        ck_assert_int_eq(sk_dsw_mode_parse("auto", &m), 0);
        ck_assert_int_eq(m, SK_DSW_AUTO);
        ck_assert_int_eq(sk_dsw_mode_parse("DB", &m), -1);
        ck_assert_int_eq(m, SK_DSW_AUTO);
}
END_TEST

START_TEST(from_redis)
{
        sk_dsw_row_t r = row(SK_DSW_REDIS, SK_DSW_AUTO, 0);

        ck_assert_int_eq(sk_dsw_next(&r, 0, 1, 8000, 1500), -1);
        ck_assert_int_eq(sk_dsw_next(&r, 1, 0, 8000, 1500), SK_DSW_DRAINING);
        r.mode = SK_DSW_REDIS_ONLY;
        ck_assert_int_eq(sk_dsw_next(&r, 1, 0, 8000, 1500), -1);
        r.mode = SK_DSW_DB_ONLY;
        ck_assert_int_eq(sk_dsw_next(&r, 0, 1, 8000, 1500), SK_DSW_DRAINING);
}
END_TEST

START_TEST(draining_waits)
{
        sk_dsw_row_t r = row(SK_DSW_DRAINING, SK_DSW_AUTO, 7999);

        ck_assert_int_eq(sk_dsw_next(&r, 0, 1, 8000, 1500), -1);
        r.age_ms = 8000;
        ck_assert_int_eq(sk_dsw_next(&r, 0, 1, 8000, 1500), SK_DSW_DB);
        r.mode = SK_DSW_REDIS_ONLY; /* set mid-outage: drains on, recovers through rebuild */
        ck_assert_int_eq(sk_dsw_next(&r, 1, 0, 8000, 1500), SK_DSW_DB);
}
END_TEST

START_TEST(recovery)
{
        sk_dsw_row_t r = row(SK_DSW_DB, SK_DSW_AUTO, 100000);

        ck_assert_int_eq(sk_dsw_next(&r, 1, 0, 8000, 1500), -1);
        ck_assert_int_eq(sk_dsw_next(&r, 0, 0, 8000, 1500), -1);
        ck_assert_int_eq(sk_dsw_next(&r, 0, 1, 8000, 1500), SK_DSW_REBUILDING);
        r.mode = SK_DSW_REDIS_ONLY;
        ck_assert_int_eq(sk_dsw_next(&r, 0, 1, 8000, 1500), SK_DSW_REBUILDING);
        /* healthy, but not yet for healthy_ms while in db: a db window for every front */
        r = row(SK_DSW_DB, SK_DSW_AUTO, 1499);
        ck_assert_int_eq(sk_dsw_next(&r, 0, 1, 8000, 1500), -1);
        r.age_ms = 1500;
        ck_assert_int_eq(sk_dsw_next(&r, 0, 1, 8000, 1500), SK_DSW_REBUILDING);
        r.mode = SK_DSW_DB_ONLY;
        ck_assert_int_eq(sk_dsw_next(&r, 0, 1, 8000, 1500), -1);
        r = row(SK_DSW_REBUILDING, SK_DSW_DB_ONLY, 0); /* a failed rebuild is retried */
        ck_assert_int_eq(sk_dsw_next(&r, 0, 0, 8000, 1500), -1);
        ck_assert_int_eq(sk_dsw_next(&r, 0, 1, 8000, 1500), SK_DSW_REDIS);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("dswitch");
        TCase *tc = tcase_create("dswitch");

        tcase_add_test(tc, names);
        tcase_add_test(tc, from_redis);
        tcase_add_test(tc, draining_waits);
        tcase_add_test(tc, recovery);
        suite_add_tcase(s, tc);
        return sk_test_run(s);
}
