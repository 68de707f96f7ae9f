/* 0407_front_rollback_states.c: the two PENDING rows of the front's rollback (DESIGN.md
 * 7, 8: NOT_PERSISTED or produce refused -> rollback.lua mode front; OK/ALREADY -> 503
 * FAILED; CLAIMED or rollback failed -> 503 PENDING):
 *   - CLAIMED: the publish fails (failpoint front.after_deduct=error) and, while the
 *     fence is held back (front.before_rollback=sleep), a claim record T:c appears (as a
 *     reconciler re-drive or the consumer's claim.lua would write it): the fence loses,
 *     503 PENDING, the stock stays taken, no T:r, the user still named;
 *   - rollback failed (front.before_rollback=error): 503 PENDING, nothing undone, the
 *     DEDUCT left for the reconciler.
 * Redis is the shared one under this run's prefix. */
#include <pthread.h>

#include "sk_test.h"

typedef struct buy_arg {
        int port;
        char path[160];
        const char *user;
        int status;
        char body[2048];
} buy_arg_t;

static void *buy_main(void *arg)
{
        buy_arg_t *b = arg;

        b->status = sk_test_http(b->port, "POST", b->path, b->user, NULL, b->body, sizeof(b->body));
        return NULL;
}

/* Start a front with @p failpoints and buy once as @p user, in a thread; with @p claim,
 * write T:c as soon as the DEDUCT T appears. Checks the 503 PENDING and that nothing
 * was undone. */
static void run_case(const char *failpoints, const char *user, int claim)
{
        char fp_env[256], log[256], v[SK_ID_STRLEN], k_trace[SK_KEY_MAX], k_users[SK_KEY_MAX];
        char state[32], tr[SK_ID_STRLEN], field[64];
        const char *env[] = { fp_env, NULL };
        sk_redis_t *rc = sk_test_fx.r;
        int64_t vid = sk_test_rand_id(), t = sk_now_ms(), tid, until;
        buy_arg_t b;
        pthread_t th;
        pid_t pid;
        char *s;

        memset(&b, 0, sizeof(b));
        snprintf(fp_env, sizeof(fp_env), "SECKILL_FAILPOINTS=%s", failpoints);
        sk_test_voucher(&(sk_test_voucher_t){ .r = rc, .vid = vid, .stock = 5,
                                              .begin_ms = t - 60000, .end_ms = t + 3600000,
                                              .status = 1 });
        sk_test_log_path(log, sizeof(log), "front_0407_%s", user);
        b.port = sk_test_free_port();
        pid = sk_test_front_start(&sk_test_fx.conf, b.port, env, log);
        ck_assert_msg(sk_test_wait_ready(b.port, pid, 30) == 0, "front not ready (log %s)", log);
        sk_id_format(vid, v);
        snprintf(b.path, sizeof(b.path), "/api/v1/vouchers/%s/seckill", v);
        b.user = user;
        sk_key_voucher(k_trace, sk_test_fx.conf.redis_prefix, vid, 0, SK_KEY_TRACE);
        sk_key_voucher(k_users, sk_test_fx.conf.redis_prefix, vid, 0, SK_KEY_USERS);
        ck_assert_int_eq(pthread_create(&th, NULL, buy_main, &b), 0);
        if (claim) {
                char *trace = NULL;
                redisReply *r;

                /* users[user] names the trace as soon as the deduct ran. */
                until = sk_mono_ms() + 10000;
                while (!trace && sk_mono_ms() < until) {
                        trace = sk_test_hget(rc, k_users, user);
                        if (!trace)
                                usleep(5 * 1000);
                }
                ck_assert_msg(trace != NULL, "no deduct seen (log %s)", log);
                snprintf(field, sizeof(field), "%s:c", trace);
                r = sk_test_cmd(rc, "HSET %s %s {\"redrives\":1}", k_trace, field);
                ck_assert(r && r->type == REDIS_REPLY_INTEGER);
                freeReplyObject(r);
                free(trace);
        }
        pthread_join(th, NULL);
        ck_assert_msg(b.status == 503, "status %d body %s (log %s)", b.status, b.body, log);
        ck_assert_int_eq(sk_test_json_field(b.body, "state", state, sizeof(state)), 0);
        ck_assert_str_eq(state, "PENDING");
        ck_assert_int_eq(sk_test_json_field(b.body, "traceId", tr, sizeof(tr)), 0);
        ck_assert_int_eq(sk_id_parse_cstr(tr, &tid), 0);
        /* Nothing undone: stock taken, no fence, the user still named by the trace. */
        ck_assert_int_eq(sk_test_stock(&sk_test_fx.conf, rc, vid), 4);
        sk_field_trace(field, tid, 'r');
        s = sk_test_hget(rc, k_trace, field);
        ck_assert_msg(s == NULL, "fence written: %s", s ? s : "");
        s = sk_test_hget(rc, k_trace, tr);
        ck_assert_ptr_nonnull(s);
        free(s);
        s = sk_test_hget(rc, k_users, user);
        ck_assert_ptr_nonnull(s);
        ck_assert_str_eq(s, tr);
        free(s);
        ck_assert_int_eq(sk_test_stop(pid, 30), 0);
}

START_TEST(claimed_fence_is_pending)
{
        run_case("front.after_deduct=1*error;front.before_rollback=1*sleep(1500)", "7001", 1);
}
END_TEST

START_TEST(failed_rollback_is_pending)
{
        run_case("front.after_deduct=1*error;front.before_rollback=1*error", "7002", 0);
}
END_TEST

static void setup(void)
{
        /* the front leases its worker id in the DB (DESIGN.md 2) */
        sk_test_fix_setup("frontrb", &(sk_test_fix_opts_t){ .no_topics = 1 });
}

int main(void)
{
        Suite *s = suite_create("front_rollback_states");
        TCase *tc = tcase_create("rollback");

        tcase_set_timeout(tc, 90);
        tcase_add_unchecked_fixture(tc, setup, sk_test_fix_teardown);
        tcase_add_checked_fixture(tc, sk_test_reap_all, NULL); /* a front an earlier failed test left */
        tcase_add_test(tc, claimed_fence_is_pending);
        tcase_add_test(tc, failed_rollback_is_pending);
        suite_add_tcase(s, tc);
        return sk_test_run_nofork(s);
}
