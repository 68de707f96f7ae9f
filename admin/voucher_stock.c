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
#include "sk/ids.h"
#include "sk/keys.h"
#include "sk/rebuild.h"

#define PROG "seckill-admin"

/* The voucher row (its stock lives in the bucket rows, tb_seckill_stock; migration 0005
 * dropped the v3 `stock` column), with its price (minor units) and currency, fixed here
 * for the voucher's life (DESIGN.md 13). Times are written as UTC DATETIME(3) without
 * FROM_UNIXTIME (2038-limited on MariaDB 10.x): 1970-01-01 + ms * 1000 microseconds. */
static sk_err_t insert_voucher_row(sk_db_t *db, int64_t id, int64_t stock, int buckets,
                                   int64_t begin_ms, int64_t end_ms, int status,
                                   int64_t price_minor, const char *currency,
                                   char *errstr, size_t errstr_size)
{
        static const char sql[] =
                "INSERT INTO tb_seckill_voucher"
                " (voucher_id, init_stock, buckets, begin_time, end_time, status, price_minor,"
                " currency) VALUES (?, ?, ?,"
                " TIMESTAMPADD(MICROSECOND, ? * 1000, '1970-01-01 00:00:00'),"
                " TIMESTAMPADD(MICROSECOND, ? * 1000, '1970-01-01 00:00:00'), ?, ?, ?)";
        int64_t v[7] = { id, stock, buckets, begin_ms, end_ms, status, price_minor };
        char cur[4];
        unsigned long cur_len;
        MYSQL_BIND b[8];
        int i;

        snprintf(cur, sizeof(cur), "%s", currency);
        cur_len = strlen(cur);
        for (i = 0; i < 7; i++)
                sk_db_bind_i64(&b[i], &v[i]);
        sk_db_bind_str(&b[7], cur, &cur_len, sizeof(cur));
        return sk_db_exec_bound(db, sql, b, 8, NULL, errstr, errstr_size);
}

