/* voucher.c: `db migrate` and the `voucher` subcommands of seckill-admin (admin.h).
 * The DB is the book of record: create writes only the DB (plus Redis with --preheat);
 * preheat/rebuild go through sk/rebuild.h and set-status through sk/voucher.h, which
 * hold the voucher's advisory lock; the time format is sk/timeparse.h. Results go to stdout (JSON where a
 * script is expected to read them), one error line to stderr. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "admin.h"
#include "sk/clock.h"
#include "sk/db.h"
#include "sk/ids.h"
#include "sk/keys.h"
#include "sk/lease.h"
#include "sk/migrate.h"
#include "sk/payment.h"
#include "sk/queue.h"
#include "sk/rebuild.h"
#include "sk/redis.h"
#include "sk/timeparse.h"
#include "sk/traceset.h"
#include "sk/txn_guard.h"
#include "sk/unpaid_guard.h"
#include "sk/vstatus.h"

#define PROG "seckill-admin"
#define ADMIN_DB_LOCKWAIT_S 5

/* Exit status for an error code: 2 for what needs a human or a retry later by the
 * operator (DESIGN.md: "wait and report (exit 2)"), 1 for a failing dependency. */
static int exit_for(sk_err_t err)
{
        switch (err) {
        case SK_OK:
                return 0;
        case SK_EINVAL:
        case SK_ENOTFOUND:
        case SK_EEXIST:
        case SK_EAGAIN:
                return 2;
        default:
                return 1;
        }
}

/* Print a cJSON tree as one line on stdout and free it. */
static void print_json(cJSON *root)
{
        char *txt = root ? cJSON_PrintUnformatted(root) : NULL;
        if (txt) {
                printf("%s\n", txt);
                cJSON_free(txt);
        } else {
                fprintf(stderr, PROG ": out of memory\n");
        }
        cJSON_Delete(root);
        fflush(stdout);
}

static void add_id(cJSON *obj, const char *name, int64_t id)
{
        char buf[SK_ID_STRLEN + 1];
        sk_id_format(id, buf);
        cJSON_AddStringToObject(obj, name, buf);
}

/* ------------------------------------------------------------------ db migrate */

int sk_admin_db_migrate(const sk_conf_t *conf, const sk_admin_opts_t *o)
{
        sk_unpaid_guard_t guard = { .allow_unpaid = o->allow_unpaid, .currency = conf->currency };
        sk_migrate_hook_t hooks[2];
        char errstr[1024];
        int applied = 0;
        sk_err_t err;

        err = sk_unpaid_guard_hook(&guard, &hooks[0], errstr, sizeof(errstr));
        sk_txn_guard_hook(&hooks[1]);
        if (err == SK_OK)
                err = sk_migrate_hooks(&conf->mysql, hooks, 2, &applied, errstr, sizeof(errstr));
        if (err != SK_OK) {
                fprintf(stderr, PROG ": db migrate: %s (%d applied before the error)\n",
                        errstr, applied);
                return err == SK_EINVAL ? 2 : 1;
        }
        if (guard.unpaid > 0)
                fprintf(stderr, PROG ": db migrate: --allow-unpaid: %lld UNPAID order(s) left at "
                        "amount 0, currency %s\n", (long long)guard.unpaid, conf->currency);
        printf("applied %d migration(s)\n", applied);
        return 0;
}

/* ------------------------------------------------------------------ create */

/* Mint one voucher id with a leased worker id (DESIGN.md 2). The first mint may wait
 * up to 2/3 of the lease (the previous holder's :until). */
static sk_err_t mint_id(const sk_conf_t *conf, int64_t *id, char *errstr, size_t errstr_size)
{
        sk_idgen_t *g;
        sk_err_t err = SK_EAGAIN;
        int64_t deadline_ms;

        if (!(g = sk_idgen_start(conf, &err, errstr, errstr_size)))
                return err;
        deadline_ms = sk_mono_ms() + conf->worker_lease_ms + 10000;
        for (;;) {
                err = sk_idgen_next(g, id, errstr, errstr_size);
                if (err != SK_EAGAIN || sk_mono_ms() >= deadline_ms)
                        break;
                sk_sleep_ms(20, NULL);
        }
        sk_idgen_stop(g);
        return err;
}

