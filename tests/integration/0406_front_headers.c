/* 0406_front_headers.c: the X-User-Id header of DESIGN.md 3 (set by the authenticating
 * gateway in front of seckill-front). Exactly one canonical id is accepted: two
 * X-User-Id headers (equal or not, any case) are ambiguous — which one did the gateway
 * set? — so the answer is 400 / 10001 with no Redis write, for the purchase and for the
 * lookups, never "the first one wins". One header still buys (202). */
#include "sk_test.h"

START_TEST(duplicate_user_header_is_400)
{
        static const char *const dups[] = { "X-User-Id: 77\r\n", "X-User-Id: 78\r\n",
                                            "x-user-id: 78\r\n" };
        char log[256], body[2048], path[160], mepath[160], v[SK_ID_STRLEN], c[32];
        sk_redis_t *rc = sk_test_fx.r;
        int port = sk_test_free_port();
        int64_t vid = sk_test_rand_id(), t = sk_now_ms();
        char *before, *after;
        size_t i;
        pid_t pid;

        sk_test_voucher(&(sk_test_voucher_t){ .r = rc, .vid = vid, .stock = 5,
                                              .begin_ms = t - 60000, .end_ms = t + 3600000,
                                              .status = 1 });
        sk_test_log_path(log, sizeof(log), "front_0406");
        pid = sk_test_front_start(&sk_test_fx.conf, port, NULL, log);
        ck_assert_msg(sk_test_wait_ready(port, pid, 30) == 0, "front not ready (log %s)", log);
        sk_id_format(vid, v);
        snprintf(path, sizeof(path), "/api/v1/vouchers/%s/seckill", v);
        snprintf(mepath, sizeof(mepath), "/api/v1/vouchers/%s/orders/me", v);
        before = sk_test_snapshot(&sk_test_fx.conf, rc);
        for (i = 0; i < sizeof(dups) / sizeof(dups[0]); i++) {
                ck_assert_int_eq(sk_test_http(port, "POST", path, "77", dups[i], body, sizeof(body)), 400);
                ck_assert_int_eq(sk_test_json_field(body, "code", c, sizeof(c)), 0);
                ck_assert_str_eq(c, "10001");
                ck_assert_int_eq(sk_test_http(port, "GET", mepath, "77", dups[i], body, sizeof(body)), 400);
                ck_assert_int_eq(sk_test_http(port, "GET", "/api/v1/orders/12345", "77", dups[i], body,
                                         sizeof(body)), 400);
        }
        after = sk_test_snapshot(&sk_test_fx.conf, rc);
        ck_assert_str_eq(before, after);
        ck_assert_int_eq(sk_test_stock(&sk_test_fx.conf, rc, vid), 5);
        /* One header: a normal purchase. */
        ck_assert_int_eq(sk_test_http(port, "POST", path, "77", NULL, body, sizeof(body)), 202);
        ck_assert_int_eq(sk_test_stock(&sk_test_fx.conf, rc, vid), 4);
        ck_assert_int_eq(sk_test_stop(pid, 30), 0);
        free(before);
        free(after);
}
END_TEST

static void setup(void)
{
        sk_test_fix_setup("fronthdr", &(sk_test_fix_opts_t){ .no_topics = 1 });
}

int main(void)
{
        Suite *s = suite_create("front_headers");
        TCase *tc = tcase_create("headers");

        tcase_set_timeout(tc, 90);
        tcase_add_unchecked_fixture(tc, setup, sk_test_fix_teardown);
        tcase_add_checked_fixture(tc, sk_test_reap_all, NULL); /* a front an earlier failed test left */
        tcase_add_test(tc, duplicate_user_header_is_400);
        suite_add_tcase(s, tc);
        return sk_test_run_nofork(s);
}
