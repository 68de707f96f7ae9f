/* traceset.c: a voucher's Redis trace hash in memory, joined with the database by
 * traceId (sk/traceset.h). The hash index is open addressing over int64 trace ids
 * (splitmix64 mixing, load factor <= 1/2). Database lookups are prepared statements
 * with a fixed number of placeholders (BATCH); a short last batch repeats its last id,
 * which IN () ignores, so one prepared statement serves every batch.
 *
 * What it does not do: decide, write, log, or retry (the caller knows whether a retry
 * is safe). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

#include "sk/ids.h"
#include "sk/traceset.h"

#define BATCH 256 /* placeholders per IN () statement */

void sk_traceset_init(sk_traceset_t *set)
{
        memset(set, 0, sizeof(*set));
}

void sk_traceset_free(sk_traceset_t *set)
{
        size_t i;

        if (!set)
                return;
        for (i = 0; i < set->n; i++) {
                free(set->v[i].deduct);
                free(set->v[i].restore);
                free(set->v[i].claim);
                free(set->v[i].home_st);
                free(set->v[i].release);
        }
        free(set->v);
        free(set->slots);
        memset(set, 0, sizeof(*set));
}

static uint64_t mix64(uint64_t x)
{
        x += UINT64_C(0x9E3779B97F4A7C15);
        x = (x ^ (x >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
        x = (x ^ (x >> 27)) * UINT64_C(0x94D049BB133111EB);
        return x ^ (x >> 31);
}

static int rehash(sk_traceset_t *set, size_t nslots)
{
        size_t *slots = calloc(nslots, sizeof(*slots));
        size_t i;

        if (!slots)
                return -1;
        for (i = 0; i < set->n; i++) {
                size_t h = (size_t)(mix64((uint64_t)set->v[i].trace_id) & (nslots - 1));
                while (slots[h])
                        h = (h + 1) & (nslots - 1);
                slots[h] = i + 1;
        }
        free(set->slots);
        set->slots = slots;
        set->nslots = nslots;
        return 0;
}

sk_trace_entry_t *sk_traceset_get(sk_traceset_t *set, int64_t trace_id, int create)
{
        size_t h;

        if (set->nslots) {
                h = (size_t)(mix64((uint64_t)trace_id) & (set->nslots - 1));
                while (set->slots[h]) {
                        sk_trace_entry_t *e = &set->v[set->slots[h] - 1];
                        if (e->trace_id == trace_id)
                                return e;
                        h = (h + 1) & (set->nslots - 1);
                }
        }
        if (!create)
                return NULL;
        if (set->n == set->cap) {
                size_t cap = set->cap ? set->cap * 2 : 256;
                sk_trace_entry_t *v = realloc(set->v, cap * sizeof(*v));
                if (!v)
                        return NULL;
                set->v = v;
                set->cap = cap;
        }
        if ((set->n + 1) * 2 > set->nslots) {
                if (rehash(set, set->nslots ? set->nslots * 2 : 512) != 0)
                        return NULL;
        }
        memset(&set->v[set->n], 0, sizeof(set->v[set->n]));
        set->v[set->n].trace_id = trace_id;
        h = (size_t)(mix64((uint64_t)trace_id) & (set->nslots - 1));
        while (set->slots[h])
                h = (h + 1) & (set->nslots - 1);
        set->slots[h] = set->n + 1;
        set->n++;
        return &set->v[set->n - 1];
}

/* Split a field name "ID", "ID:r", "ID:h", "ID:x", "ID:c" or "ID:c:*" ("_", the
 * preheat placeholder, is not a trace: -1) into the id and the suffix. */
static int parse_field(const char *f, size_t len, int64_t *id, char *suffix)
{
        size_t i = 0;

        while (i < len && f[i] != ':')
                i++;
        if (sk_id_parse(f, i, id) != 0)
                return -1;
        if (i == len) {
                *suffix = 0;
                return 0;
        }
        if (len - i == 2 && (f[i + 1] == 'r' || f[i + 1] == 'h' || f[i + 1] == 'x')) {
                *suffix = f[i + 1];
                return 0;
        }
        if (len - i >= 2 && f[i + 1] == 'c' && (len - i == 2 || f[i + 2] == ':')) {
                *suffix = 'c';
                return 0;
        }
        return -1;
}

static int set_str(char **dst, const char *s, size_t len)
{
        char *p = malloc(len + 1);

        if (!p)
                return -1;
        memcpy(p, s, len);
        p[len] = '\0';
        free(*dst);
        *dst = p;
        return 0;
}

/* sk_redis_hscan callback: one field of the trace hash into the set. */
static sk_err_t scan_field(const char *f, size_t flen, const char *val, size_t vlen, void *arg)
{
        sk_traceset_t *set = arg;
        sk_trace_entry_t *e;
        int64_t id;
        char suffix;
        char **dst = NULL;

        if (parse_field(f, flen, &id, &suffix) != 0)
                return SK_OK;
        if (!(e = sk_traceset_get(set, id, 1)))
                return SK_ENOMEM;
        if (suffix == 0) {
                if (set_str(&e->deduct, val, vlen) != 0)
                        return SK_ENOMEM;
                e->msg_ok = sk_msg_parse(val, vlen, &e->msg, NULL, 0) == SK_OK &&
                            e->msg.trace_id == id;
                return SK_OK;
        }
        if (suffix == 'r')
                dst = &e->restore;
        else if (suffix == 'h')
                dst = &e->home_st;
        else if (suffix == 'x')
                dst = &e->release;
        else if (flen == (size_t)snprintf(NULL, 0, "%" PRId64 ":c", id))
                dst = &e->claim; /* only the one-field form "T:c" (lua/claim.lua) is parsed */
        if (dst && set_str(dst, val, vlen) != 0)
                return SK_ENOMEM;
        return SK_OK;
}

sk_err_t sk_traceset_scan(sk_redis_t *r, const char *trace_key, int count_hint,
                          sk_traceset_t *set, char *errstr, size_t errstr_size)
{
        return sk_redis_hscan(r, trace_key, count_hint, scan_field, set, errstr, errstr_size);
}

/* Columns of the join (in order). */
enum { C_TRACE, C_OID, C_UID, C_VID, C_OUTCOME, C_REASON, C_ORD, C_ORD_UID, C_ORD_VID,
       C_ORD_STATUS, C_LOG_STATUS, C__N };

static const char JOIN_SQL_HEAD[] =
        "SELECT o.trace_id, o.order_id, o.user_id, o.voucher_id, o.outcome, o.reason,"
        " vo.id, vo.user_id, vo.voucher_id, vo.status, rl.reconciliation_status"
        " FROM tb_seckill_outcome o"
        " LEFT JOIN tb_voucher_order vo ON vo.trace_id = o.trace_id"
        " LEFT JOIN tb_voucher_reconcile_log rl ON rl.trace_id = o.trace_id AND rl.log_type = "
        SK_SQL_LOG_DEDUCT
        " WHERE o.trace_id IN (";

/* Run the join for ids[0..n) (n <= BATCH) on the prepared @p stmt and store the rows. */
static sk_err_t run_batch(sk_db_t *db, MYSQL_STMT *stmt, sk_traceset_t *set,
                          const int64_t *ids, size_t n, char *errstr, size_t errstr_size)
{
        int64_t params[BATCH];
        MYSQL_BIND pb[BATCH], rb[C__N];
        int64_t col[C__N];
        sk_my_bool isnull[C__N];
        char reason[64];
        unsigned long reason_len = 0;
        size_t i;
        int rc;
        sk_err_t err = SK_OK;

        for (i = 0; i < BATCH; i++) {
                params[i] = ids[i < n ? i : n - 1];
                sk_db_bind_i64(&pb[i], &params[i]);
        }
        for (i = 0; i < n; i++) {
                sk_trace_entry_t *e = sk_traceset_get(set, ids[i], 0);
                if (e) {
                        e->db_loaded = 1;
                        e->outcome = 0;
                        e->order_id = 0;
                        e->log_status = 0;
                }
        }
        if (mysql_stmt_bind_param(stmt, pb))
                return sk_db_stmt_seterr(db, stmt, "bind param", errstr, errstr_size);
        if (mysql_stmt_execute(stmt))
                return sk_db_stmt_seterr(db, stmt, "execute join", errstr, errstr_size);
        memset(isnull, 0, sizeof(isnull));
        for (i = 0; i < C__N; i++) {
                if (i == C_REASON) {
                        sk_db_bind_str(&rb[i], reason, &reason_len, sizeof(reason));
                } else {
                        sk_db_bind_i64(&rb[i], &col[i]);
                }
                rb[i].is_null = &isnull[i];
        }
        if (mysql_stmt_bind_result(stmt, rb)) {
                err = sk_db_stmt_seterr(db, stmt, "bind result", errstr, errstr_size);
                goto done;
        }
        while ((rc = mysql_stmt_fetch(stmt)) == 0 || rc == MYSQL_DATA_TRUNCATED) {
                sk_trace_entry_t *e = sk_traceset_get(set, col[C_TRACE], 0);
                if (!e)
                        continue;
                e->outcome = (int)col[C_OUTCOME];
                memset(&e->oc, 0, sizeof(e->oc));
                e->oc.trace_id = col[C_TRACE];
                e->oc.order_id = col[C_OID];
                e->oc.user_id = col[C_UID];
                e->oc.voucher_id = col[C_VID];
                e->oc.outcome = (int)col[C_OUTCOME];
                if (!isnull[C_REASON]) {
                        size_t l = reason_len < sizeof(reason) ? reason_len : sizeof(reason) - 1;
                        size_t cap = sizeof(e->oc.reason_str) - 1;
                        if (l > cap)
                                l = cap;
                        memcpy(e->oc.reason_str, reason, l);
                        e->oc.reason_str[l] = '\0';
                        if (sk_reason_parse(e->oc.reason_str, &e->oc.reason) != 0)
                                e->oc.reason = SK_REASON_NONE;
                }
                if (!isnull[C_ORD]) {
                        e->order_id = col[C_ORD];
                        e->order_user_id = col[C_ORD_UID];
                        e->order_voucher_id = col[C_ORD_VID];
                        e->order_status = (int)col[C_ORD_STATUS];
                }
                e->log_status = isnull[C_LOG_STATUS] ? 0 : (int)col[C_LOG_STATUS];
        }
        if (rc != MYSQL_NO_DATA)
                err = sk_db_stmt_seterr(db, stmt, "fetch join", errstr, errstr_size);
done:
        mysql_stmt_free_result(stmt);
        return err;
}

static MYSQL_STMT *prepare_join(sk_db_t *db, char *errstr, size_t errstr_size, sk_err_t *err)
{
        size_t head = sizeof(JOIN_SQL_HEAD) - 1;
        char *sql = malloc(head + BATCH * 2 + 2);
        MYSQL_STMT *stmt = NULL;
        size_t i, p;

        *err = SK_ENOMEM;
        if (!sql) {
                sk_seterr(errstr, errstr_size, "out of memory");
                return NULL;
        }
        memcpy(sql, JOIN_SQL_HEAD, head);
        p = head;
        for (i = 0; i < BATCH; i++) {
                sql[p++] = i ? ',' : '?';
                if (i)
                        sql[p++] = '?';
        }
        sql[p++] = ')';
        sql[p] = '\0';
        if (!sk_db_connected(db)) {
                sk_seterr(errstr, errstr_size, "database connection lost");
                *err = SK_EAGAIN;
                goto fail;
        }
        if (sk_db_stmt_init(db, &stmt, NULL, 0) != SK_OK) {
                *err = sk_db_stmt_seterr(db, NULL, "stmt_init", errstr, errstr_size);
                goto fail;
        }
        if (mysql_stmt_prepare(stmt, sql, (unsigned long)p)) {
                *err = sk_db_stmt_seterr(db, stmt, "prepare join", errstr, errstr_size);
                mysql_stmt_close(stmt);
                stmt = NULL;
                goto fail;
        }
        *err = SK_OK;
fail:
        free(sql);
        return stmt;
}

sk_err_t sk_traceset_load_db_ids(sk_db_t *db, sk_traceset_t *set, const int64_t *ids,
                                 size_t n, char *errstr, size_t errstr_size)
{
        MYSQL_STMT *stmt;
        sk_err_t err;
        size_t i;

        if (n == 0)
                return SK_OK;
        if (!(stmt = prepare_join(db, errstr, errstr_size, &err)))
                return err;
        for (i = 0; i < n && err == SK_OK; i += BATCH)
                err = run_batch(db, stmt, set, ids + i, n - i < BATCH ? n - i : BATCH,
                                errstr, errstr_size);
        mysql_stmt_close(stmt);
        return err;
}

sk_err_t sk_traceset_load_db(sk_db_t *db, sk_traceset_t *set, int reload,
                             char *errstr, size_t errstr_size)
{
        int64_t *ids;
        size_t i, n = 0;
        sk_err_t err;

        if (set->n == 0)
                return SK_OK;
        if (!(ids = malloc(set->n * sizeof(*ids)))) {
                sk_seterr(errstr, errstr_size, "out of memory");
                return SK_ENOMEM;
        }
        for (i = 0; i < set->n; i++)
                if (set->v[i].deduct && (reload || !set->v[i].db_loaded))
                        ids[n++] = set->v[i].trace_id;
        err = sk_traceset_load_db_ids(db, set, ids, n, errstr, errstr_size);
        free(ids);
        return err;
}

/* Integer value of "key":N in @p json, or 0. */
/* Integer member @p key of @p obj (a JSON number), or @p dflt when absent or not a
 * whole number within [0, 2^53). The counters of T:c are small. */
static int64_t claim_int(const cJSON *obj, const char *key, int64_t dflt)
{
        const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
        double d;

        if (!cJSON_IsNumber(it))
                return dflt;
        d = it->valuedouble;
        if (!(d >= 0 && d < 9007199254740992.0) || d != (double)(int64_t)d)
                return dflt;
        return (int64_t)d;
}

/* String member @p key of @p obj holding a non-negative decimal integer ("" or absent:
 * -1). Offsets are int64 and kept as strings so no double ever holds them. */
static int64_t claim_numstr(const cJSON *obj, const char *key)
{
        const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
        const char *p;
        int64_t v = 0;

        if (!cJSON_IsString(it) || !it->valuestring || !*it->valuestring)
                return -1;
        for (p = it->valuestring; *p; p++) {
                if (*p < '0' || *p > '9' || v > (INT64_MAX - (*p - '0')) / 10)
                        return -1; /* not a partition or offset claim.lua wrote */
                v = v * 10 + (*p - '0');
        }
        return v;
}

void sk_claim_parse(const char *json, sk_claim_rec_t *out)
{
        cJSON *obj;
        int64_t p;

        memset(out, 0, sizeof(*out));
        out->partition = -1;
        out->offset = -1;
        if (!json || !(obj = cJSON_Parse(json)))
                return;
        out->redrives = claim_int(obj, "redrives", 0);
        out->failed = claim_int(obj, "failed", 0);
        out->consumed = claim_int(obj, "consumed", 0) != 0;
        p = claim_numstr(obj, "partition");
        out->partition = p >= 0 && p <= INT32_MAX ? (int32_t)p : -1;
        out->offset = claim_numstr(obj, "offset");
        if (out->partition < 0 || out->offset < 0)
                out->partition = -1, out->offset = -1;
        cJSON_Delete(obj);
}

sk_err_t sk_traceset_exec_in(sk_db_t *db, const char *sql_head, const int64_t *ids, size_t n,
                             int64_t *affected, char *errstr, size_t errstr_size)
{
        size_t head = strlen(sql_head), p, i, off;
        char *sql = NULL;
        MYSQL_STMT *stmt = NULL;
        MYSQL_BIND pb[BATCH];
        int64_t params[BATCH];
        sk_err_t err = SK_OK;

        if (affected)
                *affected = 0;
        if (n == 0)
                return SK_OK;
        if (!sk_db_connected(db)) {
                sk_seterr(errstr, errstr_size, "database connection lost");
                return SK_EAGAIN;
        }
        if (!(sql = malloc(head + BATCH * 2 + 3))) {
                sk_seterr(errstr, errstr_size, "out of memory");
                return SK_ENOMEM;
        }
        memcpy(sql, sql_head, head);
        p = head;
        sql[p++] = '(';
        for (i = 0; i < BATCH; i++) {
                if (i)
                        sql[p++] = ',';
                sql[p++] = '?';
        }
        sql[p++] = ')';
        sql[p] = '\0';
        if (sk_db_stmt_init(db, &stmt, NULL, 0) != SK_OK) {
                err = sk_db_stmt_seterr(db, NULL, "stmt_init", errstr, errstr_size);
                goto done;
        }
        if (mysql_stmt_prepare(stmt, sql, (unsigned long)p)) {
                err = sk_db_stmt_seterr(db, stmt, "prepare", errstr, errstr_size);
                goto done;
        }
        for (off = 0; off < n; off += BATCH) {
                size_t m = n - off < BATCH ? n - off : BATCH;
                for (i = 0; i < BATCH; i++) {
                        params[i] = ids[off + (i < m ? i : m - 1)];
                        sk_db_bind_i64(&pb[i], &params[i]);
                }
                if (mysql_stmt_bind_param(stmt, pb)) {
                        err = sk_db_stmt_seterr(db, stmt, "bind param", errstr, errstr_size);
                        goto done;
                }
                if (mysql_stmt_execute(stmt)) {
                        err = sk_db_stmt_seterr(db, stmt, "execute", errstr, errstr_size);
                        goto done;
                }
                if (affected)
                        *affected += (int64_t)mysql_stmt_affected_rows(stmt);
        }
done:
        if (stmt)
                mysql_stmt_close(stmt);
        free(sql);
        return err;
}
