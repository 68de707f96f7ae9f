/* producer/strict.c: strict bytes in the path and the headers the front reads
 * (DESIGN.md 3, producer/strict.h). Control bytes and bytes >= 0x80 are seen in the
 * values libmicrohttpd hands over. A NUL is not: libmicrohttpd 0.9.75 parses the header
 * block in place, turns each line's CR LF into two NULs, and reports a value's length
 * up to its first NUL, so "X-User-Id: 70\0" "1" arrives as "70". The bytes it left after
 * the value, up to the next header's name, tell: a clean line leaves only its NUL'd
 * line end and perhaps trimmed white space there (at most two NULs); a value that went
 * on after a NUL leaves other bytes, or a third NUL. For the last header the next name
 * is not known: other bytes right after its value are caught, a value ending in NULs is
 * not (harmless: nothing follows the NUL). Other headers are not inspected.
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

/* The header walk: the previous header if it is one the front reads (its NUL check
 * waits for the next header's name), and the verdict. */
typedef struct walk {
        const char *value;      /* previous read header's value, NULL = none pending */
        size_t value_size;
        int bad;
} walk_t;

/* 1 if the bytes between the end of @p value and @p next (the next header's name; NULL
 * = @p value is the last header) show no NUL inside the value (file comment). */
static int no_hidden_nul(const char *value, size_t value_size, const char *next)
{
        const char *p = value + value_size;
        int nuls = 0;

        if (!next) /* last header: a byte other than a line end right after it */
                return p[1] == '\0' || p[1] == '\r' || p[1] == '\n' || p[1] == ' ' || p[1] == '\t';
        if (next <= p || next - p > 256)
                return 1; /* not the in-place layout: nothing to learn */
        for (; p < next; p++) {
                if (*p == '\0')
                        nuls++;
                else if (*p != ' ' && *p != '\t')
                        return 0;
        }
        return nuls <= 2;
}

static int is_read_header(const char *key)
{
        size_t i;

        for (i = 0; i < sizeof(read_headers) / sizeof(read_headers[0]); i++)
                if (!strcasecmp(key, read_headers[i]))
                        return 1;
        return 0;
}

static enum MHD_Result check_one(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size,
                                 const char *value, size_t value_size)
{
        walk_t *w = cls;

        (void)kind;
        (void)key_size;
        if (!key)
                return MHD_YES;
        if (w->value && !no_hidden_nul(w->value, w->value_size, key)) {
                w->bad = 1;
                return MHD_NO;
        }
        w->value = NULL;
        if (!is_read_header(key) || !value)
                return MHD_YES;
        if (!fr_strict_value(value, value_size)) {
                w->bad = 1;
                return MHD_NO;
        }
        w->value = value;
        w->value_size = value_size;
        return MHD_YES;
}

const char *fr_strict_request(struct MHD_Connection *conn, const char *url)
{
        walk_t w = { NULL, 0, 0 };

        if (!fr_strict_path(url))
                return "control or non-ASCII byte in the path";
        MHD_get_connection_values_n(conn, MHD_HEADER_KIND, check_one, &w);
        if (!w.bad && w.value && !no_hidden_nul(w.value, w.value_size, NULL))
                w.bad = 1;
        if (w.bad)
                return "NUL, control or non-ASCII byte in a header";
        return NULL;
}
