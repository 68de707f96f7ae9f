/* tests/support/sk_test.h: helpers shared by the unit and integration tests.
 * Integration tests talk to the real stack (DESIGN.md 10): endpoints come from the
 * SECKILL_* variables (defaults: the local stack), and every run gets its own Redis
 * key prefix, database, topic and group so tests never disturb each other. */
#pragma once
#include <check.h>
#include <stdarg.h>
#include <stdint.h>
#include "sk/conf.h"
#include "sk/redis.h"

/** @brief Defaults + environment, then unique names for this run and @p name:
 *  redis_prefix "skt_<name>_<pid>_<rand>", mysql database "skt_<name>_<pid>_<rand>"
 *  (truncated to 64 chars), topic "skt.<name>.<pid>.<rand>" (+ ".dlq"), group
 *  "skt-<name>-<pid>-<rand>". Exits 2 on an invalid environment. */
void sk_test_conf(sk_conf_t *conf, const char *name);
/** @brief Run @p s (CK_NORMAL output) and return EXIT_SUCCESS iff every test passed. */
int sk_test_run(Suite *s);
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
