/* rebuild.c: a voucher's DB row, preheat and rebuild of its Redis admission state
 * (sk/rebuild.h; DESIGN.md 4 and the "rebuild" row of DESIGN.md 8).
 *
 * The database is the book of record: both operations copy the DB's stock, active
 * buyers and window into Redis. Preheat is for a voucher Redis has not seen (or has
 * unchanged): it never overwrites a stock key that differs from the DB. The rebuild is
 * for a voucher whose Redis state is lost or drifted: it first pauses admission
 * (status 4) and waits until nothing is in flight (Kafka fully consumed by the group,
 * every DEDUCT decided in the outcome table), then overwrites stock and users from the
 * DB, and writes meta last, which also lifts the pause.
 *
 * All Redis writes are made by one inline Lua script (ADMIN_LUA below) run with EVAL:
 * it is admin/reconciler-only, so it is not one of the embedded lua/ scripts the front
 * loads. Every write is followed by PEXPIREAT E NX then PEXPIREAT E GT (DESIGN.md 4).
 *
 * What it does not do: log, exit, retry beyond the rebuild's wait, or roll anything
 * back in Redis (the rebuild overwrites the whole state instead). */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>

#include "sk/clock.h"
#include "sk/ids.h"
#include "sk/kafka.h"
#include "sk/keys.h"
#include "sk/msg.h"
#include "sk/outcome.h"
#include "sk/rebuild.h"
#include "sk/vec.h"

#define REBUILD_LOCK_WAIT_S   5      /* another preheat/rebuild of this voucher: give up */
#define REBUILD_POLL_MS       250    /* between two checks of Kafka and the outcomes */
#define REBUILD_KAFKA_TO_MS   5000   /* one metadata/watermark/committed request */
#define REBUILD_REDIS_TO_MS   5000   /* connect and per-command timeout */
#define REBUILD_DB_LOCKWAIT_S 5      /* session innodb_lock_wait_timeout */
#define OUTCOME_IN_CHUNK      500    /* trace ids per "IN (...)" query */

/* One script, several operations (ARGV[1]); E = ARGV[2] is the absolute expiry in ms.
 *  status   KEYS meta                  ARGV op E status    -> previous status or nil
 *           HSET meta status (meta may be created with only the status).
 *  unstatus KEYS meta                  ARGV op E prev      -> "OK"
 *           put the previous status back; prev "" removes the field (and so an
 *           otherwise empty meta).
 *  preheat  KEYS meta stock users      ARGV op E stock begin_ms end_ms status u1 t1 ...
 *           -> {"SOLD_DOWN", current} (nothing written) | {"OK", "SET"|"KEPT"}
 *  rebuild  KEYS meta stock users      ARGV op E stock begin_ms end_ms status u1 t1 ...
 *           -> {"OK", "SET"}  stock and users overwritten, meta last.
 *  meta     KEYS meta                  ARGV op E begin_ms end_ms status
 *           -> 1 (written) | 0 (meta missing: nothing written; that needs a rebuild).
 * Ids are strings throughout (no tonumber). */
static const char ADMIN_LUA[] =
        "local op, e = ARGV[1], ARGV[2]\n"
        "local function expire(k)\n"
        "  redis.call('PEXPIREAT', k, e, 'NX')\n"
        "  redis.call('PEXPIREAT', k, e, 'GT')\n"
        "end\n"
        "if op == 'status' then\n"
        "  local prev = redis.call('HGET', KEYS[1], 'status')\n"
        "  redis.call('HSET', KEYS[1], 'status', ARGV[3])\n"
        "  expire(KEYS[1])\n"
        "  return prev\n"
        "elseif op == 'unstatus' then\n"
        "  if ARGV[3] == '' then\n"
        "    redis.call('HDEL', KEYS[1], 'status')\n"
        "  else\n"
        "    redis.call('HSET', KEYS[1], 'status', ARGV[3])\n"
        "  end\n"
        "  if redis.call('EXISTS', KEYS[1]) == 1 then expire(KEYS[1]) end\n"
        "  return 'OK'\n"
        "elseif op == 'preheat' or op == 'rebuild' then\n"
        "  local how = 'SET'\n"
        "  if op == 'preheat' then\n"
        "    local cur = redis.call('GET', KEYS[2])\n"
        "    if cur then\n"
        "      if cur ~= ARGV[3] then return {'SOLD_DOWN', cur} end\n"
        "      how = 'KEPT'\n"
        "    end\n"
        "  else\n"
        "    redis.call('DEL', KEYS[3])\n"
        "  end\n"
        "  if how == 'SET' then redis.call('SET', KEYS[2], ARGV[3]) end\n"
        "  expire(KEYS[2])\n"
        "  local i = 7\n"
        "  while i < #ARGV do\n"
        "    redis.call('HSET', KEYS[3], ARGV[i], ARGV[i + 1])\n"
        "    i = i + 2\n"
        "  end\n"
        "  if redis.call('EXISTS', KEYS[3]) == 1 then expire(KEYS[3]) end\n"
        "  redis.call('HSET', KEYS[1], 'begin_ms', ARGV[4], 'end_ms', ARGV[5],\n"
        "             'status', ARGV[6])\n"
        "  expire(KEYS[1])\n"
        "  return {'OK', how}\n"
        "elseif op == 'meta' then\n"
        "  if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end\n"
        "  redis.call('HSET', KEYS[1], 'begin_ms', ARGV[3], 'end_ms', ARGV[4],\n"
        "             'status', ARGV[5])\n"
        "  expire(KEYS[1])\n"
        "  return 1\n"
        "end\n"
        "return redis.error_reply('ERR SKARG unknown op')\n";

/* ---------------------------------------------------------------- DB reads */

