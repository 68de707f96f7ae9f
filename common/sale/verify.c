/* verify.c: invariants 1, 2, 3, 4 (cancelled/closed orders), 6 and active <= init of
 * DESIGN.md 9 on live state
 * (sk/verify.h). Reads only: GET/HGET/HGETALL/HSCAN under WATCH on Redis, SELECTs in
 * one short READ COMMITTED transaction holding a shared lock on the voucher row.
 *
 * The report's output (sk_verify_print) is in verify_print.c.
 * It stays one file (~680 lines) because the Redis snapshot, the locked DB read and
 * the verdicts share the snap_t/dbrows_t figures; verify_print.c holds the output.
 *
 * What it does not do: repair anything (seckill-reconciler --repair does), log, or
 * retry a failed connection (the caller does). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "sk/ids.h"
#include "sk/keys.h"
#include "sk/order.h"
#include "sk/traceset.h"
#include "sk/vec.h"
#include "sk/verify.h"

/* The Redis side: stock, meta status, the users hash and the trace hash, under WATCH. */
typedef struct snap {
        int64_t stock;
        int stock_missing;
        int meta_status;
        sk_i64vec_t users;      /* user ids in the users hash, sorted unique */
        int64_t wrong_home;     /* users entries in a bucket that is not their home */
        int64_t bstock[SK_BUCKETS_MAX]; /* each bucket's stock, -1 missing or not read */
        sk_traceset_t set;
        int stable;
} snap_t;

static void snap_free(snap_t *s)
{
        free(s->users.v);
        sk_traceset_free(&s->set);
        memset(s, 0, sizeof(*s));
}

static sk_err_t snapshot_bucket(sk_redis_t *r, const char *prefix, int64_t voucher_id, int bucket,
                               int max_tries, snap_t *s, char *errstr, size_t errstr_size)
{
        char k_meta[SK_KEY_MAX], k_stock[SK_KEY_MAX], k_users[SK_KEY_MAX], k_trace[SK_KEY_MAX];
        redisReply *reply = NULL;
        sk_err_t err = SK_OK;
        int attempt;
        size_t i;

        sk_key_voucher(k_meta, prefix, voucher_id, bucket, SK_KEY_META);
        sk_key_voucher(k_stock, prefix, voucher_id, bucket, SK_KEY_STOCK);
        sk_key_voucher(k_users, prefix, voucher_id, bucket, SK_KEY_USERS);
        sk_key_voucher(k_trace, prefix, voucher_id, bucket, SK_KEY_TRACE);
        if (max_tries < 1)
                max_tries = 1;

        for (attempt = 0; attempt < max_tries; attempt++) {
                snap_free(s);
                sk_traceset_init(&s->set);
                if ((err = sk_redis_cmdf(r, &reply, errstr, errstr_size, "WATCH %s %s %s %s",
                                         k_meta, k_stock, k_users, k_trace)) != SK_OK)
                        return err;
                freeReplyObject(reply);
                reply = NULL;

                if ((err = sk_redis_cmdf(r, &reply, errstr, errstr_size, "GET %s", k_stock)) != SK_OK)
                        goto fail;
                s->stock_missing = reply->type != REDIS_REPLY_STRING;
                s->stock = -1;
                if (!s->stock_missing) {
                        long v;
                        if (sk_parse_long(reply->str, INT64_MIN / 2, INT64_MAX / 2, &v) != 0) {
                                sk_seterr(errstr, errstr_size, "%s is not an integer", k_stock);
                                err = SK_EREDIS;
                                goto fail;
                        }
                        s->stock = v;
                }
                freeReplyObject(reply);
                reply = NULL;

                if ((err = sk_redis_cmdf(r, &reply, errstr, errstr_size, "HGET %s status", k_meta)) != SK_OK)
                        goto fail;
                s->meta_status = 0;
                if (reply->type == REDIS_REPLY_STRING)
                        (void)sk_parse_int(reply->str, 0, 100, &s->meta_status);
                freeReplyObject(reply);
                reply = NULL;

                if ((err = sk_redis_cmdf(r, &reply, errstr, errstr_size, "HKEYS %s", k_users)) != SK_OK)
                        goto fail;
                if (reply->type == REDIS_REPLY_ARRAY) {
                        for (i = 0; i < reply->elements; i++) {
                                int64_t uid;
                                redisReply *f = reply->element[i];
                                if (f->type == REDIS_REPLY_STRING && f->len == 1 && f->str[0] == '_')
                                        continue; /* preheat's placeholder (DESIGN.md 4) */
                                if (f->type != REDIS_REPLY_STRING ||
                                    sk_id_parse(f->str, f->len, &uid) != 0)
                                        uid = -1; /* counted as a stray entry below */
                                if (sk_i64vec_push(&s->users, uid) != 0) {
                                        err = SK_ENOMEM;
                                        sk_seterr(errstr, errstr_size, "out of memory");
                                        goto fail;
                                }
                        }
                }
                freeReplyObject(reply);
                reply = NULL;
                sk_i64vec_sort_unique(&s->users);

                if ((err = sk_traceset_scan(r, k_trace, 1000, &s->set, errstr, errstr_size)) != SK_OK)
                        goto fail;

                if ((err = sk_redis_cmdf(r, &reply, errstr, errstr_size, "MULTI")) != SK_OK)
                        goto fail;
                freeReplyObject(reply);
                reply = NULL;
                if ((err = sk_redis_cmdf(r, &reply, errstr, errstr_size, "EXEC")) != SK_OK)
                        goto fail;
                s->stable = reply->type == REDIS_REPLY_ARRAY;
                freeReplyObject(reply);
                reply = NULL;
                if (s->stable)
                        return SK_OK;
        }
        return SK_OK; /* the last snapshot, not stable */
fail:
        if (reply)
                freeReplyObject(reply);
        /* Best effort: leave the connection without a WATCH. */
        if (sk_redis_cmdf(r, &reply, NULL, 0, "UNWATCH") == SK_OK)
                freeReplyObject(reply);
        return err;
}

