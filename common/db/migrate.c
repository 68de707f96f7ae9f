/* migrate.c: the migration runner of sk/migrate.h (DESIGN.md 6, `seckill-admin db
 * migrate`). Steps, on one session:
 *   1. connect without a database; GET_LOCK('seckill:migrate:<db>', 30 s) so two
 *      runners at once serialize (the second one then finds everything recorded);
 *   2. CREATE DATABASE IF NOT EXISTS `<db>` CHARACTER SET utf8mb4, USE it;
 *   3. CREATE TABLE IF NOT EXISTS schema_migrations (name, applied_at);
 *   4. for each embedded migration (sk_migrations[], ddl/NNNN_*.sql in name order) not
 *      yet recorded: split it into statements, run them in order, then record its name.
 *   5. RELEASE_LOCK (also released by the server when the session ends).
 * MySQL DDL commits implicitly, so a migration is not atomic: a runner killed half-way
 * leaves some statements applied and the name unrecorded; the next run executes the
 * whole file again. Every migration must therefore be idempotent statement by
 * statement (CREATE TABLE IF NOT EXISTS, ADD COLUMN IF NOT EXISTS on MariaDB, ...).
 *
 * Statement splitting (the contract of ddl/): a statement ends with ';' as the last
 * non-blank character of a line; lines whose first non-blank characters are "--" or
 * "#", and blank lines, are skipped (outside of a statement or inside it). No ';' at
 * the end of a line inside a string literal, no trailing "-- comment" after the ';'.
 * A final statement without ';' is run too.
 *
 * What it does not do: down migrations, checksums of applied files (ddl/ is
 * append-only), retries (transient errors are returned as SK_EAGAIN). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sk/db.h"
#include "sk/migrate.h"

#define MIGRATE_LOCK_TIMEOUT_S 30

static int valid_db_name(const char *s)
{
        if (!*s || strlen(s) > 64)
                return 0;
        for (; *s; s++)
                if (!isalnum((unsigned char)*s) && *s != '_')
                        return 0;
        return 1;
}

/* 1 if @p line (len bytes, no newline) is blank or a comment line. */
static int skip_line(const char *line, size_t len)
{
        size_t i = 0;

        while (i < len && isspace((unsigned char)line[i]))
                i++;
        if (i == len)
                return 1;
        if (line[i] == '#')
                return 1;
        if (line[i] == '-' && i + 1 < len && line[i + 1] == '-')
                return 1;
        return 0;
}

/* Run the statements of one migration. */
static sk_err_t run_statements(sk_db_t *db, const sk_migration_t *m, char *errstr,
                               size_t errstr_size)
{
        const char *p = m->sql;
        size_t cap = strlen(m->sql) + 1, len = 0;
        char *stmt = malloc(cap);
        int nstmt = 0;
        sk_err_t err = SK_OK;

        if (!stmt) {
                sk_seterr(errstr, errstr_size, "out of memory");
                return SK_ENOMEM;
        }
        while (*p) {
                const char *nl = strchr(p, '\n');
                size_t llen = nl ? (size_t)(nl - p) : strlen(p);
                size_t end = llen;
                int last;

                if (skip_line(p, llen))
                        goto next;
                while (end > 0 && isspace((unsigned char)p[end - 1]))
                        end--;
                last = end > 0 && p[end - 1] == ';';
                if (last)
                        end--;
                memcpy(stmt + len, p, end);
                len += end;
                stmt[len++] = '\n';
                stmt[len] = '\0';
                if (last) {
                        nstmt++;
                        if ((err = sk_db_exec(db, stmt, errstr, errstr_size)) != SK_OK) {
                                char why[384];
                                snprintf(why, sizeof(why), "%s", errstr ? errstr : "");
                                sk_seterr(errstr, errstr_size,
                                          "migration %s statement %d: %s", m->name, nstmt,
                                          why);
                                goto done;
                        }
                        len = 0;
                }
next:
                p += llen;
                if (*p == '\n')
                        p++;
        }
        /* A final statement without ';'. */
        for (size_t i = 0; i < len; i++) {
                if (!isspace((unsigned char)stmt[i])) {
                        stmt[len] = '\0';
                        nstmt++;
                        if ((err = sk_db_exec(db, stmt, errstr, errstr_size)) != SK_OK) {
                                char why[384];
                                snprintf(why, sizeof(why), "%s", errstr ? errstr : "");
                                sk_seterr(errstr, errstr_size,
                                          "migration %s statement %d: %s", m->name, nstmt,
                                          why);
                        }
                        break;
                }
        }
done:
        free(stmt);
        return err;
}

