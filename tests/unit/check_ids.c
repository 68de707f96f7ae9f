/* check_ids.c: canonical decimal ids (DESIGN.md 3). */
#include <string.h>

#include "sk_test.h"
#include "sk/ids.h"

static const char *const rejected[] = {
        "", "0", "01", "00", "-1", " 1", "1 ", "+1", "99999999999999999999",
        "9223372036854775808", "18446744073709551616", "1 OR 1=1", "1e3", "0x10",
        "１", "1\t", "\n1", "12a", "9223372036854775807 ",
};

START_TEST(rejects_non_canonical)
{
        int64_t v = 77;
        size_t i;

        for (i = 0; i < sizeof(rejected) / sizeof(rejected[0]); i++) {
                ck_assert_msg(sk_id_parse_cstr(rejected[i], &v) == -1, "accepted \"%s\"", rejected[i]);
                ck_assert_msg(sk_id_parse(rejected[i], strlen(rejected[i]), &v) == -1,
                              "accepted \"%s\"", rejected[i]);
                ck_assert_int_eq(v, 77);        /* untouched */
        }
        ck_assert_int_eq(sk_id_parse_cstr(NULL, &v), -1);
        ck_assert_int_eq(sk_id_parse(NULL, 3, &v), -1);
        ck_assert_int_eq(v, 77);
}
END_TEST

START_TEST(rejects_embedded_nul)
{
        int64_t v = 77;

        ck_assert_int_eq(sk_id_parse("12\0" "3", 4, &v), -1);
        ck_assert_int_eq(sk_id_parse("\0" "1", 2, &v), -1);
        ck_assert_int_eq(sk_id_parse("1\0", 2, &v), -1);
        ck_assert_int_eq(v, 77);
        /* Only len bytes are read: "12" out of "123". */
        ck_assert_int_eq(sk_id_parse("123", 2, &v), 0);
        ck_assert_int_eq(v, 12);
}
END_TEST

static void roundtrip(const char *s, int64_t expect)
{
        char buf[SK_ID_STRLEN];
        int64_t v = 0;

        ck_assert_int_eq(sk_id_parse_cstr(s, &v), 0);
        ck_assert_int_eq(v, expect);
        ck_assert_uint_eq(sk_id_format(v, buf), strlen(s));
        ck_assert_str_eq(buf, s);
}

START_TEST(accepts_and_roundtrips)
{
        roundtrip("1", 1);
        roundtrip("9", 9);
        roundtrip("10", 10);
        roundtrip("42", 42);
        roundtrip("1990653204235288577", INT64_C(1990653204235288577));
        roundtrip("9223372036854775807", INT64_MAX);
        roundtrip("1000000000000000000", INT64_C(1000000000000000000));
}
END_TEST

START_TEST(format_edge_values)
{
        char buf[SK_ID_STRLEN + 1];

        ck_assert_uint_eq(sk_id_format(0, buf), 1);
        ck_assert_str_eq(buf, "0");
        ck_assert_uint_eq(sk_id_format(-1, buf), 2);
        ck_assert_str_eq(buf, "-1");
        ck_assert_uint_eq(sk_id_format(INT64_MAX, buf), 19);
        ck_assert_str_eq(buf, "9223372036854775807");
}
END_TEST

static Suite *ids_suite(void)
{
        Suite *s = suite_create("ids");
        TCase *tc = tcase_create("ids");

        tcase_add_test(tc, rejects_non_canonical);
        tcase_add_test(tc, rejects_embedded_nul);
        tcase_add_test(tc, accepts_and_roundtrips);
        tcase_add_test(tc, format_edge_values);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return sk_test_run(ids_suite());
}
