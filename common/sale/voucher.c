/* voucher.c: a voucher's rows in the database and the small per-voucher operations that
 * are not the rebuild (sk/voucher.h; DESIGN.md 6, 8): the row, the active buyers, the
 * "could it have sold" DB check, the advisory lock, the connections of one admin
 * operation. The status changes that also write Redis are vstatus.c.
 *
 * Reads go through prepared statements (sk_db_rows: ids bound as
 * MYSQL_TYPE_LONGLONG, every column read as a 64-bit integer). Nothing here writes
 * Redis, logs, retries or decides a purchase. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "sk/traceset.h"
#include "sk/voucher.h"

#define VOUCHER_LOCK_WAIT_MS  5000   /* another preheat/rebuild of this voucher: give up */
#define VOUCHER_LOCK_TTL_MS   30000  /* renewed by every check (before each Redis write chunk) */
#define VOUCHER_REDIS_TO_MS   5000   /* connect and per-command timeout */
#define VOUCHER_DB_LOCKWAIT_S 5      /* session innodb_lock_wait_timeout */

/* Row callback: one bucket row (bucket, init_stock, stock) into the sk_voucher_row_t. */
static int bucket_cb(void *arg, const int64_t *cols, const int *nulls, int ncols)
{
        sk_voucher_row_t *out = arg;
        (void)nulls;
        (void)ncols;
        if (cols[0] < 0 || cols[0] >= SK_BUCKETS_MAX)
                return 0;
        out->nrows++;
        out->bucket_init[cols[0]] = cols[1];
        out->bucket_stock[cols[0]] = cols[2];
        out->stock += cols[2];
        return 0;
}

sk_err_t sk_voucher_get(sk_db_t *db, int64_t voucher_id, int for_update,
                        sk_voucher_row_t *out, char *errstr, size_t errstr_size)
{
        /* Times without UNIX_TIMESTAMP (2038-limited on MariaDB 10.x). */
#define VOUCHER_SELECT \
        "SELECT voucher_id, init_stock, buckets," \
        " TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', begin_time) DIV 1000," \
        " TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', end_time) DIV 1000," \
        " status FROM tb_seckill_voucher WHERE voucher_id = ?"
        static const char plain[] = VOUCHER_SELECT, locking[] = VOUCHER_SELECT " FOR UPDATE";
#undef VOUCHER_SELECT
#define BUCKET_SELECT "SELECT bucket, init_stock, stock FROM tb_seckill_stock WHERE voucher_id = ?"
        static const char bplain[] = BUCKET_SELECT, blocking[] = BUCKET_SELECT " FOR UPDATE";
#undef BUCKET_SELECT
        sk_voucher_row_t row;
        int64_t c[6];
        sk_err_t err;

        memset(&row, 0, sizeof(row));
        err = sk_db_row1(db, for_update ? locking : plain, SK_ARGS(SK_I64(voucher_id)), c, 6, NULL,
                         errstr, errstr_size);
        if (err == SK_ENOTFOUND)
                err = SK_OK;    /* row.voucher_id stays 0: not in the database */
        else if (err == SK_OK) {
                row.voucher_id = c[0];
                row.init_stock = c[1];
                row.buckets = (int)c[2];
                row.begin_ms = c[3];
                row.end_ms = c[4];
                row.status = (int)c[5];
        }
        if (err == SK_OK && row.voucher_id == voucher_id)
                err = sk_db_rows(db, for_update ? blocking : bplain, &voucher_id, 1, 3,
                                 bucket_cb, &row, errstr, errstr_size);
        if (err != SK_OK)
                return err;
        if (row.voucher_id != voucher_id) {
                sk_seterr(errstr, errstr_size, "voucher %" PRId64 " is not in the database",
                          voucher_id);
                return SK_ENOTFOUND;
        }
        *out = row;
        return SK_OK;
}

/* Row callback: append (user_id, trace_id) to the vector. */
static int pair_cb(void *arg, const int64_t *cols, const int *nulls, int ncols)
{
        sk_i64vec_t *out = arg;
        (void)nulls;
        (void)ncols;
        return sk_i64vec_push(out, cols[0]) != SK_OK || sk_i64vec_push(out, cols[1]) != SK_OK;
}

