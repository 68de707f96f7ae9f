/* producer/pipeline.c: the purchase pipeline of seckill-front (DESIGN.md 3, 4, 5, 8).
 *
 * Request objects and their single answer, the pending list with its deadline timer,
 * the Redis deduct workers (pipelined EVALSHA of deduct.lua), the Kafka producer with
 * its poll thread (delivery reports decide the answer), the rollback worker
 * (rollback.lua mode front, never on a purchase thread) and the health thread (broker
 * metadata, fatal producer replacement, Redis noeviction and scripts).
 * What it does not do: HTTP parsing and routing (http.c), DB lookups (lookup.c). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "front.h"
#include "sk/clock.h"
#include "sk/failpoint.h"
#include "sk/kafka.h"
#include "sk/log.h"
#include "sk/outcome.h"
#include "sk/redis.h"
#include "sk/scripts.h"

fr_t g_fr;

#define REDIS_CMD_TIMEOUT_MS 1000
#define DEDUCT_MAX_REPEATS 2            /* DESIGN.md 8: repeat the same EVALSHA up to twice */

/* ---------------------------------------------------------------- queues ---- */

void fr_queue_init(fr_queue_t *q)
{
        memset(q, 0, sizeof(*q));
        pthread_mutex_init(&q->mu, NULL);
        pthread_cond_init(&q->cv, NULL);
}

int fr_queue_push(fr_queue_t *q, fr_req_t *req)
{
        req->qnext = NULL;
        pthread_mutex_lock(&q->mu);
        if (q->closed) {
                pthread_mutex_unlock(&q->mu);
                return -1;
        }
        if (q->tail)
                q->tail->qnext = req;
        else
                q->head = req;
        q->tail = req;
        q->len++;
        pthread_cond_signal(&q->cv);
        pthread_mutex_unlock(&q->mu);
        return 0;
}

fr_req_t *fr_queue_pop(fr_queue_t *q, int max, int wait_ms)
{
        fr_req_t *first = NULL, *last = NULL;
        struct timespec ts;
        int n = 0;

        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += wait_ms / 1000;
        ts.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&q->mu);
        while (!q->head && !q->closed) {
                if (pthread_cond_timedwait(&q->cv, &q->mu, &ts) == ETIMEDOUT)
                        break;
        }
        while (q->head && n < max) {
                fr_req_t *req = q->head;
                q->head = req->qnext;
                if (!q->head)
                        q->tail = NULL;
                q->len--;
                req->qnext = NULL;
                if (last)
                        last->qnext = req;
                else
                        first = req;
                last = req;
                n++;
        }
        pthread_mutex_unlock(&q->mu);
        return first;
}

int fr_queue_drained(fr_queue_t *q)
{
        int done;

        pthread_mutex_lock(&q->mu);
        done = q->closed && !q->head;
        pthread_mutex_unlock(&q->mu);
        return done;
}

void fr_queue_close(fr_queue_t *q)
{
        pthread_mutex_lock(&q->mu);
        q->closed = 1;
        pthread_cond_broadcast(&q->cv);
        pthread_mutex_unlock(&q->mu);
}

/* -------------------------------------------------------------- requests ---- */

fr_req_t *fr_req_new(void)
{
        fr_req_t *req = calloc(1, sizeof(*req));

        if (!req)
                return NULL;
        atomic_init(&req->refs, 1); /* the HTTP layer's reference */
        req->start_mono_ms = sk_mono_ms();
        return req;
}

void fr_req_ref(fr_req_t *req)
{
        atomic_fetch_add(&req->refs, 1);
}

void fr_req_unref(fr_req_t *req)
{
        if (!req)
                return;
        if (atomic_fetch_sub(&req->refs, 1) != 1)
                return;
        free(req->body);
        free(req->msg);
        free(req);
}

static void pend_unlink(fr_req_t *req)
{
        if (!req->in_list)
                return;
        if (req->prev)
                req->prev->next = req->next;
        else
                g_fr.pend_head = req->next;
        if (req->next)
                req->next->prev = req->prev;
        else
                g_fr.pend_tail = req->prev;
        req->prev = req->next = NULL;
        req->in_list = 0;
}

/* Caller holds pend_mu. Every pending request gets the same deadline offset, so
 * appending keeps the list sorted by deadline and the timer only looks at the head. */
void fr_pending_add(fr_req_t *req)
{
        req->deadline_mono_ms = req->start_mono_ms + g_fr.deadline_ms;
        req->prev = g_fr.pend_tail;
        req->next = NULL;
        if (g_fr.pend_tail)
                g_fr.pend_tail->next = req;
        else
                g_fr.pend_head = req;
        g_fr.pend_tail = req;
        req->in_list = 1;
}

int fr_answer(fr_req_t *req, int status, char *body, int retry_after_s)
{
        int resume;

        pthread_mutex_lock(&g_fr.pend_mu);
        if (req->answered) {
                pthread_mutex_unlock(&g_fr.pend_mu);
                free(body);
                return 0;
        }
        req->answered = 1;
        req->status = status;
        free(req->body);
        req->body = body;
        req->body_len = body ? strlen(body) : 0;
        req->retry_after_s = retry_after_s;
        pend_unlink(req);
        resume = req->suspended;
        req->suspended = 0;
        /* The connection stays suspended (and MHD's reference alive) until this call:
         * MHD then calls the handler again, which queues the answer. Resumed under
         * pend_mu: once the shutdown's fr_pending_flush() (same lock) has seen an empty
         * list, no resume is still on its way, so MHD_stop_daemon can neither find a
         * suspended connection (MHD_PANIC) nor race with a resume of a freed one. Lock
         * order pend_mu -> libmicrohttpd's internal mutex, as for the suspend. */
        if (resume)
                MHD_resume_connection(req->conn);
        pthread_mutex_unlock(&g_fr.pend_mu);
        if (req->kind == FR_KIND_PURCHASE)
                sk_metric_observe(g_fr.m.latency,
                                  (double)(sk_mono_ms() - req->start_mono_ms) / 1000.0);
        return 1;
}

