/* producer/metrics.h: the Prometheus metrics of seckill-front (names prefixed
 * seckill_front_, DESIGN.md 3). fr_m is written once by fr_metrics_init() before any
 * thread starts; afterwards its handles are read-only and the metrics themselves are
 * updated with atomics from any thread (sk/metrics.h). */
#pragma once
#include "sk/metrics.h"

typedef struct fr_metrics {
        sk_metrics_t *reg;
        sk_metric_t *req_by_code[13];   /* index by fr_code_idx() */
        sk_metric_t *latency;           /* purchase latency, seconds */
        sk_metric_t *deduct_lat;        /* request start -> deduct reply, seconds */
        sk_metric_t *deliv_lat;         /* produce -> delivery report, seconds */
        sk_metric_t *deliv_persisted, *deliv_not, *deliv_possibly;
        sk_metric_t *rb_ok, *rb_already, *rb_claimed, *rb_error;
        sk_metric_t *o_paid, *o_cancelled, *o_closed, *o_release_err; /* seckill_orders_* */
        sk_metric_t *inflight;
        sk_metric_t *u_overload, *u_kafka, *u_redis, *u_lease, *u_paused, *u_pending,
                    *u_failed, *u_shutdown, *u_db, *u_meta, *u_collision;
        sk_metric_t *reproduce, *producer_replaced, *deduct_retry, *collision;
        sk_metric_t *brk_open, *brk_to_open, *brk_to_closed; /* the Redis breaker (DESIGN.md 12) */
        sk_metric_t *db_created, *db_soldout, *db_has_order, *db_unavailable; /* DB-only path */
        sk_metric_t *u_degrade, *q_dbonly, *q_probe;
        sk_metric_t *drain_acks, *drain_early, *drain_timed; /* DESIGN.md 12 b-d */
        sk_metric_t *switch_stale;      /* gauge: 1 while the switch rows are stale (12 a) */
        sk_metric_t *switch_not_synced; /* switch reads refused: node not Synced (16 (e)) */
        sk_metric_t *jwt_reload_fail, *jwt_reloads, *id_refused; /* DESIGN.md 15 */
        sk_metric_t *jwt_limited;       /* 429: uncached verifications over a client's limit */
        sk_metric_t *queue_generations; /* waiting rooms seen starting a new generation (DESIGN.md 18) */
        sk_metric_t *queue_key_reloads, *queue_key_reload_fail; /* SECKILL_QUEUE_KEYS_FILE */
        sk_metric_t *room_db_reads, *room_stock_reads; /* the room routes' voucher reads */
        sk_metric_t *bad_framing;       /* 400 + close: framing or bytes (DESIGN.md 15) */
        sk_metric_t *soldout_hits;      /* 409/10005 answered by the local sold-out cache */
        sk_metric_t *unknown_hits;      /* 404/10004 answered by the unknown-voucher cache */
        sk_metric_t *vchecks, *vcheck_full; /* 10004 DB checks run / refused (queue full) */
        sk_metric_t *lk_full, *lk_dropped; /* lookups refused (queue full) / dropped unrun */
        /* The payment callback (DESIGN.md 13, 15; payment.c). */
        sk_metric_t *pay_applied, *pay_refund_due, *pay_txn_reused, *pay_no_outcome;
        sk_metric_t *pay_sig_refused, *pay_key_reloads, *pay_key_reload_fail, *pay_full;
        sk_metric_t *q_deduct, *q_rollback, *q_lookup, *retired; /* gauges, set on render */
} fr_metrics_t;

extern fr_metrics_t fr_m;

/** Register every metric. Once, before any thread starts. */
void fr_metrics_init(void);
/** Index of @p status in seckill_front_requests_total (the last one is "other"). */
int fr_code_idx(int status);
/** The /metrics body (malloc'd, NULL on ENOMEM): the gauges sampled at render time
 *  (in-flight purchases, the deduct, rollback, lookup, DB-only and probe queue depths,
 *  producers retired and not yet destroyed), then every metric. Thread-safe. */
/* scrape.c */
char *fr_metrics_render(void);
/** Free the registry (exit; no thread may use a metric afterwards). */
void fr_metrics_destroy(void);
