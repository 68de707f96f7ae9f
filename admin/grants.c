/* admin/grants.c: `seckill-admin db grants --host H [--users LIST] [--user-prefix P]`
 * (DESIGN.md 15 "Least privilege in the book of record", 17): one database user per
 * binary, and here the table of what each one may do, statement by statement of its
 * code; sk/grants.h checks the table against the migrations and writes the GRANTs for
 * the database named by SECKILL_MYSQL_URL. It connects to nothing: the output is piped
 * into the mysql client by whoever may grant.
 *
 * Why these privileges and no more:
 *   front       the internet-facing binary. Reads what it answers; writes the DB-only
 *               purchase (order, outcome, router, ledger, one stock unit), cancels and
 *               payment callbacks (order status, paid_at, closed_at; a tb_payment row
 *               without refunded_at or refund_ref), its worker-id lease, the degrade
 *               switch's state and drain acks, tb_lock rows. It cannot change a price
 *               (no UPDATE or INSERT on tb_seckill_voucher), the amount of an order, the
 *               stock split (init_stock), a switch's mode, or mark a refund done.
 *   consumer    writes the orders of the Kafka path (order, outcome, router, ledger,
 *               stock), closes unpaid orders (status, closed_at), reads the refund
 *               backlog for its gauge. No payment row, no lease, no lock, no switch write.
 *   reconciler  reads everything it compares; writes decisions (outcome, ledger, the
 *               stock version of the sold_out clamp), ledger statuses, switch moves,
 *               its tb_lock rows. No order or payment change.
 *   admin       `db migrate` and every seckill-admin command (voucher create and
 *               add-stock, degrade modes, payment refunded): the database-level grant.
 * No user may DELETE a row (none of the binaries deletes one) or touch
 * schema_migrations but the admin. An `INSERT ... ON DUPLICATE KEY UPDATE c = c` needs
 * UPDATE on c and on every column it inserts (MariaDB: the ledger rows, tb_lock). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "sk/grants.h"

#define PROG "seckill-admin"

/* Column lists shared by several binaries (the statements' own column lists). */
#define ORDER_INSERT "id, user_id, voucher_id, trace_id, bucket, amount_minor, currency, status, " \
        "pay_deadline, paid_at"
#define OUTCOME_INSERT "trace_id, order_id, user_id, voucher_id, bucket, outcome, reason, path"
#define ROUTER_INSERT "order_id, user_id, voucher_id"
#define LEDGER_INSERT "order_id, user_id, voucher_id, message_id, detail, before_qty, change_qty, " \
        "after_qty, trace_id, log_type, business_type, reconciliation_status"
/* The ledger's `INSERT ... ON DUPLICATE KEY UPDATE id = id`: MariaDB wants UPDATE on
 * every inserted column too (and the reconciler sets reconciliation_status). */
#define LEDGER_UPSERT "id, " LEDGER_INSERT
#define LOCK_INSERT "name, holder, until, seq"
#define LOCK_UPDATE "name, holder, until, seq, taken_at"
#define SWITCH_MOVE "state, epoch, since, updated_by"

static const sk_grant_row_t FRONT[] = {
        { "tb_seckill_voucher", "*", NULL, NULL },
        { "tb_voucher_order", "*", ORDER_INSERT, "status, paid_at, closed_at" },
        { "tb_voucher_order_router", "*", ROUTER_INSERT, NULL },
        { "tb_seckill_outcome", "*", OUTCOME_INSERT, NULL },
        { "tb_voucher_reconcile_log", "*", LEDGER_INSERT, LEDGER_UPSERT },
        { "tb_worker_lease", "*", NULL, "holder, role, lease_until, mint_until" },
        { "tb_seckill_stock", "*", NULL, "stock, version, switch_epoch" },
        { "tb_seckill_stock_change", NULL, NULL, NULL },
        { "tb_seckill_switch", "*", "scope, mode, state, updated_by", SWITCH_MOVE },
        { "tb_drain_ack", "*", "holder, voucher_id, epoch, acked_at", NULL },
        { "tb_lock", "*", LOCK_INSERT, LOCK_UPDATE },
        { "tb_payment", "*",
          "provider_txn_id, attempt_id, order_id, amount_minor, currency, received_at, result, reason", NULL },
};

