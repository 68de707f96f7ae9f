/* check_conf.c: defaults < SECKILL_* env < flags; validation errors (status 2, one line
 * naming the source and range); --print-config masking; binary-specific options; URL
 * parsers. stdout/stderr are captured through pipes. */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sk_test.h"
#include "sk/conf.h"
#include "sk/failpoint.h"
#include "sk/log.h"

static const char *const all_env[] = {
        "SECKILL_REDIS_URL", "SECKILL_MYSQL_URL", "SECKILL_KAFKA_BROKERS", "SECKILL_TOPIC",
        "SECKILL_GROUP_ID", "SECKILL_TOPIC_PARTITIONS", "SECKILL_HTTP_ADDR", "SECKILL_REDIS_PREFIX",
        "SECKILL_KAFKA_DELIVERY_TIMEOUT_MS", "SECKILL_MAX_INFLIGHT", "SECKILL_SOLDOUT_CACHE_MS",
        "SECKILL_WORKER_ID",
        "SECKILL_WORKER_LEASE_MS", "SECKILL_RECONCILE_WINDOW_HOURS", "SECKILL_METRICS_ADDR",
        "SECKILL_LOG_LEVEL", "SECKILL_FAILPOINTS", "SECKILL_BREAKER_FAILURES", "SECKILL_BREAKER_SLOW_MS",
        "SECKILL_BREAKER_OPEN_MS", "SECKILL_BREAKER_HEALTHY_MS", "SECKILL_DEGRADE_DB_CONNS",
        "SECKILL_SWITCH_STALE_MS", "SECKILL_MYSQL_URL_FILE", "SECKILL_REDIS_URL_FILE", "SK_TEST_BATCH", "SK_TEST_NAME", "SK_TEST_DRY",
};

static void clear_env(void)
{
        for (size_t i = 0; i < sizeof(all_env) / sizeof(all_env[0]); i++)
                unsetenv(all_env[i]);
}

/* ---- capture of one fd into a pipe */
typedef struct cap { int fd, saved, rd; } cap_t;

static void cap_begin(cap_t *c, int fd)
{
        int p[2];

        fflush(stdout);
        fflush(stderr);
        ck_assert_int_eq(pipe(p), 0);
        c->fd = fd;
        c->saved = dup(fd);
        c->rd = p[0];
        dup2(p[1], fd);
        close(p[1]);
}

static void cap_end(cap_t *c, char *buf, size_t size)
{
        size_t off = 0;
        ssize_t n;

        fflush(stdout);
        fflush(stderr);
        dup2(c->saved, c->fd);
        close(c->saved);
        while (off + 1 < size && (n = read(c->rd, buf + off, size - 1 - off)) > 0)
                off += (size_t)n;
        buf[off] = '\0';
        close(c->rd);
}

static int count_lines(const char *s)
{
        int n = 0;
        for (; *s; s++)
                n += *s == '\n';
        return n;
}

static char **last_argv;

/* Runs sk_conf_load on a NULL-terminated argv; captures stderr into err. */
static int load(sk_conf_t *conf, char *err, size_t err_size, const sk_opt_t *extra, size_t nextra,
                int *argi, ...)
{
        static char *argv[32];
        int argc = 0, rc, dummy;
        va_list ap;
        cap_t c;

        argv[argc++] = (char *)"seckill-front";
        va_start(ap, argi);
        while (argc < 31 && (argv[argc] = va_arg(ap, char *)) != NULL)
                argc++;
        va_end(ap);
        argv[argc] = NULL;
        cap_begin(&c, STDERR_FILENO);
        rc = sk_conf_load(conf, argc, argv, "seckill-front", NULL, extra, nextra, argi ? argi : &dummy);
        cap_end(&c, err, err_size);
        last_argv = argv;
        return rc;
}
#define LOAD(conf, err, ...) load((conf), (err), sizeof(err), NULL, 0, NULL, __VA_ARGS__, (char *)NULL)

static void setup(void)
{
        clear_env();
}

START_TEST(defaults)
{
        sk_conf_t conf;
        char err[256];

        ck_assert_int_eq(LOAD(&conf, err, NULL), 0);
        ck_assert_str_eq(err, "");
        ck_assert_str_eq(conf.redis_url, "redis://127.0.0.1:6379/0");
        ck_assert_str_eq(conf.redis.host, "127.0.0.1");
        ck_assert_int_eq(conf.redis.port, 6379);
        ck_assert_int_eq(conf.redis.db, 0);
        ck_assert_str_eq(conf.redis.password, "");
        ck_assert_str_eq(conf.mysql_url, "mysql://root@127.0.0.1:3306/seckill");
        ck_assert_str_eq(conf.mysql.user, "root");
        ck_assert_str_eq(conf.mysql.password, "");
        ck_assert_str_eq(conf.mysql.host, "127.0.0.1");
        ck_assert_int_eq(conf.mysql.port, 3306);
        ck_assert_str_eq(conf.mysql.database, "seckill");
        ck_assert_str_eq(conf.kafka_brokers, "127.0.0.1:9092");
        ck_assert_str_eq(conf.topic, "seckill.voucher.order");
        ck_assert_str_eq(conf.dlq_topic, "seckill.voucher.order.dlq");
        ck_assert_str_eq(conf.group_id, "seckill-order-workers");
        ck_assert_int_eq(conf.topic_partitions, 6);
        ck_assert_str_eq(conf.http_addr, "127.0.0.1:8080");
        ck_assert_str_eq(conf.redis_prefix, "seckill");
        ck_assert_int_eq(conf.kafka_delivery_timeout_ms, 5000);
        ck_assert_int_eq(conf.max_inflight, 10000);
        ck_assert_int_eq(conf.breaker_failures, 5);
        ck_assert_int_eq(conf.breaker_slow_ms, 300);
        ck_assert_int_eq(conf.breaker_open_ms, 30000);
        ck_assert_int_eq(conf.breaker_healthy_ms, 10000);
        ck_assert_int_eq(conf.degrade_db_conns, 8);
        ck_assert_int_eq(conf.soldout_cache_ms, 1000);
        ck_assert_int_eq(conf.worker_id, -1);
        ck_assert_int_eq(conf.worker_lease_ms, 30000);
        ck_assert_int_eq(conf.reconcile_window_hours, 48);
        ck_assert_str_eq(conf.metrics_addr, "127.0.0.1:9464");
        ck_assert_int_eq(conf.log_level, SK_INFO);
        ck_assert_int_eq(conf.nkafka_props, 0);
        ck_assert_int_eq(sk_failpoints_active, 0);
}
END_TEST

START_TEST(env_overrides_default_and_flag_overrides_env)
{
        sk_conf_t conf;
        char err[256];
        int argi = 0;

        setenv("SECKILL_TOPIC", "env.topic", 1);
        setenv("SECKILL_WORKER_ID", "7", 1);
        setenv("SECKILL_MAX_INFLIGHT", "55", 1);
        setenv("SECKILL_SOLDOUT_CACHE_MS", "0", 1);
        setenv("SECKILL_REDIS_PREFIX", "envp", 1);
        setenv("SECKILL_LOG_LEVEL", "warn", 1);
        setenv("SECKILL_GROUP_ID", "", 1);              /* empty = unset */
        ck_assert_int_eq(load(&conf, err, sizeof(err), NULL, 0, &argi, "--topic", "flag.topic",
                              "--worker-id=9", "pos1", "--redis-url", "redis://:s3cret@10.0.0.5:6380/3",
                              "pos2", (char *)NULL), 0);
        ck_assert_str_eq(err, "");
        ck_assert_str_eq(conf.topic, "flag.topic");             /* flag > env */
        ck_assert_str_eq(conf.dlq_topic, "flag.topic.dlq");
        ck_assert_int_eq(conf.worker_id, 9);                    /* flag > env */
        ck_assert_int_eq(conf.max_inflight, 55);                /* env > default */
        ck_assert_int_eq(conf.soldout_cache_ms, 0);             /* 0 = off is valid */
        ck_assert_str_eq(conf.redis_prefix, "envp");
        ck_assert_str_eq(conf.group_id, "seckill-order-workers");       /* empty env ignored */
        ck_assert_int_eq(conf.log_level, SK_WARN);
        ck_assert_int_eq(sk_log_level, SK_WARN);
        ck_assert_str_eq(conf.redis.host, "10.0.0.5");
        ck_assert_int_eq(conf.redis.port, 6380);
        ck_assert_int_eq(conf.redis.db, 3);
        ck_assert_str_eq(conf.redis.password, "s3cret");
        /* Positional arguments are permuted to the end, argi points at them. */
        ck_assert_int_eq(argi, 6);
        ck_assert_str_eq(last_argv[6], "pos1");
        ck_assert_str_eq(last_argv[7], "pos2");
}
END_TEST

