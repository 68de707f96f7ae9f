/* sk/model.h: the sale's model constants, named once (DESIGN.md 3, 6, 7, 14): the
 * bucket maximum, the business codes of the HTTP answers and the Lua replies, and the
 * codes stored in the tables (order status, outcome, reconcile-log types and states).
 * Each stored code exists twice, as a C enum constant and as a string-literal macro
 * SK_SQL_* for SQL text ("... WHERE status = " SK_SQL_ORDER_UNPAID); the unit test
 * check_model checks that both spell the same number.
 * What it does not do: hold functions or behaviour. */
#pragma once

#define SK_BUCKETS_MAX 16 /* DESIGN.md 14: a voucher has 1..16 buckets */

/* DESIGN.md 13: an order with amount > 0 is always created UNPAID; with
 * SECKILL_PAY_TIMEOUT_S=0 (price-0 orders created PAID) a priced order gets this payment
 * window (s), the setting's default. */
#define SK_PAY_TIMEOUT_PRICED_S 900

/* Business codes (DESIGN.md 3): the "code" of the front's JSON answers and the codes
 * deduct.lua / take.lua answer with (lua/ spells the same numbers). */
typedef enum {
        SK_CODE_BAD_INPUT = 10001,          /* 400 (also 404/405/413 of the router) */
        SK_CODE_NOT_STARTED = 10002,        /* 403 */
        SK_CODE_ENDED = 10003,              /* 403 */
        SK_CODE_NOT_FOUND = 10004,          /* 404 unknown voucher or order; Lua: meta missing */
        SK_CODE_SOLD_OUT = 10005,           /* 409 */
        SK_CODE_ALREADY_PURCHASED = 10006,  /* 409 */
        SK_CODE_BAD_IDENTITY = 10007,       /* 401 */
        SK_CODE_BAD_SIGNATURE = 10008,      /* 401 */
        SK_CODE_OFFLINE = 10011,            /* 403 */
        SK_CODE_EXPIRED = 10012,            /* 403 */
        SK_CODE_PAUSED = 10013,             /* 503: paused, Redis or Kafka unavailable */
        SK_CODE_NO_ADMISSION = 10014,       /* 403: a queued voucher bought without a valid admission (DESIGN.md 18) */
        SK_CODE_ROOM_NOT_OPEN = 10015,      /* 403: the waiting room is not open yet */
        SK_CODE_NOT_MEMBER = 10016,         /* 404: not a member of the waiting room (or no room) */
        SK_CODE_ORDER_CLOSED = 10021,       /* 409: order closed or cancelled */
        SK_CODE_ORDER_PAID = 10022,         /* 409: order already paid */
        SK_CODE_PAY_MISMATCH = 10023,       /* 422: payment amount or currency != the order's */
        SK_CODE_PAY_DUPLICATE = 10024,      /* 409: order paid by another provider txn */
        SK_CODE_PAY_TXN_REUSED = 10025,     /* 409: a repeated provider txn id, another order/amount */
} sk_code_t;

/* tb_payment.result (DESIGN.md 6, 13). */
typedef enum {
        SK_PAYMENT_APPLIED = 1,
        SK_PAYMENT_REFUND_DUE = 2,
} sk_payment_result_t;
#define SK_SQL_PAYMENT_APPLIED "1"
#define SK_SQL_PAYMENT_REFUND_DUE "2"

/* tb_voucher_order.status (DESIGN.md 6, 13). */
typedef enum {
        SK_ORDER_UNPAID = 1,
        SK_ORDER_PAID = 2,
        SK_ORDER_CANCELLED = 3,
        SK_ORDER_CLOSED = 4,
} sk_order_status_t;
#define SK_SQL_ORDER_UNPAID "1"
#define SK_SQL_ORDER_PAID "2"
#define SK_SQL_ORDER_CANCELLED "3"
#define SK_SQL_ORDER_CLOSED "4"
/* "status IN " SK_SQL_ORDER_ACTIVE: an order that holds its unit; ENDED: gave it back. */
#define SK_SQL_ORDER_ACTIVE "(" SK_SQL_ORDER_UNPAID ", " SK_SQL_ORDER_PAID ")"
#define SK_SQL_ORDER_ENDED "(" SK_SQL_ORDER_CANCELLED ", " SK_SQL_ORDER_CLOSED ")"

/* tb_seckill_outcome.outcome (DESIGN.md 7). */
typedef enum { SK_OUTCOME_CREATED = 1, SK_OUTCOME_FAILED = 2 } sk_outcome_kind_t;
#define SK_SQL_OUTCOME_CREATED "1"
#define SK_SQL_OUTCOME_FAILED "2"

/* tb_voucher_reconcile_log.log_type (DESIGN.md 6). */
typedef enum { SK_LOG_DEDUCT = -1, SK_LOG_RESTORE = 1 } sk_log_type_t;
#define SK_SQL_LOG_DEDUCT "-1"
#define SK_SQL_LOG_RESTORE "1"

/* tb_voucher_reconcile_log.business_type (DESIGN.md 6): why the row exists. */
typedef enum {
        SK_BIZ_OK = 1,          /* DEDUCT of a created order */
        SK_BIZ_TIMEOUT = 2,
        SK_BIZ_FAIL = 3,        /* RESTORE of a FAILED purchase */
        SK_BIZ_CANCEL = 4,      /* RESTORE of a cancelled order */
        SK_BIZ_CLOSE = 5,       /* RESTORE of an order closed unpaid */
} sk_log_business_t;
#define SK_SQL_BIZ_OK "1"
#define SK_SQL_BIZ_TIMEOUT "2"
#define SK_SQL_BIZ_FAIL "3"
#define SK_SQL_BIZ_CANCEL "4"
#define SK_SQL_BIZ_CLOSE "5"
/* "business_type IN " SK_SQL_BIZ_ORDER_END: the RESTORE of a cancelled or closed order. */
#define SK_SQL_BIZ_ORDER_END "(" SK_SQL_BIZ_CANCEL ", " SK_SQL_BIZ_CLOSE ")"

/* tb_voucher_reconcile_log.reconciliation_status (DESIGN.md 6, 8). */
typedef enum {
        SK_RECON_PENDING = 1,
        SK_RECON_ERROR = 2,
        SK_RECON_INCONSISTENT = 3,
        SK_RECON_CONSISTENT = 4,
} sk_recon_status_t;
#define SK_SQL_RECON_PENDING "1"
#define SK_SQL_RECON_ERROR "2"
#define SK_SQL_RECON_INCONSISTENT "3"
#define SK_SQL_RECON_CONSISTENT "4"
