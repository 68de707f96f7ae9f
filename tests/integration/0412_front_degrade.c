/* 0412_front_degrade.c: the Redis-down degrade of DESIGN.md 12 end to end, against a
 * PRIVATE redis-server (never the shared one), the real MariaDB and Kafka, one front and
 * one consumer:
 *   - kill Redis in the middle of a sale: purchases go on with 200 CREATED on the
 *     DB-only path (after draining: 503 cause degrade), a second purchase of a buyer is
 *     409/10006 from the DB; restart Redis EMPTY on the same port: the front rebuilds the
 *     voucher from the DB and answers 202 again; invariants 1, 2, 4, 5 hold and Redis =
 *     DB (stock, buyers);
 *   - `seckill-admin degrade db-only --voucher V` while Redis is healthy: the voucher
 *     drains and moves to the DB-only path (the first DB-only purchase hits the failpoint
 *     front.db_only_before_commit = a DB failure before COMMIT: 503, nothing written);
 *     `degrade auto`: back to 202s, Redis = DB;
 *   - Redis frozen (SIGSTOP) instead of killed, then SIGCONT: the same path there and
 *     back, invariants and Redis = DB;
 *   - Redis slow (CLIENT PAUSE 25 s, connections open): the breaker opens, the voucher
 *     drains to the DB path (outcome path 'db'), comes back to Redis after the pause;
 *   - the DB away (a socat proxy frozen) while on the DB-only path: 503 within the
 *     request deadline, nothing written; the DB back: 200 again;
 *   - two fronts, one reaching Redis through a frozen socat proxy: the
 *     voucher reaches db once, both fronts answer 200 CREATED from the DB-only path,
 *     the healthy front rebuilds it, no bounce (at most 4 moves), then 202 again on
 *     both; every 202 CREATED, one order per user, Redis = DB;
 *   - a voucher whose recovery rebuild cannot settle does not hold up another voucher's
 *     move to draining (the rebuild runs off the follower's thread). */
#include <mysql.h>

#include "sk_test.h"

#define D_STOCK 400

static pid_t g_cons_pid;
static int g_healthy_ms = 1500;         /* SECKILL_BREAKER_HEALTHY_MS of the fronts started */

/* ------------------------------------------------------------- helpers ---- */

/* What a purchase was answered (for invariant 4). */
typedef struct answer { int status; int64_t trace, order, user; } answer_t;
typedef struct book { answer_t a[4096]; size_t n; } book_t;

static int buy(int port, const char *path, int64_t user, book_t *bk)
{
        char u[24], body[1024], s[32];
        int st;

        snprintf(u, sizeof(u), "%" PRId64, user);
        st = sk_test_http(port, "POST", path, u, NULL, body, sizeof(body));
        ck_assert_msg(st == 200 || st == 202 || st == 409 || st == 503, "status %d: %s", st, body);
        if (st == 200 || st == 202) {
                answer_t *a = &bk->a[bk->n++];

                ck_assert(bk->n < 4096);
                a->status = st;
                a->user = user;
                ck_assert_int_eq(sk_test_json_field(body, "state", s, sizeof(s)), 0);
                ck_assert_str_eq(s, st == 200 ? "CREATED" : "PENDING");
                ck_assert_int_eq(sk_test_json_field(body, "traceId", s, sizeof(s)), 0);
                ck_assert_int_eq(sk_id_parse_cstr(s, &a->trace), 0);
                ck_assert_int_eq(sk_test_json_field(body, "orderId", s, sizeof(s)), 0);
                ck_assert_int_eq(sk_id_parse_cstr(s, &a->order), 0);
        }
        return st;
}

/* Invariants 1, 2, 4, 5 in the DB and Redis = DB, once the consumer has decided every
 * 202 (waits for that). */
