/* 0413_dbonly_order_close.c: an order created on the DB-only path (DESIGN.md 12) and
 * closed by the consumer's closer (DESIGN.md 13), release.lua of DESIGN.md 4 ("a DB-only
 * order (no T) gets only T:x: the recovery rebuild counts its unit from the DB"), against
 * a PRIVATE redis-server, the real MariaDB and Kafka, one front and one consumer:
 *   - closed AFTER Redis is back: `degrade db-only`, a purchase is 200 CREATED (UNPAID,
 *     short pay deadline); `degrade auto`: the rebuild gives the order its stub T; the
 *     closer closes it: CLOSED, RESTORE row business_type 5, DB stock +1, T:x restored 1,
 *     Redis = DB; the same user buys again (202) and the unit is sold again; verify 0;
 *   - closed WHILE the voucher is on the DB-only path (Redis healthy): the DB stock is
 *     restored, release.lua writes only T:x (restored 0, no T); `degrade auto`: the
 *     rebuild counts the unit from the DB once: Redis = DB, no double restore;
 *   - a DB-only COMMIT whose answer is lost: resolved from the outcome row, 200 CREATED,
 *     never 409/10006 for the buyer's own order. */
#include "sk_test.h"

#define C_STOCK 3

static pid_t g_cons_pid;


/* The consumer: closer every 200 ms; its own orders (the Kafka path) get 10 minutes. */
static pid_t start_consumer(const char *what)
{
        static const char *const env[] = { "SECKILL_CLOSE_INTERVAL_MS=200",
                                           "SECKILL_PAY_TIMEOUT_S=600", NULL };
        char log[256];

        sk_test_log_path(log, sizeof(log), "consumer_0413_%s", what);
        return sk_test_consumer_start(&(sk_test_spawn_t){ .log_path = log, .env = env }, 0);
}

/* The order's status, polled until it is @p want (or 30 s). */
static long long wait_order_status(int64_t order, long long want)
{
        int64_t until = sk_mono_ms() + 30000;
        long long st;

        while ((st = sk_test_i64("SELECT status FROM tb_voucher_order WHERE id = %" PRId64, order)) != want &&
               sk_mono_ms() < until)
                sk_sleep_ms(200, NULL);
        return st;
}

/* The T:x entry of @p trace in bucket 0's trace hash, polled until present (or 30 s);
 * malloc'd, or NULL. */
static char *wait_tx(sk_redis_t *rc, int64_t vid, int64_t trace)
{
        char k[SK_KEY_MAX], f[40];
        int64_t until = sk_mono_ms() + 30000;
        char *s;

        sk_key_voucher(k, sk_test_fx.conf.redis_prefix, vid, 0, SK_KEY_TRACE);
        snprintf(f, sizeof(f), "%" PRId64 ":x", trace);
        while ((s = sk_test_hget(rc, k, f)) == NULL && sk_mono_ms() < until)
                sk_sleep_ms(200, NULL);
        return s;
}

static int has_t(sk_redis_t *rc, int64_t vid, int64_t trace)
{
        char k[SK_KEY_MAX], f[24];
        char *s;

        sk_key_voucher(k, sk_test_fx.conf.redis_prefix, vid, 0, SK_KEY_TRACE);
        snprintf(f, sizeof(f), "%" PRId64, trace);
        s = sk_test_hget(rc, k, f);
        free(s);
        return s != NULL;
}

static long long db_stock(int64_t vid)
{
        return sk_test_i64("SELECT SUM(stock) FROM tb_seckill_stock WHERE voucher_id = %" PRId64, vid);
}

/* A voucher of C_STOCK units (one bucket) put on the DB-only path by the operator, a
 * front with a 3 s pay window, and one purchase of @p user answered 200 CREATED on it. */
typedef struct dbo {
        int64_t vid, trace, order;
        char v[SK_ID_STRLEN], path[160], log[256];
        int port;
        pid_t pid;
} dbo_t;

