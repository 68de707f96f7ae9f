/* dswitch.c: the per-voucher degrade switch rows (sk/dswitch.h, DESIGN.md 12). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sk/dswitch.h"

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

sk_err_t sk_dsw_ensure(sk_db_t *db, int64_t voucher_id, char *errstr, size_t errstr_size)
{
        char sql[256];

        snprintf(sql, sizeof(sql),
                 "INSERT IGNORE INTO tb_seckill_switch (scope, mode, state, updated_by) "
                 "VALUES (%" PRId64 ", NULL, 'redis', 'ensure')", voucher_id);
        return sk_db_exec(db, sql, errstr, errstr_size);
}

/* Columns: scope, own mode (0 NULL, else 1 + mode), effective mode, state, epoch,
 * since (ms), age (ms), buckets. FIELD() gives 1-based positions. */
#define ROW_SELECT \
        "SELECT s.scope, FIELD(s.mode, 'auto', 'db_only', 'redis_only'), " \
        "FIELD(COALESCE(s.mode, (SELECT d.mode FROM tb_seckill_switch d WHERE d.scope = 0), " \
        "'auto'), 'auto', 'db_only', 'redis_only'), " \
        "FIELD(s.state, 'redis', 'draining', 'db', 'rebuilding'), s.epoch, " \
        "CAST(UNIX_TIMESTAMP(s.since) * 1000 AS SIGNED), " \
        "TIMESTAMPDIFF(MICROSECOND, s.since, NOW(3)) DIV 1000, " \
        "COALESCE((SELECT v.buckets FROM tb_seckill_voucher v WHERE v.voucher_id = s.scope), 1) " \
        "FROM tb_seckill_switch s "

static int parse_row(MYSQL_ROW f, sk_dsw_row_t *row)
{
        int i;

        for (i = 0; i < 8; i++)
                if (!f[i])
                        return -1;
        row->voucher_id = strtoll(f[0], NULL, 10);
        row->own_mode = (int)strtol(f[1], NULL, 10) - 1;
        row->mode = (int)strtol(f[2], NULL, 10) - 1;
        row->state = (int)strtol(f[3], NULL, 10) - 1;
        row->epoch = strtoll(f[4], NULL, 10);
        row->since_ms = strtoll(f[5], NULL, 10);
        row->age_ms = strtoll(f[6], NULL, 10);
        row->buckets = (int)strtol(f[7], NULL, 10);
        if (row->mode < 0)
                row->mode = SK_DSW_AUTO;
        if (row->buckets < 1 || row->buckets > 16)
                row->buckets = 1;
        return row->state < 0 ? -1 : 0;
}

sk_err_t sk_dsw_read_all(sk_db_t *db, sk_dsw_row_t **rows, size_t *n, int *default_mode,
                         char *errstr, size_t errstr_size)
{
        static const char sql[] = ROW_SELECT "ORDER BY s.scope";
        MYSQL_RES *res = NULL;
        MYSQL_ROW f;
        sk_dsw_row_t *out;
        size_t cnt = 0;
        sk_err_t err;

        *rows = NULL;
        *n = 0;
        if ((err = sk_db_query(db, sql, sizeof(sql) - 1, &res, errstr, errstr_size)) != SK_OK)
                return err;
        out = calloc((size_t)mysql_num_rows(res) + 1, sizeof(*out));
        if (!out) {
                mysql_free_result(res);
                return SK_ENOMEM;
        }
        if (default_mode)
                *default_mode = SK_DSW_AUTO;
        while ((f = mysql_fetch_row(res))) {
                sk_dsw_row_t row;

                if (parse_row(f, &row) != 0)
                        continue;
                if (row.voucher_id == 0) {
                        if (default_mode)
                                *default_mode = row.mode;
                        continue;
                }
                out[cnt++] = row;
        }
        mysql_free_result(res);
        if (cnt == 0) {
                free(out);
                out = NULL;
        }
        *rows = out;
        *n = cnt;
        return SK_OK;
}

sk_err_t sk_dsw_get(sk_db_t *db, int64_t voucher_id, int lock, sk_dsw_row_t *row,
                    char *errstr, size_t errstr_size)
{
        char sql[1024];
        MYSQL_RES *res = NULL;
        MYSQL_ROW f;
        sk_err_t err;
        int len;

        len = snprintf(sql, sizeof(sql), ROW_SELECT "WHERE s.scope = %" PRId64 "%s", voucher_id,
                       lock == 2 ? " FOR UPDATE" : lock == 1 ? " LOCK IN SHARE MODE" : "");
        if ((err = sk_db_query(db, sql, (size_t)len, &res, errstr, errstr_size)) != SK_OK)
                return err;
        f = mysql_fetch_row(res);
        err = !f ? SK_ENOTFOUND : parse_row(f, row) == 0 ? SK_OK : SK_EDB;
        if (err == SK_ENOTFOUND)
                sk_seterr(errstr, errstr_size, "no switch row for voucher %" PRId64, voucher_id);
        else if (err == SK_EDB)
                sk_seterr(errstr, errstr_size, "switch row of voucher %" PRId64 " unreadable",
                          voucher_id);
        mysql_free_result(res);
        return err;
}

