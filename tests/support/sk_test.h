/* tests/support/sk_test.h: helpers shared by the unit and integration tests.
 * Integration tests talk to the real stack (DESIGN.md 10): endpoints come from the
 * SECKILL_* variables (defaults: the local stack), and every run gets its own Redis
 * key prefix, database, topic and group so tests never disturb each other. */
#pragma once
#include <check.h>
#include <stdint.h>
#include "sk/conf.h"

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
