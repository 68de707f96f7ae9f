/* producer/deduct.c: the Redis deduct workers of seckill-front (producer/deduct.h).
 * Each worker pops a batch of up to --pipeline-max purchases, pipelines their EVALSHA
 * deduct.lua through sk_redis's pipeline on its own sk_redis_t (one batch per master
 * on a Cluster, redirects followed, DESIGN.md 4b) and hands each reply to
 * deduct_reply.c. Unknown outcomes (DESIGN.md 8: a timeout or I/O error, or an error
 * reply from a script that may have written) repeat the same EVALSHA with the same
 * traceId up to twice on a fresh connection (a REPLAY continues the purchase), again
 * pipelined; still unknown -> rollback.lua mode front (rollback.c). Before every send
 * the Redis breaker of the purchase's node (breaker.c: on a Cluster the master of its
 * home bucket's slot) and each request's deadline are checked (DESIGN.md 12: nothing is
 * sent to a Redis node the front knows is down, nothing after its deadline), so a dead
 * master stops only the purchases whose home bucket it serves; every round is reported
 * to the breakers, once per node it went to. Owns the deduct queue. */
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
#include "room_routes.h"
#include "breaker_fsm.h"
#include "breaker_set.h"
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
        char *const kv[4] = { a->kmeta, a->kstock, a->kusers, a->ktrace };

        /* One snprintf for the five keys; req->st is the trace id's decimal form. */
        sk_key_purchase(kv, a->kfence, g_fr.conf.redis_prefix, req->voucher_id, req->home,
                        req->trace_id, req->st);
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

/* 1 if @p req may be sent now as far as the breakers know: with @p r (the worker's
 * handle) and the home bucket known, the breaker of the node serving that bucket's slot
 * (breaker.c, DESIGN.md 4b: a dead master stops only its own buckets); else the front's
 * "some of Redis is usable". */
static int deduct_allowed(sk_redis_t *r, const fr_req_t *req)
{
        char kmeta[SK_KEY_MAX];

        /* one server or Sentinel: the one breaker, no key to route */
        if (!r || req->buckets == 0 || sk_redis_kind(r) != SK_REDIS_CLUSTER)
                return fr_breaker_allow();
        sk_key_voucher(kmeta, g_fr.conf.redis_prefix, req->voucher_id, req->home, SK_KEY_META);
        return fr_breaker_allow_key(r, kmeta);
}

/* The gate before every round (DESIGN.md 8, 12): keeps, compacted at batch[0..), the
 * purchases that may be sent now, and settles the others without sending anything:
 *   - an outcome still unknown after the repeats -> rollback.lua mode front;
 *   - breaker of its node open (or the switch rows stale), or too close to the deadline: once an attempt was unknown ->
 *     rollback (with the breaker open the rollback worker answers 503 PENDING at once and
 *     fences later); never sent or refused before running -> 503, no state (nothing
 *     taken, nothing to undo). So no request waits for a Redis the front knows is down.
 * @p r: the worker's handle (NULL before it connects: the front-wide breaker decides).
 * @returns the number kept. */