START_TEST(invalid_env_overridden_by_flag_is_fine)
{
        sk_conf_t conf;
        char err[256];

        setenv("SECKILL_WORKER_ID", "5000", 1);
        ck_assert_int_eq(LOAD(&conf, err, "--worker-id", "12"), 0);
        ck_assert_int_eq(conf.worker_id, 12);
}
END_TEST

typedef struct bad { const char *env, *val, *expect; } bad_t;

static const bad_t bad_env[] = {
        { "SECKILL_WORKER_ID", "5000", "seckill-front: SECKILL_WORKER_ID=5000 is out of range (0..1023)\n" },
        { "SECKILL_WORKER_ID", "-1", "seckill-front: SECKILL_WORKER_ID=-1 is out of range (0..1023)\n" },
        { "SECKILL_WORKER_ID", "abc", "seckill-front: SECKILL_WORKER_ID=abc is out of range (0..1023)\n" },
        { "SECKILL_TOPIC_PARTITIONS", "0", "seckill-front: SECKILL_TOPIC_PARTITIONS=0 is out of range (1..1000)\n" },
        { "SECKILL_KAFKA_DELIVERY_TIMEOUT_MS", "-5",
          "seckill-front: SECKILL_KAFKA_DELIVERY_TIMEOUT_MS=-5 is out of range (100..600000)\n" },
        { "SECKILL_MAX_INFLIGHT", "10x", "seckill-front: SECKILL_MAX_INFLIGHT=10x is out of range (1..1000000)\n" },
        { "SECKILL_SOLDOUT_CACHE_MS", "-1", "seckill-front: SECKILL_SOLDOUT_CACHE_MS=-1 is out of range (0..60000)\n" },
        { "SECKILL_SOLDOUT_CACHE_MS", "60001",
          "seckill-front: SECKILL_SOLDOUT_CACHE_MS=60001 is out of range (0..60000)\n" },
        { "SECKILL_WORKER_LEASE_MS", "-30000",
          "seckill-front: SECKILL_WORKER_LEASE_MS=-30000 is out of range (300..3600000)\n" },
        { "SECKILL_RECONCILE_WINDOW_HOURS", "99999999999",
          "seckill-front: SECKILL_RECONCILE_WINDOW_HOURS=99999999999 is out of range (1..8760)\n" },
        { "SECKILL_LOG_LEVEL", "loud", "seckill-front: SECKILL_LOG_LEVEL=loud is invalid (debug|info|warn|error)\n" },
        { "SECKILL_BREAKER_FAILURES", "0", "seckill-front: SECKILL_BREAKER_FAILURES=0 is out of range (1..1000)\n" },
        { "SECKILL_BREAKER_OPEN_MS", "99",
          "seckill-front: SECKILL_BREAKER_OPEN_MS=99 is out of range (100..3600000)\n" },
        { "SECKILL_REDIS_URL", "redis://127.0.0.1:99999/0", NULL },
        { "SECKILL_REDIS_URL", "http://127.0.0.1:6379", NULL },
        { "SECKILL_REDIS_URL", "redis://:pw@127.0.0.1:6379/16", NULL },
        { "SECKILL_REDIS_URL", "redis://", NULL },
        { "SECKILL_REDIS_URL", "redis-sentinel://127.0.0.1:26390", NULL },
        { "SECKILL_REDIS_URL", "redis-cluster://127.0.0.1:7000/1", NULL },
        { "SECKILL_REDIS_URL", "redis-cluster://127.0.0.1:0", NULL },
        { "SECKILL_REDIS_URL", "redis-cluster://", NULL },
        { "SECKILL_MYSQL_URL", "mysql://root@127.0.0.1:99999/db", NULL },
        { "SECKILL_MYSQL_URL", "mysql://root@127.0.0.1:3306/", NULL },
        { "SECKILL_MYSQL_URL", "mysql://root@127.0.0.1:3306/bad-name", NULL },
        { "SECKILL_MYSQL_URL", "mysql://127.0.0.1:3306/db", NULL },
        { "SECKILL_MYSQL_URL", "not a url", NULL },
        { "SECKILL_HTTP_ADDR", "127.0.0.1:99999", NULL },
        { "SECKILL_HTTP_ADDR", "127.0.0.1", NULL },
        { "SECKILL_METRICS_ADDR", "on", NULL },
        { "SECKILL_REDIS_PREFIX", "a b", NULL },
        { "SECKILL_REDIS_PREFIX", "a*", NULL },
        { "SECKILL_TOPIC", "bad/topic", NULL },
        { "SECKILL_KAFKA_BROKERS", "a b", NULL },
};

START_TEST(env_range_errors)
{
        const bad_t *b = &bad_env[_i];
        sk_conf_t conf;
        char err[512], prefix[128];

        setenv(b->env, b->val, 1);
        ck_assert_int_eq(LOAD(&conf, err, NULL), 2);
        ck_assert_int_eq(count_lines(err), 1);
        if (b->expect) {
                ck_assert_str_eq(err, b->expect);
        } else {
                snprintf(prefix, sizeof(prefix), "seckill-front: %s=", b->env);
                ck_assert_msg(strncmp(err, prefix, strlen(prefix)) == 0, "got: %s", err);
                ck_assert_msg(strstr(err, "invalid") != NULL, "got: %s", err);
        }
}
END_TEST

START_TEST(flag_range_errors)
{
        sk_conf_t conf;
        char err[512];

        ck_assert_int_eq(LOAD(&conf, err, "--worker-id", "5000"), 2);
        ck_assert_str_eq(err, "seckill-front: --worker-id=5000 is out of range (0..1023)\n");
        ck_assert_int_eq(LOAD(&conf, err, "--delivery-timeout-ms=-1"), 2);
        ck_assert_str_eq(err, "seckill-front: --delivery-timeout-ms=-1 is out of range (100..600000)\n");
        ck_assert_int_eq(LOAD(&conf, err, "--partitions", "1001"), 2);
        ck_assert_str_eq(err, "seckill-front: --partitions=1001 is out of range (1..1000)\n");
        ck_assert_int_eq(LOAD(&conf, err, "--worker-lease-ms", "299"), 2);
        ck_assert_int_eq(LOAD(&conf, err, "--window-hours", "0"), 2);
        ck_assert_int_eq(LOAD(&conf, err, "--max-inflight", "0"), 2);
        ck_assert_int_eq(LOAD(&conf, err, "--log-level", "trace"), 2);
        ck_assert_int_eq(LOAD(&conf, err, "--breaker-slow-ms", "0"), 2);
        ck_assert_str_eq(err, "seckill-front: --breaker-slow-ms=0 is out of range (1..60000)\n");
        ck_assert_int_eq(LOAD(&conf, err, "--breaker-healthy-ms", "3600001"), 2);
        /* A URL error masks the password and names the accepted form. */
        ck_assert_int_eq(LOAD(&conf, err, "--redis-url", "redis://:hunter2@h:99999/0"), 2);
        ck_assert_int_eq(count_lines(err), 1);
        ck_assert_ptr_null(strstr(err, "hunter2"));
        ck_assert_ptr_nonnull(strstr(err, "--redis-url=redis://:***@h:99999/0 is invalid"));
        ck_assert_ptr_nonnull(strstr(err, "1..65535"));
        ck_assert_int_eq(LOAD(&conf, err, "--mysql-url", "mysql://u:hunter2@h:0/db"), 2);
        ck_assert_ptr_null(strstr(err, "hunter2"));
        ck_assert_ptr_nonnull(strstr(err, "--mysql-url=mysql://u:***@h:0/db is invalid"));
        /* Issue 23: four shapes that leaked before, whatever the password's characters:
         * a '/' (the authority used to end there), '?', '#' or '@' in it, and a userinfo
         * without a user part or without ':' (a bare password). */
        {
                static const char *const bad[][2] = {
                        { "--mysql-url", "mysql://u:hun/ter2@h:0/db" },
                        { "--mysql-url", "mysql://u:hun?ter2@h:0" },
                        { "--redis-url", "redis://:hun#ter2@h:99999/0" },
                        { "--redis-url", "redis://hunter2@h:99999/0" },
                        { "--redis-url", "redis://u:hun@ter2@h:99999" },
                        /* a '/' or '?' in a Redis password: the port, the database or
                         * the query was quoted from the password's text */
                        { "--redis-url", "redis://u:hun/ter2@h:99999" },
                        { "--redis-url", "redis://u:hun?x=ter2@h:99999" },
                        { "--redis-url", "redis://:hunter2/@h:1/99" },
                        { "--mysql-url", "mysql://:hunter2@h:0/db" },
                };
                for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                        ck_assert_int_eq(LOAD(&conf, err, bad[i][0], bad[i][1]), 2);
                        ck_assert_int_eq(count_lines(err), 1);
                        ck_assert_msg(!strstr(err, "ter2"), "%s leaked: %s", bad[i][1], err);
                        ck_assert_ptr_nonnull(strstr(err, "***"));
                }
        }
}
END_TEST

