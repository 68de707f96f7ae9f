/* 0201_db_conn.c: sk/db.h, sk/migrate.h and sk_voucher_get against the real MariaDB.
 * A unique database per run (sk_test_conf). Checks: connect + session settings (UTC,
 * lock wait timeout, READ COMMITTED) survive a reconnect; sk_db_query_i64 (value,
 * NULL, no row); bound parameters (sk_db_exec_args, sk_db_row1_cols, sk_db_i64: typed
 * arguments, text and integer columns, argument count, identifiers); duplicate key
 * 1062 -> SK_EEXIST; lock wait 1205 -> SK_EAGAIN with two connections and SELECT ...
 * FOR UPDATE under innodb_lock_wait_timeout=1; tb_lock rows (sk/dblock.h)
 * held/timeout/release, also for names longer than 191 chars; migrate twice (second
 * applies 0); voucher times round-trip past 2038. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "sk_test.h"
#include "sk/clock.h"
#include "sk/db.h"
#include "sk/dblock.h"
#include "sk/migrate.h"
#include "sk/rebuild.h"

static sk_db_t *connect_or_fail(int lock_wait_s)
{
        char errstr[512] = "";
        sk_db_t *db = sk_db_connect(&sk_test_fx.conf.mysql, 0, lock_wait_s, errstr, sizeof(errstr));
        ck_assert_msg(db != NULL, "connect: %s", errstr);
        return db;
}

START_TEST(classify_table)
{
        ck_assert_int_eq(sk_db_classify(0), SK_OK);
        ck_assert_int_eq(sk_db_classify(1062), SK_EEXIST);
        ck_assert_int_eq(sk_db_classify(1205), SK_EAGAIN);
        ck_assert_int_eq(sk_db_classify(1615), SK_EAGAIN);
        ck_assert_int_eq(sk_db_classify(1047), SK_EAGAIN);   /* Galera node not ready (§16) */
        ck_assert_int_eq(sk_db_classify(1290), SK_EAGAIN);   /* server went read-only */
        ck_assert_int_eq(sk_db_classify(1213), SK_EAGAIN);
        ck_assert_int_eq(sk_db_classify(2006), SK_EAGAIN);
        ck_assert_int_eq(sk_db_classify(2013), SK_EAGAIN);
        ck_assert_int_eq(sk_db_classify(2002), SK_EAGAIN);
        ck_assert_int_eq(sk_db_classify(2003), SK_EAGAIN);
        ck_assert_int_eq(sk_db_classify(1927), SK_EAGAIN);
        ck_assert_int_eq(sk_db_classify(1053), SK_EAGAIN);
        ck_assert_int_eq(sk_db_classify(4031), SK_EAGAIN);
        ck_assert_int_eq(sk_db_classify(1054), SK_EDB);
        ck_assert_int_eq(sk_db_classify(1366), SK_EDB);
        ck_assert_int_eq(sk_db_classify(1406), SK_EDB);
}
END_TEST

