/* sk/kafka.h: librdkafka configuration and topic administration shared by the
 * binaries. Properties from -X key=value are applied last, as given. */
#pragma once
#include <stddef.h>
#include <librdkafka/rdkafka.h>
#include "sk/err.h"
#include "sk/conf.h"

typedef enum { SK_KAFKA_PRODUCER, SK_KAFKA_CONSUMER, SK_KAFKA_ADMIN } sk_kafka_role_t;

/** @brief New rd_kafka_conf_t with bootstrap.servers, client.id and the role's settings
 *  of DESIGN.md 5 (producer: enable.idempotence=true, message.timeout.ms = delivery
 *  timeout; consumer: group.id, auto.offset.reset=earliest,
 *  enable.auto.offset.store=false, bounded prefetch), then conf->kafka_props.
 *  @returns owned conf (rd_kafka_conf_destroy, or hand it to rd_kafka_new), or NULL. */
rd_kafka_conf_t *sk_kafka_conf_new(const sk_conf_t *conf, sk_kafka_role_t role,
                                   char *errstr, size_t errstr_size);
/** @brief librdkafka's log callback (rd_kafka_conf_set_log_cb) for every binary: one line
 *  "event=kafka_log fac=... msg=..." per librdkafka log line, syslog @p level mapped to
 *  SK_ERROR (0-3), SK_WARN (4), SK_INFO (5, notice) or SK_DEBUG (6-7). @p fac and @p buf
 *  are borrowed. Called on librdkafka's threads; thread-safe (sk_log_emit is). */
void sk_kafka_log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf);
/** @brief Set one property. @returns SK_OK or SK_EINVAL with librdkafka's reason. */
sk_err_t sk_kafka_conf_set(rd_kafka_conf_t *kconf, const char *name, const char *value,
                           char *errstr, size_t errstr_size);
/** @brief Create conf->topic and conf->dlq_topic with conf->topic_partitions
 *  partitions (DLQ: same count) when missing; TOPIC_ALREADY_EXISTS is success.
 *  Waits up to @p timeout_ms. SK_EAGAIN when the broker is unreachable. */
sk_err_t sk_kafka_ensure_topics(const sk_conf_t *conf, int timeout_ms,
                                char *errstr, size_t errstr_size);
/** @brief Create any topic (same rules). */
sk_err_t sk_kafka_create_topic(const sk_conf_t *conf, const char *topic, int partitions,
                               int timeout_ms, char *errstr, size_t errstr_size);
/** @brief Committed offset of conf->group_id on (topic, partition) into *offset
 *  (-1 = none), via a short-lived consumer handle (rd_kafka_committed).
 *  SK_EAGAIN on timeout. */
sk_err_t sk_kafka_committed(const sk_conf_t *conf, const char *topic, int partition,
                            int64_t *offset, int timeout_ms, char *errstr, size_t errstr_size);
