/* payment.c: the payment callback's transaction and the refund list (sk/payment.h,
 * DESIGN.md 13). Every value (ids, amounts, the txn id, the currency, a refund
 * reference) is a bound parameter of the statement (sk/db.h), never spliced into its SQL.
 *
 * Lock order: the order row (SELECT ... FOR UPDATE), then its bucket row (a close on the
 * spot, sk_order_close_in_tx), then the tb_payment insert, as order.c's lock order.
 * Two deliveries of one txn id at once: both may find no row; the second waits on the
 * order lock, decides again and its INSERT meets the first's key (1062): rolled back
 * and returned as SK_EAGAIN, and its retry answers from the first's row.
 *
 * What it does not do: verify signatures (sk/paysig.h), touch Redis, or retry. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sk/db_outcome.h"
#include "sk/model.h"
#include "sk/order.h"
#include "sk/payment.h"

static const char *const reasons[] = {
        [SK_PAYREASON_NONE] = "", [SK_PAYREASON_LATE] = "late",
        [SK_PAYREASON_CLOSED] = "closed", [SK_PAYREASON_CANCELLED] = "cancelled",
        [SK_PAYREASON_AMOUNT] = "amount", [SK_PAYREASON_CURRENCY] = "currency",
        [SK_PAYREASON_DUPLICATE] = "duplicate", [SK_PAYREASON_FAILED] = "failed",
};
#define NREASONS ((int)(sizeof(reasons) / sizeof(reasons[0])))
/* FIELD() of the stored text, in the enum's order (1 = late ... 7 = failed, 0 = NULL). */
#define REASON_FIELD "FIELD(reason, 'late', 'closed', 'cancelled', 'amount', 'currency', " \
        "'duplicate', 'failed')"

const char *sk_payreason_str(int reason)
{
        return reason > 0 && reason < NREASONS ? reasons[reason] : "";
}

int sk_payment_valid_ref(const char *s)
{
        size_t n = 0;

        if (!s)
                return 0;
        for (; s[n]; n++)
                if ((unsigned char)s[n] < 0x21 || (unsigned char)s[n] > 0x7e)
                        return 0;
        return n >= 1 && n <= SK_PAYMENT_TXN_MAX;
}

int sk_payment_valid_currency(const char *s)
{
        return s && s[0] >= 'A' && s[0] <= 'Z' && s[1] >= 'A' && s[1] <= 'Z' && s[2] >= 'A' &&
               s[2] <= 'Z' && !s[3];
}

int sk_payment_parse_amount(const char *s, int64_t *out)
{
        size_t n = s ? strlen(s) : 0, i;
        int64_t v = 0;

        if (n == 0 || n > 18 || (n > 1 && s[0] == '0'))
                return -1;
        for (i = 0; i < n; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return -1;
                v = v * 10 + (s[i] - '0');
        }
        *out = v;
        return 0;
}

/* The row of a txn id: same order, amount and currency; result; reason; ours. */
#define ROW_SQL "SELECT order_id = ? AND amount_minor = ? AND currency = ?, result," \
        " COALESCE(" REASON_FIELD ", 0), COALESCE(attempt_id = ?, 0)" \
        " FROM tb_payment WHERE provider_txn_id = ?"

/* A repeat: the row of the txn id decides. *found: 0 no row, 1 a row of another
 * delivery (or one stored before attempt ids), 2 a row of @p p's own attempt_id.
 * @p lock: a locking read (waits for a writer of the row to end). @returns SK_OK, or the
 * DB error. */
