/* 0431_front_drain_acks.c: the early drain of DESIGN.md 12 (draining -> db, parts a-d)
 * against a PRIVATE redis-server, the real MariaDB and Kafka, a consumer and two fronts
 * (delivery timeout 3000 ms: D = 7 s; SECKILL_SWITCH_STALE_MS = 2000):
 *   - early_move_on_acks: Redis killed under purchases at A, B idle: both fronts ack the
 *     draining epoch, the move to db is made on the acks (seckill_front_drain_moves_total
 *     {rule="acks"} = 1, none timed), tb_drain_ack holds both holders; the time from the
 *     kill to the first 200 is printed (not asserted);
 *   - front_started_after_epoch: A's ack is held (failpoint front.drain_before_ack
 *     1*sleep(4000)); B starts while the voucher drains, with its acks refused (failpoint
 *     error): B's lease row (lease_until >= since - D) blocks the early move, the move is
 *     timed (db's since - draining's since >= D + stale), A acked;
 *   - front_killed_mid_drain: B killed (SIGKILL, its lease row left) as the drain starts:
 *     the move is timed, A's ack alone does not make it;
 *   - partial_partition: A reaches MariaDB through a socat proxy the test freezes (its
 *     Redis and Kafka healthy, a long worker lease so it keeps minting), then the operator
 *     drains the voucher (`degrade db-only`) and B sells it out on the DB-only path while
 *     buyers keep coming to A: A stops sending to Redis once its rows are stale (503), and
 *     no 202 ends FAILED sold_out because a DB-only sale took its unit; every 202 and 200
 *     is CREATED, active orders = units sold <= stock. */

#include "sk_test.h"

#define STALE_MS 2000
#define D_MS 7000                       /* 2 x 3000 + 1000 */

/* ------------------------------------------------------------- helpers ---- */

typedef struct answer { int status; int64_t trace; } answer_t;
typedef struct book { answer_t a[2048]; size_t n; } book_t;

static int buy(int port, int64_t vid, int64_t user, book_t *bk)
{
        char u[24], body[1024], s[32];
        int st;

        snprintf(u, sizeof(u), "%" PRId64, user);
        st = sk_test_buy(port, vid, u, body, sizeof(body));
        ck_assert_msg(st == 200 || st == 202 || st == 409 || st == 503, "status %d: %s", st, body);
        if (st == 200 || st == 202) {
                answer_t *a = &bk->a[bk->n++];

                ck_assert(bk->n < 2048);
                a->status = st;
                ck_assert_int_eq(sk_test_json_field(body, "traceId", s, sizeof(s)), 0);
                ck_assert_int_eq(sk_id_parse_cstr(s, &a->trace), 0);
        }
        return st;
}

/* Every 202 and 200 of @p bk decided CREATED (waits up to 30 s for each outcome). */
static void check_all_created(const book_t *bk)
{
        size_t i;

        for (i = 0; i < bk->n; i++) {
                int64_t until = sk_mono_ms() + 30000;

                while (sk_test_i64("SELECT COUNT(*) FROM tb_seckill_outcome WHERE trace_id = %" PRId64,
                                   bk->a[i].trace) != 1 && sk_mono_ms() < until)
                        sk_sleep_ms(200, NULL);
                ck_assert_msg(sk_test_i64("SELECT COUNT(*) FROM tb_seckill_outcome WHERE trace_id = %"
                                          PRId64 " AND outcome = 1", bk->a[i].trace) == 1,
                              "a %d (trace %" PRId64 ") is not CREATED: outcome %lld reason sold_out %lld",
                              bk->a[i].status, bk->a[i].trace,
                              (long long)sk_test_i64("SELECT COALESCE(MAX(outcome), 0) FROM "
                                                     "tb_seckill_outcome WHERE trace_id = %" PRId64,
                                                     bk->a[i].trace),
                              (long long)sk_test_i64("SELECT COUNT(*) FROM tb_seckill_outcome WHERE "
                                                     "trace_id = %" PRId64 " AND reason = 'sold_out'",
                                                     bk->a[i].trace));
        }
}

/* A front with the test's drain settings; @p fp failpoints or NULL, @p mysql_url another
 * SECKILL_MYSQL_URL or NULL, @p lease_ms the worker lease (0: the library's). */
