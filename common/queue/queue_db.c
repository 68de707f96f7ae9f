/* queue_db.c: the waiting room's reads of the database (sk/queue_db.h, DESIGN.md 18): the
 * voucher's facts and room settings, the PAID count and the latest pay deadline. Times are
 * read without the 2038 limit of UNIX_TIMESTAMP (microseconds since 1970-01-01). */
#include "sk/queue_db.h"

#include <string.h>

sk_err_t sk_queue_voucher_get(sk_db_t *db, int64_t vid, sk_queue_voucher_t *out, char *errstr,
                              size_t errstr_size)
{
        static const char sql[] =
                "SELECT title, price_minor, currency, init_stock,"
                " TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', begin_time) DIV 1000,"
                " TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', end_time) DIV 1000,"
                " status, buckets, queue_mode, queue_open_s, queue_ttl_s, queue_overbook_pct,"
                " queue_rate FROM tb_seckill_voucher WHERE voucher_id = ?";
        int64_t v[11] = { 0 };
        sk_db_col_t cols[13] = {
                SK_COL_STR(out->title, sizeof(out->title)), SK_COL_I64(&v[0]),
                SK_COL_STR(out->currency, sizeof(out->currency)), SK_COL_I64(&v[1]),
                SK_COL_I64(&v[2]), SK_COL_I64(&v[3]), SK_COL_I64(&v[4]), SK_COL_I64(&v[5]),
                SK_COL_I64(&v[6]), SK_COL_I64(&v[7]), SK_COL_I64(&v[8]), SK_COL_I64(&v[9]),
                SK_COL_I64(&v[10]),
        };
        sk_err_t err;

        memset(out, 0, sizeof(*out));
        err = sk_db_row1_cols(db, sql, SK_ARGS(SK_I64(vid)), cols, 13, NULL, errstr, errstr_size);
        if (err != SK_OK)
                return err;
        out->voucher_id = vid;
        out->price_minor = v[0];
        out->init_stock = v[1];
        out->begin_ms = v[2];
        out->end_ms = v[3];
        out->status = (int)v[4];
        out->buckets = (int)v[5];
        out->conf = (sk_queue_conf_t){ .mode = (int)v[6], .open_s = (int)v[7], .ttl_s = (int)v[8],
                                       .overbook_pct = (int)v[9], .rate = (int)v[10] };
        return SK_OK;
}

sk_err_t sk_queue_db_paid(sk_db_t *db, int64_t vid, int64_t *paid, int64_t *latest_deadline_ms,
                          char *errstr, size_t errstr_size)
{
        /* status 2 PAID, 1 UNPAID (DESIGN.md 6); both read through (voucher_id, status,
         * pay_deadline) */
        static const char sql[] =
                "SELECT (SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = ? AND status = 2),"
                " IFNULL((SELECT TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', MAX(pay_deadline))"
                " DIV 1000 FROM tb_voucher_order WHERE voucher_id = ? AND status = 1), 0)";
        int64_t out[2] = { 0, 0 };
        sk_err_t err = sk_db_row1(db, sql, SK_ARGS(SK_I64(vid), SK_I64(vid)), out, 2, NULL,
                                  errstr, errstr_size);

        if (err == SK_OK) {
                *paid = out[0];
                *latest_deadline_ms = out[1];
        }
        return err;
}

static int push_id(void *arg, const int64_t *cols, const int *nulls, int ncols)
{
        (void)nulls;
        (void)ncols;
        return sk_i64vec_push(arg, cols[0]) == SK_OK ? 0 : 1;
}

sk_err_t sk_queue_db_rooms(sk_db_t *db, int max, sk_i64vec_t *ids, char *errstr,
                           size_t errstr_size)
{
        static const char sql[] =
                "SELECT voucher_id FROM tb_seckill_voucher WHERE queue_mode = 1"
                " AND end_time > UTC_TIMESTAMP(3) - INTERVAL 1 MINUTE ORDER BY begin_time LIMIT ?";
        int64_t lim = max;

        return sk_db_rows(db, sql, &lim, 1, 1, push_id, ids, errstr, errstr_size);
}