static sk_err_t row_of(sk_db_t *db, const sk_payment_t *p, int lock, int *found,
                       sk_payment_res_t *res, char *errstr, size_t errstr_size)
{
        int64_t c[4];
        sk_err_t err;

        *found = 0;
        err = sk_db_row1(db, lock ? ROW_SQL " LOCK IN SHARE MODE" : ROW_SQL,
                         SK_ARGS(SK_I64(p->order_id), SK_I64(p->amount_minor), SK_STR(p->currency),
                                 SK_I64(p->attempt_id), SK_STR(p->txn_id)), c, 4, NULL, errstr,
                         errstr_size);
        if (err == SK_ENOTFOUND)
                return SK_OK;
        if (err)
                return err;
        *found = c[3] ? 2 : 1;
        res->repeat = 1;
        if (!c[0]) {
                res->verdict = SK_PAYV_TXN_REUSED;
                return SK_OK;
        }
        res->verdict = c[1] == SK_PAYMENT_APPLIED ? SK_PAYV_APPLIED : SK_PAYV_REFUND_DUE;
        res->reason = (int)c[2];
        return SK_OK;
}

static sk_err_t from_row(sk_db_t *db, const sk_payment_t *p, int *found, sk_payment_res_t *res,
                         char *errstr, size_t errstr_size)
{
        return row_of(db, p, 0, found, res, errstr, errstr_size);
}

static sk_err_t from_row_locked(sk_db_t *db, const sk_payment_t *p, int *found,
                                sk_payment_res_t *res, char *errstr, size_t errstr_size)
{
        return row_of(db, p, 1, found, res, errstr, errstr_size);
}

/* No order row: the outcome by order_id (DESIGN.md 6: indexed) decides. */
static sk_err_t no_order(sk_db_t *db, const sk_payment_t *p, sk_payment_res_t *res,
                         char *errstr, size_t errstr_size)
{
        int64_t outcome = 0;
        int is_null = 0;
        sk_err_t err;

        err = sk_db_i64(db, "SELECT MAX(outcome = " SK_SQL_OUTCOME_FAILED ") FROM"
                        " tb_seckill_outcome WHERE order_id = ?", SK_ARGS(SK_I64(p->order_id)),
                        &outcome, &is_null, errstr, errstr_size);
        if (err && err != SK_ENOTFOUND)
                return err;
        if (err == SK_OK && !is_null && outcome == 1) {
                res->verdict = SK_PAYV_REFUND_DUE;
                res->reason = SK_PAYREASON_FAILED;
        } else {
                res->verdict = SK_PAYV_NO_OUTCOME; /* not decided yet (or CREATED, racing) */
        }
        return SK_OK;
}

/* The order row locked: status, amount equal, currency equal, past deadline + grace. */
static sk_err_t decide_order(sk_db_t *db, const sk_payment_t *p, int grace_s,
                             sk_payment_res_t *res, char *errstr, size_t errstr_size)
{
        int64_t c[4], affected = 0;
        sk_err_t err;

        err = sk_db_row1(db, "SELECT status, amount_minor = ?, currency = ?,"
                         " (pay_deadline IS NOT NULL AND pay_deadline + INTERVAL ? SECOND <= NOW(3))"
                         " FROM tb_voucher_order WHERE id = ? FOR UPDATE",
                         SK_ARGS(SK_I64(p->amount_minor), SK_STR(p->currency), SK_I64(grace_s),
                                 SK_I64(p->order_id)), c, 4, NULL, errstr, errstr_size);
        if (err == SK_ENOTFOUND)
                return no_order(db, p, res, errstr, errstr_size);
        if (err)
                return err;
        res->verdict = SK_PAYV_REFUND_DUE;
        switch ((int)c[0]) {
        case SK_ORDER_PAID:
                res->reason = SK_PAYREASON_DUPLICATE;
                return SK_OK;
        case SK_ORDER_CANCELLED:
                res->reason = SK_PAYREASON_CANCELLED;
                return SK_OK;
        case SK_ORDER_CLOSED:
                res->reason = SK_PAYREASON_CLOSED;
                return SK_OK;
        case SK_ORDER_UNPAID:
                break;
        default:
                sk_seterr(errstr, errstr_size, "order %" PRId64 ": unknown status %" PRId64,
                          p->order_id, c[0]);
                return SK_EDB;
        }
        if (c[3]) { /* late: closed on the spot, as the closer would (DESIGN.md 13) */
                res->reason = SK_PAYREASON_LATE;
                return sk_order_close_in_tx(db, p->order_id, grace_s, &res->closed_now,
                                            &res->order, errstr, errstr_size);
        }
        if (!c[1] || !c[2]) {
                res->reason = !c[1] ? SK_PAYREASON_AMOUNT : SK_PAYREASON_CURRENCY;
                return SK_OK;
        }
        /* The conditional UPDATE of DESIGN.md 13 (the row is ours: it cannot miss but
         * at the deadline's edge, which is late). */
        err = sk_db_exec_i64(db, "UPDATE tb_voucher_order SET status = " SK_SQL_ORDER_PAID
                             ", paid_at = NOW(3) WHERE id = ? AND status = " SK_SQL_ORDER_UNPAID
                             " AND pay_deadline + INTERVAL ? SECOND > NOW(3)",
                             (int64_t[]){ p->order_id, grace_s }, 2, &affected, errstr,
                             errstr_size);
        if (err)
                return err;
        if (affected != 1) {
                res->reason = SK_PAYREASON_LATE;
                return sk_order_close_in_tx(db, p->order_id, grace_s, &res->closed_now,
                                            &res->order, errstr, errstr_size);
        }
        res->verdict = SK_PAYV_APPLIED;
        res->reason = SK_PAYREASON_NONE;
        res->paid_now = 1;
        return sk_order_get(db, p->order_id, 0, &res->order, errstr, errstr_size);
}

