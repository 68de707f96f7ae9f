/* producer/metrics.c: the front's metrics (producer/metrics.h): the one registry fr_m
 * and the registration of every counter, gauge and histogram. Every module of the front
 * counts into it; it calls none of them (the gauges read from their owners at scrape
 * time are set by scrape.c). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

fr_metrics_t fr_m;

static const int code_list[] = { 200, 202, 400, 401, 403, 404, 405, 409, 413, 429, 500, 503, 0 };

int fr_code_idx(int status)
{
        int i;

        for (i = 0; code_list[i]; i++)
                if (code_list[i] == status)
                        return i;
        return i; /* "other" */
}

/* One counter or gauge of the registry: the handle it fills in fr_m, its name, labels
 * and help. Registered in the table's order (the order of the /metrics text). */
typedef struct metric_def {
        size_t off;                     /* offsetof(fr_metrics_t, the handle) */
        int gauge;                      /* 0 counter, 1 gauge */
        const char *name, *labels, *help;
} metric_def_t;

#define C(f, name, labels, help) { offsetof(fr_metrics_t, f), 0, name, labels, help }
#define G(f, name, labels, help) { offsetof(fr_metrics_t, f), 1, name, labels, help }
#define DELIV(f, s) C(f, "seckill_front_deliveries_total", "status=\"" s "\"", \
                      "Kafka delivery reports by status")
#define RB(f, s) C(f, "seckill_front_rollbacks_total", "result=\"" s "\"", \
                   "rollback.lua mode front by result")
#define U(f, s) C(f, "seckill_front_unavailable_total", "cause=\"" s "\"", "503 answers by cause")
#define DBP(f, s) C(f, "seckill_front_db_only_purchases_total", "result=\"" s "\"", \
                    "DB-only purchases by result (DESIGN.md 12)")
#define BRK(f, s) C(f, "seckill_front_redis_breaker_transitions_total", "to=\"" s "\"", \
                    "Redis breaker transitions by new state")
#define DRAIN(f, s) C(f, "seckill_front_drain_moves_total", "rule=\"" s "\"", \
                      "draining -> db moves this front made, by rule: every front's ack " \
                      "(early) or the timed wait (DESIGN.md 12)")
#define PAY(f, s) C(f, "seckill_payments_total", "result=\"" s "\"", \
                    "signed payment callbacks decided, by result (a repeat counts again)")

