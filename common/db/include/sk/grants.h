/* sk/grants.h: the least-privilege database users of DESIGN.md 17, as GRANT statements
 * (`seckill-admin db grants`). Two users: the app user (every binary at run time, and
 * every seckill-admin command but `db migrate`) may read and write the rows of the
 * project's tables and nothing else; the admin user (`db migrate`) may also create and
 * change the schema of the one database. The table list is read from the embedded
 * migrations (sk/migrate.h), never kept by hand. Pure text: no connection. */
#pragma once
#include <stddef.h>

#include "sk/err.h"
#include "sk/migrate.h"

#define SK_GRANTS_MAX_TABLES 64

/** The tables the migrations leave behind, in order of creation. */
typedef struct sk_table_list {
        size_t n;
        char name[SK_GRANTS_MAX_TABLES][65];
} sk_table_list_t;

/** @brief Fill @p out with the tables the embedded migrations create: every
 *  `CREATE TABLE [IF NOT EXISTS] name` of ddl/ in order, minus the ones a later
 *  `DROP TABLE [IF EXISTS] name[, name...]` drops (comment lines skipped, names
 *  case-sensitive, backquotes allowed). schema_migrations, created by the runner
 *  itself, is not one of them.
 *  @returns SK_OK; SK_EINVAL if a migration renames a table (RENAME TABLE, ALTER TABLE
 *  ... RENAME: this parser would get the list wrong) or holds more than
 *  SK_GRANTS_MAX_TABLES tables, with the reason in @p errstr. Thread-safe. */
sk_err_t sk_migrate_tables(sk_table_list_t *out, char *errstr, size_t errstr_size);
/** @brief sk_migrate_tables() on the @p n migrations @p migs (borrowed) instead of the
 *  embedded ones (tests). Same returns. */
sk_err_t sk_migrate_tables_of(const sk_migration_t *migs, size_t n, sk_table_list_t *out,
                              char *errstr, size_t errstr_size);

/** @brief The GRANT statements of the least-privilege users on @p database (the
 *  database of SECKILL_MYSQL_URL, [A-Za-z0-9_]{1,64}), as SQL text with comments:
 *  @p admin_user (may be NULL: none) gets SELECT, INSERT, UPDATE, DELETE, CREATE, ALTER,
 *  INDEX, DROP on the database (its `_` escaped: no wildcard); @p app_user (may be
 *  NULL) gets SELECT, INSERT, UPDATE on each table of sk_migrate_tables() (no DELETE:
 *  no binary deletes a row; no schema_migrations). Users are
 *  [A-Za-z0-9_.-]{1,32}; @p host (NULL = "%") is [A-Za-z0-9_.%:-]{1,255}. The users
 *  must exist (CREATE USER ... IDENTIFIED BY ..., written as a comment); table grants
 *  need the tables, so the app user's come after `db migrate`.
 *  @param sql_out  Receives the text, owned by the caller (free()), on success only.
 *  @returns SK_OK; SK_EINVAL (a name with another character, neither user given, or
 *  sk_migrate_tables() failed); SK_ENOMEM. Thread-safe. */
sk_err_t sk_grants_sql(const char *database, const char *app_user, const char *admin_user,
                       const char *host, char **sql_out, char *errstr, size_t errstr_size);
