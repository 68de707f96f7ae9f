/* 0420_front_buckets.c: seckill-front's overflow probing against the real stack
 * (DESIGN.md 4 v4, 3, 8, 11): a voucher of 4 buckets laid out in Redis as preheat lays it
 * out (meta with buckets, stock, users and trace with `_`):
 *   - many buyers: exactly the total stock is admitted (202) although home buckets empty
 *     at different times, every bucket is drained, the others get 409/10005 and are free
 *     again (the home step released them); each admitted purchase's DEDUCT entry sits in
 *     the bucket whose stock it took, with its buyer's home bucket, and its home's users
 *     hash names it;
 *   - one user, 20 concurrent requests, home bucket empty: one purchase (by probing),
 *     the other 19 are 10006;
 *   - failpoints front.after_overflow, front.after_take (exit) and front.after_take=error
 *     with rollback.before_home=exit: the state each crash leaves for the reconciler
 *     (DESIGN.md 14: probing past grace, a take not settled, a home step not done), and
 *     what orders/me says meanwhile (PENDING while probing, FAILED once a probed bucket
 *     holds T:r).
 * Runs without fork (CK_FORK=no): the tests share one front child process; the crash
 * cases start their own. */
#include <pthread.h>
#include <stdarg.h>

#include "sk_test.h"

#define NB 4

static int g_port;
static pid_t g_pid;
static char g_log[256];

static void key(char *buf, int64_t vid, int b, sk_key_kind_t kind)
{
        sk_key_voucher(buf, sk_test_fx.conf.redis_prefix, vid, b, kind);
}

/* A voucher of NB buckets on sale for an hour, bucket b with stock[b] units. */
static int64_t new_voucher(const long long stock[NB])
{
        int64_t now = sk_now_ms();

        return sk_test_voucher(&(sk_test_voucher_t){ .r = sk_test_fx.r, .buckets = NB,
                                                     .stocks = stock, .begin_ms = now - 60000,
                                                     .end_ms = now + 3600000, .status = 1 });
}

static long long bucket_stock(int64_t vid, int b)
{
        char k[SK_KEY_MAX];

        key(k, vid, b, SK_KEY_STOCK);
        return sk_test_get_i64(sk_test_fx.r, k);
}

/* HGET in bucket @p b's @p kind hash (malloc'd or NULL). */
static char *hget(int64_t vid, int b, sk_key_kind_t kind, const char *field)
{
        char k[SK_KEY_MAX];

        key(k, vid, b, kind);
        return sk_test_hget(sk_test_fx.r, k, field);
}

typedef struct buyer {
        pthread_barrier_t *bar;
        int64_t vid, uid;
        char user[SK_ID_STRLEN], trace[SK_ID_STRLEN];
        int status, code;
} buyer_t;

static void *buyer_main(void *arg)
{
        buyer_t *b = arg;
        char body[1024];

        pthread_barrier_wait(b->bar);
        b->status = sk_test_buy(g_port, b->vid, b->user, body, sizeof(body));
        b->code = sk_test_body_code(body);
        if (b->status == 202)
                sk_test_json_field(body, "traceId", b->trace, sizeof(b->trace));
        return NULL;
}

static void crowd(buyer_t *b, int n)
{
        pthread_t t[64];
        pthread_barrier_t bar;
        int i;

        ck_assert_int_le(n, 64);
        pthread_barrier_init(&bar, NULL, (unsigned)n);
        for (i = 0; i < n; i++) {
                b[i].bar = &bar;
                sk_id_format(b[i].uid, b[i].user);
                ck_assert_int_eq(pthread_create(&t[i], NULL, buyer_main, &b[i]), 0);
        }
        for (i = 0; i < n; i++)
                pthread_join(t[i], NULL);
        pthread_barrier_destroy(&bar);
}

/* The DEDUCT entry of @p trace: in which bucket, and its "bucket"/"home" fields. */
static int entry_bucket(int64_t vid, const char *trace, int *home)
{
        int found = -1;

        for (int b = 0; b < NB; b++) {
                char *e = hget(vid, b, SK_KEY_TRACE, trace);
                char want[32];

                if (!e)
                        continue;
                ck_assert_msg(found < 0, "trace %s in two buckets", trace);
                found = b;
                snprintf(want, sizeof(want), "\"bucket\":%d,\"home\":", b);
                ck_assert_msg(strstr(e, want) != NULL, "entry %s lacks %s", e, want);
                *home = atoi(strstr(e, "\"home\":") + 7); /* a bucket number, not an id */
                free(e);
        }
        return found;
}