sk_err_t sk_voucher_get(sk_db_t *db, int64_t voucher_id, int for_update,
                        sk_voucher_row_t *out, char *errstr, size_t errstr_size)
{
        static const char sql_plain[] =
                "SELECT voucher_id, init_stock, stock,"
                " TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', begin_time) DIV 1000,"
                " TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', end_time) DIV 1000,"
                " status FROM tb_seckill_voucher WHERE voucher_id = ?";
        char sql[sizeof(sql_plain) + 16];
        MYSQL_STMT *stmt = NULL;
        MYSQL_BIND param[1], res[6];
        int64_t id = voucher_id, v[6];
        sk_err_t err = SK_EDB;
        int rc;

        snprintf(sql, sizeof(sql), "%s%s", sql_plain, for_update ? " FOR UPDATE" : "");
        if ((err = sk_db_stmt_init(db, &stmt, errstr, errstr_size)) != SK_OK)
                return err;
        err = SK_EDB;
        if (mysql_stmt_prepare(stmt, sql, (unsigned long)strlen(sql)))
                goto stmt_fail;
        sk_db_bind_i64(&param[0], &id);
        if (mysql_stmt_bind_param(stmt, param))
                goto stmt_fail;
        for (int i = 0; i < 6; i++)
                sk_db_bind_i64(&res[i], &v[i]);
        if (mysql_stmt_execute(stmt) || mysql_stmt_bind_result(stmt, res))
                goto stmt_fail;
        rc = mysql_stmt_fetch(stmt);
        if (rc == MYSQL_NO_DATA) {
                sk_seterr(errstr, errstr_size, "voucher %" PRId64 " is not in the database",
                          voucher_id);
                err = SK_ENOTFOUND;
                goto done;
        }
        if (rc != 0 && rc != MYSQL_DATA_TRUNCATED)
                goto stmt_fail;
        out->voucher_id = v[0];
        out->init_stock = v[1];
        out->stock = v[2];
        out->begin_ms = v[3];
        out->end_ms = v[4];
        out->status = (int)v[5];
        err = SK_OK;
        goto done;
stmt_fail:
        err = sk_db_classify(mysql_stmt_errno(stmt));
        if (err == SK_OK)
                err = SK_EDB;
        sk_seterr(errstr, errstr_size, "voucher query: mysql error %u: %s",
                  mysql_stmt_errno(stmt), mysql_stmt_error(stmt));
done:
        mysql_stmt_close(stmt);
        return err;
}

static sk_err_t db_query_err(sk_db_t *db, const char *what, char *errstr, size_t errstr_size)
{
        return sk_db_seterr(db, what, errstr, errstr_size);
}

/* Active buyers of the voucher: pairs (user_id, trace_id) appended to @p out. */
static sk_err_t db_active_buyers(sk_db_t *db, int64_t voucher_id, sk_i64vec_t *out,
                                 char *errstr, size_t errstr_size)
{
        char sql[160];
        MYSQL_RES *res;
        MYSQL_ROW row;
        sk_err_t err = SK_OK;

        snprintf(sql, sizeof(sql),
                 "SELECT user_id, trace_id FROM tb_voucher_order"
                 " WHERE voucher_id = %" PRId64 " AND status = 1", voucher_id);
        if (sk_db_query(db, sql, strlen(sql), &res, NULL, 0) != SK_OK)
                return db_query_err(db, "active buyers", errstr, errstr_size);
        while ((row = mysql_fetch_row(res))) {
                unsigned long *len = mysql_fetch_lengths(res);
                int64_t uid, tid;
                if (!row[0] || !row[1] || sk_id_parse(row[0], len[0], &uid) ||
                    sk_id_parse(row[1], len[1], &tid)) {
                        sk_seterr(errstr, errstr_size, "active buyers: invalid id in a row");
                        err = SK_EDB;
                        break;
                }
                if (sk_i64vec_push(out, uid) || sk_i64vec_push(out, tid)) {
                        sk_seterr(errstr, errstr_size, "out of memory");
                        err = SK_ENOMEM;
                        break;
                }
        }
        mysql_free_result(res);
        return err;
}

/* Which of @p ids have an outcome row: appended to @p decided. */
static sk_err_t db_decided(sk_db_t *db, const int64_t *ids, size_t n, sk_i64vec_t *decided,
                           char *errstr, size_t errstr_size)
{
        char *sql;
        size_t cap = 96 + OUTCOME_IN_CHUNK * (SK_ID_STRLEN + 1);
        sk_err_t err = SK_OK;

        if (!(sql = malloc(cap))) {
                sk_seterr(errstr, errstr_size, "out of memory");
                return SK_ENOMEM;
        }
        for (size_t off = 0; off < n && err == SK_OK; off += OUTCOME_IN_CHUNK) {
                size_t m = n - off < OUTCOME_IN_CHUNK ? n - off : OUTCOME_IN_CHUNK;
                size_t len = (size_t)snprintf(sql, cap,
                        "SELECT trace_id FROM tb_seckill_outcome WHERE trace_id IN (");
                MYSQL_RES *res;
                MYSQL_ROW row;

                for (size_t i = 0; i < m; i++) {
                        if (i)
                                sql[len++] = ',';
                        len += sk_id_format(ids[off + i], sql + len);
                }
                sql[len++] = ')';
                sql[len] = '\0';
                if (sk_db_query(db, sql, len, &res, NULL, 0) != SK_OK) {
                        err = db_query_err(db, "outcome lookup", errstr, errstr_size);
                        break;
                }
                while ((row = mysql_fetch_row(res))) {
                        unsigned long *l = mysql_fetch_lengths(res);
                        int64_t tid;
                        if (row[0] && sk_id_parse(row[0], l[0], &tid) == 0 &&
                            sk_i64vec_push(decided, tid)) {
                                err = SK_ENOMEM;
                                sk_seterr(errstr, errstr_size, "out of memory");
                                break;
                        }
                }
                mysql_free_result(res);
        }
        free(sql);
        return err;
}

