/* 0430_front_soldout_cache.c: the front's local sold-out cache (DESIGN.md 3, 4 "Local
 * sold-out cache", 9 invariant 5) against a real front, Kafka and MariaDB, on a PRIVATE
 * redis-server (never the shared one) so that INFO commandstats counts this front's
 * EVALSHAs exactly:
 *   - cache on: a voucher of one unit sells (202); the next buyer's 10005 comes from
 *     Redis and marks the bucket empty; every further purchase, the buyer who already
 *     bought included (10005, not 10006: the documented exception), is 409/10005 with
 *     no EVALSHA reaching Redis and the voucher's keys unchanged, counted by
 *     seckill_front_soldout_cache_hits_total;
 *   - a restore (INCRBY of the stock, as rollback/release/rebuild do) right after a
 *     fresh mark is first answered from the cache, then sold again (202) within the
 *     bound (SECKILL_SOLDOUT_CACHE_MS + a margin for the request itself);
 *   - cache off (0): every sold-out purchase runs deduct.lua; no hit is counted. */
#include "sk_test.h"

#define CACHE_MS 2000
#define CACHE_MS_S "2000"
#define MARGIN_MS 700           /* a request's own latency on a shared 2-core machine */

static sk_conf_t g_conf;       /* the fixture's, pointed at the private server */
static pid_t g_redis_pid;

static pid_t start(const char *cache_ms, int port, sk_redis_t **rc_out, char *log, size_t log_cap)
{
        static char url_env[600], cache_env[64];
        const char *env[] = { url_env, cache_env, NULL };
        pid_t pid;

        sk_test_redis_stop(&g_redis_pid);
        g_conf = sk_test_fx.conf;
        g_redis_pid = sk_test_redis_start(&g_conf, 0, NULL);
        snprintf(url_env, sizeof(url_env), "SECKILL_REDIS_URL=%s", g_conf.redis_url);
        snprintf(cache_env, sizeof(cache_env), "SECKILL_SOLDOUT_CACHE_MS=%s", cache_ms);
        *rc_out = sk_test_redis(&g_conf);
        sk_test_log_path(log, log_cap, "front_0430_%s", cache_ms);
        pid = sk_test_front_start(&g_conf, port, env, log);
        ck_assert_msg(sk_test_wait_ready(port, pid, 40) == 0, "front not ready (log %s)", log);
        return pid;
}

/* calls= of cmdstat_evalsha (0 before the first EVALSHA). */
static long long evalsha_calls(sk_redis_t *rc)
{
        redisReply *r = sk_test_cmd(rc, "INFO commandstats");
        long long n = 0;
        const char *p;

        ck_assert(r && r->type == REDIS_REPLY_STRING);
        if ((p = strstr(r->str, "cmdstat_evalsha:calls=")))
                n = strtoll(p + strlen("cmdstat_evalsha:calls="), NULL, 10);
        freeReplyObject(r);
        return n;
}

static long long hits(int port)
{
        static char body[SK_TEST_BODY_MAX];
        const char *p;

        ck_assert_int_eq(sk_test_http(port, "GET", "/metrics", NULL, NULL, body, sizeof(body)), 200);
        p = strstr(body, "\nseckill_front_soldout_cache_hits_total ");
        ck_assert_msg(p != NULL, "no hits metric in /metrics");
        return strtoll(p + strlen("\nseckill_front_soldout_cache_hits_total "), NULL, 10);
}

/* POST a purchase of @p vid for @p user; the status, its body in @p body (@p size
 * bytes), and the code in *code. */
static int buy_body(int port, int64_t vid, long long user, int *code, char *body, size_t size)
{
        char path[128], v[SK_ID_STRLEN], u[32], c[32];
        int st;

        sk_id_format(vid, v);
        snprintf(path, sizeof(path), "/api/v1/vouchers/%s/seckill", v);
        snprintf(u, sizeof(u), "%lld", user);
        st = sk_test_http(port, "POST", path, u, NULL, body, size);
        *code = -1;
        if (sk_test_json_field(body, "code", c, sizeof(c)) == 0)
                *code = (int)strtol(c, NULL, 10); /* a status code, not an id */
        return st;
}

/* buy_body without the body. */
static int buy(int port, int64_t vid, long long user, int *code)
{
        char body[1024];

        return buy_body(port, vid, user, code, body, sizeof(body));
}

static void incr_stock(sk_redis_t *rc, int64_t vid, int by)
{
        char k[SK_KEY_MAX];
        redisReply *r;

        sk_key_voucher(k, g_conf.redis_prefix, vid, 0, SK_KEY_STOCK);
        r = sk_test_cmd(rc, "INCRBY %s %d", k, by);
        ck_assert(r && r->type == REDIS_REPLY_INTEGER);
        freeReplyObject(r);
}

