/* producer/orders.h: cancel of seckill-front (DESIGN.md 3, 13), served by the lookup
 * pool's threads (orders.c). */
#pragma once
#include "req.h"
#include "sk/db.h"
#include "sk/redis.h"

/** Serve a cancel request (req->lookup FR_LOOKUP_CANCEL) on a
 *  lookup thread's connections: *db and *r are connected lazily and closed and set to
 *  NULL after an error (the caller owns them). Answers @p req once. */
void fr_order_action(fr_req_t *req, sk_db_t **db, sk_redis_t **r);