static void check_invariants(int64_t vid, const book_t *bk, sk_redis_t *rc)
{
        char k[SK_KEY_MAX];
        redisReply *r;
        long long active, db_stock, users;
        size_t i;

        for (i = 0; i < bk->n; i++) {
                int64_t until = sk_mono_ms() + 30000;

                while (sk_test_i64("SELECT COUNT(*) FROM tb_seckill_outcome WHERE trace_id = %" PRId64,
                         bk->a[i].trace) != 1 && sk_mono_ms() < until)
                        sk_sleep_ms(200, NULL);
                /* 4: every 202 and 200 is CREATED with its order (no business failure
                 * can happen here: distinct buyers, stock left). */
                ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_seckill_outcome o JOIN tb_voucher_order d "
                                   "ON d.id = o.order_id AND d.trace_id = o.trace_id WHERE o.trace_id = %"
                                   PRId64 " AND o.outcome = 1 AND o.order_id = %" PRId64
                                   " AND o.path = '%s'", bk->a[i].trace, bk->a[i].order,
                                   bk->a[i].status == 200 ? "db" : "kafka"), 1);
        }
        active = sk_test_i64("SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = %" PRId64
                   " AND status IN (1, 2)", vid);
        db_stock = sk_test_i64("SELECT SUM(stock) FROM tb_seckill_stock WHERE voucher_id = %" PRId64, vid);
        /* 1 (one bucket) and 5. */
        ck_assert_int_eq(active, (long long)bk->n);
        ck_assert_int_eq(D_STOCK - db_stock, active);
        ck_assert_int_le(active, D_STOCK);
        /* 2 */
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM (SELECT user_id FROM tb_voucher_order WHERE voucher_id = %"
                           PRId64 " AND status IN (1, 2) GROUP BY user_id HAVING COUNT(*) > 1) x", vid), 0);
        /* Redis = DB: stock and the buyers (the users hash also holds "_"). */
        ck_assert_int_eq(sk_test_stock(&sk_test_fx.conf, rc, vid), db_stock);
        sk_key_voucher(k, sk_test_fx.conf.redis_prefix, vid, 0, SK_KEY_USERS);
        r = sk_test_cmd(rc, "HLEN %s", k);
        ck_assert(r && r->type == REDIS_REPLY_INTEGER);
        users = r->integer;
        freeReplyObject(r);
        r = sk_test_cmd(rc, "HEXISTS %s _", k);
        ck_assert(r && r->type == REDIS_REPLY_INTEGER);
        users -= r->integer;
        freeReplyObject(r);
        ck_assert_int_eq(users, active);
        /* seckill-admin verify: invariants 1, 2, 3 and active <= init as it judges them. */
        snprintf(k, sizeof(k), "%" PRId64, vid);
        ck_assert_int_eq(sk_test_admin(NULL, (const char *[]){ "verify", k, NULL }), 0);
}

/* @p fp: SECKILL_FAILPOINTS or NULL; @p mysql_url: another SECKILL_MYSQL_URL or NULL. */
static pid_t start_front_with(int *port_out, char *log, size_t cap, const char *what, const char *fp,
                             const char *mysql_url)
{
        char url_env[600], fp_env[160], my_env[600], healthy_env[64];
        const char *env[] = { url_env, "SECKILL_WORKER_LEASE_MS=20000", "SECKILL_BREAKER_OPEN_MS=1000",
                              healthy_env, "SECKILL_BREAKER_FAILURES=3",
                              "SECKILL_DEGRADE_DB_CONNS=4", NULL, NULL, NULL };
        int port = sk_test_free_port(), ne = 6;
        pid_t pid;

        snprintf(healthy_env, sizeof(healthy_env), "SECKILL_BREAKER_HEALTHY_MS=%d", g_healthy_ms);
        snprintf(url_env, sizeof(url_env), "SECKILL_REDIS_URL=%s", sk_test_fx.conf.redis_url);
        if (fp)
                env[ne++] = fp_env;
        if (mysql_url) {
                snprintf(my_env, sizeof(my_env), "SECKILL_MYSQL_URL=%s", mysql_url);
                env[ne++] = my_env;
        }
        snprintf(fp_env, sizeof(fp_env), "SECKILL_FAILPOINTS=%s", fp ? fp : "");
        sk_test_log_path(log, cap, "front_0412_%s", what);
        pid = sk_test_front_start(&sk_test_fx.conf, port, env, log);
        if (strcmp(what, "restarted") == 0) {
                /* Redis is down: not ready (503), but alive and serving the DB-only path. */
                int64_t until = sk_mono_ms() + 40000;
                char body[512];

                while (sk_test_http(port, "GET", "/healthz", NULL, NULL, body, sizeof(body)) != 200) {
                        ck_assert_msg(sk_mono_ms() < until, "front not alive (log %s)", log);
                        usleep(100 * 1000);
                }
                /* ... once it has read the table of waiting rooms (DESIGN.md 18): until then
                 * it answers every purchase 503, as it cannot tell a queued voucher's. */
                while (sk_test_http(port, "GET", "/readyz", NULL, NULL, body, sizeof(body)) <= 0 ||
                       strstr(body, "\"table\":true") == NULL) {
                        ck_assert_msg(sk_mono_ms() < until, "front never read the rooms table (log %s)", log);
                        usleep(100 * 1000);
                }
        } else {
                ck_assert_msg(sk_test_wait_ready(port, pid, 40) == 0, "front not ready (log %s)", log);
        }
        *port_out = port;
        return pid;
}

