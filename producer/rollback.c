/* producer/rollback.c: the rollback worker of seckill-front (producer/rollback.h). One
 * thread with its own Redis connection runs rollback.lua mode front (sk_rollback_run)
 * for purchases the front gives up on: a NOT_PERSISTED delivery or refused produce
 * (publish.c), a deduct whose outcome stays unknown or whose reply makes no sense
 * (deduct.c). The script is idempotent, so an unknown outcome is simply repeated.
 * DESIGN.md 12: a rollback never holds the in-flight cap for a dead Redis. While the
 * Redis breaker of a node it writes (the trace's bucket j, the home h) is open, or once
 * its attempts failed, the purchase is answered 503
 * PENDING at once and its slot released; the fence is then retried in the background
 * from a bounded backlog (ROLLBACK_BACKLOG_MAX, ROLLBACK_BG_TRIES tries, one a second,
 * only while those breakers are closed); what is left over is the reconciler's, as for a
 * front killed after the deduct (DESIGN.md 8). A fence on a replicated master that no
 * replica acknowledged (WAIT 1 100) is answered PENDING, not FAILED (DESIGN.md 4b).
 * Owns its queue and the backlog. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "breaker.h"
#include "front.h"
#include "metrics.h"
#include "pool.h"
#include "rollback.h"
#include "sk/clock.h"
#include "sk/failpoint.h"
#include "sk/home.h"
#include "sk/keys.h"
#include "sk/log.h"
#include "sk/outcome.h"
#include "sk/redis.h"

#define ROLLBACK_ATTEMPTS 3
#define ROLLBACK_BACKLOG_MAX 10000      /* parked fences (answered, slot released) */
#define ROLLBACK_BG_TRIES 30            /* background tries, then the reconciler's */
#define ROLLBACK_BG_PERIOD_MS 1000      /* one background try a second */
#define FENCE_WAIT_MS 100               /* WAIT 1 100 after a fence (DESIGN.md 4b) */

static fr_pool_t pool;                  /* the rollback queue and its one worker */

/* The backlog: fences whose purchase was answered 503 PENDING, linked by qnext (their
 * tries in rb_tries). Worker thread only, except bl_len (a gauge). */
static fr_req_list_t backlog;
static atomic_int bl_len;
static int64_t bl_next_ms;

void fr_rollback_submit(fr_req_t *req)
{
        if (fr_pool_push(&pool, req) == 0)
                return;
        /* Only after shutdown joined the rollback worker (a report served while the
         * producers are destroyed): no fence now; the DEDUCT stays undecided and the
         * reconciler re-drives it, as for a front killed after the deduct (DESIGN.md 8).
         * Every request was answered by then; this releases the pipeline's reference. */
        SK_LOG(SK_WARN, "rollback_skipped_shutdown", "trace_id=%s voucher_id=%s", req->st, req->sv);
        fr_answer_503(req, "pending", "PENDING", "outcome not yet known");
        fr_req_done(req);
}

/* DESIGN.md 4b: after a script that wrote a fence on a master that has replicas, `WAIT 1
 * 100` on the connection that ran it (a Cluster routes WAIT to the node of the previous
 * keyed command, so it is called right after each script: rollback.lua on j and home.lua
 * on h may live on different masters); a failover to a replica that never
 * received the fence would lose it, so without an acknowledgement the answer is PENDING,
 * not FAILED. A standalone server
 * (redis://) counts as replicated only when ROLE lists replicas; Sentinel and Cluster
 * masters always do. @returns 1 if the fence is acknowledged by a replica or the server
 * has none, 0 otherwise (including any error: PENDING is always a safe answer). */
static int fence_acknowledged(sk_redis_t *r)
{
        redisReply *reply = NULL;
        char errstr[256];
        int ok = 0;

        if (sk_redis_kind(r) == SK_REDIS_STANDALONE) {
                if (sk_redis_cmdf(r, &reply, errstr, sizeof(errstr), "ROLE") != SK_OK || !reply)
                        return 0;
                ok = reply->type == REDIS_REPLY_ARRAY && reply->elements >= 3 &&
                     reply->element[0]->type == REDIS_REPLY_STRING &&
                     strcmp(reply->element[0]->str, "master") == 0 &&
                     reply->element[2]->type == REDIS_REPLY_ARRAY && reply->element[2]->elements == 0;
                freeReplyObject(reply);
                reply = NULL;
                if (ok)
                        return 1;       /* no replica: nothing a failover could lose */
        }
        if (sk_redis_cmdf(r, &reply, errstr, sizeof(errstr), "WAIT 1 %d", FENCE_WAIT_MS) == SK_OK &&
            reply && reply->type == REDIS_REPLY_INTEGER)
                ok = reply->integer >= 1;
        else
                SK_LOG(SK_WARN, "fence_wait_failed", "reason=\"%s\"", reply ? "unexpected reply" : errstr);
        freeReplyObject(reply);
        return ok;
}

