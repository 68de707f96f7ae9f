/* conf_table.c: the common options of every binary (DESIGN.md 2, STYLE.md 6): flag,
 * SECKILL_* variable, kind, bounds, help and the binaries that use it (SK_BIN_*: only
 * those list, accept and read it) and built-in default (the local stack of DESIGN.md 10)
 * of each in one table (redis static_configs[]): each is written only here.
 * Parsing and output are in conf.c. Read-only data; sk_conf_defaults is thread-safe. */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
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
/* A row: an int option of bounds [min, max] / a text option of kind k (V_*), its
 * default as text, the binaries that use it (SK_BIN_*), its help line. */
#define CI(flag, env, f, min, max, arg, def, bins, help) \
        { flag, env, V_INT, OFF(f), 0, min, max, arg, def, NULL, help, bins }
#define CS(flag, env, k, f, arg, def, bins, help) \
        { flag, env, k, OFF(f), SZ(f), 0, 0, arg, def, NULL, help, bins }
#define FRONT SK_BIN_FRONT
#define CONS SK_BIN_CONSUMER
#define ALL SK_BIN_ALL
const copt_t sk__copts[SK__NCOPTS] = {
        CS("redis-url", "SECKILL_REDIS_URL", V_REDIS_URL, redis_url, "URL", "redis://127.0.0.1:6379/0", ALL,
           "Redis >= 7.0, noeviction on every master: redis://[user:pass@]host[:port][/db] | "
           "redis-sentinel://h1:p1,.../MASTER[?db=N] | redis-cluster://h1:p1,..."),
        CS("mysql-url", "SECKILL_MYSQL_URL", V_MYSQL_URL, mysql_url, "URL", "mysql://root@127.0.0.1:3306/seckill", ALL,
           "the book of record: mysql[-galera]://user[:password]@host[:port][,host[:port]...]/database"
           "[?password-file=PATH][&ssl-ca=PATH&ssl-mode=VERIFY_IDENTITY|REQUIRED][&ssl-cert=PATH&ssl-key=PATH]; up to 8 hosts, new transactions on the first writable one; "
           "mysql-galera refuses a server without wsrep; the root default is for the local stack only"),
        CS("brokers", "SECKILL_KAFKA_BROKERS", V_STR, kafka_brokers, "LIST", "127.0.0.1:9092", ALL,
           "Kafka bootstrap servers host:port[,host:port...]"),
        CS("topic", "SECKILL_TOPIC", V_TOPIC, topic, "NAME", "seckill.voucher.order", ALL,
           "order topic, key = voucherId (the DLQ is <topic>.dlq)"),
        CS("group-id", "SECKILL_GROUP_ID", V_STR, group_id, "NAME", "seckill-order-workers", ALL,
           "Kafka consumer group"),
        { "kafka-properties-file", "SECKILL_KAFKA_PROPERTIES_FILE", V_KPROPS, OFF(kafka_properties_file),
          SZ(kafka_properties_file), 0, 0, "PATH", "", "none",
          "librdkafka properties, key=value lines (SASL and TLS secrets, kept off the command "
          "line), applied before -X; the file may not be readable by others nor writable by its "
          "group", ALL },
        CI("partitions", "SECKILL_TOPIC_PARTITIONS", topic_partitions, 1, 1000, "N", "6",
           FRONT | CONS | SK_BIN_RECONCILER, "partitions of topics created at startup"),
        CS("http-addr", "SECKILL_HTTP_ADDR", V_LISTEN, http_addr, "HOST:PORT|unix:PATH", "127.0.0.1:8080",
           FRONT, "API listen address of the front: TCP, or a unix socket created mode 0660, group "
           "seckill (DESIGN.md 15; PATH absolute, e.g. under the unit's /run/seckill)"),
        CS("redis-prefix", "SECKILL_REDIS_PREFIX", V_PREFIX, redis_prefix, "P", "seckill", ALL,
           "first segment of every Redis key"),
        CI("delivery-timeout-ms", "SECKILL_KAFKA_DELIVERY_TIMEOUT_MS", kafka_delivery_timeout_ms, 100, 600000,
           "MS", "5000", ALL, "Kafka message.timeout.ms"),
        CI("max-inflight", "SECKILL_MAX_INFLIGHT", max_inflight, 1, 1000000, "N", "10000", FRONT,
           "requests in flight before the front answers 503"),
        CI("soldout-cache-ms", "SECKILL_SOLDOUT_CACHE_MS", soldout_cache_ms, 0, 60000, "MS", "1000", FRONT,
           "front: how long a bucket that answered sold out is answered 10005 locally, and a "
           "voucher the DB did not know 10004 (0 = off)"),
        { "worker-id", "SECKILL_WORKER_ID", V_INT, OFF(worker_id), 0, 0, 1023, "ID", "-1", "the lowest free id is leased",
          "snowflake worker id, leased in the database; held by another live "
          "process: exit 2", FRONT | SK_BIN_ADMIN },
        CI("worker-lease-ms", "SECKILL_WORKER_LEASE_MS", worker_lease_ms, 300, 3600000, "MS", "30000",
           FRONT | SK_BIN_ADMIN, "worker id lease period (renewed every third of it)"),
        CI("window-hours", "SECKILL_RECONCILE_WINDOW_HOURS", reconcile_window_hours, 1, 8760, "H", "48", ALL,
           "reconcile window in hours: key expiry slack; reconciler scope = ended within it + 24 h"),
        CI("pay-timeout-s", "SECKILL_PAY_TIMEOUT_S", pay_timeout_s, 0, 31536000, "S", "900", FRONT | CONS,
           "payment window of a new order (DESIGN.md 13); 0 = orders of price 0 are created PAID "
           "(an order with a price is always created UNPAID)"),
        CI("close-interval-ms", "SECKILL_CLOSE_INTERVAL_MS", close_interval_ms, 10, 3600000, "MS", "1000", CONS,
           "scan period of the consumer's closer loop (unpaid orders past their deadline)"),
        CS("metrics-addr", "SECKILL_METRICS_ADDR", V_METRICS_ADDR, metrics_addr, "HOST:PORT|off",
           "127.0.0.1:9464", CONS, "Prometheus /metrics listen address"),
        { "log-level", "SECKILL_LOG_LEVEL", V_LEVEL, OFF(log_level), 0, 0, 0, "LEVEL", "info", NULL,
          "debug|info|warn|error", ALL },
        CI("breaker-failures", "SECKILL_BREAKER_FAILURES", breaker_failures, 1, 1000, "N", "5", FRONT,
           "front: failed (timeout, I/O error, CLUSTERDOWN, LOADING) or slow Redis commands (none "
           "healthy-ms apart) that open the breaker"),
        CI("breaker-slow-ms", "SECKILL_BREAKER_SLOW_MS", breaker_slow_ms, 1, 60000, "MS", "300", FRONT,
           "front: a Redis command (pipelined batch) slower than this counts as failed"),
        CI("breaker-open-ms", "SECKILL_BREAKER_OPEN_MS", breaker_open_ms, 100, 3600000, "MS", "30000", FRONT,
           "front: minimum open time of the Redis breaker, then one probe a second (PING, ROLE "
           "master, loading:0)"),
        CI("breaker-healthy-ms", "SECKILL_BREAKER_HEALTHY_MS", breaker_healthy_ms, 100, 3600000, "MS", "10000",
           FRONT, "front: no failed or slow Redis command this long = healthy (count reset; a voucher "
           "on the DB-only path may go back to Redis)"),
        CI("degrade-db-conns", "SECKILL_DEGRADE_DB_CONNS", degrade_db_conns, 1, 256, "N", "8", FRONT,
           "front: DB connections of the DB-only purchase path (DESIGN.md 12)"),
        CI("switch-stale-ms", "SECKILL_SWITCH_STALE_MS", switch_stale_ms, 500, 600000, "MS", "5000", FRONT,
           "front: no successful read of the degrade switch rows this long = nothing goes to Redis "
           "(503) until a read succeeds, so a DB outage longer than this stops admission too; the "
           "timed drain waits D + this (DESIGN.md 12)"),
        CI("pay-grace-s", "SECKILL_PAY_GRACE_S", pay_grace_s, 0, 86400, "S", "120", FRONT | CONS,
           "payment webhook delay covered after pay_deadline: past the deadline = pay_deadline + "
           "grace <= NOW(3), for the closer and the payment callback alike (DESIGN.md 13)"),
        CS("currency", "SECKILL_CURRENCY", V_STR, currency, "CUR", "CNY", SK_BIN_ADMIN,
           "ISO 4217 currency of a new voucher when --currency is not given (DESIGN.md 13)"),
};
_Static_assert(sizeof(sk__copts) / sizeof(sk__copts[0]) == SK__NCOPTS, "SK__NCOPTS");

void sk_conf_defaults(sk_conf_t *conf)
{
        memset(conf, 0, sizeof(*conf));
        for (size_t i = 0; i < SK__NCOPTS; i++) {
                const copt_t *o = &sk__copts[i];
                char *field = (char *)conf + o->off;

                if (o->kind == V_INT)
                        *(int *)(void *)field = (int)strtol(o->def, NULL, 10);
                else if (o->kind == V_LEVEL)
                        (void)sk_log_parse_level(o->def, (int *)(void *)field);
                else
                        sk__sfmt(field, o->size, "%s", o->def);
        }
        /* The defaults are valid by construction (check_conf: defaults); parse them so
         * the structs are filled. */
        sk_redis_url_parse(conf->redis_url, &conf->redis, NULL, 0);
        sk_mysql_url_parse(conf->mysql_url, &conf->mysql, NULL, 0);
        sk__sfmt(conf->dlq_topic, sizeof(conf->dlq_topic), "%s.dlq", conf->topic);
}