sk_err_t sk_admin_insert_voucher(sk_db_t *db, int64_t id, int64_t stock, int buckets,
                                 int64_t begin_ms, int64_t end_ms, int status,
                                 int64_t price_minor, const char *currency,
                                 char *errstr, size_t errstr_size)
{
        char why[384];
        sk_err_t err;

        if (buckets < 1 || buckets > SK_BUCKETS_MAX) {
                sk_seterr(errstr, errstr_size, "--buckets %d outside 1..%d", buckets, SK_BUCKETS_MAX);
                return SK_EINVAL;
        }
        if ((err = sk_db_begin(db, why, sizeof(why))) != SK_OK)
                goto fail;
        err = insert_voucher_row(db, id, stock, buckets, begin_ms, end_ms, status, price_minor,
                                 currency, why, sizeof(why));
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

/* The add-stock transaction (DESIGN.md 14): *applied = 0 when @p rid was seen before
 * (nothing changed). Rolls back on any error. */
static sk_err_t add_stock_txn(sk_db_t *db, int64_t id, int64_t k, const char *rid, int *applied,
                              char *errstr, size_t errstr_size)
{
        char q[2 * 64 + 3], sql[512];
        int64_t buckets = 0, affected = 0;
        int is_null = 0;
        sk_err_t err;

        *applied = 0;
        if (!sk_db_quote(db, rid, q, sizeof(q))) {
                sk_seterr(errstr, errstr_size, "cannot quote the request id");
                return SK_EAGAIN;
        }
        if ((err = sk_db_begin(db, errstr, errstr_size)) != SK_OK)
                return err;
        snprintf(sql, sizeof(sql), "SELECT buckets FROM tb_seckill_voucher WHERE voucher_id = %"
                 PRId64 " FOR UPDATE", id);
        if ((err = sk_db_query_i64(db, sql, &buckets, &is_null, errstr, errstr_size)) != SK_OK)
                goto fail;
        if (buckets < 1 || buckets > SK_BUCKETS_MAX) {
                sk_seterr(errstr, errstr_size, "voucher %" PRId64 " has %" PRId64 " buckets", id, buckets);
                err = SK_EDB;
                goto fail;
        }
        snprintf(sql, sizeof(sql), "INSERT IGNORE INTO tb_seckill_stock_change (request_id, voucher_id,"
                 " amount) VALUES (%s, %" PRId64 ", %" PRId64 ")", q, id, k);
        if ((err = sk_db_exec_i64(db, sql, NULL, 0, &affected, errstr, errstr_size)) != SK_OK)
                goto fail;
        if (affected == 0) { /* a repeat of R: nothing changes */
                sk_db_rollback(db);
                return SK_OK;
        }
        for (int b = 0; b < (int)buckets; b++) {
                int64_t share = sk_bucket_share(k, (int)buckets, b);
                int64_t v[4] = { share, share, id, b };

                err = sk_db_exec_i64(db, "UPDATE tb_seckill_stock SET init_stock = init_stock + ?,"
                                     " stock = stock + ? WHERE voucher_id = ? AND bucket = ?",
                                     v, 4, &affected, errstr, errstr_size);
                if (err == SK_OK && affected != 1) {
                        sk_seterr(errstr, errstr_size, "bucket row %d of voucher %" PRId64 " missing", b, id);
                        err = SK_EDB;
                }
                if (err != SK_OK)
                        goto fail;
        }
        {
                int64_t v[2] = { k, id };
                if ((err = sk_db_exec_i64(db, "UPDATE tb_seckill_voucher SET init_stock = init_stock + ?"
                                          " WHERE voucher_id = ?", v, 2, NULL, errstr,
                                          errstr_size)) != SK_OK)
                        goto fail;
        }
        if ((err = sk_db_commit(db, errstr, errstr_size)) != SK_OK)
                goto fail;
        *applied = 1;
        return SK_OK;
fail:
        sk_db_rollback(db);
        return err;
}

int sk_admin_voucher_add_stock(const sk_conf_t *conf, const char *ids, const sk_admin_opts_t *o)
{
        char errstr[512];
        int64_t id;
        int applied = 0, rc;
        sk_db_t *db;
        sk_rebuild_report_t rep;
        sk_err_t err;
        size_t rlen = strlen(o->request_id);

        if (sk_id_parse_cstr(ids, &id) != 0) {
                fprintf(stderr, PROG ": \"%s\" is not a voucher id\n", ids);
                return 2;
        }
        if (o->stock < 1 || rlen < 1 || rlen > 64) {
                fprintf(stderr, PROG ": voucher add-stock: --stock K (1..1000000000) and "
                        "--request-id R (1..64 chars) are required\n");
                return 2;
        }
        if (!(db = sk_db_connect(&conf->mysql, 0, 5, errstr, sizeof(errstr)))) {
                fprintf(stderr, PROG ": voucher add-stock: database: %s\n", errstr);
                return 1;
        }
        err = add_stock_txn(db, id, o->stock, o->request_id, &applied, errstr, sizeof(errstr));
        sk_db_close(db);
        if (err == SK_ENOTFOUND) {
                fprintf(stderr, PROG ": voucher add-stock: voucher %" PRId64 " is not in the database\n", id);
                return 2;
        }
        if (err != SK_OK) {
                fprintf(stderr, PROG ": voucher add-stock: %s\n", errstr);
                return 1;
        }
        /* Then the rebuild (DESIGN.md 14: brief pause, Redis set from the DB), also after a
         * repeat, so a run interrupted between the commit and the rebuild completes. */
        err = sk_rebuild_voucher(conf, id, o->wait_ms, &rep, errstr, sizeof(errstr));
        rc = err == SK_OK ? 0 : (err == SK_EAGAIN || err == SK_EINVAL || err == SK_EEXIST) ? 2 : 1;
        printf("{\"voucherId\":\"%" PRId64 "\",\"applied\":%s,\"rebuilt\":%s}\n",
               id, applied ? "true" : "false", err == SK_OK ? "true" : "false");
        if (!applied)
                fprintf(stderr, PROG ": voucher add-stock: request id already applied; nothing changed\n");
        if (err != SK_OK)
                fprintf(stderr, PROG ": voucher add-stock: committed, rebuild failed: %s\n", errstr);
        return rc;
}