static int deduct_gate(sk_redis_t *r, fr_req_t **batch, int n)
{
        int64_t now = sk_mono_ms();
        /* DESIGN.md 12 a: switch rows not read for SECKILL_SWITCH_STALE_MS count as a
         * Redis the front may not use (another front may be draining a voucher). */
        int fresh = fr_degrade_fresh(), i, k = 0;

        for (i = 0; i < n; i++) {
                fr_req_t *req = batch[i];
                int allow = fresh && deduct_allowed(r, req);

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
                /* The load runs on every master: on a Cluster one dead master must not
                 * open the breaker of the whole topology; its own purchases open its. */
                if (sk_redis_kind(r) != SK_REDIS_CLUSTER)
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

/* The nodes one round went to, each with "some command of it failed". */
#define ROUND_NODES_MAX 16
typedef struct round_nodes {
        int n;
        char addr[ROUND_NODES_MAX][FR_BRK_ADDR_MAX];
        int failed[ROUND_NODES_MAX];
        int64_t ms[ROUND_NODES_MAX];    /* the slowest batch of that node */
} round_nodes_t;

/* Command @p i of @p p went to its node and ended @p failed: noted per node with that
 * node's own latency (a dead or frozen master must not make the healthy ones look slow;
 * a round with more nodes than the table holds reports the rest one by one). */
static void round_note(round_nodes_t *rn, const sk_redis_pipe_t *p, int i, int failed)
{
        char addr[FR_BRK_ADDR_MAX];
        int64_t ms = sk_redis_pipe_ms(p, i);
        int j;

        (void)sk_redis_pipe_addr(p, i, addr, sizeof(addr));
        for (j = 0; j < rn->n && strcmp(rn->addr[j], addr); j++)
                ;
        if (j == rn->n) {
                if (rn->n == ROUND_NODES_MAX) {
                        fr_breaker_record_addr(addr, failed, ms);
                        return;
                }
                snprintf(rn->addr[j], sizeof(rn->addr[j]), "%s", addr);
                rn->failed[j] = 0;
                rn->ms[j] = 0;
                rn->n++;
        }
        rn->failed[j] |= failed;
        if (ms > rn->ms[j])
                rn->ms[j] = ms;
}

/* One round: the EVALSHAs of batch[0..n) through one sk_redis pipeline (DESIGN.md 4b:
 * one batch per master, redirects followed). A round is one command for the breaker of
 * each node it went to (breaker.c; one server or Sentinel: the one breaker): failed when
 * a command of that node got no reply (connection error or timeout: its outcome is
 * unknown, next round; never ran: 503) or was answered LOADING or CLUSTERDOWN, else the
 * latency of that node's batch counts. @returns the number kept at batch[0..) for the next round
 * (NOSCRIPT once, unknown outcomes); every other request was answered or handed on. */
static int deduct_round(sk_redis_t *r, fr_req_t **batch, int n, int round, int *need_load)
{
        const char *sha = deduct_ready(r, *need_load);
        sk_redis_pipe_t *p;
        round_nodes_t rn = { 0 };
        char errstr[512];
        int i, k = 0, nfail;

        if (!sha || !(p = sk_redis_pipe_new(r)))
                return deduct_not_sent(batch, n);
        *need_load = 0;
        if (deduct_append(p, sha, batch, n) != 0) {
                sk_redis_pipe_free(p);
                return deduct_not_sent(batch, n);
        }
        nfail = sk_redis_pipe_exec(p);
        if (nfail > 0)
                SK_LOG(SK_WARN, "deduct_io_error", "batch=%d unanswered=%d round=%d", n, nfail, round);
        for (i = 0; i < n; i++) {
                const redisReply *reply = sk_redis_pipe_raw(p, i);
                redisReply *ok = NULL;

                round_note(&rn, p, i, !reply || (reply->type == REDIS_REPLY_ERROR &&
                                                 sk_breaker_error_counts(reply->str, reply->len)));
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
                        if (deduct_error_reply(batch[i], reply, round, need_load))
                                batch[k++] = batch[i];
                } else {
                        fr_deduct_ran(batch[i], reply);
                }
        }
        sk_redis_pipe_free(p);
        for (i = 0; i < rn.n; i++)
                fr_breaker_record_addr(rn.addr[i], rn.failed[i], rn.ms[i]);
        return k;
}

/* DESIGN.md 8, 12: a batch goes round by round, each one pipelined (a timeout never
 * falls back to one synchronous call per request), each behind the gate (breaker,
 * deadline, repeats), until every purchase is answered or handed on. Bounded: every
 * round answers a request or adds an unknown attempt, except NOSCRIPT once. */
static void deduct_run(sk_redis_t *r, fr_req_t **batch, int n)
{
        int round, need_load = 0;

        for (round = 0; (n = deduct_gate(r, batch, n)) > 0; round++)
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

                /* DESIGN.md 18: a token buys once: its position's used bit is set
                 * before deduct.lua (already set: 403 10014) */
                if (fr_room_purchase_use(r, req) != 0)
                        continue;
                if (req->buckets == 0) {
                        int nb = fr_nbuckets_get(r, req->voucher_id);

                        if (nb < 0) {
                                char k0[SK_KEY_MAX];

                                /* bucket 0's meta was read: its node failed */
                                sk_key_voucher(k0, g_fr.conf.redis_prefix, req->voucher_id, 0,
                                               SK_KEY_META);
                                fr_breaker_record_key(r, k0, 1, 0);
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

        if ((n = deduct_gate(NULL, batch, n)) == 0)
                return; /* nothing to send (every breaker open, deadlines) */
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