/* The tb_payment row of the verdict: APPLIED without a reason, REFUND_DUE with one. */
static sk_err_t record(sk_db_t *db, const sk_payment_t *p, const sk_payment_res_t *res,
                       char *errstr, size_t errstr_size)
{
        int applied = res->verdict == SK_PAYV_APPLIED;

        return sk_db_exec_args(db, "INSERT INTO tb_payment (provider_txn_id, attempt_id,"
                               " order_id, amount_minor, currency, received_at, result, reason)"
                               " VALUES (?, ?, ?, ?, ?, NOW(3), ?, ?)",
                               SK_ARGS(SK_STR(p->txn_id), SK_I64(p->attempt_id), SK_I64(p->order_id),
                                       SK_I64(p->amount_minor), SK_STR(p->currency),
                                       SK_I64(applied ? SK_PAYMENT_APPLIED : SK_PAYMENT_REFUND_DUE),
                                       applied ? SK_NULL : SK_STR(sk_payreason_str(res->reason))),
                               NULL, errstr, errstr_size);
}

/* The row of the txn id carries this delivery's own attempt_id: an earlier try of this
 * delivery whose COMMIT was resolved "not applied" (or unreadable) did apply after all
 * (it was still being applied when it was read). Its post-commit steps are still due
 * (DESIGN.md 16 "Answers" (c)): paid_now for an applied payment, closed_now for a
 * close on the spot (refund_due late, the order CLOSED now), with the order as read;
 * the cache DEL and release.lua are idempotent. */
static sk_err_t own_row_steps(sk_db_t *db, const sk_payment_t *p, sk_payment_res_t *res,
                              char *errstr, size_t errstr_size)
{
        sk_err_t err;

        if (res->verdict != SK_PAYV_APPLIED &&
            !(res->verdict == SK_PAYV_REFUND_DUE && res->reason == SK_PAYREASON_LATE))
                return SK_OK;
        if ((err = sk_order_get(db, p->order_id, 0, &res->order, errstr, errstr_size)))
                return err == SK_ENOTFOUND ? SK_EDB : err; /* orders are never deleted */
        res->paid_now = res->verdict == SK_PAYV_APPLIED && res->order.status == SK_ORDER_PAID;
        res->closed_now = res->verdict == SK_PAYV_REFUND_DUE &&
                          res->order.status == SK_ORDER_CLOSED;
        return SK_OK;
}