START_TEST(unknown_and_missing_flags)
{
        sk_conf_t conf;
        char err[512];

        ck_assert_int_eq(LOAD(&conf, err, "--no-such-flag"), 2);
        ck_assert_str_eq(err, "seckill-front: unknown option --no-such-flag (see --help)\n");
        ck_assert_int_eq(LOAD(&conf, err, "-q"), 2);
        ck_assert_str_eq(err, "seckill-front: unknown option -q (see --help)\n");
        ck_assert_int_eq(LOAD(&conf, err, "--topic"), 2);
        ck_assert_str_eq(err, "seckill-front: option --topic needs a value (see --help)\n");
        ck_assert_int_eq(LOAD(&conf, err, "-X"), 2);
        ck_assert_int_eq(count_lines(err), 1);
        ck_assert_int_eq(LOAD(&conf, err, "-X", "novalue"), 2);
        ck_assert_int_eq(count_lines(err), 1);
}
END_TEST

START_TEST(kafka_props)
{
        sk_conf_t conf;
        char err[256];

        ck_assert_int_eq(LOAD(&conf, err, "-X", "linger.ms=5", "-Xsession.timeout.ms=6000",
                              "-X", "client.id=a=b"), 0);
        ck_assert_int_eq(conf.nkafka_props, 3);
        ck_assert_str_eq(conf.kafka_props[0][0], "linger.ms");
        ck_assert_str_eq(conf.kafka_props[0][1], "5");
        ck_assert_str_eq(conf.kafka_props[1][0], "session.timeout.ms");
        ck_assert_str_eq(conf.kafka_props[1][1], "6000");
        ck_assert_str_eq(conf.kafka_props[2][0], "client.id");
        ck_assert_str_eq(conf.kafka_props[2][1], "a=b");
}
END_TEST

static int run_stdout(sk_conf_t *conf, char *out, size_t out_size, const sk_opt_t *extra, size_t nextra,
                      char **argv, int argc)
{
        cap_t c;
        int rc, argi;

        cap_begin(&c, STDOUT_FILENO);
        rc = sk_conf_load(conf, argc, argv, "seckill-front", "ARGS", extra, nextra, &argi);
        cap_end(&c, out, out_size);
        return rc;
}

START_TEST(print_config_masks_passwords)
{
        static char out[8192];
        sk_conf_t conf;
        char *argv[] = { (char *)"x", (char *)"--print-config",
                         (char *)"--redis-url", (char *)"redis://:topsecret@r.example:6390/2",
                         (char *)"-X", (char *)"sasl.password=kpass",
                         (char *)"-X", (char *)"ssl.key.pem=-----BEGIN PRIVATE KEY-----PRIVATEKEYBYTES", NULL };

        setenv("SECKILL_MYSQL_URL", "mysql://app:dbsecret@db.example:3307/shop", 1);
        ck_assert_int_eq(run_stdout(&conf, out, sizeof(out), NULL, 0, argv, 8), 1);
        ck_assert_ptr_null(strstr(out, "topsecret"));
        ck_assert_ptr_null(strstr(out, "dbsecret"));
        ck_assert_ptr_null(strstr(out, "kpass"));
        ck_assert_ptr_nonnull(strstr(out, "SECKILL_REDIS_URL=redis://:***@r.example:6390/2\n"));
        ck_assert_ptr_nonnull(strstr(out, "SECKILL_MYSQL_URL=mysql://app:***@db.example:3307/shop\n"));
        ck_assert_ptr_nonnull(strstr(out, "SECKILL_WORKER_ID=   # unset"));
        ck_assert_ptr_nonnull(strstr(out, "SECKILL_TOPIC=seckill.voucher.order\n"));
        ck_assert_ptr_nonnull(strstr(out, "dlq_topic=seckill.voucher.order.dlq\n"));
        ck_assert_ptr_nonnull(strstr(out, "-X sasl.password=***\n"));
        ck_assert_ptr_nonnull(strstr(out, "-X ssl.key.pem=***\n"));
        ck_assert_ptr_null(strstr(out, "PRIVATEKEYBYTES"));
        /* The parsed structs still hold the real passwords. */
        ck_assert_str_eq(conf.redis.password, "topsecret");
        ck_assert_str_eq(conf.mysql.password, "dbsecret");
        ck_assert_str_eq(conf.mysql.user, "app");
        ck_assert_int_eq(conf.mysql.port, 3307);
}
END_TEST

START_TEST(help_and_version)
{
        static char out[16384];
        sk_conf_t conf;
        char name[8] = "";
        int dst = 0;
        sk_opt_t extra[] = {
                SK_OPT_I("batch-max", "SK_TEST_BATCH", &dst, 1, 10, 3, NULL, "max batch"),
                SK_OPT_I("lease", NULL, &dst, 1, 10, -1, "derived", "a lease"),
                SK_OPT_S("who", NULL, name, NULL, "anyone", "a name"),
                SK_OPT_B("dry-run", NULL, &dst, "dry run"),
        };
        char *argv1[] = { (char *)"x", (char *)"--help", NULL };
        char *argv2[] = { (char *)"x", (char *)"--version", NULL };
        char *argv3[] = { (char *)"x", (char *)"-h", NULL };

        ck_assert_int_eq(run_stdout(&conf, out, sizeof(out), extra, 4, argv1, 2), 1);
        ck_assert_ptr_nonnull(strstr(out, "Usage: seckill-front [options] ARGS\n"));
        ck_assert_ptr_nonnull(strstr(out, "--worker-id"));
        ck_assert_ptr_nonnull(strstr(out, "env SECKILL_WORKER_ID, default: the lowest free id is leased\n"));
        ck_assert_ptr_nonnull(strstr(out, "env SECKILL_TOPIC_PARTITIONS, default 6\n"));
        ck_assert_ptr_nonnull(strstr(out, "--batch-max N"));
        ck_assert_ptr_nonnull(strstr(out, "max batch"));
        /* Each default rendered from its row, never from the help text. */
        ck_assert_ptr_nonnull(strstr(out, "env SK_TEST_BATCH, default 3 (1..10)\n"));
        ck_assert_ptr_nonnull(strstr(out, "   default: derived (1..10)\n"));
        ck_assert_ptr_nonnull(strstr(out, "   default: anyone\n"));
        ck_assert_ptr_nonnull(strstr(out, "   default off\n"));
        ck_assert_ptr_null(strstr(out, "(default"));
        ck_assert_ptr_nonnull(strstr(out, "--print-config"));
        ck_assert_int_eq(run_stdout(&conf, out, sizeof(out), NULL, 0, argv3, 2), 1);
        ck_assert_ptr_nonnull(strstr(out, "Usage:"));
        ck_assert_int_eq(run_stdout(&conf, out, sizeof(out), NULL, 0, argv2, 2), 1);
#ifdef SK_FAILPOINTS_ENABLED
        ck_assert_str_eq(out, "seckill-front " SK_VERSION " (failpoints compiled in: a testing build, DESIGN.md 11)\n");
#else
        ck_assert_str_eq(out, "seckill-front " SK_VERSION "\n");
#endif
        /* --help wins even over an invalid environment. */
        setenv("SECKILL_WORKER_ID", "5000", 1);
        ck_assert_int_eq(run_stdout(&conf, out, sizeof(out), NULL, 0, argv1, 2), 1);
}
END_TEST

