/* sk/outcome.h: the one decision per purchase (DESIGN.md 7): the tb_seckill_outcome row
 * of a traceId, FAILED outcomes with their RESTORE reconcile-log rows, and rollback.lua
 * with the flags each failure reason implies. Used by the consumer and the reconciler
 * (the front never writes the DB). Functions take caller-owned connections; not
 * thread-safe beyond that. */
#pragma once
#include <stdint.h>
#include "sk/err.h"
#include "sk/db.h"
#include "sk/redis.h"
#include "sk/msg.h"
#include "sk/model.h"
#include "sk/reason.h"


typedef struct sk_outcome {
        int64_t trace_id, order_id, user_id, voucher_id;
        int outcome;               /* sk_outcome_kind_t */
        sk_reason_t reason;
        char reason_str[64];       /* as stored */
} sk_outcome_t;


/** @brief Read the outcome of @p trace_id. @returns SK_OK, SK_ENOTFOUND, or DB errors
 *  (SK_EAGAIN transient). */
sk_err_t sk_outcome_get(sk_db_t *db, int64_t trace_id, sk_outcome_t *out,
                        char *errstr, size_t errstr_size);
/** @brief 1 if @p o names the same order_id, user_id, voucher_id as @p msg. */
int sk_outcome_matches(const sk_outcome_t *o, const sk_order_msg_t *msg);

/** @brief In its own committed transaction: INSERT the FAILED outcome of @p msg with
 *  @p reason and a RESTORE reconcile-log row (original trace_id, log_type 1,
 *  business_type 3, @p detail). On a duplicate key: SK_EEXIST with the existing row in
 *  *existing (compare with sk_outcome_matches: a mismatch is a collision).
 *  1213/1205: the whole transaction again (3 runs). A COMMIT whose outcome is unknown
 *  (DESIGN.md 16, sk/db_outcome.h): the trace's outcome row is read on a fresh
 *  session (wsrep_sync_wait = 1 on Galera): ours (FAILED, this reason, msg's ids) ->
 *  SK_OK; another decision -> SK_EEXIST as above; none -> the same transaction again.
 *  Transient DB errors: SK_EAGAIN — nothing committed, except when the resolution read
 *  itself failed (errstr says "outcome unknown"): then the caller's retry meets its own
 *  row by the trace id's key (SK_EEXIST, a FAILED to follow), never a second one. The
 *  connection may have been reconnected (never inside a transaction on return). */
sk_err_t sk_outcome_fail(sk_db_t *db, const sk_order_msg_t *msg, sk_reason_t reason,
                         const char *detail, sk_outcome_t *existing,
                         char *errstr, size_t errstr_size);

typedef struct sk_rollback_res {
        int already;     /* T:r existed: nothing done now */
        int claimed;     /* mode front and T:c existed: nothing done */
        int restored, released, clamped;
        int repointed;   /* has_order: users[U] now names the active order's trace */
        int home;        /* h, the home bucket of T's user (rollback.lua's answer; -1 with
                          * CLAIMED) */
        int home_done;   /* sk_rollback_run: the home step on h != j ran (OK or ALREADY) */
} sk_rollback_res_t;

/* One rollback.lua call on the trace's bucket (DESIGN.md 4). */
typedef struct sk_rollback_args {
        int64_t voucher_id;
        int bucket;                /* j: the bucket that holds T (0..SK_BUCKETS_MAX-1) */
        int home;                  /* h when the caller knows it (-1: T's "home", else j) */
        int64_t trace_id;
        int64_t user_id;           /* fallback when T is missing (0 = none) */
        const char *mode;          /* "front", "consumer" or "reconciler" */
        sk_reason_t reason;        /* flags of DESIGN.md 4 "Flags by reason" */
        int64_t clamp_to;          /* DB stock of bucket j for sold_out, else -1 */
        int64_t repoint_trace_id;  /* has_order: trace T0 of the active order (0 = none) */
        int64_t expire_extra_ms;   /* reconcile window + 1 day */
} sk_rollback_args_t;

/** @brief rollback.lua alone on bucket @p a->bucket (no home step on another bucket: the
 *  caller runs sk_home_step() on res->home when it differs from the bucket, after OK and
 *  after ALREADY, not after CLAIMED). Errors as sk_redis_evalsha (SK_EUNKNOWN: repeat
 *  it; the script is idempotent); SK_EINVAL for a bad argument (nothing sent). */
sk_err_t sk_rollback_bucket(sk_redis_t *r, const char *prefix, const sk_rollback_args_t *a,
                            sk_rollback_res_t *res, char *errstr, size_t errstr_size);

/** @brief sk_rollback_bucket on bucket @p a->bucket, then the home step (sk/home.h) on
 *  res->home when it differs from the bucket (after OK and after ALREADY, not after
 *  CLAIMED; res->home_done): users[U] re-pointed to @p a->repoint_trace_id when given,
 *  else deleted when the reason releases the user, else only h fenced. Needs
 *  a->user_id > 0 for the home step (SK_EINVAL). Errors as sk_rollback_bucket and
 *  sk_home_step (both idempotent: the caller repeats the pair). DESIGN.md 4. */
sk_err_t sk_rollback_trace(sk_redis_t *r, const char *prefix, const sk_rollback_args_t *a,
                           sk_rollback_res_t *res, char *errstr, size_t errstr_size);

/** @brief Run rollback.lua for the trace with the flags of @p reason on bucket @p bucket
 *  (0..15, the trace's bucket), then the home step (sk/home.h) when T's home bucket is
 *  another one (after OK and after ALREADY; res->home_done): sk_rollback_trace. @p mode:
 *  "front", "consumer" or "reconciler". @p clamp_to: DB stock for sold_out (else -1).
 *  @p user_id: fallback when T is missing (0 = none). @p expire_extra_ms: reconcile
 *  window + 1 day. Errors as sk_redis_evalsha (SK_EUNKNOWN: the caller retries; the
 *  script is idempotent). */
sk_err_t sk_rollback_run(sk_redis_t *r, const char *prefix, int64_t voucher_id, int bucket,
                         int64_t trace_id, int64_t user_id, const char *mode,
                         sk_reason_t reason, int64_t clamp_to, int64_t expire_extra_ms,
                         sk_rollback_res_t *res, char *errstr, size_t errstr_size);
/** @brief Reconcile window + 1 day, in ms, from conf->reconcile_window_hours. */
int64_t sk_expire_extra_ms(int reconcile_window_hours);
