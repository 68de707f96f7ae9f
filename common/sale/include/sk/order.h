/* sk/order.h: the order lifecycle of DESIGN.md 13 (pay, cancel, close on timeout, and
 * the release of the unit), shared by seckill-front (the payment callback, cancel), the closer loop of
 * seckill-consumer and the reconciler (releases a crash left undone).
 *
 * Order status (tb_voucher_order.status, DESIGN.md 6): 1 UNPAID, 2 PAID, 3 CANCELLED,
 * 4 CLOSED. Every transition is a conditional UPDATE on `status = 1`, so pay and
 * cancel/close can never both win (invariant 6). Cancel and close release the unit in
 * the same DB transaction (stock + 1 under the bucket row's lock, a RESTORE
 * reconcile-log row with the original trace_id, business_type 4 cancel / 5 closed);
 * after the commit the caller finishes the order with sk_order_finish (release.lua by
 * sk_release_run, then the order cache DEL by sk_order_cache_del, one retry policy):
 * DB first, then the cache (DESIGN.md 13). The outcome row is never changed
 * (DESIGN.md 7). The status codes are named in sk/model.h.
 *
 * The unit goes back to the order's bucket (tb_voucher_order.bucket): its row in
 * tb_seckill_stock and its Redis keys {v:ID:j} (DESIGN.md 4, 6). While the front
 * deducts on the home bucket only, j = h and release.lua runs the home step itself.
 *
 * Functions take caller-owned connections (one per thread; not thread-safe beyond
 * that). DB errors: SK_EAGAIN transient (1205, 1213, lost connection: nothing
 * committed, or for a failed COMMIT an unknown outcome: re-read the row), SK_EDB
 * others; the transaction is always rolled back on an error. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "sk/db.h"
#include "sk/err.h"
#include "sk/model.h"
#include "sk/redis.h"

/** One order row as the lifecycle needs it. Times in ms since the epoch (UTC), 0 = NULL. */
typedef struct sk_order_row {
        int64_t order_id, user_id, voucher_id, trace_id;
        int status;                 /* sk_order_status_t */
        int64_t pay_deadline_ms;    /* 0: none (an order created PAID or before v4) */
        int past_deadline;          /* 1: pay_deadline <= the DB's NOW(3) when read */
        int bucket;                 /* the bucket its unit came from (tb_voucher_order.bucket) */
        int buckets;                /* the voucher's bucket count N (tb_seckill_voucher),
                                       0 = not known: release.lua then takes the user's
                                       home from T's entry, else j */
} sk_order_row_t;

/** @brief "UNPAID", "PAID", "CANCELLED", "CLOSED" or "UNKNOWN". Static strings. */
const char *sk_order_status_str(int status);

/** @brief Read order @p order_id if @p user_id owns it (@p user_id 0: any owner).
 *  @returns SK_OK (*row filled), SK_ENOTFOUND (no such order, or another owner's), or
 *  the DB error. */
sk_err_t sk_order_get(sk_db_t *db, int64_t order_id, int64_t user_id, sk_order_row_t *row,
                      char *errstr, size_t errstr_size);

/** @brief Cancel (@p to SK_ORDER_CANCELLED) or close (@p to SK_ORDER_CLOSED, only past
 *  the deadline) one order in one transaction: `UPDATE ... SET status=@p to,
 *  closed_at=NOW(3) WHERE id=? [AND user_id=?] AND status=1 [AND pay_deadline +
 *  INTERVAL @p grace_s SECOND <= NOW(3)]`; if a row changed, the bucket's stock + 1
 *  under its row lock and the RESTORE reconcile-log row (business_type 4 or 5), then
 *  COMMIT. @p user_id 0: any owner. @p grace_s (s, >= 0; SECKILL_PAY_GRACE_S, DESIGN.md
 *  13): ignored for a cancel. *changed = 1 if this call made the transition (the caller
 *  then releases the unit in Redis); *row is the order as read after it (its status
 *  tells a repeat, a PAID order or another end apart).
 *  A COMMIT with an unknown outcome (DESIGN.md 16, sk/db_outcome.h) is resolved here by
 *  the order's status read on a fresh session (wsrep_sync_wait = 1 on Galera): @p to →
 *  *changed = 1 (possibly a concurrent repeat of the same end: release.lua is
 *  idempotent); still UNPAID → SK_EAGAIN (not applied: run again).
 *  @returns SK_OK, SK_ENOTFOUND (no such order of @p user_id), SK_EINVAL (bad @p to or
 *  @p grace_s), or the DB error (rolled back; SK_EAGAIN: retry). */
