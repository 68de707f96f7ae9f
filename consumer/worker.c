/* worker.c: one consumer worker thread of seckill-consumer (design in main.c).
 *
 * Loop: collect a poll batch (up to --batch-max messages, waiting at most
 * --batch-wait-ms after the first), settle every message of it, store offsets, cache
 * the new orders in Redis, repeat. "Settled" means the message has a committed
 * outcome (CREATED or FAILED, ours or an earlier decision) or a PERSISTED DLQ copy.
 *
 * Offsets (DESIGN.md 5): per partition the stored offset is the lowest offset of the
 * batch (or of the carry list, below) that is not settled, or the highest settled
 * offset + 1 when all are; stored with rd_kafka_offsets_store (stored as given, i.e.
 * the next offset to read) and committed by the auto-commit timer, by the sync commit
 * at shutdown and on rebalance. A crash therefore only ever re-delivers messages, and
 * the outcome key makes a re-delivery harmless.
 *
 * Transient failures (DB 1205/1213/2006/2013/..., Redis errors before the transaction,
 * DLQ delivery not PERSISTED): the worker pauses every partition assigned to its handle
 * (rd_kafka_pause_partitions), keeps calling rd_kafka_consumer_poll (group membership,
 * rebalances) while it backs off (sk_backoff_ms: capped exponential, full jitter),
 * reconnects a lost DB link, and retries the voucher's whole transaction from BEGIN;
 * then resumes. Messages that still arrive while paused (a partition newly assigned
 * during the pause) go to a carry list and open the next batch. Never a Redis
 * rollback on a transient error.
 *
 * Not thread-safe: each worker owns its handles; only the metrics are shared. */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "sk/backoff.h"
#include "sk/clock.h"
#include "sk/failpoint.h"
#include "sk/ids.h"
#include "sk/kafka.h"
#include "sk/keys.h"
#include "sk/log.h"
#include "sk/scripts.h"
#include "consumer.h"

#define MAX_WORKERS 64
static _Atomic int64_t g_lag[MAX_WORKERS];

typedef struct cmsg {
        rd_kafka_message_t *rkm;   /* owned */
        sk_order_msg_t msg;
        int parsed;                /* msg valid */
        int settled;               /* decided in the DB or PERSISTED to the DLQ */
        int claimed;               /* claim.lua consume ran for it */
        int fenced;                /* claim.lua: RESTORED (the front fenced first) */
        int db_errors;             /* non-transient DB errors so far */
        int applied;               /* this worker created the order now: cache it */
        int grouped;
} cmsg_t;

typedef struct worker {
        const cons_ctx_t *ctx;
        const sk_conf_t *conf;
        const cons_opts_t *opts;
        cons_metrics_t *m;
        int idx;
        rd_kafka_t *rk;
        rd_kafka_t *dlq;           /* lazily created producer for the DLQ topic */
        volatile int dlq_status;   /* -2 pending, -1 error, else rd_kafka_msg_status_t */
        volatile intptr_t dlq_seq;
        sk_db_t *db;
        sk_redis_t *redis;
        cons_apply_t *ap;
        uint64_t rng;
        cmsg_t *batch;
        int nbatch;
        rd_kafka_message_t **carry;
        int ncarry, carry_cap;
        rd_kafka_topic_partition_list_t *paused;
        int64_t next_lag_ms;
        const sk_order_msg_t **msgs; /* scratch: batch_max pointers */
        struct cmsg **grp;           /* scratch: batch_max group members, group by group */
        int *gstart, *gcount;        /* scratch: where each group starts, its size */
        int redis_broken;
        /* Claim prefetch: claim.lua for the NEXT voucher group runs on a second Redis
         * connection while this group's DB transaction runs (Redis and MariaDB work
         * in parallel). Its reply is read when that group starts. */
        sk_redis_t *rclaim;
        struct cmsg **next_g;        /* the group after the one being settled, or NULL */
        int next_n;
        struct cmsg **pf_g;          /* members whose claim is in flight (NULL: none) */
        int *pf_which;               /* indexes into pf_g of the traceIds sent, in order */
        int pf_cnt;
} worker_t;

/* ------------------------------------------------------------------ helpers */

static void on_kafka_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
        (void)rk;
        if (level <= 3)
                SK_LOG(SK_ERROR, "kafka_log", "fac=%s msg=\"%s\"", fac, buf);
        else if (level <= 4)
                SK_LOG(SK_WARN, "kafka_log", "fac=%s msg=\"%s\"", fac, buf);
        else
                SK_LOG(SK_DEBUG, "kafka_log", "fac=%s msg=\"%s\"", fac, buf);
}

static void on_kafka_error(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
        (void)rk;
        (void)opaque;
        SK_LOG(SK_WARN, "kafka_error", "err=%s reason=\"%s\"",
               rd_kafka_err2name((rd_kafka_resp_err_t)err), reason);
}

static int has_prop(const sk_conf_t *conf, const char *name)
{
        for (int i = 0; i < conf->nkafka_props; i++)
                if (strcmp(conf->kafka_props[i][0], name) == 0)
                        return 1;
        return 0;
}

static int stopping(void)
{
        return g_stop != 0;
}

static void carry_add(worker_t *w, rd_kafka_message_t *rkm)
{
        if (w->ncarry == w->carry_cap) {
                int cap = w->carry_cap ? w->carry_cap * 2 : 256;
                rd_kafka_message_t **c = realloc(w->carry, sizeof(*c) * (size_t)cap);
                if (!c) {
                        /* Out of memory: drop it unsettled; offsets never pass it because
                         * a later batch message of that partition is blocked as well...
                         * we cannot guarantee that, so abort loudly instead. */
                        SK_LOG(SK_ERROR, "oom", "what=carry");
                        abort();
                }
                w->carry = c;
                w->carry_cap = cap;
        }
        w->carry[w->ncarry++] = rkm;
}

/* Handle an error event from the consumer queue; @returns 1 if rkm was a message. */
static int is_message(worker_t *w, rd_kafka_message_t *rkm)
{
        (void)w;
        if (!rkm->err)
                return 1;
        SK_LOG(rkm->err == RD_KAFKA_RESP_ERR__PARTITION_EOF ? SK_DEBUG : SK_WARN,
               "consumer_event", "worker=%d err=%s reason=\"%s\"", w->idx,
               rd_kafka_err2name(rkm->err), rd_kafka_message_errstr(rkm));
        rd_kafka_message_destroy(rkm);
        return 0;
}

static void pause_one(worker_t *w, const rd_kafka_message_t *rkm);

/* Poll the consumer for @p ms (keeps the group membership alive while paused);
 * messages that still arrive are kept for the next batch. */
static void wait_poll(worker_t *w, int64_t ms)
{
        int64_t deadline = sk_mono_ms() + ms;

        for (;;) {
                int64_t left = deadline - sk_mono_ms();
                rd_kafka_message_t *rkm;

                if (left <= 0 || g_stop >= 2)
                        break;
                rkm = rd_kafka_consumer_poll(w->rk, (int)(left < 100 ? left : 100));
                if (w->dlq)
                        rd_kafka_poll(w->dlq, 0);
                if (rkm && is_message(w, rkm)) {
                        sk_metric_add(w->m->consumed, 1);
                        pause_one(w, rkm);
                        carry_add(w, rkm);
                }
                if (g_stop)
                        break;
        }
}

