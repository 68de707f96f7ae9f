/* voucher.c: `db migrate` and the `voucher` subcommands of seckill-admin (admin.h).
 * The DB is the book of record: create writes only the DB (plus Redis with --preheat);
 * preheat/rebuild/set-status go through sk/rebuild.h, which holds the voucher's
 * advisory lock and writes Redis with one script. Results go to stdout (JSON where a
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
#include "sk/rebuild.h"
#include "sk/redis.h"

#define PROG "seckill-admin"
#define ADMIN_DB_LOCKWAIT_S 5
#define ADMIN_REDIS_TO_MS   5000

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

/* ------------------------------------------------------------------ times */

/* n decimal digits at *p into *v; advances *p. */
static int digits(const char **p, int n, int *v)
{
        int x = 0;
        for (int i = 0; i < n; i++) {
                char c = (*p)[i];
                if (c < '0' || c > '9')
                        return -1;
                x = x * 10 + (c - '0');
        }
        *p += n;
        *v = x;
        return 0;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant, days_from_civil). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
        int64_t era, yoe, doy, doe;

        y -= m <= 2;
        era = (y >= 0 ? y : y - 399) / 400;
        yoe = y - era * 400;
        doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
        doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        return era * 146097 + doe - 719468;
}

static int days_in_month(int y, int m)
{
        static const int dm[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
        int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        return m == 2 ? 28 + leap : dm[m - 1];
}

int sk_admin_parse_time(const char *s, int64_t *out_ms, char *errstr, size_t errstr_size)
{
        const char *p = s;
        int y, mo, d, h, mi, sec = 0, ms = 0, off_s = 0;
        size_t len;

        if (!s || !*s) {
                sk_seterr(errstr, errstr_size, "empty time");
                return -1;
        }
        len = strlen(s);
        if (strspn(s, "0123456789") == len) {
                /* Epoch seconds, up to 9999-12-31T23:59:59Z. */
                long v;
                if (len > 12 || sk_parse_long(s, 0, 253402300799L, &v) != 0) {
                        sk_seterr(errstr, errstr_size, "\"%s\": epoch seconds out of range", s);
                        return -1;
                }
                *out_ms = (int64_t)v * 1000;
                return 0;
        }
        if (digits(&p, 4, &y) || *p++ != '-' || digits(&p, 2, &mo) || *p++ != '-' ||
            digits(&p, 2, &d))
                goto bad;
        if (*p != 'T' && *p != 't' && *p != ' ') {
                sk_seterr(errstr, errstr_size, "\"%s\": needs a time of day and a zone, "
                          "e.g. 2026-11-29T18:00:00Z", s);
                return -1;
        }
        p++;
        if (digits(&p, 2, &h) || *p++ != ':' || digits(&p, 2, &mi))
                goto bad;
        if (*p == ':') {
                p++;
                if (digits(&p, 2, &sec))
                        goto bad;
                if (*p == '.' || *p == ',') {
                        int nd = 0;
                        p++;
                        while (*p >= '0' && *p <= '9') {
                                if (nd < 3)
                                        ms = ms * 10 + (*p - '0');
                                nd++;
                                p++;
                        }
                        if (nd == 0 || nd > 9)
                                goto bad;
                        for (; nd < 3; nd++)
                                ms *= 10;
                }
        }
        if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 ||
            sec > 59) {
                sk_seterr(errstr, errstr_size, "\"%s\": date or time out of range", s);
                return -1;
        }
        if (*p == '\0') {
                sk_seterr(errstr, errstr_size, "\"%s\" has no zone and is ambiguous: add Z "
                          "(UTC) or an offset such as +08:00", s);
                return -1;
        }
        if (*p == 'Z' || *p == 'z') {
                p++;
        } else if (*p == '+' || *p == '-') {
                int sign = *p == '-' ? -1 : 1, oh, om = 0;
                p++;
                if (digits(&p, 2, &oh))
                        goto bad;
                if (*p == ':')
                        p++;
                if (*p && digits(&p, 2, &om))
                        goto bad;
                if (oh > 23 || om > 59)
                        goto bad;
                off_s = sign * (oh * 3600 + om * 60);
        } else {
                goto bad;
        }
        if (*p != '\0')
                goto bad;
        {
                int64_t t_s = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec -
                              off_s;
                if (t_s < 0) {
                        sk_seterr(errstr, errstr_size, "\"%s\" is before 1970", s);
                        return -1;
                }
                *out_ms = t_s * 1000 + ms;
        }
        return 0;
bad:
        sk_seterr(errstr, errstr_size, "\"%s\" is not epoch seconds or ISO-8601 with a zone "
                  "(2026-11-29T18:00:00Z, 2026-11-29T18:00:00+08:00)", s);
        return -1;
}

