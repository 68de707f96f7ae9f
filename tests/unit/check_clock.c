/* check_clock.c: wall and monotonic clocks, sk_sleep_ms. */
#include "sk_test.h"
#include "sk/clock.h"

START_TEST(now_is_plausible)
{
        int64_t now = sk_now_ms();

        ck_assert_int_gt(now, INT64_C(1704067200000));   /* after 2024-01-01 */
        ck_assert_int_lt(now, INT64_C(4102444800000));   /* before 2100-01-01 */
}
END_TEST

START_TEST(sleep_waits_at_least_ms)
{
        int64_t t0 = sk_mono_ms(), t1;

        sk_sleep_ms(30, NULL);
        t1 = sk_mono_ms();
        ck_assert_int_ge(t1 - t0, 29);
        sk_sleep_ms(0, NULL);
        sk_sleep_ms(-5, NULL);                  /* no-op, no hang */
        ck_assert_int_ge(sk_mono_ms(), t1);
}
END_TEST

static Suite *clock_suite(void)
{
        Suite *s = suite_create("clock");
        TCase *tc = tcase_create("clock");

        tcase_add_test(tc, now_is_plausible);
        tcase_add_test(tc, sleep_waits_at_least_ms);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return sk_test_run(clock_suite());
}
