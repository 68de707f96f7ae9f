/* 0227_closer_commit_unknown.c: the closer's COMMIT with an unknown outcome (DESIGN.md
 * v5 16 "Errors": closer/cancel read the orders' status; a closed order is then
 * released, release.lua being idempotent), on the standalone MariaDB. Three purchases
 * are applied by a first consumer (pay window 1 s, grace 1 h: it closes nothing); a
 * second one (grace 0, closer every 200 ms) closes them with db.commit_lost=1*error:
 * the close COMMIT applies, its answer is lost. The closer reads the orders' status on
 * a fresh session, finds them CLOSED and releases each exactly once: 3 CLOSED orders,
 * one RESTORE row (business_type 5) each, DB stock back to 10, a T:x per trace, Redis
 * stock back to 10 (not 13). The old closer left the releases to the reconciler (no
 * T:x, Redis stock 7). With db.commit_lost_before the orders stay UNPAID after the
 * read and a later round closes and releases them, once. */
#include "sk_test.h"

#define WAIT_S 40

static char *hget_tx(sk_redis_t *rc, int64_t vid, int64_t trace)
{
        char k[SK_KEY_MAX], f[40];

        sk_key_voucher(k, sk_test_fx.conf.redis_prefix, vid, 0, SK_KEY_TRACE);
        snprintf(f, sizeof(f), "%" PRId64 ":x", trace);
        return sk_test_hget(rc, k, f);
}

static void close_lost(const char *failpoint, const char *what)
{
        static const char *const env_a[] = { "SECKILL_PAY_TIMEOUT_S=1", "SECKILL_PAY_GRACE_S=3600", NULL };
        static const char *const env_b[] = { "SECKILL_PAY_GRACE_S=0", "SECKILL_CLOSE_INTERVAL_MS=200", NULL };
        sk_redis_t *rc = sk_test_redis(&sk_test_fx.conf);
        int64_t vid, until;
        sk_order_msg_t m[3];
        char json[3][SK_MSG_MAX], sql[256], log[256];
        pid_t pid;
        int i, released = 0;

        sk_test_log_path(log, sizeof(log), "consumer_0227_%s", what);
        vid = sk_test_voucher_open(10);
        for (i = 0; i < 3; i++) {
                ck_assert_int_eq(sk_test_deduct(vid, sk_test_rand_id(), 0, 0, &m[i], json[i]), 0);
                sk_test_produce_async(vid, json[i], strlen(json[i]));
        }
        sk_test_produce_wait();
        pid = sk_test_consumer_start(&(sk_test_spawn_t){ .env = env_a }, 1);
        snprintf(sql, sizeof(sql), "SELECT COUNT(*) FROM tb_voucher_order WHERE status = 1 AND voucher_id = %"
                 PRId64, vid);
        ck_assert_int_eq(sk_test_wait_i64(WAIT_S, 3, sql), 3);
        ck_assert_int_eq(sk_test_stop(pid, 30), 0);
        ck_assert_int_eq(sk_test_stock(NULL, NULL, vid), 7);

        sk_sleep_ms(1100, NULL); /* past the 1 s pay window */
        pid = sk_test_consumer_start(&(sk_test_spawn_t){ .env = env_b, .failpoints = failpoint,
                                                         .log_path = log }, 1);
        snprintf(sql, sizeof(sql), "SELECT COUNT(*) FROM tb_voucher_order WHERE status = 4 AND voucher_id = %"
                 PRId64, vid);
        ck_assert_int_eq(sk_test_wait_i64(WAIT_S, 3, sql), 3);
        until = sk_mono_ms() + 20000;
        while (released < 3 && sk_mono_ms() < until) {
                released = 0;
                for (i = 0; i < 3; i++) {
                        char *tx = hget_tx(rc, vid, m[i].trace_id);
                        released += tx != NULL;
                        free(tx);
                }
                if (released < 3)
                        sk_sleep_ms(100, NULL);
        }
        sk_sleep_ms(600, NULL); /* a second close or release would show now */
        ck_assert_int_eq(sk_test_stop(pid, 30), 0);
        ck_assert_msg(released == 3, "%d of 3 closed orders released by the closer (log %s)", released, log);
        ck_assert_msg(sk_test_file_count(log, "close_commit_unknown") >= 1, "no resolution in %s", log);
        ck_assert_int_eq(sk_test_stock(NULL, NULL, vid), 10);
        ck_assert_int_eq(sk_test_i64("SELECT stock FROM tb_seckill_stock WHERE bucket = 0 AND voucher_id = %"
                                     PRId64, vid), 10);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_voucher_reconcile_log WHERE voucher_id = %" PRId64
                                     " AND log_type = 1 AND business_type = 5", vid), 3);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_voucher_reconcile_log WHERE voucher_id = %" PRId64
                                     " AND log_type = 1", vid), 3);
        for (i = 0; i < 3; i++) {
                char *tx = hget_tx(rc, vid, m[i].trace_id);
                ck_assert_msg(tx && strstr(tx, "\"restored\":1"), "T:x of trace %" PRId64 ": %s",
                              m[i].trace_id, tx ? tx : "(none)");
                free(tx);
        }
        {
                char v[SK_ID_STRLEN];

                sk_id_format(vid, v);
                ck_assert_int_eq(sk_test_admin(NULL, (const char *[]){ "verify", v, NULL }), 0);
        }
        sk_redis_close(rc);
}

START_TEST(close_commit_lost_after_apply)
{
        close_lost("db.commit_lost=1*error", "after");
}
END_TEST

START_TEST(close_commit_lost_before_apply)
{
        close_lost("db.commit_lost_before=1*error", "before");
}
END_TEST

int main(void)
{
        Suite *s = suite_create("closer_commit_unknown");
        TCase *tc = tcase_create("commit_unknown");
        int rc;

        sk_test_fix_setup("close_cu", &(sk_test_fix_opts_t){ .partitions = 2 });
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, close_commit_lost_after_apply);
        tcase_add_test(tc, close_commit_lost_before_apply);
        suite_add_tcase(s, tc);
        rc = sk_test_run_nofork(s);
        sk_test_fix_teardown();
        return rc;
}