sk_err_t sk_order_end(sk_db_t *db, int64_t order_id, int64_t user_id, int to, int grace_s,
                      int *changed, sk_order_row_t *row, char *errstr, size_t errstr_size);

/** @brief The close of sk_order_end (SK_ORDER_CLOSED, any owner, only when pay_deadline +
 *  @p grace_s <= NOW(3)) inside the caller's open transaction: no BEGIN, no COMMIT, no
 *  ROLLBACK (the caller ends the transaction, e.g. the payment callback's, which also
 *  records tb_payment, DESIGN.md 13). Lock order as sk_order_end: the order row, then its
 *  bucket row. *changed, *row as sk_order_end.
 *  @returns SK_OK, SK_ENOTFOUND, SK_EINVAL, or the DB error (the caller rolls back). */
sk_err_t sk_order_close_in_tx(sk_db_t *db, int64_t order_id, int grace_s, int *changed,
                              sk_order_row_t *row, char *errstr, size_t errstr_size);

/** @brief The closer's step (DESIGN.md 13): in one transaction, `SELECT ... WHERE
 *  status=1 AND pay_deadline <= NOW(3) - INTERVAL @p grace_s SECOND ORDER BY pay_deadline
 *  LIMIT @p limit FOR UPDATE SKIP LOCKED` (pay_deadline + grace <= NOW(3), written as a
 *  range of the (status, pay_deadline) index: a round reads the due orders only; several
 *  closers share the work), close each (conditional on
 *  status=1), give the units back to the voucher rows in voucher order (one UPDATE per
 *  voucher under its row lock), one RESTORE row per order (business_type 5), COMMIT.
 *  *rows (malloc'd, owned by the caller; NULL when *n = 0) are the orders closed, for
 *  release.lua after the commit.
 *  @returns SK_OK; SK_EUNKNOWN: the COMMIT's outcome is unknown (DESIGN.md 16) and *rows,
 *  *n are the orders it would have closed (owned by the caller): resolve them with
 *  sk_order_resolve; or the DB error (rolled back, *n = 0; SK_EAGAIN: retry). */
sk_err_t sk_order_close_due(sk_db_t *db, int limit, int grace_s, sk_order_row_t **rows,
                            size_t *n, char *errstr, size_t errstr_size);

/** @brief After a COMMIT with an unknown outcome (DESIGN.md 16): on a fresh session
 *  (sk_db_resolve_begin: wsrep_sync_wait = 1 on Galera) read the status of each order of
 *  @p rows[0..n) and keep, in place at rows[0..*kept), those whose status is now @p to
 *  (their status field updated): those ended and must be released (release.lua is
 *  idempotent); the others are moved to rows[*kept..n) (an order still UNPAID was not
 *  ended: the next round closes it again, and DESIGN.md 16 "Answers" (c) re-checks it
 *  once after the lock wait).
 *  @returns SK_OK, or the DB error (the outcome stays unknown: call again later).
 *  Not thread-safe per @p db. */
sk_err_t sk_order_resolve(sk_db_t *db, sk_order_row_t *rows, size_t n, int to, size_t *kept,
                          char *errstr, size_t errstr_size);

/** @brief Every CANCELLED or CLOSED order of @p voucher_id (for the reconciler's pending
 *  releases, DESIGN.md 13). *rows malloc'd, owned by the caller (NULL when *n = 0).
 *  @returns SK_OK or the DB error. */
sk_err_t sk_order_list_ended(sk_db_t *db, int64_t voucher_id, sk_order_row_t **rows, size_t *n,
                             char *errstr, size_t errstr_size);

/** @brief Every UNPAID or PAID order of @p voucher_id (the rebuild's stub `T`, DESIGN.md
 *  8, 13). *rows malloc'd, owned by the caller (NULL when *n = 0).
 *  @returns SK_OK or the DB error. */
sk_err_t sk_order_list_active(sk_db_t *db, int64_t voucher_id, sk_order_row_t **rows, size_t *n,
                              char *errstr, size_t errstr_size);

/** @brief Seconds the oldest UNPAID order is past its deadline + @p grace_s (s) (0:
 *  none), DB clock: how far the closer is behind. @returns SK_OK or the DB error. */
sk_err_t sk_order_overdue_oldest_s(sk_db_t *db, int grace_s, int64_t *seconds, char *errstr,
                                   size_t errstr_size);

typedef struct sk_release_res {
        int already;    /* T:x existed: nothing restored now */
        int restored;   /* this call gave the unit back to Redis stock */
        int released;   /* users[U] named T and was deleted (the home step) */
        int home;       /* h, the home bucket of the order's user (release.lua's answer) */
        int home_done;  /* the home step on h != j ran (after OK or ALREADY, DESIGN.md 4) */
} sk_release_res_t;

