/* outcome.c: the database half of sk/outcome.h (DESIGN.md 7): read the one decision
 * recorded for a traceId, compare it with a message, and record a FAILED decision with
 * its RESTORE reconcile-log row in its own committed transaction.
 *
 * What it does not do: the reason strings and flags and rollback.lua live in
 * rollback.c; nothing here touches Redis, retries or logs. Ids are bound as
 * MYSQL_TYPE_LONGLONG, never formatted through doubles. The caller owns the
 * connection and must not be inside a transaction when calling sk_outcome_fail. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "sk/db_outcome.h"
#include "sk/ids.h"
#include "sk/ledger.h"
#include "sk/outcome.h"

#define FAIL_RUNS 3   /* runs of the FAILED transaction (1213/1205, or not applied) */

static sk_err_t need_conn(sk_db_t *db, char *errstr, size_t errstr_size)
{
        if (!sk_db_connected(db)) {
                sk_seterr(errstr, errstr_size, "no database connection");
                return SK_EAGAIN;
        }
        return SK_OK;
}

sk_err_t sk_outcome_get(sk_db_t *db, int64_t trace_id, sk_outcome_t *out,
                        char *errstr, size_t errstr_size)
{
        static const char sql[] =
                "SELECT order_id, user_id, voucher_id, outcome, COALESCE(reason, '') "
                "FROM tb_seckill_outcome WHERE trace_id = ?";
        MYSQL_STMT *stmt = NULL;
        MYSQL_BIND in[1], res[5];
        int64_t tid = trace_id, oid = 0, uid = 0, vid = 0, kind = 0;
        char reason[64];
        unsigned long reason_len = 0;
        sk_outcome_t o;
        sk_err_t err;
        int rc;

        if ((err = need_conn(db, errstr, errstr_size)))
                return err;
        if (sk_db_stmt_init(db, &stmt, NULL, 0) != SK_OK)
                return sk_db_stmt_seterr(db, NULL, "outcome_get init", errstr, errstr_size);
        if (mysql_stmt_prepare(stmt, sql, sizeof(sql) - 1)) {
                err = sk_db_stmt_seterr(db, stmt, "outcome_get prepare", errstr, errstr_size);
                goto done;
        }
        memset(in, 0, sizeof(in));
        sk_db_bind_i64(&in[0], &tid);
        memset(res, 0, sizeof(res));
        sk_db_bind_i64(&res[0], &oid);
        sk_db_bind_i64(&res[1], &uid);
        sk_db_bind_i64(&res[2], &vid);
        sk_db_bind_i64(&res[3], &kind);
        sk_db_bind_str(&res[4], reason, &reason_len, sizeof(reason));
        if (mysql_stmt_bind_param(stmt, in) || mysql_stmt_execute(stmt) ||
            mysql_stmt_bind_result(stmt, res)) {
                err = sk_db_stmt_seterr(db, stmt, "outcome_get execute", errstr, errstr_size);
                goto done;
        }
        rc = mysql_stmt_fetch(stmt);
        if (rc == MYSQL_NO_DATA) {
                sk_seterr(errstr, errstr_size, "no outcome for trace %" PRId64, trace_id);
                err = SK_ENOTFOUND;
                goto done;
        }
        if (rc == 1) {
                err = sk_db_stmt_seterr(db, stmt, "outcome_get fetch", errstr, errstr_size);
                goto done;
        }
        /* MYSQL_DATA_TRUNCATED can only concern the reason (ids are BIGINT). */
        if (reason_len >= sizeof(reason))
                reason_len = sizeof(reason) - 1;
        reason[reason_len] = '\0';
        memset(&o, 0, sizeof(o));
        o.trace_id = trace_id;
        o.order_id = oid;
        o.user_id = uid;
        o.voucher_id = vid;
        o.outcome = (int)kind;
        snprintf(o.reason_str, sizeof(o.reason_str), "%s", reason);
        if (!reason[0] || sk_reason_parse(reason, &o.reason) != 0)
                o.reason = SK_REASON_NONE;
        *out = o;
        err = SK_OK;
done:
        if (stmt) {
                mysql_stmt_free_result(stmt);
                mysql_stmt_close(stmt);
        }
        return err;
}

