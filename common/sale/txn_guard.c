/* txn_guard.c: the provider-txn-id guard of `db migrate` (sk/txn_guard.h), the `before`
 * moment of a sk_migrate_hook_t on migration 0009_txn_id_bytes: list the stored ids that
 * the move to ascii_bin would change (not printable ASCII) or merge (equal once
 * converted), refuse while there are some. What to do with them (refund, re-key) is the
 * operator's: nothing is changed here. */
#include <stdio.h>
#include <string.h>

#include "sk/db.h"
#include "sk/txn_guard.h"

#define GUARD_MIGRATION "0009_txn_id_bytes"
#define GUARD_LIST_MAX 8        /* ids named in the refusal */

/* The stored ids that 0009 cannot keep byte for byte, as hex: those with a character
 * outside printable ASCII, then every id of a group that would become one. */
static const char offenders_sql[] =
        "SELECT HEX(provider_txn_id) FROM tb_payment WHERE provider_txn_id COLLATE utf8mb4_bin "
        "REGEXP '[^!-~]' OR LENGTH(provider_txn_id) <> CHAR_LENGTH(provider_txn_id) "
        "UNION SELECT HEX(p.provider_txn_id) FROM tb_payment p JOIN (SELECT "
        "CAST(CONVERT(provider_txn_id USING ascii) AS BINARY) k FROM tb_payment GROUP BY k "
        "HAVING COUNT(*) > 1) c ON CAST(CONVERT(p.provider_txn_id USING ascii) AS BINARY) = c.k "
        "ORDER BY 1";

static int hexval(char c)
{
        return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : 0;
}

/* Append hex-encoded id @p hex to @p out as text, bytes outside printable ASCII and the
 * quote as \xNN. */
static void append_id(char *out, size_t cap, const char *hex)
{
        size_t n = strlen(out), i;

        if (n + 4 < cap)
                out[n++] = '"';
        for (i = 0; hex[i] && hex[i + 1] && n + 6 < cap; i += 2) {
                int b = hexval(hex[i]) * 16 + hexval(hex[i + 1]);

                if (b >= 0x21 && b <= 0x7e && b != '"' && b != '\\')
                        out[n++] = (char)b;
                else
                        n += (size_t)snprintf(out + n, cap - n, "\\x%02x", b);
        }
        if (n + 2 < cap)
                out[n++] = '"';
        out[n] = '\0';
}

static sk_err_t guard_before(sk_db_t *db, void *arg, char *errstr, size_t errstr_size)
{
        char list[640] = "";
        int64_t tables = 0;
        MYSQL_RES *res = NULL;
        MYSQL_ROW row;
        uint64_t n;
        sk_err_t err;

        (void)arg;
        if ((err = sk_db_query_i64(db,
                                   "SELECT COUNT(*) FROM information_schema.TABLES WHERE "
                                   "TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'tb_payment'",
                                   &tables, NULL, errstr, errstr_size)) != SK_OK || tables == 0)
                return err; /* 0008 pending too: nothing stored yet */
        if ((err = sk_db_query(db, offenders_sql, sizeof(offenders_sql) - 1, &res, errstr,
                               errstr_size)) != SK_OK)
                return err;
        n = mysql_num_rows(res);
        for (uint64_t i = 0; i < n && i < GUARD_LIST_MAX && (row = mysql_fetch_row(res)); i++) {
                if (i)
                        strncat(list, ", ", sizeof(list) - strlen(list) - 1);
                append_id(list, sizeof(list), row[0] ? row[0] : "");
        }
        mysql_free_result(res);
        if (n == 0)
                return SK_OK;
        sk_seterr(errstr, errstr_size,
                  "refused: %llu provider txn id(s) in tb_payment are not printable ASCII or "
                  "would become equal, and migration " GUARD_MIGRATION " (ids compared byte for "
                  "byte) is pending: %s%s; refund or re-key them by hand first (DESIGN.md 15)",
                  (unsigned long long)n, list, n > GUARD_LIST_MAX ? ", ..." : "");
        return SK_EINVAL;
}

void sk_txn_guard_hook(sk_migrate_hook_t *hook)
{
        hook->name = GUARD_MIGRATION;
        hook->before = guard_before;
        hook->after = NULL;
        hook->arg = NULL;
}