static void dbonly_purchase_fp(dbo_t *d, sk_redis_t *rc, const char *what, int64_t user,
                               const char *fp)
{
        const char *env[] = { NULL, "SECKILL_PAY_TIMEOUT_S=3", "SECKILL_BREAKER_OPEN_MS=1000",
                              "SECKILL_BREAKER_HEALTHY_MS=1500", fp, NULL };
        char url_env[600], u[24], body[1024], s[32];
        int64_t t = sk_now_ms(), until;
        int st;

        d->vid = sk_test_rand_id();
        sk_test_voucher(&(sk_test_voucher_t){ .conf = &sk_test_fx.conf, .r = rc, .vid = d->vid,
                                              .stock = C_STOCK, .init_stock = C_STOCK,
                                              .db_stock = C_STOCK, .begin_ms = t - 60000,
                                              .end_ms = t + 3600000, .status = 1, .db_status = 1 });
        sk_id_format(d->vid, d->v);
        snprintf(d->path, sizeof(d->path), "/api/v1/vouchers/%s/seckill", d->v);
        ck_assert_int_eq(sk_test_admin(NULL, (const char *[]){ "degrade", "db-only", "--voucher", d->v, NULL }), 0);
        snprintf(url_env, sizeof(url_env), "SECKILL_REDIS_URL=%s", sk_test_fx.conf.redis_url);
        env[0] = url_env;
        sk_test_log_path(d->log, sizeof(d->log), "front_0413_%s", what);
        d->port = sk_test_free_port();
        d->pid = sk_test_front_start(&sk_test_fx.conf, d->port, env, d->log);
        ck_assert_msg(sk_test_wait_ready(d->port, d->pid, 40) == 0 ||
                      sk_test_http(d->port, "GET", "/healthz", NULL, NULL, body, sizeof(body)) == 200,
                      "front not up (log %s)", d->log);
        ck_assert_msg(sk_test_wait_switch(d->vid, "db", 40) == 0, "not db (log %s)", d->log);
        sk_sleep_ms(1500, NULL); /* the front's next read of the switch rows */
        snprintf(u, sizeof(u), "%" PRId64, user);
        until = sk_mono_ms() + 20000;
        while ((st = sk_test_http(d->port, "POST", d->path, u, NULL, body, sizeof(body))) == 503 &&
               sk_mono_ms() < until)
                sk_sleep_ms(200, NULL);
        ck_assert_msg(st == 200, "status %d: %s (log %s)", st, body, d->log);
        ck_assert_int_eq(sk_test_json_field(body, "state", s, sizeof(s)), 0);
        ck_assert_str_eq(s, "CREATED");
        ck_assert_int_eq(sk_test_json_field(body, "traceId", s, sizeof(s)), 0);
        ck_assert_int_eq(sk_id_parse_cstr(s, &d->trace), 0);
        ck_assert_int_eq(sk_test_json_field(body, "orderId", s, sizeof(s)), 0);
        ck_assert_int_eq(sk_id_parse_cstr(s, &d->order), 0);
        /* UNPAID on the DB path, the unit taken from the DB only; no T in Redis. */
        ck_assert_int_eq(sk_test_i64("SELECT status FROM tb_voucher_order WHERE id = %" PRId64, d->order), 1);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_seckill_outcome WHERE trace_id = %" PRId64
                           " AND order_id = %" PRId64 " AND outcome = 1 AND path = 'db'", d->trace, d->order), 1);
        ck_assert_int_eq(db_stock(d->vid), C_STOCK - 1);
        ck_assert_int_eq(has_t(rc, d->vid, d->trace), 0);
}

static void dbonly_purchase(dbo_t *d, sk_redis_t *rc, const char *what, int64_t user)
{
        dbonly_purchase_fp(d, rc, what, user, NULL);
}

/* The close of the order: CLOSED, one RESTORE row (business_type 5), DB stock back. */
static void check_closed(const dbo_t *d)
{
        ck_assert_msg(wait_order_status(d->order, 4) == 4, "order not closed");
        ck_assert_int_eq(sk_test_i64("SELECT business_type FROM tb_voucher_reconcile_log WHERE trace_id = %" PRId64
                           " AND log_type = 1", d->trace), 5);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_voucher_reconcile_log WHERE trace_id = %" PRId64
                           " AND log_type = 1", d->trace), 1);
        ck_assert_int_eq(db_stock(d->vid), C_STOCK);
}

START_TEST(closed_after_redis_back)
{
        sk_redis_t *rc = sk_test_redis(&sk_test_fx.conf);
        char *tx, body[1024], u[24], s[32];
        int64_t user = 7001, trace2, until;
        dbo_t d;

        dbonly_purchase(&d, rc, "after", user);
        /* Back to auto before any closer runs: the rebuild counts the unit from the DB
         * and writes the order's stub T. */
        ck_assert_int_eq(sk_test_admin(NULL, (const char *[]){ "degrade", "auto", "--voucher", d.v, NULL }), 0);
        ck_assert_msg(sk_test_wait_switch(d.vid, "redis", 40) == 0, "not back to redis (log %s)", d.log);
        ck_assert_int_eq(has_t(rc, d.vid, d.trace), 1);
        ck_assert_int_eq(sk_test_stock(&sk_test_fx.conf, rc, d.vid), C_STOCK - 1);
        ck_assert_int_eq(sk_test_i64("SELECT status FROM tb_voucher_order WHERE id = %" PRId64, d.order), 1);

        g_cons_pid = start_consumer("after");
        check_closed(&d);
        tx = wait_tx(rc, d.vid, d.trace);
        ck_assert_msg(tx != NULL, "no T:x");
        ck_assert_msg(strstr(tx, "\"by\":\"close\",\"restored\":1") != NULL, "%s", tx);
        free(tx);
        ck_assert_int_eq(sk_test_stock(&sk_test_fx.conf, rc, d.vid), C_STOCK);

        /* The same user buys again on the Redis path: the unit is sold again. */
        sk_sleep_ms(1500, NULL); /* the front's next read of the switch rows */
        snprintf(u, sizeof(u), "%" PRId64, user);
        ck_assert_int_eq(sk_test_http(d.port, "POST", d.path, u, NULL, body, sizeof(body)), 202);
        ck_assert_int_eq(sk_test_json_field(body, "traceId", s, sizeof(s)), 0);
        ck_assert_int_eq(sk_id_parse_cstr(s, &trace2), 0);
        until = sk_mono_ms() + 30000;
        while (sk_test_i64("SELECT COUNT(*) FROM tb_seckill_outcome WHERE trace_id = %" PRId64, trace2) != 1 &&
               sk_mono_ms() < until)
                sk_sleep_ms(200, NULL);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_seckill_outcome o JOIN tb_voucher_order d ON d.id = o.order_id"
                           " WHERE o.trace_id = %" PRId64 " AND o.outcome = 1 AND o.path = 'kafka' AND d.user_id = %"
                           PRId64 " AND d.status IN (1, 2)", trace2, user), 1);
        ck_assert_int_eq(db_stock(d.vid), C_STOCK - 1);
        ck_assert_int_eq(sk_test_stock(&sk_test_fx.conf, rc, d.vid), C_STOCK - 1);
        ck_assert_int_eq(sk_test_admin(NULL, (const char *[]){ "verify", d.v, NULL }), 0);
        ck_assert_int_eq(sk_test_stop(d.pid, 40), 0);
        sk_redis_close(rc);
}
END_TEST

