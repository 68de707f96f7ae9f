/* 0302_consumer_failpoints.c: crash points of seckill-consumer (DESIGN.md 8 "worker
 * killed before/after commit", 11). For each of consumer.before_commit,
 * consumer.between_statements and consumer.after_commit = 1*exit: admit 3 purchases,
 * start the consumer with the failpoint, see it die by SIGKILL, restart it without
 * failpoints -> every message applied exactly once (3 orders, stock down by 3), then a
 * clean SIGTERM stop (exit 0) leaves the group's committed offset at the high
 * watermark. consumer.before_rollback=1*exit on a has_order purchase: the FAILED
 * outcome is committed, the process dies before rollback.lua, and the restarted
 * consumer follows the FAILED row and runs it (stock restored once, users[U] re-pointed
 * to the trace T0 of the user's active order).
 * Then the same message consumed by two consumers (two groups) at once, with a sleep
 * between the statements so the transactions overlap -> one order. */
#include "sk_test.h"

#define WAIT_S 60

static void crash_and_restart(const char *failpoint, int expect_outcomes_after_crash)
{
        int64_t vid;
        sk_order_msg_t m[3];
        char json[3][SK_MSG_MAX], sql[256];
        pid_t pid;
        int status, i;

        vid = sk_test_voucher_open(10);
        for (i = 0; i < 3; i++) {
                ck_assert_int_eq(sk_test_deduct(vid, sk_test_rand_id(), 0, 0, &m[i], json[i]), 0);
                sk_test_produce_async(vid, json[i], strlen(json[i]));
        }
        sk_test_produce_wait();

        pid = sk_test_consumer_start(&(sk_test_spawn_t){ .failpoints = failpoint }, 1);
        status = sk_test_wait(pid, WAIT_S);
        ck_assert_msg(status != -1, "consumer with %s did not die", failpoint);
        ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "%s: status %d", failpoint, status);
        snprintf(sql, sizeof(sql), "SELECT COUNT(*) FROM tb_seckill_outcome WHERE voucher_id = %" PRId64, vid);
        if (expect_outcomes_after_crash >= 0)
                ck_assert_int_eq(sk_test_i64("%s", sql), expect_outcomes_after_crash);
        else /* committed, then killed: at least the first batch's outcomes exist */
                ck_assert_int_ge(sk_test_i64("%s", sql), 1);

        pid = sk_test_consumer_start(&(sk_test_spawn_t){ 0 }, 1);
        ck_assert_int_eq(sk_test_wait_i64(WAIT_S, 3, sql), 3);
        snprintf(sql, sizeof(sql), "SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = %" PRId64, vid);
        /* The outcomes may all predate the restart (after_commit): wait until the
         * restarted consumer has consumed and committed everything, then stop cleanly. */
        {
                int64_t deadline = sk_mono_ms() + WAIT_S * 1000, hwm = sk_test_hwm_total();
                while (sk_test_committed_total() != hwm && sk_mono_ms() < deadline)
                        sk_sleep_ms(200, NULL);
        }
        status = sk_test_stop(pid, 30);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "stop status %d", status);
        ck_assert_int_eq(sk_test_i64("%s", sql), 3);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_seckill_outcome WHERE voucher_id = %" PRId64
                                " AND outcome = 1", vid), 3);
        ck_assert_int_eq(sk_test_i64("SELECT stock FROM tb_seckill_stock WHERE bucket = 0 AND voucher_id = %" PRId64, vid), 7);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_voucher_reconcile_log WHERE voucher_id = %" PRId64, vid), 3);
        for (i = 0; i < 3; i++)
                ck_assert(!sk_test_fenced(vid, m[i].trace_id));
        ck_assert_int_eq(sk_test_committed_total(), sk_test_hwm_total());
}

START_TEST(before_commit_exit)
{
        crash_and_restart("consumer.before_commit=1*exit", 0);
}
END_TEST

START_TEST(between_statements_exit)
{
        crash_and_restart("consumer.between_statements=1*exit", 0);
}
END_TEST

START_TEST(after_commit_exit)
{
        crash_and_restart("consumer.after_commit=1*exit", -1);
}
END_TEST