static void print_report(int64_t id, const sk_rebuild_report_t *rep, int rebuild)
{
        cJSON *root = cJSON_CreateObject();

        add_id(root, "voucherId", id);
        cJSON_AddStringToObject(root, "action", rebuild || rep->rebuilt ? "rebuild" : "preheat");
        cJSON_AddNumberToObject(root, "stock", (double)rep->stock);
        cJSON_AddNumberToObject(root, "users", (double)rep->users);
        cJSON_AddNumberToObject(root, "status", rep->status);
        if (rebuild || rep->rebuilt) {
                cJSON_AddNumberToObject(root, "previousStatus", rep->prev_status);
                cJSON_AddNumberToObject(root, "deducts", (double)rep->deducts);
                cJSON_AddNumberToObject(root, "fencedFailed", (double)rep->fenced_failed);
                cJSON_AddNumberToObject(root, "waitedMs", (double)rep->waited_ms);
        }
        print_json(root);
}

/* The waiting-room flags of `voucher create` (DESIGN.md 18) into @p room: the --queue-*
 * numbers only with --queue, each default written once (sk/queue.h); the title is
 * checked whether or not the voucher is queued; an admission must outlive the request
 * deadline (2 x delivery timeout + 1 s). 0, or 2 after one error line. */
static int check_room(const sk_conf_t *conf, const sk_admin_opts_t *o, sk_admin_room_t *room)
{
        int64_t deadline_ms = 2 * (int64_t)conf->kafka_delivery_timeout_ms + 1000;
        char errstr[256];

        *room = (sk_admin_room_t){ .mode = o->queue ? 1 : 0,
                                   .open_s = o->queue_open_s >= 0 ? o->queue_open_s : SK_QUEUE_OPEN_S_DEF,
                                   .ttl_s = o->queue_ttl_s >= 0 ? o->queue_ttl_s : SK_QUEUE_TTL_S_DEF,
                                   .overbook_pct = o->queue_overbook_pct >= 0
                                                   ? o->queue_overbook_pct : SK_QUEUE_OVERBOOK_DEF,
                                   .rate = o->queue_rate >= 0 ? o->queue_rate : 0,
                                   .title = o->title };
        if (!o->queue && (o->queue_open_s >= 0 || o->queue_ttl_s >= 0 ||
                          o->queue_overbook_pct >= 0 || o->queue_rate >= 0)) {
                fprintf(stderr, PROG ": voucher create: --queue-open, --queue-ttl, "
                        "--queue-overbook and --queue-rate need --queue\n");
                return 2;
        }
        if (sk_queue_title_check(o->title, errstr, sizeof(errstr)) != 0) {
                fprintf(stderr, PROG ": voucher create: --title %s\n", errstr);
                return 2;
        }
        if (room->overbook_pct < 100) {
                fprintf(stderr, PROG ": voucher create: --queue-overbook must be >= 100 (got %d)\n",
                        room->overbook_pct);
                return 2;
        }
        if ((int64_t)room->ttl_s * 1000 < deadline_ms) {
                fprintf(stderr, PROG ": voucher create: --queue-ttl %d s is shorter than the "
                        "request deadline (%" PRId64 " ms = 2 x SECKILL_KAFKA_DELIVERY_TIMEOUT_MS "
                        "+ 1 s)\n", room->ttl_s, deadline_ms);
                return 2;
        }
        return 0;
}

