/* sk/keys.h: Redis key names of DESIGN.md 4. One hash tag per voucher ({v:ID}) so a
 * voucher's keys share a cluster slot. Pure, thread-safe. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#define SK_KEY_MAX 160

typedef enum { SK_KEY_META, SK_KEY_STOCK, SK_KEY_USERS, SK_KEY_TRACE } sk_key_kind_t;

/** @brief "<prefix>:{v:<voucher_id>}:meta|stock|users|trace" into @p buf (SK_KEY_MAX).
 *  @returns the length. */
size_t sk_key_voucher(char *buf, const char *prefix, int64_t voucher_id, sk_key_kind_t kind);
/** @brief "<prefix>:order:<order_id>" (order JSON cache, TTL 60 s). */
size_t sk_key_order(char *buf, const char *prefix, int64_t order_id);
/** @brief Trace-hash fields for trace @p trace_id: "T", "T:r", "T:c". */
size_t sk_field_trace(char *buf, int64_t trace_id, char suffix /* 0, 'r' or 'c' */);
