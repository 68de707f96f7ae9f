/* 0303_consumer_transient.c: transient DB errors in seckill-consumer (DESIGN.md 5, 8),
 * on a one-partition topic so message order is the partition order.
 * 1. Another session holds the voucher row (SELECT ... FOR UPDATE) past the consumer's
 *    session lock-wait timeout (2 s here): the purchase is applied once the lock is
 *    released, with no Redis rollback, and the worker stays in the group (a later
 *    message is applied by the same process).
 * 2. A message of voucher B between two of voucher A on the partition; B's transaction
 *    fails transiently (its row is locked) and the worker is killed with SIGKILL while
 *    retrying: the group's committed offset has not passed B, and after a restart B is
 *    consumed (A's duplicates change nothing).
 * 3. The same with a graceful SIGTERM while B is retrying: exit 0, and the final
 *    commit leaves the committed offset exactly at B. */
#include "sk_test.h"

#define WAIT_S 60

START_TEST(lock_wait_then_applied)
{
        int64_t vid, uid = sk_test_rand_id();
        sk_order_msg_t m, later;
        char json[SK_MSG_MAX], json2[SK_MSG_MAX], sql[256];
        sk_db_t *locker;
        pid_t pid;
        int status;

        vid = sk_test_voucher_open(5);
        pid = sk_test_consumer_start(&(sk_test_spawn_t){ 0 }, 1);
        locker = sk_test_lock_voucher(vid);
        ck_assert_int_eq(sk_test_deduct(vid, uid, 0, 0, &m, json), 0);
        sk_test_produce(vid, json);
        /* Several lock-wait timeouts (2 s each) pass while the row is held. */
        sk_sleep_ms(7000, NULL);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_seckill_outcome WHERE trace_id = %" PRId64, m.trace_id), 0);
        ck_assert(!sk_test_fenced(vid, m.trace_id));                   /* never a Redis rollback */
        ck_assert_int_eq(waitpid(pid, &status, WNOHANG), 0);      /* still running */
        sk_test_unlock(locker);

        snprintf(sql, sizeof(sql), "SELECT COUNT(*) FROM tb_voucher_order WHERE trace_id = %" PRId64, m.trace_id);
        ck_assert_int_eq(sk_test_wait_i64(WAIT_S, 1, sql), 1);
        ck_assert(!sk_test_fenced(vid, m.trace_id));
        ck_assert(sk_test_user_is(vid, uid, m.trace_id));
        ck_assert_int_eq(sk_test_i64("SELECT stock FROM tb_seckill_stock WHERE bucket = 0 AND voucher_id = %" PRId64, vid), 4);

        /* The worker is still in the group and serving. */
        ck_assert_int_eq(sk_test_deduct(vid, sk_test_rand_id(), 0, 0, &later, json2), 0);
        sk_test_produce(vid, json2);
        snprintf(sql, sizeof(sql), "SELECT COUNT(*) FROM tb_voucher_order WHERE trace_id = %" PRId64, later.trace_id);
        ck_assert_int_eq(sk_test_wait_i64(WAIT_S, 1, sql), 1);
        status = sk_test_stop(pid, 30);
        ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}
END_TEST

START_TEST(b_between_a_survives_kill)
{
        int64_t va, vb;
        sk_order_msg_t a1, b, a2;
        char j1[SK_MSG_MAX], jb[SK_MSG_MAX], j2[SK_MSG_MAX], sql[256];
        int64_t base, off_b;
        sk_db_t *locker;
        pid_t pid;
        int status;

        va = sk_test_voucher_open(5);
        vb = sk_test_voucher_open(5);
        ck_assert_int_eq(sk_test_deduct(va, sk_test_rand_id(), 0, 0, &a1, j1), 0);
        ck_assert_int_eq(sk_test_deduct(vb, sk_test_rand_id(), 0, 0, &b, jb), 0);
        ck_assert_int_eq(sk_test_deduct(va, sk_test_rand_id(), 0, 0, &a2, j2), 0);
        base = sk_test_committed(0);           /* everything before is consumed (previous case) */
        ck_assert_int_ge(base, 0);
        off_b = base + 1;              /* A1 at base, B at base+1, A2 at base+2 */
        locker = sk_test_lock_voucher(vb);
        sk_test_produce_async(va, j1, strlen(j1));
        sk_test_produce_async(vb, jb, strlen(jb));
        sk_test_produce_async(va, j2, strlen(j2));
        sk_test_produce_wait();

        pid = sk_test_consumer_start(&(sk_test_spawn_t){ 0 }, 1);
        snprintf(sql, sizeof(sql), "SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = %" PRId64, va);
        ck_assert_int_eq(sk_test_wait_i64(WAIT_S, 2, sql), 2);
        /* B is retrying against the lock; let the auto-commit run, then kill. */
        sk_sleep_ms(3000, NULL);
        ck_assert_int_le(sk_test_committed(0), off_b);
        kill(pid, SIGKILL);
        ck_assert(sk_test_wait(pid, 10) != -1);
        ck_assert_int_le(sk_test_committed(0), off_b);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_seckill_outcome WHERE trace_id = %" PRId64, b.trace_id), 0);
        sk_test_unlock(locker);

        pid = sk_test_consumer_start(&(sk_test_spawn_t){ 0 }, 1);
        snprintf(sql, sizeof(sql), "SELECT COUNT(*) FROM tb_voucher_order WHERE trace_id = %" PRId64, b.trace_id);
        ck_assert_int_eq(sk_test_wait_i64(WAIT_S, 1, sql), 1);
        {
                int64_t deadline = sk_mono_ms() + WAIT_S * 1000;
                while (sk_test_committed(0) != base + 3 && sk_mono_ms() < deadline)
                        sk_sleep_ms(200, NULL);
        }
        status = sk_test_stop(pid, 30);
        ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        ck_assert_int_eq(sk_test_committed(0), base + 3);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = %" PRId64, va), 2);
        ck_assert_int_eq(sk_test_i64("SELECT stock FROM tb_seckill_stock WHERE bucket = 0 AND voucher_id = %" PRId64, va), 3);
        ck_assert_int_eq(sk_test_i64("SELECT stock FROM tb_seckill_stock WHERE bucket = 0 AND voucher_id = %" PRId64, vb), 4);
        ck_assert(!sk_test_fenced(vb, b.trace_id));
}
END_TEST