static const metric_def_t metric_defs[] = {
        DELIV(deliv_persisted, "persisted"),
        DELIV(deliv_not, "not_persisted"),
        DELIV(deliv_possibly, "possibly_persisted"),
        RB(rb_ok, "ok"),
        RB(rb_already, "already"),
        RB(rb_claimed, "claimed"),
        RB(rb_error, "error"),
        C(o_paid, "seckill_orders_paid_total", NULL, "Orders paid (UNPAID -> PAID)"),
        C(o_cancelled, "seckill_orders_cancelled_total", NULL,
          "Orders cancelled by their buyer (unit released)"),
        C(o_closed, "seckill_orders_closed_total", NULL,
          "Unpaid orders closed past their deadline (here: by a late pay)"),
        C(o_release_err, "seckill_orders_release_errors_total", NULL,
          "Releases whose Redis step failed (left to the reconciler)"),
        C(lk_full, "seckill_front_lookups_refused_total", NULL,
          "lookups answered 503 at once: the lookup queue was full "
          "(SECKILL_FRONT_LOOKUP_QUEUE_MAX, DESIGN.md 3)"),
        C(lk_dropped, "seckill_front_lookups_dropped_total", NULL,
          "lookups dropped unrun: their request was answered (deadline) while they waited "
          "(DESIGN.md 3)"),
        U(u_overload, "overload"),
        U(u_kafka, "kafka"),
        U(u_redis, "redis"),
        U(u_lease, "lease"),
        U(u_paused, "paused"),
        U(u_pending, "pending"),
        U(u_failed, "failed"),
        U(u_shutdown, "shutdown"),
        U(u_db, "db"),
        U(u_meta, "meta_missing"),
        U(u_collision, "collision"),
        U(u_degrade, "degrade"),
        DBP(db_created, "created"),
        DBP(db_soldout, "sold_out"),
        DBP(db_has_order, "has_order"),
        DBP(db_unavailable, "unavailable"),
        C(reproduce, "seckill_front_reproduce_total", NULL,
          "identical re-produce after POSSIBLY_PERSISTED"),
        C(producer_replaced, "seckill_front_producer_replaced_total", NULL,
          "producers replaced after a fatal error"),
        C(deduct_retry, "seckill_front_deduct_unknown_total", NULL,
          "deduct attempts with an unknown outcome"),
        BRK(brk_to_open, "open"),
        BRK(brk_to_closed, "closed"),
        C(collision, "seckill_front_deduct_collision_total", NULL,
          "ALERT: a traceId already stored for another purchase (id collision, DESIGN.md 4)"),
        C(drain_acks, "seckill_front_drain_acks_total", NULL,
          "drain acks this front wrote to tb_drain_ack: a draining epoch read, none of its "
          "purchases of the voucher able to reach Kafka (DESIGN.md 12 b)"),
        DRAIN(drain_early, "acks"),
        DRAIN(drain_timed, "timed"),
        /* DESIGN.md 15: the buyer identity (identity.c). */
        C(jwt_reload_fail, "seckill_jwt_key_reload_failures_total", NULL,
          "JWKS reloads that failed (the old keys stay)"),
        C(jwt_reloads, "seckill_jwt_key_reloads_total", NULL,
          "JWKS reloads that installed a new key-set generation"),
        C(id_refused, "seckill_front_identity_refused_total", NULL,
          "401/10007 answers: no, bad or expired token, untrusted peer"),
        C(queue_generations, "seckill_queue_new_generations_total", NULL,
          "waiting rooms this front saw start a new generation (their Redis keys were lost; "
          "DESIGN.md 18)"),
        C(queue_key_reloads, "seckill_queue_key_reloads_total", NULL,
          "queue keys file reloads that installed new admission keys (DESIGN.md 18)"),
        C(queue_key_reload_fail, "seckill_queue_key_reload_failures_total", NULL,
          "queue keys file reloads that failed (the old keys stay)"),
        C(room_db_reads, "seckill_queue_voucher_db_reads_total", NULL,
          "DB reads of a voucher by the room's routes (its facts are then kept for 1 s; an "
          "unknown id is remembered like the purchase route's, DESIGN.md 15)"),
        C(room_stock_reads, "seckill_queue_voucher_stock_reads_total", NULL,
          "Redis stock readings by GET /api/v1/vouchers/{id} (each reused for 1 s)"),
        C(jwt_limited, "seckill_jwt_verify_limited_total", NULL,
          "requests answered 429: a client address over SECKILL_JWT_VERIFY_RATE verifications "
          "of uncached tokens per second (DESIGN.md 15)"),
        C(bad_framing, "seckill_front_bad_framing_total", NULL,
          "requests answered 400/10001 and closed before any route: an ambiguous "
          "Content-Length or Transfer-Encoding, a NUL or bare LF in a line the front reads"),
        /* DESIGN.md 13, 15: the payment callback (payment.c). */
        PAY(pay_applied, "applied"),
        PAY(pay_refund_due, "refund_due"),
        C(pay_txn_reused, "seckill_payments_txn_reused_total", NULL,
          "ALERT: a repeated provider txn id naming another order, amount or currency "
          "(409/10025)"),
        C(pay_no_outcome, "seckill_payments_no_outcome_total", NULL,
          "callbacks for an order whose outcome is not known yet (503, nothing recorded)"),
        C(pay_sig_refused, "seckill_payments_signature_refused_total", NULL,
          "401/10008 answers: missing, malformed, stale or bad X-Payment-Signature"),
        C(pay_key_reloads, "seckill_payment_key_reloads_total", NULL,
          "payment keys file reloads that installed new keys"),
        C(pay_key_reload_fail, "seckill_payment_key_reload_failures_total", NULL,
          "payment keys file reloads that failed (the old keys stay)"),
        C(pay_full, "seckill_payments_refused_total", NULL,
          "callbacks answered 503 at once: the payment queue was full"),
        C(unknown_hits, "seckill_front_unknown_voucher_cache_hits_total", NULL,
          "purchases answered 404/10004 by the unknown-voucher cache, without Redis or the DB "
          "(DESIGN.md 15)"),
        C(vchecks, "seckill_front_voucher_checks_total", NULL,
          "10004 checks run against the DB (a voucher whose Redis meta is missing), on their "
          "own queue"),
        C(vcheck_full, "seckill_front_voucher_checks_refused_total", NULL,
          "10004 checks answered 503 at once: their queue was full"),
        C(switch_not_synced, "seckill_front_switch_not_synced_total", NULL,
          "degrade switch reads not made because the follower's Galera node was not Synced "
          "(a Donor, desynced or joining node); the follower moved to the next node "
          "(DESIGN.md 16 (e))"),
        C(soldout_hits, "seckill_front_soldout_cache_hits_total", NULL,
          "purchases answered 409/10005 by the local sold-out cache, without Redis "
          "(DESIGN.md 4)"),
        /* Gauges; the queue depths, in-flight and retired are set at scrape time (scrape.c). */
        G(inflight, "seckill_front_inflight", NULL,
          "purchases between admission and their final delivery report"),
        G(brk_open, "seckill_front_redis_breaker_open", NULL,
          "Redis breakers open or half-open (no purchase goes to their node): 0 or 1 on one "
          "server or Sentinel; on a Cluster one breaker per master, so the number of masters "
          "this front stopped sending to"),
        G(q_deduct, "seckill_front_deduct_queue_depth", NULL,
          "purchases waiting for a Redis deduct worker"),
        G(q_rollback, "seckill_front_rollback_queue_depth", NULL,
          "purchases waiting for the rollback worker"),
        G(q_lookup, "seckill_front_lookup_queue_depth", NULL,
          "lookups and DB checks waiting for the lookup pool"),
        G(q_dbonly, "seckill_front_db_only_queue_depth", NULL,
          "DB-only purchases waiting for a connection of the pool"),
        G(q_probe, "seckill_front_probe_queue_depth", NULL,
          "purchases waiting for a probe worker (overflow probing, DESIGN.md 4)"),
        G(switch_stale, "seckill_front_switch_stale", NULL,
          "1 while the last successful read of the degrade switch rows is older than "
          "SECKILL_SWITCH_STALE_MS: nothing goes to Redis (DESIGN.md 12 a)"),
        G(retired, "seckill_front_producers_retired", NULL,
          "replaced Kafka producers still draining (destroyed once empty)"),
};

