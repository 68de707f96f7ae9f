/* closer.c: the closer loop of seckill-consumer (DESIGN.md 13): every
 * SECKILL_CLOSE_INTERVAL_MS it closes the UNPAID orders past their pay_deadline and
 * gives their units back, DB first, then Redis:
 *   1. sk_order_close_due(): one transaction per batch of up to 500 orders (one on
 *      Galera, @@wsrep_on = 1, DESIGN.md 16), selected
 *      `FOR UPDATE SKIP LOCKED` (several consumers share the work; an order a payer or
 *      a canceller holds is skipped and judged by whoever holds it), status 4 on a
 *      conditional `status = 1`, the voucher rows + k in voucher order, one RESTORE row
 *      (business_type 5) per order, COMMIT;
 *   2. failpoint closer.after_db_commit (closed in the DB, Redis not released yet: the
 *      reconciler finishes such releases);
 *   3. release.lua per order (unit back to Redis, the user may buy again), then DEL of
 *      the order cache. A Redis error leaves the release to the reconciler (logged,
 *      counted); it never undoes the DB close.
 * A COMMIT with an unknown outcome (DESIGN.md 16: any error but 1213/1205, or a lost
 * link) is resolved before anything else: the batch's orders are read on a fresh
 * session (wsrep_sync_wait = 1 on Galera); the CLOSED ones are released as in 3, the
 * UNPAID ones were not closed and come back in a later batch; those are read once more
 * after innodb_lock_wait_timeout + 1 s (the lost COMMIT may have been applying), and
 * the ones CLOSED by then are released (DESIGN.md 16 "Answers" (c)).
 * A full batch is followed at once by the next one. One thread per process with its own
 * DB and Redis connections; stops with g_stop.
 * Metrics: seckill_orders_closed_total, seckill_orders_release_lag_seconds (from the
 * deadline to the Redis release), seckill_orders_unpaid_overdue_oldest_seconds,
 * seckill_orders_release_errors_total; and once a round the merchant's refund backlog
 * (DESIGN.md 13): seckill_payments_refund_due, seckill_payments_refund_due_oldest_seconds.
 * "Past the deadline" is pay_deadline + SECKILL_PAY_GRACE_S <= NOW(3) (the webhook's
 * delay), the same rule as the payment callback's. */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "sk/backoff.h"
#include "sk/clock.h"
#include "sk/failpoint.h"
#include "sk/log.h"
#include "sk/order.h"
#include "sk/payment.h"
#include "consumer.h"

#define CLOSE_BATCH 500
#define CLOSER_REDIS_TIMEOUT_MS 2000 /* connect and each command */

typedef struct closer {
        const sk_conf_t *conf;
        int64_t expire_extra_ms;
        int lock_wait_s;
        sk_db_t *db;
        sk_redis_t *r;
        sk_metric_t *closed, *lag, *overdue, *release_errors;
        sk_metric_t *refund_due, *refund_oldest;        /* DESIGN.md 13: the refund backlog */
        /* DESIGN.md 16 "Answers" (c): orders of an unknown COMMIT resolved "not closed",
         * read once more at recheck_at_ms (mono) and released if CLOSED by then. */
        sk_order_row_t *recheck;
        size_t nrecheck;
        int64_t recheck_at_ms;
        pthread_t tid;
        int started;
} closer_t;

static closer_t g_closer;

/* Finish one closed order: release.lua, then the cache DEL (sk_order_finish: each step
 * at most twice, the connection renewed after an unsure answer). */
static void release_one(closer_t *c, const sk_order_row_t *o)
{
        sk_release_res_t res;
        sk_finish_step_t failed;
        char errstr[256] = "";
        sk_err_t err = sk_order_finish(&c->r, &c->conf->redis, CLOSER_REDIS_TIMEOUT_MS,
                                       c->conf->redis_prefix, o, "close", c->expire_extra_ms,
                                       &res, &failed, errstr, sizeof(errstr));

        if (failed == SK_FINISH_RELEASE) {
                sk_metric_add(c->release_errors, 1);
                SK_LOG(SK_WARN, "close_release_failed", "order_id=%" PRId64 " trace_id=%" PRId64
                       " err=%s reason=\"%s\" (the reconciler releases it)", o->order_id,
                       o->trace_id, sk_err2str(err), errstr);
                return;
        }
        if (o->pay_deadline_ms > 0)
                sk_metric_observe(c->lag, (double)(sk_now_ms() - o->pay_deadline_ms) / 1000.0);
        if (failed == SK_FINISH_CACHE_DEL)
                SK_LOG(SK_WARN, "close_cache_del_failed", "order_id=%" PRId64 " reason=\"%s\"",
                       o->order_id, errstr);
}

