/* producer/dbonly.c: the DB-only purchase (producer/dbonly.h, DESIGN.md 7, 12).
 *
 * One transaction, READ COMMITTED (every session of sk_db_connect):
 *   SELECT ... FROM tb_seckill_switch WHERE scope = V   (plain read: an early 503)
 *        -- state db with the epoch the request started with, else 503 (no commit)
 *   SELECT status, window, buckets FROM tb_seckill_voucher  -- 404 / 403 / 503 paused
 *   SELECT 1 FROM tb_voucher_order WHERE voucher_id = V AND active_user_id = U -> 10006
 *   SELECT bucket FROM tb_seckill_stock WHERE voucher_id = V AND stock > 0  (no lock)
 *   UPDATE tb_seckill_stock SET stock = stock - 1 WHERE ... bucket = b AND stock >= 1
 *        -- from the user's home bucket (sk_home_bucket), wrapping around; no row
 *           changed -> the next bucket; none left -> 409/10005
 *   INSERT outcome CREATED (path 'db', bucket), order (the voucher's price and currency;
 *   UNPAID + pay_deadline, or PAID when SECKILL_PAY_TIMEOUT_S = 0 and the price is 0;
 *   bucket), router, reconcile log (DEDUCT, pending)
 *   SELECT ... FROM tb_seckill_switch WHERE scope = V   again, after the bucket UPDATE:
 *        -- still (db, epoch), else roll back and 503. db -> rebuilding updates every
 *           bucket row of V in its transaction (sk_dsw_begin_rebuild), so it and this
 *           purchase serialize on the bucket row (one node: whoever is second waits,
 *           and a purchase that waited reads rebuilding here) or one fails
 *           certification (Galera: 1213, retried from BEGIN into rebuilding). Nothing
 *           relies on FOR SHARE / FOR UPDATE, node-local (DESIGN.md 16 (2)).
 *   COMMIT -> 200 {"code":0,"orderId","traceId","state":"CREATED"}
 * A duplicate active-order key -> 409/10006. A transient error -> the whole transaction
 * again from BEGIN (up to 3 attempts), then 503 cause db. A COMMIT that failed with
 * 1213/1205 was rolled back (run again); with any other error or a lost link it has an
 * unknown outcome (DESIGN.md 16): it is resolved by reading the outcome row of the trace,
 * on a fresh session (wsrep_sync_wait = 1 on Galera), before anything is answered
 * (found: 200 CREATED; not found: run again with
 * the same keys; unreadable until the deadline: 503 PENDING), and a re-run that meets the
 * user's active order with this very trace answers 200 CREATED, never 10006. A re-run that
 * meets a duplicate key, another active order or an empty stock resolves again with a
 * read that waits for the trace's row locks (DESIGN.md 16 "Answers" (b): the lost COMMIT
 * may still be applying): ours → 200 CREATED, another trace's active order → 10006,
 * otherwise 503 PENDING, never 409. Failpoints
 * front.db_only_after_checks (before the bucket UPDATE; sleep: a switch move lands
 * between the first read and the UPDATE), front.db_only_before_commit (error: 503 cause
 * db, rolled back; evaluated before the second switch read) and
 * front.db_only_after_commit (error: committed, the answer lost). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dbonly.h"
#include "front.h"
#include "metrics.h"
#include "pool.h"
#include "soldout.h"
#include "sk/backoff.h"
#include "sk/clock.h"
#include "sk/keys.h"
#include "sk/db.h"
#include "sk/db_outcome.h"
#include "sk/dswitch.h"
#include "sk/failpoint.h"
#include "sk/ledger.h"
#include "sk/log.h"
#include "sk/model.h"
#include "sk/traceset.h"

#define DBONLY_QUEUE_PER_CONN 32        /* the bounded queue: conns x this, beyond it 503 */
#define DBONLY_ATTEMPTS 3

static fr_pool_t pool;                  /* the DB-only queue and its threads */
static size_t queue_max;

typedef enum { R_CREATED, R_SOLD_OUT, R_HAS_ORDER, R_STATE, R_NOT_FOUND, R_OFFLINE,
               R_EXPIRED, R_NOT_STARTED, R_ENDED, R_PAUSED,
               R_MINE /* the user's active order is this purchase's: an earlier COMMIT
                       * whose answer was lost went through (DESIGN.md 16) */ } result_t;

size_t fr_dbonly_depth(void)
{
        return fr_pool_depth(&pool);
}

int fr_dbonly_full(void)
{
        return fr_pool_full(&pool, queue_max);
}

