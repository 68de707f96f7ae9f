/* 0432_front_soldout_buckets.c: nothing lasting for a buyer who got nothing (DESIGN.md 4
 * v5 "Give-up fence", "Local sold-out cache";) against a real front, Kafka and
 * MariaDB, on any Redis topology: a voucher of 4 buckets sells its 2 units, then
 * sold-out buyers keep asking:
 *   - cache off (SECKILL_SOLDOUT_CACHE_MS=0): every request runs deduct.lua and probes
 *     every bucket (OVERFLOW, take.lua x3, the give-up on the home bucket), yet the
 *     trace and users hashes of every bucket keep exactly the fields they had when the
 *     sale ended; each give-up leaves only its short-lived f:T key, and once the key's PX
 *     (max(request deadline = 2 x delivery timeout + 1 s, 11 s)) has passed no f:T key is left
 *     (the script-level give-up and its FENCED answer: 0120);
 *   - cache on: once a front has seen every bucket empty, further sold-out buyers are
 *     answered from its cache (seckill_front_soldout_cache_hits_total counts each) and
 *     no key of the voucher changes.
 * The buyers are sequential: the test counts fields, not speed. */
#include "sk_test.h"
#include "sk/home.h"

#define NB 4
#define DELIVERY_MS 3000                        /* sk_test_front_start's delivery timeout */
#define DEADLINE_MS (2 * DELIVERY_MS + 1000)    /* the front's request deadline */
/* f:T's PX: max(request deadline, 11 s) (DESIGN.md 4 "Give-up fence") */
#define FENCE_PX_MS (DEADLINE_MS > SK_GIVEUP_FENCE_MIN_MS ? DEADLINE_MS : SK_GIVEUP_FENCE_MIN_MS)

static pid_t start(const char *cache_ms, int port, char *log, size_t log_cap)
{
        static char cache_env[64];
        const char *env[] = { cache_env, NULL };
        pid_t pid;

        snprintf(cache_env, sizeof(cache_env), "SECKILL_SOLDOUT_CACHE_MS=%s", cache_ms);
        sk_test_log_path(log, log_cap, "front_0432_%s", cache_ms);
        pid = sk_test_front_start(&sk_test_fx.conf, port, env, log);
        ck_assert_msg(sk_test_wait_ready(port, pid, 40) == 0, "front not ready (log %s)", log);
        return pid;
}

/* A voucher of NB buckets on sale for an hour: 1 unit in buckets 0 and 2. */
static int64_t new_voucher(void)
{
        static const long long stock[NB] = { 1, 0, 1, 0 };
        int64_t now = sk_now_ms();

        return sk_test_voucher(&(sk_test_voucher_t){ .r = sk_test_fx.r, .buckets = NB,
                                                     .stocks = stock, .begin_ms = now - 60000,
                                                     .end_ms = now + 3600000, .status = 1 });
}

static long long hlen(int64_t vid, int b, sk_key_kind_t kind)
{
        char k[SK_KEY_MAX];
        redisReply *r;
        long long n;

        sk_key_voucher(k, sk_test_fx.conf.redis_prefix, vid, b, kind);
        r = sk_test_cmd(sk_test_fx.r, "HLEN %s", k);
        ck_assert(r && r->type == REDIS_REPLY_INTEGER);
        n = r->integer;
        freeReplyObject(r);
        return n;
}

static int count_key(const char *key, size_t keylen, void *arg)
{
        (void)key;
        (void)keylen;
        (*(long long *)arg)++;
        return 0;
}

/* Give-up fences f:T of @p vid in every bucket (a Cluster: every master). */
static long long fence_keys(int64_t vid)
{
        char match[SK_KEY_MAX + 16], v[SK_ID_STRLEN], errstr[256];
        long long n = 0;

        sk_id_format(vid, v);
        snprintf(match, sizeof(match), "%s:{v:%s:*}:f:*", sk_test_fx.conf.redis_prefix, v);
        ck_assert_msg(sk_redis_scan(sk_test_fx.r, match, 1000, count_key, &n, errstr, sizeof(errstr)) ==
                      SK_OK, "scan: %s", errstr);
        return n;
}

/* One purchase of user @p uid; the status, the code in *code. */
static int buy(int port, int64_t vid, int64_t uid, int *code)
{
        char u[SK_ID_STRLEN], body[1024];
        int st;

        sk_id_format(uid, u);
        st = sk_test_buy(port, vid, u, body, sizeof(body));
        *code = sk_test_body_code(body);
        return st;
}

/* Sell the voucher's 2 units (202 x2, the third buyer 10005). */
static void sell_out(int port, int64_t vid, const char *log)
{
        int code, st;

        for (int64_t u = 7001; u <= 7002; u++) {
                st = buy(port, vid, u, &code);
                ck_assert_msg(st == 202, "user %lld: status %d code %d (log %s)", (long long)u, st,
                              code, log);
        }
        ck_assert_int_eq(buy(port, vid, 7003, &code), 409);
        ck_assert_int_eq(code, 10005);
}