/* The batch's COMMIT had an unknown outcome (DESIGN.md 16): read the orders' status on a
 * fresh session (wsrep_sync_wait = 1 on Galera) until it answers or we stop; the CLOSED
 * ones stay in rows[0..*n) to be released (release.lua is idempotent), the UNPAID ones
 * were not closed (the next round selects them again). @returns 0, or -1 when stopped
 * unresolved (the reconciler releases whatever was closed). */
static int resolve_batch(closer_t *c, sk_order_row_t *rows, size_t *n)
{
        uint64_t rng = sk_backoff_seed();
        size_t kept = 0;
        int attempt = 0;
        char errstr[256] = "";
        sk_err_t err;

        while ((err = sk_order_resolve(c->db, rows, *n, SK_ORDER_CLOSED, &kept, errstr,
                                       sizeof(errstr))) != SK_OK) {
                SK_LOG(SK_WARN, "close_resolve_failed", "orders=%zu err=%s reason=\"%s\"", *n,
                       sk_err2str(err), errstr);
                if (g_stop)
                        return -1;
                sk_sleep_ms(sk_backoff_ms(attempt++, 100, 5000, &rng), (volatile int *)&g_stop);
        }
        SK_LOG(SK_WARN, "close_commit_unknown", "orders=%zu closed=%zu", *n, kept);
        *n = kept;
        return 0;
}

/* DESIGN.md 16 "Answers" (c): the orders rows[0..n) of an unknown COMMIT were read as
 * not closed; the COMMIT may still have been applying. Keep them for one more read after
 * innodb_lock_wait_timeout + 1 s (a later round does not select an order it closed). */
static void recheck_later(closer_t *c, const sk_order_row_t *rows, size_t n)
{
        sk_order_row_t *v;

        if (n == 0 || !(v = realloc(c->recheck, (c->nrecheck + n) * sizeof(*v)))) {
                if (n)
                        SK_LOG(SK_WARN, "close_recheck_dropped", "orders=%zu (the reconciler "
                               "releases what was closed)", n);
                return;
        }
        memcpy(v + c->nrecheck, rows, n * sizeof(*v));
        c->recheck = v;
        c->nrecheck += n;
        c->recheck_at_ms = sk_mono_ms() + ((int64_t)c->lock_wait_s + 1) * 1000;
}

/* The re-check once due: the orders CLOSED by now are released (release.lua is
 * idempotent: one closed and released by a later round meanwhile is ALREADY); a read
 * error keeps them for the next round. */
static void recheck_due(closer_t *c)
{
        size_t kept = 0, i;
        char errstr[256] = "";
        sk_err_t err;

        if (c->nrecheck == 0 || sk_mono_ms() < c->recheck_at_ms)
                return;
        if ((err = sk_order_resolve(c->db, c->recheck, c->nrecheck, SK_ORDER_CLOSED, &kept, errstr,
                                    sizeof(errstr))) != SK_OK) {
                SK_LOG(SK_WARN, "close_recheck_failed", "orders=%zu err=%s reason=\"%s\"",
                       c->nrecheck, sk_err2str(err), errstr);
                return;
        }
        SK_LOG(SK_WARN, "close_recheck", "orders=%zu closed=%zu", c->nrecheck, kept);
        for (i = 0; i < kept; i++)
                release_one(c, &c->recheck[i]);
        free(c->recheck);
        c->recheck = NULL;
        c->nrecheck = 0;
}

/* One batch of up to @p limit orders. @returns the number of orders selected (closed or,
 * after an unknown COMMIT, resolved), or -1 on a DB error. */
static int close_batch(closer_t *c, int limit)
{
        sk_order_row_t *rows = NULL;
        size_t n = 0, i, selected;
        char errstr[256] = "";
        sk_err_t err = sk_order_close_due(c->db, limit, c->conf->pay_grace_s, &rows, &n,
                                          errstr, sizeof(errstr));

        selected = n;
        if (err == SK_EUNKNOWN) {
                SK_LOG(SK_WARN, "closer_commit_unknown", "orders=%zu reason=\"%s\"", n, errstr);
                if (resolve_batch(c, rows, &n) != 0) {
                        free(rows);
                        return -1;
                }
                recheck_later(c, rows + n, selected - n);
                err = SK_OK;
        }
        if (err != SK_OK) {
                SK_LOG(SK_WARN, "closer_db_error", "err=%s reason=\"%s\"", sk_err2str(err), errstr);
                if (err == SK_EAGAIN)
                        (void)sk_db_reconnect(c->db, errstr, sizeof(errstr));
                return -1;
        }
        if (n == 0) {
                free(rows);
                return (int)selected;
        }
        sk_metric_add(c->closed, (int64_t)n);
        SK_LOG(SK_INFO, "orders_closed", "count=%zu", n);
        if (SK_FAILPOINT("closer.after_db_commit")) {
                /* `error`: Redis is not released now (the reconciler does it). */
                free(rows);
                return (int)selected;
        }
        for (i = 0; i < n; i++)
                release_one(c, &rows[i]);
        free(rows);
        return (int)selected;
}

