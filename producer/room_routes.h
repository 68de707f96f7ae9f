/* producer/room_routes.h: the waiting room's HTTP routes (DESIGN.md 3, 18): GET
 * /api/v1/vouchers/{id} (public facts), POST|GET /api/v1/vouchers/{id}/queue (join, the
 * member's state), served on the room pool (its own Redis and DB connections); and the
 * purchase's admission check of a queued voucher: the token on the HTTP thread (403 10014,
 * no I/O), the used bit in the deduct worker before deduct.lua, cleared after a 503. */
#pragma once
#include <stddef.h>
#include <microhttpd.h>
#include "req.h"
#include "sk/redis.h"

typedef enum { FR_ROOM_OP_VOUCHER = 1, FR_ROOM_OP_JOIN, FR_ROOM_OP_POLL } fr_room_op_t;

/** Start / stop the room pool and the tick thread (main thread). Installs the answer
 *  hook of req.h. @returns 0, or -1 with the reason. */
int fr_room_routes_start(char *errstr, size_t errstr_size);
void fr_room_routes_stop(void);

/** Route a room request (HTTP thread; ids valid, req->voucher_id set; for JOIN and POLL
 *  the buyer identified, req->user_id set): 503 without keys (JOIN/POLL), else onto the
 *  room pool (bounded: 503 beyond it). Answers through req.h. */
void fr_room_route(fr_req_t *req, struct MHD_Connection *conn, fr_room_op_t op);

/** The admission check of a purchase (HTTP thread, after identity and ids; DESIGN.md 18
 *  order: voucher known, window 10002/10003, then the admission 403 10014). Not a queued
 *  voucher: 0 and nothing set. A valid X-Admission for this caller and voucher: 0 with
 *  req->q_pos, q_gen, q_room set (the purchase then bypasses the local sold-out cache).
 *  Otherwise answered (403, or 503 without keys) and -1. No I/O. */
int fr_room_purchase_check(fr_req_t *req, struct MHD_Connection *conn);

/** The used bit of a queued purchase (deduct worker, on its connection @p r, before
 *  deduct.lua): 0 to go on (set now, or a token of another generation: not counted);
 *  -1 answered (403 10014 already used; 503 Redis). Nothing for other purchases. */
int fr_room_purchase_use(sk_redis_t *r, fr_req_t *req);
