/* drift_mark.c: drift marks as tb_lock rows 'drift:<voucher_id>:<bucket>' (contract in
 * sk/drift_mark.h; DESIGN.md 16 (d)). Three statements, every value bound; the name is
 * built in SQL from the bound ids (CONCAT), so no text of a value reaches the statement.
 * It does not decide when to mark or what a mark repairs: decide.c, rebuild.c and the
 * reconciler do. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "sk/drift_mark.h"

/* tb_lock.name is utf8mb4_unicode_ci (ddl/0007_lock.sql); a CONCAT of casts has the
 * connection's collation, and comparing the two without COLLATE is error 1267. */
#define MARK_NAME "CONCAT('drift:', CAST(? AS CHAR), ':', CAST(? AS CHAR)) COLLATE utf8mb4_unicode_ci"

sk_err_t sk_drift_mark(sk_db_t *db, int64_t voucher_id, int bucket, const char *who,
                       char *errstr, size_t errstr_size)
{
        int64_t affected = 0;

        if (voucher_id <= 0 || bucket < 0) {
                sk_seterr(errstr, errstr_size, "drift mark: invalid voucher %" PRId64
                          " bucket %d", voucher_id, bucket);
                return SK_EINVAL;
        }
        return sk_db_exec_args(db, "INSERT INTO tb_lock (name, holder, until, seq, taken_at) "
                               "VALUES (" MARK_NAME ", ?, NOW(3) + INTERVAL 7 DAY, 1, NOW(3)) "
                               "ON DUPLICATE KEY UPDATE holder = VALUES(holder), "
                               "until = VALUES(until), seq = seq + 1, taken_at = NOW(3)",
                               SK_ARGS(SK_I64(voucher_id), SK_I64(bucket),
                                       SK_STR(who ? who : "")),
                               &affected, errstr, errstr_size);
}

typedef struct marks_acc {
        sk_drift_mark_t *out;
        int max, n;
} marks_acc_t;

static int on_mark(void *arg, const int64_t *cols, const int *nulls, int ncols)
{
        marks_acc_t *a = arg;

        (void)ncols;
        if (nulls[0] || cols[0] < 0 || cols[0] > INT32_MAX)
                return 0;       /* not a bucket number: not ours to read */
        if (a->n >= a->max)
                return 1;
        a->out[a->n].bucket = (int)cols[0];
        a->out[a->n].seq = cols[1];
        a->n++;
        return 0;
}

sk_err_t sk_drift_marks(sk_db_t *db, int64_t voucher_id, sk_drift_mark_t *out, int max,
                        int *n, char *errstr, size_t errstr_size)
{
        /* The name is the primary key: the LIKE on its fixed prefix is an index range. */
        static const char sql[] =
                "SELECT CAST(SUBSTRING_INDEX(name, ':', -1) AS SIGNED), seq FROM tb_lock "
                "WHERE name LIKE CONCAT('drift:', CAST(? AS CHAR), ':%') COLLATE utf8mb4_unicode_ci "
                "AND until >= NOW(3) "
                "ORDER BY name";
        marks_acc_t a = { .out = out, .max = max, .n = 0 };
        int64_t vid = voucher_id;
        sk_err_t err;

        *n = 0;
        if (!out || max < 1)
                return SK_EINVAL;
        err = sk_db_rows(db, sql, &vid, 1, 2, on_mark, &a, errstr, errstr_size);
        *n = a.n;
        return err;
}

sk_err_t sk_drift_mark_clear(sk_db_t *db, int64_t voucher_id, const sk_drift_mark_t *m,
                             int *cleared, char *errstr, size_t errstr_size)
{
        int64_t affected = 0;
        sk_err_t err;

        err = sk_db_exec_args(db, "UPDATE tb_lock SET until = NOW(3) - INTERVAL 1000 MICROSECOND "
                              "WHERE name = " MARK_NAME " AND seq = ?",
                              SK_ARGS(SK_I64(voucher_id), SK_I64(m->bucket), SK_I64(m->seq)),
                              &affected, errstr, errstr_size);
        if (cleared)
                *cleared = err == SK_OK && affected == 1;
        return err;
}
