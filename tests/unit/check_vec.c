/* check_vec.c: sk/vec.h (no network): growth across reallocations, sort + unique,
 * binary search, the comparator at the int64 extremes, and free/reuse. */
#include <stdlib.h>
#include "sk_test.h"
#include "sk/vec.h"

START_TEST(push_grows_and_keeps_order)
{
        sk_i64vec_t a = { 0 };
        int64_t i;

        for (i = 0; i < 1000; i++)
                ck_assert_int_eq(sk_i64vec_push(&a, i * 3 - 500), SK_OK);
        ck_assert_uint_eq(a.n, 1000);
        ck_assert_uint_ge(a.cap, 1000);
        for (i = 0; i < 1000; i++)
                ck_assert_int_eq(a.v[i], i * 3 - 500);
        sk_i64vec_free(&a);
        ck_assert_ptr_null(a.v);
        ck_assert_uint_eq(a.n, 0);
        ck_assert_uint_eq(a.cap, 0);
        /* Reusable after free; free(NULL) is a no-op. */
        ck_assert_int_eq(sk_i64vec_push(&a, 7), SK_OK);
        ck_assert_uint_eq(a.n, 1);
        ck_assert_int_eq(a.v[0], 7);
        sk_i64vec_free(&a);
        sk_i64vec_free(NULL);
}
END_TEST

START_TEST(sort_unique_and_contains)
{
        sk_i64vec_t a = { 0 };
        static const int64_t in[] = { 5, -1, 5, INT64_MAX, 0, INT64_MIN, -1, 5, 42, INT64_MAX };
        static const int64_t want[] = { INT64_MIN, -1, 0, 5, 42, INT64_MAX };
        size_t i;

        sk_i64vec_sort_unique(&a); /* empty: nothing to do */
        ck_assert_uint_eq(a.n, 0);
        ck_assert_int_eq(sk_i64vec_contains(&a, 0), 0);
        for (i = 0; i < sizeof(in) / sizeof(in[0]); i++)
                ck_assert_int_eq(sk_i64vec_push(&a, in[i]), SK_OK);
        sk_i64vec_sort_unique(&a);
        ck_assert_uint_eq(a.n, sizeof(want) / sizeof(want[0]));
        for (i = 0; i < a.n; i++)
                ck_assert_int_eq(a.v[i], want[i]);
        for (i = 0; i < a.n; i++)
                ck_assert_int_eq(sk_i64vec_contains(&a, want[i]), 1);
        ck_assert_int_eq(sk_i64vec_contains(&a, 1), 0);
        ck_assert_int_eq(sk_i64vec_contains(&a, INT64_MAX - 1), 0);
        sk_i64vec_free(&a);
}
END_TEST

START_TEST(cmp_extremes)
{
        int64_t lo = INT64_MIN, hi = INT64_MAX, z = 0;

        ck_assert_int_eq(sk_i64_cmp(&lo, &hi), -1); /* subtraction would overflow */
        ck_assert_int_eq(sk_i64_cmp(&hi, &lo), 1);
        ck_assert_int_eq(sk_i64_cmp(&z, &z), 0);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("vec");
        TCase *tc = tcase_create("i64vec");

        tcase_add_test(tc, push_grows_and_keeps_order);
        tcase_add_test(tc, sort_unique_and_contains);
        tcase_add_test(tc, cmp_extremes);
        suite_add_tcase(s, tc);
        return sk_test_run(s);
}
