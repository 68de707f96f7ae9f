/* migrate.c: the migration runner of sk/migrate.h (DESIGN.md 6, `seckill-admin db
 * migrate`). Steps, on one session:
 *   1. connect without a database; CREATE DATABASE IF NOT EXISTS `<db>` CHARACTER SET
 *      utf8mb4, USE it (both idempotent, so two runners may do it at once);
 *   2. the bootstrap of the lock table: CREATE TABLE IF NOT EXISTS tb_lock (the statement
 *      of ddl/0007_lock.sql, sk_dblock_ensure_table), then take the row lock
 *      'seckill:migrate:<db>' (sk/dblock.h; waited for up to 30 s, ttl 120 s) so two
 *      runners at once serialize (the second one then finds everything recorded). Not
 *      GET_LOCK: it is node-local on Galera (DESIGN.md 16);
 *   3. CREATE TABLE IF NOT EXISTS schema_migrations (name, applied_at);
 *   4. for each embedded migration (sk_migrations[], ddl/NNNN_*.sql in name order) not
 *      yet recorded: split it into statements, run them in order (the lock re-checked and
 *      renewed before each one: a runner that lost its row stops), then record its name;
 *   5. release the row (it also ends by itself at its until).
 * The caller's hooks (sk_migrate_hook_t): between steps 3 and 4, the `before` of each
 * hook whose migration is pending (one refusal stops the run before anything changes);
 * in step 4, a hook's `after` once its migration's statements ran, before its name is
 * recorded (a re-run after a crash in between calls both again). What a hook checks is
 * its owner's business (the sale's unpaid-order guard, sk/unpaid_guard.h): this layer
 * knows no table of the application.
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
#include "sk/dblock.h"
#include "sk/migrate.h"

#define MIGRATE_LOCK_WAIT_MS 30000
#define MIGRATE_LOCK_TTL_MS 120000  /* renewed before every statement */

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

/* Run one statement of @p m (number @p nstmt) after re-checking the lock. */
static sk_err_t run_one(sk_db_t *db, sk_dblock_t *lk, const sk_migration_t *m, int nstmt,
                        const char *stmt, char *errstr, size_t errstr_size)
{
        char why[384];
        sk_err_t err;

        if ((err = sk_dblock_check(lk, errstr, errstr_size)) != SK_OK) {
                snprintf(why, sizeof(why), "%s", errstr ? errstr : "");
                sk_seterr(errstr, errstr_size, "migration %s statement %d not run: %s",
                          m->name, nstmt, why);
                return SK_EAGAIN;
        }
        if ((err = sk_db_exec(db, stmt, errstr, errstr_size)) != SK_OK) {
                snprintf(why, sizeof(why), "%s", errstr ? errstr : "");
                sk_seterr(errstr, errstr_size, "migration %s statement %d: %s", m->name, nstmt,
                          why);
        }
        return err;
}

/* Run the statements of one migration. */
static sk_err_t run_statements(sk_db_t *db, sk_dblock_t *lk, const sk_migration_t *m,
                               char *errstr, size_t errstr_size)
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
                        if ((err = run_one(db, lk, m, nstmt, stmt, errstr, errstr_size)) != SK_OK)
                                goto done;
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
                        err = run_one(db, lk, m, nstmt, stmt, errstr, errstr_size);
                        break;
                }
        }
done:
        free(stmt);
        return err;
}

/* *yes = 1 if migration @p name is recorded in schema_migrations. */
static sk_err_t recorded(sk_db_t *db, const char *name, int *yes, char *errstr, size_t errstr_size)
{
        int64_t n = 0;
        sk_err_t err;

        *yes = 0;
        if (strlen(name) > 128) {
                sk_seterr(errstr, errstr_size, "migration name too long: %s", name);
                return SK_EINVAL;
        }
        if ((err = sk_db_i64(db, "SELECT COUNT(*) FROM schema_migrations WHERE name = ?",
                             SK_ARGS(SK_STR(name)), &n, NULL, errstr, errstr_size)) != SK_OK)
                return err;
        *yes = n > 0;
        return SK_OK;
}

/* Steps 1 to 3 of the top comment: the database, the lock table, the lock taken (*lk),
 * schema_migrations; *db is the session. On failure the caller closes what is set. */
