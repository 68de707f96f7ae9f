/* producer/soldout.h: the front's local sold-out cache (DESIGN.md 3, 4 "Local sold-out
 * cache", 9 invariant 5): a purchase of a voucher whose every bucket answered sold out
 * less than SECKILL_SOLDOUT_CACHE_MS ago is answered 409/10005 by the HTTP thread,
 * before an id is minted, an in-flight slot taken or a deduct queued: no Redis command.
 * The pure cache is soldout_table.h; this file owns the front's one instance and its
 * metric (seckill_front_soldout_cache_hits_total). */
#pragma once
#include <stdint.h>

#include "req.h"

/** Create the cache for @p ttl_ms (SECKILL_SOLDOUT_CACHE_MS; 0 = off: no cache, every
 *  purchase goes to Redis). Once, in main() before any thread starts, after
 *  fr_metrics_init(). Out of memory: logged, the front runs without a cache. */
void fr_soldout_init(int ttl_ms);
/** Free the cache (exit, after every thread stopped). */
void fr_soldout_destroy(void);
/** HTTP thread: 1 if @p req's voucher is cached sold out now (the caller answers
 *  409/10005 at once; the hit is counted here), else 0. Lock-free, thread-safe. */
int fr_soldout_hit(const fr_req_t *req);
/** Deduct or probe worker: bucket @p bucket of @p req's voucher (req->buckets buckets)
 *  answered empty (deduct.lua 10005 or OVERFLOW, take.lua 10005). Remembers it as of the
 *  request's start (before its script ran in Redis, so a restore after that is sold
 *  again within the ttl). Thread-safe. */
void fr_soldout_note(const fr_req_t *req, int bucket);
/** Probe worker: 1 if bucket @p bucket of @p req's voucher is remembered empty now (the
 *  probe skips it, DESIGN.md 4), else 0 (also with the cache off). Thread-safe. */
int fr_soldout_bucket_empty(const fr_req_t *req, int bucket);
