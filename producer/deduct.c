/* producer/deduct.c: the Redis deduct workers of seckill-front (producer/deduct.h).
 * Each worker pops a batch of up to --pipeline-max purchases, pipelines their EVALSHA
 * deduct.lua through sk_redis's pipeline on its own sk_redis_t (one batch per master
 * on a Cluster, redirects followed, DESIGN.md 4b) and hands each reply to
 * deduct_reply.c. Unknown outcomes (DESIGN.md 8: a timeout or I/O error, or an error
 * reply from a script that may have written) repeat the same EVALSHA with the same
 * traceId up to twice on a fresh connection (a REPLAY continues the purchase); still
 * unknown -> rollback.lua mode front (rollback.c). Owns the deduct queue. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "deduct.h"
#include "deduct_reply.h"
#include "front.h"
#include "metrics.h"
#include "queue.h"
#include "rollback.h"
#include "sk/clock.h"
#include "sk/keys.h"
#include "sk/log.h"
#include "sk/redis.h"
#include "sk/scripts.h"

#define DEDUCT_MAX_REPEATS 2            /* DESIGN.md 8: repeat the same EVALSHA up to twice */

static fr_pool_t pool;                  /* the deduct queue and its workers */

typedef struct deduct_args {
        char kmeta[SK_KEY_MAX], kstock[SK_KEY_MAX], kusers[SK_KEY_MAX], ktrace[SK_KEY_MAX];
        const char *keys[4];
        const char *args[6];
} deduct_args_t;

static void deduct_args_fill(deduct_args_t *a, fr_req_t *req)
{
        const char *prefix = g_fr.conf.redis_prefix;

        sk_key_voucher(a->kmeta, prefix, req->voucher_id, SK_KEY_META);
        sk_key_voucher(a->kstock, prefix, req->voucher_id, SK_KEY_STOCK);
        sk_key_voucher(a->kusers, prefix, req->voucher_id, SK_KEY_USERS);
        sk_key_voucher(a->ktrace, prefix, req->voucher_id, SK_KEY_TRACE);
        a->keys[0] = a->kmeta;
        a->keys[1] = a->kstock;
        a->keys[2] = a->kusers;
        a->keys[3] = a->ktrace;
        a->args[0] = req->st;
        a->args[1] = req->so;
        a->args[2] = req->su;
        a->args[3] = req->sv;
        a->args[4] = "1";
        a->args[5] = g_fr.expire_extra_s;
}

static void answer_unavailable(fr_req_t *req)
{
        fr_answer_503(req, "redis", NULL, "redis unavailable");
        fr_req_done(req);
}

/* sk_redis_evalsha's errors whose outcome is unknown: no reply (timeout, I/O error) or
 * an error reply it does not know as a refusal (SK_EREDIS: the script may have run and
 * written before it failed). SK_EAGAIN (BUSY, LOADING, ..., NOSCRIPT twice, no
 * connection), SK_EINVAL (SKARG) and SK_ENOMEM mean it did not run. */
static int outcome_unknown(sk_err_t err)
{
        return err == SK_EUNKNOWN || err == SK_EREDIS;
}

/* One purchase through sk_redis_evalsha with the unknown-outcome rules of DESIGN.md 8:
 * unknown -> reconnect and repeat the same EVALSHA (same traceId) up to twice; still
 * unknown -> rollback.lua mode front. A REPLAY continues the purchase. Once an attempt
 * was unknown, every later failure is unknown too (the earlier one may have run). */