/* The voucher's bucket count as Redis meta says (bucket 0's `buckets`; 1 when absent). */
static int redis_buckets(sk_redis_t *r, const char *prefix, int64_t voucher_id)
{
        char k_meta[SK_KEY_MAX];
        redisReply *reply = NULL;
        int n = 1;

        sk_key_voucher(k_meta, prefix, voucher_id, 0, SK_KEY_META);
        if (sk_redis_cmdf(r, &reply, NULL, 0, "HGET %s buckets", k_meta) != SK_OK)
                return 1;
        if (reply->type == REDIS_REPLY_STRING && sk_parse_int(reply->str, 1, SK_BUCKETS_MAX, &n) != 0)
                n = 1;
        freeReplyObject(reply);
        return n;
}

/* Users of bucket @p b's snapshot @p t whose home among @p nb buckets is not b
 * (DESIGN.md 4: a user's membership lives only in its home bucket). Stray entries (-1)
 * are counted as not active, not here. */
static int64_t wrong_home(const snap_t *t, int b, int nb)
{
        int64_t n = 0;

        for (size_t i = 0; i < t->users.n; i++)
                if (t->users.v[i] > 0 && sk_home_bucket(t->users.v[i], nb) != b)
                        n++;
        return n;
}

/* Every bucket's snapshot (each stable under its own WATCH: a voucher's buckets sit in
 * different Cluster slots, so one WATCH cannot span them), merged: stock summed (missing
 * if any bucket's is), users and traces united, meta status of bucket 0 unless it is 1
 * (on sale) and another bucket's is not (then the first such: a pause, a reset or a
 * missing meta in progress). Invariant 3 compares
 * the totals; a user lives only in its home bucket and a DEDUCT only in the bucket that
 * admitted it, so the unions do not double count. */
