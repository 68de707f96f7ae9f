/* 0408_front_defects.c: seckill-front against the real stack, for rules a review found
 * broken (each case failed on the code before its fix):
 *   - DESIGN.md 3: a voucher whose end time has passed is 403/10003 whatever Redis holds,
 *     also when its keys expired (meta missing: the front reads the end time from the
 *     DB instead of answering 503 for ever); on sale in the DB with meta missing stays
 *     503, and a voucher the DB does not know stays 404/10004;
 *   - DESIGN.md 4: a traceId already stored for ANOTHER purchase (an id collision) is
 *     COLLISION: 503, nothing written, seckill_front_deduct_collision_total counts it
 *     (before: REPLAY, and the other buyer's message was published as this one's 202);
 *   - /metrics has the deduct, rollback and lookup queue depths (a rollback held by the
 *     failpoint front.before_rollback=sleep(MS) shows a queued one);
 *   - a producer replaced after a fatal error is destroyed once its queue is empty
 *     (its threads end; seckill_front_producers_retired returns to 0). */
#include <pthread.h>

#include "sk_test.h"
#include "sk/snowflake.h"

static pid_t start_front(int port, const char *const *env, const char *what, char *log, size_t cap)
{
        pid_t pid;

        sk_test_log_path(log, cap, "front_0408_%s", what);
        pid = sk_test_front_start(&sk_test_fx.conf, port, env, log);
        ck_assert_msg(sk_test_wait_ready(port, pid, 40) == 0, "front not ready (log %s)", log);
        return pid;
}

/* DESIGN.md 3: ended = 403/10003 whatever Redis holds (here: nothing at all). */
START_TEST(ended_voucher_without_keys_is_10003)
{
        sk_redis_t *rc = sk_test_fx.r;
        int port = sk_test_free_port();
        int64_t t = sk_now_ms(), ended = sk_test_rand_id(), live = sk_test_rand_id();
        int64_t unknown = sk_test_rand_id();
        char log[256], path[128], v[SK_ID_STRLEN], body[1024], code[16];
        pid_t pid = start_front(port, NULL, "ended", log, sizeof(log));

        /* DB rows only (status 0: no meta, stock -1: no stock key): keys expired. */
        sk_test_voucher(&(sk_test_voucher_t){ .r = rc, .vid = ended, .stock = -1,
                                              .init_stock = 0, .db_stock = 0,
                                              .begin_ms = t - 7200000, .end_ms = t - 60000,
                                              .db_status = 1 });
        sk_test_voucher(&(sk_test_voucher_t){ .r = rc, .vid = live, .stock = -1,
                                              .init_stock = 0, .db_stock = 0, .begin_ms = t - 60000,
                                              .end_ms = t + 3600000, .db_status = 1 });
        sk_id_format(ended, v);
        snprintf(path, sizeof(path), "/api/v1/vouchers/%s/seckill", v);
        ck_assert_int_eq(sk_test_http(port, "POST", path, "301", NULL, body, sizeof(body)), 403);
        ck_assert_int_eq(sk_test_json_field(body, "code", code, sizeof(code)), 0);
        ck_assert_str_eq(code, "10003");
        /* offline in the DB and ended: still "ended" (the window is checked first) */
        {
                char sql[256];

                snprintf(sql, sizeof(sql),
                         "UPDATE tb_seckill_voucher SET status=2 WHERE voucher_id=%" PRId64, ended);
                sk_test_conf_exec(&sk_test_fx.conf, sql);
        }
        ck_assert_int_eq(sk_test_http(port, "POST", path, "302", NULL, body, sizeof(body)), 403);
        ck_assert_int_eq(sk_test_json_field(body, "code", code, sizeof(code)), 0);
        ck_assert_str_eq(code, "10003");
        /* on sale in the DB, meta missing: Redis lost data -> 503 (unchanged) */
        sk_id_format(live, v);
        snprintf(path, sizeof(path), "/api/v1/vouchers/%s/seckill", v);
        ck_assert_int_eq(sk_test_http(port, "POST", path, "303", NULL, body, sizeof(body)), 503);
        ck_assert_ptr_nonnull(strstr(body, "meta_missing"));
        /* unknown to the DB: 404/10004 (unchanged) */
        sk_id_format(unknown, v);
        snprintf(path, sizeof(path), "/api/v1/vouchers/%s/seckill", v);
        ck_assert_int_eq(sk_test_http(port, "POST", path, "304", NULL, body, sizeof(body)), 404);
        ck_assert_int_eq(sk_test_json_field(body, "code", code, sizeof(code)), 0);
        ck_assert_str_eq(code, "10004");
        ck_assert_int_eq(sk_test_stop(pid, 30), 0);
}
END_TEST

/* DESIGN.md 4: REPLAY only for the same purchase. The trace hash is filled beforehand with
 * another buyer's entry under every traceId this front can mint in the next seconds
 * (snowflake: ms | worker id from /readyz | sequence 0..3), as a second holder of the
 * worker id would have written them. */
