/* payment.c: `seckill-admin payment refunds` and `payment refunded` (DESIGN.md 13,
 * "Refunds are the merchant's job"): the refund_due payments the callback recorded and
 * not yet refunded, and the mark that one was refunded through the provider. DB only
 * (no Redis), single-threaded. What it does not do: call any provider (the merchant
 * does, then marks the row). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

#include "admin.h"
#include "sk/db.h"
#include "sk/ids.h"
#include "sk/payment.h"

#define PROG "seckill-admin"
#define PAYMENT_DB_LOCKWAIT_S 10

static sk_db_t *connect_or_say(const sk_conf_t *conf, const char *what)
{
        char errstr[512];
        sk_db_t *db = sk_db_connect(&conf->mysql, 0, PAYMENT_DB_LOCKWAIT_S, errstr, sizeof(errstr));

        if (!db)
                fprintf(stderr, PROG ": payment %s: database: %s\n", what, errstr);
        return db;
}

static void print_json(const sk_refund_row_t *rows, size_t n)
{
        cJSON *root = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(root, "refunds");
        char id[SK_ID_STRLEN], num[24];
        char *out;

        for (size_t i = 0; i < n; i++) {
                cJSON *r = cJSON_CreateObject();

                cJSON_AddStringToObject(r, "providerTxnId", rows[i].txn_id);
                sk_id_format(rows[i].order_id, id);
                cJSON_AddStringToObject(r, "orderId", id);
                snprintf(num, sizeof(num), "%" PRId64, rows[i].amount_minor);
                cJSON_AddStringToObject(r, "amount", num);
                cJSON_AddStringToObject(r, "currency", rows[i].currency);
                cJSON_AddStringToObject(r, "reason", rows[i].reason);
                cJSON_AddStringToObject(r, "receivedAt", rows[i].received_at);
                cJSON_AddNumberToObject(r, "ageSeconds", (double)rows[i].age_s);
                cJSON_AddItemToArray(arr, r);
        }
        cJSON_AddNumberToObject(root, "count", (double)n);
        out = cJSON_PrintUnformatted(root);
        if (out)
                printf("%s\n", out);
        cJSON_free(out);
        cJSON_Delete(root);
}

int sk_admin_payment_refunds(const sk_conf_t *conf, const sk_admin_opts_t *o)
{
        char errstr[512] = "";
        sk_refund_row_t *rows = NULL;
        size_t n = 0;
        sk_db_t *db = connect_or_say(conf, "refunds");
        sk_err_t err;

        if (!db)
                return 1;
        err = sk_payment_refunds(db, &rows, &n, errstr, sizeof(errstr));
        sk_db_close(db);
        if (err) {
                fprintf(stderr, PROG ": payment refunds: %s%s\n", errstr,
                        strstr(errstr, "1146") ? " (run `" PROG " db migrate`)" : "");
                return 1;
        }
        if (o->json) {
                print_json(rows, n);
        } else {
                printf("%-40s %-20s %14s %-3s %-9s %-23s %s\n", "TXN", "ORDER", "AMOUNT", "CUR",
                       "REASON", "RECEIVED_AT (UTC)", "AGE_S");
                for (size_t i = 0; i < n; i++)
                        printf("%-40s %-20" PRId64 " %14" PRId64 " %-3s %-9s %-23s %" PRId64 "\n",
                               rows[i].txn_id, rows[i].order_id, rows[i].amount_minor,
                               rows[i].currency, rows[i].reason, rows[i].received_at,
                               rows[i].age_s);
                printf("%zu refund(s) due\n", n);
        }
        free(rows);
        return 0;
}

int sk_admin_payment_refunded(const sk_conf_t *conf, const sk_admin_opts_t *o)
{
        char errstr[512] = "";
        sk_db_t *db;
        sk_err_t err;

        if (!sk_payment_valid_ref(o->txn) || !sk_payment_valid_ref(o->ref)) {
                fprintf(stderr, PROG ": payment refunded: --txn ID and --ref R are required "
                        "(1..128 printable ASCII characters, no space)\n");
                return 2;
        }
        if (!(db = connect_or_say(conf, "refunded")))
                return 1;
        err = sk_payment_mark_refunded(db, o->txn, o->ref, errstr, sizeof(errstr));
        sk_db_close(db);
        switch (err) {
        case SK_OK: {
                cJSON *root = cJSON_CreateObject();
                char *out;

                cJSON_AddStringToObject(root, "providerTxnId", o->txn);
                cJSON_AddBoolToObject(root, "refunded", 1);
                if ((out = cJSON_PrintUnformatted(root)))
                        printf("%s\n", out);
                cJSON_free(out);
                cJSON_Delete(root);
                return 0;
        }
        case SK_ENOTFOUND:
        case SK_EEXIST:
        case SK_EINVAL:
                fprintf(stderr, PROG ": payment refunded: %s\n", errstr);
                return 2;
        default:
                fprintf(stderr, PROG ": payment refunded: %s\n", errstr);
                return 1;
        }
}
