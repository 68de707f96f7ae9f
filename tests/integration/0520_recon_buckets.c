/* 0520_recon_buckets.c: the reconciler on a bucketed voucher (4 buckets, DESIGN.md 4,
 * 14), states seeded straight into real Redis and MariaDB, each repaired by one pass:
 *   - a users entry whose trace is probing, T found in bucket k -> T:h settled to k;
 *   - a probing trace found nowhere -> fenced in every bucket, users entry released;
 *   - a stray take (T in bucket j1, its FAILED outcome names j2 holding T) -> j1's unit
 *     restored, users untouched;
 *   - a trace rolled back in bucket j whose home still names it -> the home step
 *     (users released, home fence T:r);
 * a has_order decision (sk_decide_failed, what the consumer and the reconciler call) of a
 * duplicate purchase taken in bucket j = 1 for a user whose home is h = 0: FAILED, the
 * unit restored in j, users[U] on h re-pointed to the trace T0 of the user's active
 * order (DESIGN.md 4); and drift by direction: undersell rebuilt without --repair, a small oversell left and
 * reported, an oversell above --drift-threshold rebuilt (the decision and the report;
 * the stock a rebuild writes is the rebuild's tests'); the home step when the trace's bucket
 * is the home (a has_order rollback racing a cancel or a close); users hashes
 * drift of a bucketed voucher reported, and repaired by --repair; a consumer commit during
 * the drift check is no undersell. */
#include <sys/wait.h>
#include <unistd.h>

#include "sk_test.h"
#include "sk/decide.h"
#include "sk/keys.h"
#include "sk/verify.h"
#include "sk/snowflake.h"

#define NB 4

/* A snowflake id minted @p age_ms ago (its timestamp is what the probing grace reads). */
static int64_t old_id(int64_t age_ms)
{
        int64_t ts = sk_now_ms() - age_ms - SK_SNOWFLAKE_EPOCH_MS;
        return (ts << 22) | (sk_test_rand_id() & 0x3FFFFF);
}

static void cmd(const char *fmt, const char *a, const char *b, const char *c)
{
        char errstr[256];
        redisReply *reply = NULL;

        ck_assert_int_eq(sk_redis_cmdf(sk_test_fx.r, &reply, errstr, sizeof(errstr), fmt, a, b, c), SK_OK);
        ck_assert_msg(reply->type != REDIS_REPLY_ERROR, "%s", reply->str);
        freeReplyObject(reply);
}

static void key(char *buf, int64_t vid, int b, sk_key_kind_t kind)
{
        sk_key_voucher(buf, sk_test_fx.conf.redis_prefix, vid, b, kind);
}

/* Voucher with NB buckets of DB stock @p db[b] each and Redis stock @p redis[b], laid
 * out as preheat does (meta, stock, users and trace with "_"). */
static int64_t bucket_voucher(const int64_t *db, const int64_t *redis)
{
        long long dbs[NB], rs[NB];

        for (int b = 0; b < NB; b++) {
                dbs[b] = db[b];
                rs[b] = redis[b];
        }
        return sk_test_voucher(&(sk_test_voucher_t){ .buckets = NB, .stocks = rs, .init_stock = 100,
                                                     .db_stocks = dbs, .status = 1, .db_status = 1 });
}

/* The DEDUCT entry of T (one unit, from bucket @p b, home @p h) written into bucket b. */
static void put_deduct(int64_t vid, int b, int h, int64_t t, int64_t u, int64_t order)
{
        sk_order_msg_t m = { t, order, u, vid, 10, 1, 9, sk_now_ms() - 10000, b, h };
        char json[SK_MSG_MAX], k[SK_KEY_MAX], f[SK_KEY_MAX];

        sk_msg_format(&m, json, sizeof(json));
        key(k, vid, b, SK_KEY_TRACE);
        sk_field_trace(f, t, 0);
        cmd("HSET %s %s %s", k, f, json);
}

static void put_field(int64_t vid, int b, sk_key_kind_t kind, const char *f, const char *v)
{
        char k[SK_KEY_MAX];
        key(k, vid, b, kind);
        cmd("HSET %s %s %s", k, f, v);
}

static void put_user(int64_t vid, int h, int64_t u, int64_t t)
{
        char us[SK_ID_STRLEN], ts[SK_ID_STRLEN];
        sk_id_format(u, us);
        sk_id_format(t, ts);
        put_field(vid, h, SK_KEY_USERS, us, ts);
}