char *fr_json_err(int code, const char *msg)
{
        char buf[512];

        snprintf(buf, sizeof(buf), "{\"code\":%d,\"message\":\"%s\"}", code, msg);
        return strdup(buf);
}

static sk_metric_t *cause_metric(const char *cause)
{
        if (!strcmp(cause, "overload")) return g_fr.m.u_overload;
        if (!strcmp(cause, "kafka")) return g_fr.m.u_kafka;
        if (!strcmp(cause, "redis")) return g_fr.m.u_redis;
        if (!strcmp(cause, "lease")) return g_fr.m.u_lease;
        if (!strcmp(cause, "paused")) return g_fr.m.u_paused;
        if (!strcmp(cause, "failed")) return g_fr.m.u_failed;
        if (!strcmp(cause, "shutdown")) return g_fr.m.u_shutdown;
        if (!strcmp(cause, "db")) return g_fr.m.u_db;
        if (!strcmp(cause, "meta_missing")) return g_fr.m.u_meta;
        return g_fr.m.u_pending;
}

int fr_answer_503(fr_req_t *req, const char *cause, const char *state, const char *msg)
{
        char buf[640];
        int n;

        /* DESIGN.md 3: 10013 covers paused, Redis or Kafka unavailable, in-flight cap
         * reached and outcome not yet known; "cause" says which, "state" is the purchase
         * state the front established (PENDING or FAILED) once ids were minted. */
        n = snprintf(buf, sizeof(buf), "{\"code\":10013,\"cause\":\"%s\",\"message\":\"%s\"",
                     cause, msg ? msg : "try again later");
        if (state && req->trace_id)
                n += snprintf(buf + n, sizeof(buf) - (size_t)n,
                              ",\"state\":\"%s\",\"orderId\":\"%s\",\"traceId\":\"%s\"",
                              state, req->so, req->st);
        snprintf(buf + n, sizeof(buf) - (size_t)n, "}");
        /* Only the answer actually sent is counted (a later one, e.g. the rollback's
         * FAILED after the deadline's PENDING, is dropped by fr_answer). */
        if (!fr_answer(req, 503, strdup(buf), 1))
                return 0;
        if (!strcmp(cause, "timeout") || (state && !strcmp(state, "PENDING")))
                sk_metric_add(g_fr.m.u_pending, 1);
        else if (state && !strcmp(state, "FAILED"))
                sk_metric_add(g_fr.m.u_failed, 1);
        else
                sk_metric_add(cause_metric(cause), 1);
        return 1;
}

void fr_req_done(fr_req_t *req)
{
        if (req->inflight_counted) {
                req->inflight_counted = 0;
                atomic_fetch_sub(&g_fr.inflight, 1);
        }
        fr_req_unref(req);
}

/* The purchase state a deadline or shutdown 503 reports (DESIGN.md 8: "503, state
 * PENDING"): PENDING while the deduct may have run or may still run; none (a plain 503,
 * like the other nothing-to-undo answers) once deduct.lua has rejected the purchase and
 * only the DB check that picks 404 or 503 is outstanding (the 10004 path). */
static const char *unanswered_state(fr_req_t *req)
{
        if (req->kind != FR_KIND_PURCHASE || atomic_load(&req->nothing_taken))
                return NULL;
        return "PENDING";
}

void fr_pending_flush(const char *cause)
{
        for (;;) {
                fr_req_t *req;

                pthread_mutex_lock(&g_fr.pend_mu);
                req = g_fr.pend_head;
                if (req)
                        fr_req_ref(req);
                pthread_mutex_unlock(&g_fr.pend_mu);
                if (!req)
                        return;
                /* fr_answer unlinks it, so the loop advances. */
                fr_answer_503(req, cause, unanswered_state(req),
                              unanswered_state(req) ? "outcome not yet known" : "try again later");
                fr_req_unref(req);
        }
}

/* ------------------------------------------------------------ timer thread ---- */

/* The front's own deadline (DESIGN.md 8): suspended libmicrohttpd connections never
 * time out, so at 2 x delivery timeout + 1 s the request is answered 503 PENDING.
 * Never a rollback here: a later delivery report is still handled by the pipeline. */
static void *timer_main(void *arg)
{
        (void)arg;
        while (!atomic_load(&g_fr.threads_stop)) {
                int64_t now = sk_mono_ms();

                for (;;) {
                        fr_req_t *req = NULL;

                        pthread_mutex_lock(&g_fr.pend_mu);
                        if (g_fr.pend_head && g_fr.pend_head->deadline_mono_ms <= now) {
                                req = g_fr.pend_head;
                                fr_req_ref(req);
                        }
                        pthread_mutex_unlock(&g_fr.pend_mu);
                        if (!req)
                                break;
                        SK_LOG(SK_WARN, "request_deadline", "trace_id=%s order_id=%s kind=%d",
                               req->st, req->so, (int)req->kind);
                        if (unanswered_state(req))
                                fr_answer_503(req, "timeout", "PENDING", "outcome not yet known");
                        else
                                fr_answer_503(req, "timeout", NULL, "lookup timed out");
                        fr_req_unref(req);
                }
                sk_metric_set(g_fr.m.inflight, atomic_load(&g_fr.inflight));
                sk_sleep_ms(20, NULL);
        }
        return NULL;
}

/* ------------------------------------------------------------------ Kafka ---- */

static void dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *rkm, void *opaque);

static void error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
        fr_prod_t *cur = atomic_load(&g_fr.prod);

        (void)opaque;
        if (err == RD_KAFKA_RESP_ERR__FATAL) {
                /* Only the current producer's fatal error matters: a retired one was
                 * already replaced (its report may be served after the swap). */
                if (cur && cur->rk != rk) {
                        SK_LOG(SK_WARN, "kafka_fatal_retired", "reason=\"%s\"", reason);
                        return;
                }
                atomic_store(&g_fr.prod_fatal, 1);
                atomic_store(&g_fr.kafka_ok, 0);
                SK_LOG(SK_ERROR, "kafka_fatal", "reason=\"%s\"", reason);
                return;
        }
        if (err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN)
                atomic_store(&g_fr.kafka_ok, 0);
        SK_LOG(SK_WARN, "kafka_error", "err=%s reason=\"%s\"",
               rd_kafka_err2name((rd_kafka_resp_err_t)err), reason);
}