START_TEST(cached_then_sold_again_after_restore)
{
        int port = sk_test_free_port(), code, st, i;
        int64_t vid = sk_test_rand_id(), t = sk_now_ms(), t_restore, waited;
        long long e0, h0, user = 1000;
        char log[256], *snap0, *snap1, from_redis[1024], from_cache[1024];
        sk_redis_t *rc;
        pid_t pid = start(CACHE_MS_S, port, &rc, log, sizeof(log));

        sk_test_voucher(&(sk_test_voucher_t){ .conf = &g_conf, .r = rc, .vid = vid, .stock = 1,
                                              .init_stock = 1, .db_stock = 1, .begin_ms = t - 60000,
                                              .end_ms = t + 3600000, .status = 1, .db_status = 1 });
        st = buy(port, vid, 1, &code);
        ck_assert_msg(st == 202, "status %d (log %s)", st, log);
        /* The first sold-out answer comes from Redis and marks the bucket empty. */
        e0 = evalsha_calls(rc);
        ck_assert_int_eq(buy_body(port, vid, 2, &code, from_redis, sizeof(from_redis)), 409);
        ck_assert_int_eq(code, 10005);
        ck_assert_int_eq(evalsha_calls(rc), e0 + 1);
        ck_assert_int_eq(hits(port), 0);
        /* From now on: 10005 from the cache, no EVALSHA, nothing changed in Redis; its
         * body (the shared response, http.c) is the same bytes as the answer from Redis. */
        ck_assert_int_eq(buy_body(port, vid, 99, &code, from_cache, sizeof(from_cache)), 409);
        ck_assert_str_eq(from_cache, from_redis);
        ck_assert_str_eq(from_cache, "{\"code\":10005,\"message\":\"sold out\"}");
        snap0 = sk_test_snapshot(&g_conf, rc);
        for (i = 0; i < 20; i++) {
                ck_assert_int_eq(buy(port, vid, 100 + i, &code), 409);
                ck_assert_int_eq(code, 10005);
        }
        /* The buyer who already bought: 10005 too while the cache answers (DESIGN.md 3). */
        ck_assert_int_eq(buy(port, vid, 1, &code), 409);
        ck_assert_int_eq(code, 10005);
        ck_assert_int_eq(evalsha_calls(rc), e0 + 1);
        ck_assert_int_eq(hits(port), 22);
        snap1 = sk_test_snapshot(&g_conf, rc);
        ck_assert_str_eq(snap0, snap1);
        free(snap0);
        free(snap1);

        /* Let the mark expire; the next sold-out answer comes from Redis again and
         * renews it. Then restore one unit at once. */
        sk_sleep_ms(CACHE_MS + 100, NULL);
        ck_assert_int_eq(buy(port, vid, 3, &code), 409);
        ck_assert_int_eq(code, 10005);
        ck_assert_int_eq(evalsha_calls(rc), e0 + 2);
        incr_stock(rc, vid, 1);
        t_restore = sk_mono_ms();
        /* Within the bound the cache still answers (bounded staleness, DESIGN.md 4). */
        h0 = hits(port);
        ck_assert_int_eq(buy(port, vid, 4, &code), 409);
        ck_assert_int_eq(code, 10005);
        ck_assert_int_eq(hits(port), h0 + 1);
        /* The restored unit is sold again within the bound (+ a request's margin). */
        for (;;) {
                st = buy(port, vid, user++, &code);
                waited = sk_mono_ms() - t_restore;
                if (st == 202)
                        break;
                ck_assert_int_eq(st, 409);
                ck_assert_int_eq(code, 10005);
                ck_assert_msg(waited <= CACHE_MS + MARGIN_MS, "not sold again after %lld ms",
                              (long long)waited);
                sk_sleep_ms(50, NULL);
        }
        ck_assert_int_le(waited, CACHE_MS + MARGIN_MS);
        ck_assert_int_eq(sk_test_stock(&g_conf, rc, vid), 0);
        ck_assert_int_eq(sk_test_stop(pid, 30), 0);
        sk_redis_close(rc);
        sk_test_redis_stop(&g_redis_pid);
}
END_TEST

START_TEST(off_means_every_purchase_runs_deduct)
{
        int port = sk_test_free_port(), code, i;
        int64_t vid = sk_test_rand_id(), t = sk_now_ms();
        long long e0;
        char log[256];
        sk_redis_t *rc;
        pid_t pid = start("0", port, &rc, log, sizeof(log));

        sk_test_voucher(&(sk_test_voucher_t){ .conf = &g_conf, .r = rc, .vid = vid, .stock = 0,
                                              .init_stock = 0, .db_stock = 0, .begin_ms = t - 60000,
                                              .end_ms = t + 3600000, .status = 1, .db_status = 1 });
        e0 = evalsha_calls(rc);
        for (i = 0; i < 10; i++) {
                ck_assert_int_eq(buy(port, vid, 200 + i, &code), 409);
                ck_assert_int_eq(code, 10005);
        }
        ck_assert_int_eq(evalsha_calls(rc), e0 + 10);
        ck_assert_int_eq(hits(port), 0);
        ck_assert_int_eq(sk_test_stop(pid, 30), 0);
        sk_redis_close(rc);
        sk_test_redis_stop(&g_redis_pid);
}
END_TEST

static void setup(void)
{
        sk_test_fix_setup("frontso", &(sk_test_fix_opts_t){ .no_topics = 1 });
}

static void teardown(void)
{
        sk_test_redis_stop(&g_redis_pid);
        sk_test_fix_teardown(); /* fronts a failed check left running, the database */
}

int main(void)
{
        Suite *s = suite_create("front_soldout_cache");
        TCase *tc = tcase_create("soldout_cache");

        tcase_set_timeout(tc, 120);
        tcase_add_unchecked_fixture(tc, setup, teardown);
        tcase_add_test(tc, cached_then_sold_again_after_restore);
        tcase_add_test(tc, off_means_every_purchase_runs_deduct);
        suite_add_tcase(s, tc);
        return sk_test_run_nofork(s);
}