static sk_err_t redis_snapshot(sk_redis_t *r, const char *prefix, int64_t voucher_id,
                               int max_tries, snap_t *s, char *errstr, size_t errstr_size)
{
        char k_trace[SK_KEY_MAX];
        int nb = redis_buckets(r, prefix, voucher_id), b;
        sk_err_t err;
        size_t i;

        if ((err = snapshot_bucket(r, prefix, voucher_id, 0, max_tries, s, errstr, errstr_size)) != SK_OK)
                return err;
        s->wrong_home = wrong_home(s, 0, nb);
        for (b = 0; b < SK_BUCKETS_MAX; b++)
                s->bstock[b] = -1;
        s->bstock[0] = s->stock_missing ? -1 : s->stock;
        for (b = 1; b < nb; b++) {
                snap_t t = { 0 };

                if ((err = snapshot_bucket(r, prefix, voucher_id, b, max_tries, &t, errstr,
                                           errstr_size)) != SK_OK) {
                        snap_free(&t);
                        return err;
                }
                s->bstock[b] = t.stock_missing ? -1 : t.stock;
                s->stock_missing |= t.stock_missing;
                s->stock = s->stock_missing ? -1 : s->stock + t.stock;
                if (s->meta_status == 1 && t.meta_status != 1)
                        s->meta_status = t.meta_status; /* the first bucket not on sale */
                s->stable = s->stable && t.stable;
                s->wrong_home += wrong_home(&t, b, nb);
                for (i = 0; i < t.users.n; i++)
                        if (sk_i64vec_push(&s->users, t.users.v[i]) != 0) {
                                snap_free(&t);
                                sk_seterr(errstr, errstr_size, "out of memory");
                                return SK_ENOMEM;
                        }
                snap_free(&t);
                /* The bucket's trace entries into the merged set (one more HSCAN). */
                sk_key_voucher(k_trace, prefix, voucher_id, b, SK_KEY_TRACE);
                if ((err = sk_traceset_scan(r, k_trace, 1000, &s->set, errstr, errstr_size)) != SK_OK)
                        return err;
        }
        sk_i64vec_sort_unique(&s->users);
        return SK_OK;
}

typedef struct dbrows {
        int found, buckets, rows, bad_row;
        int64_t init_stock, stock;
        int64_t b_init[SK_BUCKETS_MAX], b_stock[SK_BUCKETS_MAX], b_active[SK_BUCKETS_MAX];
        sk_i64vec_t buyers;      /* active buyers, sorted unique (after the read) */
        sk_i64vec_t order_users, order_traces; /* one pair per active order */
        int64_t active, dups;
        int oom;
} dbrows_t;

static int voucher_row(void *arg, const int64_t *cols, const int *nulls, int ncols)
{
        dbrows_t *d = arg;

        (void)nulls;
        (void)ncols;
        d->found = 1;
        d->init_stock = cols[0];
        d->buckets = (int)cols[1];
        return 0;
}

/* One bucket row (DESIGN.md 6): its figures; the voucher's stock is their sum. */
static int bucket_row(void *arg, const int64_t *cols, const int *nulls, int ncols)
{
        dbrows_t *d = arg;

        (void)nulls;
        (void)ncols;
        if (cols[0] < 0 || cols[0] >= SK_BUCKETS_MAX) {
                d->bad_row = 1;
                return 0;
        }
        d->rows++;
        d->b_init[cols[0]] = cols[1];
        d->b_stock[cols[0]] = cols[2];
        d->stock += cols[2];
        return 0;
}

static int buyer_row(void *arg, const int64_t *cols, const int *nulls, int ncols)
{
        dbrows_t *d = arg;

        (void)nulls;
        (void)ncols;
        d->active++;
        if (cols[2] >= 0 && cols[2] < SK_BUCKETS_MAX)
                d->b_active[cols[2]]++;
        else
                d->bad_row = 1;
        if (sk_i64vec_push(&d->order_users, cols[0]) != 0 ||
            sk_i64vec_push(&d->order_traces, cols[1]) != 0) {
                d->oom = 1;
                return 1;
        }
        return 0;
}

/* Orders created after the Redis snapshot: their trace is not in the snapshot but is
 * in Redis now (a deduct that ran after the snapshot and was consumed before the DB
 * read). They are not drift: take them out of the DB side. *late_qty / *late_users
 * receive their units and users. A trace in neither is Redis losing data (drift). */
