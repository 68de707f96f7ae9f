/* sk/voucher.h: a voucher's rows in the database (DESIGN.md 6) and the operations on one
 * voucher that are not the rebuild: read its row and active buyers, tell whether it
 * could have sales anywhere in the DB, its advisory lock, `voucher set-status`, and the
 * reconciler's reset of a stuck meta (DESIGN.md 8). The rebuild and the preheat are in
 * sk/rebuild.h; the Redis writes of a voucher's admission state in sk/vstate.h.
 *
 * The advisory lock, the tb_lock row "seckill:voucher:<db>:<prefix>:<id>"
 * (sk_voucher_lock_name; sk/dblock.h, DESIGN.md 16: not GET_LOCK, which is node-local on
 * Galera), is held by every preheat, rebuild and status change of the voucher, so they
 * never interleave; the holder re-checks it before each Redis write chunk. A reconciler
 * that finds meta status 4 while nobody holds it (no live row) knows a rebuild died
 * half-way.
 *
 * Functions take caller-owned connections unless they say they open their own from
 * @p conf; not thread-safe beyond that. They never log or exit. Ids are bound as
 * MYSQL_TYPE_LONGLONG (prepared statements), never formatted into SQL. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "sk/conf.h"
#include "sk/db.h"
#include "sk/dblock.h"
#include "sk/err.h"
#include "sk/redis.h"
#include "sk/vec.h"
#include "sk/keys.h"

/** One row of tb_seckill_voucher, times as ms since the Unix epoch (UTC). */
typedef struct sk_voucher_row {
        int64_t voucher_id;
        int64_t init_stock;     /* units */
        int64_t stock;          /* units remaining in the DB (the book of record): Σ of
                                   the bucket rows' stock (tb_seckill_stock) */
        int buckets;            /* N, 1..16 (DESIGN.md 14) */
        int nrows;              /* bucket rows found (N when the DB is consistent) */
        int64_t bucket_init[SK_BUCKETS_MAX], bucket_stock[SK_BUCKETS_MAX]; /* per bucket b */
        int64_t begin_ms;       /* sale window start, ms since epoch */
        int64_t end_ms;         /* sale window end, ms since epoch */
        int status;             /* 1 on sale, 2 offline, 3 expired, 4 paused */
} sk_voucher_row_t;

/** @brief Read the voucher row of @p voucher_id (times converted without the 2038 limit
 *  of UNIX_TIMESTAMP) and its bucket rows (stock = their sum). @p for_update: append
 *  FOR UPDATE to both reads (inside a transaction: the consumers' bucket decrements
 *  wait).
 *  @returns SK_OK, SK_ENOTFOUND, or the classified DB error (SK_EAGAIN transient). */
sk_err_t sk_voucher_get(sk_db_t *db, int64_t voucher_id, int for_update,
                        sk_voucher_row_t *out, char *errstr, size_t errstr_size);

/** @brief The active buyers of the voucher (orders with status 1), appended to @p out as
 *  pairs (user_id, trace_id of the order). One prepared statement, read row by row.
 *  @returns SK_OK, SK_ENOMEM, or the classified DB error. */
sk_err_t sk_voucher_active_buyers(sk_db_t *db, int64_t voucher_id, sk_i64vec_t *out,
                                  char *errstr, size_t errstr_size);

/** @brief Whether the DB shows that the voucher could have sold (DESIGN.md 8, last
 *  sentence of the rebuild row): DB stock below init_stock (@p row), an active order, an
 *  outcome row or a reconcile-log row of the voucher (one statement). *sales = 1 and
 *  @p why (may be NULL) names the first reason found. @returns SK_OK or the DB error. */
sk_err_t sk_voucher_db_sales(sk_db_t *db, const sk_voucher_row_t *row, int *sales,
                             char *why, size_t why_size);

/** @brief The advisory-lock name of a voucher: "seckill:voucher:<db>:<prefix>:<id>"
 *  into @p buf (@p size >= 256 is always enough). @returns the length. */
size_t sk_voucher_lock_name(char *buf, size_t size, const sk_conf_t *conf, int64_t voucher_id);

/** @brief Take the voucher's lock row (sk/dblock.h; ttl 30 s, renewed by every
 *  sk_dblock_check), waiting up to @p wait_ms (< 0: 5 s; 0: one try). *lk receives the
 *  lock, owned by the caller (sk_dblock_close releases it), on SK_OK only. It has its own
 *  connection from @p conf, so it is independent of the caller's sessions and
 *  transactions. @returns SK_OK, SK_EAGAIN (held by another holder: the reason names it;
 *  or the DB is unreachable), or the DB error (SK_EDB: tb_lock missing, run migrate). */
sk_err_t sk_voucher_lock(const sk_conf_t *conf, int64_t voucher_id, int wait_ms,
                         sk_dblock_t **lk, char *errstr, size_t errstr_size);

/** @brief Open a DB session (lock wait 5 s) and a Redis connection (5 s timeouts) from
 *  @p conf for one admin operation. Both owned by the caller (sk_db_close,
 *  sk_redis_close). @returns SK_OK, or SK_EAGAIN with the reason (nothing left open). */
sk_err_t sk_voucher_connect(const sk_conf_t *conf, sk_db_t **db, sk_redis_t **r,
                            char *errstr, size_t errstr_size);