START_TEST(session_settings_and_reconnect)
{
        char errstr[512] = "";
        sk_db_t *db = connect_or_fail(1);
        int64_t v = -1;
        int is_null = -1;

        for (int round = 0; round < 2; round++) {
                ck_assert_int_eq(sk_db_query_i64(db, "SELECT @@SESSION.innodb_lock_wait_timeout",
                                                 &v, NULL, errstr, sizeof(errstr)), SK_OK);
                ck_assert_int_eq(v, 1);
                /* UTC session: NOW() equals UTC_TIMESTAMP(). */
                ck_assert_int_eq(sk_db_query_i64(db, "SELECT NOW(3) = UTC_TIMESTAMP(3)", &v,
                                                 NULL, errstr, sizeof(errstr)), SK_OK);
                ck_assert_int_eq(v, 1);
                ck_assert_int_eq(sk_db_query_i64(db,
                        "SELECT @@SESSION.tx_isolation = 'READ-COMMITTED'", &v, NULL, errstr,
                        sizeof(errstr)), SK_OK);
                ck_assert_int_eq(v, 1);
                ck_assert_int_eq(sk_db_query_i64(db, "SELECT @@SESSION.sql_mode LIKE "
                        "'%STRICT_TRANS_TABLES%'", &v, NULL, errstr, sizeof(errstr)), SK_OK);
                ck_assert_int_eq(v, 1);
                ck_assert_msg(sk_db_reconnect(db, errstr, sizeof(errstr)) == SK_OK, "%s", errstr);
        }
        /* Values, NULL, no row, non-integers, the full BIGINT range. */
        ck_assert_int_eq(sk_db_query_i64(db, "SELECT NULL", &v, &is_null, errstr,
                                         sizeof(errstr)), SK_OK);
        ck_assert_int_eq(is_null, 1);
        ck_assert_int_eq(sk_db_query_i64(db, "SELECT 9223372036854775807", &v, &is_null,
                                         errstr, sizeof(errstr)), SK_OK);
        ck_assert_int_eq(is_null, 0);
        ck_assert(v == INT64_MAX);
        ck_assert_int_eq(sk_db_query_i64(db, "SELECT -9223372036854775808", &v, NULL, errstr,
                                         sizeof(errstr)), SK_OK);
        ck_assert(v == INT64_MIN);
        ck_assert_int_eq(sk_db_query_i64(db, "SELECT 1 FROM DUAL WHERE 1 = 0", &v, NULL, errstr,
                                         sizeof(errstr)), SK_ENOTFOUND);
        ck_assert_int_eq(sk_db_query_i64(db, "SELECT 'x1'", &v, NULL, errstr, sizeof(errstr)),
                         SK_EDB);
        /* Several columns: values, NULLs in the mask, too few columns, bad counts. */
        {
                int64_t row[3] = { 7, 7, 7 };
                unsigned mask = 99;

                ck_assert_int_eq(sk_db_query_row_i64(db, "SELECT -5, NULL, 9223372036854775807",
                                                     row, 3, &mask, errstr, sizeof(errstr)), SK_OK);
                ck_assert(row[0] == -5 && row[1] == 0 && row[2] == INT64_MAX);
                ck_assert_uint_eq(mask, 2u);
                ck_assert_int_eq(sk_db_query_row_i64(db, "SELECT 1, 2", row, 3, NULL, errstr,
                                                     sizeof(errstr)), SK_EDB);
                ck_assert_int_eq(sk_db_query_row_i64(db, "SELECT 1, 'x'", row, 2, NULL, errstr,
                                                     sizeof(errstr)), SK_EDB);
                ck_assert_int_eq(sk_db_query_row_i64(db, "SELECT 1 FROM DUAL WHERE 1 = 0", row, 1,
                                                     NULL, errstr, sizeof(errstr)), SK_ENOTFOUND);
                ck_assert_int_eq(sk_db_query_row_i64(db, "SELECT 1", row, 0, NULL, errstr,
                                                     sizeof(errstr)), SK_EINVAL);
        }
        /* A syntax error is permanent, with the server's text. */
        ck_assert_int_eq(sk_db_exec(db, "SELEKT 1", errstr, sizeof(errstr)), SK_EDB);
        ck_assert_ptr_nonnull(strstr(errstr, "1064"));
        sk_db_close(db);
        sk_db_close(NULL);
}
END_TEST

/* Bound parameters (sk/db.h): typed arguments (BIGINT, strings with any byte, NULL), the
 * one-row readers (integers, text, NULLs, no row, a value that is no integer, too few
 * columns, a wrong argument count), exec's rows changed and its duplicate key. */
