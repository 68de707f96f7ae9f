/* keys.c: Redis key and trace-field names of DESIGN.md 4 and 2, and the home bucket.
 * Each bucket's keys carry the hash tag {v:ID:b} so they share one cluster slot (a Lua
 * script may only touch keys of one slot). Pure, thread-safe; buffers are SK_KEY_MAX bytes. A prefix long
 * enough to overflow SK_KEY_MAX is truncated (conf.c limits prefixes to 63 chars). */
#include <inttypes.h>
#include <stdio.h>

#include "sk/crc16.h"
#include "sk/keys.h"

static size_t clamp_len(int n)
{
        if (n < 0)
                return 0;
        if ((size_t)n >= SK_KEY_MAX)
                return SK_KEY_MAX - 1;
        return (size_t)n;
}

size_t sk_key_voucher(char *buf, const char *prefix, int64_t voucher_id, int bucket,
                      sk_key_kind_t kind)
{
        const char *suffix = "meta";

        switch (kind) {
        case SK_KEY_META:  suffix = "meta"; break;
        case SK_KEY_STOCK: suffix = "stock"; break;
        case SK_KEY_USERS: suffix = "users"; break;
        case SK_KEY_TRACE: suffix = "trace"; break;
        }
        return clamp_len(snprintf(buf, SK_KEY_MAX, "%s:{v:%" PRId64 ":%d}:%s", prefix, voucher_id,
                                  bucket, suffix));
}

size_t sk_key_fence(char *buf, const char *prefix, int64_t voucher_id, int bucket,
                    int64_t trace_id)
{
        return clamp_len(snprintf(buf, SK_KEY_MAX, "%s:{v:%" PRId64 ":%d}:f:%" PRId64, prefix,
                                  voucher_id, bucket, trace_id));
}

size_t sk_key_order(char *buf, const char *prefix, int64_t order_id)
{
        return clamp_len(snprintf(buf, SK_KEY_MAX, "%s:order:%" PRId64, prefix, order_id));
}

size_t sk_field_trace(char *buf, int64_t trace_id, char suffix)
{
        if (suffix)
                return clamp_len(snprintf(buf, SK_KEY_MAX, "%" PRId64 ":%c", trace_id, suffix));
        return clamp_len(snprintf(buf, SK_KEY_MAX, "%" PRId64, trace_id));
}

int sk_home_bucket(int64_t user_id, int n)
{
        char buf[24];
        int len;

        if (n <= 1)
                return 0;
        len = snprintf(buf, sizeof(buf), "%" PRId64, user_id);
        if (len < 0)
                return 0;
        return (int)(sk_crc16(buf, (size_t)len) % (unsigned)n);
}