static pid_t start_front(int *port_out, char *log, size_t cap, const char *what, const char *fp)
{
        return start_front_with(port_out, log, cap, what, fp, NULL);
}

/* POST with fresh buyers until one is answered @p want (others: 503, or the path's
 * other success while switching). @returns 0 or -1 after @p timeout_s. */
static int buy_until(int port, const char *path, int64_t *user, int want, book_t *bk, int timeout_s)
{
        int64_t until = sk_mono_ms() + timeout_s * 1000LL;

        while (sk_mono_ms() < until) {
                if (buy(port, path, (*user)++, bk) == want)
                        return 0;
                sk_sleep_ms(100, NULL);
        }
        return -1;
}

/* One sale under way: a voucher of D_STOCK units, a consumer, a front (@p what, with
 * failpoints @p fp or NULL), the first 202 and @p n202 more from buyers @p user0 on. */
typedef struct sale {
        int64_t vid, user;
        char v[SK_ID_STRLEN], path[160], log[256];
        int port;
        pid_t pid;
} sale_t;

static void sale_start(sale_t *sl, book_t *bk, const char *what, const char *fp, int64_t user0,
                       int n202)
{
        char clog[256];
        int i;

        memset(bk, 0, sizeof(*bk));
        sl->vid = sk_test_voucher_open(D_STOCK);
        sl->user = user0;
        sk_id_format(sl->vid, sl->v);
        snprintf(sl->path, sizeof(sl->path), "/api/v1/vouchers/%s/seckill", sl->v);
        sk_test_log_path(clog, sizeof(clog), "consumer_0412_%s", what);
        g_cons_pid = sk_test_consumer_start(&(sk_test_spawn_t){ .log_path = clog }, 0);
        sl->pid = start_front(&sl->port, sl->log, sizeof(sl->log), what, fp);
        ck_assert_msg(buy_until(sl->port, sl->path, &sl->user, 202, bk, 30) == 0, "no 202 (log %s)",
                      sl->log);
        for (i = 0; i < n202; i++)
                ck_assert_int_eq(buy(sl->port, sl->path, sl->user++, bk), 202);
}

/* The end of a sale back on Redis: @p n202 more 202s, the invariants, the front
 * stopped cleanly; @p rc is freed. */
static void sale_finish(sale_t *sl, book_t *bk, sk_redis_t *rc, int n202)
{
        int i;

        ck_assert(sk_test_switch_is(sl->vid, "redis"));
        for (i = 0; i < n202; i++)
                ck_assert_int_eq(buy(sl->port, sl->path, sl->user++, bk), 202);
        check_invariants(sl->vid, bk, rc);
        ck_assert_int_eq(sk_test_stop(sl->pid, 40), 0);
        sk_redis_close(rc);
}

/* --------------------------------------------------------------- tests ---- */

