/* check_admin_grants.c: the per-binary users of `seckill-admin db grants` (admin/grants.c,
 * DESIGN.md 15 "Least privilege in the book of record"): one user per binary, named
 * prefix + role; the front can change no price, no order amount, no stock split, and
 * cannot mark a refund done; no run-time user deletes or reads schema_migrations;
 * --host is required; --users picks roles. No database. */
#include <stdlib.h>
#include <string.h>

#include "sk_test.h"
#include "admin.h"

static char *grants(const char *users, const char *host, sk_err_t want)
{
        sk_admin_opts_t o;
        char err[512] = "", *sql = NULL;

        memset(&o, 0, sizeof(o));
        snprintf(o.users, sizeof(o.users), "%s", users);
        snprintf(o.user_prefix, sizeof(o.user_prefix), "%s", "seckill_");
        snprintf(o.host, sizeof(o.host), "%s", host);
        ck_assert_int_eq(sk_admin_grants_sql("shop", &o, &sql, err, sizeof(err)), want);
        return sql;
}

/* The GRANT line of @p user on @p table ("" if none), copied into @p line. */
static const char *line_of(const char *sql, const char *user, const char *table, char *line, size_t size)
{
        char on[160], to[80];
        const char *p;

        snprintf(on, sizeof(on), " ON `shop`.`%s` TO ", table);
        snprintf(to, sizeof(to), "'%s'@", user);
        line[0] = '\0';
        for (p = sql; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
                const char *nl = strchr(p, '\n');
                size_t n = nl ? (size_t)(nl - p) : strlen(p);

                snprintf(line, size, "%.*s", (int)n, p);
                if (strstr(line, on) && strstr(line, to))
                        return line;
        }
        line[0] = '\0';
        return line;
}

START_TEST(one_user_per_binary)
{
        char *sql = grants("", "10.0.3.7", SK_OK);

        ck_assert_ptr_nonnull(strstr(sql, "TO 'seckill_admin'@'10.0.3.7';"));
        ck_assert_ptr_nonnull(strstr(sql, "TO 'seckill_front'@'10.0.3.7';"));
        ck_assert_ptr_nonnull(strstr(sql, "TO 'seckill_consumer'@'10.0.3.7';"));
        ck_assert_ptr_nonnull(strstr(sql, "TO 'seckill_reconciler'@'10.0.3.7';"));
        ck_assert_ptr_null(strstr(sql, "'%'"));
        ck_assert_ptr_null(strstr(sql, "DELETE ON `shop`.`"));
        ck_assert_ptr_null(strstr(sql, "schema_migrations"));
        free(sql);
}
END_TEST

START_TEST(front_cannot_set_prices_or_refunds)
{
        char *sql = grants("front", "h", SK_OK), l[1024];

        ck_assert_ptr_null(strstr(sql, "seckill_admin"));
        /* Vouchers: read only (price_minor, currency, init_stock). */
        ck_assert_str_eq(line_of(sql, "seckill_front", "tb_seckill_voucher", l, sizeof(l)),
                         "GRANT SELECT ON `shop`.`tb_seckill_voucher` TO 'seckill_front'@'h';");
        /* Payments: inserted without refunded_at or refund_ref, never updated. */
        line_of(sql, "seckill_front", "tb_payment", l, sizeof(l));
        ck_assert_ptr_nonnull(strstr(l, "INSERT (provider_txn_id, "));
        ck_assert_ptr_null(strstr(l, "refunded_at"));
        ck_assert_ptr_null(strstr(l, "refund_ref"));
        ck_assert_ptr_null(strstr(l, "UPDATE"));
        /* Orders: status and its times only, never the amount. */
        line_of(sql, "seckill_front", "tb_voucher_order", l, sizeof(l));
        ck_assert_ptr_nonnull(strstr(l, "UPDATE (status, paid_at, closed_at) ON"));
        /* Stock: no init_stock change; a switch's mode is the admin's. */
        line_of(sql, "seckill_front", "tb_seckill_stock", l, sizeof(l));
        ck_assert_ptr_nonnull(strstr(l, "UPDATE (stock, version, switch_epoch) ON"));
        line_of(sql, "seckill_front", "tb_seckill_switch", l, sizeof(l));
        ck_assert_ptr_nonnull(strstr(l, "UPDATE (state, epoch, since, updated_by) ON"));
        ck_assert_str_eq(line_of(sql, "seckill_front", "tb_seckill_stock_change", l, sizeof(l)), "");
        free(sql);
}
END_TEST

START_TEST(consumer_and_reconciler)
{
        char *sql = grants("consumer,reconciler", "h", SK_OK), l[1024];

        ck_assert_ptr_null(strstr(sql, "seckill_front"));
        ck_assert_str_eq(line_of(sql, "seckill_consumer", "tb_payment", l, sizeof(l)),
                         "GRANT SELECT ON `shop`.`tb_payment` TO 'seckill_consumer'@'h';");
        ck_assert_str_eq(line_of(sql, "seckill_reconciler", "tb_voucher_order", l, sizeof(l)),
                         "GRANT SELECT ON `shop`.`tb_voucher_order` TO 'seckill_reconciler'@'h';");
        ck_assert_ptr_null(strstr(sql, "price_minor"));
        free(sql);
}
END_TEST

START_TEST(host_required_roles_checked)
{
        ck_assert_ptr_null(grants("", "", SK_EINVAL));
        ck_assert_ptr_null(grants("front,app", "h", SK_EINVAL));
}
END_TEST

static Suite *admin_grants_suite(void)
{
        Suite *s = suite_create("admin_grants");
        TCase *tc = tcase_create("admin_grants");

        tcase_add_test(tc, one_user_per_binary);
        tcase_add_test(tc, front_cannot_set_prices_or_refunds);
        tcase_add_test(tc, consumer_and_reconciler);
        tcase_add_test(tc, host_required_roles_checked);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return sk_test_run(admin_grants_suite());
}
