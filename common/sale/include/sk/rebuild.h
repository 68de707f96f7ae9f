/* sk/rebuild.h: preheat and rebuild of a voucher's Redis admission state (DESIGN.md 4,
 * 8 "rebuild" row). Shared by `seckill-admin voucher preheat [--rebuild-from-db]` and
 * `seckill-reconciler --repair`. The voucher's rows, lock, set-status and meta reset are
 * in sk/voucher.h (included here); the Redis writes in sk/vstate.h; the voucher's
 * partitions in sk/vkafka.h.
 *
 * Both operations hold the voucher's advisory lock (sk_voucher_lock, a tb_lock row;
 * DESIGN.md 16), so a preheat, a rebuild and a status change of the same voucher never
 * interleave; the holder re-checks (and renews) the row before each Redis write chunk and
 * stops, writing nothing more, once it is lost. Redis writes follow
 * every write with PEXPIREAT key E NX then PEXPIREAT key E GT, E = end_ms + reconcile
 * window + 1 day (DESIGN.md 4); the users hash is written in chunks (sk/vstate.h); meta
 * is always written last.
 *
 * Functions open their own DB, Redis (and Kafka) connections from @p conf unless they
 * take them as arguments; not thread-safe beyond that. They never log or exit. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "sk/conf.h"
#include "sk/db.h"
#include "sk/err.h"
#include "sk/redis.h"
#include "sk/voucher.h"

/** What sk_voucher_preheat / sk_rebuild_voucher did or found. */
typedef struct sk_rebuild_report {
        int64_t stock;          /* stock written to Redis (DB stock), -1 if none */
        int64_t users;          /* user entries written to the users hash */
        int status;             /* meta status written last (from the DB), -1 if none */
        int prev_status;        /* meta status before we started, -1 = meta or field missing */
        int64_t deducts;        /* DEDUCT entries seen in the trace hash (rebuild) */
        int64_t undecided;      /* of those, without an outcome row at the last check */
        int64_t fenced_failed;  /* FAILED front_rollback outcomes recorded by the rebuild */
        int64_t rolled_back;    /* pending rollbacks (FAILED without T:r) run by the rebuild */
        int64_t lag;            /* sum over the voucher's partitions of target - committed
                                   offset at the last check (rebuild; sk/vkafka.h) */
        int64_t waited_ms;      /* time spent waiting for Kafka and outcomes (rebuild) */
        int rebuilt;            /* preheat: 1 if it ran the rebuild procedure instead */
        char detail[256];       /* human-readable reason when not done (SK_EAGAIN) */
} sk_rebuild_report_t;

/** @brief Preheat (DESIGN.md 8 "Preheat writes meta last, and never overwrites a stock
 *  that has been sold down"): under the voucher's lock (waited for up to 5 s): HSET
 *  users for the DB's active buyers (userId -> trace_id of their order; nothing is
 *  deleted; in chunks), then one script: stock = DB stock with SET NX semantics (an
 *  existing stock key equal to the DB stock is kept; a different one is refused), then
 *  meta LAST (begin_ms, end_ms, status from the DB), each key with the expiry of
 *  DESIGN.md 4.
 *  When the stock key is missing and the voucher could have sales anywhere (its meta or
 *  trace hash exists; sk_voucher_db_sales: DB stock moved, orders, outcome or
 *  reconcile-log rows; or a message of it waits unconsumed on its partitions,
 *  sk_vkafka_pending, or they could not be read within @p wait_ms), a fresh SET
 *  could re-admit purchases in flight: the rebuild procedure (sk_rebuild_voucher) runs
 *  instead and rep->rebuilt = 1 (DESIGN.md 8, last sentence of the rebuild row).
 *  @returns SK_OK; SK_ENOTFOUND (no such voucher in the DB); SK_EEXIST (the stock key
 *  holds another value: sold down or drifted; meta and stock not written; use the
 *  rebuild); SK_EAGAIN (lock held by someone else, a transient error, or the rebuild's
 *  wait timed out); SK_EREDIS / SK_EDB / SK_EKAFKA otherwise. Reason in errstr.
 *  @p wait_ms: the rebuild's wait when it runs (<= 0: 2 x delivery timeout). */
sk_err_t sk_voucher_preheat(const sk_conf_t *conf, int64_t voucher_id, int wait_ms,
                            sk_rebuild_report_t *rep, char *errstr, size_t errstr_size);

/** @brief The rebuild procedure of DESIGN.md 8, for one voucher:
 *   1. the voucher's lock (sk_voucher_lock, waited for up to 5 s), re-checked before
 *      the pause, on every round of the wait, before every pending rollback or FAILED
 *      record, and before every Redis write chunk of step 4 (a lost lock: SK_EAGAIN,
 *      nothing more written, the pause left to the new holder);
 *   2. pause admission: HSET meta status 4 (meta is created with only the status when
 *      missing), remembering the previous status; deduct.lua then answers 10013;
 *   3. wait up to @p wait_ms (<= 0: 2 x conf->kafka_delivery_timeout_ms) until both
 *      hold at once (Kafka is checked before the outcome table):
 *      a. on the partitions that carry this voucher's messages (sk/vkafka.h), the
 *         group's committed offsets have reached the high watermarks sampled after
 *         the pause (a missing topic means nothing is in flight); other vouchers'
 *         backlogs never hold the rebuild;
 *      b. every DEDUCT entry "T" of the trace hash is decided and its rollback has
 *         written its T:r: a FAILED outcome without T:r gets its pending rollback run
 *         now (mode reconciler, the flags of the stored reason; sold_out with the clamp
 *         protocol of DESIGN.md 4), a DEDUCT without outcome whose fence T:r exists gets
 *         FAILED front_rollback recorded (DESIGN.md 7), any other DEDUCT without
 *         outcome is undecided;
 *      if the deadline passes first, the previous status is put back (the field is
 *      removed when there was none) and SK_EAGAIN is returned with rep->detail;
 *   4. with the voucher row read FOR UPDATE (no consumer's stock UPDATE lands until
 *      the end): the DB's active buyers (userId -> trace_id) are written in chunks to a
 *      scratch hash, then one script swaps it in for users, SET stock = DB stock, and
 *      writes meta = DB begin_ms, end_ms, status last (which lifts the pause), each key
 *      with the expiry of DESIGN.md 4;
 *   5. release the lock row.
 *  Never rolls anything back because consumers are behind: it waits, then reports.
 *  @p rep (may be NULL) receives the figures. @returns SK_OK; SK_ENOTFOUND (no such
 *  voucher in the DB); SK_EAGAIN (lock busy, deadline passed, transient error: exit 2);
 *  SK_EINVAL (an outcome row collides with a DEDUCT's ids, or a DEDUCT entry is not a
 *  valid message: needs a human); SK_EDB / SK_EREDIS / SK_EKAFKA otherwise. */
sk_err_t sk_rebuild_voucher(const sk_conf_t *conf, int64_t voucher_id, int wait_ms,
                            sk_rebuild_report_t *rep, char *errstr, size_t errstr_size);

/** @brief Same as sk_rebuild_voucher on caller-owned connections @p db (its session
 *  may be in any state: the lock has its own connection) and @p r. */
sk_err_t sk_rebuild_voucher_with(const sk_conf_t *conf, sk_db_t *db, sk_redis_t *r,
                                 int64_t voucher_id, int wait_ms, sk_rebuild_report_t *rep,
                                 char *errstr, size_t errstr_size);
