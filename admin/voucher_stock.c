/* voucher_stock.c: the DB side of a voucher's stock for seckill-admin (admin.h): the
 * voucher row with its bucket rows and switch row at creation, and add-stock
 * (DESIGN.md 6, 14). Every change is one transaction; nothing partial is left on an
 * error. A COMMIT whose outcome is unknown is resolved by reading what it wrote by its
 * unique key (DESIGN.md 16 "Errors", sk/db_outcome.h). Single-threaded (the admin). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "admin.h"
#include "sk/backoff.h"
#include "sk/buckets.h"
#include "sk/clock.h"
#include "sk/db.h"
#include "sk/db_outcome.h"
#include "sk/ids.h"
#include "sk/keys.h"
#include "sk/rebuild.h"

#define PROG "seckill-admin"
#define ADD_STOCK_TRIES 5     /* runs of a transaction (1213/1205, not applied), and of its resolution read */

/* The voucher row (its stock lives in the bucket rows, tb_seckill_stock; migration 0005
 * dropped the v3 `stock` column), with its price (minor units) and currency, fixed here
 * for the voucher's life (DESIGN.md 13). Times are written as UTC DATETIME(3) without
 * FROM_UNIXTIME (2038-limited on MariaDB 10.x): 1970-01-01 + ms * 1000 microseconds. */
static sk_err_t insert_voucher_row(sk_db_t *db, int64_t id, int64_t stock, int buckets,
                                   int64_t begin_ms, int64_t end_ms, int status,
                                   int64_t price_minor, const char *currency,
                                   const sk_admin_room_t *room,
                                   char *errstr, size_t errstr_size)
{
        static const char sql[] =
                "INSERT INTO tb_seckill_voucher"
                " (voucher_id, init_stock, buckets, begin_time, end_time, status, price_minor,"
                " currency, title, queue_mode, queue_open_s, queue_ttl_s, queue_overbook_pct,"
                " queue_rate) VALUES (?, ?, ?,"
                " TIMESTAMPADD(MICROSECOND, ? * 1000, '1970-01-01 00:00:00'),"
                " TIMESTAMPADD(MICROSECOND, ? * 1000, '1970-01-01 00:00:00'), ?, ?, ?,"
                " ?, ?, ?, ?, ?, ?)";
        const char *title = room && room->title ? room->title : "";

        /* the currency as its first 3 bytes (validated by the caller) */
        return sk_db_exec_args(db, sql, SK_ARGS(SK_I64(id), SK_I64(stock), SK_I64(buckets),
                                                SK_I64(begin_ms), SK_I64(end_ms), SK_I64(status),
                                                SK_I64(price_minor),
                                                SK_STRN(currency, strnlen(currency, 3)),
                                                SK_STRN(title, strlen(title)),
                                                SK_I64(room ? room->mode : 0),
                                                SK_I64(room ? room->open_s : 600),
                                                SK_I64(room ? room->ttl_s : 60),
                                                SK_I64(room ? room->overbook_pct : 125),
                                                SK_I64(room ? room->rate : 0)),
                               NULL, errstr, errstr_size);
}

/* After an unknown COMMIT: on a fresh session (wsrep_sync_wait = 1 on Galera), does
 * @p sql (SELECT COUNT(*) by the transaction's unique key, the one argument @p key) find
 * the row? *found = 1/0. Tried @p tries times with a backoff; an error leaves the outcome
 * unknown. */
static sk_err_t resolve_exists(sk_db_t *db, const char *sql, sk_db_arg_t key, int tries,
                               int *found, char *errstr, size_t errstr_size)
{
        uint64_t rng = sk_backoff_seed();
        sk_err_t err = SK_EAGAIN;
        int64_t n = 0;

        *found = 0;
        for (int i = 0; i < tries; i++) {
                if (i > 0)
                        sk_sleep_ms(sk_backoff_ms(i, 100, 2000, &rng), NULL);
                if ((err = sk_db_resolve_begin(db, errstr, errstr_size)) != SK_OK)
                        continue;
                err = sk_db_i64(db, sql, &key, 1, &n, NULL, errstr, errstr_size);
                sk_db_resolve_end(db);
                if (err == SK_OK) {
                        *found = n > 0;
                        break;
                }
        }
        return err;
}

