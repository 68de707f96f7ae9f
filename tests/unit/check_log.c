/* check_log.c: key=value line format, level gate, one line per event. stderr is
 * redirected into a pipe for each test. */
#include <regex.h>
#include <string.h>
#include <unistd.h>

#include "sk_test.h"
#include "sk/log.h"

static int saved_fd = -1;
static int pipe_fds[2];

static void capture_begin(void)
{
        ck_assert_int_eq(pipe(pipe_fds), 0);
        saved_fd = dup(STDERR_FILENO);
        ck_assert_int_ge(saved_fd, 0);
        ck_assert_int_ge(dup2(pipe_fds[1], STDERR_FILENO), 0);
        close(pipe_fds[1]);
}

/* Restores stderr and returns what was written (up to size-1 bytes). */
static size_t capture_end(char *buf, size_t size)
{
        size_t off = 0;
        ssize_t n;

        dup2(saved_fd, STDERR_FILENO);
        close(saved_fd);
        while (off + 1 < size && (n = read(pipe_fds[0], buf + off, size - 1 - off)) > 0)
                off += (size_t)n;
        buf[off] = '\0';
        close(pipe_fds[0]);
        return off;
}

START_TEST(line_format)
{
        char out[1024];
        regex_t re;

        sk_log_init("front");
        sk_log_level = SK_DEBUG;
        capture_begin();
        SK_LOG(SK_WARN, "db_retry", "partition=%d offset=%d err=\"%s\"", 3, 17, "lock wait");
        capture_end(out, sizeof(out));
        ck_assert_int_eq(regcomp(&re,
                "^ts=[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z "
                "lvl=warn svc=front event=db_retry partition=3 offset=17 err=\"lock wait\"\n$",
                REG_EXTENDED), 0);
        ck_assert_msg(regexec(&re, out, 0, NULL, 0) == 0, "bad line: %s", out);
        regfree(&re);
}
END_TEST

START_TEST(level_gate)
{
        char out[1024];

        sk_log_init("consumer");
        sk_log_level = SK_WARN;
        capture_begin();
        SK_LOG(SK_DEBUG, "hidden_debug", "a=%d", 1);
        SK_LOG(SK_INFO, "hidden_info", "a=%d", 1);
        SK_LOG(SK_WARN, "shown_warn", "a=%d", 2);
        SK_LOG(SK_ERROR, "shown_error", "a=%d", 3);
        capture_end(out, sizeof(out));
        ck_assert_ptr_null(strstr(out, "hidden"));
        ck_assert_ptr_nonnull(strstr(out, "lvl=warn svc=consumer event=shown_warn a=2\n"));
        ck_assert_ptr_nonnull(strstr(out, "lvl=error svc=consumer event=shown_error a=3\n"));
        sk_log_level = SK_INFO;
}
END_TEST

START_TEST(one_line_even_with_newlines_and_truncation)
{
        static char out[16384];
        static char big[10000];
        size_t n;
        char *nl;

        memset(big, 'x', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        sk_log_level = SK_DEBUG;
        capture_begin();
        sk_log_emit(SK_INFO, "multi", "a=%s", "line1\nline2");
        sk_log_emit(SK_INFO, "big", "v=%s", big);
        n = capture_end(out, sizeof(out));
        nl = strchr(out, '\n');
        ck_assert_ptr_nonnull(nl);
        ck_assert_ptr_nonnull(strstr(out, "event=multi a=line1 line2\n"));
        /* The long line is cut to the buffer (4096 bytes with its newline) and marked. */
        ck_assert_uint_eq(n - (size_t)(nl + 1 - out), 4095);
        ck_assert_int_eq(out[n - 1], '\n');
        ck_assert_int_eq(memcmp(out + n - 4, "...\n", 4), 0);
        sk_log_level = SK_INFO;
}
END_TEST

START_TEST(parse_level)
{
        int lvl = -7;

        ck_assert_int_eq(sk_log_parse_level("debug", &lvl), 0);
        ck_assert_int_eq(lvl, SK_DEBUG);
        ck_assert_int_eq(sk_log_parse_level("info", &lvl), 0);
        ck_assert_int_eq(lvl, SK_INFO);
        ck_assert_int_eq(sk_log_parse_level("warn", &lvl), 0);
        ck_assert_int_eq(lvl, SK_WARN);
        ck_assert_int_eq(sk_log_parse_level("error", &lvl), 0);
        ck_assert_int_eq(lvl, SK_ERROR);
        lvl = -7;
        ck_assert_int_eq(sk_log_parse_level("verbose", &lvl), -1);
        ck_assert_int_eq(sk_log_parse_level("", &lvl), -1);
        ck_assert_int_eq(sk_log_parse_level(NULL, &lvl), -1);
        ck_assert_int_eq(lvl, -7);
}
END_TEST

static Suite *log_suite(void)
{
        Suite *s = suite_create("log");
        TCase *tc = tcase_create("log");

        tcase_add_test(tc, line_format);
        tcase_add_test(tc, level_gate);
        tcase_add_test(tc, one_line_even_with_newlines_and_truncation);
        tcase_add_test(tc, parse_level);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return sk_test_run(log_suite());
}
