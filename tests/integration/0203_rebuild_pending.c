/* 0203_rebuild_pending.c: the rebuild runs the pending rollbacks first (DESIGN.md 8,
 * rebuild row: "every FAILED outcome's rollback has written its T:r"). A purchase is
 * admitted by deduct.lua and decided FAILED in the DB, but its rollback.lua never ran
 * (cut short). Before the fix the rebuild counted it as settled and copied the DB stock;
 * the rollback that ran later INCRBYed on top of the rebuilt stock (Redis above the DB).
 * Now: after the rebuild the trace is fenced (T:r), Redis stock = DB stock, and a later
 * rollback answers ALREADY and changes nothing. A sold_out one is fenced with the clamp
 * protocol (no restore; the user released). Real Redis, MariaDB and Kafka. */
#include "0203_rebuild_support.h"

START_TEST(pending_rollbacks_run_before_the_copy)
{
        char errstr[512] = "", stock[SK_KEY_MAX], users[SK_KEY_MAX], trace[SK_KEY_MAX];
        char val[256], field[SK_KEY_MAX], uid[SK_ID_STRLEN];
        sk_order_msg_t lost, sold;
        sk_outcome_t existing;
        sk_rebuild_report_t rep;
        sk_rollback_res_t res;
        int64_t vid = rb_voucher(10, 10), t_lost, t_sold;
        sk_err_t err;

        rb_key(stock, vid, SK_KEY_STOCK);
        rb_key(users, vid, SK_KEY_USERS);
        rb_key(trace, vid, SK_KEY_TRACE);
        err = sk_voucher_preheat(&rb_conf, vid, 3000, &rep, errstr, sizeof(errstr));
        ck_assert_msg(err == SK_OK, "preheat: %s", errstr);

        /* Two admissions (Redis stock 8), both decided FAILED in the DB (DB stock stays
         * 10: no order), neither rolled back in Redis. */
        t_lost = rb_deduct(vid, sk_test_rand_id(), &lost, NULL);
        t_sold = rb_deduct(vid, sk_test_rand_id(), &sold, NULL);
        ck_assert_int_eq(sk_outcome_fail(rb_db, &lost, SK_REASON_LOST, "test", &existing, errstr,
                                         sizeof(errstr)), SK_OK);
        ck_assert_int_eq(sk_outcome_fail(rb_db, &sold, SK_REASON_SOLD_OUT, "test", &existing,
                                         errstr, sizeof(errstr)), SK_OK);
        rb_get(stock, NULL, val, sizeof(val));
        ck_assert_str_eq(val, "8");

        err = sk_rebuild_voucher(&rb_conf, vid, 5000, &rep, errstr, sizeof(errstr));
        ck_assert_msg(err == SK_OK, "rebuild: %d %s", err, errstr);
        rb_get(stock, NULL, val, sizeof(val));
        ck_assert_str_eq(val, "10");

        /* The rollback the consumer or reconciler runs later: ALREADY, nothing added. */
        err = sk_rollback_run(rb_r, rb_conf.redis_prefix, vid, 0, t_lost, lost.user_id,
                              "reconciler", SK_REASON_LOST, -1,
                              sk_expire_extra_ms(rb_conf.reconcile_window_hours), &res, errstr,
                              sizeof(errstr));
        ck_assert_msg(err == SK_OK, "late rollback: %s", errstr);
        rb_get(stock, NULL, val, sizeof(val));
        ck_assert_msg(strcmp(val, "10") == 0, "Redis stock %s after the late rollback, DB 10",
                      val);
        ck_assert_int_eq(res.already, 1);
        /* Both fences were written by the rebuild, with the flags of their reasons. */
        sk_field_trace(field, t_lost, 'r');
        rb_get(trace, field, val, sizeof(val));
        ck_assert_msg(strstr(val, "\"reason\":\"lost\"") != NULL, "lost fence: %s", val);
        sk_field_trace(field, t_sold, 'r');
        rb_get(trace, field, val, sizeof(val));
        ck_assert_msg(strstr(val, "\"reason\":\"sold_out\"") && strstr(val, "\"restored\":0"),
                      "sold_out fence: %s", val);
        sk_id_format(sold.user_id, uid);
        rb_get(users, uid, val, sizeof(val));
        ck_assert_str_eq(val, "(nil)");

        ck_assert_int_eq(rb_sql_i64("SELECT SUM(stock) FROM tb_seckill_stock"), 10);
}
END_TEST

static void setup(void)
{
        rb_setup("rebuild_pending", 2);
}

int main(void)
{
        Suite *s = suite_create("rebuild_pending");
        TCase *tc = tcase_create("rebuild");
        int rc;

        sk_db_library_init();
        tcase_add_unchecked_fixture(tc, setup, rb_teardown);
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, pending_rollbacks_run_before_the_copy);
        suite_add_tcase(s, tc);
        rc = sk_test_run(s);
        return rc;
}
