/* seckill-consumer: the order-creating workers of DESIGN.md 1, 5-8.
 *
 * Design
 * ------
 * Threads: `--workers N` threads, each with its OWN librdkafka high-level consumer
 * handle in the same group (so the group coordinator spreads partitions over them
 * exactly as over separate processes; several processes in one group are equally
 * safe), its own MySQL connection and its own Redis connection. No dispatcher: a
 * partition is served by exactly one thread, which keeps one voucher's messages (key =
 * voucherId) in order and makes per-partition offset tracking local to that thread.
 * Only the metrics registry (atomics) and the stop flag are shared.
 *
 * Per poll batch (worker.c; its modules: consumer/README.md): parse (poison,
 * including a deductQty other than 1 -> DLQ with the reason in a header, settled once
 * the DLQ copy is PERSISTED), group by voucher; per group (group.c): copies of a
 * traceId inside the batch settle with the first copy, claim.lua `consume` for the
 * traceIds (claimer.c; RESTORED -> FAILED front_rollback), one SELECT ... IN for the
 * traceIds that already have an outcome (followed, ids compared: decide.c) while
 * decided traceIds are being seen (--precheck-groups; otherwise the outcome INSERT
 * finds them and the pre-check runs then), then ONE transaction for the rest
 * (apply.c): the voucher's price read once, multi-row CREATED outcome insert, merged
 * conditional decrement by k, multi-row order/router/reconcile-log inserts, commit.
 * Only a real conflict (a duplicate that appeared meanwhile, short stock, another
 * error) rolls back and applies the group one message at a time, which sorts out
 * duplicates (follow the stored outcome; id mismatch = collision -> DLQ + alert),
 * has_order / sold_out (FAILED outcome committed first, then rollback.lua with that
 * reason's flags; sold_out clamps Redis stock to the DB stock read, after bumping the
 * bucket row's version, in a second transaction held until rollback.lua answered), order-id collisions (DLQ +
 * alert) and non-transient DB errors (--max-db-retries, then DLQ with the error).
 * Transient DB errors pause the worker's partitions, keep polling, back off and retry
 * the whole transaction from BEGIN (flow.c); never a Redis rollback.
 * After the batch: offsets stored per partition = lowest unsettled offset (else last
 * settled + 1), never below the group's committed offset read on assignment
 * (offsets.c), committed by auto-commit (only stored offsets are committed), then
 * the new orders are cached in Redis (ordercache.c, `<prefix>:order:<id>`, EX 60).
 *
 * Closer (closer.c, DESIGN.md 13): one more thread closes UNPAID orders past their
 * pay_deadline every SECKILL_CLOSE_INTERVAL_MS and releases their units (DB, then
 * release.lua); new orders are UNPAID with pay_deadline = creation +
 * SECKILL_PAY_TIMEOUT_S (PAID when 0).
 *
 * Shutdown: SIGTERM/SIGINT set g_stop = 1: each worker finishes its batch (without
 * waiting in retries), stores offsets, commits synchronously, closes the consumer
 * (leaves the group) and the process exits 0. A second signal exits at once (1).
 *
 * Options (defaults < SECKILL_* environment < flags): the common ones of sk/conf.h plus
 * the table OPTS below (--workers, --batch-max, --batch-wait-ms, --max-db-retries,
 * --lock-wait-timeout-s, --backoff-cap-ms, --precheck-groups; --help shows each default). Metrics on
 * SECKILL_METRICS_ADDR (`off` = none). Exit: 0 clean stop, 1 runtime failure, 2 bad configuration. */
#include <pthread.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "sk/failpoint.h"
#include "sk/backoff.h"
#include "sk/clock.h"
#include "sk/kafka.h"
#include "sk/log.h"
#include "sk/metrics_http.h"
#include "sk/redis.h"
#include "sk/signals.h"
#include "consumer.h"

volatile sig_atomic_t g_stop;

/* A metric of cons_metrics_t: where it goes, its kind, name and help; histograms with
 * their bucket bounds. */
typedef struct cmetric {
        size_t off;             /* offsetof(cons_metrics_t, ...) */
        char kind;              /* 'c' counter, 'g' gauge, 'h' histogram */
        const char *name, *help;
        const double *bounds;
        size_t nbounds;
} cmetric_t;

#define CM(f) offsetof(cons_metrics_t, f)
static const double size_bounds[] = { 1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000 };
static const double txn_bounds[] = { 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5,
                                     5, 10 };
