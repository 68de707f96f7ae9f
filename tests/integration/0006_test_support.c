/* 0006_test_support.c: the shared test helpers against the real stack: sk_test_conf
 * gives unique, valid names per run; sk_test_migrate creates the database;
 * sk_test_cleanup drops it and deletes exactly the run's Redis keys (prefix:*). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>
#include <mysql.h>

#include "sk_test.h"
#include "sk/conf.h"

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

static long long exists(redisContext *rc, const char *key)
{
        redisReply *r = redisCommand(rc, "EXISTS %s", key);
        long long n;

        ck_assert_ptr_nonnull(r);
        n = r->integer;
        freeReplyObject(r);
        return n;
}

START_TEST(migrate_and_cleanup)
{
        sk_conf_t conf;
        redisContext *rc;
        redisReply *r;
        char key[128], other[128];
        int i;

        sk_test_conf(&conf, "support");
        sk_test_migrate(&conf);
        ck_assert_int_eq(db_count(&conf), 1);

        rc = redisConnect(conf.redis.host, conf.redis.port);
        ck_assert(rc && !rc->err);
        r = redisCommand(rc, "SELECT %d", conf.redis.db);
        freeReplyObject(r);
        for (i = 0; i < 2500; i++) {            /* more than one SCAN page */
                snprintf(key, sizeof(key), "%s:k:%d", conf.redis_prefix, i);
                r = redisCommand(rc, "SET %s 1", key);
                freeReplyObject(r);
        }
        snprintf(key, sizeof(key), "%s:{v:1:0}:meta", conf.redis_prefix);
        r = redisCommand(rc, "HSET %s status 1", key);
        freeReplyObject(r);
        /* A key of another prefix that merely starts with ours survives. */
        snprintf(other, sizeof(other), "%sX:k", conf.redis_prefix);
        r = redisCommand(rc, "SET %s 1", other);
        freeReplyObject(r);

        sk_test_cleanup(&conf);
        ck_assert_int_eq(db_count(&conf), 0);
        ck_assert_int_eq(exists(rc, key), 0);
        snprintf(key, sizeof(key), "%s:k:%d", conf.redis_prefix, 1234);
        ck_assert_int_eq(exists(rc, key), 0);
        ck_assert_int_eq(exists(rc, other), 1);
        r = redisCommand(rc, "DEL %s", other);
        freeReplyObject(r);
        redisFree(rc);
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