size_t sk_rebuild_lock_name(char *buf, size_t size, const sk_conf_t *conf, int64_t voucher_id)
{
        int n = snprintf(buf, size, "seckill:voucher:%s:%s:%" PRId64, conf->mysql.database,
                         conf->redis_prefix, voucher_id);
        return n < 0 ? 0 : (size_t)n;
}

/* ------------------------------------------------------------- Redis helpers */

typedef struct vkeys {
        char meta[SK_KEY_MAX], stock[SK_KEY_MAX], users[SK_KEY_MAX], trace[SK_KEY_MAX];
} vkeys_t;

static void vkeys_init(vkeys_t *k, const char *prefix, int64_t voucher_id)
{
        sk_key_voucher(k->meta, prefix, voucher_id, SK_KEY_META);
        sk_key_voucher(k->stock, prefix, voucher_id, SK_KEY_STOCK);
        sk_key_voucher(k->users, prefix, voucher_id, SK_KEY_USERS);
        sk_key_voucher(k->trace, prefix, voucher_id, SK_KEY_TRACE);
}

/* EVAL ADMIN_LUA op with @p nkeys keys and @p nargs further args (after op and E). */
static sk_err_t eval_admin(sk_redis_t *r, const char *op, int64_t expire_at_ms,
                           int nkeys, const char *const *keys, size_t nargs,
                           const char *const *args, redisReply **reply,
                           char *errstr, size_t errstr_size)
{
        size_t argc = 3 + (size_t)nkeys + 2 + nargs;
        const char **argv = malloc(argc * sizeof(*argv));
        char nk[16], e[32];
        size_t i = 0;
        sk_err_t err;

        if (!argv) {
                sk_seterr(errstr, errstr_size, "out of memory");
                return SK_ENOMEM;
        }
        snprintf(nk, sizeof(nk), "%d", nkeys);
        snprintf(e, sizeof(e), "%" PRId64, expire_at_ms);
        argv[i++] = "EVAL";
        argv[i++] = ADMIN_LUA;
        argv[i++] = nk;
        for (int k = 0; k < nkeys; k++)
                argv[i++] = keys[k];
        argv[i++] = op;
        argv[i++] = e;
        for (size_t a = 0; a < nargs; a++)
                argv[i++] = args[a];
        err = sk_redis_cmd(r, reply, (int)argc, argv, NULL, errstr, errstr_size);
        free(argv);
        return err;
}

/* Absolute expiry of the voucher's keys (DESIGN.md 4). */
static int64_t expire_at(const sk_conf_t *conf, const sk_voucher_row_t *row)
{
        return row->end_ms + sk_expire_extra_ms(conf->reconcile_window_hours);
}

/* Write stock/users/meta with op "preheat" or "rebuild". @p buyers: pairs
 * (user_id, trace_id). *sold_down receives 1 (and @p cur the Redis value) when a
 * preheat found a different stock. */
static sk_err_t write_state(const sk_conf_t *conf, sk_redis_t *r, const vkeys_t *k,
                            const char *op, const sk_voucher_row_t *row,
                            const sk_i64vec_t *buyers, int *sold_down, char *cur, size_t cur_size,
                            char *errstr, size_t errstr_size)
{
        const char *keys[3] = { k->meta, k->stock, k->users };
        size_t nargs = 4 + buyers->n;
        const char **args = NULL;
        char (*num)[SK_ID_STRLEN + 2] = NULL; /* formatted numbers, one per arg */
        redisReply *reply = NULL;
        sk_err_t err;

        *sold_down = 0;
        args = malloc(nargs * sizeof(*args));
        num = malloc(nargs * sizeof(*num));
        if (!args || !num) {
                sk_seterr(errstr, errstr_size, "out of memory");
                err = SK_ENOMEM;
                goto done;
        }
        snprintf(num[0], sizeof(num[0]), "%" PRId64, row->stock);
        snprintf(num[1], sizeof(num[1]), "%" PRId64, row->begin_ms);
        snprintf(num[2], sizeof(num[2]), "%" PRId64, row->end_ms);
        snprintf(num[3], sizeof(num[3]), "%d", row->status);
        for (size_t i = 0; i < buyers->n; i++)
                sk_id_format(buyers->v[i], num[4 + i]);
        for (size_t i = 0; i < nargs; i++)
                args[i] = num[i];
        if ((err = eval_admin(r, op, expire_at(conf, row), 3, keys, nargs, args, &reply,
                              errstr, errstr_size)) != SK_OK)
                goto done;
        if (reply->type != REDIS_REPLY_ARRAY || reply->elements < 2 ||
            reply->element[0]->type != REDIS_REPLY_STRING) {
                sk_seterr(errstr, errstr_size, "%s script: unexpected reply", op);
                err = SK_EREDIS;
                goto done;
        }
        if (strcmp(reply->element[0]->str, "SOLD_DOWN") == 0) {
                *sold_down = 1;
                if (cur && cur_size)
                        snprintf(cur, cur_size, "%s",
                                 reply->element[1]->type == REDIS_REPLY_STRING
                                 ? reply->element[1]->str : "?");
        }
        err = SK_OK;
done:
        if (reply)
                freeReplyObject(reply);
        free(args);
        free(num);
        return err;
}

