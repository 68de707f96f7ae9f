/* check_grants.c: sk/grants.h: the table list read from the migrations (CREATE TABLE,
 * DROP TABLE, comments, renames refused) and the GRANT text (table and column
 * privileges, every table of the migrations decided per run-time user, escaping of the
 * database-level grant, name validation, the host required). No database. The real
 * per-binary table: check_admin_grants.c. */
#include <stdlib.h>
#include <string.h>

#include "sk_test.h"
#include "sk/grants.h"

/* Every table of ddl/ today, in order of creation. */
static const char *const DDL_TABLES[] = {
        "tb_seckill_voucher", "tb_voucher_order", "tb_voucher_order_router", "tb_seckill_outcome",
        "tb_voucher_reconcile_log", "tb_worker_lease", "tb_seckill_stock", "tb_seckill_stock_change",
        "tb_seckill_switch", "tb_drain_ack", "tb_lock", "tb_payment",
};
#define NDDL (sizeof(DDL_TABLES) / sizeof(DDL_TABLES[0]))

START_TEST(embedded_migrations_list_every_table)
{
        sk_table_list_t l;
        char err[256] = "";

        ck_assert_int_eq(sk_migrate_tables(&l, err, sizeof(err)), SK_OK);
        ck_assert_uint_eq(l.n, NDDL);
        for (size_t i = 0; i < NDDL; i++)
                ck_assert_str_eq(l.name[i], DDL_TABLES[i]);
}
END_TEST

START_TEST(create_drop_comments_and_renames)
{
        static const sk_migration_t m[] = {
                { "0001_a", "-- CREATE TABLE in_a_comment (x INT);\n"
                            "# CREATE TABLE in_a_hash_comment (x INT);\n"
                            "CREATE TABLE IF NOT EXISTS t_one (\n  a INT COMMENT 'CREATE TABLE no; DROP TABLE t_one'\n);\n"
                            "create table `t_two` (b INT);\n"
                            "CREATE TABLE t_three (c INT);\n"
                            "CREATE INDEX i ON t_two (b);\n"
                            "ALTER TABLE t_two RENAME COLUMN b TO bb;\n" },
                { "0002_b", "DROP TABLE IF EXISTS t_one, `t_three`;\nCREATE TEMPORARY TABLE tmp (x INT);\n"
                            "ALTER TABLE t_two DROP COLUMN bb;\n" },
        };
        static const sk_migration_t ren[] = { { "0003_r", "RENAME TABLE t_two TO t_2;\n" } };
        static const sk_migration_t alt[] = { { "0004_r", "ALTER TABLE t_two RENAME TO t_2;\n" } };
        sk_table_list_t l;
        char err[256] = "";

        ck_assert_int_eq(sk_migrate_tables_of(m, 1, &l, err, sizeof(err)), SK_OK);
        ck_assert_uint_eq(l.n, 3);
        ck_assert_str_eq(l.name[0], "t_one");
        ck_assert_str_eq(l.name[1], "t_two");
        ck_assert_str_eq(l.name[2], "t_three");
        ck_assert_int_eq(sk_migrate_tables_of(m, 2, &l, err, sizeof(err)), SK_OK);
        ck_assert_uint_eq(l.n, 1);
        ck_assert_str_eq(l.name[0], "t_two");
        ck_assert_int_eq(sk_migrate_tables_of(ren, 1, &l, err, sizeof(err)), SK_EINVAL);
        ck_assert_ptr_nonnull(strstr(err, "0003_r renames a table"));
        ck_assert_int_eq(sk_migrate_tables_of(alt, 1, &l, err, sizeof(err)), SK_EINVAL);
        ck_assert_ptr_nonnull(strstr(err, "0004_r renames a table"));
}
END_TEST

/* A run-time user's rows for the real migrations: one row per table, some with
 * column lists, one with nothing. */
static sk_grant_row_t rows[NDDL];

