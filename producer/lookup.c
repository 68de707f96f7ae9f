/* producer/lookup.c: the lookup pool of seckill-front: a few threads, each with its own
 * Redis and read-only DB connection (connected lazily, reconnected after an error),
 * serving GET .../orders/me and GET /api/v1/orders/{id}; and the 10004 check pool, its
 * own small queue and thread, for the DB check behind a 10004 from deduct.lua
 * (DESIGN.md 3: a voucher whose end time has passed is 403/10003, one on sale in the DB
 * whose Redis meta is missing is 503, else 404, remembered in the unknown-voucher cache;
 * DESIGN.md 15: a flood of made-up ids never delays a buyer's orders/me or cancel).
 * Purchases never wait on these threads' connections. It answers through req.h only (it calls no other stage
 * of the purchase pipeline); owns its queue and threads.
 * Cancel (orders.c) runs on these threads and connections too; the payment callback
 * never does (payment.c has its own pool).
 * What it does not do: write the DB or Redis itself (orders.c does, for cancel). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

#include "front.h"
#include "lookup.h"
#include "metrics.h"
#include "nbuckets.h"
#include "orders.h"
#include "pool.h"
#include "req.h"
#include "sk/clock.h"
#include "sk/db.h"
#include "sk/failpoint.h"
#include "sk/keys.h"
#include "sk/log.h"
#include "sk/model.h"
#include "sk/order.h"
#include "sk/redis.h"
#include "unknown.h"

#define LOOKUP_REDIS_TIMEOUT_MS 1000
#define VCHECK_THREADS 1                /* the 10004 check pool (DESIGN.md 15) */
#define VCHECK_QUEUE_MAX 32             /* 10004 checks waiting; beyond: 503 at once */

typedef fr_conns_t lk_conn_t;           /* the lookup thread's own connections (pool.h) */

static fr_pool_t pool;                  /* the lookup queue and its threads */
static fr_pool_t vpool;                 /* the 10004 checks' own queue and thread */

void fr_lookup_submit(fr_req_t *req)
{
        if (req->lookup == FR_LOOKUP_VOUCHER) {
                if (fr_pool_full(&vpool, VCHECK_QUEUE_MAX)) {
                        sk_metric_add(fr_m.vcheck_full, 1);
                        fr_answer_503(req, "overload", NULL, "too many voucher checks waiting");
                        fr_req_done(req);
                        return;
                }
                fr_pool_push_or_refuse(&vpool, req);
                return;
        }
        /* Bounded (DESIGN.md 3): beyond SECKILL_FRONT_LOOKUP_QUEUE_MAX waiting jobs the
         * request is answered 503 + Retry-After at once (a 10004 check took nothing, so
         * the purchase has no state). */
        if (fr_pool_full(&pool, (size_t)g_fr.lookup_queue_max)) {
                sk_metric_add(fr_m.lk_full, 1);
                fr_answer_503(req, "overload", NULL, "too many lookups waiting");
                fr_req_done(req);
                return;
        }
        /* Closed (shutdown, after every producer of this queue stopped): cannot happen
         * in the stop order of main.c; answered rather than leak the reference. */
        fr_pool_push_or_refuse(&pool, req);
}

static sk_redis_t *lk_redis(lk_conn_t *lc)
{
        char errstr[256];

        if (!lc->r) {
                lc->r = sk_redis_connect(&g_fr.conf.redis, LOOKUP_REDIS_TIMEOUT_MS, errstr,
                                         sizeof(errstr));
                if (!lc->r)
                        SK_LOG(SK_WARN, "lookup_redis_connect", "reason=\"%s\"", errstr);
        }
        return lc->r;
}

static void lk_redis_broken(lk_conn_t *lc)
{
        sk_redis_close(lc->r);
        lc->r = NULL;
}

static sk_db_t *lk_db(lk_conn_t *lc)
{
        char errstr[256];

        if (!lc->db) {
                lc->db = sk_db_connect(&g_fr.conf.mysql, 0, 0, errstr, sizeof(errstr));
                if (!lc->db)
                        SK_LOG(SK_WARN, "lookup_db_connect", "reason=\"%s\"", errstr);
        }
        return lc->db;
}

static void lk_db_broken(lk_conn_t *lc)
{
        sk_db_close(lc->db);
        lc->db = NULL;
}

