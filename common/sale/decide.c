/* decide.c: the one decision per purchase, written once (sk/decide.h; DESIGN.md 7, and
 * the sold_out clamp protocol of DESIGN.md 4 "rollback.lua" and 8 "DB stock
 * exhausted"). Builds on outcome.c (the FAILED row) and rollback.c (rollback.lua).
 *
 * What it does not do: log, count metrics, or choose connections: the caller's hooks
 * (sk_decider_t) supply fresh connections and say when to stop; the caller reports
 * what sk_decision_t says happened. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "sk/backoff.h"
#include "sk/clock.h"
#include "sk/db_sync.h"
#include "sk/decide.h"
#include "sk/drift_mark.h"
#include "sk/failpoint.h"
#include "sk/traceset.h"

#define DEFAULT_ATTEMPTS 3
#define BACKOFF_BASE_MS 50
#define BACKOFF_CAP_MS 1000

static int attempts_of(const sk_decider_t *d)
{
        return d->attempts > 0 ? d->attempts : DEFAULT_ATTEMPTS;
}

static int proceed(const sk_decider_t *d)
{
        return !d->proceed || d->proceed(d->arg);
}

static sk_redis_t *redis_of(const sk_decider_t *d)
{
        return d->redis_get ? d->redis_get(d->arg) : d->r;
}

/* A failed stock read: the caller's hook, or a reconnect of d->db when transient. */
static void db_failed(const sk_decider_t *d, sk_err_t err)
{
        if (d->db_failed)
                d->db_failed(d->arg, err);
        else if (err == SK_EAGAIN || err == SK_EFAIL)
                (void)sk_db_reconnect(d->db, NULL, 0);
}

/* Failpoint "<mode>.clamp_read" (action error: the read fails as if the DB had). */
static sk_err_t clamp_read_failpoint(const sk_decider_t *d, char *errstr, size_t errstr_size)
{
        char name[64];

        snprintf(name, sizeof(name), "%s.clamp_read", d->mode ? d->mode : "decide");
        if (SK_FAILPOINT(name)) {
                sk_seterr(errstr, errstr_size, "failpoint %s", name);
                return SK_EFAIL;
        }
        return SK_OK;
}

/* In the open transaction: bump bucket @p bucket's row (SET version = version + 1,
 * DESIGN.md 16 (3); the trace's bucket j) and read its stock. The write holds the row
 * until the transaction ends, on every node's terms: a concurrent restock of the row
 * waits for us (one node) or one of the two fails certification (Galera), where a
 * FOR SHARE read would protect nothing across nodes. A missing row clamps to 0 (nothing
 * can be sold). */
static sk_err_t lock_stock_row(const sk_decider_t *d, int64_t voucher_id, int bucket,
                               int64_t *stock, char *errstr, size_t errstr_size)
{
        static const char bump[] =
                "UPDATE tb_seckill_stock SET version = version + 1 WHERE voucher_id = ? AND "
                "bucket = ?";
        static const char sql[] =
                "SELECT stock FROM tb_seckill_stock WHERE voucher_id = ? AND bucket = ?";
        int64_t params[2] = { voucher_id, bucket };
        sk_err_t err;

        if ((err = clamp_read_failpoint(d, errstr, errstr_size)) != SK_OK)
                return err;
        *stock = 0;
        if ((err = sk_db_exec_i64(d->db, bump, params, 2, NULL, errstr, errstr_size)) != SK_OK)
                return err == SK_EEXIST ? SK_EDB : err;
        err = sk_db_i64(d->db, sql, SK_ARGS(SK_I64(voucher_id), SK_I64(bucket)), stock, NULL,
                        errstr, errstr_size);
        if (err == SK_ENOTFOUND)
                return SK_OK;   /* *stock stays 0 */
        return err == SK_EEXIST ? SK_EDB : err;
}

/* The clamp's COMMIT failed (@p why). Only a clamp that rollback.lua applied (@p applied)
 * can have clamped a restock away: then mark bucket j (sk/drift_mark.h), reconnecting
 * once when the link broke, and tell the caller's hook either way. */
static void clamp_commit_failed(const sk_decider_t *d, const sk_order_msg_t *msg, int applied,
                                const char *why)
{
        char errstr[256] = "";
        sk_err_t err = SK_OK;
        int marked = 0;

        sk_db_rollback(d->db);
        if (applied) {
                err = sk_drift_mark(d->db, msg->voucher_id, msg->bucket, d->mode, errstr,
                                    sizeof(errstr));
                if (err == SK_EAGAIN || err == SK_EUNKNOWN || !sk_db_connected(d->db)) {
                        (void)sk_db_reconnect(d->db, NULL, 0);
                        err = sk_drift_mark(d->db, msg->voucher_id, msg->bucket, d->mode,
                                            errstr, sizeof(errstr));
                }
                marked = err == SK_OK;
        }
        sk_db_sync_reads_end(d->db);
        if (d->clamp_lost)
                d->clamp_lost(d->arg, msg, marked, marked || !applied ? why : errstr);
}

