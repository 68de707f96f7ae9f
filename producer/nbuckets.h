/* producer/nbuckets.h: the bucket count N of each voucher the front sells (DESIGN.md 4,
 * 14: fixed for the voucher's life), so a deduct goes to the buyer's home bucket
 * h = sk_home_bucket(user, N) in one round trip. Learned from bucket 0's meta (`buckets`)
 * on the first purchase of a voucher and from deduct.lua's OVERFLOW/PROBING/SETTLED
 * replies; kept in a fixed table (a collision only costs one more read). */
#pragma once
#include <stdint.h>

#include "sk/redis.h"

/** Deduct worker: N of @p voucher_id (1..16), read from bucket 0's meta with @p r on a
 *  miss. @returns N; 1 when the meta has no `buckets` field (a v3 voucher); 0 when that
 *  meta is missing (deduct.lua on bucket 0 then answers 10004 and the DB decides: not
 *  cached); -1 on a Redis error (nothing was written: a read; the caller answers 503).
 *  Thread-safe. */
int fr_nbuckets_get(sk_redis_t *r, int64_t voucher_id);
/** Remember @p n (1..16) for @p voucher_id (from a deduct reply). Thread-safe. */
void fr_nbuckets_learn(int64_t voucher_id, int n);