static void deduct_sync(sk_redis_t *r, fr_req_t *req)
{
        deduct_args_t a;
        char errstr[512];

        deduct_args_fill(&a, req);
        for (;;) {
                redisReply *reply = NULL;
                sk_err_t err;

                err = sk_redis_evalsha(r, SK_SCRIPT_DEDUCT, 4, a.keys, 6, a.args, &reply,
                                       errstr, sizeof(errstr));
                if (err == SK_OK && reply) {
                        fr_deduct_ran(req, reply);
                        freeReplyObject(reply);
                        return;
                }
                if (reply)
                        freeReplyObject(reply);
                if (err == SK_EINVAL && req->deduct_attempts == 0) {
                        SK_LOG(SK_ERROR, "deduct_invalid", "trace_id=%s reason=\"%s\"", req->st, errstr);
                        fr_answer(req, 500, fr_json_err(10001, "invalid deduct arguments"), 0);
                        fr_req_done(req);
                        return;
                }
                if (!outcome_unknown(err) && req->deduct_attempts == 0) {
                        /* The command did not run: nothing to undo. */
                        SK_LOG(SK_WARN, "deduct_unavailable", "trace_id=%s err=%s reason=\"%s\"",
                               req->st, sk_err2str(err), errstr);
                        answer_unavailable(req);
                        return;
                }
                req->deduct_attempts++;
                sk_metric_add(fr_m.deduct_retry, 1);
                SK_LOG(SK_WARN, "deduct_unknown", "trace_id=%s attempt=%d err=%s reason=\"%s\"",
                       req->st, req->deduct_attempts, sk_err2str(err), errstr);
                if (req->deduct_attempts > DEDUCT_MAX_REPEATS) {
                        fr_rollback_submit(req);
                        return;
                }
                if (sk_redis_reconnect(r, errstr, sizeof(errstr)) != SK_OK)
                        sk_sleep_ms(50, NULL);
        }
}

/* Append every EVALSHA of the batch to @p p (routed by KEYS[1]: on a Cluster each goes
 * to the master of its bucket's slot, DESIGN.md 4b). @returns 0, or -1 (out of memory:
 * nothing was sent, none of them ran; every request was answered 503). */
static int deduct_append(sk_redis_pipe_t *p, const char *sha, fr_req_t **batch, int n)
{
        int i, j;

        for (i = 0; i < n; i++) {
                deduct_args_t a;
                const char *argv[13]; /* EVALSHA sha 4, 4 keys, 6 args */

                deduct_args_fill(&a, batch[i]);
                argv[0] = "EVALSHA";
                argv[1] = sha;
                argv[2] = "4";
                for (j = 0; j < 4; j++)
                        argv[3 + j] = a.keys[j];
                for (j = 0; j < 6; j++)
                        argv[7 + j] = a.args[j];
                if (sk_redis_pipe_add(p, 13, argv, NULL) < 0) {
                        for (j = 0; j < n; j++)
                                answer_unavailable(batch[j]);
                        return -1;
                }
        }
        return 0;
}

/* An error reply to one pipelined EVALSHA. @returns 1 if @p req must run again through
 * deduct_sync (NOSCRIPT: not run; unknown: deduct_attempts is 1 now), 0 if answered. */
static int deduct_error_reply(fr_req_t *req, const redisReply *reply)
{
        switch (fr_deduct_error_kind(reply->str, reply->len)) {
        case FR_DEDUCT_ERR_NOSCRIPT:
                /* SCRIPT FLUSH happened: sk_redis_evalsha loads and retries. */
                return 1;
        case FR_DEDUCT_ERR_NOT_RUN:
                SK_LOG(SK_WARN, "deduct_unavailable", "trace_id=%s reply=\"%.*s\"", req->st,
                       (int)reply->len, reply->str);
                answer_unavailable(req);
                return 0;
        case FR_DEDUCT_ERR_INVALID:
                SK_LOG(SK_ERROR, "deduct_invalid", "trace_id=%s reply=\"%.*s\"", req->st,
                       (int)reply->len, reply->str);
                fr_answer(req, 500, fr_json_err(10001, "invalid deduct arguments"), 0);
                fr_req_done(req);
                return 0;
        case FR_DEDUCT_ERR_UNKNOWN:
                break;
        }
        /* DESIGN.md 8: the script ran and failed; it may have written before the error
         * (e.g. DECRBY and HSET, then a refused PEXPIREAT): unknown, as a timeout. */
        req->deduct_attempts = 1;
        sk_metric_add(fr_m.deduct_retry, 1);
        SK_LOG(SK_WARN, "deduct_unknown", "trace_id=%s attempt=1 reply=\"%.*s\"", req->st,
               (int)reply->len, reply->str);
        return 1;
}

/* deduct.lua loaded. @returns the SHA, or NULL (every request of the batch answered
 * 503: nothing was sent, none of them ran). */
static const char *deduct_ready(sk_redis_t *r, fr_req_t **batch, int n)
{
        const char *sha = sk_script_sha(SK_SCRIPT_DEDUCT);
        char errstr[512];
        int i;

        /* No SCRIPT LOAD has succeeded in this process yet (Redis was down at start, or
         * the health thread has not run): load now (on every master). */
        if (!sha && (sk_redis_load_scripts(r, errstr, sizeof(errstr)) != SK_OK ||
                     !(sha = sk_script_sha(SK_SCRIPT_DEDUCT))))
                goto fail;
        return sha;
fail:
        for (i = 0; i < n; i++)
                answer_unavailable(batch[i]);
        return NULL;
}