static void put_trace_field(int64_t vid, int b, int64_t t, char suffix, const char *v)
{
        char f[SK_KEY_MAX];
        sk_field_trace(f, t, suffix);
        put_field(vid, b, SK_KEY_TRACE, f, v);
}

/* HGET of trace field T<suffix> in bucket @p b into @p out ("" when missing). */
static void get_trace_field(int64_t vid, int b, int64_t t, char suffix, char *out, size_t size)
{
        char k[SK_KEY_MAX], f[SK_KEY_MAX], errstr[256];
        redisReply *reply = NULL;

        key(k, vid, b, SK_KEY_TRACE);
        sk_field_trace(f, t, suffix);
        ck_assert_int_eq(sk_redis_cmdf(sk_test_fx.r, &reply, errstr, sizeof(errstr), "HGET %s %s", k, f),
                         SK_OK);
        snprintf(out, size, "%s", reply->type == REDIS_REPLY_STRING ? reply->str : "");
        freeReplyObject(reply);
}

static int has_user(int64_t vid, int h, int64_t u)
{
        char k[SK_KEY_MAX], us[SK_ID_STRLEN], errstr[256];
        redisReply *reply = NULL;
        int v;

        key(k, vid, h, SK_KEY_USERS);
        sk_id_format(u, us);
        ck_assert_int_eq(sk_redis_cmdf(sk_test_fx.r, &reply, errstr, sizeof(errstr), "HEXISTS %s %s", k,
                                       us), SK_OK);
        v = (int)reply->integer;
        freeReplyObject(reply);
        return v;
}

static int64_t stock_of(int64_t vid, int b)
{
        char k[SK_KEY_MAX], errstr[256];
        redisReply *reply = NULL;
        int64_t v = -1;

        key(k, vid, b, SK_KEY_STOCK);
        ck_assert_int_eq(sk_redis_cmdf(sk_test_fx.r, &reply, errstr, sizeof(errstr), "GET %s", k), SK_OK);
        if (reply->type == REDIS_REPLY_STRING)
                v = strtoll(reply->str, NULL, 10);
        freeReplyObject(reply);
        return v;
}

/* A FAILED outcome of T (order @p o, user @p u) decided in bucket @p b. */
static void failed_in(int64_t t, int64_t o, int64_t u, int64_t vid, int b, const char *reason)
{
        char sql[512], errstr[512] = "";

        snprintf(sql, sizeof(sql), "INSERT INTO tb_seckill_outcome (trace_id, order_id, user_id,"
                 " voucher_id, bucket, outcome, reason) VALUES (%" PRId64 ", %" PRId64 ", %" PRId64
                 ", %" PRId64 ", %d, 2, '%s')", t, o, u, vid, b, reason);
        ck_assert_msg(sk_db_exec(sk_test_fx.db, sql, errstr, sizeof(errstr)) == SK_OK, "%s", errstr);
}

/* T (user @p u, order @p o) taken in bucket @p j and rolled back there by @p mode with
 * @p reason (FAILED outcome in j), its home step on @p h not done: users[U] of h still
 * names T. */
static void rolled_back_in(int64_t vid, int h, int j, int64_t t, int64_t u, int64_t o,
                           const char *mode, const char *reason)
{
        char r[256], js[8];

        snprintf(js, sizeof(js), "%d", j);
        snprintf(r, sizeof(r), "{\"mode\":\"%s\",\"reason\":\"%s\",\"home\":%d,\"restored\":1,"
                 "\"released\":0,\"clamped\":0,\"ts\":1}", mode, reason, h);
        put_user(vid, h, u, t);
        put_trace_field(vid, h, t, 'h', js);
        put_deduct(vid, j, h, t, u, o);
        put_trace_field(vid, j, t, 'r', r);
        failed_in(t, o, u, vid, j, reason);
}