START_TEST(kill_redis_mid_sale)
{
        static book_t bk;
        char body[1024], code[24];
        sk_redis_t *rc = sk_test_redis(&sk_test_fx.conf);
        int i, n200 = 0, redis_port = sk_test_fx.conf.redis.port;
        sale_t sl;

        sale_start(&sl, &bk, "kill", NULL, 1000, 30);

        /* Redis dies mid-sale: draining (503), then the DB-only path (200 CREATED). */
        sk_redis_close(rc);
        kill(sk_test_fx.redis_pid, SIGKILL);
        waitpid(sk_test_fx.redis_pid, NULL, 0);
        sk_test_fx.redis_pid = 0;
        ck_assert_msg(buy_until(sl.port, sl.path, &sl.user, 200, &bk, 60) == 0, "no 200 (log %s)", sl.log);
        ck_assert(sk_test_switch_is(sl.vid, "db"));
        for (i = 0; i < 40; i++) {
                ck_assert_int_eq(buy(sl.port, sl.path, sl.user++, &bk), 200);
                n200++;
        }
        /* The same buyer again: 10006 from the DB. */
        snprintf(code, sizeof(code), "%" PRId64, sl.user - 1);
        ck_assert_int_eq(sk_test_http(sl.port, "POST", sl.path, code, NULL, body, sizeof(body)), 409);
        ck_assert_msg(strstr(body, "10006") != NULL, "%s", body);
        ck_assert_int_ge(sk_test_scrape(sl.port, "seckill_front_db_only_purchases_total{result=\"created\"}"),
                         n200 + 1);
        ck_assert_int_eq(sk_test_http(sl.port, "GET", "/readyz", NULL, NULL, body, sizeof(body)), 503);
        ck_assert_msg(strstr(body, "\"db\"") != NULL, "%s", body);
        /* A front restarted mid-outage follows the DB state from its first purchase. */
        ck_assert_int_eq(sk_test_stop(sl.pid, 40), 0);
        sl.pid = start_front(&sl.port, sl.log, sizeof(sl.log), "restarted", NULL);
        for (i = 0; i < 10; i++)
                ck_assert_int_eq(buy(sl.port, sl.path, sl.user++, &bk), 200);
        sk_sleep_ms(3000, NULL); /* longer than SECKILL_BREAKER_HEALTHY_MS: still db */
        ck_assert(sk_test_switch_is(sl.vid, "db"));
        ck_assert_int_eq(buy(sl.port, sl.path, sl.user++, &bk), 200);

        /* Redis comes back EMPTY: rebuilt from the DB, then 202 again. */
        sk_test_fx.redis_pid = sk_test_redis_start(&sk_test_fx.conf, redis_port, NULL);
        ck_assert_msg(buy_until(sl.port, sl.path, &sl.user, 202, &bk, 60) == 0, "no 202 after restart (log %s)",
                      sl.log);
        ck_assert_int_ge(sk_test_i64("SELECT epoch FROM tb_seckill_switch WHERE scope = %" PRId64, sl.vid), 4);
        sale_finish(&sl, &bk, sk_test_redis(&sk_test_fx.conf), 20);
}
END_TEST

/* Redis frozen (SIGSTOP) under purchases instead of killed: the breaker opens on
 * timeouts, the voucher drains to the DB path; SIGCONT: the purchases a frozen deduct
 * left undecided are fenced by the front, the rebuild sets Redis from the DB. */
START_TEST(freeze_redis_mid_sale)
{
        static book_t bk;
        sk_redis_t *rc = sk_test_redis(&sk_test_fx.conf);
        int i;
        sale_t sl;

        sale_start(&sl, &bk, "freeze", NULL, 20000, 20);
        ck_assert_int_eq(kill(sk_test_fx.redis_pid, SIGSTOP), 0);
        ck_assert_msg(buy_until(sl.port, sl.path, &sl.user, 200, &bk, 60) == 0, "no 200 (log %s)", sl.log);
        ck_assert(sk_test_switch_is(sl.vid, "db"));
        for (i = 0; i < 20; i++)
                ck_assert_int_eq(buy(sl.port, sl.path, sl.user++, &bk), 200);
        ck_assert_int_eq(kill(sk_test_fx.redis_pid, SIGCONT), 0);
        ck_assert_msg(buy_until(sl.port, sl.path, &sl.user, 202, &bk, 90) == 0, "no 202 after SIGCONT (log %s)",
                      sl.log);
        sale_finish(&sl, &bk, rc, 10);
}
END_TEST

/* Redis slow, not gone: CLIENT PAUSE on the private redis-server (every client's
 * commands, PING included, wait out the pause; connections stay open). The breaker
 * opens on timeouts, the voucher drains to the DB path (200 CREATED, outcome path 'db');
 * when the pause ends the front rebuilds the voucher and answers 202 again, Redis = DB. */