static void fill_rows(void)
{
        for (size_t i = 0; i < NDDL; i++)
                rows[i] = (sk_grant_row_t){ DDL_TABLES[i], "*", NULL, NULL };
        rows[1] = (sk_grant_row_t){ "tb_voucher_order", "*", "id, user_id", "status, paid_at" };
        rows[7] = (sk_grant_row_t){ "tb_seckill_stock_change", NULL, NULL, NULL };
        rows[11] = (sk_grant_row_t){ "tb_payment", NULL, "provider_txn_id", NULL };
}

START_TEST(grant_text)
{
        char err[256] = "", *sql = NULL, line[256];
        sk_grant_user_t u[2] = {
                { "admin", "sk-admin", "-- the admin\n", 1, NULL, 0 },
                { "front", "sk_front", "-- the front\n", 0, rows, NDDL },
        };

        fill_rows();
        ck_assert_int_eq(sk_grants_sql("shop_db", u, 2, "10.0.3.%", &sql, err, sizeof(err)), SK_OK);
        /* Admin: the database only, `_` escaped (no wildcard), no GRANT OPTION. */
        ck_assert_ptr_nonnull(strstr(sql, "\nGRANT SELECT, INSERT, UPDATE, DELETE, CREATE, ALTER, INDEX, DROP "
                                          "ON `shop\\_db`.* TO 'sk-admin'@'10.0.3.%';\n"));
        ck_assert_ptr_nonnull(strstr(sql, "--   CREATE USER 'sk_front'@'10.0.3.%' IDENTIFIED BY '...';\n"));
        ck_assert_ptr_nonnull(strstr(sql, "\n-- the admin\n"));
        /* Run-time user: the row's privileges, column lists as given; nothing for a row
         * without any. */
        ck_assert_ptr_nonnull(strstr(sql, "\nGRANT SELECT, INSERT (id, user_id), UPDATE (status, paid_at) ON "
                                          "`shop_db`.`tb_voucher_order` TO 'sk_front'@'10.0.3.%';\n"));
        ck_assert_ptr_nonnull(strstr(sql, "\nGRANT INSERT (provider_txn_id) ON `shop_db`.`tb_payment` TO "
                                          "'sk_front'@'10.0.3.%';\n"));
        ck_assert_ptr_null(strstr(sql, "tb_seckill_stock_change"));
        snprintf(line, sizeof(line), "\nGRANT SELECT ON `shop_db`.`%s` TO 'sk_front'@'10.0.3.%%';\n", DDL_TABLES[0]);
        ck_assert_msg(strstr(sql, line) != NULL, "missing %s", line);
        ck_assert_ptr_null(strstr(sql, "schema_migrations`"));
        ck_assert_ptr_null(strstr(sql, "WITH GRANT OPTION"));
        ck_assert_ptr_null(strstr(sql, "ON *.*"));
        ck_assert_ptr_null(strstr(sql, "DELETE ON"));
        /* Every line is a comment or a GRANT: no user created, no password. */
        for (const char *p = sql; *p; p = strchr(p, '\n') + 1) {
                ck_assert_msg(strncmp(p, "-- ", 3) == 0 || strncmp(p, "GRANT ", 6) == 0, "line: %.60s", p);
                ck_assert_ptr_nonnull(strchr(p, '\n'));
        }
        free(sql);
        sql = NULL;

        /* A user left out (NULL) prints nothing. */
        u[0].user = NULL;
        ck_assert_int_eq(sk_grants_sql("shop", u, 2, "app.example", &sql, err, sizeof(err)), SK_OK);
        ck_assert_ptr_null(strstr(sql, "ON `shop`.*"));
        ck_assert_ptr_nonnull(strstr(sql, "ON `shop`.`tb_seckill_outcome` TO 'sk_front'@'app.example';\n"));
        free(sql);
        sql = NULL;
}
END_TEST

