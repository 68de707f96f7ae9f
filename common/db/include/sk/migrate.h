/* sk/migrate.h: the numbered migrations of ddl/ (embedded at build time) and their
 * runner. `seckill-admin db migrate`: CREATE DATABASE IF NOT EXISTS, a versions table
 * (schema_migrations), a tb_lock row (sk/dblock.h) so two runners at once serialize, each migration not
 * yet applied is run statement by statement and recorded. Safe to run twice. */
#pragma once
#include <stddef.h>
#include "sk/err.h"
#include "sk/conf.h"

typedef struct sk_migration {
        const char *name;  /* file name without .sql, e.g. "0001_schema" */
        const char *sql;   /* statements separated by ';' at the end of a line */
} sk_migration_t;

extern const sk_migration_t sk_migrations[]; /* NULL-name terminated, in order */
extern const size_t sk_nmigrations;

/** @brief Apply pending migrations to @p url's database (created if missing, utf8mb4),
 *  holding the tb_lock row 'seckill:migrate:<db>' (sk/dblock.h; waited for up to 30 s,
 *  ttl 120 s, re-checked and renewed before every statement; tb_lock itself is created
 *  first, CREATE TABLE IF NOT EXISTS) for the whole run. Statements of a
 *  migration end with ';' at the end of a line; "--"/"#" comment lines and blank lines
 *  are skipped. A migration is recorded in schema_migrations only after all its
 *  statements ran, and is not atomic (DDL commits implicitly): every statement must be
 *  idempotent (IF NOT EXISTS) so that a re-run after a crash completes it.
 *  *applied (may be NULL) receives how many ran now (also on failure).
 *  @returns SK_OK; SK_EINVAL (bad database name); SK_EAGAIN (connect failed, the lock
 *  is held by another runner for 30 s, lost mid-run, or a transient error); SK_EDB (a statement
 *  failed: errstr names the migration and statement). Opens and closes its own
 *  connection; thread-safe as long as sk_db_library_init() ran. */
sk_err_t sk_migrate(const sk_mysql_url_t *url, int *applied, char *errstr, size_t errstr_size);