START_TEST(sigterm_while_retrying_keeps_offset)
{
        int64_t va, vb;
        sk_order_msg_t a1, b, a2;
        char j1[SK_MSG_MAX], jb[SK_MSG_MAX], j2[SK_MSG_MAX], sql[256];
        int64_t base, off_b;
        sk_db_t *locker;
        pid_t pid;
        int status;

        /* As above, but a graceful stop (SIGTERM) while B is retrying: the process
         * exits 0 after its final commit, which must not pass B either. */
        va = sk_test_voucher_open(5);
        vb = sk_test_voucher_open(5);
        ck_assert_int_eq(sk_test_deduct(va, sk_test_rand_id(), 0, 0, &a1, j1), 0);
        ck_assert_int_eq(sk_test_deduct(vb, sk_test_rand_id(), 0, 0, &b, jb), 0);
        ck_assert_int_eq(sk_test_deduct(va, sk_test_rand_id(), 0, 0, &a2, j2), 0);
        base = sk_test_committed(0);
        ck_assert_int_ge(base, 0);
        off_b = base + 1;
        locker = sk_test_lock_voucher(vb);
        sk_test_produce_async(va, j1, strlen(j1));
        sk_test_produce_async(vb, jb, strlen(jb));
        sk_test_produce_async(va, j2, strlen(j2));
        sk_test_produce_wait();

        pid = sk_test_consumer_start(&(sk_test_spawn_t){ 0 }, 1);
        snprintf(sql, sizeof(sql), "SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = %" PRId64, va);
        ck_assert_int_eq(sk_test_wait_i64(WAIT_S, 2, sql), 2);
        sk_sleep_ms(1000, NULL);
        status = sk_test_stop(pid, 30);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "stop status %d", status);
        ck_assert_int_eq(sk_test_committed(0), off_b);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_seckill_outcome WHERE trace_id = %" PRId64, b.trace_id), 0);
        ck_assert(!sk_test_fenced(vb, b.trace_id));
        sk_test_unlock(locker);

        pid = sk_test_consumer_start(&(sk_test_spawn_t){ 0 }, 1);
        snprintf(sql, sizeof(sql), "SELECT COUNT(*) FROM tb_voucher_order WHERE trace_id = %" PRId64, b.trace_id);
        ck_assert_int_eq(sk_test_wait_i64(WAIT_S, 1, sql), 1);
        {
                int64_t deadline = sk_mono_ms() + WAIT_S * 1000;
                while (sk_test_committed(0) != base + 3 && sk_mono_ms() < deadline)
                        sk_sleep_ms(200, NULL);
        }
        status = sk_test_stop(pid, 30);
        ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        ck_assert_int_eq(sk_test_committed(0), base + 3);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = %" PRId64, va), 2);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("consumer_transient");
        TCase *tc = tcase_create("transient");
        int rc;

        sk_test_fix_setup("cons_tr", &(sk_test_fix_opts_t){ .partitions = 1 });
        tcase_set_timeout(tc, 280);
        tcase_add_test(tc, lock_wait_then_applied);
        tcase_add_test(tc, b_between_a_survives_kill);
        tcase_add_test(tc, sigterm_while_retrying_keeps_offset);
        suite_add_tcase(s, tc);
        rc = sk_test_run_nofork(s);
        sk_test_fix_teardown();
        return rc;
}