START_TEST(cache_off_hashes_stay_flat)
{
        int port = sk_test_free_port(), code, b, i;
        int64_t vid = new_voucher(), t_last;
        long long trace0[NB], users0[NB];
        char log[256];
        pid_t pid = start("0", port, log, sizeof(log));

        sell_out(port, vid, log);
        for (b = 0; b < NB; b++) {
                trace0[b] = hlen(vid, b, SK_KEY_TRACE);
                users0[b] = hlen(vid, b, SK_KEY_USERS);
        }
        /* 40 sold-out buyers homed in every bucket, one of them 5 more times, and an
         * admitted buyer (10006: a member already). */
        for (i = 0; i < 40; i++) {
                ck_assert_int_eq(buy(port, vid, 8000 + i, &code), 409);
                ck_assert_int_eq(code, 10005);
        }
        for (i = 0; i < 5; i++) {
                ck_assert_int_eq(buy(port, vid, 8000, &code), 409);
                ck_assert_int_eq(code, 10005);
        }
        ck_assert_int_eq(buy(port, vid, 7001, &code), 409);
        ck_assert_int_eq(code, 10006);
        t_last = sk_mono_ms();
        for (b = 0; b < NB; b++) {
                ck_assert_msg(hlen(vid, b, SK_KEY_TRACE) == trace0[b],
                              "bucket %d: trace hash %lld fields, %lld when the sale ended", b,
                              hlen(vid, b, SK_KEY_TRACE), trace0[b]);
                ck_assert_msg(hlen(vid, b, SK_KEY_USERS) == users0[b],
                              "bucket %d: users hash %lld fields, %lld when the sale ended", b,
                              hlen(vid, b, SK_KEY_USERS), users0[b]);
        }
        /* The give-ups' fences live max(request deadline, 11 s), then nothing is left. */
        ck_assert_int_ge(fence_keys(vid), 1);
        sk_sleep_ms(FENCE_PX_MS - (sk_mono_ms() - t_last) + 500, NULL);
        ck_assert_int_eq(fence_keys(vid), 0);
        for (b = 0; b < NB; b++) {
                ck_assert_int_eq(hlen(vid, b, SK_KEY_TRACE), trace0[b]);
                ck_assert_int_eq(hlen(vid, b, SK_KEY_USERS), users0[b]);
        }
        ck_assert_int_eq(sk_test_stop(pid, 30), 0);
}
END_TEST

START_TEST(cache_on_no_probe_no_write)
{
        int port = sk_test_free_port(), code, i;
        int64_t vid = new_voucher();
        long long h0;
        char log[256], *snap0, *snap1;
        pid_t pid = start("20000", port, log, sizeof(log));

        /* The sale, then one sold-out buyer whose probing marks every bucket empty
         * (sell_out's third buyer did it already; once more for a buyer homed elsewhere). */
        sell_out(port, vid, log);
        ck_assert_int_eq(buy(port, vid, 9000, &code), 409);
        ck_assert_int_eq(code, 10005);
        /* Let that give-up's fence expire, so the snapshot holds only lasting keys. */
        sk_sleep_ms(DEADLINE_MS + 500, NULL);
        snap0 = sk_test_snapshot(&sk_test_fx.conf, sk_test_fx.r);
        h0 = sk_test_scrape(port, "seckill_front_soldout_cache_hits_total");
        for (i = 0; i < 20; i++) {
                ck_assert_int_eq(buy(port, vid, 9100 + i, &code), 409);
                ck_assert_int_eq(code, 10005);
        }
        ck_assert_int_eq(sk_test_scrape(port, "seckill_front_soldout_cache_hits_total"), h0 + 20);
        snap1 = sk_test_snapshot(&sk_test_fx.conf, sk_test_fx.r);
        ck_assert_str_eq(snap0, snap1);
        free(snap0);
        free(snap1);
        ck_assert_int_eq(sk_test_stop(pid, 30), 0);
}
END_TEST

static void setup(void)
{
        sk_test_fix_setup("frontsob", &(sk_test_fix_opts_t){ .no_topics = 1 });
}

int main(void)
{
        Suite *s = suite_create("front_soldout_buckets");
        TCase *tc = tcase_create("soldout_buckets");

        tcase_set_timeout(tc, 120);
        tcase_add_unchecked_fixture(tc, setup, sk_test_fix_teardown);
        tcase_add_test(tc, cache_off_hashes_stay_flat);
        tcase_add_test(tc, cache_on_no_probe_no_write);
        suite_add_tcase(s, tc);
        return sk_test_run_nofork(s);
}
