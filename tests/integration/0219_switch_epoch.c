/* 0219_switch_epoch.c: the db -> rebuilding transition without FOR UPDATE (sk_dsw_begin_rebuild,
 * DESIGN.md 16 (2)), with a DB-only sale on another connection doing what
 * producer/dbonly.c does (bucket UPDATE, then the switch row re-read in the same
 * transaction):
 *   - the transition sets switch_epoch = the new epoch on every bucket row of the voucher
 *     in the switch row's transaction (and only when it moved);
 *   - sale first: a sale holding its bucket-row UPDATE makes the transition wait for its
 *     COMMIT (the two serialize on the bucket row; on Galera one would fail
 *     certification); the sale's re-read still says db, so it commits, before the move;
 *   - transition first: a sale whose bucket UPDATE comes after the transition's COMMIT
 *     re-reads the switch row and finds rebuilding: it rolls back, nothing sold.
 *   - two Galera nodes (label galera): a sale on node 2 and the transition on node 1 do not
 *     wait for each other; the sale's COMMIT fails with 1213 on the bucket row.
 * The old transition (switch row FOR UPDATE only) wrote no bucket row: the first check
 * fails on it, and on Galera a sale on another node would not have conflicted with it. */
#include <pthread.h>
#include "sk_test.h"
#include "sk/dswitch.h"

static int64_t g_vid;
static int g_moved;
static int64_t g_new_epoch, g_ms;

static void *transition(void *arg)
{
        int64_t epoch = *(int64_t *)arg, t0 = sk_mono_ms();
        char errstr[512];
        sk_db_t *db = sk_db_connect(&sk_test_fx.conf.mysql, 0, 10, errstr, sizeof(errstr));

        if (!db)
                return NULL;
        if (sk_dsw_begin_rebuild(db, g_vid, epoch, "test", &g_moved, &g_new_epoch, errstr,
                                 sizeof(errstr)) != SK_OK)
                fprintf(stderr, "begin_rebuild: %s\n", errstr);
        g_ms = sk_mono_ms() - t0;
        sk_db_close(db);
        return NULL;
}

/* The sale's statements on @p s: bucket 1's UPDATE (in the open transaction). */
static void sale_update(sk_db_t *s)
{
        char errstr[512], sql[256];

        ck_assert_int_eq(sk_db_begin(s, errstr, sizeof(errstr)), SK_OK);
        snprintf(sql, sizeof(sql), "UPDATE tb_seckill_stock SET stock = stock - 1 WHERE voucher_id = %"
                 PRId64 " AND bucket = 1 AND stock >= 1", g_vid);
        ck_assert_int_eq(sk_db_exec(s, sql, errstr, sizeof(errstr)), SK_OK);
}

/* The sale's re-read of the switch row after its UPDATE: 1 while (db, @p epoch). */
static int sale_still_db(sk_db_t *s, int64_t epoch)
{
        char errstr[512];
        sk_dsw_row_t row;

        ck_assert_int_eq(sk_dsw_get(s, g_vid, 0, &row, errstr, sizeof(errstr)), SK_OK);
        return row.state == SK_DSW_DB && row.epoch == epoch;
}

/* A voucher of 3 buckets (10 units each) with its switch row, once per test process. */
static void ensure_voucher(void)
{
        static const long long stocks[3] = { 10, 10, 10 };

        g_vid = sk_test_voucher(&(sk_test_voucher_t){ .buckets = 3, .init_stock = 30,
                                                      .db_stocks = stocks, .stocks = stocks,
                                                      .db_status = 1, .status = 1 });
        sk_test_exec("INSERT IGNORE INTO tb_seckill_switch (scope, mode, state) VALUES (%" PRId64
                     ", NULL, 'redis')", g_vid);
}

static void set_db(int64_t epoch)
{
        ensure_voucher();
        sk_test_exec("UPDATE tb_seckill_switch SET state = 'db', epoch = %" PRId64 " WHERE scope = %"
                     PRId64, epoch, g_vid);
}

START_TEST(transition_writes_every_bucket_row)
{
        char errstr[512];
        int moved = 0;
        int64_t ep = 0;

        set_db(5);
        /* Not in (db, 4): no move, no bucket row written. */
        ck_assert_int_eq(sk_dsw_begin_rebuild(sk_test_fx.db, g_vid, 4, "test", &moved, &ep, errstr,
                                              sizeof(errstr)), SK_OK);
        ck_assert_int_eq(moved, 0);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_seckill_stock WHERE voucher_id = %"
                                     PRId64 " AND switch_epoch <> 0", g_vid), 0);
        ck_assert_int_eq(sk_dsw_begin_rebuild(sk_test_fx.db, g_vid, 5, "test", &moved, &ep, errstr,
                                              sizeof(errstr)), SK_OK);
        ck_assert_int_eq(moved, 1);
        ck_assert_int_eq(ep, 6);
        ck_assert_int_eq(sk_test_switch_is(g_vid, "rebuilding"), 1);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_seckill_stock WHERE voucher_id = %"
                                     PRId64 " AND switch_epoch = 6", g_vid), 3);
}
END_TEST