/* HSET meta status @p status; *prev receives the previous status (-1 = none). */
static sk_err_t set_status(const sk_conf_t *conf, sk_redis_t *r, const vkeys_t *k,
                           const sk_voucher_row_t *row, int status, int *prev,
                           char *errstr, size_t errstr_size)
{
        const char *keys[1] = { k->meta };
        char st[16];
        const char *args[1] = { st };
        redisReply *reply = NULL;
        sk_err_t err;

        snprintf(st, sizeof(st), "%d", status);
        if ((err = eval_admin(r, "status", expire_at(conf, row), 1, keys, 1, args, &reply,
                              errstr, errstr_size)) != SK_OK)
                return err;
        *prev = -1;
        if (reply->type == REDIS_REPLY_STRING) {
                long v;
                if (sk_parse_long(reply->str, 0, 1000, &v) == 0)
                        *prev = (int)v;
        }
        freeReplyObject(reply);
        return SK_OK;
}

/* Put the status found before the pause back (-1: remove the field). */
static sk_err_t unset_status(const sk_conf_t *conf, sk_redis_t *r, const vkeys_t *k,
                             const sk_voucher_row_t *row, int prev,
                             char *errstr, size_t errstr_size)
{
        const char *keys[1] = { k->meta };
        char st[16] = "";
        const char *args[1] = { st };
        redisReply *reply = NULL;
        sk_err_t err;

        if (prev >= 0)
                snprintf(st, sizeof(st), "%d", prev);
        err = eval_admin(r, "unstatus", expire_at(conf, row), 1, keys, 1, args, &reply,
                         errstr, errstr_size);
        if (reply)
                freeReplyObject(reply);
        return err;
}

static int redis_exists(sk_redis_t *r, const char *key, int *exists, char *errstr,
                        size_t errstr_size)
{
        const char *argv[2] = { "EXISTS", key };
        redisReply *reply = NULL;
        sk_err_t err;

        if ((err = sk_redis_cmd(r, &reply, 2, argv, NULL, errstr, errstr_size)) != SK_OK)
                return err;
        *exists = reply->type == REDIS_REPLY_INTEGER && reply->integer > 0;
        freeReplyObject(reply);
        return SK_OK;
}

/* ------------------------------------------------------------- Kafka check */

typedef struct kcheck {
        rd_kafka_t *rk;
} kcheck_t;

/* Sum of (high watermark - committed) over every partition of conf->topic into *lag
 * (0 = the group has consumed everything; a partition without messages counts 0).
 * SK_EAGAIN with the reason when the broker could not answer. */
static sk_err_t kafka_lag(const sk_conf_t *conf, kcheck_t *kc, int64_t *lag,
                          char *errstr, size_t errstr_size)
{
        const struct rd_kafka_metadata *md = NULL;
        rd_kafka_topic_t *rkt = NULL;
        rd_kafka_topic_partition_list_t *parts = NULL;
        rd_kafka_resp_err_t kerr;
        sk_err_t err = SK_EAGAIN;
        int nparts;

        *lag = 0;
        if (!kc->rk) {
                rd_kafka_conf_t *kconf;
                char rderr[256];
                if (!(kconf = sk_kafka_conf_new(conf, SK_KAFKA_CONSUMER, errstr, errstr_size)))
                        return SK_EINVAL;
                /* This handle never subscribes and never commits. */
                if (sk_kafka_conf_set(kconf, "enable.auto.commit", "false", errstr,
                                      errstr_size) != SK_OK) {
                        rd_kafka_conf_destroy(kconf);
                        return SK_EINVAL;
                }
                kc->rk = rd_kafka_new(RD_KAFKA_CONSUMER, kconf, rderr, sizeof(rderr));
                if (!kc->rk) {
                        rd_kafka_conf_destroy(kconf);
                        sk_seterr(errstr, errstr_size, "rd_kafka_new: %s", rderr);
                        return SK_EKAFKA;
                }
                kconf = NULL; /* rk owns it */
        }
        if (!(rkt = rd_kafka_topic_new(kc->rk, conf->topic, NULL))) {
                sk_seterr(errstr, errstr_size, "topic %s: %s", conf->topic,
                          rd_kafka_err2str(rd_kafka_last_error()));
                return SK_EKAFKA;
        }
        kerr = rd_kafka_metadata(kc->rk, 0, rkt, &md, REBUILD_KAFKA_TO_MS);
        if (kerr) {
                sk_seterr(errstr, errstr_size, "metadata of %s: %s", conf->topic,
                          rd_kafka_err2str(kerr));
                goto done;
        }
        if (md->topic_cnt < 1) {
                sk_seterr(errstr, errstr_size, "metadata of %s: no topic", conf->topic);
                goto done;
        }
        if (md->topics[0].err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) {
                /* No topic: nothing was ever published, nothing is in flight. */
                err = SK_OK;
                goto done;
        }
        if (md->topics[0].err) {
                sk_seterr(errstr, errstr_size, "metadata of %s: %s", conf->topic,
                          rd_kafka_err2str(md->topics[0].err));
                goto done;
        }
        nparts = md->topics[0].partition_cnt;
        parts = rd_kafka_topic_partition_list_new(nparts > 0 ? nparts : 1);
        for (int i = 0; i < nparts; i++)
                rd_kafka_topic_partition_list_add(parts, conf->topic,
                                                  md->topics[0].partitions[i].id);
        kerr = rd_kafka_committed(kc->rk, parts, REBUILD_KAFKA_TO_MS);
        if (kerr) {
                sk_seterr(errstr, errstr_size, "committed offsets of %s on %s: %s",
                          conf->group_id, conf->topic, rd_kafka_err2str(kerr));
                goto done;
        }
        for (int i = 0; i < parts->cnt; i++) {
                rd_kafka_topic_partition_t *tp = &parts->elems[i];
                int64_t lo = 0, hi = 0, committed = tp->offset;
                if (tp->err) {
                        sk_seterr(errstr, errstr_size, "committed offset of partition %d: %s",
                                  (int)tp->partition, rd_kafka_err2str(tp->err));
                        goto done;
                }
                kerr = rd_kafka_query_watermark_offsets(kc->rk, conf->topic, tp->partition,
                                                        &lo, &hi, REBUILD_KAFKA_TO_MS);
                if (kerr) {
                        sk_seterr(errstr, errstr_size, "watermarks of partition %d: %s",
                                  (int)tp->partition, rd_kafka_err2str(kerr));
                        goto done;
                }
                if (hi <= lo)
                        continue;               /* no retained message to consume */
                if (committed < lo)             /* none committed (or below the log start) */
                        committed = lo;
                if (committed < hi)
                        *lag += hi - committed;
        }
        err = SK_OK;
done:
        if (parts)
                rd_kafka_topic_partition_list_destroy(parts);
        if (md)
                rd_kafka_metadata_destroy(md);
        rd_kafka_topic_destroy(rkt);
        return err;
}

