/* producer/deduct.c: the Redis deduct workers of seckill-front (producer/deduct.h).
 * Each worker pops a batch of up to --pipeline-max purchases, pipelines their EVALSHA
 * deduct.lua through sk_redis's pipeline on its own sk_redis_t (one batch per master
 * on a Cluster, redirects followed, DESIGN.md 4b) and hands each reply to
 * deduct_reply.c. Unknown outcomes (DESIGN.md 8: a timeout or I/O error, or an error
 * reply from a script that may have written) repeat the same EVALSHA with the same
 * traceId up to twice on a fresh connection (a REPLAY continues the purchase), again
 * pipelined; still unknown -> rollback.lua mode front (rollback.c). Before every send
 * the Redis breaker (breaker.c) and each request's deadline are checked (DESIGN.md 12:
 * nothing is sent to a Redis the front knows is down, nothing after its deadline);
 * every batch is reported to the breaker. Owns the deduct queue. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "breaker.h"
#include "degrade.h"
#include "deduct.h"
#include "deduct_reply.h"
#include "front.h"
#include "metrics.h"
#include "nbuckets.h"
#include "pool.h"
#include "rollback.h"
#include "breaker_fsm.h"
#include "sk/clock.h"
#include "sk/keys.h"
#include "sk/log.h"
#include "sk/model.h"
#include "sk/redis.h"
#include "sk/scripts.h"
#include "sk/snowflake.h"

#define DEDUCT_MAX_REPEATS 2            /* DESIGN.md 8: repeat the same EVALSHA up to twice */

static fr_pool_t pool;                  /* the deduct queue and its workers */

typedef struct deduct_args {
        char kmeta[SK_KEY_MAX], kstock[SK_KEY_MAX], kusers[SK_KEY_MAX], ktrace[SK_KEY_MAX];
        char kfence[SK_KEY_MAX], ts[24];
        const char *keys[5];
        const char *args[5];
} deduct_args_t;

static void deduct_args_fill(deduct_args_t *a, fr_req_t *req)
{
        const char *prefix = g_fr.conf.redis_prefix;

        sk_key_voucher(a->kmeta, prefix, req->voucher_id, req->home, SK_KEY_META);
        sk_key_voucher(a->kstock, prefix, req->voucher_id, req->home, SK_KEY_STOCK);
        sk_key_voucher(a->kusers, prefix, req->voucher_id, req->home, SK_KEY_USERS);
        sk_key_voucher(a->ktrace, prefix, req->voucher_id, req->home, SK_KEY_TRACE);
        sk_key_fence(a->kfence, prefix, req->voucher_id, req->home, req->trace_id);
        /* DESIGN.md 4 "Cost of an admission": ts = the snowflake timestamp of traceId (the
         * front's id clock, bounded by mint_until), checked by the script against Redis
         * TIME (+-5 s) and stored in the entry, where the reconciler's graces read it. */
        snprintf(a->ts, sizeof(a->ts), "%" PRId64, sk_snowflake_ts_ms(req->trace_id));
        a->keys[0] = a->kmeta;
        a->keys[1] = a->kstock;
        a->keys[2] = a->kusers;
        a->keys[3] = a->ktrace;
        a->keys[4] = a->kfence;
        a->args[0] = req->st;
        a->args[1] = req->so;
        a->args[2] = req->su;
        a->args[3] = req->sv;
        a->args[4] = a->ts;
}

static void answer_unavailable(fr_req_t *req)
{
        fr_answer_503(req, "redis", NULL, "redis unavailable");
        fr_req_done(req);
}

/* A command is sent only if its reply, or its timeout, comes before the request's
 * deadline (DESIGN.md 8, 12: never run later than the deadline; answered within it). */
static int before_deadline(const fr_req_t *req, int64_t now_ms)
{
        return now_ms + FR_REDIS_CMD_TIMEOUT_MS <= req->deadline_mono_ms;
}