static sk_err_t open_locked(const sk_mysql_url_t *url, sk_db_t **db, sk_dblock_t **lk,
                            char *errstr, size_t errstr_size)
{
        char lock_name[96];
        sk_err_t err;

        if (!(*db = sk_db_connect(url, 1, 0, errstr, errstr_size)))
                return SK_EAGAIN; /* connect failures are worth a retry */
        if ((err = sk_db_exec_ident(*db, "CREATE DATABASE IF NOT EXISTS ", url->database,
                                    " CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci", errstr,
                                    errstr_size)) != SK_OK)
                return err;
        if ((err = sk_db_select_db(*db, url->database, errstr, errstr_size)) != SK_OK)
                return err;
        /* The bootstrap: the lock table before the lock (sk/dblock.h). */
        if ((err = sk_dblock_ensure_table(*db, errstr, errstr_size)) != SK_OK)
                return err;
        snprintf(lock_name, sizeof(lock_name), "seckill:migrate:%s", url->database);
        if (!(*lk = sk_dblock_open(url, lock_name, MIGRATE_LOCK_TTL_MS, errstr, errstr_size)))
                return SK_EAGAIN;
        if ((err = sk_dblock_take(*lk, MIGRATE_LOCK_WAIT_MS, errstr, errstr_size)) != SK_OK)
                return err;
        return sk_db_exec(*db,
                          "CREATE TABLE IF NOT EXISTS schema_migrations ("
                          " name VARCHAR(128) NOT NULL PRIMARY KEY,"
                          " applied_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3)"
                          ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
                          errstr, errstr_size);
}

/* The `before` of every hook whose migration is pending, in order; the first failure
 * stops (nothing has changed yet). */
static sk_err_t hooks_before(sk_db_t *db, const sk_migrate_hook_t *hooks, size_t nhooks,
                             char *errstr, size_t errstr_size)
{
        for (size_t i = 0; i < nhooks; i++) {
                int done = 0;
                sk_err_t err;

                if (!hooks[i].before)
                        continue;
                if ((err = recorded(db, hooks[i].name, &done, errstr, errstr_size)) != SK_OK)
                        return err;
                if (!done && (err = hooks[i].before(db, hooks[i].arg, errstr, errstr_size)) != SK_OK)
                        return err;
        }
        return SK_OK;
}

/* The `after` of every hook of migration @p name, in order. */
static sk_err_t hooks_after(sk_db_t *db, const sk_migrate_hook_t *hooks, size_t nhooks,
                            const char *name, char *errstr, size_t errstr_size)
{
        for (size_t i = 0; i < nhooks; i++) {
                sk_err_t err;

                if (hooks[i].after && strcmp(hooks[i].name, name) == 0 &&
                    (err = hooks[i].after(db, hooks[i].arg, errstr, errstr_size)) != SK_OK)
                        return err;
        }
        return SK_OK;
}

/* Step 4: every migration not yet recorded, run then recorded; *napplied counts them. */
static sk_err_t apply_pending(sk_db_t *db, sk_dblock_t *lk, const sk_migrate_hook_t *hooks,
                              size_t nhooks, int *napplied, char *errstr, size_t errstr_size)
{
        for (size_t i = 0; i < sk_nmigrations && sk_migrations[i].name; i++) {
                const sk_migration_t *m = &sk_migrations[i];
                int done_already = 0;
                sk_err_t err;

                if ((err = recorded(db, m->name, &done_already, errstr, errstr_size)) != SK_OK)
                        return err;
                if (done_already)
                        continue;
                if ((err = run_statements(db, lk, m, errstr, errstr_size)) != SK_OK)
                        return err;
                if ((err = hooks_after(db, hooks, nhooks, m->name, errstr, errstr_size)) != SK_OK)
                        return err;
                if ((err = sk_db_exec_args(db, "INSERT INTO schema_migrations (name, applied_at) "
                                           "VALUES (?, CURRENT_TIMESTAMP(3))",
                                           SK_ARGS(SK_STR(m->name)), NULL, errstr,
                                           errstr_size)) != SK_OK)
                        return err;
                (*napplied)++;
        }
        return SK_OK;
}

sk_err_t sk_migrate(const sk_mysql_url_t *url, int *applied, char *errstr, size_t errstr_size)
{
        return sk_migrate_hooks(url, NULL, 0, applied, errstr, errstr_size);
}

sk_err_t sk_migrate_hooks(const sk_mysql_url_t *url, const sk_migrate_hook_t *hooks,
                          size_t nhooks, int *applied, char *errstr, size_t errstr_size)
{
        sk_db_t *db = NULL;
        sk_dblock_t *lk = NULL;
        int napplied = 0;
        sk_err_t err;

        if (applied)
                *applied = 0;
        if (!url || !sk_db_ident_ok(url->database)) {
                sk_seterr(errstr, errstr_size, "invalid database name \"%s\"",
                          url ? url->database : "");
                return SK_EINVAL;
        }
        for (size_t i = 0; i < nhooks; i++) {
                if (!hooks[i].name) {
                        sk_seterr(errstr, errstr_size, "migration hook %zu names no migration", i);
                        return SK_EINVAL;
                }
        }
        if ((err = open_locked(url, &db, &lk, errstr, errstr_size)) == SK_OK &&
            (err = hooks_before(db, hooks, nhooks, errstr, errstr_size)) == SK_OK)
                err = apply_pending(db, lk, hooks, nhooks, &napplied, errstr, errstr_size);
        if (applied)
                *applied = napplied;
        sk_dblock_close(lk);    /* releases the row if still ours */
        sk_db_close(db);
        return err;
}
