/* sk/claim.h: calling claim.lua and reading its replies (DESIGN.md 4 claim.lua, 7, 8),
 * written once for the consumer (`consume` of a batch's traceIds, synchronous or
 * pipelined on a second connection) and the reconciler (`claim`, `failed`, `sent`).
 *
 * A call is built into a caller-owned sk_claim_call_t (keys, ids and argument strings
 * live inside it), then run with sk_claim_run() (blocking; NOSCRIPT handled by
 * sk_redis_evalsha) or sent with sk_claim_append() (pipelined: the caller reads the
 * reply with redisGetReply on the same context), and its reply parsed with
 * sk_claim_parse_consume() or sk_claim_parse_op(). Reply shapes: sk/scripts.h.
 * Pure apart from the Redis I/O of run/append; not thread-safe per call object. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <hiredis/hiredis.h>
#include "sk/err.h"
#include "sk/ids.h"
#include "sk/keys.h"
#include "sk/redis.h"
#include "sk/traceset.h"

/* claim.lua `consume` takes at most this many traceIds per call (bounds the script's
 * run time: Redis is single-threaded). */
#define SK_CLAIM_CHUNK 1000

/* The single-trace operations of the reconciler. */
typedef enum { SK_CLAIM_OP_CLAIM, SK_CLAIM_OP_FAILED, SK_CLAIM_OP_SENT } sk_claim_op_t;

typedef struct sk_claim_call {
        char k_meta[SK_KEY_MAX], k_trace[SK_KEY_MAX];
        char extra[24], part[16], off[24];
        const char *keys[2];
        const char **args;               /* op, expire_extra_ms, then the op's own */
        int nargs;
        int nids;                        /* traceIds in the call */
        char (*ids)[SK_ID_STRLEN];       /* their strings */
        const char *args_one[5];         /* storage of a single-trace call */
        char id_one[SK_ID_STRLEN];
} sk_claim_call_t;

/** @brief Build claim.lua `consume` for @p n (1..SK_CLAIM_CHUNK) traceIds of voucher
 *  @p voucher_id whose DEDUCT entries are in bucket @p bucket (the trace's bucket): keys under @p prefix (borrowed, copied), ids formatted as strings
 *  (never through doubles). @p expire_extra_ms: reconcile window + 1 day, in ms.
 *  @returns SK_OK (free with sk_claim_call_free()), SK_EINVAL for n out of range,
 *  SK_ENOMEM. */
sk_err_t sk_claim_consume_init(sk_claim_call_t *call, const char *prefix, int64_t voucher_id,
                               int bucket,
                               int64_t expire_extra_ms, const int64_t *trace_ids, int n,
                               char *errstr, size_t errstr_size);
/** @brief Build claim.lua @p op for one trace in bucket @p bucket of the voucher. @p partition (0..) and @p offset (>= 0)
 *  are used by SK_CLAIM_OP_SENT only. Allocates nothing; sk_claim_call_free() is
 *  still allowed. @returns SK_OK or SK_EINVAL (bad op, negative partition/offset). */
sk_err_t sk_claim_op_init(sk_claim_call_t *call, const char *prefix, int64_t voucher_id, int bucket,
                          sk_claim_op_t op, int64_t expire_extra_ms, int64_t trace_id,
                          int32_t partition, int64_t offset, char *errstr, size_t errstr_size);
/** @brief Free what sk_claim_consume_init allocated. Safe on a zeroed call. */
void sk_claim_call_free(sk_claim_call_t *call);

/** @brief Run @p call on @p r and wait (sk_redis_evalsha: NOSCRIPT -> SCRIPT LOAD, one
 *  retry). *reply is owned by the caller on SK_OK. Errors as sk_redis_evalsha:
 *  SK_EAGAIN did not run, SK_EUNKNOWN may have run (claim.lua is idempotent for
 *  `consume`; `claim`/`failed` count again), SK_EINVAL argument refused. */
sk_err_t sk_claim_run(sk_redis_t *r, const sk_claim_call_t *call, redisReply **reply,
                      char *errstr, size_t errstr_size);
/** @brief Pipeline @p call on @p ctx (borrowed) and flush it; the reply is read later
 *  with redisGetReply on @p ctx. Needs the script's SHA already known in this process
 *  (sk_script_sha), else SK_EAGAIN and nothing is sent. @returns SK_OK, SK_EAGAIN (not
 *  sent: no SHA), SK_EUNKNOWN (I/O error while writing: the context is broken),
 *  SK_ENOMEM. A NOSCRIPT reply to a pipelined call is the caller's to handle. */
sk_err_t sk_claim_append(redisContext *ctx, const sk_claim_call_t *call,
                         char *errstr, size_t errstr_size);

/** @brief Parse a `consume` reply for @p n traceIds: fenced[i] = 1 if the i-th traceId
 *  of the call is RESTORED (the front fenced it first), else 0. @p reply borrowed.
 *  @returns SK_OK, or SK_EREDIS for an error reply or an unexpected shape. */
sk_err_t sk_claim_parse_consume(const redisReply *reply, int n, int *fenced,
                                char *errstr, size_t errstr_size);
/** @brief Parse a `claim`/`failed`/`sent` reply: *restored = 1 for {"RESTORED"}
 *  (nothing written; *rec zeroed), else the record after the call in *rec (partition
 *  and offset -1 when no re-drive is recorded). @returns SK_OK or SK_EREDIS. */
sk_err_t sk_claim_parse_op(const redisReply *reply, int *restored, sk_claim_rec_t *rec,
                           char *errstr, size_t errstr_size);