/* librdkafka's own log lines, in our key=value format (served by its threads). */
static void log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
        (void)rk;
        SK_LOG(level <= 3 ? SK_ERROR : level <= 5 ? SK_WARN : SK_DEBUG, "rdkafka_log",
               "fac=%s msg=\"%s\"", fac, buf);
}

/* 1 if -X gave property @p name. */
static int user_prop(const char *name)
{
        int i;

        for (i = 0; i < g_fr.conf.nkafka_props; i++)
                if (!strcmp(g_fr.conf.kafka_props[i][0], name))
                        return 1;
        return 0;
}

static fr_prod_t *prod_new(char *errstr, size_t errstr_size)
{
        rd_kafka_conf_t *kconf;
        fr_prod_t *p;

        if (!(kconf = sk_kafka_conf_new(&g_fr.conf, SK_KAFKA_PRODUCER, errstr, errstr_size)))
                return NULL;
        /* Every purchase waits for its delivery report, so linger is pure latency for a
         * closed-loop client: 2 ms (librdkafka's default is 5) unless -X sets it. */
        if (!user_prop("linger.ms") && !user_prop("queue.buffering.max.ms") &&
            sk_kafka_conf_set(kconf, "linger.ms", "2", errstr, errstr_size) != SK_OK) {
                rd_kafka_conf_destroy(kconf);
                return NULL;
        }
        rd_kafka_conf_set_dr_msg_cb(kconf, dr_cb);
        rd_kafka_conf_set_error_cb(kconf, error_cb);
        rd_kafka_conf_set_log_cb(kconf, log_cb);
        if (!(p = calloc(1, sizeof(*p)))) {
                rd_kafka_conf_destroy(kconf);
                sk_seterr(errstr, errstr_size, "out of memory");
                return NULL;
        }
        p->rk = rd_kafka_new(RD_KAFKA_PRODUCER, kconf, errstr, errstr_size);
        if (!p->rk) {
                rd_kafka_conf_destroy(kconf);
                free(p);
                return NULL;
        }
        kconf = NULL; /* p->rk owns it */
        p->rkt = rd_kafka_topic_new(p->rk, g_fr.conf.topic, NULL);
        if (!p->rkt) {
                sk_seterr(errstr, errstr_size, "topic_new: %s",
                          rd_kafka_err2str(rd_kafka_last_error()));
                rd_kafka_destroy(p->rk);
                free(p);
                return NULL;
        }
        return p;
}

static void rollback_submit(fr_req_t *req);

/* Produce req->msg (identical bytes every time), key = voucherId, opaque = req.
 * @returns 0, or -1 when librdkafka refused it (nothing enqueued). */
static int produce(fr_req_t *req)
{
        fr_prod_t *p = atomic_load(&g_fr.prod);
        rd_kafka_resp_err_t err;

        err = rd_kafka_producev(p->rk, RD_KAFKA_V_RKT(p->rkt),
                                RD_KAFKA_V_KEY(req->sv, strlen(req->sv)),
                                RD_KAFKA_V_VALUE(req->msg, req->msg_len),
                                RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                RD_KAFKA_V_OPAQUE(req), RD_KAFKA_V_END);
        if (err) {
                SK_LOG(SK_WARN, "produce_refused", "trace_id=%s err=%s", req->st,
                       rd_kafka_err2name(err));
                if (err == RD_KAFKA_RESP_ERR__FATAL)
                        atomic_store(&g_fr.prod_fatal, 1);
                return -1;
        }
        return 0;
}

/* DESIGN.md 8, NOT_PERSISTED (or produce refused): fence with rollback.lua mode front,
 * unless an earlier copy was POSSIBLY_PERSISTED: then 503 PENDING, no rollback. */
static void not_persisted(fr_req_t *req)
{
        if (req->possibly_persisted) {
                fr_answer_503(req, "pending", "PENDING", "outcome not yet known");
                fr_req_done(req);
                return;
        }
        rollback_submit(req);
}

/* Deduct admitted (OK or REPLAY): publish. Runs on a Redis worker. */
static void publish(fr_req_t *req)
{
        req->produced_mono_ms = sk_mono_ms();
        sk_metric_observe(g_fr.m.deduct_lat,
                          (double)(req->produced_mono_ms - req->start_mono_ms) / 1000.0);
        if (SK_FAILPOINT("front.after_deduct")) {
                SK_LOG(SK_WARN, "failpoint", "name=front.after_deduct trace_id=%s", req->st);
                not_persisted(req);
                return;
        }
        if (produce(req) != 0)
                not_persisted(req);
}

/* 1 if the current producer has hit a fatal error (it refuses every produce until the
 * health thread replaces it). */
static int producer_fatal_now(void)
{
        fr_prod_t *p = atomic_load(&g_fr.prod);

        return atomic_load(&g_fr.prod_fatal) ||
               rd_kafka_fatal_error(p->rk, NULL, 0) != RD_KAFKA_RESP_ERR_NO_ERROR;
}

/* The one identical re-produce of a POSSIBLY_PERSISTED copy (DESIGN.md 8) while the
 * current producer is fatal: a fatal idempotence error fails every in-flight message at
 * once, and re-producing on the dying producer would only be refused (503 PENDING).
 * Park the request until kafka_check() has replaced the producer; it then re-produces
 * on the new one (and on every later check while the list is not empty and the current
 * producer is healthy: a replacement may have happened just before the parking).
 * @returns 1 parked (the caller is done with it), 0 shutdown (not
 * parked: the caller answers). */
static int defer_reproduce(fr_req_t *req)
{
        int ok = 0;

        pthread_mutex_lock(&g_fr.prod_mu);
        if (!g_fr.defer_closed) {
                req->qnext = NULL;
                if (g_fr.defer_tail)
                        g_fr.defer_tail->qnext = req;
                else
                        g_fr.defer_head = req;
                g_fr.defer_tail = req;
                ok = 1;
        }
        pthread_mutex_unlock(&g_fr.prod_mu);
        if (ok)
                SK_LOG(SK_WARN, "reproduce_deferred", "trace_id=%s reason=\"producer fatal\"", req->st);
        return ok;
}