/* Run @p sql with @p args[0..nargs) bound (the ids) and copy the first row's first
 * @p ncols (<= 8) columns into @p cols as text (cut at 63 bytes, "" for NULL).
 * @returns 1 row found, 0 no row, -1 DB error (the connection is dropped). */
static int lk_query_row(lk_conn_t *lc, const char *sql, const sk_db_arg_t *args, int nargs,
                        int ncols, char cols[][64], int *isnull)
{
        sk_db_t *db = lk_db(lc);
        sk_db_col_t c[8];
        char errstr[256];
        unsigned mask = 0;
        sk_err_t err;
        int i;

        if (!db)
                return -1;
        for (i = 0; i < ncols; i++)
                c[i] = SK_COL_STR(cols[i], 64);
        err = sk_db_row1_cols(db, sql, args, nargs, c, ncols, &mask, errstr, sizeof(errstr));
        if (err == SK_ENOTFOUND)
                return 0;
        if (err != SK_OK) {
                SK_LOG(SK_WARN, "lookup_db_error", "errno=%u reason=\"%s\"", sk_db_errno(db),
                       errstr);
                lk_db_broken(lc);
                return -1;
        }
        for (i = 0; isnull && i < ncols; i++)
                isnull[i] = (mask >> i) & 1u;
        return 1;
}

/* HGET/GET helpers. @returns 1 value copied (malloc'd into *out), 0 nil, -1 error. */
static int lk_redis_get(lk_conn_t *lc, char **out, const char *cmd, const char *key,
                        const char *field)
{
        sk_redis_t *r = lk_redis(lc);
        redisReply *reply = NULL;
        const char *argv[3];
        char errstr[256];
        sk_err_t err;
        int argc = 0, rc;

        *out = NULL;
        if (!r)
                return -1;
        argv[argc++] = cmd;
        argv[argc++] = key;
        if (field)
                argv[argc++] = field;
        err = sk_redis_cmd(r, &reply, argc, argv, NULL, errstr, sizeof(errstr));
        if (err != SK_OK || !reply) {
                SK_LOG(SK_WARN, "lookup_redis_error", "cmd=%s key=%s err=%s reason=\"%s\"", cmd,
                       key, sk_err2str(err), errstr);
                if (reply)
                        freeReplyObject(reply);
                lk_redis_broken(lc);
                return -1;
        }
        if (reply->type == REDIS_REPLY_STRING) {
                *out = strndup(reply->str, reply->len);
                rc = *out ? 1 : -1;
        } else {
                rc = 0;
        }
        freeReplyObject(reply);
        return rc;
}

/* A JSON string field of @p json as a canonical id. @returns 0 or -1. */
static int json_id(const cJSON *obj, const char *name, int64_t *out)
{
        const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, name);

        if (cJSON_IsString(it) && it->valuestring)
                return sk_id_parse_cstr(it->valuestring, out);
        return -1;
}

static void answer_json(fr_req_t *req, int status, const char *json)
{
        fr_answer(req, status, strdup(json), 0);
}

/* 10004 from deduct.lua (meta missing): the DB decides (DESIGN.md 3). Past its end time
 * a voucher is 403/10003 whatever Redis holds (its keys may have expired: the window is
 * checked before the status, as deduct.lua does); on sale (or paused for a rebuild)
 * with meta missing, Redis lost data: 503 until preheat or --repair rebuilds it; not
 * in the DB or not on sale there: 404. end_time is UTC (every session runs in UTC). */
static void do_voucher(lk_conn_t *lc, fr_req_t *req)
{
        char cols[2][64];
        int64_t end_ms = 0, checked_ms = sk_mono_ms();
        int rc;

        sk_metric_add(fr_m.vchecks, 1);
        rc = lk_query_row(lc, "SELECT status, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00',"
                          " end_time) DIV 1000 FROM tb_seckill_voucher WHERE voucher_id=?",
                          SK_ARGS(SK_I64(req->voucher_id)), 2, cols, NULL);
        if (rc == 1 && sk_id_parse_cstr(cols[1], &end_ms) != 0)
                end_ms = 0; /* not a positive ms count: no end to compare with */
        if (rc < 0) {
                fr_answer_503(req, "db", NULL, "database unavailable");
        } else if (rc == 1 && end_ms > 0 && sk_now_ms() > end_ms) {
                fr_answer(req, 403, fr_json_err(SK_CODE_ENDED, "ended"), 0);
        } else if (rc == 1 && (!strcmp(cols[0], "1") || !strcmp(cols[0], "4"))) {
                SK_LOG(SK_WARN, "voucher_meta_missing", "voucher_id=%s db_status=%s", req->sv,
                       cols[0]);
                fr_answer_503(req, "meta_missing", NULL, "voucher temporarily unavailable");
        } else {
                fr_unknown_note(req, checked_ms);
                fr_answer(req, 404, fr_json_err(SK_CODE_NOT_FOUND, "unknown voucher"), 0);
        }
}