static pid_t front(int *port, char *log, size_t cap, const char *what, const char *fp,
                   const char *mysql_url, int lease_ms)
{
        char url_env[600], fp_env[160], my_env[600], lease_env[64], stale_env[64];
        const char *env[12] = { url_env, stale_env, "SECKILL_BREAKER_OPEN_MS=30000",
                                "SECKILL_BREAKER_FAILURES=3", "SECKILL_LOG_LEVEL=debug" };
        int ne = 5;
        pid_t pid;

        *port = sk_test_free_port();
        snprintf(url_env, sizeof(url_env), "SECKILL_REDIS_URL=%s", sk_test_fx.conf.redis_url);
        snprintf(stale_env, sizeof(stale_env), "SECKILL_SWITCH_STALE_MS=%d", STALE_MS);
        if (fp) {
                snprintf(fp_env, sizeof(fp_env), "SECKILL_FAILPOINTS=%s", fp);
                env[ne++] = fp_env;
        }
        if (mysql_url) {
                snprintf(my_env, sizeof(my_env), "SECKILL_MYSQL_URL=%s", mysql_url);
                env[ne++] = my_env;
        }
        if (lease_ms) {
                snprintf(lease_env, sizeof(lease_env), "SECKILL_WORKER_LEASE_MS=%d", lease_ms);
                env[ne++] = lease_env;
        }
        sk_test_log_path(log, cap, "front_0431_%s", what);
        pid = sk_test_front_start(&sk_test_fx.conf, *port, env, log);
        ck_assert_msg(sk_test_wait_ready(*port, pid, 40) == 0, "front %s not ready (log %s)",
                      what, log);
        return pid;
}

static pid_t consumer(const char *what)
{
        char clog[256];

        sk_test_log_path(clog, sizeof(clog), "consumer_0431_%s", what);
        return sk_test_consumer_start(&(sk_test_spawn_t){ .log_path = clog }, 0);
}

static long long moves(int port, const char *rule)
{
        char name[128];
        long long v;

        snprintf(name, sizeof(name), "seckill_front_drain_moves_total{rule=\"%s\"}", rule);
        v = sk_test_scrape(port, name);
        return v;
}

/* The switch row's epoch and since (ms on the DB clock). */
static void switch_row(int64_t vid, long long *epoch, long long *since_ms)
{
        *epoch = sk_test_i64("SELECT epoch FROM tb_seckill_switch WHERE scope = %" PRId64, vid);
        *since_ms = sk_test_i64("SELECT TIMESTAMPDIFF(MICROSECOND, '1970-01-01', since) DIV 1000 "
                                "FROM tb_seckill_switch WHERE scope = %" PRId64, vid);
}

static void degrade_db_only(int64_t vid)
{
        char v[SK_ID_STRLEN];

        sk_id_format(vid, v);
        ck_assert_int_eq(sk_test_admin(NULL, (const char *[]){ "degrade", "db-only", "--voucher", v, NULL }), 0);
}

/* Wait for draining, remember its epoch and since; then wait for db and return the time
 * (DB clock, ms) between the two sinces. */
static long long drain_ms(int64_t vid, long long *drain_epoch, int timeout_s)
{
        long long e0, s0, e1, s1;

        ck_assert_int_eq(sk_test_wait_switch(vid, "draining", 10), 0);
        switch_row(vid, &e0, &s0);
        ck_assert_int_eq(sk_test_wait_switch(vid, "db", timeout_s), 0);
        switch_row(vid, &e1, &s1);
        ck_assert_int_eq(e1, e0 + 1);
        *drain_epoch = e0;
        return s1 - s0;
}

/* --------------------------------------------------------------- tests ---- */