/* ------------------------------------------------------------- trace check */

/* 1 if f (len bytes) is a canonical id, optionally followed by ":r"; *fence set. */
static int trace_field(const char *f, size_t len, int64_t *id, int *fence)
{
        *fence = 0;
        if (len > 2 && f[len - 2] == ':' && f[len - 1] == 'r') {
                *fence = 1;
                len -= 2;
        }
        return sk_id_parse(f, len, id) == 0;
}

/* Scan the trace hash: every DEDUCT id, and every fenced id. */
static sk_err_t scan_trace(sk_redis_t *r, const char *trace_key, sk_i64vec_t *deducts,
                           sk_i64vec_t *fences, char *errstr, size_t errstr_size)
{
        char cursor[32] = "0";
        sk_err_t err;

        do {
                const char *argv[5] = { "HSCAN", trace_key, cursor, "COUNT", "1000" };
                redisReply *reply = NULL, *items;

                if ((err = sk_redis_cmd(r, &reply, 5, argv, NULL, errstr, errstr_size)) != SK_OK)
                        return err;
                if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2 ||
                    reply->element[0]->type != REDIS_REPLY_STRING ||
                    reply->element[1]->type != REDIS_REPLY_ARRAY) {
                        freeReplyObject(reply);
                        sk_seterr(errstr, errstr_size, "HSCAN %s: unexpected reply", trace_key);
                        return SK_EREDIS;
                }
                snprintf(cursor, sizeof(cursor), "%s", reply->element[0]->str);
                items = reply->element[1];
                for (size_t i = 0; i + 1 < items->elements; i += 2) {
                        redisReply *f = items->element[i];
                        int64_t id;
                        int fence;
                        if (f->type != REDIS_REPLY_STRING ||
                            !trace_field(f->str, f->len, &id, &fence))
                                continue;       /* claim records T:c..., anything else */
                        if (sk_i64vec_push(fence ? fences : deducts, id)) {
                                freeReplyObject(reply);
                                sk_seterr(errstr, errstr_size, "out of memory");
                                return SK_ENOMEM;
                        }
                }
                freeReplyObject(reply);
        } while (strcmp(cursor, "0") != 0);
        /* HSCAN may return an element twice: sort and deduplicate. */
        sk_i64vec_sort_unique(deducts);
        sk_i64vec_sort_unique(fences);
        return SK_OK;
}

/* Record FAILED front_rollback for fenced DEDUCT @p trace_id (DESIGN.md 7, 8). */
static sk_err_t fail_fenced(sk_db_t *db, sk_redis_t *r, const char *trace_key,
                            int64_t trace_id, int64_t voucher_id, char *errstr,
                            size_t errstr_size)
{
        char field[SK_ID_STRLEN + 4];
        const char *argv[3] = { "HGET", trace_key, field };
        redisReply *reply = NULL;
        sk_order_msg_t msg;
        sk_outcome_t existing;
        char why[256];
        sk_err_t err;

        sk_field_trace(field, trace_id, 0);
        if ((err = sk_redis_cmd(r, &reply, 3, argv, NULL, errstr, errstr_size)) != SK_OK)
                return err;
        if (reply->type != REDIS_REPLY_STRING) {
                freeReplyObject(reply);
                return SK_OK; /* gone meanwhile (expired): nothing to decide here */
        }
        err = sk_msg_parse(reply->str, reply->len, &msg, why, sizeof(why));
        freeReplyObject(reply);
        if (err != SK_OK || msg.trace_id != trace_id || msg.voucher_id != voucher_id) {
                sk_seterr(errstr, errstr_size,
                          "DEDUCT entry %" PRId64 " of %s is not a valid message: %s",
                          trace_id, trace_key, err != SK_OK ? why : "ids do not match");
                return SK_EINVAL;
        }
        err = sk_outcome_fail(db, &msg, SK_REASON_FRONT_ROLLBACK,
                              "rebuild: fenced by the front, no outcome", &existing,
                              errstr, errstr_size);
        if (err == SK_EEXIST) {
                if (!sk_outcome_matches(&existing, &msg)) {
                        sk_seterr(errstr, errstr_size,
                                  "id collision: outcome of trace %" PRId64
                                  " names order %" PRId64 " user %" PRId64 " voucher %" PRId64,
                                  trace_id, existing.order_id, existing.user_id,
                                  existing.voucher_id);
                        return SK_EINVAL;
                }
                return SK_OK; /* decided by someone else meanwhile */
        }
        return err;
}

/* One check of the trace hash: *undecided = DEDUCTs still without an outcome after
 * recording FAILED for the fenced ones. */