START_TEST(many_buyers_drain_every_bucket)
{
        const long long stock[NB] = { 3, 1, 0, 6 };
        int64_t vid = new_voucher(stock);
        buyer_t b[40];
        int i, n202 = 0, n409 = 0, per[NB] = { 0 };

        memset(b, 0, sizeof(b));
        for (i = 0; i < 40; i++) {
                b[i].vid = vid;
                b[i].uid = 5000 + i;
        }
        crowd(b, 40);
        for (i = 0; i < 40; i++) {
                int h = sk_home_bucket(b[i].uid, NB), home = -1, j;
                char *s = hget(vid, h, SK_KEY_USERS, b[i].user);

                if (b[i].status == 202) {
                        n202++;
                        j = entry_bucket(vid, b[i].trace, &home);
                        ck_assert_msg(j >= 0, "admitted trace %s has no DEDUCT entry", b[i].trace);
                        ck_assert_int_eq(home, h);
                        per[j]++;
                        ck_assert_msg(s && strcmp(s, b[i].trace) == 0, "users[%s] = %s", b[i].user,
                                      s ? s : "nil");
                        if (j != h) {
                                char f[SK_ID_STRLEN + 3], *t;

                                snprintf(f, sizeof(f), "%s:h", b[i].trace);
                                t = hget(vid, h, SK_KEY_TRACE, f);
                                ck_assert_msg(t && atoi(t) == j, "T:h = %s, want %d", t ? t : "nil", j);
                                free(t);
                        }
                } else if (b[i].status == 409 && b[i].code == 10005) {
                        n409++;
                        ck_assert_msg(s == NULL, "sold-out buyer %s still a member (%s)", b[i].user, s);
                } else {
                        ck_abort_msg("buyer %d: status %d code %d", i, b[i].status, b[i].code);
                }
                free(s);
        }
        ck_assert_int_eq(n202, 10);
        ck_assert_int_eq(n409, 30);
        for (i = 0; i < NB; i++) {
                ck_assert_int_eq(bucket_stock(vid, i), 0);
                ck_assert_int_eq(per[i], stock[i]);
        }
}
END_TEST

/* A user id whose home bucket among NB is @p h. */
static int64_t user_homed_at(int h)
{
        for (int64_t u = 900000 + (sk_test_rand_id() % 100000);; u++)
                if (sk_home_bucket(u, NB) == h)
                        return u;
}

START_TEST(one_user_twenty_requests_one_purchase)
{
        long long stock[NB] = { 2, 2, 2, 2 };
        int64_t uid = user_homed_at(1), vid;
        buyer_t b[20];
        int i, n202 = 0, n10006 = 0;
        long long total = 0;

        stock[1] = 0; /* the user's home is empty: the purchase must come from probing */
        vid = new_voucher(stock);
        memset(b, 0, sizeof(b));
        for (i = 0; i < 20; i++) {
                b[i].vid = vid;
                b[i].uid = uid;
        }
        crowd(b, 20);
        for (i = 0; i < 20; i++) {
                if (b[i].status == 202)
                        n202++;
                else if (b[i].status == 409 && b[i].code == 10006)
                        n10006++;
                else
                        ck_abort_msg("request %d: status %d code %d", i, b[i].status, b[i].code);
        }
        ck_assert_int_eq(n202, 1);
        ck_assert_int_eq(n10006, 19);
        for (i = 0; i < NB; i++)
                total += bucket_stock(vid, i);
        ck_assert_int_eq(total, 5);
        ck_assert_int_eq(bucket_stock(vid, 1), 0);
}
END_TEST

/* A front with @p failpoints; one purchase by a user homed at 0 (bucket 0 empty, bucket 1
 * with stock) that the front does not survive; returns the user id, *trace its trace
 * (from users[U] in the home bucket). */
static int64_t crash_case(const char *failpoints, int64_t *vid_out, char *trace, size_t cap)
{
        const long long stock[NB] = { 0, 3, 3, 3 };
        int64_t vid = new_voucher(stock), uid = user_homed_at(0);
        char fp[256], log[256], body[1024], u[SK_ID_STRLEN], *t;
        const char *env[2] = { fp, NULL };
        int port = sk_test_free_port(), st, wst;
        pid_t pid;

        snprintf(fp, sizeof(fp), "SECKILL_FAILPOINTS=%s", failpoints);
        sk_test_log_path(log, sizeof(log), "front_0420_crash");
        pid = sk_test_front_start(&sk_test_fx.conf, port, env, log);
        ck_assert_msg(sk_test_wait_ready(port, pid, 30) == 0, "front not ready (log %s)", log);
        sk_id_format(uid, u);
        st = sk_test_buy(port, vid, u, body, sizeof(body));
        ck_assert_msg(st < 0, "the front answered %d (log %s)", st, log);
        ck_assert_int_eq(waitpid(pid, &wst, 0), pid);
        ck_assert(WIFSIGNALED(wst) && WTERMSIG(wst) == SIGKILL);
        t = hget(vid, 0, SK_KEY_USERS, u);
        ck_assert_msg(t != NULL, "users[%s] missing in the home bucket", u);
        snprintf(trace, cap, "%s", t);
        free(t);
        *vid_out = vid;
        return uid;
}