int sk_admin_voucher_create(const sk_conf_t *conf, const sk_admin_opts_t *o)
{
        char errstr[512];
        int64_t begin_ms, end_ms, id = 0;
        int status = o->status == -1 ? 1 : o->status;
        const char *currency = o->currency[0] ? o->currency : conf->currency;
        int64_t price = 0;
        sk_admin_room_t room;
        sk_db_t *db = NULL;
        sk_err_t err;
        int rc = 1;

        if (o->stock == -1) {
                fprintf(stderr, PROG ": voucher create: --stock N is required\n");
                return 2;
        }
        if (!o->begin[0] || !o->end[0]) {
                fprintf(stderr, PROG ": voucher create: --begin and --end are required\n");
                return 2;
        }
        if (sk_time_parse(o->begin, &begin_ms, errstr, sizeof(errstr))) {
                fprintf(stderr, PROG ": voucher create: --begin %s\n", errstr);
                return 2;
        }
        if (sk_time_parse(o->end, &end_ms, errstr, sizeof(errstr))) {
                fprintf(stderr, PROG ": voucher create: --end %s\n", errstr);
                return 2;
        }
        if (end_ms <= begin_ms) {
                fprintf(stderr, PROG ": voucher create: --end must be after --begin\n");
                return 2;
        }
        /* DESIGN.md 13: the price in minor units (canonical decimal >= 0, default 0) and
         * an ISO 4217 code (default SECKILL_CURRENCY), fixed for the voucher's life. */
        if (o->price[0] && sk_payment_parse_amount(o->price, &price) != 0) {
                fprintf(stderr, PROG ": voucher create: --price must be minor units, a whole "
                        "number >= 0 (got \"%s\")\n", o->price);
                return 2;
        }
        if (!sk_payment_valid_currency(currency)) {
                fprintf(stderr, PROG ": voucher create: %s must be three letters A-Z (got \"%s\")\n",
                        o->currency[0] ? "--currency" : "SECKILL_CURRENCY", currency);
                return 2;
        }

        if (check_room(conf, o, &room) != 0)
                return 2;

        /* Connect first so a dead database fails before we lease a worker id. */
        if (!(db = sk_db_connect(&conf->mysql, 0, ADMIN_DB_LOCKWAIT_S, errstr, sizeof(errstr)))) {
                fprintf(stderr, PROG ": voucher create: database: %s\n", errstr);
                return 1;
        }
        if ((err = sk_db_exec(db, "SELECT 1 FROM tb_seckill_voucher LIMIT 0", errstr,
                              sizeof(errstr))) != SK_OK) {
                fprintf(stderr, PROG ": voucher create: %s%s\n", errstr,
                        sk_db_errno(db) == 1146 ? " (run `" PROG " db migrate`)" : "");
                goto done;
        }
        if ((err = mint_id(conf, &id, errstr, sizeof(errstr))) != SK_OK) {
                fprintf(stderr, PROG ": voucher create: cannot mint an id: %s\n", errstr);
                rc = err == SK_EEXIST ? 2 : 1;
                goto done;
        }
        if ((err = sk_admin_insert_voucher(db, id, o->stock, o->buckets ? o->buckets : 1,
                                           begin_ms, end_ms, status, price, currency, &room,
                                           errstr, sizeof(errstr))) != SK_OK) {
                fprintf(stderr, PROG ": voucher create: %s\n", errstr);
                goto done;
        }
        {
                cJSON *root = cJSON_CreateObject();
                add_id(root, "voucherId", id);
                print_json(root);
        }
        rc = 0;
        if (o->preheat) {
                sk_rebuild_report_t rep;
                err = sk_voucher_preheat(conf, id, 0, &rep, errstr, sizeof(errstr));
                if (err != SK_OK) {
                        fprintf(stderr, PROG ": voucher %" PRId64 " was created but not "
                                "preheated: %s\n", id, errstr);
                        rc = 1;
                }
        }
done:
        sk_db_close(db);
        return rc;
}

/* ------------------------------------------------------------------ preheat */

