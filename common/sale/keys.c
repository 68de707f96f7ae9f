/* keys.c: Redis key and trace-field names of DESIGN.md 4 and 2, and the home bucket.
 * Each bucket's keys carry the hash tag {v:ID:b} so they share one cluster slot (a Lua
 * script may only touch keys of one slot). Pure, thread-safe; buffers are SK_KEY_MAX bytes. A prefix long
 * enough to overflow SK_KEY_MAX is truncated (conf.c limits prefixes to 63 chars). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

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

/* The suffix of @p kind's key (DESIGN.md 4). */
static const char *suffix_of(sk_key_kind_t kind)
{
        switch (kind) {
        case SK_KEY_STOCK: return "stock";
        case SK_KEY_USERS: return "users";
        case SK_KEY_TRACE: return "trace";
        case SK_KEY_META: break;
        }
        return "meta";
}

size_t sk_key_voucher(char *buf, const char *prefix, int64_t voucher_id, int bucket,
                      sk_key_kind_t kind)
{
        return clamp_len(snprintf(buf, SK_KEY_MAX, "%s:{v:%" PRId64 ":%d}:%s", prefix, voucher_id,
                                  bucket, suffix_of(kind)));
}

void sk_key_purchase(char *const kv[4], char *kfence, const char *prefix, int64_t voucher_id,
                     int bucket, int64_t trace_id, const char *trace_dec)
{
        size_t dec_len = strlen(trace_dec);
        char tag[SK_KEY_MAX];
        int n = snprintf(tag, sizeof(tag), "%s:{v:%" PRId64 ":%d}:", prefix, voucher_id, bucket);

        /* "trace" is the longest suffix; "f:" + the trace id may be longer. */
        if (n < 0 || (size_t)n + 6 >= SK_KEY_MAX || (size_t)n + 2 + dec_len >= SK_KEY_MAX) {
                for (int i = 0; i < 4; i++)
                        sk_key_voucher(kv[i], prefix, voucher_id, bucket, (sk_key_kind_t)i);
                sk_key_fence(kfence, prefix, voucher_id, bucket, trace_id);
                return;
        }
        for (int i = 0; i < 4; i++) {
                const char *suffix = suffix_of((sk_key_kind_t)i);

                memcpy(kv[i], tag, (size_t)n);
                memcpy(kv[i] + n, suffix, strlen(suffix) + 1);
        }
        memcpy(kfence, tag, (size_t)n);
        memcpy(kfence + n, "f:", 2);
        memcpy(kfence + n + 2, trace_dec, dec_len + 1);
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