int fr_dbonly_submit(fr_req_t *req, int64_t epoch)
{
        req->dsw_epoch = epoch;
        return fr_pool_push(&pool, req);
}

/* The buckets of the voucher with stock left: have[b] = 1. */
static int have_cb(void *arg, const int64_t *cols, const int *nulls, int ncols)
{
        int *have = arg;

        (void)ncols;
        if (!nulls[0] && cols[0] >= 0 && cols[0] < SK_BUCKETS_MAX)
                have[cols[0]] = 1;
        return 0;
}

/* Take one unit from a bucket with stock, from the home bucket round. *bucket the one
 * taken, *after its stock after the decrement. @returns SK_OK, SK_ENOTFOUND (none). */
static sk_err_t take_unit(sk_db_t *db, const fr_req_t *req, int buckets, int *bucket,
                          int64_t *after, char *errstr, size_t errstr_size)
{
        int have[SK_BUCKETS_MAX] = { 0 }, i, h = sk_home_bucket(req->user_id, buckets);
        sk_err_t err;

        if ((err = sk_db_rows(db, "SELECT bucket FROM tb_seckill_stock WHERE voucher_id = ? "
                              "AND stock > 0", &req->voucher_id, 1, 1, have_cb, have,
                              errstr, errstr_size)) != SK_OK)
                return err;
        for (i = 0; i < buckets; i++) {
                int b = (h + i) % buckets;
                int64_t p[2] = { req->voucher_id, b }, changed = 0;

                if (!have[b])
                        continue;
                if ((err = sk_db_exec_i64(db, "UPDATE tb_seckill_stock SET stock = stock - 1 WHERE "
                                          "voucher_id = ? AND bucket = ? AND stock >= 1", p, 2,
                                          &changed, errstr, errstr_size)) != SK_OK)
                        return err;
                if (changed != 1)
                        continue;
                if ((err = sk_db_i64(db, "SELECT stock FROM tb_seckill_stock WHERE voucher_id = ? AND "
                                     "bucket = ?", SK_ARGS(SK_I64(p[0]), SK_I64(p[1])), after,
                                     NULL, errstr, errstr_size)) != SK_OK)
                        return err;
                *bucket = b;
                return SK_OK;
        }
        return SK_ENOTFOUND;
}

/* The order's price columns: the voucher row's (two placeholders: the voucher id). */
#define DBONLY_PRICE "(SELECT price_minor FROM tb_seckill_voucher WHERE voucher_id = ?), " \
        "(SELECT currency FROM tb_seckill_voucher WHERE voucher_id = ?), "
#define DBONLY_STR2(x) #x
#define DBONLY_STR(x) DBONLY_STR2(x)

/* The outcome, order, router and reconcile-log rows of the purchase. */
static sk_err_t insert_rows(sk_db_t *db, const fr_req_t *req, int bucket, int64_t after,
                            char *errstr, size_t errstr_size)
{
        int64_t p[7] = { req->trace_id, req->order_id, req->user_id, req->voucher_id, bucket };
        int64_t o[8] = { req->order_id, req->user_id, req->voucher_id, req->trace_id, bucket,
                         req->voucher_id, req->voucher_id, g_fr.conf.pay_timeout_s };
        const sk_ledger_row_t ledger = {
                .order_id = req->order_id, .user_id = req->user_id, .voucher_id = req->voucher_id,
                .trace_id = req->trace_id, .before_qty = after + 1, .change_qty = 1,
                .after_qty = after, .log_type = SK_LOG_DEDUCT, .business = SK_BIZ_OK,
                .detail = "order created (db-only path)", .keep_existing = 0,
        };
        sk_err_t err;

        if ((err = sk_db_exec_i64(db, "INSERT INTO tb_seckill_outcome (trace_id, order_id, user_id, "
                                  "voucher_id, bucket, outcome, path) VALUES (?, ?, ?, ?, ?, "
                                  SK_SQL_OUTCOME_CREATED ", "
                                  "'db')", p, 5, NULL, errstr, errstr_size)) != SK_OK)
                return err;
        /* The voucher's price and currency copied into the order (DESIGN.md 13); with a
         * timeout of 0 only a price-0 order is created PAID, a priced one UNPAID with
         * SK_PAY_TIMEOUT_PRICED_S (the expressions read amount_minor and status, set
         * earlier in the VALUES list). */
        err = sk_db_exec_i64(db, g_fr.conf.pay_timeout_s > 0
                             ? "INSERT INTO tb_voucher_order (id, user_id, voucher_id, trace_id, "
                               "bucket, amount_minor, currency, status, pay_deadline, paid_at) VALUES "
                               "(?, ?, ?, ?, ?, " DBONLY_PRICE SK_SQL_ORDER_UNPAID ", "
                               "NOW(3) + INTERVAL ? SECOND, NULL)"
                             : "INSERT INTO tb_voucher_order (id, user_id, voucher_id, trace_id, "
                               "bucket, amount_minor, currency, status, pay_deadline, paid_at) VALUES "
                               "(?, ?, ?, ?, ?, " DBONLY_PRICE "IF(amount_minor > 0, "
                               SK_SQL_ORDER_UNPAID ", " SK_SQL_ORDER_PAID "), IF(status = "
                               SK_SQL_ORDER_UNPAID ", NOW(3) + INTERVAL " DBONLY_STR(SK_PAY_TIMEOUT_PRICED_S)
                               " SECOND, NULL), IF(status = " SK_SQL_ORDER_UNPAID ", NULL, NOW(3)))",
                             o, g_fr.conf.pay_timeout_s > 0 ? 8 : 7, NULL, errstr, errstr_size);
        if (err != SK_OK)
                return err;
        if ((err = sk_db_exec_i64(db, "INSERT INTO tb_voucher_order_router (order_id, user_id, "
                                  "voucher_id) VALUES (?, ?, ?)", p + 1, 3, NULL, errstr,
                                  errstr_size)) != SK_OK)
                return err;
        return sk_ledger_write(db, &ledger, errstr, errstr_size);
}

