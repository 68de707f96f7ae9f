/* check_redis_error.c: the Redis error-word classifier (sk/redis_error.h): whole first
 * words only, so a longer word or a prefix never matches, and the "did not run" class
 * of DESIGN.md 8. */
#include <string.h>

#include "sk_test.h"
#include "sk/redis_error.h"

#define IS(s, w) sk_redis_error_is((s), strlen(s), (w))
#define NOT_RUN(s) sk_redis_error_not_run((s), strlen(s))

START_TEST(word_boundary)
{
        ck_assert_int_eq(IS("READONLY", "READONLY"), 1);
        ck_assert_int_eq(IS("READONLY You can't write against a read only replica.", "READONLY"), 1);
        ck_assert_int_eq(IS("READONLYX", "READONLY"), 0);
        ck_assert_int_eq(IS("XREADONLY", "READONLY"), 0);
        ck_assert_int_eq(IS("READONL", "READONLY"), 0);
        ck_assert_int_eq(IS("ERR READONLY", "READONLY"), 0);
        ck_assert_int_eq(IS("MOVED 3999 127.0.0.1:6381", "MOVED"), 1);
        ck_assert_int_eq(IS("ASK 3999 127.0.0.1:6381", "ASK"), 1);
        ck_assert_int_eq(IS("ASKING", "ASK"), 0);
        ck_assert_int_eq(IS("BUSYKEY Target key name already exists.", "BUSY"), 0);
        ck_assert_int_eq(IS("", "BUSY"), 0);
        ck_assert_int_eq(sk_redis_error_is(NULL, 0, "BUSY"), 0);
        /* The length counts, not the NUL: a text cut before the word's end. */
        ck_assert_int_eq(sk_redis_error_is("LOADING", 4, "LOADING"), 0);
}
END_TEST

START_TEST(not_run_class)
{
        static const char *const yes[] = {
                "BUSY Redis is busy running a script", "LOADING Redis is loading the dataset",
                "READONLY You can't write", "OOM command not allowed", "MASTERDOWN Link down",
                "NOREPLICAS Not enough good replicas", "TRYAGAIN Multiple keys",
                "CLUSTERDOWN The cluster is down", "NOSCRIPT No matching script", "BUSY", NULL
        };
        static const char *const no[] = {
                "ERR unknown command", "BUSYKEY Target key name already exists.", "LOADINGX",
                "XBUSY", "MOVED 1 h:1", "ASK 1 h:1", "ERR SKARG bad", "WRONGTYPE Operation", NULL
        };
        int i;

        for (i = 0; yes[i]; i++)
                ck_assert_msg(NOT_RUN(yes[i]) == 1, "%s", yes[i]);
        for (i = 0; no[i]; i++)
                ck_assert_msg(NOT_RUN(no[i]) == 0, "%s", no[i]);
}
END_TEST

START_TEST(reply_is)
{
        redisReply err = { .type = REDIS_REPLY_ERROR, .str = "NOSCRIPT No matching script",
                           .len = 27 };
        redisReply status = { .type = REDIS_REPLY_STATUS, .str = "NOSCRIPT", .len = 8 };

        ck_assert_int_eq(sk_redis_reply_is(&err, "NOSCRIPT"), 1);
        ck_assert_int_eq(sk_redis_reply_is(&err, "NOSCRIPTS"), 0);
        ck_assert_int_eq(sk_redis_reply_is(&status, "NOSCRIPT"), 0); /* not an error reply */
        ck_assert_int_eq(sk_redis_reply_is(NULL, "NOSCRIPT"), 0);
}
END_TEST

static Suite *redis_error_suite(void)
{
        Suite *s = suite_create("redis_error");
        TCase *tc = tcase_create("words");

        tcase_add_test(tc, word_boundary);
        tcase_add_test(tc, not_run_class);
        tcase_add_test(tc, reply_is);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return sk_test_run(redis_error_suite());
}