static sk_err_t late_orders(sk_redis_t *r, const char *k_trace, const sk_traceset_t *set,
                            const dbrows_t *d, int64_t *late_qty, sk_i64vec_t *late_users,
                            char *errstr, size_t errstr_size)
{
        enum { CHUNK = 200 };
        const char *argv[CHUNK + 2];
        size_t argvlen[CHUNK + 2];
        char fields[CHUNK][SK_ID_STRLEN];
        size_t idx[CHUNK];
        size_t i = 0, n, k;
        sk_err_t err;

        *late_qty = 0;
        while (i < d->order_traces.n) {
                redisReply *reply = NULL;

                argv[0] = "HMGET";
                argvlen[0] = 5;
                argv[1] = k_trace;
                argvlen[1] = strlen(k_trace);
                for (n = 0; i < d->order_traces.n && n < CHUNK; i++) {
                        const sk_trace_entry_t *e =
                                sk_traceset_get((sk_traceset_t *)set, d->order_traces.v[i], 0);
                        if (e && e->deduct)
                                continue;
                        argvlen[n + 2] = sk_id_format(d->order_traces.v[i], fields[n]);
                        argv[n + 2] = fields[n];
                        idx[n] = i;
                        n++;
                }
                if (n == 0)
                        continue;
                if ((err = sk_redis_cmd(r, &reply, (int)n + 2, argv, argvlen, errstr, errstr_size)) != SK_OK)
                        return err;
                for (k = 0; reply->type == REDIS_REPLY_ARRAY && k < reply->elements && k < n; k++) {
                        redisReply *v = reply->element[k];
                        sk_order_msg_t msg;
                        if (v->type != REDIS_REPLY_STRING)
                                continue;
                        if (sk_msg_parse(v->str, v->len, &msg, NULL, 0) != SK_OK)
                                continue;
                        *late_qty += msg.deduct_qty;
                        if (sk_i64vec_push(late_users, d->order_users.v[idx[k]]) != 0) {
                                freeReplyObject(reply);
                                sk_seterr(errstr, errstr_size, "out of memory");
                                return SK_ENOMEM;
                        }
                }
                freeReplyObject(reply);
        }
        sk_i64vec_sort_unique(late_users);
        return SK_OK;
}

static int lifecycle_row(void *arg, const int64_t *cols, const int *nulls, int ncols)
{
        sk_verify_report_t *rep = arg;

        (void)nulls;
        (void)ncols;
        rep->ended_orders = cols[0];
        rep->ended_no_restore = cols[1];
        rep->restore_not_ended = cols[2];
        rep->paid_and_ended = cols[3];
        return 0;
}

/* Invariants 4 (DB part) and 6 of DESIGN.md 9 for the order lifecycle, in one statement
 * (one read view): ended orders, those without their RESTORE row (business_type 4
 * cancel / 5 closed, the original trace_id), RESTORE rows of those types whose order is
 * not ended, and orders both paid and ended or paid after their deadline. */
static sk_err_t lifecycle_rows(sk_db_t *db, int64_t voucher_id, sk_verify_report_t *rep,
                               char *errstr, size_t errstr_size)
{
        int64_t p[4] = { voucher_id, voucher_id, voucher_id, voucher_id };

        return sk_db_rows(db,
                "SELECT (SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = ? AND status IN "
                SK_SQL_ORDER_ENDED "),"
                " (SELECT COUNT(*) FROM tb_voucher_order o WHERE o.voucher_id = ? AND o.status IN "
                SK_SQL_ORDER_ENDED
                "   AND NOT EXISTS (SELECT 1 FROM tb_voucher_reconcile_log l WHERE l.trace_id = o.trace_id"
                "   AND l.log_type = " SK_SQL_LOG_RESTORE " AND l.business_type IN "
                SK_SQL_BIZ_ORDER_END ")),"
                " (SELECT COUNT(*) FROM tb_voucher_reconcile_log l WHERE l.voucher_id = ? AND l.log_type = " SK_SQL_LOG_RESTORE
                "   AND l.business_type IN " SK_SQL_BIZ_ORDER_END
                " AND NOT EXISTS (SELECT 1 FROM tb_voucher_order o"
                "   WHERE o.trace_id = l.trace_id AND o.status IN " SK_SQL_ORDER_ENDED ")),"
                " (SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = ? AND paid_at IS NOT NULL"
                "   AND (status IN " SK_SQL_ORDER_ENDED
                " OR (pay_deadline IS NOT NULL AND paid_at > pay_deadline)))",
                p, 4, 4, lifecycle_row, rep, errstr, errstr_size);
}

