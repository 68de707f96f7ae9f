/* consumer.h: shared declarations of seckill-consumer (binary-local; see main.c for the
 * design overview). worker.c runs one Kafka consumer handle per thread (its modules:
 * consumer/README.md); apply.c holds the database statements of one worker. */
#pragma once
#include <signal.h>
#include <stdint.h>
#include <librdkafka/rdkafka.h>
#include "sk/conf.h"
#include "sk/db.h"
#include "sk/metrics.h"
#include "sk/msg.h"
#include "sk/outcome.h"
#include "sk/redis.h"

/* 0 run, 1 drain (finish the batch, store, commit, leave the group), 2 abandon. */
extern volatile sig_atomic_t g_stop;

typedef struct cons_opts {
        int workers;            /* --workers, threads, each its own consumer handle */
        int batch_max;          /* --batch-max, messages per poll batch */
        int batch_wait_ms;      /* --batch-wait-ms, how long a batch may wait to fill */
        int max_db_retries;     /* --max-db-retries, non-transient DB errors before DLQ */
        int lock_wait_s;        /* --lock-wait-timeout-s, session innodb_lock_wait_timeout */
        int backoff_cap_ms;     /* --backoff-cap-ms, cap of the transient retry backoff */
        int precheck_groups;    /* --precheck-groups, groups pre-checked after a decided
                                   traceId was last found (consumer/group.c) */
} cons_opts_t;

/* Metrics shared by every worker (registered once in main; atomics). */
typedef struct cons_metrics {
        sk_metric_t *consumed;          /* messages polled */
        sk_metric_t *applied;           /* orders created (CREATED outcome committed) */
        sk_metric_t *duplicates;        /* message whose trace was already decided */
        sk_metric_t *failed[5];         /* FAILED outcomes recorded by reason (sk_reason_t) */
        sk_metric_t *rolled_back[5];    /* rollback.lua runs by reason */
        sk_metric_t *rollback_errors;   /* rollback.lua still failing after retries */
        sk_metric_t *dlq;               /* DLQ copies PERSISTED */
        sk_metric_t *poison;            /* of which poison */
        sk_metric_t *db_dlq;            /* of which non-transient DB errors (alert) */
        sk_metric_t *collisions;        /* id collisions (alert) */
        sk_metric_t *db_transient;      /* transient DB errors (retried) */
        sk_metric_t *db_errors;         /* non-transient DB errors (retried, then DLQ) */
        sk_metric_t *redis_errors;      /* claim/cache/rollback Redis errors */
        sk_metric_t *fallbacks;         /* batches that fell back to one at a time */
        sk_metric_t *precheck_retries;  /* groups re-run after their INSERT met an outcome */
        sk_metric_t *batch_size;        /* histogram: messages per voucher transaction */
        sk_metric_t *txn_seconds;       /* histogram: transaction latency */
        sk_metric_t *lag;               /* gauge: messages behind the high watermark */
        sk_metric_t *paused;            /* gauge: workers with paused partitions */
        sk_metric_t *carry;             /* gauge: messages on the workers' carry lists */
} cons_metrics_t;

typedef struct cons_ctx {
        const sk_conf_t *conf;
        const cons_opts_t *opts;
        cons_metrics_t *m;
        int64_t expire_extra_ms;
} cons_ctx_t;

/** @brief Run worker @p idx until g_stop: its own consumer handle, DB and Redis
 *  connections. @returns 0 after a clean drain, non-zero on a fatal start-up error. */
int cons_worker_run(const cons_ctx_t *ctx, int idx);

/* ---- apply.c: the database side of one worker (not thread-safe; one per worker) ---- */

typedef struct cons_apply cons_apply_t;

/** Result of applying one message on its own (the fallback path). */
typedef enum {
        APPLY_OK = 0,          /* committed: outcome CREATED + stock + order + router + log */
        APPLY_DUP,             /* the outcome row already exists (decided before) */
        APPLY_NO_STOCK,        /* DB stock < deductQty (nothing written) */
        APPLY_NO_VOUCHER,      /* the voucher row does not exist (nothing written) */
        APPLY_HAS_ORDER,       /* unique (voucher_id, user_id) already taken */
        APPLY_COLLISION,       /* order id or trace id already used by another order */
        APPLY_TRANSIENT,       /* transient DB error or failpoint error; rolled back */
        APPLY_ERROR,           /* other DB error; rolled back */
        APPLY_UNKNOWN,         /* the COMMIT's outcome is unknown (DESIGN.md 16): the
                                  connection was dropped; read the outcome row */
} cons_apply_res_t;