/* has_order (DESIGN.md 4, 7): the trace T0 of the user's active order, which the home
 * step writes into users[U] in place of T, so the user stays blocked by the order that
 * holds the unit. *t0 = 0 when there is none (cancelled or closed meanwhile: users[U]
 * is then left as it is, as before). Autocommit read after the FAILED commit. */
static sk_err_t read_active_trace(const sk_decider_t *d, const sk_order_msg_t *msg, int64_t *t0,
                                  char *errstr, size_t errstr_size)
{
        static const char sql[] =
                "SELECT trace_id FROM tb_voucher_order WHERE voucher_id = ? AND active_user_id = ?";
        sk_err_t err;

        *t0 = 0;
        err = sk_db_i64(d->db, sql, SK_ARGS(SK_I64(msg->voucher_id), SK_I64(msg->user_id)), t0,
                        NULL, errstr, errstr_size);
        if (err == SK_ENOTFOUND)
                err = SK_OK;    /* no active order: *t0 stays 0 */
        if (*t0 == msg->trace_id)
                *t0 = 0; /* never T itself */
        return err == SK_EEXIST ? SK_EDB : err;
}

/* One attempt: [BEGIN, bump bucket j's row and read its stock,] [has_order: T0,]
 * rollback.lua[, end the transaction]. */
static sk_err_t rollback_once(const sk_decider_t *d, const sk_order_msg_t *msg,
                              sk_reason_t reason, int clamp, sk_rollback_res_t *res,
                              int64_t *clamp_to, char *errstr, size_t errstr_size)
{
        sk_redis_t *r;
        sk_err_t err;
        int64_t t0 = 0;

        *clamp_to = -1;
        if (reason == SK_REASON_HAS_ORDER && msg->user_id > 0 &&
            (err = read_active_trace(d, msg, &t0, errstr, errstr_size)) != SK_OK) {
                db_failed(d, err);
                return err; /* rollback.lua not run: retried with T0 */
        }
        if (clamp) {
                /* DESIGN.md 16 (d): on Galera the clamp's read (and its BEGIN) waits for
                 * every write set the cluster committed before it. */
                if ((err = sk_db_sync_reads(d->db, errstr, errstr_size)) == SK_OK &&
                    (err = sk_db_begin(d->db, errstr, errstr_size)) == SK_OK &&
                    (err = lock_stock_row(d, msg->voucher_id, msg->bucket, clamp_to, errstr,
                                          errstr_size)) != SK_OK)
                        sk_db_rollback(d->db);
                if (err != SK_OK) {
                        *clamp_to = -1;
                        sk_db_sync_reads_end(d->db);
                        db_failed(d, err);
                        return err; /* rollback.lua not run: no fence for an unapplied clamp */
                }
        }
        if (!proceed(d)) {
                err = SK_ESTOP;
                sk_seterr(errstr, errstr_size, "stopped before rollback.lua");
        } else if (d->failpoint && SK_FAILPOINT(d->failpoint)) {
                err = SK_EFAIL;
                sk_seterr(errstr, errstr_size, "failpoint %s", d->failpoint);
        } else if (!(r = redis_of(d))) {
                err = SK_EAGAIN;
                sk_seterr(errstr, errstr_size, "no Redis connection");
        } else {
                memset(res, 0, sizeof(*res));
                /* On the trace's bucket j; the home step on h when h != j (DESIGN.md 4). */
                sk_rollback_args_t a = { .voucher_id = msg->voucher_id, .bucket = msg->bucket,
                                         .home = msg->home, .trace_id = msg->trace_id,
                                         .user_id = msg->user_id, .mode = d->mode,
                                         .reason = reason, .clamp_to = *clamp_to,
                                         .repoint_trace_id = t0,
                                         .expire_extra_ms = d->expire_extra_ms };

                err = sk_rollback_trace(r, d->prefix, &a, res, errstr, errstr_size);
                if (err != SK_OK && d->redis_failed)
                        d->redis_failed(d->arg, err);
        }
        /* rollback.lua has answered (or will never run now): the row may go. A failed
         * COMMIT loses only the version bump; on Galera it means a restock of the row
         * certified first, so the clamp may have used the stock before it: Redis below the
         * DB (undersell), never an oversell. A drift mark makes the reconciler's next pass
         * rebuild the bucket at once (DESIGN.md 16 (d)). */
        if (clamp) {
                char why[256] = "";

                if (sk_db_commit(d->db, why, sizeof(why)) != SK_OK)
                        clamp_commit_failed(d, msg, err == SK_OK, why);
                else
                        sk_db_sync_reads_end(d->db);
        }
        return err;
}

