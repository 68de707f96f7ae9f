/* check_failpoint.c: SECKILL_FAILPOINTS parsing, counted points, sleep, error, and
 * exit (checked in a forked child, which must die of SIGKILL). */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sk_test.h"
#include "sk/clock.h"
#include "sk/failpoint.h"

START_TEST(parse_full_spec)
{
        char err[256] = "";

        ck_assert_int_eq(sk_failpoint_setup("a=exit;b=3*error;c=sleep(50);d=off", err, sizeof(err)), 0);
        ck_assert_str_eq(err, "");
        ck_assert_int_eq(sk_failpoints_active, 1);
        ck_assert_int_eq(sk_failpoint_eval("d"), 0);
        ck_assert_int_eq(sk_failpoint_eval("unknown.point"), 0);
        ck_assert_int_eq(sk_failpoint_eval(NULL), 0);
        /* b fires 3 times, then is off. */
        ck_assert_int_eq(sk_failpoint_eval("b"), 1);
        ck_assert_int_eq(sk_failpoint_eval("b"), 1);
        ck_assert_int_eq(sk_failpoint_eval("b"), 1);
        ck_assert_int_eq(sk_failpoint_eval("b"), 0);
        ck_assert_int_eq(sk_failpoint_eval("b"), 0);
}
END_TEST

START_TEST(sleep_action)
{
        char err[256];
        int64_t t0;

        ck_assert_int_eq(sk_failpoint_setup(" c = sleep(50) ; ", err, sizeof(err)), 0);
        t0 = sk_mono_ms();
        ck_assert_int_eq(sk_failpoint_eval("c"), 0);
        ck_assert_int_ge(sk_mono_ms() - t0, 49);
        ck_assert_int_eq(SK_FAILPOINT("c"), 0);
}
END_TEST

START_TEST(uncounted_error_keeps_firing)
{
        char err[256];

        ck_assert_int_eq(sk_failpoint_setup("consumer.before_commit=error", err, sizeof(err)), 0);
        for (int i = 0; i < 100; i++)
                ck_assert_int_eq(SK_FAILPOINT("consumer.before_commit"), 1);
}
END_TEST

static const char *const bad_specs[] = {
        "a=explode", "a", "=error", "a=0*error", "a=x*error", "a=-1*error", "a=sleep(x)",
        "a=sleep()", "a=sleep(50", "a=error;b=bogus", "a b=error", "a=*error",
};

START_TEST(rejects_bad_specs)
{
        char err[256] = "";

        ck_assert_int_eq(sk_failpoint_setup("keep=error", err, sizeof(err)), 0);
        err[0] = '\0';
        ck_assert_msg(sk_failpoint_setup(bad_specs[_i], err, sizeof(err)) == -1, "accepted %s", bad_specs[_i]);
        ck_assert_str_ne(err, "");
        /* A rejected spec changes nothing. */
        ck_assert_int_eq(sk_failpoint_eval("keep"), 1);
        ck_assert_int_eq(sk_failpoints_active, 1);
}
END_TEST

START_TEST(unknown_action_names_reason)
{
        char err[256] = "";

        ck_assert_int_eq(sk_failpoint_setup("front.after_deduct=explode", err, sizeof(err)), -1);
        ck_assert_ptr_nonnull(strstr(err, "front.after_deduct"));
        ck_assert_ptr_nonnull(strstr(err, "unknown action"));
}
END_TEST

START_TEST(empty_spec_deactivates)
{
        char err[256];

        ck_assert_int_eq(sk_failpoint_setup("a=error", err, sizeof(err)), 0);
        ck_assert_int_eq(sk_failpoints_active, 1);
        ck_assert_int_eq(sk_failpoint_setup("", err, sizeof(err)), 0);
        ck_assert_int_eq(sk_failpoints_active, 0);
        ck_assert_int_eq(sk_failpoint_eval("a"), 0);
        ck_assert_int_eq(sk_failpoint_setup("a=error", err, sizeof(err)), 0);
        ck_assert_int_eq(sk_failpoint_setup(NULL, err, sizeof(err)), 0);
        ck_assert_int_eq(sk_failpoints_active, 0);
        unsetenv("SECKILL_FAILPOINTS");
        ck_assert_int_eq(sk_failpoint_setup_env(err, sizeof(err)), 0);
        ck_assert_int_eq(sk_failpoints_active, 0);
        setenv("SECKILL_FAILPOINTS", "x.y=2*error", 1);
        ck_assert_int_eq(sk_failpoint_setup_env(err, sizeof(err)), 0);
        ck_assert_int_eq(sk_failpoint_eval("x.y"), 1);
}
END_TEST

static int fired_total;
static pthread_mutex_t fired_mu = PTHREAD_MUTEX_INITIALIZER;

static void *hammer(void *arg)
{
        int mine = 0;

        (void)arg;
        for (int i = 0; i < 20000; i++)
                mine += sk_failpoint_eval("hot");
        pthread_mutex_lock(&fired_mu);
        fired_total += mine;
        pthread_mutex_unlock(&fired_mu);
        return NULL;
}

START_TEST(counted_is_exact_across_threads)
{
        char err[256];
        pthread_t th[4];

        ck_assert_int_eq(sk_failpoint_setup("hot=1000*error", err, sizeof(err)), 0);
        for (int i = 0; i < 4; i++)
                ck_assert_int_eq(pthread_create(&th[i], NULL, hammer, NULL), 0);
        for (int i = 0; i < 4; i++)
                pthread_join(th[i], NULL);
        ck_assert_int_eq(fired_total, 1000);
}
END_TEST

START_TEST(exit_raises_sigkill)
{
        char err[256];
        int status = 0;
        pid_t pid;

        ck_assert_int_eq(sk_failpoint_setup("front.after_deduct=1*exit", err, sizeof(err)), 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                sk_failpoint_eval("front.after_deduct");
                _exit(0);       /* not reached */
        }
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert(WIFSIGNALED(status));
        ck_assert_int_eq(WTERMSIG(status), SIGKILL);
}
END_TEST

static Suite *failpoint_suite(void)
{
        Suite *s = suite_create("failpoint");
        TCase *tc = tcase_create("failpoint");

        tcase_add_test(tc, parse_full_spec);
        tcase_add_test(tc, sleep_action);
        tcase_add_test(tc, uncounted_error_keeps_firing);
        tcase_add_loop_test(tc, rejects_bad_specs, 0, (int)(sizeof(bad_specs) / sizeof(bad_specs[0])));
        tcase_add_test(tc, unknown_action_names_reason);
        tcase_add_test(tc, empty_spec_deactivates);
        tcase_add_test(tc, counted_is_exact_across_threads);
        tcase_add_test(tc, exit_raises_sigkill);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return sk_test_run(failpoint_suite());
}
