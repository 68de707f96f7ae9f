/* sk/drift_mark.h: drift marks, the rows that make the reconciler's next pass rebuild a
 * bucket at once (DESIGN.md 16 "Answers after an unknown COMMIT" (d)).
 *
 * On Galera a sold_out clamp (sk/decide.h: a transaction that bumps bucket j's row, reads
 * its stock and runs rollback.lua with clamp-to that stock before COMMIT) or a rebuild's
 * copy (sk/rebuild.h: the DB view copied to Redis before COMMIT) has written Redis from a
 * view that a COMMIT failure may prove stale: a restock certified first on another node
 * aborts our transaction, and Redis now holds less than the DB (a restock clamped away).
 * The writer then records a mark, a tb_lock-style row:
 *   name 'drift:<voucher_id>:<bucket>', holder = who wrote it, until = NOW(3) + 7 days
 *   (a mark is pending while until >= NOW(3)), seq bumped by every mark;
 * the reconciler reads the pending marks of each voucher it checks, rebuilds the voucher
 * (every marked bucket with it) whether or not its drift pass could judge the figures,
 * and clears each mark it acted on by a compare-and-set on its seq, so a mark written
 * during the rebuild stays for the next pass. tb_lock rows are never deleted (a cleared
 * mark has until in the past).
 *
 * Ids are bound as BIGINT; names are built here only. Not thread-safe per connection;
 * nothing here logs. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "sk/db.h"
#include "sk/err.h"

#define SK_DRIFT_MARKS_MAX 256          /* marks read per voucher (one per bucket) */

/** One pending mark. */
typedef struct sk_drift_mark {
        int bucket;
        int64_t seq;                    /* the compare-and-set value of sk_drift_mark_clear */
} sk_drift_mark_t;

/** @brief Record a drift mark for bucket @p bucket (>= 0) of @p voucher_id on @p db
 *  (borrowed; autocommit, outside any transaction), @p who (borrowed, may be NULL: "") the
 *  writer as a log would name it. One INSERT ... ON DUPLICATE KEY UPDATE: idempotent.
 *  @returns SK_OK; SK_EINVAL (bad ids); else the classified DB error (SK_EAGAIN
 *  transient: reconnect and write it again, which is harmless). DESIGN.md 16 (d). */
sk_err_t sk_drift_mark(sk_db_t *db, int64_t voucher_id, int bucket, const char *who,
                       char *errstr, size_t errstr_size);

/** @brief The pending marks of @p voucher_id into @p out[0..max), their count in *@p n
 *  (at most @p max; more are left for the next read). @returns SK_OK or the classified
 *  DB error (SK_EAGAIN transient). */
sk_err_t sk_drift_marks(sk_db_t *db, int64_t voucher_id, sk_drift_mark_t *out, int max,
                        int *n, char *errstr, size_t errstr_size);

/** @brief Clear mark @p m of @p voucher_id if it was not marked again since it was read
 *  (its seq unchanged). *@p cleared (may be NULL) = 1 when the row changed. @returns SK_OK
 *  or the classified DB error. */
sk_err_t sk_drift_mark_clear(sk_db_t *db, int64_t voucher_id, const sk_drift_mark_t *m,
                             int *cleared, char *errstr, size_t errstr_size);