START_TEST(help_markdown)
{
        static char out[32768];
        sk_conf_t conf;
        int n = 0;
        char who[8];
        sk_opt_t extra[] = {
                SK_OPT_I("batch-max", "SK_TEST_BATCH", &n, 1, 10, 3, NULL, "max | batch"),
                SK_OPT_S("who", NULL, who, NULL, "anyone", "a name"),
                SK_OPT_B("dry-run", NULL, &n, "dry run"),
        };
        char *argv[] = { (char *)"x", (char *)"--help-markdown", NULL };

        /* The option tables of docs/OPERATIONS.md: every common option (whoever uses
         * it), then the binary's own; '|' escaped, defaults from the rows. */
        ck_assert_int_eq(run_stdout(&conf, out, sizeof(out), extra, 3, argv, 2), 1);
        ck_assert_ptr_nonnull(strstr(out, "<!-- common -->\n| variable | flag | used by | default | range | meaning |\n"));
        ck_assert_ptr_nonnull(strstr(out, "| `SECKILL_WORKER_ID` | `--worker-id` | front, admin | the lowest free id "
                                          "is leased | 0..1023 | snowflake worker id, leased in the database; "));
        ck_assert_ptr_nonnull(strstr(out, "| `SECKILL_LOG_LEVEL` | `--log-level` | every binary | `info` | `LEVEL` | "
                                          "debug\\|info\\|warn\\|error |\n"));
        ck_assert_ptr_nonnull(strstr(out, "| `SECKILL_CURRENCY` | `--currency` | admin | `CNY` |"));
        ck_assert_ptr_nonnull(strstr(out, "| `SECKILL_FAILPOINTS` |"));
        ck_assert_ptr_nonnull(strstr(out, "<!-- seckill-front -->\n| variable | flag | binary |"));
        ck_assert_ptr_nonnull(strstr(out, "| `SK_TEST_BATCH` | `--batch-max` | front | `3` | 1..10 | max \\| batch |\n"));
        ck_assert_ptr_nonnull(strstr(out, "| — | `--who` | front | anyone | text, max 7 chars | a name |\n"));
        ck_assert_ptr_nonnull(strstr(out, "| — | `--dry-run` | front | off | flag | dry run |\n"));
}
END_TEST

START_TEST(extra_options)
{
        sk_conf_t conf;
        char err[256];
        int batch = 0, dry = 1, both = 0;
        char name[8] = "";
        sk_opt_t extra[] = {
                SK_OPT_I("batch-max", "SK_TEST_BATCH", &batch, 1, 500, 50, NULL, "max batch"),
                SK_OPT_S("name", "SK_TEST_NAME", name, "dflt", NULL, "a name"),
                SK_OPT_B("dry-run", "SK_TEST_DRY", &dry, "dry run"),
                SK_OPT_B("both", NULL, &both, "flag only"),
        };
        int argi = 0;

        /* Defaults are the rows' (written into the destinations by the loader). */
        ck_assert_int_eq(load(&conf, err, sizeof(err), extra, 4, &argi, (char *)NULL), 0);
        ck_assert_int_eq(batch, 50);
        ck_assert_str_eq(name, "dflt");
        ck_assert_int_eq(dry, 0);

        setenv("SK_TEST_BATCH", "70", 1);
        setenv("SK_TEST_NAME", "envname", 1);
        setenv("SK_TEST_DRY", "true", 1);
        ck_assert_int_eq(load(&conf, err, sizeof(err), extra, 4, &argi, (char *)NULL), 0);
        ck_assert_int_eq(batch, 70);
        ck_assert_str_eq(name, "envname");
        ck_assert_int_eq(dry, 1);

        dry = 0;
        ck_assert_int_eq(load(&conf, err, sizeof(err), extra, 4, &argi, "--batch-max", "80", "--name=fl",
                              "--dry-run", "--both", "verify", "42", (char *)NULL), 0);
        ck_assert_int_eq(batch, 80);
        ck_assert_str_eq(name, "fl");
        ck_assert_int_eq(dry, 1);
        ck_assert_int_eq(both, 1);
        ck_assert_int_eq(argi, 6);

        ck_assert_int_eq(load(&conf, err, sizeof(err), extra, 4, &argi, "--batch-max", "501", (char *)NULL), 2);
        ck_assert_str_eq(err, "seckill-front: --batch-max=501 is out of range (1..500)\n");
        unsetenv("SK_TEST_BATCH");
        setenv("SK_TEST_BATCH", "0", 1);
        ck_assert_int_eq(load(&conf, err, sizeof(err), extra, 4, &argi, (char *)NULL), 2);
        ck_assert_str_eq(err, "seckill-front: SK_TEST_BATCH=0 is out of range (1..500)\n");
        unsetenv("SK_TEST_BATCH");
        ck_assert_int_eq(load(&conf, err, sizeof(err), extra, 4, &argi, "--name", "toolongname", (char *)NULL), 2);
        ck_assert_str_eq(err, "seckill-front: --name=toolongname is too long (max 7 chars)\n");
        setenv("SK_TEST_DRY", "maybe", 1);
        ck_assert_int_eq(load(&conf, err, sizeof(err), extra, 4, &argi, (char *)NULL), 2);
        ck_assert_int_eq(count_lines(err), 1);
        /* A BOOL flag takes no argument. */
        unsetenv("SK_TEST_DRY");
        ck_assert_int_eq(load(&conf, err, sizeof(err), extra, 4, &argi, "--dry-run=1", (char *)NULL), 2);
}
END_TEST

START_TEST(failpoints_env)
{
        sk_conf_t conf;
        char err[512];

#ifndef SK_FAILPOINTS_ENABLED
        /* A build without failpoints refuses a spec rather than inject nothing (DESIGN.md 15). */
        setenv("SECKILL_FAILPOINTS", "front.after_deduct=2*error", 1);
        ck_assert_int_eq(LOAD(&conf, err, NULL), 2);
        ck_assert_int_eq(count_lines(err), 1);
        ck_assert_ptr_nonnull(strstr(err, "seckill-front: SECKILL_FAILPOINTS is set but this build has no failpoints"));
        setenv("SECKILL_FAILPOINTS", "", 1);
        ck_assert_int_eq(LOAD(&conf, err, NULL), 0);
        return;
#endif
        setenv("SECKILL_FAILPOINTS", "front.after_deduct=explode", 1);
        ck_assert_int_eq(LOAD(&conf, err, NULL), 2);
        ck_assert_int_eq(count_lines(err), 1);
        ck_assert_ptr_nonnull(strstr(err, "seckill-front: SECKILL_FAILPOINTS is invalid"));
        setenv("SECKILL_FAILPOINTS", "front.after_deduct=2*error", 1);
        ck_assert_int_eq(LOAD(&conf, err, NULL), 0);
        ck_assert_int_eq(sk_failpoints_active, 1);
        ck_assert_int_eq(sk_failpoint_eval("front.after_deduct"), 1);
}
END_TEST