START_TEST(repairs_across_buckets)
{
        const int64_t db[NB] = { 10, 10, 10, 10 };
        int64_t redis[NB] = { 10, 9, 10, 10 };
        char out[65536], vs[SK_ID_STRLEN], v[512];
        const char *args[] = { "--grace-seconds", "2", "--json", "--voucher", vs, NULL };
        int64_t vid, ua = sk_test_rand_id(), ta = old_id(10000);
        int64_t ub = sk_test_rand_id(), tb = old_id(10000);
        int64_t uc = sk_test_rand_id(), tc = old_id(10000);
        int64_t ud = sk_test_rand_id(), td = old_id(10000);
        int64_t oc = sk_test_rand_id(), od = sk_test_rand_id();

        /* C: taken in 2 (stock 9 there) and in 3 (rolled back there, stock 10 again). */
        redis[2] = 9;
        vid = bucket_voucher(db, redis);
        sk_id_format(vid, vs);

        /* A: home 0, probing, T taken in bucket 1 (whose stock holds its unit). */
        put_user(vid, 0, ua, ta);
        put_trace_field(vid, 0, ta, 'h', "probing");
        put_deduct(vid, 1, 0, ta, ua, sk_test_rand_id());
        /* B: home 1, probing, T nowhere. */
        put_user(vid, 1, ub, tb);
        put_trace_field(vid, 1, tb, 'h', "probing");
        /* C: home 0; FAILED in bucket 3 (fenced there), a stray take in bucket 2. */
        put_deduct(vid, 2, 0, tc, uc, oc);
        put_deduct(vid, 3, 0, tc, uc, oc);
        put_trace_field(vid, 3, tc, 'r', "{\"mode\":\"consumer\",\"reason\":\"lost\",\"home\":0,"
                        "\"restored\":1,\"released\":0,\"clamped\":0,\"ts\":1}");
        failed_in(tc, oc, uc, vid, 3, "lost");
        /* D: home 2, taken in bucket 3 and rolled back there (restored), home still names T. */
        rolled_back_in(vid, 2, 3, td, ud, od, "reconciler", "front_rollback");

        (void)sk_test_reconcile(args, NULL, out, sizeof(out));
        ck_assert_int_eq(sk_test_report_field(out, vid, "buckets"), NB);
        ck_assert_int_eq(sk_test_report_field(out, vid, "probingSettled"), 1);
        ck_assert_int_eq(sk_test_report_field(out, vid, "probingRolledBack"), 1);
        ck_assert_int_eq(sk_test_report_field(out, vid, "strayRestored"), 1);
        ck_assert_int_eq(sk_test_report_field(out, vid, "homeSteps"), 1);

        /* A: settled to 1, the user still holds the admission, T re-driven in bucket 1. */
        get_trace_field(vid, 0, ta, 'h', v, sizeof(v));
        ck_assert_str_eq(v, "1");
        ck_assert_int_eq(has_user(vid, 0, ua), 1);
        ck_assert_int_eq(stock_of(vid, 1), 9);
        ck_assert_int_eq(sk_test_report_field(out, vid, "redriven"), 1);
        get_trace_field(vid, 1, ta, 'c', v, sizeof(v)); /* claimed on T's bucket */
        ck_assert_ptr_nonnull(strstr(v, "\"redrives\":1"));
        /* B: fenced in every bucket, released, no stock touched. */
        for (int b = 0; b < NB; b++) {
                get_trace_field(vid, b, tb, 'r', v, sizeof(v));
                ck_assert_msg(v[0] != '\0', "B fenced in bucket %d", b);
        }
        ck_assert_int_eq(has_user(vid, 1, ub), 0);
        /* C: bucket 2's unit restored and fenced; bucket 3 untouched; no home step. */
        ck_assert_int_eq(stock_of(vid, 2), 10);
        get_trace_field(vid, 2, tc, 'r', v, sizeof(v));
        ck_assert_ptr_nonnull(strstr(v, "\"restored\":1"));
        ck_assert_int_eq(stock_of(vid, 3), 10);
        get_trace_field(vid, 0, tc, 'r', v, sizeof(v));
        ck_assert_str_eq(v, "");
        /* D: released at home, home fence written, stock of 3 unchanged. */
        ck_assert_int_eq(has_user(vid, 2, ud), 0);
        get_trace_field(vid, 2, td, 'r', v, sizeof(v));
        ck_assert_ptr_nonnull(strstr(v, "\"mode\":\"home\""));
        /* No stock drift in any bucket: the repairs kept Redis = DB - undecided. */
        ck_assert_int_eq(sk_test_report_field(out, vid, "stockDrift"), 0);
        ck_assert_int_eq(sk_test_report_field(out, vid, "rebuilt"), 0);

        /* A second pass finds nothing more to repair across buckets. */
        (void)sk_test_reconcile(args, NULL, out, sizeof(out));
        ck_assert_int_eq(sk_test_report_field(out, vid, "probingSettled"), 0);
        ck_assert_int_eq(sk_test_report_field(out, vid, "probingRolledBack"), 0);
        ck_assert_int_eq(sk_test_report_field(out, vid, "strayRestored"), 0);
        ck_assert_int_eq(sk_test_report_field(out, vid, "homeSteps"), 0);
        ck_assert_int_eq(sk_test_report_field(out, vid, "redriven"), 0); /* its re-drive is outstanding */
}
END_TEST

