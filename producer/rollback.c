/* producer/rollback.c: the rollback worker of seckill-front (producer/rollback.h). One
 * thread with its own Redis connection runs rollback.lua mode front (sk_rollback_run)
 * for purchases the front gives up on: a NOT_PERSISTED delivery or refused produce
 * (publish.c), a deduct whose outcome stays unknown or whose reply makes no sense
 * (deduct.c). The script is idempotent, so an unknown outcome is simply repeated.
 * Owns its queue. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "front.h"
#include "metrics.h"
#include "queue.h"
#include "rollback.h"
#include "sk/clock.h"
#include "sk/failpoint.h"
#include "sk/log.h"
#include "sk/outcome.h"
#include "sk/redis.h"

#define ROLLBACK_ATTEMPTS 3

static fr_pool_t pool;                  /* the rollback queue and its one worker */

void fr_rollback_submit(fr_req_t *req)
{
        if (fr_queue_push(&pool.q, req) == 0)
                return;
        /* Only after shutdown joined the rollback worker (a report served while the
         * producers are destroyed): no fence now; the DEDUCT stays undecided and the
         * reconciler re-drives it, as for a front killed after the deduct (DESIGN.md 8).
         * Every request was answered by then; this releases the pipeline's reference. */
        SK_LOG(SK_WARN, "rollback_skipped_shutdown", "trace_id=%s voucher_id=%s", req->st, req->sv);
        fr_answer_503(req, "pending", "PENDING", "outcome not yet known");
        fr_req_done(req);
}

/* rollback.lua mode front with up to ROLLBACK_ATTEMPTS tries on *rp (connected here
 * when NULL). @returns SK_OK with @p res, or the last error. */
static sk_err_t run_rollback(sk_redis_t **rp, fr_req_t *req, sk_rollback_res_t *res)
{
        sk_err_t err = SK_EAGAIN;
        char errstr[512];
        int attempt = 0;

        /* Failpoint front.before_rollback: sleep(MS) delays the fence (a test writes a
         * claim meanwhile -> CLAIMED); error = the rollback could not run (-> 503
         * PENDING, the DEDUCT stays for the reconciler). */
        if (SK_FAILPOINT("front.before_rollback"))
                return SK_EAGAIN;
        for (; attempt < ROLLBACK_ATTEMPTS; attempt++) {
                if (!*rp)
                        *rp = sk_redis_connect(&g_fr.conf.redis, FR_REDIS_CMD_TIMEOUT_MS, errstr,
                                               sizeof(errstr));
                if (!*rp) {
                        err = SK_EAGAIN;
                        sk_sleep_ms(100, NULL);
                        continue;
                }
                memset(res, 0, sizeof(*res));
                err = sk_rollback_run(*rp, g_fr.conf.redis_prefix, req->voucher_id, req->trace_id,
                                      req->user_id, "front", SK_REASON_FRONT_ROLLBACK, -1,
                                      g_fr.expire_extra_ms, res, errstr, sizeof(errstr));
                if (err == SK_OK)
                        return SK_OK;
                SK_LOG(SK_WARN, "rollback_retry", "trace_id=%s attempt=%d err=%s reason=\"%s\"",
                       req->st, attempt, sk_err2str(err), errstr);
                if (err != SK_EUNKNOWN && err != SK_EAGAIN)
                        return err;
                if (sk_redis_reconnect(*rp, errstr, sizeof(errstr)) != SK_OK)
                        sk_sleep_ms(100, NULL);
        }
        return err;
}

/* DESIGN.md 7, 8: OK or ALREADY -> 503 FAILED; CLAIMED or failure -> 503 PENDING. */
static void answer_rollback(fr_req_t *req, sk_err_t err, const sk_rollback_res_t *res)
{
        if (err != SK_OK) {
                sk_metric_add(fr_m.rb_error, 1);
                SK_LOG(SK_ERROR, "rollback_failed", "trace_id=%s voucher_id=%s err=%s",
                       req->st, req->sv, sk_err2str(err));
                fr_answer_503(req, "pending", "PENDING", "outcome not yet known");
        } else if (res->claimed) {
                sk_metric_add(fr_m.rb_claimed, 1);
                SK_LOG(SK_INFO, "rollback_claimed", "trace_id=%s", req->st);
                fr_answer_503(req, "pending", "PENDING", "outcome not yet known");
        } else {
                sk_metric_add(res->already ? fr_m.rb_already : fr_m.rb_ok, 1);
                SK_LOG(SK_INFO, "rollback_done", "trace_id=%s already=%d restored=%d released=%d",
                       req->st, res->already, res->restored, res->released);
                fr_answer_503(req, "failed", "FAILED", "purchase failed, nothing taken");
        }
}

static void *rollback_main(void *arg)
{
        sk_redis_t *r = NULL;

        (void)arg;
        for (;;) {
                fr_req_t *req = fr_queue_pop(&pool.q, 1, 200);
                sk_rollback_res_t res;
                sk_err_t err;

                if (!req) {
                        if (fr_queue_drained(&pool.q))
                                break;
                        continue;
                }
                memset(&res, 0, sizeof(res));
                err = run_rollback(&r, req, &res);
                answer_rollback(req, err, &res);
                fr_req_done(req);
        }
        sk_redis_close(r);
        return NULL;
}

int fr_rollback_start(void)
{
        return fr_pool_start(&pool, 1, rollback_main);
}

void fr_rollback_stop(void)
{
        fr_pool_stop(&pool);
}

size_t fr_rollback_depth(void)
{
        return fr_queue_len(&pool.q);
}