/** @brief release.lua (DESIGN.md 4) for a cancelled or closed order: on the order's
 *  bucket j (order->bucket), then the home step on the user's home bucket h when h != j.
 *  h is passed to the script (sk_home_bucket of order->user_id among order->buckets) so
 *  that an order whose T is gone from Redis is released in h too; with buckets 0 the
 *  script takes h from T's entry, else j. @p by: "cancel", "close" or "reconciler".
 *  @p expire_extra_ms: reconcile window + 1 day.
 *  Idempotent (T:x). Errors as sk_redis_evalsha (SK_EUNKNOWN: retry, it is safe). */
sk_err_t sk_release_run(sk_redis_t *r, const char *prefix, const sk_order_row_t *order,
                        const char *by, int64_t expire_extra_ms, sk_release_res_t *res,
                        char *errstr, size_t errstr_size);

/** Which step of sk_order_finish failed. */
typedef enum {
        SK_FINISH_OK = 0,       /* both steps done */
        SK_FINISH_RELEASE,      /* release.lua failed: the reconciler releases it later */
        SK_FINISH_CACHE_DEL,    /* released (or nothing to release); the cache DEL failed */
} sk_finish_step_t;

/** @brief "Finish an order" after the DB commit that paid or ended @p o (DESIGN.md 3,
 *  13), the one sequence and retry policy of the front's pay/cancel and the consumer's
 *  closer: release.lua by @p by ("cancel", "close"; NULL for a payment: no release),
 *  then DEL of the order cache. Each step is tried at most twice (both are idempotent:
 *  T:x, DEL); an SK_EAGAIN or SK_EUNKNOWN answer closes *@p r, and a missing connection
 *  is opened first with @p url (borrowed) and @p timeout_ms. *@p r is the caller's
 *  connection slot (owned by the caller; may be replaced or left NULL). @p res receives
 *  release.lua's answer (zeroed when not run); *@p failed the failing step.
 *  @returns SK_OK, or the last error of the failing step with the reason in errstr.
 *  Not thread-safe per slot. */
sk_err_t sk_order_finish(sk_redis_t **r, const sk_redis_url_t *url, int timeout_ms,
                         const char *prefix, const sk_order_row_t *o, const char *by,
                         int64_t expire_extra_ms, sk_release_res_t *res, sk_finish_step_t *failed,
                         char *errstr, size_t errstr_size);

/** @brief The pending-release check (DESIGN.md 13): which of the ended orders' traces
 *  @p trace_ids[0..n) lack their release record `T:x` in the trace hash @p k_trace (the
 *  hash of the orders' bucket j; borrowed). HMGET in chunks of 200 fields;
 *  @p pending[i] (caller's array of @p n bytes) = 1 when trace_ids[i] has no `T:x`,
 *  else 0 (all 0 on a reply that is not an array). Reads only.
 *  @returns SK_OK, or the Redis error of a chunk (pending[] of later chunks stays 0).
 *  Not thread-safe per @p r. */
sk_err_t sk_release_pending(sk_redis_t *r, const char *k_trace, const int64_t *trace_ids,
                            size_t n, unsigned char *pending, char *errstr, size_t errstr_size);

/** @brief For a rebuild (DESIGN.md 8, 13), in its snapshot (the voucher row locked,
 *  before Redis stock is set from the DB): write `T:x` {"by":"rebuild","restored":0} for
 *  every CANCELLED/CLOSED order of @p voucher_id whose unit came from bucket @p bucket
 *  (tb_voucher_order.bucket; the record goes to that bucket's trace hash) that lacks one,
 *  so a pending release never restores a unit the DB stock already counts; and a stub
 *  `T` ("rebuilt":1) for every UNPAID/PAID order of that bucket whose `T` is missing (a
 *  DB-only order), so its later release restores its unit like any other.
 *  @p expire_at_ms: the key expiry E.
 *  *marked = records written. @returns SK_OK, or the DB / Redis error. */
sk_err_t sk_rebuild_mark_released(sk_db_t *db, sk_redis_t *r, const char *prefix,
                                  int64_t voucher_id, int bucket, int64_t expire_at_ms,
                                  int64_t *marked, char *errstr, size_t errstr_size);

/** @brief DEL `<prefix>:order:<order_id>` after a pay/cancel/close commit (DESIGN.md 3:
 *  the order cache never shows a stale status). @returns SK_OK or the Redis error. */
sk_err_t sk_order_cache_del(sk_redis_t *r, const char *prefix, int64_t order_id,
                            char *errstr, size_t errstr_size);