/** @brief Orders created from now on are UNPAID with pay_deadline = creation +
 *  @p pay_timeout_s (s) on the DB's clock; with 0, a price-0 order is created PAID and a
 *  priced one UNPAID with the default window (DESIGN.md 13). Each order copies its
 *  voucher's price and currency, read once per transaction. Process-wide; call once in
 *  main() before the workers start (not thread-safe). */
void cons_apply_set_pay_timeout(int pay_timeout_s);
cons_apply_t *cons_apply_new(sk_db_t *db, int batch_max);
void cons_apply_destroy(cons_apply_t *ap);
/** @brief Forget cached statements (call before/after a reconnect). */
void cons_apply_reset(cons_apply_t *ap);

/** @brief One transaction for @p n messages of ONE voucher: multi-row CREATED outcome
 *  insert, merged decrement by the sum of deductQty, multi-row order, router and
 *  reconcile-log inserts, commit (sk_db_commit_outcome, DESIGN.md 16).
 *  @returns SK_OK (committed); SK_EAGAIN (transient, rolled back: retry the whole
 *  transaction; cons_apply_last_errno 1213 = deadlock or certification failure);
 *  SK_EUNKNOWN (the COMMIT's outcome is unknown: the connection was dropped; read the
 *  batch's outcome rows, sk_db_resolve_begin); SK_EEXIST (a duplicate key somewhere),
 *  SK_ENOTFOUND (not enough stock or no voucher row) or SK_EDB (another error): rolled
 *  back, apply one at a time. */
sk_err_t cons_apply_batch(cons_apply_t *ap, const sk_order_msg_t *const *msgs, int n,
                          char *errstr, size_t errstr_size);
/** @brief The MySQL error number behind the last failure of cons_apply_batch (0: none or
 *  not a DB error; 2013 after an unknown COMMIT). */
unsigned int cons_apply_last_errno(const cons_apply_t *ap);
/** @brief 1 if the last cons_apply_batch failed (SK_EEXIST, rolled back) because a traceId
 *  of the batch already has an outcome row: a duplicate key on tb_seckill_outcome's
 *  primary key, the consumer's idempotency check (DESIGN.md 7); 0 otherwise. */
int cons_apply_outcome_exists(const cons_apply_t *ap);
/** @brief The same for one message, classifying why it could not apply. */
cons_apply_res_t cons_apply_one(cons_apply_t *ap, const sk_order_msg_t *msg,
                                char *errstr, size_t errstr_size);
/** @brief Current DB stock of bucket @p bucket of @p voucher_id (tb_seckill_stock, no
 *  transaction). SK_ENOTFOUND if no row. */
sk_err_t cons_apply_stock(cons_apply_t *ap, int64_t voucher_id, int bucket, int64_t *stock,
                          char *errstr, size_t errstr_size);
/** @brief The outcome rows that already exist for the traceIds of @p msgs[0..n) (one
 *  SELECT ... WHERE trace_id IN (...), no transaction; DESIGN.md 7): up to n rows into
 *  @p out (caller-owned, n entries), their count in *nout, in no particular order.
 *  @returns SK_OK, SK_EAGAIN (transient), SK_EDB, SK_EINVAL (n out of 1..batch_max). */
sk_err_t cons_apply_known(cons_apply_t *ap, const sk_order_msg_t *const *msgs, int n,
                          sk_outcome_t *out, int *nout, char *errstr, size_t errstr_size);
/* ---- closer.c: the closer loop (DESIGN.md 13), one thread per process ---- */

/** @brief Register the closer's metrics in @p reg and start its thread (own DB and Redis
 *  connections; runs until g_stop). @returns 0, or -1 if the thread did not start. */
int cons_closer_start(const cons_ctx_t *ctx, sk_metrics_t *reg);
/** @brief Wait for the closer thread (after g_stop was set). No-op if not started. */
void cons_closer_join(void);