/* An order's status and deadline as orders/me and GET /orders/{id} show them. */
typedef struct me_order {
        char order_id[SK_ID_STRLEN];
        const char *status;     /* sk_order_status_str(), NULL = no order known */
        char deadline[32];      /* "YYYY-mm-ddTHH:MM:SS.mmm" (UTC) or "" = none */
} me_order_t;

#define ME_ORDER_COLS "id, status, DATE_FORMAT(pay_deadline, '%Y-%m-%dT%H:%i:%s.%f')"

/* Fill @p mo from the first row of @p sql (columns ME_ORDER_COLS; @p args as
 * lk_query_row's). @returns 1 found, 0 none, -1 DB error. */
static int me_order_row(lk_conn_t *lc, const char *sql, const sk_db_arg_t *args, int nargs,
                        me_order_t *mo)
{
        char cols[3][64];
        int isnull[3] = { 0, 0, 0 };
        int rc = lk_query_row(lc, sql, args, nargs, 3, cols, isnull);
        int st = 0;

        if (rc != 1)
                return rc;
        snprintf(mo->order_id, sizeof(mo->order_id), "%.20s", cols[0]);
        (void)sk_parse_int(cols[1], 0, 100, &st);
        mo->status = sk_order_status_str(st);
        snprintf(mo->deadline, sizeof(mo->deadline), "%.23s", isnull[2] ? "" : cols[2]);
        return 1;
}

/* The orders/me body. @p mo (may be NULL) is the order the state is about; @p reason
 * comes from the RESTORE entry or the outcome row: stored data, so it is escaped by
 * cJSON (a quote in it must not break the JSON) and cut at 80 bytes. */
static void me_answer(fr_req_t *req, const char *state, const me_order_t *mo, const char *reason)
{
        char rsn[81];
        cJSON *o = cJSON_CreateObject();
        char *body = NULL;
        int ok;

        if (reason && *reason)
                snprintf(rsn, sizeof(rsn), "%s", reason);
        ok = o && cJSON_AddNumberToObject(o, "code", 0) &&
             cJSON_AddStringToObject(o, "state", state) &&
             (mo && mo->order_id[0] ? cJSON_AddStringToObject(o, "orderId", mo->order_id)
                                    : cJSON_AddNullToObject(o, "orderId")) &&
             (mo && mo->status ? cJSON_AddStringToObject(o, "orderStatus", mo->status)
                               : cJSON_AddNullToObject(o, "orderStatus")) &&
             (mo && mo->status && mo->deadline[0]
                      ? cJSON_AddStringToObject(o, "payDeadline", mo->deadline)
                      : cJSON_AddNullToObject(o, "payDeadline")) &&
             (reason && *reason ? cJSON_AddStringToObject(o, "reason", rsn)
                                : cJSON_AddNullToObject(o, "reason"));
        if (ok)
                body = cJSON_PrintUnformatted(o);
        cJSON_Delete(o);
        if (!body) {
                fr_answer(req, 500, fr_json_err(SK_CODE_BAD_INPUT, "out of memory"), 0);
                return;
        }
        fr_answer(req, 200, body, 0);
}

/* An outcome row (outcome, order_id, reason) decides orders/me (DESIGN.md 3): FAILED ->
 * FAILED with its reason; CREATED whose order is no longer active -> CLOSED with that
 * order's status. @returns 0 answered, -1 DB error. */