/* The voucher-create transaction (DESIGN.md 6, 12, 14). SK_EUNKNOWN: the COMMIT's
 * outcome is unknown, the connection dropped; any other error rolled back. The reason
 * in @p why. */
static sk_err_t insert_voucher_txn(sk_db_t *db, int64_t id, int64_t stock, int buckets,
                                   int64_t begin_ms, int64_t end_ms, int status,
                                   int64_t price_minor, const char *currency,
                                   const sk_admin_room_t *room, char *why, size_t why_size)
{
        sk_err_t err;

        if ((err = sk_db_begin(db, why, why_size)) != SK_OK)
                return err;
        err = insert_voucher_row(db, id, stock, buckets, begin_ms, end_ms, status, price_minor,
                                 currency, room, why, why_size);
        for (int b = 0; err == SK_OK && b < buckets; b++) {
                int64_t share = sk_bucket_share(stock, buckets, b);
                int64_t v[4] = { id, b, share, share };

                err = sk_db_exec_i64(db, "INSERT INTO tb_seckill_stock"
                                     " (voucher_id, bucket, init_stock, stock) VALUES (?, ?, ?, ?)",
                                     v, 4, NULL, why, why_size);
        }
        if (err == SK_OK)
                err = sk_db_exec_i64(db, "INSERT INTO tb_seckill_switch (scope, mode, state, updated_by)"
                                     " VALUES (?, NULL, 'redis', 'voucher create')",
                                     &id, 1, NULL, why, why_size);
        if (err == SK_OK && (err = sk_db_commit_outcome(db, why, why_size)) == SK_EUNKNOWN)
                return err;
        if (err != SK_OK)
                sk_db_rollback(db);
        return err;
}

/* DESIGN.md 16 "Answers" (b): after a COMMIT read as not applied, the re-run of the
 * voucher create met the minted id's primary key: the lost COMMIT was still being
 * applied when it was read. The id is ours alone (minted for this run), so read the row
 * again with a read that waits for its lock (wsrep_sync_wait = 1 on Galera, within the
 * admin's 30 s): found → created (SK_OK); not found or unreadable → SK_EUNKNOWN naming
 * the id, never "failed". */
static sk_err_t rerun_met_voucher(sk_db_t *db, int64_t id, const char *lost, char *errstr,
                                  size_t errstr_size)
{
        char why[384] = "";
        int found = 0;
        sk_err_t err;

        err = resolve_exists(db, "SELECT COUNT(*) FROM tb_seckill_voucher WHERE voucher_id = ?"
                             " LOCK IN SHARE MODE", SK_I64(id), ADD_STOCK_TRIES, &found, why,
                             sizeof(why));
        fprintf(stderr, PROG ": voucher_create_rerun_resolved voucher_id=%" PRId64 " found=%d\n",
                id, err == SK_OK ? found : -1);
        if (err == SK_OK && found)
                return SK_OK;
        sk_seterr(errstr, errstr_size, "insert voucher %" PRId64 ": COMMIT outcome unknown (%s), "
                  "%s; `" PROG " voucher show %" PRId64 "` tells", id, lost,
                  err == SK_OK ? "its re-run met its key and no row is readable" : why, id);
        return SK_EUNKNOWN;
}

