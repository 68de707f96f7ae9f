/* vstatus.c: a voucher's status changed in the database, then in Redis (sk/vstatus.h;
 * DESIGN.md 6, 8): `seckill-admin voucher set-status` and the reconciler's reset of a
 * meta left at status 4. Both under the voucher's lock (sk/voucher.h: a tb_lock row,
 * re-checked before each Redis write), the DB first (the book of record), then every
 * bucket's existing meta rewritten from the DB row (sk/vstate.h). Nothing here logs or
 * retries. */
#include <stdio.h>

#include "sk/traceset.h"
#include "sk/voucher.h"
#include "sk/vstate.h"
#include "sk/vstatus.h"

/* UPDATE the DB status of the voucher (prepared; @p status already validated). */
static sk_err_t db_set_status(sk_db_t *db, int64_t voucher_id, int status, char *errstr,
                              size_t errstr_size)
{
        static const char *const heads[5] = {
                NULL,
                "UPDATE tb_seckill_voucher SET status = 1 WHERE voucher_id IN ",
                "UPDATE tb_seckill_voucher SET status = 2 WHERE voucher_id IN ",
                "UPDATE tb_seckill_voucher SET status = 3 WHERE voucher_id IN ",
                "UPDATE tb_seckill_voucher SET status = 4 WHERE voucher_id IN ",
        };
        return sk_traceset_exec_in(db, heads[status], &voucher_id, 1, NULL, errstr, errstr_size);
}

/* Rewrite the existing meta of every bucket of @p row (DESIGN.md 4: each bucket has
 * its own meta), the last bucket first so bucket 0, whose `buckets` the front reads,
 * is written last; the lock @p lk re-checked before each write (SK_EAGAIN once lost).
 * *written = 1 when bucket 0's meta existed. */
static sk_err_t metas_from_row(const sk_conf_t *conf, sk_redis_t *r, sk_dblock_t *lk,
                               const sk_voucher_row_t *row, int *written, char *errstr,
                               size_t errstr_size)
{
        int n = row->buckets > 0 && row->buckets <= SK_BUCKETS_MAX ? row->buckets : 1;
        sk_err_t err = SK_OK;

        *written = 0;
        for (int b = n - 1; b >= 0 && err == SK_OK; b--) {
                sk_vstate_keys_t k;
                int w = 0;

                sk_vstate_keys(&k, conf->redis_prefix, row->voucher_id, b);
                if ((err = sk_dblock_check(lk, errstr, errstr_size)) != SK_OK) {
                        err = SK_EAGAIN;
                        break;
                }
                err = sk_vstate_meta(r, &k, sk_vstate_expiry(conf, row), row, &w, errstr,
                                     errstr_size);
                if (b == 0)
                        *written = w;
        }
        return err;
}

sk_err_t sk_voucher_set_status(const sk_conf_t *conf, int64_t voucher_id, int status,
                               int *meta_written, char *errstr, size_t errstr_size)
{
        sk_db_t *db = NULL;
        sk_redis_t *r = NULL;
        sk_voucher_row_t row;
        sk_dblock_t *lk = NULL;
        int written = 0;
        sk_err_t err;

        if (meta_written)
                *meta_written = 0;
        if (status < 1 || status > 4) {
                sk_seterr(errstr, errstr_size, "status %d is not 1..4", status);
                return SK_EINVAL;
        }
        if ((err = sk_voucher_connect(conf, &db, &r, errstr, errstr_size)) != SK_OK)
                return err;
        if ((err = sk_voucher_lock(conf, voucher_id, -1, &lk, errstr, errstr_size)) != SK_OK)
                goto done;
        /* The DB first: it is the book of record; Redis follows. */
        if ((err = sk_voucher_get(db, voucher_id, 0, &row, errstr, errstr_size)) != SK_OK ||
            (err = db_set_status(db, voucher_id, status, errstr, errstr_size)) != SK_OK)
                goto done;
        row.status = status;
        if ((err = metas_from_row(conf, r, lk, &row, &written, errstr, errstr_size)) != SK_OK)
                goto done;
        if (meta_written)
                *meta_written = written;
done:
        sk_dblock_close(lk);
        sk_redis_close(r);
        sk_db_close(db);
        return err;
}

sk_err_t sk_voucher_reset_meta_with(const sk_conf_t *conf, sk_db_t *db, sk_redis_t *r,
                                    int64_t voucher_id, int *meta_written, char *errstr,
                                    size_t errstr_size)
{
        sk_voucher_row_t row;
        sk_dblock_t *lk = NULL;
        int written = 0;
        sk_err_t err;

        if (meta_written)
                *meta_written = 0;
        /* No wait: a live row means a rebuild is running; leave it alone. "Nobody holds
         * the lock" = no row with until >= NOW(3) (DESIGN.md 8, 16): taking it proves
         * that, and keeps a rebuild from starting while meta is reset. */
        if ((err = sk_voucher_lock(conf, voucher_id, 0, &lk, errstr, errstr_size)) != SK_OK)
                return err;
        if ((err = sk_voucher_get(db, voucher_id, 0, &row, errstr, errstr_size)) == SK_OK &&
            (err = metas_from_row(conf, r, lk, &row, &written, errstr, errstr_size)) == SK_OK &&
            meta_written)
                *meta_written = written;
        sk_dblock_close(lk);
        return err;
}