sk_err_t sk_dsw_move(sk_db_t *db, int64_t voucher_id, int from, int64_t epoch, int to,
                     const char *by, int *moved, char *errstr, size_t errstr_size)
{
        char sql[512], qby[300];
        sk_err_t err;

        *moved = 0;
        if (!sk_db_quote(db, by, qby, sizeof(qby)))
                snprintf(qby, sizeof(qby), "NULL");
        snprintf(sql, sizeof(sql),
                 "UPDATE tb_seckill_switch SET state = '%s', epoch = epoch + 1, since = NOW(3), "
                 "updated_by = %s WHERE scope = %" PRId64 " AND state = '%s' AND epoch = %" PRId64,
                 sk_dsw_state_str(to), qby, voucher_id, sk_dsw_state_str(from), epoch);
        if ((err = sk_db_exec(db, sql, errstr, errstr_size)) != SK_OK)
                return err;
        {
                int64_t changed = 0;

                err = sk_db_query_i64(db, "SELECT ROW_COUNT()", &changed, NULL, errstr, errstr_size);
                *moved = err == SK_OK && changed == 1;
        }
        return err;
}

sk_err_t sk_dsw_begin_rebuild(sk_db_t *db, int64_t voucher_id, int64_t epoch, const char *by,
                              int *moved, int64_t *new_epoch, char *errstr, size_t errstr_size)
{
        sk_dsw_row_t row;
        sk_err_t err;

        *moved = 0;
        if ((err = sk_db_begin(db, errstr, errstr_size)) != SK_OK)
                return err;
        err = sk_dsw_get(db, voucher_id, 2, &row, errstr, errstr_size);
        if (err == SK_OK && row.state == SK_DSW_DB && row.epoch == epoch)
                err = sk_dsw_move(db, voucher_id, SK_DSW_DB, epoch, SK_DSW_REBUILDING, by, moved,
                                  errstr, errstr_size);
        if (err == SK_OK)
                err = sk_db_commit(db, errstr, errstr_size);
        if (err != SK_OK) {
                sk_db_rollback(db);
                *moved = 0;
                return err == SK_ENOTFOUND ? SK_OK : err;
        }
        *new_epoch = epoch + 1;
        return SK_OK;
}

sk_err_t sk_dsw_set_mode(sk_db_t *db, int64_t scope, int mode, const char *by, char *errstr,
                         size_t errstr_size)
{
        char sql[512], qby[300], m[32];

        if ((mode < 0 && scope == 0) || mode > SK_DSW_REDIS_ONLY || scope < 0) {
                sk_seterr(errstr, errstr_size, "bad mode for scope %" PRId64, scope);
                return SK_EINVAL;
        }
        if (!sk_db_quote(db, by, qby, sizeof(qby)))
                snprintf(qby, sizeof(qby), "NULL");
        if (mode < 0)
                snprintf(m, sizeof(m), "NULL");
        else
                snprintf(m, sizeof(m), "'%s'", sk_dsw_mode_str(mode));
        snprintf(sql, sizeof(sql),
                 "INSERT INTO tb_seckill_switch (scope, mode, state, updated_by) VALUES "
                 "(%" PRId64 ", %s, 'redis', %s) ON DUPLICATE KEY UPDATE mode = VALUES(mode), "
                 "updated_by = VALUES(updated_by)", scope, m, qby);
        return sk_db_exec(db, sql, errstr, errstr_size);
}

int sk_dsw_next(const sk_dsw_row_t *row, int breaker_open, int redis_healthy,
                int64_t drain_wait_ms)
{
        switch (row->state) {
        case SK_DSW_REDIS:
                if (row->mode == SK_DSW_DB_ONLY || (row->mode == SK_DSW_AUTO && breaker_open))
                        return SK_DSW_DRAINING;
                return -1;
        case SK_DSW_DRAINING:
                return row->age_ms >= drain_wait_ms ? SK_DSW_DB : -1;
        case SK_DSW_DB:
                return row->mode != SK_DSW_DB_ONLY && redis_healthy ? SK_DSW_REBUILDING : -1;
        case SK_DSW_REBUILDING:
                return redis_healthy ? SK_DSW_REDIS : -1;
        default:
                return -1;
        }
}
