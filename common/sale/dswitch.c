/* dswitch.c: the per-voucher degrade switch rows (sk/dswitch.h, DESIGN.md 12). Every value
 * is a bound parameter (ids and epochs as MYSQL_TYPE_LONGLONG), never formatted into SQL. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "sk/db_outcome.h"
#include "sk/dswitch.h"
#include "sk/model.h"
#include "sk/traceset.h"

static const char *const STATES[] = { "redis", "draining", "db", "rebuilding" };
static const char *const MODES[] = { "auto", "db_only", "redis_only" };

const char *sk_dsw_state_str(int state)
{
        return state >= 0 && state < 4 ? STATES[state] : "?";
}

const char *sk_dsw_mode_str(int mode)
{
        return mode >= 0 && mode < 3 ? MODES[mode] : "?";
}

int sk_dsw_mode_parse(const char *s, int *mode)
{
        if (!strcmp(s, "auto"))
                *mode = SK_DSW_AUTO;
        else if (!strcmp(s, "db_only") || !strcmp(s, "db-only"))
                *mode = SK_DSW_DB_ONLY;
        else if (!strcmp(s, "redis_only") || !strcmp(s, "redis-only"))
                *mode = SK_DSW_REDIS_ONLY;
        else
                return -1;
        return 0;
}

/* Columns: scope, own mode (0 NULL, else 1 + mode), effective mode, state, epoch,
 * since (ms), age (ms), buckets, each a BIGINT. FIELD() gives 1-based positions. */
#define ROW_SELECT \
        "SELECT s.scope, FIELD(s.mode, 'auto', 'db_only', 'redis_only'), " \
        "FIELD(COALESCE(s.mode, (SELECT d.mode FROM tb_seckill_switch d WHERE d.scope = 0), " \
        "'auto'), 'auto', 'db_only', 'redis_only'), " \
        "FIELD(s.state, 'redis', 'draining', 'db', 'rebuilding'), s.epoch, " \
        "CAST(UNIX_TIMESTAMP(s.since) * 1000 AS SIGNED), " \
        "TIMESTAMPDIFF(MICROSECOND, s.since, NOW(3)) DIV 1000, " \
        "COALESCE((SELECT v.buckets FROM tb_seckill_voucher v WHERE v.voucher_id = s.scope), 1) " \
        "FROM tb_seckill_switch s "
#define ROW_COLS 8

static int parse_row(const int64_t *c, const int *nulls, sk_dsw_row_t *row)
{
        int i;

        for (i = 0; i < ROW_COLS; i++)
                if (nulls[i])
                        return -1;
        row->voucher_id = c[0];
        row->own_mode = (int)c[1] - 1;
        row->mode = (int)c[2] - 1;
        row->state = (int)c[3] - 1;
        row->epoch = c[4];
        row->since_ms = c[5];
        row->age_ms = c[6];
        row->buckets = c[7] >= 1 && c[7] <= SK_BUCKETS_MAX ? (int)c[7] : 1;
        if (row->mode < 0)
                row->mode = SK_DSW_AUTO;
        return row->state < 0 ? -1 : 0;
}

/* The rows read so far by sk_dsw_read_all / sk_dsw_get. */
typedef struct {
        sk_dsw_row_t *rows;
        size_t n, cap;
        int default_mode, bad;
        int single;             /* sk_dsw_get: rows is the caller's one row, cap 1 */
} row_acc_t;

static int row_cb(void *arg, const int64_t *cols, const int *nulls, int ncols)
{
        row_acc_t *acc = arg;
        sk_dsw_row_t row;

        (void)ncols;
        if (parse_row(cols, nulls, &row) != 0) {
                acc->bad++;
                return 0;
        }
        if (row.voucher_id == 0 && !acc->single) {     /* the default row (read_all only) */
                acc->default_mode = row.mode;
                return 0;
        }
        if (acc->n == acc->cap) {
                size_t cap;
                sk_dsw_row_t *r;

                if (acc->single)
                        return 1;
                cap = acc->cap ? acc->cap * 2 : 16;
                r = realloc(acc->rows, cap * sizeof(*r));
                if (!r) {
                        acc->bad = -1;  /* out of memory */
                        return 1;
                }
                acc->rows = r;
                acc->cap = cap;
        }
        acc->rows[acc->n++] = row;
        return 0;
}