/* In /metrics order: HEAD, the counters by reason, then TAIL. */
static const cmetric_t HEAD[] = {
        { CM(consumed), 'c', "consumer_messages_consumed_total",
          "Messages polled from the order topic", NULL, 0 },
        { CM(applied), 'c', "consumer_orders_applied_total",
          "Orders created (CREATED outcome committed)", NULL, 0 },
        { CM(duplicates), 'c', "consumer_duplicates_total",
          "Messages whose traceId was already decided", NULL, 0 },
};
static const cmetric_t TAIL[] = {
        { CM(rollback_errors), 'c', "consumer_rollback_errors_total",
          "rollback.lua still failing after retries (left to the reconciler)", NULL, 0 },
        { CM(dlq), 'c', "consumer_dlq_total", "Messages copied to the DLQ (PERSISTED)", NULL, 0 },
        { CM(poison), 'c', "consumer_poison_total", "Poison messages (not a valid order message)", NULL, 0 },
        { CM(db_dlq), 'c', "consumer_db_error_dlq_total",
          "ALERT: messages sent to the DLQ after non-transient DB errors", NULL, 0 },
        { CM(collisions), 'c', "consumer_id_collisions_total",
          "ALERT: id collisions (outcome/order ids disagree with the message)", NULL, 0 },
        { CM(db_transient), 'c', "consumer_db_transient_errors_total",
          "Transient DB errors (retried from BEGIN)", NULL, 0 },
        { CM(db_errors), 'c', "consumer_db_errors_total",
          "Non-transient DB errors (retried, then DLQ)", NULL, 0 },
        { CM(redis_errors), 'c', "consumer_redis_errors_total",
          "Redis errors (claim, rollback, order cache)", NULL, 0 },
        { CM(fallbacks), 'c', "consumer_batch_fallbacks_total",
          "Voucher batches applied one message at a time", NULL, 0 },
        { CM(precheck_retries), 'c', "consumer_precheck_retries_total",
          "Voucher groups whose outcome INSERT met a decided traceId without a pre-check "
          "(rolled back, pre-checked, run again)", NULL, 0 },
        { CM(batch_size), 'h', "consumer_batch_size", "Messages per order transaction", size_bounds,
          sizeof(size_bounds) / sizeof(size_bounds[0]) },
        { CM(txn_seconds), 'h', "consumer_txn_seconds", "Order transaction latency", txn_bounds,
          sizeof(txn_bounds) / sizeof(txn_bounds[0]) },
        { CM(lag), 'g', "consumer_lag_messages",
          "Messages between the consumers' positions and the high watermarks", NULL, 0 },
        { CM(paused), 'g', "consumer_paused_workers",
          "Workers with paused partitions (retrying a transient error)",
          NULL, 0 },
        { CM(carry), 'g', "consumer_carry_messages",
          "Messages kept on the workers' carry lists while partitions are paused", NULL, 0 },
};

static void register_rows(sk_metrics_t *reg, cons_metrics_t *m, const cmetric_t *rows, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                const cmetric_t *r = &rows[i];
                sk_metric_t **dst = (sk_metric_t **)(void *)((char *)m + r->off);

                if (r->kind == 'h')
                        *dst = sk_metrics_hist(reg, r->name, NULL, r->help, r->bounds, r->nbounds);
                else if (r->kind == 'g')
                        *dst = sk_metrics_gauge(reg, r->name, NULL, r->help);
                else
                        *dst = sk_metrics_counter(reg, r->name, NULL, r->help);
        }
}

static void register_metrics(sk_metrics_t *reg, cons_metrics_t *m)
{
        static const sk_reason_t reasons[] = { SK_REASON_SOLD_OUT, SK_REASON_HAS_ORDER,
                                               SK_REASON_LOST, SK_REASON_FRONT_ROLLBACK };
        char labels[64];
        size_t i;

        register_rows(reg, m, HEAD, sizeof(HEAD) / sizeof(HEAD[0]));
        for (i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++) {
                snprintf(labels, sizeof(labels), "reason=\"%s\"", sk_reason_str(reasons[i]));
                m->failed[reasons[i]] = sk_metrics_counter(reg, "consumer_failed_total", labels,
                                                           "FAILED outcomes recorded, by reason");
                m->rolled_back[reasons[i]] = sk_metrics_counter(reg, "consumer_rolled_back_total", labels,
                                                                "rollback.lua runs, by reason");
        }
        m->failed[SK_REASON_NONE] = sk_metrics_counter(reg, "consumer_failed_total", "reason=\"unknown\"",
                                                       "FAILED outcomes recorded, by reason");
        m->rolled_back[SK_REASON_NONE] = sk_metrics_counter(reg, "consumer_rolled_back_total",
                                                            "reason=\"unknown\"", "rollback.lua runs, by reason");
        register_rows(reg, m, TAIL, sizeof(TAIL) / sizeof(TAIL[0]));
}