/* The bucketDrift object of bucket @p b in the pass's JSON: its drift and direction. */
static void bucket_json(const char *out, int b, int64_t *drift, char *dir, size_t size)
{
        char pat[32];
        const char *p, *q;

        snprintf(pat, sizeof(pat), "{\"bucket\":%d,", b);
        ck_assert_ptr_nonnull(p = strstr(out, pat));
        ck_assert_ptr_nonnull(q = strstr(p, "\"drift\":"));
        *drift = strtoll(q + 8, NULL, 10);
        ck_assert_ptr_nonnull(q = strstr(p, "\"direction\":\""));
        q += 13;
        snprintf(dir, size, "%.*s", (int)(strchr(q, '"') - q), q);
}

/* One pass without --repair over a fresh voucher whose Redis stock is @p redis (DB 10
 * per bucket): bucket @p b reported with @p drift and @p dir, rebuilt or not, exit
 * @p want_rc. The JSON of the pass in @p out; the voucher id is returned. */
static int64_t drift_case(const int64_t *redis, int b, int64_t drift, const char *dir,
                          int rebuilt, int want_rc, char *out, size_t size)
{
        const int64_t db[NB] = { 10, 10, 10, 10 };
        char vs[SK_ID_STRLEN], got_dir[32];
        const char *args[] = { "--grace-seconds", "2", "--json", "--voucher", vs, NULL };
        int64_t vid = bucket_voucher(db, redis), d;
        int rc;

        sk_id_format(vid, vs);
        rc = sk_test_reconcile(args, NULL, out, size);
        bucket_json(out, b, &d, got_dir, sizeof(got_dir));
        ck_assert_int_eq(d, drift);
        ck_assert_str_eq(got_dir, dir);
        ck_assert_int_eq(sk_test_report_field(out, vid, "rebuilt"), rebuilt);
        ck_assert_int_eq(rc, want_rc);
        return vid;
}

START_TEST(drift_by_direction)
{
        const int64_t under[NB] = { 7, 10, 10, 10 }, small[NB] = { 10, 12, 10, 10 };
        const int64_t big[NB] = { 25, 10, 10, 10 };
        char out[65536], dir[32];
        int64_t vid, d;

        /* Undersell: rebuilt on a pass without --repair. */
        (void)drift_case(under, 0, -3, "undersell", 1, 1, out, sizeof(out));

        /* A small oversell (2 <= threshold 10): reported, left alone, exit 2. */
        vid = drift_case(small, 1, 2, "oversell", 0, 2, out, sizeof(out));
        bucket_json(out, 0, &d, dir, sizeof(dir));
        ck_assert_str_eq(dir, "none");
        ck_assert_int_eq(sk_test_report_field(out, vid, "stockDrift"), 1);
        ck_assert_int_eq(stock_of(vid, 1), 12);

        /* Above the threshold (15 > 10): rebuilt without --repair. The stock the rebuild
         * writes per bucket is the rebuild's (sk/rebuild.h): this asserts the decision. */
        (void)drift_case(big, 0, 15, "oversell", 1, 1, out, sizeof(out));
}
END_TEST

/* users[U] of bucket @p h as an id (0 when missing or not an id). */
static int64_t user_trace(int64_t vid, int h, int64_t u)
{
        char k[SK_KEY_MAX], us[SK_ID_STRLEN], errstr[256];
        redisReply *reply = NULL;
        int64_t t = 0;

        key(k, vid, h, SK_KEY_USERS);
        sk_id_format(u, us);
        ck_assert_int_eq(sk_redis_cmdf(sk_test_fx.r, &reply, errstr, sizeof(errstr), "HGET %s %s", k, us),
                         SK_OK);
        if (reply->type == REDIS_REPLY_STRING && sk_id_parse_cstr(reply->str, &t) != 0)
                t = 0;
        freeReplyObject(reply);
        return t;
}