/* Take the parked re-produces. @p close: no more parking after this (shutdown). */
static fr_req_t *deferred_take(int close)
{
        fr_req_t *list;

        pthread_mutex_lock(&g_fr.prod_mu);
        list = g_fr.defer_head;
        g_fr.defer_head = g_fr.defer_tail = NULL;
        if (close)
                g_fr.defer_closed = 1;
        pthread_mutex_unlock(&g_fr.prod_mu);
        return list;
}

/* Re-produce (or, when @p answer_only, just answer) the parked requests: a refused
 * re-produce, like one not PERSISTED, is 503 PENDING with no rollback (DESIGN.md 8). */
static void deferred_run(fr_req_t *list, int answer_only)
{
        while (list) {
                fr_req_t *req = list;

                list = req->qnext;
                req->qnext = NULL;
                if (!answer_only && produce(req) == 0)
                        continue;
                fr_answer_503(req, "pending", "PENDING", "outcome not yet known");
                fr_req_done(req);
        }
}

/* Delivery report (poll thread). The message's opaque is the request; the pipeline's
 * reference keeps it alive until fr_req_done(). */
static void dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *rkm, void *opaque)
{
        fr_req_t *req = rkm->_private;
        rd_kafka_msg_status_t st = rd_kafka_message_status(rkm);

        (void)rk;
        (void)opaque;
        if (!req)
                return;
        sk_metric_observe(g_fr.m.deliv_lat,
                          (double)(sk_mono_ms() - req->produced_mono_ms) / 1000.0);
        /* A report that says PERSISTED but carries an error is not proof either way: never
         * roll it back (NOT_PERSISTED is the only status that proves absence); handle it
         * as POSSIBLY_PERSISTED. (It fell through to the NOT_PERSISTED branch: a fence of
         * a message that may be on the broker.) */
        if (st == RD_KAFKA_MSG_STATUS_PERSISTED && rkm->err)
                st = RD_KAFKA_MSG_STATUS_POSSIBLY_PERSISTED;
        /* Failpoints (tests): report a PERSISTED delivery as POSSIBLY_PERSISTED or
         * NOT_PERSISTED, to drive the re-produce and "earlier copy" rules of DESIGN.md 8
         * without freezing the shared broker. */
        if (st == RD_KAFKA_MSG_STATUS_PERSISTED && SK_FAILPOINT("front.delivery_possibly"))
                st = RD_KAFKA_MSG_STATUS_POSSIBLY_PERSISTED;
        else if (st == RD_KAFKA_MSG_STATUS_PERSISTED && SK_FAILPOINT("front.delivery_not"))
                st = RD_KAFKA_MSG_STATUS_NOT_PERSISTED;
        if (st == RD_KAFKA_MSG_STATUS_PERSISTED && !rkm->err) {
                char buf[256];

                sk_metric_add(g_fr.m.deliv_persisted, 1);
                if (SK_FAILPOINT("front.before_respond")) {
                        fr_answer_503(req, "pending", "PENDING", "outcome not yet known");
                } else {
                        snprintf(buf, sizeof(buf),
                                 "{\"code\":0,\"orderId\":\"%s\",\"traceId\":\"%s\",\"state\":\"PENDING\"}",
                                 req->so, req->st);
                        fr_answer(req, 202, strdup(buf), 0);
                }
                fr_req_done(req);
                return;
        }
        SK_LOG(SK_WARN, "delivery_failed", "trace_id=%s order_id=%s status=%s err=%s",
               req->st, req->so,
               st == RD_KAFKA_MSG_STATUS_POSSIBLY_PERSISTED ? "possibly_persisted" : "not_persisted",
               rd_kafka_err2name(rkm->err));
        if (st == RD_KAFKA_MSG_STATUS_POSSIBLY_PERSISTED) {
                sk_metric_add(g_fr.m.deliv_possibly, 1);
                req->possibly_persisted = 1;
                /* One identical re-produce; if that is not PERSISTED the answer is 503
                 * PENDING and the reconciler settles it (never a rollback). */
                if (!req->reproduced && !atomic_load(&g_fr.purged)) {
                        req->reproduced = 1;
                        sk_metric_add(g_fr.m.reproduce, 1);
                        /* Failpoint front.reproduce_fatal (error): the current producer
                         * goes fatal just before the re-produce, as when a fatal
                         * idempotence error fails every in-flight message at once. */
                        if (SK_FAILPOINT("front.reproduce_fatal"))
                                rd_kafka_test_fatal_error(atomic_load(&g_fr.prod)->rk,
                                                          RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER,
                                                          "failpoint front.reproduce_fatal");
                        if (!producer_fatal_now() && produce(req) == 0)
                                return;
                        if (producer_fatal_now() && defer_reproduce(req))
                                return;
                }
                fr_answer_503(req, "pending", "PENDING", "outcome not yet known");
                fr_req_done(req);
                return;
        }
        sk_metric_add(g_fr.m.deliv_not, 1);
        not_persisted(req);
}

static void *poll_main(void *arg)
{
        (void)arg;
        while (atomic_load(&g_fr.threads_stop) < 2) {
                fr_prod_t *p = atomic_load(&g_fr.prod), *o;

                rd_kafka_poll(p->rk, 50 /* ms */);
                /* Retired producers: the list only grows at its head and its nodes live
                 * until exit, so a snapshot of the head is walked without prod_mu — the
                 * delivery callbacks served here may take prod_mu themselves (a parked
                 * re-produce, defer_reproduce): holding it here deadlocked the poll
                 * thread on a retired producer's POSSIBLY_PERSISTED report while the
                 * current producer was fatal. */
                pthread_mutex_lock(&g_fr.prod_mu);
                o = g_fr.retired;
                pthread_mutex_unlock(&g_fr.prod_mu);
                for (; o; o = o->retired_next)
                        rd_kafka_poll(o->rk, 0);
        }
        return NULL;
}