sk_err_t sk_dsw_read_all(sk_db_t *db, sk_dsw_row_t **rows, size_t *n, int *default_mode,
                         char *errstr, size_t errstr_size)
{
        row_acc_t acc = { NULL, 0, 0, SK_DSW_AUTO, 0, 0 };
        sk_err_t err;

        *rows = NULL;
        *n = 0;
        if (default_mode)
                *default_mode = SK_DSW_AUTO;
        err = sk_db_rows(db, ROW_SELECT "ORDER BY s.scope", NULL, 0, ROW_COLS, row_cb, &acc,
                         errstr, errstr_size);
        if (err == SK_OK && acc.bad < 0)
                err = SK_ENOMEM;
        if (err != SK_OK) {
                free(acc.rows);
                return err;
        }
        if (default_mode)
                *default_mode = acc.default_mode;
        if (acc.n == 0) {
                free(acc.rows);
                acc.rows = NULL;
        }
        *rows = acc.rows;
        *n = acc.n;
        return SK_OK;
}

sk_err_t sk_dsw_get(sk_db_t *db, int64_t voucher_id, int lock, sk_dsw_row_t *row,
                    char *errstr, size_t errstr_size)
{
        row_acc_t acc = { row, 0, 1, SK_DSW_AUTO, 0, 1 };
        sk_err_t err;

        err = sk_db_rows(db, lock == 2 ? ROW_SELECT "WHERE s.scope = ? FOR UPDATE"
                         : lock == 1 ? ROW_SELECT "WHERE s.scope = ? LOCK IN SHARE MODE"
                         : ROW_SELECT "WHERE s.scope = ?", &voucher_id, 1, ROW_COLS,
                         row_cb, &acc, errstr, errstr_size);
        if (err != SK_OK)
                return err;
        if (acc.n == 0 && acc.bad) {
                sk_seterr(errstr, errstr_size, "switch row of voucher %" PRId64 " unreadable",
                          voucher_id);
                return SK_EDB;
        }
        if (acc.n == 0) {
                sk_seterr(errstr, errstr_size, "no switch row for voucher %" PRId64, voucher_id);
                return SK_ENOTFOUND;
        }
        return SK_OK;
}

/* The conditional UPDATE of a move, in the caller's transaction or autocommit. */
static sk_err_t move_once(sk_db_t *db, int64_t voucher_id, int from, int64_t epoch, int to,
                          const char *by, int *moved, char *errstr, size_t errstr_size)
{
        int64_t changed = 0;
        sk_err_t err;

        *moved = 0;
        err = sk_db_exec_args(db, "UPDATE tb_seckill_switch SET state = ?, epoch = epoch + 1,"
                              " since = NOW(3), updated_by = ? WHERE scope = ? AND state = ?"
                              " AND epoch = ?",
                              SK_ARGS(SK_STR(sk_dsw_state_str(to)), SK_STR(by), SK_I64(voucher_id),
                                      SK_STR(sk_dsw_state_str(from)), SK_I64(epoch)),
                              &changed, errstr, errstr_size);
        *moved = err == SK_OK && changed == 1;
        return err;
}

/* After a move whose outcome is unknown (DESIGN.md 16): the switch row's epoch on a
 * fresh session (wsrep_sync_wait = 1 on Galera). *moved = 1 when it shows @p to at
 * @p epoch + 1; *again = 1 when it still shows (@p from, @p epoch): not applied, run
 * the same move again. @returns SK_OK or the read's error (still unknown). */
static sk_err_t resolve_move(sk_db_t *db, int64_t voucher_id, int from, int64_t epoch, int to,
                             int *moved, int *again, char *errstr, size_t errstr_size)
{
        sk_dsw_row_t row;
        sk_err_t err;

        *moved = *again = 0;
        if ((err = sk_db_resolve_begin(db, errstr, errstr_size)) != SK_OK)
                return err;
        err = sk_dsw_get(db, voucher_id, 0, &row, errstr, errstr_size);
        sk_db_resolve_end(db);
        if (err != SK_OK)
                return err;
        *moved = row.state == to && row.epoch == epoch + 1;
        *again = row.state == from && row.epoch == epoch;
        return SK_OK;
}

sk_err_t sk_dsw_move(sk_db_t *db, int64_t voucher_id, int from, int64_t epoch, int to,
                     const char *by, int *moved, char *errstr, size_t errstr_size)
{
        sk_err_t err = SK_OK;
        int again = 1;

        for (int run = 0; run < 2 && again; run++) {
                err = move_once(db, voucher_id, from, epoch, to, by, moved, errstr, errstr_size);
                if (err == SK_OK || sk_db_write_class(sk_db_errno(db)) != SK_EUNKNOWN)
                        return err;
                /* An autocommit write that may have applied: read the epoch. */
                sk_db_drop(db);
                if ((err = resolve_move(db, voucher_id, from, epoch, to, moved, &again, errstr,
                                        errstr_size)) != SK_OK || *moved)
                        return err;
        }
        return err == SK_OK ? SK_OK : SK_EUNKNOWN;
}

