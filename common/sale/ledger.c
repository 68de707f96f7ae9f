/* ledger.c: sk_ledger_write (sk/ledger.h), one reconcile-log row by a prepared INSERT
 * with every value bound (codes from sk/model.h, message_id = the trace id in decimal).
 * Not thread-safe per connection. */
#include <stdio.h>
#include <string.h>

#include "sk/ids.h"
#include "sk/ledger.h"

#define LEDGER_INSERT                                                                      \
        "INSERT INTO tb_voucher_reconcile_log (order_id, user_id, voucher_id, message_id,"  \
        " detail, before_qty, change_qty, after_qty, trace_id, log_type, business_type,"   \
        " reconciliation_status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "                 \
        SK_SQL_RECON_PENDING ")"

sk_err_t sk_ledger_write(sk_db_t *db, const sk_ledger_row_t *row, char *errstr,
                         size_t errstr_size)
{
        static const char keep_sql[] = LEDGER_INSERT " ON DUPLICATE KEY UPDATE id = id";
        static const char strict_sql[] = LEDGER_INSERT;
        int64_t oid = row->order_id, uid = row->user_id, vid = row->voucher_id;
        int64_t before = row->before_qty, change = row->change_qty, after = row->after_qty;
        int64_t tid = row->trace_id, type = row->log_type, biz = row->business;
        char mid[SK_ID_STRLEN], det[512];
        unsigned long mid_len, det_len;
        MYSQL_BIND b[11];

        mid_len = sk_id_format(row->trace_id, mid);
        snprintf(det, sizeof(det), "%s", row->detail ? row->detail : "");
        det_len = strlen(det);
        memset(b, 0, sizeof(b));
        sk_db_bind_i64(&b[0], &oid);
        sk_db_bind_i64(&b[1], &uid);
        sk_db_bind_i64(&b[2], &vid);
        sk_db_bind_str(&b[3], mid, &mid_len, sizeof(mid));
        sk_db_bind_str(&b[4], det, &det_len, sizeof(det));
        sk_db_bind_i64(&b[5], &before);
        sk_db_bind_i64(&b[6], &change);
        sk_db_bind_i64(&b[7], &after);
        sk_db_bind_i64(&b[8], &tid);
        sk_db_bind_i64(&b[9], &type);
        sk_db_bind_i64(&b[10], &biz);
        return sk_db_exec_bound(db, row->keep_existing ? keep_sql : strict_sql, b, 11, NULL,
                                errstr, errstr_size);
}