START_TEST(has_order_repoints_home)
{
        const int64_t db[NB] = { 0, 25, 25, 25 }, redis[NB] = { 0, 24, 25, 25 };
        int64_t vid = bucket_voucher(db, redis), u = sk_test_rand_id(), t0 = sk_test_rand_id();
        int64_t u2 = sk_test_rand_id(), t02 = sk_test_rand_id(), t2 = old_id(10000);
        int64_t o2 = sk_test_rand_id();
        char vs[SK_ID_STRLEN], out[65536];
        const char *args[] = { "--grace-seconds", "2", "--json", "--voucher", vs, NULL };
        int64_t t = sk_test_rand_id(), o = sk_test_rand_id();
        sk_order_msg_t m = { t, o, u, vid, 10, 1, 9, sk_now_ms() - 3000, 1, 0 };
        char sql[512], errstr[512] = "";
        sk_decider_t d;
        sk_decision_t dec;

        /* U holds an active order (trace T0) that Redis forgot; its duplicate T was
         * admitted with home 0 (sold out in Redis) and took its unit from bucket 1. */
        snprintf(sql, sizeof(sql), "INSERT INTO tb_voucher_order (id, user_id, voucher_id, trace_id,"
                 " status) VALUES (%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ", 1)",
                 sk_test_rand_id(), u, vid, t0);
        ck_assert_msg(sk_db_exec(sk_test_fx.db, sql, errstr, sizeof(errstr)) == SK_OK, "%s", errstr);
        put_deduct(vid, 1, 0, t, u, o);
        put_user(vid, 0, u, t);

        sk_test_decider(&d);
        d.mode = "consumer";
        ck_assert_msg(sk_decide_failed(&d, &m, SK_REASON_HAS_ORDER, "test", &dec, errstr,
                                       sizeof(errstr)) == SK_OK, "%s", errstr);
        ck_assert_int_eq(dec.how, SK_DECIDED_RECORDED);
        ck_assert_int_eq(dec.res.restored, 1);
        ck_assert_int_eq(dec.res.home, 0);
        ck_assert_int_eq(dec.res.home_done, 1);
        ck_assert_int_eq(dec.res.repointed, 1);
        ck_assert_int_eq(dec.res.released, 0);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_seckill_outcome WHERE trace_id = %" PRId64
                              " AND outcome = 2 AND reason = 'has_order'", t), 1);
        ck_assert_int_eq(stock_of(vid, 1), 25);             /* T's unit back in j */
        ck_assert_int_eq(stock_of(vid, 0), 0);
        ck_assert(user_trace(vid, 0, u) == t0);             /* still blocked, by T0 */
        ck_assert_int_eq(has_user(vid, 1, u), 0);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = %" PRId64
                              " AND user_id = %" PRId64, vid, u), 1);
        /* Followed again (a redelivery): ALREADY, users[U] still T0. */
        ck_assert_int_eq(sk_decide_failed(&d, &m, SK_REASON_HAS_ORDER, "test", &dec, errstr,
                                          sizeof(errstr)), SK_OK);
        ck_assert_int_eq(dec.how, SK_DECIDED_FOLLOWED_FAILED);
        ck_assert(user_trace(vid, 0, u) == t0);
        ck_assert_int_eq(stock_of(vid, 1), 25);

        /* The same decision interrupted between rollback.lua on j and the home step: the
         * reconciler's home step re-points users[U2] to T0' instead of releasing it. */
        snprintf(sql, sizeof(sql), "INSERT INTO tb_voucher_order (id, user_id, voucher_id, trace_id,"
                 " status) VALUES (%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ", 1)",
                 sk_test_rand_id(), u2, vid, t02);
        ck_assert_msg(sk_db_exec(sk_test_fx.db, sql, errstr, sizeof(errstr)) == SK_OK, "%s", errstr);
        rolled_back_in(vid, 0, 1, t2, u2, o2, "consumer", "has_order");
        sk_id_format(vid, vs);
        (void)sk_test_reconcile(args, NULL, out, sizeof(out));
        ck_assert_int_eq(sk_test_report_field(out, vid, "homeSteps"), 1);
        ck_assert(user_trace(vid, 0, u2) == t02);
        ck_assert(user_trace(vid, 0, u) == t0);
        ck_assert_int_eq(stock_of(vid, 1), 25);
}
END_TEST

/* The DEDUCT entry of T in bucket @p b (its home), an order row of user @p u with
 * status @p status, and the CREATED outcome of the purchase. */
