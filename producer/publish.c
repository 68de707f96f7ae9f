/* producer/publish.c: the Kafka half of a purchase (producer/publish.h): produce after
 * an admitted deduct, and the delivery report rules of DESIGN.md 8. Owns the list of
 * re-produces parked while the producer is fatal, and the "purged" flag of the shutdown.
 * The producers themselves are kprod.c's; fences go to rollback.c.
 * Lock order: defer_mu is a leaf (nothing is called while holding it). */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kprod.h"
#include "metrics.h"
#include "publish.h"
#include "queue.h"
#include "rollback.h"
#include "sk/clock.h"
#include "sk/failpoint.h"
#include "sk/log.h"

static pthread_mutex_t defer_mu = PTHREAD_MUTEX_INITIALIZER;
static fr_req_list_t deferred;            /* guarded by defer_mu, linked by qnext */
static int defer_closed;                  /* guarded by defer_mu: shutdown */
static atomic_int purged;                 /* the shutdown purged the queues */

/* DESIGN.md 8, NOT_PERSISTED (or produce refused): fence with rollback.lua mode front,
 * unless an earlier copy was POSSIBLY_PERSISTED: then 503 PENDING, no rollback. */
static void not_persisted(fr_req_t *req)
{
        if (req->possibly_persisted) {
                fr_answer_503(req, "pending", "PENDING", "outcome not yet known");
                fr_req_done(req);
                return;
        }
        fr_rollback_submit(req);
}

void fr_publish(fr_req_t *req)
{
        req->produced_mono_ms = sk_mono_ms();
        sk_metric_observe(fr_m.deduct_lat,
                          (double)(req->produced_mono_ms - req->start_mono_ms) / 1000.0);
        if (SK_FAILPOINT("front.after_deduct")) {
                SK_LOG(SK_WARN, "failpoint", "name=front.after_deduct trace_id=%s", req->st);
                not_persisted(req);
                return;
        }
        if (fr_kprod_produce(req) != 0)
                not_persisted(req);
}

/* The one identical re-produce of a POSSIBLY_PERSISTED copy (DESIGN.md 8) while the
 * current producer is fatal: a fatal idempotence error fails every in-flight message at
 * once, and re-producing on the dying producer would only be refused (503 PENDING).
 * Park the request until the health thread has replaced the producer; it then
 * re-produces on the new one (and on every later check while the list is not empty and
 * the current producer is healthy: a replacement may have happened just before the
 * parking). @returns 1 parked (the caller is done with it), 0 shutdown (not parked:
 * the caller answers). */
static int defer_reproduce(fr_req_t *req)
{
        int ok = 0;

        pthread_mutex_lock(&defer_mu);
        if (!defer_closed) {
                fr_req_list_append(&deferred, req);
                ok = 1;
        }
        pthread_mutex_unlock(&defer_mu);
        if (ok)
                SK_LOG(SK_WARN, "reproduce_deferred", "trace_id=%s reason=\"producer fatal\"", req->st);
        return ok;
}

/* Take the parked re-produces. @p close: no more parking after this (shutdown). */
static fr_req_t *deferred_take(int close)
{
        fr_req_t *list;

        pthread_mutex_lock(&defer_mu);
        list = deferred.head;
        deferred.head = deferred.tail = NULL;
        if (close)
                defer_closed = 1;
        pthread_mutex_unlock(&defer_mu);
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
                if (!answer_only && fr_kprod_produce(req) == 0)
                        continue;
                fr_answer_503(req, "pending", "PENDING", "outcome not yet known");
                fr_req_done(req);
        }
}

void fr_publish_run_deferred(void)
{
        deferred_run(deferred_take(0), atomic_load(&purged));
}

void fr_publish_close_deferred(void)
{
        deferred_run(deferred_take(1), 1);
}

int fr_publish_purge(void)
{
        int left;

        atomic_store(&purged, 1);
        left = fr_kprod_outq_len();
        fr_kprod_purge_queue();
        return left;
}

/* PERSISTED: 202 (or, with the failpoint front.before_respond, 503 PENDING). The
 * partition and offset the broker gave the message are logged (debug) with the traceId,
 * so a 202 whose message a reader later misses says where Kafka put it; a PERSISTED
 * report without an offset (librdkafka's answer to a batch the broker called a
 * duplicate: nothing names this message's place in the log) is logged at warn. */