START_TEST(bound_args)
{
        static const char odd[] = "it's \\ \"q\" `x` -- ;";
        char errstr[512] = "", s1[64], s2[4];
        sk_db_t *db = connect_or_fail(0);
        int64_t v = 0, row[3] = { 7, 7, 7 }, n = 0;
        unsigned mask = 99;
        int is_null = -1;

        ck_assert_msg(sk_db_i64(db, "SELECT ? + 1", SK_ARGS(SK_I64(INT64_MAX - 1)), &v, &is_null,
                                errstr, sizeof(errstr)) == SK_OK, "%s", errstr);
        ck_assert(v == INT64_MAX && is_null == 0);
        ck_assert_int_eq(sk_db_i64(db, "SELECT ?", SK_ARGS(SK_NULL), &v, &is_null, errstr,
                                   sizeof(errstr)), SK_OK);
        ck_assert(v == 0 && is_null == 1);
        ck_assert_int_eq(sk_db_i64(db, "SELECT ? = 'it''s \\\\ \"q\" `x` -- ;'",
                                   SK_ARGS(SK_STR(odd)), &v, NULL, errstr, sizeof(errstr)), SK_OK);
        ck_assert_int_eq(v, 1);
        ck_assert_int_eq(sk_db_i64(db, "SELECT 1 FROM DUAL WHERE ? = 2", SK_ARGS(SK_I64(1)), &v,
                                   NULL, errstr, sizeof(errstr)), SK_ENOTFOUND);
        ck_assert_int_eq(sk_db_i64(db, "SELECT 'x1'", SK_NOARGS, &v, NULL, errstr,
                                   sizeof(errstr)), SK_EDB);
        ck_assert_int_eq(sk_db_i64(db, "SELECT 2.5", SK_NOARGS, &v, NULL, errstr,
                                   sizeof(errstr)), SK_EDB);
        ck_assert_int_eq(sk_db_i64(db, "SELECT ?, ?", SK_ARGS(SK_I64(1)), &v, NULL, errstr,
                                   sizeof(errstr)), SK_EINVAL);
        ck_assert_int_eq(sk_db_row1(db, "SELECT ?, NULL, ?", SK_ARGS(SK_I64(-5), SK_I64(INT64_MIN)),
                                    row, 3, &mask, errstr, sizeof(errstr)), SK_OK);
        ck_assert(row[0] == -5 && row[1] == 0 && row[2] == INT64_MIN);
        ck_assert_uint_eq(mask, 2u);
        ck_assert_int_eq(sk_db_row1(db, "SELECT 1, 2", SK_NOARGS, row, 3, NULL, errstr,
                                    sizeof(errstr)), SK_EDB);
        ck_assert_int_eq(sk_db_row1(db, "SELECT 1", SK_NOARGS, row, 0, NULL, errstr,
                                    sizeof(errstr)), SK_EINVAL);
        /* Text and integer columns; the first row of several; a long value cut. */
        {
                sk_db_col_t c[3] = { SK_COL_STR(s1, sizeof(s1)), SK_COL_I64(&v), SK_COL_STR(s2, sizeof(s2)) };

                ck_assert_msg(sk_db_row1_cols(db, "SELECT CONCAT(?, 'z'), ? * 2, 'abcdef'"
                                              " UNION ALL SELECT 'no', 0, 'no'",
                                              SK_ARGS(SK_STR(odd), SK_I64(21)), c, 3, &mask, errstr,
                                              sizeof(errstr)) == SK_OK, "%s", errstr);
                ck_assert_str_eq(s1, "it's \\ \"q\" `x` -- ;z");
                ck_assert_int_eq(v, 42);
                ck_assert_str_eq(s2, "abc");
                ck_assert_uint_eq(mask, 0u);
                ck_assert_int_eq(sk_db_row1_cols(db, "SELECT NULL, 5, 'a'", SK_NOARGS, c, 3, &mask,
                                                 errstr, sizeof(errstr)), SK_OK);
                ck_assert(s1[0] == '\0' && v == 5 && mask == 1u);
        }
        /* exec: rows changed, a duplicate key, identifiers. */
        ck_assert_int_eq(sk_db_exec(db, "CREATE TEMPORARY TABLE t_args (id BIGINT PRIMARY KEY,"
                                    " s VARCHAR(64) NULL)", errstr, sizeof(errstr)), SK_OK);
        ck_assert_msg(sk_db_exec_args(db, "INSERT INTO t_args VALUES (?, ?), (?, ?)",
                                      SK_ARGS(SK_I64(1), SK_STR(odd), SK_I64(2), SK_NULL), &n,
                                      errstr, sizeof(errstr)) == SK_OK, "%s", errstr);
        ck_assert_int_eq(n, 2);
        ck_assert_int_eq(sk_db_exec_args(db, "INSERT INTO t_args VALUES (?, 'x')",
                                         SK_ARGS(SK_I64(1)), NULL, errstr, sizeof(errstr)),
                         SK_EEXIST);
        ck_assert_uint_eq(sk_db_errno(db), 1062); /* kept after the statement was closed */
        ck_assert_int_eq(sk_db_row1_cols(db, "SELECT id FROM t_args_missing WHERE id = ?",
                                         SK_ARGS(SK_I64(1)), (sk_db_col_t[]){ SK_COL_I64(&v) }, 1,
                                         NULL, errstr, sizeof(errstr)), SK_EDB);
        ck_assert_uint_eq(sk_db_errno(db), 1146);
        ck_assert_int_eq(sk_db_i64(db, "SELECT COUNT(*) FROM t_args WHERE s = ? OR s IS NULL",
                                   SK_ARGS(SK_STRN(odd, strlen(odd))), &v, NULL, errstr,
                                   sizeof(errstr)), SK_OK);
        ck_assert_int_eq(v, 2);
        ck_assert_int_eq(sk_db_exec_ident(db, "SELECT 1 FROM ", "no`pe", "", errstr,
                                          sizeof(errstr)), SK_EINVAL);
        ck_assert_int_eq(sk_db_exec_ident(db, "SELECT COUNT(*) FROM ", "t_args", "", errstr,
                                          sizeof(errstr)), SK_OK);
        sk_db_close(db);
}
END_TEST

