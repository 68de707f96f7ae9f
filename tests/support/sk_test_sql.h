/* sk_test_sql.h: SQL in a test: run a statement, read one integer, wait for a figure,
 * hold a row lock, read an outcome or a degrade switch state. Every call but
 * sk_test_conf_exec uses the fixture's connection (sk_test_fx.db); a failed statement
 * fails the test. The SQL is formatted: test-only. Not thread-safe. */
#pragma once
#include <stdint.h>
#include "sk/conf.h"
#include "sk/db.h"

/** @brief Run one printf-formatted statement (≤ 2 KiB); fails the test on error. */
void sk_test_exec(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/** @brief Run @p sql on a fresh connection to @p conf's database (for a test without a
 *  fixture); fails the test on error. */
void sk_test_conf_exec(const sk_conf_t *conf, const char *sql);
/** @brief The first column of the first row as an integer; -1 for no row or NULL. */
int64_t sk_test_i64(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/** @brief Poll sk_test_i64(@p sql) every 100 ms until it equals @p want or @p timeout_s
 *  (s) passed. @returns the last value. */
int64_t sk_test_wait_i64(int timeout_s, int64_t want, const char *sql);
/** @brief A second connection holding voucher @p vid's bucket-0 stock row locked
 *  (SELECT ... FOR UPDATE in an open transaction) until sk_test_unlock(). Owned. */
sk_db_t *sk_test_lock_voucher(int64_t vid);
/** @brief Roll back and close a connection of sk_test_lock_voucher. */
void sk_test_unlock(sk_db_t *db);
/** @brief The outcome of @p trace: 0 none, 1 CREATED, 2 FAILED. */
int sk_test_outcome(int64_t trace);
/** @brief Poll (200 ms) until @p trace has an outcome or @p timeout_s (s) passed.
 *  @returns the outcome as sk_test_outcome. */
int sk_test_wait_outcome(int64_t trace, int timeout_s);
/** @brief 1 if voucher @p vid's degrade switch row is in @p state (redis, draining,
 *  db, rebuilding; DESIGN.md 12), else 0. */
int sk_test_switch_is(int64_t vid, const char *state);
/** @brief Poll (200 ms) until @p vid's switch is in @p state. @returns 0, or -1 after
 *  @p timeout_s (s). */
int sk_test_wait_switch(int64_t vid, const char *state, int timeout_s);