sk_err_t sk_admin_insert_voucher(sk_db_t *db, int64_t id, int64_t stock, int buckets,
                                 int64_t begin_ms, int64_t end_ms, int status,
                                 int64_t price_minor, const char *currency,
                                 const sk_admin_room_t *room,
                                 char *errstr, size_t errstr_size)
{
        char why[384] = "", lost[384] = "";
        uint64_t rng = sk_backoff_seed();
        sk_err_t err = SK_EAGAIN;
        int found = 0, was_lost = 0;

        if (buckets < 1 || buckets > SK_BUCKETS_MAX) {
                sk_seterr(errstr, errstr_size, "--buckets %d outside 1..%d", buckets, SK_BUCKETS_MAX);
                return SK_EINVAL;
        }
        /* DESIGN.md 16: 1213/1205 (or a link lost before COMMIT) -> the whole transaction
         * again; an unknown COMMIT -> read the minted id's voucher row (the bucket and
         * switch rows commit with it): found -> created; none -> again with the same id
         * (its primary key keeps a second copy out). */
        for (int run = 0; run < ADD_STOCK_TRIES; run++) {
                if (run > 0) {
                        sk_sleep_ms(sk_backoff_ms(run, 50, 1000, &rng), NULL);
                        if ((err = sk_db_reconnect(db, why, sizeof(why))) != SK_OK)
                                continue;
                }
                err = insert_voucher_txn(db, id, stock, buckets, begin_ms, end_ms, status,
                                         price_minor, currency, room, why, sizeof(why));
                if (err == SK_EAGAIN)
                        continue;
                if (err == SK_EEXIST && was_lost)
                        return rerun_met_voucher(db, id, lost, errstr, errstr_size);
                if (err != SK_EUNKNOWN)
                        break;
                snprintf(lost, sizeof(lost), "%s", why);
                err = resolve_exists(db, "SELECT COUNT(*) FROM tb_seckill_voucher"
                                     " WHERE voucher_id = ?", SK_I64(id), ADD_STOCK_TRIES, &found,
                                     why, sizeof(why));
                fprintf(stderr, PROG ": voucher_create_commit_unknown voucher_id=%" PRId64 " found=%d (%s)\n",
                        id, err == SK_OK ? found : -1, lost);
                if (err != SK_OK) {
                        sk_seterr(errstr, errstr_size, "insert voucher %" PRId64 ": COMMIT outcome "
                                  "unknown (%s), not readable: %s; `" PROG " voucher show %" PRId64
                                  "` tells", id, lost, why, id);
                        return SK_EUNKNOWN;
                }
                if (found)
                        return SK_OK;
                was_lost = 1;
                err = SK_EAGAIN;
        }
        if (err == SK_OK)
                return SK_OK;
        sk_seterr(errstr, errstr_size, "insert voucher: %s%s", why,
                  sk_db_errno(db) == 1146 ? " (run `" PROG " db migrate`)" : "");
        return err;
}

/* The add-stock transaction (DESIGN.md 14): *applied = 0 when @p rid was seen before
 * (nothing changed). Rolls back on any error. */
static sk_err_t add_stock_txn(sk_db_t *db, int64_t id, int64_t k, const char *rid, int *applied,
                              char *errstr, size_t errstr_size)
{
        int64_t buckets = 0, affected = 0;
        sk_err_t err;

        *applied = 0;
        if ((err = sk_db_begin(db, errstr, errstr_size)) != SK_OK)
                return err;
        if ((err = sk_db_i64(db, "SELECT buckets FROM tb_seckill_voucher WHERE voucher_id = ?"
                             " FOR UPDATE", SK_ARGS(SK_I64(id)), &buckets, NULL, errstr,
                             errstr_size)) != SK_OK)
                goto fail;
        if (buckets < 1 || buckets > SK_BUCKETS_MAX) {
                sk_seterr(errstr, errstr_size, "voucher %" PRId64 " has %" PRId64 " buckets", id, buckets);
                err = SK_EDB;
                goto fail;
        }
        if ((err = sk_db_exec_args(db, "INSERT IGNORE INTO tb_seckill_stock_change (request_id,"
                                   " voucher_id, amount) VALUES (?, ?, ?)",
                                   SK_ARGS(SK_STR(rid), SK_I64(id), SK_I64(k)), &affected, errstr,
                                   errstr_size)) != SK_OK)
                goto fail;
        if (affected == 0) { /* a repeat of R: nothing changes */
                sk_db_rollback(db);
                return SK_OK;
        }
        for (int b = 0; b < (int)buckets; b++) {
                int64_t share = sk_bucket_share(k, (int)buckets, b);
                int64_t v[4] = { share, share, id, b };

                err = sk_db_exec_i64(db, "UPDATE tb_seckill_stock SET init_stock = init_stock + ?,"
                                     " stock = stock + ? WHERE voucher_id = ? AND bucket = ?",
                                     v, 4, &affected, errstr, errstr_size);
                if (err == SK_OK && affected != 1) {
                        sk_seterr(errstr, errstr_size, "bucket row %d of voucher %" PRId64 " missing", b, id);
                        err = SK_EDB;
                }
                if (err != SK_OK)
                        goto fail;
        }
        {
                int64_t v[2] = { k, id };
                if ((err = sk_db_exec_i64(db, "UPDATE tb_seckill_voucher SET init_stock = init_stock + ?"
                                          " WHERE voucher_id = ?", v, 2, NULL, errstr,
                                          errstr_size)) != SK_OK)
                        goto fail;
        }
        /* DESIGN.md 16: 1213/1205 -> SK_EAGAIN (rolled back); another error or a lost
         * link -> SK_EUNKNOWN, the connection dropped (add_stock resolves it). */
        if ((err = sk_db_commit_outcome(db, errstr, errstr_size)) == SK_EUNKNOWN)
                return err;
        if (err != SK_OK)
                goto fail;
        *applied = 1;
        return SK_OK;
fail:
        sk_db_rollback(db);
        return err;
}