START_TEST(sale_first_the_transition_waits)
{
        char errstr[512];
        sk_db_t *s = sk_db_connect(&sk_test_fx.conf.mysql, 0, 10, errstr, sizeof(errstr));
        int64_t epoch = 10, stock0;
        pthread_t th;

        ck_assert_msg(s != NULL, "%s", errstr);
        set_db(epoch);
        stock0 = sk_test_i64("SELECT stock FROM tb_seckill_stock WHERE voucher_id = %" PRId64
                             " AND bucket = 1", g_vid);
        sale_update(s);
        ck_assert_int_eq(pthread_create(&th, NULL, transition, &epoch), 0);
        sk_sleep_ms(1200, NULL);
        /* The transition waits on the bucket row; the sale still reads db and commits. */
        ck_assert_int_eq(sale_still_db(s, epoch), 1);
        ck_assert_int_eq(sk_db_commit(s, errstr, sizeof(errstr)), SK_OK);
        pthread_join(th, NULL);
        ck_assert_int_eq(g_moved, 1);
        ck_assert_int_ge(g_ms, 1000);
        ck_assert_int_eq(sk_test_i64("SELECT stock FROM tb_seckill_stock WHERE voucher_id = %" PRId64
                                     " AND bucket = 1", g_vid), stock0 - 1);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_seckill_stock WHERE voucher_id = %"
                                     PRId64 " AND switch_epoch = 11", g_vid), 3);
        sk_db_close(s);
}
END_TEST

START_TEST(transition_first_the_sale_rolls_back)
{
        char errstr[512];
        sk_db_t *s = sk_db_connect(&sk_test_fx.conf.mysql, 0, 10, errstr, sizeof(errstr));
        int64_t epoch = 20, stock0;
        pthread_t th;

        ck_assert_msg(s != NULL, "%s", errstr);
        set_db(epoch);
        stock0 = sk_test_i64("SELECT stock FROM tb_seckill_stock WHERE voucher_id = %" PRId64
                             " AND bucket = 1", g_vid);
        /* The sale's first read said (db, 20); the transition commits before its UPDATE. */
        ck_assert_int_eq(pthread_create(&th, NULL, transition, &epoch), 0);
        pthread_join(th, NULL);
        ck_assert_int_eq(g_moved, 1);
        sale_update(s);
        ck_assert_int_eq(sale_still_db(s, epoch), 0);
        sk_db_rollback(s);
        ck_assert_int_eq(sk_test_i64("SELECT stock FROM tb_seckill_stock WHERE voucher_id = %" PRId64
                                     " AND bucket = 1", g_vid), stock0);
        sk_db_close(s);
}
END_TEST

/* Two Galera nodes (label galera: the URL lists several): the sale writes its bucket row
 * through node 2 while the transition commits through node 1. Nothing makes the transition
 * wait there (row locks are node-local), so it commits; the sale's transaction conflicts
 * with its write set on bucket 1's row (switch_epoch) and fails with 1213 (certification
 * failure or brute-force abort), never committing a DB-only sale after the voucher left
 * state db. On one server (one host): the waiting case above covers it. */
START_TEST(sale_on_another_node_conflicts)
{
        char errstr[512], sql[256];
        sk_mysql_url_t other = sk_test_mysql_node(&sk_test_fx.conf.mysql, 1);
        sk_db_t *s;
        int64_t epoch = 30, stock0;
        pthread_t th;
        sk_err_t err;

        if (sk_test_fx.conf.mysql.nhosts < 2) {
                fprintf(stderr, "one database host: the two-node case runs under the label galera\n");
                return;
        }
        ck_assert_msg((s = sk_db_connect(&other, 0, 10, errstr, sizeof(errstr))) != NULL, "%s", errstr);
        set_db(epoch);
        stock0 = sk_test_i64("SELECT stock FROM tb_seckill_stock WHERE voucher_id = %" PRId64
                             " AND bucket = 1", g_vid);
        ck_assert_int_eq(sk_db_begin(s, errstr, sizeof(errstr)), SK_OK);
        snprintf(sql, sizeof(sql), "UPDATE tb_seckill_stock SET stock = stock - 1 WHERE voucher_id = %"
                 PRId64 " AND bucket = 1 AND stock >= 1", g_vid);
        err = sk_db_exec(s, sql, errstr, sizeof(errstr));
        ck_assert_msg(err == SK_OK, "%s", errstr);
        ck_assert_int_eq(pthread_create(&th, NULL, transition, &epoch), 0);
        pthread_join(th, NULL);
        ck_assert_int_eq(g_moved, 1);
        ck_assert_int_lt(g_ms, 1000);   /* node 1 did not wait for node 2's row lock */
        sk_sleep_ms(300, NULL);         /* node 2 applies the transition's write set */
        err = sk_db_commit(s, errstr, sizeof(errstr));
        ck_assert_msg(err != SK_OK && sk_db_errno(s) == 1213, "the sale committed after the transition "
                      "(err %d, errno %u: %s)", err, sk_db_errno(s), errstr);
        sk_db_rollback(s);
        ck_assert_int_eq(sk_test_i64("SELECT stock FROM tb_seckill_stock WHERE voucher_id = %" PRId64
                                     " AND bucket = 1", g_vid), stock0);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_seckill_stock WHERE voucher_id = %"
                                     PRId64 " AND switch_epoch = 31", g_vid), 3);
        sk_db_close(s);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("0219_switch_epoch");
        TCase *tc = tcase_create("switch");
        int rc;

        sk_test_fix_setup("switch_epoch", &(sk_test_fix_opts_t){ .no_topics = 1, .lock_wait_s = 10 });
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, transition_writes_every_bucket_row);
        tcase_add_test(tc, sale_first_the_transition_waits);
        tcase_add_test(tc, transition_first_the_sale_rolls_back);
        tcase_add_test(tc, sale_on_another_node_conflicts);
        suite_add_tcase(s, tc);
        rc = sk_test_run(s);
        sk_test_fix_teardown();
        return rc;
}
