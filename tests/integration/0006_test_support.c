/* 0006_test_support.c: the shared test helpers against the real stack: sk_test_conf
 * gives unique, valid names per run; sk_test_migrate creates the database;
 * sk_test_cleanup drops it and deletes exactly the run's Redis keys (prefix:*). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>
#include <mysql.h>

#include "sk_test.h"
#include "sk/conf.h"
#include "sk/redis.h"

START_TEST(unique_names)
{
        sk_conf_t a, b;
        sk_mysql_url_t parsed;
        char err[256];

        sk_test_conf(&a, "support");
        sk_test_conf(&b, "a-very-long-test-name-that-will-not-fit-in-sixty-four-characters-at-all");
        ck_assert_str_ne(a.redis_prefix, b.redis_prefix);
        ck_assert_str_ne(a.mysql.database, b.mysql.database);
        ck_assert_str_ne(a.topic, b.topic);
        ck_assert_str_ne(a.group_id, b.group_id);
        ck_assert_int_eq(strncmp(a.redis_prefix, "skt_support_", 12), 0);
        ck_assert_int_eq(strncmp(a.topic, "skt.support.", 12), 0);
        ck_assert_int_eq(strncmp(a.group_id, "skt-support-", 12), 0);
        ck_assert_uint_le(strlen(b.mysql.database), 63);
        ck_assert_uint_le(strlen(b.redis_prefix), 63);
        ck_assert_str_eq(strchr(a.dlq_topic, 0) - 4, ".dlq");
        ck_assert_int_eq(strncmp(a.dlq_topic, a.topic, strlen(a.topic)), 0);
        /* mysql_url follows the database. */
        ck_assert_int_eq(sk_mysql_url_parse(b.mysql_url, &parsed, err, sizeof(err)), 0);
        ck_assert_str_eq(parsed.database, b.mysql.database);
        ck_assert(sk_test_rand_id() > 0);
}
END_TEST

static long long db_count(const sk_conf_t *conf)
{
        MYSQL *my = mysql_init(NULL);
        char sql[256];
        long long n = -1;
        MYSQL_RES *res;
        MYSQL_ROW row;

        ck_assert_ptr_nonnull(mysql_real_connect(my, conf->mysql.host, conf->mysql.user,
                                                 conf->mysql.password[0] ? conf->mysql.password : NULL,
                                                 NULL, (unsigned)conf->mysql.port, NULL, 0));
        snprintf(sql, sizeof(sql), "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME='%s'",
                 conf->mysql.database);
        ck_assert_int_eq(mysql_query(my, sql), 0);
        res = mysql_store_result(my);
        row = mysql_fetch_row(res);
        n = atoll(row[0]);
        mysql_free_result(res);
        mysql_close(my);
        return n;
}

/* Every Redis call goes through sk_redis (any topology, DESIGN.md 4b). */
static redisReply *rcmd(sk_redis_t *r, const char *fmt, ...)
{
        redisReply *reply = NULL;
        char err[256] = "";
        va_list ap;
        sk_err_t e;

        va_start(ap, fmt);
        e = sk_redis_vcmdf(r, &reply, err, sizeof(err), fmt, ap);
        va_end(ap);
        ck_assert_msg(e == SK_OK && reply != NULL, "redis error: %s", err);
        return reply;
}

static long long exists(sk_redis_t *r, const char *key)
{
        redisReply *reply = rcmd(r, "EXISTS %s", key);
        long long n;

        ck_assert_int_eq(reply->type, REDIS_REPLY_INTEGER);
        n = reply->integer;
        freeReplyObject(reply);
        return n;
}

START_TEST(migrate_and_cleanup)
{
        sk_conf_t conf;
        sk_redis_t *r;
        char key[128], other[128], err[256];
        int i;

        sk_test_conf(&conf, "support");
        sk_test_migrate(&conf);
        ck_assert_int_eq(db_count(&conf), 1);

        r = sk_redis_connect(&conf.redis, 2000, err, sizeof(err));
        ck_assert_msg(r != NULL, "redis: %s", err);
        for (i = 0; i < 2500; i++) {            /* more than one SCAN page */
                snprintf(key, sizeof(key), "%s:k:%d", conf.redis_prefix, i);
                freeReplyObject(rcmd(r, "SET %s 1", key));
        }
        snprintf(key, sizeof(key), "%s:{v:1:0}:meta", conf.redis_prefix);
        freeReplyObject(rcmd(r, "HSET %s status 1", key));
        /* A key of another prefix that merely starts with ours survives. */
        snprintf(other, sizeof(other), "%sX:k", conf.redis_prefix);
        freeReplyObject(rcmd(r, "SET %s 1", other));
        ck_assert_int_eq(exists(r, key), 1);

        sk_test_cleanup(&conf);
        ck_assert_int_eq(db_count(&conf), 0);
        ck_assert_int_eq(exists(r, key), 0);
        snprintf(key, sizeof(key), "%s:k:%d", conf.redis_prefix, 1234);
        ck_assert_int_eq(exists(r, key), 0);
        ck_assert_int_eq(exists(r, other), 1);
        freeReplyObject(rcmd(r, "DEL %s", other));
        sk_redis_close(r);
        sk_test_cleanup(&conf);                 /* idempotent */
}
END_TEST

static Suite *support_suite(void)
{
        Suite *s = suite_create("test_support");
        TCase *tc = tcase_create("support");

        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, unique_names);
        tcase_add_test(tc, migrate_and_cleanup);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return sk_test_run(support_suite());
}