START_TEST(slow_redis_mid_sale)
{
        static book_t bk;
        sk_redis_t *rc = sk_test_redis(&sk_test_fx.conf);
        redisReply *r;
        int i;
        sale_t sl;

        sale_start(&sl, &bk, "slow", NULL, 40000, 20);
        r = sk_test_cmd(rc, "CLIENT PAUSE 25000 ALL");
        ck_assert_msg(r && r->type == REDIS_REPLY_STATUS, "CLIENT PAUSE failed");
        freeReplyObject(r);
        ck_assert_msg(buy_until(sl.port, sl.path, &sl.user, 200, &bk, 24) == 0, "no 200 (log %s)", sl.log);
        ck_assert(sk_test_switch_is(sl.vid, "db"));
        for (i = 0; i < 5; i++)
                ck_assert_int_eq(buy(sl.port, sl.path, sl.user++, &bk), 200);
        ck_assert_int_ge(sk_test_i64("SELECT COUNT(*) FROM tb_seckill_outcome WHERE voucher_id = %" PRId64
                           " AND path = 'db'", sl.vid), 6);
        /* The pause ends by itself: back to Redis. */
        ck_assert_msg(buy_until(sl.port, sl.path, &sl.user, 202, &bk, 90) == 0, "no 202 after the pause "
                      "(log %s)", sl.log);
        ck_assert_int_ge(sk_test_i64("SELECT epoch FROM tb_seckill_switch WHERE scope = %" PRId64, sl.vid), 4);
        sale_finish(&sl, &bk, rc, 10);
}
END_TEST

/* The DB goes away while a voucher is on the DB-only path (the front reaches MariaDB
 * through a proxy the test freezes): 503, nothing written; the DB back: 200 again. */
START_TEST(db_down_on_db_path)
{
        static book_t bk;
        char log[256], path[160], v[SK_ID_STRLEN], url[600], body[1024], u[24];
        sk_redis_t *rc = sk_test_redis(&sk_test_fx.conf);
        int64_t vid, user = 30000, t0;
        int port, i, pport = sk_test_free_port(), st;
        pid_t pid, proxy;

        memset(&bk, 0, sizeof(bk));
        vid = sk_test_voucher_open(D_STOCK);
        sk_id_format(vid, v);
        snprintf(path, sizeof(path), "/api/v1/vouchers/%s/seckill", v);
        proxy = sk_test_proxy_start(pport, sk_test_fx.conf.mysql.port);
        snprintf(url, sizeof(url), "mysql://%s@127.0.0.1:%d/%s", sk_test_fx.conf.mysql.user, pport,
                 sk_test_fx.conf.mysql.database);
        ck_assert_int_eq(sk_test_admin(NULL, (const char *[]){ "degrade", "db-only", "--voucher", v, NULL }), 0);
        pid = start_front_with(&port, log, sizeof(log), "dbdown", NULL, url);
        ck_assert_int_eq(sk_test_wait_switch(vid, "db", 40), 0);
        ck_assert_msg(buy_until(port, path, &user, 200, &bk, 20) == 0, "no 200 (log %s)", log);
        for (i = 0; i < 5; i++)
                ck_assert_int_eq(buy(port, path, user++, &bk), 200);

        ck_assert_int_eq(kill(-proxy, SIGSTOP), 0);
        for (i = 0; i < 3; i++) {
                snprintf(u, sizeof(u), "%" PRId64, user + i);
                t0 = sk_mono_ms();
                st = sk_test_http(port, "POST", path, u, NULL, body, sizeof(body));
                ck_assert_msg(st == 503, "status %d: %s", st, body);
                ck_assert_int_lt(sk_mono_ms() - t0, 7000 + 1500); /* within the request deadline */
        }
        ck_assert_int_eq(kill(-proxy, SIGCONT), 0);
        /* Nothing written for the refused buyers. */
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = %" PRId64
                           " AND user_id BETWEEN %" PRId64 " AND %" PRId64, vid, user, user + 2), 0);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_seckill_outcome WHERE voucher_id = %" PRId64
                           " AND user_id BETWEEN %" PRId64 " AND %" PRId64, vid, user, user + 2), 0);
        user += 3;
        ck_assert_msg(buy_until(port, path, &user, 200, &bk, 30) == 0, "no 200 after the DB came back "
                      "(log %s)", log);
        ck_assert_int_eq(sk_test_stop(pid, 40), 0);
        kill(-proxy, SIGKILL);
        waitpid(proxy, NULL, 0);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = %" PRId64
                           " AND status IN (1, 2)", vid), (long long)bk.n);
        ck_assert_int_eq(sk_test_i64("SELECT SUM(stock) FROM tb_seckill_stock WHERE voucher_id = %" PRId64, vid),
                         D_STOCK - (long long)bk.n);
        sk_redis_close(rc);
}
END_TEST

