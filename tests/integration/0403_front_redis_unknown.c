/* 0403_front_redis_unknown.c: the deduct outcome-unknown rules of DESIGN.md 8 against a
 * PRIVATE redis-server on a spare port (never the shared one). SCRIPT FLUSH first: the
 * front reloads the script on NOSCRIPT and deducts once. Then CLIENT PAUSE WRITE makes
 * the front's EVALSHA time out (command timeout 1 s), so the outcome is unknown:
 *   - pause 1.5 s: the front reconnects and repeats the same EVALSHA (same traceId): 202
 *     and the stock goes down exactly once (one DEDUCT entry);
 *   - pause 6 s: every repeat times out too -> rollback.lua mode front -> 503 with the
 *     state it established (FAILED: stock restored and the fence written; PENDING when
 *     even the rollback could not run), never a 202 and never a double deduct;
 *   - BUSY (a long script): the deduct did not run -> 503, nothing to undo;
 *   - the server gone: 503, /readyz 503, orders/me still CREATED from the DB for a buyer
 *     with an active order (503 for the others), and the front exits 0 on SIGTERM. */
#include "sk_test.h"

static void pause_writes(sk_redis_t *rc, int ms)
{
        redisReply *r = sk_test_cmd(rc, "CLIENT PAUSE %d WRITE", ms);

        ck_assert_msg(r && r->type == REDIS_REPLY_STATUS, "CLIENT PAUSE");
        freeReplyObject(r);
}

static long long hlen(sk_redis_t *rc, const char *key)
{
        redisReply *r = sk_test_cmd(rc, "HLEN %s", key);
        long long n;

        ck_assert(r && r->type == REDIS_REPLY_INTEGER);
        n = r->integer;
        freeReplyObject(r);
        return n;
}

/* 2. A long pause: unknown three times -> rollback mode front; 503 with the state it
 *    established, never a double deduct; another buyer still buys. @returns the stock. */
static long long long_pause(sk_redis_t *rc, int port, const char *path, int64_t vid, const char *k)
{
        char body[1024], state[32], tr[SK_ID_STRLEN], field[48], *s;
        long long stock;
        int64_t tid;

        pause_writes(rc, 6000);
        ck_assert_int_eq(sk_test_http(port, "POST", path, "802", NULL, body, sizeof(body)), 503);
        ck_assert_int_eq(sk_test_json_field(body, "state", state, sizeof(state)), 0);
        ck_assert_int_eq(sk_test_json_field(body, "traceId", tr, sizeof(tr)), 0);
        ck_assert_int_eq(sk_id_parse_cstr(tr, &tid), 0);
        sk_sleep_ms(6500, NULL); /* past the pause: anything left has run */
        stock = sk_test_stock(&sk_test_fx.conf, rc, vid);
        sk_field_trace(field, tid, 'r');
        s = sk_test_hget(rc, k, field);
        if (!strcmp(state, "FAILED")) {
                ck_assert_msg(s != NULL, "FAILED without a fence");
                ck_assert_int_eq(stock, 4);
        } else {
                ck_assert_str_eq(state, "PENDING");
                ck_assert_int_ge(stock, 3);
                ck_assert_int_le(stock, 4);
        }
        free(s);
        /* The fenced or pending trace never deducts twice; another buyer still can. */
        ck_assert_int_eq(sk_test_http(port, "POST", path, "803", NULL, body, sizeof(body)), 202);
        ck_assert_int_eq(sk_test_stock(&sk_test_fx.conf, rc, vid), stock - 1);
        return stock - 1;
}

/* 3. BUSY (a script runs past busy-reply-threshold): the deduct did not run -> 503,
 *    nothing to undo (no state, stock unchanged). */
static void busy(sk_redis_t *rc, int port, const char *path, int64_t vid, long long stock)
{
        char body[1024], cmd[256], cause[32];
        redisReply *r;

        snprintf(cmd, sizeof(cmd), "redis-cli -p %d EVAL 'while true do end' 0 "
                 ">/dev/null 2>&1 &", sk_test_fx.conf.redis.port);
        ck_assert_int_eq(system(cmd), 0);
        sk_sleep_ms(600, NULL);
        ck_assert_int_eq(sk_test_http(port, "POST", path, "804", NULL, body, sizeof(body)), 503);
        ck_assert_int_eq(sk_test_json_field(body, "cause", cause, sizeof(cause)), 0);
        ck_assert_str_eq(cause, "redis");
        ck_assert_msg(strstr(body, "\"state\"") == NULL, "%s", body);
        r = sk_test_cmd(rc, "SCRIPT KILL");
        ck_assert(r != NULL);
        freeReplyObject(r);
        sk_sleep_ms(200, NULL);
        ck_assert_int_eq(sk_test_stock(&sk_test_fx.conf, rc, vid), stock);
}

/* 4. Redis gone: 503 before anything could be written; /readyz 503; orders/me from
 *    the DB for a buyer with an active order. */
