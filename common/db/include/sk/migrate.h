/* sk/migrate.h: the numbered migrations of ddl/ (embedded at build time) and their
 * runner. `seckill-admin db migrate`: CREATE DATABASE IF NOT EXISTS, a versions table
 * (schema_migrations), a tb_lock row (sk/dblock.h) so two runners at once serialize, each migration not
 * yet applied is run statement by statement and recorded. Safe to run twice. */
#pragma once
#include <stddef.h>
#include <stdint.h>
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
 *  *applied (may be NULL) receives how many ran now (also on failure). The v4 -> v5
 *  guard of sk_migrate_ex() applies, without allow_unpaid: SK_EINVAL ("refused: ...")
 *  while an order is UNPAID and 0008_payments is pending.
 *  @returns SK_OK; SK_EINVAL (bad database name); SK_EAGAIN (connect failed, the lock
 *  is held by another runner for 30 s, lost mid-run, or a transient error); SK_EDB (a statement
 *  failed: errstr names the migration and statement). Opens and closes its own
 *  connection; thread-safe as long as sk_db_library_init() ran. */
sk_err_t sk_migrate(const sk_mysql_url_t *url, int *applied, char *errstr, size_t errstr_size);

/** Options of sk_migrate_ex (`seckill-admin db migrate`). */
typedef struct sk_migrate_opts {
        int allow_unpaid;       /* --allow-unpaid: migrate to v5 despite UNPAID orders */
        const char *currency;   /* SECKILL_CURRENCY, 3 letters A-Z, borrowed; NULL = "CNY" */
} sk_migrate_opts_t;

/** @brief sk_migrate() with the v4 -> v5 guard's options (DESIGN.md header, "Migration
 *  from v4"): while migration 0008_payments is pending and an order is UNPAID (status 1
 *  with a pay_deadline), it refuses before changing anything (SK_EINVAL, errstr
 *  "refused: N order(s) UNPAID ...") unless @p o->allow_unpaid; then those orders keep
 *  amount 0 and get currency @p o->currency, set after 0008's statements and before 0008
 *  is recorded (a re-run after a crash sets it again). @p o may be NULL (no
 *  allow_unpaid: what sk_migrate does). *unpaid_left (may be NULL) receives how many
 *  UNPAID orders were left that way (0 unless it returns SK_OK with allow_unpaid).
 *  Same locking, returns and thread-safety as sk_migrate(); SK_EINVAL also for an
 *  invalid currency with allow_unpaid. */
sk_err_t sk_migrate_ex(const sk_mysql_url_t *url, const sk_migrate_opts_t *o, int *applied,
                       int64_t *unpaid_left, char *errstr, size_t errstr_size);