void fr_kafka_purge_queue(void)
{
        fr_prod_t *p = atomic_load(&g_fr.prod), *o;
        rd_kafka_resp_err_t err;

        /* Shutdown (issue 3 item 5): only the queue; in-flight requests keep their
         * delivery reports (or are answered 503 PENDING without a rollback). */
        if ((err = rd_kafka_purge(p->rk, RD_KAFKA_PURGE_F_QUEUE)))
                SK_LOG(SK_WARN, "kafka_purge", "err=%s", rd_kafka_err2name(err));
        pthread_mutex_lock(&g_fr.prod_mu);
        for (o = g_fr.retired; o; o = o->retired_next)
                rd_kafka_purge(o->rk, RD_KAFKA_PURGE_F_QUEUE);
        pthread_mutex_unlock(&g_fr.prod_mu);
}

int fr_kafka_outq_len(void)
{
        fr_prod_t *p = atomic_load(&g_fr.prod), *o;
        int n = rd_kafka_outq_len(p->rk);

        pthread_mutex_lock(&g_fr.prod_mu);
        for (o = g_fr.retired; o; o = o->retired_next)
                n += rd_kafka_outq_len(o->rk);
        pthread_mutex_unlock(&g_fr.prod_mu);
        return n;
}

static void prod_destroy(fr_prod_t *p)
{
        int i;

        if (!p)
                return;
        /* Purge what is left so destroy does not block on the broker (the process is
         * exiting; the reconciler owns any DEDUCT left undecided), then serve the purged
         * messages' delivery reports here (the poll thread is gone): an in-flight one
         * comes back POSSIBLY_PERSISTED (503 PENDING, no rollback, no re-produce since
         * purged is set), and each request's pipeline reference is released instead of
         * being lost with the destroyed message. At most about a second. */
        rd_kafka_purge(p->rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
        for (i = 0; i < 20 && rd_kafka_outq_len(p->rk) > 0; i++)
                rd_kafka_poll(p->rk, 50 /* ms */);
        rd_kafka_topic_destroy(p->rkt);
        rd_kafka_destroy(p->rk);
        free(p);
}

void fr_kafka_destroy_all(void)
{
        fr_prod_t *o, *next;

        prod_destroy(atomic_exchange(&g_fr.prod, NULL));
        for (o = g_fr.retired; o; o = next) {
                next = o->retired_next;
                prod_destroy(o);
        }
        g_fr.retired = NULL;
}

/* ---------------------------------------------------------------- rollback ---- */

static void rollback_submit(fr_req_t *req)
{
        if (fr_queue_push(&g_fr.q_rollback, req) == 0)
                return;
        /* Only after shutdown joined the rollback worker (a report served while the
         * producers are destroyed): no fence now; the DEDUCT stays undecided and the
         * reconciler re-drives it, as for a front killed after the deduct (DESIGN.md 8).
         * Every request was answered by then; this releases the pipeline's reference. */
        SK_LOG(SK_WARN, "rollback_skipped_shutdown", "trace_id=%s voucher_id=%s", req->st, req->sv);
        fr_answer_503(req, "pending", "PENDING", "outcome not yet known");
        fr_req_done(req);
}

/* rollback.lua mode front (DESIGN.md 7, 8): OK or ALREADY -> 503 FAILED; CLAIMED or
 * failure -> 503 PENDING. Its own Redis connection; the script is idempotent, so an
 * unknown outcome is simply repeated. */
static void *rollback_main(void *arg)
{
        sk_redis_t *r = NULL;
        char errstr[512];

        (void)arg;
        for (;;) {
                fr_req_t *req = fr_queue_pop(&g_fr.q_rollback, 1, 200);
                sk_rollback_res_t res;
                sk_err_t err = SK_EAGAIN;
                int attempt;

                if (!req) {
                        if (fr_queue_drained(&g_fr.q_rollback))
                                break;
                        continue;
                }
                /* Failpoint front.before_rollback: sleep(MS) delays the fence (a test
                 * writes a claim meanwhile -> CLAIMED); error = the rollback could not
                 * run (-> 503 PENDING, the DEDUCT stays for the reconciler). */
                if (SK_FAILPOINT("front.before_rollback")) {
                        snprintf(errstr, sizeof(errstr), "failpoint front.before_rollback");
                        attempt = 3;
                } else {
                        attempt = 0;
                }
                for (; attempt < 3; attempt++) {
                        if (!r)
                                r = sk_redis_connect(&g_fr.conf.redis, REDIS_CMD_TIMEOUT_MS,
                                                     errstr, sizeof(errstr));
                        if (!r) {
                                err = SK_EAGAIN;
                                sk_sleep_ms(100, NULL);
                                continue;
                        }
                        memset(&res, 0, sizeof(res));
                        err = sk_rollback_run(r, g_fr.conf.redis_prefix, req->voucher_id,
                                              req->trace_id, req->user_id, "front",
                                              SK_REASON_FRONT_ROLLBACK, -1,
                                              g_fr.expire_extra_ms, &res, errstr, sizeof(errstr));
                        if (err == SK_OK)
                                break;
                        SK_LOG(SK_WARN, "rollback_retry", "trace_id=%s attempt=%d err=%s reason=\"%s\"",
                               req->st, attempt, sk_err2str(err), errstr);
                        if (err != SK_EUNKNOWN && err != SK_EAGAIN)
                                break;
                        if (sk_redis_reconnect(r, errstr, sizeof(errstr)) != SK_OK)
                                sk_sleep_ms(100, NULL);
                }
                if (err != SK_OK) {
                        sk_metric_add(g_fr.m.rb_error, 1);
                        SK_LOG(SK_ERROR, "rollback_failed", "trace_id=%s voucher_id=%s err=%s",
                               req->st, req->sv, sk_err2str(err));
                        fr_answer_503(req, "pending", "PENDING", "outcome not yet known");
                } else if (res.claimed) {
                        sk_metric_add(g_fr.m.rb_claimed, 1);
                        SK_LOG(SK_INFO, "rollback_claimed", "trace_id=%s", req->st);
                        fr_answer_503(req, "pending", "PENDING", "outcome not yet known");
                } else {
                        sk_metric_add(res.already ? g_fr.m.rb_already : g_fr.m.rb_ok, 1);
                        SK_LOG(SK_INFO, "rollback_done", "trace_id=%s already=%d restored=%d released=%d",
                               req->st, res.already, res.restored, res.released);
                        fr_answer_503(req, "failed", "FAILED", "purchase failed, nothing taken");
                }
                fr_req_done(req);
        }
        sk_redis_close(r);
        return NULL;
}

/* ------------------------------------------------------------------ deduct ---- */

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

static int reply_is(const redisReply *el, const char *s)
{
        return el && (el->type == REDIS_REPLY_STRING || el->type == REDIS_REPLY_STATUS) &&
               el->len == strlen(s) && !memcmp(el->str, s, el->len);
}

static void answer_reject(fr_req_t *req, long long code)
{
        int status;
        const char *msg;

        switch (code) {
        case 10004:
                /* meta missing: the DB decides 404 (unknown) or 503 (Redis lost data);
                 * that lookup runs on the lookup pool, never on a purchase thread. */
                req->lookup = FR_LOOKUP_VOUCHER;
                atomic_store(&req->nothing_taken, 1);
                fr_lookup_submit(req);
                return;
        case 10013:
                fr_answer_503(req, "paused", NULL, "voucher paused");
                fr_req_done(req);
                return;
        case 10002: status = 403; msg = "not started"; break;
        case 10003: status = 403; msg = "ended"; break;
        case 10011: status = 403; msg = "offline"; break;
        case 10012: status = 403; msg = "expired"; break;
        case 10005: status = 409; msg = "sold out"; break;
        case 10006: status = 409; msg = "already purchased"; break;
        default:
                SK_LOG(SK_ERROR, "deduct_unknown_reject", "trace_id=%s code=%lld", req->st, code);
                status = 500;
                msg = "unexpected reject";
                break;
        }
        fr_answer(req, status, fr_json_err((int)code, msg), 0);
        fr_req_done(req);
}

/* A deduct.lua array reply (the script ran). */
static void deduct_known(fr_req_t *req, redisReply *reply)
{
        redisReply *el0, *el1;

        if (reply->type != REDIS_REPLY_ARRAY || reply->elements < 1)
                goto bad;
        el0 = reply->element[0];
        el1 = reply->elements > 1 ? reply->element[1] : NULL;
        if (reply_is(el0, "OK") || reply_is(el0, "REPLAY")) {
                if (!el1 || el1->type != REDIS_REPLY_STRING || el1->len == 0)
                        goto bad;
                if (!req->msg) {
                        if (!(req->msg = malloc(el1->len + 1)))
                                goto bad;
                        memcpy(req->msg, el1->str, el1->len);
                        req->msg[el1->len] = '\0';
                        req->msg_len = el1->len;
                }
                publish(req);
                return;
        }
        if (reply_is(el0, "FENCED")) {
                fr_answer_503(req, "failed", "FAILED", "purchase failed, nothing taken");
                fr_req_done(req);
                return;
        }
        if (reply_is(el0, "REJECT") && el1) {
                long long code = 0;

                if (el1->type == REDIS_REPLY_INTEGER)
                        code = el1->integer;
                else if (el1->type == REDIS_REPLY_STRING || el1->type == REDIS_REPLY_STATUS)
                        code = strtoll(el1->str, NULL, 10); /* a status code, not an id */
                answer_reject(req, code);
                return;
        }
bad:
        SK_LOG(SK_ERROR, "deduct_bad_reply", "trace_id=%s type=%d", req->st, reply->type);
        /* The script ran but said something unexpected: fence it to be safe. */
        rollback_submit(req);
}

/* Error reply: BUSY, LOADING, READONLY, OOM... the script did not run. */
static int error_is_not_run(const redisReply *reply)
{
        static const char *const pfx[] = { "BUSY", "LOADING", "READONLY", "OOM", "MASTERDOWN",
                                           "NOREPLICAS", "NOSCRIPT", "TRYAGAIN", "CLUSTERDOWN",
                                           NULL };
        int i;

        for (i = 0; pfx[i]; i++)
                if (reply->len >= strlen(pfx[i]) && !strncmp(reply->str, pfx[i], strlen(pfx[i])))
                        return 1;
        return 0;
}

/* One purchase through sk_redis_evalsha with the unknown-outcome rules of DESIGN.md 8:
 * SK_EUNKNOWN -> reconnect and repeat the same EVALSHA (same traceId) up to twice; still
 * unknown -> rollback.lua mode front. A REPLAY continues the purchase. */
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
                        deduct_known(req, reply);
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
                if (err != SK_EUNKNOWN && req->deduct_attempts == 0) {
                        /* The command did not run: nothing to undo. */
                        SK_LOG(SK_WARN, "deduct_unavailable", "trace_id=%s err=%s reason=\"%s\"",
                               req->st, sk_err2str(err), errstr);
                        fr_answer_503(req, "redis", NULL, "redis unavailable");
                        fr_req_done(req);
                        return;
                }
                /* Unknown now, or after an earlier unknown attempt (whatever this
                 * attempt says, the earlier one may have run). */
                req->deduct_attempts++;
                sk_metric_add(g_fr.m.deduct_retry, 1);
                SK_LOG(SK_WARN, "deduct_unknown", "trace_id=%s attempt=%d err=%s reason=\"%s\"",
                       req->st, req->deduct_attempts, sk_err2str(err), errstr);
                if (req->deduct_attempts > DEDUCT_MAX_REPEATS) {
                        rollback_submit(req);
                        return;
                }
                if (sk_redis_reconnect(r, errstr, sizeof(errstr)) != SK_OK)
                        sk_sleep_ms(50, NULL);
        }
}