typedef struct thr {
        pthread_t tid;
        const cons_ctx_t *ctx;
        int idx;
        int rc;
} thr_t;

static void *thread_main(void *arg)
{
        thr_t *t = arg;
        t->rc = cons_worker_run(t->ctx, t->idx);
        if (t->rc)
                g_stop = 1; /* a worker that cannot start stops the process: exit 1 */
        return NULL;
}

/* Start @p opts->workers threads and join them. @returns 1 if one could not start or
 * ended with an error, else 0. */
static int run_workers(const cons_ctx_t *ctx, cons_opts_t *opts)
{
        thr_t *thr = calloc((size_t)opts->workers, sizeof(*thr));
        int i, failed = 0;

        if (!thr)
                return 1;
        for (i = 0; i < opts->workers; i++) {
                thr[i].ctx = ctx;
                thr[i].idx = i;
                if (pthread_create(&thr[i].tid, NULL, thread_main, &thr[i]) != 0) {
                        SK_LOG(SK_ERROR, "thread_create_failed", "worker=%d", i);
                        g_stop = 1;
                        opts->workers = i;
                        failed = 1;
                        break;
                }
        }
        for (i = 0; i < opts->workers; i++) {
                pthread_join(thr[i].tid, NULL);
                if (thr[i].rc)
                        failed = 1;
        }
        free(thr);
        return failed;
}

/* Serves /metrics on conf->metrics_addr unless it is "off". A failed listen is logged
 * and not fatal (the workers still run). @returns the server, or NULL. */
static void *start_metrics_http(sk_metrics_t *reg, const sk_conf_t *conf)
{
        char errstr[512];
        void *srv;

        if (strcmp(conf->metrics_addr, "off") == 0)
                return NULL;
        srv = sk_metrics_http_start(reg, conf->metrics_addr, errstr, sizeof(errstr));
        if (!srv)
                SK_LOG(SK_WARN, "metrics_listen_failed", "addr=%s err=\"%s\"", conf->metrics_addr, errstr);
        else
                SK_LOG(SK_INFO, "metrics_listening", "addr=%s", conf->metrics_addr);
        return srv;
}

/* Creates the order topic and its DLQ if missing (DESIGN.md 5: the broker does not
 * auto-create them), retrying with backoff: without end while the error is transient,
 * else up to 6 attempts. @returns 0 topics exist, 1 gave up, -1 g_stop was set while
 * waiting. */
static int ensure_topics(const sk_conf_t *conf)
{
        char errstr[512];
        uint64_t rng = sk_backoff_seed();
        int attempt = 0;

        for (;;) {
                sk_err_t err = sk_kafka_ensure_topics(conf, 10000, errstr, sizeof(errstr));
                if (err == SK_OK)
                        return 0;
                SK_LOG(SK_WARN, "ensure_topics_failed", "attempt=%d err=%s reason=\"%s\"", attempt,
                       sk_err2str(err), errstr);
                if (err != SK_EAGAIN && attempt >= 5)
                        return 1;
                sk_sleep_ms(sk_backoff_ms(attempt++, 200, 5000, &rng), (volatile int *)&g_stop);
                if (g_stop)
                        return -1;
        }
}

/* The consumer's own options (DESIGN.md 5-8): each default is written here only;
 * sk_conf_load applies it and --help shows it. */
static cons_opts_t opts;
static const sk_opt_t OPTS[] = {
        SK_OPT_I("workers", "SECKILL_CONSUMER_WORKERS", &opts.workers, 1, 64, 1, NULL,
                 "worker threads, each its own consumer in the group"),
        SK_OPT_I("batch-max", "SECKILL_BATCH_MAX", &opts.batch_max, 1, 5000, 500, NULL,
                 "messages per poll batch; 1 = one order per transaction"),
        SK_OPT_I("batch-wait-ms", "SECKILL_BATCH_WAIT_MS", &opts.batch_wait_ms, 0, 10000, 5, NULL,
                 "how long a batch waits to fill after its first message"),
        SK_OPT_I("max-db-retries", "SECKILL_MAX_DB_RETRIES", &opts.max_db_retries, 0, 1000, 5, NULL,
                 "non-transient DB errors tolerated per message before the DLQ"),
        SK_OPT_I("lock-wait-timeout-s", "SECKILL_LOCK_WAIT_TIMEOUT_S", &opts.lock_wait_s, 1, 120, 3, NULL,
                 "session innodb_lock_wait_timeout in seconds; a silent DB node is given up 1 s later"),
        SK_OPT_I("backoff-cap-ms", "SECKILL_BACKOFF_CAP_MS", &opts.backoff_cap_ms, 10, 600000, 2000, NULL,
                 "cap of the transient-error retry backoff (full jitter)"),
        SK_OPT_I("precheck-groups", "SECKILL_PRECHECK_GROUPS", &opts.precheck_groups, 0, 1000000, 64, NULL,
                 "voucher groups pre-checked for decided traceIds after one was last found "
                 "(0 = never before the outcome INSERT)"),
};

