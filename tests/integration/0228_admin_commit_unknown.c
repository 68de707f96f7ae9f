/* 0228_admin_commit_unknown.c: seckill-admin's COMMITs with an unknown outcome (DESIGN.md
 * v5 16 "Errors": add-stock reads tb_seckill_stock_change, voucher create the minted
 * voucher id), on the standalone MariaDB. The failpoints are armed `1*` in the admin
 * process only, whose first sk_db_commit_outcome is the transaction under test.
 *   - add-stock +6 with db.commit_lost (applied, answer lost): the request id's row is
 *     found on a fresh session, exit 0, "applied":true, stock 10 -> 16 exactly once;
 *     the same request id again changes nothing ("applied":false);
 *   - add-stock +6 with db.commit_lost_before (not applied): not found, the same
 *     transaction again with the same request id: 16, one stock-change row;
 *   - voucher create with db.commit_lost: the minted id's row is found, one voucher row
 *     with its two bucket rows and its switch row.
 * The old add-stock and create committed with sk_db_commit, which evaluates neither
 * failpoint: they print no resolution line, which the checks below require. */
#include "sk_test.h"

/* Run seckill-admin @p args with @p failpoints, output appended to @p log.
 * @returns its exit code. */
static int admin(const char *const *args, const char *failpoints, const char *log)
{
        pid_t pid = sk_test_spawn(&(sk_test_spawn_t){ .bin = "seckill-admin", .args = args,
                                                      .failpoints = failpoints, .log_path = log });

        return sk_test_wait_exit(pid, 60);
}

static void fresh_log(char *buf, size_t size, const char *what)
{
        unlink(sk_test_log_path(buf, size, "admin_0228_%s", what));
}

static void check_stock(int64_t vid, long long want)
{
        ck_assert_int_eq(sk_test_i64("SELECT stock FROM tb_seckill_stock WHERE bucket = 0 AND voucher_id = %"
                                     PRId64, vid), want);
        ck_assert_int_eq(sk_test_i64("SELECT init_stock FROM tb_seckill_stock WHERE bucket = 0 AND "
                                     "voucher_id = %" PRId64, vid), want);
        ck_assert_int_eq(sk_test_i64("SELECT init_stock FROM tb_seckill_voucher WHERE voucher_id = %"
                                     PRId64, vid), want);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_seckill_stock_change WHERE voucher_id = %"
                                     PRId64, vid), 1);
        ck_assert_int_eq(sk_test_stock(NULL, NULL, vid), want);
}

static void add_stock_lost(const char *failpoint, const char *rid, const char *found)
{
        int64_t vid = sk_test_voucher_open(10);
        char v[SK_ID_STRLEN], log[320], log2[320], want[128];
        const char *args[] = { "voucher", "add-stock", v, "--stock", "6", "--request-id", rid,
                               "--wait-ms", "3000", NULL };

        sk_id_format(vid, v);
        fresh_log(log, sizeof(log), rid);
        ck_assert_int_eq(admin(args, failpoint, log), 0);
        snprintf(want, sizeof(want), "add_stock_commit_unknown request_id=%s found=%s", rid, found);
        ck_assert_msg(sk_test_file_count(log, want) == 1, "no \"%s\" in %s", want, log);
        ck_assert_msg(sk_test_file_count(log, "\"applied\":true") == 1, "not applied: %s", log);
        check_stock(vid, 16);

        /* The same request id again: nothing changes. */
        fresh_log(log2, sizeof(log2), "again");
        ck_assert_int_eq(admin(args, NULL, log2), 0);
        ck_assert_msg(sk_test_file_count(log2, "\"applied\":false") == 1, "repeat applied: %s", log2);
        check_stock(vid, 16);
}

START_TEST(add_stock_commit_lost_after_apply)
{
        add_stock_lost("db.commit_lost=1*error", "r-after", "1");
}
END_TEST

START_TEST(add_stock_commit_lost_before_apply)
{
        add_stock_lost("db.commit_lost_before=1*error", "r-before", "0");
}
END_TEST

/* The voucher id printed in @p log ({"voucherId":"N"}), or 0. */
static int64_t printed_id(const char *log)
{
        char line[512];
        int64_t id = 0;
        FILE *f = fopen(log, "r");

        while (f && fgets(line, sizeof(line), f)) {
                char *p = strstr(line, "{\"voucherId\":\""), *q;

                if (p && (q = strchr(p + 14, '"'))) {
                        *q = '\0';
                        if (sk_id_parse_cstr(p + 14, &id) != 0)
                                id = 0;
                }
        }
        if (f)
                fclose(f);
        return id;
}

static void create_lost(const char *failpoint, const char *what, const char *found)
{
        static const char *const args[] = { "voucher", "create", "--stock", "7", "--buckets", "2",
                                            "--begin", "2030-01-01T00:00:00Z", "--end",
                                            "2030-01-02T00:00:00Z", NULL };
        char log[320], want[128];
        int64_t vid;

        fresh_log(log, sizeof(log), what);
        ck_assert_int_eq(admin(args, failpoint, log), 0);
        ck_assert_msg((vid = printed_id(log)) > 0, "no voucher id in %s", log);
        snprintf(want, sizeof(want), "voucher_create_commit_unknown voucher_id=%" PRId64 " found=%s",
                 vid, found);
        ck_assert_msg(sk_test_file_count(log, want) == 1, "no \"%s\" in %s", want, log);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_seckill_voucher WHERE voucher_id = %"
                                     PRId64, vid), 1);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) * 100 + SUM(stock) FROM tb_seckill_stock WHERE "
                                     "voucher_id = %" PRId64, vid), 207);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_seckill_switch WHERE scope = %" PRId64,
                                     vid), 1);
}

START_TEST(voucher_create_commit_lost_after_apply)
{
        create_lost("db.commit_lost=1*error", "create_after", "1");
}
END_TEST

START_TEST(voucher_create_commit_lost_before_apply)
{
        create_lost("db.commit_lost_before=1*error", "create_before", "0");
}
END_TEST

int main(void)
{
        Suite *s = suite_create("admin_commit_unknown");
        TCase *tc = tcase_create("commit_unknown");
        int rc;

        sk_test_fix_setup("adm_cu", &(sk_test_fix_opts_t){ .delivery_timeout_ms = 1000 });
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, add_stock_commit_lost_after_apply);
        tcase_add_test(tc, add_stock_commit_lost_before_apply);
        tcase_add_test(tc, voucher_create_commit_lost_after_apply);
        tcase_add_test(tc, voucher_create_commit_lost_before_apply);
        suite_add_tcase(s, tc);
        rc = sk_test_run_nofork(s);
        sk_test_fix_teardown();
        return rc;
}