/* DESIGN.md 4: rollback.lua mode front on the trace's bucket j (req->bucket; -1: no
 * bucket may hold a take of T), then, after OK or ALREADY of an overflowed purchase or of
 * a bucket other than the home, the home step on h (fence h, release users[U]); CLAIMED
 * stops: no home step. Both are idempotent, so a repeat after an unknown outcome is safe.
 * *acked: 1 when every master that received a fence acknowledged it (fence_acknowledged
 * after each script, DESIGN.md 4b). Failpoint rollback.before_home (exit): the fence of
 * j is written, the home step not. */
static sk_err_t rollback_once(sk_redis_t *r, fr_req_t *req, sk_rollback_res_t *res, int *acked,
                              char *errstr, size_t errstr_size)
{
        sk_home_res_t hr;
        sk_err_t err;

        memset(res, 0, sizeof(*res));
        *acked = 1;
        res->home = req->home;
        if (req->bucket >= 0) {
                sk_rollback_args_t a = {
                        .voucher_id = req->voucher_id, .bucket = req->bucket, .home = req->home,
                        .trace_id = req->trace_id, .user_id = req->user_id, .mode = "front",
                        .reason = SK_REASON_FRONT_ROLLBACK, .clamp_to = -1,
                        .expire_extra_ms = g_fr.expire_extra_ms,
                };

                err = sk_rollback_bucket(r, g_fr.conf.redis_prefix, &a, res, errstr, errstr_size);
                if (err != SK_OK || res->claimed)
                        return err;
                *acked = fence_acknowledged(r);
                if (res->home == req->bucket && !req->overflowed)
                        return SK_OK; /* j = h: rollback.lua was the home step */
        }
        if (SK_FAILPOINT("rollback.before_home")) {
                sk_seterr(errstr, errstr_size, "failpoint rollback.before_home");
                return SK_EAGAIN;
        }
        err = sk_home_step(r, g_fr.conf.redis_prefix, req->voucher_id, req->home, req->trace_id,
                           req->user_id, req->bucket, 0, SK_REASON_FRONT_ROLLBACK,
                           g_fr.expire_extra_ms, &hr, errstr, errstr_size);
        if (err == SK_OK) {
                res->released = hr.released;
                *acked = fence_acknowledged(r) && *acked;
        }
        return err;
}

/* The meta key of the bucket rollback.lua runs on (j, or h without one) into @p key. */
static void rb_key(const fr_req_t *req, char *key)
{
        sk_key_voucher(key, g_fr.conf.redis_prefix, req->voucher_id,
                       req->bucket >= 0 ? req->bucket : req->home, SK_KEY_META);
}

/* 1 if the breakers of the nodes this rollback writes (bucket j, home h) are closed
 * (breaker.c; @p r NULL: the front-wide breaker). */
static int rb_allowed(sk_redis_t *r, const fr_req_t *req)
{
        char kj[SK_KEY_MAX], kh[SK_KEY_MAX];

        rb_key(req, kj);
        sk_key_voucher(kh, g_fr.conf.redis_prefix, req->voucher_id, req->home, SK_KEY_META);
        return fr_breaker_allow_key(r, kj) && fr_breaker_allow_key(r, kh);
}

/* rollback.lua mode front with up to ROLLBACK_ATTEMPTS tries on *rp (connected here
 * when NULL). @returns SK_OK with @p res and *acked (rollback_once), or the last error. */
static sk_err_t run_rollback(sk_redis_t **rp, fr_req_t *req, sk_rollback_res_t *res, int *acked)
{
        sk_err_t err = SK_EAGAIN;
        char errstr[512], kj[SK_KEY_MAX];
        int attempt = 0;

        /* Failpoint front.before_rollback: sleep(MS) delays the fence (a test writes a
         * claim meanwhile -> CLAIMED); error = the rollback could not run (-> 503
         * PENDING, the DEDUCT stays for the reconciler). */
        if (SK_FAILPOINT("front.before_rollback"))
                return SK_EAGAIN;
        rb_key(req, kj);
        for (; attempt < ROLLBACK_ATTEMPTS && rb_allowed(*rp, req); attempt++) {
                int64_t t0;

                if (!*rp)
                        *rp = sk_redis_connect(&g_fr.conf.redis, FR_REDIS_CMD_TIMEOUT_MS, errstr,
                                               sizeof(errstr));
                if (!*rp) {
                        err = SK_EAGAIN;
                        fr_breaker_record(1, 0);
                        sk_sleep_ms(100, NULL);
                        continue;
                }
                memset(res, 0, sizeof(*res));
                t0 = sk_mono_ms();
                err = rollback_once(*rp, req, res, acked, errstr, sizeof(errstr));
                fr_breaker_record_key(*rp, kj, err == SK_EUNKNOWN, sk_mono_ms() - t0);
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

/* DESIGN.md 7, 8: OK or ALREADY -> 503 FAILED (PENDING when no replica acknowledged the
 * fence, DESIGN.md 4b: @p acked 0); CLAIMED or failure -> 503 PENDING. */
static void answer_rollback(fr_req_t *req, sk_err_t err, const sk_rollback_res_t *res, int acked)
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
        } else if (!acked) {
                sk_metric_add(res->already ? fr_m.rb_already : fr_m.rb_ok, 1);
                SK_LOG(SK_WARN, "rollback_unacknowledged", "trace_id=%s already=%d", req->st, res->already);
                fr_answer_503(req, "pending", "PENDING", "outcome not yet known");
        } else {
                sk_metric_add(res->already ? fr_m.rb_already : fr_m.rb_ok, 1);
                SK_LOG(SK_INFO, "rollback_done", "trace_id=%s already=%d restored=%d released=%d",
                       req->st, res->already, res->restored, res->released);
                fr_answer_503(req, "failed", "FAILED", "purchase failed, nothing taken");
        }
}

