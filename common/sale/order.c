/* order.c: the database side of the order lifecycle (sk/order.h, DESIGN.md 13):
 * cancel/close one order, the closer's batch, the overdue figure. Paying is the
 * payment callback's transaction (payment.c), which closes a late order with
 * sk_order_close_in_tx. Every statement is a
 * prepared statement with BIGINT parameters bound as MYSQL_TYPE_LONGLONG; every state
 * change is a conditional UPDATE on status = 1 (pay and close never both win).
 *
 * Lock order: the order row(s) first (the conditional UPDATE, or the closer's SELECT
 * ... FOR UPDATE SKIP LOCKED), then the bucket rows in (voucher_id, bucket) order. A consumer
 * inserting a new order of the same user locks the voucher row first: the two may
 * deadlock (1213, transient); every caller retries from BEGIN.
 *
 * What it does not do: touch Redis (release.c) or retry (the callers do). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sk/db_outcome.h"
#include "sk/ids.h"
#include "sk/ledger.h"
#include "sk/order.h"
#include "sk/traceset.h"

/* The columns of sk_order_row_t, in that order (see order_row_cb). */
#define ORDER_COLS "id, user_id, voucher_id, trace_id, status, " \
        "CAST(UNIX_TIMESTAMP(pay_deadline) * 1000 AS SIGNED), " \
        "(pay_deadline IS NULL OR pay_deadline <= NOW(3)), bucket, " \
        "(SELECT buckets FROM tb_seckill_voucher v WHERE v.voucher_id = tb_voucher_order.voucher_id)"
#define ORDER_NCOLS 9

const char *sk_order_status_str(int status)
{
        switch (status) {
        case SK_ORDER_UNPAID: return "UNPAID";
        case SK_ORDER_PAID: return "PAID";
        case SK_ORDER_CANCELLED: return "CANCELLED";
        case SK_ORDER_CLOSED: return "CLOSED";
        default: return "UNKNOWN";
        }
}

typedef struct rows {
        sk_order_row_t *v;
        size_t n, cap;
        int oom;
} rows_t;

static int order_row_cb(void *arg, const int64_t *c, const int *nulls, int ncols)
{
        rows_t *r = arg;
        sk_order_row_t *o;

        (void)ncols;
        if (r->n == r->cap) {
                size_t cap = r->cap ? r->cap * 2 : 8;
                sk_order_row_t *v = realloc(r->v, cap * sizeof(*v));
                if (!v) {
                        r->oom = 1;
                        return 1;
                }
                r->v = v;
                r->cap = cap;
        }
        o = &r->v[r->n++];
        o->order_id = c[0];
        o->user_id = c[1];
        o->voucher_id = c[2];
        o->trace_id = c[3];
        o->status = (int)c[4];
        o->pay_deadline_ms = nulls[5] ? 0 : c[5];
        o->past_deadline = c[6] != 0;
        o->bucket = (int)c[7];
        o->buckets = nulls[8] || c[8] < 1 || c[8] > SK_BUCKETS_MAX ? 0 : (int)c[8];
        return 0;
}

sk_err_t sk_order_get(sk_db_t *db, int64_t order_id, int64_t user_id, sk_order_row_t *row,
                      char *errstr, size_t errstr_size)
{
        rows_t r = { 0 };
        int64_t p[1] = { order_id };
        sk_err_t err;

        err = sk_db_rows(db, "SELECT " ORDER_COLS " FROM tb_voucher_order WHERE id = ?",
                         p, 1, ORDER_NCOLS, order_row_cb, &r, errstr, errstr_size);
        if (err == SK_OK && r.oom)
                err = SK_ENOMEM;
        if (err == SK_OK && (r.n == 0 || (user_id && r.v[0].user_id != user_id))) {
                sk_seterr(errstr, errstr_size, "order %" PRId64 " not found", order_id);
                err = SK_ENOTFOUND;
        }
        if (err == SK_OK)
                *row = r.v[0];
        free(r.v);
        return err;
}

/* The RESTORE reconcile-log row of a cancelled (SK_BIZ_CANCEL) or closed (SK_BIZ_CLOSE)
 * order: one unit back onto @p before. */
static sk_err_t insert_restore(sk_db_t *db, const sk_order_row_t *o, int64_t before,
                               sk_log_business_t business, char *errstr, size_t errstr_size)
{
        const sk_ledger_row_t row = {
                .order_id = o->order_id, .user_id = o->user_id, .voucher_id = o->voucher_id,
                .trace_id = o->trace_id, .before_qty = before, .change_qty = 1,
                .after_qty = before + 1, .log_type = SK_LOG_RESTORE, .business = business,
                .detail = business == SK_BIZ_CANCEL ? "order cancelled" : "order closed unpaid",
                .keep_existing = 0,
        };

        return sk_ledger_write(db, &row, errstr, errstr_size);
}

