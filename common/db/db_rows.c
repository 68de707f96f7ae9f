/* db_rows.c: sk_db_rows (sk/db.h), a prepared statement with BIGINT parameters whose
 * rows, every column read as a signed 64-bit integer, go to a callback one by one: the
 * small integer reads of the sale layer and the binaries.
 * What it does not do: retry, or keep the prepared statement (one prepare per call).
 * Not thread-safe per handle. */
#include <string.h>

#include "sk/db.h"

sk_err_t sk_db_rows(sk_db_t *db, const char *sql, const int64_t *params, int nparams,
              int ncols, sk_rows_cb cb, void *arg, char *errstr, size_t errstr_size)
{
        MYSQL_STMT *stmt = NULL;
        MYSQL_BIND pb[16], rb[16];
        int64_t pv[16], col[16];
        sk_my_bool isnull[16];
        int nulls[16];
        int i, rc;
        sk_err_t err = SK_OK;

        if (!db || !sql || nparams < 0 || nparams > 16 || ncols < 1 || ncols > 16) {
                sk_seterr(errstr, errstr_size, "sk_db_rows: invalid argument");
                return SK_EINVAL;
        }
        if (!sk_db_connected(db)) {
                sk_seterr(errstr, errstr_size, "database connection lost");
                return SK_EAGAIN;
        }
        if (sk_db_stmt_init(db, &stmt, NULL, 0) != SK_OK)
                return sk_db_stmt_seterr(db, NULL, "stmt_init", errstr, errstr_size);
        if (mysql_stmt_prepare(stmt, sql, (unsigned long)strlen(sql))) {
                err = sk_db_stmt_seterr(db, stmt, "prepare", errstr, errstr_size);
                goto done;
        }
        for (i = 0; i < nparams; i++) {
                pv[i] = params[i];
                sk_db_bind_i64(&pb[i], &pv[i]);
        }
        if (nparams && mysql_stmt_bind_param(stmt, pb)) {
                err = sk_db_stmt_seterr(db, stmt, "bind param", errstr, errstr_size);
                goto done;
        }
        if (mysql_stmt_execute(stmt)) {
                err = sk_db_stmt_seterr(db, stmt, "execute", errstr, errstr_size);
                goto done;
        }
        for (i = 0; i < ncols; i++) {
                sk_db_bind_i64(&rb[i], &col[i]);
                isnull[i] = 0;
                rb[i].is_null = &isnull[i];
        }
        if (mysql_stmt_bind_result(stmt, rb)) {
                err = sk_db_stmt_seterr(db, stmt, "bind result", errstr, errstr_size);
                goto done;
        }
        while ((rc = mysql_stmt_fetch(stmt)) == 0 || rc == MYSQL_DATA_TRUNCATED) {
                for (i = 0; i < ncols; i++) {
                        nulls[i] = isnull[i] != 0;
                        if (nulls[i])
                                col[i] = 0;
                }
                if (cb && cb(arg, col, nulls, ncols) != 0) {
                        /* Drain the rest so the connection stays usable. */
                        while ((rc = mysql_stmt_fetch(stmt)) == 0 || rc == MYSQL_DATA_TRUNCATED)
                                ;
                        break;
                }
        }
        if (rc != MYSQL_NO_DATA)
                err = sk_db_stmt_seterr(db, stmt, "fetch", errstr, errstr_size);
done:
        mysql_stmt_free_result(stmt);
        mysql_stmt_close(stmt);
        return err;
}
