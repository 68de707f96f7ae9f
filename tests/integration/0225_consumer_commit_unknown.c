/* 0225_consumer_commit_unknown.c: the consumer's batch COMMIT with an unknown outcome
 * (DESIGN.md 16 "Errors", 8 "DB transient error"), on the standalone MariaDB:
 *   - db.commit_lost=1*error: the COMMIT is applied, then the link is dropped and 2013
 *     reported. The worker reads the batch's outcome rows on a fresh session, finds
 *     them and settles the messages as applied: 3 orders, 3 CREATED outcomes, 3 DEDUCT
 *     rows, stock down by 3, nothing fenced, offsets at the high watermark;
 *   - db.commit_lost_before=1*error: the link is dropped instead of sending COMMIT (the
 *     server rolls back). The read finds nothing, the same transaction runs again with
 *     the same keys and creates the orders once.
 * Both log commit_unknown_resolved. */
#include "sk_test.h"

#define WAIT_S 40

static void commit_lost(const char *failpoint, const char *what)
{
        int64_t vid, deadline, hwm;
        sk_order_msg_t m[3];
        char json[3][SK_MSG_MAX], sql[256], log[256];
        pid_t pid;
        int status, i;

        sk_test_log_path(log, sizeof(log), "consumer_0225_%s", what);
        vid = sk_test_voucher_open(10);
        for (i = 0; i < 3; i++) {
                ck_assert_int_eq(sk_test_deduct(vid, sk_test_rand_id(), 0, 0, &m[i], json[i]), 0);
                sk_test_produce_async(vid, json[i], strlen(json[i]));
        }
        sk_test_produce_wait();

        pid = sk_test_consumer_start(&(sk_test_spawn_t){ .failpoints = failpoint, .log_path = log }, 1);
        snprintf(sql, sizeof(sql), "SELECT COUNT(*) FROM tb_seckill_outcome WHERE voucher_id = %" PRId64, vid);
        ck_assert_int_eq(sk_test_wait_i64(WAIT_S, 3, sql), 3);
        deadline = sk_mono_ms() + WAIT_S * 1000;
        hwm = sk_test_hwm_total();
        while (sk_test_committed_total() != hwm && sk_mono_ms() < deadline)
                sk_sleep_ms(200, NULL);
        status = sk_test_stop(pid, 30);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "stop status %d (log %s)", status, log);
        ck_assert_int_eq(sk_test_committed_total(), hwm);
        /* The failpoint fired and the unknown COMMIT was resolved, not guessed. */
        ck_assert_msg(sk_test_file_count(log, "commit_unknown_resolved") >= 1, "no resolution in %s", log);
        /* Exactly once: orders, outcomes, ledger rows, the DB decrement. */
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = %" PRId64, vid), 3);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_seckill_outcome WHERE voucher_id = %" PRId64
                                     " AND outcome = 1", vid), 3);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_voucher_reconcile_log WHERE voucher_id = %" PRId64
                                     " AND log_type = -1", vid), 3);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_voucher_reconcile_log WHERE voucher_id = %" PRId64
                                     " AND log_type = 1", vid), 0);
        ck_assert_int_eq(sk_test_i64("SELECT stock FROM tb_seckill_stock WHERE bucket = 0 AND voucher_id = %" PRId64, vid), 7);
        for (i = 0; i < 3; i++) {
                ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_voucher_order WHERE trace_id = %" PRId64
                                             " AND id = %" PRId64, m[i].trace_id, m[i].order_id), 1);
                ck_assert(!sk_test_fenced(vid, m[i].trace_id));
        }
        /* Redis untouched by the consumer: no rollback ran (stock 10 - 3 deducts). */
        ck_assert_int_eq(sk_test_stock(NULL, NULL, vid), 7);
}

START_TEST(commit_lost_after_apply)
{
        commit_lost("db.commit_lost=1*error", "after");
}
END_TEST

START_TEST(commit_lost_before_apply)
{
        commit_lost("db.commit_lost_before=1*error", "before");
}
END_TEST

int main(void)
{
        Suite *s = suite_create("consumer_commit_unknown");
        TCase *tc = tcase_create("commit_unknown");
        int rc;

        sk_test_fix_setup("cons_cu", &(sk_test_fix_opts_t){ .partitions = 2 });
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, commit_lost_after_apply);
        tcase_add_test(tc, commit_lost_before_apply);
        suite_add_tcase(s, tc);
        rc = sk_test_run_nofork(s);
        sk_test_fix_teardown();
        return rc;
}
