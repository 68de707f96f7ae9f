/* db_exec.c: a prepared statement with bound parameters (sk/db.h): the typed argument
 * list (sk_db_exec_args, and sk__db_stmt_run under every reader of db_rows.c), the
 * BIGINT-only and caller-bound forms (sk_db_exec_i64, sk_db_exec_bound), and the one
 * statement with a spliced identifier (sk_db_exec_ident).
 * What it does not do: retry, or keep a prepared statement (one prepare per call).
 * Not thread-safe per handle. */
#include <ctype.h>
#include <string.h>

#include "sk/db.h"

void sk_db_bind_i64(MYSQL_BIND *b, int64_t *v)
{
        memset(b, 0, sizeof(*b));
        b->buffer_type = MYSQL_TYPE_LONGLONG;
        b->buffer = v;
        b->buffer_length = sizeof(*v);
        b->is_unsigned = 0;
}

void sk_db_bind_str(MYSQL_BIND *b, char *s, unsigned long *len, size_t cap)
{
        memset(b, 0, sizeof(*b));
        b->buffer_type = MYSQL_TYPE_STRING;
        b->buffer = s;
        b->buffer_length = (unsigned long)cap;
        b->length = len;
}

sk_err_t sk__db_stmt_run(sk_db_t *db, const char *sql, const sk_db_arg_t *args, int nargs,
                         MYSQL_STMT **out, char *errstr, size_t errstr_size)
{
        MYSQL_BIND b[SK_DB_ARGS_MAX];
        unsigned long len[SK_DB_ARGS_MAX];
        int64_t v[SK_DB_ARGS_MAX];
        MYSQL_STMT *st = NULL;
        sk_err_t err;
        int i;

        *out = NULL;
        if (!sql || nargs < 0 || nargs > SK_DB_ARGS_MAX || (nargs > 0 && !args)) {
                sk_seterr(errstr, errstr_size, "bound statement: invalid argument");
                return SK_EINVAL;
        }
        if (!sk_db_connected(db)) {
                sk_seterr(errstr, errstr_size, "no database connection");
                return SK_EAGAIN;
        }
        if ((err = sk_db_prepare(db, sql, strlen(sql), &st, errstr, errstr_size)) != SK_OK)
                return err;
        if (mysql_stmt_param_count(st) != (unsigned long)nargs) {
                sk_seterr(errstr, errstr_size, "bound statement: %lu placeholder(s), %d argument(s)",
                          mysql_stmt_param_count(st), nargs);
                mysql_stmt_close(st);
                return SK_EINVAL;
        }
        memset(b, 0, sizeof(b));
        for (i = 0; i < nargs; i++) {
                switch (args[i].type) {
                case SK_DB_ARG_I64:
                        v[i] = args[i].i64;
                        sk_db_bind_i64(&b[i], &v[i]);
                        break;
                case SK_DB_ARG_STR:
                        /* An input buffer is only read by the client library. */
                        len[i] = (unsigned long)args[i].len;
                        sk_db_bind_str(&b[i], (char *)args[i].s, &len[i], args[i].len);
                        break;
                default:
                        b[i].buffer_type = MYSQL_TYPE_NULL;
                        break;
                }
        }
        if (nargs && mysql_stmt_bind_param(st, b)) {
                err = sk_db_stmt_seterr(db, st, "bind param", errstr, errstr_size);
                goto fail;
        }
        if (mysql_stmt_execute(st)) {
                err = sk_db_stmt_seterr(db, st, "execute", errstr, errstr_size);
                goto fail;
        }
        *out = st;
        return SK_OK;
fail:
        mysql_stmt_close(st);
        return err;
}

sk_err_t sk_db_exec_args(sk_db_t *db, const char *sql, const sk_db_arg_t *args, int nargs,
                         int64_t *affected, char *errstr, size_t errstr_size)
{
        MYSQL_STMT *st;
        sk_err_t err;

        if ((err = sk__db_stmt_run(db, sql, args, nargs, &st, errstr, errstr_size)) != SK_OK)
                return err;
        if (affected)
                *affected = (int64_t)mysql_stmt_affected_rows(st);
        mysql_stmt_close(st);   /* discards a result set, if any */
        return SK_OK;
}

sk_err_t sk_db_exec_bound(sk_db_t *db, const char *sql, MYSQL_BIND *b, int n, int64_t *affected,
                          char *errstr, size_t errstr_size)
{
        MYSQL_STMT *st;
        sk_err_t err = SK_OK;

        if (!sk_db_connected(db)) {
                sk_seterr(errstr, errstr_size, "no database connection");
                return SK_EAGAIN;
        }
        if ((err = sk_db_stmt_init(db, &st, errstr, errstr_size)) != SK_OK)
                return err;
        if (mysql_stmt_prepare(st, sql, (unsigned long)strlen(sql)) ||
            (n && mysql_stmt_bind_param(st, b)) || mysql_stmt_execute(st)) {
                err = sk_db_stmt_seterr(db, st, "execute", errstr, errstr_size);
        } else if (affected) {
                *affected = (int64_t)mysql_stmt_affected_rows(st);
        }
        mysql_stmt_close(st);
        return err;
}

sk_err_t sk_db_exec_i64(sk_db_t *db, const char *sql, const int64_t *params, int n,
                        int64_t *affected, char *errstr, size_t errstr_size)
{
        sk_db_arg_t a[8];
        int i;

        if (n < 0 || n > 8)
                return SK_EINVAL;
        for (i = 0; i < n; i++)
                a[i] = SK_I64(params[i]);
        return sk_db_exec_args(db, sql, a, n, affected, errstr, errstr_size);
}

int sk_db_ident_ok(const char *ident)
{
        size_t n = 0;

        if (!ident)
                return 0;
        for (; ident[n]; n++)
                if (!isalnum((unsigned char)ident[n]) && ident[n] != '_')
                        return 0;
        return n >= 1 && n <= 64;
}

sk_err_t sk_db_exec_ident(sk_db_t *db, const char *head, const char *ident, const char *tail,
                          char *errstr, size_t errstr_size)
{
        char sql[512];
        size_t hn = head ? strlen(head) : 0, in = ident ? strlen(ident) : 0;
        size_t tn = tail ? strlen(tail) : 0;

        if (!head || !tail || !sk_db_ident_ok(ident) || hn + in + tn + 3 > sizeof(sql)) {
                sk_seterr(errstr, errstr_size, "invalid identifier \"%.64s\" (1..64 of "
                          "A-Z a-z 0-9 _)", ident ? ident : "");
                return SK_EINVAL;
        }
        memcpy(sql, head, hn);
        sql[hn] = '`';
        memcpy(sql + hn + 1, ident, in);
        sql[hn + 1 + in] = '`';
        memcpy(sql + hn + 2 + in, tail, tn);
        sql[hn + 2 + in + tn] = '\0';
        return sk_db_exec(db, sql, errstr, errstr_size);
}
