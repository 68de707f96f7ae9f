/* producer/probe.c: the probe workers of seckill-front (producer/probe.h, DESIGN.md 4
 * "Overflow probing"). Each worker takes one purchase at a time and walks its buckets
 * with take.lua on its own sk_redis_t; every call is behind the Redis breaker of the
 * bucket's node (breaker.c: a take on a dead master's bucket is not sent; probing ends
 * there with 503) and the request's deadline (DESIGN.md 8, 12). A take is repeated with the same traceId up to
 * twice after an unknown outcome (DESIGN.md 8); still unknown, or a repeat rejected (a
 * 10005 after an unknown attempt is no proof of "empty"), ends probing with the rollback
 * on that bucket (one purchase must never hold units in two buckets). Owns the probe
 * queue. */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "breaker.h"
#include "front.h"
#include "metrics.h"
#include "probe.h"
#include "publish.h"
#include "pool.h"
#include "rollback.h"
#include "sk/clock.h"
#include "sk/failpoint.h"
#include "sk/home.h"
#include "sk/keys.h"
#include "sk/log.h"
#include "sk/model.h"
#include "sk/outcome.h"
#include "sk/redis.h"
#include "sk/scripts.h"
#include "sk/snowflake.h"
#include "soldout.h"

#define PROBE_WORKERS 2
#define PROBE_MAX_REPEATS 2             /* DESIGN.md 8: repeat the same EVALSHA up to twice */
#define HOME_ATTEMPTS 3                 /* the home step and settle are idempotent */

static fr_pool_t pool;                  /* the probe queue and its workers */

typedef enum {
        TAKE_ADMITTED,                  /* OK or REPLAY: T holds a unit of j (req->msg set) */
        TAKE_EMPTY,                     /* 10005: j is empty, nothing written */
        TAKE_UNKNOWN,                   /* may have taken a unit of j: probing ends */
        TAKE_STOP,                      /* nothing taken in j, and probing ends */
} take_t;

static int before_deadline(const fr_req_t *req)
{
        return sk_mono_ms() + FR_REDIS_CMD_TIMEOUT_MS <= req->deadline_mono_ms;
}

static int reply_is(const redisReply *el, const char *s)
{
        return el && (el->type == REDIS_REPLY_STRING || el->type == REDIS_REPLY_STATUS) &&
               el->len == strlen(s) && !memcmp(el->str, s, el->len);
}

/* The entry of an admitted or replayed take: kept (identical bytes on every produce). */
static take_t take_entry(fr_req_t *req, const redisReply *el)
{
        if (!el || el->type != REDIS_REPLY_STRING || el->len == 0)
                return TAKE_UNKNOWN;
        free(req->msg);
        if (!(req->msg = malloc(el->len + 1)))
                return TAKE_UNKNOWN;
        memcpy(req->msg, el->str, el->len);
        req->msg[el->len] = '\0';
        req->msg_len = el->len;
        return TAKE_ADMITTED;
}

/* What a take.lua reply means (sk/scripts.h): the entry itself (admitted), a code
 * (rejected: 10005 = bucket j is empty), or a table (REPLAY, FENCED, COLLISION). */
static take_t take_reply(fr_req_t *req, int j, const redisReply *reply)
{
        const redisReply *el0, *el1;

        if (reply->type == REDIS_REPLY_STRING)
                return take_entry(req, reply);
        if (reply->type == REDIS_REPLY_INTEGER) {
                if (reply->integer == SK_CODE_SOLD_OUT)
                        return TAKE_EMPTY;
                /* paused, ended, a key of j missing: nothing written in j */
                SK_LOG(SK_WARN, "probe_stop", "trace_id=%s bucket=%d reply=%lld", req->st, j,
                       reply->integer);
                return TAKE_STOP;
        }
        el0 = reply->type == REDIS_REPLY_ARRAY && reply->elements > 0 ? reply->element[0] : NULL;
        el1 = el0 && reply->elements > 1 ? reply->element[1] : NULL;
        if (!el0)
                return TAKE_UNKNOWN;
        if (reply_is(el0, "REPLAY"))
                return take_entry(req, el1);
        /* FENCED (T was rolled back in j), COLLISION (the traceId is another purchase's
         * there): nothing written in j. */
        SK_LOG(SK_WARN, "probe_stop", "trace_id=%s bucket=%d reply=\"%.*s\"", req->st, j,
               el0->type == REDIS_REPLY_STRING ? (int)el0->len : 0,
               el0->type == REDIS_REPLY_STRING ? el0->str : "");
        if (reply_is(el0, "COLLISION"))
                sk_metric_add(fr_m.collision, 1);
        return TAKE_STOP;
}

