/* rc_ctx.h: what every step of a reconciliation pass shares (rc_ctx.c): the run's options,
 * the per-voucher figures, the pass context (connections, stop flag, run lock), and the
 * helpers every step calls (the voucher's first problem, the stop check before every
 * write, the key-expiry extra, the exit code of a voucher's figures). The bottom of the
 * reconciler: reconcile.h (the pass) and rc_pass.h (its steps) build on it.
 * Single-threaded; the caller owns every connection and the stop flag. */
#pragma once
#include <signal.h>
#include <stdint.h>
#include "sk/conf.h"
#include "sk/db.h"
#include "sk/model.h"
#include "sk/redis.h"

typedef struct rc_opts {
        int64_t voucher_id;     /* --voucher; 0 = every voucher in the window */
        int window_hours;       /* --window-hours (default SECKILL_RECONCILE_WINDOW_HOURS) */
        int grace_s;            /* --grace-seconds: judge only trace entries older than this */
        int max_redrive;        /* --max-redrive: counted failed re-drives before "lost" */
        int repair;             /* --repair: rebuild drifted vouchers */
        int drift_threshold;    /* --drift-threshold: oversell rebuilt without --repair
                                 * when a bucket's excess exceeds it (DESIGN.md 14) */
        int json;               /* --json */
} rc_opts_t;

/** Per-voucher figures (the table's columns and the JSON fields). */
typedef struct rc_vstat {
        int64_t voucher_id;
        int64_t entries;        /* DEDUCT entries in the trace hash */
        int64_t young;          /* younger than the grace period: not judged yet */
        int64_t checked;        /* judged */
        int64_t consistent;
        int64_t redriven;       /* re-published this pass (PERSISTED) */
        int64_t rolled_back;    /* rollback.lua run by this pass */
        int64_t inconsistent;   /* status 3 / alerts */
        int64_t drift;          /* DB rows whose trace is gone + Redis stock/users drift */
        int64_t waiting;        /* re-drives waiting for consumers */
        int64_t dlq;            /* undecided traces found in the DLQ */
        int64_t dlq_loop;       /* of dlq: already re-driven by an earlier pass and back in
                                 * the DLQ -- stuck in the DLQ re-drive loop (DESIGN.md 8) */
        int64_t collisions;     /* outcome rows whose ids differ from the DEDUCT */
        int64_t not_persisted;  /* re-drives Kafka did not persist */
        int64_t failed_counted; /* claim.lua failed this pass */
        int64_t lost;           /* FAILED (lost) recorded this pass */
        int64_t fenced;         /* FAILED (front_rollback) recorded this pass */
        int64_t log_marked;     /* reconcile-log DEDUCT rows set to 4 this pass */
        int64_t drift_rows;     /* CREATED outcomes whose trace is gone */
        int64_t created_restored; /* of inconsistent: CREATED outcome + RESTORE fence */
        int64_t released;       /* release.lua run for cancelled/closed orders (rc_release.c) */
        int64_t probing_settled;   /* probing T found in bucket k: T:h settled to k */
        int64_t probing_rolled_back; /* probing T found nowhere: fenced everywhere, home step */
        int64_t stray_restored;    /* DEDUCTs in a bucket other than their outcome's, restored */
        int64_t home_steps;        /* home.lua run for T:r / T:x whose home still named T */
        int nbuckets;              /* buckets of the voucher (1..16) */
        struct rc_bucket_drift {
                int judged;        /* 1 when stock was read stable and compared */
                int missing;       /* the stock key is missing */
                int64_t redis;     /* Redis stock of the bucket */
                int64_t expected;  /* DB stock of the bucket - undecided (held) units */
                int64_t drift;     /* redis - expected: < 0 undersell, > 0 oversell */
        } bk[SK_BUCKETS_MAX];
        int redis_ok;           /* Redis stock/users judged equal to the DB (or rebuilt) */
        int stock_drift;        /* Redis stock != DB stock - held */
        int users_drift;        /* users hash != active buyers + held users */
        int rebuilt;            /* --repair (or a drift mark) rebuilt it */
        int drift_marks;        /* pending drift marks read this pass (DESIGN.md 16 (d)) */
        int meta_reset;         /* meta status 4 with nobody holding the lock: reset */
        int expiry_alert;       /* undecided traces and the trace key expires within 6 h */
        int errors;             /* the voucher could not be fully checked */
        char note[256];         /* first problem, for humans */
} rc_vstat_t;

typedef struct rc_ctx {
        const sk_conf_t *conf;
        rc_opts_t opts;
        sk_db_t *db;                    /* work connection (borrowed) */
        sk_redis_t *r;                  /* borrowed */
        volatile sig_atomic_t *stop;    /* non-zero: stop before the next write */
        int (*lock_ok)(void *arg);      /* 1 while the run's advisory lock is held; asked
                                         * before every write of the pass */
        void *lock_arg;
        int lock_lost;                  /* set (for good) when lock_ok said 0 */
        /* Lazily created per pass. */
        struct rc_producer *prod;
        int dlq_loaded;
        int dlq_err;                    /* the DLQ could not be read: no failure is counted */
        int64_t *dlq_ids;
        size_t ndlq;
} rc_ctx_t;

/** @brief Keep the first problem of the voucher for the table: @p fmt with one %s for
 *  @p what (cut to 160 bytes). */
void rc_note(rc_vstat_t *st, const char *fmt, const char *what);

/** @brief 1 when the pass must stop now: a stop signal, or the run lock lost (its
 *  tb_lock row no longer names this run or could not be confirmed, DESIGN.md 16;
 *  ctx->lock_lost is set and logged once). Called before every Redis, Kafka or DB write
 *  of the pass so that a pass without its lock acts no more; each call renews the row. */
int rc_must_stop(rc_ctx_t *ctx);

/** @brief Reconcile window + 1 day in ms (DESIGN.md 4 key expiry). */
int64_t rc_expire_extra_ms(const rc_ctx_t *ctx);

/** @brief The front's request deadline for @p conf's delivery timeout, in ms: 2 x
 *  SECKILL_KAFKA_DELIVERY_TIMEOUT_MS + 1 s (DESIGN.md 8). A front runs no deduct and
 *  answers nothing past it, so a trace entry (ts = its traceId's snowflake time, the
 *  request's arrival, DESIGN.md 4 v5) older than it is no longer being decided by a
 *  front: the floor of --grace-seconds and of the probing grace. */
int64_t rc_request_deadline_ms(const sk_conf_t *conf);

/** @brief 2 if @p st has anything unresolved, 1 if it repaired something, else 0. */
int rc_vstat_exit(const rc_vstat_t *st);