static void persisted(fr_req_t *req, const rd_kafka_message_t *rkm)
{
        char buf[256];

        sk_metric_add(fr_m.deliv_persisted, 1);
        if (rkm->offset < 0)
                SK_LOG(SK_WARN, "delivered_without_offset", "trace_id=%s partition=%d offset=%" PRId64,
                       req->st, (int)rkm->partition, (int64_t)rkm->offset);
        else
                SK_LOG(SK_DEBUG, "delivered", "trace_id=%s partition=%d offset=%" PRId64,
                       req->st, (int)rkm->partition, (int64_t)rkm->offset);
        if (SK_FAILPOINT("front.before_respond")) {
                fr_answer_503(req, "pending", "PENDING", "outcome not yet known");
        } else {
                snprintf(buf, sizeof(buf),
                         "{\"code\":0,\"orderId\":\"%s\",\"traceId\":\"%s\",\"state\":\"PENDING\"}",
                         req->so, req->st);
                fr_answer(req, 202, strdup(buf), 0);
        }
        fr_req_done(req);
}

/* POSSIBLY_PERSISTED: one identical re-produce; if that is not PERSISTED the answer is
 * 503 PENDING and the reconciler settles it (never a rollback). */
static void possibly_persisted(fr_req_t *req)
{
        sk_metric_add(fr_m.deliv_possibly, 1);
        req->possibly_persisted = 1;
        if (!req->reproduced && !atomic_load(&purged)) {
                req->reproduced = 1;
                sk_metric_add(fr_m.reproduce, 1);
                /* Failpoint front.reproduce_fatal (error): the current producer goes
                 * fatal just before the re-produce, as when a fatal idempotence error
                 * fails every in-flight message at once. */
                if (SK_FAILPOINT("front.reproduce_fatal"))
                        fr_kprod_raise_fatal("failpoint front.reproduce_fatal");
                if (!fr_kprod_fatal_now() && fr_kprod_produce(req) == 0)
                        return;
                if (fr_kprod_fatal_now() && defer_reproduce(req))
                        return;
        }
        fr_answer_503(req, "pending", "PENDING", "outcome not yet known");
        fr_req_done(req);
}

void fr_delivery_report(rd_kafka_t *rk, const rd_kafka_message_t *rkm, void *opaque)
{
        fr_req_t *req = rkm->_private;
        rd_kafka_msg_status_t st = rd_kafka_message_status(rkm);

        (void)rk;
        (void)opaque;
        if (!req)
                return;
        sk_metric_observe(fr_m.deliv_lat, (double)(sk_mono_ms() - req->produced_mono_ms) / 1000.0);
        /* A report that says PERSISTED but carries an error is not proof either way: never
         * roll it back (NOT_PERSISTED is the only status that proves absence); handle it
         * as POSSIBLY_PERSISTED. */
        if (st == RD_KAFKA_MSG_STATUS_PERSISTED && rkm->err)
                st = RD_KAFKA_MSG_STATUS_POSSIBLY_PERSISTED;
        /* Failpoints (tests): report a PERSISTED delivery as POSSIBLY_PERSISTED or
         * NOT_PERSISTED, to drive the re-produce and "earlier copy" rules of DESIGN.md 8
         * without freezing the shared broker. */
        if (st == RD_KAFKA_MSG_STATUS_PERSISTED && SK_FAILPOINT("front.delivery_possibly"))
                st = RD_KAFKA_MSG_STATUS_POSSIBLY_PERSISTED;
        else if (st == RD_KAFKA_MSG_STATUS_PERSISTED && SK_FAILPOINT("front.delivery_not"))
                st = RD_KAFKA_MSG_STATUS_NOT_PERSISTED;
        if (st == RD_KAFKA_MSG_STATUS_PERSISTED) {
                persisted(req, rkm);
                return;
        }
        SK_LOG(SK_WARN, "delivery_failed", "trace_id=%s order_id=%s status=%s err=%s",
               req->st, req->so,
               st == RD_KAFKA_MSG_STATUS_POSSIBLY_PERSISTED ? "possibly_persisted" : "not_persisted",
               rd_kafka_err2name(rkm->err));
        if (st == RD_KAFKA_MSG_STATUS_POSSIBLY_PERSISTED) {
                possibly_persisted(req);
                return;
        }
        sk_metric_add(fr_m.deliv_not, 1);
        not_persisted(req);
}
