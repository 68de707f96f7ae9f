/* rc_kafka.h: the reconciler's Kafka side (DESIGN.md 5, 8 "re-drive bookkeeping"):
 * an idempotent producer that re-publishes stored DEDUCT entries and waits for their
 * delivery reports, and a plain (group-less) reader of the DLQ topic that collects the
 * traceIds found there. Single-threaded: the reconciler's main thread only. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <librdkafka/rdkafka.h>
#include "sk/conf.h"
#include "sk/err.h"

/** One re-drive in flight: filled by the delivery report. */
typedef struct rc_delivery {
        int done;                   /* 1 once the report arrived */
        rd_kafka_resp_err_t err;
        rd_kafka_msg_status_t status;
        int32_t partition;
        int64_t offset;
} rc_delivery_t;

typedef struct rc_producer rc_producer_t;

/** @brief New producer from sk_kafka_conf_new(PRODUCER) (enable.idempotence=true,
 *  message.timeout.ms = delivery timeout). @returns owned handle or NULL + reason. */
rc_producer_t *rc_producer_new(const sk_conf_t *conf, char *errstr, size_t errstr_size);
/** @brief Enqueue @p val (copied) to conf->topic with key @p key (copied); the report
 *  lands in *dr (borrowed: must stay valid until rc_producer_wait returns).
 *  @returns SK_OK, or SK_EKAFKA with the reason (*dr->done = 1, err set). */
sk_err_t rc_producer_send(rc_producer_t *p, const char *key, const char *val, rc_delivery_t *dr,
                          char *errstr, size_t errstr_size);
/** @brief Serve delivery reports until none is outstanding or @p timeout_ms passed;
 *  then purge what is left (reported now with a __PURGE error), so no report can
 *  reach an rc_delivery_t after this returns. @returns the number that were still
 *  outstanding at the deadline. */
int rc_producer_wait(rc_producer_t *p, int timeout_ms);
/** @brief Messages whose delivery report has not been served yet. */
int rc_producer_outstanding(const rc_producer_t *p);
/** @brief Flush briefly and destroy. NULL is a no-op. */
void rc_producer_destroy(rc_producer_t *p);

/** @brief Read @p topic from the beginning of every partition up to its high
 *  watermark (captured at the start) with a group-less consumer, and return in
 *  *ids (malloc'd, sorted, unique; free()) the traceIds found in the values
 *  ("traceId":"<id>" anywhere in the value, or a traceId header). A missing topic is an
 *  empty result. @returns SK_OK, SK_EAGAIN (broker unreachable, timeout), SK_EKAFKA. */
sk_err_t rc_dlq_read(const sk_conf_t *conf, const char *topic, int timeout_ms, int64_t **ids,
                     size_t *nids, char *errstr, size_t errstr_size);
