/* 0521_clamp_version.c: the sold_out clamp's second transaction writes bucket j's row
 * (SET version = version + 1, DESIGN.md 16 (3)) instead of only reading it FOR SHARE,
 * so a concurrent restock of the row through another Galera node conflicts with it. The
 * reconciler follows a FAILED (sold_out) outcome whose rollback never ran: the clamp is
 * applied (Redis stock = DB stock 1) and the bucket row's version moved by exactly one.
 * The old clamp (LOCK IN SHARE MODE) left version at 0. */
#include "sk_test.h"

START_TEST(clamp_bumps_version)
{
        char out[65536], vs[SK_ID_STRLEN], json[SK_MSG_MAX], errstr[512] = "";
        const char *args[] = { "--grace-seconds", "2", "--json", "--voucher", vs, NULL };
        int64_t vid = sk_test_voucher(&(sk_test_voucher_t){ .init_stock = 5, .db_stock = 5,
                                                            .db_status = 1, .preheat = 1 }),
                                                            user = sk_test_rand_id(), v0;
        sk_order_msg_t msg;
        sk_outcome_t existing;
        int rc;

        sk_id_format(vid, vs);
        (void)sk_test_admit(vid, user, NULL, NULL, json);
        sk_test_parse_msg(json, &msg);
        ck_assert_msg(sk_outcome_fail(sk_test_fx.db, &msg, SK_REASON_SOLD_OUT, "test", &existing, errstr,
                                      sizeof(errstr)) == SK_OK, "outcome_fail: %s", errstr);
        sk_test_exec("UPDATE tb_seckill_stock SET stock = 1 WHERE voucher_id = %" PRId64, vid);
        v0 = sk_test_i64("SELECT version FROM tb_seckill_stock WHERE voucher_id = %" PRId64
                         " AND bucket = 0", vid);
        ck_assert_int_eq(v0, 0);
        sk_sleep_ms(2500, NULL);
        rc = sk_test_reconcile(args, NULL, out, sizeof(out));
        ck_assert_int_eq(rc, 1);
        ck_assert_int_eq(sk_test_report_field(out, vid, "rolledBack"), 1);
        ck_assert_int_eq(sk_test_stock(NULL, NULL, vid), 1);
        ck_assert_int_eq(sk_test_i64("SELECT version FROM tb_seckill_stock WHERE voucher_id = %" PRId64
                                     " AND bucket = 0", vid), v0 + 1);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("0521_clamp_version");
        TCase *tc = tcase_create("clamp");
        int rc;

        sk_test_fix_setup("clamp_version", &(sk_test_fix_opts_t){ .partitions = 2,
                                                                  .delivery_timeout_ms = 500,
                                                                  .lock_wait_s = 5 });
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, clamp_bumps_version);
        suite_add_tcase(s, tc);
        rc = sk_test_run(s);
        sk_test_fix_teardown();
        return rc;
}
