/* 0419_degrade_support.h: helpers shared by the degrade-mode tests (0412, 0413), which
 * run real binaries against a private redis-server, the real MariaDB and Kafka: the
 * child environment of a test's configuration, a consumer child, a seckill-admin call,
 * a one-value SQL query and the voucher's switch state (DESIGN.md 12). Header-only
 * (static functions), included after 0499_front_util.h; the caller owns @p conf. */
#pragma once
#include <stdarg.h>

#include "0499_front_util.h"

/* In a forked child: the SECKILL_* environment of @p conf (2 partitions, 3 s delivery
 * timeout, no metrics endpoint, no failpoints). */
static void dg_child_env(const sk_conf_t *conf)
{
        setenv("SECKILL_REDIS_URL", conf->redis_url, 1);
        setenv("SECKILL_MYSQL_URL", conf->mysql_url, 1);
        setenv("SECKILL_KAFKA_BROKERS", conf->kafka_brokers, 1);
        setenv("SECKILL_TOPIC", conf->topic, 1);
        setenv("SECKILL_GROUP_ID", conf->group_id, 1);
        setenv("SECKILL_REDIS_PREFIX", conf->redis_prefix, 1);
        setenv("SECKILL_TOPIC_PARTITIONS", "2", 1);
        setenv("SECKILL_KAFKA_DELIVERY_TIMEOUT_MS", "3000", 1);
        setenv("SECKILL_METRICS_ADDR", "off", 1);
        unsetenv("SECKILL_FAILPOINTS");
}

/* A seckill-consumer child logging to @p log, with the extra environment @p env
 * (NAME, VALUE pairs, NULL-terminated; may be NULL). @returns its pid. */
static pid_t dg_start_consumer(const sk_conf_t *conf, const char *log, const char *const *env)
{
        char path[1024];
        pid_t pid;

        snprintf(path, sizeof(path), "%s/seckill-consumer", getenv("SK_BIN"));
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);

                if (fd >= 0) {
                        dup2(fd, 1);
                        dup2(fd, 2);
                        close(fd);
                }
                dg_child_env(conf);
                for (; env && env[0] && env[1]; env += 2)
                        setenv(env[0], env[1], 1);
                execl(path, path, "-X", "session.timeout.ms=6000", "-X", "heartbeat.interval.ms=500",
                      (char *)NULL);
                _exit(127);
        }
        return pid;
}

/* seckill-admin with @p a1..a4 (a NULL ends them early). @returns its exit status. */
static int dg_admin(const sk_conf_t *conf, const char *a1, const char *a2, const char *a3,
                    const char *a4)
{
        char path[1024];
        int status = 0;
        pid_t pid;

        snprintf(path, sizeof(path), "%s/seckill-admin", getenv("SK_BIN"));
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                dg_child_env(conf);
                execl(path, path, a1, a2, a3, a4, (char *)NULL);
                _exit(127);
        }
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/* The first column of the first row of a query on @p conf's database (-1 without a row
 * or on NULL). Test-only: the SQL is formatted. */
static long long dg_q(const sk_conf_t *conf, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static long long dg_q(const sk_conf_t *conf, const char *fmt, ...)
{
        char sql[1024];
        MYSQL *my = mysql_init(NULL);
        MYSQL_RES *res;
        MYSQL_ROW row;
        long long v = -1;
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(sql, sizeof(sql), fmt, ap);
        va_end(ap);
        ck_assert(mysql_real_connect(my, conf->mysql.host, conf->mysql.user, NULL,
                                     conf->mysql.database, (unsigned)conf->mysql.port, NULL, 0));
        ck_assert_msg(mysql_query(my, sql) == 0, "%s: %s", sql, mysql_error(my));
        res = mysql_store_result(my);
        if (res && (row = mysql_fetch_row(res)) && row[0])
                v = strtoll(row[0], NULL, 10);
        if (res)
                mysql_free_result(res);
        mysql_close(my);
        return v;
}

/* 1 if voucher @p vid's switch row is in @p state (redis, draining, db, rebuilding). */
static int dg_state_is(const sk_conf_t *conf, int64_t vid, const char *state)
{
        return dg_q(conf, "SELECT COUNT(*) FROM tb_seckill_switch WHERE scope = %" PRId64
                    " AND state = '%s'", vid, state) == 1;
}

/* Polls (200 ms) until @p vid is in @p state. @returns 0, or -1 after @p timeout_s. */
static int dg_wait_state(const sk_conf_t *conf, int64_t vid, const char *state, int timeout_s)
{
        int64_t until = sk_mono_ms() + timeout_s * 1000LL;

        while (sk_mono_ms() < until) {
                if (dg_state_is(conf, vid, state))
                        return 0;
                sk_sleep_ms(200, NULL);
        }
        return -1;
}

/* A degrade test's fixture: its own database migrated and a private redis-server into
 * *@p redis_pid (setup); every child reaped, the consumer *@p cons_pid stopped, the
 * private Redis stopped and the test's database, topic and keys removed (teardown). */
static void dg_setup(sk_conf_t *conf, const char *name, pid_t *redis_pid)
{
        sk_test_conf(conf, name);
        sk_test_migrate(conf);
        *redis_pid = ft_private_redis(conf, NULL);
}

static void dg_teardown(sk_conf_t *conf, pid_t *redis_pid, pid_t *cons_pid)
{
        ft_reap_all();
        if (*cons_pid > 0) {
                kill(*cons_pid, SIGTERM);
                waitpid(*cons_pid, NULL, 0);
                *cons_pid = 0;
        }
        ft_private_redis_stop(redis_pid);
        sk_test_cleanup(conf);
}
