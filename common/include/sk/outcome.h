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

typedef enum { SK_OUTCOME_CREATED = 1, SK_OUTCOME_FAILED = 2 } sk_outcome_kind_t;

typedef enum {
        SK_REASON_NONE = 0,
        SK_REASON_SOLD_OUT,        /* DB stock exhausted: release user, no restore, clamp */
        SK_REASON_HAS_ORDER,       /* user already has an active order: restore, keep user */
        SK_REASON_LOST,            /* re-drives exhausted: restore and release */
        SK_REASON_FRONT_ROLLBACK,  /* the front fenced it: restore and release */
} sk_reason_t;

typedef struct sk_outcome {
        int64_t trace_id, order_id, user_id, voucher_id;
        int outcome;               /* sk_outcome_kind_t */
        sk_reason_t reason;
        char reason_str[64];       /* as stored */
} sk_outcome_t;

const char *sk_reason_str(sk_reason_t r);
/** @returns 0 and *out, or -1 for an unknown string. */
int sk_reason_parse(const char *s, sk_reason_t *out);
/** @brief rollback.lua flags of DESIGN.md 4 for @p r. *clamp = 1: clamp to DB stock. */
void sk_reason_flags(sk_reason_t r, int *restore, int *release, int *clamp);

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
 *  Transient DB errors: SK_EAGAIN (nothing committed). */
sk_err_t sk_outcome_fail(sk_db_t *db, const sk_order_msg_t *msg, sk_reason_t reason,
                         const char *detail, sk_outcome_t *existing,
                         char *errstr, size_t errstr_size);

typedef struct sk_rollback_res {
        int already;     /* T:r existed: nothing done now */
        int claimed;     /* mode front and T:c existed: nothing done */
        int restored, released, clamped;
        int home;        /* h, the home bucket rollback.lua named (-1: not told) */
        int home_run;    /* home.lua ran on h != j (DESIGN.md 4 "Home step") */
} sk_rollback_res_t;

/** Where and how rollback.lua runs (DESIGN.md v4 4): bucket j holds T. */
typedef struct sk_rollback_at {
        int bucket;          /* j, 0..SK_BUCKETS_MAX-1 */
        int home;            /* h of T's user when known (the DEDUCT entry says it too), -1 */
        int no_home_step;    /* 1: never run home.lua (a stray take, DESIGN.md 14) */
        int64_t repoint;     /* has_order: the trace T0 of the user's active order, 0 none */
} sk_rollback_at_t;

/** @brief Run rollback.lua for the trace with the flags of @p reason. @p mode:
 *  "front", "consumer" or "reconciler". @p clamp_to: DB stock for sold_out (else -1).
 *  @p user_id: fallback when T is missing (0 = none). @p expire_extra_ms: reconcile
 *  window + 1 day. Errors as sk_redis_evalsha (SK_EUNKNOWN: the caller retries; the
 *  script is idempotent). */
sk_err_t sk_rollback_run(sk_redis_t *r, const char *prefix, int64_t voucher_id,
                         int64_t trace_id, int64_t user_id, const char *mode,
                         sk_reason_t reason, int64_t clamp_to, int64_t expire_extra_ms,
                         sk_rollback_res_t *res, char *errstr, size_t errstr_size);
/** @brief sk_rollback_run on bucket @p at->bucket, then, when rollback.lua answers OK or
 *  ALREADY with a home bucket h != j and @p user_id > 0 (and not @p at->no_home_step),
 *  the home step: home.lua on h (sk_home_run; res->home_run, res->released). Errors as
 *  sk_rollback_run; a failed home step returns its error with res still describing the
 *  rollback (idempotent: the caller retries the pair). DESIGN.md v4 4 "rollback.lua",
 *  "Home step". Thread-safety: as the connection @p r. */
sk_err_t sk_rollback_run_at(sk_redis_t *r, const char *prefix, int64_t voucher_id,
                            const sk_rollback_at_t *at, int64_t trace_id, int64_t user_id,
                            const char *mode, sk_reason_t reason, int64_t clamp_to,
                            int64_t expire_extra_ms, sk_rollback_res_t *res, char *errstr,
                            size_t errstr_size);

/** @brief home.lua on the home bucket @p home of voucher @p voucher_id for trace
 *  @p trace_id of user @p user_id (> 0) whose stock is in bucket @p bucket (-1: no bucket
 *  admitted it): fence T:r in h when j != h, then users[U] deleted (or re-pointed to
 *  @p repoint > 0) only if it names T. *released / *repointed / *fenced (each may be NULL)
 *  report what it did. Idempotent. Errors as sk_redis_evalsha (SK_EINVAL bad argument,
 *  SK_EREDIS unexpected reply). DESIGN.md v4 4 "Home step". */
sk_err_t sk_home_run(sk_redis_t *r, const char *prefix, int64_t voucher_id, int home,
                     int bucket, int64_t trace_id, int64_t user_id, int64_t repoint,
                     sk_reason_t reason, int64_t expire_extra_ms, int *fenced, int *released,
                     int *repointed, char *errstr, size_t errstr_size);

/** @brief Reconcile window + 1 day, in ms, from conf->reconcile_window_hours. */
int64_t sk_expire_extra_ms(int reconcile_window_hours);