static int parse_id_arg(const char *s, int64_t *id)
{
        if (sk_id_parse_cstr(s, id) != 0) {
                fprintf(stderr, PROG ": \"%s\" is not a voucher id (canonical decimal, "
                        "1..9223372036854775807)\n", s);
                return -1;
        }
        return 0;
}

int sk_admin_voucher_preheat(const sk_conf_t *conf, const sk_admin_opts_t *o)
{
        const char *ids = o->args[0];
        sk_rebuild_report_t rep;
        char errstr[512];
        int64_t id;
        sk_err_t err;

        if (parse_id_arg(ids, &id))
                return 2;
        if (o->rebuild_from_db)
                err = sk_rebuild_voucher(conf, id, o->wait_ms, &rep, errstr, sizeof(errstr));
        else
                err = sk_voucher_preheat(conf, id, o->wait_ms, &rep, errstr, sizeof(errstr));
        if (err != SK_OK) {
                fprintf(stderr, PROG ": voucher %s %" PRId64 ": %s\n",
                        o->rebuild_from_db || rep.rebuilt ? "rebuild" : "preheat", id, errstr);
                return exit_for(err);
        }
        print_report(id, &rep, o->rebuild_from_db);
        return 0;
}

/* ------------------------------------------------------------------ show */

static const char *status_name(int st)
{
        switch (st) {
        case 1: return "on sale";
        case 2: return "offline";
        case 3: return "expired";
        case 4: return "paused";
        default: return "?";
        }
}

