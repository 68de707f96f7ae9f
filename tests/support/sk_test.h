/* tests/support/sk_test.h: the one C test library (static library sktest, prefix
 * sk_test_), like librdkafka's tests/test.h: this header is the stack and the run's
 * configuration, and includes the others, one per job:
 *   sk_test_fix.h      the run's fixture (conf, database, Redis, topics, producer)
 *   sk_test_sql.h      statements, one integer, waits on a SQL figure, outcomes
 *   sk_test_voucher.h  seed a voucher (DB, Redis buckets, preheat), deduct.lua
 *   sk_test_redis.h    a voucher's Redis state, key snapshots
 *   sk_test_proc.h     children: spawn with logs, wait, stop; a private redis-server
 *   sk_test_bin.h      the front, the consumer, a reconciler pass, seckill-admin
 *   sk_test_http.h     HTTP client, JSON fields, metrics
 *   sk_test_kafka.h    produce, commit, committed offsets, the DLQ
 *   sk_test_topo.h     Redis Cluster and Sentinel nodes (labels cluster, sentinel)
 *   sk_test_jwt.h      test keys, JWKS files and signed tokens (DESIGN.md 15)
 *   sk_test_keys.h     the queue and payment key sets of the signed-text unit tests
 * Integration tests talk to the real stack (DESIGN.md 10): endpoints come from the
 * SECKILL_* variables (defaults: the local stack), and every run gets its own Redis
 * key prefix, database, topic and group so tests never disturb each other. */
#pragma once
#include <check.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "sk/conf.h"
#include "sk/redis.h"

/** @brief Defaults + environment, then unique names for this run and @p name:
 *  redis_prefix "skt_<name>_<pid>_<rand>", mysql database "skt_<name>_<pid>_<rand>"
 *  (truncated to 64 chars), topic "skt.<name>.<pid>.<rand>" (+ ".dlq"), group
 *  "skt-<name>-<pid>-<rand>". Exits 2 on an invalid environment. */
void sk_test_conf(sk_conf_t *conf, const char *name);
/** @brief @p url (a multi-host URL, DESIGN.md 16) with its hosts rotated so that host @p k
 *  (mod their count) comes first: a second writer in a test then writes through another
 *  Galera node (label galera); with one host, the same URL. By value; no allocation. */
sk_mysql_url_t sk_test_mysql_node(const sk_mysql_url_t *url, int k);
/** @brief Run @p s (CK_NORMAL output) and return EXIT_SUCCESS iff every test passed. */
int sk_test_run(Suite *s);
/** @brief sk_test_run without forking (CK_NOFORK): the tests share the fixture's
 *  handles and children; a failed check ends its test, the next one runs. */
int sk_test_run_nofork(Suite *s);
/** @brief Set up a fresh migrated database for @p conf (sk_migrate) or abort the test. */
void sk_test_migrate(const sk_conf_t *conf);
/** @brief Drop @p conf's database and delete its Redis keys (prefix*). Best effort. */
void sk_test_cleanup(const sk_conf_t *conf);
/** @brief Random non-zero 63-bit number (for unique ids in tests). */
int64_t sk_test_rand_id(void);
/** @brief A connection to @p conf's Redis through sk_redis (any topology of
 *  SECKILL_REDIS_URL, DESIGN.md 4b), 5 s timeouts; aborts the test if none. Owned:
 *  sk_redis_close(). */
sk_redis_t *sk_test_redis(const sk_conf_t *conf);
/** @brief A printf-style command on @p r routed by its key (sk_redis_cmdf), for test
 *  code that wants hiredis' reply shape: the reply (owned, freeReplyObject), an error
 *  reply as a REDIS_REPLY_ERROR object, NULL when none came (I/O error, timeout,
 *  node unreachable; the reason on stderr). */
redisReply *sk_test_cmd(sk_redis_t *r, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
/** @brief sk_test_cmd with a va_list. */
redisReply *sk_test_vcmd(sk_redis_t *r, const char *fmt, va_list ap);

#include "sk/clock.h"
#include "sk/dblock.h"
#include "sk/ids.h"
#include "sk/kafka.h"
#include "sk/keys.h"
#include "sk/outcome.h"
#include "sk/scripts.h"
#include "sk_test_fix.h"
#include "sk_test_sql.h"
#include "sk_test_voucher.h"
#include "sk_test_redis.h"
#include "sk_test_proc.h"
#include "sk_test_bin.h"
#include "sk_test_http.h"
#include "sk_test_kafka.h"
#include "sk_test_topo.h"
#include "sk_test_jwt.h"
#include "sk_test_keys.h"