static int me_from_outcome(lk_conn_t *lc, fr_req_t *req, char cols[3][64])
{
        me_order_t mo = { "", NULL, "" };
        int64_t oid = 0;
        int rc = 0;

        if (strcmp(cols[0], "1") != 0) {
                snprintf(mo.order_id, sizeof(mo.order_id), "%.20s", cols[1]);
                me_answer(req, "FAILED", &mo, cols[2]);
                return 0;
        }
        /* A CREATED row names its order (a positive id); anything else finds no order. */
        if (sk_id_parse_cstr(cols[1], &oid) == 0 &&
            (rc = me_order_row(lc, "SELECT " ME_ORDER_COLS " FROM tb_voucher_order WHERE id=?",
                               SK_ARGS(SK_I64(oid)), &mo)) < 0)
                return -1;
        if (rc == 0)
                snprintf(mo.order_id, sizeof(mo.order_id), "%.20s", cols[1]);
        me_answer(req, "CLOSED", &mo, NULL);
        return 0;
}

/* What orders/me reads from Redis (each malloc'd or NULL). */
typedef struct me_redis {
        char *trace, *entry, *restore;
        char t_order[SK_ID_STRLEN];     /* the order id the DEDUCT entry names, or "" */
        int probing;                    /* T:h says probing: no bucket admitted T yet */
} me_redis_t;

static void me_redis_free(me_redis_t *m)
{
        free(m->trace);
        free(m->entry);
        free(m->restore);
        memset(m, 0, sizeof(*m));
}

/* T's RESTORE (T:r) and DEDUCT (T) entries in bucket @p b, each kept only if not found
 * yet. @returns 0 or -1 (Redis failed). */
static int me_read_bucket(lk_conn_t *lc, fr_req_t *req, int b, int64_t t, me_redis_t *m)
{
        char ktrace[SK_KEY_MAX], field[48];

        sk_key_voucher(ktrace, g_fr.conf.redis_prefix, req->voucher_id, b, SK_KEY_TRACE);
        sk_field_trace(field, t, 'r');
        if (!m->restore && lk_redis_get(lc, &m->restore, "HGET", ktrace, field) < 0)
                return -1;
        sk_field_trace(field, t, 0);
        if (!m->entry && lk_redis_get(lc, &m->entry, "HGET", ktrace, field) < 0)
                return -1;
        return 0;
}

/* users[userId] in the user's home bucket h names a trace T: its RESTORE (T:r) and
 * DEDUCT (T) entries (*t = T), where T's stock is (DESIGN.md 3, 4): in h, or in the bucket
 * T:h names once settled; while T:h says probing, in any bucket (a T:r in any of them ->
 * FAILED; none -> PENDING). @returns 0, or -1 when Redis failed (nothing read counts
 * then: *m is empty). */
static int me_read_redis(lk_conn_t *lc, fr_req_t *req, me_redis_t *m, int64_t *t_out)
{
        char kusers[SK_KEY_MAX], ktrace[SK_KEY_MAX], field[48], *where = NULL;
        int64_t t, oid;
        int n, h, b;

        memset(m, 0, sizeof(*m));
        *t_out = 0;
        if (!lk_redis(lc))
                goto fail;
        if ((n = fr_nbuckets_get(lk_redis(lc), req->voucher_id)) < 0) {
                lk_redis_broken(lc);
                goto fail;
        }
        n = n > 0 ? n : 1;
        h = sk_home_bucket(req->user_id, n);
        sk_key_voucher(kusers, g_fr.conf.redis_prefix, req->voucher_id, h, SK_KEY_USERS);
        sk_key_voucher(ktrace, g_fr.conf.redis_prefix, req->voucher_id, h, SK_KEY_TRACE);
        if (lk_redis_get(lc, &m->trace, "HGET", kusers, req->su) < 0)
                goto fail;
        if (!m->trace || sk_id_parse_cstr(m->trace, &t) != 0)
                return 0;
        if (me_read_bucket(lc, req, h, t, m) < 0)
                goto fail;
        sk_field_trace(field, t, 'h');
        if (!m->entry && n > 1 && lk_redis_get(lc, &where, "HGET", ktrace, field) < 0)
                goto fail;
        if (where) {
                char *end = NULL;
                long j = strtol(where, &end, 10);

                m->probing = strcmp(where, "probing") == 0;
                if (!m->probing && end && *end == '\0' && j >= 0 && j < n && j != h) {
                        if (me_read_bucket(lc, req, (int)j, t, m) < 0)
                                goto fail;
                } else if (m->probing) {
                        for (b = 0; b < n && !m->restore; b++)
                                if (b != h && me_read_bucket(lc, req, b, t, m) < 0)
                                        goto fail;
                }
                free(where);
                where = NULL;
        }
        if (m->entry) {
                cJSON *j = cJSON_Parse(m->entry);

                if (j && json_id(j, "orderId", &oid) == 0)
                        sk_id_format(oid, m->t_order);
                cJSON_Delete(j);
        }
        *t_out = t;
        return 0;
fail:
        free(where);
        me_redis_free(m);
        return -1;
}