START_TEST(redis_url_parse)
{
        sk_redis_url_t r;
        char err[256];

        ck_assert_int_eq(sk_redis_url_parse("redis://localhost", &r, err, sizeof(err)), 0);
        ck_assert_str_eq(r.host, "localhost");
        ck_assert_int_eq(r.port, 6379);
        ck_assert_int_eq(r.db, 0);
        ck_assert_int_eq(sk_redis_url_parse("redis://:p%40ss@[::1]:7000/15", &r, err, sizeof(err)), 0);
        ck_assert_str_eq(r.host, "::1");
        ck_assert_int_eq(r.port, 7000);
        ck_assert_int_eq(r.db, 15);
        ck_assert_str_eq(r.password, "p@ss");
        ck_assert_int_eq(sk_redis_url_parse("redis://default:pw@h:1/", &r, err, sizeof(err)), 0);
        ck_assert_str_eq(r.password, "pw");
        ck_assert_int_eq(r.user[0], '\0');
        ck_assert_int_eq(r.kind, SK_REDIS_STANDALONE);
        ck_assert_int_eq(r.nseeds, 1);
        /* An ACL user (AUTH user pass, DESIGN.md 4b). */
        ck_assert_int_eq(sk_redis_url_parse("redis://app%3A1:pw@h", &r, err, sizeof(err)), 0);
        ck_assert_str_eq(r.user, "app:1");
        ck_assert_str_eq(r.password, "pw");
        /* The last '@' ends the userinfo: '/', '?', '#' and '@' may stand in a password. */
        ck_assert_int_eq(sk_redis_url_parse("redis://:p/w?d#x@y@h:7000/3", &r, err, sizeof(err)), 0);
        ck_assert_str_eq(r.password, "p/w?d#x@y");
        ck_assert_str_eq(r.host, "h");
        ck_assert_int_eq(r.port, 7000);
        ck_assert_int_eq(r.db, 3);
        ck_assert_int_eq(sk_redis_url_parse("redis-sentinel://:a/b@s1:1,s2:2/mymaster?db=2", &r, err,
                                            sizeof(err)), 0);
        ck_assert_str_eq(r.password, "a/b");
        ck_assert_str_eq(r.master, "mymaster");
        ck_assert_int_eq(r.db, 2);
        ck_assert_int_eq(sk_redis_url_parse("redis://pw@h", &r, err, sizeof(err)), -1);
        ck_assert_int_eq(sk_redis_url_parse("redis://h1:1,h2:2", &r, err, sizeof(err)), -1);
        ck_assert_ptr_nonnull(strstr(err, "one host"));
        ck_assert_int_eq(sk_redis_url_parse("redis://h:0", &r, err, sizeof(err)), -1);
        ck_assert_int_eq(sk_redis_url_parse("redis://h:65536", &r, err, sizeof(err)), -1);
        ck_assert_int_eq(sk_redis_url_parse("redis://h:12ab", &r, err, sizeof(err)), -1);
        ck_assert_int_eq(sk_redis_url_parse("redis://h/x", &r, err, sizeof(err)), -1);
        ck_assert_int_eq(sk_redis_url_parse("redis://h/-1", &r, err, sizeof(err)), -1);
        ck_assert_int_eq(sk_redis_url_parse("redis://h:+1", &r, err, sizeof(err)), -1);
        ck_assert_int_eq(sk_redis_url_parse("redis://:p%4@h", &r, err, sizeof(err)), -1);
        ck_assert_int_eq(sk_redis_url_parse(NULL, &r, err, sizeof(err)), -1);
        ck_assert_str_ne(err, "");
}
END_TEST

START_TEST(redis_url_topologies)
{
        sk_redis_url_t r;
        char err[256];

        /* Sentinel: seeds with the Sentinel default port, master name, optional db. */
        ck_assert_int_eq(sk_redis_url_parse("redis-sentinel://u:p@10.0.0.1:26390,s2,[::1]:26392/mymaster?db=3",
                                            &r, err, sizeof(err)), 0);
        ck_assert_int_eq(r.kind, SK_REDIS_SENTINEL);
        ck_assert_int_eq(r.nseeds, 3);
        ck_assert_str_eq(r.seeds[0].host, "10.0.0.1");
        ck_assert_int_eq(r.seeds[0].port, 26390);
        ck_assert_str_eq(r.seeds[1].host, "s2");
        ck_assert_int_eq(r.seeds[1].port, 26379);
        ck_assert_str_eq(r.seeds[2].host, "::1");
        ck_assert_int_eq(r.seeds[2].port, 26392);
        ck_assert_str_eq(r.host, "10.0.0.1");
        ck_assert_str_eq(r.master, "mymaster");
        ck_assert_int_eq(r.db, 3);
        ck_assert_str_eq(r.user, "u");
        ck_assert_str_eq(r.password, "p");
        ck_assert_int_eq(sk_redis_url_parse("redis-sentinel://h:1/m", &r, err, sizeof(err)), 0);
        ck_assert_int_eq(r.db, 0);
        ck_assert_str_eq(r.master, "m");
        /* Missing master name. */
        ck_assert_int_eq(sk_redis_url_parse("redis-sentinel://h:1", &r, err, sizeof(err)), -1);
        ck_assert_ptr_nonnull(strstr(err, "missing master name"));
        ck_assert_int_eq(sk_redis_url_parse("redis-sentinel://h:1/", &r, err, sizeof(err)), -1);
        ck_assert_ptr_nonnull(strstr(err, "missing master name"));
        ck_assert_int_eq(sk_redis_url_parse("redis-sentinel://h:1/?db=1", &r, err, sizeof(err)), -1);
        ck_assert_int_eq(sk_redis_url_parse("redis-sentinel://h:1/m?db=16", &r, err, sizeof(err)), -1);
        ck_assert_int_eq(sk_redis_url_parse("redis-sentinel://h:1/m?x=1", &r, err, sizeof(err)), -1);
        ck_assert_int_eq(sk_redis_url_parse("redis-sentinel://h:1/m/x", &r, err, sizeof(err)), -1);

        /* Cluster: seeds with 6379 default, db 0 only. */
        ck_assert_int_eq(sk_redis_url_parse("redis-cluster://127.0.0.1:7000,127.0.0.1:7001,h",
                                            &r, err, sizeof(err)), 0);
        ck_assert_int_eq(r.kind, SK_REDIS_CLUSTER);
        ck_assert_int_eq(r.nseeds, 3);
        ck_assert_int_eq(r.seeds[1].port, 7001);
        ck_assert_int_eq(r.seeds[2].port, 6379);
        ck_assert_int_eq(r.port, 7000);
        ck_assert_int_eq(r.db, 0);
        ck_assert_int_eq(sk_redis_url_parse("redis-cluster://:pw@h:7000/0", &r, err, sizeof(err)), 0);
        ck_assert_str_eq(r.password, "pw");
        ck_assert_int_eq(sk_redis_url_parse("redis-cluster://h:7000/1", &r, err, sizeof(err)), -1);
        ck_assert_ptr_nonnull(strstr(err, "only database 0"));
        /* Empty seed list, empty entries, bad ports, too many seeds. */
        ck_assert_int_eq(sk_redis_url_parse("redis-cluster://", &r, err, sizeof(err)), -1);
        ck_assert_ptr_nonnull(strstr(err, "empty host list"));
        ck_assert_int_eq(sk_redis_url_parse("redis-cluster://:pw@", &r, err, sizeof(err)), -1);
        ck_assert_int_eq(sk_redis_url_parse("redis-sentinel:///m", &r, err, sizeof(err)), -1);
        ck_assert_int_eq(sk_redis_url_parse("redis-cluster://h:1,,h:2", &r, err, sizeof(err)), -1);
        ck_assert_int_eq(sk_redis_url_parse("redis-cluster://h:1,", &r, err, sizeof(err)), -1);
        ck_assert_int_eq(sk_redis_url_parse("redis-cluster://h:1,h:0", &r, err, sizeof(err)), -1);
        ck_assert_int_eq(sk_redis_url_parse("redis-cluster://h:65536", &r, err, sizeof(err)), -1);
        ck_assert_int_eq(sk_redis_url_parse("redis-sentinel://h:x/m", &r, err, sizeof(err)), -1);
        ck_assert_int_eq(sk_redis_url_parse("redis-cluster://h:1?db=0", &r, err, sizeof(err)), -1);
        ck_assert_int_eq(sk_redis_url_parse("redis-cluster://a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q",
                                            &r, err, sizeof(err)), -1);
        ck_assert_int_eq(sk_redis_url_parse("rediss://h", &r, err, sizeof(err)), -1);
}
END_TEST

