/* sk_test.c: helpers shared by the unit and integration tests (sk_test.h).
 * Every run gets unique names (prefix, database, topic, group) so concurrent runs on
 * the shared stack never collide. Cleanup talks to MariaDB and Redis directly through
 * their client libraries (not through sk_db/sk_redis) so the helpers depend only on
 * conf.c and migrate.c. Not thread-safe; call from the test's main thread. */
#include <ctype.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <mysql.h>

#include "sk_test.h"
#include "sk/migrate.h"

int64_t sk_test_rand_id(void)
{
        static uint64_t state;
        uint64_t v = 0;
        int fd;

        fd = open("/dev/urandom", O_RDONLY);
        if (fd >= 0) {
                if (read(fd, &v, sizeof(v)) != (ssize_t)sizeof(v))
                        v = 0;
                close(fd);
        }
        if (v == 0) {
                /* Fallback: xorshift seeded from time and pid. */
                if (state == 0) {
                        struct timespec ts;
                        clock_gettime(CLOCK_REALTIME, &ts);
                        state = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^
                                ((uint64_t)getpid() << 40) ^ 0x9E3779B97F4A7C15ULL;
                }
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                v = state;
        }
        v &= (uint64_t)INT64_MAX;
        if (v == 0)
                v = 1;
        return (int64_t)v;
}

