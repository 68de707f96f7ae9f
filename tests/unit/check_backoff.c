/* check_backoff.c: full-jitter delays stay in [1, cap] for every attempt, grow with the
 * attempt until the cap, and never overflow (attempts up to 1000, extreme caps). */
#include <stdint.h>

#include "sk_test.h"
#include "sk/backoff.h"

static const uint64_t seeds[] = { 1, 42, 0xDEADBEEFULL, UINT64_MAX, 0x8000000000000000ULL };

START_TEST(bounded_for_all_attempts)
{
        uint64_t st = seeds[_i];
        static const int64_t caps[] = { 1, 2, 50, 1000, 30000, INT64_MAX };
        static const int64_t bases[] = { 1, 10, 100, 1000, INT64_MAX };

        for (size_t c = 0; c < sizeof(caps) / sizeof(caps[0]); c++) {
                for (size_t b = 0; b < sizeof(bases) / sizeof(bases[0]); b++) {
                        for (int attempt = 0; attempt <= 1000; attempt++) {
                                int64_t d = sk_backoff_ms(attempt, bases[b], caps[c], &st);
                                ck_assert_int_ge(d, 1);
                                ck_assert_int_le(d, caps[c]);
                                /* Never above base * 2^attempt (the exponential ceiling). */
                                if (attempt < 20 && bases[b] < 1000000)
                                        ck_assert_int_le(d, bases[b] << attempt);
                        }
                }
        }
}
END_TEST

START_TEST(first_attempt_within_base)
{
        uint64_t st = seeds[_i];

        for (int i = 0; i < 1000; i++) {
                int64_t d = sk_backoff_ms(0, 10, 5000, &st);
                ck_assert_int_ge(d, 1);
                ck_assert_int_le(d, 10);
        }
}
END_TEST

START_TEST(reaches_the_cap_region)
{
        uint64_t st = seeds[_i];
        int64_t max_seen = 0;

        /* With jitter the delays spread over [1, cap]: some land in the top half. */
        for (int i = 0; i < 1000; i++) {
                int64_t d = sk_backoff_ms(30, 10, 2000, &st);
                if (d > max_seen)
                        max_seen = d;
        }
        ck_assert_int_gt(max_seen, 1000);
        ck_assert_int_le(max_seen, 2000);
}
END_TEST

START_TEST(odd_arguments_are_safe)
{
        uint64_t st = 0;        /* zero state is tolerated */

        ck_assert_int_eq(sk_backoff_ms(-5, 10, 1, &st), 1);
        ck_assert_int_eq(sk_backoff_ms(5, 0, 0, &st), 1);
        ck_assert_int_le(sk_backoff_ms(1000, -3, 7, &st), 7);
        ck_assert_int_ge(sk_backoff_ms(2147483647, 1, INT64_MAX, &st), 1);
        ck_assert(sk_backoff_seed() != 0);
}
END_TEST

static Suite *backoff_suite(void)
{
        Suite *s = suite_create("backoff");
        TCase *tc = tcase_create("backoff");
        int n = (int)(sizeof(seeds) / sizeof(seeds[0]));

        tcase_add_loop_test(tc, bounded_for_all_attempts, 0, n);
        tcase_add_loop_test(tc, first_attempt_within_base, 0, n);
        tcase_add_loop_test(tc, reaches_the_cap_region, 0, n);
        tcase_add_test(tc, odd_arguments_are_safe);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return sk_test_run(backoff_suite());
}