/* The gate before every round (DESIGN.md 8, 12): keeps, compacted at batch[0..), the
 * purchases that may be sent now, and settles the others without sending anything:
 *   - an outcome still unknown after the repeats -> rollback.lua mode front;
 *   - breaker open (or the switch rows stale), or too close to the deadline: once an attempt was unknown ->
 *     rollback (with the breaker open the rollback worker answers 503 PENDING at once and
 *     fences later); never sent or refused before running -> 503, no state (nothing
 *     taken, nothing to undo). So no request waits for a Redis the front knows is down.
 * @returns the number kept. */
static int deduct_gate(fr_req_t **batch, int n)
{
        int64_t now = sk_mono_ms();
        /* DESIGN.md 12 a: switch rows not read for SECKILL_SWITCH_STALE_MS count as a
         * Redis the front may not use (another front may be draining a voucher). */
        int allow = fr_breaker_allow() && fr_degrade_fresh(), i, k = 0;

        for (i = 0; i < n; i++) {
                fr_req_t *req = batch[i];

                if (req->deduct_attempts > DEDUCT_MAX_REPEATS) {
                        fr_rollback_submit(req);
                } else if (allow && before_deadline(req, now)) {
                        batch[k++] = req;
                } else if (req->deduct_attempts > 0) {
                        SK_LOG(SK_WARN, "deduct_unknown_stop", "trace_id=%s attempts=%d breaker_open=%d",
                               req->st, req->deduct_attempts, !allow);
                        fr_rollback_submit(req);
                } else {
                        atomic_store(&req->nothing_taken, 1);
                        if (allow)
                                fr_answer_503(req, "overload", NULL, "queued past its deadline");
                        else
                                fr_answer_503(req, "redis", NULL, "redis unavailable");
                        fr_req_done(req);
                }
        }
        return k;
}

/* Append every EVALSHA of the batch to @p p (routed by KEYS[1]: on a Cluster each goes
 * to the master of its bucket's slot, DESIGN.md 4b). @returns 0, or -1 (out of memory:
 * nothing was sent; the caller settles the batch as not sent). */
static int deduct_append(sk_redis_pipe_t *p, const char *sha, fr_req_t **batch, int n)
{
        int i, j;

        for (i = 0; i < n; i++) {
                deduct_args_t a;
                const char *argv[13]; /* EVALSHA sha 5, 5 keys, 5 args */

                deduct_args_fill(&a, batch[i]);
                argv[0] = "EVALSHA";
                argv[1] = sha;
                argv[2] = "5";
                for (j = 0; j < 5; j++)
                        argv[3 + j] = a.keys[j];
                for (j = 0; j < 5; j++)
                        argv[8 + j] = a.args[j];
                if (sk_redis_pipe_add(p, 13, argv, NULL) < 0)
                        return -1;
        }
        return 0;
}

/* One more unknown attempt for @p req. */
static void deduct_unknown(fr_req_t *req, const char *why, int len)
{
        req->deduct_attempts++;
        sk_metric_add(fr_m.deduct_retry, 1);
        SK_LOG(SK_WARN, "deduct_unknown", "trace_id=%s attempt=%d reason=\"%.*s\"", req->st,
               req->deduct_attempts, len, why);
}

/* An error reply to one pipelined EVALSHA in round @p round. Once an attempt was
 * unknown, every later failure is unknown too (the earlier one may have run).
 * @returns 1 if @p req goes to the next round (NOSCRIPT the first time: not run, and
 * *need_load is set; unknown: one more attempt), 0 if answered. */
