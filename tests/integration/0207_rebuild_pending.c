/* 0207_rebuild_pending.c: the rebuild runs the pending rollbacks first (DESIGN.md 8,
 * rebuild row: "every FAILED outcome's rollback has written its T:r"). A purchase is
 * admitted by deduct.lua and decided FAILED in the DB, but its rollback.lua never ran
 * (cut short). Before the fix the rebuild counted it as settled and copied the DB stock;
 * the rollback that ran later INCRBYed on top of the rebuilt stock (Redis above the DB).
 * Now: after the rebuild the trace is fenced (T:r), Redis stock = DB stock, and a later
 * rollback answers ALREADY and changes nothing. A sold_out one is fenced with the clamp
 * protocol (no restore; the user released). Real Redis, MariaDB and Kafka. */
#include "sk_test.h"
#include "sk/rebuild.h"

START_TEST(pending_rollbacks_run_before_the_copy)
{
        char errstr[512] = "", stock[SK_KEY_MAX], users[SK_KEY_MAX], trace[SK_KEY_MAX];
        char val[256], field[SK_KEY_MAX], uid[SK_ID_STRLEN];
        sk_order_msg_t lost, sold;
        sk_outcome_t existing;
        sk_rebuild_report_t rep;
        sk_rollback_res_t res;
        int64_t vid = sk_test_voucher(&(sk_test_voucher_t){ .init_stock = 10, .db_stock = 10,
                                                            .stock = -1, .db_status = 1 }), t_lost,
                                                            t_sold;
        sk_err_t err;

        sk_test_key(stock, vid, SK_KEY_STOCK);
        sk_test_key(users, vid, SK_KEY_USERS);
        sk_test_key(trace, vid, SK_KEY_TRACE);
        err = sk_voucher_preheat(&sk_test_fx.conf, vid, 3000, &rep, errstr, sizeof(errstr));
        ck_assert_msg(err == SK_OK, "preheat: %s", errstr);

        /* Two admissions (Redis stock 8), both decided FAILED in the DB (DB stock stays
         * 10: no order), neither rolled back in Redis. */
        t_lost = sk_test_admit(vid, sk_test_rand_id(), NULL, &lost, NULL);
        t_sold = sk_test_admit(vid, sk_test_rand_id(), NULL, &sold, NULL);
        ck_assert_int_eq(sk_outcome_fail(sk_test_fx.db, &lost, SK_REASON_LOST, "test", &existing, errstr,
                                         sizeof(errstr)), SK_OK);
        ck_assert_int_eq(sk_outcome_fail(sk_test_fx.db, &sold, SK_REASON_SOLD_OUT, "test", &existing,
                                         errstr, sizeof(errstr)), SK_OK);
        sk_test_get_str(stock, NULL, val, sizeof(val));
        ck_assert_str_eq(val, "8");

        err = sk_rebuild_voucher(&sk_test_fx.conf, vid, 5000, &rep, errstr, sizeof(errstr));
        ck_assert_msg(err == SK_OK, "rebuild: %d %s", err, errstr);
        sk_test_get_str(stock, NULL, val, sizeof(val));
        ck_assert_str_eq(val, "10");

        /* The rollback the consumer or reconciler runs later: ALREADY, nothing added. */
        err = sk_rollback_run(sk_test_fx.r, sk_test_fx.conf.redis_prefix, vid, 0, t_lost, lost.user_id,
                              "reconciler", SK_REASON_LOST, -1,
                              sk_expire_extra_ms(sk_test_fx.conf.reconcile_window_hours), &res, errstr,
                              sizeof(errstr));
        ck_assert_msg(err == SK_OK, "late rollback: %s", errstr);
        sk_test_get_str(stock, NULL, val, sizeof(val));
        ck_assert_msg(strcmp(val, "10") == 0, "Redis stock %s after the late rollback, DB 10",
                      val);
        ck_assert_int_eq(res.already, 1);
        /* Both fences were written by the rebuild, with the flags of their reasons. */
        sk_field_trace(field, t_lost, 'r');
        sk_test_get_str(trace, field, val, sizeof(val));
        ck_assert_msg(strstr(val, "\"reason\":\"lost\"") != NULL, "lost fence: %s", val);
        sk_field_trace(field, t_sold, 'r');
        sk_test_get_str(trace, field, val, sizeof(val));
        ck_assert_msg(strstr(val, "\"reason\":\"sold_out\"") && strstr(val, "\"restored\":0"),
                      "sold_out fence: %s", val);
        sk_id_format(sold.user_id, uid);
        sk_test_get_str(users, uid, val, sizeof(val));
        ck_assert_str_eq(val, "(nil)");

        ck_assert_int_eq(sk_test_i64("SELECT SUM(stock) FROM tb_seckill_stock"), 10);
}
END_TEST

static void setup(void)
{
        sk_test_fix_setup("rebuild_pending", &(sk_test_fix_opts_t){ .partitions = 2,
                                                                    .delivery_timeout_ms = 2000,
                                                                    .lock_wait_s = 5 });
}

int main(void)
{
        Suite *s = suite_create("rebuild_pending");
        TCase *tc = tcase_create("rebuild");
        int rc;

        sk_db_library_init();
        tcase_add_unchecked_fixture(tc, setup, sk_test_fix_teardown);
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, pending_rollbacks_run_before_the_copy);
        suite_add_tcase(s, tc);
        rc = sk_test_run(s);
        return rc;
}
