/* drainack.c: the acks of the early drain in tb_drain_ack (sk/drainack.h, DESIGN.md 12
 * parts b and c; the table in ddl/0006_drain_ack.sql). Both statements are prepared, every
 * id and epoch bound as MYSQL_TYPE_LONGLONG, the holder as a string. */
#include <string.h>

#include "sk/drainack.h"

sk_err_t sk_drain_ack(sk_db_t *db, const char *holder, int64_t voucher_id, int64_t epoch,
                      char *errstr, size_t errstr_size)
{
        static const char sql[] = "INSERT IGNORE INTO tb_drain_ack (holder, voucher_id, epoch, "
                                  "acked_at) VALUES (?, ?, ?, NOW(3))";

        if (!holder || strlen(holder) >= 128) {
                sk_seterr(errstr, errstr_size, "drain ack: bad holder");
                return SK_EINVAL;
        }
        return sk_db_exec_args(db, sql, SK_ARGS(SK_STR(holder), SK_I64(voucher_id), SK_I64(epoch)),
                               NULL, errstr, errstr_size);
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
        int64_t c[3] = { 0, 0, 0 }; /* rows, missing, fronts */
        sk_err_t err;

        *missing = -1;
        if (fronts)
                *fronts = 0;
        err = sk_db_row1(db, sql, SK_ARGS(SK_I64((grace_ms > 0 ? grace_ms : 0) * 1000),
                                          SK_I64(voucher_id), SK_I64(epoch)),
                         c, 3, NULL, errstr, errstr_size);
        if (err == SK_ENOTFOUND || (err == SK_OK && c[0] == 0))
                return SK_OK;
        if (err != SK_OK)
                return err;
        *missing = c[1];
        if (fronts)
                *fronts = c[2];
        return SK_OK;
}