static void order_row(int64_t vid, int b, int64_t t, int64_t u, int status)
{
        char sql[512], errstr[512] = "";
        int64_t o = sk_test_rand_id();

        put_deduct(vid, b, b, t, u, o);
        snprintf(sql, sizeof(sql), "INSERT INTO tb_voucher_order (id, user_id, voucher_id, trace_id,"
                 " bucket, status) VALUES (%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64
                 ", %d, %d)", o, u, vid, t, b, status);
        ck_assert_msg(sk_db_exec(sk_test_fx.db, sql, errstr, sizeof(errstr)) == SK_OK, "%s", errstr);
        snprintf(sql, sizeof(sql), "INSERT INTO tb_seckill_outcome (trace_id, order_id, user_id,"
                 " voucher_id, bucket, outcome, path) VALUES (%" PRId64 ", %" PRId64 ", %" PRId64
                 ", %" PRId64 ", %d, 1, 'kafka')", t, o, u, vid, b);
        ck_assert_msg(sk_db_exec(sk_test_fx.db, sql, errstr, sizeof(errstr)) == SK_OK, "%s", errstr);
}

/* Issue 22 defect 2: a has_order rollback racing a cancel or a close, its trace in the
 * user's home bucket (j = h), which the home-step repair used to skip:
 *   X: users[U] re-pointed to T0 after T0 was cancelled (T0:x written while users[U]
 *      still named the duplicate) -> released;
 *   Y: T0 ended before the consumer read it: the rollback kept users[U] = T (T:r) ->
 *      released;
 *   Z: users[U] = T (T:r, has_order) while the user holds an active order T3 ->
 *      re-pointed to T3;
 *   W: users[U] = T, T's own order active (no T:r, no T:x) -> left alone. */
START_TEST(home_step_in_home_bucket)
{
        const int64_t db[NB] = { 10, 10, 10, 10 };
        int64_t vid = bucket_voucher(db, db);
        int64_t ux = sk_test_rand_id(), t0x = old_id(20000), tdx = old_id(10000);
        int64_t uy = sk_test_rand_id(), ty = old_id(10000);
        int64_t uz = sk_test_rand_id(), tz = old_id(10000), t3 = old_id(30000);
        int64_t uw = sk_test_rand_id(), tw = old_id(10000);
        int64_t odx = sk_test_rand_id(), oy = sk_test_rand_id(), oz = sk_test_rand_id();
        char vs[SK_ID_STRLEN], out[65536];
        const char *args[] = { "--grace-seconds", "2", "--json", "--voucher", vs, NULL };
        const char *r_has = "{\"mode\":\"consumer\",\"reason\":\"has_order\",\"home\":3,"
                            "\"restored\":1,\"released\":0,\"clamped\":0,\"ts\":1}";

        sk_id_format(vid, vs);
        /* X: T0 taken and ordered in bucket 2 (its home), cancelled, released (T0:x);
         * its duplicate Td rolled back in 2 with users[U] re-pointed to T0. */
        order_row(vid, 2, t0x, ux, 3);
        put_trace_field(vid, 2, t0x, 'x', "{\"by\":\"cancel\",\"restored\":1,\"ts\":1}");
        put_deduct(vid, 2, 2, tdx, ux, odx);
        put_trace_field(vid, 2, tdx, 'r', "{\"mode\":\"consumer\",\"reason\":\"has_order\","
                        "\"home\":2,\"restored\":1,\"released\":0,\"clamped\":0,\"ts\":1}");
        failed_in(tdx, odx, ux, vid, 2, "has_order");
        put_user(vid, 2, ux, t0x);
        /* Y: T in bucket 3 (its home) rolled back as has_order, users[U] kept = T. */
        put_deduct(vid, 3, 3, ty, uy, oy);
        put_trace_field(vid, 3, ty, 'r', r_has);
        failed_in(ty, oy, uy, vid, 3, "has_order");
        put_user(vid, 3, uy, ty);
        /* Z: as Y in bucket 1, the user's active order has trace T3. */
        put_deduct(vid, 1, 1, tz, uz, oz);
        put_trace_field(vid, 1, tz, 'r', r_has);
        failed_in(tz, oz, uz, vid, 1, "has_order");
        order_row(vid, 1, t3, uz, 1);
        put_user(vid, 1, uz, tz);
        /* W: a plain active order in bucket 0. */
        order_row(vid, 0, tw, uw, 1);
        put_user(vid, 0, uw, tw);

        (void)sk_test_reconcile(args, NULL, out, sizeof(out));
        ck_assert_int_eq(sk_test_report_field(out, vid, "collisions"), 0);
        ck_assert_int_eq(sk_test_report_field(out, vid, "homeSteps"), 3);
        ck_assert_int_eq(has_user(vid, 2, ux), 0);
        ck_assert_int_eq(has_user(vid, 3, uy), 0);
        ck_assert(user_trace(vid, 1, uz) == t3);
        ck_assert(user_trace(vid, 0, uw) == tw);
        /* j = h: no home fence written beside the trace's own T:r. */
        (void)sk_test_reconcile(args, NULL, out, sizeof(out));
        ck_assert_int_eq(sk_test_report_field(out, vid, "homeSteps"), 0);
        ck_assert(user_trace(vid, 1, uz) == t3);
}
END_TEST

