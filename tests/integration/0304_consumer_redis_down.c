/* 0304_consumer_redis_down.c: seckill-consumer against its own redis-server on a spare
 * port (the shared Redis is never disturbed). claim.lua must run before the order
 * transaction (DESIGN.md 7), so while Redis is down the worker pauses, keeps polling
 * and retries; nothing is decided. A restarted Redis (empty: no scripts, no data)
 * answers NOSCRIPT, the consumer loads the scripts and applies the order. A SCRIPT
 * FLUSH mid-stream is handled the same way. A voucher in state db (DESIGN.md 12): its
 * FAILED rollbacks are left to the reconciler after one attempt while Redis is down. */
#include "sk_test.h"

#define WAIT_S 60

static int g_port;
static sk_conf_t g_redis_conf;     /* only its Redis URL: the private server's */
static pid_t g_redis;

/* The consumer's own redis-server on g_port (no persistence; empty after a restart). */
static pid_t start_redis(void)
{
        static const char *const quiet[] = { "--loglevel", "warning", NULL };

        return sk_test_redis_start(&g_redis_conf, g_port, quiet);
}

static void stop_redis(void)
{
        if (g_redis > 0) {
                kill(g_redis, SIGKILL);
                sk_test_wait(g_redis, 10);
                g_redis = 0;
        }
}

static void reconnect_test_redis(void)
{
        char errstr[512] = "";
        sk_redis_close(sk_test_fx.r);
        sk_test_fx.r = sk_redis_connect(&sk_test_fx.conf.redis, 5000, errstr, sizeof(errstr));
        ck_assert_msg(sk_test_fx.r != NULL, "%s", errstr);
}

START_TEST(redis_down_then_back)
{
        int64_t vid, uid = sk_test_rand_id(), vid2;
        sk_order_msg_t m, m2;
        char json[SK_MSG_MAX], json2[SK_MSG_MAX], sql[256];
        pid_t pid;
        int status;

        vid = sk_test_voucher_open(5);
        ck_assert_int_eq(sk_test_deduct(vid, uid, 0, 0, &m, json), 0);
        pid = sk_test_consumer_start(&(sk_test_spawn_t){ 0 }, 1);

        /* First a normal order (scripts get loaded). */
        sk_test_produce(vid, json);
        snprintf(sql, sizeof(sql), "SELECT COUNT(*) FROM tb_voucher_order WHERE trace_id = %" PRId64, m.trace_id);
        ck_assert_int_eq(sk_test_wait_i64(WAIT_S, 1, sql), 1);

        /* Redis goes away: the next purchase waits, undecided. */
        vid2 = sk_test_voucher_open(5);
        ck_assert_int_eq(sk_test_deduct(vid2, sk_test_rand_id(), 0, 0, &m2, json2), 0);
        stop_redis();
        sk_test_produce(vid2, json2);
        sk_sleep_ms(4000, NULL);
        snprintf(sql, sizeof(sql), "SELECT COUNT(*) FROM tb_seckill_outcome WHERE trace_id = %" PRId64, m2.trace_id);
        ck_assert_int_eq(sk_test_i64("%s", sql), 0);
        ck_assert_int_eq(waitpid(pid, &status, WNOHANG), 0); /* still running */

        /* An empty Redis comes back (no scripts, no keys): NOSCRIPT -> load -> applied. */
        g_redis = start_redis();
        ck_assert_int_eq(sk_test_wait_i64(WAIT_S, 1, sql), 1);
        ck_assert_int_eq(sk_test_i64("SELECT outcome FROM tb_seckill_outcome WHERE trace_id = %" PRId64, m2.trace_id), 1);
        reconnect_test_redis();

        /* SCRIPT FLUSH mid-stream. */
        {
                int64_t v3;
                sk_order_msg_t m3;
                char j3[SK_MSG_MAX];

                v3 = sk_test_voucher_open(5);
                ck_assert_int_eq(sk_test_deduct(v3, sk_test_rand_id(), 0, 0, &m3, j3), 0);
                freeReplyObject(sk_test_cmd(sk_test_fx.r, "SCRIPT FLUSH"));
                sk_test_produce(v3, j3);
                snprintf(sql, sizeof(sql), "SELECT COUNT(*) FROM tb_voucher_order WHERE trace_id = %" PRId64, m3.trace_id);
                ck_assert_int_eq(sk_test_wait_i64(WAIT_S, 1, sql), 1);
        }
        status = sk_test_stop(pid, 30);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "stop status %d", status);
}
END_TEST

