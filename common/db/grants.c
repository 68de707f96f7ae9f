/* grants.c: least-privilege users as GRANT statements (sk/grants.h, DESIGN.md 15
 * "Least privilege in the book of record", 17; `seckill-admin db grants`).
 *
 * The table list comes from the embedded migrations (sk_migrations[]): a small
 * tokenizer reads every statement of ddl/ (comment lines skipped, as the runner does),
 * adds the name after CREATE TABLE [IF NOT EXISTS] and removes the names after DROP
 * TABLE [IF EXISTS]; a RENAME is refused rather than guessed. Each run-time user's rows
 * (the caller's) must name every one of those tables, so a migration that adds a table
 * cannot be forgotten by the grants.
 *
 * A schema user (the admin) gets the migrations' statements on the one database:
 * CREATE (the database itself and its tables), ALTER, INDEX, DROP (ALTER ... DROP, a
 * later DROP TABLE), and the rows of schema_migrations and of every table (SELECT,
 * INSERT, UPDATE, DELETE). No GRANT OPTION, nothing global. A database-level grant
 * treats `_` and `%` in the name as wildcards, so they are escaped there; table-level
 * grants take the name literally.
 *
 * What it does not do: know which binary needs what (the caller's rows), connect,
 * create users or choose passwords (the operator's CREATE USER is written as a
 * comment). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sk/grants.h"
#include "sk/migrate.h"

#define ADMIN_PRIVS "SELECT, INSERT, UPDATE, DELETE, CREATE, ALTER, INDEX, DROP"

/* ------------------------------------------------------------------ tokens */

typedef struct tok {
        const char *p;          /* next character to read */
        char word[80];          /* last token: identifier/keyword, "," or ";" */
} tok_t;

/* Skips blanks and comment lines ("--" or "#" as the first non-blank of a line). */
static void skip_space(tok_t *t)
{
        for (;;) {
                while (*t->p && isspace((unsigned char)*t->p))
                        t->p++;
                if (*t->p == '#' || (t->p[0] == '-' && t->p[1] == '-')) {
                        while (*t->p && *t->p != '\n')
                                t->p++;
                        continue;
                }
                return;
        }
}

/* Reads the next token into t->word: a word of [A-Za-z0-9_$] or a `quoted` name
 * (without its quotes), a string literal (as "'"), or one other character.
 * @returns 0, or -1 at the end of the text. */
static int next(tok_t *t)
{
        size_t n = 0;

        skip_space(t);
        if (!*t->p)
                return -1;
        if (*t->p == '`') {
                t->p++;
                while (*t->p && *t->p != '`' && n + 1 < sizeof(t->word))
                        t->word[n++] = *t->p++;
                if (*t->p == '`')
                        t->p++;
        } else if (*t->p == '\'' || *t->p == '"') {
                char q = *t->p++;
                while (*t->p && *t->p != q)
                        t->p += (*t->p == '\\' && t->p[1]) ? 2 : 1;
                if (*t->p)
                        t->p++;
                t->word[n++] = '\'';
        } else if (isalnum((unsigned char)*t->p) || *t->p == '_' || *t->p == '$') {
                while ((isalnum((unsigned char)*t->p) || *t->p == '_' || *t->p == '$') &&
                       n + 1 < sizeof(t->word))
                        t->word[n++] = *t->p++;
        } else {
                t->word[n++] = *t->p++;
        }
        t->word[n] = '\0';
        return 0;
}

static int kw(const tok_t *t, const char *w)
{
        return strcasecmp(t->word, w) == 0;
}

static int find(const sk_table_list_t *l, const char *name)
{
        for (size_t i = 0; i < l->n; i++)
                if (strcmp(l->name[i], name) == 0)
                        return (int)i;
        return -1;
}

static void drop(sk_table_list_t *l, const char *name)
{
        int i = find(l, name);

        if (i < 0)
                return;
        memmove(l->name[i], l->name[i + 1], (l->n - (size_t)i - 1) * sizeof(l->name[0]));
        l->n--;
}

/* Reads "[IF [NOT] EXISTS] name" after CREATE TABLE / DROP TABLE into t->word.
 * @returns 0, or -1 at the end of the text. */
static int table_name(tok_t *t)
{
        if (next(t) != 0)
                return -1;
        if (kw(t, "IF")) {
                do {
                        if (next(t) != 0)
                                return -1;
                } while (!kw(t, "EXISTS"));
                if (next(t) != 0)
                        return -1;
        }
        return 0;
}

/* Skips to the end of the current statement (";" read, or the end of the text).
 * With @p alter set, refuses a table rename on the way (ALTER TABLE ... RENAME
 * [TO|AS] name; RENAME COLUMN/INDEX/KEY are fine). @returns 0, or -1 on a rename. */
static int skip_statement(tok_t *t, int alter)
{
        while (strcmp(t->word, ";") != 0 && next(t) == 0)
                if (alter && kw(t, "RENAME")) {
                        if (next(t) != 0)
                                return 0;
                        if (!kw(t, "COLUMN") && !kw(t, "INDEX") && !kw(t, "KEY"))
                                return -1;
                }
        return 0;
}