START_TEST(redis_url_conf_errors)
{
        sk_conf_t conf;
        char err[512];

        setenv("SECKILL_REDIS_URL", "redis-sentinel://:hunter2@h:26390", 1);
        ck_assert_int_eq(LOAD(&conf, err, NULL), 2);
        ck_assert_int_eq(count_lines(err), 1);
        ck_assert_ptr_nonnull(strstr(err, "missing master name"));
        ck_assert_ptr_null(strstr(err, "hunter2"));
        setenv("SECKILL_REDIS_URL", "redis-cluster://h:7000/2", 1);
        ck_assert_int_eq(LOAD(&conf, err, NULL), 2);
        ck_assert_ptr_nonnull(strstr(err, "SECKILL_REDIS_URL"));
        setenv("SECKILL_REDIS_URL", "redis-cluster://127.0.0.1:7000,127.0.0.1:7001", 1);
        ck_assert_int_eq(LOAD(&conf, err, NULL), 0);
        ck_assert_int_eq(conf.redis.kind, SK_REDIS_CLUSTER);
        ck_assert_int_eq(conf.redis.nseeds, 2);
        unsetenv("SECKILL_REDIS_URL");
}
END_TEST

START_TEST(mysql_url_parse)
{
        sk_mysql_url_t m;
        char err[256];

        ck_assert_int_eq(sk_mysql_url_parse("mysql://u@h/d_1", &m, err, sizeof(err)), 0);
        ck_assert_str_eq(m.user, "u");
        ck_assert_str_eq(m.password, "");
        ck_assert_str_eq(m.host, "h");
        ck_assert_int_eq(m.port, 3306);
        ck_assert_str_eq(m.database, "d_1");
        ck_assert_int_eq(sk_mysql_url_parse("mysql://u:p%3Aw@db:13306/x", &m, err, sizeof(err)), 0);
        ck_assert_str_eq(m.password, "p:w");
        ck_assert_int_eq(m.port, 13306);
        ck_assert_int_eq(sk_mysql_url_parse("mysql://u:@h/x", &m, err, sizeof(err)), 0);
        ck_assert_str_eq(m.password, "");
        ck_assert_int_eq(sk_mysql_url_parse("mysql://u@h", &m, err, sizeof(err)), -1);
        ck_assert_int_eq(sk_mysql_url_parse("mysql://@h/x", &m, err, sizeof(err)), -1);
        ck_assert_int_eq(sk_mysql_url_parse("mysql://u@h/x?ssl=1", &m, err, sizeof(err)), -1);
        ck_assert_int_eq(sk_mysql_url_parse("mysql://u@h/x;drop", &m, err, sizeof(err)), -1);
        ck_assert_int_eq(sk_mysql_url_parse("mysql://u@/x", &m, err, sizeof(err)), -1);
        ck_assert_int_eq(sk_mysql_url_parse("mysql://u@h/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                                            &m, err, sizeof(err)), -1);
}
END_TEST

/* DESIGN.md 15 "Transport": the TLS options of a MySQL URL. */
START_TEST(mysql_url_tls)
{
        sk_mysql_url_t m;
        char err[256];

        ck_assert_int_eq(sk_mysql_url_parse("mysql://u@h/x", &m, err, sizeof(err)), 0);
        ck_assert_int_eq(m.ssl_mode, SK_MYSQL_SSL_OFF);
        ck_assert_int_eq(sk_mysql_url_parse("mysql://u@h/x?ssl-ca=/etc/ca%20x.pem&ssl-mode=VERIFY_IDENTITY",
                                            &m, err, sizeof(err)), 0);
        ck_assert_int_eq(m.ssl_mode, SK_MYSQL_SSL_VERIFY_IDENTITY);
        ck_assert_str_eq(m.ssl_ca, "/etc/ca x.pem");
        /* ssl-ca alone: verify against it. */
        ck_assert_int_eq(sk_mysql_url_parse("mysql://u@h/x?ssl-ca=/c", &m, err, sizeof(err)), 0);
        ck_assert_int_eq(m.ssl_mode, SK_MYSQL_SSL_VERIFY_IDENTITY);
        ck_assert_int_eq(sk_mysql_url_parse("mysql://u@h/x?password-file=/p&ssl-mode=REQUIRED", &m, err,
                                            sizeof(err)), 0);
        ck_assert_int_eq(m.ssl_mode, SK_MYSQL_SSL_REQUIRED);
        ck_assert_str_eq(m.password_file, "/p");
        ck_assert_int_eq(sk_mysql_url_parse("mysql://u@h/x?ssl-cert=/c&ssl-key=/k", &m, err, sizeof(err)), 0);
        ck_assert_int_eq(m.ssl_mode, SK_MYSQL_SSL_REQUIRED);
        /* Refused: VERIFY_CA (none in Connector/C 3.3), VERIFY_IDENTITY without a CA, a
         * cert without its key, a repeated option, an unknown mode or option. */
        ck_assert_int_eq(sk_mysql_url_parse("mysql://u@h/x?ssl-mode=VERIFY_CA&ssl-ca=/c", &m, err, sizeof(err)), -1);
        ck_assert_int_eq(sk_mysql_url_parse("mysql://u@h/x?ssl-mode=VERIFY_IDENTITY", &m, err, sizeof(err)), -1);
        ck_assert_ptr_nonnull(strstr(err, "needs ssl-ca"));
        ck_assert_int_eq(sk_mysql_url_parse("mysql://u@h/x?ssl-cert=/c", &m, err, sizeof(err)), -1);
        ck_assert_int_eq(sk_mysql_url_parse("mysql://u@h/x?ssl-ca=/a&ssl-ca=/b", &m, err, sizeof(err)), -1);
        ck_assert_int_eq(sk_mysql_url_parse("mysql://u@h/x?ssl-mode=REQUIRED&ssl-mode=REQUIRED", &m, err,
                                            sizeof(err)), -1);
        ck_assert_int_eq(sk_mysql_url_parse("mysql://u@h/x?ssl-mode=", &m, err, sizeof(err)), -1);
        ck_assert_int_eq(sk_mysql_url_parse("mysql://u@h/x?ssl-capath=/d", &m, err, sizeof(err)), -1);
}
END_TEST

/* DESIGN.md 16: several hosts, mysql-galera://, ?password-file=. */
START_TEST(mysql_url_multi_host)
{
        sk_mysql_url_t m;
        char err[256];

        ck_assert_int_eq(sk_mysql_url_parse("mysql://u:p@h1:3311,h2,[::1]:3313/db", &m, err, sizeof(err)), 0);
        ck_assert_int_eq(m.nhosts, 3);
        ck_assert_str_eq(m.hosts[0].host, "h1");
        ck_assert_int_eq(m.hosts[0].port, 3311);
        ck_assert_str_eq(m.hosts[1].host, "h2");
        ck_assert_int_eq(m.hosts[1].port, 3306);
        ck_assert_str_eq(m.hosts[2].host, "::1");
        ck_assert_int_eq(m.hosts[2].port, 3313);
        ck_assert_str_eq(m.host, "h1");         /* host/port = the first node */
        ck_assert_int_eq(m.port, 3311);
        ck_assert_int_eq(m.galera_only, 0);
        ck_assert_str_eq(m.password_file, "");
        ck_assert_int_eq(sk_mysql_url_parse("mysql://u@h/d", &m, err, sizeof(err)), 0);
        ck_assert_int_eq(m.nhosts, 1);
        ck_assert_int_eq(sk_mysql_url_parse("mysql-galera://u@a:1,b:2/d", &m, err, sizeof(err)), 0);
        ck_assert_int_eq(m.galera_only, 1);
        ck_assert_int_eq(m.nhosts, 2);
        ck_assert_int_eq(sk_mysql_url_parse("mysql://u@h/d?password-file=/run/s%20x/pw", &m, err, sizeof(err)), 0);
        ck_assert_str_eq(m.password_file, "/run/s x/pw");
        ck_assert_str_eq(m.database, "d");
        ck_assert_str_eq(m.password, "");
        /* 8 hosts at most; no empty host; no unknown option; one password source. */
        ck_assert_int_eq(sk_mysql_url_parse("mysql://u@a,b,c,d,e,f,g,h/d", &m, err, sizeof(err)), 0);
        ck_assert_int_eq(m.nhosts, 8);
        ck_assert_int_eq(sk_mysql_url_parse("mysql://u@a,b,c,d,e,f,g,h,i/d", &m, err, sizeof(err)), -1);
        ck_assert_ptr_nonnull(strstr(err, "more than 8 hosts"));
        ck_assert_int_eq(sk_mysql_url_parse("mysql://u@a,,b/d", &m, err, sizeof(err)), -1);
        ck_assert_int_eq(sk_mysql_url_parse("mysql://u@a,/d", &m, err, sizeof(err)), -1);
        ck_assert_int_eq(sk_mysql_url_parse("mysql://u@a:1,b:0/d", &m, err, sizeof(err)), -1);
        ck_assert_int_eq(sk_mysql_url_parse("mysql://u@a/d?password-file=", &m, err, sizeof(err)), -1);
        ck_assert_int_eq(sk_mysql_url_parse("mysql://u@a/d?password-file=/x&password-file=/y", &m, err,
                                            sizeof(err)), -1);
        ck_assert_int_eq(sk_mysql_url_parse("mysql://u:secret1@a/d?password-file=/x", &m, err, sizeof(err)), -1);
        ck_assert_ptr_nonnull(strstr(err, "give one"));
        ck_assert_ptr_null(strstr(err, "secret1"));
        ck_assert_int_eq(sk_mysql_url_parse("mysql-galeraX://u@a/d", &m, err, sizeof(err)), -1);
        ck_assert_int_eq(sk_mysql_url_parse("mysqlx://u@a/d", &m, err, sizeof(err)), -1);
}
END_TEST

/* ?password-file=PATH: the password comes from the file (one trailing newline dropped),
 * and neither it nor the URL shows it in --print-config or an error line. */
START_TEST(mysql_password_file)
{
        static char out[8192];
        char path[64] = "/tmp/check_conf_pw_XXXXXX", url[160], err[1024];
        sk_conf_t conf;
        int fd = mkstemp(path);
        char *argv[] = { (char *)"x", (char *)"--print-config", (char *)"--mysql-url", url, NULL };

        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, "fi!e@secret\n", 12), 12);
        close(fd);
        snprintf(url, sizeof(url), "mysql://app@db1:3311,db2:3312,db3:3313/shop?password-file=%s", path);
        ck_assert_int_eq(LOAD(&conf, err, "--mysql-url", url), 0);
        ck_assert_str_eq(conf.mysql.password, "fi!e@secret");
        ck_assert_int_eq(conf.mysql.nhosts, 3);
        ck_assert_int_eq(conf.mysql.hosts[2].port, 3313);
        ck_assert_int_eq(run_stdout(&conf, out, sizeof(out), NULL, 0, argv, 4), 1);
        ck_assert_ptr_null(strstr(out, "secret"));
        ck_assert_ptr_nonnull(strstr(out, "SECKILL_MYSQL_URL="));
        /* A multi-host URL with a password in it: masked, the hosts readable. */
        ck_assert_int_eq(LOAD(&conf, err, "--mysql-url", "mysql://app:hunter2@h1:1,h2:99999/db"), 2);
        ck_assert_ptr_null(strstr(err, "hunter2"));
        ck_assert_ptr_nonnull(strstr(err, "mysql://app:***@h1:1,h2:99999/db is invalid"));
        snprintf(url, sizeof(url), "mysql://app:s3cr3tpw@h1:1,h2:2/shop");
        ck_assert_int_eq(run_stdout(&conf, out, sizeof(out), NULL, 0, argv, 4), 1);
        ck_assert_ptr_null(strstr(out, "s3cr3tpw"));
        ck_assert_ptr_nonnull(strstr(out, "SECKILL_MYSQL_URL=mysql://app:***@h1:1,h2:2/shop\n"));
        /* Empty, too long, missing: one clear line naming the path. */
        fd = open(path, O_WRONLY | O_TRUNC);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, "\n", 1), 1);
        close(fd);
        snprintf(url, sizeof(url), "mysql://app@db1/shop?password-file=%s", path);
        ck_assert_int_eq(LOAD(&conf, err, "--mysql-url", url), 2);
        ck_assert_int_eq(count_lines(err), 1);
        ck_assert_ptr_nonnull(strstr(err, path));
        ck_assert_ptr_nonnull(strstr(err, "1..127 bytes"));
        fd = open(path, O_WRONLY | O_TRUNC);
        for (int i = 0; i < 20; i++)
                ck_assert_int_eq(write(fd, "0123456789", 10), 10);
        close(fd);
        ck_assert_int_eq(LOAD(&conf, err, "--mysql-url", url), 2);
        ck_assert_ptr_null(strstr(err, "0123456789"));
        unlink(path);
        ck_assert_int_eq(LOAD(&conf, err, "--mysql-url", url), 2);
        ck_assert_ptr_nonnull(strstr(err, "No such file"));
}
END_TEST

