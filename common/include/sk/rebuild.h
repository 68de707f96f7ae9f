/* sk/rebuild.h: a voucher's DB row, preheat and rebuild of its Redis admission state
 * (DESIGN.md 4, 8 "rebuild" row). Shared by `seckill-admin voucher preheat
 * [--rebuild-from-db]` and `seckill-reconciler --repair`.
 *
 * Both operations hold the voucher's advisory lock, GET_LOCK
 * "seckill:voucher:<db>:<prefix>:<id>" (sk_rebuild_lock_name), so a preheat, a rebuild
 * and a status change of the same voucher never interleave; a reconciler that finds
 * meta status 4 while nobody holds that lock knows a rebuild died half-way.
 *
 * Redis writes go through one small inline Lua script (EVAL, atomic), which follows
 * every write with PEXPIREAT key E NX then PEXPIREAT key E GT,
 * E = end_ms + sk_expire_extra_ms(window) (DESIGN.md 4). Meta is always written last.
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

/** One row of tb_seckill_voucher, times as ms since the Unix epoch (UTC). */
typedef struct sk_voucher_row {
        int64_t voucher_id;
        int64_t init_stock;     /* units */
        int64_t stock;          /* units remaining in the DB (the book of record) */
        int64_t begin_ms;       /* sale window start, ms since epoch */
        int64_t end_ms;         /* sale window end, ms since epoch */
        int status;             /* 1 on sale, 2 offline, 3 expired, 4 paused */
} sk_voucher_row_t;

/** @brief Read the voucher row of @p voucher_id (times converted without the 2038 limit
 *  of UNIX_TIMESTAMP). @p for_update: append FOR UPDATE (inside a transaction).
 *  @returns SK_OK, SK_ENOTFOUND, or the classified DB error (SK_EAGAIN transient). */
sk_err_t sk_voucher_get(sk_db_t *db, int64_t voucher_id, int for_update,
                        sk_voucher_row_t *out, char *errstr, size_t errstr_size);

/** @brief The advisory-lock name of a voucher: "seckill:voucher:<db>:<prefix>:<id>"
 *  into @p buf (@p size >= 256 is always enough). @returns the length. */
size_t sk_rebuild_lock_name(char *buf, size_t size, const sk_conf_t *conf, int64_t voucher_id);

/** What sk_voucher_preheat / sk_rebuild_voucher did or found. */
typedef struct sk_rebuild_report {
        int64_t stock;          /* stock written to Redis (DB stock), -1 if none */
        int64_t users;          /* user entries written to the users hash */
        int status;             /* meta status written last (from the DB), -1 if none */
        int prev_status;        /* meta status before we started, -1 = meta or field missing */
        int64_t deducts;        /* DEDUCT entries seen in the trace hash (rebuild) */
        int64_t undecided;      /* of those, without an outcome row at the last check */
        int64_t fenced_failed;  /* FAILED front_rollback outcomes recorded by the rebuild */
        int64_t lag;            /* sum over partitions of high watermark - committed offset
                                   at the last check (rebuild) */
        int64_t waited_ms;      /* time spent waiting for Kafka and outcomes (rebuild) */
        int rebuilt;            /* preheat: 1 if it ran the rebuild procedure instead */
        char detail[256];       /* human-readable reason when not done (SK_EAGAIN) */
} sk_rebuild_report_t;

/** @brief Preheat (DESIGN.md 8 "Preheat writes meta last, and never overwrites a stock
 *  that has been sold down"): under the voucher's lock (waited for up to 5 s), in one
 *  script: stock = DB stock with SET NX semantics (an existing stock key equal to the DB
 *  stock is kept; a different one is refused), HSET users for the DB's active buyers
 *  (userId -> trace_id of their order; nothing is deleted), then meta LAST
 *  (begin_ms, end_ms, status from the DB), each key with the expiry of DESIGN.md 4.
 *  When the stock key is missing but the voucher has history (meta or trace hash
 *  exists, or DB stock != init_stock) Redis lost data: the rebuild procedure
 *  (sk_rebuild_voucher) runs instead and rep->rebuilt = 1.
 *  @returns SK_OK; SK_ENOTFOUND (no such voucher in the DB); SK_EEXIST (the stock key
 *  holds another value: sold down or drifted; nothing written; use the rebuild);
 *  SK_EAGAIN (lock held by someone else, a transient error, or the rebuild's wait
 *  timed out); SK_EREDIS / SK_EDB otherwise. Reason in errstr. @p wait_ms: the
 *  rebuild's wait when it runs (<= 0: 2 x delivery timeout). */