static sk_err_t trace_check(sk_db_t *db, sk_redis_t *r, const vkeys_t *k, int64_t voucher_id,
                            sk_rebuild_report_t *rep, char *errstr, size_t errstr_size)
{
        sk_i64vec_t deducts = { 0 }, fences = { 0 }, decided = { 0 };
        sk_err_t err;

        rep->undecided = 0;
        if ((err = scan_trace(r, k->trace, &deducts, &fences, errstr, errstr_size)) != SK_OK)
                goto done;
        rep->deducts = (int64_t)deducts.n;
        if ((err = db_decided(db, deducts.v, deducts.n, &decided, errstr, errstr_size)) != SK_OK)
                goto done;
        if (decided.n)
                qsort(decided.v, decided.n, sizeof(int64_t), sk_i64_cmp);
        for (size_t i = 0; i < deducts.n; i++) {
                int64_t t = deducts.v[i];
                if (sk_i64vec_contains(&decided, t))
                        continue;
                if (sk_i64vec_contains(&fences, t)) {
                        err = fail_fenced(db, r, k->trace, t, voucher_id, errstr, errstr_size);
                        if (err != SK_OK)
                                goto done;
                        rep->fenced_failed++;
                        continue;
                }
                rep->undecided++;
        }
        err = SK_OK;
done:
        sk_i64vec_free(&deducts);
        sk_i64vec_free(&fences);
        sk_i64vec_free(&decided);
        return err;
}

/* ------------------------------------------------------------- procedures */

/* Read the voucher row (FOR UPDATE) and its active buyers in one transaction and write
 * them to Redis with @p op ("preheat" or "rebuild") before COMMIT: a consumer's stock
 * UPDATE for this voucher waits for us, so the Redis copy is one consistent view of the
 * DB. *row is updated only when read. */
static sk_err_t copy_state(const sk_conf_t *conf, sk_db_t *db, sk_redis_t *r,
                           const vkeys_t *k, int64_t voucher_id, const char *op,
                           sk_voucher_row_t *row, sk_i64vec_t *buyers, int *sold_down,
                           char *cur, size_t cur_size, char *errstr, size_t errstr_size)
{
        sk_voucher_row_t fresh;
        sk_err_t err;

        buyers->n = 0;
        if ((err = sk_db_begin(db, errstr, errstr_size)) != SK_OK)
                return err;
        if ((err = sk_voucher_get(db, voucher_id, 1, &fresh, errstr, errstr_size)) != SK_OK)
                goto fail;
        *row = fresh;
        if ((err = db_active_buyers(db, voucher_id, buyers, errstr, errstr_size)) != SK_OK)
                goto fail;
        if ((err = write_state(conf, r, k, op, row, buyers, sold_down, cur, cur_size, errstr,
                               errstr_size)) != SK_OK)
                goto fail;
        /* Nothing was written in the DB: a failed COMMIT only releases the lock early. */
        (void)sk_db_commit(db, NULL, 0);
        return SK_OK;
fail:
        sk_db_rollback(db);
        return err;
}

static void rep_init(sk_rebuild_report_t *rep)
{
        memset(rep, 0, sizeof(*rep));
        rep->stock = -1;
        rep->status = -1;
        rep->prev_status = -1;
}

/* The rebuild with the voucher lock already held on @p db's session. */
static sk_err_t rebuild_locked(const sk_conf_t *conf, sk_db_t *db, sk_redis_t *r,
                               int64_t voucher_id, int wait_ms, sk_rebuild_report_t *rep,
                               char *errstr, size_t errstr_size)
{
        sk_voucher_row_t row;
        vkeys_t k;
        kcheck_t kc = { NULL };
        sk_i64vec_t buyers = { 0 };
        int64_t start_ms, deadline_ms;
        int paused = 0, sold_down = 0;
        char why[512] = "";
        sk_err_t err;

        vkeys_init(&k, conf->redis_prefix, voucher_id);
        if ((err = sk_voucher_get(db, voucher_id, 0, &row, errstr, errstr_size)) != SK_OK)
                return err;
        if (wait_ms <= 0)
                wait_ms = 2 * conf->kafka_delivery_timeout_ms;

        /* 2. Pause admission: deduct.lua answers 10013 from now on. */
        if ((err = set_status(conf, r, &k, &row, 4, &rep->prev_status, errstr,
                              errstr_size)) != SK_OK)
                goto done;
        paused = 1;

        /* 3. Wait until nothing is in flight. Kafka is checked before the outcome table
         * (a message consumed after our outcome read would otherwise be missed). */
        start_ms = sk_mono_ms();
        deadline_ms = start_ms + wait_ms;
        for (;;) {
                sk_err_t kerr, terr = SK_OK;
                int64_t lag = 0;

                kerr = kafka_lag(conf, &kc, &lag, why, sizeof(why));
                if (kerr == SK_EINVAL || kerr == SK_EKAFKA) {
                        sk_seterr(errstr, errstr_size, "kafka: %s", why);
                        err = kerr;
                        goto done;
                }
                rep->lag = kerr == SK_OK ? lag : -1;
                if (kerr == SK_OK && lag == 0) {
                        terr = trace_check(db, r, &k, voucher_id, rep, why, sizeof(why));
                        if (terr == SK_OK && rep->undecided == 0)
                                break;  /* settled */
                        if (terr != SK_OK && terr != SK_EAGAIN && terr != SK_EUNKNOWN) {
                                sk_seterr(errstr, errstr_size, "%s", why);
                                err = terr;
                                goto done;
                        }
                        if (terr == SK_OK)
                                sk_seterr(why, sizeof(why),
                                         "%" PRId64 " DEDUCT(s) of %" PRId64
                                         " have no outcome yet", rep->undecided, rep->deducts);
                } else if (kerr == SK_OK) {
                        sk_seterr(why, sizeof(why),
                                 "group %s has %" PRId64 " message(s) of %s left to consume",
                                 conf->group_id, lag, conf->topic);
                }
                rep->waited_ms = sk_mono_ms() - start_ms;
                if (sk_mono_ms() >= deadline_ms) {
                        sk_seterr(rep->detail, sizeof(rep->detail), "%s", why);
                        sk_seterr(errstr, errstr_size,
                                  "voucher %" PRId64 " not settled after %d ms: %s",
                                  voucher_id, wait_ms, why);
                        err = SK_EAGAIN;
                        goto done;
                }
                sk_sleep_ms(REBUILD_POLL_MS, NULL);
        }
        rep->waited_ms = sk_mono_ms() - start_ms;

        /* 4. Everything is decided: copy the book of record. The row is read again now
         * (the consumers committed while we waited). */
        if ((err = copy_state(conf, db, r, &k, voucher_id, "rebuild", &row, &buyers,
                              &sold_down, NULL, 0, errstr, errstr_size)) != SK_OK)
                goto done;
        paused = 0; /* meta status now comes from the DB */
        rep->stock = row.stock;
        rep->users = (int64_t)(buyers.n / 2);
        rep->status = row.status;
        err = SK_OK;
done:
        if (paused) {
                /* Not rebuilt: lift our pause again (best effort; a reconciler pass that
                 * finds status 4 with nobody holding the lock resets meta from the DB). */
                (void)unset_status(conf, r, &k, &row, rep->prev_status, NULL, 0);
        }
        if (kc.rk)
                rd_kafka_destroy(kc.rk);
        sk_i64vec_free(&buyers);
        return err;
}

