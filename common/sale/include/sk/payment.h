/* sk/payment.h: the payment provider's callback as one DB transaction (DESIGN.md 13,
 * 15), and the merchant's refund list. Every callback with a valid signature that
 * reaches a decision is recorded in tb_payment (provider_txn_id PK, order_id,
 * amount_minor, currency, received_at, result 1 applied | 2 refund_due, reason,
 * refunded_at, refund_ref) by the transaction that decides it:
 *   - a row for the txn id exists: a repeat, never re-decided: the first answer, from
 *     the row; a repeat whose order, amount or currency differ -> TXN_REUSED (nothing
 *     written);
 *   - the order row (locked FOR UPDATE) is UNPAID, not past pay_deadline + grace, amount
 *     and currency equal -> UPDATE status=2, paid_at=NOW(3) -> applied;
 *   - PAID (by another txn) -> refund_due duplicate; CANCELLED / CLOSED -> refund_due
 *     cancelled / closed; UNPAID past pay_deadline + grace -> closed on the spot as the
 *     closer would (sk_order_close_in_tx: status 4, stock + 1, RESTORE row) and
 *     refund_due late; UNPAID in time with another amount / currency -> refund_due
 *     amount / currency;
 *   - no order row: its outcome (tb_seckill_outcome by order_id) FAILED -> refund_due
 *     failed; otherwise NO_OUTCOME (nothing written: the provider retries).
 * The caller finishes after the commit: the order cache DEL after an applied payment,
 * release.lua + DEL after a close on the spot (sk_order_finish).
 * Functions take a caller-owned connection (one per thread). DB errors: SK_EAGAIN
 * transient (rolled back, or an unknown COMMIT outcome: call again, a repeat answers
 * from the row), SK_EDB others; the transaction is always rolled back on an error. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "sk/db.h"
#include "sk/err.h"
#include "sk/order.h"

#define SK_PAYMENT_TXN_MAX 128          /* bytes of a provider_txn_id */

/** tb_payment.reason (DESIGN.md 6), stored as text. */
typedef enum {
        SK_PAYREASON_NONE = 0,          /* applied */
        SK_PAYREASON_LATE,
        SK_PAYREASON_CLOSED,
        SK_PAYREASON_CANCELLED,
        SK_PAYREASON_AMOUNT,
        SK_PAYREASON_CURRENCY,
        SK_PAYREASON_DUPLICATE,
        SK_PAYREASON_FAILED,
} sk_payreason_t;

/** @brief "late", "closed", ... ("" for NONE or an unknown value). Static strings. */
const char *sk_payreason_str(int reason);

/** One callback as the provider sent it (validated by the caller). */
typedef struct sk_payment {
        char txn_id[SK_PAYMENT_TXN_MAX + 1];    /* 1..128 printable ASCII bytes */
        int64_t attempt_id;                     /* > 0: this delivery's nonce, a snowflake
                                                 * id minted per delivery (DESIGN.md 16
                                                 * "Answers" (a)); tb_payment.attempt_id */
        int64_t order_id;
        int64_t amount_minor;                   /* >= 0 */
        char currency[4];                       /* 3 letters A-Z */
} sk_payment_t;

/** The decision. */
typedef enum {
        SK_PAYV_APPLIED = 1,    /* 200 PAID */
        SK_PAYV_REFUND_DUE,     /* res.reason: duplicate 409/10024; late, closed, cancelled,
                                 * failed 409/10021; amount, currency 422/10023 */
        SK_PAYV_TXN_REUSED,     /* 409/10025: the txn id's row names another order/amount */
        SK_PAYV_NO_OUTCOME,     /* 503 + Retry-After: nothing recorded */
} sk_payv_t;

typedef struct sk_payment_res {
        sk_payv_t verdict;
        int reason;             /* sk_payreason_t (REFUND_DUE; also of a repeat) */
        int repeat;             /* answered from an existing tb_payment row */
        int paid_now;           /* this call moved the order UNPAID -> PAID (order valid) */
        int closed_now;         /* this call closed the order (order valid: release it) */
        sk_order_row_t order;   /* the order as read (paid_now / closed_now) */
} sk_payment_res_t;