static void fmt_time(int64_t ms, char *buf, size_t size)
{
        time_t t = (time_t)(ms / 1000);
        struct tm tm;
        if (ms < 0 || !gmtime_r(&t, &tm)) {
                snprintf(buf, size, "?");
                return;
        }
        sk_seterr(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

/* 1 if hash @p key has the placeholder field `_`, else 0 (also on an error). */
static int has_placeholder(sk_redis_t *r, const char *key)
{
        const char *argv[3] = { "HEXISTS", key, "_" };
        redisReply *reply = NULL;
        char errstr[128];
        int yes = 0;

        if (sk_redis_cmd(r, &reply, 3, argv, NULL, errstr, sizeof(errstr)) == SK_OK)
                yes = reply->type == REDIS_REPLY_INTEGER && reply->integer == 1;
        if (reply)
                freeReplyObject(reply);
        return yes;
}

/* Integer reply of a one-key command (HLEN, PTTL), or @p dflt on any error. */
static long long redis_int(sk_redis_t *r, const char *cmd, const char *key, long long dflt)
{
        const char *argv[2] = { cmd, key };
        redisReply *reply = NULL;
        long long v = dflt;

        if (sk_redis_cmd(r, &reply, 2, argv, NULL, NULL, 0) == SK_OK) {
                if (reply->type == REDIS_REPLY_INTEGER)
                        v = reply->integer;
                freeReplyObject(reply);
        }
        return v;
}

/* Active orders, CREATED and FAILED outcomes of the voucher, in one statement (the
 * sub-queries share its read view). */
static sk_err_t db_counts(sk_db_t *db, int64_t id, int64_t *active, int64_t *created,
                          int64_t *failed)
{
        static const char sql[] =
                "SELECT (SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = ? AND status IN "
                SK_SQL_ORDER_ACTIVE "),"
                " (SELECT COUNT(*) FROM tb_seckill_outcome WHERE voucher_id = ? AND outcome = "
                SK_SQL_OUTCOME_CREATED "),"
                " (SELECT COUNT(*) FROM tb_seckill_outcome WHERE voucher_id = ? AND outcome = "
                SK_SQL_OUTCOME_FAILED ")";
        const sk_db_arg_t a = SK_I64(id);
        int64_t c[3];
        char errstr[256];
        sk_err_t err = sk_db_row1(db, sql, SK_ARGS(a, a, a), c, 3, NULL, errstr, sizeof(errstr));

        if (err == SK_OK) {
                *active = c[0];
                *created = c[1];
                *failed = c[2];
        }
        return err;
}

/* What `voucher show` found: the DB side and the Redis side. */
typedef struct show {
        int64_t id;
        int in_db;                                 /* 0: not in the database */
        sk_voucher_row_t row;
        int64_t active, created, failed;           /* -1 = unknown */
        redisReply *meta, *stock;                  /* HGETALL meta, GET stock (owned) */
        long long users, traces, meta_ttl, stock_ttl;
        int nb;                                    /* buckets shown (the DB's N, else 1) */
        char b_stock[SK_BUCKETS_MAX][24];          /* Redis stock of bucket b ("" missing) */
        long long b_users[SK_BUCKETS_MAX];         /* buyers in bucket b's users hash */
} show_t;

static void show_json(const show_t *v)
{
        cJSON *root = cJSON_CreateObject(), *d, *rd, *m;

        add_id(root, "voucherId", v->id);
        if (v->in_db) {
                d = cJSON_AddObjectToObject(root, "db");
                cJSON_AddNumberToObject(d, "initStock", (double)v->row.init_stock);
                cJSON_AddNumberToObject(d, "stock", (double)v->row.stock);
                cJSON_AddNumberToObject(d, "beginMs", (double)v->row.begin_ms);
                cJSON_AddNumberToObject(d, "endMs", (double)v->row.end_ms);
                cJSON_AddNumberToObject(d, "status", v->row.status);
                cJSON_AddNumberToObject(d, "activeOrders", (double)v->active);
                cJSON_AddNumberToObject(d, "outcomesCreated", (double)v->created);
                cJSON_AddNumberToObject(d, "outcomesFailed", (double)v->failed);
        } else {
                cJSON_AddNullToObject(root, "db");
        }
        rd = cJSON_AddObjectToObject(root, "redis");
        if (v->meta->type == REDIS_REPLY_ARRAY && v->meta->elements > 0) {
                /* Values as Redis holds them (strings): no number conversion. */
                m = cJSON_AddObjectToObject(rd, "meta");
                for (size_t i = 0; i + 1 < v->meta->elements; i += 2)
                        if (v->meta->element[i]->type == REDIS_REPLY_STRING &&
                            v->meta->element[i + 1]->type == REDIS_REPLY_STRING)
                                cJSON_AddStringToObject(m, v->meta->element[i]->str,
                                                        v->meta->element[i + 1]->str);
        } else {
                cJSON_AddNullToObject(rd, "meta");
        }
        if (v->stock->type == REDIS_REPLY_STRING)
                cJSON_AddStringToObject(rd, "stock", v->stock->str);
        else
                cJSON_AddNullToObject(rd, "stock");
        cJSON_AddNumberToObject(rd, "users", (double)v->users);
        cJSON_AddNumberToObject(rd, "traceEntries", (double)v->traces);
        cJSON_AddNumberToObject(rd, "metaTtlMs", (double)v->meta_ttl);
        cJSON_AddNumberToObject(rd, "stockTtlMs", (double)v->stock_ttl);
        {
                cJSON *arr = cJSON_AddArrayToObject(root, "buckets"), *b;

                for (int i = 0; i < v->nb; i++) {
                        b = cJSON_CreateObject();
                        cJSON_AddNumberToObject(b, "bucket", i);
                        if (v->in_db) {
                                cJSON_AddNumberToObject(b, "dbInitStock", (double)v->row.bucket_init[i]);
                                cJSON_AddNumberToObject(b, "dbStock", (double)v->row.bucket_stock[i]);
                        }
                        if (v->b_stock[i][0])
                                cJSON_AddStringToObject(b, "redisStock", v->b_stock[i]);
                        else
                                cJSON_AddNullToObject(b, "redisStock");
                        cJSON_AddNumberToObject(b, "redisUsers", (double)v->b_users[i]);
                        cJSON_AddItemToArray(arr, b);
                }
        }
        print_json(root);
}

static void show_text(const show_t *v)
{
        char t1[40], t2[40];

        printf("voucher %" PRId64 "\n", v->id);
        if (v->in_db) {
                fmt_time(v->row.begin_ms, t1, sizeof(t1));
                fmt_time(v->row.end_ms, t2, sizeof(t2));
                printf("  db     init_stock=%" PRId64 " stock=%" PRId64 " begin=%s end=%s "
                       "status=%d (%s) active_orders=%" PRId64 " outcomes_created=%"
                       PRId64 " outcomes_failed=%" PRId64 "\n",
                       v->row.init_stock, v->row.stock, t1, t2, v->row.status,
                       status_name(v->row.status), v->active, v->created, v->failed);
        } else {
                printf("  db     (not in the database)\n");
        }
        printf("  redis  meta=");
        if (v->meta->type == REDIS_REPLY_ARRAY && v->meta->elements > 0) {
                for (size_t i = 0; i + 1 < v->meta->elements; i += 2)
                        printf("%s%s:%s", i ? "," : "", v->meta->element[i]->str,
                               v->meta->element[i + 1]->str);
        } else {
                printf("(missing)");
        }
        printf(" stock=%s users=%lld trace_entries=%lld meta_ttl_ms=%lld "
               "stock_ttl_ms=%lld\n",
               v->stock->type == REDIS_REPLY_STRING ? v->stock->str : "(missing)", v->users,
               v->traces, v->meta_ttl, v->stock_ttl);
        for (int i = 0; v->nb > 1 && i < v->nb; i++) {
                if (v->in_db)
                        printf("  bucket %-2d db init_stock=%" PRId64 " stock=%" PRId64, i,
                               v->row.bucket_init[i], v->row.bucket_stock[i]);
                else
                        printf("  bucket %-2d", i);
                printf("  redis stock=%s users=%lld\n", v->b_stock[i][0] ? v->b_stock[i] : "(missing)",
                       v->b_users[i]);
        }
        fflush(stdout);
}

/* The Redis side of `voucher show` into @p v. */
static sk_err_t show_redis(const sk_conf_t *conf, sk_redis_t *r, show_t *v, char *errstr,
                           size_t errstr_size)
{
        char meta_key[SK_KEY_MAX], stock_key[SK_KEY_MAX], users_key[SK_KEY_MAX];
        char trace_key[SK_KEY_MAX];
        const char *hgetall[2] = { "HGETALL", meta_key }, *get[2] = { "GET", stock_key };
        sk_err_t err;

        sk_key_voucher(meta_key, conf->redis_prefix, v->id, 0, SK_KEY_META);
        sk_key_voucher(stock_key, conf->redis_prefix, v->id, 0, SK_KEY_STOCK);
        sk_key_voucher(users_key, conf->redis_prefix, v->id, 0, SK_KEY_USERS);
        sk_key_voucher(trace_key, conf->redis_prefix, v->id, 0, SK_KEY_TRACE);
        if ((err = sk_redis_cmd(r, &v->meta, 2, hgetall, NULL, errstr, errstr_size)) != SK_OK ||
            (err = sk_redis_cmd(r, &v->stock, 2, get, NULL, errstr, errstr_size)) != SK_OK)
                return err;
        v->users = redis_int(r, "HLEN", users_key, -1);
        v->traces = redis_int(r, "HLEN", trace_key, -1);
        /* preheat's placeholder `_` (DESIGN.md 4) is neither a buyer nor a trace entry */
        v->users -= v->users > 0 && has_placeholder(r, users_key);
        v->traces -= v->traces > 0 && has_placeholder(r, trace_key);
        v->meta_ttl = redis_int(r, "PTTL", meta_key, -3);
        v->stock_ttl = redis_int(r, "PTTL", stock_key, -3);
        /* Every bucket (DESIGN.md 14): the summary line above is bucket 0's. */
        v->nb = v->in_db && v->row.buckets >= 1 && v->row.buckets <= SK_BUCKETS_MAX ? v->row.buckets : 1;
        for (int b = 0; b < v->nb; b++) {
                redisReply *reply = NULL;

                sk_key_voucher(stock_key, conf->redis_prefix, v->id, b, SK_KEY_STOCK);
                sk_key_voucher(users_key, conf->redis_prefix, v->id, b, SK_KEY_USERS);
                if ((err = sk_redis_cmd(r, &reply, 2, get, NULL, errstr, errstr_size)) != SK_OK)
                        return err;
                if (reply->type == REDIS_REPLY_STRING)
                        snprintf(v->b_stock[b], sizeof(v->b_stock[b]), "%.20s", reply->str);
                freeReplyObject(reply);
                v->b_users[b] = redis_int(r, "HLEN", users_key, -1);
                v->b_users[b] -= v->b_users[b] > 0 && has_placeholder(r, users_key);
        }
        return SK_OK;
}

int sk_admin_voucher_show(const sk_conf_t *conf, const sk_admin_opts_t *o)
{
        const char *ids = o->args[0];
        char errstr[512];
        sk_db_t *db = NULL;
        sk_redis_t *r = NULL;
        show_t v;
        sk_err_t dberr;
        int rc = 1;

        memset(&v, 0, sizeof(v));
        v.active = v.created = v.failed = -1;
        if (parse_id_arg(ids, &v.id))
                return 2;
        if (sk_voucher_connect(conf, &db, &r, errstr, sizeof(errstr)) != SK_OK) {
                fprintf(stderr, PROG ": voucher show: %s\n", errstr);
                return 1;
        }
        dberr = sk_voucher_get(db, v.id, 0, &v.row, errstr, sizeof(errstr));
        if (dberr != SK_OK && dberr != SK_ENOTFOUND) {
                fprintf(stderr, PROG ": voucher show: %s\n", errstr);
                goto done;
        }
        v.in_db = dberr == SK_OK;
        if (v.in_db && db_counts(db, v.id, &v.active, &v.created, &v.failed) != SK_OK)
                v.active = v.created = v.failed = -1;
        if (show_redis(conf, r, &v, errstr, sizeof(errstr)) != SK_OK) {
                fprintf(stderr, PROG ": voucher show: redis: %s\n", errstr);
                goto done;
        }
        if (o->json)
                show_json(&v);
        else
                show_text(&v);
        rc = 0;
        if (!v.in_db) {
                fprintf(stderr, PROG ": voucher show: voucher %" PRId64 " is not in the "
                        "database\n", v.id);
                rc = 2;
        }
done:
        if (v.meta)
                freeReplyObject(v.meta);
        if (v.stock)
                freeReplyObject(v.stock);
        sk_redis_close(r);
        sk_db_close(db);
        return rc;
}

/* ------------------------------------------------------------------ set-status */

int sk_admin_voucher_set_status(const sk_conf_t *conf, const sk_admin_opts_t *o)
{
        const char *ids = o->args[0], *sts = o->args[1];
        char errstr[512];
        int64_t id;
        int status, written = 0;
        sk_err_t err;
        cJSON *root;

        if (parse_id_arg(ids, &id))
                return 2;
        if (sk_parse_int(sts, 1, 4, &status) != 0) {
                fprintf(stderr, PROG ": voucher set-status: status \"%s\" is not 1..4 "
                        "(1 on sale, 2 offline, 3 expired, 4 paused)\n", sts);
                return 2;
        }
        err = sk_voucher_set_status(conf, id, status, &written, errstr, sizeof(errstr));
        if (err != SK_OK) {
                fprintf(stderr, PROG ": voucher set-status %" PRId64 ": %s\n", id, errstr);
                return exit_for(err);
        }
        root = cJSON_CreateObject();
        add_id(root, "voucherId", id);
        cJSON_AddNumberToObject(root, "status", status);
        cJSON_AddStringToObject(root, "redisMeta", written ? "updated" : "missing");
        print_json(root);
        return 0;
}
