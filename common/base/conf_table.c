/* conf_table.c: the common options of every binary (DESIGN.md 2, STYLE.md 6): flag,
 * SECKILL_* variable, kind, bounds, help and the binaries that use it (SK_BIN_*: only
 * those list, accept and read it) of each in one table (redis static_configs[]), and
 * the built-in defaults, the local stack of DESIGN.md 10.
 * Parsing and output are in conf.c. Read-only data; sk_conf_defaults is thread-safe. */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "sk/conf.h"
#include "sk/log.h"
#include "conf_int.h"

void sk__sfmt(char *dst, size_t size, const char *fmt, ...)
{
        va_list ap;

        if (!size)
                return;
        va_start(ap, fmt);
        if (vsnprintf(dst, size, fmt, ap) < 0)
                dst[0] = '\0';
        va_end(ap);
}

#define OFF(f) offsetof(sk_conf_t, f)
#define SZ(f) sizeof(((sk_conf_t *)0)->f)
const copt_t sk__copts[SK__NCOPTS] = {
        { "redis-url", "SECKILL_REDIS_URL", V_REDIS_URL, OFF(redis_url), SZ(redis_url), 0, 0, "URL",
          "redis://[user:pass@]host[:port][/db] | redis-sentinel://h1:p1,.../MASTER[?db=N] | redis-cluster://h1:p1,...",
          SK_BIN_ALL },
        { "mysql-url", "SECKILL_MYSQL_URL", V_MYSQL_URL, OFF(mysql_url), SZ(mysql_url), 0, 0, "URL",
          "mysql[-galera]://user[:password]@host[:port][,host[:port]...]/database[?password-file=PATH]",
          SK_BIN_ALL },
        { "brokers", "SECKILL_KAFKA_BROKERS", V_STR, OFF(kafka_brokers), SZ(kafka_brokers), 0, 0, "LIST",
          "Kafka bootstrap servers host:port[,host:port...]",
          SK_BIN_ALL },
        { "topic", "SECKILL_TOPIC", V_TOPIC, OFF(topic), SZ(topic), 0, 0, "NAME",
          "order topic (the DLQ is <topic>.dlq)",
          SK_BIN_ALL },
        { "group-id", "SECKILL_GROUP_ID", V_STR, OFF(group_id), SZ(group_id), 0, 0, "NAME",
          "Kafka consumer group",
          SK_BIN_ALL },
        { "partitions", "SECKILL_TOPIC_PARTITIONS", V_INT, OFF(topic_partitions), 0, 1, 1000, "N",
          "partitions of topics created at startup",
          SK_BIN_FRONT | SK_BIN_CONSUMER | SK_BIN_RECONCILER },
        { "http-addr", "SECKILL_HTTP_ADDR", V_HOSTPORT, OFF(http_addr), SZ(http_addr), 0, 0, "HOST:PORT",
          "HTTP listen address of the front",
          SK_BIN_FRONT },
        { "redis-prefix", "SECKILL_REDIS_PREFIX", V_PREFIX, OFF(redis_prefix), SZ(redis_prefix), 0, 0, "P",
          "first segment of every Redis key",
          SK_BIN_ALL },
        { "delivery-timeout-ms", "SECKILL_KAFKA_DELIVERY_TIMEOUT_MS", V_INT, OFF(kafka_delivery_timeout_ms),
          0, 100, 600000, "MS", "Kafka message.timeout.ms",
          SK_BIN_ALL },
        { "max-inflight", "SECKILL_MAX_INFLIGHT", V_INT, OFF(max_inflight), 0, 1, 1000000, "N",
          "requests in flight before the front answers 503",
          SK_BIN_FRONT },
        { "soldout-cache-ms", "SECKILL_SOLDOUT_CACHE_MS", V_INT, OFF(soldout_cache_ms), 0, 0, 60000, "MS",
          "front: how long a bucket that answered sold out is answered 10005 locally (0 = off)",
          SK_BIN_FRONT },
        { "worker-id", "SECKILL_WORKER_ID", V_INT, OFF(worker_id), 0, 0, 1023, "ID",
          "snowflake worker id (default: lowest free id)",
          SK_BIN_FRONT | SK_BIN_ADMIN },
        { "worker-lease-ms", "SECKILL_WORKER_LEASE_MS", V_INT, OFF(worker_lease_ms), 0, 300, 3600000, "MS",
          "worker id lease period",
          SK_BIN_FRONT | SK_BIN_ADMIN },
        { "window-hours", "SECKILL_RECONCILE_WINDOW_HOURS", V_INT, OFF(reconcile_window_hours), 0, 1, 8760, "H",
          "reconcile window in hours: key expiry slack; reconciler scope = ended within it + 24 h",
          SK_BIN_ALL },
        { "pay-timeout-s", "SECKILL_PAY_TIMEOUT_S", V_INT, OFF(pay_timeout_s), 0, 0, 31536000, "S",
          "payment window of a new order (DESIGN.md 13); 0 = orders are created PAID",
          SK_BIN_FRONT | SK_BIN_CONSUMER },
        { "close-interval-ms", "SECKILL_CLOSE_INTERVAL_MS", V_INT, OFF(close_interval_ms), 0, 10, 3600000, "MS",
          "scan period of the consumer's closer loop (unpaid orders past their deadline)",
          SK_BIN_CONSUMER },
        { "metrics-addr", "SECKILL_METRICS_ADDR", V_METRICS_ADDR, OFF(metrics_addr), SZ(metrics_addr), 0, 0,
          "HOST:PORT|off", "Prometheus /metrics listen address",
          SK_BIN_CONSUMER },
        { "log-level", "SECKILL_LOG_LEVEL", V_LEVEL, OFF(log_level), 0, 0, 0, "LEVEL",
          "debug|info|warn|error",
          SK_BIN_ALL },
        { "breaker-failures", "SECKILL_BREAKER_FAILURES", V_INT, OFF(breaker_failures), 0, 1, 1000, "N",
          "front: failed or slow Redis commands (none healthy-ms apart) that open the breaker",
          SK_BIN_FRONT },
        { "breaker-slow-ms", "SECKILL_BREAKER_SLOW_MS", V_INT, OFF(breaker_slow_ms), 0, 1, 60000, "MS",
          "front: a Redis command (pipelined batch) slower than this counts as failed",
          SK_BIN_FRONT },
        { "breaker-open-ms", "SECKILL_BREAKER_OPEN_MS", V_INT, OFF(breaker_open_ms), 0, 100, 3600000, "MS",
          "front: minimum open time of the Redis breaker, then one probe a second",
          SK_BIN_FRONT },
        { "breaker-healthy-ms", "SECKILL_BREAKER_HEALTHY_MS", V_INT, OFF(breaker_healthy_ms), 0, 100,
          3600000, "MS", "front: no failed or slow Redis command this long = healthy (count reset)",
          SK_BIN_FRONT },
        { "degrade-db-conns", "SECKILL_DEGRADE_DB_CONNS", V_INT, OFF(degrade_db_conns), 0, 1, 256, "N",
          "front: DB connections of the DB-only purchase path (DESIGN.md 12)",
          SK_BIN_FRONT },
        { "switch-stale-ms", "SECKILL_SWITCH_STALE_MS", V_INT, OFF(switch_stale_ms), 0, 500, 600000, "MS",
          "front: no successful read of the degrade switch rows this long = nothing goes to Redis "
          "(503) until a read succeeds; the timed drain waits D + this (DESIGN.md 12)",
          SK_BIN_FRONT },
        { "pay-grace-s", "SECKILL_PAY_GRACE_S", V_INT, OFF(pay_grace_s), 0, 0, 86400, "S",
          "payment webhook delay covered after pay_deadline: past the deadline = pay_deadline + "
          "grace <= NOW(3), for the closer and the payment callback alike (DESIGN.md 13)",
          SK_BIN_FRONT | SK_BIN_CONSUMER },
        { "currency", "SECKILL_CURRENCY", V_STR, OFF(currency), SZ(currency), 0, 0, "CUR",
          "ISO 4217 currency of a new voucher when --currency is not given (DESIGN.md 13)",
          SK_BIN_ADMIN },
};
_Static_assert(sizeof(sk__copts) / sizeof(sk__copts[0]) == SK__NCOPTS, "SK__NCOPTS");

