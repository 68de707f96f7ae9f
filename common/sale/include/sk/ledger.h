/* sk/ledger.h: the one writer of tb_voucher_reconcile_log rows (the ledger of DESIGN.md
 * 6): a DEDUCT row when an order is created, a RESTORE row when a purchase fails or an
 * order is cancelled or closed, each with the trace's original trace_id, the trace id
 * in decimal as message_id, and reconciliation_status pending. The codes are named in
 * sk/model.h. The consumer's batched multi-row INSERT (consumer/apply.c) writes the same
 * columns with the same named codes in its prepared batch statement.
 * What it does not do: begin or end a transaction (the caller's), or change a row. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "sk/db.h"
#include "sk/err.h"
#include "sk/model.h"

/** One reconcile-log row. Quantities in units of the voucher's stock. */
typedef struct sk_ledger_row {
        int64_t order_id, user_id, voucher_id, trace_id;
        int64_t before_qty, change_qty, after_qty;
        sk_log_type_t log_type;         /* SK_LOG_DEDUCT or SK_LOG_RESTORE */
        sk_log_business_t business;     /* SK_BIZ_* */
        const char *detail;             /* borrowed; free text, at most 511 bytes kept */
        int keep_existing;              /* 1: a row of the same (trace, log type) is kept
                                         * (idempotent retry); 0: it is SK_EEXIST */
} sk_ledger_row_t;

/** @brief INSERT @p row (borrowed) into tb_voucher_reconcile_log, pending, inside the
 *  caller's transaction if one is open. @returns SK_OK; SK_EEXIST for a duplicate
 *  (trace_id, log_type) when !keep_existing; else the classified DB error (SK_EAGAIN
 *  transient) with the text in errstr. Not thread-safe per @p db. */
sk_err_t sk_ledger_write(sk_db_t *db, const sk_ledger_row_t *row, char *errstr,
                         size_t errstr_size);