sk_err_t sk_migrate(const sk_mysql_url_t *url, int *applied, char *errstr, size_t errstr_size)
{
        sk_db_t *db = NULL;
        char lock_name[96];
        char sql[512], lit[2 * 128 + 3];
        int locked = 0, napplied = 0;
        sk_err_t err;

        if (applied)
                *applied = 0;
        if (!url || !valid_db_name(url->database)) {
                sk_seterr(errstr, errstr_size, "invalid database name \"%s\"",
                          url ? url->database : "");
                return SK_EINVAL;
        }
        if (!(db = sk_db_connect(url, 1, 0, errstr, errstr_size)))
                return SK_EAGAIN; /* connect failures are worth a retry */

        snprintf(lock_name, sizeof(lock_name), "seckill:migrate:%s", url->database);
        if ((err = sk_db_lock(db, lock_name, MIGRATE_LOCK_TIMEOUT_S, errstr,
                              errstr_size)) != SK_OK)
                goto done;
        locked = 1;

        snprintf(sql, sizeof(sql),
                 "CREATE DATABASE IF NOT EXISTS `%s` CHARACTER SET utf8mb4 "
                 "COLLATE utf8mb4_unicode_ci", url->database);
        if ((err = sk_db_exec(db, sql, errstr, errstr_size)) != SK_OK)
                goto done;
        if ((err = sk_db_select_db(db, url->database, errstr, errstr_size)) != SK_OK)
                goto done;
        if ((err = sk_db_exec(db,
                              "CREATE TABLE IF NOT EXISTS schema_migrations ("
                              " name VARCHAR(128) NOT NULL PRIMARY KEY,"
                              " applied_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3)"
                              ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
                              errstr, errstr_size)) != SK_OK)
                goto done;

        for (size_t i = 0; i < sk_nmigrations && sk_migrations[i].name; i++) {
                const sk_migration_t *m = &sk_migrations[i];
                int64_t n = 0;

                if (strlen(m->name) > 128) {
                        sk_seterr(errstr, errstr_size, "migration name too long: %s", m->name);
                        err = SK_EINVAL;
                        goto done;
                }
                if (!sk_db_quote(db, m->name, lit, sizeof(lit))) {
                        err = sk_db_seterr(db, "quote", errstr, errstr_size);
                        goto done;
                }
                snprintf(sql, sizeof(sql),
                         "SELECT COUNT(*) FROM schema_migrations WHERE name = %s", lit);
                if ((err = sk_db_query_i64(db, sql, &n, NULL, errstr, errstr_size)) != SK_OK)
                        goto done;
                if (n > 0)
                        continue;
                if ((err = run_statements(db, m, errstr, errstr_size)) != SK_OK)
                        goto done;
                snprintf(sql, sizeof(sql),
                         "INSERT INTO schema_migrations (name, applied_at) "
                         "VALUES (%s, CURRENT_TIMESTAMP(3))", lit);
                if ((err = sk_db_exec(db, sql, errstr, errstr_size)) != SK_OK)
                        goto done;
                napplied++;
        }
        err = SK_OK;
done:
        if (applied)
                *applied = napplied;
        if (locked)
                (void)sk_db_unlock(db, lock_name, NULL, 0);
        sk_db_close(db);
        return err;
}
