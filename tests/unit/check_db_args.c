/* check_db_args.c: the bound-argument list of sk/db.h without a server: SK_I64 / SK_STR /
 * SK_STRN / SK_NULL build typed arguments, SK_ARGS counts them, sk_db_ident_ok accepts
 * only [A-Za-z0-9_]{1,64}, and the calls refuse bad arguments (SK_EINVAL) before they
 * touch a connection, and a missing connection as transient (SK_EAGAIN). */
#include <string.h>

#include "sk_test.h"
#include "sk/db.h"

/* The count SK_ARGS hands over with the list. */
static int count(const sk_db_arg_t *args, int nargs)
{
        (void)args;
        return nargs;
}

START_TEST(args_are_typed)
{
        sk_db_arg_t a = SK_I64(-9223372036854775807LL - 1), s = SK_STR("ab'c"), n = SK_NULL;
        sk_db_arg_t sn = SK_STRN("abcdef", 3), z = SK_STR(NULL);

        ck_assert_int_eq(a.type, SK_DB_ARG_I64);
        ck_assert(a.i64 == INT64_MIN);
        ck_assert_int_eq(s.type, SK_DB_ARG_STR);
        ck_assert_uint_eq(s.len, 4);
        ck_assert_str_eq(s.s, "ab'c");
        ck_assert_int_eq(n.type, SK_DB_ARG_NULL);
        ck_assert_int_eq(sn.type, SK_DB_ARG_STR);
        ck_assert_uint_eq(sn.len, 3);
        ck_assert_int_eq(z.type, SK_DB_ARG_NULL);
        ck_assert_int_eq(count(SK_ARGS(SK_I64(1))), 1);
        ck_assert_int_eq(count(SK_ARGS(SK_I64(1), SK_STR("x"), SK_NULL)), 3);
        ck_assert_int_eq(count(SK_NOARGS), 0);
}
END_TEST

START_TEST(identifiers)
{
        char big[80];

        ck_assert_int_eq(sk_db_ident_ok("seckill_test_01"), 1);
        ck_assert_int_eq(sk_db_ident_ok("A"), 1);
        ck_assert_int_eq(sk_db_ident_ok(""), 0);
        ck_assert_int_eq(sk_db_ident_ok(NULL), 0);
        ck_assert_int_eq(sk_db_ident_ok("a`b"), 0);
        ck_assert_int_eq(sk_db_ident_ok("a b"), 0);
        ck_assert_int_eq(sk_db_ident_ok("a-b"), 0);
        ck_assert_int_eq(sk_db_ident_ok("a'b"), 0);
        ck_assert_int_eq(sk_db_ident_ok("db\xc3\xa9"), 0);
        memset(big, 'a', sizeof(big));
        big[64] = '\0';
        ck_assert_int_eq(sk_db_ident_ok(big), 1);
        big[64] = 'a';
        big[65] = '\0';
        ck_assert_int_eq(sk_db_ident_ok(big), 0);
}
END_TEST

START_TEST(refusals_before_the_connection)
{
        char errstr[256];
        int64_t v = 0;
        sk_db_arg_t many[SK_DB_ARGS_MAX + 1];

        for (int i = 0; i <= SK_DB_ARGS_MAX; i++)
                many[i] = SK_I64(i);
        ck_assert_int_eq(sk_db_exec_ident(NULL, "CREATE DATABASE ", "x`; DROP", "", errstr,
                                          sizeof(errstr)), SK_EINVAL);
        ck_assert_ptr_nonnull(strstr(errstr, "invalid identifier"));
        ck_assert_int_eq(sk_db_exec_args(NULL, "DO ?", many, SK_DB_ARGS_MAX + 1, NULL, errstr,
                                         sizeof(errstr)), SK_EINVAL);
        ck_assert_int_eq(sk_db_exec_args(NULL, "DO ?", many, -1, NULL, errstr, sizeof(errstr)),
                         SK_EINVAL);
        ck_assert_int_eq(sk_db_row1(NULL, "SELECT 1", SK_NOARGS, &v, 0, NULL, errstr,
                                    sizeof(errstr)), SK_EINVAL);
        ck_assert_int_eq(sk_db_exec_args(NULL, "DO ?", SK_ARGS(SK_I64(1)), NULL, errstr,
                                         sizeof(errstr)), SK_EAGAIN);
        ck_assert_int_eq(sk_db_i64(NULL, "SELECT ?", SK_ARGS(SK_STR("x")), &v, NULL, errstr,
                                   sizeof(errstr)), SK_EAGAIN);
}
END_TEST

static Suite *db_args_suite(void)
{
        Suite *s = suite_create("db_args");
        TCase *tc = tcase_create("db_args");

        tcase_add_test(tc, args_are_typed);
        tcase_add_test(tc, identifiers);
        tcase_add_test(tc, refusals_before_the_connection);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return sk_test_run(db_args_suite());
}