/* The checks before the unit: switch (state db, same epoch), voucher row, active
 * order. @returns SK_OK with *res = R_CREATED to go on, or another *res to answer. */
static sk_err_t checks(sk_db_t *db, const fr_req_t *req, result_t *res, int *buckets,
                       char *errstr, size_t errstr_size)
{
        sk_dsw_row_t sw;
        int64_t v[4];
        sk_err_t err;

        err = sk_dsw_get(db, req->voucher_id, 0, &sw, errstr, errstr_size);
        if (err == SK_ENOTFOUND || (err == SK_OK && (sw.state != SK_DSW_DB || sw.epoch != req->dsw_epoch))) {
                *res = R_STATE;
                return SK_OK;
        }
        if (err != SK_OK)
                return err;
        err = sk_db_row1(db, "SELECT status, begin_time > NOW(3), end_time <= NOW(3), buckets FROM "
                         "tb_seckill_voucher WHERE voucher_id = ?", SK_ARGS(SK_I64(req->voucher_id)),
                         v, 4, NULL, errstr, errstr_size);
        if (err == SK_ENOTFOUND) {
                *res = R_NOT_FOUND;
                return SK_OK;
        }
        if (err != SK_OK)
                return err;
        *buckets = v[3] >= 1 && v[3] <= SK_BUCKETS_MAX ? (int)v[3] : 1;
        *res = v[0] == 2 ? R_OFFLINE : v[0] == 3 ? R_EXPIRED : v[0] == 4 ? R_PAUSED
             : v[0] != 1 ? R_NOT_FOUND : v[2] ? R_ENDED : v[1] ? R_NOT_STARTED : R_CREATED;
        if (*res != R_CREATED)
                return SK_OK;
        err = sk_db_i64(db, "SELECT trace_id FROM tb_voucher_order WHERE voucher_id = ? AND "
                        "active_user_id = ?", SK_ARGS(SK_I64(req->voucher_id), SK_I64(req->user_id)),
                        v, NULL, errstr, errstr_size);
        if (err == SK_ENOTFOUND)
                return SK_OK;
        if (err != SK_OK)
                return err;
        *res = v[0] == req->trace_id ? R_MINE : R_HAS_ORDER;
        return SK_OK;
}

/* The second switch read, after the bucket UPDATE (the top of this file): *still = 1 while
 * the row says (db, the request's epoch). */
static sk_err_t switch_still_db(sk_db_t *db, const fr_req_t *req, int *still, char *errstr,
                                size_t errstr_size)
{
        sk_dsw_row_t sw;
        sk_err_t err;

        *still = 0;
        err = sk_dsw_get(db, req->voucher_id, 0, &sw, errstr, errstr_size);
        if (err == SK_ENOTFOUND)
                return SK_OK;
        if (err == SK_OK)
                *still = sw.state == SK_DSW_DB && sw.epoch == req->dsw_epoch;
        return err;
}

