/* 0229_failed_commit_unknown.c: a FAILED outcome whose COMMIT has an unknown outcome
 * (DESIGN.md 16 "Errors": reconciler and rebuild read their FAILED rows), on the
 * standalone MariaDB. sk_outcome_fail is the one writer of FAILED rows (consumer,
 * reconciler, rebuild, through sk/decide.h).
 *   - in this process, sk_decide_failed (mode reconciler, reason lost) with
 *     db.commit_lost=1*error armed right before the call: the trace's row is read back
 *     on a fresh session, the decision is RECORDED and rolled back: exactly one FAILED
 *     row, one RESTORE row, Redis stock restored once; with db.commit_lost_before the
 *     same transaction runs again: the same counts. The failpoint must have fired
 *     inside the call (the old sk_outcome_fail committed with sk_db_commit, which
 *     evaluates neither failpoint);
 *   - a seckill-reconciler pass recording FAILED front_rollback for a DEDUCT the front
 *     fenced, with db.commit_lost=1*error in the reconciler process (its first
 *     sk_db_commit_outcome is that FAILED row): exit 0, fencedRecorded 1, exactly one
 *     FAILED and one RESTORE row, stock unchanged. */
#include "sk_test.h"
#include "sk/decide.h"
#include "sk/failpoint.h"

static void rows_once(int64_t trace, const char *reason)
{
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_seckill_outcome WHERE trace_id = %" PRId64
                                     " AND outcome = 2 AND reason = '%s'", trace, reason), 1);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_seckill_outcome WHERE trace_id = %" PRId64,
                                     trace), 1);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_voucher_reconcile_log WHERE trace_id = %"
                                     PRId64 " AND log_type = 1", trace), 1);
}

static void decide_lost(const char *spec, const char *point)
{
        char json[SK_MSG_MAX], errstr[512] = "";
        int64_t vid = sk_test_voucher(&(sk_test_voucher_t){ .init_stock = 5, .db_stock = 5,
                                                            .db_status = 1, .preheat = 1 }),
                user = sk_test_rand_id(), trace;
        sk_order_msg_t msg;
        sk_decider_t d;
        sk_decision_t dec;
        sk_err_t err;
        int fired;

        trace = sk_test_admit(vid, user, NULL, NULL, json);
        sk_test_parse_msg(json, &msg);
        ck_assert_int_eq(sk_test_stock(NULL, NULL, vid), 4);
        sk_test_decider(&d);
        ck_assert_int_eq(sk_failpoint_setup(spec, errstr, sizeof(errstr)), 0);
        err = sk_decide_failed(&d, &msg, SK_REASON_LOST, "test", &dec, errstr, sizeof(errstr));
        fired = !sk_failpoint_eval(point);      /* 1*: consumed only if the call met it */
        ck_assert_int_eq(sk_failpoint_setup(NULL, errstr, sizeof(errstr)), 0);
        ck_assert_msg(fired, "%s never fired in sk_decide_failed", point);
        ck_assert_msg(err == SK_OK, "decide_failed: %d %s", err, errstr);
        ck_assert_int_eq(dec.how, SK_DECIDED_RECORDED);
        ck_assert_int_eq(dec.rolled_back, 1);
        ck_assert_int_eq(dec.res.restored, 1);
        rows_once(trace, "lost");
        ck_assert_int_eq(sk_test_fenced(vid, trace), 1);
        ck_assert_int_eq(sk_test_stock(NULL, NULL, vid), 5);

        /* Deciding again follows the one row: nothing restored twice. */
        ck_assert_int_eq(sk_decide_failed(&d, &msg, SK_REASON_LOST, "test", &dec, errstr,
                                          sizeof(errstr)), SK_OK);
        ck_assert_int_eq(dec.how, SK_DECIDED_FOLLOWED_FAILED);
        rows_once(trace, "lost");
        ck_assert_int_eq(sk_test_stock(NULL, NULL, vid), 5);
}

START_TEST(decide_commit_lost_after_apply)
{
        decide_lost("db.commit_lost=1*error", "db.commit_lost");
}
END_TEST

START_TEST(decide_commit_lost_before_apply)
{
        decide_lost("db.commit_lost_before=1*error", "db.commit_lost_before");
}
END_TEST

START_TEST(reconciler_fence_commit_lost)
{
        char out[65536], vs[SK_ID_STRLEN], errstr[512] = "";
        const char *args[] = { "--grace-seconds", "2", "--json", "--voucher", vs, NULL };
        int64_t vid = sk_test_voucher(&(sk_test_voucher_t){ .init_stock = 5, .db_stock = 5,
                                                            .db_status = 1, .preheat = 1 }),
                user = sk_test_rand_id(), trace;
        sk_rollback_res_t res;

        sk_id_format(vid, vs);
        trace = sk_test_admit(vid, user, NULL, NULL, NULL);
        ck_assert_int_eq(sk_rollback_run(sk_test_fx.r, sk_test_fx.conf.redis_prefix, vid, 0, trace, user,
                                         "front", SK_REASON_FRONT_ROLLBACK, -1,
                                         sk_expire_extra_ms(sk_test_fx.conf.reconcile_window_hours), &res,
                                         errstr, sizeof(errstr)), SK_OK);
        ck_assert_int_eq(res.restored, 1);
        sk_sleep_ms(2500, NULL); /* past the grace */
        ck_assert_int_eq(sk_test_reconcile(args, "db.commit_lost=1*error", out, sizeof(out)), 0);
        ck_assert_int_eq(sk_test_report_field(out, vid, "fencedRecorded"), 1);
        rows_once(trace, "front_rollback");
        ck_assert_int_eq(sk_test_stock(NULL, NULL, vid), 5);
        ck_assert_int_eq(sk_test_i64("SELECT stock FROM tb_seckill_stock WHERE voucher_id = %" PRId64, vid), 5);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("failed_commit_unknown");
        TCase *tc = tcase_create("commit_unknown");
        int rc;

        sk_test_fix_setup("fail_cu", &(sk_test_fix_opts_t){ .delivery_timeout_ms = 500 });
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, decide_commit_lost_after_apply);
        tcase_add_test(tc, decide_commit_lost_before_apply);
        tcase_add_test(tc, reconciler_fence_commit_lost);
        suite_add_tcase(s, tc);
        rc = sk_test_run_nofork(s);
        sk_test_fix_teardown();
        return rc;
}