/* Issue 22 defect 1 (invariant 3, DESIGN.md 9.3/14): the users hashes of a bucketed
 * voucher drift: a stranger with no order holds an entry in its home bucket, a real
 * buyer's entry is gone, another buyer's entry sits outside its home bucket. A plain
 * pass reports users drift and rebuilds nothing; --repair rebuilds, and then verify
 * finds the users hashes right. */
START_TEST(users_drift_bucketed)
{
        const int64_t db[NB] = { 10, 10, 10, 10 };
        int64_t vid = bucket_voucher(db, db);
        int64_t us = sk_test_rand_id(), ts = old_id(10000);
        int64_t u1 = sk_test_rand_id(), t1 = old_id(10000);
        int64_t u2 = sk_test_rand_id(), t2 = old_id(10000);
        int hs = sk_home_bucket(us, NB), h1 = sk_home_bucket(u1, NB), h2 = sk_home_bucket(u2, NB);
        char vs[SK_ID_STRLEN], out[65536], errstr[512];
        const char *plain[] = { "--grace-seconds", "2", "--json", "--voucher", vs, NULL };
        const char *repair[] = { "--grace-seconds", "2", "--json", "--repair", "--voucher", vs,
                                 NULL };
        sk_verify_report_t vr;
        int rc;

        sk_id_format(vid, vs);
        put_user(vid, hs, us, ts);                  /* a stranger: no order, no trace */
        order_row(vid, h1, t1, u1, 1);              /* a buyer whose entry is gone */
        order_row(vid, h2, t2, u2, 1);              /* a buyer outside its home */
        put_user(vid, (h2 + 1) % NB, u2, t2);

        rc = sk_test_reconcile(plain, NULL, out, sizeof(out));
        ck_assert_int_eq(sk_test_report_field(out, vid, "usersDrift"), 1);
        ck_assert_int_eq(sk_test_report_field(out, vid, "rebuilt"), 0);
        ck_assert_int_eq(rc, 2);
        ck_assert(user_trace(vid, hs, us) == ts);   /* reported, not repaired */

        rc = sk_test_reconcile(repair, NULL, out, sizeof(out));
        ck_assert_int_eq(sk_test_report_field(out, vid, "rebuilt"), 1);
        ck_assert_int_eq(rc, 1);
        ck_assert_int_eq(has_user(vid, hs, us), 0);
        ck_assert(user_trace(vid, h1, u1) == t1);
        ck_assert(user_trace(vid, h2, u2) == t2);
        ck_assert_int_eq(has_user(vid, (h2 + 1) % NB, u2), 0);
        ck_assert_msg(sk_verify_voucher_conn(sk_test_fx.db, sk_test_fx.r, sk_test_fx.conf.redis_prefix,
                                             vid, 3, &vr, errstr, sizeof(errstr)) == SK_OK, "%s",
                      errstr);
        ck_assert_int_eq(vr.inv3_users_ok, 1);
        ck_assert_int_eq(vr.users_wrong_home, 0);

        /* The next plain pass finds nothing. */
        rc = sk_test_reconcile(plain, NULL, out, sizeof(out));
        ck_assert_int_eq(sk_test_report_field(out, vid, "usersDrift"), 0);
        ck_assert_int_eq(rc, 0);
}
END_TEST

/* Child of the test: @p delay_ms later, commit what a consumer commits for T (user
 * @p u, order @p o, bucket 0): the bucket's stock decrement, the order and the CREATED
 * outcome, in one transaction; then exit. */
