/* producer/kprod.h: the librdkafka producers of seckill-front (DESIGN.md 5, 8): the
 * current producer, its replacement after a fatal error, the retired producers (polled
 * until their queue is empty, then destroyed), the poll thread that serves delivery
 * reports (to the callback its caller names: publish.c's fr_delivery_report), and
 * Kafka's health for admission. */
#pragma once
#include <librdkafka/rdkafka.h>

#include "req.h"

/** The delivery report callback of every producer (librdkafka's dr_msg_cb). */
typedef void (*fr_kprod_dr_cb_t)(rd_kafka_t *rk, const rd_kafka_message_t *rkm, void *opaque);

/** Create the first producer, create missing topics (best effort: retried by the
 *  health checks), run a first health check so admission starts truthful, then start
 *  the poll thread. Every producer, the first and each replacement, reports its
 *  deliveries to @p on_delivery on the poll thread. Once, before any other fr_kprod_*.
 *  @returns 0, or -1 with @p errstr (no producer; nothing to stop). */
int fr_kprod_start(fr_kprod_dr_cb_t on_delivery, char *errstr, size_t errstr_size);
/** Stop and join the poll thread (after every produce has been issued: shutdown). */
void fr_kprod_stop_poll(void);
/** Destroy every producer (exit, after fr_kprod_stop_poll): purge what is left and serve
 *  its delivery reports here, so each request's pipeline reference is released. */
void fr_kprod_destroy_all(void);

/** Produce req->msg (identical bytes every time), key = voucherId, opaque = @p req (the
 *  pipeline's reference travels with the message until its delivery report).
 *  @returns 0, or -1 when librdkafka refused it (nothing enqueued; a fatal refusal marks
 *  the producer for replacement). Thread-safe. */
int fr_kprod_produce(fr_req_t *req);
/** 1 if the current producer has hit a fatal error (it refuses every produce until the
 *  health thread replaces it). Thread-safe. */
int fr_kprod_fatal_now(void);
/** Make the current producer fatal (failpoints of DESIGN.md 11). Thread-safe. */
void fr_kprod_raise_fatal(const char *why);
/** Admission (DESIGN.md 8): brokers reachable and the producer not fatal. */
int fr_kprod_usable(void);
/** /readyz: broker metadata for the topic was readable at the last check. */
int fr_kprod_ok(void);

/** Health thread only: replace the current producer if it is fatal (the old one is
 *  retired: its reports are still served until its queue is empty). Also fires the
 *  failpoint front.kafka_fatal. */
void fr_kprod_replace_if_fatal(void);
/** Health thread only: create missing topics, read the topic's metadata (up to 1.5 s)
 *  and update fr_kprod_ok()/fr_kprod_usable(). */
void fr_kprod_check_health(void);

/** Shutdown: purge the queues (RD_KAFKA_PURGE_F_QUEUE) of every producer; the purged
 *  messages come back as NOT_PERSISTED reports on the poll thread. */
void fr_kprod_purge_queue(void);
/** Messages (and reports) not yet served, over every producer. */
int fr_kprod_outq_len(void);
/** Producers replaced and not yet destroyed (a gauge). */
int fr_kprod_retired(void);