/* orders/me (DESIGN.md 3): CREATED if the user has an active order (UNPAID or PAID) in
 * the DB; else the trace T named by users[userId] in the home bucket: T's outcome row
 * decides (CREATED -> CLOSED, FAILED -> FAILED); without one, a RESTORE (T:r) -> FAILED,
 * a DEDUCT (T) or a purchase still probing -> PENDING; else the user's newest outcome row (FAILED -> FAILED, CREATED -> CLOSED);
 * else NONE. With Redis unreachable the DB (the book of record) still answers CREATED;
 * anything else needs the users hash: 503. */
static void do_orders_me(lk_conn_t *lc, fr_req_t *req)
{
        char cols[3][64];
        me_order_t mo = { "", NULL, "" };
        me_redis_t m;
        int64_t t = 0;
        int rc, redis_err = me_read_redis(lc, req, &m, &t) < 0;

        if ((rc = me_order_row(lc, "SELECT " ME_ORDER_COLS " FROM tb_voucher_order WHERE voucher_id=?"
                               " AND user_id=? AND status IN " SK_SQL_ORDER_ACTIVE
                               " ORDER BY create_time DESC LIMIT 1",
                               SK_ARGS(SK_I64(req->voucher_id), SK_I64(req->user_id)), &mo)) < 0)
                goto db_down;
        if (rc == 1) {
                me_answer(req, "CREATED", &mo, NULL);
                goto done;
        }
        if (redis_err) {
                fr_answer_503(req, "redis", NULL, "redis unavailable");
                goto done;
        }
        if (t && (m.entry || m.restore || m.probing)) {
                if ((rc = lk_query_row(lc, "SELECT outcome, order_id, reason FROM tb_seckill_outcome"
                                       " WHERE trace_id=?", SK_ARGS(SK_I64(t)), 3, cols, NULL)) < 0)
                        goto db_down;
                if (rc == 1) {
                        if (me_from_outcome(lc, req, cols) < 0)
                                goto db_down;
                        goto done;
                }
                snprintf(mo.order_id, sizeof(mo.order_id), "%s", m.t_order);
                if (m.restore) {
                        cJSON *j = cJSON_Parse(m.restore);
                        const cJSON *rs = j ? cJSON_GetObjectItemCaseSensitive(j, "reason") : NULL;

                        me_answer(req, "FAILED", &mo, cJSON_IsString(rs) ? rs->valuestring : NULL);
                        cJSON_Delete(j);
                } else {
                        me_answer(req, "PENDING", &mo, NULL);
                }
                goto done;
        }
        if ((rc = lk_query_row(lc, "SELECT outcome, order_id, reason FROM tb_seckill_outcome"
                               " WHERE voucher_id=? AND user_id=? ORDER BY created_at DESC,"
                               " trace_id DESC LIMIT 1",
                               SK_ARGS(SK_I64(req->voucher_id), SK_I64(req->user_id)), 3, cols,
                               NULL)) < 0)
                goto db_down;
        if (rc == 1) {
                if (me_from_outcome(lc, req, cols) < 0)
                        goto db_down;
        } else {
                me_answer(req, "NONE", NULL, NULL);
        }
        goto done;
db_down:
        fr_answer_503(req, "db", NULL, "database unavailable");
done:
        me_redis_free(&m);
}

/* GET /api/v1/orders/{id}: only for its owner (else 404), with its status and
 * payDeadline (DESIGN.md 3). The Redis cache entry is served when it carries them (it is
 * deleted after every pay/cancel/close commit); the consumer's creation-time entry does
 * not (its deadline is on the DB's clock), so that read goes to the DB. */
