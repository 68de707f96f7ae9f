/* sk_test.c: the stack and the run's configuration (sk_test.h): unique names, a
 * migrated database, cleanup, random ids, a Redis connection and commands.
 * Every run gets unique names (prefix, database, topic, group) so concurrent runs on
 * the shared stack never collide. Cleanup talks to MariaDB directly and to Redis
 * through sk_redis, so it works for every topology SECKILL_REDIS_URL names (one
 * server, Sentinel, Cluster; DESIGN.md 4b). Not thread-safe; call from the test's main
 * thread. */
#include <ctype.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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
        char tail[40], hosts[1024];

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
        /* Keep the URL string in step with the parsed struct (some code reads either),
         * every host of a multi-host URL kept (DESIGN.md 16: the Galera label). */
        hosts[0] = '\0';
        for (int i = 0; i < conf->mysql.nhosts; i++) {
                size_t used = strlen(hosts);

                sfmt(hosts + used, sizeof(hosts) - used, "%s%s:%d", i ? "," : "",
                     conf->mysql.hosts[i].host, conf->mysql.hosts[i].port);
        }
        if (conf->mysql.password[0])
                sfmt(conf->mysql_url, sizeof(conf->mysql_url), "mysql://%s:%s@%s/%s",
                         conf->mysql.user, conf->mysql.password, hosts, conf->mysql.database);
        else
                sfmt(conf->mysql_url, sizeof(conf->mysql_url), "mysql://%s@%s/%s",
                         conf->mysql.user, hosts, conf->mysql.database);
}

sk_mysql_url_t sk_test_mysql_node(const sk_mysql_url_t *url, int k)
{
        sk_mysql_url_t u = *url;
        int n = url->nhosts > 0 ? url->nhosts : 1;

        for (int i = 0; i < url->nhosts; i++)
                u.hosts[i] = url->hosts[(i + k) % n];
        if (url->nhosts > 0) {
                memcpy(u.host, u.hosts[0].host, sizeof(u.host));
                u.port = u.hosts[0].port;
        }
        return u;
}

static int run(Suite *s, int nofork)
{
        SRunner *sr = srunner_create(s);
        int failed;

        if (nofork)
                srunner_set_fork_status(sr, CK_NOFORK);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

int sk_test_run(Suite *s)
{
        return run(s, 0);
}

int sk_test_run_nofork(Suite *s)
{
        return run(s, 1);
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

sk_redis_t *sk_test_redis(const sk_conf_t *conf)
{
        char errstr[512] = "";
        sk_redis_t *r = sk_redis_connect(&conf->redis, 5000, errstr, sizeof(errstr));

        ck_assert_msg(r != NULL, "redis connect %s: %s", conf->redis_url, errstr);
        return r;
}

redisReply *sk_test_vcmd(sk_redis_t *r, const char *fmt, va_list ap)
{
        char errstr[512] = "";
        redisReply *reply = NULL;
        sk_err_t err = sk_redis_vcmdf(r, &reply, errstr, sizeof(errstr), fmt, ap);

        if (err == SK_OK)
                return reply;
        if ((err == SK_EREDIS || err == SK_EAGAIN || err == SK_EINVAL) &&
            strncmp(errstr, "redis: ", 7) == 0) {
                /* An error reply (sk_redis writes "redis: <server text>"): hand it back
                 * as one, as hiredis would (freeReplyObject frees str and the object,
                 * both malloc'd). */
                reply = calloc(1, sizeof(*reply));
                if (reply && (reply->str = strdup(errstr + 7))) {
                        reply->type = REDIS_REPLY_ERROR;
                        reply->len = strlen(reply->str);
                        return reply;
                }
                free(reply);
        }
        fprintf(stderr, "sk_test_cmd \"%s\": %s: %s\n", fmt, sk_err2str(err), errstr);
        return NULL;
}

redisReply *sk_test_cmd(sk_redis_t *r, const char *fmt, ...)
{
        redisReply *reply;
        va_list ap;

        va_start(ap, fmt);
        reply = sk_test_vcmd(r, fmt, ap);
        va_end(ap);
        return reply;
}

/* UNLINK one key found by the scan (keys of a Cluster live on different nodes, so one
 * command per key; cleanup is not hot). */
static int unlink_key(const char *key, size_t keylen, void *arg)
{
        const char *argv[2] = { "UNLINK", key };
        size_t argvlen[2] = { 6, keylen };
        redisReply *reply = NULL;
        char errstr[256];

        if (sk_redis_cmd(arg, &reply, 2, argv, argvlen, errstr, sizeof(errstr)) == SK_OK)
                freeReplyObject(reply);
        return 0;
}

static void delete_keys(const sk_conf_t *conf)
{
        char errstr[512] = "", match[80];
        sk_redis_t *r = sk_redis_connect(&conf->redis, 5000, errstr, sizeof(errstr));

        if (!r) {
                fprintf(stderr, "sk_test_cleanup: redis connect: %s\n", errstr);
                return;
        }
        /* The prefix is [A-Za-z0-9_.-]+ (conf.c), so it holds no glob characters. */
        snprintf(match, sizeof(match), "%s:*", conf->redis_prefix);
        if (sk_redis_scan(r, match, 1000, unlink_key, r, errstr, sizeof(errstr)) != SK_OK)
                fprintf(stderr, "sk_test_cleanup: scan %s: %s\n", match, errstr);
        sk_redis_close(r);
}

void sk_test_cleanup(const sk_conf_t *conf)
{
        if (!conf)
                return;
        drop_database(conf);
        delete_keys(conf);
}
