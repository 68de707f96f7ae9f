/* sk/migrate.h: the numbered migrations of ddl/ (embedded at build time) and their
 * runner. `seckill-admin db migrate`: CREATE DATABASE IF NOT EXISTS, a versions table
 * (schema_migrations), GET_LOCK so two runners at once serialize, each migration not
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

/** @brief Apply pending migrations to @p url's database (created if missing).
 *  *applied (may be NULL) receives how many ran now. */
sk_err_t sk_migrate(const sk_mysql_url_t *url, int *applied, char *errstr, size_t errstr_size);