/* The connection API for statement and result-set users (the handle stays opaque):
 * generation, errors, prepare, stored results, select_db, ping. */
START_TEST(connection_api)
{
        char errstr[512] = "";
        sk_db_t *db = connect_or_fail(0);
        MYSQL_STMT *stmt = NULL;
        MYSQL_RES *res = NULL;
        MYSQL_ROW row;
        uint64_t gen;

        ck_assert_int_eq(sk_db_connected(db), 1);
        ck_assert_int_eq(sk_db_connected(NULL), 0);
        ck_assert_int_eq(sk_db_ping(db), 1);
        gen = sk_db_generation(db);
        ck_assert_uint_ge(gen, 1);
        ck_assert_msg(sk_db_reconnect(db, errstr, sizeof(errstr)) == SK_OK, "%s", errstr);
        ck_assert_uint_eq(sk_db_generation(db), gen + 1);
        /* errors: number, text, class */
        ck_assert_int_eq(sk_db_exec(db, "SELECT * FROM no_such_table", errstr, sizeof(errstr)), SK_EDB);
        ck_assert_uint_eq(sk_db_errno(db), 1146);
        ck_assert_ptr_nonnull(strstr(sk_db_error(db), "no_such_table"));
        ck_assert_int_eq(sk_db_seterr(db, "probe", errstr, sizeof(errstr)), SK_EDB);
        ck_assert_ptr_nonnull(strstr(errstr, "probe: mysql error 1146"));
        ck_assert_uint_eq(sk_db_errno(NULL), 2006);
        ck_assert_int_eq(sk_db_seterr(NULL, "x", errstr, sizeof(errstr)), SK_EAGAIN);
        /* prepare: good and bad */
        ck_assert_int_eq(sk_db_prepare(db, "SELECT ?", 8, &stmt, errstr, sizeof(errstr)), SK_OK);
        ck_assert_ptr_nonnull(stmt);
        ck_assert_uint_eq(mysql_stmt_param_count(stmt), 1);
        mysql_stmt_close(stmt);
        ck_assert_int_eq(sk_db_prepare(db, "SELEKT ?", 8, &stmt, errstr, sizeof(errstr)), SK_EDB);
        ck_assert_ptr_null(stmt);
        ck_assert_ptr_nonnull(strstr(errstr, "1064"));
        ck_assert_int_eq(sk_db_stmt_init(db, &stmt, errstr, sizeof(errstr)), SK_OK);
        mysql_stmt_close(stmt);
        /* stored results */
        {
                static const char q[] = "SELECT 7, 'x' UNION ALL SELECT 8, 'y'";

                ck_assert_int_eq(sk_db_query(db, q, strlen(q), &res, errstr, sizeof(errstr)), SK_OK);
        }
        ck_assert_uint_eq(mysql_num_rows(res), 2);
        row = mysql_fetch_row(res);
        ck_assert_str_eq(row[0], "7");
        mysql_free_result(res);
        ck_assert_int_eq(sk_db_query(db, "DO 1", 4, &res, errstr, sizeof(errstr)), SK_EDB);
        ck_assert_ptr_null(res);
        /* select_db */
        ck_assert_int_eq(sk_db_select_db(db, "no_such_db_skt", errstr, sizeof(errstr)), SK_EDB);
        ck_assert_msg(sk_db_select_db(db, sk_test_fx.conf.mysql.database, errstr,
                                      sizeof(errstr)) == SK_OK,
                      "%s", errstr);
        sk_db_close(db);
}
END_TEST