/* Bucket @p bucket's stock row (DESIGN.md 6, 13: the order's bucket): lock, read its
 * stock, add @p k. *before = stock before. */
static sk_err_t stock_add(sk_db_t *db, int64_t voucher_id, int bucket, int64_t k,
                          int64_t *before, char *errstr, size_t errstr_size)
{
        int64_t p[3] = { k, voucher_id, bucket }, affected = 0;
        sk_err_t err;

        if ((err = sk_db_i64(db, "SELECT stock FROM tb_seckill_stock"
                             " WHERE voucher_id = ? AND bucket = ? FOR UPDATE",
                             SK_ARGS(SK_I64(voucher_id), SK_I64(bucket)), before, NULL, errstr,
                             errstr_size)))
                return err == SK_ENOTFOUND ? SK_EDB : err;
        err = sk_db_exec_i64(db, "UPDATE tb_seckill_stock SET stock = stock + ?"
                             " WHERE voucher_id = ? AND bucket = ?",
                             p, 3, &affected, errstr, errstr_size);
        if (err == SK_OK && affected != 1) {
                sk_seterr(errstr, errstr_size, "voucher %" PRId64 " bucket %d: stock row not updated",
                          voucher_id, bucket);
                err = SK_EDB;
        }
        return err;
}

/* The transition of sk_order_end / sk_order_close_in_tx inside the caller's open
 * transaction: the conditional UPDATE, the row as read after it, and for a changed row
 * the bucket's stock + 1 and the RESTORE row. @p grace_s < 0: no deadline condition
 * (cancel). */
static sk_err_t end_in_tx(sk_db_t *db, int64_t order_id, int64_t user_id, int to, int grace_s,
                          int *changed, sk_order_row_t *row, char *errstr, size_t errstr_size)
{
        int64_t p[5] = { to, order_id, user_id, user_id, grace_s < 0 ? 0 : grace_s };
        int64_t affected = 0, before = 0;
        sk_err_t err;

        *changed = 0;
        err = sk_db_exec_i64(db, grace_s < 0
                          ? "UPDATE tb_voucher_order SET status = ?, closed_at = NOW(3)"
                            " WHERE id = ? AND (user_id = ? OR ? = 0) AND status = "
                            SK_SQL_ORDER_UNPAID
                          : "UPDATE tb_voucher_order SET status = ?, closed_at = NOW(3)"
                            " WHERE id = ? AND (user_id = ? OR ? = 0) AND status = "
                            SK_SQL_ORDER_UNPAID " AND (pay_deadline IS NULL OR"
                            " pay_deadline + INTERVAL ? SECOND <= NOW(3))",
                          p, grace_s < 0 ? 4 : 5, &affected, errstr, errstr_size);
        if (err)
                return err;
        if ((err = sk_order_get(db, order_id, user_id, row, errstr, errstr_size)))
                return err;
        if (affected != 1)
                return SK_OK;
        if ((err = stock_add(db, row->voucher_id, row->bucket, 1, &before, errstr, errstr_size)) ||
            (err = insert_restore(db, row, before,
                                  to == SK_ORDER_CANCELLED ? SK_BIZ_CANCEL : SK_BIZ_CLOSE, errstr,
                                  errstr_size)))
                return err;
        *changed = 1;
        return SK_OK;
}

sk_err_t sk_order_resolve(sk_db_t *db, sk_order_row_t *rows, size_t n, int to, size_t *kept,
                          char *errstr, size_t errstr_size)
{
        sk_order_row_t now;
        sk_err_t err;
        size_t i, k = 0;

        *kept = 0;
        if ((err = sk_db_resolve_begin(db, errstr, errstr_size)))
                return err;
        for (i = 0; i < n; i++) {
                err = sk_order_get(db, rows[i].order_id, 0, &now, errstr, errstr_size);
                if (err == SK_ENOTFOUND) /* orders are never deleted */
                        err = SK_EDB;
                if (err)
                        break;
                if (now.status == to) {
                        sk_order_row_t t = rows[k];

                        rows[i].status = now.status;
                        rows[k] = rows[i];
                        rows[i] = t;
                        k++;
                }
        }
        sk_db_resolve_end(db);
        if (err)
                return err;
        *kept = k;
        return SK_OK;
}

/* sk_order_end's COMMIT had an unknown outcome (DESIGN.md 16): the order's status, read
 * on a fresh session, tells. @p to: ended as asked (ours, or a repeat of it: *changed =
 * 1, release.lua is idempotent); still UNPAID: not applied, SK_EAGAIN (run again, same
 * keys); another status: another transition won (*changed = 0). */