/* Pipelined deduct of a batch on one connection: all EVALSHAs are appended, then the
 * replies are read in order. An I/O error or timeout leaves every unread reply's outcome
 * unknown: those purchases continue in deduct_sync() with one unknown attempt. */
static void deduct_batch(sk_redis_t *r, fr_req_t **batch, int n)
{
        redisContext *c = sk_redis_ctx(r);
        const char *sha = sk_script_sha(SK_SCRIPT_DEDUCT);
        char errstr[512];
        int i, j, nredo = 0;

        if (!c || c->err) {
                if (sk_redis_reconnect(r, errstr, sizeof(errstr)) != SK_OK) {
                        for (i = 0; i < n; i++) {
                                fr_answer_503(batch[i], "redis", NULL, "redis unavailable");
                                fr_req_done(batch[i]);
                        }
                        return;
                }
                c = sk_redis_ctx(r);
        }
        if (!sha) {
                /* No SCRIPT LOAD has succeeded in this process yet (Redis was down at
                 * start, or the health thread has not run): load now. Nothing was sent,
                 * so on failure none of these purchases ran: 503, nothing to undo. */
                if (sk_redis_load_scripts(r, errstr, sizeof(errstr)) != SK_OK ||
                    !(sha = sk_script_sha(SK_SCRIPT_DEDUCT))) {
                        for (i = 0; i < n; i++) {
                                fr_answer_503(batch[i], "redis", NULL, "redis unavailable");
                                fr_req_done(batch[i]);
                        }
                        return;
                }
                c = sk_redis_ctx(r);
        }
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
                if (redisAppendCommandArgv(c, 13, argv, NULL) != REDIS_OK) {
                        /* Out of memory in hiredis: nothing of this one was buffered,
                         * and nothing has been sent yet: none of them ran. */
                        for (j = 0; j < n; j++) {
                                fr_answer_503(batch[j], "redis", NULL, "redis unavailable");
                                fr_req_done(batch[j]);
                        }
                        sk_redis_reconnect(r, errstr, sizeof(errstr));
                        return;
                }
        }
        for (i = 0; i < n; i++) {
                redisReply *reply = NULL;

                if (redisGetReply(c, (void **)&reply) != REDIS_OK || !reply) {
                        SK_LOG(SK_WARN, "deduct_io_error", "batch=%d unread=%d reason=\"%s\"",
                               n, n - i, c->errstr);
                        if (reply)
                                freeReplyObject(reply);
                        sk_redis_reconnect(r, errstr, sizeof(errstr));
                        for (j = i; j < n; j++) {
                                batch[j]->deduct_attempts = 1;
                                deduct_sync(r, batch[j]);
                        }
                        goto redo;
                }
                if (reply->type == REDIS_REPLY_ERROR) {
                        if (!strncmp(reply->str, "NOSCRIPT", 8)) {
                                /* SCRIPT FLUSH happened: sk_redis_evalsha loads and
                                 * retries, after this batch's replies are all read. */
                                freeReplyObject(reply);
                                batch[nredo++] = batch[i];
                                continue;
                        }
                        if (error_is_not_run(reply)) {
                                SK_LOG(SK_WARN, "deduct_unavailable", "trace_id=%s reply=\"%.*s\"",
                                       batch[i]->st, (int)reply->len, reply->str);
                                fr_answer_503(batch[i], "redis", NULL, "redis unavailable");
                        } else {
                                SK_LOG(SK_ERROR, "deduct_error", "trace_id=%s reply=\"%.*s\"",
                                       batch[i]->st, (int)reply->len, reply->str);
                                fr_answer(batch[i], 500, fr_json_err(10001, "deduct failed"), 0);
                        }
                        freeReplyObject(reply);
                        fr_req_done(batch[i]);
                        continue;
                }
                deduct_known(batch[i], reply);
                freeReplyObject(reply);
        }
