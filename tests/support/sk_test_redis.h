/* sk_test_redis.h: reading a voucher's Redis state in a test: a key as an integer or
 * string, a bucket's stock, a buyer, a fence, and a snapshot of every voucher key (to
 * prove that nothing was written). Calls without a connection argument use the
 * fixture's (sk_test_fx.r). Not thread-safe. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "sk/conf.h"
#include "sk/keys.h"
#include "sk/redis.h"

/** @brief Voucher @p vid's bucket-0 key of @p kind under the fixture's prefix into
 *  @p buf (SK_KEY_MAX bytes). */
void sk_test_key(char *buf, int64_t vid, sk_key_kind_t kind);
/** @brief GET @p key on @p r as an integer; -1 when missing. */
long long sk_test_get_i64(sk_redis_t *r, const char *key);
/** @brief HGET @p key @p field on @p r (NULL: the fixture's) as a malloc'd string, or
 *  NULL when missing. */
char *sk_test_hget(sk_redis_t *r, const char *key, const char *field);
/** @brief GET (@p field NULL) or HGET into @p out (@p size bytes); "(nil)" if missing. */
void sk_test_get_str(const char *key, const char *field, char *out, size_t size);
/** @brief An integer command "@p cmd @p key" (EXISTS, HLEN, TTL...) on the fixture. */
long long sk_test_int_cmd(const char *cmd, const char *key);
/** @brief GET @p key (fixture) until it holds a string or @p timeout_s (s) passed (every
 *  100 ms). @returns the last reply (owned: freeReplyObject). */
redisReply *sk_test_wait_get(int timeout_s, const char *key);
/** @brief Bucket-0 stock of @p vid under @p conf's prefix through @p r (both NULL: the
 *  fixture's); -1 when missing. */
long long sk_test_stock(const sk_conf_t *conf, sk_redis_t *r, int64_t vid);
/** @brief 1 if bucket 0's users hash of @p vid holds @p uid (fixture). */
int sk_test_has_user(int64_t vid, int64_t uid);
/** @brief 1 if bucket 0's users hash maps @p uid to trace @p trace (fixture). */
int sk_test_user_is(int64_t vid, int64_t uid, int64_t trace);
/** @brief 1 if bucket 0's trace hash of @p vid holds field T:@p suffix of @p trace
 *  (sk_field_trace: 'r' fence, 'c' claim...). */
int sk_test_trace_field(int64_t vid, int64_t trace, char suffix);
/** @brief 1 if bucket 0's trace hash of @p vid holds the fence T:r of @p trace. */
int sk_test_fenced(int64_t vid, int64_t trace);
/** @brief Every voucher key under @p conf's prefix ("key|ttl-flag|hex(DUMP)" lines,
 *  sorted) as one malloc'd string: equal snapshots mean no voucher key was written.
 *  Walks every master of a Cluster. */
char *sk_test_snapshot(const sk_conf_t *conf, sk_redis_t *r);