static int deduct_error_reply(fr_req_t *req, const redisReply *reply, int round, int *need_load)
{
        switch (fr_deduct_error_kind(reply->str, reply->len)) {
        case FR_DEDUCT_ERR_NOSCRIPT:
                /* SCRIPT FLUSH happened: load it and send once more; NOSCRIPT twice -> 503. */
                *need_load = 1;
                if (req->deduct_attempts > 0)
                        break;
                if (round == 0)
                        return 1;
                /* fall through */
        case FR_DEDUCT_ERR_NOT_RUN:
                if (req->deduct_attempts > 0)
                        break;
                SK_LOG(SK_WARN, "deduct_unavailable", "trace_id=%s reply=\"%.*s\"", req->st,
                       (int)reply->len, reply->str);
                answer_unavailable(req);
                return 0;
        case FR_DEDUCT_ERR_INVALID:
                if (req->deduct_attempts > 0)
                        break;
                SK_LOG(SK_ERROR, "deduct_invalid", "trace_id=%s reply=\"%.*s\"", req->st,
                       (int)reply->len, reply->str);
                fr_answer(req, 500, fr_json_err(SK_CODE_BAD_INPUT, "invalid deduct arguments"), 0);
                fr_req_done(req);
                return 0;
        case FR_DEDUCT_ERR_UNKNOWN:
                break;
        }
        /* DESIGN.md 8: the script ran and failed; it may have written before the error
         * (e.g. DECRBY and HSET, then a refused PEXPIREAT): unknown, as a timeout. */
        deduct_unknown(req, reply->str, (int)reply->len);
        return 1;
}

/* deduct.lua loaded (SCRIPT LOAD on every master when this process has no SHA yet, or
 * @p need_load after a NOSCRIPT). @returns the SHA, or NULL (nothing sent; the failed
 * load counts for the breaker). */
static const char *deduct_ready(sk_redis_t *r, int need_load)
{
        const char *sha = sk_script_sha(SK_SCRIPT_DEDUCT);
        char errstr[512];

        if ((!sha || need_load) && (sk_scripts_load(r, errstr, sizeof(errstr)) != SK_OK ||
                                    !(sha = sk_script_sha(SK_SCRIPT_DEDUCT)))) {
                SK_LOG(SK_WARN, "deduct_script_load_failed", "reason=\"%s\"", errstr);
                fr_breaker_record(1, 0);
                return NULL;
        }
        return sha;
}

/* Nothing of this round was sent: the never-run ones get 503, the unknown ones one
 * more attempt (bounded by the gate). @returns the number kept for the next round. */
static int deduct_not_sent(fr_req_t **batch, int n)
{
        int i, k = 0;

        for (i = 0; i < n; i++) {
                if (batch[i]->deduct_attempts > 0) {
                        deduct_unknown(batch[i], "not sent", 8);
                        batch[k++] = batch[i];
                } else {
                        answer_unavailable(batch[i]);
                }
        }
        return k;
}

/* One round: the EVALSHAs of batch[0..n) through one sk_redis pipeline (DESIGN.md 4b:
 * one batch per master, redirects followed). A round is one command for the breaker:
 * failed when a command got no reply (connection error or timeout: its outcome is
 * unknown, next round; never ran: 503) or was answered LOADING or CLUSTERDOWN, else its
 * latency counts. @returns the number kept at batch[0..) for the next round (NOSCRIPT
 * once, unknown outcomes); every other request was answered or handed on. */
static int deduct_round(sk_redis_t *r, fr_req_t **batch, int n, int round, int *need_load)
{
        const char *sha = deduct_ready(r, *need_load);
        sk_redis_pipe_t *p;
        char errstr[512];
        int i, k = 0, failed, nfail;
        int64_t t0;

        if (!sha || !(p = sk_redis_pipe_new(r)))
                return deduct_not_sent(batch, n);
        *need_load = 0;
        if (deduct_append(p, sha, batch, n) != 0) {
                sk_redis_pipe_free(p);
                return deduct_not_sent(batch, n);
        }
        t0 = sk_mono_ms();
        nfail = sk_redis_pipe_exec(p);
        failed = nfail > 0;
        if (nfail > 0)
                SK_LOG(SK_WARN, "deduct_io_error", "batch=%d unanswered=%d round=%d", n, nfail, round);
        for (i = 0; i < n; i++) {
                const redisReply *reply = sk_redis_pipe_raw(p, i);
                redisReply *ok = NULL;

                if (!reply) {
                        sk_err_t err = sk_redis_pipe_result(p, i, &ok, errstr, sizeof(errstr));

                        if (err == SK_EUNKNOWN || batch[i]->deduct_attempts > 0) {
                                deduct_unknown(batch[i], errstr, (int)strlen(errstr));
                                batch[k++] = batch[i];
                        } else {
                                SK_LOG(SK_WARN, "deduct_unavailable", "trace_id=%s reason=\"%s\"",
                                       batch[i]->st, errstr);
                                answer_unavailable(batch[i]);
                        }
                } else if (reply->type == REDIS_REPLY_ERROR) {
                        failed |= sk_breaker_error_counts(reply->str, reply->len);
                        if (deduct_error_reply(batch[i], reply, round, need_load))
                                batch[k++] = batch[i];
                } else {
                        fr_deduct_ran(batch[i], reply);
                }
        }
        sk_redis_pipe_free(p);
        fr_breaker_record(failed, sk_mono_ms() - t0);
        return k;
}

