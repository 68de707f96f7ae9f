/* producer/framing.c: the request framing rules of DESIGN.md 15 "Hardening rules"
 * (framing.h). libmicrohttpd 0.9.75 frames a body by the first Content-Length it finds,
 * accepts leading zeros, and waits for the connection to close on any
 * Transfer-Encoding but chunked; a gateway in front may have framed the same bytes by
 * another header. The front refuses every such request before reading a body.
 * A Content-Length that is not digits at all never reaches the front: libmicrohttpd
 * answers it 400 itself and closes (docs/OPERATIONS.md "Security").
 * What it does not do: bound the body (http.c), check bytes (strict.c). */
#include <string.h>
#include <strings.h>

#include "framing.h"

int fr_framing_canonical_length(const char *v, size_t len)
{
        size_t i;

        if (len == 0 || len > 18 || (len > 1 && v[0] == '0'))
                return 0;
        for (i = 0; i < len; i++)
                if (v[i] < '0' || v[i] > '9')
                        return 0;
        return 1;
}

typedef struct seen {
        int lengths, encodings;
        const char *why;
} seen_t;

static enum MHD_Result one(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size,
                           const char *value, size_t value_size)
{
        seen_t *s = cls;

        (void)kind;
        (void)key_size;
        if (!key || !value)
                return MHD_YES;
        if (!strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH)) {
                if (++s->lengths > 1)
                        s->why = "more than one Content-Length";
                else if (!fr_framing_canonical_length(value, value_size))
                        s->why = "Content-Length is not canonical decimal";
        } else if (!strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING)) {
                if (++s->encodings > 1)
                        s->why = "more than one Transfer-Encoding";
                else if (value_size != 7 || strncasecmp(value, "chunked", 7))
                        s->why = "Transfer-Encoding other than chunked";
        }
        return s->why ? MHD_NO : MHD_YES;
}

const char *fr_framing_check(struct MHD_Connection *conn)
{
        seen_t s = { 0, 0, NULL };

        MHD_get_connection_values_n(conn, MHD_HEADER_KIND, one, &s);
        if (!s.why && s.lengths && s.encodings)
                s.why = "both Content-Length and Transfer-Encoding";
        return s.why;
}