/* Pipelined deduct of a batch through sk_redis's pipeline (DESIGN.md 4b: one batch per
 * master, only the commands answered MOVED/ASK/TRYAGAIN are sent again). A command
 * that got no reply because its connection broke is unknown: that purchase continues
 * in deduct_sync() with one unknown attempt; so do those answered NOSCRIPT (not run)
 * or an unknown error. One that never ran (unreachable master, uncovered slot, too
 * many redirects) is answered 503. */
static void deduct_batch(sk_redis_t *r, fr_req_t **batch, int n)
{
        const char *sha = deduct_ready(r, batch, n);
        sk_redis_pipe_t *p;
        char errstr[512];
        int i, j, nredo = 0, nfail;

        if (!sha)
                return;
        if (!(p = sk_redis_pipe_new(r))) {
                for (i = 0; i < n; i++)
                        answer_unavailable(batch[i]);
                return;
        }
        if (deduct_append(p, sha, batch, n) != 0) {
                sk_redis_pipe_free(p);
                return;
        }
        if ((nfail = sk_redis_pipe_exec(p)) > 0)
                SK_LOG(SK_WARN, "deduct_io_error", "batch=%d unanswered=%d", n, nfail);
        for (i = 0; i < n; i++) {
                const redisReply *reply = sk_redis_pipe_raw(p, i);
                redisReply *ok = NULL;

                if (!reply) {
                        sk_err_t err = sk_redis_pipe_result(p, i, &ok, errstr, sizeof(errstr));
                        if (err == SK_EUNKNOWN) {
                                batch[i]->deduct_attempts = 1;
                                batch[nredo++] = batch[i];
                        } else {
                                SK_LOG(SK_WARN, "deduct_unavailable", "trace_id=%s reason=\"%s\"",
                                       batch[i]->st, errstr);
                                answer_unavailable(batch[i]);
                        }
                } else if (reply->type == REDIS_REPLY_ERROR) {
                        if (deduct_error_reply(batch[i], reply))
                                batch[nredo++] = batch[i];
                } else {
                        fr_deduct_ran(batch[i], reply);
                }
        }
        sk_redis_pipe_free(p);
        /* batch[0..nredo) (slots before i are free to reuse). */
        for (j = 0; j < nredo; j++)
                deduct_sync(r, batch[j]);
}

static void *redis_main(void *arg)
{
        sk_redis_t *r = NULL;
        fr_req_t **batch;
        char errstr[512];

        (void)arg;
        batch = calloc((size_t)g_fr.pipeline_max, sizeof(*batch));
        if (!batch)
                abort();
        for (;;) {
                fr_req_t *req = fr_queue_pop(&pool.q, g_fr.pipeline_max, 200);
                int n = 0, i;

                if (!req) {
                        if (fr_queue_drained(&pool.q))
                                break;
                        continue;
                }
                while (req) {
                        batch[n++] = req;
                        req = req->qnext;
                }
                if (!r)
                        r = sk_redis_connect(&g_fr.conf.redis, FR_REDIS_CMD_TIMEOUT_MS, errstr,
                                             sizeof(errstr));
                if (!r) {
                        SK_LOG(SK_WARN, "redis_connect_failed", "reason=\"%s\"", errstr);
                        for (i = 0; i < n; i++)
                                answer_unavailable(batch[i]);
                        continue;
                }
                deduct_batch(r, batch, n);
        }
        sk_redis_close(r);
        free(batch);
        return NULL;
}

void fr_deduct_submit(fr_req_t *req)
{
        if (fr_queue_push(&pool.q, req) == 0)
                return;
        /* Closed (shutdown; the HTTP daemon is stopped first, so not expected): the
         * deduct never ran, nothing to undo. */
        fr_answer_503(req, "shutdown", NULL, "shutting down");
        fr_req_done(req);
}

int fr_deduct_start(void)
{
        return fr_pool_start(&pool, g_fr.redis_workers, redis_main);
}

void fr_deduct_stop(void)
{
        fr_pool_stop(&pool);
}

size_t fr_deduct_depth(void)
{
        return fr_queue_len(&pool.q);
}
