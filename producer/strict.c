/* producer/strict.c: strict bytes in the path and the headers the front reads
 * (DESIGN.md 3, producer/strict.h). libmicrohttpd hands over header values with their
 * length (MHD_get_connection_values_n), so "X-User-Id: 70\0..." is seen whole here
 * instead of as the C string "70". Other headers are not inspected.
 * What it does not do: parse any value (identity.c, http.c do, after this check). */
#include <string.h>
#include <strings.h>

#include "strict.h"

/* The headers the front reads (DESIGN.md 3), and the ones it may read for the
 * payment callback and idempotent requests. */
static const char *const read_headers[] = {
        "X-User-Id", "Authorization", "X-Payment-Signature", "Content-Type", "Content-Length",
        "Transfer-Encoding", "Idempotency-Key",
};

int fr_strict_value(const char *v, size_t len)
{
        size_t i;

        for (i = 0; i < len; i++) {
                unsigned char c = (unsigned char)v[i];

                if ((c < 0x20 && c != '\t') || c >= 0x7f)
                        return 0;
        }
        return 1;
}

int fr_strict_path(const char *url)
{
        const unsigned char *p;

        for (p = (const unsigned char *)url; *p; p++)
                if (*p <= 0x20 || *p >= 0x7f)
                        return 0;
        return 1;
}

static enum MHD_Result check_one(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size,
                                 const char *value, size_t value_size)
{
        int *bad = cls;
        size_t i;

        (void)kind;
        (void)key_size;
        if (!key)
                return MHD_YES;
        for (i = 0; i < sizeof(read_headers) / sizeof(read_headers[0]); i++)
                if (!strcasecmp(key, read_headers[i]) && value && !fr_strict_value(value, value_size)) {
                        *bad = 1;
                        return MHD_NO;
                }
        return MHD_YES;
}

const char *fr_strict_request(struct MHD_Connection *conn, const char *url)
{
        int bad = 0;

        if (!fr_strict_path(url))
                return "control or non-ASCII byte in the path";
        MHD_get_connection_values_n(conn, MHD_HEADER_KIND, check_one, &bad);
        if (bad)
                return "control or non-ASCII byte in a header";
        return NULL;
}
