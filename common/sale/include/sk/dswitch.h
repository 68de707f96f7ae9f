/* sk/dswitch.h: the per-voucher degrade switch of DESIGN.md 12 in tb_seckill_switch
 * (ddl/0004): scope 0 holds only the default mode; each voucher's own row holds its
 * mode (NULL = scope 0's), its state redis | draining | db | rebuilding, epoch and since.
 * Every transition is a conditional UPDATE on (state, epoch) that bumps the epoch, so
 * fronts that disagree can never both move a voucher. A DB-only purchase re-reads the row
 * after its bucket-row UPDATE, in the same transaction, and commits only while it still
 * says (db, E); db -> rebuilding updates every bucket row of the voucher (switch_epoch)
 * in the switch row's transaction, so the two conflict on a bucket row: they serialize
 * on one node and fail certification (1213, retried) on Galera (DESIGN.md 16 (2)).
 * Nothing relies on FOR SHARE / FOR UPDATE, which are node-local.
 *
 * Used by seckill-front (the follower, producer/degrade.c; the DB-only purchase,
 * producer/dbonly.c), seckill-consumer (commit without claim.lua while a voucher drains)
 * and seckill-admin (`degrade status|auto|db-only|redis-only`). Functions take a
 * caller-owned connection (one per thread); they never log. DB errors: SK_EAGAIN
 * transient (retry), SK_EDB otherwise. Ids are exact int64 in the SQL text. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "sk/db.h"
#include "sk/err.h"

typedef enum {
        SK_DSW_REDIS = 0,       /* purchases go through Redis and Kafka (202) */
        SK_DSW_DRAINING,        /* nothing goes to Redis; 503 until Kafka has drained */
        SK_DSW_DB,              /* the DB-only purchase (200 CREATED) */
        SK_DSW_REBUILDING,      /* Redis is rebuilt from the DB; 503 */
} sk_dsw_state_t;

typedef enum { SK_DSW_AUTO = 0, SK_DSW_DB_ONLY, SK_DSW_REDIS_ONLY } sk_dsw_mode_t;

/** One voucher's switch as read (mode already resolved against scope 0). */
typedef struct sk_dsw_row {
        int64_t voucher_id;
        int mode;               /* effective sk_dsw_mode_t */
        int own_mode;           /* the row's own mode, -1 = NULL (scope 0's applies) */
        int state;              /* sk_dsw_state_t */
        int64_t epoch;
        int64_t since_ms;       /* ms since the epoch (UTC) */
        int64_t age_ms;         /* NOW(3) - since, on the DB's clock */
        int buckets;            /* the voucher's bucket count (1 if unknown) */
} sk_dsw_row_t;

/** @brief "redis", "draining", "db", "rebuilding" ("?" otherwise). Static. */
const char *sk_dsw_state_str(int state);
/** @brief "auto", "db_only", "redis_only" ("?" otherwise). Static. */
const char *sk_dsw_mode_str(int mode);
/** @brief Parse a mode: "auto", "db_only"/"db-only", "redis_only"/"redis-only".
 *  @returns 0 and *mode, or -1. */
int sk_dsw_mode_parse(const char *s, int *mode);

/** @brief Every voucher row (scope != 0), mode resolved, into *rows (malloc'd, owned
 *  by the caller; NULL when *n = 0). *default_mode (may be NULL): scope 0's mode
 *  (auto when the row is missing). @returns SK_OK or the DB error. */
sk_err_t sk_dsw_read_all(sk_db_t *db, sk_dsw_row_t **rows, size_t *n, int *default_mode,
                         char *errstr, size_t errstr_size);

/** @brief Read voucher @p voucher_id's row; @p lock 0 plain, 1 FOR SHARE, 2 FOR UPDATE
 *  (inside the caller's transaction; node-local, so no caller relies on 1 or 2 for
 *  correctness, DESIGN.md 16). @returns SK_OK, SK_ENOTFOUND, or the DB error. */
