/* 0402_front_worker_id.c: two fronts started with the same SECKILL_WORKER_ID (same key
 * prefix): the second exits with status 2 (DESIGN.md 2: set and taken -> exit 2) before
 * it serves anything, and the first keeps serving. */
#include "sk_test.h"

START_TEST(same_worker_id_second_exits_2)
{
        static const char *const env[] = { "SECKILL_WORKER_ID=17", NULL };
        int p1 = sk_test_free_port(), p2 = sk_test_free_port();
        char log[256], body[1024];
        pid_t a, b;
        int st = -1;
        int64_t until;

        sk_test_log_path(log, sizeof(log), "front_0402");
        a = sk_test_front_start(&sk_test_fx.conf, p1, env, log);
        ck_assert_msg(sk_test_wait_ready(p1, a, 30) == 0, "first front not ready (log %s)", log);
        ck_assert_int_eq(sk_test_http(p1, "GET", "/readyz", NULL, NULL, body, sizeof(body)), 200);
        ck_assert_msg(strstr(body, "\"workerId\":17") != NULL, "%s", body);
        b = sk_test_front_start(&sk_test_fx.conf, p2, env, log);
        until = sk_mono_ms() + 20000;
        while (sk_mono_ms() < until) {
                int w;

                if (waitpid(b, &w, WNOHANG) == b) {
                        st = WIFEXITED(w) ? WEXITSTATUS(w) : 128 + WTERMSIG(w);
                        break;
                }
                usleep(50 * 1000);
        }
        if (st < 0)
                sk_test_stop(b, 5);
        ck_assert_int_eq(st, 2);
        ck_assert_int_eq(sk_test_http(p1, "GET", "/readyz", NULL, NULL, body, sizeof(body)), 200);
        ck_assert_int_eq(sk_test_stop(a, 30), 0);
}
END_TEST

static void setup(void)
{
        /* the front leases its worker id in the DB (DESIGN.md 2) */
        sk_test_fix_setup("frontwid", &(sk_test_fix_opts_t){ .no_topics = 1 });
}

int main(void)
{
        Suite *s = suite_create("front_worker_id");
        TCase *tc = tcase_create("worker_id");

        tcase_set_timeout(tc, 90);
        tcase_add_unchecked_fixture(tc, setup, sk_test_fix_teardown);
        tcase_add_test(tc, same_worker_id_second_exits_2);
        suite_add_tcase(s, tc);
        return sk_test_run_nofork(s);
}
