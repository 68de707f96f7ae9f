/* sk/lease.h: snowflake worker ids leased in the database (DESIGN.md 2) and the id
 * generator they gate.
 *
 * Table tb_worker_lease (worker_id PK, holder 'host:pid:start_ms', lease_until,
 * mint_until), one row per id 0..1023 (created by ddl/0002_worker_lease.sql). Every
 * decision is a conditional UPDATE judged by the database's NOW(3): an id is free when
 * lease_until < NOW(3); a renewal (every lease/3, on a background thread with its own
 * connection, never on the request path) succeeds only while holder is still ours, and
 * raises mint_until to NOW(3) + 2/3 lease (never lowers it) and lease_until to NOW(3) +
 * lease. A renewal that finds another holder means the lease is lost: minting stops at
 * once and the thread leases again (the same id when SECKILL_WORKER_ID is set, else the
 * lowest usable id). A renewal that fails or times out (1..5 s) is tried again at once
 * on the next node of the URL (sk/lease_plan.h), while minting goes on inside the last
 * confirmed window: that window reaches lease/3 to 2/3 lease ahead (10-20 s by
 * default), so a database stall shorter than that (a Galera node evicted: 5-6 s on
 * the local stack, docs/SCALING.md) never stops the minting, and a longer one stops it
 * when the window ends (DESIGN.md 2, 16).
 *
 * Snowflake timestamps are stamped on the database's clock (the local monotonic clock
 * anchored to NOW(3) at every renewal), and the mint window is a range of timestamp
 * *values*: (previous holder's mint_until, our mint_until]. So a holder never mints an
 * id stamped after its mint_until, and the next holder never one stamped at or before
 * it, whatever the skew between hosts and the database: the ranges of two holders of an
 * id are disjoint by construction. See lease.c for the argument.
 *
 * Thread-safety: sk_idgen_next, sk_idgen_usable and sk_idgen_worker_id may be called from
 * any thread at any time between start and stop; sk_idgen_stop once, after every other
 * call returned. The event callback runs on the renewal thread. */
#pragma once
#include <stdint.h>
#include "sk/conf.h"
#include "sk/err.h"
#include "sk/metrics.h"

typedef struct sk_idgen sk_idgen_t;

/* What the renewal thread reports to the binary (common/ never logs: the binary logs
 * each event once, DESIGN.md 2 "logged once each"). */
typedef enum {
        SK_IDGEN_EV_LOST = 1,        /* another holder has the id: minting stopped */
        SK_IDGEN_EV_ACQUIRED,        /* leased again after a loss (maybe another id) */
        SK_IDGEN_EV_RENEW_FAILED,    /* first failed renewal of a run (DB unreachable) */
        SK_IDGEN_EV_RENEW_RECOVERED, /* first successful renewal after failed ones */
} sk_idgen_event_t;

/** @brief Event callback: @p worker_id is the id concerned, @p detail a short reason
 *  (borrowed for the call). Runs on the renewal thread, no lock held; must not call
 *  sk_idgen_stop. */
typedef void (*sk_idgen_event_fn)(void *arg, sk_idgen_event_t ev, int worker_id,
                                  const char *detail);

typedef struct sk_idgen_opts {
        /* Registry for seckill_worker_lease_held (gauge: 1 while held with the mint
         * window open, i.e. ids can be minted; refreshed every lease/3),
         * seckill_worker_id (gauge),
         * seckill_worker_lease_lost_total, seckill_worker_lease_reacquired_total and
         * seckill_worker_lease_renew_errors_total; registered during start (the
         * registry's start-up rule). NULL = no metrics. Borrowed; must outlive @p g. */
        sk_metrics_t *metrics;
        sk_idgen_event_fn on_event;  /* NULL = no callback */
        void *event_arg;
        /* Test hook: added to every timestamp this generator reads, as if its host's
         * notion of the database's time were off by that much (ms, may be negative).
         * The mint bounds still hold, only availability suffers. 0 in production. */
        int64_t test_clock_offset_ms;
        /* The holder's role written into its row (DESIGN.md 6): "front", "consumer",
         * "admin" or "reconciler"; NULL = "admin". A row whose role is front is leased
         * again only once lease_until + D < NOW(3) (D = 2 x conf->kafka_delivery_timeout_ms
         * + 1 s, DESIGN.md 2, 12), whoever takes it. */
        const char *role;
} sk_idgen_opts_t;

/** @brief Lease conf->worker_id (or, when -1, the lowest id that is free and can mint
 *  at once, else the lowest free one whose previous mint_until is at most one lease
 *  ahead; an id whose mint_until is further ahead (a clock step) is skipped) in
 *  conf->mysql's tb_worker_lease, lease period conf->worker_lease_ms (ms), and start
 *  the renewal thread (its own DB connection). @p conf and @p opts are read, not kept
 *  (except opts->metrics and opts->event_arg, borrowed). Minting opens once the
 *  database clock has passed the previous holder's mint_until, so the first
 *  sk_idgen_next() calls may answer SK_EAGAIN (never when the id's old mint_until was
 *  already past).
 *  @returns owned generator (sk_idgen_stop()), or NULL with *err = SK_EEXIST (the
 *  requested id is held by another process: the binaries exit 2), SK_EAGAIN (database
 *  unreachable or no usable id), SK_EDB (tb_worker_lease missing: run `db migrate`;
 *  other DB errors), SK_EINVAL (bad conf), SK_ENOMEM. */
sk_idgen_t *sk_idgen_start_opts(const sk_conf_t *conf, const sk_idgen_opts_t *opts,
                                sk_err_t *err, char *errstr, size_t errstr_size);
/** @brief sk_idgen_start_opts with no metrics, no callback, no test hook, role admin. */
sk_idgen_t *sk_idgen_start(const sk_conf_t *conf, sk_err_t *err, char *errstr, size_t errstr_size);
/** @brief Mint one id (stamped on the database's clock, inside the mint window).
 *  @returns SK_OK, or SK_EAGAIN when the lease is not usable now (waiting for the
 *  previous holder's mint_until, lost, renewals failing past mint_until). */
sk_err_t sk_idgen_next(sk_idgen_t *g, int64_t *out, char *errstr, size_t errstr_size);
/** @brief 1 if the lease is held and the stamp clock is inside the mint window now
 *  (for /readyz), else 0. */
int sk_idgen_usable(sk_idgen_t *g);
/** @brief The leased worker id (it may change after a loss when conf->worker_id was -1). */
int sk_idgen_worker_id(const sk_idgen_t *g);
/** @brief The holder string of this generator's lease rows ("host:pid:start_ms", plain
 *  characters; the same after a re-lease). Borrowed, valid until sk_idgen_stop. */
const char *sk_idgen_holder(const sk_idgen_t *g);
/** @brief Close the mint window, stop the renewal thread and release the lease
 *  (lease_until set in the past, only if holder is still ours; mint_until stays for the
 *  next holder). Frees @p g. NULL ok. */
void sk_idgen_stop(sk_idgen_t *g);
/** @brief sk_idgen_stop, and @p quiet = 1 says this process will send nothing more to
 *  Kafka or Redis (a front whose purchases are all settled and whose producers are
 *  destroyed): the released lease_until is set D further back, so the id is free at once
 *  and no drain (DESIGN.md 12 c) waits for this holder's ack. NULL ok. */
void sk_idgen_stop_quiet(sk_idgen_t *g, int quiet);
