/* sk/migrate.h: the numbered migrations of ddl/ (embedded at build time) and their
 * runner. `seckill-admin db migrate`: CREATE DATABASE IF NOT EXISTS, a versions table
 * (schema_migrations), a tb_lock row (sk/dblock.h) so two runners at once serialize, each
 * migration not yet applied is run statement by statement and recorded, with the
 * caller's checks (sk_migrate_hook_t) around the migrations they watch. Safe to run
 * twice. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "sk/err.h"
#include "sk/conf.h"
#include "sk/db.h"

typedef struct sk_migration {
        const char *name;  /* file name without .sql, e.g. "0001_schema" */
        const char *sql;   /* statements separated by ';' at the end of a line */
} sk_migration_t;

extern const sk_migration_t sk_migrations[]; /* NULL-name terminated, in order */
extern const size_t sk_nmigrations;

/** A check the caller supplies for one migration: the rule is the caller's (for example
 *  the sale's unpaid-order guard, sk/unpaid_guard.h); the runner only calls it at its
 *  moment. Borrowed for the run. */
typedef struct sk_migrate_hook {
        const char *name;       /* the migration it watches, e.g. "0008_payments"; borrowed */
        /* Called once per run when @name is pending (not in schema_migrations), with the
         * runner's lock held, before any migration of the run is applied. A return other
         * than SK_OK stops the run with that code and its errstr: nothing applied. NULL:
         * none. */
        sk_err_t (*before)(sk_db_t *db, void *arg, char *errstr, size_t errstr_size);
        /* Called after @name's statements ran, before @name is recorded (a re-run after a
         * crash in between calls before and after again). A return other than SK_OK stops
         * the run, @name unrecorded. NULL: none. */
        sk_err_t (*after)(sk_db_t *db, void *arg, char *errstr, size_t errstr_size);
        void *arg;              /* passed to both; borrowed */
} sk_migrate_hook_t;

/** @brief Apply pending migrations to @p url's database (created if missing, utf8mb4),
 *  holding the tb_lock row 'seckill:migrate:<db>' (sk/dblock.h; waited for up to 30 s,
 *  ttl 120 s, re-checked and renewed before every statement; tb_lock itself is created
 *  first, CREATE TABLE IF NOT EXISTS) for the whole run, calling the @p nhooks hooks of
 *  @p hooks (borrowed; NULL when 0) at their moments (sk_migrate_hook_t). Statements of
 *  a migration end with ';' at the end of a line; "--"/"#" comment lines and blank lines
 *  are skipped. A migration is recorded in schema_migrations only after all its
 *  statements ran, and is not atomic (DDL commits implicitly): every statement must be
 *  idempotent (IF NOT EXISTS) so that a re-run after a crash completes it.
 *  *applied (may be NULL) receives how many ran now (also on failure).
 *  @returns SK_OK; SK_EINVAL (bad database name, a hook without a name); SK_EAGAIN
 *  (connect failed, the lock is held by another runner for 30 s, lost mid-run, or a
 *  transient error); SK_EDB (a statement failed: errstr names the migration and
 *  statement); a hook's own code. Opens and closes its own connection; thread-safe as
 *  long as sk_db_library_init() ran (the hooks run on the caller's thread). */
sk_err_t sk_migrate_hooks(const sk_mysql_url_t *url, const sk_migrate_hook_t *hooks,
                          size_t nhooks, int *applied, char *errstr, size_t errstr_size);

/** @brief sk_migrate_hooks() without hooks (the tests' fresh databases). */
sk_err_t sk_migrate(const sk_mysql_url_t *url, int *applied, char *errstr, size_t errstr_size);
