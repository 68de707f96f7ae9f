/* dlq.c: the DLQ of one worker (DESIGN.md 5, 8: poison, collisions, non-transient DB
 * errors). A message copied to `<topic>.dlq` counts as settled only once its copy is
 * PERSISTED, so its offset is stored only then. The producer is created on first use
 * and owned by the worker (cons_dlq_t); one copy is in flight at a time, matched to
 * its delivery report by a sequence number. Not thread-safe (one per worker). */
#include <inttypes.h>
#include <stdio.h>
#include "sk/clock.h"
#include "sk/ids.h"
#include "sk/kafka.h"
#include "sk/log.h"
#include "worker.h"

static void on_dlq_delivery(rd_kafka_t *rk, const rd_kafka_message_t *rkm, void *opaque)
{
        worker_t *w = opaque;

        (void)rk;
        if ((intptr_t)rkm->_private != w->dlq.seq)
                return; /* a late report of an attempt we gave up on */
        w->dlq.status = rkm->err ? -1 : (int)rd_kafka_message_status(rkm);
}

static int ensure_dlq(worker_t *w)
{
        char errstr[512];
        rd_kafka_conf_t *kconf;

        if (w->dlq.rk)
                return 0;
        if (!(kconf = sk_kafka_conf_new(w->conf, SK_KAFKA_PRODUCER, errstr, sizeof(errstr)))) {
                SK_LOG(SK_ERROR, "dlq_producer_failed", "worker=%d err=\"%s\"", w->idx, errstr);
                return -1;
        }
        rd_kafka_conf_set_dr_msg_cb(kconf, on_dlq_delivery);
        rd_kafka_conf_set_opaque(kconf, w);
        rd_kafka_conf_set_log_cb(kconf, sk_kafka_log_cb);
        if (!(w->dlq.rk = rd_kafka_new(RD_KAFKA_PRODUCER, kconf, errstr, sizeof(errstr)))) {
                rd_kafka_conf_destroy(kconf);
                SK_LOG(SK_ERROR, "dlq_producer_failed", "worker=%d err=\"%s\"", w->idx, errstr);
                return -1;
        }
        w->flow.serve = w->dlq.rk; /* its reports are served while the flow waits */
        return 0;
}

/* Queue the copy of @p c with its headers. @returns 0, or -1 (logged). */
static int produce_copy(worker_t *w, cmsg_t *c, const char *kind, const char *reason,
                        const char *tid)
{
        rd_kafka_message_t *rkm = c->rkm;
        rd_kafka_headers_t *hdrs;
        rd_kafka_resp_err_t e;
        char src[64];

        snprintf(src, sizeof(src), "%d/%" PRId64, (int)rkm->partition, (int64_t)rkm->offset);
        hdrs = rd_kafka_headers_new(5);
        rd_kafka_header_add(hdrs, "x-seckill-kind", -1, kind, -1);
        rd_kafka_header_add(hdrs, "x-seckill-error", -1, reason, -1);
        rd_kafka_header_add(hdrs, "x-seckill-source-topic", -1, rd_kafka_topic_name(rkm->rkt), -1);
        rd_kafka_header_add(hdrs, "x-seckill-source", -1, src, -1);
        if (c->parsed)
                rd_kafka_header_add(hdrs, "traceId", -1, tid, -1);
        w->dlq.seq++;
        w->dlq.status = -2;
        e = rd_kafka_producev(w->dlq.rk, RD_KAFKA_V_TOPIC(w->conf->dlq_topic),
                              RD_KAFKA_V_KEY(rkm->key, rkm->key_len),
                              RD_KAFKA_V_VALUE(rkm->payload, rkm->len),
                              RD_KAFKA_V_HEADERS(hdrs), RD_KAFKA_V_OPAQUE((void *)w->dlq.seq),
                              RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
        if (!e)
                return 0;
        rd_kafka_headers_destroy(hdrs); /* still ours on failure */
        SK_LOG(SK_WARN, "dlq_produce_failed", "worker=%d partition=%d offset=%" PRId64 " err=%s",
               w->idx, (int)rkm->partition, (int64_t)rkm->offset, rd_kafka_err2name(e));
        return -1;
}

/* Wait for the delivery report of the copy in flight, keeping the group membership
 * alive on long deliveries. @returns the final status (-2: none before the deadline). */
static int wait_delivery(worker_t *w)
{
        int64_t deadline = sk_mono_ms() + w->conf->kafka_delivery_timeout_ms + 5000;

        while (w->dlq.status == -2 && sk_mono_ms() < deadline && g_stop < 2) {
                rd_kafka_poll(w->dlq.rk, 50 /* ms */);
                if (sk_mono_ms() + 50 < deadline && w->dlq.status == -2)
                        cons_flow_poll_once(w, 0);
        }
        return w->dlq.status;
}

sk_err_t cons_dlq_send(worker_t *w, cmsg_t *c, const char *kind, const char *reason)
{
        rd_kafka_message_t *rkm = c->rkm;
        char tid[SK_ID_STRLEN] = "-";

        if (c->parsed)
                sk_id_format(c->msg.trace_id, tid);
        for (int attempt = 0;; attempt++) {
                if (ensure_dlq(w) == 0 && produce_copy(w, c, kind, reason, tid) == 0) {
                        int st = wait_delivery(w);
                        if (st == RD_KAFKA_MSG_STATUS_PERSISTED) {
                                SK_LOG(SK_WARN, "dlq", "worker=%d partition=%d offset=%" PRId64
                                       " kind=%s trace=%s reason=\"%s\"", w->idx, (int)rkm->partition,
                                       (int64_t)rkm->offset, kind, tid, reason);
                                sk_metric_add(w->m->dlq, 1);
                                c->settled = 1;
                                return SK_OK;
                        }
                        SK_LOG(SK_WARN, "dlq_not_persisted", "worker=%d partition=%d offset=%" PRId64
                               " status=%d", w->idx, (int)rkm->partition, (int64_t)rkm->offset, st);
                }
                if (cons_stopping())
                        return SK_ESTOP;
                cons_flow_backoff(w, attempt);
                if (cons_stopping())
                        return SK_ESTOP;
        }
}

void cons_dlq_close(worker_t *w)
{
        if (!w->dlq.rk)
                return;
        rd_kafka_flush(w->dlq.rk, 5000 /* ms */);
        rd_kafka_destroy(w->dlq.rk);
        w->dlq.rk = NULL;
        w->flow.serve = NULL;
}