/* One attempt of the transaction. @returns SK_OK with *res and the voucher's bucket count
 * in *nbuckets, or the error (rolled back; SK_EAGAIN transient, SK_EEXIST duplicate key,
 * SK_EFAIL failpoint). *at_commit = 1 when the COMMIT's outcome is unknown (SK_EUNKNOWN
 * of sk_db_commit_outcome: any error but 1213/1205, or a lost link; DESIGN.md 16).
 * Failpoint front.db_only_after_commit (error): the COMMIT went through, its answer is
 * "lost"; db.commit_lost / db.commit_lost_before (sk/db_outcome.h) drop the link after
 * or instead of the COMMIT. */
static sk_err_t attempt(sk_db_t *db, const fr_req_t *req, result_t *res, int *nbuckets,
                        int *at_commit, char *errstr, size_t errstr_size)
{
        int buckets = 1, bucket = 0;
        int64_t after = 0;
        sk_err_t err;

        if ((err = sk_db_begin(db, errstr, errstr_size)) != SK_OK)
                return err;
        err = checks(db, req, res, &buckets, errstr, errstr_size);
        *nbuckets = buckets;
        if (err == SK_OK && *res == R_CREATED) {
                (void)SK_FAILPOINT("front.db_only_after_checks");
                err = take_unit(db, req, buckets, &bucket, &after, errstr, errstr_size);
                if (err == SK_ENOTFOUND) {
                        *res = R_SOLD_OUT;
                        err = SK_OK;
                } else if (err == SK_OK) {
                        err = insert_rows(db, req, bucket, after, errstr, errstr_size);
                        if (err == SK_OK && SK_FAILPOINT("front.db_only_before_commit")) {
                                sk_seterr(errstr, errstr_size, "failpoint front.db_only_before_commit");
                                err = SK_EFAIL;
                        }
                        if (err == SK_OK) {
                                int still = 0;

                                err = switch_still_db(db, req, &still, errstr, errstr_size);
                                if (err == SK_OK && !still) {
                                        *res = R_STATE; /* moved meanwhile: nothing sold */
                                        sk_db_rollback(db);
                                        return SK_OK;
                                }
                        }
                        /* The buyer was answered 503 at the request deadline (DESIGN.md 8):
                         * a transaction that reaches COMMIT after it (a stalled DB link)
                         * rolls back, so a late 503 is not followed by an order. A COMMIT
                         * sent before the deadline and acknowledged after it still
                         * commits: that 503 said PENDING. */
                        if (err == SK_OK && sk_mono_ms() >= req->deadline_mono_ms) {
                                sk_seterr(errstr, errstr_size, "request deadline passed before COMMIT");
                                err = SK_EFAIL;
                        }
                        if (err == SK_OK) {
                                err = sk_db_commit_outcome(db, errstr, errstr_size);
                                if (err == SK_OK && SK_FAILPOINT("front.db_only_after_commit")) {
                                        sk_seterr(errstr, errstr_size,
                                                  "failpoint front.db_only_after_commit");
                                        err = SK_EUNKNOWN;
                                }
                                /* 1213/1205 at COMMIT: rolled back, run again. */
                                if (err == SK_EAGAIN)
                                        sk_db_rollback(db);
                                *at_commit = err == SK_EUNKNOWN;
                                return err;
                        }
                }
        }
        sk_db_rollback(db);
        return err;
}

/* After a COMMIT whose outcome is unknown: is the outcome row there? Read on a fresh
 * session, with wsrep_sync_wait = 1 on Galera (sk/db_outcome.h). @p locking: a locking
 * read, which waits for a transaction still holding the trace's row (the lost COMMIT
 * still being applied) to end (DESIGN.md 16 "Answers" (b)). */
static int committed(sk_db_t *db, const fr_req_t *req, int locking)
{
        char errstr[256];
        int64_t n = 0;
        sk_err_t err;

        if (sk_db_resolve_begin(db, errstr, sizeof(errstr)) != SK_OK)
                return -1;
        err = sk_db_i64(db, locking ? "SELECT COUNT(*) FROM tb_seckill_outcome WHERE trace_id = ?"
                                      " LOCK IN SHARE MODE"
                                    : "SELECT COUNT(*) FROM tb_seckill_outcome WHERE trace_id = ?",
                        SK_ARGS(SK_I64(req->trace_id)), &n, NULL, errstr, sizeof(errstr));
        sk_db_resolve_end(db);
        if (err != SK_OK)
                return -1;
        return n > 0;
}