static sk_err_t resolve_end(sk_db_t *db, int to, int *changed, sk_order_row_t *row,
                            char *errstr, size_t errstr_size)
{
        sk_err_t err;

        *changed = 0;
        if ((err = sk_db_resolve_begin(db, errstr, errstr_size)))
                return err;
        err = sk_order_get(db, row->order_id, 0, row, errstr, errstr_size);
        sk_db_resolve_end(db);
        if (err)
                return err == SK_ENOTFOUND ? SK_EDB : err; /* orders are never deleted */
        if (row->status == to) {
                *changed = 1;
                return SK_OK;
        }
        if (row->status == SK_ORDER_UNPAID) {
                sk_seterr(errstr, errstr_size, "order %" PRId64 ": COMMIT not applied", row->order_id);
                return SK_EAGAIN;
        }
        return SK_OK;
}

sk_err_t sk_order_end(sk_db_t *db, int64_t order_id, int64_t user_id, int to, int grace_s,
                      int *changed, sk_order_row_t *row, char *errstr, size_t errstr_size)
{
        sk_err_t err;

        *changed = 0;
        if (order_id <= 0 || user_id < 0 || (to != SK_ORDER_CANCELLED && to != SK_ORDER_CLOSED) ||
            grace_s < 0) {
                sk_seterr(errstr, errstr_size, "order end: invalid argument");
                return SK_EINVAL;
        }
        if ((err = sk_db_begin(db, errstr, errstr_size)))
                return err;
        if ((err = end_in_tx(db, order_id, user_id, to, to == SK_ORDER_CANCELLED ? -1 : grace_s,
                             changed, row, errstr, errstr_size)))
                goto fail;
        if (!*changed) {
                sk_db_rollback(db);
                return SK_OK;
        }
        err = sk_db_commit_outcome(db, errstr, errstr_size);
        if (err == SK_EUNKNOWN)
                return resolve_end(db, to, changed, row, errstr, errstr_size);
        if (err)
                goto fail;
        return SK_OK;
fail:
        *changed = 0;
        sk_db_rollback(db);
        return err;
}

sk_err_t sk_order_close_in_tx(sk_db_t *db, int64_t order_id, int grace_s, int *changed,
                              sk_order_row_t *row, char *errstr, size_t errstr_size)
{
        *changed = 0;
        if (order_id <= 0 || grace_s < 0) {
                sk_seterr(errstr, errstr_size, "order close: invalid argument");
                return SK_EINVAL;
        }
        return end_in_tx(db, order_id, 0, SK_ORDER_CLOSED, grace_s, changed, row, errstr,
                         errstr_size);
}

static int cmp_voucher(const void *a, const void *b)
{
        const sk_order_row_t *x = a, *y = b;

        if (x->voucher_id != y->voucher_id)
                return x->voucher_id < y->voucher_id ? -1 : 1;
        if (x->bucket != y->bucket)
                return x->bucket < y->bucket ? -1 : 1;
        return x->order_id < y->order_id ? -1 : x->order_id > y->order_id;
}