/* One db -> rebuilding transaction; SK_EUNKNOWN: its COMMIT's outcome is unknown. */
static sk_err_t begin_rebuild_txn(sk_db_t *db, int64_t voucher_id, int64_t epoch, const char *by,
                                  int *moved, char *errstr, size_t errstr_size)
{
        int64_t p[2] = { epoch + 1, voucher_id };
        sk_err_t err;

        *moved = 0;
        if ((err = sk_db_begin(db, errstr, errstr_size)) != SK_OK)
                return err;
        /* The conditional move, then every bucket row of V in the same transaction
         * (DESIGN.md 16 (2)): a DB-only sale updates one of them, so it either waits
         * for this COMMIT (one node) or fails certification against it (Galera, 1213)
         * and retries into state rebuilding. No FOR UPDATE: it is node-local. */
        err = move_once(db, voucher_id, SK_DSW_DB, epoch, SK_DSW_REBUILDING, by, moved, errstr,
                        errstr_size);
        if (err == SK_OK && *moved)
                err = sk_db_exec_i64(db, "UPDATE tb_seckill_stock SET switch_epoch = ? WHERE "
                                     "voucher_id = ?", p, 2, NULL, errstr, errstr_size);
        if (err == SK_OK && *moved && (err = sk_db_commit_outcome(db, errstr, errstr_size)) == SK_EUNKNOWN) {
                *moved = 0;
                return err;
        }
        if (err != SK_OK || !*moved) {
                sk_db_rollback(db);
                *moved = 0;
        }
        return err;
}

sk_err_t sk_dsw_begin_rebuild(sk_db_t *db, int64_t voucher_id, int64_t epoch, const char *by,
                              int *moved, int64_t *new_epoch, char *errstr, size_t errstr_size)
{
        sk_err_t err = SK_OK;
        int again = 1;

        for (int run = 0; run < 2 && again; run++) {
                if (run > 0 && (err = sk_db_reconnect(db, errstr, errstr_size)) != SK_OK)
                        return err;
                err = begin_rebuild_txn(db, voucher_id, epoch, by, moved, errstr, errstr_size);
                if (err != SK_EUNKNOWN)
                        break;
                if ((err = resolve_move(db, voucher_id, SK_DSW_DB, epoch, SK_DSW_REBUILDING, moved,
                                        &again, errstr, errstr_size)) != SK_OK)
                        return SK_EUNKNOWN;
                if (*moved)
                        break;
                err = again ? SK_EUNKNOWN : SK_OK;      /* someone else moved it: not ours */
        }
        if (err == SK_OK && *moved)
                *new_epoch = epoch + 1;
        return err;
}

sk_err_t sk_dsw_set_mode(sk_db_t *db, int64_t scope, int mode, const char *by, char *errstr,
                         size_t errstr_size)
{
        if ((mode < 0 && scope == 0) || mode > SK_DSW_REDIS_ONLY || scope < 0) {
                sk_seterr(errstr, errstr_size, "bad mode for scope %" PRId64, scope);
                return SK_EINVAL;
        }
        /* mode < 0: the scope follows the default row (NULL) */
        return sk_db_exec_args(db, "INSERT INTO tb_seckill_switch (scope, mode, state, updated_by)"
                               " VALUES (?, ?, 'redis', ?) ON DUPLICATE KEY UPDATE"
                               " mode = VALUES(mode), updated_by = VALUES(updated_by)",
                               SK_ARGS(SK_I64(scope),
                                       mode < 0 ? SK_NULL : SK_STR(sk_dsw_mode_str(mode)),
                                       SK_STR(by)), NULL, errstr, errstr_size);
}

int sk_dsw_next(const sk_dsw_row_t *row, int breaker_open, int redis_healthy,
                int64_t drain_wait_ms, int64_t healthy_ms)
{
        switch (row->state) {
        case SK_DSW_REDIS:
                if (row->mode == SK_DSW_DB_ONLY || (row->mode == SK_DSW_AUTO && breaker_open))
                        return SK_DSW_DRAINING;
                return -1;
        case SK_DSW_DRAINING:
                return row->age_ms >= drain_wait_ms ? SK_DSW_DB : -1;
        case SK_DSW_DB:
                /* healthy for healthy_ms *while in db*: the breaker's window alone
                 * may predate the outage of another front (DESIGN.md 12). */
                return row->mode != SK_DSW_DB_ONLY && redis_healthy && row->age_ms >= healthy_ms
                       ? SK_DSW_REBUILDING : -1;
        case SK_DSW_REBUILDING:
                return redis_healthy ? SK_DSW_REDIS : -1;
        default:
                return -1;
        }
}
