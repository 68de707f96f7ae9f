/* producer/lookup.h: the lookup pool of seckill-front (DESIGN.md 3): GET .../orders/me,
 * GET /api/v1/orders/{id} and cancel; and the DB check behind a 10004 from deduct.lua,
 * on its own small queue and thread (DESIGN.md 15). */
#pragma once
#include <stddef.h>

#include "req.h"

/** Start --lookup-threads threads and the one 10004 check thread (each with its own
 *  Redis and DB connection, made lazily). @returns 0, or -1 with @p errstr. */
int fr_lookup_start(char *errstr, size_t errstr_size);
/** Queue @p req (req->lookup says which job and so which queue: a 10004 check waits on
 *  its own, at most 32 deep; takes over the pipeline's reference; the request is
 *  answered and released by the pool; a full queue answers 503 + Retry-After at once).
 *  Thread-safe. */
void fr_lookup_submit(fr_req_t *req);
/** Close the queue, drain it, join the threads. After the deduct workers stopped (they
 *  may still submit 10004 checks). */
void fr_lookup_stop(void);
/** Jobs waiting for a thread, both queues (a gauge). */
size_t fr_lookup_depth(void);