static void consumer_commit_later(int64_t vid, int64_t t, int64_t u, int64_t o, int delay_ms)
{
        char sql[512], errstr[512];
        sk_db_t *db;
        int ok;

        usleep((useconds_t)delay_ms * 1000);
        if (!(db = sk_db_connect(&sk_test_fx.conf.mysql, 0, 5, errstr, sizeof(errstr))))
                _exit(3);
        ok = sk_db_begin(db, errstr, sizeof(errstr)) == SK_OK;
        snprintf(sql, sizeof(sql), "UPDATE tb_seckill_stock SET stock = stock - 1 WHERE voucher_id = %"
                 PRId64 " AND bucket = 0", vid);
        ok = ok && sk_db_exec(db, sql, errstr, sizeof(errstr)) == SK_OK;
        snprintf(sql, sizeof(sql), "INSERT INTO tb_voucher_order (id, user_id, voucher_id, trace_id,"
                 " bucket, status) VALUES (%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ", 0, 1)",
                 o, u, vid, t);
        ok = ok && sk_db_exec(db, sql, errstr, sizeof(errstr)) == SK_OK;
        snprintf(sql, sizeof(sql), "INSERT INTO tb_seckill_outcome (trace_id, order_id, user_id,"
                 " voucher_id, bucket, outcome) VALUES (%" PRId64 ", %" PRId64 ", %" PRId64 ", %"
                 PRId64 ", 0, 1)", t, o, u, vid);
        ok = ok && sk_db_exec(db, sql, errstr, sizeof(errstr)) == SK_OK;
        ok = ok && sk_db_commit(db, errstr, sizeof(errstr)) == SK_OK;
        sk_db_close(db);
        _exit(ok ? 0 : 4);
}

/* Issue 22 defect 3: a consumer commits T's order while the drift check of bucket 0 is
 * between its Redis scan and its DB reads (failpoint reconciler.drift_before_db holds
 * it). Redis 9 = DB 10 - 1 held before, Redis 9 = DB 9 after: no drift either way, so
 * no undersell, no rebuild (the stock and the outcomes used to be read apart). */
START_TEST(drift_reads_one_snapshot)
{
        const int64_t db[NB] = { 10, 10, 10, 10 }, redis[NB] = { 9, 10, 10, 10 };
        int64_t vid = bucket_voucher(db, redis), u = sk_test_rand_id(), t = old_id(0);
        int64_t o = sk_test_rand_id();
        char vs[SK_ID_STRLEN], out[65536];
        const char *args[] = { "--grace-seconds", "60", "--json", "--voucher", vs, NULL };
        pid_t pid;
        int rc, status = -1;

        sk_id_format(vid, vs);
        put_deduct(vid, 0, sk_home_bucket(u, NB), t, u, o);
        put_user(vid, sk_home_bucket(u, NB), u, t);
        ck_assert_int_ge(pid = fork(), 0);
        if (pid == 0)
                consumer_commit_later(vid, t, u, o, 300);
        rc = sk_test_reconcile(args, "reconciler.drift_before_db=1*sleep(1500)", out, sizeof(out));
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert_int_eq(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0);
        ck_assert_int_eq(sk_test_report_field(out, vid, "stockDrift"), 0);
        ck_assert_int_eq(sk_test_report_field(out, vid, "rebuilt"), 0);
        ck_assert_int_eq(rc, 0);
        ck_assert_int_eq(stock_of(vid, 0), 9);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("0520_recon_buckets");
        TCase *tc = tcase_create("buckets");
        int rc;

        sk_test_fix_setup("recon_buckets", &(sk_test_fix_opts_t){ .partitions = 2,
                                                                  .delivery_timeout_ms = 500,
                                                                  .lock_wait_s = 5 });
        tcase_set_timeout(tc, 280);
        tcase_add_test(tc, drift_by_direction); /* first: nothing in the topic yet */
        tcase_add_test(tc, users_drift_bucketed); /* rebuilds too: before any re-drive */
        tcase_add_test(tc, drift_reads_one_snapshot);
        tcase_add_test(tc, repairs_across_buckets);
        tcase_add_test(tc, has_order_repoints_home);
        tcase_add_test(tc, home_step_in_home_bucket);
        suite_add_tcase(s, tc);
        rc = sk_test_run(s);
        sk_test_fix_teardown();
        return rc;
}