#undef C
#undef G
#undef DELIV
#undef RB
#undef U
#undef DBP
#undef BRK
#undef DRAIN
#undef PAY

static void init_table(fr_metrics_t *m)
{
        size_t i;

        for (i = 0; i < sizeof(metric_defs) / sizeof(metric_defs[0]); i++) {
                const metric_def_t *d = &metric_defs[i];
                sk_metric_t **h = (sk_metric_t **)((char *)m + d->off);

                *h = d->gauge ? sk_metrics_gauge(m->reg, d->name, d->labels, d->help)
                              : sk_metrics_counter(m->reg, d->name, d->labels, d->help);
        }
}

void fr_metrics_init(void)
{
        static const double lat_bounds[] = { 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1,
                                             0.25, 0.5, 1, 2.5, 5, 10, 30 };
        fr_metrics_t *m = &fr_m;
        size_t nb = sizeof(lat_bounds) / sizeof(lat_bounds[0]);
        char lbl[64];
        int i;

        m->reg = sk_metrics_new();
        for (i = 0; code_list[i]; i++) {
                snprintf(lbl, sizeof(lbl), "code=\"%d\"", code_list[i]);
                m->req_by_code[i] = sk_metrics_counter(m->reg, "seckill_front_requests_total", lbl,
                                                       "HTTP answers by status code");
        }
        m->req_by_code[i] = sk_metrics_counter(m->reg, "seckill_front_requests_total",
                                               "code=\"other\"", "HTTP answers by status code");
        m->latency = sk_metrics_hist(m->reg, "seckill_front_purchase_seconds", NULL,
                                     "purchase latency from request to answer", lat_bounds, nb);
        m->deduct_lat = sk_metrics_hist(m->reg, "seckill_front_deduct_seconds", NULL,
                                        "from request to the deduct.lua reply", lat_bounds, nb);
        m->deliv_lat = sk_metrics_hist(m->reg, "seckill_front_delivery_seconds", NULL,
                                       "from produce to its delivery report", lat_bounds, nb);
        init_table(m);
}

void fr_metrics_destroy(void)
{
        sk_metrics_destroy(fr_m.reg);
        fr_m.reg = NULL;
}
