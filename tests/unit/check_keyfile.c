/* check_keyfile.c: sk/keyfile.h, the one reader of the line-per-key secret files
 * (DESIGN.md 15, 18): trimming, comments, blank lines, the NUL and count rules, the hook's
 * errors with their line number, the file's size limit, and the stamp that tells a
 * reloader the file changed. No network; files under /tmp. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sk_test.h"
#include "sk/keyfile.h"

typedef struct seen {
        char line[8][64];
        int lineno[8];
        size_t n;
} seen_t;

static int keep(void *arg, const char *line, size_t len, int lineno, size_t index, char *errstr,
                size_t errstr_size)
{
        seen_t *s = arg;

        if (len >= 5 && memcmp(line, "bad", 3) == 0) {
                snprintf(errstr, errstr_size, "refused by the hook");
                return -1;
        }
        ck_assert_uint_eq(index, s->n);
        ck_assert_uint_lt(len, sizeof(s->line[0]));
        memcpy(s->line[s->n], line, len);
        s->line[s->n][len] = '\0';
        s->lineno[s->n++] = lineno;
        return 0;
}

START_TEST(lines_trimmed_and_skipped)
{
        static const char text[] = "# keys\n\nk1 first-secret \t\r\n   \n#k2 x\nk3 third\n";
        seen_t s = { 0 };
        char err[256] = "";

        ck_assert_int_eq(sk_keyfile_parse(text, sizeof(text) - 1, 4, "test file", keep, &s, err,
                                          sizeof(err)), 2);
        ck_assert_str_eq(s.line[0], "k1 first-secret");
        ck_assert_int_eq(s.lineno[0], 3);
        ck_assert_str_eq(s.line[1], "k3 third");
        ck_assert_int_eq(s.lineno[1], 6);
        /* the last line needs no newline */
        memset(&s, 0, sizeof(s));
        ck_assert_int_eq(sk_keyfile_parse("only", 4, 4, "test file", keep, &s, err, sizeof(err)), 1);
        ck_assert_str_eq(s.line[0], "only");
}
END_TEST

START_TEST(whole_file_refused)
{
        seen_t s = { 0 };
        char err[256] = "";

        ck_assert_int_eq(sk_keyfile_parse("", 0, 4, "test file", keep, &s, err, sizeof(err)), -1);
        ck_assert_ptr_nonnull(strstr(err, "no key in the test file"));
        ck_assert_int_eq(sk_keyfile_parse("# c\n\n", 5, 4, "test file", keep, &s, err, sizeof(err)), -1);
        memset(&s, 0, sizeof(s));
        ck_assert_int_eq(sk_keyfile_parse("a\nb\nc\n", 6, 2, "test file", keep, &s, err, sizeof(err)), -1);
        ck_assert_ptr_nonnull(strstr(err, "more than 2 keys"));
        memset(&s, 0, sizeof(s));
        ck_assert_int_eq(sk_keyfile_parse("a\nx\0y\n", 6, 4, "test file", keep, &s, err, sizeof(err)), -1);
        ck_assert_str_eq(err, "line 2: a NUL byte");
        memset(&s, 0, sizeof(s));
        ck_assert_int_eq(sk_keyfile_parse("ok\n\nbad-secret-text\n", 20, 4, "test file", keep, &s, err,
                                          sizeof(err)), -1);
        ck_assert_str_eq(err, "line 3: refused by the hook");
        ck_assert_ptr_null(strstr(err, "secret-text")); /* the line itself is never quoted */
}
END_TEST

static void write_file(const char *path, const char *text, size_t len)
{
        FILE *f = fopen(path, "wb");

        ck_assert_ptr_nonnull(f);
        ck_assert_uint_eq(fwrite(text, 1, len, f), len);
        ck_assert_int_eq(fclose(f), 0);
}

START_TEST(load_limits_and_stamp)
{
        char path[64], err[256] = "";
        char *big = malloc(SK_KEYFILE_MAX_BYTES + 2);
        seen_t s = { 0 };
        sk_keyfile_stamp_t st;

        snprintf(path, sizeof(path), "/tmp/check_keyfile.%d", (int)getpid());
        write_file(path, "k1 one\n", 7);
        ck_assert_int_eq(sk_keyfile_load(path, 4, "test file", keep, &s, err, sizeof(err)), 1);
        ck_assert_str_eq(s.line[0], "k1 one");
        sk_keyfile_stamp(path, &st);
        ck_assert_int_eq(sk_keyfile_changed(path, &st), 0);
        write_file(path, "k1 one\nk2 two\n", 14); /* another size */
        ck_assert_int_eq(sk_keyfile_changed(path, &st), 1);
        sk_keyfile_stamp(path, &st);
        ck_assert_int_eq(sk_keyfile_changed(path, &st), 0);
        /* the size limit: exactly the limit loads, one byte more does not */
        ck_assert_ptr_nonnull(big);
        memset(big, '#', SK_KEYFILE_MAX_BYTES + 1);
        memcpy(big, "k1 x\n", 5);
        write_file(path, big, SK_KEYFILE_MAX_BYTES);
        memset(&s, 0, sizeof(s));
        ck_assert_int_eq(sk_keyfile_load(path, 4, "test file", keep, &s, err, sizeof(err)), 1);
        write_file(path, big, SK_KEYFILE_MAX_BYTES + 1);
        ck_assert_int_eq(sk_keyfile_load(path, 4, "test file", keep, &s, err, sizeof(err)), -1);
        ck_assert_ptr_nonnull(strstr(err, "is over"));
        ck_assert_int_eq(unlink(path), 0);
        ck_assert_int_eq(sk_keyfile_changed(path, &st), 1); /* gone */
        ck_assert_int_eq(sk_keyfile_load(path, 4, "test file", keep, &s, err, sizeof(err)), -1);
        ck_assert_ptr_nonnull(strstr(err, "cannot open the test file"));
        free(big);
}
END_TEST

START_TEST(wipe_zeroes)
{
        char b[8] = "secret";

        sk_wipe(b, sizeof(b));
        for (size_t i = 0; i < sizeof(b); i++)
                ck_assert_int_eq(b[i], 0);
        sk_wipe(NULL, 4);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("keyfile");
        TCase *tc = tcase_create("keyfile");

        tcase_add_test(tc, lines_trimmed_and_skipped);
        tcase_add_test(tc, whole_file_refused);
        tcase_add_test(tc, load_limits_and_stamp);
        tcase_add_test(tc, wipe_zeroes);
        suite_add_tcase(s, tc);
        return sk_test_run(s);
}