static int trace_row(void *arg, const int64_t *cols, const int *nulls, int ncols)
{
        (void)nulls;
        (void)ncols;
        return sk_i64vec_push(arg, cols[0]) != 0;
}

/* Ended orders of the voucher whose trace lacks its release record T:x
 * (sk_release_pending): informational, see sk_verify_report_t.ended_no_release. */
static sk_err_t pending_releases(sk_db_t *db, sk_redis_t *r, const char *k_trace,
                                 int64_t voucher_id, int bucket, int64_t *pending, char *errstr,
                                 size_t errstr_size)
{
        const int64_t params[2] = { voucher_id, bucket };
        sk_i64vec_t traces = { 0 };
        unsigned char *pend = NULL;
        sk_err_t err;
        size_t i;

        *pending = 0;
        err = sk_db_rows(db, "SELECT trace_id FROM tb_voucher_order WHERE voucher_id = ?"
                         " AND bucket = ? AND status IN "
                         SK_SQL_ORDER_ENDED, params, 2, 1, trace_row, &traces,
                         errstr, errstr_size);
        if (err == SK_OK && traces.n > 0) {
                if (!(pend = malloc(traces.n))) {
                        sk_seterr(errstr, errstr_size, "out of memory");
                        err = SK_ENOMEM;
                } else {
                        err = sk_release_pending(r, k_trace, traces.v, traces.n, pend, errstr,
                                                 errstr_size);
                }
        }
        for (i = 0; err == SK_OK && i < traces.n; i++)
                *pending += pend[i];
        free(pend);
        free(traces.v);
        return err;
}

/* Traces that hold Redis stock unless proven otherwise: T present, no T:r. */
static int held(const sk_trace_entry_t *e)
{
        /* A rebuild's stub T ("rebuilt":1) stands for a DB order, not a DEDUCT in flight. */
        return e->deduct && !e->restore && e->msg_ok && !strstr(e->deduct, "\"rebuilt\":1");
}

/* Outcomes of the held traces, first without any lock (may be many). @p ids receives
 * every held trace, @p recheck the held ones not yet CREATED, which may change before
 * the locked read (CREATED is final). @returns SK_OK, or the error with errstr set
 * (SK_ENOMEM "out of memory"). */
static sk_err_t held_outcomes(sk_db_t *db, snap_t *s, sk_i64vec_t *ids, sk_i64vec_t *recheck,
                              char *errstr, size_t errstr_size)
{
        sk_err_t err;
        size_t i;

        for (i = 0; i < s->set.n; i++)
                if (held(&s->set.v[i]) && sk_i64vec_push(ids, s->set.v[i].trace_id) != 0)
                        goto nomem;
        if ((err = sk_traceset_load_db_ids(db, &s->set, ids->v, ids->n, errstr,
                                           errstr_size)) != SK_OK)
                return err;
        for (i = 0; i < s->set.n; i++)
                if (held(&s->set.v[i]) && s->set.v[i].outcome != SK_OUTCOME_CREATED &&
                    sk_i64vec_push(recheck, s->set.v[i].trace_id) != 0)
                        goto nomem;
        return SK_OK;
nomem:
        sk_seterr(errstr, errstr_size, "out of memory");
        return SK_ENOMEM;
}

/* The database side in one transaction (invariants 1, 4, 6, active <= init): voucher
 * row under a shared lock, active orders, the outcomes of @p recheck and the lifecycle
 * counters. The shared lock keeps the consumers' stock UPDATE (and so their order
 * commits) out until COMMIT: stock, buyers and outcomes are one consistent view.
 * Rolls back on any failure. @returns SK_OK, or the error with errstr set. */
