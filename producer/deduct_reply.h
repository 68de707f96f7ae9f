/* producer/deduct_reply.h: what a deduct.lua reply means for the purchase (DESIGN.md 3,
 * 4, 8). Used by the deduct workers (deduct.c) for pipelined and single EVALSHAs. */
#pragma once
#include <stddef.h>
#include <hiredis/hiredis.h>

#include "req.h"

/* An error reply to EVALSHA deduct.lua. */
typedef enum {
        FR_DEDUCT_ERR_NOSCRIPT = 0,     /* script cache lost: load it and run again */
        FR_DEDUCT_ERR_NOT_RUN,          /* refused before running (DESIGN.md 8): nothing to undo */
        FR_DEDUCT_ERR_INVALID,          /* ERR SKARG: an argument was refused before any write */
        FR_DEDUCT_ERR_UNKNOWN,          /* the script ran and failed: it may have written */
} fr_deduct_err_t;

/** Classify the error reply text @p s (@p len bytes). Only the refusals DESIGN.md 8
 *  lists (BUSY, LOADING, READONLY, OOM, NOSCRIPT; TRYAGAIN, CLUSTERDOWN, MASTERDOWN,
 *  NOREPLICAS refuse before running) and deduct.lua's own argument check mean "did not
 *  run"; any other error (e.g. an old Redis refusing PEXPIREAT ... NX after DECRBY) is
 *  an unknown outcome. Pure. */
fr_deduct_err_t fr_deduct_error_kind(const char *s, size_t len);

/** The script ran and answered @p reply (borrowed; the caller frees it). Continues or
 *  answers @p req and takes over its pipeline reference: OK/REPLAY -> publish;
 *  OVERFLOW/PROBING/SETTLED -> the probe workers (probe.h, DESIGN.md 4 overflow probing);
 *  FENCED -> 503 FAILED; REJECT -> 4xx (10004: the lookup pool's DB check picks 404,
 *  403/10003 or 503; 10013: 503 paused); COLLISION -> 503, alert metric, nothing to
 *  undo (DESIGN.md 4); anything else -> rollback (fence: the script may have written).
 *  Thread-safe. */
void fr_deduct_ran(fr_req_t *req, const redisReply *reply);