/* The COMMIT of sk_payment_decide had an unknown outcome (DESIGN.md 16): on a fresh
 * session (wsrep_sync_wait = 1 on Galera) read tb_payment by provider_txn_id; a plain
 * read of a row another session still holds waits for nothing, so the read is a
 * locking one (FOR SHARE waits out a delivery of the same txn id that is still
 * committing). The row decides whose decision it is (DESIGN.md 16 "Answers" (a)): our
 * attempt_id → our COMMIT applied, *res as decided stands; another → another delivery
 * (a repeat of the same txn id, or a txn id reused for another order) decided while our
 * COMMIT was lost: answered from that row as a repeat, our post-commit steps skipped.
 * No row: not applied, SK_EAGAIN (run again, same keys). */
static sk_err_t resolve(sk_db_t *db, const sk_payment_t *p, sk_payment_res_t *res,
                        char *errstr, size_t errstr_size)
{
        sk_payment_res_t row;
        int found = 0;
        sk_err_t err;

        memset(&row, 0, sizeof(row));
        if ((err = sk_db_resolve_begin(db, errstr, errstr_size)) == SK_OK) {
                if ((err = sk_db_begin(db, errstr, errstr_size)) == SK_OK) {
                        err = from_row_locked(db, p, &found, &row, errstr, errstr_size);
                        sk_db_rollback(db); /* read only */
                }
                sk_db_resolve_end(db);
        }
        if (err == SK_OK && found == 2)
                return SK_OK;
        if (err == SK_OK && found == 1) {
                *res = row; /* verdict and reason of the row; repeat = 1, nothing "now" */
                return SK_OK;
        }
        if (err == SK_OK)
                sk_seterr(errstr, errstr_size, "payment COMMIT not applied: run again");
        memset(res, 0, sizeof(*res));
        return SK_EAGAIN; /* unreadable or not applied: the caller runs it again */
}

sk_err_t sk_payment_decide(sk_db_t *db, const sk_payment_t *p, int grace_s,
                           sk_payment_res_t *res, char *errstr, size_t errstr_size)
{
        int found = 0;
        sk_err_t err;

        memset(res, 0, sizeof(*res));
        if (!p || !sk_payment_valid_ref(p->txn_id) || p->attempt_id <= 0 || p->order_id <= 0 ||
            p->amount_minor < 0 ||
            !sk_payment_valid_currency(p->currency) || grace_s < 0) {
                sk_seterr(errstr, errstr_size, "payment: invalid argument");
                return SK_EINVAL;
        }
        if ((err = sk_db_begin(db, errstr, errstr_size)))
                return err;
        if ((err = from_row(db, p, &found, res, errstr, errstr_size)))
                goto fail;
        if (found == 2 && (err = own_row_steps(db, p, res, errstr, errstr_size)))
                goto fail;
        if (found) {
                sk_db_rollback(db); /* read only */
                return SK_OK;
        }
        if ((err = decide_order(db, p, grace_s, res, errstr, errstr_size)))
                goto fail;
        if (res->verdict == SK_PAYV_NO_OUTCOME) {
                sk_db_rollback(db); /* nothing recorded: the provider retries */
                return SK_OK;
        }
        if ((err = record(db, p, res, errstr, errstr_size)))
                goto fail;
        if ((err = sk_db_commit_outcome(db, errstr, errstr_size)) == SK_EUNKNOWN)
                return resolve(db, p, res, errstr, errstr_size);
        if (err)
                goto fail;
        return SK_OK;
fail:
        sk_db_rollback(db);
        if (err == SK_EEXIST) /* another delivery of this txn id committed first */
                err = SK_EAGAIN;
        memset(res, 0, sizeof(*res));
        return err;
}

