/* producer/rollback.h: the front's rollback worker (DESIGN.md 7, 8): rollback.lua mode
 * front fences a purchase the front gives up on, never on a purchase thread. */
#pragma once
#include <stddef.h>

#include "req.h"

/** Start the worker (its own Redis connection). @returns 0 or -1. */
int fr_rollback_start(void);
/** Fence @p req (takes over the pipeline's reference): OK or ALREADY -> 503 FAILED
 *  (PENDING when the master has replicas and none acknowledged the fence within
 *  `WAIT 1 100`, DESIGN.md 4b);
 *  CLAIMED or a rollback that could not run -> 503 PENDING (while the Redis breaker is
 *  open at once; the slot is released and the fence retried in the background, DESIGN.md
 *  12). After the worker stopped
 *  (shutdown) no fence is written: 503 PENDING, the reconciler settles the DEDUCT.
 *  Thread-safe. */
void fr_rollback_submit(fr_req_t *req);
/** Close the queue, let the worker drain it, join it. Call once nothing can submit any
 *  more (deduct workers and the Kafka poll thread joined). */
void fr_rollback_stop(void);
/** Requests waiting for the worker, plus fences parked in its backlog (a gauge). */
size_t fr_rollback_depth(void);
