/* db_exec.c: sk_db_exec_bound / sk_db_exec_i64, a prepared statement with bound (BIGINT)
 * parameters (sk/db.h),
 * shared by the order lifecycle and the admin's bucket rows. Not thread-safe per handle. */
#include <string.h>

#include "sk/db.h"

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
        MYSQL_BIND b[8];
        int64_t v[8];
        int i;

        if (n > 8)
                return SK_EINVAL;
        memset(b, 0, sizeof(b));
        for (i = 0; i < n; i++) {
                v[i] = params[i];
                sk_db_bind_i64(&b[i], &v[i]);
        }
        return sk_db_exec_bound(db, sql, b, n, affected, errstr, errstr_size);
}