/* take.lua on bucket @p j with up to PROBE_MAX_REPEATS repeats of an unknown outcome. */
static take_t take_one(sk_redis_t **rp, fr_req_t *req, int j)
{
        char k_meta[SK_KEY_MAX], k_stock[SK_KEY_MAX], k_trace[SK_KEY_MAX], hs[16], ts[24];
        char errstr[512];
        const char *keys[3] = { k_meta, k_stock, k_trace };
        const char *args[6] = { req->st, req->so, req->su, req->sv, ts, hs };
        const char *prefix = g_fr.conf.redis_prefix;
        int attempt, unknown = 0;

        sk_key_voucher(k_meta, prefix, req->voucher_id, j, SK_KEY_META);
        sk_key_voucher(k_stock, prefix, req->voucher_id, j, SK_KEY_STOCK);
        sk_key_voucher(k_trace, prefix, req->voucher_id, j, SK_KEY_TRACE);
        snprintf(hs, sizeof(hs), "%d", req->home);
        /* the snowflake timestamp of traceId, as deduct.lua got it (DESIGN.md 4) */
        snprintf(ts, sizeof(ts), "%" PRId64, sk_snowflake_ts_ms(req->trace_id));
        for (attempt = 0; attempt <= PROBE_MAX_REPEATS; attempt++) {
                redisReply *reply = NULL;
                int64_t t0;
                sk_err_t err;
                take_t res;

                if (!fr_breaker_allow_key(*rp, k_meta) || !before_deadline(req))
                        break;
                if (!*rp && !(*rp = sk_redis_connect(&g_fr.conf.redis, FR_REDIS_CMD_TIMEOUT_MS,
                                                     errstr, sizeof(errstr)))) {
                        fr_breaker_record(1, 0);
                        break;
                }
                t0 = sk_mono_ms();
                /* Failpoint front.take_unknown (error): this attempt's outcome is unknown
                 * (its reply lost); nothing is sent, as when the link drops before the
                 * script runs (DESIGN.md 11). */
                if (SK_FAILPOINT("front.take_unknown")) {
                        err = SK_EUNKNOWN;
                        snprintf(errstr, sizeof(errstr), "failpoint front.take_unknown");
                } else {
                        err = sk_script_eval(*rp, SK_SCRIPT_TAKE, 3, keys, 6, args, &reply,
                                             errstr, sizeof(errstr));
                }
                fr_breaker_record_key(*rp, k_meta, err == SK_EUNKNOWN, sk_mono_ms() - t0);
                if (err == SK_OK) {
                        res = take_reply(req, j, reply);
                        /* DESIGN.md 4 "Give-up fence": after an unknown attempt, a
                         * rejection (10005 above all) says nothing about that attempt,
                         * which may still land (a delayed copy): never "empty", probing
                         * ends with the rollback on j (its T:r fences the copy). */
                        if (unknown && res != TAKE_ADMITTED && reply->type == REDIS_REPLY_INTEGER) {
                                SK_LOG(SK_WARN, "take_reject_after_unknown", "trace_id=%s "
                                       "bucket=%d reply=%lld", req->st, j, reply->integer);
                                res = TAKE_UNKNOWN;
                        }
                        freeReplyObject(reply);
                        return res;
                }
                SK_LOG(SK_WARN, "take_failed", "trace_id=%s bucket=%d attempt=%d err=%s reason=\"%s\"",
                       req->st, j, attempt, sk_err2str(err), errstr);
                if (err == SK_EUNKNOWN || err == SK_EREDIS) {
                        /* it may have run: the same traceId again on a fresh connection */
                        unknown = 1;
                        sk_metric_add(fr_m.deduct_retry, 1);
                        if (sk_redis_reconnect(*rp, errstr, sizeof(errstr)) != SK_OK) {
                                sk_redis_close(*rp);
                                *rp = NULL;
                        }
                        continue;
                }
                break; /* refused before running (SK_EAGAIN) or a bad argument */
        }
        return unknown ? TAKE_UNKNOWN : TAKE_STOP;
}

/* 1 if the home bucket of @p req may be written now (its node's breaker, breaker.c). */
static int home_allowed(sk_redis_t *r, const fr_req_t *req)
{
        char k_meta[SK_KEY_MAX];

        sk_key_voucher(k_meta, g_fr.conf.redis_prefix, req->voucher_id, req->home, SK_KEY_META);
        return fr_breaker_allow_key(r, k_meta);
}

/* settle.lua on h (T:h = j), a few tries; a failure is logged only: the publish goes
 * ahead in every case (DESIGN.md 4) and the reconciler settles a T:h left probing. */
static void settle(sk_redis_t **rp, fr_req_t *req, int j)
{
        char errstr[512];
        int attempt, state;

        for (attempt = 0; attempt < HOME_ATTEMPTS && home_allowed(*rp, req); attempt++) {
                if (!*rp && !(*rp = sk_redis_connect(&g_fr.conf.redis, FR_REDIS_CMD_TIMEOUT_MS,
                                                     errstr, sizeof(errstr))))
                        continue;
                if (sk_home_settle(*rp, g_fr.conf.redis_prefix, req->voucher_id, req->home,
                                   req->trace_id, j, &state, errstr, sizeof(errstr)) == SK_OK)
                        return;
                sk_redis_close(*rp);
                *rp = NULL;
        }
        SK_LOG(SK_WARN, "settle_failed", "trace_id=%s home=%d bucket=%d reason=\"%s\"", req->st,
               req->home, j, errstr);
}