START_TEST(operator_db_only_then_auto)
{
        static book_t bk;
        char body[1024], vs[32];
        sk_redis_t *rc = sk_test_redis(&sk_test_fx.conf);
        int64_t trace_fp;
        int i;
        sale_t sl;

        sale_start(&sl, &bk, "op", "front.db_only_before_commit=1*error", 5000, 10);
        snprintf(vs, sizeof(vs), "%s", sl.v);

        ck_assert_int_eq(sk_test_admin(NULL, (const char *[]){ "degrade", "db-only", "--voucher", vs, NULL }), 0);
        ck_assert_int_eq(sk_test_admin(NULL, (const char *[]){ "degrade", "status", "--voucher", vs, NULL }), 0);
        /* v5: the only front acks the drain at once, so draining may last well under a
         * second (DESIGN.md 12 early move): no purchase here, it could be the DB path's
         * first and use up the failpoint below. */
        ck_assert_int_eq(sk_test_wait_switch(sl.vid, "db", 30), 0);
        sk_sleep_ms(1500, NULL); /* the front's next read */
        /* The failpoint: a DB failure before COMMIT -> 503, nothing written. */
        snprintf(vs, sizeof(vs), "%" PRId64, sl.user);
        ck_assert_int_eq(sk_test_http(sl.port, "POST", sl.path, vs, NULL, body, sizeof(body)), 503);
        ck_assert_msg(strstr(body, "\"db\"") != NULL, "%s", body);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = %" PRId64
                           " AND user_id = %" PRId64, sl.vid, sl.user), 0);
        trace_fp = sk_test_i64("SELECT COUNT(*) FROM tb_seckill_outcome WHERE voucher_id = %" PRId64
                     " AND path = 'db'", sl.vid);
        ck_assert_int_eq(trace_fp, 0);
        for (i = 0; i < 25; i++)
                ck_assert_int_eq(buy(sl.port, sl.path, sl.user++, &bk), 200);
        /* Redis was never touched meanwhile; back to auto: rebuilt, 202 again. */
        snprintf(vs, sizeof(vs), "%s", sl.v);
        ck_assert_int_eq(sk_test_admin(NULL, (const char *[]){ "degrade", "auto", "--voucher", vs, NULL }), 0);
        ck_assert_int_eq(sk_test_wait_switch(sl.vid, "redis", 40), 0);
        sk_sleep_ms(1500, NULL);
        sale_finish(&sl, &bk, rc, 10);
}
END_TEST

/* Two fronts, one behind a socat proxy to Redis that is frozen (SIGSTOP): that front's
 * (B) breaker opens and B drains the voucher once (one breaker episode); the voucher
 * reaches db and stays there for SECKILL_BREAKER_HEALTHY_MS (the healthy front A may
 * rebuild only after Redis has been healthy that long *while in db*, DESIGN.md 12), so
 * both fronts answer 200 CREATED from the DB path; then A rebuilds it (redis) and B,
 * breaker still open, answers 503 without draining it again. SIGCONT: both answer 202.
 * At most 4 moves (no bounce), every 202 ends CREATED (none FAILED sold_out because a
 * DB-only sale took its unit), one order per user, Redis = DB. The fronts' healthy
 * window is SK_0412_HEALTHY_MS (default 4000 ms: longer than the 1 s read period plus
 * a purchase, so B sees the db state in time). */
