/* sk/dblock.h: advisory locks as rows of tb_lock (ddl/0007_lock.sql; DESIGN.md 16 (1)).
 * GET_LOCK, FOR SHARE and FOR UPDATE are node-local on Galera, so every advisory lock of
 * the pipeline (migrate, the voucher/rebuild lock, the reconciler run lock) is a row
 * (name, holder, until, seq), taken and renewed by conditional writes judged by the
 * database's NOW(3), like the worker lease (DESIGN.md 2):
 *   take   INSERT the row if missing (ON DUPLICATE KEY UPDATE name = name), then
 *          UPDATE SET holder = me, until = NOW(3) + ttl, seq = seq + 1, taken_at = NOW(3)
 *          WHERE name = ? AND (holder = me OR until < NOW(3));
 *   check  UPDATE SET until = NOW(3) + ttl, seq = seq + 1 WHERE name = ? AND holder = me:
 *          one affected row = still ours, renewed; none = lost. The holder re-checks
 *          before each Redis write chunk (rebuild) and each reconciler write.
 *   release UPDATE SET until = NOW(3) - 1 ms WHERE name = ? AND holder = me (the row
 *          stays: the binaries never DELETE).
 * Why a renewal needs only holder = me, even past until: every take writes the taker's
 * holder, so a row that still names us was taken by nobody since our last write (on
 * Galera the row's write sets are certified in one order, so two nodes cannot both win).
 * "Nobody holds the lock" (DESIGN.md 8, the meta reset) = no row with until >= NOW(3).
 * seq makes every renewal change the row, so its affected-row count is the answer.
 * On Galera the lock's session runs with wsrep_sync_wait = 7 (reads, UPDATE/DELETE and
 * INSERT wait until the node has applied what the cluster committed before them): a
 * conditional UPDATE on a node that lags matches the stale row and writes nothing (so
 * certification never sees it): without the wait a lock released through one node
 * still looked held through another for a moment, and a take there answered busy.
 *
 * Errors in the classes of DESIGN.md 8/16: 1213 (deadlock, certification failure) and
 * 1205 (lock wait) are retried here a few times; a lost connection during one of these
 * autocommit writes is an unknown outcome: the lock reconnects its own session and reads
 * the row (holder = us?) before it answers. A lock is only as good as its ttl: a holder
 * stalled longer than ttl between its check and its write may overlap the next holder,
 * so ttl is chosen far above one write chunk.
 *
 * Each sk_dblock_t owns one connection (autocommit only, never inside a caller's
 * transaction) and a holder "host:boot_id:pid:start_ticks:seq" unique to it
 * (sk/dblock_holder.h), so two locks of one process exclude each other like two
 * processes. A live row is taken over before its ttl only when its holder is provably
 * dead: same host and boot id, its pid gone or reused (DESIGN.md 16 (f)). Not thread-safe per lock; separate
 * locks are independent. Nothing here logs. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "sk/conf.h"
#include "sk/db.h"
#include "sk/err.h"

#define SK_DBLOCK_NAME_MAX 191  /* tb_lock.name is VARCHAR(191) */
#define SK_DBLOCK_HOLDER_MAX 255  /* tb_lock.holder is VARCHAR(255) (ddl/0011_lock_holder.sql) */

typedef struct sk_dblock sk_dblock_t;   /* opaque; defined in dblock.c */

/** @brief Write a worker-lease holder "host:pid:start_ms" into @p out (@p size >= 96 is
 *  enough): host reduced to [A-Za-z0-9._-], start_ms the wall clock in ms made unique per
 *  process (two calls never return the same string). Thread-safe. The worker lease's
 *  (tb_worker_lease.holder, VARCHAR(128)); a tb_lock holder has five fields
 *  (sk_dblock_holder_make), so the two never collide. */
void sk_dblock_make_holder(char *out, size_t size);

/** @brief The row name used for @p name into @p out (@p out_size >= SK_DBLOCK_NAME_MAX +
 *  1): @p name itself when it fits, else its first 174 bytes + ':' + 16 hex digits of its
 *  FNV-1a 64 hash, so every process derives the same row. Pure, thread-safe. */
