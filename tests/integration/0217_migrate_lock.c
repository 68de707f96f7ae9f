/* 0217_migrate_lock.c: seckill-admin db migrate's own lock is a tb_lock row (sk/migrate.h,
 * DESIGN.md 16 (1)), and its bootstrap creates tb_lock before taking it:
 *   - another holder's live row 'seckill:migrate:<db>' (ttl 2 s, not renewed) makes
 *     sk_migrate wait: it returns only once the row has expired, then takes it and finds
 *     nothing to apply;
 *   - the row renewed by its holder for longer than migrate's wait (30 s) is not needed to
 *     show the refusal: the reason of a busy take names the holder (0216);
 *   - tb_lock dropped: migrate creates it again (CREATE TABLE IF NOT EXISTS before the
 *     lock), takes its row and releases it (until in the past, holder = migrate's);
 *   - two migrate runs at once on a fresh database serialize: both succeed and every
 *     migration is recorded once. */
#include <pthread.h>
#include "sk_test.h"
#include "sk/migrate.h"

START_TEST(waits_for_a_live_row_then_takes_it)
{
        char errstr[512] = "", name[128];
        sk_dblock_t *other;
        int applied = -1;
        int64_t t0;

        snprintf(name, sizeof(name), "seckill:migrate:%s", sk_test_fx.conf.mysql.database);
        other = sk_dblock_open(&sk_test_fx.conf.mysql, name, 2000, errstr, sizeof(errstr));
        ck_assert_msg(other != NULL, "%s", errstr);
        ck_assert_int_eq(sk_dblock_take(other, 0, errstr, sizeof(errstr)), SK_OK);
        t0 = sk_mono_ms();
        ck_assert_msg(sk_migrate(&sk_test_fx.conf.mysql, &applied, errstr,
                                 sizeof(errstr)) == SK_OK, "%s",
                      errstr);
        ck_assert_int_ge(sk_mono_ms() - t0, 1500);     /* waited for the row to expire */
        ck_assert_int_eq(applied, 0);
        /* migrate took the row from the expired holder: the holder's check says lost. */
        ck_assert_int_eq(sk_dblock_check(other, errstr, sizeof(errstr)), SK_ENOTFOUND);
        sk_dblock_close(other);
}
END_TEST

START_TEST(bootstrap_recreates_tb_lock)
{
        char errstr[512] = "", sql[256];
        int applied = -1;

        sk_test_conf_exec(&sk_test_fx.conf, "DROP TABLE tb_lock");
        ck_assert_msg(sk_migrate(&sk_test_fx.conf.mysql, &applied, errstr,
                                 sizeof(errstr)) == SK_OK, "%s",
                      errstr);
        ck_assert_int_eq(applied, 0);
        snprintf(sql, sizeof(sql), "SELECT COUNT(*) FROM tb_lock WHERE name = 'seckill:migrate:%s' "
                 "AND until < NOW(3) AND holder <> ''", sk_test_fx.conf.mysql.database);
        {
                sk_db_t *db = sk_db_connect(&sk_test_fx.conf.mysql, 0, 5, errstr, sizeof(errstr));
                int64_t n = -1;

                ck_assert_msg(db != NULL, "%s", errstr);
                ck_assert_int_eq(sk_db_query_i64(db, sql, &n, NULL, errstr, sizeof(errstr)), SK_OK);
                ck_assert_int_eq(n, 1);
                sk_db_close(db);
        }
}
END_TEST

static sk_conf_t g_fresh;
static int g_rc[2], g_applied[2];

static void *migrate_fresh(void *arg)
{
        int i = (int)(intptr_t)arg;
        char errstr[512];

        g_rc[i] = sk_migrate(&g_fresh.mysql, &g_applied[i], errstr, sizeof(errstr));
        if (g_rc[i] != SK_OK)
                fprintf(stderr, "migrate %d: %s\n", i, errstr);
        return NULL;
}

START_TEST(two_runners_at_once_serialize)
{
        char errstr[512] = "";
        pthread_t th[2];
        sk_db_t *db;
        int64_t n = -1;

        sk_test_conf(&g_fresh, "migrate_lock_fresh");
        for (int i = 0; i < 2; i++)
                ck_assert_int_eq(pthread_create(&th[i], NULL, migrate_fresh, (void *)(intptr_t)i), 0);
        for (int i = 0; i < 2; i++)
                pthread_join(th[i], NULL);
        ck_assert_int_eq(g_rc[0], SK_OK);
        ck_assert_int_eq(g_rc[1], SK_OK);
        ck_assert_int_eq(g_applied[0] + g_applied[1], (int)sk_nmigrations);
        ck_assert_msg(g_applied[0] == 0 || g_applied[1] == 0, "both applied: %d %d", g_applied[0],
                      g_applied[1]);
        db = sk_db_connect(&g_fresh.mysql, 0, 5, errstr, sizeof(errstr));
        ck_assert_msg(db != NULL, "%s", errstr);
        ck_assert_int_eq(sk_db_query_i64(db, "SELECT COUNT(*) FROM schema_migrations", &n, NULL,
                                         errstr, sizeof(errstr)), SK_OK);
        ck_assert_int_eq(n, (int64_t)sk_nmigrations);
        sk_db_close(db);
        sk_test_cleanup(&g_fresh);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("0217_migrate_lock");
        TCase *tc = tcase_create("migrate");
        int rc;

        sk_test_fix_setup("migrate_lock", &(sk_test_fix_opts_t){ .no_topics = 1 });
        tcase_set_timeout(tc, 90);
        tcase_add_test(tc, waits_for_a_live_row_then_takes_it);
        tcase_add_test(tc, bootstrap_recreates_tb_lock);
        tcase_add_test(tc, two_runners_at_once_serialize);
        suite_add_tcase(s, tc);
        rc = sk_test_run(s);
        sk_test_fix_teardown();
        return rc;
}