void sk_conf_defaults(sk_conf_t *conf)
{
        memset(conf, 0, sizeof(*conf));
        sk__sfmt(conf->redis_url, sizeof(conf->redis_url), "redis://127.0.0.1:6379/0");
        sk__sfmt(conf->mysql_url, sizeof(conf->mysql_url), "mysql://root@127.0.0.1:3306/seckill");
        sk__sfmt(conf->kafka_brokers, sizeof(conf->kafka_brokers), "127.0.0.1:9092");
        sk__sfmt(conf->topic, sizeof(conf->topic), "seckill.voucher.order");
        sk__sfmt(conf->group_id, sizeof(conf->group_id), "seckill-order-workers");
        conf->topic_partitions = 6;
        sk__sfmt(conf->http_addr, sizeof(conf->http_addr), "127.0.0.1:8080");
        sk__sfmt(conf->redis_prefix, sizeof(conf->redis_prefix), "seckill");
        conf->kafka_delivery_timeout_ms = 5000;
        conf->max_inflight = 10000;
        conf->soldout_cache_ms = 1000;
        conf->worker_id = -1;
        conf->worker_lease_ms = 30000;
        conf->reconcile_window_hours = 48;
        conf->pay_timeout_s = 900;
        conf->close_interval_ms = 1000;
        conf->pay_grace_s = 120;
        sk__sfmt(conf->currency, sizeof(conf->currency), "CNY");
        sk__sfmt(conf->metrics_addr, sizeof(conf->metrics_addr), "127.0.0.1:9464");
        conf->log_level = SK_INFO;
        conf->breaker_failures = 5;
        conf->breaker_slow_ms = 300;
        conf->breaker_open_ms = 30000;
        conf->breaker_healthy_ms = 10000;
        conf->degrade_db_conns = 8;
        conf->switch_stale_ms = 5000;
        /* The defaults are valid by construction; parse them so the structs are filled. */
        sk_redis_url_parse(conf->redis_url, &conf->redis, NULL, 0);
        sk_mysql_url_parse(conf->mysql_url, &conf->mysql, NULL, 0);
        sk__sfmt(conf->dlq_topic, sizeof(conf->dlq_topic), "%s.dlq", conf->topic);
}
