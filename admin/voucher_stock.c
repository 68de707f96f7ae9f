/* voucher_stock.c: the DB side of a voucher's stock for seckill-admin (admin.h): the
 * voucher row with its bucket rows and switch row at creation, and add-stock
 * (DESIGN.md v4 6, 14). Every change is one transaction; nothing partial is left on an
 * error. Single-threaded (the admin). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "admin.h"
#include "sk/buckets.h"
#include "sk/db.h"
#include "sk/keys.h"

#define PROG "seckill-admin"

/* The voucher row. Times are written as UTC DATETIME(3) without FROM_UNIXTIME
 * (2038-limited on MariaDB 10.x): 1970-01-01 + ms * 1000 microseconds. The v3 `stock`
 * column is still written (= init) while migration 0005 has not dropped it. */
static sk_err_t insert_voucher_row(sk_db_t *db, int64_t id, int64_t stock, int buckets,
                                   int64_t begin_ms, int64_t end_ms, int status,
                                   int has_stock_col, char *errstr, size_t errstr_size)
{
        static const char with_stock[] =
                "INSERT INTO tb_seckill_voucher"
                " (voucher_id, init_stock, buckets, begin_time, end_time, status, stock)"
                " VALUES (?, ?, ?,"
                " TIMESTAMPADD(MICROSECOND, ? * 1000, '1970-01-01 00:00:00'),"
                " TIMESTAMPADD(MICROSECOND, ? * 1000, '1970-01-01 00:00:00'), ?, ?)";
        static const char without_stock[] =
                "INSERT INTO tb_seckill_voucher"
                " (voucher_id, init_stock, buckets, begin_time, end_time, status)"
                " VALUES (?, ?, ?,"
                " TIMESTAMPADD(MICROSECOND, ? * 1000, '1970-01-01 00:00:00'),"
                " TIMESTAMPADD(MICROSECOND, ? * 1000, '1970-01-01 00:00:00'), ?)";
        int64_t v[7] = { id, stock, buckets, begin_ms, end_ms, status, stock };
        const char *sql = has_stock_col ? with_stock : without_stock;

        return sk_db_exec_i64(db, sql, v, has_stock_col ? 7 : 6, NULL, errstr, errstr_size);
}

/* Whether tb_seckill_voucher still has the v3 `stock` column (before migration 0005). */
static sk_err_t voucher_has_stock_col(sk_db_t *db, int *has, char *errstr, size_t errstr_size)
{
        int64_t n = 0;
        int is_null = 0;
        sk_err_t err = sk_db_query_i64(db, "SELECT COUNT(*) FROM information_schema.COLUMNS"
                                       " WHERE TABLE_SCHEMA = DATABASE()"
                                       " AND TABLE_NAME = 'tb_seckill_voucher'"
                                       " AND COLUMN_NAME = 'stock'", &n, &is_null,
                                       errstr, errstr_size);
        *has = err == SK_OK && n > 0;
        return err;
}

sk_err_t sk_admin_insert_voucher(sk_db_t *db, int64_t id, int64_t stock, int buckets,
                                 int64_t begin_ms, int64_t end_ms, int status,
                                 char *errstr, size_t errstr_size)
{
        char why[384];
        int has_stock_col = 0;
        sk_err_t err;

        if (buckets < 1 || buckets > SK_BUCKETS_MAX) {
                sk_seterr(errstr, errstr_size, "--buckets %d outside 1..%d", buckets, SK_BUCKETS_MAX);
                return SK_EINVAL;
        }
        if ((err = voucher_has_stock_col(db, &has_stock_col, why, sizeof(why))) != SK_OK)
                goto fail;
        if ((err = sk_db_begin(db, why, sizeof(why))) != SK_OK)
                goto fail;
        err = insert_voucher_row(db, id, stock, buckets, begin_ms, end_ms, status,
                                 has_stock_col, why, sizeof(why));
        for (int b = 0; err == SK_OK && b < buckets; b++) {
                int64_t share = sk_bucket_share(stock, buckets, b);
                int64_t v[4] = { id, b, share, share };

                err = sk_db_exec_i64(db, "INSERT INTO tb_seckill_stock"
                                     " (voucher_id, bucket, init_stock, stock) VALUES (?, ?, ?, ?)",
                                     v, 4, NULL, why, sizeof(why));
        }
        if (err == SK_OK)
                err = sk_db_exec_i64(db, "INSERT INTO tb_seckill_switch (scope, mode, state, updated_by)"
                                     " VALUES (?, NULL, 'redis', 'voucher create')",
                                     &id, 1, NULL, why, sizeof(why));
        if (err == SK_OK)
                err = sk_db_commit(db, why, sizeof(why));
        if (err != SK_OK) {
                sk_db_rollback(db);
                goto fail;
        }
        return SK_OK;
fail:
        sk_seterr(errstr, errstr_size, "insert voucher: %s%s", why,
                  sk_db_errno(db) == 1146 ? " (run `" PROG " db migrate`)" : "");
        return err;
}