/* The trace of the user's active order of the voucher, read on @p db as it is: 0 none,
 * -1 unreadable. */
static int64_t active_trace(sk_db_t *db, const fr_req_t *req)
{
        char errstr[256];
        int64_t t = 0;
        sk_err_t err;

        err = sk_db_i64(db, "SELECT trace_id FROM tb_voucher_order WHERE voucher_id = ? AND "
                        "active_user_id = ?", SK_ARGS(SK_I64(req->voucher_id), SK_I64(req->user_id)),
                        &t, NULL, errstr, sizeof(errstr));
        return err == SK_OK ? t : err == SK_ENOTFOUND ? 0 : -1;
}

/* The answers the voucher row decides (DESIGN.md 3), by result. */
static const struct { result_t res; int status, code; const char *msg; } row_answers[] = {
        { R_NOT_FOUND, 404, SK_CODE_NOT_FOUND, "unknown voucher" },
        { R_OFFLINE, 403, SK_CODE_OFFLINE, "voucher offline" },
        { R_EXPIRED, 403, SK_CODE_EXPIRED, "voucher expired" },
        { R_NOT_STARTED, 403, SK_CODE_NOT_STARTED, "sale not started" },
        { R_ENDED, 403, SK_CODE_ENDED, "sale ended" },
};

static void answer(fr_req_t *req, result_t res)
{
        char buf[256];
        size_t i;

        switch (res) {
        case R_CREATED:
        case R_MINE:
                snprintf(buf, sizeof(buf), "{\"code\":0,\"orderId\":\"%s\",\"traceId\":\"%s\","
                         "\"state\":\"CREATED\"}", req->so, req->st);
                sk_metric_add(fr_m.db_created, 1);
                fr_answer(req, 200, strdup(buf), 0);
                break;
        case R_SOLD_OUT:
                sk_metric_add(fr_m.db_soldout, 1);
                for (int b = 0; b < req->buckets; b++) /* every bucket row had no stock */
                        fr_soldout_note(req, b);
                fr_answer(req, 409, fr_json_err(SK_CODE_SOLD_OUT, "sold out"), 0);
                break;
        case R_HAS_ORDER:
                sk_metric_add(fr_m.db_has_order, 1);
                fr_answer(req, 409, fr_json_err(SK_CODE_ALREADY_PURCHASED, "already purchased"), 0);
                break;
        case R_STATE:
                fr_answer_503(req, "degrade", NULL, "voucher is switching between Redis and the DB");
                break;
        case R_PAUSED:
                fr_answer_503(req, "paused", NULL, "voucher paused");
                break;
        default:
                for (i = 0; i < sizeof(row_answers) / sizeof(row_answers[0]); i++)
                        if (row_answers[i].res == res)
                                fr_answer(req, row_answers[i].status,
                                          fr_json_err(row_answers[i].code, row_answers[i].msg), 0);
                break;
        }
}

/* A COMMIT whose outcome is unknown (DESIGN.md 16): read the outcome row of the trace
 * (reconnecting first) until the answer is known or the request deadline passes.
 * @returns 1 committed, 0 not (the transaction may run again with the same keys), -1
 * still unknown. */
static int resolve_commit(sk_db_t *db, const fr_req_t *req, int locking)
{
        int c;

        while ((c = committed(db, req, locking)) < 0 && sk_mono_ms() < req->deadline_mono_ms)
                sk_sleep_ms(50, NULL);
        return c;
}

/* DESIGN.md 16 "Answers" (b): a re-run after an unknown COMMIT that was read as "not
 * applied" met a duplicate key (@p err SK_EEXIST), the buyer's active order or an empty
 * stock (*res). The lost COMMIT may still have been applying when it was read: resolve
 * again, with a read that waits for the trace's row locks (wsrep_sync_wait = 1 on
 * Galera), until the request deadline. Ours → 200 CREATED (R_MINE); an active order of
 * another trace proves ours did not apply → a true 10006; otherwise the answer is not
 * known: @returns 1 (answer 503 PENDING), else 0 with *res set to answer. */
static int rerun_resolve(sk_db_t *db, const fr_req_t *req, sk_err_t err, result_t *res)
{
        int64_t t;
        int c;

        if (err == SK_OK && *res == R_HAS_ORDER)
                return 0;       /* checks() read another trace's active order */
        c = resolve_commit(db, req, 1);
        SK_LOG(SK_WARN, "db_only_rerun_resolved", "trace_id=%s met=%s found=%d", req->st,
               err == SK_EEXIST ? "duplicate" : "sold_out", c);
        if (c == 1) {
                *res = R_MINE;
                return 0;
        }
        if (c == 0 && err == SK_EEXIST && (t = active_trace(db, req)) > 0 && t != req->trace_id) {
                *res = R_HAS_ORDER;
                return 0;
        }
        return 1;
}