static void pause_all(worker_t *w)
{
        rd_kafka_topic_partition_list_t *parts = NULL;

        if (w->paused)
                return;
        if (rd_kafka_assignment(w->rk, &parts) || !parts)
                return;
        rd_kafka_pause_partitions(w->rk, parts);
        w->paused = parts;
        sk_metric_add(w->m->paused, 1);
        SK_LOG(SK_INFO, "partitions_paused", "worker=%d count=%d", w->idx, parts->cnt);
}

/* A message arrived while paused (a partition assigned during the pause): pause its
 * partition too, so the carry list holds at most what was already prefetched. */
static void pause_one(worker_t *w, const rd_kafka_message_t *rkm)
{
        const char *topic = rd_kafka_topic_name(rkm->rkt);
        rd_kafka_topic_partition_list_t *one;

        if (!w->paused) {
                w->paused = rd_kafka_topic_partition_list_new(4);
                sk_metric_add(w->m->paused, 1);
        }
        if (rd_kafka_topic_partition_list_find(w->paused, topic, rkm->partition))
                return;
        one = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(one, topic, rkm->partition);
        rd_kafka_pause_partitions(w->rk, one);
        rd_kafka_topic_partition_list_destroy(one);
        rd_kafka_topic_partition_list_add(w->paused, topic, rkm->partition);
}

static void resume_all(worker_t *w)
{
        if (!w->paused)
                return;
        rd_kafka_resume_partitions(w->rk, w->paused);
        SK_LOG(SK_INFO, "partitions_resumed", "worker=%d count=%d", w->idx, w->paused->cnt);
        rd_kafka_topic_partition_list_destroy(w->paused);
        w->paused = NULL;
        sk_metric_add(w->m->paused, -1);
}

/* Backoff wait for retry @p attempt, polling the consumer. */
static void backoff_wait(worker_t *w, int attempt)
{
        int64_t ms = sk_backoff_ms(attempt, 50, w->opts->backoff_cap_ms, &w->rng);
        pause_all(w);
        wait_poll(w, ms);
}

static void ensure_db(worker_t *w)
{
        char errstr[512];

        if (w->db->conn && mysql_ping(w->db->conn) == 0)
                return;
        cons_apply_reset(w->ap);
        if (sk_db_reconnect(w->db, errstr, sizeof(errstr)) == SK_OK)
                SK_LOG(SK_INFO, "db_reconnected", "worker=%d", w->idx);
        else
                SK_LOG(SK_WARN, "db_reconnect_failed", "worker=%d err=\"%s\"", w->idx, errstr);
}

static sk_redis_t *get_redis(worker_t *w)
{
        char errstr[512];

        if (w->redis && !w->redis_broken)
                return w->redis;
        if (w->redis) {
                if (sk_redis_reconnect(w->redis, errstr, sizeof(errstr)) == SK_OK) {
                        w->redis_broken = 0;
                        return w->redis;
                }
        } else if ((w->redis = sk_redis_connect(&w->conf->redis, 2000, errstr, sizeof(errstr)))) {
                w->redis_broken = 0;
                return w->redis;
        }
        SK_LOG(SK_WARN, "redis_connect_failed", "worker=%d err=\"%s\"", w->idx, errstr);
        return NULL;
}

static void redis_failed(worker_t *w, sk_err_t err)
{
        sk_metric_add(w->m->redis_errors, 1);
        if (err == SK_EUNKNOWN || err == SK_EAGAIN || err == SK_EREDIS)
                w->redis_broken = 1;
}

/* ------------------------------------------------------------------ DLQ */

static void on_dlq_delivery(rd_kafka_t *rk, const rd_kafka_message_t *rkm, void *opaque)
{
        worker_t *w = opaque;

        (void)rk;
        if ((intptr_t)rkm->_private != w->dlq_seq)
                return; /* a late report of an attempt we gave up on */
        w->dlq_status = rkm->err ? -1 : (int)rd_kafka_message_status(rkm);
}

static int ensure_dlq(worker_t *w)
{
        char errstr[512];
        rd_kafka_conf_t *kconf;

        if (w->dlq)
                return 0;
        if (!(kconf = sk_kafka_conf_new(w->conf, SK_KAFKA_PRODUCER, errstr, sizeof(errstr)))) {
                SK_LOG(SK_ERROR, "dlq_producer_failed", "worker=%d err=\"%s\"", w->idx, errstr);
                return -1;
        }
        rd_kafka_conf_set_dr_msg_cb(kconf, on_dlq_delivery);
        rd_kafka_conf_set_opaque(kconf, w);
        rd_kafka_conf_set_log_cb(kconf, on_kafka_log);
        if (!(w->dlq = rd_kafka_new(RD_KAFKA_PRODUCER, kconf, errstr, sizeof(errstr)))) {
                rd_kafka_conf_destroy(kconf);
                SK_LOG(SK_ERROR, "dlq_producer_failed", "worker=%d err=\"%s\"", w->idx, errstr);
                return -1;
        }
        return 0;
}

/* Copy @p c to the DLQ with @p kind and @p reason headers; returns once the copy is
 * PERSISTED (SK_OK, the message is settled) or the worker is stopping (SK_ESTOP). */