static sk_err_t take_lock(const sk_conf_t *conf, sk_db_t *db, int64_t voucher_id,
                          char *lock, size_t lock_size, char *errstr, size_t errstr_size)
{
        sk_err_t err;

        sk_rebuild_lock_name(lock, lock_size, conf, voucher_id);
        err = sk_db_lock(db, lock, REBUILD_LOCK_WAIT_S, errstr, errstr_size);
        if (err == SK_EAGAIN)
                sk_seterr(errstr, errstr_size,
                          "voucher %" PRId64 " is being preheated, rebuilt or changed by "
                          "another process (lock %s busy for %d s)", voucher_id, lock,
                          REBUILD_LOCK_WAIT_S);
        return err;
}

sk_err_t sk_rebuild_voucher_with(const sk_conf_t *conf, sk_db_t *db, sk_redis_t *r,
                                 int64_t voucher_id, int wait_ms, sk_rebuild_report_t *rep,
                                 char *errstr, size_t errstr_size)
{
        sk_rebuild_report_t local;
        char lock[256];
        sk_err_t err;

        if (!rep)
                rep = &local;
        rep_init(rep);
        if ((err = take_lock(conf, db, voucher_id, lock, sizeof(lock), errstr,
                             errstr_size)) != SK_OK)
                return err;
        err = rebuild_locked(conf, db, r, voucher_id, wait_ms, rep, errstr, errstr_size);
        (void)sk_db_unlock(db, lock, NULL, 0);
        return err;
}

static sk_err_t open_both(const sk_conf_t *conf, sk_db_t **db, sk_redis_t **r,
                          char *errstr, size_t errstr_size)
{
        char why[384];

        *db = NULL;
        *r = NULL;
        if (!(*db = sk_db_connect(&conf->mysql, 0, REBUILD_DB_LOCKWAIT_S, why, sizeof(why)))) {
                sk_seterr(errstr, errstr_size, "database: %s", why);
                return SK_EAGAIN;
        }
        if (!(*r = sk_redis_connect(&conf->redis, REBUILD_REDIS_TO_MS, why, sizeof(why)))) {
                sk_seterr(errstr, errstr_size, "redis: %s", why);
                sk_db_close(*db);
                *db = NULL;
                return SK_EAGAIN;
        }
        return SK_OK;
}

sk_err_t sk_rebuild_voucher(const sk_conf_t *conf, int64_t voucher_id, int wait_ms,
                            sk_rebuild_report_t *rep, char *errstr, size_t errstr_size)
{
        sk_db_t *db;
        sk_redis_t *r;
        sk_err_t err;

        if ((err = open_both(conf, &db, &r, errstr, errstr_size)) != SK_OK) {
                if (rep)
                        rep_init(rep);
                return err;
        }
        err = sk_rebuild_voucher_with(conf, db, r, voucher_id, wait_ms, rep, errstr,
                                      errstr_size);
        sk_redis_close(r);
        sk_db_close(db);
        return err;
}