static sk_err_t locked_db_read(sk_db_t *db, int64_t voucher_id, snap_t *s,
                               const sk_i64vec_t *recheck, dbrows_t *d, sk_verify_report_t *rep,
                               char *errstr, size_t errstr_size)
{
        sk_err_t err;

        if ((err = sk_db_begin(db, errstr, errstr_size)) != SK_OK)
                return err;
        if ((err = sk_db_rows(db,
                        "SELECT init_stock, buckets FROM tb_seckill_voucher WHERE voucher_id = ?"
                        " LOCK IN SHARE MODE",
                        &voucher_id, 1, 2, voucher_row, d, errstr, errstr_size)) != SK_OK)
                goto fail;
        /* The bucket rows under a shared lock: the consumers' decrements wait. */
        if ((err = sk_db_rows(db,
                        "SELECT bucket, init_stock, stock FROM tb_seckill_stock WHERE voucher_id = ?"
                        " LOCK IN SHARE MODE",
                        &voucher_id, 1, 3, bucket_row, d, errstr, errstr_size)) != SK_OK)
                goto fail;
        if (!d->found) {
                sk_seterr(errstr, errstr_size, "voucher %" PRId64 " is not in the database",
                          voucher_id);
                err = SK_ENOTFOUND;
                goto fail;
        }
        if ((err = sk_db_rows(db,
                        "SELECT user_id, trace_id, bucket FROM tb_voucher_order"
                        " WHERE voucher_id = ? AND status IN " SK_SQL_ORDER_ACTIVE,
                        &voucher_id, 1, 3, buyer_row, d, errstr, errstr_size)) != SK_OK)
                goto fail;
        if (d->oom) {
                sk_seterr(errstr, errstr_size, "out of memory");
                err = SK_ENOMEM;
                goto fail;
        }
        if ((err = sk_traceset_load_db_ids(db, &s->set, recheck->v, recheck->n, errstr,
                                           errstr_size)) != SK_OK)
                goto fail;
        if ((err = lifecycle_rows(db, voucher_id, rep, errstr, errstr_size)) != SK_OK)
                goto fail;
        if ((err = sk_db_commit(db, errstr, errstr_size)) != SK_OK)
                goto fail;
        return SK_OK;
fail:
        sk_db_rollback(db);
        return err;
}

/* Invariant 2: buyers (sorted unique afterwards) and the number of users with more
 * than one active order in d->dups. @returns 0, or -1 out of memory. */
static int count_duplicates(dbrows_t *d)
{
        size_t i;

        for (i = 0; i < d->order_users.n; i++)
                if (sk_i64vec_push(&d->buyers, d->order_users.v[i]) != 0)
                        return -1;
        if (d->buyers.n) {
                size_t j, run = 1;
                qsort(d->buyers.v, d->buyers.n, sizeof(*d->buyers.v), sk_i64_cmp);
                for (j = 1; j <= d->buyers.n; j++) {
                        if (j < d->buyers.n && d->buyers.v[j] == d->buyers.v[j - 1]) {
                                run++;
                                continue;
                        }
                        if (run > 1)
                                d->dups++;
                        run = 1;
                }
        }
        sk_i64vec_sort_unique(&d->buyers);
        return 0;
}

/* The Redis side (invariant 3): the figures of @p rep, the users the hash should hold
 * (@p expected, sorted unique: active buyers not late, plus the users of held traces
 * not CREATED) and the differences. @returns 0, or -1 out of memory. */