START_TEST(trace_collision_is_503_and_counted)
{
        sk_redis_t *rc = sk_test_fx.r;
        int port = sk_test_free_port();
        int64_t t = sk_now_ms(), vid = sk_test_rand_id();
        char log[256], path[128], v[SK_ID_STRLEN], body[1024], wid_s[16], k[SK_KEY_MAX];
        char ku[SK_KEY_MAX], *before, *after;
        pid_t pid = start_front(port, NULL, "collision", log, sizeof(log));
        int64_t ms, from, wid;
        int seq, n = 0;
        long long st;
        sk_redis_pipe_t *pp = sk_redis_pipe_new(rc);

        ck_assert_ptr_nonnull(pp);
        sk_test_voucher(&(sk_test_voucher_t){ .r = rc, .vid = vid, .stock = 5,
                                              .init_stock = 5, .db_stock = 5, .begin_ms = t - 60000,
                                              .end_ms = t + 3600000, .status = 1, .db_status = 1 });
        sk_id_format(vid, v);
        ck_assert_int_eq(sk_test_http(port, "GET", "/readyz", NULL, NULL, body, sizeof(body)), 200);
        ck_assert_int_eq(sk_test_json_field(body, "workerId", wid_s, sizeof(wid_s)), 0);
        wid = strtoll(wid_s, NULL, 10);
        sk_key_voucher(k, sk_test_fx.conf.redis_prefix, vid, 0, SK_KEY_TRACE);
        from = sk_now_ms();
        for (ms = from - 20; ms < from + 4000; ms++) {
                for (seq = 0; seq < 4; seq++) {
                        int64_t tid = ((ms - SK_SNOWFLAKE_EPOCH_MS) << 22) | (wid << 12) | seq;
                        char msg[256];

                        snprintf(msg, sizeof(msg),
                                 "{\"traceId\":\"%" PRId64 "\",\"orderId\":\"77\",\"userId\":\"77\","
                                 "\"voucherId\":\"%s\",\"beforeQty\":9,\"deductQty\":1,"
                                 "\"afterQty\":8,\"ts\":%" PRId64 "}", tid, v, ms);
                        char tid_s[SK_ID_STRLEN];
                        const char *argv[4] = { "HSET", k, tid_s, msg };

                        sk_id_format(tid, tid_s);
                        ck_assert_int_ge(sk_redis_pipe_add(pp, 4, argv, NULL), 0);
                        n++;
                }
        }
        ck_assert_int_eq(sk_redis_pipe_count(pp), n);
        ck_assert_int_eq(sk_redis_pipe_exec(pp), 0); /* routed: any topology */
        sk_redis_pipe_free(pp);
        before = sk_test_snapshot(&sk_test_fx.conf, rc);
        snprintf(path, sizeof(path), "/api/v1/vouchers/%s/seckill", v);
        st = sk_test_http(port, "POST", path, "305", NULL, body, sizeof(body));
        ck_assert_msg(sk_now_ms() < from + 3900, "the purchase took too long for the prefill");
        ck_assert_msg(st == 503, "status %lld body %s (log %s)", st, body, log);
        ck_assert_ptr_nonnull(strstr(body, "collision"));
        after = sk_test_snapshot(&sk_test_fx.conf, rc);
        ck_assert_str_eq(before, after); /* nothing written */
        ck_assert_int_eq(sk_test_stock(&sk_test_fx.conf, rc, vid), 5);
        sk_key_voucher(ku, sk_test_fx.conf.redis_prefix, vid, 0, SK_KEY_USERS);
        ck_assert_ptr_null(sk_test_hget(rc, ku, "305"));
        ck_assert_int_eq(sk_test_scrape(port, "seckill_front_deduct_collision_total"), 1);
        ck_assert_int_eq(sk_test_stop(pid, 30), 0);
        free(before);
        free(after);
}
END_TEST

typedef struct {
        int port;
        char path[128];
        char user[16];
        int status;
} buy_t;

static void *buy_main(void *arg)
{
        buy_t *b = arg;
        char body[1024];

        b->status = sk_test_http(b->port, "POST", b->path, b->user, NULL, body, sizeof(body));
        return NULL;
}

