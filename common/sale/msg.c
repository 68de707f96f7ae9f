/* msg.c: the order message of DESIGN.md 5, parsed with cJSON and formatted by hand
 * (fixed field order, ids as canonical decimal strings, no doubles on the way out).
 *
 * Validation rules (everything else is poison, SK_EINVAL with a reason):
 *   - the top level is a JSON object holding every field;
 *   - traceId, orderId, userId, voucherId are JSON strings in canonical decimal
 *     (sk_id_parse: 1..2^63-1, no sign, no leading zero);
 *   - beforeQty, deductQty, afterQty, ts are JSON numbers with an integral value whose
 *     magnitude is below 2^53 (cJSON stores numbers as doubles; above 2^53 a double no
 *     longer represents every integer, so the value could have been silently rounded);
 *   - bucket and home, when present, are JSON integers in 0..SK_BUCKETS_MAX-1 (absent:
 *     0, a message written before buckets, DESIGN.md 5);
 *   - deductQty >= 1, afterQty >= 0, beforeQty >= 0, afterQty == beforeQty - deductQty,
 *     ts >= 0.
 * A field given twice and any \u0000 escape are poison too (cJSON would pick one
 * silently / cut the string at the NUL). Unknown extra fields are ignored (forward
 * compatibility). Pure and thread-safe. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "sk/ids.h"
#include "sk/keys.h"
#include "sk/msg.h"

#define SK_MSG_INT_LIMIT 9007199254740992.0 /* 2^53 */

/* 1 if @p buf holds the 6 bytes \u0000 (memmem is a GNU extension). */
static int has_nul_escape(const char *buf, size_t len)
{
        for (size_t i = 0; i + 6 <= len; i++)
                if (buf[i] == '\\' && memcmp(buf + i, "\\u0000", 6) == 0)
                        return 1;
        return 0;
}

/* A field given twice is ambiguous (cJSON would silently take the first): poison. */
static int unique_field(const cJSON *root, const char *name, char *errstr, size_t errstr_size)
{
        const cJSON *it;
        int n = 0;

        cJSON_ArrayForEach(it, root)
                if (it->string && strcmp(it->string, name) == 0)
                        n++;
        if (n > 1) {
                sk_seterr(errstr, errstr_size, "field %s given %d times", name, n);
                return -1;
        }
        return 0;
}

static int get_id(const cJSON *root, const char *name, int64_t *out,
                  char *errstr, size_t errstr_size)
{
        const cJSON *it = cJSON_GetObjectItemCaseSensitive(root, name);

        if (!it) {
                sk_seterr(errstr, errstr_size, "missing field %s", name);
                return -1;
        }
        if (unique_field(root, name, errstr, errstr_size))
                return -1;
        if (!cJSON_IsString(it) || !it->valuestring) {
                sk_seterr(errstr, errstr_size, "field %s is not a string", name);
                return -1;
        }
        if (sk_id_parse(it->valuestring, strlen(it->valuestring), out) != 0) {
                sk_seterr(errstr, errstr_size, "field %s is not a canonical decimal id", name);
                return -1;
        }
        return 0;
}

static int get_int(const cJSON *root, const char *name, int64_t *out,
                   char *errstr, size_t errstr_size)
{
        const cJSON *it = cJSON_GetObjectItemCaseSensitive(root, name);
        double v;

        if (!it) {
                sk_seterr(errstr, errstr_size, "missing field %s", name);
                return -1;
        }
        if (unique_field(root, name, errstr, errstr_size))
                return -1;
        if (!cJSON_IsNumber(it)) {
                sk_seterr(errstr, errstr_size, "field %s is not a number", name);
                return -1;
        }
        v = it->valuedouble;
        if (!isfinite(v) || v != floor(v)) {
                sk_seterr(errstr, errstr_size, "field %s is not an integer", name);
                return -1;
        }
        if (fabs(v) >= SK_MSG_INT_LIMIT) {
                sk_seterr(errstr, errstr_size, "field %s is out of range", name);
                return -1;
        }
        *out = (int64_t)v;
        return 0;
}

/* Optional bucket-number field @p name: absent -> 0; else an integer 0..SK_BUCKETS_MAX-1. */
static int get_bucket(const cJSON *root, const char *name, int *out,
                      char *errstr, size_t errstr_size)
{
        int64_t v = 0;

        *out = 0;
        if (!cJSON_GetObjectItemCaseSensitive(root, name))
                return 0;
        if (get_int(root, name, &v, errstr, errstr_size))
                return -1;
        if (v < 0 || v >= SK_BUCKETS_MAX) {
                sk_seterr(errstr, errstr_size, "field %s %" PRId64 " outside 0..%d", name, v,
                          SK_BUCKETS_MAX - 1);
                return -1;
        }
        *out = (int)v;
        return 0;
}