/* Issue 22 defect 7 (DESIGN.md 12, consumers during an outage): a voucher in state db,
 * Redis down for the consumer, three purchases of a buyer who already holds an order:
 * each is decided FAILED has_order at once, and its rollback.lua, which cannot run, is
 * left to the reconciler after one failed attempt (it used to be retried 8 times with
 * backoff, holding the partition back while the voucher drained). */
START_TEST(degraded_rollbacks_left_to_reconciler)
{
        int64_t vid = sk_test_rand_id(), uid = sk_test_rand_id();
        char log[256], sql[256], json[SK_MSG_MAX];
        sk_order_msg_t m[3];
        pid_t pid;
        int i, status;

        sk_test_voucher(&(sk_test_voucher_t){ .vid = vid, .init_stock = 5, .db_stock = 4, .stock = 4,
                                              .status = 1, .db_status = 1 });
        sk_test_exec("INSERT INTO tb_voucher_order (id, user_id, voucher_id, trace_id, status)"
                     " VALUES (%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ", 1)",
                     sk_test_rand_id(), uid, vid, sk_test_rand_id());
        sk_test_exec("INSERT INTO tb_seckill_switch (scope, mode, state, epoch, updated_by)"
                     " VALUES (%" PRId64 ", NULL, 'db', 3, 'test 0304')"
                     " ON DUPLICATE KEY UPDATE state = 'db', epoch = 3", vid);
        sk_test_log_path(log, sizeof(log), "consumer_0304_degraded");
        unlink(log);
        stop_redis();
        pid = sk_test_consumer_start(&(sk_test_spawn_t){ .log_path = log }, 1);
        for (i = 0; i < 3; i++) {
                m[i] = (sk_order_msg_t){ sk_test_rand_id(), sk_test_rand_id(), uid, vid, 4, 1, 3,
                                         sk_now_ms() - 1000, 0, 0 };
                sk_msg_format(&m[i], json, sizeof(json));
                sk_test_produce(vid, json);
        }
        snprintf(sql, sizeof(sql), "SELECT COUNT(*) FROM tb_seckill_outcome WHERE voucher_id = %" PRId64
                 " AND outcome = 2 AND reason = 'has_order'", vid);
        ck_assert_int_eq(sk_test_wait_i64(WAIT_S, 3, sql), 3);
        snprintf(sql, sizeof(sql), "rollback_left_degraded worker=0 voucher=%" PRId64, vid);
        {
                int64_t until = sk_mono_ms() + 10000;
                while (!sk_test_file_count(log, sql) && sk_mono_ms() < until)
                        sk_sleep_ms(100, NULL);
        }
        ck_assert_int_eq(sk_test_file_count(log, sql), 3);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = %" PRId64, vid), 1);
        status = sk_test_stop(pid, 30);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "stop status %d", status);
        g_redis = start_redis();
        reconnect_test_redis();
}
END_TEST

int main(void)
{
        Suite *s = suite_create("consumer_redis_down");
        TCase *tc = tcase_create("redis");
        int rc;

        g_port = sk_test_free_port();
        if (g_port <= 0) {
                fprintf(stderr, "no free port\n");
                return 2;
        }
        g_redis = start_redis();
        setenv("SECKILL_REDIS_URL", g_redis_conf.redis_url, 1);
        sk_test_fix_setup("cons_redis", &(sk_test_fix_opts_t){ .partitions = 1 });
        tcase_set_timeout(tc, 200);
        tcase_add_test(tc, redis_down_then_back);
        tcase_add_test(tc, degraded_rollbacks_left_to_reconciler);
        suite_add_tcase(s, tc);
        rc = sk_test_run_nofork(s);
        sk_test_fix_teardown();
        stop_redis();
        return rc;
}