/* sk_db_connect_io: a statement that hangs (a table lock held by another session)
 * gives up after the short I/O timeout with a transient error, not after 30 s. */
START_TEST(short_io_timeout)
{
        char errstr[512] = "";
        sk_db_t *a = connect_or_fail(0), *b;
        int64_t v = 0, t0;
        sk_err_t err;

        ck_assert_msg(sk_db_exec(a, "CREATE TABLE IF NOT EXISTS t_io (id INT PRIMARY KEY)", errstr,
                                 sizeof(errstr)) == SK_OK, "%s", errstr);
        ck_assert_msg(sk_db_exec(a, "LOCK TABLES t_io WRITE", errstr, sizeof(errstr)) == SK_OK, "%s",
                      errstr);
        b = sk_db_connect_io(&sk_test_fx.conf.mysql, 0, 0, 1, errstr, sizeof(errstr));
        ck_assert_msg(b != NULL, "%s", errstr);
        t0 = sk_mono_ms();
        err = sk_db_query_i64(b, "SELECT COUNT(*) FROM t_io", &v, NULL, errstr, sizeof(errstr));
        ck_assert_int_eq(err, SK_EAGAIN);
        ck_assert_int_lt(sk_mono_ms() - t0, 10000);
        ck_assert_ptr_null(sk_db_connect_io(&sk_test_fx.conf.mysql, 0, 0, 0, errstr,
                                            sizeof(errstr)));
        sk_db_close(b);
        sk_db_close(a);
}
END_TEST

START_TEST(duplicate_key_is_eexist)
{
        char errstr[512] = "";
        sk_db_t *db = connect_or_fail(1);

        ck_assert_msg(sk_db_exec(db, "CREATE TABLE t_dup (id BIGINT NOT NULL PRIMARY KEY) "
                                 "ENGINE=InnoDB", errstr, sizeof(errstr)) == SK_OK, "%s", errstr);
        ck_assert_int_eq(sk_db_exec(db, "INSERT INTO t_dup VALUES (9223372036854775807)",
                                    errstr, sizeof(errstr)), SK_OK);
        ck_assert_int_eq(sk_db_exec(db, "INSERT INTO t_dup VALUES (9223372036854775807)",
                                    errstr, sizeof(errstr)), SK_EEXIST);
        ck_assert_int_eq(sk_db_last_err(db), SK_EEXIST);
        ck_assert_ptr_nonnull(strstr(errstr, "1062"));
        sk_db_close(db);
}
END_TEST

