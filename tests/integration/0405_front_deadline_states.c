/* 0405_front_deadline_states.c: what the front's own deadline (DESIGN.md 8: 2 x
 * delivery timeout + 1 s, 503) says about a purchase whose deduct.lua already answered
 * REJECT 10004 (meta missing: nothing written) while the DB check that picks 404 or 503
 * (DESIGN.md 3) is still hanging. Nothing was taken and nothing will be, so the answer
 * is a plain 503 + Retry-After with no purchase state — not "state PENDING", which
 * would send the client polling orders/me for a purchase that never happened. The DB
 * check hangs on a table lock the test holds (LOCK TABLES tb_seckill_voucher WRITE; the
 * front's worker-id lease, in tb_worker_lease, is not blocked: DESIGN.md 2). Once the
 * lock goes away, the hanging check ends and the front still shuts down gracefully
 * (exit 0).
 * Also: orders/me escapes the stored reason it echoes (valid JSON whatever the row
 * holds). */
#include <cjson/cJSON.h>

#include "sk_test.h"
#include "sk/db.h"

START_TEST(rejected_deduct_deadline_has_no_state)
{
        char log[256], body[2048], path[128], v[SK_ID_STRLEN], errstr[256] = "";
        /* The lock below also holds back the front's reads of the degrade switch rows
         * (they join tb_seckill_voucher): a long SECKILL_SWITCH_STALE_MS keeps them
         * "fresh" (DESIGN.md 12 a) for this test, which is about the deadline. */
        const char *env[] = { "SECKILL_KAFKA_DELIVERY_TIMEOUT_MS=1000", "SECKILL_SWITCH_STALE_MS=60000",
                              NULL };
        sk_redis_t *rc = sk_test_fx.r;
        sk_db_t *locker;
        int port = sk_test_free_port(), st;
        int64_t vid = sk_test_rand_id(), t0;
        char *before, *after;
        pid_t pid;

        /* The front first (its first read of the switch rows must succeed: a front that
         * never read them sends nothing to Redis, DESIGN.md 12 a). */
        sk_test_log_path(log, sizeof(log), "front_0405");
        pid = sk_test_front_start(&sk_test_fx.conf, port, env, log);
        ck_assert_msg(sk_test_wait_ready(port, pid, 30) == 0, "front not ready (log %s)", log);

        /* The front's DB check of the voucher blocks on this session's table lock. */
        locker = sk_db_connect(&sk_test_fx.conf.mysql, 0, 0, errstr, sizeof(errstr));
        ck_assert_msg(locker != NULL, "%s", errstr);
        ck_assert_msg(sk_db_exec(locker, "LOCK TABLES tb_seckill_voucher WRITE", errstr,
                                 sizeof(errstr)) == SK_OK, "%s", errstr);

        /* Stock but no meta: deduct.lua answers REJECT 10004 without writing. */
        sk_test_voucher(&(sk_test_voucher_t){ .r = rc, .vid = vid, .stock = 5 });
        before = sk_test_snapshot(&sk_test_fx.conf, rc);
        sk_id_format(vid, v);
        snprintf(path, sizeof(path), "/api/v1/vouchers/%s/seckill", v);

        t0 = sk_mono_ms();
        st = sk_test_http(port, "POST", path, "4242", NULL, body, sizeof(body));
        ck_assert_int_eq(st, 503);
        /* Answered by the deadline (2 x 1 s + 1 s), not by the DB check. */
        ck_assert_int_ge(sk_mono_ms() - t0, 2500);
        ck_assert_msg(strstr(body, "\"code\":10013") != NULL, "%s", body);
        ck_assert_msg(strstr(body, "\"state\"") == NULL, "a rejected deduct has no state: %s", body);
        ck_assert_msg(strstr(body, "\"traceId\"") == NULL, "no purchase to follow: %s", body);
        after = sk_test_snapshot(&sk_test_fx.conf, rc);
        ck_assert_str_eq(before, after);
        ck_assert_int_eq(sk_test_stock(&sk_test_fx.conf, rc, vid), 5);

        /* The lock goes away: the hanging check ends; the front stops gracefully. */
        sk_db_close(locker);
        ck_assert_int_eq(sk_test_stop(pid, 60), 0);
        free(before);
        free(after);
}
END_TEST

/* orders/me builds its JSON from stored data (the outcome row's reason, the RESTORE
 * entry's reason): a quote or backslash in it must come out escaped, never as broken
 * JSON. */
START_TEST(orders_me_reason_is_escaped)
{
        char log[256], body[2048], path[160], v[SK_ID_STRLEN], sql[512], f[128];
        int port = sk_test_free_port();
        int64_t vid = sk_test_rand_id();
        cJSON *j;
        pid_t pid;

        sk_id_format(vid, v);
        snprintf(sql, sizeof(sql),
                 "INSERT INTO tb_seckill_outcome (trace_id, order_id, user_id, voucher_id, outcome, "
                 "reason) VALUES (%lld, %lld, 4343, %s, 2, 'odd\\\"re\\\\ason')",
                 (long long)sk_test_rand_id(), (long long)sk_test_rand_id(), v);
        sk_test_conf_exec(&sk_test_fx.conf, sql);
        sk_test_log_path(log, sizeof(log), "front_0405_me");
        pid = sk_test_front_start(&sk_test_fx.conf, port, NULL, log);
        ck_assert_msg(sk_test_wait_ready(port, pid, 30) == 0, "front not ready (log %s)", log);
        snprintf(path, sizeof(path), "/api/v1/vouchers/%s/orders/me", v);
        ck_assert_int_eq(sk_test_http(port, "GET", path, "4343", NULL, body, sizeof(body)), 200);
        j = cJSON_Parse(body);
        ck_assert_msg(j != NULL, "orders/me is not JSON: %s", body);
        cJSON_Delete(j);
        ck_assert_int_eq(sk_test_json_field(body, "state", f, sizeof(f)), 0);
        ck_assert_str_eq(f, "FAILED");
        ck_assert_int_eq(sk_test_json_field(body, "reason", f, sizeof(f)), 0);
        ck_assert_str_eq(f, "odd\"re\\ason");
        ck_assert_int_eq(sk_test_stop(pid, 30), 0);
}
END_TEST

static void setup(void)
{
        sk_test_fix_setup("frontdl", &(sk_test_fix_opts_t){ .no_topics = 1 });
}

int main(void)
{
        Suite *s = suite_create("front_deadline_states");
        TCase *tc = tcase_create("deadline");

        tcase_set_timeout(tc, 120);
        tcase_add_unchecked_fixture(tc, setup, sk_test_fix_teardown);
        tcase_add_checked_fixture(tc, sk_test_reap_all, NULL); /* a front an earlier failed test left */
        tcase_add_test(tc, rejected_deduct_deadline_has_no_state);
        tcase_add_test(tc, orders_me_reason_is_escaped);
        suite_add_tcase(s, tc);
        return sk_test_run_nofork(s);
}
