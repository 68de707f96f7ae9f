/* 0222_drift_mark.c: drift marks as tb_lock rows 'drift:V:j' (sk/drift_mark.h; DESIGN.md
 * 16 "Answers after an unknown COMMIT" (d)) against the real MariaDB:
 *   - a mark is pending (until >= NOW(3)), read back with its bucket; marking again bumps
 *     its seq and stays one row;
 *   - the marks of one voucher are read, not another voucher's (whose id is a prefix of
 *     ours), nor a lock row;
 *   - a clear with the seq read clears it; a clear with an older seq (the bucket was
 *     marked again after the read) leaves it pending for the next pass;
 *   - bad ids are refused. */
#include "sk_test.h"
#include "sk/drift_mark.h"

START_TEST(mark_read_clear)
{
        char errstr[512] = "";
        sk_drift_mark_t m[SK_DRIFT_MARKS_MAX];
        const int64_t v = INT64_C(386838109448314880), other = INT64_C(38683810944831488);
        int n = -1, cleared = -1;

        ck_assert_msg(sk_drift_mark(sk_test_fx.db, v, 3, "consumer", errstr, sizeof(errstr)) == SK_OK,
                      "%s", errstr);
        ck_assert_int_eq(sk_drift_mark(sk_test_fx.db, v, 0, "rebuild", errstr, sizeof(errstr)), SK_OK);
        ck_assert_int_eq(sk_drift_mark(sk_test_fx.db, other, 1, "consumer", errstr, sizeof(errstr)), SK_OK);
        sk_test_exec("INSERT INTO tb_lock (name, holder, until) VALUES ('drift:%" PRId64 "', 'x', "
                     "NOW(3) + INTERVAL 1 HOUR)", v);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_lock WHERE name = 'drift:%" PRId64 ":3' AND "
                                     "until >= NOW(3) AND holder = 'consumer'", v), 1);
        ck_assert_int_eq(sk_drift_marks(sk_test_fx.db, v, m, SK_DRIFT_MARKS_MAX, &n, errstr, sizeof(errstr)),
                         SK_OK);
        ck_assert_int_eq(n, 2);
        ck_assert_int_eq(m[0].bucket, 0);
        ck_assert_int_eq(m[1].bucket, 3);
        /* Marked again after the read: one row, seq bumped; the clear with the old seq
         * leaves it pending. */
        ck_assert_int_eq(sk_drift_mark(sk_test_fx.db, v, 3, "consumer", errstr, sizeof(errstr)), SK_OK);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_lock WHERE name = 'drift:%" PRId64 ":3'", v), 1);
        ck_assert_int_eq(sk_drift_mark_clear(sk_test_fx.db, v, &m[1], &cleared, errstr, sizeof(errstr)), SK_OK);
        ck_assert_int_eq(cleared, 0);
        ck_assert_int_eq(sk_drift_mark_clear(sk_test_fx.db, v, &m[0], &cleared, errstr, sizeof(errstr)), SK_OK);
        ck_assert_int_eq(cleared, 1);
        ck_assert_int_eq(sk_drift_marks(sk_test_fx.db, v, m, SK_DRIFT_MARKS_MAX, &n, errstr, sizeof(errstr)),
                         SK_OK);
        ck_assert_int_eq(n, 1);
        ck_assert_int_eq(m[0].bucket, 3);
        ck_assert_int_eq(sk_drift_mark_clear(sk_test_fx.db, v, &m[0], &cleared, errstr, sizeof(errstr)), SK_OK);
        ck_assert_int_eq(cleared, 1);
        ck_assert_int_eq(sk_drift_marks(sk_test_fx.db, v, m, SK_DRIFT_MARKS_MAX, &n, errstr, sizeof(errstr)),
                         SK_OK);
        ck_assert_int_eq(n, 0);
        /* The rows stay (never deleted), until in the past. */
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_lock WHERE name LIKE 'drift:%" PRId64 ":%%' AND "
                                     "until < NOW(3)", v), 2);
        /* The other voucher's mark is untouched. */
        ck_assert_int_eq(sk_drift_marks(sk_test_fx.db, other, m, SK_DRIFT_MARKS_MAX, &n, errstr,
                                        sizeof(errstr)), SK_OK);
        ck_assert_int_eq(n, 1);
        ck_assert_int_eq(sk_drift_mark(sk_test_fx.db, 0, 1, NULL, errstr, sizeof(errstr)), SK_EINVAL);
        ck_assert_int_eq(sk_drift_mark(sk_test_fx.db, v, -1, NULL, errstr, sizeof(errstr)), SK_EINVAL);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("0222_drift_mark");
        TCase *tc = tcase_create("drift_mark");
        int rc;

        sk_test_fix_setup("drift_mark", &(sk_test_fix_opts_t){ .no_topics = 1, .lock_wait_s = 5 });
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, mark_read_clear);
        suite_add_tcase(s, tc);
        rc = sk_test_run(s);
        sk_test_fix_teardown();
        return rc;
}