static sk_err_t dlq_send(worker_t *w, cmsg_t *c, const char *kind, const char *reason)
{
        rd_kafka_message_t *rkm = c->rkm;
        char src[64], tid[SK_ID_STRLEN];
        int attempt = 0;

        snprintf(src, sizeof(src), "%d/%" PRId64, (int)rkm->partition, (int64_t)rkm->offset);
        if (c->parsed)
                sk_id_format(c->msg.trace_id, tid);
        for (;; attempt++) {
                rd_kafka_headers_t *hdrs;
                rd_kafka_resp_err_t e;
                int64_t deadline;

                if (ensure_dlq(w) != 0)
                        goto retry;
                hdrs = rd_kafka_headers_new(5);
                rd_kafka_header_add(hdrs, "x-seckill-kind", -1, kind, -1);
                rd_kafka_header_add(hdrs, "x-seckill-error", -1, reason, -1);
                rd_kafka_header_add(hdrs, "x-seckill-source-topic", -1,
                                    rd_kafka_topic_name(rkm->rkt), -1);
                rd_kafka_header_add(hdrs, "x-seckill-source", -1, src, -1);
                if (c->parsed)
                        rd_kafka_header_add(hdrs, "traceId", -1, tid, -1);
                w->dlq_seq++;
                w->dlq_status = -2;
                e = rd_kafka_producev(w->dlq, RD_KAFKA_V_TOPIC(w->conf->dlq_topic),
                                      RD_KAFKA_V_KEY(rkm->key, rkm->key_len),
                                      RD_KAFKA_V_VALUE(rkm->payload, rkm->len),
                                      RD_KAFKA_V_HEADERS(hdrs),
                                      RD_KAFKA_V_OPAQUE((void *)w->dlq_seq),
                                      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
                if (e) {
                        rd_kafka_headers_destroy(hdrs); /* still ours on failure */
                        SK_LOG(SK_WARN, "dlq_produce_failed", "worker=%d partition=%d offset=%" PRId64
                               " err=%s", w->idx, (int)rkm->partition, (int64_t)rkm->offset,
                               rd_kafka_err2name(e));
                        goto retry;
                }
                deadline = sk_mono_ms() + w->conf->kafka_delivery_timeout_ms + 5000;
                while (w->dlq_status == -2 && sk_mono_ms() < deadline && g_stop < 2) {
                        rd_kafka_poll(w->dlq, 50 /* ms */);
                        /* Keep the group membership alive on long deliveries. */
                        if (sk_mono_ms() + 50 < deadline && w->dlq_status == -2) {
                                rd_kafka_message_t *m2 = rd_kafka_consumer_poll(w->rk, 0);
                                if (m2 && is_message(w, m2)) {
                                        sk_metric_add(w->m->consumed, 1);
                                        pause_one(w, m2);
                                        carry_add(w, m2);
                                }
                        }
                }
                if (w->dlq_status == RD_KAFKA_MSG_STATUS_PERSISTED) {
                        SK_LOG(SK_WARN, "dlq", "worker=%d partition=%d offset=%" PRId64
                               " kind=%s trace=%s reason=\"%s\"", w->idx, (int)rkm->partition,
                               (int64_t)rkm->offset, kind, c->parsed ? tid : "-", reason);
                        sk_metric_add(w->m->dlq, 1);
                        c->settled = 1;
                        return SK_OK;
                }
                SK_LOG(SK_WARN, "dlq_not_persisted", "worker=%d partition=%d offset=%" PRId64
                       " status=%d", w->idx, (int)rkm->partition, (int64_t)rkm->offset,
                       (int)w->dlq_status);
retry:
                if (stopping())
                        return SK_ESTOP;
                backoff_wait(w, attempt);
                if (stopping())
                        return SK_ESTOP;
        }
}

/* ------------------------------------------------------------------ Redis */

/* claim.lua runs with at most this many traceIds per call (bounds the script's run
 * time; Redis is single-threaded). */
#define CLAIM_CHUNK 1000

static sk_err_t claim_chunk(worker_t *w, cmsg_t **g, int n);

/* claim.lua consume for the unclaimed messages of a group (all of one voucher). */
static sk_err_t claim_group(worker_t *w, cmsg_t **g, int n)
{
        for (int i = 0; i < n; i += CLAIM_CHUNK) {
                sk_err_t err = claim_chunk(w, g + i, n - i < CLAIM_CHUNK ? n - i : CLAIM_CHUNK);
                if (err)
                        return err;
        }
        return SK_OK;
}

/* EVALSHA claim.lua 2 meta trace consume extra T1..Tn in ONE command: sk_redis_evalsha
 * caps its argv at 64, so this builds the argv itself and handles NOSCRIPT the same
 * way (SCRIPT LOAD, retry once). */
static sk_err_t claim_chunk(worker_t *w, cmsg_t **g, int n)
{
        char k_meta[SK_KEY_MAX], k_trace[SK_KEY_MAX], extra[24], errstr[512];
        const char **argv = NULL;
        size_t *argvlen = NULL;
        char (*ids)[SK_ID_STRLEN] = NULL;
        int *which = NULL;
        int argc = 0, cnt = 0, i, attempt;
        redisReply *reply = NULL;
        sk_redis_t *r;
        sk_err_t err = SK_EAGAIN;

        for (i = 0; i < n; i++)
                if (!g[i]->settled && !g[i]->claimed)
                        cnt++;
        if (!cnt)
                return SK_OK;
        if (!(r = get_redis(w)))
                return SK_EAGAIN;
        argv = calloc((size_t)cnt + 7, sizeof(*argv));
        argvlen = calloc((size_t)cnt + 7, sizeof(*argvlen));
        ids = calloc((size_t)cnt, sizeof(*ids));
        which = calloc((size_t)cnt, sizeof(*which));
        if (!argv || !argvlen || !ids || !which) {
                err = SK_ENOMEM;
                goto done;
        }
        sk_key_voucher(k_meta, w->conf->redis_prefix, g[0]->msg.voucher_id, SK_KEY_META);
        sk_key_voucher(k_trace, w->conf->redis_prefix, g[0]->msg.voucher_id, SK_KEY_TRACE);
        snprintf(extra, sizeof(extra), "%" PRId64, w->ctx->expire_extra_ms);
        argv[argc++] = "EVALSHA";
        argv[argc++] = NULL; /* the SHA, set per attempt */
        argv[argc++] = "2";
        argv[argc++] = k_meta;
        argv[argc++] = k_trace;
        argv[argc++] = "consume";
        argv[argc++] = extra;
        for (i = 0, cnt = 0; i < n; i++) {
                if (g[i]->settled || g[i]->claimed)
                        continue;
                sk_id_format(g[i]->msg.trace_id, ids[cnt]);
                argv[argc++] = ids[cnt];
                which[cnt++] = i;
        }
        for (i = 0; i < argc; i++)
                if (argv[i])
                        argvlen[i] = strlen(argv[i]);
        for (attempt = 0; attempt < 2; attempt++) {
                /* The SHA is known once this process loaded the scripts. */
                if (!sk_script_sha(SK_SCRIPT_CLAIM) &&
                    (err = sk_redis_load_scripts(r, errstr, sizeof(errstr))) != SK_OK)
                        break;
                argv[1] = sk_script_sha(SK_SCRIPT_CLAIM);
                if (!argv[1]) {
                        sk_seterr(errstr, sizeof(errstr), "claim.lua has no SHA after SCRIPT LOAD");
                        err = SK_EREDIS;
                        break;
                }
                argvlen[1] = strlen(argv[1]);
                err = sk_redis_cmd(r, &reply, argc, argv, argvlen, errstr, sizeof(errstr));
                if (err == SK_OK || !strstr(errstr, "NOSCRIPT"))
                        break;
                /* The server lost its script cache (restart, SCRIPT FLUSH): load, retry. */
                if ((err = sk_redis_load_scripts(r, errstr, sizeof(errstr))) != SK_OK)
                        break;
                err = SK_EAGAIN;
        }
        if (err) {
                SK_LOG(err == SK_EINVAL ? SK_ERROR : SK_WARN, "claim_failed",
                       "worker=%d voucher=%" PRId64 " n=%d err=%s reason=\"%s\"",
                       w->idx, g[0]->msg.voucher_id, cnt, sk_err2str(err), errstr);
                redis_failed(w, err);
                err = SK_EAGAIN;
                goto done;
        }
        if (reply->type != REDIS_REPLY_ARRAY || reply->elements != (size_t)cnt + 1 ||
            (reply->element[0]->type != REDIS_REPLY_STATUS &&
             reply->element[0]->type != REDIS_REPLY_STRING)) {
                SK_LOG(SK_ERROR, "claim_bad_reply", "worker=%d voucher=%" PRId64, w->idx,
                       g[0]->msg.voucher_id);
                err = SK_EAGAIN;
                goto done;
        }
        for (i = 0; i < cnt; i++) {
                cmsg_t *c = g[which[i]];
                const redisReply *el = reply->element[i + 1];
                c->claimed = 1;
                c->fenced = el->type == REDIS_REPLY_INTEGER && el->integer == 1;
        }
        err = SK_OK;
done:
        if (reply)
                freeReplyObject(reply);
        free(argv);
        free(argvlen);
        free(ids);
        free(which);
        return err;
}

/* Send claim.lua consume for the unclaimed members of @p g on the claim connection,
 * without waiting for the reply. Best effort: on any problem nothing is in flight and
 * the group is claimed synchronously when its turn comes. */
static void claim_prefetch_send(worker_t *w, cmsg_t **g, int n)
{
        char k_meta[SK_KEY_MAX], k_trace[SK_KEY_MAX], extra[24], errstr[256];
        char (*ids)[SK_ID_STRLEN] = NULL;
        const char **argv = NULL;
        size_t *argvlen = NULL;
        const char *sha = sk_script_sha(SK_SCRIPT_CLAIM);
        redisContext *ctx;
        int argc = 0, cnt = 0, i, done = 0;

        if (w->pf_g || !sha || n > CLAIM_CHUNK)
                return;
        for (i = 0; i < n; i++)
                if (!g[i]->settled && !g[i]->claimed)
                        cnt++;
        if (!cnt)
                return;
        if (!w->rclaim && !(w->rclaim = sk_redis_connect(&w->conf->redis, 2000, errstr, sizeof(errstr))))
                return;
        ctx = sk_redis_ctx(w->rclaim);
        if ((!ctx || ctx->err) && (sk_redis_reconnect(w->rclaim, errstr, sizeof(errstr)) != SK_OK ||
                                   !(ctx = sk_redis_ctx(w->rclaim))))
                return;
        argv = calloc((size_t)cnt + 7, sizeof(*argv));
        argvlen = calloc((size_t)cnt + 7, sizeof(*argvlen));
        ids = calloc((size_t)cnt, sizeof(*ids));
        if (!argv || !argvlen || !ids)
                goto done;
        sk_key_voucher(k_meta, w->conf->redis_prefix, g[0]->msg.voucher_id, SK_KEY_META);
        sk_key_voucher(k_trace, w->conf->redis_prefix, g[0]->msg.voucher_id, SK_KEY_TRACE);
        snprintf(extra, sizeof(extra), "%" PRId64, w->ctx->expire_extra_ms);
        argv[argc++] = "EVALSHA";
        argv[argc++] = sha;
        argv[argc++] = "2";
        argv[argc++] = k_meta;
        argv[argc++] = k_trace;
        argv[argc++] = "consume";
        argv[argc++] = extra;
        w->pf_cnt = 0;
        for (i = 0; i < n; i++) {
                if (g[i]->settled || g[i]->claimed)
                        continue;
                sk_id_format(g[i]->msg.trace_id, ids[w->pf_cnt]);
                argv[argc++] = ids[w->pf_cnt];
                w->pf_which[w->pf_cnt++] = i;
        }
        for (i = 0; i < argc; i++)
                argvlen[i] = strlen(argv[i]);
        if (redisAppendCommandArgv(ctx, argc, argv, argvlen) != REDIS_OK)
                goto done;
        while (!done)
                if (redisBufferWrite(ctx, &done) != REDIS_OK)
                        goto done;
        w->pf_g = g;
done:
        free(argv);
        free(argvlen);
        free(ids);
}

/* Read the in-flight claim reply (if any) and mark its members claimed/fenced. A
 * failure leaves them unclaimed (the synchronous path claims them again: claim.lua
 * consume is idempotent). */
static void claim_prefetch_recv(worker_t *w)
{
        redisContext *ctx = w->rclaim ? sk_redis_ctx(w->rclaim) : NULL;
        redisReply *reply = NULL;
        cmsg_t **g = w->pf_g;

        if (!g)
                return;
        w->pf_g = NULL;
        if (!ctx || redisGetReply(ctx, (void **)&reply) != REDIS_OK || !reply) {
                SK_LOG(SK_WARN, "claim_prefetch_failed", "worker=%d err=\"%s\"", w->idx,
                       ctx ? ctx->errstr : "no connection");
                sk_metric_add(w->m->redis_errors, 1);
                return; /* ctx->err is set: the next send reconnects */
        }
        if (reply->type == REDIS_REPLY_ARRAY && reply->elements == (size_t)w->pf_cnt + 1) {
                for (int i = 0; i < w->pf_cnt; i++) {
                        cmsg_t *c = g[w->pf_which[i]];
                        const redisReply *el = reply->element[i + 1];
                        c->claimed = 1;
                        c->fenced = el->type == REDIS_REPLY_INTEGER && el->integer == 1;
                }
        } else if (reply->type == REDIS_REPLY_ERROR) {
                SK_LOG(SK_DEBUG, "claim_prefetch_error", "worker=%d reply=\"%s\"", w->idx, reply->str);
        }
        freeReplyObject(reply);
}

/* rollback.lua for a FAILED decision with @p reason; retried a few times with backoff.
 * If it still fails the FAILED outcome without a fence is what the reconciler retries. */
static void run_rollback(worker_t *w, cmsg_t *c, sk_reason_t reason)
{
        int restore = 0, release = 0, clamp = 0, attempt;
        int64_t clamp_to = -1;
        char errstr[512] = "";
        sk_rollback_res_t res;
        sk_err_t err = SK_EREDIS;

        if (reason == SK_REASON_NONE) {
                SK_LOG(SK_WARN, "rollback_unknown_reason", "worker=%d trace=%" PRId64,
                       w->idx, c->msg.trace_id);
                return;
        }
        sk_reason_flags(reason, &restore, &release, &clamp);
        if (clamp) {
                int64_t stock = 0;
                for (attempt = 0; attempt < 3; attempt++) {
                        err = cons_apply_stock(w->ap, c->msg.voucher_id, &stock, errstr, sizeof(errstr));
                        if (err == SK_OK) {
                                clamp_to = stock;
                                break;
                        }
                        if (err == SK_ENOTFOUND) {
                                clamp_to = 0;
                                break;
                        }
                        ensure_db(w);
                }
                if (clamp_to < 0)
                        SK_LOG(SK_WARN, "clamp_stock_unknown", "worker=%d voucher=%" PRId64 " err=\"%s\"",
                               w->idx, c->msg.voucher_id, errstr);
        }
        for (attempt = 0; attempt < 5; attempt++) {
                sk_redis_t *r;

                if (attempt)
                        sk_sleep_ms(sk_backoff_ms(attempt, 50, 1000, &w->rng), NULL);
                if (g_stop >= 2)
                        break;
                if (SK_FAILPOINT("consumer.before_rollback")) {
                        err = SK_EFAIL;
                        sk_seterr(errstr, sizeof(errstr), "failpoint consumer.before_rollback");
                        continue;
                }
                if (!(r = get_redis(w))) {
                        err = SK_EAGAIN;
                        continue;
                }
                memset(&res, 0, sizeof(res));
                err = sk_rollback_run(r, w->conf->redis_prefix, c->msg.voucher_id, c->msg.trace_id,
                                      c->msg.user_id, "consumer", reason, clamp_to,
                                      w->ctx->expire_extra_ms, &res, errstr, sizeof(errstr));
                if (err == SK_OK) {
                        sk_metric_add(w->m->rolled_back[reason], 1);
                        SK_LOG(SK_INFO, "rolled_back", "worker=%d trace=%" PRId64 " voucher=%" PRId64
                               " reason=%s already=%d restored=%d released=%d clamped=%d clamp_to=%" PRId64,
                               w->idx, c->msg.trace_id, c->msg.voucher_id, sk_reason_str(reason),
                               res.already, res.restored, res.released, res.clamped, clamp_to);
                        return;
                }
                redis_failed(w, err);
        }
        sk_metric_add(w->m->rollback_errors, 1);
        SK_LOG(SK_ERROR, "rollback_failed", "worker=%d trace=%" PRId64 " voucher=%" PRId64
               " reason=%s err=%s detail=\"%s\" note=\"FAILED outcome left unfenced for the reconciler\"",
               w->idx, c->msg.trace_id, c->msg.voucher_id, sk_reason_str(reason),
               sk_err2str(err), errstr);
}

/* ------------------------------------------------------------------ decisions */

static sk_err_t collision(worker_t *w, cmsg_t *c, const char *what)
{
        sk_metric_add(w->m->collisions, 1);
        SK_LOG(SK_ERROR, "id_collision", "worker=%d trace=%" PRId64 " order=%" PRId64 " user=%" PRId64
               " voucher=%" PRId64 " what=\"%s\"", w->idx, c->msg.trace_id, c->msg.order_id,
               c->msg.user_id, c->msg.voucher_id, what);
        return dlq_send(w, c, "collision", what);
}

/* Non-transient DB error on @p c: retry up to --max-db-retries (SK_EDB: try again
 * after a backoff), then DLQ (SK_OK once PERSISTED). */
static sk_err_t db_error(worker_t *w, cmsg_t *c, const char *errstr)
{
        sk_metric_add(w->m->db_errors, 1);
        c->db_errors++;
        SK_LOG(SK_WARN, "db_error", "worker=%d trace=%" PRId64 " attempt=%d err=\"%s\"", w->idx,
               c->msg.trace_id, c->db_errors, errstr);
        if (c->db_errors <= w->opts->max_db_retries)
                return SK_EDB;
        sk_metric_add(w->m->db_dlq, 1);
        return dlq_send(w, c, "db_error", errstr);
}

/* Someone decided first: follow @p o (DESIGN.md 7). */
static sk_err_t follow(worker_t *w, cmsg_t *c, const sk_outcome_t *o)
{
        if (!sk_outcome_matches(o, &c->msg)) {
                char what[256];
                snprintf(what, sizeof(what), "outcome of trace %" PRId64 " names order %" PRId64
                         " user %" PRId64 " voucher %" PRId64, o->trace_id, o->order_id,
                         o->user_id, o->voucher_id);
                return collision(w, c, what);
        }
        sk_metric_add(w->m->duplicates, 1);
        SK_LOG(SK_INFO, "duplicate", "worker=%d trace=%" PRId64 " outcome=%s reason=%s", w->idx,
               c->msg.trace_id, o->outcome == SK_OUTCOME_CREATED ? "CREATED" : "FAILED",
               o->reason_str[0] ? o->reason_str : "-");
        if (o->outcome == SK_OUTCOME_FAILED)
                run_rollback(w, c, o->reason);
        c->settled = 1;
        return SK_OK;
}

/* Record FAILED (@p reason) in its own transaction, then run rollback.lua. */
static sk_err_t decide_failed(worker_t *w, cmsg_t *c, sk_reason_t reason, const char *detail)
{
        sk_outcome_t existing;
        char errstr[512];
        sk_err_t err;

        memset(&existing, 0, sizeof(existing));
        err = sk_outcome_fail(w->db, &c->msg, reason, detail, &existing, errstr, sizeof(errstr));
        if (err == SK_EEXIST)
                return follow(w, c, &existing);
        if (err == SK_EAGAIN) {
                sk_metric_add(w->m->db_transient, 1);
                SK_LOG(SK_WARN, "db_transient", "worker=%d trace=%" PRId64 " err=\"%s\"", w->idx,
                       c->msg.trace_id, errstr);
                return SK_EAGAIN;
        }
        if (err)
                return db_error(w, c, errstr);
        sk_metric_add(w->m->failed[reason], 1);
        SK_LOG(SK_INFO, "failed", "worker=%d trace=%" PRId64 " voucher=%" PRId64 " user=%" PRId64
               " reason=%s", w->idx, c->msg.trace_id, c->msg.voucher_id, c->msg.user_id,
               sk_reason_str(reason));
        run_rollback(w, c, reason);
        c->settled = 1;
        return SK_OK;
}

/* One message on its own (the fallback path). */
static sk_err_t apply_single(worker_t *w, cmsg_t *c)
{
        char errstr[512] = "";
        int64_t t0 = sk_mono_ms();
        cons_apply_res_t res = cons_apply_one(w->ap, &c->msg, errstr, sizeof(errstr));
        sk_outcome_t o;
        sk_err_t err;

        sk_metric_observe(w->m->txn_seconds, (double)(sk_mono_ms() - t0) / 1000.0);
        switch (res) {
        case APPLY_OK:
                sk_metric_observe(w->m->batch_size, 1);
                sk_metric_add(w->m->applied, 1);
                c->settled = 1;
                c->applied = 1;
                return SK_OK;
        case APPLY_DUP:
                err = sk_outcome_get(w->db, c->msg.trace_id, &o, errstr, sizeof(errstr));
                if (err == SK_OK)
                        return follow(w, c, &o);
                if (err == SK_EAGAIN || err == SK_ENOTFOUND)
                        return SK_EAGAIN;
                return db_error(w, c, errstr);
        case APPLY_NO_STOCK:
                return decide_failed(w, c, SK_REASON_SOLD_OUT, errstr);
        case APPLY_HAS_ORDER:
                return decide_failed(w, c, SK_REASON_HAS_ORDER, "user already has an active order");
        case APPLY_COLLISION:
                return collision(w, c, errstr);
        case APPLY_NO_VOUCHER:
                return db_error(w, c, errstr);
        case APPLY_TRANSIENT:
                sk_metric_add(w->m->db_transient, 1);
                SK_LOG(SK_WARN, "db_transient", "worker=%d trace=%" PRId64 " err=\"%s\"", w->idx,
                       c->msg.trace_id, errstr);
                return SK_EAGAIN;
        case APPLY_ERROR:
        default:
                return db_error(w, c, errstr);
        }
}

/* One attempt at settling group @p g (all messages of one voucher in this batch).
 * @returns SK_OK when every message is settled, SK_EAGAIN to retry after a backoff,
 * SK_ESTOP when stopping. */
static sk_err_t group_once(worker_t *w, cmsg_t **g, int n)
{
        char errstr[512] = "";
        int i, ncand = 0, pending = 0;
        sk_err_t err;

        int64_t t_claim = sk_mono_ms();

        claim_prefetch_recv(w); /* this group's claim, sent while the previous one ran */
        if ((err = claim_group(w, g, n)))
                return err == SK_ENOMEM ? SK_EAGAIN : err;
        t_claim = sk_mono_ms() - t_claim;
        if (w->next_g) {
                claim_prefetch_send(w, w->next_g, w->next_n);
                w->next_g = NULL; /* once per group, not per retry */
        }

        /* The front fenced these first: FAILED (front_rollback), no order. */
        for (i = 0; i < n; i++) {
                if (g[i]->settled || !g[i]->fenced)
                        continue;
                err = decide_failed(w, g[i], SK_REASON_FRONT_ROLLBACK, "fenced by the front before consume");
                if (err == SK_ESTOP || err == SK_EAGAIN)
                        return err; /* transient: the whole group again after a backoff */
        }
        for (i = 0; i < n; i++)
                if (!g[i]->settled && !g[i]->fenced)
                        w->msgs[ncand++] = &g[i]->msg;
        if (ncand > 0) {
                int64_t t0 = sk_mono_ms();
                err = cons_apply_batch(w->ap, w->msgs, ncand, errstr, sizeof(errstr));
                sk_metric_observe(w->m->txn_seconds, (double)(sk_mono_ms() - t0) / 1000.0);
                if (err == SK_OK) {
                        sk_metric_observe(w->m->batch_size, ncand);
                        sk_metric_add(w->m->applied, ncand);
                        for (i = 0; i < n; i++)
                                if (!g[i]->settled && !g[i]->fenced) {
                                        g[i]->settled = 1;
                                        g[i]->applied = 1;
                                }
                        SK_LOG(SK_DEBUG, "batch_applied", "worker=%d voucher=%" PRId64 " n=%d ms=%" PRId64
                               " claim_ms=%" PRId64, w->idx, g[0]->msg.voucher_id, ncand,
                               sk_mono_ms() - t0, t_claim);
                } else if (err == SK_EAGAIN) {
                        sk_metric_add(w->m->db_transient, 1);
                        SK_LOG(SK_WARN, "db_transient", "worker=%d voucher=%" PRId64 " n=%d err=\"%s\"",
                               w->idx, g[0]->msg.voucher_id, ncand, errstr);
                        return SK_EAGAIN;
                } else {
                        /* A duplicate, short stock or another error: one at a time, so a bad
                         * message never fails its neighbours and stock sells exactly to 0. */
                        if (ncand > 1)
                                sk_metric_add(w->m->fallbacks, 1);
                        SK_LOG(ncand > 1 ? SK_INFO : SK_DEBUG, "batch_fallback",
                               "worker=%d voucher=%" PRId64 " n=%d err=%s reason=\"%s\"", w->idx,
                               g[0]->msg.voucher_id, ncand, sk_err2str(err), errstr);
                        for (i = 0; i < n; i++) {
                                if (g[i]->settled || g[i]->fenced)
                                        continue;
                                err = apply_single(w, g[i]);
                                if (err == SK_ESTOP)
                                        return err;
                                /* Transient (lock wait, lost link): the rest of this voucher
                                 * would wait the same way; back off and retry the group. A
                                 * non-transient error (SK_EDB) only holds back its message. */
                                if (err == SK_EAGAIN || stopping())
                                        break;
                        }
                }
        }
        for (i = 0; i < n; i++)
                if (!g[i]->settled)
                        pending++;
        return pending ? SK_EAGAIN : SK_OK;
}

static void settle_group(worker_t *w, cmsg_t **g, int n)
{
        int attempt = 0;

        for (;;) {
                sk_err_t err = group_once(w, g, n);
                if (err == SK_OK || err == SK_ESTOP || stopping())
                        return;
                /* Transient: keep polling with the partitions paused, back off, make sure
                 * the link is alive, retry the whole transaction from BEGIN. */
                backoff_wait(w, attempt++);
                if (stopping())
                        return;
                ensure_db(w);
        }
}

/* ------------------------------------------------------------------ offsets */

typedef struct part_mark {
        int32_t partition;
        int64_t min_unsettled;  /* INT64_MAX if none */
        int64_t max_settled;    /* -1 if none */
        const char *topic;
} part_mark_t;

static part_mark_t *mark_for(part_mark_t *marks, int *nmarks, const rd_kafka_message_t *rkm)
{
        for (int i = 0; i < *nmarks; i++)
                if (marks[i].partition == rkm->partition)
                        return &marks[i];
        marks[*nmarks].partition = rkm->partition;
        marks[*nmarks].min_unsettled = INT64_MAX;
        marks[*nmarks].max_settled = -1;
        marks[*nmarks].topic = rd_kafka_topic_name(rkm->rkt);
        return &marks[(*nmarks)++];
}

/* Store, per partition present in the batch, the lowest unsettled offset (batch or
 * carry), or the highest settled + 1. */
static void store_offsets(worker_t *w)
{
        part_mark_t *marks;
        rd_kafka_topic_partition_list_t *parts;
        int nmarks = 0, i;

        if (!w->nbatch)
                return;
        if (!(marks = calloc((size_t)w->nbatch, sizeof(*marks))))
                return;
        for (i = 0; i < w->nbatch; i++) {
                part_mark_t *pm = mark_for(marks, &nmarks, w->batch[i].rkm);
                int64_t off = w->batch[i].rkm->offset;
                if (w->batch[i].settled) {
                        if (off > pm->max_settled)
                                pm->max_settled = off;
                } else if (off < pm->min_unsettled) {
                        pm->min_unsettled = off;
                }
        }
        for (i = 0; i < w->ncarry; i++)
                for (int j = 0; j < nmarks; j++)
                        if (marks[j].partition == w->carry[i]->partition &&
                            w->carry[i]->offset < marks[j].min_unsettled)
                                marks[j].min_unsettled = w->carry[i]->offset;
        parts = rd_kafka_topic_partition_list_new(nmarks);
        for (i = 0; i < nmarks; i++) {
                int64_t next = marks[i].min_unsettled != INT64_MAX ? marks[i].min_unsettled
                                                                    : marks[i].max_settled + 1;
                if (next < 0)
                        continue;
                rd_kafka_topic_partition_list_add(parts, marks[i].topic, marks[i].partition)->offset = next;
        }
        if (parts->cnt) {
                rd_kafka_resp_err_t e = rd_kafka_offsets_store(w->rk, parts);
                for (i = 0; i < parts->cnt; i++) {
                        if (parts->elems[i].err)
                                SK_LOG(SK_INFO, "offset_store_skipped", "worker=%d partition=%d offset=%" PRId64
                                       " err=%s", w->idx, (int)parts->elems[i].partition,
                                       parts->elems[i].offset, rd_kafka_err2name(parts->elems[i].err));
                        else
                                SK_LOG(SK_DEBUG, "offset_stored", "worker=%d partition=%d offset=%" PRId64,
                                       w->idx, (int)parts->elems[i].partition, parts->elems[i].offset);
                }
                (void)e;
        }
        rd_kafka_topic_partition_list_destroy(parts);
        free(marks);
}

/* ------------------------------------------------------------------ order cache */

/* SET <prefix>:order:<id> <json> EX 60 for every order created in this batch,
 * pipelined; failures only cost a cache miss (the front falls back to the DB). */
static void cache_orders(worker_t *w)
{
        redisContext *ctx;
        sk_redis_t *r;
        int sent = 0, i;
        int64_t now_ms = sk_now_ms();
        char ctime_s[40];

        for (i = 0; i < w->nbatch; i++)
                if (w->batch[i].applied)
                        break;
        if (i == w->nbatch || !(r = get_redis(w)) || !sk_redis_ctx(r))
                return;
        {
                /* createTime: the commit time in UTC, as DATE_FORMAT(create_time) renders
                 * it (the DB session runs in UTC). */
                time_t secs = (time_t)(now_ms / 1000);
                struct tm tm;
                char tbuf[32];
                gmtime_r(&secs, &tm);
                strftime(tbuf, sizeof(tbuf), "%Y-%m-%dT%H:%M:%S", &tm);
                snprintf(ctime_s, sizeof(ctime_s), "%s.%03d", tbuf, (int)(now_ms % 1000));
        }
        ctx = sk_redis_ctx(r);
        for (i = 0; i < w->nbatch; i++) {
                const sk_order_msg_t *m = &w->batch[i].msg;
                char key[SK_KEY_MAX], json[320];
                if (!w->batch[i].applied)
                        continue;
                sk_key_order(key, w->conf->redis_prefix, m->order_id);
                /* The shape the front answers GET /api/v1/orders/{id} with from the DB
                 * (producer/lookup.c), served as is from the cache. */
                snprintf(json, sizeof(json),
                         "{\"code\":0,\"orderId\":\"%" PRId64 "\",\"userId\":\"%" PRId64
                         "\",\"voucherId\":\"%" PRId64 "\",\"traceId\":\"%" PRId64
                         "\",\"status\":1,\"createTime\":\"%s\"}",
                         m->order_id, m->user_id, m->voucher_id, m->trace_id, ctime_s);
                if (redisAppendCommand(ctx, "SET %s %s EX 60", key, json) != REDIS_OK)
                        break;
                sent++;
        }
        for (i = 0; i < sent; i++) {
                redisReply *reply = NULL;
                if (redisGetReply(ctx, (void **)&reply) != REDIS_OK) {
                        SK_LOG(SK_WARN, "order_cache_failed", "worker=%d err=\"%s\"", w->idx, ctx->errstr);
                        redis_failed(w, SK_EUNKNOWN);
                        return;
                }
                if (reply && reply->type == REDIS_REPLY_ERROR) {
                        SK_LOG(SK_WARN, "order_cache_failed", "worker=%d err=\"%s\"", w->idx, reply->str);
                        sk_metric_add(w->m->redis_errors, 1);
                }
                freeReplyObject(reply);
        }
}

/* ------------------------------------------------------------------ lag */

static void update_lag(worker_t *w)
{
        rd_kafka_topic_partition_list_t *parts = NULL;
        int64_t lag = 0, total = 0;
        int i;

        if (sk_mono_ms() < w->next_lag_ms)
                return;
        w->next_lag_ms = sk_mono_ms() + 1000;
        if (rd_kafka_assignment(w->rk, &parts) || !parts)
                return;
        rd_kafka_position(w->rk, parts);
        for (i = 0; i < parts->cnt; i++) {
                int64_t lo = -1, hi = -1, pos = parts->elems[i].offset;
                if (rd_kafka_get_watermark_offsets(w->rk, parts->elems[i].topic, parts->elems[i].partition,
                                                   &lo, &hi) || hi < 0)
                        continue;
                if (pos < 0)
                        pos = lo >= 0 ? lo : 0;
                if (hi > pos)
                        lag += hi - pos;
        }
        rd_kafka_topic_partition_list_destroy(parts);
        atomic_store(&g_lag[w->idx % MAX_WORKERS], lag);
        for (i = 0; i < w->opts->workers && i < MAX_WORKERS; i++)
                total += atomic_load(&g_lag[i]);
        sk_metric_set(w->m->lag, total);
}

/* ------------------------------------------------------------------ batch */

static void process_batch(worker_t *w)
{
        char errstr[512];
        int i, j, k, ng = 0, pos = 0;

        for (i = 0; i < w->nbatch; i++) {
                cmsg_t *c = &w->batch[i];
                if (sk_msg_parse(c->rkm->payload, c->rkm->len, &c->msg, errstr, sizeof(errstr)) == SK_OK) {
                        c->parsed = 1;
                        continue;
                }
                sk_metric_add(w->m->poison, 1);
                SK_LOG(SK_WARN, "poison", "worker=%d partition=%d offset=%" PRId64 " reason=\"%s\"",
                       w->idx, (int)c->rkm->partition, (int64_t)c->rkm->offset, errstr);
                if (dlq_send(w, c, "poison", errstr) == SK_ESTOP)
                        return;
        }
        /* Group by voucher, in order of first appearance; one transaction per group.
         * A first signal lets the batch finish (without waiting in retries); a second
         * abandons it. */
        for (i = 0; i < w->nbatch; i++) {
                cmsg_t *c = &w->batch[i];

                if (!c->parsed || c->grouped || c->settled)
                        continue;
                w->gstart[ng] = pos;
                for (j = i; j < w->nbatch; j++) {
                        cmsg_t *d = &w->batch[j];
                        if (d->parsed && !d->grouped && !d->settled && d->msg.voucher_id == c->msg.voucher_id) {
                                d->grouped = 1;
                                w->grp[pos++] = d;
                        }
                }
                w->gcount[ng] = pos - w->gstart[ng];
                ng++;
        }
        for (k = 0; k < ng && g_stop < 2; k++) {
                w->next_g = k + 1 < ng ? &w->grp[w->gstart[k + 1]] : NULL;
                w->next_n = k + 1 < ng ? w->gcount[k + 1] : 0;
                settle_group(w, &w->grp[w->gstart[k]], w->gcount[k]);
        }
        w->next_g = NULL;
        claim_prefetch_recv(w); /* nothing stays in flight across batches */
        /* On a drain, groups not reached stay unsettled: their offsets are not stored. */
}

static void free_batch(worker_t *w)
{
        for (int i = 0; i < w->nbatch; i++)
                rd_kafka_message_destroy(w->batch[i].rkm);
        w->nbatch = 0;
}

static void add_to_batch(worker_t *w, rd_kafka_message_t *rkm)
{
        cmsg_t *c = &w->batch[w->nbatch++];
        memset(c, 0, sizeof(*c));
        c->rkm = rkm;
}

/* Fill the batch: carried messages first, then poll. @returns the batch size. */
static int collect(worker_t *w)
{
        int64_t deadline;

        while (w->ncarry && w->nbatch < w->opts->batch_max) {
                add_to_batch(w, w->carry[0]);
                memmove(w->carry, w->carry + 1, sizeof(*w->carry) * (size_t)--w->ncarry);
        }
        if (!w->nbatch) {
                rd_kafka_message_t *rkm = rd_kafka_consumer_poll(w->rk, 100 /* ms */);
                if (!rkm || !is_message(w, rkm))
                        return 0;
                sk_metric_add(w->m->consumed, 1);
                add_to_batch(w, rkm);
        }
        deadline = sk_mono_ms() + w->opts->batch_wait_ms;
        while (w->nbatch < w->opts->batch_max && !g_stop) {
                int64_t left = deadline - sk_mono_ms();
                rd_kafka_message_t *rkm = rd_kafka_consumer_poll(w->rk, left > 0 ? (int)left : 0);
                if (!rkm)
                        break;
                if (!is_message(w, rkm))
                        continue;
                sk_metric_add(w->m->consumed, 1);
                add_to_batch(w, rkm);
        }
        return w->nbatch;
}

/* ------------------------------------------------------------------ setup */

static int setup(worker_t *w)
{
        char errstr[512], kbytes[16];
        rd_kafka_conf_t *kconf = NULL;
        rd_kafka_topic_partition_list_t *sub;
        rd_kafka_resp_err_t e;
        int attempt = 0;

        w->rng = sk_backoff_seed() ^ ((uint64_t)w->idx << 32);
        w->batch = calloc((size_t)w->opts->batch_max, sizeof(*w->batch));
        w->msgs = calloc((size_t)w->opts->batch_max, sizeof(*w->msgs));
        w->grp = calloc((size_t)w->opts->batch_max, sizeof(*w->grp));
        w->gstart = calloc((size_t)w->opts->batch_max, sizeof(*w->gstart));
        w->gcount = calloc((size_t)w->opts->batch_max, sizeof(*w->gcount));
        w->pf_which = calloc((size_t)w->opts->batch_max, sizeof(*w->pf_which));
        if (!w->batch || !w->msgs || !w->grp || !w->gstart || !w->gcount || !w->pf_which)
                return -1;

        /* The database: retried until it answers (or we are told to stop). */
        while (!(w->db = sk_db_connect(&w->conf->mysql, 0, w->opts->lock_wait_s, errstr, sizeof(errstr)))) {
                SK_LOG(SK_WARN, "db_connect_failed", "worker=%d attempt=%d err=\"%s\"", w->idx, attempt, errstr);
                if (stopping())
                        return -1;
                sk_sleep_ms(sk_backoff_ms(attempt++, 200, 5000, &w->rng), (volatile int *)&g_stop);
                if (stopping())
                        return -1;
        }
        if (!(w->ap = cons_apply_new(w->db, w->opts->batch_max)))
                return -1;
        (void)get_redis(w); /* lazily retried when needed */

        if (!(kconf = sk_kafka_conf_new(w->conf, SK_KAFKA_CONSUMER, errstr, sizeof(errstr)))) {
                SK_LOG(SK_ERROR, "kafka_conf_failed", "worker=%d err=\"%s\"", w->idx, errstr);
                return -1;
        }
        /* Split the prefetch budget between the workers (RSS target) unless set by -X. */
        if (!has_prop(w->conf, "queued.max.messages.kbytes")) {
                int kb = 8192 / (w->opts->workers ? w->opts->workers : 1);
                snprintf(kbytes, sizeof(kbytes), "%d", kb < 1024 ? 1024 : kb);
                sk_kafka_conf_set(kconf, "queued.max.messages.kbytes", kbytes, NULL, 0);
        }
        rd_kafka_conf_set_log_cb(kconf, on_kafka_log);
        rd_kafka_conf_set_error_cb(kconf, on_kafka_error);
        if (!(w->rk = rd_kafka_new(RD_KAFKA_CONSUMER, kconf, errstr, sizeof(errstr)))) {
                rd_kafka_conf_destroy(kconf);
                SK_LOG(SK_ERROR, "kafka_new_failed", "worker=%d err=\"%s\"", w->idx, errstr);
                return -1;
        }
        kconf = NULL; /* rk owns it */
        rd_kafka_poll_set_consumer(w->rk);
        sub = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(sub, w->conf->topic, RD_KAFKA_PARTITION_UA);
        e = rd_kafka_subscribe(w->rk, sub);
        rd_kafka_topic_partition_list_destroy(sub);
        if (e) {
                SK_LOG(SK_ERROR, "subscribe_failed", "worker=%d err=%s", w->idx, rd_kafka_err2str(e));
                return -1;
        }
        SK_LOG(SK_INFO, "worker_started", "worker=%d topic=%s group=%s batch_max=%d batch_wait_ms=%d",
               w->idx, w->conf->topic, w->conf->group_id, w->opts->batch_max, w->opts->batch_wait_ms);
        return 0;
}

static void teardown(worker_t *w)
{
        /* Messages go back to librdkafka before its handle is closed. */
        for (int i = 0; i < w->ncarry; i++)
                rd_kafka_message_destroy(w->carry[i]);
        w->ncarry = 0;
        free_batch(w);
        if (w->rk) {
                rd_kafka_resp_err_t e;
                resume_all(w);
                /* Offsets were stored after each batch; commit them now, synchronously. */
                e = rd_kafka_commit(w->rk, NULL, 0 /* sync */);
                if (e && e != RD_KAFKA_RESP_ERR__NO_OFFSET)
                        SK_LOG(SK_WARN, "final_commit_failed", "worker=%d err=%s", w->idx, rd_kafka_err2str(e));
                rd_kafka_consumer_close(w->rk); /* leave the group */
                rd_kafka_destroy(w->rk);
        }
        free(w->carry);
        if (w->dlq) {
                rd_kafka_flush(w->dlq, 5000 /* ms */);
                rd_kafka_destroy(w->dlq);
        }
        cons_apply_destroy(w->ap);
        sk_db_close(w->db);
        sk_redis_close(w->redis);
        free(w->batch);
        free(w->msgs);
        free(w->grp);
        free(w->gstart);
        free(w->gcount);
        free(w->pf_which);
        sk_redis_close(w->rclaim);
}

int cons_worker_run(const cons_ctx_t *ctx, int idx)
{
        worker_t w;
        int rc = 0;

        memset(&w, 0, sizeof(w));
        w.ctx = ctx;
        w.conf = ctx->conf;
        w.opts = ctx->opts;
        w.m = ctx->m;
        w.idx = idx;
        if (setup(&w) != 0) {
                rc = stopping() ? 0 : 1;
                goto done;
        }
        while (!stopping()) {
                int64_t t0 = sk_mono_ms(), t1, t2, t3, t4;
                if (collect(&w) > 0) {
                        int n = w.nbatch;
                        t1 = sk_mono_ms();
                        process_batch(&w);
                        t2 = sk_mono_ms();
                        store_offsets(&w);
                        t3 = sk_mono_ms();
                        cache_orders(&w);
                        t4 = sk_mono_ms();
                        free_batch(&w);
                        resume_all(&w);
                        SK_LOG(SK_DEBUG, "batch_done", "worker=%d n=%d collect_ms=%" PRId64 " process_ms=%" PRId64
                               " store_ms=%" PRId64 " cache_ms=%" PRId64, idx, n, t1 - t0, t2 - t1,
                               t3 - t2, t4 - t3);
                }
                update_lag(&w);
        }
        /* Drain: a batch being processed when the signal came was finished above (its
         * unsettled rest is left for the next owner); store what is settled. */
        store_offsets(&w);
        free_batch(&w);
        SK_LOG(SK_INFO, "worker_stopping", "worker=%d", idx);
done:
        teardown(&w);
        return rc;
}
