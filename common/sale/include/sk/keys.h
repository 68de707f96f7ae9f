/* sk/keys.h: Redis key names of DESIGN.md 4. One hash tag per bucket ({v:ID:b}) so a
 * bucket's four keys share a cluster slot and a voucher's buckets spread over slots.
 * Pure, thread-safe. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "sk/model.h" /* SK_BUCKETS_MAX */

#define SK_KEY_MAX 160

typedef enum { SK_KEY_META, SK_KEY_STOCK, SK_KEY_USERS, SK_KEY_TRACE } sk_key_kind_t;

/** @brief "<prefix>:{v:<voucher_id>:<bucket>}:meta|stock|users|trace" into @p buf
 *  (SK_KEY_MAX bytes, caller-owned); @p bucket is 0..SK_BUCKETS_MAX-1 (DESIGN.md 4).
 *  @returns the length. */
size_t sk_key_voucher(char *buf, const char *prefix, int64_t voucher_id, int bucket,
                      sk_key_kind_t kind);
/** @brief The give-up fence of purchase @p trace_id in bucket @p bucket (DESIGN.md 4):
 *  "<prefix>:{v:<voucher_id>:<bucket>}:f:<trace_id>" into @p buf (SK_KEY_MAX bytes,
 *  caller-owned). deduct.lua's 5th key; home.lua writes it on a give-up that took
 *  nothing. @returns the length. */
size_t sk_key_fence(char *buf, const char *prefix, int64_t voucher_id, int bucket,
                    int64_t trace_id);
/** @brief All five keys of one purchase in bucket @p bucket (DESIGN.md 4), the bytes
 *  sk_key_voucher gives for META, STOCK, USERS, TRACE (into @p kv[0..3]) and
 *  sk_key_fence for @p trace_dec, the trace id's canonical decimal string (into
 *  @p kfence); every buffer SK_KEY_MAX bytes, caller-owned. The hash tag is formatted
 *  once and the suffixes appended: one snprintf per purchase instead of five (the
 *  front's deduct path). A prefix too long for that goes through the single-key
 *  functions (same bytes, truncated alike). Pure, thread-safe. */
void sk_key_purchase(char *const kv[4], char *kfence, const char *prefix, int64_t voucher_id,
                     int bucket, int64_t trace_id, const char *trace_dec);
/** @brief "<prefix>:order:<order_id>" (order JSON cache, TTL 60 s). */
size_t sk_key_order(char *buf, const char *prefix, int64_t order_id);
/** @brief Trace-hash fields for trace @p trace_id: "T", "T:r", "T:c", "T:x", "T:h". */
size_t sk_field_trace(char *buf, int64_t trace_id, char suffix /* 0, 'r', 'c', 'x' or 'h' */);
/** @brief Home bucket of @p user_id among @p n buckets (DESIGN.md 4): CRC-16/XMODEM of
 *  the user id's canonical decimal string, mod @p n. @p n < 1 counts as 1 (answer 0).
 *  Pure, thread-safe. */
int sk_home_bucket(int64_t user_id, int n);
