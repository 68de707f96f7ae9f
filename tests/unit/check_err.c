/* check_err.c: sk_err2str names and sk_seterr truncation/NULL handling. */
#include <string.h>

#include "sk_test.h"
#include "sk/err.h"

START_TEST(err2str_names_every_code)
{
        ck_assert_str_eq(sk_err2str(SK_OK), "ok");
        ck_assert_str_eq(sk_err2str(SK_EINVAL), "invalid");
        ck_assert_str_eq(sk_err2str(SK_EAGAIN), "transient");
        ck_assert_str_eq(sk_err2str(SK_ENOMEM), "no_memory");
        ck_assert_str_eq(sk_err2str(SK_EKAFKA), "kafka");
        ck_assert_str_eq(sk_err2str(SK_EREDIS), "redis");
        ck_assert_str_eq(sk_err2str(SK_EDB), "db");
        ck_assert_str_eq(sk_err2str(SK_ENOTFOUND), "not_found");
        ck_assert_str_eq(sk_err2str(SK_EEXIST), "exists");
        ck_assert_str_eq(sk_err2str(SK_EUNKNOWN), "unknown_outcome");
        ck_assert_str_eq(sk_err2str(SK_ESTOP), "stopped");
        ck_assert_str_eq(sk_err2str(SK_EFAIL), "failpoint");
        ck_assert_str_eq(sk_err2str((sk_err_t)-99), "unknown_error");
        ck_assert_ptr_nonnull(sk_err2str((sk_err_t)5));
}
END_TEST

START_TEST(seterr_formats_and_truncates)
{
        char buf[8];

        memset(buf, 'x', sizeof(buf));
        sk_seterr(buf, sizeof(buf), "%s=%d", "abc", 42);
        ck_assert_str_eq(buf, "abc=42");
        sk_seterr(buf, sizeof(buf), "%s", "0123456789");
        ck_assert_str_eq(buf, "0123456");        /* truncated, NUL-terminated */
        ck_assert_uint_eq(strlen(buf), 7);
}
END_TEST

START_TEST(seterr_null_or_empty_is_noop)
{
        char buf[4] = "abc";

        sk_seterr(NULL, 100, "boom %d", 1);
        sk_seterr(buf, 0, "boom %d", 1);
        ck_assert_str_eq(buf, "abc");
}
END_TEST

static Suite *err_suite(void)
{
        Suite *s = suite_create("err");
        TCase *tc = tcase_create("err");

        tcase_add_test(tc, err2str_names_every_code);
        tcase_add_test(tc, seterr_formats_and_truncates);
        tcase_add_test(tc, seterr_null_or_empty_is_noop);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return sk_test_run(err_suite());
}