/* add-stock's DB part with DESIGN.md 16's classes: 1213/1205 and other transient errors
 * -> the whole transaction again (ADD_STOCK_TRIES runs, backoff between); an unknown
 * COMMIT -> read the request id's row (found: applied, continue; not found: the same
 * transaction again with the same request id, which the INSERT IGNORE on its PK keeps
 * from ever applying twice). *applied as add_stock_txn's. SK_EUNKNOWN when the outcome
 * could not be read back (the operator re-runs with the same --request-id). */
/* DESIGN.md 16 "Answers" (b): after a COMMIT read as not applied, the re-run found
 * request id @p rid recorded: the lost COMMIT was still being applied when it was read.
 * A duplicate request id is success when its voucher and amount match (read with a
 * locking read, wsrep_sync_wait = 1 on Galera): *applied = 1, SK_OK; another voucher or
 * amount → SK_EEXIST; unreadable → SK_EUNKNOWN. */
static sk_err_t rerun_met_change(sk_db_t *db, int64_t id, int64_t k, const char *rid,
                                 int *applied, char *errstr, size_t errstr_size)
{
        uint64_t rng = sk_backoff_seed();
        int64_t same = 0;
        sk_err_t err = SK_EAGAIN;

        for (int i = 0; i < ADD_STOCK_TRIES && err != SK_OK; i++) {
                if (i > 0)
                        sk_sleep_ms(sk_backoff_ms(i, 100, 2000, &rng), NULL);
                if ((err = sk_db_resolve_begin(db, errstr, errstr_size)) != SK_OK)
                        continue;
                err = sk_db_i64(db, "SELECT voucher_id = ? AND amount = ? FROM"
                                " tb_seckill_stock_change WHERE request_id = ? LOCK IN SHARE MODE",
                                SK_ARGS(SK_I64(id), SK_I64(k), SK_STR(rid)), &same, NULL, errstr,
                                errstr_size);
                sk_db_resolve_end(db);
        }
        fprintf(stderr, PROG ": add_stock_rerun_resolved request_id=%s match=%d\n", rid,
                err == SK_OK ? (int)same : -1);
        if (err == SK_OK && same) {
                *applied = 1;
                return SK_OK;
        }
        if (err == SK_OK) {
                sk_seterr(errstr, errstr_size, "request id %s is recorded for another voucher or "
                          "amount", rid);
                return SK_EEXIST;
        }
        sk_seterr(errstr, errstr_size, "COMMIT outcome unknown, not readable: %s; re-run with "
                  "the same --request-id", errstr);
        return SK_EUNKNOWN;
}

