/* producer/deduct.h: the Redis deduct workers of seckill-front (DESIGN.md 4, 8): they
 * pipeline EVALSHA deduct.lua for batches of purchases and apply the unknown-outcome
 * rules (repeat the same traceId, then fence). */
#pragma once
#include <stddef.h>

#include "req.h"

/** Start --redis-workers threads (each with its own Redis connection). @returns 0 or -1. */
int fr_deduct_start(void);
/** Queue purchase @p req (ids minted; takes over the pipeline's reference). After the
 *  workers stopped: 503 shutdown (the deduct never ran). Thread-safe. */
void fr_deduct_submit(fr_req_t *req);
/** Close the queue, let the workers drain it, join them. */
void fr_deduct_stop(void);
/** Purchases waiting for a worker (a gauge). */
size_t fr_deduct_depth(void);
