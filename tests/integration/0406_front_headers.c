/* 0406_front_headers.c: the X-User-Id header of DESIGN.md 3 (set by the authenticating
 * gateway in front of seckill-front). Exactly one canonical id is accepted: two
 * X-User-Id headers (equal or not, any case) are ambiguous — which one did the gateway
 * set? — so the answer is 400 / 10001 with no Redis write, for the purchase and for the
 * lookups, never "the first one wins". One header still buys (202). */
#include "sk_test.h"

static sk_conf_t g_conf;
static pid_t g_child; /* a front still running when a check failed (CK_FORK=no) */

static void reap_child(void)
{
        if (g_child > 0) {
                kill(g_child, SIGKILL);
                waitpid(g_child, NULL, 0);
        }
        g_child = 0;
}

START_TEST(duplicate_user_header_is_400)
{
        static const char *const dups[] = { "X-User-Id: 77\r\n", "X-User-Id: 78\r\n",
                                            "x-user-id: 78\r\n" };
        char log[256], body[2048], path[160], mepath[160], v[SK_ID_STRLEN], c[32];
        sk_redis_t *rc = sk_test_redis(&g_conf);
        int port = sk_test_free_port();
        int64_t vid = sk_test_rand_id(), t = sk_now_ms();
        char *before, *after;
        size_t i;
        pid_t pid;

        sk_test_voucher(&(sk_test_voucher_t){ .conf = &g_conf, .r = rc, .vid = vid, .stock = 5,
                                              .begin_ms = t - 60000, .end_ms = t + 3600000,
                                              .status = 1 });
        snprintf(log, sizeof(log), "%s/front_0406_%d.log",
                 getenv("SK_BUILD") ? getenv("SK_BUILD") : "/tmp", (int)getpid());
        pid = sk_test_front_start(&g_conf, port, NULL, log);
        reap_child();
        g_child = pid;
        ck_assert_msg(sk_test_wait_ready(port, pid, 30) == 0, "front not ready (log %s)", log);
        sk_id_format(vid, v);
        snprintf(path, sizeof(path), "/api/v1/vouchers/%s/seckill", v);
        snprintf(mepath, sizeof(mepath), "/api/v1/vouchers/%s/orders/me", v);
        before = sk_test_snapshot(&g_conf, rc);
        for (i = 0; i < sizeof(dups) / sizeof(dups[0]); i++) {
                ck_assert_int_eq(sk_test_http(port, "POST", path, "77", dups[i], body, sizeof(body)), 400);
                ck_assert_int_eq(sk_test_json_field(body, "code", c, sizeof(c)), 0);
                ck_assert_str_eq(c, "10001");
                ck_assert_int_eq(sk_test_http(port, "GET", mepath, "77", dups[i], body, sizeof(body)), 400);
                ck_assert_int_eq(sk_test_http(port, "GET", "/api/v1/orders/12345", "77", dups[i], body,
                                         sizeof(body)), 400);
        }
        after = sk_test_snapshot(&g_conf, rc);
        ck_assert_str_eq(before, after);
        ck_assert_int_eq(sk_test_stock(&g_conf, rc, vid), 5);
        /* One header: a normal purchase. */
        ck_assert_int_eq(sk_test_http(port, "POST", path, "77", NULL, body, sizeof(body)), 202);
        ck_assert_int_eq(sk_test_stock(&g_conf, rc, vid), 4);
        g_child = 0;
        ck_assert_int_eq(sk_test_stop(pid, 30), 0);
        free(before);
        free(after);
        sk_redis_close(rc);
}
END_TEST

static void setup(void)
{
        sk_test_conf(&g_conf, "fronthdr");
        sk_test_migrate(&g_conf);
}

static void teardown(void)
{
        reap_child();
        sk_test_cleanup(&g_conf);
}

int main(void)
{
        Suite *s = suite_create("front_headers");
        TCase *tc = tcase_create("headers");

        setenv("CK_FORK", "no", 1);
        tcase_set_timeout(tc, 90);
        tcase_add_unchecked_fixture(tc, setup, teardown);
        tcase_add_test(tc, duplicate_user_header_is_400);
        suite_add_tcase(s, tc);
        return sk_test_run(s);
}