static sk_err_t add_stock(sk_db_t *db, int64_t id, int64_t k, const char *rid, int *applied,
                          char *errstr, size_t errstr_size)
{
        uint64_t rng = sk_backoff_seed();
        sk_err_t err = SK_EAGAIN;
        int was_lost = 0;

        *applied = 0;
        for (int run = 0; run < ADD_STOCK_TRIES; run++) {
                char why[512] = "";
                int found = 0;

                /* A run after a failed one starts on a fresh session (a 2006/2013 leaves
                 * the handle looking connected; the writer node may have changed). */
                if (run > 0) {
                        sk_sleep_ms(sk_backoff_ms(run, 50, 1000, &rng), NULL);
                        if ((err = sk_db_reconnect(db, errstr, errstr_size)) != SK_OK)
                                continue;
                }
                err = add_stock_txn(db, id, k, rid, applied, errstr, errstr_size);
                if (err == SK_EAGAIN)
                        continue;       /* rolled back: the whole transaction again */
                if (err == SK_OK && !*applied && was_lost)
                        return rerun_met_change(db, id, k, rid, applied, errstr, errstr_size);
                if (err != SK_EUNKNOWN)
                        return err;
                snprintf(why, sizeof(why), "%s", errstr);
                err = resolve_exists(db, "SELECT COUNT(*) FROM tb_seckill_stock_change"
                                     " WHERE request_id = ?", SK_STR(rid), ADD_STOCK_TRIES, &found,
                                     errstr, errstr_size);
                fprintf(stderr, PROG ": add_stock_commit_unknown request_id=%s found=%d (%s)\n",
                        rid, err == SK_OK ? found : -1, why);
                if (err != SK_OK) {
                        sk_seterr(errstr, errstr_size, "COMMIT outcome unknown (%s), not readable: %s; "
                                  "re-run with the same --request-id", why, errstr);
                        return SK_EUNKNOWN;
                }
                if (found) {
                        *applied = 1;
                        return SK_OK;
                }
                was_lost = 1;
                err = SK_EAGAIN;        /* not applied: the same transaction again */
        }
        return err;
}

int sk_admin_voucher_add_stock(const sk_conf_t *conf, const sk_admin_opts_t *o)
{
        const char *ids = o->args[0];
        char errstr[512];
        int64_t id;
        int applied = 0, rc;
        sk_db_t *db;
        sk_rebuild_report_t rep;
        sk_err_t err;
        size_t rlen = strlen(o->request_id);

        if (sk_id_parse_cstr(ids, &id) != 0) {
                fprintf(stderr, PROG ": \"%s\" is not a voucher id\n", ids);
                return 2;
        }
        if (o->stock < 1 || rlen < 1 || rlen > 64) {
                fprintf(stderr, PROG ": voucher add-stock: --stock K (1..1000000000) and "
                        "--request-id R (1..64 chars) are required\n");
                return 2;
        }
        if (!(db = sk_db_connect(&conf->mysql, 0, 5, errstr, sizeof(errstr)))) {
                fprintf(stderr, PROG ": voucher add-stock: database: %s\n", errstr);
                return 1;
        }
        err = add_stock(db, id, o->stock, o->request_id, &applied, errstr, sizeof(errstr));
        sk_db_close(db);
        if (err == SK_ENOTFOUND) {
                fprintf(stderr, PROG ": voucher add-stock: voucher %" PRId64 " is not in the database\n", id);
                return 2;
        }
        if (err != SK_OK) {
                fprintf(stderr, PROG ": voucher add-stock: %s\n", errstr);
                return 1;
        }
        /* Then the rebuild (DESIGN.md 14: brief pause, Redis set from the DB), also after a
         * repeat, so a run interrupted between the commit and the rebuild completes. */
        err = sk_rebuild_voucher(conf, id, o->wait_ms, &rep, errstr, sizeof(errstr));
        rc = err == SK_OK ? 0 : (err == SK_EAGAIN || err == SK_EINVAL || err == SK_EEXIST) ? 2 : 1;
        printf("{\"voucherId\":\"%" PRId64 "\",\"applied\":%s,\"rebuilt\":%s}\n",
               id, applied ? "true" : "false", err == SK_OK ? "true" : "false");
        if (!applied)
                fprintf(stderr, PROG ": voucher add-stock: request id already applied; nothing changed\n");
        if (err != SK_OK)
                fprintf(stderr, PROG ": voucher add-stock: committed, rebuild failed: %s\n", errstr);
        return rc;
}