/* Queue depth gauges: idle 0; a rollback waiting behind one held by the failpoint is 1. */
START_TEST(queue_depth_gauges)
{
        static const char *const env[] = {
                "SECKILL_FAILPOINTS=front.after_deduct=error;front.before_rollback=sleep(2500)", NULL };
        sk_redis_t *rc = sk_test_fx.r;
        int port = sk_test_free_port();
        int64_t t = sk_now_ms(), vid = sk_test_rand_id(), until;
        char log[256], v[SK_ID_STRLEN];
        pid_t pid = start_front(port, env, "gauges", log, sizeof(log));
        buy_t b[2];
        pthread_t th[2];
        long long seen = 0;
        int i;

        ck_assert_int_eq(sk_test_scrape(port, "seckill_front_deduct_queue_depth"), 0);
        ck_assert_int_eq(sk_test_scrape(port, "seckill_front_rollback_queue_depth"), 0);
        ck_assert_int_eq(sk_test_scrape(port, "seckill_front_lookup_queue_depth"), 0);
        ck_assert_int_eq(sk_test_scrape(port, "seckill_front_probe_queue_depth"), 0);
        sk_test_voucher(&(sk_test_voucher_t){ .r = rc, .vid = vid, .stock = 5,
                                              .begin_ms = t - 60000, .end_ms = t + 3600000,
                                              .status = 1 });
        sk_id_format(vid, v);
        for (i = 0; i < 2; i++) {
                b[i].port = port;
                snprintf(b[i].path, sizeof(b[i].path), "/api/v1/vouchers/%s/seckill", v);
                snprintf(b[i].user, sizeof(b[i].user), "%d", 310 + i);
                ck_assert_int_eq(pthread_create(&th[i], NULL, buy_main, &b[i]), 0);
        }
        until = sk_mono_ms() + 2000;
        while (sk_mono_ms() < until && seen < 1) {
                seen = sk_test_scrape(port, "seckill_front_rollback_queue_depth");
                usleep(50 * 1000);
        }
        for (i = 0; i < 2; i++)
                pthread_join(th[i], NULL);
        ck_assert_msg(seen == 1, "rollback queue depth never 1 (last %lld, log %s)", seen, log);
        for (i = 0; i < 2; i++)
                ck_assert_int_eq(b[i].status, 503);
        ck_assert_int_eq(sk_test_scrape(port, "seckill_front_rollback_queue_depth"), 0);
        ck_assert_int_eq(sk_test_stock(&sk_test_fx.conf, rc, vid), 5); /* both fenced and restored */
        ck_assert_int_eq(sk_test_stop(pid, 30), 0);
}
END_TEST

static long long threads_of(pid_t pid)
{
        char path[64], line[256];
        long long n = -1;
        FILE *f;

        snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
        ck_assert((f = fopen(path, "r")) != NULL);
        while (fgets(line, sizeof(line), f))
                if (!strncmp(line, "Threads:", 8))
                        n = strtoll(line + 8, NULL, 10);
        fclose(f);
        return n;
}

/* Three fatal producer errors: three replacements; each retired producer is destroyed
 * once drained, so the front ends with as many threads as one never replaced. */
START_TEST(retired_producers_are_destroyed)
{
        static const char *const env[] = { "SECKILL_FAILPOINTS=front.kafka_fatal=3*error", NULL };
        int port = sk_test_free_port(), port0 = sk_test_free_port();
        char log[256], log0[256];
        pid_t pid = start_front(port, env, "retired", log, sizeof(log));
        pid_t pid0 = start_front(port0, NULL, "baseline", log0, sizeof(log0));
        int64_t until = sk_mono_ms() + 15000;
        long long retired = -1, th, th0;

        while (sk_mono_ms() < until &&
               sk_test_scrape(port, "seckill_front_producer_replaced_total") < 3)
                usleep(100 * 1000);
        ck_assert_int_eq(sk_test_scrape(port, "seckill_front_producer_replaced_total"), 3);
        until = sk_mono_ms() + 10000;
        while (sk_mono_ms() < until && (retired = sk_test_scrape(port, "seckill_front_producers_retired")) != 0)
                usleep(100 * 1000);
        ck_assert_msg(retired == 0, "retired producers left: %lld (log %s)", retired, log);
        sk_sleep_ms(1500, NULL); /* librdkafka threads end after rd_kafka_destroy returns */
        th = threads_of(pid);
        th0 = threads_of(pid0);
        ck_assert_msg(th <= th0 + 2, "threads %lld, a front never replaced has %lld", th, th0);
        ck_assert_int_eq(sk_test_stop(pid, 30), 0);
        ck_assert_int_eq(sk_test_stop(pid0, 30), 0);
}
END_TEST

static void setup(void)
{
        sk_test_fix_setup("frontdf", &(sk_test_fix_opts_t){ .no_topics = 1 });
}

int main(void)
{
        Suite *s = suite_create("front_defects");
        TCase *tc = tcase_create("defects");

        tcase_set_timeout(tc, 180);
        tcase_add_unchecked_fixture(tc, setup, sk_test_fix_teardown);
        tcase_add_test(tc, ended_voucher_without_keys_is_10003);
        tcase_add_test(tc, trace_collision_is_503_and_counted);
        tcase_add_test(tc, queue_depth_gauges);
        tcase_add_test(tc, retired_producers_are_destroyed);
        suite_add_tcase(s, tc);
        return sk_test_run_nofork(s);
}
