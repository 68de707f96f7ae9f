/* sk/home.h: the home step of a purchase (DESIGN.md 4 "Home step"): home.lua on the user's
 * home bucket h, run after rollback.lua or release.lua on the trace's bucket j != h, after
 * the front gives up on a probing purchase, after every probed bucket answered empty, and
 * also after an ALREADY answer, so an interrupted two-script sequence always completes.
 * Idempotent per traceId. Functions take a caller-owned connection; thread-safe as far as
 * that connection is used by one thread. */
#pragma once
#include <stdint.h>
#include "sk/err.h"
#include "sk/reason.h"
#include "sk/redis.h"

typedef struct sk_home_res {
        int fenced;      /* T:r written in h now (j != h, or no bucket admitted T) */
        int released;    /* users[U] named T and was deleted */
        int repointed;   /* users[U] named T and now names @p repoint_trace_id */
} sk_home_res_t;

/** @brief home.lua on bucket @p home of @p voucher_id for trace @p trace_id of user
 *  @p user_id (> 0): when @p trace_bucket != @p home (or @p trace_bucket < 0: no bucket
 *  admitted T) write the fence T:r in h if missing; then, only if users[U] names T,
 *  re-point it to @p repoint_trace_id (> 0: has_order), delete it (0), or leave it (< 0:
 *  a reason that keeps the user, has_order without its T0). @p reason names
 *  the cause in the fence (sk_reason_str). @p expire_extra_ms: reconcile window + 1 day.
 *  *res receives what the script did. Errors as sk_redis_evalsha (SK_EUNKNOWN: repeat
 *  it, it is idempotent; SK_EINVAL: bad argument, nothing written). */
sk_err_t sk_home_step(sk_redis_t *r, const char *prefix, int64_t voucher_id, int home,
                      int64_t trace_id, int64_t user_id, int trace_bucket,
                      int64_t repoint_trace_id, sk_reason_t reason, int64_t expire_extra_ms,
                      sk_home_res_t *res, char *errstr, size_t errstr_size);

/** The shortest life of a give-up fence f:T, in ms (DESIGN.md 4 "Give-up fence"): the
 *  ±5 s window of deduct.lua's `ts` accepts a delayed copy of T's first deduct for 10 s,
 *  plus 1 s of clock skew between Redis hosts across a failover. */
#define SK_GIVEUP_FENCE_MIN_MS 11000

/** @brief The PX of a give-up fence f:T, in ms: max(@p deadline_ms (the request
 *  deadline, 2 x delivery timeout + 1 s), SK_GIVEUP_FENCE_MIN_MS) (DESIGN.md 4 "Give-up
 *  fence"). Pure; any thread. */
int64_t sk_giveup_fence_px_ms(int64_t deadline_ms);

/** @brief The give-up of a purchase that took nothing anywhere (DESIGN.md 4 "Give-up
 *  fence"; every probed bucket answered empty): home.lua on bucket @p home with the
 *  give-up fence key: SET f:T PX sk_giveup_fence_px_ms(@p deadline_ms) (@p deadline_ms
 *  > 0: the request deadline, 2 x delivery timeout + 1 s; the fence outlives it and
 *  every delayed copy of the deduct that deduct.lua still accepts) in place of T:r, HDEL
 *  T:h, and users[U] deleted if it names T, so a buyer who got nothing leaves nothing
 *  lasting in Redis while a late deduct of T stays FENCED. res->fenced = 1 (f:T written),
 *  res->released as sk_home_step. Idempotent. Errors as sk_home_step. */
sk_err_t sk_home_give_up(sk_redis_t *r, const char *prefix, int64_t voucher_id, int home,
                         int64_t trace_id, int64_t user_id, int64_t deadline_ms,
                         sk_home_res_t *res, char *errstr, size_t errstr_size);

/** @brief settle.lua on bucket @p home (DESIGN.md 4 "settle"): T:h = @p bucket if it says
 *  probing. *state: 1 settled now, 0 T:h named a bucket already, -1 no T:h. Errors as
 *  sk_redis_evalsha (SK_EUNKNOWN: repeat it, it is idempotent). */
sk_err_t sk_home_settle(sk_redis_t *r, const char *prefix, int64_t voucher_id, int home,
                        int64_t trace_id, int bucket, int *state, char *errstr,
                        size_t errstr_size);
