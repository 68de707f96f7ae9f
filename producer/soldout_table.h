/* producer/soldout_table.h: the front's local sold-out cache (DESIGN.md 4, "Local sold-out cache";
 * DESIGN.md 3: 10005 without a Redis call; DESIGN.md 9 invariant 5: bounded staleness).
 *
 * Per (voucher, bucket) it remembers when a deduct last answered "bucket b of V empty";
 * a voucher is a hit while every one of its buckets is remembered empty and no mark is
 * older than the cache's ttl. Marks expire by themselves, so a restore (rollback,
 * release, add-stock, rebuild) is seen within ttl after it happened, as long as each
 * mark's time is taken no later than the moment its deduct ran in Redis (the front uses
 * the request's start time).
 *
 * Times are caller-supplied milliseconds of one clock (the front uses sk_mono_ms());
 * the cache never reads a clock, so it is pure and testable.
 *
 * Memory is fixed at creation: an open-addressing table of `slots` voucher entries, each
 * with SK_SOLDOUT_MAX_BUCKETS mark times; a voucher lives in one of a few slots after its
 * hash (a short probe window). When the window is full the stalest entry is evicted:
 * eviction and expiry only ever cost a Redis call, never a wrong 10005.
 *
 * Thread-safety: lookups (HTTP threads) take no lock: each slot has a sequence counter
 * (a seqlock) that a lookup re-checks, so a slot being handed to another voucher is a
 * miss, never another voucher's marks. Marks (deduct workers, rare once a voucher is
 * cached) are serialised by one mutex. No allocation after sk_soldout_new(). */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "sk/model.h"

/* DESIGN.md 14: a voucher has 1..SK_BUCKETS_MAX buckets. */
#define SK_SOLDOUT_MAX_BUCKETS SK_BUCKETS_MAX

typedef struct sk_soldout sk_soldout_t;

/** @brief A cache of @p slots voucher entries (rounded up to a power of two, at least
 *  16) whose marks are fresh for @p ttl_ms (> 0) milliseconds.
 *  @returns the cache (owned by the caller, freed with sk_soldout_free()), or NULL if
 *           @p ttl_ms <= 0, @p slots is 0 or above 2^20, or memory is short (ENOMEM:
 *           the caller runs without a cache, every purchase goes to Redis). */
sk_soldout_t *sk_soldout_new(size_t slots, int64_t ttl_ms);

/** @brief Free @p c. No thread may use it afterwards. NULL is a no-op. */
void sk_soldout_free(sk_soldout_t *c);

/** @brief Remember that bucket @p bucket (0..@p nbuckets-1) of voucher @p voucher_id
 *  (> 0), which has @p nbuckets (1..SK_SOLDOUT_MAX_BUCKETS) buckets, answered sold out
 *  (10005) to a deduct sent at or after @p seen_ms. A mark never moves a bucket's time
 *  back. A voucher seen with another bucket count starts over (its marks are dropped).
 *  Out-of-range arguments or a NULL cache: nothing is marked (never an error: the
 *  cache only saves Redis calls). Thread-safe (one mutex among markers; lookups go on). */
void sk_soldout_mark(sk_soldout_t *c, int64_t voucher_id, int bucket, int nbuckets,
                     int64_t seen_ms);

/** @brief 1 if every bucket of @p voucher_id is remembered empty and each mark is
 *  fresh at @p now_ms (now_ms − mark < ttl); 0 otherwise, for a NULL cache, for an
 *  unknown voucher, or when the entry is being replaced at that moment. On 1 the front
 *  answers 409/10005 without Redis (DESIGN.md 3, 4). Thread-safe, lock-free. */
int sk_soldout_all_empty(const sk_soldout_t *c, int64_t voucher_id, int64_t now_ms);

/** @brief 1 if bucket @p bucket of @p voucher_id is remembered empty and its mark is
 *  fresh at @p now_ms, else 0 (as sk_soldout_all_empty). For probing buckets: a bucket
 *  cached empty is skipped (DESIGN.md 14). Thread-safe, lock-free. */
int sk_soldout_bucket_empty(const sk_soldout_t *c, int64_t voucher_id, int bucket,
                            int64_t now_ms);