sk_err_t sk_dsw_get(sk_db_t *db, int64_t voucher_id, int lock, sk_dsw_row_t *row,
                    char *errstr, size_t errstr_size);

/** @brief The conditional transition (DESIGN.md 12): UPDATE state = @p to, epoch + 1,
 *  since = NOW(3), updated_by = @p by WHERE scope = V AND state = @p from AND epoch =
 *  @p epoch (autocommit). *moved = 1 if this call made it. A write whose outcome is
 *  unknown (a lost link, sk_db_write_class) is resolved by reading the switch row's
 *  epoch on a fresh session (DESIGN.md 16): @p to at @p epoch + 1 -> moved; still
 *  (@p from, @p epoch) -> the same move once more; unreadable -> SK_EUNKNOWN (the next
 *  read of the rows tells). @returns SK_OK or the DB error. */
sk_err_t sk_dsw_move(sk_db_t *db, int64_t voucher_id, int from, int64_t epoch, int to,
                     const char *by, int *moved, char *errstr, size_t errstr_size);

/** @brief db -> rebuilding (DESIGN.md 12, 16 (2)) in one transaction: the
 *  conditional move (state db, epoch @p epoch), then, if it moved, UPDATE every bucket
 *  row of the voucher SET switch_epoch = @p epoch + 1, then COMMIT. A DB-only purchase in
 *  flight holds one of those rows, so this waits for it (one node) or one of the two
 *  fails certification (Galera); either way no purchase commits in state db after this
 *  COMMIT. *moved = 1 if it did; *new_epoch the epoch after it. @returns SK_OK or the DB
 *  error (rolled back; SK_EAGAIN for 1213/1205: retry). A COMMIT whose outcome is unknown
 *  (DESIGN.md 16) is resolved here by the switch row's epoch on a fresh session
 *  (wsrep_sync_wait = 1 on Galera): rebuilding at @p epoch + 1 -> moved; still (db,
 *  @p epoch) -> the transaction once more; moved by another -> *moved = 0, SK_OK;
 *  unreadable -> SK_EUNKNOWN (the next read of the rows tells). */
sk_err_t sk_dsw_begin_rebuild(sk_db_t *db, int64_t voucher_id, int64_t epoch, const char *by,
                              int *moved, int64_t *new_epoch, char *errstr, size_t errstr_size);

/** @brief Set the operator mode of @p scope (0 = the default; else a voucher, whose row
 *  is created if missing): @p mode an sk_dsw_mode_t, or -1 = NULL (a voucher row
 *  follows scope 0 again; not allowed for scope 0). @returns SK_OK, SK_EINVAL, or the
 *  DB error. */
sk_err_t sk_dsw_set_mode(sk_db_t *db, int64_t scope, int mode, const char *by, char *errstr,
                         size_t errstr_size);

/** @brief The move a front should attempt for @p row now (DESIGN.md 12), pure:
 *  from redis: draining when the mode is db_only, or auto with @p breaker_open (never
 *  for redis_only); from draining: db once @p row->age_ms >= @p drain_wait_ms (2 x
 *  delivery timeout + 1 s + the read period; the caller then checks that Kafka has
 *  drained); from db: rebuilding when the mode is not db_only, @p redis_healthy (this
 *  front's breaker has seen Redis healthy for SECKILL_BREAKER_HEALTHY_MS) and the
 *  voucher has been in db for at least @p healthy_ms (@p row->age_ms, the DB clock):
 *  Redis healthy for that long *while in db*, so every front, reading the rows every
 *  second, gets a db window to serve from before a healthy front rebuilds (a front
 *  whose breaker never opened would otherwise rebuild within a second of the drain);
 *  from rebuilding: redis when @p redis_healthy (the caller rebuilds first).
 *  @returns the target sk_dsw_state_t, or -1 for no move. Thread-safe. */
int sk_dsw_next(const sk_dsw_row_t *row, int breaker_open, int redis_healthy,
                int64_t drain_wait_ms, int64_t healthy_ms);