/* One migration's statements into @p out. @returns SK_OK or SK_EINVAL. */
static sk_err_t scan(const sk_migration_t *m, sk_table_list_t *out, char *errstr,
                     size_t errstr_size)
{
        tok_t t = { .p = m->sql };

        while (next(&t) == 0) {         /* t.word: the first word of a statement */
                int create = kw(&t, "CREATE"), alter = kw(&t, "ALTER");
                if (kw(&t, "RENAME"))
                        goto renamed;
                if ((create || kw(&t, "DROP")) && next(&t) == 0 && kw(&t, "TABLE")) {
                        if (table_name(&t) != 0)
                                break;
                        for (;;) {
                                if (!create) {
                                        drop(out, t.word);
                                } else if (find(out, t.word) < 0) {
                                        if (out->n == SK_GRANTS_MAX_TABLES) {
                                                sk_seterr(errstr, errstr_size, "more than %d tables",
                                                          SK_GRANTS_MAX_TABLES);
                                                return SK_EINVAL;
                                        }
                                        size_t len = strlen(t.word);

                                        if (len >= sizeof(out->name[0])) {
                                                sk_seterr(errstr, errstr_size, "table name longer "
                                                          "than %zu bytes", sizeof(out->name[0]) - 1);
                                                return SK_EINVAL;
                                        }
                                        memcpy(out->name[out->n++], t.word, len + 1);
                                }
                                /* DROP TABLE a, b: the next name after a comma. */
                                if (create || next(&t) != 0 || strcmp(t.word, ",") != 0 || next(&t) != 0)
                                        break;
                        }
                }
                if (skip_statement(&t, alter) != 0)
                        goto renamed;
        }
        return SK_OK;
renamed:
        sk_seterr(errstr, errstr_size, "migration %s renames a table: common/db/grants.c "
                  "cannot list its tables", m->name);
        return SK_EINVAL;
}

sk_err_t sk_migrate_tables_of(const sk_migration_t *migs, size_t n, sk_table_list_t *out,
                              char *errstr, size_t errstr_size)
{
        sk_err_t err;

        out->n = 0;
        for (size_t i = 0; i < n; i++)
                if ((err = scan(&migs[i], out, errstr, errstr_size)) != SK_OK)
                        return err;
        return SK_OK;
}

sk_err_t sk_migrate_tables(sk_table_list_t *out, char *errstr, size_t errstr_size)
{
        return sk_migrate_tables_of(sk_migrations, sk_nmigrations, out, errstr, errstr_size);
}

/* ------------------------------------------------------------------ text */

static int name_ok(const char *s, const char *extra, size_t max)
{
        size_t n = 0;

        for (; s[n]; n++)
                if (!isalnum((unsigned char)s[n]) && !strchr(extra, s[n]))
                        return 0;
        return n >= 1 && n <= max;
}

/* A privilege's scope: NULL, "*", or "col, col" (names of [A-Za-z0-9_], ", " between). */
static int cols_ok(const char *c)
{
        const char *p = c;

        if (!c || !strcmp(c, "*"))
                return 1;
        for (;;) {
                size_t n = 0;

                while (isalnum((unsigned char)p[n]) || p[n] == '_')
                        n++;
                if (n == 0 || n > 64)
                        return 0;
                p += n;
                if (!*p)
                        return 1;
                if (strncmp(p, ", ", 2))
                        return 0;
                p += 2;
        }
}

/* The database name with `_` and `%` escaped for a database-level grant. */
static void db_pattern(const char *db, char *dst, size_t dst_size)
{
        size_t n = 0;

        for (; *db && n + 2 < dst_size; db++) {
                if (*db == '_' || *db == '%')
                        dst[n++] = '\\';
                dst[n++] = *db;
        }
        dst[n] = '\0';
}

/* @p u's rows against the migrations' @p tables: each table exactly once, no other,
 * every column list well formed. */
static sk_err_t check_rows(const sk_grant_user_t *u, const sk_table_list_t *tables, char *errstr,
                           size_t errstr_size)
{
        for (size_t i = 0; i < u->nrows; i++) {
                const sk_grant_row_t *r = &u->rows[i];

                if (find(tables, r->table) < 0) {
                        sk_seterr(errstr, errstr_size, "%s: table %s is not one the migrations create",
                                  u->role, r->table);
                        return SK_EINVAL;
                }
                for (size_t j = 0; j < i; j++)
                        if (!strcmp(u->rows[j].table, r->table)) {
                                sk_seterr(errstr, errstr_size, "%s: table %s named twice", u->role, r->table);
                                return SK_EINVAL;
                        }
                if (!cols_ok(r->select) || !cols_ok(r->insert) || !cols_ok(r->update)) {
                        sk_seterr(errstr, errstr_size, "%s: bad column list on %s", u->role, r->table);
                        return SK_EINVAL;
                }
        }
        for (size_t t = 0; t < tables->n; t++) {
                size_t i = 0;

                while (i < u->nrows && strcmp(u->rows[i].table, tables->name[t]))
                        i++;
                if (i == u->nrows) {
                        sk_seterr(errstr, errstr_size, "%s: table %s of the migrations has no grant row "
                                  "(decide what this binary may do with it)", u->role, tables->name[t]);
                        return SK_EINVAL;
                }
        }
        return SK_OK;
}