START_TEST(lock_wait_is_eagain)
{
        char errstr[512] = "";
        sk_db_t *a = connect_or_fail(1), *b = connect_or_fail(1);
        int64_t v = 0;

        ck_assert_msg(sk_db_exec(a, "CREATE TABLE t_lock (id BIGINT NOT NULL PRIMARY KEY, "
                                 "n INT NOT NULL) ENGINE=InnoDB", errstr, sizeof(errstr)) == SK_OK,
                      "%s", errstr);
        ck_assert_int_eq(sk_db_exec(a, "INSERT INTO t_lock VALUES (1, 0)", errstr,
                                    sizeof(errstr)), SK_OK);
        ck_assert_int_eq(sk_db_begin(a, errstr, sizeof(errstr)), SK_OK);
        ck_assert_int_eq(sk_db_query_i64(a, "SELECT n FROM t_lock WHERE id = 1 FOR UPDATE", &v,
                                         NULL, errstr, sizeof(errstr)), SK_OK);
        ck_assert_int_eq(sk_db_begin(b, errstr, sizeof(errstr)), SK_OK);
        ck_assert_int_eq(sk_db_query_i64(b, "SELECT n FROM t_lock WHERE id = 1 FOR UPDATE", &v,
                                         NULL, errstr, sizeof(errstr)), SK_EAGAIN);
        ck_assert_ptr_nonnull(strstr(errstr, "1205"));
        sk_db_rollback(b);
        ck_assert_int_eq(sk_db_exec(a, "UPDATE t_lock SET n = 5 WHERE id = 1", errstr,
                                    sizeof(errstr)), SK_OK);
        ck_assert_int_eq(sk_db_commit(a, errstr, sizeof(errstr)), SK_OK);
        /* After the commit b sees the row (READ COMMITTED) and may lock it. */
        ck_assert_int_eq(sk_db_begin(b, errstr, sizeof(errstr)), SK_OK);
        ck_assert_int_eq(sk_db_query_i64(b, "SELECT n FROM t_lock WHERE id = 1 FOR UPDATE", &v,
                                         NULL, errstr, sizeof(errstr)), SK_OK);
        ck_assert_int_eq(v, 5);
        sk_db_rollback(b);
        sk_db_close(a);
        sk_db_close(b);
}
END_TEST

START_TEST(advisory_locks)
{
        char errstr[512] = "", longname[512];
        const char *names[2];

        snprintf(longname, sizeof(longname), "seckill:voucher:%s:%s:%s%s",
                 sk_test_fx.conf.mysql.database, sk_test_fx.conf.redis_prefix,
                 "1990653204235288579-and-a-long-tail-beyond-191-chars",
                 "-------------------------------------------------------------------------"
                 "-------------------------------------------------------------------------");
        ck_assert_int_gt((int)strlen(longname), SK_DBLOCK_NAME_MAX);
        names[0] = "seckill:test:short";
        names[1] = longname;
        for (int i = 0; i < 2; i++) {
                sk_dblock_t *a = sk_dblock_open(&sk_test_fx.conf.mysql, names[i], 5000, errstr,
                                                sizeof(errstr));
                sk_dblock_t *b = sk_dblock_open(&sk_test_fx.conf.mysql, names[i], 5000, errstr,
                                                sizeof(errstr));

                ck_assert_msg(a && b, "%s", errstr);
                ck_assert_msg(sk_dblock_take(a, 0, errstr, sizeof(errstr)) == SK_OK, "%s", errstr);
                ck_assert_int_eq(sk_dblock_take(b, 300, errstr, sizeof(errstr)), SK_EAGAIN);
                ck_assert_int_eq(sk_dblock_busy(b), 1);
                ck_assert_int_eq(sk_dblock_check(b, errstr, sizeof(errstr)), SK_ENOTFOUND);
                ck_assert_int_eq(sk_dblock_check(a, errstr, sizeof(errstr)), SK_OK);
                sk_dblock_release(a);
                ck_assert_int_eq(sk_dblock_take(b, 0, errstr, sizeof(errstr)), SK_OK);
                ck_assert_int_eq(sk_dblock_check(a, errstr, sizeof(errstr)), SK_ENOTFOUND);
                sk_dblock_close(a);
                sk_dblock_close(b);
        }
        ck_assert_ptr_null(sk_dblock_open(&sk_test_fx.conf.mysql, "", 5000, errstr,
                                          sizeof(errstr)));
}
END_TEST