sk_err_t sk_decide_rollback(const sk_decider_t *d, const sk_order_msg_t *msg,
                            sk_reason_t reason, sk_rollback_res_t *res, int64_t *clamp_to,
                            char *errstr, size_t errstr_size)
{
        int restore, release, clamp, attempt, n = attempts_of(d);
        uint64_t rng = sk_backoff_seed();
        sk_err_t err = SK_EINVAL;

        memset(res, 0, sizeof(*res));
        *clamp_to = -1;
        if (reason == SK_REASON_NONE) {
                sk_seterr(errstr, errstr_size, "no failure reason: rollback flags unknown");
                return SK_EINVAL;
        }
        sk_reason_flags(reason, &restore, &release, &clamp);
        for (attempt = 0; attempt < n; attempt++) {
                if (attempt && d->backoff)
                        d->backoff(d->arg, attempt);
                else if (attempt)
                        sk_sleep_ms(sk_backoff_ms(attempt, BACKOFF_BASE_MS, BACKOFF_CAP_MS, &rng),
                                    NULL);
                if (!proceed(d)) {
                        sk_seterr(errstr, errstr_size, "stopped before rollback.lua");
                        return SK_ESTOP;
                }
                err = rollback_once(d, msg, reason, clamp, res, clamp_to, errstr, errstr_size);
                if (err == SK_OK || err == SK_ESTOP || err == SK_EINVAL)
                        return err;
                if (d->give_up && d->give_up(d->arg, msg->voucher_id))
                        break;
        }
        *clamp_to = -1;
        return err;
}

static sk_err_t collision(const sk_order_msg_t *msg, const sk_outcome_t *row,
                          sk_decision_t *out, char *errstr, size_t errstr_size)
{
        out->how = SK_DECIDED_COLLISION;
        sk_seterr(errstr, errstr_size, "id collision: outcome of trace %" PRId64 " names order %"
                  PRId64 " user %" PRId64 " voucher %" PRId64 ", the message order %" PRId64
                  " user %" PRId64 " voucher %" PRId64, msg->trace_id, row->order_id,
                  row->user_id, row->voucher_id, msg->order_id, msg->user_id, msg->voucher_id);
        return SK_EEXIST;
}

sk_err_t sk_decide_follow(const sk_decider_t *d, const sk_order_msg_t *msg,
                          const sk_outcome_t *row, sk_decision_t *out, char *errstr,
                          size_t errstr_size)
{
        sk_err_t err;

        memset(out, 0, sizeof(*out));
        out->clamp_to = -1;
        out->row = *row;
        if (!sk_outcome_matches(row, msg))
                return collision(msg, row, out, errstr, errstr_size);
        if (row->outcome == SK_OUTCOME_CREATED) {
                out->how = SK_DECIDED_FOLLOWED_CREATED;
                return SK_OK;
        }
        out->how = SK_DECIDED_FOLLOWED_FAILED;
        out->reason = row->reason;
        if (row->reason == SK_REASON_NONE) {
                sk_seterr(errstr, errstr_size, "FAILED outcome with unknown reason \"%s\"",
                          row->reason_str);
                return SK_EINVAL;
        }
        err = sk_decide_rollback(d, msg, row->reason, &out->res, &out->clamp_to, errstr,
                                 errstr_size);
        out->rolled_back = err == SK_OK;
        return err;
}

sk_err_t sk_decide_failed(const sk_decider_t *d, const sk_order_msg_t *msg, sk_reason_t reason,
                          const char *detail, sk_decision_t *out, char *errstr,
                          size_t errstr_size)
{
        sk_outcome_t existing;
        sk_err_t err;

        memset(out, 0, sizeof(*out));
        out->clamp_to = -1;
        if (!proceed(d)) {
                sk_seterr(errstr, errstr_size, "stopped before recording FAILED");
                return SK_ESTOP;
        }
        memset(&existing, 0, sizeof(existing));
        err = sk_outcome_fail(d->db, msg, reason, detail, &existing, errstr, errstr_size);
        if (err == SK_EEXIST)
                return sk_decide_follow(d, msg, &existing, out, errstr, errstr_size);
        if (err != SK_OK)
                return err; /* nothing committed: the caller retries or gives up */
        out->how = SK_DECIDED_RECORDED;
        out->reason = reason;
        err = sk_decide_rollback(d, msg, reason, &out->res, &out->clamp_to, errstr, errstr_size);
        out->rolled_back = err == SK_OK;
        return err;
}