int sk_outcome_matches(const sk_outcome_t *o, const sk_order_msg_t *msg)
{
        return o->order_id == msg->order_id && o->user_id == msg->user_id &&
               o->voucher_id == msg->voucher_id;
}

/* Execute @p sql with @p n bound parameters on a fresh statement. */
static sk_err_t exec_bound(sk_db_t *db, const char *sql, MYSQL_BIND *in, const char *what,
                           char *errstr, size_t errstr_size)
{
        MYSQL_STMT *stmt = NULL;
        sk_err_t err = SK_OK;

        if (sk_db_stmt_init(db, &stmt, NULL, 0) != SK_OK)
                return sk_db_stmt_seterr(db, NULL, what, errstr, errstr_size);
        if (mysql_stmt_prepare(stmt, sql, strlen(sql)) || mysql_stmt_bind_param(stmt, in) ||
            mysql_stmt_execute(stmt))
                err = sk_db_stmt_seterr(db, stmt, what, errstr, errstr_size);
        mysql_stmt_close(stmt);
        return err;
}

/* The FAILED row and its RESTORE row, one transaction (sk_outcome_fail's contract). An
 * unknown COMMIT returns SK_EUNKNOWN with the connection dropped; 1213/1205 at COMMIT
 * SK_EAGAIN (rolled back, sk_db_errno tells which). */
static sk_err_t fail_txn(sk_db_t *db, const sk_order_msg_t *msg, const char *reason_s,
                         const char *det, int64_t change_qty, sk_outcome_t *existing,
                         char *errstr, size_t errstr_size)
{
        static const char ins_outcome[] =
                "INSERT INTO tb_seckill_outcome "
                "(trace_id, order_id, user_id, voucher_id, outcome, reason, bucket) "
                "VALUES (?, ?, ?, ?, " SK_SQL_OUTCOME_FAILED ", ?, ?)";
        MYSQL_BIND b[10];
        int64_t tid = msg->trace_id, oid = msg->order_id, uid = msg->user_id,
                vid = msg->voucher_id, bucket = msg->bucket;
        char rs[64];
        unsigned long reason_len;
        sk_err_t err;

        snprintf(rs, sizeof(rs), "%s", reason_s);
        reason_len = strlen(rs);
        if ((err = sk_db_begin(db, errstr, errstr_size)))
                return err;

        memset(b, 0, sizeof(b));
        sk_db_bind_i64(&b[0], &tid);
        sk_db_bind_i64(&b[1], &oid);
        sk_db_bind_i64(&b[2], &uid);
        sk_db_bind_i64(&b[3], &vid);
        sk_db_bind_str(&b[4], rs, &reason_len, sizeof(rs));
        sk_db_bind_i64(&b[5], &bucket);
        err = exec_bound(db, ins_outcome, b, "insert FAILED outcome", errstr, errstr_size);
        if (err == SK_EEXIST) {
                sk_err_t gerr;

                sk_db_rollback(db);
                gerr = sk_outcome_get(db, msg->trace_id, existing, errstr, errstr_size);
                if (gerr == SK_OK) {
                        sk_seterr(errstr, errstr_size, "trace %" PRId64 " already decided (%s)",
                                  msg->trace_id, existing->outcome == SK_OUTCOME_CREATED
                                                         ? "CREATED" : "FAILED");
                        return SK_EEXIST;
                }
                /* The row vanished in between (nothing deletes outcomes; treat as transient). */
                return gerr == SK_ENOTFOUND ? SK_EAGAIN : gerr;
        }
        if (err)
                goto fail;

        /* The RESTORE row of this trace (business fail). Idempotent on uk_trace_type: a
         * row left by an earlier attempt is kept. Quantities in the Redis admission's
         * terms: a reason that restores stock gives the deducted units back (after_qty ->
         * before_qty); one that does not (sold_out) records a zero change. */
        {
                const sk_ledger_row_t row = {
                        .order_id = oid, .user_id = uid, .voucher_id = vid, .trace_id = tid,
                        .before_qty = msg->after_qty, .change_qty = change_qty,
                        .after_qty = msg->after_qty + change_qty, .log_type = SK_LOG_RESTORE,
                        .business = SK_BIZ_FAIL, .detail = det, .keep_existing = 1,
                };
                if ((err = sk_ledger_write(db, &row, errstr, errstr_size)))
                        goto fail;
        }
        if ((err = sk_db_commit_outcome(db, errstr, errstr_size)) == SK_EUNKNOWN)
                return err;
        if (err)
                goto fail;
        return SK_OK;
fail:
        sk_db_rollback(db);
        return err;
}

