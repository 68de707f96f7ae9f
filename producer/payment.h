/* producer/payment.h: POST /api/v1/payments/callback of seckill-front (DESIGN.md 3, 13,
 * 15): the payment keys (SECKILL_PAYMENT_KEYS_FILE, re-read on SIGHUP), the signature
 * check and body parse on the HTTP thread, and the payment pool that decides each
 * callback on its own DB connections (never the lookup queue). */
#pragma once
#include <stddef.h>
#include <microhttpd.h>

#include "req.h"
#include "sk/lease.h"

#define FR_PAY_BODY_MAX 4096            /* bytes of a callback body; more -> 413 */
#define FR_PAY_QUEUE_MAX 256            /* callbacks waiting for the pool; more -> 503 */
#define FR_PAY_PATH "/api/v1/payments/callback"

/** Load the payment keys when SECKILL_PAYMENT_KEYS_FILE is set (a configuration error
 *  -- unreadable file, no or short secret -- is -1 with @p errstr: exit 2). Without the
 *  file the route answers 404. Before any thread starts. @returns 0 or -1. */
int fr_payment_init(char *errstr, size_t errstr_size);
/** 1 if the callback route is served (a keys file is configured). Thread-safe. */
int fr_payment_enabled(void);
/** From the main loop (main thread only; called every 100 ms): @p hup 1 (SIGHUP seen)
 *  re-reads the keys file now; otherwise every 10 s it is re-read if its inode, size
 *  or mtime changed (DESIGN.md 15). A failed reload keeps the old keys, logs once per
 *  change and counts seckill_payment_key_reload_failures_total. */
void fr_payment_tick(int hup);
/** HTTP thread, the callback's final handler call (body in req->in_body): 401/10008 for
 *  a missing, malformed, stale or bad signature, 400/10001 for a bad body, 503 when the
 *  pool's queue is full, the front is stopping or @p gen (borrowed: the front's id
 *  generator) has no usable lease; else the delivery gets its nonce (the payment's
 *  attempt_id, a snowflake id of @p gen: DESIGN.md 16 "Answers" (a)), and the request
 *  is suspended and queued for the pool, which answers it. */
void fr_payment_route(fr_req_t *req, struct MHD_Connection *conn, sk_idgen_t *gen);
/** Start SECKILL_FRONT_PAY_THREADS threads (each with its own DB and Redis connection,
 *  made lazily). @returns 0, or -1 with @p errstr. */
int fr_payment_start(char *errstr, size_t errstr_size);
/** Close the queue, drain it, join the threads; then free the keys. */
void fr_payment_stop(void);