sk_err_t sk_payment_refunds(sk_db_t *db, sk_refund_row_t **rows, size_t *n, char *errstr,
                            size_t errstr_size)
{
        static const char sql[] =
                "SELECT provider_txn_id, order_id, amount_minor, currency, COALESCE(reason, ''),"
                " DATE_FORMAT(received_at, '%Y-%m-%d %H:%i:%s.%f'),"
                " TIMESTAMPDIFF(SECOND, received_at, NOW(3)) FROM tb_payment"
                " WHERE result = " SK_SQL_PAYMENT_REFUND_DUE " AND refunded_at IS NULL"
                " ORDER BY received_at, provider_txn_id";
        MYSQL_RES *mr = NULL;
        MYSQL_ROW row;
        sk_refund_row_t *v = NULL;
        size_t k = 0;
        sk_err_t err;

        *rows = NULL;
        *n = 0;
        if ((err = sk_db_query(db, sql, sizeof(sql) - 1, &mr, errstr, errstr_size)))
                return err;
        if (mysql_num_rows(mr) &&
            !(v = calloc((size_t)mysql_num_rows(mr), sizeof(*v)))) {
                mysql_free_result(mr);
                return SK_ENOMEM;
        }
        while ((row = mysql_fetch_row(mr))) {
                sk_refund_row_t *r = &v[k++];

                snprintf(r->txn_id, sizeof(r->txn_id), "%s", row[0] ? row[0] : "");
                r->order_id = row[1] ? strtoll(row[1], NULL, 10) : 0;
                r->amount_minor = row[2] ? strtoll(row[2], NULL, 10) : 0;
                snprintf(r->currency, sizeof(r->currency), "%s", row[3] ? row[3] : "");
                snprintf(r->reason, sizeof(r->reason), "%s", row[4] ? row[4] : "");
                /* DATE_FORMAT %f is microseconds: keep milliseconds. */
                snprintf(r->received_at, sizeof(r->received_at), "%.23s", row[5] ? row[5] : "");
                r->age_s = row[6] ? strtoll(row[6], NULL, 10) : 0;
        }
        mysql_free_result(mr);
        *rows = v;
        *n = k;
        return SK_OK;
}

sk_err_t sk_payment_mark_refunded(sk_db_t *db, const char *txn_id, const char *ref,
                                  char *errstr, size_t errstr_size)
{
        int64_t c[2];
        sk_err_t err;

        if (!sk_payment_valid_ref(txn_id) || !sk_payment_valid_ref(ref)) {
                sk_seterr(errstr, errstr_size, "--txn and --ref: 1..128 printable ASCII bytes");
                return SK_EINVAL;
        }
        /* Conditional: the first mark wins; a repeat with the same ref is a success. */
        if ((err = sk_db_exec_args(db, "UPDATE tb_payment SET refunded_at = NOW(3), refund_ref = ?"
                                   " WHERE provider_txn_id = ? AND result = "
                                   SK_SQL_PAYMENT_REFUND_DUE " AND refunded_at IS NULL",
                                   SK_ARGS(SK_STR(ref), SK_STR(txn_id)), NULL, errstr,
                                   errstr_size)))
                return err;
        err = sk_db_row1(db, "SELECT result = " SK_SQL_PAYMENT_REFUND_DUE ","
                         " COALESCE(refund_ref = ?, 0) FROM tb_payment WHERE provider_txn_id = ?",
                         SK_ARGS(SK_STR(ref), SK_STR(txn_id)), c, 2, NULL, errstr, errstr_size);
        if (err == SK_ENOTFOUND || (err == SK_OK && !c[0])) {
                sk_seterr(errstr, errstr_size, "no refund_due payment %s", txn_id);
                return SK_ENOTFOUND;
        }
        if (err)
                return err;
        if (!c[1]) {
                sk_seterr(errstr, errstr_size, "payment %s was marked refunded with another ref",
                          txn_id);
                return SK_EEXIST;
        }
        return SK_OK;
}

sk_err_t sk_payment_refund_backlog(sk_db_t *db, int64_t *count, int64_t *oldest_s,
                                   char *errstr, size_t errstr_size)
{
        int64_t c[2] = { 0, 0 };
        unsigned nulls = 0;
        sk_err_t err = sk_db_row1(db, "SELECT COUNT(*), TIMESTAMPDIFF(SECOND,"
                                  " MIN(received_at), NOW(3)) FROM tb_payment WHERE result = "
                                  SK_SQL_PAYMENT_REFUND_DUE " AND refunded_at IS NULL",
                                  SK_NOARGS, c, 2, &nulls, errstr, errstr_size);

        *count = err ? 0 : c[0];
        *oldest_s = err || (nulls & 2) ? 0 : c[1];
        return err;
}