void sk_dblock_fit_name(const char *name, char *out, size_t out_size);

/** @brief CREATE TABLE IF NOT EXISTS tb_lock (the statement of ddl/0007_lock.sql, holder
 *  already VARCHAR(255)) on @p db's current database, and widen an older table's holder
 *  to VARCHAR(255) (the statement of ddl/0011_lock_holder.sql) when it is narrower: the
 *  migration runner runs it before it takes its own lock, whose holder may not fit the
 *  old column. @returns SK_OK or the classified error. */
sk_err_t sk_dblock_ensure_table(sk_db_t *db, char *errstr, size_t errstr_size);

/** @brief A lock object for row @p name (copied; non-empty, fitted by sk_dblock_fit_name), its own
 *  connection to @p url's database (lock wait 5 s, I/O timeouts 5 s) and a fresh holder.
 *  @p ttl_ms (1000..3600000): how long a take or a check keeps the row, DB clock.
 *  Nothing is taken yet. @returns an owned lock (sk_dblock_close), or NULL with the
 *  reason (bad argument, or the connection failed: worth a retry). */
sk_dblock_t *sk_dblock_open(const sk_mysql_url_t *url, const char *name, int ttl_ms,
                            char *errstr, size_t errstr_size);

/** @brief Take the row, polling every 100 ms for up to @p wait_ms (0: one try).
 *  @returns SK_OK (held until NOW(3) + ttl); SK_EAGAIN (held by another holder after the
 *  wait: errstr names it and how long it stays, or a transient error that outlived the
 *  retries); SK_EDB (e.g. tb_lock missing: run `seckill-admin db migrate`); SK_EINVAL. */
sk_err_t sk_dblock_take(sk_dblock_t *lk, int wait_ms, char *errstr, size_t errstr_size);

/** @brief Re-check and renew a taken lock (one autocommit UPDATE; see the top).
 *  @returns SK_OK (still ours, held for another ttl); SK_ENOTFOUND (lost: another holder
 *  has the row, or it was released; for good, the lock is no longer held); SK_EAGAIN
 *  (could not tell: DB unreachable, the retries spent) or another DB error: either way
 *  the caller must not write now. Also SK_ENOTFOUND when the lock was never taken. */
sk_err_t sk_dblock_check(sk_dblock_t *lk, char *errstr, size_t errstr_size);

/** @brief sk_dblock_check for a caller that checks before every one of many writes (the
 *  reconciler): while the row names us, is live and has more than half its ttl left, a
 *  read (SELECT, no write, no fsync) answers SK_OK; otherwise the row is renewed as by
 *  sk_dblock_check. Same returns and errors. A renewal is one autocommit write: 50,000
 *  writes with a renewal before each doubled a pass's commits. */
sk_err_t sk_dblock_recheck(sk_dblock_t *lk, char *errstr, size_t errstr_size);

/** @brief Release the row if it is still ours (until set 1 ms in the past; holder kept).
 *  Errors ignored: the row then ends by itself at until. NULL or not held: no-op. */
void sk_dblock_release(sk_dblock_t *lk);

/** @brief Release if held, close the connection, free. NULL is a no-op. */
void sk_dblock_close(sk_dblock_t *lk);

/** @brief 1 while the lock is held as far as this object knows (taken, not released,
 *  no check said lost). */
int sk_dblock_held(const sk_dblock_t *lk);
/** @brief 1 when the last sk_dblock_take failed because another holder had a live row
 *  (not a DB error). */
int sk_dblock_busy(const sk_dblock_t *lk);
/** @brief The lock's holder string (owned by @p lk). */
const char *sk_dblock_holder(const sk_dblock_t *lk);

/** @brief Whether anyone holds the row of @p name (fitted) now: *live = 1 when a row with until >=
 *  NOW(3) exists, its holder into @p holder (may be NULL, @p holder_size bytes). Reads on
 *  @p db (borrowed). @returns SK_OK or the classified error. */
sk_err_t sk_dblock_live(sk_db_t *db, const char *name, int *live, char *holder,
                        size_t holder_size, char *errstr, size_t errstr_size);
