/* sk_test_fix.h: the run's fixture (one per test binary, like librdkafka's test
 * globals): its configuration with unique names (sk_test_conf), a migrated database and
 * a connection to it, a Redis connection, the topic and its DLQ, a producer opened on
 * first use, and the cleanup of all of it. Tests that use it run their suite without
 * fork (sk_test_run_nofork) so the handles stay valid. Not thread-safe. */
#pragma once
#include <stdint.h>
#include <sys/types.h>
#include <librdkafka/rdkafka.h>
#include "sk/conf.h"
#include "sk/db.h"
#include "sk/decide.h"
#include "sk/redis.h"

/** The fixture's state; read the fields freely, change them only before set-up ends. */
typedef struct sk_test_fix {
        sk_conf_t conf;             /**< unique names of this run (sk_test_conf) */
        sk_db_t *db;                /**< the run's database */
        sk_redis_t *r;              /**< the run's Redis (or the private one) */
        rd_kafka_t *prod;           /**< sk_test_produce*: opened on first use */
        volatile int inflight;      /**< messages produced, delivery report not yet seen */
        volatile int failed;        /**< delivery reports not PERSISTED */
        int32_t last_partition;     /**< partition of the last delivery report */
        int64_t extra_ms;           /**< deduct.lua's expire_extra_ms for this conf */
        pid_t redis_pid;            /**< private redis-server (opts.private_redis), or 0 */
} sk_test_fix_t;

/** The one fixture of this test binary. */
extern sk_test_fix_t sk_test_fx;

/** Set-up choices; zero means the default. */
typedef struct sk_test_fix_opts {
        int partitions;             /**< >0: the topic's partition count */
        int delivery_timeout_ms;    /**< >0: conf.kafka_delivery_timeout_ms (children too) */
        int lock_wait_s;            /**< the connection's innodb_lock_wait_timeout, 0 default */
        int no_topics;              /**< 1: do not create the topic and DLQ */
        int redis_only;             /**< 1: Redis alone: no database (db stays NULL), no
                                     *   topics; the teardown is the same */
        int private_redis;          /**< 1: a private redis-server (sk_test_redis_start) */
        const char *const *redis_args; /**< private_redis: its extra arguments
                                        *   (NULL-terminated), e.g. "--lua-time-limit" */
} sk_test_fix_opts_t;

/** @brief Fill sk_test_fx for test @p name: sk_test_conf, options, migrate the database,
 *  start the private Redis if asked, create the topics (15 s), connect to MariaDB and
 *  Redis (5 s); with redis_only, neither the database nor the topics. @p o may be
 *  NULL. Exits 2 with the reason on stderr if any step fails (called from main() as
 *  well as from checked fixtures). */
void sk_test_fix_setup(const char *name, const sk_test_fix_opts_t *o);
/** @brief SIGKILL leftover children (sk_test_reap_all), close the handles, stop the
 *  private Redis, then drop the database and delete the keys (sk_test_cleanup) unless
 *  SK_TEST_KEEP is set. Safe to call twice. */
void sk_test_fix_teardown(void);
/** @brief *@p d: a decider (sk/decide.h) on the fixture's DB and Redis handles, mode
 *  "reconciler", 2 attempts, the fixture's prefix and expiry; the rest zero. */
void sk_test_decider(sk_decider_t *d);