static void do_order_get(lk_conn_t *lc, fr_req_t *req)
{
        char kord[SK_KEY_MAX], cols[8][64], buf[768];
        int isnull[8] = { 0 };
        char *cached = NULL;
        int rc, st = 0;

        sk_key_order(kord, g_fr.conf.redis_prefix, req->order_id);
        if (lk_redis_get(lc, &cached, "GET", kord, NULL) == 1) {
                cJSON *j = cJSON_Parse(cached);
                int64_t uid = 0;

                if (j && json_id(j, "userId", &uid) == 0 &&
                    cJSON_GetObjectItemCaseSensitive(j, "payDeadline")) {
                        cJSON_Delete(j);
                        if (uid == req->user_id)
                                fr_answer(req, 200, cached, 0);
                        else {
                                free(cached);
                                fr_answer(req, 404, fr_json_err(SK_CODE_NOT_FOUND,
                                                                "order not found"), 0);
                        }
                        return;
                }
                cJSON_Delete(j);
                free(cached);
                /* An entry without the lifecycle fields: the DB answers. */
        }
        /* Redis down or a miss: the DB is the book of record. */
        rc = lk_query_row(lc, "SELECT id, user_id, voucher_id, trace_id, status, "
                          "DATE_FORMAT(create_time, '%Y-%m-%dT%H:%i:%s.%f'), "
                          "DATE_FORMAT(pay_deadline, '%Y-%m-%dT%H:%i:%s.%f'), "
                          "DATE_FORMAT(paid_at, '%Y-%m-%dT%H:%i:%s.%f') "
                          "FROM tb_voucher_order WHERE id=?", SK_ARGS(SK_I64(req->order_id)), 8,
                          cols, isnull);
        if (rc < 0) {
                fr_answer_503(req, "db", NULL, "database unavailable");
                return;
        }
        if (rc == 0 || strcmp(cols[1], req->su) != 0) {
                fr_answer(req, 404, fr_json_err(SK_CODE_NOT_FOUND, "order not found"), 0);
                return;
        }
        (void)sk_parse_int(cols[4], 0, 100, &st);
        {
                char dl[40] = "null", pa[40] = "null";

                if (!isnull[6])
                        snprintf(dl, sizeof(dl), "\"%.23s\"", cols[6]);
                if (!isnull[7])
                        snprintf(pa, sizeof(pa), "\"%.23s\"", cols[7]);
                snprintf(buf, sizeof(buf),
                         "{\"code\":0,\"orderId\":\"%s\",\"userId\":\"%s\",\"voucherId\":\"%s\","
                         "\"traceId\":\"%s\",\"status\":%s,\"orderStatus\":\"%s\",\"payDeadline\":%s,"
                         "\"paidAt\":%s,\"createTime\":\"%.23s\"}",
                         cols[0], cols[1], cols[2], cols[3], cols[4], sk_order_status_str(st), dl, pa,
                         cols[5]);
        }
        answer_json(req, 200, buf);
}

/* One job on a lookup thread. The pool's drained exit: a 10004 check queued while the
 * deduct workers drained is still served (fr_lookup_stop comes after them), so its
 * request is released (in-flight count). The answered drop: a job whose request was
 * answered while it waited (the deadline's 503) is dropped, never run (DESIGN.md 3) --
 * a cancel the client saw answered 503 is not applied behind its back. */
static void lookup_run(lk_conn_t *lc, fr_req_t **batch, int n)
{
        fr_req_t *req = batch[0];

        (void)n; /* batches of one */
        (void)SK_FAILPOINT("front.before_lookup");      /* sleep(MS): a slow job */
        switch (req->lookup) {
        case FR_LOOKUP_VOUCHER: do_voucher(lc, req); break;
        case FR_LOOKUP_ORDERS_ME: do_orders_me(lc, req); break;
        case FR_LOOKUP_ORDER_GET: do_order_get(lc, req); break;
        case FR_LOOKUP_CANCEL: fr_order_action(req, &lc->db, &lc->r); break;
        }
        fr_req_done(req);
}

static const fr_pool_ops_t lookup_ops = {
        .run = lookup_run,
        .drop_answered = 1,
        .dropped = &fr_m.lk_dropped,
};

int fr_lookup_start(char *errstr, size_t errstr_size)
{
        if (fr_pool_start(&pool, &lookup_ops, g_fr.lookup_threads, 1) != 0 ||
            fr_pool_start(&vpool, &lookup_ops, VCHECK_THREADS, 1) != 0) {
                sk_seterr(errstr, errstr_size, "cannot start the lookup threads");
                return -1;
        }
        return 0;
}

void fr_lookup_stop(void)
{
        fr_pool_stop(&vpool);
        fr_pool_stop(&pool);
}

size_t fr_lookup_depth(void)
{
        return fr_pool_depth(&pool) + fr_pool_depth(&vpool);
}