/* snprintf that tolerates truncation on purpose (names are cut to fit). */
static void sfmt(char *dst, size_t size, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static void sfmt(char *dst, size_t size, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        if (vsnprintf(dst, size, fmt, ap) < 0 && size)
                dst[0] = '\0';
        va_end(ap);
}

/* Copies @p name keeping [A-Za-z0-9] and mapping everything else to '_'. */
static void clean_name(char *dst, size_t dst_size, const char *name, size_t max_len)
{
        size_t i;

        for (i = 0; name[i] && i < max_len && i + 1 < dst_size; i++)
                dst[i] = isalnum((unsigned char)name[i]) ? name[i] : '_';
        dst[i] = '\0';
}

void sk_test_conf(sk_conf_t *conf, const char *name)
{
        char *argv[] = { (char *)"sk-test", NULL };
        char base[64];
        unsigned rnd = (unsigned)(sk_test_rand_id() % 1000000000);
        int pid = (int)getpid();
        int argi = 0, rc;
        char tail[40];

        rc = sk_conf_load(conf, 1, argv, "sk-test", NULL, NULL, 0, &argi);
        if (rc != 0) {
                fprintf(stderr, "sk_test_conf: invalid environment (status %d)\n", rc);
                exit(2);
        }
        sfmt(tail, sizeof(tail), "_%d_%u", pid, rnd);
        /* Keep the unique tail whole; shorten the name so "skt_" + name + tail <= 63. */
        clean_name(base, sizeof(base), name ? name : "t", 63 - 4 - strlen(tail));

        sfmt(conf->redis_prefix, sizeof(conf->redis_prefix), "skt_%s%s", base, tail);
        sfmt(conf->mysql.database, sizeof(conf->mysql.database), "skt_%s%s", base, tail);
        sfmt(conf->topic, sizeof(conf->topic), "skt.%s.%d.%u", base, pid, rnd);
        sfmt(conf->dlq_topic, sizeof(conf->dlq_topic), "%s.dlq", conf->topic);
        sfmt(conf->group_id, sizeof(conf->group_id), "skt-%s-%d-%u", base, pid, rnd);
        /* Keep the URL string in step with the parsed struct (some code reads either). */
        if (conf->mysql.password[0])
                sfmt(conf->mysql_url, sizeof(conf->mysql_url), "mysql://%s:%s@%s:%d/%s",
                         conf->mysql.user, conf->mysql.password, conf->mysql.host,
                         conf->mysql.port, conf->mysql.database);
        else
                sfmt(conf->mysql_url, sizeof(conf->mysql_url), "mysql://%s@%s:%d/%s",
                         conf->mysql.user, conf->mysql.host, conf->mysql.port,
                         conf->mysql.database);
}

int sk_test_run(Suite *s)
{
        SRunner *sr = srunner_create(s);
        int failed;

        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

void sk_test_migrate(const sk_conf_t *conf)
{
        char errstr[512] = "";
        int applied = 0;
        sk_err_t err;

        err = sk_migrate(&conf->mysql, &applied, errstr, sizeof(errstr));
        if (err != SK_OK)
                ck_abort_msg("sk_migrate(%s): %s: %s", conf->mysql.database, sk_err2str(err), errstr);
}

static void drop_database(const sk_conf_t *conf)
{
        MYSQL *my = mysql_init(NULL);
        char sql[128];
        unsigned int timeout_s = 5;

        if (!my)
                return;
        mysql_options(my, MYSQL_OPT_CONNECT_TIMEOUT, &timeout_s);
        if (!mysql_real_connect(my, conf->mysql.host, conf->mysql.user,
                                conf->mysql.password[0] ? conf->mysql.password : NULL,
                                NULL, (unsigned)conf->mysql.port, NULL, 0)) {
                fprintf(stderr, "sk_test_cleanup: mysql connect: %s\n", mysql_error(my));
                goto done;
        }
        /* The database name is [A-Za-z0-9_]+ (validated by conf.c), safe to quote. */
        snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS `%s`", conf->mysql.database);
        if (mysql_query(my, sql))
                fprintf(stderr, "sk_test_cleanup: %s: %s\n", sql, mysql_error(my));
done:
        mysql_close(my);
}

static void delete_keys(const sk_conf_t *conf)
{
        struct timeval tv = { 5, 0 };
        redisContext *rc;
        redisReply *reply = NULL;
        char cursor[32] = "0";
        char match[80];

        rc = redisConnectWithTimeout(conf->redis.host, conf->redis.port, tv);
        if (!rc || rc->err) {
                fprintf(stderr, "sk_test_cleanup: redis connect: %s\n", rc ? rc->errstr : "no memory");
                goto done;
        }
        redisSetTimeout(rc, tv);
        if (conf->redis.password[0]) {
                reply = redisCommand(rc, "AUTH %s", conf->redis.password);
                if (reply)
                        freeReplyObject(reply);
        }
        reply = redisCommand(rc, "SELECT %d", conf->redis.db);
        if (!reply || reply->type == REDIS_REPLY_ERROR)
                goto done;
        freeReplyObject(reply);
        reply = NULL;

        /* The prefix is [A-Za-z0-9_.-]+ (conf.c), so it holds no glob characters. */
        snprintf(match, sizeof(match), "%s:*", conf->redis_prefix);
        do {
                reply = redisCommand(rc, "SCAN %s MATCH %s COUNT 1000", cursor, match);
                if (!reply || reply->type != REDIS_REPLY_ARRAY || reply->elements != 2)
                        goto done;
                snprintf(cursor, sizeof(cursor), "%s", reply->element[0]->str);
                {
                        redisReply *keys = reply->element[1];
                        size_t n = keys->elements, i;
                        if (n > 0) {
                                const char **argv = calloc(n + 1, sizeof(*argv));
                                size_t *argl = calloc(n + 1, sizeof(*argl));
                                if (argv && argl) {
                                        argv[0] = "UNLINK";
                                        argl[0] = 6;
                                        for (i = 0; i < n; i++) {
                                                argv[i + 1] = keys->element[i]->str;
                                                argl[i + 1] = keys->element[i]->len;
                                        }
                                        redisReply *r2 = redisCommandArgv(rc, (int)(n + 1), argv, argl);
                                        if (r2)
                                                freeReplyObject(r2);
                                }
                                free(argv);
                                free(argl);
                        }
                }
                freeReplyObject(reply);
                reply = NULL;
        } while (strcmp(cursor, "0") != 0);
done:
        if (reply)
                freeReplyObject(reply);
        if (rc)
                redisFree(rc);
}

void sk_test_cleanup(const sk_conf_t *conf)
{
        if (!conf)
                return;
        drop_database(conf);
        delete_keys(conf);
}