/* Every probed bucket answered empty: the give-up (DESIGN.md 4 "Give-up fence": f:T in h
 * for the request deadline instead of T:r, T:h and users[U] removed, so nothing lasting
 * is left), then 409/10005. If it cannot run, the answer is the same (nothing was taken);
 * the reconciler finds T probing past its grace and finishes it (DESIGN.md 14). */
static void sold_out(sk_redis_t **rp, fr_req_t *req)
{
        char errstr[512] = "";
        sk_home_res_t hr;
        int attempt;

        for (attempt = 0; attempt < HOME_ATTEMPTS && home_allowed(*rp, req); attempt++) {
                if (!*rp && !(*rp = sk_redis_connect(&g_fr.conf.redis, FR_REDIS_CMD_TIMEOUT_MS,
                                                     errstr, sizeof(errstr))))
                        continue;
                /* f:T lives max(request deadline, 11 s): sk_giveup_fence_px_ms */
                if (sk_home_give_up(*rp, g_fr.conf.redis_prefix, req->voucher_id, req->home,
                                    req->trace_id, req->user_id, g_fr.deadline_ms, &hr, errstr,
                                    sizeof(errstr)) == SK_OK)
                        break;
                sk_redis_close(*rp);
                *rp = NULL;
        }
        if (attempt == HOME_ATTEMPTS || !home_allowed(*rp, req))
                SK_LOG(SK_WARN, "home_step_failed", "trace_id=%s home=%d reason=\"%s\"", req->st,
                       req->home, errstr);
        atomic_store(&req->nothing_taken, 1);
        fr_answer(req, 409, fr_json_err(SK_CODE_SOLD_OUT, "sold out"), 0);
        fr_req_done(req);
}

/* Give up (DESIGN.md 4): rollback.lua mode front on the bucket that may hold a take
 * (req->bucket, -1 none), then the home step: the rollback worker does both. */
static void give_up(fr_req_t *req, int bucket, const char *why)
{
        SK_LOG(SK_WARN, "probe_give_up", "trace_id=%s home=%d bucket=%d reason=\"%s\"", req->st,
               req->home, bucket, why);
        req->bucket = bucket;
        fr_rollback_submit(req);
}

/* One purchase: walk j = h+1 ... h+N-1 (mod N), or the SETTLED bucket only. */
static void probe_one(sk_redis_t **rp, fr_req_t *req)
{
        int i, j;

        /* Failpoint front.after_overflow: OVERFLOW wrote T:h = probing, no take yet. */
        if (SK_FAILPOINT("front.after_overflow")) {
                give_up(req, -1, "failpoint front.after_overflow");
                return;
        }
        for (i = 1; i < req->buckets; i++) {
                j = req->settled >= 0 ? req->settled : (req->home + i) % req->buckets;
                /* DESIGN.md 18: a purchase carrying a valid admission bypasses the local
                 * sold-out cache here too; a unit released into a bucket this front
                 * remembers empty must not be told 10005 (it would use the admission) */
                if (req->settled < 0 && req->q_pos == 0 && fr_soldout_bucket_empty(req, j))
                        continue;
                switch (take_one(rp, req, j)) {
                case TAKE_ADMITTED:
                        req->bucket = j;
                        /* Failpoint front.after_take: stock taken in j, users not settled. */
                        if (SK_FAILPOINT("front.after_take")) {
                                give_up(req, j, "failpoint front.after_take");
                                return;
                        }
                        settle(rp, req, j);
                        fr_publish(req);
                        return;
                case TAKE_EMPTY:
                        fr_soldout_note(req, j);
                        break;
                case TAKE_UNKNOWN:
                        give_up(req, j, "take outcome unknown");
                        return;
                case TAKE_STOP:
                        give_up(req, -1, "take refused");
                        return;
                }
                if (req->settled >= 0)
                        break;
        }
        if (req->settled >= 0) {
                /* the bucket that admitted T says empty without T: Redis lost it */
                give_up(req, req->settled, "settled bucket lost the take");
                return;
        }
        sold_out(rp, req);
}

/* One purchase (batches of one) on the worker's own Redis connection. */
static void probe_run(fr_conns_t *c, fr_req_t **batch, int n)
{
        (void)n;
        probe_one(&c->r, batch[0]);
}

static const fr_pool_ops_t probe_ops = { .run = probe_run };

void fr_probe_submit(fr_req_t *req)
{
        if (fr_pool_push(&pool, req) == 0)
                return;
        /* Closed (shutdown): no take ran; the rollback worker runs the home step. */
        give_up(req, -1, "shutting down");
}

int fr_probe_start(void)
{
        return fr_pool_start(&pool, &probe_ops, PROBE_WORKERS, 1);
}

void fr_probe_stop(void)
{
        fr_pool_stop(&pool);
}

size_t fr_probe_depth(void)
{
        return fr_pool_depth(&pool);
}