START_TEST(two_fronts_one_frozen)
{
        static book_t bk;
        sk_redis_t *rc;
        char logb[256], saved[sizeof(sk_test_fx.conf.redis_url)];
        int i, portb, pport = sk_test_free_port(), a200 = 0, b200 = 0, st, saw_db = 0;
        long long epoch0, epoch, last = -1;
        int64_t until;
        pid_t pidb, proxy;
        sale_t sl;

        g_healthy_ms = getenv("SK_0412_HEALTHY_MS") ? (int)strtol(getenv("SK_0412_HEALTHY_MS"), NULL, 10)
                                                    : 4000;
        rc = sk_test_redis(&sk_test_fx.conf);
        sale_start(&sl, &bk, "twoa", NULL, 60000, 10);
        proxy = sk_test_proxy_start(pport, sk_test_fx.conf.redis.port);
        memcpy(saved, sk_test_fx.conf.redis_url, sizeof(saved));
        snprintf(sk_test_fx.conf.redis_url, sizeof(sk_test_fx.conf.redis_url), "redis://127.0.0.1:%d/0", pport);
        pidb = start_front(&portb, logb, sizeof(logb), "twob", NULL);
        memcpy(sk_test_fx.conf.redis_url, saved, sizeof(saved));
        ck_assert_msg(buy_until(portb, sl.path, &sl.user, 202, &bk, 30) == 0, "no 202 on B (log %s)", logb);
        epoch0 = sk_test_i64("SELECT epoch FROM tb_seckill_switch WHERE scope = %" PRId64, sl.vid);

        /* Frozen: until both fronts have sold on the DB path and A has rebuilt. */
        ck_assert_int_eq(kill(-proxy, SIGSTOP), 0);
        until = sk_mono_ms() + 60000;
        while ((a200 < 1 || b200 < 1 || !sk_test_switch_is(sl.vid, "redis")) && sk_mono_ms() < until) {
                st = buy(sl.port, sl.path, sl.user++, &bk);
                a200 += st == 200;
                st = buy(portb, sl.path, sl.user++, &bk);
                b200 += st == 200;
                epoch = sk_test_i64("SELECT epoch FROM tb_seckill_switch WHERE scope = %" PRId64, sl.vid);
                saw_db |= sk_test_switch_is(sl.vid, "db");
                if (epoch != last) {
                        fprintf(stderr, "0412 two fronts: epoch %lld state %s\n", epoch,
                                sk_test_switch_is(sl.vid, "redis") ? "redis" : sk_test_switch_is(sl.vid, "draining")
                                ? "draining" : sk_test_switch_is(sl.vid, "db") ? "db" : "rebuilding");
                        last = epoch;
                }
                sk_sleep_ms(50, NULL);
        }
        fprintf(stderr, "0412 two fronts: frozen phase: A 200s %d, B 200s %d, epoch %lld -> %lld\n",
                a200, b200, epoch0, last);
        ck_assert_msg(saw_db, "never in state db (logs %s, %s)", sl.log, logb);
        ck_assert_msg(a200 >= 1 && b200 >= 1, "200s: A %d, B %d (logs %s, %s)", a200, b200, sl.log, logb);
        ck_assert_msg(sk_test_switch_is(sl.vid, "redis"), "A did not rebuild (log %s)", sl.log);
        /* Still frozen, back in redis (A's HTTP threads see it at A's next read): A
         * answers 202, B 503, and B does not drain it again. */
        ck_assert_msg(buy_until(sl.port, sl.path, &sl.user, 202, &bk, 10) == 0, "no 202 on A (log %s)",
                      sl.log);
        for (i = 0; i < 3; i++) {
                ck_assert_int_eq(buy(sl.port, sl.path, sl.user++, &bk), 202);
                ck_assert_int_eq(buy(portb, sl.path, sl.user++, &bk), 503);
                sk_sleep_ms(1000, NULL);
        }
        ck_assert(sk_test_switch_is(sl.vid, "redis"));

        ck_assert_int_eq(kill(-proxy, SIGCONT), 0);
        ck_assert_msg(buy_until(portb, sl.path, &sl.user, 202, &bk, 60) == 0, "no 202 on B (log %s)", logb);
        for (i = 0; i < 5; i++) {
                ck_assert_int_eq(buy(sl.port, sl.path, sl.user++, &bk), 202);
                ck_assert_int_eq(buy(portb, sl.path, sl.user++, &bk), 202);
        }
        /* No bounce: redis -> draining -> db -> rebuilding -> redis, once. */
        epoch = sk_test_i64("SELECT epoch FROM tb_seckill_switch WHERE scope = %" PRId64, sl.vid);
        fprintf(stderr, "0412 two fronts: epoch %lld -> %lld at the end\n", epoch0, epoch);
        ck_assert_int_le(epoch - epoch0, 4);
        ck_assert_int_eq(sk_test_stop(pidb, 40), 0);
        kill(-proxy, SIGKILL);
        waitpid(proxy, NULL, 0);
        sale_finish(&sl, &bk, rc, 5);
        g_healthy_ms = 1500;
}
END_TEST