redo:
        /* batch[0..nredo) were answered NOSCRIPT (slots before i are free to reuse). */
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
                fr_req_t *req = fr_queue_pop(&g_fr.q_deduct, g_fr.pipeline_max, 200);
                int n = 0;

                if (!req) {
                        if (atomic_load(&g_fr.threads_stop))
                                break;
                        continue;
                }
                while (req) {
                        batch[n++] = req;
                        req = req->qnext;
                }
                if (!r)
                        r = sk_redis_connect(&g_fr.conf.redis, REDIS_CMD_TIMEOUT_MS, errstr,
                                             sizeof(errstr));
                if (!r) {
                        int i;

                        SK_LOG(SK_WARN, "redis_connect_failed", "reason=\"%s\"", errstr);
                        for (i = 0; i < n; i++) {
                                fr_answer_503(batch[i], "redis", NULL, "redis unavailable");
                                fr_req_done(batch[i]);
                        }
                        continue;
                }
                deduct_batch(r, batch, n);
        }
        sk_redis_close(r);
        free(batch);
        return NULL;
}

void fr_purchase_submit(fr_req_t *req)
{
        if (fr_queue_push(&g_fr.q_deduct, req) == 0)
                return;
        /* Closed (shutdown; the HTTP daemon is stopped first, so not expected): the
         * deduct never ran, nothing to undo. */
        fr_answer_503(req, "shutdown", NULL, "shutting down");
        fr_req_done(req);
}

/* ------------------------------------------------------------------ health ---- */

