/* sk/grants.h: least-privilege database users as GRANT statements (DESIGN.md 15
 * "Least privilege in the book of record", 17; `seckill-admin db grants`). This layer
 * knows no table of the sale: the caller hands it one user per binary with its table and
 * column privileges (admin/grants.c holds them); it checks them against the tables the
 * embedded migrations create (sk/migrate.h, never kept by hand) and writes the text.
 * Pure text: no connection. */
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

/** One table's privileges for one user (DESIGN.md 15 "Least privilege"): each of
 *  @c select, @c insert, @c update is NULL (none), "*" (the whole table) or a column list
 *  "a, b, c" (column grants: an INSERT may set only those columns, an UPDATE change only
 *  those; an `INSERT ... ON DUPLICATE KEY UPDATE c = c` needs UPDATE on c). A row with all
 *  three NULL says "nothing on this table", so that every table is decided. */
typedef struct sk_grant_row {
        const char *table;
        const char *select, *insert, *update;
} sk_grant_row_t;

/** One user of the book of record: one per binary (DESIGN.md 15). */
typedef struct sk_grant_user {
        const char *role;               /* "front", "consumer", ...: named in errors */
        const char *user;               /* the account name, [A-Za-z0-9_.-]{1,32}; NULL = left out */
        const char *what;               /* comment lines (each starting "-- ") printed above its grants */
        int schema;                     /* 1: the migrations' database-level grant (rows unused) */
        const sk_grant_row_t *rows;     /* schema == 0: exactly one row per table of the migrations */
        size_t nrows;
} sk_grant_user_t;

/** @brief The GRANT statements of the users @p users (@p nusers, borrowed) on
 *  @p database (the database of SECKILL_MYSQL_URL, [A-Za-z0-9_]{1,64}), as SQL text with
 *  comments. A schema user gets SELECT, INSERT, UPDATE, DELETE, CREATE, ALTER, INDEX,
 *  DROP on the database (its `_` escaped: no wildcard), nothing global, no GRANT
 *  OPTION. Any other user gets, per row, one GRANT with the row's table and column
 *  privileges; its rows must name every table of sk_migrate_tables() exactly once and
 *  no other (a migration that adds a table makes every such user decide on it), and
 *  schema_migrations never. @p host (required: no '%' default) is
 *  [A-Za-z0-9_.%:-]{1,255}. The users must exist (CREATE USER ... IDENTIFIED BY ...,
 *  written as a comment); table and column grants need the tables, so they come after
 *  `db migrate`.
 *  @param sql_out  Receives the text, owned by the caller (free()), on success only.
 *  @returns SK_OK; SK_EINVAL (no host, a name or column list with another character,
 *  no user given, a table missing or unknown or named twice in a user's rows, or
 *  sk_migrate_tables() failed), with the reason in @p errstr; SK_ENOMEM. Thread-safe. */
sk_err_t sk_grants_sql(const char *database, const sk_grant_user_t *users, size_t nusers,
                       const char *host, char **sql_out, char *errstr, size_t errstr_size);