/* Issue 22 defect 5: a voucher V1 whose recovery rebuild cannot settle (an undecided
 * DEDUCT with no message and no outcome: each try waits 2 x delivery timeout, then
 * fails) must not stop the front re-reading the other rows: the operator's `degrade
 * db-only` of V2, given while a rebuild of V1 is under way, moves V2 to draining within
 * 3 s (the follower used to be blocked in V1's rebuild for up to 6 s). */
START_TEST(rebuild_does_not_block_follower)
{
        static book_t bk;
        sk_redis_t *rc = sk_test_redis(&sk_test_fx.conf);
        int64_t v1 = sk_test_voucher_open(50), t = sk_test_rand_id(), until;
        sk_order_msg_t m = { t, sk_test_rand_id(), sk_test_rand_id(), v1, 50, 1, 49,
                             sk_now_ms() - 1000, 0, 0 };
        char k[SK_KEY_MAX], f[SK_ID_STRLEN], json[SK_MSG_MAX], vs[32], needle[96];
        redisReply *r;
        sale_t sl;

        sale_start(&sl, &bk, "rb", NULL, 9000, 5);
        sk_msg_format(&m, json, sizeof(json));
        sk_key_voucher(k, sk_test_fx.conf.redis_prefix, v1, 0, SK_KEY_TRACE);
        sk_id_format(t, f);
        r = sk_test_cmd(rc, "HSET %s %s %s", k, f, json);
        ck_assert(r && r->type == REDIS_REPLY_INTEGER);
        freeReplyObject(r);
        snprintf(needle, sizeof(needle), "SELECT COUNT(*) FROM tb_seckill_switch WHERE scope = %" PRId64, v1);
        ck_assert_int_eq(sk_test_wait_i64(10, 1, needle), 1); /* the front's row for V1 */
        sk_test_exec("UPDATE tb_seckill_switch SET state = 'rebuilding', epoch = epoch + 1,"
                     " since = NOW(3) WHERE scope = %" PRId64, v1);
        snprintf(needle, sizeof(needle), "degrade_rebuild_failed voucher_id=%" PRId64, v1);
        until = sk_mono_ms() + 30000;
        while (!sk_test_file_count(sl.log, needle)) {
                ck_assert_msg(sk_mono_ms() < until, "no failed rebuild of V1 (log %s)", sl.log);
                sk_sleep_ms(100, NULL);
        }
        sk_sleep_ms(1200, NULL); /* the next try of V1's rebuild is under way */
        ck_assert_int_eq(sk_test_admin(NULL, (const char *[]){ "degrade", "db-only", "--voucher", sl.v, NULL }), 0);
        ck_assert_msg(sk_test_wait_switch(sl.vid, "draining", 3) == 0 || sk_test_switch_is(sl.vid, "db"),
                      "V2 not drained within 3 s of db-only (log %s)", sl.log);

        /* V1 settles (its DEDUCT gone), V2 back to auto: both rebuilt, V2 sells on Redis. */
        r = sk_test_cmd(rc, "HDEL %s %s", k, f);
        freeReplyObject(r);
        ck_assert_int_eq(sk_test_wait_switch(sl.vid, "db", 30), 0);
        snprintf(vs, sizeof(vs), "%s", sl.v);
        ck_assert_int_eq(sk_test_admin(NULL, (const char *[]){ "degrade", "auto", "--voucher", vs, NULL }), 0);
        ck_assert_int_eq(sk_test_wait_switch(v1, "redis", 40), 0);
        ck_assert_int_eq(sk_test_wait_switch(sl.vid, "redis", 40), 0);
        sk_sleep_ms(1500, NULL);
        sale_finish(&sl, &bk, rc, 5);
}
END_TEST

static void setup(void)
{
        sk_test_fix_setup("frontdeg", &(sk_test_fix_opts_t){ .partitions = 2,
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
        Suite *s = suite_create("front_degrade");
        TCase *tc = tcase_create("degrade");

        setenv("CK_FORK", "no", 1);
        tcase_set_timeout(tc, 280);
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, kill_redis_mid_sale);
        tcase_add_test(tc, operator_db_only_then_auto);
        tcase_add_test(tc, freeze_redis_mid_sale);
        tcase_add_test(tc, slow_redis_mid_sale);
        tcase_add_test(tc, db_down_on_db_path);
        tcase_add_test(tc, two_fronts_one_frozen);
        tcase_add_test(tc, rebuild_does_not_block_follower);
        suite_add_tcase(s, tc);
        return sk_test_run(s);
}
