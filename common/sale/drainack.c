/* drainack.c: the acks of the early drain in tb_drain_ack (sk/drainack.h, DESIGN.md v5 12
 * parts b and c; the table in ddl/0006_drain_ack.sql). Both statements are prepared, every
 * id and epoch bound as MYSQL_TYPE_LONGLONG, the holder as a string. */
#include <stdio.h>
#include <string.h>

#include "sk/drainack.h"

sk_err_t sk_drain_ack(sk_db_t *db, const char *holder, int64_t voucher_id, int64_t epoch,
                      char *errstr, size_t errstr_size)
{
        static const char sql[] = "INSERT IGNORE INTO tb_drain_ack (holder, voucher_id, epoch, "
                                  "acked_at) VALUES (?, ?, ?, NOW(3))";
        MYSQL_BIND b[3];
        char hbuf[128];
        unsigned long hlen;
        int64_t v = voucher_id, e = epoch;

        if (!holder || strlen(holder) >= sizeof(hbuf)) {
                sk_seterr(errstr, errstr_size, "drain ack: bad holder");
                return SK_EINVAL;
        }
        snprintf(hbuf, sizeof(hbuf), "%s", holder);
        hlen = (unsigned long)strlen(hbuf);
        sk_db_bind_str(&b[0], hbuf, &hlen, sizeof(hbuf));
        sk_db_bind_i64(&b[1], &v);
        sk_db_bind_i64(&b[2], &e);
        return sk_db_exec_bound(db, sql, b, 3, NULL, errstr, errstr_size);
}

typedef struct { int64_t rows, missing, fronts; } acks_t;

static int acks_cb(void *arg, const int64_t *cols, const int *nulls, int ncols)
{
        acks_t *a = arg;

        (void)ncols;
        a->rows = nulls[0] ? 0 : cols[0];
        a->missing = nulls[1] ? 0 : cols[1];
        a->fronts = nulls[2] ? 0 : cols[2];
        return 1;
}

sk_err_t sk_drain_acks_missing(sk_db_t *db, int64_t voucher_id, int64_t epoch, int64_t grace_ms,
                               int64_t *missing, int64_t *fronts, char *errstr,
                               size_t errstr_size)
{
        /* One statement, so the lease rows, since and the acks are read together. The LEFT
         * JOIN keeps the switch row when no front row qualifies (COUNT(*) = 1, nothing
         * missing); COUNT(*) = 0 means the row is no longer (draining, epoch). lease_until
         * and since are both on the DB's clock. */
        static const char sql[] =
                "SELECT COUNT(*), "
                "COALESCE(SUM(l.worker_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM tb_drain_ack a "
                "WHERE a.holder = l.holder AND a.voucher_id = s.scope AND a.epoch = s.epoch)), 0), "
                "COUNT(l.worker_id) "
                "FROM tb_seckill_switch s LEFT JOIN tb_worker_lease l ON l.role = 'front' AND "
                "l.lease_until >= s.since - INTERVAL ? MICROSECOND "
                "WHERE s.scope = ? AND s.state = 'draining' AND s.epoch = ?";
        int64_t p[3] = { (grace_ms > 0 ? grace_ms : 0) * 1000, voucher_id, epoch };
        acks_t a = { 0, 0, 0 };
        sk_err_t err;

        *missing = -1;
        if (fronts)
                *fronts = 0;
        err = sk_db_rows(db, sql, p, 3, 3, acks_cb, &a, errstr, errstr_size);
        if (err != SK_OK)
                return err;
        if (a.rows == 0)
                return SK_OK;
        *missing = a.missing;
        if (fronts)
                *fronts = a.fronts;
        return SK_OK;
}