static void *closer_main(void *arg)
{
        closer_t *c = arg;
        uint64_t rng = sk_backoff_seed();
        int failures = 0;

        while (!g_stop) {
                int64_t overdue = 0;
                char errstr[256] = "";
                int n, limit;

                if (!c->db && !(c->db = sk_db_connect(&c->conf->mysql, 0, c->lock_wait_s, errstr,
                                                      sizeof(errstr)))) {
                        SK_LOG(SK_WARN, "closer_db_connect", "reason=\"%s\"", errstr);
                        sk_sleep_ms(sk_backoff_ms(failures++, 200, 5000, &rng), (volatile int *)&g_stop);
                        continue;
                }
                /* DESIGN.md 16: on Galera one order per transaction (a certification
                 * failure then costs one order's retry, and two closers on two nodes
                 * rarely touch the same rows). */
                limit = sk_db_wsrep_on(c->db) ? 1 : CLOSE_BATCH;
                do
                        n = close_batch(c, limit);
                while (n == limit && !g_stop);
                recheck_due(c);
                /* What is left past its deadline after this round (0 when keeping up). */
                /* The merchant's refund backlog (DESIGN.md 13), read on the same round. */
                {
                        int64_t count = 0, oldest_s = 0;

                        if (sk_payment_refund_backlog(c->db, &count, &oldest_s, errstr,
                                                      sizeof(errstr)) == SK_OK) {
                                sk_metric_set(c->refund_due, count);
                                sk_metric_set(c->refund_oldest, oldest_s);
                        }
                }
                if (sk_order_overdue_oldest_s(c->db, c->conf->pay_grace_s, &overdue, errstr,
                                              sizeof(errstr)) == SK_OK)
                        sk_metric_set(c->overdue, overdue);
                if (n < 0) {
                        sk_sleep_ms(sk_backoff_ms(failures++, 100, 5000, &rng), (volatile int *)&g_stop);
                        continue;
                }
                failures = 0;
                sk_sleep_ms(c->conf->close_interval_ms, (volatile int *)&g_stop);
        }
        sk_db_close(c->db);
        sk_redis_close(c->r);
        free(c->recheck);
        c->recheck = NULL;
        c->nrecheck = 0;
        c->db = NULL;
        c->r = NULL;
        return NULL;
}

int cons_closer_start(const cons_ctx_t *ctx, sk_metrics_t *reg)
{
        closer_t *c = &g_closer;
        static const double lag_bounds[] = { 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300 };

        memset(c, 0, sizeof(*c));
        c->conf = ctx->conf;
        c->expire_extra_ms = ctx->expire_extra_ms;
        c->lock_wait_s = ctx->opts->lock_wait_s;
        c->closed = sk_metrics_counter(reg, "seckill_orders_closed_total", NULL,
                                       "Unpaid orders closed past their deadline (units released)");
        c->lag = sk_metrics_hist(reg, "seckill_orders_release_lag_seconds", NULL,
                                 "From an order's pay deadline to the Redis release of its unit",
                                 lag_bounds, sizeof(lag_bounds) / sizeof(lag_bounds[0]));
        c->overdue = sk_metrics_gauge(reg, "seckill_orders_unpaid_overdue_oldest_seconds", NULL,
                                      "How long the oldest unpaid order is past its deadline");
        c->refund_due = sk_metrics_gauge(reg, "seckill_payments_refund_due", NULL,
                                         "refund_due payments not yet marked refunded (seckill-admin "
                                         "payment refunds)");
        c->refund_oldest = sk_metrics_gauge(reg, "seckill_payments_refund_due_oldest_seconds", NULL,
                                            "age of the oldest refund_due payment not yet refunded "
                                            "(the reconciler exits 2 past 24 h)");
        c->release_errors = sk_metrics_counter(reg, "seckill_orders_release_errors_total", NULL,
                                               "Closed orders whose Redis release failed (left to the reconciler)");
        if (pthread_create(&c->tid, NULL, closer_main, c) != 0)
                return -1;
        c->started = 1;
        return 0;
}

void cons_closer_join(void)
{
        if (g_closer.started)
                pthread_join(g_closer.tid, NULL);
        g_closer.started = 0;
}
