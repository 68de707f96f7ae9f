/* producer/publish.h: publishing an admitted purchase and deciding its answer from the
 * Kafka delivery report (DESIGN.md 8: PERSISTED 202; POSSIBLY_PERSISTED one identical
 * re-produce, else 503 PENDING without rollback; NOT_PERSISTED or a refused produce ->
 * rollback.lua mode front unless an earlier copy was POSSIBLY_PERSISTED). */
#pragma once
#include <librdkafka/rdkafka.h>

#include "req.h"

/** Deduct admitted @p req (OK or REPLAY; req->msg set): produce it. Takes over the
 *  pipeline's reference (released when the purchase is answered). Thread-safe. */
void fr_publish(fr_req_t *req);
/** librdkafka delivery report callback (registered by kprod.c; runs on the poll
 *  thread, or on the exiting main thread in fr_kprod_destroy_all). */
void fr_delivery_report(rd_kafka_t *rk, const rd_kafka_message_t *rkm, void *opaque);
/** Health thread, once the current producer is healthy: re-produce the copies parked
 *  while it was fatal (after the shutdown's purge: answer them 503 PENDING instead). */
void fr_publish_run_deferred(void);
/** Shutdown, after the health thread stopped: nothing is parked any more; the parked
 *  copies are answered 503 PENDING (no rollback) and released. */
void fr_publish_close_deferred(void);
/** Shutdown: no more re-produces; purge every producer's queue. @returns the number of
 *  messages and reports that were still queued just before the purge. */
int fr_publish_purge(void);
