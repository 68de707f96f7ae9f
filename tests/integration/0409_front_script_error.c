/* 0409_front_script_error.c: DESIGN.md 8, an error reply from deduct.lua that is not one
 * of the "did not run" refusals (BUSY, LOADING, READONLY, OOM, NOSCRIPT twice, TRYAGAIN,
 * CLUSTERDOWN, MASTERDOWN, NOREPLICAS) means the script ran and may have written before
 * it failed: the outcome is UNKNOWN, handled as a timeout (repeat the same EVALSHA with
 * the same traceId, then fence with rollback.lua mode front, 503 with the state it
 * established). Before the fix such a reply was a 500 with nothing undone. Each case
 * runs a PRIVATE redis-server on a spare port (never the shared one) with one command
 * renamed, so a real Redis refuses it inside the script:
 *   - PEXPIREAT renamed: since v4 deduct.lua spends no command on expiry (DESIGN.md 4:
 *     preheat gives every key E), so it no longer fails there: 202, stock down exactly
 *     once, the DEDUCT entry written and not fenced (the case keeps the hot path free of
 *     PEXPIREAT);
 *   - DECRBY renamed: every attempt fails; after the repeats the front fences the
 *     traceId: 503 state FAILED, T:r written, stock unchanged, the buyer free again. */
#include "sk_test.h"

static sk_conf_t g_conf;       /* the fixture's, pointed at the private server */
static pid_t g_redis_pid;

/* Private server with @p cmd renamed, a voucher on sale with 5 units, a front on it. */
static pid_t start(const char *cmd, const char *what, int port, int64_t vid, sk_redis_t **rc_out,
                   char *log, size_t log_cap)
{
        static char url_env[600];
        const char *rename[] = { "--rename-command", cmd, "sk_renamed_away", NULL };
        const char *env[] = { url_env, NULL };
        int64_t t = sk_now_ms();
        pid_t pid;

        sk_test_redis_stop(&g_redis_pid); /* one a failed case left running */
        g_conf = sk_test_fx.conf;
        g_redis_pid = sk_test_redis_start(&g_conf, 0, rename);
        snprintf(url_env, sizeof(url_env), "SECKILL_REDIS_URL=%s", g_conf.redis_url);
        *rc_out = sk_test_redis(&g_conf);
        sk_test_voucher(&(sk_test_voucher_t){ .conf = &g_conf, .r = *rc_out, .vid = vid, .stock = 5,
                                              .begin_ms = t - 60000, .end_ms = t + 3600000,
                                              .status = 1 });
        sk_test_log_path(log, log_cap, "front_0409_%s", what);
        pid = sk_test_front_start(&g_conf, port, env, log);
        ck_assert_msg(sk_test_wait_ready(port, pid, 40) == 0, "front not ready (log %s)", log);
        return pid;
}

START_TEST(error_after_write_continues_with_replay)
{
        int port = sk_test_free_port();
        int64_t vid = sk_test_rand_id(), tid;
        char log[256], path[128], v[SK_ID_STRLEN], body[1024], tr[SK_ID_STRLEN], k[SK_KEY_MAX];
        char field[48], *s;
        sk_redis_t *rc;
        pid_t pid = start("PEXPIREAT", "pexpireat", port, vid, &rc, log, sizeof(log));
        int st;

        sk_id_format(vid, v);
        snprintf(path, sizeof(path), "/api/v1/vouchers/%s/seckill", v);
        st = sk_test_http(port, "POST", path, "401", NULL, body, sizeof(body));
        ck_assert_msg(st == 202, "status %d body %s (log %s)", st, body, log);
        ck_assert_int_eq(sk_test_stock(&g_conf, rc, vid), 4);
        ck_assert_int_eq(sk_test_json_field(body, "traceId", tr, sizeof(tr)), 0);
        ck_assert_int_eq(sk_id_parse_cstr(tr, &tid), 0);
        sk_key_voucher(k, g_conf.redis_prefix, vid, 0, SK_KEY_TRACE);
        s = sk_test_hget(rc, k, tr);
        ck_assert_ptr_nonnull(s); /* the DEDUCT entry the first attempt wrote */
        free(s);
        sk_field_trace(field, tid, 'r');
        ck_assert_ptr_null(sk_test_hget(rc, k, field)); /* not fenced */
        ck_assert_int_eq(sk_test_stop(pid, 30), 0);
        sk_redis_close(rc);
        sk_test_redis_stop(&g_redis_pid);
}
END_TEST

START_TEST(error_every_time_is_fenced)
{
        int port = sk_test_free_port();
        int64_t vid = sk_test_rand_id(), tid;
        char log[256], path[128], v[SK_ID_STRLEN], body[1024], tr[SK_ID_STRLEN], k[SK_KEY_MAX];
        char field[48], state[32], *s;
        sk_redis_t *rc;
        pid_t pid = start("DECRBY", "decrby", port, vid, &rc, log, sizeof(log));
        int st;

        sk_id_format(vid, v);
        snprintf(path, sizeof(path), "/api/v1/vouchers/%s/seckill", v);
        st = sk_test_http(port, "POST", path, "402", NULL, body, sizeof(body));
        ck_assert_msg(st == 503, "status %d body %s (log %s)", st, body, log);
        ck_assert_int_eq(sk_test_json_field(body, "state", state, sizeof(state)), 0);
        ck_assert_str_eq(state, "FAILED");
        ck_assert_int_eq(sk_test_json_field(body, "traceId", tr, sizeof(tr)), 0);
        ck_assert_int_eq(sk_id_parse_cstr(tr, &tid), 0);
        sk_key_voucher(k, g_conf.redis_prefix, vid, 0, SK_KEY_TRACE);
        sk_field_trace(field, tid, 'r');
        s = sk_test_hget(rc, k, field);
        ck_assert_ptr_nonnull(s); /* the fence */
        free(s);
        ck_assert_int_eq(sk_test_stock(&g_conf, rc, vid), 5);
        sk_key_voucher(k, g_conf.redis_prefix, vid, 0, SK_KEY_USERS);
        ck_assert_ptr_null(sk_test_hget(rc, k, "402"));
        ck_assert_int_eq(sk_test_stop(pid, 30), 0);
        sk_redis_close(rc);
        sk_test_redis_stop(&g_redis_pid);
}
END_TEST

static void setup(void)
{
        sk_test_fix_setup("frontse", &(sk_test_fix_opts_t){ .no_topics = 1 });
}

static void teardown(void)
{
        sk_test_redis_stop(&g_redis_pid);
        sk_test_fix_teardown(); /* fronts a failed check left running, the database */
}

int main(void)
{
        Suite *s = suite_create("front_script_error");
        TCase *tc = tcase_create("script_error");

        tcase_set_timeout(tc, 120);
        tcase_add_unchecked_fixture(tc, setup, teardown);
        tcase_add_test(tc, error_after_write_continues_with_replay);
        tcase_add_test(tc, error_every_time_is_fenced);
        suite_add_tcase(s, tc);
        return sk_test_run_nofork(s);
}
