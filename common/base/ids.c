/* ids.c: canonical decimal ids (DESIGN.md 3): "1".."9223372036854775807", no sign,
 * no leading zero, no whitespace, no embedded NUL. This is the only text <-> int64
 * conversion for ids (no atoi, strtoll or doubles: they accept signs, spaces and
 * silently saturate). Pure, thread-safe. */
#include <string.h>

#include "sk/ids.h"

int sk_id_parse(const char *s, size_t len, int64_t *out)
{
        uint64_t v = 0;
        size_t i;

        if (!s || !out || len == 0 || len > 19)
                return -1;
        if (s[0] == '0')        /* "0" and leading zeros are not canonical */
                return -1;
        for (i = 0; i < len; i++) {
                unsigned char c = (unsigned char)s[i];
                if (c < '0' || c > '9')
                        return -1;
                /* 19 digits fit in uint64_t (max 9999999999999999999 < 2^64), so the
                 * accumulation cannot wrap; the range check follows. */
                v = v * 10 + (uint64_t)(c - '0');
        }
        if (v > (uint64_t)INT64_MAX)
                return -1;
        *out = (int64_t)v;
        return 0;
}

int sk_id_parse_cstr(const char *s, int64_t *out)
{
        if (!s)
                return -1;
        return sk_id_parse(s, strlen(s), out);
}

size_t sk_id_format(int64_t id, char *buf)
{
        char tmp[SK_ID_STRLEN];
        size_t n = 0, i;
        uint64_t v;
        int neg = id < 0;

        /* Ids are positive; a negative value is still printed faithfully (for logs)
         * without overflow on INT64_MIN. */
        v = neg ? (uint64_t)0 - (uint64_t)id : (uint64_t)id;
        do {
                tmp[n++] = (char)('0' + v % 10);
                v /= 10;
        } while (v && n < sizeof(tmp));
        i = 0;
        if (neg)
                buf[i++] = '-';
        while (n)
                buf[i++] = tmp[--n];
        buf[i] = '\0';
        return i;
}