static const sk_grant_row_t CONSUMER[] = {
        { "tb_seckill_voucher", "*", NULL, NULL },
        { "tb_voucher_order", "*", ORDER_INSERT, "status, closed_at" },
        { "tb_voucher_order_router", "*", ROUTER_INSERT, NULL },
        { "tb_seckill_outcome", "*", OUTCOME_INSERT, NULL },
        { "tb_voucher_reconcile_log", "*", LEDGER_INSERT, LEDGER_UPSERT },
        { "tb_worker_lease", NULL, NULL, NULL },
        { "tb_seckill_stock", "*", NULL, "stock, version" },
        { "tb_seckill_stock_change", NULL, NULL, NULL },
        { "tb_seckill_switch", "*", NULL, NULL },
        { "tb_drain_ack", NULL, NULL, NULL },
        { "tb_lock", NULL, NULL, NULL },
        { "tb_payment", "*", NULL, NULL },
};

static const sk_grant_row_t RECONCILER[] = {
        { "tb_seckill_voucher", "*", NULL, NULL },
        { "tb_voucher_order", "*", NULL, NULL },
        { "tb_voucher_order_router", "*", NULL, NULL },
        { "tb_seckill_outcome", "*", OUTCOME_INSERT, NULL },
        { "tb_voucher_reconcile_log", "*", LEDGER_INSERT, LEDGER_UPSERT },
        { "tb_worker_lease", "*", NULL, NULL },
        { "tb_seckill_stock", "*", NULL, "version" },
        { "tb_seckill_stock_change", NULL, NULL, NULL },
        { "tb_seckill_switch", "*", NULL, SWITCH_MOVE },
        { "tb_drain_ack", "*", NULL, NULL },
        { "tb_lock", "*", LOCK_INSERT, LOCK_UPDATE },
        { "tb_payment", "*", NULL, NULL },
};

#define NROWS(a) (sizeof(a) / sizeof((a)[0]))

/* The four users, in the order they are printed; user names filled in by the command. */
static const sk_grant_user_t ROLES[] = {
        { "admin", NULL,
          "-- admin: seckill-admin (`db migrate`, which creates the database and changes its\n"
          "-- schema, and every other command). Grant it before `db migrate`.\n", 1, NULL, 0 },
        { "front", NULL,
          "-- front: seckill-front. Column grants: no price, amount or init_stock change, no\n"
          "-- refund marked done. Table grants need the tables: after `db migrate`.\n",
          0, FRONT, NROWS(FRONT) },
        { "consumer", NULL, "-- consumer: seckill-consumer.\n", 0, CONSUMER, NROWS(CONSUMER) },
        { "reconciler", NULL, "-- reconciler: seckill-reconciler.\n", 0, RECONCILER, NROWS(RECONCILER) },
};
#define NROLES NROWS(ROLES)

/* --users LIST (roles separated by commas; "" = all) into @p on. @returns 0, or -1 with
 * the unknown word in @p errstr. */
static int pick_roles(const char *list, int on[NROLES], char *errstr, size_t errstr_size)
{
        const char *p = list;

        memset(on, 0, NROLES * sizeof(on[0]));
        if (!*p) {
                for (size_t i = 0; i < NROLES; i++)
                        on[i] = 1;
                return 0;
        }
        while (*p) {
                size_t n = strcspn(p, ","), i;

                for (i = 0; i < NROLES; i++)
                        if (strlen(ROLES[i].role) == n && !strncmp(ROLES[i].role, p, n))
                                break;
                if (i == NROLES) {
                        sk_seterr(errstr, errstr_size, "--users: '%.*s' is not one of admin, front, "
                                  "consumer, reconciler", (int)n, p);
                        return -1;
                }
                on[i] = 1;
                p += n + (p[n] == ',');
        }
        return 0;
}

sk_err_t sk_admin_grants_sql(const char *database, const sk_admin_opts_t *o, char **sql_out,
                             char *errstr, size_t errstr_size)
{
        sk_grant_user_t users[NROLES];
        char names[NROLES][80];
        int on[NROLES];

        if (pick_roles(o->users, on, errstr, errstr_size) != 0)
                return SK_EINVAL;
        for (size_t i = 0; i < NROLES; i++) {
                users[i] = ROLES[i];
                snprintf(names[i], sizeof(names[i]), "%s%s", o->user_prefix[0] ? o->user_prefix : "seckill_",
                         ROLES[i].role);
                users[i].user = on[i] ? names[i] : NULL;
        }
        return sk_grants_sql(database, users, NROLES, o->host, sql_out, errstr, errstr_size);
}

int sk_admin_db_grants(const sk_conf_t *conf, const sk_admin_opts_t *o)
{
        char errstr[512], *sql = NULL;
        sk_err_t err = sk_admin_grants_sql(conf->mysql.database, o, &sql, errstr, sizeof(errstr));

        if (err != SK_OK) {
                fprintf(stderr, PROG ": db grants: %s (see " PROG " db grants --help)\n", errstr);
                return err == SK_EINVAL ? 2 : 1;
        }
        fputs(sql, stdout);
        free(sql);
        return fflush(stdout) == 0 ? 0 : 1;
}