static void write_file(const char *path, const char *content, size_t len)
{
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, content, len), (ssize_t)len);
        close(fd);
}

/* DESIGN.md 2: VAR_FILE=PATH gives a secret option its value from a file (one trailing
 * newline dropped); VAR and VAR_FILE both set, an unreadable or an empty file are one
 * error line naming the variable and the path, never the content; --print-config masks
 * the password of a value that came from a file like any other. */
START_TEST(secret_file_variables)
{
        static char out[8192];
        char mpath[64] = "/tmp/check_conf_mu_XXXXXX", rpath[64] = "/tmp/check_conf_ru_XXXXXX";
        char err[1024], big[700];
        sk_conf_t conf;
        char *argv[] = { (char *)"x", (char *)"--print-config", NULL };
        int fd;

        clear_env();    /* SECKILL_MYSQL_URL from the caller (scripts/test.sh exports it) */
        ck_assert_int_ge(fd = mkstemp(mpath), 0);
        close(fd);
        ck_assert_int_ge(fd = mkstemp(rpath), 0);
        close(fd);
        write_file(mpath, "mysql://app:f1lepw@db.example:3307/shop\n", 40);
        write_file(rpath, "redis://:r3dispw@r.example:6390/2\r\n", 35);
        setenv("SECKILL_MYSQL_URL_FILE", mpath, 1);
        setenv("SECKILL_REDIS_URL_FILE", rpath, 1);
        ck_assert_int_eq(LOAD(&conf, err, "--topic", "t"), 0);
        ck_assert_str_eq(conf.mysql_url, "mysql://app:f1lepw@db.example:3307/shop");
        ck_assert_str_eq(conf.mysql.password, "f1lepw");
        ck_assert_int_eq(conf.mysql.port, 3307);
        ck_assert_str_eq(conf.redis_url, "redis://:r3dispw@r.example:6390/2");
        ck_assert_str_eq(conf.redis.password, "r3dispw");
        ck_assert_int_eq(run_stdout(&conf, out, sizeof(out), NULL, 0, argv, 2), 1);
        ck_assert_ptr_null(strstr(out, "f1lepw"));
        ck_assert_ptr_null(strstr(out, "r3dispw"));
        ck_assert_ptr_nonnull(strstr(out, "SECKILL_MYSQL_URL=mysql://app:***@db.example:3307/shop\n"));
        ck_assert_ptr_nonnull(strstr(out, "SECKILL_REDIS_URL=redis://:***@r.example:6390/2\n"));

        /* A flag still wins over the file, even a missing one (read only if it won). */
        setenv("SECKILL_MYSQL_URL_FILE", "/nonexistent/seckill-db-url", 1);
        ck_assert_int_eq(LOAD(&conf, err, "--mysql-url", "mysql://u@h/d"), 0);
        ck_assert_str_eq(conf.mysql.user, "u");
        /* Missing: one line naming the variable and the path. */
        ck_assert_int_eq(LOAD(&conf, err, "--topic", "t"), 2);
        ck_assert_int_eq(count_lines(err), 1);
        ck_assert_ptr_nonnull(strstr(err, "SECKILL_MYSQL_URL_FILE=/nonexistent/seckill-db-url: No such file"));
        /* Unreadable (a directory). */
        setenv("SECKILL_MYSQL_URL_FILE", "/tmp", 1);
        ck_assert_int_eq(LOAD(&conf, err, "--topic", "t"), 2);
        ck_assert_ptr_nonnull(strstr(err, "SECKILL_MYSQL_URL_FILE=/tmp: read error"));
        /* Empty, or only a newline. */
        setenv("SECKILL_MYSQL_URL_FILE", mpath, 1);
        write_file(mpath, "", 0);
        ck_assert_int_eq(LOAD(&conf, err, "--topic", "t"), 2);
        ck_assert_int_eq(count_lines(err), 1);
        ck_assert_ptr_nonnull(strstr(err, "SECKILL_MYSQL_URL_FILE="));
        ck_assert_ptr_nonnull(strstr(err, mpath));
        ck_assert_ptr_nonnull(strstr(err, "empty"));
        write_file(mpath, "\n", 1);
        ck_assert_int_eq(LOAD(&conf, err, "--topic", "t"), 2);
        ck_assert_ptr_nonnull(strstr(err, "empty"));
        /* Invalid content, too long content, a newline inside: never printed. */
        write_file(mpath, "mysql://app:l3akpw@h:99999/db\n", 30);
        ck_assert_int_eq(LOAD(&conf, err, "--topic", "t"), 2);
        ck_assert_int_eq(count_lines(err), 1);
        ck_assert_ptr_null(strstr(err, "l3akpw"));
        ck_assert_ptr_nonnull(strstr(err, mpath));
        ck_assert_ptr_nonnull(strstr(err, "is invalid"));
        memset(big, 'k', sizeof(big));
        memcpy(big, "mysql://app:", 12);
        write_file(mpath, big, sizeof(big));
        ck_assert_int_eq(LOAD(&conf, err, "--topic", "t"), 2);
        ck_assert_ptr_null(strstr(err, "kkkk"));
        ck_assert_ptr_nonnull(strstr(err, "1..511 bytes"));
        write_file(mpath, "mysql://app:a\nb@h/d\n", 20);
        ck_assert_int_eq(LOAD(&conf, err, "--topic", "t"), 2);
        ck_assert_ptr_nonnull(strstr(err, "NUL, CR or LF"));
        ck_assert_ptr_null(strstr(err, "app"));
        /* VAR and VAR_FILE both set: refused, whichever is valid. */
        write_file(mpath, "mysql://app:f1lepw@db.example:3307/shop\n", 40);
        setenv("SECKILL_MYSQL_URL", "mysql://u@h/d", 1);
        ck_assert_int_eq(LOAD(&conf, err, "--topic", "t"), 2);
        ck_assert_int_eq(count_lines(err), 1);
        ck_assert_ptr_nonnull(strstr(err, "SECKILL_MYSQL_URL and SECKILL_MYSQL_URL_FILE are both set"));
        ck_assert_ptr_null(strstr(err, "f1lepw"));
        /* An empty VAR_FILE counts as unset, like every variable. */
        setenv("SECKILL_MYSQL_URL_FILE", "", 1);
        ck_assert_int_eq(LOAD(&conf, err, "--topic", "t"), 0);
        ck_assert_str_eq(conf.mysql.host, "h");
        unlink(mpath);
        unlink(rpath);
}
END_TEST