static int redis_side(sk_verify_report_t *rep, const snap_t *s, const dbrows_t *d,
                      const sk_i64vec_t *late_users, int64_t late_qty, sk_i64vec_t *expected)
{
        size_t i;

        rep->init_stock = d->init_stock;
        rep->db_stock = d->stock;
        rep->buckets = d->buckets;
        rep->bucket_rows = d->rows;
        rep->inv1_buckets_ok = !d->bad_row && d->rows == d->buckets;
        rep->bucket_init_sum = 0;
        for (i = 0; i < SK_BUCKETS_MAX; i++) {
                rep->bucket_init[i] = d->b_init[i];
                rep->bucket_stock[i] = d->b_stock[i];
                rep->bucket_active[i] = d->b_active[i];
                rep->bucket_init_sum += d->b_init[i];
                if (d->b_init[i] - d->b_stock[i] != d->b_active[i])
                        rep->inv1_buckets_ok = 0;
        }
        if (rep->bucket_init_sum != rep->init_stock)
                rep->inv1_buckets_ok = 0;
        rep->redis_stock = s->stock;
        for (i = 0; i < SK_BUCKETS_MAX; i++)
                rep->redis_bucket_stock[i] = s->bstock[i];
        rep->redis_stock_missing = s->stock_missing;
        rep->meta_status = s->meta_status;
        rep->active_orders = d->active;
        rep->active_buyers = (int64_t)d->buyers.n;
        rep->duplicate_users = d->dups;
        rep->users_in_hash = (int64_t)s->users.n;
        rep->users_wrong_home = s->wrong_home;
        rep->redis_stable = s->stable;

        for (i = 0; i < d->buyers.n; i++)
                if (!sk_i64vec_contains(late_users, d->buyers.v[i]) &&
                    sk_i64vec_push(expected, d->buyers.v[i]) != 0)
                        return -1;
        for (i = 0; i < s->set.n; i++) {
                const sk_trace_entry_t *e = &s->set.v[i];
                if (e->deduct)
                        rep->trace_entries++;
                if (!held(e) || e->outcome == SK_OUTCOME_CREATED)
                        continue;
                if (e->outcome == SK_OUTCOME_FAILED)
                        rep->pending_rollbacks++;
                else
                        rep->undecided_traces++;
                rep->held_qty += e->msg.deduct_qty;
                if (sk_i64vec_push(expected, e->msg.user_id) != 0)
                        return -1;
        }
        sk_i64vec_sort_unique(expected);
        rep->expected_redis_stock = rep->db_stock + late_qty - rep->held_qty;
        for (i = 0; i < s->users.n; i++)
                if (!sk_i64vec_contains(expected, s->users.v[i]))
                        rep->users_not_active++;
        for (i = 0; i < d->buyers.n; i++)
                if (!sk_i64vec_contains(late_users, d->buyers.v[i]) &&
                    !sk_i64vec_contains(&s->users, d->buyers.v[i]))
                        rep->active_not_in_hash++;
        return 0;
}

/* The verdicts of DESIGN.md 9 from the figures of @p rep. */
static void verdicts(sk_verify_report_t *rep, const snap_t *s, size_t nexpected)
{
        rep->inv1_ok = rep->init_stock - rep->db_stock == rep->active_orders &&
                       rep->inv1_buckets_ok;
        rep->inv2_ok = rep->duplicate_users == 0;
        rep->inv3_stock_ok = !s->stock_missing && rep->redis_stock == rep->expected_redis_stock;
        /* Equal sets: same size and every hash user expected. */
        rep->inv3_users_ok = rep->users_not_active == 0 && s->users.n == nexpected &&
                             rep->users_wrong_home == 0;
        rep->inv3_ok = rep->redis_stable && rep->inv3_stock_ok && rep->inv3_users_ok;
        rep->active_le_init_ok = rep->active_orders <= rep->init_stock;
        rep->inv4_ok = rep->ended_no_restore == 0 && rep->restore_not_ended == 0;
        rep->inv6_ok = rep->paid_and_ended == 0;
        rep->live_ok = rep->inv1_ok && rep->inv2_ok && rep->active_le_init_ok &&
                       rep->inv4_ok && rep->inv6_ok;
        rep->ok = rep->live_ok && rep->inv3_ok;
        /* Quiesced (DESIGN.md 9.3): nothing in flight, each bucket's Redis stock = its DB
         * stock, the users hashes = the active buyers, each in their home bucket. */
        rep->inv3_quiesced_ok = rep->inv3_ok && rep->held_qty == 0 &&
                                rep->undecided_traces == 0 && rep->pending_rollbacks == 0 &&
                                rep->late_orders == 0;
        for (int b = 0; b < rep->buckets && b < SK_BUCKETS_MAX; b++)
                if (rep->redis_bucket_stock[b] != rep->bucket_stock[b])
                        rep->inv3_quiesced_ok = 0;
}

