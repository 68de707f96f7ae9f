/* producer/probe.h: overflow probing of seckill-front (DESIGN.md 4): after deduct.lua
 * answered OVERFLOW (or PROBING / SETTLED for a repeat of the purchase), take.lua on the
 * other buckets j = h+1, h+2, ... (mod N), skipping those the local sold-out cache marks
 * empty; an admitted take is settled on h (T:h = j) and published; every probed bucket
 * empty -> the home step and 409/10005; a take whose outcome stays unknown after the
 * repeats ends probing, and any other reason to stop gives up: the rollback worker fences
 * the bucket that may hold a take and runs the home step (rollback.h). */
#pragma once
#include <stddef.h>

#include "req.h"

/** Start the probe workers (each with its own Redis connection). @returns 0 or -1. */
int fr_probe_start(void);
/** Probe for @p req (takes over the pipeline's reference; req->buckets, home, settled
 *  set by deduct_reply.c). After the workers stopped: handed to the rollback worker (the
 *  home step releases the user). Thread-safe. */
void fr_probe_submit(fr_req_t *req);
/** Close the queue, let the workers drain it, join them. Before fr_rollback_stop. */
void fr_probe_stop(void);
/** Purchases waiting for a probe worker (a gauge). */
size_t fr_probe_depth(void);