sk_err_t sk_voucher_preheat(const sk_conf_t *conf, int64_t voucher_id, int wait_ms,
                            sk_rebuild_report_t *rep, char *errstr, size_t errstr_size)
{
        sk_rebuild_report_t local;
        sk_db_t *db = NULL;
        sk_redis_t *r = NULL;
        sk_voucher_row_t row;
        vkeys_t k;
        sk_i64vec_t buyers = { 0 };
        char lock[256], cur[64] = "";
        int locked = 0, stock_exists = 0, meta_exists = 0, trace_exists = 0, sold_down = 0;
        sk_err_t err;

        if (!rep)
                rep = &local;
        rep_init(rep);
        if ((err = open_both(conf, &db, &r, errstr, errstr_size)) != SK_OK)
                return err;
        vkeys_init(&k, conf->redis_prefix, voucher_id);
        if ((err = take_lock(conf, db, voucher_id, lock, sizeof(lock), errstr,
                             errstr_size)) != SK_OK)
                goto done;
        locked = 1;
        if ((err = sk_voucher_get(db, voucher_id, 0, &row, errstr, errstr_size)) != SK_OK)
                goto done;
        if ((err = redis_exists(r, k.stock, &stock_exists, errstr, errstr_size)) != SK_OK ||
            (err = redis_exists(r, k.meta, &meta_exists, errstr, errstr_size)) != SK_OK ||
            (err = redis_exists(r, k.trace, &trace_exists, errstr, errstr_size)) != SK_OK)
                goto done;
        if (!stock_exists && (meta_exists || trace_exists || row.stock != row.init_stock)) {
                /* Redis lost this voucher's stock after sales began: a plain preheat
                 * would re-admit units still in flight. Rebuild instead (DESIGN.md 8). */
                rep->rebuilt = 1;
                err = rebuild_locked(conf, db, r, voucher_id, wait_ms, rep, errstr,
                                     errstr_size);
                rep->rebuilt = 1;
                goto done;
        }
        if ((err = copy_state(conf, db, r, &k, voucher_id, "preheat", &row, &buyers,
                              &sold_down, cur, sizeof(cur), errstr, errstr_size)) != SK_OK)
                goto done;
        if (sold_down) {
                sk_seterr(errstr, errstr_size,
                          "refusing to overwrite Redis stock %s of voucher %" PRId64
                          " with the DB stock %" PRId64 " (sold down or drifted; nothing "
                          "written; use --rebuild-from-db)", cur, voucher_id, row.stock);
                err = SK_EEXIST;
                goto done;
        }
        rep->stock = row.stock;
        rep->users = (int64_t)(buyers.n / 2);
        rep->status = row.status;
        err = SK_OK;
done:
        if (locked)
                (void)sk_db_unlock(db, lock, NULL, 0);
        sk_i64vec_free(&buyers);
        sk_redis_close(r);
        sk_db_close(db);
        return err;
}

/* Rewrite meta (begin_ms, end_ms, status) from @p row when meta exists. */
static sk_err_t write_meta(const sk_conf_t *conf, sk_redis_t *r, const vkeys_t *k,
                           const sk_voucher_row_t *row, int *written, char *errstr,
                           size_t errstr_size)
{
        const char *keys[1] = { k->meta };
        char num[3][24];
        const char *args[3] = { num[0], num[1], num[2] };
        redisReply *reply = NULL;
        sk_err_t err;

        snprintf(num[0], sizeof(num[0]), "%" PRId64, row->begin_ms);
        snprintf(num[1], sizeof(num[1]), "%" PRId64, row->end_ms);
        snprintf(num[2], sizeof(num[2]), "%d", row->status);
        if ((err = eval_admin(r, "meta", expire_at(conf, row), 1, keys, 3, args, &reply,
                              errstr, errstr_size)) != SK_OK)
                return err;
        *written = reply->type == REDIS_REPLY_INTEGER && reply->integer == 1;
        freeReplyObject(reply);
        return SK_OK;
}

sk_err_t sk_voucher_set_status(const sk_conf_t *conf, int64_t voucher_id, int status,
                               int *meta_written, char *errstr, size_t errstr_size)
{
        sk_db_t *db = NULL;
        sk_redis_t *r = NULL;
        sk_voucher_row_t row;
        vkeys_t k;
        char lock[256], sql[160];
        int locked = 0, written = 0;
        sk_err_t err;

        if (meta_written)
                *meta_written = 0;
        if (status < 1 || status > 4) {
                sk_seterr(errstr, errstr_size, "status %d is not 1..4", status);
                return SK_EINVAL;
        }
        if ((err = open_both(conf, &db, &r, errstr, errstr_size)) != SK_OK)
                return err;
        vkeys_init(&k, conf->redis_prefix, voucher_id);
        if ((err = take_lock(conf, db, voucher_id, lock, sizeof(lock), errstr,
                             errstr_size)) != SK_OK)
                goto done;
        locked = 1;
        /* The DB first: it is the book of record; Redis follows. */
        if ((err = sk_voucher_get(db, voucher_id, 0, &row, errstr, errstr_size)) != SK_OK)
                goto done;
        snprintf(sql, sizeof(sql),
                 "UPDATE tb_seckill_voucher SET status = %d WHERE voucher_id = %" PRId64,
                 status, voucher_id);
        if ((err = sk_db_exec(db, sql, errstr, errstr_size)) != SK_OK)
                goto done;
        row.status = status;
        if ((err = write_meta(conf, r, &k, &row, &written, errstr, errstr_size)) != SK_OK)
                goto done;
        if (meta_written)
                *meta_written = written;
        err = SK_OK;
done:
        if (locked)
                (void)sk_db_unlock(db, lock, NULL, 0);
        sk_redis_close(r);
        sk_db_close(db);
        return err;
}

sk_err_t sk_voucher_reset_meta_with(const sk_conf_t *conf, sk_db_t *db, sk_redis_t *r,
                                    int64_t voucher_id, int *meta_written, char *errstr,
                                    size_t errstr_size)
{
        sk_voucher_row_t row;
        vkeys_t k;
        char lock[256];
        int written = 0;
        sk_err_t err;

        if (meta_written)
                *meta_written = 0;
        sk_rebuild_lock_name(lock, sizeof(lock), conf, voucher_id);
        /* Timeout 0: if someone holds the lock, a rebuild is running; leave it alone. */
        if ((err = sk_db_lock(db, lock, 0, errstr, errstr_size)) != SK_OK)
                return err;
        vkeys_init(&k, conf->redis_prefix, voucher_id);
        if ((err = sk_voucher_get(db, voucher_id, 0, &row, errstr, errstr_size)) == SK_OK &&
            (err = write_meta(conf, r, &k, &row, &written, errstr, errstr_size)) == SK_OK &&
            meta_written)
                *meta_written = written;
        (void)sk_db_unlock(db, lock, NULL, 0);
        return err;
}
