/* producer/lookup.h: the lookup pool of seckill-front (DESIGN.md 3): GET .../orders/me,
 * GET /api/v1/orders/{id} and the DB check behind a 10004 from deduct.lua. */
#pragma once
#include <stddef.h>

#include "req.h"

/** Start --lookup-threads threads (each with its own Redis and read-only DB
 *  connection, made lazily). @returns 0, or -1 with @p errstr. */
int fr_lookup_start(char *errstr, size_t errstr_size);
/** Queue @p req (req->lookup says which job; takes over the pipeline's reference; the
 *  request is answered and released by the pool). Thread-safe. */
void fr_lookup_submit(fr_req_t *req);
/** Close the queue, drain it, join the threads. After the deduct workers stopped (they
 *  may still submit 10004 checks). */
void fr_lookup_stop(void);
/** Jobs waiting for a thread (a gauge). */
size_t fr_lookup_depth(void);
