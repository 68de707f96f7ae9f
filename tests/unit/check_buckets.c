/* check_buckets.c: the split of stock over buckets (sk/buckets.h, DESIGN.md 14). */
#include "sk_test.h"
#include "sk/buckets.h"

START_TEST(split_even_and_remainder)
{
        ck_assert_int_eq(sk_bucket_share(100, 1, 0), 100);
        ck_assert_int_eq(sk_bucket_share(100, 4, 0), 25);
        ck_assert_int_eq(sk_bucket_share(100, 4, 3), 25);
        /* 10 over 4: 3, 3, 2, 2 (the remainder one each to the first buckets) */
        ck_assert_int_eq(sk_bucket_share(10, 4, 0), 3);
        ck_assert_int_eq(sk_bucket_share(10, 4, 1), 3);
        ck_assert_int_eq(sk_bucket_share(10, 4, 2), 2);
        ck_assert_int_eq(sk_bucket_share(10, 4, 3), 2);
        /* fewer units than buckets: 1, 1, 1, 0, ... */
        ck_assert_int_eq(sk_bucket_share(3, 16, 2), 1);
        ck_assert_int_eq(sk_bucket_share(3, 16, 3), 0);
        ck_assert_int_eq(sk_bucket_share(0, 16, 0), 0);
}
END_TEST

START_TEST(split_sums_to_total)
{
        for (int n = 1; n <= 16; n++)
                for (int64_t total = 0; total < 200; total += 7) {
                        int64_t sum = 0, lo = total, hi = 0;
                        for (int b = 0; b < n; b++) {
                                int64_t s = sk_bucket_share(total, n, b);
                                sum += s;
                                lo = s < lo ? s : lo;
                                hi = s > hi ? s : hi;
                        }
                        ck_assert_int_eq(sum, total);
                        ck_assert(hi - lo <= 1);
                }
        ck_assert_int_eq(sk_bucket_share(1000000000, 16, 15), 62500000);
}
END_TEST

START_TEST(split_bad_input)
{
        ck_assert_int_eq(sk_bucket_share(10, 0, 0), 0);
        ck_assert_int_eq(sk_bucket_share(10, 17, 0), 0);
        ck_assert_int_eq(sk_bucket_share(10, 4, 4), 0);
        ck_assert_int_eq(sk_bucket_share(10, 4, -1), 0);
        ck_assert_int_eq(sk_bucket_share(-10, 4, 0), 0);
}
END_TEST

static Suite *buckets_suite(void)
{
        Suite *s = suite_create("buckets");
        TCase *tc = tcase_create("split");

        tcase_add_test(tc, split_even_and_remainder);
        tcase_add_test(tc, split_sums_to_total);
        tcase_add_test(tc, split_bad_input);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return sk_test_run(buckets_suite());
}