START_TEST(early_move_on_acks)
{
        static book_t bk;
        char loga[256], logb[256];
        int pa, pb, i;
        int64_t vid = sk_test_voucher_open(400), user = 1000, t_kill, t_first = 0;
        long long ep, acks;
        pid_t cons = consumer("early"), a, b;

        (void)cons;
        memset(&bk, 0, sizeof(bk));
        a = front(&pa, loga, sizeof(loga), "early_a", NULL, NULL, 0);
        b = front(&pb, logb, sizeof(logb), "early_b", NULL, NULL, 0);
        for (i = 0; i < 10; i++)
                ck_assert_int_eq(buy(pa, vid, user++, &bk), 202);
        ck_assert_int_eq(buy(pb, vid, user++, &bk), 202);
        /* Consumers caught up before the fault (the target's condition). */
        {
                char sql[160];

                snprintf(sql, sizeof(sql), "SELECT COUNT(*) FROM tb_seckill_outcome WHERE voucher_id = %"
                         PRId64, vid);
                ck_assert_int_eq(sk_test_wait_i64(30, 11, sql), 11);
        }

        sk_test_redis_stop(&sk_test_fx.redis_pid);
        t_kill = sk_mono_ms();
        while (sk_mono_ms() - t_kill < 30000) {
                if (buy(pa, vid, user++, &bk) == 200) {
                        t_first = sk_mono_ms();
                        break;
                }
                sk_sleep_ms(50, NULL);
        }
        ck_assert_msg(t_first > 0, "no 200 within 30 s (logs %s, %s)", loga, logb);
        fprintf(stderr, "0431 early_move_on_acks: Redis killed -> first DB-only 200 in %lld ms\n",
                (long long)(t_first - t_kill));
        ck_assert(sk_test_switch_is(vid, "db"));
        /* The move was made on the acks, by one front, never by the timed rule. */
        ck_assert_int_eq(moves(pa, "acks") + moves(pb, "acks"), 1);
        ck_assert_int_eq(moves(pa, "timed") + moves(pb, "timed"), 0);
        ep = sk_test_i64("SELECT epoch - 1 FROM tb_seckill_switch WHERE scope = %" PRId64, vid);
        acks = sk_test_i64("SELECT COUNT(*) FROM tb_drain_ack WHERE voucher_id = %" PRId64 " AND epoch = %lld",
                           vid, ep);
        ck_assert_int_eq(acks, 2);
        ck_assert_int_eq(sk_test_scrape(pa, "seckill_front_drain_acks_total"), 1);
        ck_assert_int_eq(sk_test_scrape(pb, "seckill_front_drain_acks_total"), 1);
        sk_sleep_ms(1000, NULL); /* B's next read of the rows */
        for (i = 0; i < 5; i++)
                ck_assert_int_eq(buy(pb, vid, user++, &bk), 200);
        check_all_created(&bk);
        ck_assert_int_eq(sk_test_stop(a, 40), 0);
        ck_assert_int_eq(sk_test_stop(b, 40), 0);
}
END_TEST

START_TEST(front_started_after_epoch)
{
        static book_t bk;
        char loga[256], logb[256];
        int pa, pb, i;
        int64_t vid = sk_test_voucher_open(400), user = 2000;
        long long ep, ms;
        pid_t a, b;

        (void)consumer("late");
        memset(&bk, 0, sizeof(bk));
        a = front(&pa, loga, sizeof(loga), "late_a", "front.drain_before_ack=1*sleep(5000)", NULL, 0);
        for (i = 0; i < 5; i++)
                ck_assert_int_eq(buy(pa, vid, user++, &bk), 202);
        degrade_db_only(vid);
        ck_assert_int_eq(sk_test_wait_switch(vid, "draining", 10), 0);
        /* B leases after the epoch began and never acks (its acks fail). */
        b = front(&pb, logb, sizeof(logb), "late_b", "front.drain_before_ack=error", NULL, 0);
        ck_assert_msg(sk_test_switch_is(vid, "draining"), "moved before B started (log %s)", loga);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_worker_lease WHERE role = 'front' AND "
                                     "lease_until > NOW(3)"), 2);
        ms = drain_ms(vid, &ep, 40);
        fprintf(stderr, "0431 front_started_after_epoch: draining -> db in %lld ms (DB clock)\n", ms);
        ck_assert_int_ge(ms, D_MS + STALE_MS);
        ck_assert_int_eq(moves(pa, "acks") + moves(pb, "acks"), 0);
        ck_assert_int_eq(moves(pa, "timed") + moves(pb, "timed"), 1);
        /* A acked (after its sleep); B never did. */
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_drain_ack WHERE voucher_id = %" PRId64
                                     " AND epoch = %lld", vid, ep), 1);
        ck_assert_int_eq(sk_test_scrape(pa, "seckill_front_drain_acks_total"), 1);
        sk_sleep_ms(1500, NULL);
        ck_assert_int_eq(buy(pb, vid, user++, &bk), 200);
        ck_assert_int_eq(buy(pa, vid, user++, &bk), 200);
        check_all_created(&bk);
        ck_assert_int_eq(sk_test_stop(a, 40), 0);
        ck_assert_int_eq(sk_test_stop(b, 40), 0);
}
END_TEST

START_TEST(front_killed_mid_drain)
{
        static book_t bk;
        char loga[256], logb[256];
        int pa, pb, i;
        int64_t vid = sk_test_voucher_open(400), user = 3000;
        long long ep, ms;
        pid_t a, b;

        (void)consumer("killed");
        memset(&bk, 0, sizeof(bk));
        a = front(&pa, loga, sizeof(loga), "killed_a", NULL, NULL, 0);
        b = front(&pb, logb, sizeof(logb), "killed_b", NULL, NULL, 0);
        for (i = 0; i < 5; i++) {
                ck_assert_int_eq(buy(pa, vid, user++, &bk), 202);
                ck_assert_int_eq(buy(pb, vid, user++, &bk), 202);
        }
        /* B dies as the drain starts: its lease row stays (lease_until >= since - D). */
        kill(b, SIGKILL);
        waitpid(b, NULL, 0);
        degrade_db_only(vid);
        ms = drain_ms(vid, &ep, 40);
        fprintf(stderr, "0431 front_killed_mid_drain: draining -> db in %lld ms (DB clock)\n", ms);
        ck_assert_int_ge(ms, D_MS + STALE_MS);
        ck_assert_int_eq(moves(pa, "acks"), 0);
        ck_assert_int_eq(moves(pa, "timed"), 1);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_drain_ack WHERE voucher_id = %" PRId64
                                     " AND epoch = %lld", vid, ep), 1);
        sk_sleep_ms(1500, NULL);
        ck_assert_int_eq(buy(pa, vid, user++, &bk), 200);
        check_all_created(&bk);
        ck_assert_int_eq(sk_test_stop(a, 40), 0);
}
END_TEST