sk_err_t sk_verify_voucher_conn(sk_db_t *db, sk_redis_t *r, const char *prefix,
                                int64_t voucher_id, int max_tries, sk_verify_report_t *rep,
                                char *errstr, size_t errstr_size)
{
        snap_t s;
        dbrows_t d;
        sk_i64vec_t ids = { 0 }, recheck = { 0 }, expected = { 0 }, late_users = { 0 };
        int64_t late_qty = 0;
        char k_trace[SK_KEY_MAX];
        sk_err_t err;
        int b;

        memset(rep, 0, sizeof(*rep));
        memset(&s, 0, sizeof(s));
        memset(&d, 0, sizeof(d));
        rep->voucher_id = voucher_id;
        if (voucher_id <= 0) {
                sk_seterr(errstr, errstr_size, "invalid voucher id");
                return SK_EINVAL;
        }

        if ((err = redis_snapshot(r, prefix, voucher_id, max_tries, &s, errstr, errstr_size)) != SK_OK)
                goto done;
        if ((err = held_outcomes(db, &s, &ids, &recheck, errstr, errstr_size)) != SK_OK)
                goto done;
        if ((err = locked_db_read(db, voucher_id, &s, &recheck, &d, rep, errstr,
                                  errstr_size)) != SK_OK)
                goto done;
        if (count_duplicates(&d) != 0)
                goto nomem;
        /* Per bucket: an order's T and T:x live in the bucket its unit came from. */
        rep->ended_no_release = 0;
        for (b = 0; b < (d.buckets > 0 ? d.buckets : 1); b++) {
                int64_t qty = 0, pend = 0;

                sk_key_voucher(k_trace, prefix, voucher_id, b, SK_KEY_TRACE);
                if ((err = late_orders(r, k_trace, &s.set, &d, &qty, &late_users, errstr,
                                       errstr_size)) != SK_OK)
                        goto done;
                late_qty += qty;
                if ((err = pending_releases(db, r, k_trace, voucher_id, b, &pend, errstr,
                                            errstr_size)) != SK_OK)
                        goto done;
                rep->ended_no_release += pend;
        }
        rep->late_orders = (int64_t)late_users.n;
        if (redis_side(rep, &s, &d, &late_users, late_qty, &expected) != 0)
                goto nomem;
        verdicts(rep, &s, expected.n);
        err = SK_OK;
        goto done;
nomem:
        sk_seterr(errstr, errstr_size, "out of memory");
        err = SK_ENOMEM;
done:
        snap_free(&s);
        free(d.buyers.v);
        free(d.order_users.v);
        free(d.order_traces.v);
        free(late_users.v);
        free(ids.v);
        free(recheck.v);
        free(expected.v);
        return err;
}

sk_err_t sk_verify_voucher(const sk_conf_t *conf, int64_t voucher_id, sk_verify_report_t *rep,
                           char *errstr, size_t errstr_size)
{
        sk_db_t *db = NULL;
        sk_redis_t *r = NULL;
        sk_err_t err;

        memset(rep, 0, sizeof(*rep));
        rep->voucher_id = voucher_id;
        if (!conf || voucher_id <= 0) {
                sk_seterr(errstr, errstr_size, "invalid voucher id");
                return SK_EINVAL;
        }
        sk_db_library_init();
        if (!(db = sk_db_connect(&conf->mysql, 0, 10, errstr, errstr_size))) {
                err = SK_EAGAIN;
                goto done;
        }
        if (!(r = sk_redis_connect(&conf->redis, 5000, errstr, errstr_size))) {
                err = SK_EAGAIN;
                goto done;
        }
        err = sk_verify_voucher_conn(db, r, conf->redis_prefix, voucher_id, 5, rep, errstr,
                                     errstr_size);
done:
        sk_redis_close(r);
        sk_db_close(db);
        return err;
}