sk_err_t sk_voucher_preheat(const sk_conf_t *conf, int64_t voucher_id, int wait_ms,
                            sk_rebuild_report_t *rep, char *errstr, size_t errstr_size);

/** @brief The rebuild procedure of DESIGN.md 8, for one voucher:
 *   1. GET_LOCK "seckill:voucher:<db>:<prefix>:<id>" (waited for up to 5 s);
 *   2. pause admission: HSET meta status 4 (meta is created with only the status when
 *      missing), remembering the previous status; deduct.lua then answers 10013;
 *   3. wait up to @p wait_ms (<= 0: 2 x conf->kafka_delivery_timeout_ms) until both
 *      hold at once:
 *      a. on EVERY partition of conf->topic, conf->group_id's committed offset has
 *         reached the high watermark (a partition with no messages counts as done; a
 *         missing topic means nothing is in flight);
 *      b. every DEDUCT entry "T" of the trace hash has a tb_seckill_outcome row; a
 *         DEDUCT without one whose fence "T:r" exists gets FAILED front_rollback
 *         recorded now (sk_outcome_fail; DESIGN.md 7: the front cannot write the DB);
 *      if the deadline passes first, the previous status is put back (the field is
 *      removed when there was none) and SK_EAGAIN is returned with rep->detail;
 *   4. in one script: SET stock = DB stock, DEL users + HSET the DB's active buyers
 *      (userId -> trace_id of their active order), then meta = DB begin_ms, end_ms,
 *      status (this also lifts the pause), each key with the expiry of DESIGN.md 4;
 *      the voucher row is read FOR UPDATE and the script runs before that transaction
 *      commits, so no consumer's stock UPDATE lands between the read and the write;
 *   5. RELEASE_LOCK.
 *  Never rolls anything back because consumers are behind: it waits, then reports.
 *  @p rep (may be NULL) receives the figures. @returns SK_OK; SK_ENOTFOUND (no such
 *  voucher in the DB); SK_EAGAIN (lock busy, deadline passed, transient error: exit 2);
 *  SK_EINVAL (an outcome row collides with a DEDUCT's ids, or a DEDUCT entry is not a
 *  valid message: needs a human); SK_EDB / SK_EREDIS / SK_EKAFKA otherwise. */
sk_err_t sk_rebuild_voucher(const sk_conf_t *conf, int64_t voucher_id, int wait_ms,
                            sk_rebuild_report_t *rep, char *errstr, size_t errstr_size);

/** @brief Same as sk_rebuild_voucher on caller-owned connections @p db (its session
 *  takes the advisory lock; must not already hold it) and @p r. */
sk_err_t sk_rebuild_voucher_with(const sk_conf_t *conf, sk_db_t *db, sk_redis_t *r,
                                 int64_t voucher_id, int wait_ms, sk_rebuild_report_t *rep,
                                 char *errstr, size_t errstr_size);

/** @brief `seckill-admin voucher set-status`: under the voucher's lock (up to 5 s),
 *  UPDATE the DB status first (the book of record), then, if meta exists, HSET meta
 *  begin_ms/end_ms/status from the DB row (with the expiry of DESIGN.md 4). A missing
 *  meta is not created (that is the preheat's or the rebuild's job).
 *  @p status 1..4. *meta_written (may be NULL): 1 if meta was updated.
 *  @returns SK_OK; SK_EINVAL (status); SK_ENOTFOUND (no such voucher); SK_EAGAIN (lock
 *  busy: a rebuild is running, or a transient error); SK_EDB / SK_EREDIS. */
sk_err_t sk_voucher_set_status(const sk_conf_t *conf, int64_t voucher_id, int status,
                               int *meta_written, char *errstr, size_t errstr_size);

/** @brief For the reconciler's "meta status 4 while nobody holds the lock" case
 *  (DESIGN.md 8): try the voucher's lock WITHOUT waiting on @p db's session; if it is
 *  free, rewrite an existing meta's begin_ms/end_ms/status from the DB row, then
 *  release it. *meta_written (may be NULL): 1 if meta was rewritten (0: meta missing).
 *  @returns SK_OK; SK_EAGAIN (the lock is held: a rebuild is running; leave it);
 *  SK_ENOTFOUND (no such voucher); SK_EDB / SK_EREDIS. */
sk_err_t sk_voucher_reset_meta_with(const sk_conf_t *conf, sk_db_t *db, sk_redis_t *r,
                                    int64_t voucher_id, int *meta_written, char *errstr,
                                    size_t errstr_size);