static void assert_field(int64_t vid, int b, const char *trace, const char *suffix,
                         const char *want)
{
        char f[SK_ID_STRLEN + 3], *s;

        snprintf(f, sizeof(f), "%s%s", trace, suffix);
        s = hget(vid, b, SK_KEY_TRACE, f);
        if (!want) {
                ck_assert_msg(s == NULL, "bucket %d %s = %s, want nil", b, f, s);
                return;
        }
        ck_assert_msg(s != NULL, "bucket %d %s is nil", b, f);
        if (*want)
                ck_assert_msg(strstr(s, want) != NULL, "bucket %d %s = %s, want %s", b, f, s, want);
        free(s);
}

/* orders/me of @p uid (DESIGN.md 3) on the shared front: its "state". */
static void assert_me(int64_t vid, int64_t uid, const char *want)
{
        char path[128], v[SK_ID_STRLEN], u[SK_ID_STRLEN], body[1024], state[32];
        int st;

        sk_id_format(vid, v);
        sk_id_format(uid, u);
        snprintf(path, sizeof(path), "/api/v1/vouchers/%s/orders/me", v);
        st = sk_test_http(g_port, "GET", path, u, NULL, body, sizeof(body));
        ck_assert_msg(st == 200, "orders/me: %d %s", st, body);
        ck_assert_int_eq(sk_test_json_field(body, "state", state, sizeof(state)), 0);
        ck_assert_msg(strcmp(state, want) == 0, "orders/me state %s, want %s (%s)", state, want, body);
}

/* front.after_overflow: T:h = probing and users[U] = T in h, no take anywhere. */
START_TEST(crash_after_overflow_leaves_probing)
{
        int64_t vid;
        char trace[SK_ID_STRLEN];

        int64_t uid = crash_case("front.after_overflow=exit", &vid, trace, sizeof(trace));

        assert_field(vid, 0, trace, ":h", "probing");
        assert_me(vid, uid, "PENDING"); /* probing, no T:r anywhere */
        for (int b = 0; b < NB; b++) {
                assert_field(vid, b, trace, "", NULL);
                assert_field(vid, b, trace, ":r", NULL);
                ck_assert_int_eq(bucket_stock(vid, b), b == 0 ? 0 : 3);
        }
}
END_TEST

/* front.after_take: T in bucket 1 (bucket 1, home 0), its unit taken, T:h still probing. */
START_TEST(crash_after_take_leaves_unsettled_take)
{
        int64_t vid;
        char trace[SK_ID_STRLEN];

        int64_t uid = crash_case("front.after_take=exit", &vid, trace, sizeof(trace));

        assert_field(vid, 0, trace, ":h", "probing");
        assert_me(vid, uid, "PENDING"); /* the DEDUCT entry in bucket 1, no outcome */
        assert_field(vid, 1, trace, "", "\"bucket\":1,\"home\":0,");
        ck_assert_int_eq(bucket_stock(vid, 1), 2);
        for (int b = 0; b < NB; b++)
                assert_field(vid, b, trace, ":r", NULL);
}
END_TEST

/* A give-up after the take (front.after_take=error), killed between rollback.lua on
 * bucket 1 and the home step: the take is fenced and restored, the home step not done. */
START_TEST(crash_before_home_leaves_member)
{
        int64_t vid;
        char trace[SK_ID_STRLEN];

        int64_t uid = crash_case("front.after_take=error;rollback.before_home=exit", &vid, trace,
                                 sizeof(trace));

        assert_field(vid, 1, trace, "", "\"bucket\":1,\"home\":0,");
        assert_me(vid, uid, "FAILED"); /* a T:r in a probed bucket while T is probing */
        assert_field(vid, 1, trace, ":r", "\"restored\":1");
        ck_assert_int_eq(bucket_stock(vid, 1), 3);
        assert_field(vid, 0, trace, ":r", NULL);
        assert_field(vid, 0, trace, ":h", "probing");
}
END_TEST

static void setup(void)
{
        sk_test_fix_setup("front_buckets", &(sk_test_fix_opts_t){ .no_topics = 1 });
        g_port = sk_test_free_port();
        sk_test_log_path(g_log, sizeof(g_log), "front_0420");
        g_pid = sk_test_front_start(&sk_test_fx.conf, g_port, NULL, g_log);
        ck_assert_msg(sk_test_wait_ready(g_port, g_pid, 30) == 0, "front not ready (log %s)", g_log);
}

static void teardown(void)
{
        ck_assert_int_eq(sk_test_stop(g_pid, 30), 0);
        sk_test_fix_teardown();
}

int main(void)
{
        Suite *s = suite_create("front_buckets");
        TCase *tc = tcase_create("front");

        tcase_set_timeout(tc, 120);
        tcase_add_unchecked_fixture(tc, setup, teardown);
        tcase_add_test(tc, many_buyers_drain_every_bucket);
        tcase_add_test(tc, one_user_twenty_requests_one_purchase);
        tcase_add_test(tc, crash_after_overflow_leaves_probing);
        tcase_add_test(tc, crash_after_take_leaves_unsettled_take);
        tcase_add_test(tc, crash_before_home_leaves_member);
        suite_add_tcase(s, tc);
        return sk_test_run_nofork(s);
}