/* DESIGN.md 8, 12: a batch goes round by round, each one pipelined (a timeout never
 * falls back to one synchronous call per request), each behind the gate (breaker,
 * deadline, repeats), until every purchase is answered or handed on. Bounded: every
 * round answers a request or adds an unknown attempt, except NOSCRIPT once. */
static void deduct_run(sk_redis_t *r, fr_req_t **batch, int n)
{
        int round, need_load = 0;

        for (round = 0; (n = deduct_gate(batch, n)) > 0; round++)
                n = deduct_round(r, batch, n, round, &need_load);
}

/* DESIGN.md 4: each purchase goes to its buyer's home bucket h = CRC-16(user) mod N (N
 * from nbuckets.c: cached, else one read of bucket 0's meta). A read that fails answers
 * 503 (nothing was sent for the purchase). @returns the number kept at batch[0..). */
static int deduct_home(sk_redis_t *r, fr_req_t **batch, int n)
{
        int i, k = 0;

        for (i = 0; i < n; i++) {
                fr_req_t *req = batch[i];

                if (req->buckets == 0) {
                        int nb = fr_nbuckets_get(r, req->voucher_id);

                        if (nb < 0) {
                                fr_breaker_record(1, 0);
                                answer_unavailable(req);
                                continue;
                        }
                        req->buckets = nb > 0 ? nb : 1;
                        req->home = sk_home_bucket(req->user_id, req->buckets);
                        req->bucket = req->home;
                }
                batch[k++] = req;
        }
        return k;
}

/* One popped batch of up to --pipeline-max purchases, on the worker's own Redis
 * connection c->r (opened here, once something is to be sent). */
static void deduct_batch(fr_conns_t *c, fr_req_t **batch, int n)
{
        char errstr[512];
        int i;

        if ((n = deduct_gate(batch, n)) == 0)
                return; /* nothing to send (breaker open, deadlines) */
        if (!c->r)
                c->r = sk_redis_connect(&g_fr.conf.redis, FR_REDIS_CMD_TIMEOUT_MS, errstr,
                                        sizeof(errstr));
        if (!c->r) {
                SK_LOG(SK_WARN, "redis_connect_failed", "reason=\"%s\"", errstr);
                fr_breaker_record(1, 0);
                for (i = 0; i < n; i++)
                        answer_unavailable(batch[i]);
                return;
        }
        if ((n = deduct_home(c->r, batch, n)) > 0)
                deduct_run(c->r, batch, n);
}

static const fr_pool_ops_t deduct_ops = { .run = deduct_batch };

void fr_deduct_submit(fr_req_t *req)
{
        /* Closed (shutdown; the HTTP daemon is stopped first, so not expected): the
         * deduct never ran, nothing to undo: 503 shutdown. */
        fr_pool_push_or_refuse(&pool, req);
}

int fr_deduct_start(void)
{
        return fr_pool_start(&pool, &deduct_ops, g_fr.redis_workers, g_fr.pipeline_max);
}

void fr_deduct_stop(void)
{
        fr_pool_stop(&pool);
}

size_t fr_deduct_depth(void)
{
        return fr_pool_depth(&pool);
}
