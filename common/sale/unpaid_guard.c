/* unpaid_guard.c: the unpaid-order guard of `db migrate` (sk/unpaid_guard.h), the two
 * moments of a sk_migrate_hook_t on migration 0008_payments: before (count the UNPAID
 * orders, refuse without allow_unpaid) and after (their currency, before 0008 is
 * recorded). The runner calls before only while 0008 is pending. */
#include <ctype.h>
#include <string.h>

#include "sk/db.h"
#include "sk/unpaid_guard.h"

#define GUARD_MIGRATION "0008_payments"        /* the migration the guard watches */
/* An UNPAID order (DESIGN.md 13) created before 0008: orders from before 0003 have no
 * deadline. */
#define UNPAID_WHERE "status = 1 AND pay_deadline IS NOT NULL"

static const char *currency_of(const sk_unpaid_guard_t *g)
{
        return g->currency ? g->currency : "CNY";
}

static int valid_currency(const char *c)
{
        return c && strlen(c) == 3 && isupper((unsigned char)c[0]) && isupper((unsigned char)c[1]) &&
               isupper((unsigned char)c[2]);
}

/* Before anything changes: g->unpaid = the UNPAID orders (0 before 0003 gave orders a
 * deadline); refused while there are some and not allow_unpaid. */
static sk_err_t guard_before(sk_db_t *db, void *arg, char *errstr, size_t errstr_size)
{
        sk_unpaid_guard_t *g = arg;
        int64_t cols = 0;
        sk_err_t err;

        g->unpaid = 0;
        if ((err = sk_db_query_i64(db,
                                   "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE "
                                   "TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'tb_voucher_order' "
                                   "AND COLUMN_NAME = 'pay_deadline'",
                                   &cols, NULL, errstr, errstr_size)) != SK_OK || cols == 0)
                return err;
        if ((err = sk_db_query_i64(db, "SELECT COUNT(*) FROM tb_voucher_order WHERE " UNPAID_WHERE,
                                   &g->unpaid, NULL, errstr, errstr_size)) != SK_OK)
                return err;
        if (g->unpaid > 0 && !g->allow_unpaid) {
                sk_seterr(errstr, errstr_size,
                          "refused: %lld order(s) UNPAID and migration " GUARD_MIGRATION
                          " (v5 payments) pending: let the v4 binaries see them paid, cancelled "
                          "or closed first, or pass --allow-unpaid to leave them payable at "
                          "amount 0, currency %s (DESIGN.md, migration from v4)",
                          (long long)g->unpaid, currency_of(g));
                return SK_EINVAL;
        }
        return SK_OK;
}

/* --allow-unpaid, once 0008 gave the orders a currency column (amount 0, its default):
 * the UNPAID ones get the options' currency. */
static sk_err_t guard_after(sk_db_t *db, void *arg, char *errstr, size_t errstr_size)
{
        sk_unpaid_guard_t *g = arg;

        if (g->unpaid <= 0)
                return SK_OK;
        return sk_db_exec_args(db, "UPDATE tb_voucher_order SET currency = ? WHERE "
                               UNPAID_WHERE " AND amount_minor = 0",
                               SK_ARGS(SK_STR(currency_of(g))), NULL, errstr, errstr_size);
}

sk_err_t sk_unpaid_guard_hook(sk_unpaid_guard_t *g, sk_migrate_hook_t *hook, char *errstr,
                              size_t errstr_size)
{
        g->unpaid = 0;
        if (g->allow_unpaid && !valid_currency(currency_of(g))) {
                sk_seterr(errstr, errstr_size, "invalid currency \"%s\" for the UNPAID orders "
                          "(SECKILL_CURRENCY: 3 letters A-Z)", currency_of(g));
                return SK_EINVAL;
        }
        hook->name = GUARD_MIGRATION;
        hook->before = guard_before;
        hook->after = guard_after;
        hook->arg = g;
        return SK_OK;
}
