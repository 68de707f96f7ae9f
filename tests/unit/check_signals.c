/* check_signals.c: sk/signals.h (no network). Each behaviour runs in its own child
 * process (fork), so the handlers installed here never reach the test runner: first
 * signal -> 1, second -> 2; with SK_SIGNALS_SECOND_EXITS the second signal (or any
 * signal once the flag is already set) writes the message to stderr and exits 1;
 * SK_SIGNALS_IGNORE_PIPE ignores SIGPIPE. */
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "sk_test.h"
#include "sk/signals.h"

static volatile sig_atomic_t t_flag;

/* Run @p body in a child; returns its exit status (-1 if it did not exit normally) and
 * what it wrote to stderr in @p err (NUL-terminated). */
static int in_child(void (*body)(void), char *err, size_t err_size)
{
        int fds[2], status = 0;
        pid_t pid;
        size_t got = 0;
        ssize_t n;

        ck_assert_int_eq(pipe(fds), 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                close(fds[0]);
                dup2(fds[1], 2);
                body();
                _exit(0);
        }
        close(fds[1]);
        while (got + 1 < err_size && (n = read(fds[0], err + got, err_size - 1 - got)) > 0)
                got += (size_t)n;
        err[got] = '\0';
        close(fds[0]);
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void body_counts(void)
{
        if (sk_signals_install(&t_flag, 0, "ignored\n") != SK_OK)
                _exit(10);
        raise(SIGINT);
        if (t_flag != 1)
                _exit(11);
        raise(SIGTERM);
        if (t_flag != 2)
                _exit(12);
        raise(SIGINT);
        if (t_flag != 2)
                _exit(13);
        _exit(0);
}

static void body_second_exits(void)
{
        if (sk_signals_install(&t_flag, SK_SIGNALS_SECOND_EXITS, "bye now\n") != SK_OK)
                _exit(10);
        raise(SIGTERM);
        if (t_flag != 1)
                _exit(11);
        raise(SIGINT);
        _exit(12); /* not reached */
}

static void body_flag_already_set(void)
{
        if (sk_signals_install(&t_flag, SK_SIGNALS_SECOND_EXITS, NULL) != SK_OK)
                _exit(10);
        t_flag = 1; /* the program asked to stop by itself */
        raise(SIGTERM);
        _exit(12); /* not reached */
}

static void body_pipe(void)
{
        struct sigaction old;

        if (sk_signals_install(&t_flag, SK_SIGNALS_IGNORE_PIPE, NULL) != SK_OK)
                _exit(10);
        if (sigaction(SIGPIPE, NULL, &old) != 0 || old.sa_handler != SIG_IGN)
                _exit(11);
        raise(SIGPIPE); /* ignored: we get to exit 0 */
        _exit(0);
}

START_TEST(first_sets_1_second_sets_2)
{
        char err[128];

        ck_assert_int_eq(in_child(body_counts, err, sizeof(err)), 0);
        ck_assert_str_eq(err, "");
}
END_TEST

START_TEST(second_exits_with_message)
{
        char err[128];

        ck_assert_int_eq(in_child(body_second_exits, err, sizeof(err)), 1);
        ck_assert_str_eq(err, "bye now\n");
        ck_assert_int_eq(in_child(body_flag_already_set, err, sizeof(err)), 1);
        ck_assert_str_eq(err, "");
}
END_TEST

START_TEST(ignore_pipe)
{
        char err[128];

        ck_assert_int_eq(in_child(body_pipe, err, sizeof(err)), 0);
}
END_TEST

START_TEST(null_flag_rejected)
{
        ck_assert_int_eq(sk_signals_install(NULL, 0, NULL), SK_EINVAL);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("signals");
        TCase *tc = tcase_create("install");

        tcase_add_test(tc, first_sets_1_second_sets_2);
        tcase_add_test(tc, second_exits_with_message);
        tcase_add_test(tc, ignore_pipe);
        tcase_add_test(tc, null_flag_rejected);
        suite_add_tcase(s, tc);
        return sk_test_run(s);
}