static void run(sk_db_t **dbp, fr_req_t *req)
{
        char errstr[512];
        result_t res = R_STATE;
        sk_err_t err = SK_EAGAIN;
        int i, nbuckets = 1, unknown = 0, at_commit, lost = 0;

        for (i = 0; i < DBONLY_ATTEMPTS && sk_mono_ms() < req->deadline_mono_ms; i++) {
                if (i > 0)
                        sk_sleep_ms(20 << i, NULL);
                if (!*dbp)
                        *dbp = sk_db_connect_io(&g_fr.conf.mysql, 0, 2, 3, errstr, sizeof(errstr));
                else if (!sk_db_connected(*dbp))
                        (void)sk_db_reconnect(*dbp, errstr, sizeof(errstr));
                if (!*dbp || !sk_db_connected(*dbp)) {
                        err = SK_EAGAIN;
                        continue;
                }
                at_commit = 0;
                err = attempt(*dbp, req, &res, &nbuckets, &at_commit, errstr, sizeof(errstr));
                if (at_commit && err != SK_OK) {
                        /* Any error at COMMIT is an unknown outcome: the buyer is never
                         * answered from a guess (a re-run would meet its own order and
                         * say 10006), so read what the transaction wrote. */
                        int c = resolve_commit(*dbp, req, 0);

                        SK_LOG(SK_WARN, "db_only_commit_unknown", "trace_id=%s err=%s resolved=%d"
                               " reason=\"%s\"", req->st, sk_err2str(err), c, errstr);
                        if (c == 1) {
                                err = SK_OK;
                                res = R_MINE;
                                unknown = 0;
                                break;
                        }
                        unknown = c < 0;
                        if (c < 0)
                                break;
                        lost = 1;
                        err = SK_EAGAIN; /* not committed: run again, same keys */
                        continue;
                }
                /* A re-run after a COMMIT read as not applied never answers 409 from a
                 * guess: it resolves again (DESIGN.md 16 "Answers" (b)). */
                if (lost && (err == SK_EEXIST ||
                             (err == SK_OK && (res == R_SOLD_OUT || res == R_HAS_ORDER)))) {
                        unknown = rerun_resolve(*dbp, req, err, &res);
                        if (!unknown)
                                err = SK_OK;
                        break;
                }
                if (err == SK_OK || err == SK_EEXIST || err == SK_EFAIL || err == SK_EDB)
                        break;
        }
        if (unknown) {
                /* The COMMIT's outcome could not be read before the deadline: the order
                 * may exist (orders/me tells), never a 409 for the buyer's own order. */
                sk_metric_add(fr_m.db_unavailable, 1);
                fr_answer_503(req, "db", "PENDING", "outcome not yet known");
        } else if (err == SK_OK) {
                if (req->buckets <= 0)
                        req->buckets = nbuckets; /* N from the DB row: Redis may never have told */
                answer(req, res);
        } else if (err == SK_EEXIST) {
                answer(req, R_HAS_ORDER); /* the unique active-order key (DESIGN.md 12) */
        } else {
                SK_LOG(SK_WARN, "db_only_failed", "trace_id=%s voucher_id=%s err=%s reason=\"%s\"",
                       req->st, req->sv, sk_err2str(err), errstr);
                sk_metric_add(fr_m.db_unavailable, 1);
                fr_answer_503(req, "db", NULL, "database unavailable");
        }
}

/* One purchase (batches of one) on the thread's own DB session. */
static void dbonly_run(fr_conns_t *c, fr_req_t **batch, int n)
{
        fr_req_t *req = batch[0];

        (void)n;
        if (sk_mono_ms() >= req->deadline_mono_ms)
                fr_answer_503(req, "timeout", NULL, "queued too long");
        else
                run(&c->db, req);
        fr_req_done(req);
}

static const fr_pool_ops_t dbonly_ops = { .run = dbonly_run };

int fr_dbonly_start(void)
{
        queue_max = (size_t)g_fr.conf.degrade_db_conns * DBONLY_QUEUE_PER_CONN;
        return fr_pool_start(&pool, &dbonly_ops, g_fr.conf.degrade_db_conns, 1);
}

void fr_dbonly_stop(void)
{
        fr_pool_stop(&pool);
}