/* One privilege of a row into @p f: "SELECT" or "INSERT (a, b)"; "*" = the whole table. */
static void priv(FILE *f, int *first, const char *name, const char *cols)
{
        if (!cols)
                return;
        fprintf(f, "%s%s", *first ? "" : ", ", name);
        if (strcmp(cols, "*"))
                fprintf(f, " (%s)", cols);
        *first = 0;
}

static void print_user(FILE *f, const sk_grant_user_t *u, const char *database, const char *host)
{
        char pat[140];

        fprintf(f, "%s", u->what);
        if (u->schema) {
                db_pattern(database, pat, sizeof(pat));
                fprintf(f, "GRANT " ADMIN_PRIVS " ON `%s`.* TO '%s'@'%s';\n", pat, u->user, host);
                return;
        }
        for (size_t i = 0; i < u->nrows; i++) {
                const sk_grant_row_t *r = &u->rows[i];
                int first = 1;

                if (!r->select && !r->insert && !r->update)
                        continue;
                fprintf(f, "GRANT ");
                priv(f, &first, "SELECT", r->select);
                priv(f, &first, "INSERT", r->insert);
                priv(f, &first, "UPDATE", r->update);
                fprintf(f, " ON `%s`.`%s` TO '%s'@'%s';\n", database, r->table, u->user, host);
        }
}

/* Every argument checked before a line is written: @returns SK_OK or SK_EINVAL. */
static sk_err_t check_args(const char *database, const sk_grant_user_t *users, size_t nusers,
                           const char *host, const sk_table_list_t *tables, char *errstr,
                           size_t errstr_size)
{
        size_t given = 0;
        sk_err_t err;

        if (!database || !name_ok(database, "_", 64)) {
                sk_seterr(errstr, errstr_size, "database name must be 1..64 chars of [A-Za-z0-9_]");
                return SK_EINVAL;
        }
        if (!host || !*host) {
                sk_seterr(errstr, errstr_size, "the host part of the accounts is required (--host: the "
                          "address the binaries connect from; '%%' only if you mean any host)");
                return SK_EINVAL;
        }
        if (!name_ok(host, "_.%:-", 255)) {
                sk_seterr(errstr, errstr_size, "the host must be 1..255 chars of [A-Za-z0-9_.%%:-]");
                return SK_EINVAL;
        }
        for (size_t i = 0; i < nusers; i++) {
                if (!users[i].user)
                        continue;
                given++;
                if (!name_ok(users[i].user, "_.-", 32)) {
                        sk_seterr(errstr, errstr_size, "%s: a user name must be 1..32 chars of "
                                  "[A-Za-z0-9_.-]", users[i].role);
                        return SK_EINVAL;
                }
                if (!users[i].schema && (err = check_rows(&users[i], tables, errstr, errstr_size)) != SK_OK)
                        return err;
        }
        if (!given) {
                sk_seterr(errstr, errstr_size, "no user given");
                return SK_EINVAL;
        }
        return SK_OK;
}

sk_err_t sk_grants_sql(const char *database, const sk_grant_user_t *users, size_t nusers,
                       const char *host, char **sql_out, char *errstr, size_t errstr_size)
{
        sk_table_list_t *tables = NULL;
        char *buf = NULL;
        size_t len = 0;
        FILE *f = NULL;
        sk_err_t err = SK_ENOMEM;

        if (!(tables = malloc(sizeof(*tables))))
                goto done;
        if ((err = sk_migrate_tables(tables, errstr, errstr_size)) != SK_OK ||
            (err = check_args(database, users, nusers, host, tables, errstr, errstr_size)) != SK_OK)
                goto done;
        err = SK_ENOMEM;
        if (!(f = open_memstream(&buf, &len)))
                goto done;
        fprintf(f, "-- Least-privilege users of database `%s` (DESIGN.md 15, 17), one per binary,\n"
                   "-- for MariaDB/MySQL. Create the users first, each with its own password:\n",
                database);
        for (size_t i = 0; i < nusers; i++)
                if (users[i].user)
                        fprintf(f, "--   CREATE USER '%s'@'%s' IDENTIFIED BY '...';\n", users[i].user, host);
        for (size_t i = 0; i < nusers; i++)
                if (users[i].user)
                        print_user(f, &users[i], database, host);
        if (fclose(f) != 0) {
                f = NULL;
                goto done;
        }
        f = NULL;
        *sql_out = buf;
        buf = NULL;
        err = SK_OK;
done:
        if (f)
                fclose(f);
        free(buf);
        free(tables);
        return err;
}