/* Options, then the Redis check (DESIGN.md 4: >= 7.0, noeviction); logs, signals.
 * @returns -1 to go on, else the exit status (0 after --help, 2 bad configuration). */
static int configure(int argc, char **argv, sk_conf_t *conf)
{
        int argi = 0, rc;

        rc = sk_conf_load_bin(conf, SK_BIN_CONSUMER, argc, argv, "seckill-consumer", NULL, OPTS,
                              SK_NOPTS(OPTS), &argi);
        if (rc != 0)
                return rc == 1 ? 0 : 2;
        if (sk_redis_startup_check(&conf->redis, "seckill-consumer") != 0)
                return 2;
        if (argi < argc) {
                fprintf(stderr, "seckill-consumer: unexpected argument '%s'\n", argv[argi]);
                return 2;
        }
        sk_log_init("consumer");
        sk_log_level = conf->log_level;
        /* SIGINT/SIGTERM: g_stop = 1 (drain); a second one exits 1 at once. */
        (void)sk_signals_install(&g_stop, SK_SIGNALS_SECOND_EXITS | SK_SIGNALS_IGNORE_PIPE,
                                 "seckill-consumer: second signal, exiting now\n");
        sk_db_library_init();
        return -1;
}

int main(int argc, char **argv)
{
        static sk_conf_t conf;
        static sk_metrics_t *reg;
        static cons_metrics_t metrics;
        cons_ctx_t ctx;
        void *srv = NULL;
        int rc, failed = 0;

        if ((rc = configure(argc, argv, &conf)) >= 0)
                return rc;
        reg = sk_metrics_new();
        if (!reg) {
                SK_LOG(SK_ERROR, "startup_failed", "what=metrics");
                return 1;
        }
        register_metrics(reg, &metrics);
        srv = start_metrics_http(reg, &conf);

        if ((rc = ensure_topics(&conf)) != 0) {
                rc = rc > 0 ? 1 : 0;    /* -1: stop requested while waiting, exit 0 */
                goto done;
        }

        ctx.conf = &conf;
        ctx.opts = &opts;
        ctx.m = &metrics;
        ctx.expire_extra_ms = sk_expire_extra_ms(conf.reconcile_window_hours);
        sk_failpoint_log_start();
        SK_LOG(SK_INFO, "starting", "workers=%d batch_max=%d batch_wait_ms=%d max_db_retries=%d "
               "lock_wait_timeout_s=%d precheck_groups=%d topic=%s dlq=%s group=%s", opts.workers,
               opts.batch_max, opts.batch_wait_ms, opts.max_db_retries, opts.lock_wait_s,
               opts.precheck_groups, conf.topic, conf.dlq_topic, conf.group_id);
        /* The order lifecycle (DESIGN.md 13): new orders UNPAID with a deadline, and the
         * closer loop that closes them past it. */
        cons_apply_set_pay_timeout(conf.pay_timeout_s);
        if (cons_closer_start(&ctx, reg) != 0) {
                SK_LOG(SK_ERROR, "thread_create_failed", "what=closer");
                rc = 1;
                goto done;
        }
        failed = run_workers(&ctx, &opts);
        g_stop = g_stop ? g_stop : 1; /* every worker has stopped: so does the closer */
        cons_closer_join();
        rc = failed ? 1 : 0;
        SK_LOG(SK_INFO, "stopped", "rc=%d applied=%lld dlq=%lld", rc,
               (long long)sk_metric_value(metrics.applied), (long long)sk_metric_value(metrics.dlq));
done:
        if (rc) {
                g_stop = g_stop ? g_stop : 1;
                cons_closer_join();
        }
        if (srv)
                sk_metrics_http_stop(srv);
        sk_metrics_destroy(reg);
        return rc;
}
