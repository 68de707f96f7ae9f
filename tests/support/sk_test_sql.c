/* sk_test_sql.c: SQL in a test (sk_test_sql.h). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include <check.h>
#include <mysql.h>

#include "sk_test.h"
#include "sk/clock.h"

void sk_test_exec(const char *fmt, ...)
{
        char sql[2048], errstr[512] = "";
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(sql, sizeof(sql), fmt, ap);
        va_end(ap);
        ck_assert_msg(sk_db_exec(sk_test_fx.db, sql, errstr, sizeof(errstr)) == SK_OK, "%s: %s",
                      sql, errstr);
}

void sk_test_conf_exec(const sk_conf_t *conf, const char *sql)
{
        MYSQL *my = mysql_init(NULL);

        ck_assert(my != NULL);
        ck_assert_msg(mysql_real_connect(my, conf->mysql.host, conf->mysql.user,
                                         conf->mysql.password[0] ? conf->mysql.password : NULL,
                                         conf->mysql.database, (unsigned)conf->mysql.port, NULL, 0),
                      "mysql connect: %s", mysql_error(my));
        ck_assert_msg(mysql_query(my, sql) == 0, "%s: %s", sql, mysql_error(my));
        mysql_close(my);
}

static int64_t query_i64(const char *sql)
{
        char errstr[512] = "";
        int64_t v = -1;
        int is_null = 0;
        sk_err_t err = sk_db_query_i64(sk_test_fx.db, sql, &v, &is_null, errstr, sizeof(errstr));

        if (err == SK_ENOTFOUND || (err == SK_OK && is_null))
                return -1;
        ck_assert_msg(err == SK_OK, "%s: %s", sql, errstr);
        return v;
}

int64_t sk_test_i64(const char *fmt, ...)
{
        char sql[2048];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(sql, sizeof(sql), fmt, ap);
        va_end(ap);
        return query_i64(sql);
}

int64_t sk_test_wait_i64(int timeout_s, int64_t want, const char *sql)
{
        int64_t deadline = sk_mono_ms() + (int64_t)timeout_s * 1000, v;

        for (;;) {
                v = query_i64(sql);
                if (v == want || sk_mono_ms() > deadline)
                        return v;
                sk_sleep_ms(100, NULL);
        }
}

sk_db_t *sk_test_lock_voucher(int64_t vid)
{
        char errstr[512] = "", sql[256];
        sk_db_t *db = sk_db_connect(&sk_test_fx.conf.mysql, 0, 0, errstr, sizeof(errstr));
        int64_t stock = 0;

        ck_assert_msg(db != NULL, "%s", errstr);
        ck_assert_int_eq(sk_db_begin(db, errstr, sizeof(errstr)), SK_OK);
        snprintf(sql, sizeof(sql), "SELECT stock FROM tb_seckill_stock WHERE bucket = 0 AND "
                 "voucher_id = %" PRId64 " FOR UPDATE", vid);
        ck_assert_int_eq(sk_db_query_i64(db, sql, &stock, NULL, errstr, sizeof(errstr)), SK_OK);
        return db;
}

void sk_test_unlock(sk_db_t *db)
{
        sk_db_rollback(db);
        sk_db_close(db);
}

int sk_test_outcome(int64_t trace)
{
        int64_t v = sk_test_i64("SELECT outcome FROM tb_seckill_outcome WHERE trace_id = %" PRId64,
                                trace);

        return v < 0 ? 0 : (int)v;
}

int sk_test_wait_outcome(int64_t trace, int timeout_s)
{
        int64_t deadline = sk_mono_ms() + (int64_t)timeout_s * 1000;
        int o;

        while ((o = sk_test_outcome(trace)) == 0 && sk_mono_ms() < deadline)
                sk_sleep_ms(200, NULL);
        return o;
}

int sk_test_switch_is(int64_t vid, const char *state)
{
        return sk_test_i64("SELECT COUNT(*) FROM tb_seckill_switch WHERE scope = %" PRId64
                           " AND state = '%s'", vid, state) == 1;
}

int sk_test_wait_switch(int64_t vid, const char *state, int timeout_s)
{
        int64_t until = sk_mono_ms() + timeout_s * 1000LL;

        while (sk_mono_ms() < until) {
                if (sk_test_switch_is(vid, state))
                        return 0;
                sk_sleep_ms(200, NULL);
        }
        return -1;
}