/* ------------------------------------------------------------------ db migrate */

int sk_admin_db_migrate(const sk_conf_t *conf)
{
        char errstr[512];
        int applied = 0;
        sk_err_t err;

        err = sk_migrate(&conf->mysql, &applied, errstr, sizeof(errstr));
        if (err != SK_OK) {
                fprintf(stderr, PROG ": db migrate: %s (%d applied before the error)\n",
                        errstr, applied);
                return err == SK_EINVAL ? 2 : 1;
        }
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

static sk_err_t insert_voucher(sk_db_t *db, int64_t id, int64_t stock, int64_t begin_ms,
                               int64_t end_ms, int64_t status, char *errstr,
                               size_t errstr_size)
{
        /* Times are written as UTC DATETIME(3) without FROM_UNIXTIME (2038-limited on
         * MariaDB 10.x): 1970-01-01 + ms * 1000 microseconds. */
        static const char sql[] =
                "INSERT INTO tb_seckill_voucher"
                " (voucher_id, init_stock, stock, begin_time, end_time, status)"
                " VALUES (?, ?, ?,"
                " TIMESTAMPADD(MICROSECOND, ? * 1000, '1970-01-01 00:00:00'),"
                " TIMESTAMPADD(MICROSECOND, ? * 1000, '1970-01-01 00:00:00'), ?)";
        MYSQL_STMT *stmt;
        MYSQL_BIND b[6];
        int64_t v[6] = { id, stock, stock, begin_ms, end_ms, status };
        sk_err_t err = SK_OK;

        if ((err = sk_db_stmt_init(db, &stmt, errstr, errstr_size)) != SK_OK)
                return err;
        for (int i = 0; i < 6; i++)
                sk_db_bind_i64(&b[i], &v[i]);
        if (mysql_stmt_prepare(stmt, sql, (unsigned long)strlen(sql)) ||
            mysql_stmt_bind_param(stmt, b) || mysql_stmt_execute(stmt)) {
                err = sk_db_classify(mysql_stmt_errno(stmt));
                if (err == SK_OK)
                        err = SK_EDB;
                sk_seterr(errstr, errstr_size, "insert voucher: mysql error %u: %s%s",
                          mysql_stmt_errno(stmt), mysql_stmt_error(stmt),
                          mysql_stmt_errno(stmt) == 1146 ? " (run `" PROG " db migrate`)" : "");
        }
        mysql_stmt_close(stmt);
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

int sk_admin_voucher_create(const sk_conf_t *conf, const sk_admin_opts_t *o)
{
        char errstr[512];
        int64_t begin_ms, end_ms, id = 0;
        int status = o->status == -1 ? 1 : o->status;
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
        if (sk_admin_parse_time(o->begin, &begin_ms, errstr, sizeof(errstr))) {
                fprintf(stderr, PROG ": voucher create: --begin %s\n", errstr);
                return 2;
        }
        if (sk_admin_parse_time(o->end, &end_ms, errstr, sizeof(errstr))) {
                fprintf(stderr, PROG ": voucher create: --end %s\n", errstr);
                return 2;
        }
        if (end_ms <= begin_ms) {
                fprintf(stderr, PROG ": voucher create: --end must be after --begin\n");
                return 2;
        }

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
        if ((err = insert_voucher(db, id, o->stock, begin_ms, end_ms, status, errstr,
                                  sizeof(errstr))) != SK_OK) {
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

int sk_admin_voucher_preheat(const sk_conf_t *conf, const char *ids, const sk_admin_opts_t *o)
{
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

int sk_admin_voucher_show(const sk_conf_t *conf, const char *ids, const sk_admin_opts_t *o)
{
        char errstr[512], sql[256], meta_key[SK_KEY_MAX], stock_key[SK_KEY_MAX];
        char users_key[SK_KEY_MAX], trace_key[SK_KEY_MAX], t1[40], t2[40];
        sk_db_t *db = NULL;
        sk_redis_t *r = NULL;
        sk_voucher_row_t row;
        int64_t id, active = -1, created = -1, failed = -1;
        sk_err_t dberr;
        redisReply *meta = NULL, *stock = NULL;
        const char *argv[2];
        long long users, traces, meta_ttl, stock_ttl;
        int rc = 0;

        if (parse_id_arg(ids, &id))
                return 2;
        if (!(db = sk_db_connect(&conf->mysql, 0, ADMIN_DB_LOCKWAIT_S, errstr, sizeof(errstr)))) {
                fprintf(stderr, PROG ": voucher show: database: %s\n", errstr);
                return 1;
        }
        if (!(r = sk_redis_connect(&conf->redis, ADMIN_REDIS_TO_MS, errstr, sizeof(errstr)))) {
                fprintf(stderr, PROG ": voucher show: redis: %s\n", errstr);
                sk_db_close(db);
                return 1;
        }
        dberr = sk_voucher_get(db, id, 0, &row, errstr, sizeof(errstr));
        if (dberr != SK_OK && dberr != SK_ENOTFOUND) {
                fprintf(stderr, PROG ": voucher show: %s\n", errstr);
                rc = 1;
                goto done;
        }
        if (dberr == SK_OK) {
                /* One statement: the three counts share its read view. */
                snprintf(sql, sizeof(sql),
                         "SELECT (SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = %"
                         PRId64 " AND status = 1)", id);
                if (sk_db_query_i64(db, sql, &active, NULL, errstr, sizeof(errstr)) != SK_OK)
                        active = -1;
                snprintf(sql, sizeof(sql), "SELECT COUNT(*) FROM tb_seckill_outcome WHERE "
                         "voucher_id = %" PRId64 " AND outcome = 1", id);
                if (sk_db_query_i64(db, sql, &created, NULL, errstr, sizeof(errstr)) != SK_OK)
                        created = -1;
                snprintf(sql, sizeof(sql), "SELECT COUNT(*) FROM tb_seckill_outcome WHERE "
                         "voucher_id = %" PRId64 " AND outcome = 2", id);
                if (sk_db_query_i64(db, sql, &failed, NULL, errstr, sizeof(errstr)) != SK_OK)
                        failed = -1;
        }
        sk_key_voucher(meta_key, conf->redis_prefix, id, SK_KEY_META);
        sk_key_voucher(stock_key, conf->redis_prefix, id, SK_KEY_STOCK);
        sk_key_voucher(users_key, conf->redis_prefix, id, SK_KEY_USERS);
        sk_key_voucher(trace_key, conf->redis_prefix, id, SK_KEY_TRACE);
        argv[0] = "HGETALL";
        argv[1] = meta_key;
        if (sk_redis_cmd(r, &meta, 2, argv, NULL, errstr, sizeof(errstr)) != SK_OK) {
                fprintf(stderr, PROG ": voucher show: redis: %s\n", errstr);
                rc = 1;
                goto done;
        }
        argv[0] = "GET";
        argv[1] = stock_key;
        if (sk_redis_cmd(r, &stock, 2, argv, NULL, errstr, sizeof(errstr)) != SK_OK) {
                fprintf(stderr, PROG ": voucher show: redis: %s\n", errstr);
                rc = 1;
                goto done;
        }
        users = redis_int(r, "HLEN", users_key, -1);
        traces = redis_int(r, "HLEN", trace_key, -1);
        meta_ttl = redis_int(r, "PTTL", meta_key, -3);
        stock_ttl = redis_int(r, "PTTL", stock_key, -3);

        if (o->json) {
                cJSON *root = cJSON_CreateObject(), *d, *rd, *m;
                add_id(root, "voucherId", id);
                if (dberr == SK_OK) {
                        d = cJSON_AddObjectToObject(root, "db");
                        cJSON_AddNumberToObject(d, "initStock", (double)row.init_stock);
                        cJSON_AddNumberToObject(d, "stock", (double)row.stock);
                        cJSON_AddNumberToObject(d, "beginMs", (double)row.begin_ms);
                        cJSON_AddNumberToObject(d, "endMs", (double)row.end_ms);
                        cJSON_AddNumberToObject(d, "status", row.status);
                        cJSON_AddNumberToObject(d, "activeOrders", (double)active);
                        cJSON_AddNumberToObject(d, "outcomesCreated", (double)created);
                        cJSON_AddNumberToObject(d, "outcomesFailed", (double)failed);
                } else {
                        cJSON_AddNullToObject(root, "db");
                }
                rd = cJSON_AddObjectToObject(root, "redis");
                if (meta->type == REDIS_REPLY_ARRAY && meta->elements > 0) {
                        /* Values as Redis holds them (strings): no number conversion. */
                        m = cJSON_AddObjectToObject(rd, "meta");
                        for (size_t i = 0; i + 1 < meta->elements; i += 2)
                                if (meta->element[i]->type == REDIS_REPLY_STRING &&
                                    meta->element[i + 1]->type == REDIS_REPLY_STRING)
                                        cJSON_AddStringToObject(m, meta->element[i]->str,
                                                                meta->element[i + 1]->str);
                } else {
                        cJSON_AddNullToObject(rd, "meta");
                }
                if (stock->type == REDIS_REPLY_STRING)
                        cJSON_AddStringToObject(rd, "stock", stock->str);
                else
                        cJSON_AddNullToObject(rd, "stock");
                cJSON_AddNumberToObject(rd, "users", (double)users);
                cJSON_AddNumberToObject(rd, "traceEntries", (double)traces);
                cJSON_AddNumberToObject(rd, "metaTtlMs", (double)meta_ttl);
                cJSON_AddNumberToObject(rd, "stockTtlMs", (double)stock_ttl);
                print_json(root);
        } else {
                printf("voucher %" PRId64 "\n", id);
                if (dberr == SK_OK) {
                        fmt_time(row.begin_ms, t1, sizeof(t1));
                        fmt_time(row.end_ms, t2, sizeof(t2));
                        printf("  db     init_stock=%" PRId64 " stock=%" PRId64 " begin=%s end=%s "
                               "status=%d (%s) active_orders=%" PRId64 " outcomes_created=%"
                               PRId64 " outcomes_failed=%" PRId64 "\n",
                               row.init_stock, row.stock, t1, t2, row.status,
                               status_name(row.status), active, created, failed);
                } else {
                        printf("  db     (not in the database)\n");
                }
                printf("  redis  meta=");
                if (meta->type == REDIS_REPLY_ARRAY && meta->elements > 0) {
                        for (size_t i = 0; i + 1 < meta->elements; i += 2)
                                printf("%s%s:%s", i ? "," : "", meta->element[i]->str,
                                       meta->element[i + 1]->str);
                } else {
                        printf("(missing)");
                }
                printf(" stock=%s users=%lld trace_entries=%lld meta_ttl_ms=%lld "
                       "stock_ttl_ms=%lld\n",
                       stock->type == REDIS_REPLY_STRING ? stock->str : "(missing)", users,
                       traces, meta_ttl, stock_ttl);
                fflush(stdout);
        }
        if (dberr == SK_ENOTFOUND) {
                fprintf(stderr, PROG ": voucher show: voucher %" PRId64 " is not in the "
                        "database\n", id);
                rc = 2;
        }
done:
        if (meta)
                freeReplyObject(meta);
        if (stock)
                freeReplyObject(stock);
        sk_redis_close(r);
        sk_db_close(db);
        return rc;
}

/* ------------------------------------------------------------------ set-status */

int sk_admin_voucher_set_status(const sk_conf_t *conf, const char *ids, const char *sts)
{
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