START_TEST(closed_on_db_path)
{
        sk_redis_t *rc = sk_test_redis(&sk_test_fx.conf);
        char *tx;
        dbo_t d;

        g_cons_pid = start_consumer("ondb");
        dbonly_purchase(&d, rc, "ondb", 8001);
        /* Closed while the voucher is still on the DB path: Redis is healthy, the
         * release writes only T:x (no T, nothing restored in Redis). */
        check_closed(&d);
        tx = wait_tx(rc, d.vid, d.trace);
        ck_assert_msg(tx != NULL, "no T:x");
        ck_assert_msg(strstr(tx, "\"by\":\"close\",\"restored\":0") != NULL, "%s", tx);
        free(tx);
        ck_assert_int_eq(has_t(rc, d.vid, d.trace), 0);
        ck_assert_int_eq(sk_test_wait_switch(d.vid, "db", 1), 0);

        /* Back to auto: the rebuild counts the unit from the DB, once. */
        ck_assert_int_eq(sk_test_admin(NULL, (const char *[]){ "degrade", "auto", "--voucher", d.v, NULL }), 0);
        ck_assert_msg(sk_test_wait_switch(d.vid, "redis", 40) == 0, "not back to redis (log %s)", d.log);
        ck_assert_int_eq(db_stock(d.vid), C_STOCK);
        ck_assert_int_eq(sk_test_stock(&sk_test_fx.conf, rc, d.vid), C_STOCK);
        sk_sleep_ms(1000, NULL); /* a late release or closer pass would show now */
        ck_assert_int_eq(sk_test_stock(&sk_test_fx.conf, rc, d.vid), C_STOCK);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_voucher_reconcile_log WHERE trace_id = %" PRId64
                           " AND log_type = 1", d.trace), 1);
        ck_assert_int_eq(sk_test_admin(NULL, (const char *[]){ "verify", d.v, NULL }), 0);
        ck_assert_int_eq(sk_test_stop(d.pid, 40), 0);
        sk_redis_close(rc);
}
END_TEST

/* Issue 22 defect 8 (DESIGN.md 16 "commit unknown"): the DB-only COMMIT goes through but
 * its answer is lost (failpoint front.db_only_after_commit): the front reads the outcome
 * row and answers the buyer 200 CREATED for the order, never 409/10006 for their own
 * order; one order, one unit. */
START_TEST(commit_unknown_answers_own_order)
{
        sk_redis_t *rc = sk_test_redis(&sk_test_fx.conf);
        dbo_t d;

        dbonly_purchase_fp(&d, rc, "commitlost", 8101,
                           "SECKILL_FAILPOINTS=front.db_only_after_commit=1*error");
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = %" PRId64, d.vid), 1);
        ck_assert_int_ge(sk_test_file_count(d.log, "db_only_commit_unknown"), 1);
        ck_assert_int_eq(sk_test_stop(d.pid, 40), 0);
        sk_redis_close(rc);
}
END_TEST

static void setup(void)
{
        sk_test_fix_setup("dbclose", &(sk_test_fix_opts_t){ .partitions = 2,
                                                            .delivery_timeout_ms = 3000,
                                                            .no_topics = 1, .private_redis = 1 });
}

static void teardown(void)
{
        sk_test_fix_teardown();
        g_cons_pid = 0;
}

int main(void)
{
        Suite *s = suite_create("dbonly_order_close");
        TCase *tc = tcase_create("close");

        setenv("CK_FORK", "no", 1);
        tcase_set_timeout(tc, 90);
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, closed_after_redis_back);
        tcase_add_test(tc, closed_on_db_path);
        tcase_add_test(tc, commit_unknown_answers_own_order);
        suite_add_tcase(s, tc);
        return sk_test_run(s);
}