sk_err_t sk_msg_parse(const char *buf, size_t len, sk_order_msg_t *msg,
                      char *errstr, size_t errstr_size)
{
        cJSON *root = NULL;
        sk_order_msg_t m;
        sk_err_t err = SK_EINVAL;

        memset(&m, 0, sizeof(m));
        if (!buf || len == 0) {
                sk_seterr(errstr, errstr_size, "empty message");
                return SK_EINVAL;
        }
        if (len > 65536) {
                sk_seterr(errstr, errstr_size, "message too large (%zu bytes)", len);
                return SK_EINVAL;
        }
        /* cJSON decodes \u0000 into a C string and silently cuts it there, so
         * "1\u00002" would read as the id "1": refuse NUL escapes outright. */
        if (has_nul_escape(buf, len)) {
                sk_seterr(errstr, errstr_size, "NUL escape (\\u0000) in message");
                return SK_EINVAL;
        }
        root = cJSON_ParseWithLength(buf, len);
        if (!root) {
                sk_seterr(errstr, errstr_size, "not valid JSON");
                return SK_EINVAL;
        }
        if (!cJSON_IsObject(root)) {
                sk_seterr(errstr, errstr_size, "not a JSON object");
                goto done;
        }
        if (get_id(root, "traceId", &m.trace_id, errstr, errstr_size) ||
            get_id(root, "orderId", &m.order_id, errstr, errstr_size) ||
            get_id(root, "userId", &m.user_id, errstr, errstr_size) ||
            get_id(root, "voucherId", &m.voucher_id, errstr, errstr_size) ||
            get_bucket(root, "bucket", &m.bucket, errstr, errstr_size) ||
            get_bucket(root, "home", &m.home, errstr, errstr_size) ||
            get_int(root, "beforeQty", &m.before_qty, errstr, errstr_size) ||
            get_int(root, "deductQty", &m.deduct_qty, errstr, errstr_size) ||
            get_int(root, "afterQty", &m.after_qty, errstr, errstr_size) ||
            get_int(root, "ts", &m.ts_ms, errstr, errstr_size))
                goto done;
        if (m.deduct_qty < 1) {
                sk_seterr(errstr, errstr_size, "deductQty %" PRId64 " < 1", m.deduct_qty);
                goto done;
        }
        if (m.before_qty < 0 || m.after_qty < 0) {
                sk_seterr(errstr, errstr_size, "negative quantity (beforeQty %" PRId64
                          ", afterQty %" PRId64 ")", m.before_qty, m.after_qty);
                goto done;
        }
        if (m.after_qty != m.before_qty - m.deduct_qty) {
                sk_seterr(errstr, errstr_size, "afterQty %" PRId64 " != beforeQty %" PRId64
                          " - deductQty %" PRId64, m.after_qty, m.before_qty, m.deduct_qty);
                goto done;
        }
        if (m.ts_ms < 0) {
                sk_seterr(errstr, errstr_size, "negative ts");
                goto done;
        }
        *msg = m;
        err = SK_OK;
done:
        cJSON_Delete(root);
        return err;
}

size_t sk_msg_format(const sk_order_msg_t *msg, char *buf, size_t size)
{
        int n = snprintf(buf, size,
                         "{\"traceId\":\"%" PRId64 "\",\"orderId\":\"%" PRId64
                         "\",\"userId\":\"%" PRId64 "\",\"voucherId\":\"%" PRId64
                         "\",\"bucket\":%d,\"home\":%d,\"beforeQty\":%" PRId64 ",\"deductQty\":%" PRId64
                         ",\"afterQty\":%" PRId64 ",\"ts\":%" PRId64 "}",
                         msg->trace_id, msg->order_id, msg->user_id, msg->voucher_id,
                         msg->bucket, msg->home, msg->before_qty, msg->deduct_qty, msg->after_qty, msg->ts_ms);
        if (n < 0)
                return 0;
        if ((size_t)n >= size)
                return size ? size - 1 : 0;
        return (size_t)n;
}

size_t sk_msg_key(char *buf, size_t size, int64_t voucher_id, int bucket)
{
        int n = snprintf(buf, size, "%" PRId64 ":%d", voucher_id, bucket);

        if (n < 0)
                return 0;
        if ((size_t)n >= size)
                return size ? size - 1 : 0;
        return (size_t)n;
}
