/* 0500_recon_redrive.c: seckill-reconciler re-drives purchases whose message never
 * reached Kafka (DESIGN.md 8 "front killed after the deduct").
 *   1. A DEDUCT written with deduct.lua and never published, older than the grace
 *      period, with a consumer running: the pass re-drives it (exit 1), the consumer
 *      creates the order, exactly once; the next pass finds it consistent (exit 0) and
 *      marks the DEDUCT reconcile-log row consistent (4).
 *   2. Consumers absent for longer than grace x max-redrive: passes re-drive once, then
 *      wait and report (exit 2), nothing is rolled back; once a consumer runs, the
 *      purchase completes and a pass is consistent. */
#include "sk_test.h"

static const char *const ARGS_FAST[] = { "--grace-seconds", "2", "--max-redrive", "2", "--json", NULL };

START_TEST(redrive_with_consumer)
{
        char out[65536];
        int64_t vid = sk_test_voucher(&(sk_test_voucher_t){ .init_stock = 5, .db_stock = 5,
                                                            .db_status = 1, .preheat = 1 }),
                                                            user = sk_test_rand_id(), order = 0,
                                                            trace;
        pid_t cons;
        int rc;

        trace = sk_test_admit(vid, user, &order, NULL, NULL);
        sk_sleep_ms(2500, NULL); /* older than --grace-seconds 2 */
        cons = sk_test_consumer_start(&(sk_test_spawn_t){ 0 }, 0);

        rc = sk_test_reconcile(ARGS_FAST, NULL, out, sizeof(out));
        ck_assert_int_eq(rc, 1);
        ck_assert_int_eq(sk_test_report_field(out, vid, "redriven"), 1);
        ck_assert_int_eq(sk_test_report_field(out, vid, "rolledBack"), 0);

        ck_assert_int_eq(sk_test_wait_outcome(trace, 60), SK_OUTCOME_CREATED);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = %" PRId64, vid), 1);
        ck_assert_int_eq(sk_test_i64("SELECT id FROM tb_voucher_order WHERE trace_id = %" PRId64, trace), order);
        ck_assert_int_eq(sk_test_i64("SELECT stock FROM tb_seckill_stock WHERE bucket = 0 AND voucher_id = %" PRId64, vid), 4);

        rc = sk_test_reconcile(ARGS_FAST, NULL, out, sizeof(out));
        ck_assert_int_eq(rc, 0);
        ck_assert_int_eq(sk_test_report_field(out, vid, "consistent"), 1);
        ck_assert_int_eq(sk_test_report_field(out, vid, "redriven"), 0);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = %" PRId64, vid), 1);
        ck_assert_int_eq(sk_test_i64("SELECT reconciliation_status FROM tb_voucher_reconcile_log"
                              " WHERE trace_id = %" PRId64 " AND log_type = -1", trace), 4);
        sk_test_stop(cons, 30);
}
END_TEST

START_TEST(consumers_absent_never_roll_back)
{
        char out[65536];
        int64_t vid = sk_test_voucher(&(sk_test_voucher_t){ .init_stock = 5, .db_stock = 5,
                                                            .db_status = 1, .preheat = 1 }),
                                                            user = sk_test_rand_id(), trace;
        int64_t t0;
        int rc, passes = 0, saw_wait = 0;
        pid_t cons;

        trace = sk_test_admit(vid, user, NULL, NULL, NULL);
        sk_sleep_ms(2500, NULL);
        /* grace 1 s x max-redrive 2 = 2 s; keep passing for 6 s with nobody consuming. */
        t0 = sk_mono_ms();
        while (sk_mono_ms() - t0 < 6000 || passes < 3) {
                rc = sk_test_reconcile(ARGS_FAST, NULL, out, sizeof(out));
                passes++;
                if (passes == 1) {
                        ck_assert_int_eq(rc, 1);
                        ck_assert_int_eq(sk_test_report_field(out, vid, "redriven"), 1);
                } else {
                        ck_assert_int_eq(rc, 2);
                        ck_assert_int_eq(sk_test_report_field(out, vid, "waiting"), 1);
                        ck_assert_int_eq(sk_test_report_field(out, vid, "redriven"), 0);
                        saw_wait = 1;
                }
                ck_assert_int_eq(sk_test_report_field(out, vid, "rolledBack"), 0);
                ck_assert_int_eq(sk_test_outcome(trace), 0);
                ck_assert_int_eq(sk_test_fenced(vid, trace), 0);
                ck_assert_int_eq(sk_test_has_user(vid, user), 1);
                ck_assert_int_eq(sk_test_stock(NULL, NULL, vid), 4);
                sk_sleep_ms(700, NULL);
        }
        ck_assert(saw_wait);

        cons = sk_test_consumer_start(&(sk_test_spawn_t){ 0 }, 0);
        ck_assert_int_eq(sk_test_wait_outcome(trace, 60), SK_OUTCOME_CREATED);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = %" PRId64, vid), 1);
        rc = sk_test_reconcile(ARGS_FAST, NULL, out, sizeof(out));
        ck_assert_int_eq(rc, 0);
        ck_assert_int_eq(sk_test_report_field(out, vid, "consistent"), 1);
        sk_test_stop(cons, 30);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("0500_recon_redrive");
        TCase *tc = tcase_create("redrive");
        int rc;

        sk_test_fix_setup("recon_redrive", &(sk_test_fix_opts_t){ .partitions = 2,
                                                                  .delivery_timeout_ms = 500,
                                                                  .lock_wait_s = 5 });
        tcase_set_timeout(tc, 240);
        tcase_add_test(tc, redrive_with_consumer);
        tcase_add_test(tc, consumers_absent_never_roll_back);
        suite_add_tcase(s, tc);
        rc = sk_test_run(s);
        sk_test_fix_teardown();
        return rc;
}
