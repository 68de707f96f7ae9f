/* db_rows.c: the readers of a prepared statement with bound parameters (sk/db.h):
 * sk_db_rows, whose rows, every column a signed 64-bit integer, go to a callback one by
 * one; and the one-row readers sk_db_row1_cols / sk_db_row1 / sk_db_i64, which read the
 * first row's integer or text columns into the caller's buffers (no callback).
 * What it does not do: retry, or keep the prepared statement (one prepare per call).
 * Not thread-safe per handle. */
#include <string.h>

#include "sk/db.h"

#define ROW1_COLS_MAX 32        /* columns of a one-row read, and of its statement */

/* Read and drop the rest of @p stmt's rows so the connection stays usable. @returns the
 * last mysql_stmt_fetch code (MYSQL_NO_DATA at the end). */
static int drain(MYSQL_STMT *stmt)
{
        int rc;

        while ((rc = mysql_stmt_fetch(stmt)) == 0 || rc == MYSQL_DATA_TRUNCATED)
                ;
        return rc;
}

sk_err_t sk_db_rows(sk_db_t *db, const char *sql, const int64_t *params, int nparams,
              int ncols, sk_rows_cb cb, void *arg, char *errstr, size_t errstr_size)
{
        MYSQL_STMT *stmt = NULL;
        MYSQL_BIND rb[16];
        sk_db_arg_t pa[16];
        int64_t col[16];
        sk_my_bool isnull[16];
        int nulls[16];
        int i, rc;
        sk_err_t err = SK_OK;

        if (!db || !sql || nparams < 0 || nparams > 16 || ncols < 1 || ncols > 16) {
                sk_seterr(errstr, errstr_size, "sk_db_rows: invalid argument");
                return SK_EINVAL;
        }
        for (i = 0; i < nparams; i++)
                pa[i] = SK_I64(params[i]);
        if ((err = sk__db_stmt_run(db, sql, pa, nparams, &stmt, errstr, errstr_size)) != SK_OK)
                return err;
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
                        rc = drain(stmt);
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

/* Bind the result columns of @p stmt (nf of them): column i < ncols to cols[i], the rest
 * to scratch integers whose value and truncation are ignored. */
static void bind_row1(MYSQL_BIND *rb, unsigned nf, const sk_db_col_t *cols, int ncols,
                      int64_t *scratch, unsigned long *len, sk_my_bool *isnull, sk_my_bool *trunc)
{
        for (unsigned i = 0; i < nf; i++) {
                if ((int)i < ncols && cols[i].s)
                        sk_db_bind_str(&rb[i], cols[i].s, &len[i], cols[i].size);
                else
                        sk_db_bind_i64(&rb[i], (int)i < ncols ? cols[i].i64 : &scratch[i]);
                isnull[i] = 0;
                trunc[i] = 0;
                rb[i].is_null = &isnull[i];
                rb[i].error = &trunc[i];
        }
}

/* The fetched row into the caller's columns: NULLs as 0 / "", text NUL-terminated (cut
 * to size - 1). @returns SK_OK, or SK_EDB for an integer column that did not fit. */
static sk_err_t finish_row1(const sk_db_col_t *cols, int ncols, const unsigned long *len,
                            const sk_my_bool *isnull, const sk_my_bool *trunc, unsigned *mask,
                            char *errstr, size_t errstr_size)
{
        *mask = 0;
        for (int i = 0; i < ncols; i++) {
                if (isnull[i]) {
                        *mask |= 1u << i;
                        if (cols[i].s)
                                cols[i].s[0] = '\0';
                        else
                                *cols[i].i64 = 0;
                } else if (cols[i].s) {
                        cols[i].s[len[i] < cols[i].size ? len[i] : cols[i].size - 1] = '\0';
                } else if (trunc[i]) {
                        sk_seterr(errstr, errstr_size, "column %d is not a 64-bit integer", i + 1);
                        return SK_EDB;
                }
        }
        return SK_OK;
}

sk_err_t sk_db_row1_cols(sk_db_t *db, const char *sql, const sk_db_arg_t *args, int nargs,
                         const sk_db_col_t *cols, int ncols, unsigned *null_mask,
                         char *errstr, size_t errstr_size)
{
        MYSQL_STMT *stmt = NULL;
        MYSQL_BIND rb[ROW1_COLS_MAX];
        int64_t scratch[ROW1_COLS_MAX];
        unsigned long len[ROW1_COLS_MAX];
        sk_my_bool isnull[ROW1_COLS_MAX], trunc[ROW1_COLS_MAX];
        unsigned nf, mask = 0;
        int i, rc;
        sk_err_t err;

        if (!cols || ncols < 1 || ncols > ROW1_COLS_MAX) {
                sk_seterr(errstr, errstr_size, "sk_db_row1: invalid argument");
                return SK_EINVAL;
        }
        for (i = 0; i < ncols; i++) {
                if (cols[i].s ? cols[i].size < 1 : !cols[i].i64) {
                        sk_seterr(errstr, errstr_size, "sk_db_row1: column %d has no buffer", i + 1);
                        return SK_EINVAL;
                }
        }
        if ((err = sk__db_stmt_run(db, sql, args, nargs, &stmt, errstr, errstr_size)) != SK_OK)
                return err;
        nf = mysql_stmt_field_count(stmt);
        if (nf < (unsigned)ncols || nf > ROW1_COLS_MAX) {
                sk_seterr(errstr, errstr_size, "query returned %u column(s), %d expected", nf,
                          ncols);
                err = SK_EDB;
                goto done;
        }
        /* Buffered on the client: the first row is fetched, the rest freed unread. */
        if (mysql_stmt_store_result(stmt)) {
                err = sk_db_stmt_seterr(db, stmt, "fetch", errstr, errstr_size);
                goto done;
        }
        memset(rb, 0, sizeof(rb));
        bind_row1(rb, nf, cols, ncols, scratch, len, isnull, trunc);
        if (mysql_stmt_bind_result(stmt, rb)) {
                err = sk_db_stmt_seterr(db, stmt, "bind result", errstr, errstr_size);
                goto done;
        }
        rc = mysql_stmt_fetch(stmt);
        if (rc == MYSQL_NO_DATA) {
                sk_seterr(errstr, errstr_size, "no row");
                err = SK_ENOTFOUND;
                goto done;
        }
        if (rc != 0 && rc != MYSQL_DATA_TRUNCATED) {
                err = sk_db_stmt_seterr(db, stmt, "fetch", errstr, errstr_size);
                goto done;
        }
        err = finish_row1(cols, ncols, len, isnull, trunc, &mask, errstr, errstr_size);
        if (err == SK_OK && null_mask)
                *null_mask = mask;
done:
        mysql_stmt_free_result(stmt);
        mysql_stmt_close(stmt);
        return err;
}

sk_err_t sk_db_row1(sk_db_t *db, const char *sql, const sk_db_arg_t *args, int nargs,
                    int64_t *out, int ncols, unsigned *null_mask, char *errstr,
                    size_t errstr_size)
{
        sk_db_col_t cols[ROW1_COLS_MAX];

        if (!out || ncols < 1 || ncols > ROW1_COLS_MAX) {
                sk_seterr(errstr, errstr_size, "sk_db_row1: invalid argument");
                return SK_EINVAL;
        }
        for (int i = 0; i < ncols; i++)
                cols[i] = SK_COL_I64(&out[i]);
        return sk_db_row1_cols(db, sql, args, nargs, cols, ncols, null_mask, errstr,
                               errstr_size);
}

sk_err_t sk_db_i64(sk_db_t *db, const char *sql, const sk_db_arg_t *args, int nargs,
                   int64_t *out, int *is_null, char *errstr, size_t errstr_size)
{
        unsigned mask = 0;
        sk_err_t err = sk_db_row1(db, sql, args, nargs, out, 1, &mask, errstr, errstr_size);

        if (err == SK_OK && is_null)
                *is_null = (int)(mask & 1u);
        return err;
}