/* After an unknown COMMIT of fail_txn (DESIGN.md 16): the trace's outcome row on a
 * fresh session (wsrep_sync_wait = 1 on Galera). SK_OK: ours is there (FAILED with
 * @p reason_s and msg's ids: recorded); SK_EEXIST: another decision, in *existing;
 * SK_ENOTFOUND: not applied, run again; SK_EAGAIN: unreadable, still unknown. */
static sk_err_t fail_resolve(sk_db_t *db, const sk_order_msg_t *msg, const char *reason_s,
                             sk_outcome_t *existing, char *errstr, size_t errstr_size)
{
        sk_err_t err;

        if ((err = sk_db_resolve_begin(db, errstr, errstr_size)) != SK_OK)
                return SK_EAGAIN;
        err = sk_outcome_get(db, msg->trace_id, existing, errstr, errstr_size);
        sk_db_resolve_end(db);
        if (err == SK_ENOTFOUND)
                return err;
        if (err != SK_OK)
                return SK_EAGAIN;
        if (existing->outcome == SK_OUTCOME_FAILED && sk_outcome_matches(existing, msg) &&
            strcmp(existing->reason_str, reason_s) == 0)
                return SK_OK;
        sk_seterr(errstr, errstr_size, "trace %" PRId64 " already decided (%s)", msg->trace_id,
                  existing->outcome == SK_OUTCOME_CREATED ? "CREATED" : "FAILED");
        return SK_EEXIST;
}

sk_err_t sk_outcome_fail(sk_db_t *db, const sk_order_msg_t *msg, sk_reason_t reason,
                         const char *detail, sk_outcome_t *existing,
                         char *errstr, size_t errstr_size)
{
        char reason_s[64], det[512], lost[256];
        int restore = 0, release = 0, clamp = 0;
        const char *rs = sk_reason_str(reason);
        sk_err_t err = SK_EAGAIN;

        if ((err = need_conn(db, errstr, errstr_size)))
                return err;
        if (!rs || !*rs || reason == SK_REASON_NONE) {
                sk_seterr(errstr, errstr_size, "outcome_fail: no reason");
                return SK_EINVAL;
        }
        snprintf(reason_s, sizeof(reason_s), "%s", rs);
        snprintf(det, sizeof(det), "%s", detail ? detail : rs);
        sk_reason_flags(reason, &restore, &release, &clamp);
        (void)release;
        (void)clamp;

        /* DESIGN.md 16: 1213/1205 -> the whole transaction again; an unknown COMMIT ->
         * read the trace's outcome (ours: recorded; another: followed; none: the same
         * transaction again, the trace id's key keeping a second row out). */
        for (int run = 0; run < FAIL_RUNS; run++) {
                if (run > 0 && !sk_db_connected(db) &&
                    (err = sk_db_reconnect(db, errstr, errstr_size)) != SK_OK)
                        return err;
                err = fail_txn(db, msg, reason_s, det, restore ? msg->deduct_qty : 0, existing,
                               errstr, errstr_size);
                if (err == SK_EAGAIN && (sk_db_errno(db) == 1213 || sk_db_errno(db) == 1205))
                        continue;
                if (err != SK_EUNKNOWN)
                        return err;
                snprintf(lost, sizeof(lost), "%s", errstr);
                err = fail_resolve(db, msg, reason_s, existing, errstr, errstr_size);
                if (err == SK_ENOTFOUND) {
                        err = SK_EAGAIN;
                        continue;
                }
                if (err == SK_EAGAIN)
                        sk_seterr(errstr, errstr_size, "FAILED outcome of trace %" PRId64 ": COMMIT "
                                  "outcome unknown (%s), not readable yet", msg->trace_id, lost);
                return err;
        }
        return err;
}
