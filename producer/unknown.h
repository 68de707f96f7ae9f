/* producer/unknown.h: the front's cache of voucher ids the database does not know
 * (DESIGN.md 15 "Cost of hostile input"): a purchase of a voucher whose 10004 check
 * answered 404 less than SECKILL_SOLDOUT_CACHE_MS ago is answered 404/10004 by the
 * HTTP thread, with no Redis command and no DB query, so a flood of made-up ids costs
 * one DB query per id per period. The table is soldout_table.h's, one bucket per
 * voucher; this file owns the instance and its metric
 * (seckill_front_unknown_voucher_cache_hits_total). */
#pragma once
#include <stdint.h>

#include "req.h"

/** Create the cache for @p ttl_ms (SECKILL_SOLDOUT_CACHE_MS; 0 = off). Once, in main()
 *  before any thread starts, after fr_metrics_init(). Out of memory: logged, the front
 *  runs without it. */
void fr_unknown_init(int ttl_ms);
/** Free the cache (exit, after every thread stopped). */
void fr_unknown_destroy(void);
/** HTTP thread: 1 if @p req's voucher is cached unknown now (the caller answers
 *  404/10004 at once; counted here), else 0. Lock-free, thread-safe. */
int fr_unknown_hit(const fr_req_t *req);
/** The 10004 check that started at @p checked_mono_ms (before its query) found
 *  @p req's voucher unknown (or not on sale): remember it. Thread-safe. */
void fr_unknown_note(const fr_req_t *req, int64_t checked_mono_ms);