START_TEST(hostport_and_parse_int)
{
        char host[64];
        int port = 0, v = 7;
        long l = 7;

        ck_assert_int_eq(sk_hostport_parse("0.0.0.0:8080", host, sizeof(host), &port), 0);
        ck_assert_str_eq(host, "0.0.0.0");
        ck_assert_int_eq(port, 8080);
        ck_assert_int_eq(sk_hostport_parse("[::1]:9", host, sizeof(host), &port), 0);
        ck_assert_str_eq(host, "::1");
        ck_assert_int_eq(sk_hostport_parse("h", host, sizeof(host), &port), -1);
        ck_assert_int_eq(sk_hostport_parse(":80", host, sizeof(host), &port), -1);
        ck_assert_int_eq(sk_hostport_parse("h:", host, sizeof(host), &port), -1);
        ck_assert_int_eq(sk_hostport_parse("h:99999", host, sizeof(host), &port), -1);
        ck_assert_int_eq(sk_hostport_parse("h:80", host, 1, &port), -1);

        ck_assert_int_eq(sk_parse_int("42x", 0, 100, &v), -1);
        ck_assert_int_eq(sk_parse_int("", 0, 100, &v), -1);
        ck_assert_int_eq(sk_parse_int(" 4", 0, 100, &v), -1);
        ck_assert_int_eq(sk_parse_int("101", 0, 100, &v), -1);
        ck_assert_int_eq(sk_parse_int("99999999999999999999", 0, 100, &v), -1);
        ck_assert_int_eq(v, 7);
        ck_assert_int_eq(sk_parse_int("-3", -5, 5, &v), 0);
        ck_assert_int_eq(v, -3);
        ck_assert_int_eq(sk_parse_long("9223372036854775807", 0, 9223372036854775807L, &l), 0);
        ck_assert_int_eq(l, 9223372036854775807L);
}
END_TEST

static Suite *conf_suite(void)
{
        Suite *s = suite_create("conf");
        TCase *tc;

        tc = tcase_create("precedence");
        tcase_add_checked_fixture(tc, setup, NULL);
        tcase_add_test(tc, defaults);
        tcase_add_test(tc, env_overrides_default_and_flag_overrides_env);
        tcase_add_test(tc, invalid_env_overridden_by_flag_is_fine);
        tcase_add_test(tc, kafka_props);
        suite_add_tcase(s, tc);

        tc = tcase_create("errors");
        tcase_add_checked_fixture(tc, setup, NULL);
        tcase_add_loop_test(tc, env_range_errors, 0, (int)(sizeof(bad_env) / sizeof(bad_env[0])));
        tcase_add_test(tc, flag_range_errors);
        tcase_add_test(tc, unknown_and_missing_flags);
        tcase_add_test(tc, failpoints_env);
        suite_add_tcase(s, tc);

        tc = tcase_create("output");
        tcase_add_checked_fixture(tc, setup, NULL);
        tcase_add_test(tc, print_config_masks_passwords);
        tcase_add_test(tc, help_and_version);
        tcase_add_test(tc, help_markdown);
        suite_add_tcase(s, tc);

        tc = tcase_create("extra");
        tcase_add_checked_fixture(tc, setup, NULL);
        tcase_add_test(tc, extra_options);
        suite_add_tcase(s, tc);

        tc = tcase_create("parsers");
        tcase_add_test(tc, redis_url_parse);
        tcase_add_test(tc, redis_url_topologies);
        tcase_add_test(tc, redis_url_conf_errors);
        tcase_add_test(tc, mysql_url_parse);
        tcase_add_test(tc, mysql_url_tls);
        tcase_add_test(tc, mysql_url_multi_host);
        tcase_add_test(tc, mysql_password_file);
        tcase_add_test(tc, secret_file_variables);
        tcase_add_test(tc, hostport_and_parse_int);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return sk_test_run(conf_suite());
}