/* Answer @p req 503 PENDING now (DESIGN.md 8: the rollback could not run yet), give its
 * in-flight slot back and park its fence in the backlog; a full backlog leaves it to the
 * reconciler. Keeps the pipeline's reference until the fence is done or given up. */
static void park(fr_req_t *req)
{
        fr_answer_503(req, "pending", "PENDING", "outcome not yet known");
        fr_inflight_release(req);
        if (atomic_load(&bl_len) >= ROLLBACK_BACKLOG_MAX) {
                SK_LOG(SK_ERROR, "rollback_abandoned", "trace_id=%s voucher_id=%s reason=\"backlog full\"",
                       req->st, req->sv);
                fr_req_done(req);
                return;
        }
        SK_LOG(SK_WARN, "rollback_parked", "trace_id=%s voucher_id=%s redis_down=%d", req->st,
               req->sv, !fr_breaker_allow());
        req->rb_tries = 0;
        fr_req_list_append(&backlog, req);
        atomic_fetch_add(&bl_len, 1);
}

/* One background try of the oldest parked fence, at most one a second, only while the
 * breaker is closed. Its answer was given already (fr_answer drops the new one). */
static void backlog_retry(sk_redis_t **rp)
{
        int64_t now = sk_mono_ms();
        sk_rollback_res_t res;
        fr_req_t *req;
        sk_err_t err;
        int acked;

        if (!backlog.head || now < bl_next_ms || !fr_breaker_allow())
                return;
        bl_next_ms = now + ROLLBACK_BG_PERIOD_MS;
        req = fr_req_list_shift(&backlog);
        if (!rb_allowed(*rp, req)) {    /* its node is still down: the next one's turn */
                fr_req_list_append(&backlog, req);
                return;
        }
        memset(&res, 0, sizeof(res));
        err = run_rollback(rp, req, &res, &acked);
        if (err == SK_OK || ++req->rb_tries >= ROLLBACK_BG_TRIES) {
                if (err == SK_OK)
                        answer_rollback(req, err, &res, 1);  /* answered already: no WAIT */
                else
                        SK_LOG(SK_ERROR, "rollback_abandoned", "trace_id=%s voucher_id=%s tries=%d",
                               req->st, req->sv, req->rb_tries);
                fr_req_done(req);
                atomic_fetch_sub(&bl_len, 1);
                return;
        }
        fr_req_list_append(&backlog, req);
}

/* At shutdown: the fences still parked are left to the reconciler (DESIGN.md 8). */
static void backlog_drop(void)
{
        fr_req_t *req;

        while ((req = fr_req_list_shift(&backlog)) != NULL) {
                SK_LOG(SK_WARN, "rollback_skipped_shutdown", "trace_id=%s voucher_id=%s", req->st,
                       req->sv);
                fr_req_done(req);
                atomic_fetch_sub(&bl_len, 1);
        }
}

/* Every wake-up, work or not: one background try of the backlog (at most one a second). */
static void rollback_idle(fr_conns_t *c)
{
        backlog_retry(&c->r);
}

/* One fence (batches of one) on the worker's own Redis connection. */
static void rollback_run(fr_conns_t *c, fr_req_t **batch, int n)
{
        fr_req_t *req = batch[0];
        sk_rollback_res_t res;
        sk_err_t err;
        int acked = 0;

        (void)n;
        if (!rb_allowed(c->r, req)) {
                park(req);
                return;
        }
        memset(&res, 0, sizeof(res));
        err = run_rollback(&c->r, req, &res, &acked);
        if (err == SK_EAGAIN || err == SK_EUNKNOWN) {
                sk_metric_add(fr_m.rb_error, 1);
                park(req);
                return;
        }
        answer_rollback(req, err, &res, err == SK_OK && !res.claimed ? acked : 1);
        fr_req_done(req);
}

/* The queue is drained: the parked fences are the reconciler's now. */
static void rollback_close(fr_conns_t *c)
{
        (void)c;
        backlog_drop();
}

static const fr_pool_ops_t rollback_ops = {
        .run = rollback_run,
        .idle = rollback_idle,
        .close = rollback_close,
};

int fr_rollback_start(void)
{
        return fr_pool_start(&pool, &rollback_ops, 1, 1);
}

void fr_rollback_stop(void)
{
        fr_pool_stop(&pool);
}

size_t fr_rollback_depth(void)
{
        return fr_pool_depth(&pool) + (size_t)atomic_load(&bl_len);
}