START_TEST(before_rollback_exit)
{
        int64_t vid = sk_test_rand_id(), uid = sk_test_rand_id(), t0 = sk_test_rand_id();
        sk_order_msg_t m;
        char json[SK_MSG_MAX], sql[256];
        pid_t pid;
        int status;

        sk_test_voucher(&(sk_test_voucher_t){ .vid = vid, .init_stock = 5, .db_stock = 4, .stock = 4,
                                              .status = 1, .db_status = 1 });
        sk_test_exec("INSERT INTO tb_voucher_order (id, user_id, voucher_id, trace_id, status) VALUES "
                "(%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ", 1)", sk_test_rand_id(), uid, vid,
                t0);
        ck_assert_int_eq(sk_test_deduct(vid, uid, 0, 0, &m, json), 0);
        sk_test_produce(vid, json);
        pid = sk_test_consumer_start(&(sk_test_spawn_t){ .failpoints = "consumer.before_rollback=1*exit" }, 1);
        status = sk_test_wait(pid, WAIT_S);
        ck_assert(status != -1 && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
        /* FAILED committed, no fence yet, stock not restored. */
        ck_assert_int_eq(sk_test_i64("SELECT outcome FROM tb_seckill_outcome WHERE trace_id = %" PRId64, m.trace_id), 2);
        ck_assert(!sk_test_fenced(vid, m.trace_id));
        ck_assert_int_eq(sk_test_stock(NULL, NULL, vid), 3);

        pid = sk_test_consumer_start(&(sk_test_spawn_t){ 0 }, 1);
        for (int t = 0; t < WAIT_S * 10 && !sk_test_fenced(vid, m.trace_id); t++)
                sk_sleep_ms(100, NULL);
        status = sk_test_stop(pid, 30);
        ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        ck_assert(sk_test_fenced(vid, m.trace_id));
        ck_assert_int_eq(sk_test_stock(NULL, NULL, vid), 4);
        ck_assert(sk_test_user_is(vid, uid, t0)); /* the follow re-points to T0 too */
        snprintf(sql, sizeof(sql), "SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = %" PRId64, vid);
        ck_assert_int_eq(sk_test_i64("%s", sql), 1);
}
END_TEST

START_TEST(two_consumers_same_message)
{
        int64_t vid, uid = sk_test_rand_id();
        sk_order_msg_t m;
        char json[SK_MSG_MAX], g1[256], g2[256], sql[256];
        pid_t p1, p2;
        int s1, s2;

        /* Both groups start from the end of what earlier cases produced... they read
         * from the beginning (new groups): every earlier message is a duplicate too. */
        vid = sk_test_voucher_open(5);
        ck_assert_int_eq(sk_test_deduct(vid, uid, 0, 0, &m, json), 0);
        sk_test_produce(vid, json);
        snprintf(g1, sizeof(g1), "%s-a", sk_test_fx.conf.group_id);
        snprintf(g2, sizeof(g2), "%s-b", sk_test_fx.conf.group_id);
        p1 = sk_test_consumer_start(&(sk_test_spawn_t){ .group = g1, .failpoints = "consumer.between_statements=sleep(300)" }, 1);
        p2 = sk_test_consumer_start(&(sk_test_spawn_t){ .group = g2, .failpoints = "consumer.between_statements=sleep(300)" }, 1);
        snprintf(sql, sizeof(sql), "SELECT COUNT(*) FROM tb_seckill_outcome WHERE trace_id = %" PRId64, m.trace_id);
        ck_assert_int_eq(sk_test_wait_i64(WAIT_S, 1, sql), 1);
        sk_sleep_ms(3000, NULL); /* both had their go */
        s1 = sk_test_stop(p1, 30);
        s2 = sk_test_stop(p2, 30);
        ck_assert(WIFEXITED(s1) && WEXITSTATUS(s1) == 0);
        ck_assert(WIFEXITED(s2) && WEXITSTATUS(s2) == 0);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = %" PRId64, vid), 1);
        ck_assert_int_eq(sk_test_i64("SELECT stock FROM tb_seckill_stock WHERE bucket = 0 AND voucher_id = %" PRId64, vid), 4);
        ck_assert(!sk_test_fenced(vid, m.trace_id));
        /* Nothing of the earlier cases was applied twice either. */
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_voucher_order o JOIN tb_seckill_outcome s "
                                "ON s.trace_id = o.trace_id AND s.outcome = 1"),
                         sk_test_i64("SELECT COUNT(*) FROM tb_seckill_outcome WHERE outcome = 1"));
}
END_TEST

int main(void)
{
        Suite *s = suite_create("consumer_failpoints");
        TCase *tc = tcase_create("crash");
        int rc;

        sk_test_fix_setup("cons_fp", &(sk_test_fix_opts_t){ .partitions = 2 });
        tcase_set_timeout(tc, 280);
        tcase_add_test(tc, before_commit_exit);
        tcase_add_test(tc, between_statements_exit);
        tcase_add_test(tc, after_commit_exit);
        tcase_add_test(tc, before_rollback_exit);
        tcase_add_test(tc, two_consumers_same_message);
        suite_add_tcase(s, tc);
        rc = sk_test_run_nofork(s);
        sk_test_fix_teardown();
        return rc;
}
