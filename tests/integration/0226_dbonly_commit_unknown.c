/* 0226_dbonly_commit_unknown.c: the DB-only purchase (DESIGN.md 12) whose COMMIT has an
 * unknown outcome (DESIGN.md 16 "Errors": read its traceId's outcome; never answer
 * the buyer from a guess), against a private redis-server and the standalone MariaDB:
 *   - db.commit_lost=1*error: the COMMIT applies, the link drops (2013). The front reads
 *     the outcome row on a fresh session and answers 200 CREATED with the order: one
 *     order, one CREATED outcome (path db), DB stock − 1;
 *   - db.commit_lost_before=1*error: the link drops instead of the COMMIT. The read
 *     finds nothing, the same transaction runs again with the same keys: 200 CREATED,
 *     one order, DB stock − 1.
 * Both log db_only_commit_unknown. */
#include "sk_test.h"

#define C_STOCK 3

static void purchase_lost(const char *what, int64_t user, const char *fp)
{
        const char *env[] = { NULL, "SECKILL_PAY_TIMEOUT_S=600", fp, NULL };
        sk_redis_t *rc = sk_test_redis(&sk_test_fx.conf);
        char url_env[600], u[24], body[1024], s[32], v[SK_ID_STRLEN], path[160], log[256];
        int64_t until, vid, trace = 0, order = 0;
        int st, port;
        pid_t pid;

        vid = sk_test_voucher_open(C_STOCK);
        sk_id_format(vid, v);
        snprintf(path, sizeof(path), "/api/v1/vouchers/%s/seckill", v);
        ck_assert_int_eq(sk_test_admin(NULL, (const char *[]){ "degrade", "db-only", "--voucher", v, NULL }), 0);
        snprintf(url_env, sizeof(url_env), "SECKILL_REDIS_URL=%s", sk_test_fx.conf.redis_url);
        env[0] = url_env;
        sk_test_log_path(log, sizeof(log), "front_0226_%s", what);
        port = sk_test_free_port();
        pid = sk_test_front_start(&sk_test_fx.conf, port, env, log);
        ck_assert_msg(sk_test_wait_ready(port, pid, 40) == 0 ||
                      sk_test_http(port, "GET", "/healthz", NULL, NULL, body, sizeof(body)) == 200,
                      "front not up (log %s)", log);
        ck_assert_msg(sk_test_wait_switch(vid, "db", 40) == 0, "not db (log %s)", log);
        sk_sleep_ms(1500, NULL); /* the front's next read of the switch rows */
        snprintf(u, sizeof(u), "%" PRId64, user);
        until = sk_mono_ms() + 20000;
        while ((st = sk_test_http(port, "POST", path, u, NULL, body, sizeof(body))) == 503 &&
               strstr(body, "PENDING") == NULL && sk_mono_ms() < until)
                sk_sleep_ms(200, NULL);
        ck_assert_msg(st == 200, "status %d: %s (log %s)", st, body, log);
        ck_assert_int_eq(sk_test_json_field(body, "state", s, sizeof(s)), 0);
        ck_assert_str_eq(s, "CREATED");
        ck_assert_int_eq(sk_test_json_field(body, "traceId", s, sizeof(s)), 0);
        ck_assert_int_eq(sk_id_parse_cstr(s, &trace), 0);
        ck_assert_int_eq(sk_test_json_field(body, "orderId", s, sizeof(s)), 0);
        ck_assert_int_eq(sk_id_parse_cstr(s, &order), 0);
        ck_assert_int_eq(sk_test_stop(pid, 40), 0);
        ck_assert_msg(sk_test_file_count(log, "db_only_commit_unknown") >= 1, "failpoint not met (log %s)", log);
        /* Exactly one order, the one answered; one outcome; one unit. */
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = %" PRId64, vid), 1);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_voucher_order WHERE id = %" PRId64
                                     " AND trace_id = %" PRId64 " AND status = 1", order, trace), 1);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_seckill_outcome WHERE voucher_id = %" PRId64, vid), 1);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_seckill_outcome WHERE trace_id = %" PRId64
                                     " AND order_id = %" PRId64 " AND outcome = 1 AND path = 'db'", trace, order), 1);
        ck_assert_int_eq(sk_test_i64("SELECT SUM(stock) FROM tb_seckill_stock WHERE voucher_id = %" PRId64, vid),
                         C_STOCK - 1);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_voucher_reconcile_log WHERE voucher_id = %" PRId64, vid), 1);
        sk_redis_close(rc);
}

START_TEST(dbonly_commit_lost_after_apply)
{
        purchase_lost("after", 9201, "SECKILL_FAILPOINTS=db.commit_lost=1*error");
}
END_TEST

START_TEST(dbonly_commit_lost_before_apply)
{
        purchase_lost("before", 9202, "SECKILL_FAILPOINTS=db.commit_lost_before=1*error");
}
END_TEST

static void setup(void)
{
        sk_test_fix_setup("dbo_cu", &(sk_test_fix_opts_t){ .partitions = 2, .delivery_timeout_ms = 3000,
                                                           .no_topics = 1, .private_redis = 1 });
}

static void teardown(void)
{
        sk_test_fix_teardown();
}

int main(void)
{
        Suite *s = suite_create("dbonly_commit_unknown");
        TCase *tc = tcase_create("commit_unknown");

        setenv("CK_FORK", "no", 1);
        tcase_set_timeout(tc, 90);
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, dbonly_commit_lost_after_apply);
        tcase_add_test(tc, dbonly_commit_lost_before_apply);
        suite_add_tcase(s, tc);
        return sk_test_run(s);
}
