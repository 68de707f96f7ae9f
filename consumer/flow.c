/* flow.c: flow control of one worker while it retries (DESIGN.md 8, transient rows).
 *
 * On a transient failure (DB 1205/1213/2006/2013/..., Redis errors before the
 * transaction, DLQ delivery not PERSISTED) the worker pauses every partition assigned
 * to its handle, keeps calling rd_kafka_consumer_poll (group membership, rebalances)
 * while it backs off (sk_backoff_ms: capped exponential, full jitter), then resumes
 * after the batch. Messages that still arrive while paused (a partition newly
 * assigned during the pause) go to the carry list, with their partition paused too,
 * and open the next batch. Owns cons_flow_t. Not thread-safe (one per worker). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "sk/backoff.h"
#include "sk/clock.h"
#include "sk/log.h"
#include "worker.h"

static void carry_add(worker_t *w, rd_kafka_message_t *rkm)
{
        cons_flow_t *f = &w->flow;

        if (f->ncarry == f->carry_cap) {
                int cap = f->carry_cap ? f->carry_cap * 2 : 256;
                rd_kafka_message_t **c = realloc(f->carry, sizeof(*c) * (size_t)cap);
                if (!c) {
                        /* Dropping it unsettled could let a later offset of its partition
                         * be stored past it: abort loudly instead. */
                        SK_LOG(SK_ERROR, "oom", "what=carry");
                        abort();
                }
                f->carry = c;
                f->carry_cap = cap;
        }
        f->carry[f->ncarry++] = rkm;
}

int cons_flow_is_message(worker_t *w, rd_kafka_message_t *rkm)
{
        if (!rkm->err)
                return 1;
        SK_LOG(rkm->err == RD_KAFKA_RESP_ERR__PARTITION_EOF ? SK_DEBUG : SK_WARN,
               "consumer_event", "worker=%d err=%s reason=\"%s\"", w->idx,
               rd_kafka_err2name(rkm->err), rd_kafka_message_errstr(rkm));
        rd_kafka_message_destroy(rkm);
        return 0;
}

/* A message arrived while paused (a partition assigned during the pause): pause its
 * partition too, so the carry list holds at most what was already prefetched. */
static void pause_one(worker_t *w, const rd_kafka_message_t *rkm)
{
        const char *topic = rd_kafka_topic_name(rkm->rkt);
        rd_kafka_topic_partition_list_t *one;
        cons_flow_t *f = &w->flow;

        if (!f->paused) {
                f->paused = rd_kafka_topic_partition_list_new(4);
                sk_metric_add(w->m->paused, 1);
        }
        if (rd_kafka_topic_partition_list_find(f->paused, topic, rkm->partition))
                return;
        one = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(one, topic, rkm->partition);
        rd_kafka_pause_partitions(w->rk, one);
        rd_kafka_topic_partition_list_destroy(one);
        rd_kafka_topic_partition_list_add(f->paused, topic, rkm->partition);
}

void cons_flow_poll_once(worker_t *w, int ms)
{
        rd_kafka_message_t *rkm = rd_kafka_consumer_poll(w->rk, ms);

        if (rkm && cons_flow_is_message(w, rkm)) {
                sk_metric_add(w->m->consumed, 1);
                pause_one(w, rkm);
                carry_add(w, rkm);
        }
}

/* Poll the consumer for @p ms (keeps the group membership alive while paused). */
static void wait_poll(worker_t *w, int64_t ms)
{
        int64_t deadline = sk_mono_ms() + ms;

        for (;;) {
                int64_t left = deadline - sk_mono_ms();

                if (left <= 0 || g_stop >= 2)
                        break;
                cons_flow_poll_once(w, (int)(left < 100 ? left : 100));
                if (w->flow.serve)
                        rd_kafka_poll(w->flow.serve, 0); /* the DLQ producer's reports */
                if (g_stop)
                        break;
        }
}

static void pause_all(worker_t *w)
{
        rd_kafka_topic_partition_list_t *parts = NULL;

        if (w->flow.paused)
                return;
        if (rd_kafka_assignment(w->rk, &parts) || !parts)
                return;
        rd_kafka_pause_partitions(w->rk, parts);
        w->flow.paused = parts;
        sk_metric_add(w->m->paused, 1);
        SK_LOG(SK_INFO, "partitions_paused", "worker=%d count=%d", w->idx, parts->cnt);
}

void cons_flow_resume_all(worker_t *w)
{
        cons_flow_t *f = &w->flow;

        if (!f->paused)
                return;
        rd_kafka_resume_partitions(w->rk, f->paused);
        SK_LOG(SK_INFO, "partitions_resumed", "worker=%d count=%d", w->idx, f->paused->cnt);
        rd_kafka_topic_partition_list_destroy(f->paused);
        f->paused = NULL;
        sk_metric_add(w->m->paused, -1);
}

void cons_flow_backoff(worker_t *w, int attempt)
{
        int64_t ms = sk_backoff_ms(attempt, 50, w->opts->backoff_cap_ms, &w->rng);

        pause_all(w);
        wait_poll(w, ms);
        cons_gauges_update(w, cons_flow_carried(w)); /* the carry list grows while paused */
}

int cons_flow_take(worker_t *w, rd_kafka_message_t **rkm)
{
        cons_flow_t *f = &w->flow;

        if (!f->ncarry)
                return 0;
        *rkm = f->carry[0];
        memmove(f->carry, f->carry + 1, sizeof(*f->carry) * (size_t)--f->ncarry);
        return 1;
}

int64_t cons_flow_min_offset(const worker_t *w, int32_t partition)
{
        int64_t min = INT64_MAX;

        for (int i = 0; i < w->flow.ncarry; i++)
                if (w->flow.carry[i]->partition == partition && w->flow.carry[i]->offset < min)
                        min = w->flow.carry[i]->offset;
        return min;
}

int cons_flow_carried(const worker_t *w)
{
        return w->flow.ncarry;
}

void cons_flow_close(worker_t *w)
{
        cons_flow_t *f = &w->flow;

        /* Messages go back to librdkafka before its handle is closed. */
        for (int i = 0; i < f->ncarry; i++)
                rd_kafka_message_destroy(f->carry[i]);
        f->ncarry = 0;
        if (w->rk)
                cons_flow_resume_all(w);
        free(f->carry);
        f->carry = NULL;
        f->carry_cap = 0;
}