sk_err_t sk_order_close_due(sk_db_t *db, int limit, int grace_s, sk_order_row_t **rows,
                            size_t *n, char *errstr, size_t errstr_size)
{
        rows_t r = { 0 };
        int64_t q[2] = { grace_s < 0 ? 0 : grace_s, limit < 1 ? 1 : limit };
        sk_err_t err;
        size_t i, j;

        *rows = NULL;
        *n = 0;
        if ((err = sk_db_begin(db, errstr, errstr_size)))
                return err;
        /* "pay_deadline + grace <= NOW(3)" (DESIGN.md 13) written as a range on the
         * column, so (status, pay_deadline) bounds the scan to the orders that are due;
         * with the column inside the expression the server read every UNPAID order on
         * every round (docs/SCALING.md "What one batch costs the database"). */
        err = sk_db_rows(db, "SELECT " ORDER_COLS " FROM tb_voucher_order"
                         " WHERE status = " SK_SQL_ORDER_UNPAID
                         " AND pay_deadline <= NOW(3) - INTERVAL ? SECOND"
                         " ORDER BY pay_deadline LIMIT ? FOR UPDATE SKIP LOCKED",
                         q, 2, ORDER_NCOLS, order_row_cb, &r, errstr, errstr_size);
        if (err == SK_OK && r.oom)
                err = SK_ENOMEM;
        if (err)
                goto fail;
        if (r.n == 0) {
                sk_db_rollback(db);
                free(r.v);
                return SK_OK;
        }
        for (i = 0; i < r.n; i++) {
                int64_t p[1] = { r.v[i].order_id }, affected = 0;
                if ((err = sk_db_exec_i64(db, "UPDATE tb_voucher_order SET status = "
                                              SK_SQL_ORDER_CLOSED ", closed_at = NOW(3)"
                                       " WHERE id = ? AND status = "
                                       SK_SQL_ORDER_UNPAID, p, 1, &affected, errstr,
                                       errstr_size)))
                        goto fail;
                if (affected != 1) { /* locked by us: cannot happen; never close it twice */
                        sk_seterr(errstr, errstr_size, "order %" PRId64 " changed under its lock",
                                  r.v[i].order_id);
                        err = SK_EAGAIN;
                        goto fail;
                }
                r.v[i].status = SK_ORDER_CLOSED;
        }
        /* Bucket rows in (voucher, bucket) order, one UPDATE each. */
        qsort(r.v, r.n, sizeof(*r.v), cmp_voucher);
        for (i = 0; i < r.n; i = j) {
                int64_t before = 0;
                for (j = i; j < r.n && r.v[j].voucher_id == r.v[i].voucher_id &&
                            r.v[j].bucket == r.v[i].bucket; j++)
                        ;
                if ((err = stock_add(db, r.v[i].voucher_id, r.v[i].bucket, (int64_t)(j - i),
                                     &before, errstr, errstr_size)))
                        goto fail;
                for (size_t k = i; k < j; k++, before++)
                        if ((err = insert_restore(db, &r.v[k], before, SK_BIZ_CLOSE, errstr, errstr_size)))
                                goto fail;
        }
        if ((err = sk_db_commit_outcome(db, errstr, errstr_size)) == SK_EUNKNOWN) {
                *rows = r.v; /* the orders of the unknown COMMIT: sk_order_resolve */
                *n = r.n;
                return err;
        }
        if (err)
                goto fail;
        *rows = r.v;
        *n = r.n;
        return SK_OK;
fail:
        sk_db_rollback(db);
        free(r.v);
        return err;
}

sk_err_t sk_order_overdue_oldest_s(sk_db_t *db, int grace_s, int64_t *seconds, char *errstr,
                                   size_t errstr_size)
{
        int64_t g = grace_s < 0 ? 0 : grace_s;
        sk_err_t err;

        *seconds = 0;
        /* A range on (status, pay_deadline), as in sk_order_close_due. */
        err = sk_db_i64(db, "SELECT TIMESTAMPDIFF(SECOND, MIN(pay_deadline) + INTERVAL ? SECOND,"
                        " NOW(3)) FROM tb_voucher_order WHERE status = " SK_SQL_ORDER_UNPAID
                        " AND pay_deadline <= NOW(3) - INTERVAL ? SECOND",
                        SK_ARGS(SK_I64(g), SK_I64(g)), seconds, NULL, errstr, errstr_size);
        return err == SK_ENOTFOUND ? SK_OK : err;
}

/* The voucher's orders selected by @p sql (one `?`: the voucher id), in id order. */
static sk_err_t list_orders(sk_db_t *db, const char *sql, int64_t voucher_id, sk_order_row_t **rows,
                            size_t *n, char *errstr, size_t errstr_size)
{
        rows_t r = { 0 };
        sk_err_t err;

        *rows = NULL;
        *n = 0;
        err = sk_db_rows(db, sql, &voucher_id, 1, ORDER_NCOLS, order_row_cb, &r, errstr, errstr_size);
        if (err == SK_OK && r.oom)
                err = SK_ENOMEM;
        if (err) {
                free(r.v);
                return err;
        }
        *rows = r.v;
        *n = r.n;
        return SK_OK;
}

sk_err_t sk_order_list_ended(sk_db_t *db, int64_t voucher_id, sk_order_row_t **rows, size_t *n,
                             char *errstr, size_t errstr_size)
{
        return list_orders(db, "SELECT " ORDER_COLS " FROM tb_voucher_order"
                           " WHERE voucher_id = ? AND status IN " SK_SQL_ORDER_ENDED " ORDER BY id",
                           voucher_id, rows, n, errstr, errstr_size);
}

sk_err_t sk_order_list_active(sk_db_t *db, int64_t voucher_id, sk_order_row_t **rows, size_t *n,
                              char *errstr, size_t errstr_size)
{
        return list_orders(db, "SELECT " ORDER_COLS " FROM tb_voucher_order"
                           " WHERE voucher_id = ? AND status IN " SK_SQL_ORDER_ACTIVE
                           " ORDER BY id",
                           voucher_id, rows, n, errstr, errstr_size);
}