/** @brief Decide and record @p p (borrowed) in one transaction (file comment), with
 *  @p grace_s (s, >= 0: SECKILL_PAY_GRACE_S). *res receives the decision.
 *  A COMMIT with an unknown outcome (DESIGN.md 16) is resolved by reading tb_payment by
 *  provider_txn_id on a fresh session (wsrep_sync_wait = 1 on Galera; the read waits for
 *  the row's lock): the row carries @p p's attempt_id → it is ours, SK_OK with our
 *  decision (its post-commit steps due); another attempt_id → another delivery decided
 *  (DESIGN.md 16 "Answers" (a)): SK_OK answered from that row as a repeat (repeat = 1,
 *  paid_now = closed_now = 0: our post-commit steps skipped; another order, amount or
 *  currency → TXN_REUSED); no row or unreadable → SK_EAGAIN (run again, same keys).
 *  The initial read of a row of our own attempt_id (an earlier try of this delivery that
 *  applied after its COMMIT was read as not applied) answers from it with its post-commit
 *  steps due (paid_now / closed_now and the order: DESIGN.md 16 "Answers" (c)).
 *  @returns SK_OK, SK_EINVAL (bad @p p), or the DB error (rolled back; SK_EAGAIN:
 *  retry, e.g. a concurrent delivery of the same txn id won the insert). */
sk_err_t sk_payment_decide(sk_db_t *db, const sk_payment_t *p, int grace_s,
                           sk_payment_res_t *res, char *errstr, size_t errstr_size);

/** Refunds still due (result 2, refunded_at NULL), as the merchant's list needs them. */
typedef struct sk_refund_row {
        char txn_id[SK_PAYMENT_TXN_MAX + 1];
        int64_t order_id, amount_minor;
        char currency[4];
        char reason[16];
        char received_at[32];   /* "YYYY-MM-DD hh:mm:ss.fff" UTC */
        int64_t age_s;          /* seconds since received_at, DB clock */
} sk_refund_row_t;

/** @brief Every refund_due row without refunded_at, oldest first. *rows malloc'd, owned
 *  by the caller (NULL when *n = 0). @returns SK_OK or the DB error. */
sk_err_t sk_payment_refunds(sk_db_t *db, sk_refund_row_t **rows, size_t *n, char *errstr,
                            size_t errstr_size);

/** @brief Mark refund_due row @p txn_id refunded with the provider's reference
 *  @p ref (1..128 printable bytes): refunded_at = NOW(3), refund_ref = @p ref.
 *  @returns SK_OK (marked now, or already marked with the same ref), SK_ENOTFOUND (no
 *  refund_due row of that id), SK_EEXIST (already marked with another ref), SK_EINVAL
 *  (bad argument), or the DB error. */
sk_err_t sk_payment_mark_refunded(sk_db_t *db, const char *txn_id, const char *ref,
                                  char *errstr, size_t errstr_size);

/** @brief The refund backlog: *count refund_due rows without refunded_at and *oldest_s
 *  the age (s, DB clock) of the oldest of them (0 when none).
 *  @returns SK_OK or the DB error. */
sk_err_t sk_payment_refund_backlog(sk_db_t *db, int64_t *count, int64_t *oldest_s,
                                   char *errstr, size_t errstr_size);

/** @brief 1 if @p s is a valid provider txn id or refund ref: 1..128 bytes, each
 *  0x21..0x7e (printable ASCII without space). Pure. */
int sk_payment_valid_ref(const char *s);
/** @brief 1 if @p s is three letters A-Z (an ISO 4217 code's shape). Pure. */
int sk_payment_valid_currency(const char *s);
/** @brief An amount in minor units, as the callback body and `voucher create --price` give
 *  it (DESIGN.md 13): canonical decimal, no sign, no leading zero, 1..18 digits, into
 *  *@p out. @returns 0, or -1 when @p s (NULL allowed) is not one. Pure. */
int sk_payment_parse_amount(const char *s, int64_t *out);