sk_err_t sk_voucher_active_buyers(sk_db_t *db, int64_t voucher_id, sk_i64vec_t *out,
                                  char *errstr, size_t errstr_size)
{
        static const char sql[] = "SELECT user_id, trace_id FROM tb_voucher_order"
                                  " WHERE voucher_id = ? AND status IN " SK_SQL_ORDER_ACTIVE;
        size_t before = out->n;
        sk_err_t err = sk_db_rows(db, sql, &voucher_id, 1, 2, pair_cb, out, errstr,
                                  errstr_size);

        if (err == SK_OK && (out->n - before) % 2 != 0) {
                sk_seterr(errstr, errstr_size, "active buyers: out of memory");
                return SK_ENOMEM;
        }
        return err;
}

sk_err_t sk_voucher_db_sales(sk_db_t *db, const sk_voucher_row_t *row, int *sales,
                             char *why, size_t why_size)
{
        /* One statement: the sub-queries share its read view. */
        static const char sql[] =
                "SELECT EXISTS(SELECT 1 FROM tb_voucher_order WHERE voucher_id = ?),"
                " EXISTS(SELECT 1 FROM tb_seckill_outcome WHERE voucher_id = ?),"
                " EXISTS(SELECT 1 FROM tb_voucher_reconcile_log WHERE voucher_id = ?)";
        static const char *const what[3] = { "it has orders", "it has outcome rows",
                                             "it has reconcile-log rows" };
        const sk_db_arg_t id = SK_I64(row->voucher_id);
        int64_t found[3] = { 0, 0, 0 };
        sk_err_t err;

        *sales = 0;
        if (row->stock != row->init_stock) {
                *sales = 1;
                sk_seterr(why, why_size, "DB stock %" PRId64 " is below init_stock %" PRId64,
                          row->stock, row->init_stock);
                return SK_OK;
        }
        if ((err = sk_db_row1(db, sql, SK_ARGS(id, id, id), found, 3, NULL, why, why_size)) != SK_OK)
                return err;
        for (int i = 0; i < 3; i++)
                if (found[i]) {
                        *sales = 1;
                        sk_seterr(why, why_size, "%s", what[i]);
                        break;
                }
        return SK_OK;
}

size_t sk_voucher_lock_name(char *buf, size_t size, const sk_conf_t *conf, int64_t voucher_id)
{
        int n = snprintf(buf, size, "seckill:voucher:%s:%s:%" PRId64, conf->mysql.database,
                         conf->redis_prefix, voucher_id);
        return n < 0 ? 0 : (size_t)n;
}

sk_err_t sk_voucher_lock(const sk_conf_t *conf, int64_t voucher_id, int wait_ms,
                         sk_dblock_t **lk, char *errstr, size_t errstr_size)
{
        char name[256];
        sk_err_t err;

        *lk = NULL;
        sk_voucher_lock_name(name, sizeof(name), conf, voucher_id);
        if (wait_ms < 0)
                wait_ms = VOUCHER_LOCK_WAIT_MS;
        if (!(*lk = sk_dblock_open(&conf->mysql, name, VOUCHER_LOCK_TTL_MS, errstr, errstr_size)))
                return SK_EAGAIN;
        err = sk_dblock_take(*lk, wait_ms, errstr, errstr_size);
        if (err == SK_EAGAIN) {
                char why[256];

                snprintf(why, sizeof(why), "%s", errstr ? errstr : "");
                sk_seterr(errstr, errstr_size,
                          "voucher %" PRId64 " is being preheated, rebuilt or changed by "
                          "another process (%s)", voucher_id, why);
        }
        if (err != SK_OK) {
                sk_dblock_close(*lk);
                *lk = NULL;
        }
        return err;
}

sk_err_t sk_voucher_connect(const sk_conf_t *conf, sk_db_t **db, sk_redis_t **r,
                            char *errstr, size_t errstr_size)
{
        char why[384];

        *db = NULL;
        *r = NULL;
        if (!(*db = sk_db_connect(&conf->mysql, 0, VOUCHER_DB_LOCKWAIT_S, why, sizeof(why)))) {
                sk_seterr(errstr, errstr_size, "database: %s", why);
                return SK_EAGAIN;
        }
        if (!(*r = sk_redis_connect(&conf->redis, VOUCHER_REDIS_TO_MS, why, sizeof(why)))) {
                sk_seterr(errstr, errstr_size, "redis: %s", why);
                sk_db_close(*db);
                *db = NULL;
                return SK_EAGAIN;
        }
        return SK_OK;
}