START_TEST(partial_partition)
{
        static book_t bk;
        char loga[256], logb[256], url[600];
        int pa, pb, pport = sk_test_free_port(), st, a202_frozen = 0, a503 = 0, b200 = 0, i;
        int64_t vid = sk_test_voucher_open(60), user = 4000, t0;
        long long active, sold_out_202 = 0;
        pid_t a, b, proxy;

        (void)consumer("part");
        memset(&bk, 0, sizeof(bk));
        proxy = sk_test_proxy_start(pport, sk_test_fx.conf.mysql.port);
        snprintf(url, sizeof(url), "mysql://%s@127.0.0.1:%d/%s", sk_test_fx.conf.mysql.user, pport,
                 sk_test_fx.conf.mysql.database);
        /* A: DB through the proxy, a 60 s lease (it keeps minting while cut off). */
        a = front(&pa, loga, sizeof(loga), "part_a", NULL, url, 60000);
        b = front(&pb, logb, sizeof(logb), "part_b", NULL, NULL, 0);
        for (i = 0; i < 10; i++)
                ck_assert_int_eq(buy(pa, vid, user++, &bk), 202);

        ck_assert_int_eq(kill(-proxy, SIGSTOP), 0);
        degrade_db_only(vid);
        /* Buyers at both fronts for 20 s: B sells on the DB-only path once the voucher is in
         * db; A must stop sending to Redis once its rows are stale. */
        t0 = sk_mono_ms();
        while (sk_mono_ms() - t0 < 20000) {
                st = buy(pa, vid, user++, &bk);
                if (st == 202)
                        a202_frozen++;
                a503 += st == 503;
                st = buy(pb, vid, user++, &bk);
                b200 += st == 200;
                sk_sleep_ms(100, NULL);
        }
        fprintf(stderr, "0431 partial_partition: A 202s while cut off %d, A 503s %d, B 200s %d\n",
                a202_frozen, a503, b200);
        ck_assert_msg(b200 >= 1, "B never sold on the DB-only path (log %s)", logb);
        ck_assert_int_eq(kill(-proxy, SIGCONT), 0);
        check_all_created(&bk);
        for (i = 0; i < (int)bk.n; i++)
                if (bk.a[i].status == 202)
                        sold_out_202 += sk_test_i64("SELECT COUNT(*) FROM tb_seckill_outcome WHERE trace_id = %"
                                                    PRId64 " AND reason = 'sold_out'", bk.a[i].trace);
        ck_assert_int_eq(sold_out_202, 0);
        active = sk_test_i64("SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = %" PRId64
                             " AND status IN (1, 2)", vid);
        ck_assert_int_eq(active, (long long)bk.n);
        ck_assert_int_le(active, 60);
        ck_assert_int_eq(sk_test_i64("SELECT SUM(stock) FROM tb_seckill_stock WHERE voucher_id = %" PRId64, vid),
                         60 - active);
        ck_assert_int_eq(sk_test_stop(a, 40), 0);
        ck_assert_int_eq(sk_test_stop(b, 40), 0);
        kill(-proxy, SIGKILL);
        waitpid(proxy, NULL, 0);
}
END_TEST

static void setup(void)
{
        sk_test_fix_setup("drainack", &(sk_test_fix_opts_t){ .partitions = 2,
                                                             .delivery_timeout_ms = 3000,
                                                             .private_redis = 1 });
}

int main(void)
{
        Suite *s = suite_create("front_drain_acks");
        TCase *tc = tcase_create("drain");

        setenv("CK_FORK", "no", 1);
        tcase_set_timeout(tc, 200);
        tcase_add_checked_fixture(tc, setup, sk_test_fix_teardown);
        tcase_add_test(tc, early_move_on_acks);
        tcase_add_test(tc, front_started_after_epoch);
        tcase_add_test(tc, front_killed_mid_drain);
        tcase_add_test(tc, partial_partition);
        suite_add_tcase(s, tc);
        return sk_test_run(s);
}