START_TEST(migrate_twice_and_voucher_times)
{
        char errstr[512] = "";
        int applied = -1;
        sk_db_t *db;
        sk_voucher_row_t row;
        int64_t n = 0;

        /* The fixture migrated once already: nothing left to apply. */
        ck_assert_int_eq(sk_migrate(&sk_test_fx.conf.mysql, &applied, errstr, sizeof(errstr)),
                         SK_OK);
        ck_assert_int_eq(applied, 0);
        db = connect_or_fail(1);
        ck_assert_int_eq(sk_db_query_i64(db, "SELECT COUNT(*) FROM schema_migrations", &n,
                                         NULL, errstr, sizeof(errstr)), SK_OK);
        ck_assert_int_eq(n, (int64_t)sk_nmigrations);
        /* 2040-01-01T00:00:00.123Z .. 2040-01-02T00:00:00Z: beyond the 2038 limit of
         * FROM_UNIXTIME/UNIX_TIMESTAMP on MariaDB 10.x. */
        ck_assert_msg(sk_db_exec(db, "INSERT INTO tb_seckill_voucher (voucher_id, init_stock, "
                "begin_time, end_time, status) VALUES (9223372036854775807, 10, "
                "'2040-01-01 00:00:00.123', '2040-01-02 00:00:00.000', 1)", errstr,
                sizeof(errstr)) == SK_OK, "%s", errstr);
        ck_assert_msg(sk_db_exec(db, "INSERT INTO tb_seckill_stock (voucher_id, bucket, init_stock, stock)"
                " VALUES (9223372036854775807, 0, 10, 7)", errstr, sizeof(errstr)) == SK_OK, "%s", errstr);
        ck_assert_msg(sk_voucher_get(db, INT64_MAX, 0, &row, errstr, sizeof(errstr)) == SK_OK,
                      "%s", errstr);
        ck_assert(row.voucher_id == INT64_MAX);
        ck_assert_int_eq(row.init_stock, 10);
        ck_assert_int_eq(row.stock, 7);
        ck_assert(row.begin_ms == INT64_C(2208988800123));
        ck_assert(row.end_ms == INT64_C(2209075200000));
        ck_assert_int_eq(row.status, 1);
        ck_assert_int_eq(sk_voucher_get(db, 42, 0, &row, errstr, sizeof(errstr)), SK_ENOTFOUND);
        /* The schema's CHECK refuses negative stock. */
        ck_assert_int_eq(sk_db_exec(db, "UPDATE tb_seckill_stock SET stock = -1",
                                    errstr, sizeof(errstr)), SK_EDB);
        sk_db_close(db);
}
END_TEST

START_TEST(connect_refused)
{
        char errstr[512] = "";
        sk_mysql_url_t bad = sk_test_fx.conf.mysql;
        sk_db_t *db;

        bad.port = 1; /* nothing listens there */
        snprintf(bad.host, sizeof(bad.host), "127.0.0.1");
        bad.nhosts = 1;  /* one host even when the run's URL lists several (label galera) */
        bad.hosts[0].port = 1;
        snprintf(bad.hosts[0].host, sizeof(bad.hosts[0].host), "127.0.0.1");
        db = sk_db_connect(&bad, 0, 0, errstr, sizeof(errstr));
        ck_assert_ptr_null(db);
        ck_assert_ptr_nonnull(strstr(errstr, "2002") ? strstr(errstr, "2002")
                                                     : strstr(errstr, "2003"));
}
END_TEST

static void setup(void)
{
        sk_test_fix_setup("db_conn", &(sk_test_fix_opts_t){ .no_topics = 1 });
}

int main(void)
{
        Suite *s = suite_create("db");
        TCase *tc = tcase_create("db");

        tcase_add_unchecked_fixture(tc, setup, sk_test_fix_teardown);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, classify_table);
        tcase_add_test(tc, session_settings_and_reconnect);
        tcase_add_test(tc, bound_args);
        tcase_add_test(tc, connection_api);
        tcase_add_test(tc, short_io_timeout);
        tcase_add_test(tc, duplicate_key_is_eexist);
        tcase_add_test(tc, lock_wait_is_eagain);
        tcase_add_test(tc, advisory_locks);
        tcase_add_test(tc, migrate_twice_and_voucher_times);
        tcase_add_test(tc, connect_refused);
        suite_add_tcase(s, tc);
        return sk_test_run(s);
}
