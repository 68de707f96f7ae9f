/* sk/msg.h: the order message of DESIGN.md 5 (also the DEDUCT trace entry):
 * {"traceId":"..","orderId":"..","userId":"..","voucherId":"..","bucket":B,"home":H,
 *  "beforeQty":N,"deductQty":N,"afterQty":N,"ts":MS}. Ids are canonical decimal strings;
 * quantities, bucket and home are JSON integers. Pure, thread-safe. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "sk/err.h"

typedef struct sk_order_msg {
        int64_t trace_id;     /* also the idempotency key and messageId */
        int64_t order_id;
        int64_t user_id;
        int64_t voucher_id;
        int64_t before_qty;   /* Redis stock before the deduct, units */
        int64_t deduct_qty;   /* units deducted, >= 1 */
        int64_t after_qty;    /* before - deduct, >= 0 */
        int64_t ts_ms;        /* admission time, ms since the Unix epoch */
        int bucket;           /* bucket the stock came from, 0..SK_BUCKETS_MAX-1 (absent = 0) */
        int home;             /* the user's home bucket, 0..SK_BUCKETS_MAX-1 (absent = 0) */
} sk_order_msg_t;

#define SK_MSG_MAX 512 /* bytes enough for any formatted message */
#define SK_MSG_KEY_MAX 32 /* bytes enough for any Kafka message key "V:b" */

/** @brief Parse and validate @p len bytes of JSON. Poison (not JSON, a missing field,
 *  an id that is not a canonical decimal string, a negative or non-integer quantity,
 *  after != before - deduct, a bucket or home outside 0..SK_BUCKETS_MAX-1) is SK_EINVAL
 *  with the reason in errstr. `bucket` and `home` are optional: a message without them
 *  (written before buckets, DESIGN.md 5) is bucket 0, home 0. */
sk_err_t sk_msg_parse(const char *buf, size_t len, sk_order_msg_t *msg,
                      char *errstr, size_t errstr_size);
/** @brief Format @p msg (field order as above) into @p buf (SK_MSG_MAX). @returns length. */
size_t sk_msg_format(const sk_order_msg_t *msg, char *buf, size_t size);
/** @brief The Kafka message key of a purchase whose stock came from bucket @p bucket of
 *  voucher @p voucher_id: "<voucherId>:<bucket>" (DESIGN.md 5: one bucket's messages
 *  on one partition) into @p buf (@p size >= SK_MSG_KEY_MAX, caller-owned).
 *  @returns the length. Pure, thread-safe. */
size_t sk_msg_key(char *buf, size_t size, int64_t voucher_id, int bucket);
