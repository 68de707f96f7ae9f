/* sk_test_bin.h: the binaries under test as children of a test, each with its fixed
 * test settings on top of sk_test_spawn: the front (its own port and log), the consumer
 * (short session and heartbeat), a reconciler pass (its stdout captured) and
 * seckill-admin. Not thread-safe. */
#pragma once
#include <stddef.h>
#include <sys/types.h>
#include "sk/conf.h"
#include "sk_test_proc.h"

/** @brief Start seckill-front for @p conf on 127.0.0.1:@p port, stdout and stderr
 *  appended to @p log_path. Its environment: the run's names (prefix, topic, group,
 *  MySQL URL; Redis and brokers inherited), 2 partitions, worker lease 900 ms,
 *  delivery timeout 3000 ms, log level info, no worker id or failpoints, the identity
 *  mode named: SECKILL_AUTH=trusted-header with SECKILL_TRUSTED_PROXIES=127.0.0.1/32,unix
 *  (the test client plays the gateway; DESIGN.md 15), then @p env ("NAME=VALUE", "NAME"
 *  unsets; NULL-terminated, may be NULL; it wins over the above). @returns its pid. */
pid_t sk_test_front_start(const sk_conf_t *conf, int port, const char *const *env,
                          const char *log_path);
/** @brief Start seckill-consumer per @p o (bin ignored) with
 *  "-X session.timeout.ms=6000 -X heartbeat.interval.ms=500", with @p quick also
 *  "--lock-wait-timeout-s 2 --backoff-cap-ms 500", then o->args. @returns its pid. */
pid_t sk_test_consumer_start(const sk_test_spawn_t *o, int quick);
/** @brief Run one seckill-reconciler of the fixture with @p args (NULL-terminated) and
 *  @p failpoints (may be NULL); its stdout (≤ 240 s) into @p out (@p size bytes) and
 *  echoed to stderr. @returns its exit code (SIGKILLed 10 s after its stdout closed). */
int sk_test_reconcile(const char *const *args, const char *failpoints, char *out, size_t size);
/** @brief The fixture's reconciler run-lock name (reconciler/main.c) into @p buf; with
 *  @p fitted, the tb_lock row name it really gets (sk_dblock_fit_name maps names over
 *  191 chars to 174 chars + ':' + a 64-bit FNV-1a hash in hex; sk/dblock.h). */
void sk_test_reconcile_lock(char *buf, size_t size, int fitted);
/** @brief Run seckill-admin for @p conf (NULL: the fixture's) with @p args
 *  (NULL-terminated) and wait (≤ 120 s). @returns its exit code. */
int sk_test_admin(const sk_conf_t *conf, const char *const *args);