static void kafka_check(void)
{
        fr_prod_t *p = atomic_load(&g_fr.prod);
        const struct rd_kafka_metadata *md = NULL;
        rd_kafka_resp_err_t err;
        char errstr[512];
        int ok = 0;

        /* Failpoint front.kafka_fatal (error): raise a fatal producer error, as a broker
         * fencing the idempotent producer would, to exercise the replacement. */
        if (SK_FAILPOINT("front.kafka_fatal"))
                rd_kafka_test_fatal_error(p->rk, RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER,
                                          "failpoint front.kafka_fatal");
        if (atomic_load(&g_fr.prod_fatal) || rd_kafka_fatal_error(p->rk, errstr, sizeof(errstr))) {
                fr_prod_t *np = prod_new(errstr, sizeof(errstr));

                if (!np) {
                        SK_LOG(SK_ERROR, "producer_replace_failed", "reason=\"%s\"", errstr);
                        atomic_store(&g_fr.kafka_ok, 0);
                        return;
                }
                pthread_mutex_lock(&g_fr.prod_mu);
                p->retired_next = g_fr.retired;
                g_fr.retired = p;
                atomic_store(&g_fr.prod, np);
                pthread_mutex_unlock(&g_fr.prod_mu);
                atomic_store(&g_fr.prod_fatal, 0);
                sk_metric_add(g_fr.m.producer_replaced, 1);
                SK_LOG(SK_WARN, "producer_replaced", "topic=%s", g_fr.conf.topic);
                p = np;
        }
        /* The re-produces parked while the producer was fatal, once a healthy one is
         * current (after a shutdown's purge: answered, not produced). */
        if (!producer_fatal_now())
                deferred_run(deferred_take(0), atomic_load(&g_fr.purged));
        if (!atomic_load(&g_fr.topics_ok)) {
                if (sk_kafka_ensure_topics(&g_fr.conf, 3000, errstr, sizeof(errstr)) == SK_OK) {
                        atomic_store(&g_fr.topics_ok, 1);
                        SK_LOG(SK_INFO, "topics_ready", "topic=%s", g_fr.conf.topic);
                } else {
                        SK_LOG(SK_WARN, "topics_not_ready", "topic=%s reason=\"%s\"",
                               g_fr.conf.topic, errstr);
                }
        }
        err = rd_kafka_metadata(p->rk, 0, p->rkt, &md, 1500 /* ms */);
        if (!err && md && md->topic_cnt == 1 && !md->topics[0].err &&
            md->topics[0].partition_cnt > 0)
                ok = 1;
        if (md)
                rd_kafka_metadata_destroy(md);
        if (ok != atomic_load(&g_fr.kafka_ok))
                SK_LOG(ok ? SK_INFO : SK_WARN, "kafka_health", "ok=%d err=%s", ok,
                       rd_kafka_err2name(err));
        atomic_store(&g_fr.kafka_ok, ok && !atomic_load(&g_fr.prod_fatal));
}

static void redis_check(sk_redis_t **rp)
{
        char errstr[512];
        int ne, sl;

        if (!*rp)
                *rp = sk_redis_connect(&g_fr.conf.redis, REDIS_CMD_TIMEOUT_MS, errstr, sizeof(errstr));
        if (!*rp) {
                atomic_store(&g_fr.redis_ok, 0);
                return;
        }
        ne = sk_redis_noeviction(*rp);
        sl = sk_redis_scripts_loaded(*rp);
        if (sl == 0 && sk_redis_load_scripts(*rp, errstr, sizeof(errstr)) == SK_OK)
                sl = 1;
        if (ne < 0 || sl < 0) {
                atomic_store(&g_fr.redis_ok, 0);
                sk_redis_reconnect(*rp, errstr, sizeof(errstr));
                return;
        }
        atomic_store(&g_fr.redis_ok, 1);
        atomic_store(&g_fr.noeviction_ok, ne == 1);
        atomic_store(&g_fr.scripts_ok, sl == 1);
}

static void *health_main(void *arg)
{
        sk_redis_t *r = NULL;

        (void)arg;
        while (!atomic_load(&g_fr.threads_stop)) {
                int64_t t0 = sk_mono_ms();

                /* Redis first: the Kafka check may block for seconds while brokers are down. */
                redis_check(&r);
                kafka_check();
                while (!atomic_load(&g_fr.threads_stop) && sk_mono_ms() - t0 < 1000 &&
                       !atomic_load(&g_fr.prod_fatal))
                        sk_sleep_ms(50, NULL);
        }
        sk_redis_close(r);
        return NULL;
}

/* ------------------------------------------------------------- start/stop ---- */

int fr_pipeline_start(char *errstr, size_t errstr_size)
{
        fr_prod_t *p;
        int i;

        pthread_mutex_init(&g_fr.pend_mu, NULL);
        pthread_mutex_init(&g_fr.prod_mu, NULL);
        fr_queue_init(&g_fr.q_deduct);
        fr_queue_init(&g_fr.q_rollback);
        if (!(p = prod_new(errstr, errstr_size)))
                return -1;
        atomic_store(&g_fr.prod, p);
        if (sk_kafka_ensure_topics(&g_fr.conf, 5000, errstr, errstr_size) == SK_OK)
                atomic_store(&g_fr.topics_ok, 1);
        else
                SK_LOG(SK_WARN, "topics_not_ready", "topic=%s reason=\"%s\"", g_fr.conf.topic, errstr);
        /* First health check before serving, so /readyz and admission start truthful. */
        kafka_check();
        g_fr.t_redis = calloc((size_t)g_fr.redis_workers, sizeof(pthread_t));
        if (!g_fr.t_redis)
                return -1;
        for (i = 0; i < g_fr.redis_workers; i++)
                pthread_create(&g_fr.t_redis[i], NULL, redis_main, NULL);
        pthread_create(&g_fr.t_poll, NULL, poll_main, NULL);
        pthread_create(&g_fr.t_rollback, NULL, rollback_main, NULL);
        pthread_create(&g_fr.t_timer, NULL, timer_main, NULL);
        pthread_create(&g_fr.t_health, NULL, health_main, NULL);
        return 0;
}

/* Stop order: the deduct workers, timer and health first (threads_stop = 1); then the
 * poll thread (threads_stop = 2), after the deduct queue is empty, so every admitted
 * purchase still gets its delivery report served; the rollback worker last: its queue
 * is closed only once nothing can push to it any more (deduct workers and the poll
 * thread joined), and it drains the queue before exiting, so a NOT_PERSISTED report
 * served by the poll thread's last poll still gets its rollback (the fence). The
 * lookup pool (fr_lookup_stop, after this) likewise drains the 10004 checks the deduct
 * workers queued. */
void fr_pipeline_stop(void)
{
        int i;

        atomic_store(&g_fr.threads_stop, 1);
        fr_queue_close(&g_fr.q_deduct);
        for (i = 0; i < g_fr.redis_workers; i++)
                pthread_join(g_fr.t_redis[i], NULL);
        pthread_join(g_fr.t_timer, NULL);
        pthread_join(g_fr.t_health, NULL);
        /* No replacement any more: re-produces still parked are answered 503 PENDING
         * (no rollback) and released; the poll thread parks nothing new. */
        deferred_run(deferred_take(1), 1);
        atomic_store(&g_fr.threads_stop, 2);
        pthread_join(g_fr.t_poll, NULL);
        fr_queue_close(&g_fr.q_rollback);
        pthread_join(g_fr.t_rollback, NULL);
        free(g_fr.t_redis);
        g_fr.t_redis = NULL;
}