START_TEST(every_table_decided)
{
        char err[256] = "", *sql = NULL;
        sk_grant_row_t extra[NDDL + 1];
        sk_grant_user_t u = { "front", "sk_front", "", 0, rows, NDDL - 1 };

        fill_rows();
        /* A table of the migrations without a row: refused, named. */
        ck_assert_int_eq(sk_grants_sql("shop", &u, 1, "h", &sql, err, sizeof(err)), SK_EINVAL);
        ck_assert_ptr_nonnull(strstr(err, "front: table tb_payment of the migrations has no grant row"));
        /* A table the migrations do not create, or one named twice: refused. */
        memcpy(extra, rows, sizeof(rows));
        extra[NDDL] = (sk_grant_row_t){ "tb_nope", "*", NULL, NULL };
        u.rows = extra;
        u.nrows = NDDL + 1;
        ck_assert_int_eq(sk_grants_sql("shop", &u, 1, "h", &sql, err, sizeof(err)), SK_EINVAL);
        ck_assert_ptr_nonnull(strstr(err, "table tb_nope is not one the migrations create"));
        extra[NDDL] = rows[3];
        ck_assert_int_eq(sk_grants_sql("shop", &u, 1, "h", &sql, err, sizeof(err)), SK_EINVAL);
        ck_assert_ptr_nonnull(strstr(err, "named twice"));
        /* A column list that is not "a, b": refused. */
        extra[NDDL] = (sk_grant_row_t){ "tb_nope", NULL, NULL, NULL };
        u.nrows = NDDL;
        extra[2].update = "a,b";
        ck_assert_int_eq(sk_grants_sql("shop", &u, 1, "h", &sql, err, sizeof(err)), SK_EINVAL);
        extra[2].update = "a); DROP TABLE x; --";
        ck_assert_int_eq(sk_grants_sql("shop", &u, 1, "h", &sql, err, sizeof(err)), SK_EINVAL);
        ck_assert_ptr_nonnull(strstr(err, "bad column list"));
        ck_assert_ptr_null(sql);
}
END_TEST

START_TEST(bad_names_refused)
{
        char err[256], *sql = NULL;
        sk_grant_user_t u = { "admin", "app", "", 1, NULL, 0 };

        ck_assert_int_eq(sk_grants_sql("shop", &u, 1, "h'--", &sql, err, sizeof(err)), SK_EINVAL);
        /* --host is required: no '%' default. */
        ck_assert_int_eq(sk_grants_sql("shop", &u, 1, "", &sql, err, sizeof(err)), SK_EINVAL);
        ck_assert_int_eq(sk_grants_sql("shop", &u, 1, NULL, &sql, err, sizeof(err)), SK_EINVAL);
        ck_assert_ptr_nonnull(strstr(err, "host part of the accounts is required"));
        ck_assert_int_eq(sk_grants_sql("sh`op", &u, 1, "h", &sql, err, sizeof(err)), SK_EINVAL);
        u.user = "a'b";
        ck_assert_int_eq(sk_grants_sql("shop", &u, 1, "h", &sql, err, sizeof(err)), SK_EINVAL);
        u.user = "a23456789012345678901234567890123";
        ck_assert_int_eq(sk_grants_sql("shop", &u, 1, "h", &sql, err, sizeof(err)), SK_EINVAL);
        u.user = NULL;
        ck_assert_int_eq(sk_grants_sql("shop", &u, 1, "h", &sql, err, sizeof(err)), SK_EINVAL);
        ck_assert_ptr_nonnull(strstr(err, "no user given"));
        ck_assert_ptr_null(sql);
}
END_TEST

static Suite *grants_suite(void)
{
        Suite *s = suite_create("grants");
        TCase *tc = tcase_create("grants");

        tcase_add_test(tc, embedded_migrations_list_every_table);
        tcase_add_test(tc, create_drop_comments_and_renames);
        tcase_add_test(tc, grant_text);
        tcase_add_test(tc, every_table_decided);
        tcase_add_test(tc, bad_names_refused);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return sk_test_run(grants_suite());
}