static void redis_gone(int port, const char *path, const char *v)
{
        char body[1024];

        kill(sk_test_fx.redis_pid, SIGKILL);
        waitpid(sk_test_fx.redis_pid, NULL, 0);
        sk_test_fx.redis_pid = 0;
        ck_assert_int_eq(sk_test_http(port, "POST", path, "805", NULL, body, sizeof(body)), 503);
        {
                /* /readyz follows within the health period (1 s). */
                int64_t until = sk_mono_ms() + 5000;
                int st = 0;

                while (sk_mono_ms() < until &&
                       (st = sk_test_http(port, "GET", "/readyz", NULL, NULL, body, sizeof(body))) != 503)
                        usleep(100 * 1000);
                ck_assert_int_eq(st, 503);
                ck_assert_msg(strstr(body, "\"redis\":false") != NULL, "%s", body);
        }
        /* orders/me with Redis gone: the DB (book of record) still says CREATED for a
         * buyer with an active order; anyone else needs the users hash: 503. */
        {
                char sql[512], mepath[160], st_s[32], oid[SK_ID_STRLEN];
                int64_t o = sk_test_rand_id();

                snprintf(sql, sizeof(sql),
                         "INSERT INTO tb_voucher_order (id, user_id, voucher_id, trace_id, status) "
                         "VALUES (%lld, 806, %s, %lld, 1)", (long long)o, v,
                         (long long)sk_test_rand_id());
                sk_test_conf_exec(&sk_test_fx.conf, sql);
                snprintf(mepath, sizeof(mepath), "/api/v1/vouchers/%s/orders/me", v);
                ck_assert_int_eq(sk_test_http(port, "GET", mepath, "806", NULL, body, sizeof(body)), 200);
                ck_assert_int_eq(sk_test_json_field(body, "state", st_s, sizeof(st_s)), 0);
                ck_assert_str_eq(st_s, "CREATED");
                ck_assert_int_eq(sk_test_json_field(body, "orderId", oid, sizeof(oid)), 0);
                sk_id_format(o, st_s);
                ck_assert_str_eq(oid, st_s);
                ck_assert_int_eq(sk_test_http(port, "GET", mepath, "807", NULL, body, sizeof(body)), 503);
        }
}

START_TEST(unknown_deduct_outcome)
{
        static const char *const env_fmt = "SECKILL_REDIS_URL=redis://127.0.0.1:%d/0";
        char url_env[128], log[256], body[1024], path[128], v[SK_ID_STRLEN], k[SK_KEY_MAX];
        /* The timeouts below open the Redis breaker (DESIGN.md 12); a short minimum open
         * time lets its probe close it again before the next step. */
        const char *env[] = { url_env, "SECKILL_WORKER_LEASE_MS=20000", "SECKILL_BREAKER_OPEN_MS=1000",
                              NULL };
        sk_redis_t *rc = sk_test_fx.r;
        int port = sk_test_free_port();
        int64_t vid = sk_test_rand_id(), t = sk_now_ms();
        long long stock;
        pid_t pid;

        snprintf(url_env, sizeof(url_env), env_fmt, sk_test_fx.conf.redis.port);
        sk_test_voucher(&(sk_test_voucher_t){ .r = rc, .vid = vid, .stock = 5,
                                              .begin_ms = t - 60000, .end_ms = t + 3600000,
                                              .status = 1 });
        sk_test_log_path(log, sizeof(log), "front_0403");
        pid = sk_test_front_start(&sk_test_fx.conf, port, env, log);
        ck_assert_msg(sk_test_wait_ready(port, pid, 40) == 0, "front not ready (log %s)", log);
        sk_id_format(vid, v);
        snprintf(path, sizeof(path), "/api/v1/vouchers/%s/seckill", v);
        sk_key_voucher(k, sk_test_fx.conf.redis_prefix, vid, 0, SK_KEY_TRACE);

        /* 0. SCRIPT FLUSH (private server): the pipelined EVALSHA answers NOSCRIPT, the
         *    front loads the script and retries once: one deduction. */
        {
                redisReply *r = sk_test_cmd(rc, "SCRIPT FLUSH");

                ck_assert(r && r->type == REDIS_REPLY_STATUS);
                freeReplyObject(r);
        }
        ck_assert_int_eq(sk_test_http(port, "POST", path, "800", NULL, body, sizeof(body)), 202);
        ck_assert_int_eq(sk_test_stock(&sk_test_fx.conf, rc, vid), 4);
        /* the trace hash: the placeholder `_` (sk_test_voucher, as preheat) and the one DEDUCT */
        ck_assert_int_eq(hlen(rc, k), 2);
        sk_test_voucher(&(sk_test_voucher_t){ .r = rc, .vid = vid, .stock = 5,
                                              .begin_ms = t - 60000, .end_ms = t + 3600000,
                                              .status = 1 }); /* back to 5 */

        /* 1. Short pause: one repeat succeeds; stock down once. */
        pause_writes(rc, 1500);
        ck_assert_int_eq(sk_test_http(port, "POST", path, "801", NULL, body, sizeof(body)), 202);
        ck_assert_int_eq(sk_test_stock(&sk_test_fx.conf, rc, vid), 4);
        ck_assert_int_eq(hlen(rc, k), 3);

        /* 2. Long pause; 3. BUSY; 4. Redis gone. */
        stock = long_pause(rc, port, path, vid, k);
        busy(rc, port, path, vid, stock);
        redis_gone(port, path, v);
        ck_assert_int_eq(sk_test_stop(pid, 40), 0);
}
END_TEST

static void setup(void)
{
        static const char *const extra[] = { "--lua-time-limit", "100", NULL };

        sk_test_fix_setup("frontru", &(sk_test_fix_opts_t){ .no_topics = 1, .private_redis = 1,
                                                            .redis_args = extra });
}

int main(void)
{
        Suite *s = suite_create("front_redis_unknown");
        TCase *tc = tcase_create("unknown");

        tcase_add_unchecked_fixture(tc, setup, sk_test_fix_teardown);
        tcase_add_test(tc, unknown_deduct_outcome);
        suite_add_tcase(s, tc);
        return sk_test_run_nofork(s);
}
